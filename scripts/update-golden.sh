#!/usr/bin/env bash
# Regenerates tests/golden/*.txt, the `tpusim run` summaries that the CLI
# tests compare against, and tests/golden/passes/*.txt, the IR after a pass
# that the pass's test compares against. Run after an intended change to a
# timing model or a pass, and say in the commit why the figures moved.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${TPUSIM_BUILD_DIR:-$root/build}"
bin="$build/tpusim"
out="$(mktemp -d)"
cd "$root"
"$bin" run traces/mlp.onnx --hw tpuv4 --out "$out" | grep -v '^report ' > tests/golden/mlp_tpuv4_training.txt
"$bin" run traces/mlp.onnx --hw tpuv5e --mode inference --batch 128 --out "$out" | grep -v '^report ' \
  > tests/golden/mlp_tpuv5e_inference_b128.txt
# ResNet-50's training step at batch 128, the one-chip speed case of docs/performance.md: the
# summary, and digests of report.json and the CSVs (tests/e2e/test_cli.py), so that a change
# meant only to make the simulator faster is seen to leave every figure as it was.
"$bin" run traces/resnet50.onnx --batch 128 --no-instructions --no-progress --out "$out/resnet50" | grep -v '^report ' \
  > tests/golden/resnet50_tpuv4_training_b128.txt
(cd "$out/resnet50" && sha256sum report.json per_op.csv layers.csv units.csv) \
  > tests/golden/resnet50_tpuv4_training_b128.sha256
# The IR after each compiler pass, on the MLP at batch 4 (tests/e2e/test_passes.py).
mkdir -p tests/golden/passes
for pass in constant_fold dead_code fuse_elementwise placement mxu_padding memory_plan; do
  "$bin" compile traces/mlp.onnx --batch 4 -o "$out/mlp.tpuprog" --print-ir-after "$pass" 2> "tests/golden/passes/mlp_$pass.txt" \
    > /dev/null
done
# data_parallel changes the graph only over a slice of several chips.
"$bin" compile traces/mlp.onnx --batch 4 --topology 2x2x2 -o "$out/mlp.tpuprog" --print-ir-after data_parallel \
  2> tests/golden/passes/mlp_data_parallel.txt > /dev/null
# tensor_parallel splits the matmul pair over 2 of the slice's 8 chips.
"$bin" compile traces/mlp.onnx --batch 4 --topology 2x2x2 --tp 2 -o "$out/mlp.tpuprog" --print-ir-after tensor_parallel \
  2> tests/golden/passes/mlp_tensor_parallel.txt > /dev/null
# The IR after constant_fold on a trained MLP with exported-style transposes.
TPUSIM_UPDATE_GOLDEN=1 "$build/tests/lowering_test" --gtest_filter='ConstantFold.GoldenIrOfATrainedMlp' >/dev/null
# The run options' tables of docs/run-options.md, from api/run_options.cpp.
TPUSIM_UPDATE_GOLDEN=1 "$build/tests/api_test" --gtest_filter='RunOptions.TheDocsTableIsTheTable:OptionRules.TheDocsListTheRules' \
  >/dev/null
# The run options' keyword arguments in the Python module's type stub.
PYTHONPATH="$build/bindings" /usr/bin/python3 scripts/run_options_stub.py bindings/python/tpusim/_core.pyi
# The input-bound table of docs/host.md.
TPUSIM_UPDATE_GOLDEN=1 "$build/tests/host_test" --gtest_filter='HostInputBound.TableMatchesGolden' >/dev/null
rm -rf "$out"
git diff --stat -- tests/golden
