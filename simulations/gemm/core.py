"""`mma` (one tensor-core instruction) and `matmul` (a whole GEMM built from it, as a kernel runs it),
with the exact reference beside it.

What `matmul` does, and where each step comes from:

* **K is chained through the instruction**: D of one instruction is C of the next (PTX `mma`/
  `wgmma`/`tcgen05.mma` compute D = A·B + C; a GEMM main loop feeds the accumulator registers, or
  tensor memory, back as C — CUTLASS's mainloops, DeepGEMM's `WGMMA::wgmma(…, accum, k)`). Without
  promotion, `c` is the first instruction's C.
* **Promotion** (`promote_every=n`): the tensor-core accumulator starts from zero every n elements
  of K (DeepGEMM passes scale-d = 0 to the first wgmma of each 128-wide K block) and its FP32 result
  is added on the CUDA cores into an FP32 accumulator that starts at zero: FADD, or with block
  scales FFMA(s_a · s_b, partial, acc) where s_a · s_b is one FMUL — DeepGEMM
  `sm90_fp8_gemm_1d2d.cuh`, "Promote with scales": `final_accum += (scale_a * scale_b) * accum`,
  which nvcc contracts to one FFMA; the recipe of DeepSeek-V3, arXiv:2412.19437 §3.3.2, N_C = 128).
  `c` is then added at the end (FADD; DeepGEMM's accumulate-into-D).
* **Decode scales** (FP32 values; A's per tensor `()`, per row `(M,)`/`(M, 1)` or per 1×kb block
  `(M, K/kb)`; B's per tensor, per column `(N,)`/`(1, N)`, per kb×1 block `(K/kb, N)` or per
  kb×kb block `(K/kb, ceil(N/kb))`; A may also take kb×kb blocks, `(ceil(M/kb), K/kb)`): blockwise scales (K/kb > 1, DeepGEMM's 1×128 activations and 128×128 weights) are
  applied at promotion, so they force `promote_every = kb`; per-tensor/row/column scales are applied
  in the epilogue as vLLM's CUTLASS `ScaledEpilogue` does (csrc/cutlass_extensions/epilogue/
  scaled_mm_epilogues_c3x.hpp): D = s_a · (s_b · acc), two FMULs, and with `c` (as its
  `ScaledEpilogueBias` adds a bias) the outer one an FFMA with C. With any epilogue or promotion
  step, `c` is not fed to the tensor core.
* **Block-scaled instructions** (`kind::mxf8f6f4`, `mxf4`, `mxf4nvf4`): `scale_a` (M, K/block) and
  `scale_b` (K/block, N) are the hardware's block scales (UE8M0 / UE4M3 values), applied inside the
  instruction (isa: ST-FDPA / GST-FDPA).
* **Output cast** to FP32, BF16 or FP16: round to nearest even, ±Inf on overflow, NaN → 0x7FFF
  (`__float2bfloat16_rn`, `cvt.rn.f16.f32`), through `lowprec.formats`.
* FP32 arithmetic on the CUDA cores is IEEE binary32 (nearest even, gradual underflow; a NaN result
  is the canonical 0x7FFFFFFF).

The **exact reference** is Σ_k (s_a·a_ik)(s_b·b_kj) + c_ij with the decoded operands (every scale
applied to its operand, hardware block scales included), each term exact and summed exactly
(`_kernels.exact_tile`: float64 where the operands' exponent span provably fits 53 bits, else a
Kulisch accumulator), rounded once to float64; `error` is d − exact, also rounded once.

Work is cut into output tiles (`tile` × `tile`); each tile reads only its rows of A and columns of
B, so memory is the operands, the outputs and one tile's working set, never M·N·K. Tiles run in
this process, or are mapped over any `concurrent.futures.Executor` (a process pool, a Dask
client's executor) with the same bits.
"""

from __future__ import annotations

import math
from concurrent.futures import Executor
from dataclasses import dataclass
from typing import Any

import ml_dtypes
import numpy as np

from lowprec import formats
from lowprec.config import CLI_BUDGET, Budget, Cost
from lowprec.formats import BF16, FP16, FP32, CastPolicy, FloatFormat, NanPayload, Overflow, Rounding

from . import _kernels as K
from .isa import Alignment, Instruction, get_instruction
from .operands import as_values, checked_powers, require_representable

__all__ = ["DEFAULT_TILE", "GemmResult", "OUTPUT_CAST", "OUT_FORMATS", "mma", "matmul"]

OUT_FORMATS: dict[str, FloatFormat] = {"FP32": FP32, "BF16": BF16, "FP16": FP16}
#: the output cast of a CUDA epilogue: nearest even, ±Inf on overflow, NaN → all-ones payload
#: (the sign is cleared first), i.e. 0x7FFFFFFF / 0x7FFF as NVIDIA's conversions return it
OUTPUT_CAST = CastPolicy(rounding=Rounding.NEAREST_EVEN, overflow=Overflow.NONFINITE,
                         nan_payload=NanPayload.ALL_ONES, name="cuda_rn")
DEFAULT_TILE = 128
#: conservative throughputs (multiply-adds per second on one loaded core) for the budget estimate
MODEL_RATE = 40e6
EXACT_FIXED_RATE = 150e6
EXACT_KULISCH_RATE = 8e6
_MAX_K = 1 << 28  # the exact reference's accumulator has headroom for 2^29 products per output
_CANONICAL_NAN = {4: 0x7FFFFFFF, 2: 0x7FFF}
_GROUP_CHUNK = 16  # fused steps whose FP4 group sums are formed at once (bounds the scratch memory)


# ------------------------------------------------------------------------------------------------
# results
# ------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class GemmResult:
    """A simulated GEMM: the output, the FP32 accumulator before the cast, and the exact reference."""

    d: np.ndarray  # (M, N) in the output format's dtype: float32, float16 or ml_dtypes.bfloat16
    accumulator: np.ndarray  # (M, N) float32: the epilogue's FP32 value before the output cast
    exact: np.ndarray | None  # (M, N) float64: Σ decoded products + C, rounded once (None: not asked)
    error: np.ndarray | None  # (M, N) float64: d − exact, rounded once
    arch: str
    instruction: str
    promote_every: int | None
    out_format: str

    @property
    def d_values(self) -> np.ndarray:
        """d as float64."""
        return np.asarray(self.d, dtype=np.float64)

    def max_abs_error(self) -> float:
        if self.error is None:
            raise ValueError("this result has no reference (matmul(..., reference=False))")
        e = np.abs(self.error)
        return float(np.nanmax(e)) if e.size and not np.isnan(e).all() else math.nan

    def max_rel_error(self) -> float:
        """max |d − exact| / |exact| over the outputs whose exact value is non-zero and finite."""
        if self.error is None or self.exact is None:
            raise ValueError("this result has no reference (matmul(..., reference=False))")
        ok = np.isfinite(self.exact) & (self.exact != 0)
        if not ok.any():
            return math.nan
        return float(np.nanmax(np.abs(self.error[ok]) / np.abs(self.exact[ok])))

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "arch": self.arch, "instruction": self.instruction, "promote_every": self.promote_every,
            "out_format": self.out_format, "shape": list(self.d.shape),
            "d": self.d_values.tolist(), "accumulator": self.accumulator.astype(np.float64).tolist(),
        }
        if self.exact is not None and self.error is not None:
            out["exact"] = self.exact.tolist()
            out["error"] = self.error.tolist()
            out["max_abs_error"] = self.max_abs_error()
            out["max_rel_error"] = self.max_rel_error()
        return out


# ------------------------------------------------------------------------------------------------
# one tile's work (a top-level function: executors pickle it by name)
# ------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class _Plan:
    arch: str
    instruction: str
    k: int  # K of the GEMM
    promote_every: int | None  # None: the whole K chained through the tensor core
    c_into_core: bool  # c is the first instruction's C
    has_c: bool  # a C was given
    blockwise: bool  # decode scales applied at promotion (FFMA)
    epilogue: bool  # decode scales applied in the epilogue
    out_format: str
    reference: bool
    fixed_point: bool  # the reference's block sums are exact in float64
    ref_block: int  # K elements per scale of the reference (K when unscaled)


@dataclass(frozen=True)
class _Tile:
    plan: _Plan
    av: np.ndarray  # (mt, K) values of A's rows
    ap: np.ndarray  # (mt, K) 2^e
    bv: np.ndarray  # (K, nt) values of B's columns
    bp: np.ndarray
    c: np.ndarray  # (mt, nt) float64 C (zeros when absent)
    sav: np.ndarray  # scales of A's rows: hardware block scales (values), or decode scales
    sap: np.ndarray  # 2^e of the hardware block scales (unused for decode scales)
    sbv: np.ndarray  # scales of B's columns: (blocks, nt)
    sbp: np.ndarray


def _run_tile(t: _Tile) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, np.ndarray | None]:
    """(accumulator, output codes, exact, error) of one output tile."""
    p = t.plan
    ins = get_instruction(p.arch, p.instruction)
    mt, nt = t.c.shape
    if p.promote_every is None:
        acc = t.c.copy() if p.c_into_core else np.zeros((mt, nt))
        _chain(ins, t, acc, 0, p.k, first_c_type=p.c_into_core)
    else:
        acc = np.zeros((mt, nt))
        partial = np.empty((mt, nt))
        for k0 in range(0, p.k, p.promote_every):
            partial[:] = 0.0
            _chain(ins, t, partial, k0, min(p.k, k0 + p.promote_every), first_c_type=False)
            K.promote_tile(acc, partial, t.sav, t.sbv, k0 // p.promote_every, p.blockwise)
    with_c = p.has_c and not p.c_into_core
    if p.epilogue or with_c:
        K.epilogue_tile(acc, t.sav, t.sbv, t.c, with_c, p.epilogue)
    acc[np.isnan(acc)] = np.nan  # one NaN: positive, so the cast gives the canonical code
    fmt = OUT_FORMATS[p.out_format]
    codes = formats.encode(acc, fmt, OUTPUT_CAST)
    exact = error = None
    if p.reference:
        out_values = formats.decode(codes, fmt).astype(np.float64)
        exact = np.empty((mt, nt))
        error = np.empty((mt, nt))
        if ins.block_scaled:
            sa, sb, block = t.sav, t.sbv, ins.block
        elif p.blockwise or p.epilogue:
            sa, sb, block = t.sav, t.sbv, p.ref_block
        else:
            sa, sb, block = np.ones((mt, 1)), np.ones((1, nt)), p.k
        K.exact_tile(t.av, t.bv, sa, sb, block, t.c, out_values, exact, error, p.fixed_point)
    return acc.astype(np.float32), codes, exact, error


def _chain(ins: Instruction, t: _Tile, acc: np.ndarray, k_lo: int, k_hi: int, *, first_c_type: bool) -> None:
    """acc ← the instruction chained over K ∈ [k_lo, k_hi), in place."""
    u = ins.unit
    out = u.output
    c_emin = ins.c_format.emin if first_c_type else ins.d_format.emin
    args = (u.frac_bits, u.zero_exponent, u.alignment is Alignment.NEAREST_EVEN, out.kept_bits, out.emin,
            out.emax, not out.toward_zero, c_emin, ins.d_format.emin)
    step = u.step(ins.k)
    if u.group > 1 and ins.a_type == ins.b_type == "e2m1":
        # FP4 × FP4: a product is a multiple of 1/4 of at most 36 and a group of 16 sums to at most
        # 576 = 2304 quarters < 2^24, so every partial sum of a group is exact even in float32, in
        # any order: matrix products form the group sums (and Σ|a·b|, zero exactly when every
        # product is) — far faster than a loop over the products
        mt, nt = acc.shape
        for c0 in range(k_lo, k_hi, _GROUP_CHUNK * step):
            c1 = min(k_hi, c0 + _GROUP_CHUNK * step)
            ng = (c1 - c0) // u.group
            a3 = t.av[:, c0:c1].astype(np.float32).reshape(mt, ng, u.group).transpose(1, 0, 2)
            b3 = t.bv[c0:c1].astype(np.float32).reshape(ng, u.group, nt)
            gs = np.matmul(a3, b3)
            zs = np.matmul(np.abs(a3), np.abs(b3))
            c_args = args if c0 == k_lo else args[:7] + (ins.d_format.emin,) + args[8:]
            K.chain_group_sums(gs, zs, acc, c0, c1, step, u.group, *c_args, t.sav, t.sap, t.sbv, t.sbp,
                               ins.block)
    elif u.group > 1:  # every GST-FDPA instruction of isa multiplies FP4 by FP4
        raise ValueError(f"{ins.name}: groups of {u.group} are modelled for FP4 × FP4 operands only")
    else:
        K.chain_plain(t.av, t.ap, t.bv, t.bp, acc, k_lo, k_hi, step, *args, t.sav, t.sap, t.sbv, t.sbp,
                      ins.block if ins.block_scaled else 0)


# ------------------------------------------------------------------------------------------------
# checking the inputs
# ------------------------------------------------------------------------------------------------

def _matrix(x: Any, what: str) -> np.ndarray:
    v = as_values(x, what)
    if v.ndim != 2:
        raise ValueError(f"{what} must be a 2-D array, got shape {v.shape}")
    return v


def _context(ins: Instruction, role: str) -> str:
    ptx = {"a": ins.a_type, "b": ins.b_type, "c": ins.c_type, "scale": ins.scale_type}[role]
    return f"the {role} type .{ptx} of {ins.name}"


def _hw_scales(ins: Instruction, scale_a: Any, scale_b: Any, m: int, n: int, k: int
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(sav, sap, sbv, sbp) of a block-scaled instruction: A's (M, K/block), B's (K/block, N)."""
    if scale_a is None or scale_b is None:
        raise ValueError(f"{ins.name} is block-scaled: give scale_a of shape ({m}, {k // ins.block}) and "
                         f"scale_b of shape ({k // ins.block}, {n}) (.{ins.scale_type} values)")
    sa = as_values(scale_a, "scale_a")
    sb = as_values(scale_b, "scale_b")
    nb = k // ins.block
    if sa.shape != (m, nb):
        raise ValueError(f"scale_a must have shape ({m}, {nb}) (one .{ins.scale_type} scale per {ins.block} "
                         f"elements of K), got {sa.shape}")
    if sb.shape != (nb, n):
        raise ValueError(f"scale_b must have shape ({nb}, {n}), got {sb.shape}")
    fmt = ins.scale_format
    assert fmt is not None
    sap, _ = checked_powers(sa, fmt, "scale_a", _context(ins, "scale"))
    sbp, _ = checked_powers(sb, fmt, "scale_b", _context(ins, "scale"))
    return sa, sap, sb, sbp


def _decode_scale(s: Any, what: str, rows: int, k: int, along_rows: bool) -> np.ndarray:
    """A decode scale as (rows, blocks of K): per tensor, per row/column, or blockwise."""
    v = as_values(s, what)
    if not np.all(np.isfinite(v)):
        i = int(np.flatnonzero(~np.isfinite(v.reshape(-1)))[0])
        raise ValueError(f"{what} holds {float(v.reshape(-1)[i])!r}: decode scales must be finite FP32 values")
    require_representable(v, FP32, what, "decode scales are FP32 values")
    if v.size == 1 and v.ndim <= 2:  # per tensor
        return np.full((rows, 1), float(v.reshape(-1)[0]))
    if v.ndim == 1:
        if v.shape[0] != rows:
            raise ValueError(f"{what} of shape {v.shape}: a 1-D decode scale has one value per "
                             f"{'row of A' if along_rows else 'column of B'} ({rows})")
        return v.reshape(rows, 1).copy()
    if v.ndim != 2:
        raise ValueError(f"{what} must be a scalar, 1-D or 2-D, got shape {v.shape}")
    # A: (row blocks, K blocks); B: (K blocks, column blocks)
    groups, kblocks = (v.shape if along_rows else v.shape[::-1])
    if k % kblocks:
        raise ValueError(f"{what} of shape {v.shape}: K = {k} is not a whole number of its {kblocks} K blocks")
    kb = k // kblocks
    # one scale per row/column, or square kb × kb blocks (DeepGEMM's 128 × 128 weights; the last
    # block of rows/columns may be partial)
    width = 1 if groups == rows else kb
    if -(-rows // width) != groups:
        noun = "rows of A" if along_rows else "columns of B"
        raise ValueError(f"{what} of shape {v.shape}: {groups} blocks fit neither one per each of the {rows} "
                         f"{noun} nor {kb}-wide blocks ({-(-rows // kb)} of them)")
    per_group = v if along_rows else v.T  # (groups, kblocks)
    return np.repeat(per_group, width, axis=0)[:rows].copy()


def _check_c(c: Any, m: int, n: int, fmt: FloatFormat, context: str) -> np.ndarray:
    if c is None:
        return np.zeros((m, n))
    cv = as_values(c, "c")
    if cv.shape != (m, n):
        raise ValueError(f"c must have shape ({m}, {n}), got {cv.shape}")
    require_representable(cv, fmt, "c", context)
    return cv


def _out_format(name: str) -> str:
    if isinstance(name, FloatFormat):
        name = name.name
    if not isinstance(name, str):
        raise ValueError(f"out_format must be one of {', '.join(OUT_FORMATS)}, got {name!r}")
    try:
        fmt = formats.get_format(name)
    except (KeyError, ValueError):
        fmt = None
    if fmt is None or fmt.name not in OUT_FORMATS:
        raise ValueError(f"out_format must be one of {', '.join(OUT_FORMATS)}, got {name!r}")
    return fmt.name


def _fixed_point(span_a: tuple[int, int] | None, span_b: tuple[int, int] | None, block: int) -> bool:
    """True when every block sum of products is exact in float64: the products' bits span at most
    53 - log2(block) positions (largest leading bit + 2 down to the smallest possible quantum);
    span_x = (largest leading exponent, smallest quantum exponent) of an operand's values."""
    if span_a is None or span_b is None:
        return True
    span = (span_a[0] + span_b[0] + 2) - (span_a[1] + span_b[1]) + math.ceil(math.log2(max(block, 1)))
    return span <= 53


def _cost(m: int, n: int, k: int, reference: bool, fixed_point: bool) -> Cost:
    macs = float(m) * n * k
    seconds = macs / MODEL_RATE
    if reference:
        seconds += macs / (EXACT_FIXED_RATE if fixed_point else EXACT_KULISCH_RATE)
    operand_bytes = 2 * 8 * (m * k + k * n) * 2  # values and powers, float64, plus the per-tile copies
    output_bytes = m * n * (8 + 8 + 8 + 4 + 4)
    return Cost(bytes=operand_bytes + output_bytes, seconds=seconds,
                note=f"{m}×{k} by {k}×{n}: {macs:.3g} multiply-adds")


def _check_budget(cost: Cost, budget: Budget | None, m: int, n: int, k: int) -> None:
    if budget is not None and not budget.allows(cost):
        raise ValueError(f"a GEMM of M = {m}, N = {n}, K = {k} needs {cost.describe()}, over "
                         f"{budget.where}'s budget of {budget.describe()} (matmul(..., budget=None) lifts it)")


def _tiles(m: int, n: int, tile: int) -> list[tuple[int, int, int, int]]:
    return [(i, min(m, i + tile), j, min(n, j + tile)) for i in range(0, m, tile) for j in range(0, n, tile)]


# ------------------------------------------------------------------------------------------------
# the API
# ------------------------------------------------------------------------------------------------

def mma(a: Any, b: Any, c: Any, *, arch: str, instruction: str, scale_a: Any = None,
        scale_b: Any = None) -> np.ndarray:
    """D = A·B + C of one tensor-core instruction, bit for bit as the hardware returns it.

    `a` (M, K) and `b` (K, N) hold values exact in the instruction's operand types, `c` (M, N)
    values exact in its C type (M, N, K: the instruction's shape); block-scaled instructions take
    `scale_a` (M, K/block) and `scale_b` (K/block, N), values of the scale type. Returns D as
    float32 or float16 (the instruction's D type), NaN as the canonical 0x7FFFFFFF / 0x7FFF, never −0.
    """
    ins = get_instruction(arch, instruction)
    av = _matrix(a, "a")
    bv = _matrix(b, "b")
    if av.shape != (ins.m, ins.k) or bv.shape != (ins.k, ins.n):
        raise ValueError(f"{ins.name} multiplies a ({ins.m}, {ins.k}) by a ({ins.k}, {ins.n}) matrix; got a "
                         f"{av.shape} and b {bv.shape} (matmul takes any M, N and K)")
    ap, _ = checked_powers(av, ins.a_format, "a", _context(ins, "a"))
    bp, _ = checked_powers(bv, ins.b_format, "b", _context(ins, "b"))
    cv = _check_c(c if c is not None else np.zeros((ins.m, ins.n)), ins.m, ins.n, ins.c_format,
                  _context(ins, "c"))
    if ins.block_scaled:
        sav, sap, sbv, sbp = _hw_scales(ins, scale_a, scale_b, ins.m, ins.n, ins.k)
    else:
        if scale_a is not None or scale_b is not None:
            raise ValueError(f"{ins.name} is not block-scaled: it takes no scale_a/scale_b "
                             "(decode scales are matmul's)")
        sav = sap = np.ones((ins.m, 1))
        sbv = sbp = np.ones((1, ins.n))
    tile = _Tile(_Plan(arch, ins.name, ins.k, None, True, True, False, False, "FP32", False, True, ins.k),
                 av, ap, bv, bp, cv,
                 sav, sap, sbv, sbp)
    acc = cv.copy()
    _chain(ins, tile, acc, 0, ins.k, first_c_type=True)
    return _as_output(acc, ins.d_format)


def _as_output(acc: np.ndarray, fmt: FloatFormat) -> np.ndarray:
    """float64 accumulator values (exact in fmt) → a float32/float16 array with canonical NaN bits."""
    dtype = np.float32 if fmt.bits == 32 else np.float16
    out = acc.astype(dtype)
    bits = out.view(np.uint32 if fmt.bits == 32 else np.uint16)
    bits[np.isnan(acc)] = _CANONICAL_NAN[fmt.bits // 8]
    return out


def matmul(a: Any, b: Any, c: Any = None, *, arch: str, instruction: str, promote_every: int | None = None,
           out_format: str = "FP32", scale_a: Any = None, scale_b: Any = None, reference: bool = True,
           executor: Executor | None = None, tile: int = DEFAULT_TILE,
           budget: Budget | None = CLI_BUDGET) -> GemmResult:
    """A whole GEMM D = A·B (+ C) as a kernel runs it on `instruction` (see the module docstring).

    `a` (M, K) and `b` (K, N) hold values exact in the operand types; K must be a multiple of the
    instruction's K. `promote_every` (a multiple of the instruction's K) promotes the tensor-core
    sum to FP32 every that many elements of K. `scale_a`/`scale_b`: decode scales (FP32), or the
    block scales of a block-scaled instruction. `out_format`: FP32, BF16 or FP16. `reference`:
    also compute the exact product and each output's error. `executor`: map the output tiles over
    it (bit-identical to running them here). `budget`: refuse a GEMM estimated over it (None: any).
    """
    ins = get_instruction(arch, instruction)
    av = _matrix(a, "a")
    bv = _matrix(b, "b")
    m, k = av.shape
    if bv.shape[0] != k:
        raise ValueError(f"a is {av.shape} and b is {bv.shape}: their K differ")
    n = bv.shape[1]
    if m < 1 or n < 1 or k < 1:
        raise ValueError(f"a {av.shape} and b {bv.shape} must not be empty")
    if k % ins.k:
        raise ValueError(f"K = {k} is not a multiple of {ins.name}'s K = {ins.k}")
    if k > _MAX_K:
        raise ValueError(f"K = {k} is over the model's limit of {_MAX_K}")
    if isinstance(tile, bool) or not isinstance(tile, int) or tile < 1:
        raise ValueError(f"tile must be a positive integer, got {tile!r}")
    out_name = _out_format(out_format)
    ap, span_a = checked_powers(av, ins.a_format, "a", _context(ins, "a"))
    bp, span_b = checked_powers(bv, ins.b_format, "b", _context(ins, "b"))

    promote = promote_every
    if promote is not None:
        if isinstance(promote, bool) or not isinstance(promote, (int, np.integer)) or promote < 1:
            raise ValueError(f"promote_every must be a positive integer, got {promote_every!r}")
        promote = int(promote)
        if promote % ins.k:
            raise ValueError(f"promote_every = {promote} is not a multiple of {ins.name}'s K = {ins.k}")
    blockwise = epilogue = False
    ref_block = k
    if ins.block_scaled:
        sav, sap, sbv, sbp = _hw_scales(ins, scale_a, scale_b, m, n, k)
    elif scale_a is None and scale_b is None:
        sav = sap = np.ones((m, 1))
        sbv = sbp = np.ones((1, n))
    else:
        sav = _decode_scale(1.0 if scale_a is None else scale_a, "scale_a", m, k, True)  # (M, K blocks)
        sbv = _decode_scale(1.0 if scale_b is None else scale_b, "scale_b", n, k, False).T  # (K blocks, N)
        nk = max(sav.shape[1], sbv.shape[0])
        if 1 < sav.shape[1] != sbv.shape[0] > 1:
            raise ValueError(f"scale_a has {sav.shape[1]} K blocks and scale_b {sbv.shape[0]}: they must agree")
        if nk > 1:
            kb = k // nk
            if kb % ins.k:
                raise ValueError(f"the decode scales' K blocks of {kb} are not a multiple of {ins.name}'s K = {ins.k}")
            if promote is None:
                promote = kb
            elif promote != kb:
                raise ValueError(f"blockwise decode scales are applied when the tensor-core sum is promoted: "
                                 f"promote_every must be their K block, {kb}, got {promote}")
            sav = np.repeat(sav, nk, axis=1) if sav.shape[1] == 1 else sav
            sbv = np.repeat(sbv, nk, axis=0) if sbv.shape[0] == 1 else sbv
            blockwise = True
            ref_block = kb
        else:
            epilogue = True
        sbv = np.ascontiguousarray(sbv)
        sap, sbp = sav, sbv
    c_into_core = promote is None and not epilogue
    span = promote if promote is not None else k
    if not ins.chains and span > ins.k:
        raise ValueError(f"{ins.name} takes C as .{ins.c_type} but returns D as .{ins.d_type}: D cannot be "
                         f"chained into the next instruction's C; use promote_every={ins.k} or an instruction "
                         f"whose C and D types agree")
    ref_fixed = reference and _fixed_point(span_a, span_b, ins.block if ins.block_scaled else ref_block)
    _check_budget(_cost(m, n, k, reference, ref_fixed), budget, m, n, k)
    cv = _check_c(c, m, n, ins.c_format if c_into_core else FP32, _context(ins, "c") if c_into_core
                  else "C is added in FP32")

    plan = _Plan(arch, ins.name, k, promote, c_into_core, c is not None, blockwise, epilogue, out_name,
                 bool(reference), ref_fixed, ref_block)
    boxes = _tiles(m, n, tile)
    tasks = (_Tile(plan, av[i0:i1], ap[i0:i1], np.ascontiguousarray(bv[:, j0:j1]),
                   np.ascontiguousarray(bp[:, j0:j1]), np.ascontiguousarray(cv[i0:i1, j0:j1]), sav[i0:i1], sap[i0:i1],
                   np.ascontiguousarray(sbv[:, j0:j1]), np.ascontiguousarray(sbp[:, j0:j1]))
             for i0, i1, j0, j1 in boxes)
    results = map(_run_tile, tasks) if executor is None else executor.map(_run_tile, tasks)
    fmt = OUT_FORMATS[out_name]
    acc_out = np.empty((m, n), np.float32)
    codes_out = np.empty((m, n), np.dtype(fmt.code_dtype))
    exact = np.empty((m, n)) if reference else None
    error = np.empty((m, n)) if reference else None
    for (i0, i1, j0, j1), (acc_t, codes_t, exact_t, error_t) in zip(boxes, results):
        acc_out[i0:i1, j0:j1] = acc_t
        codes_out[i0:i1, j0:j1] = codes_t
        if exact is not None and error is not None and exact_t is not None and error_t is not None:
            exact[i0:i1, j0:j1] = exact_t
            error[i0:i1, j0:j1] = error_t
    acc_bits = acc_out.view(np.uint32)
    acc_bits[np.isnan(acc_out)] = _CANONICAL_NAN[4]
    d = codes_out.view({"FP32": np.float32, "FP16": np.float16, "BF16": ml_dtypes.bfloat16}[out_name])
    return GemmResult(d, acc_out, exact, error, arch, ins.name, promote, out_name)
