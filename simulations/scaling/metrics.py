"""Error metrics of a quantized array x̂ against its source x, overall and per scale group.

RMS relative error ‖x̂ − x‖₂ / ‖x‖₂, max |x̂ − x|, SQNR 10·log10(Σx² / Σ(x̂ − x)²) dB, clipped
fraction (elements whose scaled magnitude lies beyond the rounding bin of the format's largest finite
value F under nearest-even, i.e. saturated or overflowed rather than rounded; see `clips`) and
flushed fraction (x ≠ 0 but x̂ = 0). An exact result has error 0 and SQNR +inf; an all-zero group with
an error has relative error +inf. Per-group arrays are shaped as the scale grid of the granularity.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from lowprec import formats
from lowprec.formats import Format

from .granularity import Granularity, parse_granularity

__all__ = ["ErrorReport", "clips", "element_rel_error", "error_metrics", "overflow_threshold"]


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
            "rms_rel_error": self.rms_rel_error,
            "max_abs_error": self.max_abs_error,
            "sqnr_db": self.sqnr_db,
            "clipped_fraction": self.clipped_fraction,
            "flushed_fraction": self.flushed_fraction,
            "groups": {
                "rms_rel_error": self.group_rms_rel_error,
                "max_abs_error": self.group_max_abs_error,
                "sqnr_db": self.group_sqnr_db,
                "clipped_fraction": self.group_clipped_fraction,
                "flushed_fraction": self.group_flushed_fraction,
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
    xa = formats.as_float_array(x, "x").astype(np.float64)
    xh = formats.as_float_array(x_hat, "x_hat").astype(np.float64)
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
    if not isinstance(fmt, (formats.FloatFormat, formats.IntFormat)):
        raise TypeError(f"fmt must be a Format, got {fmt!r:.80}")
    scaled_magnitude = np.asarray(scaled_magnitude)
    if scaled_magnitude.dtype.kind not in "fiu":
        raise TypeError(f"scaled_magnitude must be real numbers, got dtype {scaled_magnitude.dtype}")
    edge, edge_overflows = overflow_threshold(fmt)
    with np.errstate(invalid="ignore"):
        return (scaled_magnitude > edge) | ((scaled_magnitude == edge) if edge_overflows else False)


def element_rel_error(x: Any, x_hat: Any) -> np.ndarray:
    """|x̂ − x| / |x| per element (float64): 0 where x̂ = x, +inf where x = 0 but x̂ ≠ 0."""
    xa = formats.as_float_array(x, "x").astype(np.float64)
    d = np.abs(formats.as_float_array(x_hat, "x_hat").astype(np.float64) - xa)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(xa != 0, d / np.abs(xa), np.where(d == 0, 0.0, np.inf))
