#!/usr/bin/python3
"""Regenerates the model zoo in traces/: ResNet-50, ViT-B/16, BERT-base, GPT-2 small,
DLRM and the MLP, each exported from a PyTorch definition with a symbolic batch
dimension.

    /usr/bin/python3 scripts/export_models.py [--out-dir traces] [--only NAME ...]

Every model but the MLP is stored shape-only: floating-point initializers keep their
names, types and shapes but drop their values (the simulator needs none, and the files
stay well under 1 MB); integer and boolean initializers (shapes, indices) keep theirs.
The MLP keeps its weights (traces/mlp.onnx, from a fixed seed, as the reference
executor's tests use them). Random initialization with torch.manual_seed(0); nothing is
downloaded. Needs Debian's python3-torch, python3-torchvision and python3-onnx
(TPUSIM_WITH_TORCH=1 scripts/setup.sh installs them).

The zoo, its sequence lengths and its parameter counts are in docs/frontend.md.

    /usr/bin/python3 scripts/export_models.py --exporter-zoo DIR

writes instead the models of EXPORTER_ZOO as their exporter writes them (tests/python/
test_exporter_zoo.py runs each in inference and training).
"""
import argparse
import io
import math
import pathlib

import onnx
import torch
import torchvision
from torch import nn

SEQUENCE = 128  # tokens per sequence for BERT and GPT-2


def build_mlp() -> nn.Module:
    """784-512-512-10, as the former scripts/export_mlp.py made it (the same seed, the same weights, the same file)."""
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))


class BertLayer(nn.Module):
    """One post-LN encoder layer: x = LN(x + attn(x)); x = LN(x + FFN(x))."""

    def __init__(self, hidden: int, heads: int, ffn: int):
        super().__init__()
        self.heads = heads
        self.query = nn.Linear(hidden, hidden)
        self.key = nn.Linear(hidden, hidden)
        self.value = nn.Linear(hidden, hidden)
        self.attn_out = nn.Linear(hidden, hidden)
        self.attn_norm = nn.LayerNorm(hidden, eps=1e-12)
        self.ffn_in = nn.Linear(hidden, ffn)
        self.ffn_out = nn.Linear(ffn, hidden)
        self.ffn_norm = nn.LayerNorm(hidden, eps=1e-12)
        self.dropout = nn.Dropout(0.1)

    def forward(self, x: torch.Tensor, mask_bias: torch.Tensor) -> torch.Tensor:
        n, t, h = x.shape
        d = h // self.heads

        def split(y):
            return y.view(n, t, self.heads, d).transpose(1, 2)

        scores = split(self.query(x)) @ split(self.key(x)).transpose(-1, -2) / math.sqrt(d)
        probs = self.dropout(torch.softmax(scores + mask_bias, dim=-1))
        context = (probs @ split(self.value(x))).transpose(1, 2).reshape(n, t, h)
        x = self.attn_norm(x + self.dropout(self.attn_out(context)))
        return self.ffn_norm(x + self.dropout(self.ffn_out(nn.functional.gelu(self.ffn_in(x)))))


class Bert(nn.Module):
    """BERT-base (Devlin et al. 2019): 12 layers, hidden 768, 12 heads, FFN 3072, vocab 30522,
    512 positions, 2 token types, GELU, post-LN, the tanh pooler over [CLS] and a 2-class
    sequence classification head (as for a GLUE task), so that the output is [batch, 2]."""

    def __init__(self, vocab=30522, hidden=768, layers=12, heads=12, ffn=3072, positions=512, types=2, classes=2):
        super().__init__()
        self.word = nn.Embedding(vocab, hidden)
        self.position = nn.Embedding(positions, hidden)
        self.token_type = nn.Embedding(types, hidden)
        self.embed_norm = nn.LayerNorm(hidden, eps=1e-12)
        self.dropout = nn.Dropout(0.1)
        self.layers = nn.ModuleList(BertLayer(hidden, heads, ffn) for _ in range(layers))
        self.pooler = nn.Linear(hidden, hidden)
        self.classifier = nn.Linear(hidden, classes)

    def forward(self, input_ids, token_type_ids, attention_mask):
        positions = torch.arange(input_ids.shape[1], device=input_ids.device)
        x = self.word(input_ids) + self.position(positions) + self.token_type(token_type_ids)
        x = self.dropout(self.embed_norm(x))
        # 0 where a token may be attended to, -10000 where it is padding.
        mask_bias = (1.0 - attention_mask[:, None, None, :].to(x.dtype)) * -10000.0
        for layer in self.layers:
            x = layer(x, mask_bias)
        pooled = torch.tanh(self.pooler(x[:, 0]))
        return self.classifier(self.dropout(pooled))


class Gpt2Block(nn.Module):
    """One pre-LN decoder block: x = x + attn(LN(x)); x = x + MLP(LN(x))."""

    def __init__(self, hidden: int, heads: int):
        super().__init__()
        self.heads = heads
        self.ln_1 = nn.LayerNorm(hidden)
        self.c_attn = nn.Linear(hidden, 3 * hidden)
        self.c_proj = nn.Linear(hidden, hidden)
        self.ln_2 = nn.LayerNorm(hidden)
        self.c_fc = nn.Linear(hidden, 4 * hidden)
        self.mlp_proj = nn.Linear(4 * hidden, hidden)
        self.dropout = nn.Dropout(0.1)

    def forward(self, x: torch.Tensor, causal: torch.Tensor) -> torch.Tensor:
        n, t, h = x.shape
        d = h // self.heads
        q, k, v = self.c_attn(self.ln_1(x)).split(h, dim=2)

        def split(y):
            return y.view(n, t, self.heads, d).transpose(1, 2)

        scores = split(q) @ split(k).transpose(-1, -2) / math.sqrt(d)
        scores = torch.where(causal, scores, torch.full_like(scores, -10000.0))
        probs = self.dropout(torch.softmax(scores, dim=-1))
        context = (probs @ split(v)).transpose(1, 2).reshape(n, t, h)
        x = x + self.dropout(self.c_proj(context))
        return x + self.dropout(self.mlp_proj(nn.functional.gelu(self.c_fc(self.ln_2(x)), approximate="tanh")))


class Gpt2(nn.Module):
    """GPT-2 small (Radford et al. 2019): 12 layers, hidden 768, 12 heads, vocab 50257,
    1024 positions, pre-LN with a final LayerNorm, tanh-approximated GELU, a causal mask, and
    an LM head tied to the token embedding (as in OpenAI's release: that is what makes 124 M).
    The logits are returned as [batch * sequence, vocab], one row per predicted token, so
    that training's softmax cross-entropy over [rows, classes] is the language-model loss."""

    def __init__(self, vocab=50257, hidden=768, layers=12, heads=12, positions=1024):
        super().__init__()
        self.wte = nn.Embedding(vocab, hidden)
        self.wpe = nn.Embedding(positions, hidden)
        self.dropout = nn.Dropout(0.1)
        self.blocks = nn.ModuleList(Gpt2Block(hidden, heads) for _ in range(layers))
        self.ln_f = nn.LayerNorm(hidden)

    def forward(self, input_ids):
        t = input_ids.shape[1]
        positions = torch.arange(t, device=input_ids.device)
        causal = positions[None, :] <= positions[:, None]  # [t, t]: query i sees keys j <= i
        x = self.dropout(self.wte(input_ids) + self.wpe(positions))
        for block in self.blocks:
            x = block(x, causal)
        x = self.ln_f(x).reshape(-1, x.shape[-1])
        return nn.functional.linear(x, self.wte.weight)  # tied LM head


class Dlrm(nn.Module):
    """DLRM (Naumov et al. 2019) in the configuration of the reference implementation's
    Criteo Kaggle benchmark (facebookresearch/dlrm, bench/dlrm_s_criteo_kaggle.sh):
    13 dense features, bottom MLP 13-512-256-64-16, 26 embedding tables of dimension 16,
    pairwise dot interaction of the 27 vectors (351 products, lower triangle without the
    diagonal) concatenated with the bottom MLP's output (16 + 351 = 367), top MLP
    367-512-256-1. Two changes: each table has at most `max_rows` rows (the Kaggle
    cardinalities below, capped, which keeps a step's HBM footprint and simulation small;
    33.8 M rows uncapped), and the top MLP ends in 2 logits (click / no click, a softmax over two
    classes is a sigmoid of their difference) so that training's softmax cross-entropy is
    the click loss."""

    # Rows per table of Criteo Kaggle (the reference's --data-set=kaggle, day-split counts).
    KAGGLE_ROWS = [1460, 583, 10131227, 2202608, 305, 24, 12517, 633, 3, 93145, 5683, 8351593, 3194,
                   27, 14992, 5461306, 10, 5652, 2173, 4, 7046547, 18, 15, 286181, 105, 142572]

    def __init__(self, max_rows=100000, dim=16, bottom=(13, 512, 256, 64, 16), top=(512, 256), classes=2):
        super().__init__()
        self.rows = [min(r, max_rows) for r in self.KAGGLE_ROWS]
        self.tables = nn.ModuleList(nn.Embedding(r, dim) for r in self.rows)
        self.bottom = self.mlp(bottom, final_relu=True)
        features = len(self.rows) + 1
        interactions = dim + features * (features - 1) // 2
        self.top = self.mlp((interactions, *top, classes), final_relu=False)
        rows, cols = torch.tril_indices(features, features, offset=-1)
        self.register_buffer("pairs", rows * features + cols, persistent=True)

    @staticmethod
    def mlp(sizes, final_relu):
        layers = []
        for i in range(len(sizes) - 1):
            layers.append(nn.Linear(sizes[i], sizes[i + 1]))
            if i < len(sizes) - 2 or final_relu:
                layers.append(nn.ReLU())
        return nn.Sequential(*layers)

    def forward(self, dense, sparse):
        x = self.bottom(dense)  # [n, 16]
        vectors = [x] + [table(sparse[:, i]) for i, table in enumerate(self.tables)]
        t = torch.stack(vectors, dim=1)  # [n, 27, 16]
        products = (t @ t.transpose(1, 2)).flatten(1)  # [n, 27 * 27]
        return self.top(torch.cat([x, products[:, self.pairs]], dim=1))


class UnetDecoder(nn.Module):
    """A U-Net-style encoder-decoder: strided convolutions down, ConvTranspose up, a skip."""

    def __init__(self):
        super().__init__()
        self.down1 = nn.Conv2d(3, 16, 3, stride=2, padding=1)
        self.down2 = nn.Conv2d(16, 32, 3, stride=2, padding=1)
        self.up1 = nn.ConvTranspose2d(32, 16, 4, stride=2, padding=1)
        self.up2 = nn.ConvTranspose2d(32, 8, 4, stride=2, padding=1)
        self.head = nn.Conv2d(8, 1, 1)

    def forward(self, image):
        a = torch.relu(self.down1(image))
        u = torch.relu(self.up1(torch.relu(self.down2(a))))
        return self.head(torch.relu(self.up2(torch.cat([u, a], 1))))


class SpeechConv1d(nn.Module):
    """Keyword spotting over 80 log-mel bands: Conv1d, a strided Conv1d, mean over time, a classifier."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv1d(80, 128, 5, padding=2)
        self.conv2 = nn.Conv1d(128, 128, 3, stride=2, padding=1)
        self.classify = nn.Linear(128, 30)

    def forward(self, features):
        return self.classify(torch.relu(self.conv2(torch.relu(self.conv1(features)))).mean(-1))


class LstmLanguageModel(nn.Module):
    """Next-token prediction: an embedding, a two-layer LSTM over the context, a vocabulary head on its last step."""

    def __init__(self, vocab=1000, embed=64, hidden=128, layers=2):
        super().__init__()
        self.embed = nn.Embedding(vocab, embed)
        self.lstm = nn.LSTM(embed, hidden, num_layers=layers, batch_first=True)
        self.head = nn.Linear(hidden, vocab)

    def forward(self, tokens):
        return self.head(self.lstm(self.embed(tokens))[0][:, -1])


class GruClassifier(nn.Module):
    """Utterance classification: a bidirectional GRU over 40 filterbank features, its final states classified."""

    def __init__(self, features=40, hidden=64, classes=12):
        super().__init__()
        self.gru = nn.GRU(features, hidden, batch_first=True, bidirectional=True)
        self.classify = nn.Linear(2 * hidden, classes)

    def forward(self, features):
        final = self.gru(features)[1]  # [2, batch, hidden]
        return self.classify(torch.cat([final[0], final[1]], dim=1))


class TransformerSeq2Seq(nn.Module):
    """nn.Transformer encoder-decoder (2 + 2 layers, causal decoder mask) over embedded tokens, pooled and classified."""

    def __init__(self, vocab=500, model=64, heads=4, layers=2, ffn=128, classes=10, dropout=0.1):
        super().__init__()
        self.embed = nn.Embedding(vocab, model)
        self.transformer = nn.Transformer(model, heads, layers, layers, ffn, dropout=dropout, batch_first=True)
        self.classify = nn.Linear(model, classes)

    def forward(self, tokens):
        source = self.embed(tokens)
        target = source[:, : tokens.shape[1] // 2]
        mask = self.transformer.generate_square_subsequent_mask(target.shape[1])
        return self.classify(self.transformer(source, target, tgt_mask=mask).mean(1))


# Models as their own exporters write them (torch.onnx.export, opset 14): name ->
# (builder, example input shape[, input dtype]). Not stored in traces/: tests/python/
# test_exporter_zoo.py exports and runs them where python3-torch is installed. Images are
# 64 x 64 but for the transformers, which need 224.
EXPORTER_ZOO = {
    "mobilenet_v2": (lambda: torchvision.models.mobilenet_v2(weights=None), (1, 3, 64, 64)),
    "mobilenet_v3_large": (lambda: torchvision.models.mobilenet_v3_large(weights=None), (1, 3, 64, 64)),
    "efficientnet_b0": (lambda: torchvision.models.efficientnet_b0(weights=None), (1, 3, 64, 64)),
    "densenet121": (lambda: torchvision.models.densenet121(weights=None), (1, 3, 64, 64)),
    "resnext50": (lambda: torchvision.models.resnext50_32x4d(weights=None), (1, 3, 64, 64)),
    "regnet": (lambda: torchvision.models.regnet_y_400mf(weights=None), (1, 3, 64, 64)),
    "convnext_tiny": (lambda: torchvision.models.convnext_tiny(weights=None), (1, 3, 64, 64)),
    "vit_b_16": (lambda: torchvision.models.vit_b_16(weights=None), (1, 3, 224, 224)),
    "unet_decoder": (UnetDecoder, (1, 3, 64, 64)),
    "speech_conv1d": (SpeechConv1d, (1, 80, 100)),
    "swin_t": (lambda: torchvision.models.swin_t(weights=None), (1, 3, 224, 224)),
    "lstm_lm": (LstmLanguageModel, (1, 35), torch.int64),
    "gru_classifier": (GruClassifier, (1, 50, 40)),
    "transformer_seq2seq": (TransformerSeq2Seq, (1, 16), torch.int64),
}


def export_as_exporters_do(name: str, path: pathlib.Path) -> int:
    """EXPORTER_ZOO[name] exported shape-only as torch.onnx.export writes it in eval mode (a
    BatchNormalization after a convolution folded into it, equal initializers merged into
    Identity nodes); returns torch's parameter count, with the parameters the exporter folds
    (Swin's relative position bias) counted as it writes them."""
    build, shape, *dtype = EXPORTER_ZOO[name]
    torch.manual_seed(0)
    model = build().eval()
    buffer = io.BytesIO()
    torch.onnx.export(model, torch.zeros(*shape, dtype=dtype[0] if dtype else torch.float32), buffer, input_names=["input"], output_names=["output"],
                      dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}}, opset_version=14)
    exported = onnx.load_from_string(buffer.getvalue())
    shape_only(exported)
    onnx.save(exported, str(path))
    parameters = sum(p.numel() for p in model.parameters())
    # A Swin block's relative position bias is a [(2w-1)^2, heads] table gathered into
    # [heads, w^2, w^2] by a fixed index: the eval-mode exporter folds the gather, so the file
    # holds the gathered bias, not the table.
    for module in model.modules():
        if hasattr(module, "relative_position_bias_table"):
            parameters += module.relative_position_index.numel() * module.num_heads
            parameters -= module.relative_position_bias_table.numel()
    return parameters


def shape_only(model: onnx.ModelProto) -> None:
    """Drops the values of floating-point initializers (weights), keeping integer ones."""
    floating = {onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16, onnx.TensorProto.BFLOAT16, onnx.TensorProto.DOUBLE}
    for tensor in model.graph.initializer:
        if tensor.data_type in floating:
            for field in ("raw_data", "float_data", "double_data", "int32_data"):
                tensor.ClearField(field)


def export(model, example, path, input_names, dynamic, training=False, keep_weights=False) -> None:
    if not keep_weights:
        # The exporter merges initializers whose values are equal (every LayerNorm starts at
        # ones and zeros), which would share one weight between layers; nudge each apart.
        # The values are dropped below anyway.
        with torch.no_grad():
            for parameter in model.parameters():
                parameter.add_(torch.rand_like(parameter) * 1e-3)
    buffer = io.BytesIO()
    axes = {name: {0: "batch"} for name in input_names + ["logits"] if name in dynamic}
    torch.onnx.export(
        model,
        example,
        buffer,
        input_names=input_names,
        output_names=["logits"],
        dynamic_axes=axes,
        opset_version=17,
        training=torch.onnx.TrainingMode.TRAINING if training else torch.onnx.TrainingMode.EVAL,
        do_constant_folding=False,  # folding would store the tied head's transpose as a second weight
    )
    exported = onnx.load_from_string(buffer.getvalue())
    if not keep_weights:
        shape_only(exported)
    onnx.save(exported, str(path))
    params = sum(p.numel() for p in model.parameters())
    print(f"wrote {path} ({len(exported.graph.node)} nodes, {params} parameters, {path.stat().st_size} bytes)")


def main() -> None:
    names = ["mlp", "resnet50", "vit_b16", "bert_base", "gpt2_small", "dlrm"]
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out-dir", default="traces", type=pathlib.Path)
    parser.add_argument("--only", nargs="*", choices=names, default=names)
    parser.add_argument("--exporter-zoo", type=pathlib.Path, metavar="DIR",
                        help="write the models of EXPORTER_ZOO there instead (not part of traces/)")
    args = parser.parse_args()
    if args.exporter_zoo:
        args.exporter_zoo.mkdir(parents=True, exist_ok=True)
        for name in EXPORTER_ZOO:
            path = args.exporter_zoo / f"{name}.onnx"
            print(f"wrote {path} ({export_as_exporters_do(name, path)} parameters)")
        return
    out = args.out_dir
    ids = torch.zeros(1, SEQUENCE, dtype=torch.int64)
    for name in args.only:
        torch.manual_seed(0)
        if name == "mlp":
            model = build_mlp().eval()
            export(model, torch.zeros(1, 784), out / "mlp.onnx", ["image"], ["image", "logits"], keep_weights=True)
        elif name == "resnet50":
            # BatchNormalization kept (a training-mode export), as a training run needs it.
            model = torchvision.models.resnet50(weights=None)
            export(model, torch.zeros(1, 3, 224, 224), out / "resnet50.onnx", ["image"], ["image", "logits"],
                   training=True)
        elif name == "vit_b16":
            model = torchvision.models.vit_b_16(weights=None).eval()
            export(model, torch.zeros(1, 3, 224, 224), out / "vit_b16.onnx", ["image"], ["image", "logits"])
        elif name == "bert_base":
            model = Bert().eval()
            export(model, (ids, ids, torch.ones_like(ids)), out / "bert_base.onnx",
                   ["input_ids", "token_type_ids", "attention_mask"],
                   ["input_ids", "token_type_ids", "attention_mask", "logits"])
        elif name == "gpt2_small":
            model = Gpt2().eval()
            export(model, ids, out / "gpt2_small.onnx", ["input_ids"], ["input_ids"])
        elif name == "dlrm":
            model = Dlrm().eval()
            export(model, (torch.zeros(1, 13), torch.zeros(1, 26, dtype=torch.int64)), out / "dlrm.onnx",
                   ["dense", "sparse"], ["dense", "sparse", "logits"])


if __name__ == "__main__":
    main()
