"""MMA-Sim (PyPI `mmasim`) as the oracle of `lowprec.simulations.gemm`: the same instruction on the
same values, its D as unsigned-integer bits, and generators of operand values from format codes.

mmasim takes torch tensors: FP16/BF16/FP32 (TF32 operands are FP32 tensors it truncates) and the
FP8 dtypes as themselves; FP6/FP4 of the f8f6f4 kinds one code per uint8 (FP6 in bits 5:0, FP4 in
bits 5:2); the FP4 of kind::mxf4/mxf4nvf4 two codes per uint8 along K (the even element in the
high nibble); UE8M0 scales as float8_e8m0fnu, UE4M3 scales as float8_e4m3fn.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import numpy as np

from lowprec import formats
from lowprec.formats import FloatFormat
from lowprec.simulations import gemm

MMASIM_ARCH = {"volta": "Volta", "turing": "Turing", "ampere": "Ampere", "ada": "Ada Lovelace",
               "hopper": "Hopper", "blackwell": "Blackwell", "rtx_blackwell": "RTX Blackwell"}


def mmasim_available() -> bool:
    try:
        import mmasim.nv_ptx  # noqa: F401
    except Exception:  # not installed, or its C++ FMA helper failed to build
        return False
    return True


@lru_cache(maxsize=None)
def _op(arch: str, name: str) -> Any:
    import mmasim.nv_ptx as nv

    ins = gemm.get_instruction(arch, name)
    shape_and_type = name[len(ins.operation) + 1:]
    cls = {("mma", False): nv.MMA, ("mma", True): nv.MMABlockScale, ("wgmma", False): nv.WGMMA,
           ("tcgen05.mma", False): nv.TCGen05MMA, ("tcgen05.mma", True): nv.TCGen05MMABlockScale}
    return cls[(ins.operation, ins.block_scaled)](MMASIM_ARCH[arch], shape_and_type)


def _tensor(values: np.ndarray, ptx: str, packed_fp4: bool = False) -> Any:
    import torch

    v = np.asarray(values, np.float64)
    if ptx in ("f32", "tf32"):
        return torch.from_numpy(v.astype(np.float32))
    if ptx == "f16":
        return torch.from_numpy(v.astype(np.float16))
    if ptx == "bf16":
        return torch.from_numpy(v.astype(np.float32)).to(torch.bfloat16)
    fmt = gemm.PTX_TYPES[ptx]
    if ptx == "ue4m3":
        codes = formats.encode(v, formats.E4M3FN)
        return torch.from_numpy(codes).view(torch.float8_e4m3fn)
    codes = formats.encode(v, fmt)
    if ptx in ("e4m3", "e5m2", "ue8m0"):
        dtype = {"e4m3": torch.float8_e4m3fn, "e5m2": torch.float8_e5m2, "ue8m0": torch.float8_e8m0fnu}[ptx]
        return torch.from_numpy(codes).view(dtype)
    if packed_fp4:  # pairs along the last axis: even element in the high nibble
        pairs = codes.reshape(*codes.shape[:-1], -1, 2)
        return torch.from_numpy((pairs[..., 0] << 4 | pairs[..., 1]).astype(np.uint8))
    shift = 2 if ptx == "e2m1" else 0
    return torch.from_numpy((codes << shift).astype(np.uint8))


def mmasim_mma(arch: str, name: str, a: np.ndarray, b: np.ndarray, c: np.ndarray,
               scale_a: np.ndarray | None = None, scale_b: np.ndarray | None = None) -> np.ndarray:
    """mmasim's D for one instruction, as uint32 (FP32 D) or uint16 (FP16 D) bits."""
    ins = gemm.get_instruction(arch, name)
    op = _op(arch, name)
    packed = ins.unit.group > 1
    ta = _tensor(a, ins.a_type, packed)
    tb = _tensor(np.ascontiguousarray(np.asarray(b).T), ins.b_type, packed).T if packed else _tensor(b, ins.b_type)
    tc = _tensor(c, ins.c_type)
    if ins.block_scaled:
        assert scale_a is not None and scale_b is not None
        d = op(ta, tb, tc, _tensor(scale_a, ins.scale_type), _tensor(scale_b, ins.scale_type))
    else:
        d = op(ta, tb, tc)
    out = d.numpy()
    return out.view(np.uint32 if out.dtype == np.float32 else np.uint16).copy()


def ours_bits(d: np.ndarray) -> np.ndarray:
    d = np.asarray(d)
    return d.view(np.uint32 if d.dtype == np.float32 else np.uint16)


# ------------------------------------------------------------------------------------------------
# operand generators (values from codes, so every value is exact in its format)
# ------------------------------------------------------------------------------------------------

def finite_codes(fmt: FloatFormat) -> np.ndarray:
    """Every code of fmt whose value is finite (for FP16/BF16/TF32 a sample of the codes)."""
    if fmt.bits <= 8:
        codes = np.arange(fmt.n_codes, dtype=np.uint8)
        vals = formats.decode(codes, fmt)
        return codes[np.isfinite(vals)]
    raise ValueError("wide formats are sampled by value, not by code")


def random_values(rng: np.random.Generator, ptx: str, shape: tuple[int, ...], *, spread: int = 0,
                  zeros: float = 0.0, specials: float = 0.0) -> np.ndarray:
    """Random values exact in PTX type `ptx`. Narrow types: uniform over finite codes. FP16/BF16/
    TF32/FP32: ±(1 + m/2^p) · 2^e with e uniform in ±(spread or a type-dependent range), subnormals
    included where the range reaches them. `zeros`/`specials`: fractions of zeros and of Inf/NaN
    (where the type has them)."""
    fmt = gemm.PTX_TYPES[ptx]
    n = int(np.prod(shape))
    if fmt.bits <= 8:
        codes = finite_codes(fmt)
        out = formats.decode(rng.choice(codes, n), fmt).astype(np.float64)
    else:
        p = fmt.mantissa_bits
        lo, hi = (-spread, spread) if spread else {"f16": (-24, 15), "bf16": (-40, 40), "tf32": (-40, 40),
                                                   "f32": (-40, 40)}[ptx]
        e = rng.integers(lo, hi + 1, n)
        m = rng.integers(0, 1 << p, n)
        x = np.ldexp(1.0 + m / 2.0**p, e) * rng.choice([-1.0, 1.0], n)
        # rounded into the format (FP16's subnormals); TF32 draws are exact already (e ≥ -126)
        out = x if ptx == "tf32" else formats.quantize(x, fmt).astype(np.float64)
        out[~np.isfinite(out)] = fmt.max
    if zeros:
        out[rng.random(n) < zeros] = 0.0
    if specials and (fmt.has_nan or fmt.has_inf):
        pick = rng.random(n) < specials
        pool = ([np.inf, -np.inf] if fmt.has_inf else []) + ([np.nan] if fmt.has_nan else [])
        out[pick] = rng.choice(pool, int(pick.sum()))
    return out.reshape(shape)


def random_scales(rng: np.random.Generator, ptx: str, shape: tuple[int, ...], *, low: int = -10,
                  high: int = 10) -> np.ndarray:
    """Block scales: UE8M0 powers of two 2^low … 2^high; UE4M3 finite codes (0 included)."""
    if ptx == "ue8m0":
        return np.ldexp(1.0, rng.integers(low, high + 1, shape))
    codes = np.arange(0x7F, dtype=np.uint8)  # UE4M3: E4M3FN's non-negative codes, NaN (0x7F) left out
    return formats.decode(rng.choice(codes, shape), formats.E4M3FN).astype(np.float64)


# ------------------------------------------------------------------------------------------------
# adversarial operands (every value exact in its type)
# ------------------------------------------------------------------------------------------------

ADVERSARIAL = ("spread", "cancellation", "c_dominates", "below_window", "subnormal", "subnormal_times_normal",
               "carries", "c_low_bits", "specials", "zero_c_tiny")


def _pick(rng: np.random.Generator, fmt: FloatFormat, shape: tuple[int, ...], lo: float, hi: float) -> np.ndarray:
    """Values of fmt with lo ≤ |x| ≤ hi (random sign): from its codes (8 bits or fewer), else
    normals (1 + m/2^p)·2^e and subnormals m·2^(emin-p) built from their fields (exact by
    construction)."""
    if fmt.bits <= 8:
        mags = np.unique(np.abs(formats.decode(finite_codes(fmt), fmt).astype(np.float64)))
    else:
        p = fmt.mantissa_bits
        e_lo = fmt.emin if lo <= 0 else max(fmt.emin, int(np.floor(np.log2(lo))))
        e_hi = fmt.emax if not np.isfinite(hi) else min(fmt.emax, int(np.floor(np.log2(hi))))
        e = rng.integers(e_lo, max(e_lo, e_hi) + 1, 2048)
        mags = np.ldexp(1.0 + rng.integers(0, 1 << p, 2048) / 2.0**p, e)
        if lo < fmt.smallest_normal:
            mags = np.concatenate([mags, np.ldexp(rng.integers(1, 1 << p, 512).astype(np.float64), fmt.emin - p)])
        mags = mags[mags <= fmt.max]
    mags = mags[(mags >= lo) & (mags <= hi)]
    if not mags.size:
        mags = np.array([float(min(max(lo, fmt.smallest_subnormal), fmt.max))])
    return rng.choice(mags, shape) * rng.choice([-1.0, 1.0], shape)


def adversarial(rng: np.random.Generator, ins: gemm.Instruction, case: str
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None, np.ndarray | None]:
    """(a, b, c, scale_a, scale_b) of one instruction for an adversarial case (see ADVERSARIAL)."""
    fa, fb, fc = ins.a_format, ins.b_format, ins.c_format
    m, n, k = ins.m, ins.n, ins.k
    a = random_values(rng, ins.a_type, (m, k))
    b = random_values(rng, ins.b_type, (k, n))
    c = np.zeros((m, n))
    if case == "spread":  # every magnitude the operand types have, C of any size
        a = _pick(rng, fa, (m, k), 0.0, np.inf)
        b = _pick(rng, fb, (k, n), 0.0, np.inf)
        c = _pick(rng, fc, (m, n), 0.0, 2.0**20 if fc.emax > 20 else fc.max)
    elif case == "cancellation":  # the second half of K undoes the first: exact sum = C
        half = k // 2
        a[:, half:] = a[:, :half]
        b[half:, :] = -b[:half, :]
        c = _pick(rng, fc, (m, n), 2.0**-6, 2.0**6)
    elif case == "c_dominates":  # C far above every product: the products fall off the window
        a = _pick(rng, fa, (m, k), 0.0, 1.0)
        b = _pick(rng, fb, (k, n), 0.0, 1.0)
        c = _pick(rng, fc, (m, n), 2.0**8, 2.0**14 if fc.emax >= 14 else fc.max)
    elif case == "below_window":  # one large product per output, the rest 2^-10 … 2^-30 below it
        a = _pick(rng, fa, (m, k), 0.0, 2.0**-2)
        a[:, 0] = _pick(rng, fa, (m,), 1.0, 8.0)
        b = _pick(rng, fb, (k, n), 0.0, 2.0**-2)
        b[0, :] = _pick(rng, fb, (n,), 1.0, 8.0)
    elif case == "subnormal":  # subnormal operands (below the smallest normal)
        a = _pick(rng, fa, (m, k), 0.0, fa.smallest_normal * (1 - 2.0**-fa.mantissa_bits))
        b = _pick(rng, fb, (k, n), 0.0, fb.smallest_normal * (1 - 2.0**-fb.mantissa_bits))
        c = _pick(rng, fc, (m, n), 0.0, fc.smallest_normal * 4)
    elif case == "subnormal_times_normal":  # a subnormal times a large normal sets e_max: its clamped
        # exponent (emin, not its leading bit) decides how far the other products fall
        a = _pick(rng, fa, (m, k), 0.0, fa.smallest_normal * (1 - 2.0**-fa.mantissa_bits))
        a[:, 1::2] = _pick(rng, fa, (m, k - k // 2), 0.0, 1.0)
        b = _pick(rng, fb, (k, n), 0.0, np.inf)
        c = _pick(rng, fc, (m, n), 0.0, 1.0)
    elif case == "carries":  # all products just below a power of two: the sum carries upward
        top_a = np.max(_pick(rng, fa, (64,), 1.0, 2.0 - 2.0**-fa.mantissa_bits))
        top_b = np.max(_pick(rng, fb, (64,), 1.0, 2.0 - 2.0**-fb.mantissa_bits))
        a = np.full((m, k), top_a)
        b = np.full((k, n), top_b)
        c = np.full((m, n), 2.0**3 - 2.0**(3 - fc.mantissa_bits))
    elif case == "c_low_bits":  # C with bits below F: 1 + 2^-20 + 2^-13 and friends
        c = np.ones((m, n))
        if fc.mantissa_bits >= 20:
            c = c + 2.0**-20 + 2.0**-13
        elif fc.mantissa_bits >= 10:
            c = c + 2.0**-10 + 2.0**-8
        a = _pick(rng, fa, (m, k), 0.0, 2.0**-8)
        b = _pick(rng, fb, (k, n), 0.0, 2.0**-4)
    elif case == "specials":  # ±Inf and NaN in operands (where the types have them) and in C
        a = random_values(rng, ins.a_type, (m, k), zeros=0.2, specials=0.05)
        b = random_values(rng, ins.b_type, (k, n), zeros=0.2, specials=0.05)
        c = random_values(rng, ins.c_type, (m, n), spread=10, specials=0.1)
    elif case == "zero_c_tiny":  # C = 0 and tiny products: the zero exponent sets the window
        a = _pick(rng, fa, (m, k), 0.0, fa.smallest_normal * 2)
        b = _pick(rng, fb, (k, n), 0.0, fb.smallest_normal * 2)
        a[rng.random((m, k)) < 0.3] = 0.0
    else:
        raise ValueError(case)
    sa = sb = None
    if ins.block_scaled:
        low, high = ((-127, -60) if case in ("subnormal", "zero_c_tiny") else
                     (60, 127) if case == "c_dominates" else (-20, 20))
        sa = random_scales(rng, ins.scale_type, (m, k // ins.block), low=low, high=high)
        sb = random_scales(rng, ins.scale_type, (k // ins.block, n), low=low, high=high)
        if case == "specials" and ins.scale_type == "ue8m0":
            sa[0, 0] = np.nan
    return a, b, c, sa, sb
