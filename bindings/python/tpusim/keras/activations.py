"""Activations by their Keras names, as ONNX nodes."""
from tpusim.keras.tensor import error

NAMES = ("linear", "relu", "gelu", "softmax", "tanh", "sigmoid")


def check(activation):
    """The activation's name; None is linear. Anything else is a tpusim.Error."""
    if activation is None:
        return "linear"
    if activation not in NAMES:
        raise error(f"unknown activation '{activation}' (supported: {', '.join(NAMES)})")
    return activation


def emit(writer, x, activation, prefix):
    if activation == "linear":
        return x
    if activation == "softmax":
        return writer.node("Softmax", [x], prefix, axis=-1)
    if activation == "gelu":
        # Keras's default, the exact form x * (1 + erf(x / sqrt(2))) / 2, written with opset-17
        # ops as PyTorch exports it (ONNX's Gelu op is opset 20).
        inverse_sqrt2 = writer.constant(writer.fresh(prefix + ".inv_sqrt2"), 0.7071067811865476)
        half, one = (writer.constant(writer.fresh(prefix + name), value) for name, value in ((".half", 0.5), (".one", 1.0)))
        erf = writer.node("Erf", [writer.node("Mul", [x, inverse_sqrt2], prefix)], prefix)
        return writer.node("Mul", [writer.node("Mul", [x, writer.node("Add", [erf, one], prefix)], prefix), half], prefix)
    return writer.node({"relu": "Relu", "tanh": "Tanh", "sigmoid": "Sigmoid"}[activation], [x], prefix)

