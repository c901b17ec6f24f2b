"""tpusim.distribute: Keras's distribution strategies, as the options of the runs made in
`with strategy.scope():` (docs/python.md). Each strategy is a tpusim run option:

- TPUStrategy(topology="4x4x4"): data parallel over an ICI slice (run(topology=...)).
- ParameterServerStrategy(num_workers, num_ps, sharding): run(strategy="ps", ...), the
  embedding tables on parameter servers over DCN (docs/strategies.md).
- MirroredStrategy, MultiWorkerMirroredStrategy: run(strategy="mirrored" /
  "multi_worker_mirrored"); the library says whether it builds them (check_strategy).
"""
import contextlib
import math

from tpusim import _core
from tpusim.keras.tensor import error


class Strategy:
    """The default strategy: one chip."""

    num_replicas_in_sync = 1

    def run_options(self):
        """The keywords and parameter overrides (dotted names) this strategy adds to a run."""
        return {}

    def apply(self, options, overrides, compiling=False):
        """`options` with this strategy's keywords added where not given; its overrides go into `overrides`.
        A compile takes only the options that shape the Program (the slice)."""
        merged = dict(options)
        for name, value in self.run_options().items():
            if compiling and name not in ("topology", "all_reduce_bucket_mib"):
                continue
            if "." in name:
                overrides.setdefault(name, value)
            else:
                merged.setdefault(name, value)
        return merged

    @contextlib.contextmanager
    def scope(self):
        """Runs, compiles and sweeps made inside use this strategy."""
        _stack.append(self)
        try:
            yield self
        finally:
            _stack.pop()


_stack = [Strategy()]


def get_strategy():
    """The strategy of the innermost scope, or the default one-chip strategy."""
    return _stack[-1]


def has_strategy():
    return len(_stack) > 1


class TPUStrategy(Strategy):
    """Data parallel over an ICI slice of `topology` ("4x4x4", of the preset's ici.topology kind): one
    replica per chip, each with the run's batch. The preset checks that the slice fits its pod at run time."""

    def __init__(self, topology, all_reduce_bucket_mib=0):
        dims = topology.split("x") if isinstance(topology, str) else []
        if not dims or not all(d.isdigit() and int(d) > 0 for d in dims):
            raise error(f"TPUStrategy topology '{topology}' is not a slice shape such as '4x4x4'")
        self.topology = topology
        self.all_reduce_bucket_mib = all_reduce_bucket_mib
        self.num_replicas_in_sync = math.prod(int(d) for d in dims)

    def run_options(self):
        options = {"topology": self.topology}
        if self.all_reduce_bucket_mib:
            options["all_reduce_bucket_mib"] = self.all_reduce_bucket_mib
        return options


class ParameterServerStrategy(Strategy):
    """`num_workers` workers, each simulated as one chip, with the model's embedding tables on `num_ps`
    parameter servers (ps.tasks; None: the preset's) sharded by `sharding` (round_robin, size_balanced,
    dynamic; None: the preset's ps.sharding), for `steps` steps (None: tpusim's default, 10)."""

    def __init__(self, num_workers=32, num_ps=None, sharding=None, steps=None):
        if not isinstance(num_workers, int) or num_workers <= 0:
            raise error(f"ParameterServerStrategy num_workers must be > 0 (got {num_workers})")
        if num_ps is not None and (not isinstance(num_ps, int) or num_ps <= 0):
            raise error(f"ParameterServerStrategy num_ps must be > 0 (got {num_ps})")
        self.num_workers, self.num_ps, self.sharding, self.steps = num_workers, num_ps, sharding, steps
        self.num_replicas_in_sync = num_workers

    def run_options(self):
        options = {"strategy": "ps", "workers": self.num_workers}
        if self.num_ps is not None:
            options["ps.tasks"] = self.num_ps
        if self.sharding is not None:
            options["ps.sharding"] = self.sharding
        if self.steps is not None:
            options["steps"] = self.steps
        return options


class LibraryStrategy(Strategy):
    """A strategy that is a `strategy=` name of the library, checked when it is made: a name
    the library does not build is its one-line tpusim.Error."""

    name = None

    def __init__(self):
        _core.check_strategy(self.name)

    def run_options(self):
        return {"strategy": self.name}


class MirroredStrategy(LibraryStrategy):
    name = "mirrored"


class MultiWorkerMirroredStrategy(LibraryStrategy):
    name = "multi_worker_mirrored"
