"""The symbolic tensors that layers pass between them, and the ONNX graph they become."""
import numpy
from onnx import TensorProto, helper, numpy_helper

from tpusim import _core

DTYPES = {"float32": TensorProto.FLOAT, "int64": TensorProto.INT64, "int32": TensorProto.INT32}


class KerasTensor:
    """A layer's output: its shape without the batch dimension, its dtype, and the call that made it."""

    def __init__(self, shape, dtype, layer=None, inputs=(), index=0):
        self.shape = tuple(int(d) for d in shape)
        self.dtype = dtype
        self.layer = layer      # None for an Input
        self.inputs = tuple(inputs)
        self.index = index      # which of the layer's outputs
        self.name = None        # an Input's name

    def __repr__(self):
        return f"KerasTensor(shape=(None, {', '.join(map(str, self.shape))}), dtype={self.dtype})"


def error(message):
    """A tpusim.Error, as the library raises for a bad model."""
    return _core.Error(message)


class GraphWriter:
    """Collects ONNX nodes and initializers while the layers emit themselves."""

    def __init__(self, seed):
        self.nodes = []
        self.initializers = []
        self.rng = numpy.random.default_rng(seed)
        self.count = 0

    def fresh(self, prefix):
        self.count += 1
        return f"{prefix}/{self.count}"

    def node(self, op_type, inputs, prefix, **attributes):
        output = self.fresh(prefix + "/" + op_type)
        self.nodes.append(helper.make_node(op_type, list(inputs), [output], name=output, **attributes))
        return output

    def weight(self, name, values):
        self.initializers.append(numpy_helper.from_array(numpy.asarray(values), name))
        return name

    def glorot(self, name, shape, fan_in, fan_out):
        # Keras's default kernel initializer (glorot_uniform); the values matter only to reference runs.
        limit = numpy.sqrt(6.0 / (fan_in + fan_out))
        return self.weight(name, self.rng.uniform(-limit, limit, size=shape).astype(numpy.float32))

    def constant(self, name, values, dtype=numpy.float32):
        return self.weight(name, numpy.asarray(values, dtype=dtype))
