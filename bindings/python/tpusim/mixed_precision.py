"""tpusim.mixed_precision: Keras's precision policies for the runs that follow.

set_global_policy("mixed_bfloat16") makes later runs of ONNX files and tpusim.keras models
compute in bf16 with f32 variables (run(precision=...), docs/frontend.md); a run's own
precision= wins. "int8" is post-training quantization for mode="inference" runs (a training
run under it is a tpusim.Error). A policy tpusim does not know is the library's one-line
tpusim.Error.
"""
from tpusim import _core


class Policy:
    def __init__(self, name):
        self.name = _core.check_precision_policy(name)
        compute = {"mixed_bfloat16": "bfloat16", "mixed_float16": "float16", "int8": "int8"}
        self.compute_dtype = compute.get(self.name, "float32")
        self.variable_dtype = "float32"

    def __repr__(self):
        return f'<Policy "{self.name}">'

    def __eq__(self, other):
        return isinstance(other, Policy) and other.name == self.name


_global = Policy("float32")


def set_global_policy(policy):
    """A Policy or its name; None restores float32."""
    global _global
    _global = policy if isinstance(policy, Policy) else Policy(policy or "float32")


def global_policy():
    return _global
