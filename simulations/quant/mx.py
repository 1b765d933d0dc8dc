"""MX block quantization (OCP Microscaling Formats v1.0 §5–6): MXFP8, MXFP6, MXFP4.

Every run of `block_size` (default 32) consecutive elements along `axis` shares one E8M0 scale 2^X;
an element is stored as the code of x / 2^X in the element format (E4M3FN, E5M2, E3M2, E2M3, E2M1)
and decodes as value(code) · 2^X. X comes from the block amax by the named `ScaleRule` of
`simulations.quant.scale_rules`, clamped to [-127, 127]; its code is X + 127. Dividing by 2^X is exact in
float32/float64 (a power of two; a product that leaves the normal range lies far below the element
grid's half-step), so each element is rounded once, by `formats.encode` under the element policy
(default: nearest-even, saturating — the OCP conversion; an element beyond the grid after scaling
saturates to ±max). Edge cases: an all-zero block gets X = -127 (code 0x00) and zero codes; a block
holding NaN or ±Inf gets the NaN scale 0xFF and zero element codes, and every element of it
dequantizes to NaN (OCP §6.3: a NaN scale makes the whole block NaN).

That is the `ocp` block convention, the default. `convention="torchao"` or `"transformer_engine"`
reproduces those implementations bit for bit instead (`simulations.quant.conventions`: the scale
from the amax in float32, elements multiplied by a float32 reciprocal, each library's element cast
and its own handling of tiny, Inf and NaN blocks).

Two paths, one contract: the numpy code below is the readable reference; `simulations.quant._mx_kernels`
is its compiled twin (one fused pass per block: amax, scale code, element cast), which runs where the
codec's switch selects the compiled path (`LOWPREC_CODEC`, `formats.codec.codec_path`; by default for
arrays of at least `codec.FAST_MIN` elements). Both give the same codes bit for bit for every
convention, rule, element policy and input dtype (tests/test_block_paths.py; the oracle tests run on
both paths).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from lowprec import formats
from lowprec.formats import CastPolicy, FloatFormat, codec

from ..scaling.granularity import Granularity
from ._blockwise import (
    amax_bits,
    block_grouping,
    chunk_rngs,
    float_input,
    inf_bits,
    map_chunks,
    scale_groups,
    scale_layout,
    scratch,
)
from .conventions import (
    BlockConvention,
    ElementCast,
    MXElementScaling,
    MXRule,
    MXScale,
    cast_elements,
    element_policy,
    get_block_convention,
    mx_element_multipliers,
    mx_scale_codes,
    scale_by_multiplier,
)
from .scale_rules import (
    E8M0_BIAS,
    E8M0_NAN_CODE,
    MX_ELEMENT_FORMATS,
    ScaleRule,
    check_block_size,
    element_format,
    mx_scale_exponent,
)

__all__ = ["MXTensor", "mx_scale_rule_table", "quantize_mx"]


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
    convention: str = "ocp"  # the block convention (simulations.quant.conventions) that made it

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
        scales = formats.decode(scale_groups(self.scale_codes, g, self.shape), formats.E8M0).astype(dt)
        with np.errstate(over="ignore", invalid="ignore"):
            return g.from_groups(vals * scales[:, None], self.shape)

    def to_dict(self) -> dict[str, Any]:
        return {
            "scheme": f"MX{self.elem_format.name}",
            "elem_format": self.elem_format.name,
            "block_size": self.block_size,
            "axis": self.axis,
            "scale_rule": self.scale_rule.value,
            "convention": self.convention,
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
    scale_rule: str | None = None,
    axis: int = -1,
    policy: CastPolicy | None = None,
    *,
    convention: str = "ocp",
    rng: np.random.Generator | None = None,
) -> MXTensor:
    """MX-quantize `x` in blocks of `block_size` along `axis` (see the module docstring).

    `scale_rule` (floor, ceil, rceil, even) defaults to the convention's own (floor for ocp and
    torchao, rceil for transformer_engine); `convention` names a `block_conventions` record.
    `policy` replaces the element cast policy of the ocp convention (default `policy_for('ocp',
    elem)`: nearest-even, saturating); stochastic rounding needs `rng` and is reproducible for its
    seed. The other conventions fix their element cast, so they refuse a `policy`."""
    conv = get_block_convention(convention)
    f = element_format(elem_format, MX_ELEMENT_FORMATS)
    bs = check_block_size(block_size)
    mxr = conv.mx_rule(scale_rule)
    conv.check_mx(f, bs)
    if policy is not None and conv.mx_element_cast is not ElementCast.OCP:
        raise ValueError(f"the {conv.name} convention fixes its element cast; policy applies to 'ocp' only")
    pol = element_policy(conv.mx_element_cast, f) if policy is None else policy
    if not isinstance(pol, CastPolicy):
        raise TypeError(f"policy must be a CastPolicy or None, got {type(pol).__name__}")
    arr = float_input(x)
    if conv.float32_input and arr.dtype != np.float32:
        with np.errstate(over="ignore"):
            arr = arr.astype(np.float32)
    shape = tuple(arr.shape)
    g = block_grouping(shape, axis, bs, False)
    blocks = g.to_groups(arr)
    nb = blocks.shape[0]
    codes = np.empty(blocks.shape, np.uint8)
    scale_codes = np.empty(nb, np.uint8)
    rngs = chunk_rngs(rng, nb)
    exact = mxr.scale is MXScale.EXACT and mxr.element_scaling is MXElementScaling.EXACT

    def work_exact(ci: int, lo: int, hi: int) -> None:
        xb = blocks[lo:hi]
        abits = amax_bits(xb)
        bad = abits >= inf_pattern
        amax = abits.view(arr.dtype)
        xexp = mx_scale_exponent(np.where(bad, 0.0, amax), f, mxr.rule)
        factor = np.ldexp(np.ones(hi - lo, arr.dtype), (-xexp).astype(np.int32))
        with np.errstate(over="ignore", invalid="ignore"):  # Inf/NaN blocks, zeroed below
            scaled = np.multiply(xb, factor[:, None], out=scratch(xb.shape, arr.dtype))
        if bad.any():
            scaled[bad] = 0
        codes[lo:hi] = cast_elements(scaled, f, conv.mx_element_cast, pol, None if rngs is None else rngs[ci])
        sc = (xexp + E8M0_BIAS).astype(np.uint8)
        sc[bad] = E8M0_NAN_CODE
        scale_codes[lo:hi] = sc

    multipliers = mx_element_multipliers(mxr.element_scaling)

    def work_float32(ci: int, lo: int, hi: int) -> None:
        xb = blocks[lo:hi]
        amax = amax_bits(xb, ignore_nan=conv.mx_amax_nan.value == "ignore").view(np.float32)
        sc = mx_scale_codes(amax, f, mxr)
        r = multipliers[sc]
        if mxr.element_scaling is MXElementScaling.RECIPROCAL_ONE_AT_ZERO:
            nan_scale = sc == E8M0_NAN_CODE
            r[nan_scale] = amax[nan_scale]  # torchao multiplies by the NaN descale itself
        scaled = scale_by_multiplier(xb, r, out=scratch(xb.shape, np.dtype(np.float32)))
        codes[lo:hi] = cast_elements(scaled, f, conv.mx_element_cast)
        scale_codes[lo:hi] = sc

    inf_pattern = inf_bits(arr.dtype)
    if not _compiled(blocks, f, pol, conv, mxr, rngs, codes, scale_codes):
        map_chunks(nb, work_exact if exact else work_float32)
    return MXTensor(g.from_groups(codes, shape), scale_layout(scale_codes, g, shape), f, bs, axis, mxr.rule, pol,
                    str(arr.dtype), conv.name)


def _compiled(blocks: np.ndarray, f: FloatFormat, pol: CastPolicy, conv: BlockConvention, mxr: MXRule,
              rngs: list[np.random.Generator] | None, codes: np.ndarray, scale_codes: np.ndarray) -> bool:
    """Whether the compiled twin wrote `codes` and `scale_codes` (the codec switch selects the
    compiled path and it has a kernel for the case); False: run the numpy reference."""
    n = blocks.size
    if codec.compiled_kernels_for(n) is None or n == 0:
        return False
    from ._mx_kernels import quantize_mx_compiled  # imports numba: only on the compiled path

    return quantize_mx_compiled(blocks, f, pol, conv, mxr, rngs, codec.threads_for(n), codes, scale_codes)


def mx_scale_rule_table(amax: float = 957.0, elem_format: str = "E4M3FN") -> list[dict[str, Any]]:
    """For one block whose largest element is `amax`: per rule, the exponent X, the scale 2^X and
    what `amax` decodes as (the worked example: E4M3, 957 → 896 under floor, 960 under rceil)."""
    if isinstance(amax, bool) or not isinstance(amax, (int, float, np.integer, np.floating)):
        raise TypeError(f"amax must be a real number, got {amax!r:.40}")
    rows = []
    for rule in ScaleRule:
        t = quantize_mx(np.array([amax], np.float64), elem_format, 1, rule.value)
        rows.append({"rule": rule.value, "scale_exponent": int(t.scale_exponents[0]),
                     "decode_scale": 2.0 ** int(t.scale_exponents[0]),
                     "decoded_amax": float(t.dequantize()[0])})
    return rows

