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
