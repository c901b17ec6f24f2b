"""Type stub of the extension tpusim._core (bindings/tpusim_module.cpp)."""
from typing import Any, Dict, List, Mapping, Optional, Union

import numpy

class Error(Exception):
    """A tpusim error: its message is the CLI's one-line error."""

def run(
    path: str,
    hw: str = "tpuv4",
    mode: Optional[str] = None,
    batch: Optional[int] = None,
    overrides: Optional[Mapping[str, Union[int, float, str]]] = None,
    **training: Any,
) -> Dict[str, Any]:
    """Simulate one step of a model (.onnx, HLO text) or saved Program; returns report.json as a dict."""

def reference(
    path: str,
    feeds: Mapping[str, numpy.ndarray],
    mode: Optional[str] = None,
    batch: Optional[int] = None,
    learning_rate: float = 0.01,
    threads: int = 1,
    numerics: str = "reference",
    hw: str = "tpuv4",
    **training: Any,
) -> Dict[str, numpy.ndarray]:
    """Run one step on the CPU reference executor; returns every tensor's value by name."""

def set_log_level(level: str) -> None:
    """Log level on stderr: trace, debug, info, warn (default), error, critical or off."""

def presets() -> List[str]:
    """Names of the built-in hardware presets."""

def params(preset: str) -> Dict[str, Dict[str, str]]:
    """Every parameter of a preset: value (as text), unit, doc and type."""
