"""Scaled casts: each group of elements multiplied by its encode scale and cast to the element format,
with the scales kept beside the codes (`ScaledTensor`), and their error against the source.

Scales follow `simulations.scaling.scales` (`encode_scale = F / amax / 2^margin`, its inverse the decode
scale; the safe scale 1.0 for a zero or non-finite amax); groups follow `simulations.scaling.granularity`.
Casts go through `formats.encode` (element policy default: round-to-nearest-even, saturating, the
OCP reading); the scaled value is formed in float64 from a float32 encode scale, which is exact, so
each element is rounded once. Without a scale format the encode scale is stored as float32 (as
Transformer Engine does) and `decode_scale = 1 / encode_scale`; with one (E8M0, E4M3FN, BF16 …) the
decode scale is itself cast (rounded up by default, so no group clips) and the elements are divided
by the decoded scale. Error metrics: `simulations.scaling.metrics`. Source: NVIDIA Transformer Engine FP8
primer; OCP Microscaling Formats v1.0 §6 (block scaling).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from lowprec import formats
from lowprec.formats import CastPolicy, FloatFormat, Format

from .granularity import Granularity, parse_granularity
from .metrics import ErrorReport, clips, error_metrics
from .scales import amax_array, check_margin, decode_scale, encode_scale

__all__ = ["ScaledTensor", "clipped_mask", "default_element_policy", "error_report", "group_scales",
           "quantize_scaled"]


def default_element_policy(fmt: str | Format) -> CastPolicy:
    """Round to nearest even, saturate (the OCP reading; integer grids saturate too)."""
    return formats.policy_for("ocp", fmt)


@dataclass
class ScaledTensor:
    """Codes of a scaled cast with their scales. `encode_scales`/`decode_scales`/`scale_codes` are
    shaped as `granularity.grid_shape(shape)`."""

    codes: np.ndarray  # element codes, same shape as the input
    encode_scales: np.ndarray  # factor applied before the cast, per group (float64)
    decode_scales: np.ndarray  # factor applied to decoded codes, per group (float64)
    scale_codes: np.ndarray | None  # codes of the decode scales in scale_format, or None (FP32 scales)
    fmt: Format
    scale_format: Format | None
    granularity: Granularity
    shape: tuple[int, ...]
    margin: int
    policy: CastPolicy
    source_dtype: str = "float32"

    @property
    def n_groups(self) -> int:
        return int(np.prod(self.encode_scales.shape, dtype=np.int64)) if self.encode_scales.ndim else 1

    @property
    def layout(self) -> dict[str, Any]:
        """How scales map to elements: the granularity, the grid of scales and the group order."""
        return {"granularity": self.granularity.to_dict(), "grid_shape": list(self.encode_scales.shape),
                "order": "row-major over grid_shape; 1-D blocks: block axis last"}

    @property
    def scale_bits(self) -> int:
        """Bits of one stored scale: the scale format's width, or 32 for an FP32 scale."""
        return self.scale_format.bits if self.scale_format is not None else 32

    @property
    def bits_per_element(self) -> float:
        """Element bits plus the scales' bits amortised over the elements."""
        n = int(np.prod(self.shape, dtype=np.int64))
        return self.fmt.bits + (self.scale_bits * self.n_groups / n if n else 0.0)

    def dequantize(self) -> np.ndarray:
        """decode(codes) × decode_scale per group, in float64 (exact for every scale here)."""
        g = self.granularity
        vals = g.to_groups(formats.decode(self.codes, self.fmt).astype(np.float64))
        out = vals * self.decode_scales.reshape(-1, 1)
        return g.from_groups(out, self.shape)

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": self.fmt.name,
            "scale_format": self.scale_format.name if self.scale_format is not None else "FP32",
            "layout": self.layout,
            "shape": list(self.shape),
            "margin": self.margin,
            "policy": self.policy.to_dict(),
            "bits_per_element": self.bits_per_element,
            "codes": self.codes.astype(np.int64).tolist(),
            "encode_scales": self.encode_scales,
            "decode_scales": self.decode_scales,
            "scale_codes": None if self.scale_codes is None else self.scale_codes.astype(np.int64).tolist(),
        }

    def element_decode_scales(self) -> np.ndarray:
        """The decode scale each element is multiplied by, in the input's shape (float64)."""
        g = self.granularity
        n = int(np.prod(self.shape, dtype=np.int64))
        per_group = np.repeat(self.decode_scales.reshape(-1, 1), n // max(self.n_groups, 1), axis=1)
        return g.from_groups(per_group, self.shape)


_F32_MAX = float(np.finfo(np.float32).max)
_F32_TINY = float(np.finfo(np.float32).tiny)


def quantize_scaled(
    x: Any,
    fmt: str | Format,
    granularity: str | Granularity = "tensor",
    policy: CastPolicy | None = None,
    *,
    scale_format: str | Format | None = None,
    scale_rounding: str = "up",
    margin: int = 0,
    amax: Any = None,
    rng: np.random.Generator | None = None,
) -> ScaledTensor:
    """Scale each group by `encode_scale = F / amax_group / 2^margin` and cast to `fmt`.

    `amax` overrides the measured per-group amax (a scalar or an array of `grid_shape`): delayed
    scaling and the fixed-scale study use it. Without `scale_format` the encode scale is stored as
    float32 (clamped to the float32 normal range) and decode_scale = 1 / encode_scale; with it, the
    decode scale `amax · 2^margin / F` is cast to `scale_format` with `scale_rounding` (default 'up':
    the group's amax never exceeds F after scaling) and elements are divided by the decoded scale.
    """
    f = formats.get_format(fmt)
    g = parse_granularity(granularity)
    m = check_margin(margin)
    pol = default_element_policy(f) if policy is None else policy
    arr = formats.as_float_array(x)
    shape = tuple(arr.shape)
    grid = g.grid_shape(shape)
    groups = g.to_groups(arr).astype(np.float64)
    if amax is None:
        with np.errstate(invalid="ignore"):
            am = np.abs(groups).max(axis=1) if groups.shape[1] else np.zeros(groups.shape[0])
    else:
        am = np.broadcast_to(amax_array(amax), grid).reshape(-1).astype(np.float64)
    sf = None if scale_format is None else formats.get_format(scale_format)
    enc, dec, scale_codes = group_scales(am, f, m, sf, scale_rounding)
    if sf is None:
        scaled = groups * enc[:, None]
    else:
        scaled = groups / dec[:, None]
    if scale_codes is not None:
        scale_codes = scale_codes.reshape(grid)
    codes = formats.encode(g.from_groups(scaled, shape), f, pol, rng=rng)
    return ScaledTensor(codes, enc.reshape(grid), dec.reshape(grid), scale_codes, f, sf, g, shape, m, pol,
                        str(arr.dtype))



def group_scales(am: np.ndarray, f: Format, margin: int, scale_format: Format | None,
                 scale_rounding: str = "up") -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """(encode scales, decode scales, scale codes or None) of groups with amaxes `am` (float64, one
    per group), as `quantize_scaled` sets them: without a scale format the encode scale F / amax /
    2^margin as float32 (clamped to the float32 normal range) and its exact reciprocal; with one, the
    decode scale amax · 2^margin / F cast to it (`scale_rounding`) and its reciprocal. An element is
    then cast from x · encode scale (no scale format) or x / decode scale (a scale format)."""
    if scale_format is None:
        enc = np.asarray(encode_scale(am, f, margin), dtype=np.float64).reshape(-1)
        enc = np.clip(enc, _F32_TINY, _F32_MAX).astype(np.float32).astype(np.float64)
        return enc, 1.0 / enc, None
    sf = scale_format
    want = np.asarray(decode_scale(am, f, margin), dtype=np.float64).reshape(-1)
    spol = formats.CastPolicy(rounding=formats.Rounding(scale_rounding), overflow=formats.Overflow.SATURATE)
    if isinstance(sf, FloatFormat) and not sf.subnormals:  # E8M0: unsigned, no zero
        spol = spol.with_(unsigned_zero=formats.UnsignedZero.SMALLEST)
    scale_codes = formats.encode(want, sf, spol)
    dec = formats.decode(scale_codes, sf).astype(np.float64)
    if np.any(dec <= 0):
        bad = float(want[dec <= 0][0])
        raise ValueError(
            f"decode scale {bad!r} rounds to zero in scale format {sf.name}; use a wider scale "
            f"format or scale_rounding='up'"
        )
    return 1.0 / dec, dec, scale_codes


def clipped_mask(x: Any, st: ScaledTensor) -> np.ndarray:
    """Elements whose scaled magnitude |x · encode_scale| the cast clips (see `clips`)."""
    if not isinstance(st, ScaledTensor):
        raise TypeError(f"st must be a ScaledTensor (from quantize_scaled), got {type(st).__name__}")
    g = st.granularity
    xg = g.to_groups(np.asarray(x, dtype=np.float64))
    if st.scale_format is None:
        scaled = np.abs(xg * st.encode_scales.reshape(-1, 1))
    else:
        scaled = np.abs(xg / st.decode_scales.reshape(-1, 1))
    return g.from_groups(clips(scaled, st.fmt), st.shape)


def error_report(x: Any, st: ScaledTensor) -> ErrorReport:
    """Error metrics of `st.dequantize()` against `x`, grouped as `st` was scaled."""
    if not isinstance(st, ScaledTensor):
        raise TypeError(f"st must be a ScaledTensor (from quantize_scaled), got {type(st).__name__}")
    return error_metrics(x, st.dequantize(), clipped_mask(x, st), st.granularity)

