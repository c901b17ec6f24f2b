"""tpusim.keras: models built as in Keras simulate as the equivalent ONNX file does."""
import numpy
import onnx
import pytest

import tpusim
from tpusim import keras
from tpusim.keras import layers


def mlp():
    """traces/mlp.onnx's layers: 784 -> 512 -> 512 -> 10, ReLU between."""
    return keras.Sequential([keras.Input((784,), name="image"), layers.Dense(512, activation="relu"),
                             layers.Dense(512, activation="relu"), layers.Dense(10)])


def transformer_block(length=32, width=64):
    ids = keras.Input((length,), dtype="int64", name="tokens")
    x = layers.Embedding(1000, width)(ids)
    attention = layers.MultiHeadAttention(num_heads=4, key_dim=width // 4)(x, x)
    x = layers.LayerNormalization()(layers.Add()([x, attention]))
    ffn = layers.Dense(width, name="ffn_out")(layers.Dense(2 * width, activation="gelu")(x))
    x = layers.LayerNormalization()(layers.Add()([x, ffn]))
    logits = layers.Dense(4, activation="softmax")(layers.Flatten()(x))
    return keras.Model(ids, logits, name="block")


def test_a_built_mlp_simulates_as_the_onnx_file(mlp_path, tmp_path):
    model = mlp()
    model.compile(optimizer="sgd", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    built = model.run(batch=64)
    shipped = tpusim.run(mlp_path, batch=64)
    assert built["mode"] == "training"
    assert built["total_cycles"] == shipped["total_cycles"]
    assert [op["type"] for op in built["per_op"]] == [op["type"] for op in shipped["per_op"]]
    inference = tpusim.run(model, mode="inference", batch=64)
    assert inference["total_cycles"] == tpusim.run(mlp_path, mode="inference", batch=64)["total_cycles"]
    # The same Program: as many instructions, compiled from either.
    ours = tpusim.compile(model, tmp_path / "built.tpuprog", batch=64)
    theirs = tpusim.compile(mlp_path, str(tmp_path / "shipped.tpuprog"), batch=64)
    assert ours["instructions"] == theirs["instructions"] > 0
    assert tpusim.run(ours["path"])["total_cycles"] == shipped["total_cycles"]


def test_keras_optimizers_map_to_the_training_options(mlp_path):
    model = mlp()
    model.compile(optimizer=keras.optimizers.Adam(learning_rate=1e-3), loss=keras.losses.SparseCategoricalCrossentropy(
        from_logits=True))
    adam = model.run(batch=32)
    assert adam["total_cycles"] == tpusim.run(mlp_path, batch=32, optimizer="adam", learning_rate=1e-3, beta1=0.9,
                                              beta2=0.999, epsilon=1e-7)["total_cycles"]
    assert adam["total_cycles"] > tpusim.run(mlp_path, batch=32)["total_cycles"]  # Adam's two state updates
    assert keras.optimizers.SGD(momentum=0.9, nesterov=True).training_options() == {
        "optimizer": "momentum", "learning_rate": 0.01, "momentum": 0.9, "nesterov": True}
    assert keras.optimizers.AdamW(weight_decay=0.01).training_options()["adamw"] is True


def test_a_softmax_output_is_left_to_the_cross_entropy(mlp_path):
    # Keras fuses softmax into sparse_categorical_crossentropy; the training graph is the logits'.
    probabilities = keras.Sequential([keras.Input((784,)), layers.Dense(512, activation="relu"),
                                      layers.Dense(512, activation="relu"), layers.Dense(10, activation="softmax")])
    probabilities.compile(optimizer="sgd", loss="sparse_categorical_crossentropy")
    assert probabilities.run(batch=16)["total_cycles"] == tpusim.run(mlp_path, batch=16)["total_cycles"]
    graph = probabilities.to_onnx()
    assert graph.graph.node[-1].op_type == "Softmax"
    assert probabilities.to_onnx(training=True).graph.node[-1].op_type == "Gemm"


def test_a_transformer_block_runs_and_trains():
    model = transformer_block()
    assert model.count_params() == 64000 + 4 * (64 * 64 + 64) + 2 * 128 + (64 * 128 + 128) + (128 * 64 + 64) \
        + (2048 * 4 + 4)
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    training = model.run(batch=8)
    inference = model.run(batch=8, mode="inference")
    assert training["total_cycles"] > inference["total_cycles"] > 0
    onnx.checker.check_model(model.to_onnx())
    ops = [node.op_type for node in model.to_onnx().graph.node]
    assert ops.count("Softmax") == 2 and ops.count("LayerNormalization") == 2 and ops.count("Erf") == 1
    values = tpusim.reference(model, {"tokens": numpy.arange(8 * 32).reshape(8, 32) % 1000,
                                      "labels": numpy.arange(8) % 4}, batch=8)
    assert "embedding.embeddings:updated" in values
    assert values["embedding.embeddings:updated"].shape == (1000, 64)


def test_a_convolutional_model_runs():
    model = keras.Sequential([keras.Input((3, 32, 32)), layers.Conv2D(16, 3, padding="same", activation="relu"),
                              layers.BatchNormalization(), layers.MaxPooling2D(), layers.Conv2D(32, 3, strides=2),
                              layers.GlobalAveragePooling2D(), layers.Dense(10)])
    assert [call.shape for call in model.calls] == [(16, 32, 32), (16, 32, 32), (16, 16, 16), (32, 7, 7), (32,), (10,)]
    model.compile("sgd", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    assert model.run(batch=4)["total_cycles"] > model.run(batch=4, mode="inference")["total_cycles"]


def test_unsupported_arguments_are_one_line_errors(mlp_path):
    model = mlp()
    cases = [
        (lambda: model.compile(optimizer="rmsprop", loss="mse"), "optimizer 'rmsprop' is not supported"),
        (lambda: model.compile(optimizer="sgd", loss="categorical_crossentropy"), "use sparse_categorical"),
        (lambda: model.compile(optimizer="sgd", loss="mse", metrics=["accuracy"]), "metrics are not simulated"),
        (lambda: model.compile(optimizer="sgd", loss="sparse_categorical_crossentropy"), "ending in a softmax"),
        (lambda: model.compile(optimizer="sgd"), "compile needs a loss"),
        (lambda: layers.Conv2D(8, 3, data_format="channels_last"), "channels first"),
        (lambda: layers.Dense(4, activation="swish"), "unknown activation 'swish'"),
        (lambda: layers.MaxPooling2D(padding="same"), "padding 'same' is not supported"),
        (lambda: layers.Dense(4)(numpy.zeros(3)), "called on KerasTensors"),
        (lambda: layers.Embedding(10, 4)(keras.Input((3,))), "integer ids"),
        (lambda: layers.Conv2D(8, 3)(keras.Input((16,))), "rank-4 inputs"),
        (lambda: keras.Sequential([layers.Dense(3)]), "starts with tpusim.keras.Input"),
        (lambda: mlp().run(batch=8, mode="training"), "is not compiled"),
    ]
    for action, message in cases:
        with pytest.raises(tpusim.Error, match=message) as error:
            action()
        assert "\n" not in str(error.value)
    model.compile(optimizer="sgd", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    with pytest.raises(tpusim.Error, match="'optimizer' is set by model.compile"):
        model.run(batch=8, optimizer="adam")
