"""tpusim: a cycle-level TPU simulator.

Every function is the C++ library's (the extension tpusim._core); errors raise
tpusim.Error with the one-line message the CLI prints. docs/python.md has the API.
"""
from tpusim import _core
from tpusim._core import *  # noqa: F401,F403  (the names listed in __all__)
from tpusim.sweep import sweep

__all__ = sorted([name for name in dir(_core) if not name.startswith("_")] + ["sweep"])
__version__ = "0.1.0"
