"""Keras's losses that tpusim's training graph adds (frontend/train/training_graph.cpp):
softmax cross-entropy on integer labels, and mean squared error. Others are a tpusim.Error."""
from tpusim.keras.tensor import error


class SparseCategoricalCrossentropy:
    tpusim_name = "softmax_cross_entropy"

    def __init__(self, from_logits=False):
        self.from_logits = from_logits


class MeanSquaredError:
    tpusim_name = "mse"


BY_NAME = {"sparse_categorical_crossentropy": SparseCategoricalCrossentropy, "mse": MeanSquaredError,
           "mean_squared_error": MeanSquaredError}


def get(identifier):
    """A loss from an instance or its Keras name."""
    if isinstance(identifier, (SparseCategoricalCrossentropy, MeanSquaredError)):
        return identifier
    if isinstance(identifier, str) and identifier in BY_NAME:
        return BY_NAME[identifier]()
    hint = " (one-hot labels: use sparse_categorical_crossentropy on class ids)" \
        if identifier == "categorical_crossentropy" else ""
    raise error(f"loss '{identifier}' is not supported (supported: {', '.join(BY_NAME)}){hint}")
