"""The zoo's own PyTorch definitions (scripts/export_models.py), shrunk and exported with
their weights, run on the CPU reference executor against PyTorch's forward pass. This
checks what importing the zoo takes: the folded shape arithmetic, Cast, the attention
masks (Where, Expand), Gelu's erf and tanh forms, Split and the tied head. Needs Debian's
python3-torch and python3-torchvision (skipped without them)."""
import pathlib
import sys

import numpy as np
import pytest

import tpusim

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.filterwarnings("ignore::torch.jit.TracerWarning", "ignore::UserWarning")
torchvision = pytest.importorskip("torchvision")
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "scripts"))
import export_models  # noqa: E402


def check(tmp_path, name, model, example, input_names, feeds, train=False):
    path = tmp_path / f"{name}.onnx"
    torch.manual_seed(1)
    with torch.no_grad():
        for parameter in model.parameters():  # away from the zero biases of the init
            parameter.add_(torch.randn_like(parameter) * 0.1)
    model.eval()
    export_models.export(model, example, path, input_names, input_names + ["logits"], keep_weights=True)
    with torch.no_grad():
        expected = model(*[torch.from_numpy(feeds[n]) for n in input_names]).numpy()
    out = tpusim.reference(str(path), feeds, mode="inference", batch=2)
    np.testing.assert_allclose(out["logits"], expected, rtol=1e-4, atol=1e-5)
    if not train:
        return
    # One SGD step of softmax cross-entropy (mean over the rows), against PyTorch's.
    labels = np.arange(expected.shape[0], dtype=np.int64) % expected.shape[1]
    lr = 0.5
    out = tpusim.reference(str(path), {**feeds, "labels": labels}, batch=2, learning_rate=lr)
    model.zero_grad()
    logits = model(*[torch.from_numpy(feeds[n]) for n in input_names])
    torch.nn.functional.cross_entropy(logits, torch.from_numpy(labels)).backward()
    for parameter_name, parameter in model.named_parameters():
        updated = (parameter - lr * parameter.grad).detach().numpy()
        np.testing.assert_allclose(out[parameter_name + ":updated"], updated, rtol=1e-3, atol=1e-5,
                                   err_msg=parameter_name)


def test_bert_matches_pytorch(tmp_path):
    torch.manual_seed(0)
    model = export_models.Bert(vocab=50, hidden=16, layers=2, heads=2, ffn=32, positions=16, classes=3)
    ids = np.random.default_rng(0).integers(0, 50, size=(2, 8)).astype(np.int64)
    types = (np.arange(8)[None, :] >= 4).astype(np.int64).repeat(2, axis=0)
    mask = np.ones((2, 8), dtype=np.int64)
    mask[1, 6:] = 0  # padding in the second sequence
    example = tuple(torch.zeros(1, 8, dtype=torch.int64) for _ in range(3))
    names = ["input_ids", "token_type_ids", "attention_mask"]
    check(tmp_path, "bert", model, example, names, dict(zip(names, (ids, types, mask))), train=True)


def test_gpt2_matches_pytorch(tmp_path):
    torch.manual_seed(0)
    model = export_models.Gpt2(vocab=50, hidden=16, layers=2, heads=2, positions=16)
    ids = np.random.default_rng(1).integers(0, 50, size=(2, 8)).astype(np.int64)
    check(tmp_path, "gpt2", model, torch.zeros(1, 8, dtype=torch.int64), ["input_ids"], {"input_ids": ids}, train=True)


def test_vit_matches_pytorch(tmp_path):
    torch.manual_seed(0)
    model = torchvision.models.VisionTransformer(image_size=32, patch_size=16, num_layers=2, num_heads=2,
                                                 hidden_dim=16, mlp_dim=32, num_classes=5)
    image = np.random.default_rng(2).standard_normal((2, 3, 32, 32)).astype(np.float32)
    check(tmp_path, "vit", model, torch.zeros(1, 3, 32, 32), ["image"], {"image": image}, train=True)


def test_dlrm_matches_pytorch(tmp_path):
    torch.manual_seed(0)
    model = export_models.Dlrm(max_rows=5)
    rng = np.random.default_rng(3)
    dense = rng.standard_normal((2, 13)).astype(np.float32)
    sparse = rng.integers(0, 3, size=(2, 26)).astype(np.int64)
    example = (torch.zeros(1, 13), torch.zeros(1, 26, dtype=torch.int64))
    check(tmp_path, "dlrm", model, example, ["dense", "sparse"], {"dense": dense, "sparse": sparse},
          train=True)


def test_lstm_language_model_matches_pytorch(tmp_path):
    # Two stacked LSTMs (ONNX LSTM nodes, unrolled per step), trained through time.
    torch.manual_seed(0)
    model = export_models.LstmLanguageModel(vocab=20, embed=8, hidden=12, layers=2)
    tokens = np.random.default_rng(4).integers(0, 20, size=(2, 7)).astype(np.int64)
    check(tmp_path, "lstm_lm", model, torch.zeros(1, 7, dtype=torch.int64), ["tokens"], {"tokens": tokens},
          train=True)


def test_bidirectional_gru_matches_pytorch(tmp_path):
    # torch's GRU is ONNX's with linear_before_reset; the final states of both directions are read.
    torch.manual_seed(0)
    model = export_models.GruClassifier(features=6, hidden=8, classes=4)
    features = np.random.default_rng(5).standard_normal((2, 9, 6)).astype(np.float32)
    check(tmp_path, "gru", model, torch.zeros(1, 9, 6), ["features"], {"features": features}, train=True)


def test_transformer_encoder_decoder_matches_pytorch(tmp_path):
    torch.manual_seed(0)
    model = export_models.TransformerSeq2Seq(vocab=30, model=16, heads=2, layers=1, ffn=32, classes=5, dropout=0.0)
    tokens = np.random.default_rng(6).integers(0, 30, size=(2, 8)).astype(np.int64)
    check(tmp_path, "seq2seq", model, torch.zeros(1, 8, dtype=torch.int64), ["tokens"], {"tokens": tokens},
          train=True)


def test_swin_matches_pytorch(tmp_path):
    # Shifted windows: Mod and ScatterND folded while compiling into the attention masks, Pad, Roll as Slices.
    torch.manual_seed(0)
    model = torchvision.models.SwinTransformer(patch_size=[4, 4], embed_dim=16, depths=[2, 2], num_heads=[2, 4],
                                               window_size=[4, 4], num_classes=5)
    image = np.random.default_rng(7).standard_normal((2, 3, 32, 32)).astype(np.float32)
    check(tmp_path, "swin", model, torch.zeros(1, 3, 32, 32), ["image"], {"image": image}, train=True)


def test_speech_conv1d_matches_pytorch(tmp_path):
    torch.manual_seed(0)
    features = np.random.default_rng(8).standard_normal((2, 80, 20)).astype(np.float32)
    check(tmp_path, "speech", export_models.SpeechConv1d(), torch.zeros(1, 80, 20), ["features"],
          {"features": features}, train=True)


def test_unet_decoder_matches_pytorch(tmp_path):
    # ConvTranspose up the decoder; the output is an image, so inference only (the check's step is a classifier's).
    torch.manual_seed(0)
    image = np.random.default_rng(9).standard_normal((2, 3, 16, 16)).astype(np.float32)
    check(tmp_path, "unet", export_models.UnetDecoder(), torch.zeros(1, 3, 16, 16), ["image"], {"image": image})


def test_mobilenet_v2_matches_pytorch(tmp_path):
    # Clip as ReLU6, depthwise convolutions; batch norm folded by the eval-mode exporter, so inference only.
    torch.manual_seed(0)
    model = torchvision.models.mobilenet_v2(width_mult=0.25, num_classes=5)
    image = np.random.default_rng(10).standard_normal((2, 3, 32, 32)).astype(np.float32)
    check(tmp_path, "mobilenet_v2", model, torch.zeros(1, 3, 32, 32), ["image"], {"image": image})


class SelectAndScan(torch.nn.Module):
    """The selection, scan and scatter ops as torch writes them: cumsum (CumSum), topk (TopK),
    gather (GatherElements), prod (ReduceProd), fmod (Mod), argmax (ArgMax), scatter
    (ScatterElements) and index_put (ScatterND), each on a path to the loss."""

    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Linear(8, 8)
        self.rows = torch.nn.Parameter(torch.randn(2, 8))
        self.head = torch.nn.Linear(3 + 2 + 1 + 8 + 8 + 8, 4)
        self.register_buffer("picks", torch.tensor([[5, 0], [1, 7]]))

    def forward(self, x):
        h = self.embed(x)
        top = torch.topk(torch.cumsum(h, dim=1), 3, dim=1).values
        picked = torch.gather(h, 1, self.picks[: x.shape[0]].expand(x.shape[0], 2))
        product = torch.prod(h[:, :3], dim=1, keepdim=True)
        remainder = torch.fmod(h, 0.75)
        winner = (torch.argmax(h, dim=1, keepdim=True) == torch.arange(8)).float() * h
        placed = torch.zeros_like(h).scatter(1, self.picks[: x.shape[0]], h[:, :2])
        written = h.clone()
        written[:, 2] = self.rows[0, : x.shape[0]]
        features = torch.cat([top, picked, product, remainder + winner, placed, written], dim=1)
        return self.head(features)


def test_selection_scan_and_scatter_ops_match_pytorch(tmp_path):
    torch.manual_seed(0)
    x = np.random.default_rng(11).standard_normal((2, 8)).astype(np.float32)
    check(tmp_path, "select_scan", SelectAndScan(), torch.zeros(2, 8), ["x"], {"x": x}, train=True)


class EinsumForms(torch.nn.Module):
    """Einsum as models write it: attention scores with batch and head labels, an outer product,
    a bilinear form contracting two labels, a diagonal and a sum."""

    def __init__(self):
        super().__init__()
        self.project = torch.nn.Linear(6, 12)
        self.bilinear = torch.nn.Parameter(torch.randn(3, 4, 5))
        self.head = torch.nn.Linear(2 * 3 * 3 + 5 + 2 + 2 + 2 + 5, 3)

    def forward(self, x):
        n = x.shape[0]
        q, k = self.project(x).reshape(n, 2, 3, 2).unbind(-1)  # [n, 2 heads, 3]
        scores = torch.einsum("bhq,bhk->bhqk", q.unsqueeze(-1).expand(n, 2, 3, 3)[..., 0], k).reshape(n, -1)
        outer = torch.einsum("bi,bj->bij", x[:, :3], x[:, 3:6]).reshape(n, -1)[:, :5]
        form = torch.einsum("bi,ijk,bj->bk", x[:, :3], self.bilinear, x[:, 2:6])
        diagonal = torch.einsum("bii->bi", outer[:, :4].reshape(n, 2, 2)).reshape(n, -1)
        summed = torch.einsum("bhk->bh", k).reshape(n, -1)
        trace = torch.einsum("bhq,bhq->bh", q, k)
        return self.head(torch.cat([scores, outer, trace, summed, diagonal, form], dim=1))


def test_einsum_forms_match_pytorch(tmp_path):
    torch.manual_seed(0)
    x = np.random.default_rng(12).standard_normal((2, 6)).astype(np.float32)
    check(tmp_path, "einsum", EinsumForms(), torch.zeros(2, 6), ["x"], {"x": x}, train=True)


class Volumetric(torch.nn.Module):
    """3-D convolutions (strides, pads, dilation, groups) and transposed ones (output_padding),
    as a video or medical-volume model has them."""

    def __init__(self):
        super().__init__()
        self.down = torch.nn.Conv3d(2, 4, 3, stride=(1, 2, 2), padding=1)
        self.grouped = torch.nn.Conv3d(4, 4, (3, 1, 1), stride=2, dilation=(2, 1, 1), padding=(2, 0, 0), groups=2)
        self.up = torch.nn.ConvTranspose3d(4, 3, 3, stride=2, padding=1, output_padding=1)
        self.deeper = torch.nn.ConvTranspose3d(3, 2, (2, 3, 3), stride=(2, 1, 1), padding=(0, 1, 1))
        self.head = torch.nn.Linear(2, 3)

    def forward(self, volume):
        y = torch.relu(self.grouped(torch.relu(self.down(volume))))
        return self.head(self.deeper(torch.relu(self.up(y))).mean(dim=(2, 3, 4)))


def test_3d_convolutions_match_pytorch(tmp_path):
    torch.manual_seed(0)
    volume = np.random.default_rng(13).standard_normal((2, 2, 6, 8, 8)).astype(np.float32)
    check(tmp_path, "volumetric", Volumetric(), torch.zeros(1, 2, 6, 8, 8), ["volume"], {"volume": volume},
          train=True)


def small_convnext():
    from torchvision.models.convnext import CNBlockConfig
    return torchvision.models.ConvNeXt([CNBlockConfig(16, 32, 1), CNBlockConfig(32, None, 1)], num_classes=5)


def small_resnext():
    from torchvision.models.resnet import Bottleneck, ResNet
    return ResNet(Bottleneck, [1, 1, 1, 1], groups=4, width_per_group=4, num_classes=5)


# The exporter zoo's vision models, shrunk: each with its own blocks (inverted residuals with
# squeeze-excitation and hard-swish, dense blocks, grouped bottlenecks, RegNet's Y blocks,
# ConvNeXt's depthwise blocks with LayerNorm), forward. Those with BatchNormalization are
# checked forward only (the eval-mode export folds it; a training import would use the
# batch's statistics); ConvNeXt, with LayerNorm, also through a training step.
@pytest.mark.parametrize("name, build, train", [
    ("mobilenet_v3_large", lambda: torchvision.models.mobilenet_v3_large(width_mult=0.25, num_classes=5), False),
    ("efficientnet_b0", lambda: torchvision.models.efficientnet_b0(num_classes=5), False),
    ("densenet", lambda: torchvision.models.DenseNet(8, (2, 2), 16, num_classes=5), False),
    ("resnext", small_resnext, False),
    ("regnet", lambda: torchvision.models.regnet_y_400mf(num_classes=5), False),
    ("convnext", small_convnext, True),
])
def test_shrunk_vision_models_match_pytorch(tmp_path, name, build, train):
    torch.manual_seed(0)
    image = np.random.default_rng(14).standard_normal((2, 3, 32, 32)).astype(np.float32)
    check(tmp_path, name, build(), torch.zeros(1, 3, 32, 32), ["image"], {"image": image}, train=train)


class BicubicUpsampler(torch.nn.Module):
    """Super-resolution style: a convolution, bicubic upsampling by 2 (Resize cubic, a = -0.75),
    a convolution, pooled and classified."""

    def __init__(self):
        super().__init__()
        self.features = torch.nn.Conv2d(3, 4, 3, padding=1)
        self.refine = torch.nn.Conv2d(4, 4, 3, padding=1)
        self.head = torch.nn.Linear(4, 3)

    def forward(self, image):
        up = torch.nn.functional.interpolate(self.features(image), scale_factor=2, mode="bicubic", align_corners=False)
        return self.head(self.refine(up).mean(dim=(2, 3)))


def test_bicubic_upsampling_matches_pytorch(tmp_path):
    torch.manual_seed(0)
    image = np.random.default_rng(15).standard_normal((2, 3, 6, 6)).astype(np.float32)
    check(tmp_path, "bicubic", BicubicUpsampler(), torch.zeros(1, 3, 6, 6), ["image"], {"image": image}, train=True)
