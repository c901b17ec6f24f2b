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
        return writer.node("Gelu", [x], prefix)  # the exact (erf) form, Keras's default
    return writer.node({"relu": "Relu", "tanh": "Tanh", "sigmoid": "Sigmoid"}[activation], [x], prefix)

