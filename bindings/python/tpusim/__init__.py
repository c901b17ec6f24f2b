"""tpusim: a cycle-level TPU simulator.

The functions are the C++ library's (the extension tpusim._core): run, compile,
reference and reference_report also take a tpusim.keras model, and apply the strategy
of an enclosing `with strategy.scope():` (tpusim.distribute) and the global precision
policy (tpusim.mixed_precision). Errors raise tpusim.Error with the one-line message
the CLI prints. docs/python.md has the API.
"""
from tpusim._core import Error, compare, params, presets, set_log_level, validate  # noqa: F401
from tpusim import distribute, keras, mixed_precision  # noqa: F401
from tpusim.session import autodistribute, compile, reference, reference_report, run  # noqa: F401,A004
from tpusim.sweep import sweep  # noqa: F401
from tpusim.tables import per_op_table, utilization_timeline  # noqa: F401

__all__ = ["Error", "autodistribute", "compare", "compile", "distribute", "keras", "mixed_precision", "params", "per_op_table",
           "presets", "reference", "reference_report", "run", "set_log_level", "sweep", "utilization_timeline",
           "validate"]
__version__ = "0.1.0"
