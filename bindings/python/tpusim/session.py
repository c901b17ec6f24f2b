"""run, compile, reference and reference_report as the package exports them: the
extension's functions (tpusim._core), taking a tpusim.keras model as well as a path, and
applying the strategy of the enclosing `with strategy.scope():` (tpusim.distribute) and
the global precision policy (tpusim.mixed_precision) to the keywords not given."""
import os
import tempfile

from tpusim import _core, distribute, mixed_precision
from tpusim.keras.model import Model
from tpusim.keras.tensor import error

# Keywords a compiled Keras model sets itself (model.compile), which a run may not restate.
TRAINING_KEYWORDS = ("loss", "optimizer", "learning_rate", "momentum", "nesterov", "beta1", "beta2", "epsilon",
                     "weight_decay", "adamw")


class ModelFile:
    """The path a run reads: a file as given, or a Keras model's ONNX graph in a temporary folder."""

    def __init__(self, model, mode, options):
        self.folder = None
        if not isinstance(model, Model):
            self.path, self.mode = os.fspath(model), mode
            return
        self.mode = mode or ("training" if model.optimizer is not None else "inference")
        training = self.mode == "training"
        if training:
            for name, value in model.training_options().items():
                if name in options:
                    raise error(f"'{name}' is set by model.compile(...); leave it out of the run's keywords")
                options[name] = value
        self.folder = tempfile.TemporaryDirectory(prefix="tpusim-keras-")
        self.path = os.path.join(self.folder.name, model.name + ".onnx")
        model.to_onnx(self.path, training=training)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.folder is not None:
            self.folder.cleanup()


def compiled_from_onnx(model):
    return isinstance(model, Model) or os.fspath(model).endswith(".onnx")


def with_policy(model, options):
    # The global policy applies where tpusim compiles the model: ONNX files and Keras models
    # (an HLO module and a saved Program keep the dtypes they were written with).
    if "precision" not in options and compiled_from_onnx(model):
        policy = mixed_precision.global_policy().name
        if policy != "float32":
            options["precision"] = policy
    return options


def run(model, hw="tpuv4", mode=None, batch=None, overrides=None, out=None, functional=False, instructions=True,
        progress=True, **options):
    """Simulates one step of `model` (a path or a tpusim.keras model); returns report.json as a dict.
    A run past a second shows its progress on stderr unless progress=False."""
    overrides = dict(overrides or {})
    options = with_policy(model, distribute.get_strategy().apply(options, overrides))
    with ModelFile(model, mode, options) as file:
        return _core.run(file.path, hw=hw, mode=file.mode, batch=batch, overrides=overrides or None, out=out,
                         functional=functional, instructions=instructions, progress=progress, **options)


def compile(model, output, hw="tpuv4", mode=None, batch=None, overrides=None, **options):  # noqa: A001
    """Compiles `model` for `hw` and writes its Program to `output` (tpusim compile)."""
    overrides = dict(overrides or {})
    options = with_policy(model, distribute.get_strategy().apply(options, overrides, compiling=True))
    with ModelFile(model, mode, options) as file:
        return _core.compile(file.path, os.fspath(output), hw=hw, mode=file.mode, batch=batch,
                             overrides=overrides or None, **options)


def reference(model, feeds, mode=None, batch=None, learning_rate=None, threads=1, numerics="reference", hw="tpuv4",
              tensors=None, **options):
    """One step on the CPU reference executor: numpy feeds in, every tensor out by name (or only `tensors`)."""
    options = with_policy(model, options)
    if learning_rate is not None:
        options["learning_rate"] = learning_rate
    with ModelFile(model, mode, options) as file:
        rate = options.pop("learning_rate", 0.01)
        return _core.reference(file.path, feeds, mode=file.mode, batch=batch, learning_rate=rate, threads=threads,
                               numerics=numerics, hw=hw, tensors=tensors, **options)


def reference_report(model, out=None, backend="cpu", numerics="reference", threads=1, replicas=1, warmup=1,
                     repeats=3, hw="tpuv4", mode=None, batch=None, overrides=None, **options):
    """A reference backend's timed step (tpusim reference) as its report dict; with `out`, written for compare()."""
    options = with_policy(model, options)
    with ModelFile(model, mode, options) as file:
        return _core.reference_report(file.path, out=out, backend=backend, numerics=numerics, threads=threads,
                                      replicas=replicas, warmup=warmup, repeats=repeats, hw=hw, mode=file.mode, batch=batch,
                                      overrides=overrides, **options)


def _listed(values, kind):
    """None, one value or a sequence of them, as autodistribute's lists."""
    if values is None:
        return None
    return [values] if isinstance(values, kind) else list(values)


def autodistribute(model, topology, hw="tpuv4", batch=None, memory_limit_gib=None, precisions=None, pp_degrees=None,
                   micro_batches=None, pipeline_schedules=None, max_plans=512, overrides=None, out=None,
                   progress=None, jobs=1, **options):
    """Searches the dp/tp/pp degrees, micro-batches, remat and precision of `model`'s training step on the slice
    `topology` by simulation (tpusim autodistribute) and returns the ranked plans, best first, as a list of dicts.

    The search chooses the degrees and precision itself, so neither an enclosing strategy scope nor the global
    precision policy applies. batch is the global batch (default 32 x chips); memory_limit_gib the HBM per chip
    a plan may use (default the preset's); precisions the policies to search (default all three); pp_degrees the
    pipeline degrees (default every divisor of the chips up to 8), micro_batches (default 2, 4, 8) and
    pipeline_schedules (default "1f1b") those of the plans with a pipeline; a space of more than max_plans plans
    is an error before any runs; progress(label, index, total) is called after each plan; jobs worker processes
    evaluate the plans (the result does not depend on it).
    """
    with ModelFile(model, "training", options) as file:
        return _core.autodistribute(file.path, topology, hw=hw, batch=batch, memory_limit_gib=memory_limit_gib,
                                    precisions=_listed(precisions, str), pp_degrees=_listed(pp_degrees, int),
                                    micro_batches=_listed(micro_batches, int),
                                    pipeline_schedules=_listed(pipeline_schedules, str), max_plans=max_plans,
                                    overrides=dict(overrides) if overrides else None, out=out, progress=progress,
                                    jobs=jobs, **options)
