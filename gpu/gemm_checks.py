"""Tensor-core GEMM checks: real FP8 GEMMs compared bit for bit with the instruction model
(`lowprec.simulations.gemm`), for `gpu/run_device_checks.sh`.

Backends (each D read back as FP32 bits):

- `torch._scaled_mm` (cuBLASLt) with unit scales and FP32 output, `use_fast_accum=True` (the whole K in
  the tensor core: cuBLASLt's `CUBLASLT_MATMUL_DESC_FAST_ACCUM`) and `False` (partial sums promoted;
  cuBLAS does not publish the interval — the check reports which interval, if any, the device's bits
  match);
- a Triton kernel (this module's `_dot_kernel`): `acc = tl.dot(a, b, acc, max_num_imprecise_acc=n)`
  over K tiles of `BLOCK_K`, FP32 accumulator; n = None (Triton's default: 2^30 on sm_90, i.e. never
  promoted) and n = 32, 64, 128 (promoted into the FP32 accumulator every n elements).

Vectors, from `lowprec.formats` codes (every value exact in its FP8 format): instruction-sized
(K = 32, one instruction: random, cancellation, one product far above the rest, subnormal operands,
carries, NaN), and long K (4096 and 16384; normal and all-positive inputs), E4M3×E4M3 and E5M2×E4M3.
Each backend's D is compared with the model's D for the device's architecture and its dense
instruction for the two formats (`gemm.dense_instruction`), without promotion and promoted every 32,
64, … up to K: a check lists the candidates that match bit for bit and how many outputs differ from
each, with the error of the device's D against the exact reference.

On a GPU the expectations are: every instruction-sized check matches the model (one instruction
leaves nothing to choose); long K with fast accumulation and Triton's default matches "no
promotion"; Triton with n matches "every n". `ok` is true when they hold. `--dry-run` runs the same
code on CPU — torch's CPU `_scaled_mm` and the Triton interpreter (TRITON_INTERPRET=1, fp8 rounding
known to be wrong) stand in for the device: plumbing only, `oracle` false, never an oracle.

`python -m lowprec.gpu.gemm_checks [--dry-run] [--quick] --json OUT.json`; the device script copies
nothing into the repository: copy OUT.json to `gpu/reports/gemm-<device>.json` after a real run.
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from lowprec import formats, strictjson
from lowprec.simulations import gemm

__all__ = ["ARCH_OF_CAPABILITY", "CASES", "Case", "check_case", "compare", "main", "model_candidates", "run"]

#: compute capability → the model's architecture (FP8 tensor cores only)
ARCH_OF_CAPABILITY = {(8, 9): "ada", (9, 0): "hopper", (10, 0): "blackwell", (10, 3): "blackwell",
                      (12, 0): "rtx_blackwell"}
TRITON_SETTINGS: tuple[int | None, ...] = (None, 32, 64, 128)
TRITON_BLOCK_K = 128
SATURATE = formats.CastPolicy(overflow=formats.Overflow.SATURATE)


class NotApplicable(Exception):
    """A backend setting that does not apply to a case (Triton's n over the tile's K)."""


@dataclass(frozen=True)
class Case:
    """One pair of FP8 operand matrices (drawn from `seed`)."""

    name: str
    m: int
    n: int
    k: int
    a_fmt: str
    b_fmt: str
    kind: str  # normal, positive, cancellation, below_window, subnormal, carries, nan
    seed: int = 0

    def operands(self) -> tuple[np.ndarray, np.ndarray]:
        rng = np.random.default_rng(self.seed)
        fa = gemm.PTX_TYPES[gemm.accumulators.ptx_type(self.a_fmt)]
        fb = gemm.PTX_TYPES[gemm.accumulators.ptx_type(self.b_fmt)]
        a = rng.standard_normal((self.m, self.k))
        b = rng.standard_normal((self.k, self.n))
        if self.kind == "positive":
            a, b = np.abs(a), np.abs(b)
        elif self.kind == "cancellation":  # the second half of K undoes the first
            h = self.k // 2
            a[:, h:] = a[:, :h]
            b[h:] = -b[:h]
        elif self.kind == "below_window":  # one product far above the rest
            a *= 2.0 ** -8
            b *= 2.0 ** -4
            a[:, 0] = 7.0
            b[0] = 6.0
        elif self.kind == "subnormal":  # |x| ≤ 0.9 × the smallest normal: subnormal after rounding
            a = np.clip(a, -1.8, 1.8) * (fa.smallest_normal / 2)
            b = np.clip(b, -1.8, 1.8) * (fb.smallest_normal / 2)
        elif self.kind == "carries":  # every product just below a power of two
            a[:] = 1.875 if fa.mantissa_bits >= 3 else 1.75
            b[:] = 1.75
        elif self.kind == "nan":
            a[0, 0] = np.nan
        av = np.asarray(formats.quantize(a, fa, SATURATE), np.float64)
        bv = np.asarray(formats.quantize(b, fb, SATURATE), np.float64)
        return av, bv


def _cases(quick: bool) -> list[Case]:
    small = [Case(f"k32-{kind}-{a}x{b}", 64, 16, 32, a, b, kind, s)
             for s, (kind, a, b) in enumerate([("normal", "E4M3FN", "E4M3FN"), ("normal", "E5M2", "E4M3FN"),
                                               ("cancellation", "E4M3FN", "E4M3FN"),
                                               ("below_window", "E4M3FN", "E4M3FN"),
                                               ("subnormal", "E4M3FN", "E5M2"), ("carries", "E4M3FN", "E4M3FN"),
                                               ("nan", "E4M3FN", "E4M3FN")])]
    if quick:
        return small[:2] + [Case("k256-positive", 64, 16, 256, "E4M3FN", "E4M3FN", "positive", 11)]
    return small + [Case("k4096-normal", 128, 128, 4096, "E4M3FN", "E4M3FN", "normal", 21),
                    Case("k4096-positive", 128, 128, 4096, "E4M3FN", "E4M3FN", "positive", 22),
                    Case("k4096-positive-e5m2", 128, 128, 4096, "E5M2", "E4M3FN", "positive", 23),
                    Case("k16384-positive", 128, 128, 16384, "E4M3FN", "E4M3FN", "positive", 24)]


#: the default set (the device run); `_cases(quick=True)` is the dry run's
CASES = _cases(False)


# ------------------------------------------------------------------------------------------------
# the model and the comparison
# ------------------------------------------------------------------------------------------------

def model_candidates(arch: str, case: Case, a: np.ndarray, b: np.ndarray) -> dict[str, np.ndarray]:
    """The model's D (uint32 bits) without promotion ("none") and promoted every 32, 64, … < K."""
    name = gemm.dense_instruction(arch, case.a_fmt, case.b_fmt)
    out: dict[str, np.ndarray] = {}
    promote: int | None = None
    interval = 32
    while True:
        r = gemm.matmul(a, b, arch=arch, instruction=name, promote_every=promote, reference=False, budget=None)
        out["none" if promote is None else str(promote)] = r.d.view(np.uint32).copy()
        if interval >= case.k:
            break
        promote, interval = interval, interval * 2
    return out


def compare(device_bits: np.ndarray, candidates: dict[str, np.ndarray]) -> dict[str, Any]:
    """Which candidates the device's D matches bit for bit, and how many outputs differ from each."""
    mism = {key: int(np.count_nonzero(device_bits != bits)) for key, bits in candidates.items()}
    return {"matches": [k for k, v in mism.items() if v == 0], "mismatches": mism, "outputs": int(device_bits.size)}


def _error(device_bits: np.ndarray, a: np.ndarray, b: np.ndarray) -> float | None:
    d = device_bits.view(np.float32).astype(np.float64)
    exact = a @ b  # FP8 products are exact in float64 and these sums stay within 53 bits
    ok = np.isfinite(exact) & (exact != 0) & np.isfinite(d)
    if not ok.any():
        return None
    return float(np.max(np.abs(d[ok] - exact[ok]) / np.abs(exact[ok])))


def check_case(case: Case, arch: str, backends: dict[str, Callable[[np.ndarray, np.ndarray, Case], np.ndarray]],
               expect: Callable[[str, Case], str | None], oracle: bool = True) -> list[dict[str, Any]]:
    """Every backend on one case, against the model's candidates; `expect(setting, case)` names the
    candidate the setting should match (None: none expected, the match is reported). A backend that
    is no oracle (the dry run) gets `ok` None: its match is recorded, never judged."""
    a, b = case.operands()
    cands = model_candidates(arch, case, a, b)
    out: list[dict[str, Any]] = []
    for setting, fn in backends.items():
        t0 = time.perf_counter()
        try:
            bits = fn(a, b, case)
        except NotApplicable as exc:
            out.append({"case": case.name, "setting": setting, "not_applicable": str(exc)})
            continue
        except Exception as exc:  # a backend that cannot run this case says why
            out.append({"case": case.name, "setting": setting, "error": f"{type(exc).__name__}: {exc}"[:300]})
            continue
        res = compare(bits, cands)
        want = expect(setting, case)
        out.append({"case": case.name, "setting": setting, "m": case.m, "n": case.n, "k": case.k,
                    "a_fmt": case.a_fmt, "b_fmt": case.b_fmt, "kind": case.kind, "seed": case.seed,
                    "instruction": gemm.dense_instruction(arch, case.a_fmt, case.b_fmt), "arch": arch,
                    "expected": want, "ok": (want is None or want in res["matches"]) if oracle else None,
                    "max_rel_error": _error(bits, a, b), "seconds": round(time.perf_counter() - t0, 3), **res})
    return out


def expected_match(setting: str, case: Case) -> str | None:
    """What a GPU should match: one instruction (K = 32) leaves one answer; fast accumulation and
    Triton's default keep the whole K; Triton's n promotes every n; cuBLAS's split interval is measured."""
    if case.k <= 32:
        return "none"
    if setting in ("scaled_mm fast_accum=True", "triton max_num_imprecise_acc=None"):
        return "none"
    if setting.startswith("triton max_num_imprecise_acc="):
        n = int(setting.rsplit("=", 1)[1])
        return "none" if n >= case.k else str(n)
    return None


# ------------------------------------------------------------------------------------------------
# backends
# ------------------------------------------------------------------------------------------------

def _codes(x: np.ndarray, fmt: str) -> np.ndarray:
    return np.ascontiguousarray(formats.encode(x, formats.get_format(fmt)))


def _torch_fp8(fmt: str) -> Any:
    import torch

    return {"E4M3FN": torch.float8_e4m3fn, "E5M2": torch.float8_e5m2}[fmt]


def scaled_mm_backend(device: str, fast: bool) -> Callable[[np.ndarray, np.ndarray, Case], np.ndarray]:
    """torch._scaled_mm with unit scales and FP32 output (B passed column-major, as cuBLASLt wants)."""
    import torch

    def run(a: np.ndarray, b: np.ndarray, case: Case) -> np.ndarray:
        ta = torch.from_numpy(_codes(a, case.a_fmt)).view(_torch_fp8(case.a_fmt)).to(device)
        tb = torch.from_numpy(_codes(b.T, case.b_fmt)).view(_torch_fp8(case.b_fmt)).to(device).t()
        one = torch.ones((), dtype=torch.float32, device=device)
        d = torch._scaled_mm(ta, tb, scale_a=one, scale_b=one, out_dtype=torch.float32, use_fast_accum=fast)
        return d.cpu().numpy().view(np.uint32).copy()

    return run


def _dot_kernel_factory() -> Any:
    import triton
    import triton.language as tl

    @triton.jit
    def _dot_kernel(a_ptr, b_ptr, c_ptr, M, N, K, sam, sak, sbk, sbn, scm, scn,  # type: ignore[no-untyped-def]
                    A_DTYPE: tl.constexpr, B_DTYPE: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                    BLOCK_K: tl.constexpr, MNIA: tl.constexpr):
        pid_m = tl.program_id(0)
        pid_n = tl.program_id(1)
        rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
        rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
        rk = tl.arange(0, BLOCK_K)
        a_ptrs = a_ptr + (rm[:, None] % M) * sam + rk[None, :] * sak
        b_ptrs = b_ptr + rk[:, None] * sbk + (rn[None, :] % N) * sbn
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for _ in range(0, K, BLOCK_K):
            a = tl.load(a_ptrs).to(A_DTYPE, bitcast=True)
            b = tl.load(b_ptrs).to(B_DTYPE, bitcast=True)
            if MNIA == 0:
                acc = tl.dot(a, b, acc, out_dtype=tl.float32)
            else:
                acc = tl.dot(a, b, acc, max_num_imprecise_acc=MNIA, out_dtype=tl.float32)
            a_ptrs += BLOCK_K * sak
            b_ptrs += BLOCK_K * sbk
        tl.store(c_ptr + rm[:, None] * scm + rn[None, :] * scn, acc, mask=(rm[:, None] < M) & (rn[None, :] < N))

    return _dot_kernel


def triton_backend(device: str, mnia: int | None) -> Callable[[np.ndarray, np.ndarray, Case], np.ndarray]:
    """The Triton `tl.dot` kernel with `max_num_imprecise_acc=mnia` (None: Triton's default)."""
    import torch
    import triton
    import triton.language as tl

    kernel = _dot_kernel_factory()
    tl_fp8 = {"E4M3FN": tl.float8e4nv, "E5M2": tl.float8e5}

    def run(a: np.ndarray, b: np.ndarray, case: Case) -> np.ndarray:
        block_k = min(TRITON_BLOCK_K, case.k)
        if mnia is not None and mnia > block_k:
            raise NotApplicable(f"max_num_imprecise_acc={mnia} is over the tile's K = {block_k}")
        ta = torch.from_numpy(_codes(a, case.a_fmt)).to(device)
        tb = torch.from_numpy(_codes(b, case.b_fmt)).to(device)
        c = torch.empty((case.m, case.n), dtype=torch.float32, device=device)
        bm, bn = (64, 16) if device == "cpu" else (64, 64)
        grid = (triton.cdiv(case.m, bm), triton.cdiv(case.n, bn))
        kernel[grid](ta, tb, c, case.m, case.n, case.k, ta.stride(0), ta.stride(1), tb.stride(0), tb.stride(1),
                     c.stride(0), c.stride(1), A_DTYPE=tl_fp8[case.a_fmt], B_DTYPE=tl_fp8[case.b_fmt],
                     BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=block_k, MNIA=0 if mnia is None else mnia)
        return c.cpu().numpy().view(np.uint32).copy()

    return run


# ------------------------------------------------------------------------------------------------
# the run
# ------------------------------------------------------------------------------------------------

def run(dry_run: bool = False, quick: bool = False, budget_s: float = 300.0) -> dict[str, Any]:
    """Every case through every backend the machine has; see the module docstring."""
    import torch

    versions: dict[str, Any] = {"torch": torch.__version__}
    if dry_run:
        device, arch = "cpu", "hopper"
        name = "cpu (dry run: torch CPU _scaled_mm and the Triton interpreter; not an oracle)"
    else:
        if not torch.cuda.is_available():
            return {"skipped": "torch.cuda.is_available() is False: nothing to check", "ok": False}
        device = "cuda"
        cap = tuple(torch.cuda.get_device_capability(0))
        arch_or_none = ARCH_OF_CAPABILITY.get((cap[0], cap[1]))
        if arch_or_none is None:
            return {"skipped": f"compute capability {cap} has no FP8 tensor-core model", "ok": False}
        arch = arch_or_none
        name = torch.cuda.get_device_name(0)
        versions["cuda"] = torch.version.cuda
        versions["capability"] = list(cap)
    backends: dict[str, Callable[[np.ndarray, np.ndarray, Case], np.ndarray]] = {
        "scaled_mm fast_accum=True": scaled_mm_backend(device, True),
        "scaled_mm fast_accum=False": scaled_mm_backend(device, False),
    }
    try:
        import triton

        versions["triton"] = triton.__version__
        for n in TRITON_SETTINGS:
            backends[f"triton max_num_imprecise_acc={n}"] = triton_backend(device, n)
    except ImportError as exc:
        versions["triton"] = f"not importable: {exc}"
    start = time.perf_counter()
    checks: list[dict[str, Any]] = []
    skipped: list[str] = []
    for case in _cases(quick or dry_run):
        if time.perf_counter() - start > budget_s:
            skipped.append(case.name)
            continue
        checks.extend(check_case(case, arch, backends, expected_match, oracle=not dry_run))
    oracle = not dry_run
    return {"kind": "gemm", "device": name, "arch": arch, "oracle": oracle, "versions": versions,
            "model": "lowprec.simulations.gemm", "settings": list(backends), "checks": checks,
            "skipped_cases": skipped, "seconds": round(time.perf_counter() - start, 1),
            "ok": all("error" not in c and c.get("ok") is not False for c in checks)}


def main(argv: list[str] | None = None) -> int:
    from lowprec.commandline import ArgumentParser  # the one bad-option report

    p = ArgumentParser(prog="python -m lowprec.gpu.gemm_checks",
                                description="FP8 GEMMs (torch._scaled_mm, Triton tl.dot) against the tensor-core model")
    p.add_argument("--json", metavar="OUT", required=True, help="write the report here")
    p.add_argument("--dry-run", action="store_true", help="run on CPU (plumbing only; not an oracle)")
    p.add_argument("--quick", action="store_true", help="the instruction-sized cases and one K = 256 case")
    p.add_argument("--budget-s", type=float, default=300.0, help="stop starting new cases after this many seconds")
    args = p.parse_args(argv)
    if args.dry_run:
        os.environ.setdefault("TRITON_INTERPRET", "1")
    report = run(dry_run=args.dry_run, quick=args.quick, budget_s=args.budget_s)
    strictjson.write(report, args.json, indent=1)
    for c in report.get("checks", []):
        if "not_applicable" in c:
            continue
        state = ("ERROR " + c["error"] if "error" in c else "recorded (not an oracle)" if c["ok"] is None
                 else "ok" if c["ok"] else f"MISMATCH (expected {c['expected']})")
        print(f"{c['case']:<24} {c['setting']:<38} matches {c.get('matches')} {state}")
    print(f"gemm checks: {'ok' if report.get('ok') else 'NOT ok'} ({report.get('device', report.get('skipped'))})")
    return 0 if report.get("ok") else 1


if __name__ == "__main__":
    sys.exit(main())
