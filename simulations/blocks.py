"""Block formats: MX (MXFP8, MXFP6, MXFP4) and NVFP4, with the scale rule always explicit.

MX (OCP Microscaling Formats v1.0 §5–6): every run of `block_size` (default 32) consecutive elements
along `axis` shares one E8M0 scale 2^X; an element is stored as the code of x / 2^X in the element
format (E4M3FN, E5M2, E3M2, E2M3, E2M1) and decodes as value(code) · 2^X. The exponent X comes from
the block amax by a named `ScaleRule` (formulas on the enum) and is clamped to E8M0's range
[-127, 127]; its code is X + 127. Dividing by 2^X is exact in float32/float64 (a power of two; a
product that leaves the normal range lies far below the element grid's half-step), so each element
is rounded once, by `formats.encode` under the element policy (default: nearest-even, saturating —
the OCP conversion; an element beyond the grid after scaling saturates to ±max). Edge cases: an
all-zero block gets X = -127 (code 0x00) and zero codes; a block holding NaN or ±Inf gets the NaN
scale 0xFF and zero element codes, and every element of it dequantizes to NaN (OCP §6.3: a NaN scale
makes the whole block NaN).
NVFP4 (NVIDIA Blackwell recipe): E2M1 elements, one E4M3FN scale per 16 elements (or per 16×16 tile
of a weight) and one FP32 tensor scale. `tensor_scale = amax / (448 · 6)` (a decode scale, rounded
to float32); `block_scale = E4M3(block_amax / 6 / tensor_scale)` (nearest-even, saturating; the
quotient is formed in float64, exact to the cast); elements are E2M1(x / (block_scale ·
tensor_scale)) with the quotient in float64, saturating at ±6. The tensor amax is taken over blocks
without NaN/Inf; a zero tensor gets tensor_scale 1.0; a block whose scale is 0 (all-zero, or so small
next to the tensor amax that its scale underflows E4M3) has zero codes; a block holding NaN/Inf gets
the E4M3 NaN scale 0x7F and zero codes and dequantizes to NaN. Real kernels multiply by a float32
reciprocal instead of dividing and can differ from this reference by one code next to ties.
Bits per element: MX = element bits + 8 / block_size (MXFP8 8.25); NVFP4 = 4 + 8/16 = 4.5 plus the
FP32 tensor scale amortised, 32 / n.
"""

from __future__ import annotations

import math
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Callable, Sequence

import numpy as np

from lowprec import formats
from lowprec.formats import E2M1, E4M3FN, E8M0, CastPolicy, FloatFormat

from ._io import ArgumentParser, add_json_argument, run_main
from .scaling import Granularity, error_metrics, _json_float, _json_list

ProgressFn = Callable[[int, int], None]

MX_ELEMENT_FORMATS = ("E4M3FN", "E5M2", "E3M2", "E2M3", "E2M1")
E8M0_BIAS = E8M0.bias  # 127
E8M0_NAN_CODE = E8M0.magnitude_mask  # 0xFF
E4M3_NAN_CODE = E4M3FN.magnitude_mask  # 0x7F: S.1111.111 without the sign
NVFP4_BLOCK = 16
NVFP4_TENSOR_DIVISOR = E4M3FN.max * E2M1.max  # 448 · 6
_CHUNK_BLOCKS = 8192  # blocks per work item: a chunk stays in L2
# Work items run on one thread by default: measured on a shared 2-core machine, a second thread
# lost more to contention than it gained. LOWPREC_BLOCK_THREADS=2 enables the pool.
_THREADS = max(1, int(os.environ.get("LOWPREC_BLOCK_THREADS", "1")))
_POOL: ThreadPoolExecutor | None = None


def _pool() -> ThreadPoolExecutor:
    global _POOL
    if _POOL is None:
        _POOL = ThreadPoolExecutor(max_workers=_THREADS, thread_name_prefix="lowprec-blocks")
    return _POOL


class ScaleRule(str, Enum):
    """How an MX block's shared exponent X (scale 2^X) follows from its amax; emax_elem is the
    exponent of the element format's largest value, max_elem that value.

    FLOOR: X = floor(log2(amax)) − emax_elem (OCP MX v1.0 §6.3). Values above max_elem · 2^X
        saturate: an E4M3 block with amax 957 gets X = 1 and 957 decodes as 896.
    CEIL:  X = ceil(log2(amax)) − emax_elem (never saturates; may waste a binade).
    RCEIL: X = ceil(log2(amax / max_elem)): the ratio rounded up to a power of two (cuBLAS's UE8M0
        rule; computed exactly). 957 / 448 = 2.14 → X = 2, and 957 decodes as 960.
    EVEN:  X = floor(log2(round(amax))) − emax_elem, where round keeps the element format's mantissa
        width, ties away from zero (torchao's EVEN mode): FLOOR, except that an amax which rounds up
        to the next power of two moves to that binade.
    """

    FLOOR = "floor"
    CEIL = "ceil"
    RCEIL = "rceil"
    EVEN = "even"


def _rule(scale_rule: Any) -> ScaleRule:
    try:
        return ScaleRule(scale_rule)
    except ValueError:
        allowed = ", ".join(repr(r.value) for r in ScaleRule)
        raise ValueError(f"scale_rule={scale_rule!r} is not one of {allowed}") from None


def _elem(elem_format: Any, allowed: Sequence[str]) -> FloatFormat:
    f = formats.get_format(elem_format)
    if f.name not in allowed or not isinstance(f, FloatFormat):
        raise ValueError(f"element format {f.name} is not allowed here; allowed: {', '.join(allowed)}")
    return f


def _check_block_size(block_size: Any) -> int:
    if isinstance(block_size, bool) or not isinstance(block_size, (int, np.integer)) or block_size < 1:
        raise ValueError(f"block_size={block_size!r} must be a positive integer")
    return int(block_size)


def mx_scale_exponent(amax: Any, elem_format: str | FloatFormat = "E4M3FN", scale_rule: str = "floor") -> np.ndarray:
    """Shared exponent X per block amax (int64 array), clamped to [-127, 127]; amax 0 gives -127.
    NaN/Inf amaxes give 128 (the caller maps them to the NaN scale code)."""
    f = _elem(elem_format, MX_ELEMENT_FORMATS)
    rule = _rule(scale_rule)
    a = np.asarray(amax, dtype=np.float64)
    if np.any(a < 0):
        raise ValueError("a block amax cannot be negative")
    finite = np.isfinite(a)
    pos = finite & (a > 0)
    mant, e = np.frexp(np.where(pos, a, 1.0))  # a = mant · 2^e, mant in [0.5, 1)
    sig = mant * 2.0  # a = sig · 2^(e-1), sig in [1, 2)
    x = e.astype(np.int64) - 1 - f.emax  # FLOOR
    if rule is ScaleRule.CEIL:
        x = x + (sig > 1.0)
    elif rule is ScaleRule.RCEIL:
        x = x + (sig > f.max / 2.0**f.emax)  # amax / 2^X ≤ max_elem, else one more binade
    elif rule is ScaleRule.EVEN:
        x = x + (sig >= 2.0 - 2.0 ** -(f.mantissa_bits + 1))  # rounds (half away) up to 2.0
    x = np.clip(x, -E8M0_BIAS, E8M0_BIAS)
    x = np.where(pos, x, -E8M0_BIAS)
    return np.where(finite, x, E8M0_BIAS + 1)


def mx_bits_per_element(elem_format: str = "E4M3FN", block_size: int = 32) -> float:
    """Element bits + 8 / block_size: MXFP8 8.25, MXFP6 6.25, MXFP4 4.25 at block 32."""
    f = _elem(elem_format, MX_ELEMENT_FORMATS)
    return f.bits + 8.0 / _check_block_size(block_size)


def nvfp4_bits_per_element(n_elements: int | None = None, block_2d: bool = False) -> float:
    """4 + 8/16 = 4.5 (8/256 for 16×16 tiles), plus the FP32 tensor scale over n_elements if given."""
    bits = 4.0 + 8.0 / (NVFP4_BLOCK * NVFP4_BLOCK if block_2d else NVFP4_BLOCK)
    if n_elements is not None:
        if n_elements < 1:
            raise ValueError(f"n_elements={n_elements} must be positive")
        bits += 32.0 / n_elements
    return bits


# ------------------------------------------------------------------------------------------------
# shared machinery
# ------------------------------------------------------------------------------------------------


def _amax_bits(blocks: np.ndarray) -> np.ndarray:
    """max |x| per row as the float's bit pattern (an unsigned view: NaN > Inf > finite)."""
    uint = np.uint32 if blocks.dtype == np.float32 else np.uint64
    mask = uint(0x7FFFFFFF) if uint is np.uint32 else uint(0x7FFFFFFFFFFFFFFF)
    return np.bitwise_and(blocks.view(uint), mask).max(axis=1)


def _inf_bits(dtype: np.dtype) -> int:
    return 0x7F800000 if dtype == np.float32 else 0x7FF0000000000000


def _map_chunks(n_blocks: int, fn: Callable[[int, int, int], None]) -> None:
    """Run fn(chunk_index, lo, hi) over block ranges, on two threads when large."""
    n_chunks = max(1, (n_blocks + _CHUNK_BLOCKS - 1) // _CHUNK_BLOCKS)

    def run(ids: range) -> None:
        for ci in ids:
            fn(ci, ci * _CHUNK_BLOCKS, min(n_blocks, (ci + 1) * _CHUNK_BLOCKS))

    if n_chunks >= 4 and _THREADS > 1:
        per = (n_chunks + _THREADS - 1) // _THREADS
        list(_pool().map(run, [range(i * per, min(n_chunks, (i + 1) * per)) for i in range(_THREADS)]))
    else:
        run(range(n_chunks))


_LOCAL = threading.local()


def _scratch(shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """A per-thread reusable buffer of `shape` (at most one chunk), so chunks allocate nothing."""
    n = int(np.prod(shape))
    buf = getattr(_LOCAL, "buf", None)
    if buf is None or buf.dtype != dtype or buf.size < n:
        buf = np.empty(max(n, _CHUNK_BLOCKS * 32), dtype)
        _LOCAL.buf = buf
    return buf[:n].reshape(shape)


def _chunk_rngs(rng: np.random.Generator | None, n_blocks: int) -> list[np.random.Generator] | None:
    if rng is None:
        return None
    n_chunks = max(1, (n_blocks + _CHUNK_BLOCKS - 1) // _CHUNK_BLOCKS)
    seeds = rng.integers(0, 2**63 - 1, size=n_chunks, dtype=np.int64)
    return [np.random.default_rng(int(s)) for s in seeds]


def _grouping(shape: tuple[int, ...], axis: int, block: int, block_2d: bool) -> Granularity:
    if block_2d:
        if len(shape) != 2:
            raise ValueError(f"16×16 weight blocks need a 2-D array, got shape {shape}")
        return Granularity("block2d", (block, block))
    if len(shape) == 0:
        raise ValueError("block quantization needs an array with at least one axis")
    if not -len(shape) <= axis < len(shape):
        raise ValueError(f"axis {axis} is out of range for an array of {len(shape)} axes")
    return Granularity("block", (block,), axis)


def _scale_layout(grid: np.ndarray, g: Granularity, shape: tuple[int, ...]) -> np.ndarray:
    """Scales from `to_groups` order (block axis last) to x's layout (block axis at `axis`)."""
    if g.kind == "block":
        return np.ascontiguousarray(np.moveaxis(grid.reshape(g.grid_shape(shape)), -1, g.axis % len(shape)))
    return grid.reshape(g.grid_shape(shape))


def _scale_groups(scales: np.ndarray, g: Granularity, shape: tuple[int, ...]) -> np.ndarray:
    """Inverse of `_scale_layout`: one scale per row of `to_groups`."""
    if g.kind == "block":
        return np.ascontiguousarray(np.moveaxis(scales, g.axis % len(shape), -1)).reshape(-1)
    return scales.reshape(-1)


def _float_input(x: Any) -> np.ndarray:
    arr = formats.as_float_array(x)
    return arr if arr.dtype in (np.float32, np.float64) else arr.astype(np.float32)


# ------------------------------------------------------------------------------------------------
# MX
# ------------------------------------------------------------------------------------------------


@dataclass
class MXTensor:
    """An MX-quantized array: element codes in x's shape, one E8M0 scale code per block."""

    codes: np.ndarray  # uint8 element codes, same shape as x
    scale_codes: np.ndarray  # uint8 E8M0 codes, x's shape with `axis` divided by block_size
    elem_format: FloatFormat
    block_size: int
    axis: int
    scale_rule: ScaleRule
    policy: CastPolicy
    source_dtype: str = "float32"

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.codes.shape)

    @property
    def scale_exponents(self) -> np.ndarray:
        """X per block (int64); 128 marks the NaN scale."""
        return self.scale_codes.astype(np.int64) - E8M0_BIAS

    @property
    def bits_per_element(self) -> float:
        return self.elem_format.bits + 8.0 / self.block_size

    @property
    def granularity(self) -> Granularity:
        return Granularity("block", (self.block_size,), self.axis)

    def dequantize(self) -> np.ndarray:
        """value(code) · 2^X per block (NaN for a NaN scale), in the source dtype (exact)."""
        g = self.granularity
        dt = np.float64 if self.source_dtype == "float64" else np.float32
        vals = g.to_groups(formats.decode(self.codes, self.elem_format).astype(dt))
        scales = formats.decode(_scale_groups(self.scale_codes, g, self.shape), formats.E8M0).astype(dt)
        with np.errstate(over="ignore", invalid="ignore"):
            return g.from_groups(vals * scales[:, None], self.shape)

    def to_dict(self) -> dict[str, Any]:
        return {
            "scheme": f"MX{self.elem_format.name}",
            "elem_format": self.elem_format.name,
            "block_size": self.block_size,
            "axis": self.axis,
            "scale_rule": self.scale_rule.value,
            "policy": self.policy.to_dict(),
            "shape": list(self.shape),
            "bits_per_element": self.bits_per_element,
            "codes": self.codes.astype(np.int64).tolist(),
            "scale_codes": self.scale_codes.astype(np.int64).tolist(),
        }


def quantize_mx(
    x: Any,
    elem_format: str = "E4M3FN",
    block_size: int = 32,
    scale_rule: str = "floor",
    axis: int = -1,
    policy: CastPolicy | None = None,
    *,
    rng: np.random.Generator | None = None,
) -> MXTensor:
    """MX-quantize `x` in blocks of `block_size` along `axis` (see the module docstring).

    `policy` is the element cast policy (default `policy_for('ocp', elem)`: nearest-even,
    saturating); stochastic rounding needs `rng` and is reproducible for its seed."""
    f = _elem(elem_format, MX_ELEMENT_FORMATS)
    bs = _check_block_size(block_size)
    rule = _rule(scale_rule)
    pol = formats.policy_for("ocp", f) if policy is None else policy
    if not isinstance(pol, CastPolicy):
        raise TypeError(f"policy must be a CastPolicy or None, got {type(pol).__name__}")
    arr = _float_input(x)
    shape = tuple(arr.shape)
    g = _grouping(shape, axis, bs, False)
    blocks = g.to_groups(arr)
    nb = blocks.shape[0]
    codes = np.empty(blocks.shape, np.uint8)
    scale_codes = np.empty(nb, np.uint8)
    inf_bits = _inf_bits(arr.dtype)
    rngs = _chunk_rngs(rng, nb)

    def work(ci: int, lo: int, hi: int) -> None:
        xb = blocks[lo:hi]
        abits = _amax_bits(xb)
        bad = abits >= inf_bits
        amax = abits.view(arr.dtype)
        xexp = mx_scale_exponent(np.where(bad, 0.0, amax), f, rule)
        factor = np.ldexp(np.ones(hi - lo, arr.dtype), (-xexp).astype(np.int32))
        with np.errstate(over="ignore", invalid="ignore"):  # Inf/NaN blocks, zeroed below
            scaled = np.multiply(xb, factor[:, None], out=_scratch(xb.shape, arr.dtype))
        if bad.any():
            scaled[bad] = 0
        codes[lo:hi] = formats.encode(scaled, f, pol, rng=None if rngs is None else rngs[ci])
        sc = (xexp + E8M0_BIAS).astype(np.uint8)
        sc[bad] = E8M0_NAN_CODE
        scale_codes[lo:hi] = sc

    _map_chunks(nb, work)
    return MXTensor(g.from_groups(codes, shape), _scale_layout(scale_codes, g, shape), f, bs, axis, rule, pol,
                    str(arr.dtype))


def mx_scale_rule_table(amax: float = 957.0, elem_format: str = "E4M3FN") -> list[dict[str, Any]]:
    """For one block whose largest element is `amax`: per rule, the exponent X, the scale 2^X and
    what `amax` decodes as (the worked example: E4M3, 957 → 896 under floor, 960 under rceil)."""
    rows = []
    for rule in ScaleRule:
        t = quantize_mx(np.array([amax], np.float64), elem_format, 1, rule.value)
        rows.append({"rule": rule.value, "scale_exponent": int(t.scale_exponents[0]),
                     "decode_scale": 2.0 ** int(t.scale_exponents[0]),
                     "decoded_amax": float(t.dequantize()[0])})
    return rows


# ------------------------------------------------------------------------------------------------
# NVFP4
# ------------------------------------------------------------------------------------------------


@dataclass
class NVFP4Tensor:
    """E2M1 codes (one per element), E4M3 block scale codes and an FP32 tensor scale."""

    codes: np.ndarray  # uint8 E2M1 codes (low nibble), same shape as x
    scale_codes: np.ndarray  # uint8 E4M3FN codes: x's shape with `axis` / 16, or (M/16, N/16) tiles
    tensor_scale: float  # FP32 decode scale: amax / (448 · 6)
    axis: int
    block_2d: bool
    policy: CastPolicy
    source_dtype: str = "float32"

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.codes.shape)

    @property
    def granularity(self) -> Granularity:
        if self.block_2d:
            return Granularity("block2d", (NVFP4_BLOCK, NVFP4_BLOCK))
        return Granularity("block", (NVFP4_BLOCK,), self.axis)

    @property
    def block_scales(self) -> np.ndarray:
        """Decoded E4M3 block scales (float32; NaN for the NaN scale)."""
        return formats.decode(self.scale_codes, formats.E4M3FN)

    @property
    def bits_per_element(self) -> float:
        return nvfp4_bits_per_element(int(np.prod(self.shape, dtype=np.int64)) or None, self.block_2d)

    def dequantize(self) -> np.ndarray:
        """value(code) · block_scale · tensor_scale (products in float64, exact), as float32."""
        g = self.granularity
        vals = g.to_groups(formats.decode(self.codes, formats.E2M1).astype(np.float64))
        bscale = formats.decode(_scale_groups(self.scale_codes, g, self.shape), formats.E4M3FN).astype(np.float64)
        out = vals * (bscale * self.tensor_scale)[:, None]
        return g.from_groups(out, self.shape).astype(np.float32)

    def to_dict(self) -> dict[str, Any]:
        return {
            "scheme": "NVFP4",
            "block": [NVFP4_BLOCK, NVFP4_BLOCK] if self.block_2d else [NVFP4_BLOCK],
            "axis": self.axis,
            "tensor_scale": self.tensor_scale,
            "policy": self.policy.to_dict(),
            "shape": list(self.shape),
            "bits_per_element": self.bits_per_element,
            "codes": self.codes.astype(np.int64).tolist(),
            "scale_codes": self.scale_codes.astype(np.int64).tolist(),
        }


def nvfp4_tensor_scale(amax: float) -> float:
    """FP32 tensor decode scale amax / (448 · 6); 1.0 for a zero amax; the smallest float32
    subnormal if the quotient underflows."""
    a = float(amax)
    if not math.isfinite(a) or a < 0:
        raise ValueError(f"tensor amax must be finite and ≥ 0, got {amax!r}")
    if a == 0:
        return 1.0
    ts = float(np.float32(a / NVFP4_TENSOR_DIVISOR))
    return ts if ts > 0 else float(np.float32(2.0**-149))


def quantize_nvfp4(
    x: Any,
    axis: int = -1,
    *,
    block_2d: bool = False,
    policy: CastPolicy | None = None,
    rng: np.random.Generator | None = None,
) -> NVFP4Tensor:
    """NVFP4-quantize `x`: blocks of 16 along `axis`, or 16×16 tiles of a 2-D weight with
    `block_2d=True` (see the module docstring). `policy` is the E2M1 element policy (default
    nearest-even, saturating); stochastic rounding needs `rng`."""
    pol = formats.policy_for("ocp", formats.E2M1) if policy is None else policy
    if not isinstance(pol, CastPolicy):
        raise TypeError(f"policy must be a CastPolicy or None, got {type(pol).__name__}")
    arr = _float_input(x)
    shape = tuple(arr.shape)
    g = _grouping(shape, axis, NVFP4_BLOCK, bool(block_2d))
    blocks = g.to_groups(arr)
    nb = blocks.shape[0]
    abits: np.ndarray = np.empty(nb, np.uint32 if arr.dtype == np.float32 else np.uint64)

    def amax_pass(ci: int, lo: int, hi: int) -> None:
        abits[lo:hi] = _amax_bits(blocks[lo:hi])

    _map_chunks(nb, amax_pass)
    bad: np.ndarray = abits >= _inf_bits(arr.dtype)
    block_amax = np.where(bad, 0.0, abits.view(arr.dtype).astype(np.float64))
    ts = nvfp4_tensor_scale(float(block_amax.max()) if nb else 0.0)
    scale_pol = formats.policy_for("ocp", formats.E4M3FN)
    scale_codes = formats.encode(block_amax / (6.0 * ts), formats.E4M3FN, scale_pol)
    scale_codes[bad] = E4M3_NAN_CODE
    full = formats.decode(scale_codes, formats.E4M3FN).astype(np.float64) * ts  # exact: 24 + 4 bits
    full[bad] = 0.0
    codes = np.empty(blocks.shape, np.uint8)
    rngs = _chunk_rngs(rng, nb)

    def work(ci: int, lo: int, hi: int) -> None:
        s = full[lo:hi]
        inv_ok = s > 0
        with np.errstate(divide="ignore", invalid="ignore"):
            scaled = blocks[lo:hi].astype(np.float64) / np.where(inv_ok, s, 1.0)[:, None]
        if not inv_ok.all():
            scaled[~inv_ok] = 0.0
        codes[lo:hi] = formats.encode(scaled, formats.E2M1, pol, rng=None if rngs is None else rngs[ci])

    _map_chunks(nb, work)
    return NVFP4Tensor(g.from_groups(codes, shape), _scale_layout(scale_codes, g, shape), ts, axis,
                       bool(block_2d), pol, str(arr.dtype))


# ------------------------------------------------------------------------------------------------
# the block-format comparison (CLI / widget data)
# ------------------------------------------------------------------------------------------------


@dataclass
class BlockSchemeEntry:
    scheme: str  # e.g. "MXFP8 E4M3FN floor", "NVFP4 16x16"
    elem_format: str
    scale_rule: str
    bits_per_element: float
    rms_rel_error: float
    sqnr_db: float
    max_abs_error: float
    flushed_fraction: float
    block_rms_rel_error: np.ndarray  # per block, in to_groups order

    def to_dict(self) -> dict[str, Any]:
        return {
            "scheme": self.scheme, "elem_format": self.elem_format, "scale_rule": self.scale_rule,
            "bits_per_element": self.bits_per_element, "rms_rel_error": _json_float(self.rms_rel_error),
            "sqnr_db": _json_float(self.sqnr_db), "max_abs_error": _json_float(self.max_abs_error),
            "flushed_fraction": self.flushed_fraction,
            "block_rms_rel_error": _json_list(self.block_rms_rel_error),
        }


@dataclass
class BlocksStudy:
    """Every block scheme on one tensor: error against bits per element."""

    shape: tuple[int, ...]
    distribution: str
    seed: int
    block_amax: np.ndarray  # amax of each 32-block along the last axis
    entries: list[BlockSchemeEntry] = field(default_factory=list)
    scale_rule_example: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "study": "blocks", "shape": list(self.shape), "distribution": self.distribution, "seed": self.seed,
            "block_amax": _json_list(self.block_amax),
            "entries": [e.to_dict() for e in self.entries],
            "scale_rule_example": self.scale_rule_example,
        }


DISTRIBUTIONS = ("normal", "student_t", "lognormal")


def _sample(distribution: str, shape: tuple[int, ...], seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if distribution == "normal":
        return rng.standard_normal(shape).astype(np.float32)
    if distribution == "student_t":
        return rng.standard_t(3, size=shape).astype(np.float32)
    if distribution == "lognormal":
        return (rng.lognormal(0.0, 2.0, size=shape) * rng.choice([-1.0, 1.0], size=shape)).astype(np.float32)
    raise ValueError(f"distribution {distribution!r} is not one of {', '.join(DISTRIBUTIONS)}")


def blocks_study(
    shape: Sequence[int] = (64, 256),
    distribution: str = "student_t",
    seed: int = 0,
    elem_formats: Sequence[str] = MX_ELEMENT_FORMATS,
    scale_rules: Sequence[str] = ("floor", "ceil", "rceil", "even"),
    progress: ProgressFn | None = None,
) -> BlocksStudy:
    """MX (each element format × scale rule, block 32) and NVFP4 (1×16, 16×16) on one tensor."""
    shp = tuple(int(s) for s in shape)
    if len(shp) != 2 or min(shp) < 1 or shp[0] % 16 or shp[1] % 32:
        raise ValueError(f"blocks study needs a 2-D shape with rows a positive multiple of 16 and columns a positive "
                         f"multiple of 32, got {shape!r}")
    for r in scale_rules:
        _rule(r)
    x = _sample(distribution, shp, seed)
    g32 = Granularity("block", (32,), -1)
    study = BlocksStudy(shp, distribution, seed, np.abs(g32.to_groups(x)).max(axis=1).astype(np.float64),
                        scale_rule_example=mx_scale_rule_table())
    total = len(elem_formats) * len(scale_rules) + 2
    done = 0
    for ef in elem_formats:
        f = _elem(ef, MX_ELEMENT_FORMATS)
        family = {8: "MXFP8", 6: "MXFP6", 4: "MXFP4"}[f.bits]
        for r in scale_rules:
            t = quantize_mx(x, f.name, 32, r)
            rep = error_metrics(x, t.dequantize(), groups=g32)
            study.entries.append(BlockSchemeEntry(
                f"{family} {f.name} {r}", f.name, r, t.bits_per_element, rep.rms_rel_error, rep.sqnr_db,
                rep.max_abs_error, rep.flushed_fraction, rep.group_rms_rel_error.reshape(-1)))
            done += 1
            if progress is not None:
                progress(done, total)
    for two_d in (False, True):
        t4 = quantize_nvfp4(x, block_2d=two_d)
        rep = error_metrics(x, t4.dequantize(), groups=g32)
        study.entries.append(BlockSchemeEntry(
            "NVFP4 16x16" if two_d else "NVFP4 1x16", "E2M1", "e4m3_scale", t4.bits_per_element,
            rep.rms_rel_error, rep.sqnr_db, rep.max_abs_error, rep.flushed_fraction,
            rep.group_rms_rel_error.reshape(-1)))
        done += 1
        if progress is not None:
            progress(done, total)
    return study


def main(argv: Sequence[str] | None = None) -> int:
    p = ArgumentParser(prog="python -m lowprec.simulations.blocks", description="block-format study → JSON")
    p.add_argument("--rows", type=int, default=64)
    p.add_argument("--cols", type=int, default=256)
    p.add_argument("--distribution", default="student_t", choices=DISTRIBUTIONS)
    p.add_argument("--seed", type=int, default=0)
    add_json_argument(p)
    return run_main(p, argv, lambda a: blocks_study((a.rows, a.cols), a.distribution, a.seed))


if __name__ == "__main__":
    raise SystemExit(main())
