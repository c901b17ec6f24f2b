#!/usr/bin/python3
"""Writes a shape-only GPT decoder as ONNX, built node by node with python3-onnx (no
PyTorch: a 175B-parameter model cannot be instantiated to be exported). The defaults
are GPT-3 175B (Brown et al. 2020, "Language Models are Few-Shot Learners", Table 2.1:
96 layers, d_model 12288, 96 heads of 128, context 2048; vocabulary 50257, GPT-2's BPE).

    /usr/bin/python3 scripts/make_gpt_trace.py traces/gpt3_175b.onnx
    /usr/bin/python3 scripts/make_gpt_trace.py /tmp/gpt3_8l.onnx --layers 8

Each block is pre-LN as in GPT-2/3: x += proj(attn(LN(x))); x += fc2(gelu(fc1(LN(x)))),
with separate Q, K and V projections, a causal mask, tanh GELU, a final LayerNorm and
an LM head tied to the token embedding (--untied-head: one of its own); logits are
[batch x seq, vocab], one row per predicted token, as traces/gpt2_small.onnx. GPT-3's alternating sparse attention
bands are not modelled: every layer is dense. Float initializers keep their names,
types and shapes but no values (the simulator needs none); the batch is symbolic.
"""
import argparse
import math

import onnx
from onnx import TensorProto, helper

FLOAT = TensorProto.FLOAT


class Builder:
    def __init__(self):
        self.nodes, self.initializers = [], []
        self.count = 0

    def weight(self, name, dims):
        """A float initializer without values (shape-only)."""
        tensor = TensorProto(name=name, data_type=FLOAT, dims=list(dims))
        self.initializers.append(tensor)
        return name

    def const(self, name, values, dtype=TensorProto.INT64, dims=None):
        """A Constant node, as PyTorch's exporter writes one: an initializer of a float
        type would be a trained weight."""
        tensor = helper.make_tensor(name, dtype, [len(values)] if dims is None else dims, values)
        self.nodes.append(helper.make_node("Constant", [], [name], name=name, value=tensor))
        return name

    def op(self, op_type, inputs, name, **attributes):
        out = f"{name}:out"
        self.nodes.append(helper.make_node(op_type, inputs, [out], name=name, **attributes))
        return out


def block(b, x, i, hidden, shapes, mask):
    p = f"h{i}"
    ln1 = b.op("LayerNormalization", [x, b.weight(f"{p}.ln_1.weight", [hidden]), b.weight(f"{p}.ln_1.bias", [hidden])],
               f"{p}.ln_1", axis=-1, epsilon=1e-5)

    def project(name, inp, rows, cols):
        mm = b.op("MatMul", [inp, b.weight(f"{p}.{name}.weight", [rows, cols])], f"{p}.{name}")
        return b.op("Add", [mm, b.weight(f"{p}.{name}.bias", [cols])], f"{p}.{name}.bias_add")

    def heads_of(t, name, perm):
        r = b.op("Reshape", [t, shapes["heads"]], f"{p}.{name}.split_heads")
        return b.op("Transpose", [r], f"{p}.{name}.heads", perm=perm)

    q = heads_of(project("q", ln1, hidden, hidden), "q", [0, 2, 1, 3])
    k = heads_of(project("k", ln1, hidden, hidden), "k", [0, 2, 3, 1])
    v = heads_of(project("v", ln1, hidden, hidden), "v", [0, 2, 1, 3])
    scores = b.op("MatMul", [q, k], f"{p}.scores")
    scaled = b.op("Mul", [scores, shapes["scale"]], f"{p}.scaled")
    masked = b.op("Where", [mask, scaled, shapes["neg"]], f"{p}.causal")
    probs = b.op("Softmax", [masked], f"{p}.softmax", axis=-1)
    context = b.op("MatMul", [probs, v], f"{p}.context")
    merged = b.op("Transpose", [context], f"{p}.context.t", perm=[0, 2, 1, 3])
    merged = b.op("Reshape", [merged, shapes["model"]], f"{p}.merge_heads")
    x = b.op("Add", [x, project("attn_proj", merged, hidden, hidden)], f"{p}.attn_residual")

    ln2 = b.op("LayerNormalization", [x, b.weight(f"{p}.ln_2.weight", [hidden]), b.weight(f"{p}.ln_2.bias", [hidden])],
               f"{p}.ln_2", axis=-1, epsilon=1e-5)
    h = project("fc1", ln2, hidden, 4 * hidden)
    # tanh GELU: 0.5 h (1 + tanh(sqrt(2/pi) (h + 0.044715 h^3)))
    cube = b.op("Mul", [b.op("Mul", [h, h], f"{p}.gelu.sq"), h], f"{p}.gelu.cube")
    inner = b.op("Add", [h, b.op("Mul", [cube, shapes["c3"]], f"{p}.gelu.c3")], f"{p}.gelu.inner")
    t = b.op("Tanh", [b.op("Mul", [inner, shapes["sqrt2pi"]], f"{p}.gelu.scale")], f"{p}.gelu.tanh")
    one_plus = b.op("Add", [t, shapes["one"]], f"{p}.gelu.one")
    g = b.op("Mul", [b.op("Mul", [h, one_plus], f"{p}.gelu.mul"), shapes["half"]], f"{p}.gelu")
    return b.op("Add", [x, project("fc2", g, 4 * hidden, hidden)], f"{p}.mlp_residual")


def build(layers, hidden, heads, seq, vocab, untied_head=False):
    if hidden % heads:
        raise SystemExit(f"hidden {hidden} is not a multiple of heads {heads}")
    b = Builder()
    head_dim = hidden // heads
    shapes = {
        "heads": b.const("shape.heads", [0, seq, heads, head_dim]),
        "model": b.const("shape.model", [0, seq, hidden]),
        "rows": b.const("shape.rows", [-1, hidden]),
        "scale": b.const("attn.scale", [1.0 / math.sqrt(head_dim)], FLOAT, []),
        "neg": b.const("attn.masked", [-1e4], FLOAT, []),
        "c3": b.const("gelu.c3", [0.044715], FLOAT, []),
        "sqrt2pi": b.const("gelu.sqrt2pi", [math.sqrt(2 / math.pi)], FLOAT, []),
        "one": b.const("gelu.one_c", [1.0], FLOAT, []),
        "half": b.const("gelu.half", [0.5], FLOAT, []),
    }
    # The causal mask [seq, seq]: position j is visible from i when j <= i (folded at import).
    positions = b.op("Range", [b.const("pos.start", [0], dims=[]), b.const("pos.limit", [seq], dims=[]),
                               b.const("pos.delta", [1], dims=[])], "positions")
    rows = b.op("Unsqueeze", [positions, b.const("axes.1", [1])], "positions.rows")
    cols = b.op("Unsqueeze", [positions, b.const("axes.0", [0])], "positions.cols")
    mask = b.op("LessOrEqual", [cols, rows], "causal_mask")

    # The embeddings join the first decoder layer and the final norm and LM head the last
    # ("h0/wte": a layer is a node's path without its own part), as Megatron-LM places them
    # on the first and last pipeline stages: the pipeline's layers are the decoder layers.
    first, last = "h0/", f"h{layers - 1}/"
    wte = b.weight("wte.weight", [vocab, hidden])
    x = b.op("Add", [b.op("Gather", [wte, "input_ids"], first + "wte"),
                     b.op("Gather", [b.weight("wpe.weight", [seq, hidden]), positions], first + "wpe")],
             first + "embed")
    for i in range(layers):
        x = block(b, x, i, hidden, shapes, mask)
    x = b.op("LayerNormalization", [x, b.weight("ln_f.weight", [hidden]), b.weight("ln_f.bias", [hidden])],
             last + "ln_f", axis=-1, epsilon=1e-5)
    flat = b.op("Reshape", [x, shapes["rows"]], last + "tokens")
    if untied_head:
        head = b.weight("lm_head.weight", [hidden, vocab])
    else:
        head = b.op("Transpose", [wte], last + "lm_head.tied", perm=[1, 0])
    b.nodes.append(helper.make_node("MatMul", [flat, head], ["logits"], name=last + "lm_head"))

    graph = helper.make_graph(
        b.nodes, f"gpt_{layers}l_{hidden}d",
        [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", seq])],
        [helper.make_tensor_value_info("logits", FLOAT, [None, vocab])], b.initializers)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="tpusim make_gpt_trace")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out")
    parser.add_argument("--layers", type=int, default=96)
    parser.add_argument("--hidden", type=int, default=12288)
    parser.add_argument("--heads", type=int, default=96)
    parser.add_argument("--seq", type=int, default=2048)
    parser.add_argument("--vocab", type=int, default=50257)
    parser.add_argument("--untied-head", action="store_true",
                        help="an LM head of its own instead of the token embedding's transpose (for --pp: a tied "
                             "head's gradient would cross every stage boundary each micro-batch)")
    args = parser.parse_args()
    model = build(args.layers, args.hidden, args.heads, args.seq, args.vocab, args.untied_head)
    onnx.save(model, args.out)
    params = sum(math.prod(t.dims) for t in model.graph.initializer if t.data_type == FLOAT and len(t.dims) > 0)
    print(f"{args.out}: {args.layers} layers, hidden {args.hidden}, {args.heads} heads, seq {args.seq}: "
          f"{params:,} parameters")


if __name__ == "__main__":
    main()
