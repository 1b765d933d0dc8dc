#!/usr/bin/env bash
# Device checks for gpu/ (issue 7): one command for a machine with an NVIDIA GPU and its own torch
# and triton (nothing is installed; see gpu/README.md).
#
#   gpu/run_device_checks.sh [--dry-run] [OUT_DIR]   (OUT_DIR default: $OUT, else
#                                                     /tmp/lowprec-device-checks)
#
# Steps, in order of value, each under its own time cap and all under one budget
# (LOWPREC_DEVICE_BUDGET_S, default 480 s; a step gets min(its cap, what is left); a step with
# under 10 s left is skipped; LOWPREC_DEVICE_STEP_CAP_S lowers every cap, for tests):
#   1. cross-check reports OUT_DIR/triton.json, OUT_DIR/torch-cuda.json (copy them to gpu/reports/;
#      tests/test_reports.py then replays them on CPU)                     caps 150 s, 60 s
#   2. tests marked `gpu` (compiled Triton casts, decode, MXFP8, FP8 GEMM within the stated bound,
#      torch-cuda casts) -> OUT_DIR/gpu_tests.txt                          cap 180 s
#   3. tensor-core GEMM checks (issue 29): FP8 GEMMs through torch._scaled_mm (use_fast_accum true
#      and false) and a Triton tl.dot kernel (max_num_imprecise_acc None, 32, 64, 128) on
#      instruction-sized and long-K vectors, compared bit for bit with lowprec.simulations.gemm
#      -> OUT_DIR/gemm_checks.json (copy it to gpu/reports/gemm-<device>.json)  cap 150 s
#   4. benchmarks: scaled cast vs device copy, FP8 GEMM vs torch._scaled_mm at 8192^3
#      -> OUT_DIR/gpu_bench.json (written after every figure, so a cut-off run keeps what it has)
#                                                                          cap 120 s
# then prints OUT_DIR/summary.txt (one line per step: ok / FAILED / TIMED OUT / skipped, seconds).
# --dry-run runs the same Python entry points on CPU (Triton interpreter and torch CPU instead of
# compiled Triton and torch-cuda, few vectors; gpu tests skip, benchmark reports 'skipped'): it is
# how tests/test_gpu_kernels.py checks this script without a GPU.
# Needs numpy, torch and triton; pytest for step 2 only; numba and ml_dtypes for step 3 (the
# tensor-core model). If numpy, pytest, numba or ml_dtypes is missing and
# LOWPREC_WHEELS names a folder of wheels carried along, they are unpacked into a temporary
# folder on PYTHONPATH (pip --no-index; nothing is downloaded).
# Exit status: 0 all ran and passed, 1 a step failed or timed out, 3 no usable CUDA/torch/triton.
set -uo pipefail
cd "$(dirname "$0")/.."

DRY_RUN=0
if [ "${1:-}" = "--dry-run" ]; then DRY_RUN=1; shift; fi
OUT_DIR="${1:-${OUT:-/tmp/lowprec-device-checks}}"
mkdir -p "$OUT_DIR"
OUT_DIR="$(cd "$OUT_DIR" && pwd)"
PY="${PYTHON:-python3}"
BUDGET="${LOWPREC_DEVICE_BUDGET_S:-480}"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
SUMMARY="$OUT_DIR/summary.txt"
: > "$SUMMARY"
status=0
deadline=$((SECONDS + BUDGET))

say() { echo "$*" | tee -a "$SUMMARY"; }

# step NAME CAP_S LOG COMMAND...: run COMMAND under min(CAP_S, time left), output to LOG and the
# terminal, one summary line.
step() {
    local name="$1" cap="$2" log="$3"
    shift 3
    local left=$((deadline - SECONDS))
    if [ "$left" -lt 10 ]; then
        say "$name: skipped (budget of ${BUDGET} s spent)"
        status=1
        return
    fi
    [ "$cap" -gt "$left" ] && cap=$left
    [ -n "${LOWPREC_DEVICE_STEP_CAP_S:-}" ] && [ "$cap" -gt "$LOWPREC_DEVICE_STEP_CAP_S" ] \
        && cap=$LOWPREC_DEVICE_STEP_CAP_S
    echo "== $name (cap ${cap} s)"
    local t0=$SECONDS
    timeout -k 5 "$cap" "$@" 2>&1 | tee "$log"
    local rc=${PIPESTATUS[0]}
    local took=$((SECONDS - t0))
    case $rc in
        0) say "$name: ok (${took} s)" ;;
        124|137) say "$name: TIMED OUT after ${took} s (cap ${cap} s; see $(basename "$log"))"; status=1 ;;
        *) say "$name: FAILED, exit $rc (${took} s; see $(basename "$log"))"; status=1 ;;
    esac
}

# carried wheels for what the device's Python lacks (never downloads)
if [ -n "${LOWPREC_WHEELS:-}" ]; then
    missing=$("$PY" -c "
import importlib.util as u
print(' '.join(m for m in ('numpy', 'pytest', 'numba', 'ml_dtypes') if u.find_spec(m) is None))")
    if [ -n "$missing" ]; then
        site="$(mktemp -d /tmp/lowprec-site.XXXX)"
        "$PY" -m pip install --quiet --no-index --find-links "$LOWPREC_WHEELS" --target "$site" \
            $missing && export PYTHONPATH="$PYTHONPATH:$site" \
            && say "wheels: installed $missing from $LOWPREC_WHEELS into $site"
    fi
fi

export LOWPREC_DRY_RUN=$DRY_RUN
"$PY" - <<'PYEOF' 2>&1 | tee "$OUT_DIR/environment.txt"
import importlib.util, os, sys
missing = [m for m in ("numpy", "torch", "triton") if importlib.util.find_spec(m) is None]
if missing:
    print(f"missing Python packages: {', '.join(missing)} (python {sys.executable})")
    sys.exit(3)
import torch, triton
print("python", sys.version.split()[0], "torch", torch.__version__, "triton", triton.__version__)
if torch.cuda.is_available():
    print("device", torch.cuda.get_device_name(0), "CUDA", torch.version.cuda,
          "capability", torch.cuda.get_device_capability(0))
elif os.environ.get("LOWPREC_DRY_RUN") != "1":
    print("torch.cuda.is_available() is False")
    sys.exit(3)
else:
    print("dry run on CPU: Triton interpreter and torch CPU stand in for the GPU backends")
PYEOF
if [ "${PIPESTATUS[0]}" -ne 0 ]; then
    say "run_device_checks: CUDA/torch/triton not usable here (see environment.txt); nothing run"
    exit 3
fi
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total \
    --format=csv >> "$OUT_DIR/environment.txt" 2>&1

if [ "$DRY_RUN" = 1 ]; then
    # the interpreter is slow: one format, few random vectors
    REPORTS=("triton-interpret 150 --formats E4M3FN --n-random 200" "torch 60 --n-random 200")
    BENCH=(--quick)
    GEMM=(--dry-run --quick)
else
    REPORTS=("triton 150" "torch-cuda 60")
    BENCH=()
    GEMM=()
fi

for spec in "${REPORTS[@]}"; do
    read -r backend cap extra <<< "$spec"
    # shellcheck disable=SC2086  # $extra is a list of options
    step "report $backend" "$cap" "$OUT_DIR/report_$backend.log" \
        "$PY" -m lowprec.app.cli crosscheck --quiet --backend "$backend" --json "$OUT_DIR/$backend.json" $extra
done

if "$PY" -c "import pytest" 2>/dev/null; then
    step "gpu tests" 180 "$OUT_DIR/gpu_tests.txt" \
        "$PY" -m pytest tests/test_gpu_kernels.py -m gpu -q -s -rs -p no:cacheprovider
else
    say "gpu tests: skipped (pytest is not installed here; set LOWPREC_WHEELS to carry it)"
    status=1
fi

step "gemm checks" 150 "$OUT_DIR/gemm_checks.log" \
    "$PY" -m lowprec.gpu.gemm_checks ${GEMM[@]+"${GEMM[@]}"} --budget-s 120 --json "$OUT_DIR/gemm_checks.json"

step "benchmarks" 120 "$OUT_DIR/bench.log" \
    "$PY" -m lowprec.benchmarks.gpu ${BENCH[@]+"${BENCH[@]}"} --budget-s 90 --json "$OUT_DIR/gpu_bench.json"

echo "== summary ($OUT_DIR)"
cat "$SUMMARY"
[ -f "$OUT_DIR/gpu_bench.json" ] && "$PY" - "$OUT_DIR/gpu_bench.json" <<'PYEOF'
import json, sys
res = json.load(open(sys.argv[1]))
keys = [k for k in res if k.endswith(("_vs_copy", "_GBps", "_TFLOPs", "_vs_scaled_mm",
                                      "_vs_scaled_mm_fast_accum")) or k in ("device", "skipped")]
for k in keys:
    print(f"  {k}: {res[k]}")
PYEOF
echo "run_device_checks: exit $status" | tee -a "$SUMMARY"
exit $status
