#!/usr/bin/env bash
# Device checks for gpu/ (issue 7), for a machine with an NVIDIA GPU and its own torch + triton.
#
#   gpu/run_device_checks.sh [OUT_DIR]      (default: $OUT if set, else gpu/reports)
#
# 1. runs the tests marked `gpu` (compiled Triton casts, decode, MXFP8, FP8 GEMM against the model;
#    torch-cuda casts against the torch convention) -> OUT_DIR/gpu_tests.txt
# 2. writes the cross-check reports OUT_DIR/triton.json and OUT_DIR/torch-cuda.json
#    (commit them under gpu/reports/; tests/test_reports.py then replays them on CPU)
# 3. benchmarks the scaled cast against a device copy and the FP8 GEMM against torch._scaled_mm
#    at 8192^3 -> OUT_DIR/gpu_bench.json
# Needs numpy, torch (CUDA) and triton; pytest only for step 1 (skipped with a note if missing);
# not ml_dtypes, panel or bokeh. Exit status: 0 all passed, 1 something failed, 3 no CUDA.
# Takes a few minutes on an H100/H200 (each step is capped by `timeout`).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT_DIR="${1:-${OUT:-gpu/reports}}"
mkdir -p "$OUT_DIR"
PY="${PYTHON:-python3}"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
status=0

"$PY" - <<'PYEOF' || { echo "run_device_checks: CUDA/torch/triton not usable here"; exit 3; }
import torch, triton
assert torch.cuda.is_available(), "torch.cuda.is_available() is False"
print("torch", torch.__version__, "triton", triton.__version__, "device", torch.cuda.get_device_name(0))
PYEOF
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv || true

echo "== 1. gpu tests"
if "$PY" -c "import pytest" 2>/dev/null; then
    timeout 400 "$PY" -m pytest tests/test_gpu_kernels.py -m gpu -q -s -rs -p no:cacheprovider \
        2>&1 | tee "$OUT_DIR/gpu_tests.txt"
    [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
else
    echo "pytest is not installed here: gpu tests not run" | tee "$OUT_DIR/gpu_tests.txt"
fi

echo "== 2. cross-check reports"
for backend in triton torch-cuda; do
    timeout 300 "$PY" -m gpu.crosscheck --backend "$backend" --json "$OUT_DIR/$backend.json" \
        || status=1
done

echo "== 3. benchmarks"
timeout 300 "$PY" -m gpu.bench --json "$OUT_DIR/gpu_bench.json" || status=1

echo "run_device_checks: exit $status"
exit $status
