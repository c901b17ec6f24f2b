"""--precision int8 quantizes every weight matmul of the zoo's transformers, including the
PyTorch exports' Linear layers written as Transpose(weight) then MatMul."""
import re
import subprocess

import pytest

from conftest import ROOT


@pytest.mark.parametrize("model", ["bert_base", "gpt2_small", "vit_b16"])
def test_every_weight_matmul_is_int8(tpusim_bin, tmp_path, model):
    result = subprocess.run([tpusim_bin, "compile", str(ROOT / "traces" / f"{model}.onnx"), "--mode", "inference",
                             "--precision", "int8", "--batch", "1", "-o", str(tmp_path / "m.tpuprog"),
                             "--print-ir-after", "dead_code"], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    ir = result.stderr
    weights = set(re.findall(r"^weight (%\d+) ", ir, re.M))
    # What each op's result is made from: a transpose of a weight still views that weight.
    transposes = dict(re.findall(r"^(%\d+) = Transpose\S*\((%\d+)\)", ir, re.M))
    viewed = weights | {out for out, source in transposes.items() if source in weights}
    matmuls = re.findall(r"^%\d+ = MatMul\S*\((%\d+), (%\d+)\) : (\w+)\[", ir, re.M)
    assert matmuls
    float_weight_products = [m for m in matmuls if m[2] != "int32" and (m[0] in viewed or m[1] in viewed)]
    assert float_weight_products == []
    assert sum(m[2] == "int32" for m in matmuls) >= 48  # at least the 4 projections x 12 layers
