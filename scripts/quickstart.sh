#!/usr/bin/env bash
# The main job on a bundled sample: record the ResNet-style CNN in samples/, then inspect,
# optimize, draw and export it, and check the exports against torch.
# Everything lands in out/.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export PATH="$PWD/build:$PATH"
PY=.venv/bin/python
mkdir -p out
set -x
ivytrace record -o out/cnn.ivt -- $PY samples/run_model.py cnn --save-io out/cnn_io.pt
ivytrace inspect out/cnn.ivt
ivytrace optimize out/cnn.ivt -o out/cnn.ivg --report
ivytrace viz out/cnn.ivg -o out/cnn.svg
ivytrace export out/cnn.ivg --to onnx -o out/cnn.onnx
ivytrace export out/cnn.ivg --to plan -o out/cnn.plan
ivytrace optimize out/cnn.ivt -o out/cnn_exact.ivg --disable fold-conv-bn
ivytrace export out/cnn_exact.ivg --to plan -o out/cnn_exact.plan
$PY scripts/check_exports.py out/cnn_io.pt out/cnn.onnx out/cnn.plan out/cnn_exact.plan
