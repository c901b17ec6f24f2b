"""Input, Model (the functional API) and Sequential, and the ONNX graph a model emits."""
import copy

import onnx
from onnx import helper

from tpusim.keras import losses, optimizers
from tpusim.keras.layers import Layer
from tpusim.keras.tensor import DTYPES, GraphWriter, KerasTensor, error

# The opset the emitted graphs declare (LayerNormalization is opset 17), which the
# Debian onnx package's checker knows.
OPSET = 17


def Input(shape, dtype="float32", name=None):  # noqa: N802  (Keras's name)
    """A model input of `shape` (without the batch dimension)."""
    if dtype not in DTYPES:
        raise error(f"Input dtype '{dtype}' is not supported (use {', '.join(DTYPES)})")
    if any(not isinstance(d, int) or d <= 0 for d in shape):
        raise error(f"Input shape {tuple(shape)} must be positive ints (the batch dimension is left out)")
    tensor = KerasTensor(shape, dtype)
    tensor.name = name
    return tensor


def as_list(tensors):
    return list(tensors) if isinstance(tensors, (list, tuple)) else [tensors]


class Model:
    """The functional API: Model(inputs, outputs) over the layer calls that lead from one to the other."""

    def __init__(self, inputs, outputs, name="model"):
        self.name = name
        self.inputs = as_list(inputs)
        self.outputs = as_list(outputs)
        for tensor in self.inputs + self.outputs:
            if not isinstance(tensor, KerasTensor):
                raise error(f"Model inputs and outputs are KerasTensors, not {type(tensor).__name__}")
        if any(tensor.layer is not None for tensor in self.inputs):
            raise error("Model inputs must be tpusim.keras.Input tensors")
        self.calls = self._calls_in_order()
        self._name_everything()
        self.optimizer = None
        self.loss = None

    def _calls_in_order(self):
        order, seen = [], set()

        def visit(tensor):
            if id(tensor) in seen:
                return
            seen.add(id(tensor))
            if tensor.layer is None:
                if not any(tensor is x for x in self.inputs):
                    raise error("an output depends on an Input that is not among the model's inputs")
                return
            for x in tensor.inputs:
                visit(x)
            order.append(tensor)

        for tensor in self.outputs:
            visit(tensor)
        return order

    def _name_everything(self):
        # Unnamed layers and inputs are named as Keras does (dense, dense_1, ...), in graph order.
        used, counts = set(), {}

        def claim(thing, kind):
            if thing.name is None:
                n = counts.get(kind, 0)
                while (candidate := kind if n == 0 else f"{kind}_{n}") in used:
                    n += 1
                counts[kind] = n + 1
                thing.name = candidate
            elif thing.name in used:
                raise error(f"two layers or inputs of the model are named '{thing.name}'")
            used.add(thing.name)

        for tensor in self.inputs:
            claim(tensor, "input")
        for layer in self.layers:
            claim(layer, layer.kind)

    @property
    def layers(self):
        layers = []
        for call in self.calls:
            if not any(call.layer is layer for layer in layers):
                layers.append(call.layer)
        return layers

    def count_params(self):
        counted, total = [], 0
        for call in self.calls:
            if any(call.layer is layer for layer in counted):
                continue  # a shared layer's weights count once
            counted.append(call.layer)
            total += call.layer.count_params([x.shape for x in call.inputs])
        return total

    def summary(self, print_fn=print):
        print_fn(f'Model: "{self.name}"')
        print_fn(f"{'Layer (type)':<40} {'Output Shape':<24} {'Param #':>10}")
        for tensor in self.inputs:
            print_fn(f"{tensor.name + ' (InputLayer)':<40} {str((None, *tensor.shape)):<24} {0:>10,}")
        for call in self.calls:
            label = f"{call.layer.name} ({type(call.layer).__name__})"
            params = call.layer.count_params([x.shape for x in call.inputs])
            print_fn(f"{label:<40} {str((None, *call.shape)):<24} {params:>10,}")
        print_fn(f"Total params: {self.count_params():,}")

    def compile(self, optimizer="rmsprop", loss=None, metrics=None):
        """Sets the optimizer and loss of the training step that run() simulates."""
        if metrics:
            raise error("metrics are not simulated: compile(metrics=...) is not supported")
        self.optimizer = optimizers.get(optimizer)
        if loss is None:
            raise error("compile needs a loss (sparse_categorical_crossentropy or mean_squared_error)")
        self.loss = losses.get(loss)
        if isinstance(self.loss, losses.SparseCategoricalCrossentropy) and not self.loss.from_logits:
            if len(self.outputs) != 1 or getattr(self.outputs[0].layer, "activation", None) != "softmax":
                raise error("sparse_categorical_crossentropy on probabilities needs a model ending in a softmax "
                            "(or from_logits=True on its logits)")

    def training_options(self):
        """tpusim.run's loss and optimizer keywords; a tpusim.Error before compile()."""
        if self.optimizer is None:
            raise error(f"model '{self.name}' is not compiled: call model.compile(optimizer=..., loss=...) "
                        "to simulate its training step")
        return {"loss": self.loss.tpusim_name, **self.optimizer.training_options()}

    def to_onnx(self, path=None, training=False, seed=0):
        """The model as an ONNX ModelProto (written to `path` if given). For training with a
        cross-entropy on probabilities, the final softmax is left to the loss, as Keras fuses it.
        Weights are Keras's default initializers drawn with `seed`."""
        writer = GraphWriter(seed)
        names = {}
        for tensor in self.inputs:
            names[id(tensor)] = tensor.name
        fold_softmax = (training and isinstance(self.loss, losses.SparseCategoricalCrossentropy)
                        and not self.loss.from_logits)
        for call in self.calls:
            layer = call.layer
            if fold_softmax and call is self.outputs[0]:
                layer = copy.copy(layer)
                layer.activation = "linear"
            names[id(call)] = layer.emit(writer, [names[id(x)] for x in call.inputs], [x.shape for x in call.inputs])
        graph = helper.make_graph(
            writer.nodes, self.name,
            [helper.make_tensor_value_info(t.name, DTYPES[t.dtype], ["batch", *t.shape]) for t in self.inputs],
            [helper.make_tensor_value_info(names[id(t)], DTYPES[t.dtype], ["batch", *t.shape]) for t in self.outputs],
            writer.initializers)
        model = helper.make_model(graph, producer_name="tpusim.keras", opset_imports=[helper.make_opsetid("", OPSET)])
        if path is not None:
            onnx.save(model, str(path))
        return model

    def run(self, batch=None, hw="tpuv4", mode=None, overrides=None, **options):
        """Simulates one step of the model (training once compiled, else inference), as tpusim.run."""
        from tpusim import session
        return session.run(self, hw=hw, mode=mode, batch=batch, overrides=overrides, **options)


class Sequential(Model):
    """A stack of layers, each fed the previous one's output; the first entry may be an Input."""

    def __init__(self, layers=None, name="sequential"):
        self._stack = []
        self._input = None
        self.name = name
        self.optimizer = None
        self.loss = None
        for layer in layers or []:
            self.add(layer)

    def add(self, layer):
        if isinstance(layer, KerasTensor) and layer.layer is None:
            if self._input is not None or self._stack:
                raise error("a Sequential model's Input comes first, and only once")
            self._input = layer
            return
        if not isinstance(layer, Layer):
            raise error(f"Sequential takes layers (and an Input first), not {type(layer).__name__}")
        if self._input is None:
            raise error("a Sequential model starts with tpusim.keras.Input(shape) to give its input shape")
        self._stack.append(layer)
        output = self._input
        for entry in self._stack:
            output = entry(output)
        optimizer, loss = self.optimizer, self.loss
        super().__init__(self._input, output, self.name)
        self.optimizer, self.loss = optimizer, loss
