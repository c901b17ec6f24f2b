"""Layers named and parameterized as Keras's, each emitting the ONNX nodes tpusim imports.

Shapes leave out the batch dimension. Images are channels first ([C, H, W]), as in
ONNX; data_format="channels_last" is a tpusim.Error. An argument tpusim cannot
simulate is a tpusim.Error with one line, never ignored.
"""
import math

from tpusim.keras import activations
from tpusim.keras.tensor import KerasTensor, error


class Layer:
    """A layer: call it on KerasTensors to add it to a model."""

    kind = "layer"  # the prefix of its automatic name (dense, dense_1, ...)

    def __init__(self, name=None):
        self.name = name

    def __call__(self, *inputs):
        for x in inputs:
            if not isinstance(x, KerasTensor):
                raise error(f"{type(self).__name__} is called on KerasTensors (from tpusim.keras.Input), "
                            f"not {type(x).__name__}")
        shape, dtype = self.output_spec([x.shape for x in inputs], [x.dtype for x in inputs])
        return KerasTensor(shape, dtype, self, inputs)

    def output_spec(self, shapes, dtypes):
        """The output's shape and dtype; a tpusim.Error for inputs the layer cannot take."""
        raise NotImplementedError

    def count_params(self, shapes):
        return 0

    def emit(self, writer, names, shapes):
        """Appends the layer's nodes for inputs `names` (of `shapes`) and returns its output's name."""
        raise NotImplementedError

    def check_rank(self, shape, ranks):
        if len(shape) + 1 not in ranks:
            wanted = " or ".join(str(r) for r in ranks)
            raise error(f"{self.name or self.kind} takes rank-{wanted} inputs (batch included); got "
                        f"(None, {', '.join(map(str, shape))})")


def channels_first(data_format):
    if data_format not in (None, "channels_first"):
        raise error(f"data_format '{data_format}' is not supported: tpusim.keras images are channels first "
                    "([C, H, W]), as in ONNX")


def pair(value, what):
    values = (value, value) if isinstance(value, int) else tuple(value)
    if len(values) != 2 or any(not isinstance(v, int) or v <= 0 for v in values):
        raise error(f"{what} must be a positive int or a pair of them (got {value})")
    return values


class Dense(Layer):
    kind = "dense"

    def __init__(self, units, activation=None, use_bias=True, name=None):
        super().__init__(name)
        if not isinstance(units, int) or units <= 0:
            raise error(f"Dense units must be a positive int (got {units})")
        self.units = units
        self.activation = activations.check(activation)
        self.use_bias = use_bias

    def output_spec(self, shapes, dtypes):
        if not shapes[0]:
            raise error(f"{self.name or self.kind} needs an input with features; got (None,)")
        return shapes[0][:-1] + (self.units,), "float32"

    def count_params(self, shapes):
        return shapes[0][-1] * self.units + (self.units if self.use_bias else 0)

    def emit(self, writer, names, shapes):
        features = shapes[0][-1]
        prefix = self.name
        if len(shapes[0]) == 1:
            # [batch, in] x [out, in]^T: a Gemm, as PyTorch's Linear exports.
            kernel = writer.glorot(f"{prefix}.kernel", (self.units, features), features, self.units)
            inputs = [names[0], kernel]
            if self.use_bias:
                inputs.append(writer.constant(f"{prefix}.bias", [0.0] * self.units))
            y = writer.node("Gemm", inputs, prefix, transB=1)
        else:
            kernel = writer.glorot(f"{prefix}.kernel", (features, self.units), features, self.units)
            y = writer.node("MatMul", [names[0], kernel], prefix)
            if self.use_bias:
                y = writer.node("Add", [y, writer.constant(f"{prefix}.bias", [0.0] * self.units)], prefix)
        return activations.emit(writer, y, self.activation, prefix)


class Conv2D(Layer):
    kind = "conv2d"

    def __init__(self, filters, kernel_size, strides=1, padding="valid", activation=None, use_bias=True,
                 dilation_rate=1, groups=1, data_format=None, name=None):
        super().__init__(name)
        channels_first(data_format)
        if padding not in ("valid", "same"):
            raise error(f"Conv2D padding must be 'valid' or 'same' (got '{padding}')")
        self.filters = filters
        self.kernel = pair(kernel_size, "Conv2D kernel_size")
        self.strides = pair(strides, "Conv2D strides")
        self.dilation = pair(dilation_rate, "Conv2D dilation_rate")
        self.padding = padding
        self.groups = groups
        self.activation = activations.check(activation)
        self.use_bias = use_bias

    def pads(self, spatial):
        if self.padding == "valid":
            return (0, 0, 0, 0)
        begin, end = [], []
        for size, k, s, d in zip(spatial, self.kernel, self.strides, self.dilation):
            total = max((math.ceil(size / s) - 1) * s + (k - 1) * d + 1 - size, 0)
            begin.append(total // 2)
            end.append(total - total // 2)
        return tuple(begin + end)

    def output_spec(self, shapes, dtypes):
        self.check_rank(shapes[0], (4,))
        channels, *spatial = shapes[0]
        if channels % self.groups or self.filters % self.groups:
            raise error(f"Conv2D groups {self.groups} must divide the {channels} input channels and "
                        f"{self.filters} filters")
        pads = self.pads(spatial)
        out = []
        for i, (size, k, s, d) in enumerate(zip(spatial, self.kernel, self.strides, self.dilation)):
            extent = size + pads[i] + pads[i + 2] - (k - 1) * d - 1
            if extent < 0:
                raise error(f"Conv2D kernel {self.kernel} does not fit the input ({channels}, {spatial[0]}, "
                            f"{spatial[1]})")
            out.append(extent // s + 1)
        return (self.filters, *out), "float32"

    def count_params(self, shapes):
        per_filter = shapes[0][0] // self.groups * self.kernel[0] * self.kernel[1]
        return self.filters * per_filter + (self.filters if self.use_bias else 0)

    def emit(self, writer, names, shapes):
        channels, *spatial = shapes[0]
        prefix = self.name
        shape = (self.filters, channels // self.groups, *self.kernel)
        fan_in = shape[1] * self.kernel[0] * self.kernel[1]
        inputs = [names[0], writer.glorot(f"{prefix}.kernel", shape, fan_in, self.filters * fan_in // shape[1])]
        if self.use_bias:
            inputs.append(writer.constant(f"{prefix}.bias", [0.0] * self.filters))
        y = writer.node("Conv", inputs, prefix, kernel_shape=list(self.kernel), strides=list(self.strides),
                        dilations=list(self.dilation), pads=list(self.pads(spatial)), group=self.groups)
        return activations.emit(writer, y, self.activation, prefix)


class BatchNormalization(Layer):
    """Normalizes over the channel axis, 1 (the features of [N, C] or the channels of [N, C, H, W])."""

    kind = "batch_normalization"

    def __init__(self, axis=1, momentum=0.99, epsilon=1e-3, name=None):
        super().__init__(name)
        if axis != 1:
            raise error(f"BatchNormalization axis {axis} is not supported: the channel axis is 1 "
                        "(channels first, as in ONNX)")
        self.momentum = momentum
        self.epsilon = epsilon

    def output_spec(self, shapes, dtypes):
        self.check_rank(shapes[0], (2, 3, 4, 5))
        return shapes[0], "float32"

    def count_params(self, shapes):
        return 4 * shapes[0][0]

    def emit(self, writer, names, shapes):
        channels = shapes[0][0]
        prefix = self.name
        parts = [writer.constant(f"{prefix}.{part}", [value] * channels)
                 for part, value in (("gamma", 1.0), ("beta", 0.0), ("moving_mean", 0.0), ("moving_variance", 1.0))]
        return writer.node("BatchNormalization", [names[0], *parts], prefix, epsilon=self.epsilon,
                           momentum=self.momentum)


class LayerNormalization(Layer):
    kind = "layer_normalization"

    def __init__(self, axis=-1, epsilon=1e-3, name=None):
        super().__init__(name)
        if axis != -1:
            raise error(f"LayerNormalization axis {axis} is not supported: it normalizes the last axis (-1)")
        self.epsilon = epsilon

    def output_spec(self, shapes, dtypes):
        self.check_rank(shapes[0], (2, 3, 4))
        return shapes[0], "float32"

    def count_params(self, shapes):
        return 2 * shapes[0][-1]

    def emit(self, writer, names, shapes):
        features = shapes[0][-1]
        prefix = self.name
        gamma = writer.constant(f"{prefix}.gamma", [1.0] * features)
        beta = writer.constant(f"{prefix}.beta", [0.0] * features)
        return writer.node("LayerNormalization", [names[0], gamma, beta], prefix, axis=-1, epsilon=self.epsilon)


class Embedding(Layer):
    kind = "embedding"

    def __init__(self, input_dim, output_dim, name=None):
        super().__init__(name)
        self.input_dim = input_dim
        self.output_dim = output_dim

    def output_spec(self, shapes, dtypes):
        if dtypes[0] not in ("int64", "int32"):
            raise error(f"Embedding looks up integer ids; its input is {dtypes[0]} "
                        "(use Input(..., dtype='int64'))")
        return shapes[0] + (self.output_dim,), "float32"

    def count_params(self, shapes):
        return self.input_dim * self.output_dim

    def emit(self, writer, names, shapes):
        table = writer.glorot(f"{self.name}.embeddings", (self.input_dim, self.output_dim), self.input_dim,
                              self.output_dim)
        return writer.node("Gather", [table, names[0]], self.name, axis=0)


class MultiHeadAttention(Layer):
    """Keras's MultiHeadAttention: call it as mha(query, value) or mha(query, value, key)."""

    kind = "multi_head_attention"

    def __init__(self, num_heads, key_dim, value_dim=None, use_bias=True, output_shape=None, name=None):
        super().__init__(name)
        if output_shape is not None:
            raise error("MultiHeadAttention output_shape is not supported: the output has the query's features")
        self.heads = num_heads
        self.key_dim = key_dim
        self.value_dim = value_dim or key_dim
        self.use_bias = use_bias

    def output_spec(self, shapes, dtypes):
        if len(shapes) not in (2, 3):
            raise error("MultiHeadAttention is called as mha(query, value) or mha(query, value, key)")
        for shape in shapes:
            self.check_rank(shape, (3,))
        query, value = shapes[0], shapes[1]
        key = shapes[2] if len(shapes) == 3 else value
        if key[0] != value[0]:
            raise error(f"MultiHeadAttention key and value need the same length (got {key[0]} and {value[0]})")
        return query, "float32"

    def projections(self, shapes):
        """(name, input index, features in, features out) of each dense projection."""
        query, value = shapes[0], shapes[1]
        key = shapes[2] if len(shapes) == 3 else value
        inner_k = self.heads * self.key_dim
        inner_v = self.heads * self.value_dim
        return (("query", 0, query[-1], inner_k), ("key", 2 if len(shapes) == 3 else 1, key[-1], inner_k),
                ("value", 1, value[-1], inner_v), ("attention_output", None, inner_v, query[-1]))

    def count_params(self, shapes):
        return sum(i * o + (o if self.use_bias else 0) for _, _, i, o in self.projections(shapes))

    def emit(self, writer, names, shapes):
        prefix = self.name
        projected = {}

        def dense(part, x, features_in, features_out):
            kernel = writer.glorot(f"{prefix}.{part}.kernel", (features_in, features_out), features_in, features_out)
            y = writer.node("MatMul", [x, kernel], f"{prefix}/{part}")
            if self.use_bias:
                y = writer.node("Add", [y, writer.constant(f"{prefix}.{part}.bias", [0.0] * features_out)],
                                f"{prefix}/{part}")
            return y

        def heads(x, part, depth, perm):
            shape = writer.constant(writer.fresh(f"{prefix}.{part}.heads"), [0, 0, self.heads, depth], "int64")
            return writer.node("Transpose", [writer.node("Reshape", [x, shape], prefix)], prefix, perm=perm)

        for part, index, features_in, features_out in self.projections(shapes)[:3]:
            projected[part] = dense(part, names[index], features_in, features_out)
        q = heads(projected["query"], "query", self.key_dim, [0, 2, 1, 3])  # [B, h, T, k]
        k = heads(projected["key"], "key", self.key_dim, [0, 2, 3, 1])      # [B, h, k, S]
        v = heads(projected["value"], "value", self.value_dim, [0, 2, 1, 3])  # [B, h, S, v]
        scale = writer.constant(writer.fresh(f"{prefix}.scale"), 1.0 / math.sqrt(self.key_dim))
        scores = writer.node("Mul", [writer.node("MatMul", [q, k], prefix), scale], prefix)
        probabilities = writer.node("Softmax", [scores], prefix, axis=-1)
        context = writer.node("Transpose", [writer.node("MatMul", [probabilities, v], prefix)], prefix,
                              perm=[0, 2, 1, 3])  # [B, T, h, v]
        merged_shape = writer.constant(writer.fresh(f"{prefix}.merge"), [0, 0, self.heads * self.value_dim], "int64")
        merged = writer.node("Reshape", [context, merged_shape], prefix)
        _, _, features_in, features_out = self.projections(shapes)[3]
        return dense("attention_output", merged, features_in, features_out)


class Activation(Layer):
    kind = "activation"

    def __init__(self, activation, name=None):
        super().__init__(name)
        self.activation = activations.check(activation)

    def output_spec(self, shapes, dtypes):
        return shapes[0], dtypes[0]

    def emit(self, writer, names, shapes):
        return activations.emit(writer, names[0], self.activation, self.name)


class ReLU(Activation):
    kind = "re_lu"

    def __init__(self, name=None):
        super().__init__("relu", name)


class Softmax(Activation):
    kind = "softmax"

    def __init__(self, axis=-1, name=None):
        if axis != -1:
            raise error(f"Softmax axis {axis} is not supported: it normalizes the last axis (-1)")
        super().__init__("softmax", name)


class Dropout(Layer):
    kind = "dropout"

    def __init__(self, rate, name=None):
        super().__init__(name)
        if not 0 <= rate < 1:
            raise error(f"Dropout rate must be in [0, 1) (got {rate})")
        self.rate = rate

    def output_spec(self, shapes, dtypes):
        return shapes[0], dtypes[0]

    def emit(self, writer, names, shapes):
        ratio = writer.constant(writer.fresh(f"{self.name}.rate"), self.rate)
        return writer.node("Dropout", [names[0], ratio], self.name)


class Flatten(Layer):
    kind = "flatten"

    def __init__(self, data_format=None, name=None):
        super().__init__(name)
        channels_first(data_format)

    def output_spec(self, shapes, dtypes):
        return (math.prod(shapes[0]),), dtypes[0]

    def emit(self, writer, names, shapes):
        return writer.node("Flatten", [names[0]], self.name, axis=1)


class Add(Layer):
    kind = "add"

    def output_spec(self, shapes, dtypes):
        if len(shapes) < 2 or any(shape != shapes[0] for shape in shapes):
            raise error(f"Add needs two or more inputs of one shape (got {', '.join(map(str, shapes))})")
        return shapes[0], dtypes[0]

    def __call__(self, *inputs):
        # Keras passes the inputs as one list: Add()([x, y]).
        if len(inputs) == 1 and isinstance(inputs[0], (list, tuple)):
            inputs = tuple(inputs[0])
        return super().__call__(*inputs)

    def emit(self, writer, names, shapes):
        total = names[0]
        for other in names[1:]:
            total = writer.node("Add", [total, other], self.name)
        return total


class Pooling2D(Layer):
    op_type = None

    def __init__(self, pool_size=(2, 2), strides=None, padding="valid", data_format=None, name=None):
        super().__init__(name)
        channels_first(data_format)
        if padding != "valid":
            raise error(f"{type(self).__name__} padding '{padding}' is not supported (only 'valid')")
        self.pool = pair(pool_size, f"{type(self).__name__} pool_size")
        self.strides = pair(strides if strides is not None else self.pool, f"{type(self).__name__} strides")

    def output_spec(self, shapes, dtypes):
        self.check_rank(shapes[0], (4,))
        channels, *spatial = shapes[0]
        out = [(size - p) // s + 1 for size, p, s in zip(spatial, self.pool, self.strides)]
        if min(out) <= 0:
            raise error(f"{type(self).__name__} pool {self.pool} does not fit the input {shapes[0]}")
        return (channels, *out), "float32"

    def emit(self, writer, names, shapes):
        return writer.node(self.op_type, [names[0]], self.name, kernel_shape=list(self.pool),
                           strides=list(self.strides))


class MaxPooling2D(Pooling2D):
    kind = "max_pooling2d"
    op_type = "MaxPool"


class AveragePooling2D(Pooling2D):
    kind = "average_pooling2d"
    op_type = "AveragePool"


class GlobalAveragePooling2D(Layer):
    kind = "global_average_pooling2d"

    def __init__(self, data_format=None, name=None):
        super().__init__(name)
        channels_first(data_format)

    def output_spec(self, shapes, dtypes):
        self.check_rank(shapes[0], (4,))
        return (shapes[0][0],), "float32"

    def emit(self, writer, names, shapes):
        pooled = writer.node("GlobalAveragePool", [names[0]], self.name)
        return writer.node("Flatten", [pooled], self.name, axis=1)
