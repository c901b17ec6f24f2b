"""Type stub of the extension tpusim._core (bindings/tpusim_module.cpp)."""
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Union

import numpy

class Error(Exception):
    """A tpusim error: its message is the CLI's one-line error."""

def run_options() -> List[Dict[str, Any]]:
    """The run options the model functions take as keywords, as tpusim run takes them as flags: name, flag,
    type, group, scope, default, unit, choices and doc of each (docs/run-options.md)."""

def run(
    path: str,
    hw: str = "tpuv4",
    mode: Optional[str] = None,
    batch: Optional[int] = None,
    overrides: Optional[Mapping[str, Union[int, float, str]]] = None,
    out: Optional[str] = None,
    functional: bool = False,
    instructions: bool = True,
    progress: bool = True,
    *,
    # run options (docs/run-options.md): written by scripts/update-golden.sh
    loss: str = ...,
    optimizer: str = ...,
    learning_rate: float = ...,
    warmup_steps: int = ...,
    momentum: float = ...,
    nesterov: bool = ...,
    beta1: float = ...,
    beta2: float = ...,
    epsilon: float = ...,
    weight_decay: float = ...,
    adamw: bool = ...,
    micro_batches: int = ...,
    remat: str = ...,
    precision: str = ...,
    matmul_precision: str = ...,
    tiling_objective: str = ...,
    topology: str = ...,
    all_reduce_bucket_mib: float = ...,
    dp: int = ...,
    tp: int = ...,
    pp: int = ...,
    pipeline_schedule: str = ...,
    strategy: str = ...,
    workers: int = ...,
    steps: int = ...,
    precision_schedule: str = ...,
    precision_rule: str = ...,
    precision_rule_steps: int = ...,
    seed: int = ...,
    threads: int = ...,
    # end of run options
) -> Dict[str, Any]:
    """Simulate one step of a model (.onnx, HLO text) or saved Program; returns report.json as a dict.
    out: write the run directory as tpusim run --out; functional: also the step's tensors (for compare);
    progress: a run past a second shows its progress on stderr. Keywords include topology and the
    degrees dp, tp, pp (with micro_batches and pipeline_schedule), as tpusim run's options."""

def compile(
    path: str,
    output: str,
    hw: str = "tpuv4",
    mode: Optional[str] = None,
    batch: Optional[int] = None,
    overrides: Optional[Mapping[str, Union[int, float, str]]] = None,
    *,
    # run options (docs/run-options.md): written by scripts/update-golden.sh
    loss: str = ...,
    optimizer: str = ...,
    learning_rate: float = ...,
    warmup_steps: int = ...,
    momentum: float = ...,
    nesterov: bool = ...,
    beta1: float = ...,
    beta2: float = ...,
    epsilon: float = ...,
    weight_decay: float = ...,
    adamw: bool = ...,
    micro_batches: int = ...,
    remat: str = ...,
    precision: str = ...,
    matmul_precision: str = ...,
    tiling_objective: str = ...,
    topology: str = ...,
    all_reduce_bucket_mib: float = ...,
    dp: int = ...,
    tp: int = ...,
    pp: int = ...,
    pipeline_schedule: str = ...,
    strategy: str = ...,
    workers: int = ...,
    steps: int = ...,
    precision_schedule: str = ...,
    precision_rule: str = ...,
    precision_rule_steps: int = ...,
    seed: int = ...,
    threads: int = ...,
    # end of run options
) -> Dict[str, Any]:
    """Compile a model and write its Program; returns path, chips, instructions and stage_seconds."""

def reference_report(
    path: str,
    out: Optional[str] = None,
    backend: str = "cpu",
    numerics: str = "reference",
    threads: int = 1,
    replicas: int = 1,
    warmup: int = 1,
    repeats: int = 3,
    hw: str = "tpuv4",
    mode: Optional[str] = None,
    batch: Optional[int] = None,
    overrides: Optional[Mapping[str, Union[int, float, str]]] = None,
    *,
    # run options (docs/run-options.md): written by scripts/update-golden.sh
    loss: str = ...,
    optimizer: str = ...,
    learning_rate: float = ...,
    warmup_steps: int = ...,
    momentum: float = ...,
    nesterov: bool = ...,
    beta1: float = ...,
    beta2: float = ...,
    epsilon: float = ...,
    weight_decay: float = ...,
    adamw: bool = ...,
    micro_batches: int = ...,
    remat: str = ...,
    precision: str = ...,
    matmul_precision: str = ...,
    tiling_objective: str = ...,
    topology: str = ...,
    all_reduce_bucket_mib: float = ...,
    dp: int = ...,
    tp: int = ...,
    pp: int = ...,
    pipeline_schedule: str = ...,
    strategy: str = ...,
    workers: int = ...,
    steps: int = ...,
    precision_schedule: str = ...,
    precision_rule: str = ...,
    precision_rule_steps: int = ...,
    seed: int = ...,
    # end of run options
) -> Dict[str, Any]:
    """One step on a reference backend, timed per op (tpusim reference); its report, written to `out` if given."""

def compare(sim_report: str, ref_report: str) -> Dict[str, Any]:
    """compare.json of a simulation's report.json and a reference backend's (tpusim compare)."""

def autodistribute(
    path: str,
    topology: str,
    hw: str = "tpuv4",
    batch: Optional[int] = None,
    memory_limit_gib: Optional[float] = None,
    precisions: Optional[Sequence[str]] = None,
    pp_degrees: Optional[Sequence[int]] = None,
    micro_batches: Optional[Sequence[int]] = None,
    pipeline_schedules: Optional[Sequence[str]] = None,
    max_plans: int = 512,
    overrides: Optional[Mapping[str, Union[int, float, str]]] = None,
    out: Optional[str] = None,
    progress: Optional[Callable[[str, int, int], None]] = None,
    jobs: int = 1,
    *,
    # run options (docs/run-options.md): written by scripts/update-golden.sh
    loss: str = ...,
    optimizer: str = ...,
    learning_rate: float = ...,
    warmup_steps: int = ...,
    momentum: float = ...,
    nesterov: bool = ...,
    beta1: float = ...,
    beta2: float = ...,
    epsilon: float = ...,
    weight_decay: float = ...,
    adamw: bool = ...,
    remat: str = ...,
    precision: str = ...,
    matmul_precision: str = ...,
    tiling_objective: str = ...,
    all_reduce_bucket_mib: float = ...,
    dp: int = ...,
    tp: int = ...,
    pp: int = ...,
    pipeline_schedule: str = ...,
    strategy: str = ...,
    workers: int = ...,
    steps: int = ...,
    precision_schedule: str = ...,
    precision_rule: str = ...,
    precision_rule_steps: int = ...,
    seed: int = ...,
    threads: int = ...,
    # end of run options
) -> List[Dict[str, Any]]:
    """Search dp/tp/pp degrees, micro-batches, remat and precision on `topology` by simulation (tpusim
    autodistribute); returns the ranked plans of autodistribute.json, written with its CSV to `out` if given.
    batch: the global batch; a space of more than max_plans plans is an error before any plan runs."""

def utilization_timeline(report: Mapping[str, Any]) -> Dict[str, Any]:
    """window_cycles, start_cycle (numpy array) and units (name to numpy array of utilization per window)."""

def check_precision_policy(name: str) -> str:
    """The policy's name if tpusim builds it; otherwise tpusim.Error."""

def check_strategy(name: str) -> None:
    """Nothing if run(strategy=name) is built; otherwise tpusim.Error with the CLI's message."""

def reference(
    path: str,
    feeds: Mapping[str, numpy.ndarray],
    mode: Optional[str] = None,
    batch: Optional[int] = None,
    learning_rate: float = 0.01,
    threads: int = 1,
    numerics: str = "reference",
    hw: str = "tpuv4",
    tensors: Optional[Sequence[str]] = None,
    *,
    # run options (docs/run-options.md): written by scripts/update-golden.sh
    loss: str = ...,
    optimizer: str = ...,
    warmup_steps: int = ...,
    momentum: float = ...,
    nesterov: bool = ...,
    beta1: float = ...,
    beta2: float = ...,
    epsilon: float = ...,
    weight_decay: float = ...,
    adamw: bool = ...,
    micro_batches: int = ...,
    remat: str = ...,
    precision: str = ...,
    matmul_precision: str = ...,
    tiling_objective: str = ...,
    topology: str = ...,
    all_reduce_bucket_mib: float = ...,
    dp: int = ...,
    tp: int = ...,
    pp: int = ...,
    pipeline_schedule: str = ...,
    strategy: str = ...,
    workers: int = ...,
    steps: int = ...,
    precision_schedule: str = ...,
    precision_rule: str = ...,
    precision_rule_steps: int = ...,
    seed: int = ...,
    # end of run options
) -> Dict[str, numpy.ndarray]:
    """Run one step on the CPU reference executor; returns every tensor's value by name, or only `tensors`'."""

def set_log_level(level: str) -> None:
    """Log level on stderr: trace, debug, info, warn (default), error, critical or off."""

def validate(
    cases: str,
    hw: str = "tpuv4",
    jobs: int = 1,
    families: Optional[List[str]] = None,
    part: Optional[Tuple[int, int]] = None,
    overrides: Optional[Mapping[str, Union[int, float, str]]] = None,
    out: Optional[str] = None,
) -> Dict[str, Any]:
    """Every case of a measurement file simulated as a one-op model (tpusim validate); validate.json as a dict."""

def sweep_spec(
    spec: Union[str, Mapping[str, Any]],
    jobs: int = 1,
    out: Optional[str] = None,
    reports: bool = False,
    progress: Optional[Callable[[Dict[str, Any], int], None]] = None,
) -> List[Dict[str, Any]]:
    """Every case of a sweep spec (a .textproto path, or a dict of configs/sweep.proto's fields) as tpusim sweep;
    the rows of sweep.json in case order, written with sweep.csv (and with reports=True each case's run directory)
    to `out` if given. jobs: worker processes, which do not change the rows."""

def presets() -> List[str]:
    """Names of the built-in hardware presets."""

def params(preset: str) -> Dict[str, Dict[str, str]]:
    """Every parameter of a preset: value (as text), unit, doc and type."""
