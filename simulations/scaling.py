"""Scales, grouping granularities and scaled casts, with error reports and the grouping studies.

Conventions. A scale is never a bare number here: `decode_scale = amax · 2^margin / F` multiplies the
decoded codes back to real values, and `encode_scale = F / amax / 2^margin` multiplies the input
before the cast (Transformer Engine stores the latter as `scale` and its reciprocal as `scale_inv`),
with F the largest finite value of the element format. A zero, negative-zero or non-finite amax has no
information to size a scale from, so it gets the *safe scale* 1.0 (the identity) for both: a zero group
casts to zeros under any scale, and a NaN/Inf group goes through the element cast policy unchanged.
Granularities: per-tensor, per-row (each slice along the last axis, i.e. per token), per-column (each
slice along the leading axes, i.e. per channel), 1-D blocks of k along a named axis, and 2-D tiles
(r × c) of a 2-D array. A shape that a block does not divide raises ValueError (no implicit padding).
Casts go through `formats.encode` (element policy default: round-to-nearest-even, saturating, the
OCP reading); the scaled value is formed in float64 from a float32 encode scale, which is exact, so
each element is rounded once. Without a scale format the encode scale is stored as float32 (as TE does)
and `decode_scale = 1 / encode_scale`; with one (E8M0, E4M3FN, BF16 …) the decode scale is itself cast
(rounded up by default, so no group clips) and the elements are divided by the decoded scale.
Error metrics (per group and overall): RMS relative error ‖x̂ − x‖₂ / ‖x‖₂, max |x̂ − x|, SQNR
10·log10(Σx² / Σ(x̂ − x)²) dB, clipped fraction (|x · encode_scale| beyond the rounding bin of F
under nearest-even, i.e. saturated or overflowed rather than rounded; see `clips`) and flushed fraction (x ≠ 0 but x̂ = 0). Sources: NVIDIA Transformer Engine FP8 primer (delayed/current
scaling, margin); OCP Microscaling Formats v1.0 §6 (block scaling).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Callable, Sequence

import numpy as np

from lowprec import formats
from lowprec.formats import CastPolicy, Format, FloatFormat

from ._io import ArgumentParser, add_json_argument, run_main

ProgressFn = Callable[[int, int], None]

GRANULARITY_KINDS = ("tensor", "row", "column", "block", "block2d")


# ------------------------------------------------------------------------------------------------
# scales
# ------------------------------------------------------------------------------------------------


def _check_margin(margin: Any) -> int:
    if isinstance(margin, bool) or not isinstance(margin, (int, np.integer)):
        raise TypeError(f"margin must be an integer number of binades, got {margin!r}")
    if margin < 0:
        raise ValueError(f"margin={margin} is negative; allowed: 0, 1, 2, …")
    return int(margin)


def _amax_array(amax: Any) -> np.ndarray:
    a = np.asarray(amax, dtype=np.float64)
    if np.any(a < 0):
        bad = a[a < 0].reshape(-1)[0]
        raise ValueError(f"amax={bad!r} is negative; an amax is a maximum magnitude (≥ 0)")
    return a


def usable_amax(amax: Any) -> np.ndarray:
    """True where an amax can size a scale (finite and > 0); elsewhere the safe scale 1.0 applies."""
    a = _amax_array(amax)
    return np.isfinite(a) & (a > 0)


def encode_scale(amax: Any, fmt: str | Format, margin: int = 0) -> Any:
    """`F / amax / 2^margin` (float64), the factor applied before the cast; 1.0 where amax is 0 or
    not finite. Scalar in, float out; array in, array out."""
    f = formats.get_format(fmt)
    m = _check_margin(margin)
    a = _amax_array(amax)
    ok = np.isfinite(a) & (a > 0)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        s = np.where(ok, f.max / np.where(ok, a, 1.0) / 2.0**m, 1.0)
    return float(s) if s.ndim == 0 else s


def decode_scale(amax: Any, fmt: str | Format, margin: int = 0) -> Any:
    """`amax · 2^margin / F` (float64), the factor applied to decoded codes; 1.0 where amax is 0 or
    not finite. The reciprocal of `encode_scale`."""
    f = formats.get_format(fmt)
    m = _check_margin(margin)
    a = _amax_array(amax)
    ok = np.isfinite(a) & (a > 0)
    s = np.where(ok, a * 2.0**m / f.max, 1.0)
    return float(s) if s.ndim == 0 else s


# ------------------------------------------------------------------------------------------------
# granularities
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Granularity:
    """How elements share a scale.

    kind: 'tensor' (one group), 'row' (each slice along the last axis: per token), 'column' (each
    slice along the leading axes: per channel), 'block' (runs of `block[0]` consecutive elements
    along `axis`), 'block2d' (tiles of block[0] × block[1] of a 2-D array).
    """

    kind: str
    block: tuple[int, ...] = ()
    axis: int = -1

    def __post_init__(self) -> None:
        if self.kind not in GRANULARITY_KINDS:
            raise ValueError(f"granularity kind {self.kind!r} is not one of {', '.join(GRANULARITY_KINDS)}")
        want = {"block": 1, "block2d": 2}.get(self.kind, 0)
        if len(self.block) != want:
            raise ValueError(f"granularity {self.kind!r} needs {want} block size(s), got {self.block!r}")
        for b in self.block:
            if isinstance(b, bool) or not isinstance(b, (int, np.integer)) or b < 1:
                raise ValueError(f"block size {b!r} must be a positive integer")

    @property
    def label(self) -> str:
        if self.kind == "block":
            return f"block{self.block[0]}" + ("" if self.axis == -1 else f"@axis{self.axis}")
        if self.kind == "block2d":
            return f"block{self.block[0]}x{self.block[1]}"
        return self.kind

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "block": list(self.block), "axis": self.axis, "label": self.label}

    # ---- grouping -------------------------------------------------------------------------------
    def _check(self, shape: tuple[int, ...]) -> None:
        nd = len(shape)
        if self.kind in ("row", "column") and nd < 1:
            raise ValueError(f"granularity {self.kind!r} needs an array with at least one axis")
        if self.kind == "block":
            if nd < 1:
                raise ValueError("block granularity needs an array with at least one axis")
            if not -nd <= self.axis < nd:
                raise ValueError(f"axis {self.axis} is out of range for an array of {nd} axes")
            n = shape[self.axis]
            if n % self.block[0]:
                raise ValueError(
                    f"block size {self.block[0]} does not divide axis {self.axis} of length {n} "
                    f"(shape {shape}); pad the array or pick a block size that divides it"
                )
        if self.kind == "block2d":
            if nd != 2:
                raise ValueError(f"2-D blocks need a 2-D array, got shape {shape}")
            r, c = self.block
            if shape[0] % r or shape[1] % c:
                raise ValueError(f"{r}×{c} tiles do not divide shape {shape}; pad it or pick tiles that divide it")

    def grid_shape(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        """Shape of the array of scales (one per group), in the layout `to_groups` orders them."""
        self._check(shape)
        if self.kind == "tensor":
            return ()
        if self.kind == "row":
            return shape[:-1] if len(shape) > 1 else (1,)
        if self.kind == "column":
            return (shape[-1],)
        if self.kind == "block":
            ax = self.axis % len(shape)
            return tuple(s for i, s in enumerate(shape) if i != ax) + (shape[ax] // self.block[0],)
        r, c = self.block
        return (shape[0] // r, shape[1] // c)

    def to_groups(self, x: np.ndarray) -> np.ndarray:
        """The elements as a (n_groups, group_size) array; groups in the row-major order of
        `grid_shape` (for 1-D blocks: the block axis moved last)."""
        shape = x.shape
        self._check(shape)
        if self.kind == "tensor":
            return x.reshape(1, -1)
        if self.kind == "row":
            return x.reshape(-1, shape[-1]) if x.ndim else x.reshape(1, 1)
        if self.kind == "column":
            return np.ascontiguousarray(x.reshape(-1, shape[-1]).T)
        if self.kind == "block":
            moved = np.moveaxis(x, self.axis, -1)
            return np.ascontiguousarray(moved).reshape(-1, self.block[0])
        r, c = self.block
        m, n = shape
        return np.ascontiguousarray(x.reshape(m // r, r, n // c, c).transpose(0, 2, 1, 3)).reshape(-1, r * c)

    def from_groups(self, g: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
        """Inverse of `to_groups`: the (n_groups, group_size) array back in `shape`."""
        self._check(shape)
        if self.kind in ("tensor", "row"):
            return g.reshape(shape)
        if self.kind == "column":
            return np.ascontiguousarray(g.T).reshape(shape)
        if self.kind == "block":
            ax = self.axis % len(shape)
            moved_shape = tuple(s for i, s in enumerate(shape) if i != ax) + (shape[ax],)
            return np.ascontiguousarray(np.moveaxis(g.reshape(moved_shape), -1, ax))
        r, c = self.block
        m, n = shape
        return np.ascontiguousarray(g.reshape(m // r, n // c, r, c).transpose(0, 2, 1, 3)).reshape(shape)


def parse_granularity(spec: str | Granularity) -> Granularity:
    """'tensor', 'row' (alias 'token'), 'column' (alias 'channel'), 'block32' (1-D along the last
    axis), 'block32@0' (along axis 0), 'block16x16' (2-D tiles)."""
    if isinstance(spec, Granularity):
        return spec
    if not isinstance(spec, str):
        raise TypeError(f"granularity must be a string or Granularity, got {type(spec).__name__}")
    s = spec.strip().lower().replace("per-", "").replace("per_", "")
    alias = {"tensor": "tensor", "row": "row", "token": "row", "column": "column", "channel": "column",
             "col": "column"}
    if s in alias:
        return Granularity(alias[s])
    allowed = "tensor, row (token), column (channel), blockK, blockK@AXIS, blockRxC"
    if s.startswith("block"):
        body = s[5:].lstrip(":")
        axis = -1
        if "@" in body:
            body, ax = body.split("@", 1)
            ax = ax.replace("axis", "")
            try:
                axis = int(ax)
            except ValueError:
                raise ValueError(f"granularity {spec!r}: axis {ax!r} is not an integer") from None
        try:
            if "x" in body:
                r, c = body.split("x", 1)
                return Granularity("block2d", (int(r), int(c)))
            return Granularity("block", (int(body),), axis)
        except ValueError as exc:
            if "block size" in str(exc):
                raise
            raise ValueError(f"granularity {spec!r} is not one of: {allowed}") from None
    raise ValueError(f"granularity {spec!r} is not one of: {allowed}")


def group_amax(x: Any, granularity: str | Granularity) -> np.ndarray:
    """max |x| per group, shaped as `Granularity.grid_shape`; NaN where a group holds a NaN."""
    g = parse_granularity(granularity)
    arr = formats.as_float_array(x)
    groups = g.to_groups(arr)
    with np.errstate(invalid="ignore"):
        am = np.abs(groups).max(axis=1) if groups.shape[1] else np.zeros(groups.shape[0])
    return am.astype(np.float64).reshape(g.grid_shape(arr.shape))


# ------------------------------------------------------------------------------------------------
# scaled casts
# ------------------------------------------------------------------------------------------------


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
            "encode_scales": _json_list(self.encode_scales),
            "decode_scales": _json_list(self.decode_scales),
            "scale_codes": None if self.scale_codes is None else self.scale_codes.astype(np.int64).tolist(),
        }


def _json_float(v: float) -> float | str:
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return float(v)


def _json_list(a: np.ndarray) -> Any:
    arr = np.asarray(a, dtype=np.float64)
    if arr.ndim == 0:
        return _json_float(float(arr))
    return [_json_list(v) for v in arr] if arr.ndim > 1 else [_json_float(float(v)) for v in arr]


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
    m = _check_margin(margin)
    pol = default_element_policy(f) if policy is None else policy
    arr = formats.as_float_array(x)
    shape = tuple(arr.shape)
    grid = g.grid_shape(shape)
    groups = g.to_groups(arr).astype(np.float64)
    if amax is None:
        with np.errstate(invalid="ignore"):
            am = np.abs(groups).max(axis=1) if groups.shape[1] else np.zeros(groups.shape[0])
    else:
        am = np.broadcast_to(_amax_array(amax), grid).reshape(-1).astype(np.float64)
    sf: Format | None = None
    scale_codes = None
    if scale_format is None:
        enc = np.asarray(encode_scale(am, f, m), dtype=np.float64).reshape(-1)
        enc = np.clip(enc, _F32_TINY, _F32_MAX).astype(np.float32).astype(np.float64)
        dec = 1.0 / enc
        scaled = groups * enc[:, None]
    else:
        sf = formats.get_format(scale_format)
        want = np.asarray(decode_scale(am, f, m), dtype=np.float64).reshape(-1)
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
        enc = 1.0 / dec
        scaled = groups / dec[:, None]
        scale_codes = scale_codes.reshape(grid)
    codes = formats.encode(g.from_groups(scaled, shape), f, pol, rng=rng)
    return ScaledTensor(codes, enc.reshape(grid), dec.reshape(grid), scale_codes, f, sf, g, shape, m, pol,
                        str(arr.dtype))


# ------------------------------------------------------------------------------------------------
# error reports
# ------------------------------------------------------------------------------------------------


@dataclass
class ErrorReport:
    """Error of x̂ against x, overall and per group (per-group arrays shaped as the scale grid)."""

    rms_rel_error: float
    max_abs_error: float
    sqnr_db: float
    clipped_fraction: float
    flushed_fraction: float
    group_rms_rel_error: np.ndarray
    group_max_abs_error: np.ndarray
    group_sqnr_db: np.ndarray
    group_clipped_fraction: np.ndarray
    group_flushed_fraction: np.ndarray

    def to_dict(self) -> dict[str, Any]:
        return {
            "rms_rel_error": _json_float(self.rms_rel_error),
            "max_abs_error": _json_float(self.max_abs_error),
            "sqnr_db": _json_float(self.sqnr_db),
            "clipped_fraction": self.clipped_fraction,
            "flushed_fraction": self.flushed_fraction,
            "groups": {
                "rms_rel_error": _json_list(self.group_rms_rel_error),
                "max_abs_error": _json_list(self.group_max_abs_error),
                "sqnr_db": _json_list(self.group_sqnr_db),
                "clipped_fraction": _json_list(self.group_clipped_fraction),
                "flushed_fraction": _json_list(self.group_flushed_fraction),
            },
        }


def _ratio_metrics(sig: np.ndarray, err: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """RMS relative error sqrt(err/sig) and SQNR 10 log10(sig/err); 0 error gives 0 and +inf."""
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.where(err == 0, 0.0, np.sqrt(err / sig))
        sq = np.where(err == 0, np.inf, 10.0 * np.log10(sig / err))
    return rel, sq


def error_metrics(x: Any, x_hat: Any, clipped: Any = None, groups: Granularity | str = "tensor") -> ErrorReport:
    """Error metrics of `x_hat` against `x` (see the module docstring). `clipped` is a boolean mask of
    saturated elements (default: none); groups give the per-group breakdown."""
    g = parse_granularity(groups)
    xa = np.asarray(x, dtype=np.float64)
    xh = np.asarray(x_hat, dtype=np.float64)
    if xa.shape != xh.shape:
        raise ValueError(f"x has shape {xa.shape} but x_hat has shape {xh.shape}")
    grid = g.grid_shape(xa.shape)
    xg = g.to_groups(xa)
    hg = g.to_groups(xh)
    cg = g.to_groups(np.zeros(xa.shape, bool) if clipped is None else np.asarray(clipped, bool))
    with np.errstate(invalid="ignore", over="ignore"):
        d = hg - xg
        d2 = d * d
        sig = (xg * xg).sum(axis=1)
        err = d2.sum(axis=1)
        absd = np.abs(d)
    flushed = (xg != 0) & (hg == 0)
    n = xg.shape[1] if xg.size else 1
    rel, sq = _ratio_metrics(sig, err)
    tot_rel, tot_sq = _ratio_metrics(np.array([sig.sum()]), np.array([err.sum()]))
    with np.errstate(invalid="ignore"):
        gmax = absd.max(axis=1) if xg.shape[1] else np.zeros(xg.shape[0])
    return ErrorReport(
        rms_rel_error=float(tot_rel[0]),
        max_abs_error=float(gmax.max()) if gmax.size else 0.0,
        sqnr_db=float(tot_sq[0]),
        clipped_fraction=float(cg.mean()) if cg.size else 0.0,
        flushed_fraction=float(flushed.mean()) if flushed.size else 0.0,
        group_rms_rel_error=rel.reshape(grid),
        group_max_abs_error=gmax.reshape(grid),
        group_sqnr_db=sq.reshape(grid),
        group_clipped_fraction=(cg.sum(axis=1) / n).reshape(grid),
        group_flushed_fraction=(flushed.sum(axis=1) / n).reshape(grid),
    )


@lru_cache(maxsize=None)
def overflow_threshold(fmt: Format) -> tuple[float, bool]:
    """Upper edge of the largest finite value's nearest-even rounding bin (F + half the top gap)
    and whether the edge itself overflows (it does when F's code is odd: the tie goes up)."""
    max_code = int(formats.encode(np.array([fmt.max]), fmt, formats.CastPolicy(overflow=formats.Overflow.SATURATE))[0])
    b = formats.rounding_bin(fmt, max_code, formats.CastPolicy(overflow=formats.Overflow.NONFINITE))
    return float(b.hi), not b.hi_closed


def clips(scaled_magnitude: np.ndarray, fmt: Format) -> np.ndarray:
    """True where a scaled magnitude lies beyond F's rounding bin: the cast saturates (or
    overflows) it instead of rounding it; NaN is never clipped, Inf always is."""
    edge, edge_overflows = overflow_threshold(fmt)
    with np.errstate(invalid="ignore"):
        return (scaled_magnitude > edge) | ((scaled_magnitude == edge) if edge_overflows else False)


def clipped_mask(x: Any, st: ScaledTensor) -> np.ndarray:
    """Elements whose scaled magnitude |x · encode_scale| the cast clips (see `clips`)."""
    g = st.granularity
    xg = g.to_groups(np.asarray(x, dtype=np.float64))
    if st.scale_format is None:
        scaled = np.abs(xg * st.encode_scales.reshape(-1, 1))
    else:
        scaled = np.abs(xg / st.decode_scales.reshape(-1, 1))
    return g.from_groups(clips(scaled, st.fmt), st.shape)


def error_report(x: Any, st: ScaledTensor) -> ErrorReport:
    """Error metrics of `st.dequantize()` against `x`, grouped as `st` was scaled."""
    return error_metrics(x, st.dequantize(), clipped_mask(x, st), st.granularity)


# ------------------------------------------------------------------------------------------------
# studies
# ------------------------------------------------------------------------------------------------


def _progress(progress: ProgressFn | None, done: int, total: int) -> None:
    if progress is not None:
        progress(done, total)


@dataclass
class OutlierEntry:
    granularity: str
    bits_per_element: float
    report: ErrorReport  # every element, the outlier included
    outlier_group_rms_rel_error: float  # the ordinary elements that share the outlier's scale
    other_groups_rms_rel_error: float  # median over the other groups (NaN when there is one group)
    ordinary_rms_rel_error: float  # every element but the outlier
    groups_affected_fraction: float  # groups whose scale the outlier set

    def to_dict(self) -> dict[str, Any]:
        return {
            "granularity": self.granularity,
            "bits_per_element": self.bits_per_element,
            "outlier_group_rms_rel_error": _json_float(self.outlier_group_rms_rel_error),
            "other_groups_rms_rel_error": _json_float(self.other_groups_rms_rel_error),
            "ordinary_rms_rel_error": _json_float(self.ordinary_rms_rel_error),
            "groups_affected_fraction": self.groups_affected_fraction,
            "report": self.report.to_dict(),
        }


@dataclass
class OutlierStudy:
    """One large value in an otherwise Gaussian tensor, quantized under several granularities."""

    fmt: str
    shape: tuple[int, ...]
    outlier_index: tuple[int, ...]
    outlier_value: float
    seed: int
    baseline_rms_rel_error: float  # per-tensor scaling of the same tensor without the outlier
    entries: list[OutlierEntry] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "study": "outlier",
            "format": self.fmt,
            "shape": list(self.shape),
            "outlier_index": list(self.outlier_index),
            "outlier_value": self.outlier_value,
            "seed": self.seed,
            "baseline_rms_rel_error": self.baseline_rms_rel_error,
            "entries": [e.to_dict() for e in self.entries],
        }


DEFAULT_GRANULARITIES = ("tensor", "row", "column", "block32", "block16x16")


def outlier_study(
    fmt: str | Format = "E4M3FN",
    shape: Sequence[int] = (64, 64),
    outlier_value: float = 1000.0,
    outlier_index: Sequence[int] | None = None,
    granularities: Sequence[str] = DEFAULT_GRANULARITIES,
    seed: int = 0,
    progress: ProgressFn | None = None,
) -> OutlierStudy:
    """Standard-normal tensor with x[outlier_index] = outlier_value, quantized per granularity.

    For each granularity: overall error, the error of the ordinary elements that share the
    outlier's scale against the median of the other groups (which groups lose resolution and by how
    much), the error of all ordinary elements, and the fraction of groups the outlier sizes."""
    f = formats.get_format(fmt)
    shp = tuple(int(s) for s in shape)
    if len(shp) != 2 or min(shp) < 1:
        raise ValueError(f"outlier study needs a 2-D shape of positive sizes, got {shape!r}")
    if not math.isfinite(outlier_value):
        raise ValueError(f"outlier_value must be finite, got {outlier_value!r}")
    x = np.random.default_rng(seed).standard_normal(shp).astype(np.float32)
    base = error_report(x, quantize_scaled(x, f, "tensor")).rms_rel_error
    idx = tuple(int(i) for i in outlier_index) if outlier_index is not None else (shp[0] // 3, shp[1] // 5)
    if len(idx) != 2 or not all(0 <= i < s for i, s in zip(idx, shp)):
        raise ValueError(f"outlier_index {outlier_index!r} is outside shape {shp}")
    x[idx] = np.float32(outlier_value)
    study = OutlierStudy(f.name, shp, idx, float(np.float32(outlier_value)), seed, base)
    marker = np.zeros(shp, bool)
    marker[idx] = True
    for i, spec in enumerate(granularities):
        g = parse_granularity(spec)
        st = quantize_scaled(x, f, g)
        x_hat = st.dequantize()
        rep = error_report(x, st)
        in_group = g.to_groups(marker).any(axis=1)
        xg, hg, mg = g.to_groups(x.astype(np.float64)), g.to_groups(x_hat), g.to_groups(marker)
        own = ~mg[in_group]
        rel = rep.group_rms_rel_error.reshape(-1)
        others = rel[~in_group]
        study.entries.append(OutlierEntry(
            g.label, st.bits_per_element, rep,
            error_metrics(xg[in_group][own], hg[in_group][own]).rms_rel_error,
            float(np.median(others)) if others.size else float("nan"),
            error_metrics(x[~marker], x_hat[~marker]).rms_rel_error,
            float(in_group.mean()),
        ))
        _progress(progress, i + 1, len(granularities))
    return study


@dataclass
class ScaleChoiceStudy:
    """Error of a fixed encode scale against the amax scale as the tensor's magnitude varies."""

    formats: list[str]
    magnitudes: np.ndarray
    fixed_encode_scale: float
    n: int
    seed: int
    rms_rel_error_fixed: dict[str, np.ndarray]
    rms_rel_error_amax: dict[str, np.ndarray]
    clipped_fixed: dict[str, np.ndarray]
    flushed_fixed: dict[str, np.ndarray]

    def to_dict(self) -> dict[str, Any]:
        return {
            "study": "scale_choice",
            "formats": self.formats,
            "magnitudes": _json_list(self.magnitudes),
            "fixed_encode_scale": self.fixed_encode_scale,
            "n": self.n,
            "seed": self.seed,
            "rms_rel_error_fixed": {k: _json_list(v) for k, v in self.rms_rel_error_fixed.items()},
            "rms_rel_error_amax": {k: _json_list(v) for k, v in self.rms_rel_error_amax.items()},
            "clipped_fixed": {k: _json_list(v) for k, v in self.clipped_fixed.items()},
            "flushed_fixed": {k: _json_list(v) for k, v in self.flushed_fixed.items()},
        }


def scale_choice_study(
    fmts: Sequence[str] = ("E4M3FN", "E5M2"),
    magnitudes: Sequence[float] | None = None,
    fixed_encode_scale: float = 1.0,
    n: int = 4096,
    seed: int = 0,
    progress: ProgressFn | None = None,
) -> ScaleChoiceStudy:
    """x = magnitude · N(0, 1) (the same draw for every magnitude), cast per tensor with the fixed
    encode scale and with the amax scale; RMS relative error, clipped and flushed fractions."""
    mags = np.logspace(-12, 8, 41) if magnitudes is None else np.asarray(magnitudes, dtype=np.float64)
    if mags.ndim != 1 or mags.size == 0 or np.any(~np.isfinite(mags)) or np.any(mags <= 0):
        raise ValueError("magnitudes must be a non-empty list of positive finite numbers")
    if not (math.isfinite(fixed_encode_scale) and fixed_encode_scale > 0):
        raise ValueError(f"fixed_encode_scale must be positive and finite, got {fixed_encode_scale!r}")
    if n < 1:
        raise ValueError(f"n={n} must be at least 1")
    base = np.random.default_rng(seed).standard_normal(n)
    out_f: dict[str, np.ndarray] = {}
    out_a: dict[str, np.ndarray] = {}
    clip: dict[str, np.ndarray] = {}
    flush: dict[str, np.ndarray] = {}
    total = len(fmts) * mags.size
    done = 0
    for name in fmts:
        f = formats.get_format(name)
        fixed_amax = f.max / fixed_encode_scale  # the amax for which F / amax = fixed scale
        rf, ra, cf, ff = (np.empty(mags.size) for _ in range(4))
        for i, mag in enumerate(mags):
            x = (base * mag).astype(np.float32)
            st = quantize_scaled(x, f, "tensor", amax=fixed_amax)
            rep = error_report(x, st)
            rf[i], cf[i], ff[i] = rep.rms_rel_error, rep.clipped_fraction, rep.flushed_fraction
            ra[i] = error_report(x, quantize_scaled(x, f, "tensor")).rms_rel_error
            done += 1
            _progress(progress, done, total)
        key = formats.get_format(name).name
        out_f[key], out_a[key], clip[key], flush[key] = rf, ra, cf, ff
    return ScaleChoiceStudy([formats.get_format(n_).name for n_ in fmts], mags, float(fixed_encode_scale),
                            n, seed, out_f, out_a, clip, flush)


@dataclass
class TransposeStudy:
    """Column-grouped view: quantized from the source vs re-quantized from row-grouped rounded data."""

    fmt: str
    scale_format: str
    block: int
    shape: tuple[int, int]
    seed: int
    rms_rel_error_row: float  # row-grouped cast of the source
    rms_rel_error_col_from_source: float  # column-grouped cast of the source
    rms_rel_error_col_from_rows: float  # column-grouped cast of the dequantized row-grouped data
    extra_rms_rel_error: float  # from_rows − from_source
    codes_differ_fraction: float  # column codes that differ between the two routes

    def to_dict(self) -> dict[str, Any]:
        return {"study": "transpose", **{k: (list(v) if isinstance(v, tuple) else v)
                                         for k, v in self.__dict__.items()}}


def transpose_study(
    fmt: str | Format = "E4M3FN",
    shape: Sequence[int] = (256, 256),
    block: int = 32,
    scale_format: str | Format | None = None,
    seed: int = 0,
) -> TransposeStudy:
    """Blocks of `block` along rows (axis 1) for the forward operand; the backward pass needs blocks
    along columns (axis 0). Quantizing the column view from the source is one rounding; making it
    from the already-rounded row-blocked data is two. Heavy-tailed data (Student t, 3 dof) so blocks
    differ in scale. With FP32 amax scales (the default) the second rounding adds error; with
    power-of-two scales (scale_format='E8M0') a rounded value mostly stays on the new grid, so the
    extra error nearly vanishes although some codes still differ."""
    f = formats.get_format(fmt)
    shp = tuple(int(s) for s in shape)
    if len(shp) != 2:
        raise ValueError(f"transpose study needs a 2-D shape, got {shape!r}")
    x = np.random.default_rng(seed).standard_t(3, size=shp).astype(np.float32)
    rows = quantize_scaled(x, f, Granularity("block", (block,), 1), scale_format=scale_format)
    cols_src = quantize_scaled(x, f, Granularity("block", (block,), 0), scale_format=scale_format)
    cols_rows = quantize_scaled(rows.dequantize(), f, Granularity("block", (block,), 0), scale_format=scale_format)
    e_row = error_report(x, rows).rms_rel_error
    e_src = error_report(x, cols_src).rms_rel_error
    e_two = error_report(x, cols_rows).rms_rel_error
    return TransposeStudy(
        f.name, "FP32" if scale_format is None else formats.get_format(scale_format).name, int(block),
        (shp[0], shp[1]), seed, e_row, e_src, e_two, e_two - e_src,
        float(np.mean(cols_src.codes != cols_rows.codes)),
    )


# ------------------------------------------------------------------------------------------------
# python -m lowprec.simulations.scaling
# ------------------------------------------------------------------------------------------------


def run_grouping(study: str, fmt: str = "E4M3FN", rows: int = 64, cols: int = 64, outlier: float = 1000.0,
                 block: int = 32, seed: int = 0, granularities: Sequence[str] = DEFAULT_GRANULARITIES,
                 progress: ProgressFn | None = None) -> Any:
    """One grouping study by name: 'outlier', 'scale_choice' or 'transpose' (shared with the CLI)."""
    if study == "outlier":
        return outlier_study(fmt, (rows, cols), outlier, granularities=granularities, seed=seed, progress=progress)
    if study == "scale_choice":
        return scale_choice_study(seed=seed, progress=progress)
    if study == "transpose":
        return transpose_study(fmt, (rows, cols), block, seed=seed)
    raise ValueError(f"unknown grouping study {study!r}; known: outlier, scale_choice, transpose")


def main(argv: Sequence[str] | None = None) -> int:
    p = ArgumentParser(prog="python -m lowprec.simulations.scaling", description="grouping studies → JSON")
    p.add_argument("--study", default="outlier", choices=("outlier", "scale_choice", "transpose"))
    p.add_argument("--format", default="E4M3FN")
    p.add_argument("--rows", type=int, default=64)
    p.add_argument("--cols", type=int, default=64)
    p.add_argument("--outlier", type=float, default=1000.0)
    p.add_argument("--block", type=int, default=32)
    p.add_argument("--seed", type=int, default=0)
    add_json_argument(p)
    return run_main(p, argv, lambda a: run_grouping(a.study, a.format, a.rows, a.cols, a.outlier, a.block, a.seed))


if __name__ == "__main__":
    raise SystemExit(main())
