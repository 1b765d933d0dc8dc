"""Closed forms a stateful-scaling run must agree with, where one exists.

- `spike_clip_threshold`: the smallest magnitude a cast with encode scale E clips: θ / E, with θ the
  upper edge of the rounding bin of the format's largest finite value F (`metrics.overflow_threshold`;
  E4M3FN: θ = 464, so anything that scales beyond 464 saturates to 448);
- `spike_clipped_share`: the expected clipped share of one logical tensor made of `parts` equal
  parts — the microbatches of an optimizer step, or the shards of the ranks — when one part alone
  carries a spike: that part, σ·N(0, 1) × spike, cast with E, clips where |z| > θ / (E · spike · σ),
  so the share is (1 / parts) · erfc(θ / (E · spike · σ · √2)) (the other parts, sized for, clip
  nothing);
- `reduced_encode_scale`: the encode scale every rank holds after a correct reduction: Transformer
  Engine's rule applied to the maximum over ranks and over the history window,
  float32(float32(F · 2^-margin) / max_r max_h A[r, h]).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from lowprec import formats

from ..scaling.delayed import check_margin
from ..scaling.metrics import overflow_threshold

__all__ = ["reduced_encode_scale", "spike_clip_threshold", "spike_clipped_share"]


def spike_clip_threshold(fmt: Any, encode_scale: float) -> float:
    """The smallest |x| that a cast of x · encode_scale to `fmt` clips (module docstring)."""
    f = formats.get_format(fmt)
    if not (isinstance(encode_scale, (int, float)) and math.isfinite(encode_scale) and encode_scale > 0):
        raise ValueError(f"encode_scale must be a positive finite number, got {encode_scale!r}")
    edge, _ = overflow_threshold(f)
    return edge / float(encode_scale)


def spike_clipped_share(spike: float, encode_scale: float, fmt: Any, parts: int, sigma: float = 1.0) -> float:
    """Expected clipped share of a tensor of `parts` equal parts when one part, σ·N(0, 1) × spike,
    is cast with `encode_scale` and the others clip nothing (module docstring)."""
    if isinstance(parts, bool) or not isinstance(parts, int) or parts < 1:
        raise ValueError(f"parts must be a positive integer, got {parts!r}")
    if not (spike > 0 and sigma > 0):
        raise ValueError(f"spike and sigma must be positive, got {spike!r}, {sigma!r}")
    z = spike_clip_threshold(fmt, encode_scale) / (spike * sigma)
    return math.erfc(z / math.sqrt(2.0)) / parts


def reduced_encode_scale(amaxes: Any, fmt: Any, margin: int = 0) -> float:
    """The encode scale after an amax reduction over ranks: TE's rule on the maximum of `amaxes`
    (every rank's history window, any shape; NaN propagates; a zero or non-finite maximum is a
    ValueError: the rule then keeps the previous scale, which is no closed form)."""
    f = formats.get_format(fmt)
    a = np.asarray(amaxes, dtype=np.float64)
    if a.size == 0:
        raise ValueError("amaxes is empty")
    top = float(np.max(a))
    if not (math.isfinite(top) and top > 0):
        raise ValueError(f"the largest amax is {top!r}: the rule keeps the previous scale")
    scaled_max = np.float32(f.max) * np.float32(2.0 ** -check_margin(margin))
    with np.errstate(over="ignore"):
        s = np.float32(scaled_max / np.float32(top))
    return float(np.finfo(np.float32).max) if np.isinf(s) else float(s)
