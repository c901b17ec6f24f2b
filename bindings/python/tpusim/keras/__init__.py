"""tpusim.keras: build a model as Keras does and simulate it on a TPU.

A model is a graph of layers (tpusim.keras.layers) made with Sequential or with
Input and Model (the functional API). It emits the ONNX graph that tpusim's ONNX
importer reads (Model.to_onnx); run() simulates its step like tpusim.run. Images
are channels first, as in ONNX: Input((3, 224, 224)). docs/python.md has the API.
"""
from tpusim.keras import layers, losses, optimizers
from tpusim.keras.model import Input, Model, Sequential

__all__ = ["Input", "Model", "Sequential", "layers", "losses", "optimizers"]
