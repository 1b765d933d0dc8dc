"""The cast of every float64, as a list of runs: where each code's set of inputs begins and ends.

`cast_partition(fmt, policy)` describes the whole map x → `encode(x, fmt, policy)` over float64
inputs (what a typed value becomes) as runs in the total order of float64
(-inf < … < -0 < +0 < … < +inf): run i holds every x from `starts[i]` up to the next start, and all
of them encode to `codes[i]` (-1: the policy refuses them with a ValueError). NaN inputs are not on
that line: `nan_codes(fmt, policy)` gives the code of +NaN and -NaN.

The runs are measured on `encode` itself, so they include every edge of the policy exactly:
ties, the overflow threshold, subnormal flushing, the E8M0 zero/negative rules and, for conventions
that round float64 to float32 first (`float64_via_float32`), the composite bins of that double
rounding. Between two sample points whose codes differ, the first input of the new run is found by
bisection over the float64 bit patterns (64 steps). The sample points are every finite code value,
every rounding-bin edge (`formats.rounding_bin`) with its float32 neighbours, the float32 range
limits and an even spread over the whole line, so a run cannot fall between two samples unseen.
This is the offline bin explorer's lookup table: a page finds a value's code by binary search,
without rounding anything itself.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .codec import default_policy, encode
from .policy import CastPolicy, Rounding
from .specs import Format, get_format
from .tables import code_table, rounding_bin

__all__ = ["CastPartition", "cast_partition", "float_key", "key_float", "nan_codes"]

_SIGN = np.uint64(1 << 63)
REFUSED = -1


def float_key(x: np.ndarray) -> np.ndarray:
    """uint64 keys ordered as float64 values are, with -0 just below +0 (NaN excluded)."""
    bits = np.ascontiguousarray(x, dtype=np.float64).view(np.uint64)
    return np.where(bits & _SIGN, ~bits, bits | _SIGN)


def key_float(k: np.ndarray) -> np.ndarray:
    """The float64 of each key (inverse of `float_key`)."""
    k = np.asarray(k, dtype=np.uint64)
    bits = np.where(k & _SIGN, k & ~_SIGN, ~k)
    return bits.astype(np.uint64).view(np.float64)


@dataclass(frozen=True)
class CastPartition:
    """Runs of equal code over the float64 line (see the module docstring)."""

    format: str
    policy: CastPolicy
    starts: np.ndarray  # float64, the first input of each run (starts[0] = -inf)
    codes: np.ndarray  # int64, each run's code (-1: refused)

    def lookup(self, x: float) -> int:
        """The code of float64 `x` (-1: refused); NaN is not on the line."""
        if x != x:
            raise ValueError("NaN is not on the line: use nan_codes")
        k = float_key(np.array([x]))[0]
        i = int(np.searchsorted(float_key(self.starts), k, side="right")) - 1
        return int(self.codes[i])


def _codes(f: Format, policy: CastPolicy, xs: np.ndarray) -> np.ndarray:
    """encode(xs) as int64, -1 where the policy refuses an element."""
    out = np.empty(xs.size, dtype=np.int64)
    if xs.size == 0:
        return out
    try:
        with np.errstate(all="ignore"):
            out[:] = encode(xs, f, policy).astype(np.int64)
        return out
    except ValueError:
        if xs.size == 1:
            out[0] = REFUSED
            return out
    half = xs.size // 2
    out[:half] = _codes(f, policy, xs[:half])
    out[half:] = _codes(f, policy, xs[half:])
    return out


def _samples(f: Format, policy: CastPolicy) -> np.ndarray:
    table = code_table(f)
    values = table.value[np.isfinite(table.value)].astype(np.float64)
    pts: list[np.ndarray] = [values, -values]
    bin_policy = policy.with_(rounding=Rounding.NEAREST_EVEN) if policy.rounding is Rounding.STOCHASTIC else policy
    edges = []
    for code in table.codes[np.isfinite(table.value)]:
        b = rounding_bin(f, int(code), bin_policy)
        edges += [b.lo, b.hi]
    e = np.array([x for x in edges if np.isfinite(x)], dtype=np.float64)
    e32 = e.astype(np.float32)
    near = [e, np.nextafter(e32, np.float32(np.inf)).astype(np.float64),
            np.nextafter(e32, np.float32(-np.inf)).astype(np.float64), e32.astype(np.float64)]
    pts += near + [-x for x in near]
    f32 = np.finfo(np.float32)
    special = np.array([0.0, -0.0, np.inf, -np.inf, float(f32.max), float(f32.tiny), float(f32.smallest_subnormal),
                        2.0**-150, 2.0**-127, 2.0**-126, 2.0**128, float(np.finfo(np.float64).max),
                        float(np.finfo(np.float64).smallest_subnormal)])
    pts += [special, -special]
    spread = np.arange(4096, dtype=np.uint64) * np.uint64(2**52)
    keys = np.concatenate([float_key(np.concatenate(pts)), spread])
    keys = np.unique(keys)
    floats = key_float(keys)
    return floats[~np.isnan(floats)]


def cast_partition(fmt: str | Format, policy: CastPolicy | None = None) -> CastPartition:
    """The runs of `encode(x, fmt, policy)` over every float64 x (see the module docstring).
    Stochastic rounding is not a function of x: ValueError."""
    f = get_format(fmt)
    pol = policy or default_policy(f)
    if pol.rounding is Rounding.STOCHASTIC:
        raise ValueError("stochastic rounding maps a value to two codes at random; it has no partition")
    xs = _samples(f, pol)
    keys = float_key(xs)
    order = np.argsort(keys)
    keys, xs = keys[order], xs[order]
    codes = _codes(f, pol, xs)
    # brackets (lo_key, hi_key) with different codes at the ends: find each transition
    lo = keys[:-1][codes[:-1] != codes[1:]]
    hi = keys[1:][codes[:-1] != codes[1:]]
    lo_code = codes[:-1][codes[:-1] != codes[1:]]
    found_keys: list[np.ndarray] = []
    while lo.size:
        gap = hi - lo
        done = gap <= np.uint64(1)
        if done.any():
            found_keys.append(hi[done])
        lo, hi, lo_code = lo[~done], hi[~done], lo_code[~done]
        if not lo.size:
            break
        mid = lo + (hi - lo) // np.uint64(2)
        mid_code = _codes(f, pol, key_float(mid))
        hi_code = _codes(f, pol, key_float(hi))
        same_lo = mid_code == lo_code
        same_hi = mid_code == hi_code
        third = ~(same_lo | same_hi)  # a run strictly inside: keep both halves
        new_lo = np.concatenate([np.where(same_lo, mid, lo)[~third], lo[third], mid[third]])
        new_hi = np.concatenate([np.where(same_lo, hi, mid)[~third], mid[third], hi[third]])
        new_code = np.concatenate([lo_code[~third], lo_code[third], mid_code[third]])
        lo, hi, lo_code = new_lo, new_hi, new_code
    starts_keys = np.unique(np.concatenate([float_key(np.array([-np.inf]))] + found_keys)) if found_keys \
        else float_key(np.array([-np.inf]))
    starts = key_float(starts_keys)
    run_codes = _codes(f, pol, starts)
    # merge neighbouring runs with the same code (a bracket can end on its own code)
    keep = np.concatenate([[True], run_codes[1:] != run_codes[:-1]])
    return CastPartition(f.name, pol, starts[keep], run_codes[keep])


def nan_codes(fmt: str | Format, policy: CastPolicy | None = None) -> tuple[int, int]:
    """(code of +NaN, code of -NaN) under `policy`; -1 where the policy refuses NaN."""
    f = get_format(fmt)
    pol = policy or default_policy(f)
    pos, neg = np.float64(np.nan), np.copysign(np.float64(np.nan), -1.0)
    return (int(_codes(f, pol, np.array([pos]))[0]), int(_codes(f, pol, np.array([neg]))[0]))
