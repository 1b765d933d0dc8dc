"""Readable one-value encode and decode: the reference a learner reads, in exact rational arithmetic.

The vectorised codec in `formats.codec` is what runs; tests check both against the same oracles.
Conventions are those of `CastPolicy` (see its enums for the formulas).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from .policy import (
    CastPolicy,
    NanPayload,
    NanToFinite,
    Overflow,
    Rounding,
    SrFraction,
    Subnormals,
    UnsignedNegative,
    UnsignedZero,
)
from .specs import Format, FloatFormat, IntFormat, get_format


def decode_scalar(code: int, fmt: str | Format) -> float:
    """Value of one code: (-1)^s × 2^(E - bias) × (1 + M/2^m), or the subnormal/special rule."""
    f = get_format(fmt)
    if isinstance(code, bool) or not isinstance(code, (int, np.integer)):
        raise TypeError(f"code must be an integer, got {code!r}")
    if not 0 <= int(code) < f.n_codes:
        raise ValueError(f"code {code} is out of range for {f.name} (0..{f.n_codes - 1})")
    if isinstance(f, IntFormat):
        return float(code - f.n_codes if f.signed and code >= f.n_codes // 2 else code)
    m = f.mantissa_bits
    s = (code >> f.sign_shift) & 1 if f.signed else 0
    mag = code & f.magnitude_mask
    E, M = mag >> m, mag & ((1 << m) - 1)
    if f.is_nan_code(code):
        return math.nan
    if f.has_inf and mag == f.inf_code:
        return -math.inf if s else math.inf
    if E == 0 and f.subnormals:
        value = Fraction(M, 1 << m) * Fraction(2) ** f.emin  # subnormal: 0.M × 2^emin
    else:
        value = (1 + Fraction(M, 1 << m)) * Fraction(2) ** (E - f.bias)  # normal: 1.M × 2^(E-bias)
    return -float(value) if s else float(value)


def _sr_up(frac: Fraction, u32: int, policy: CastPolicy) -> bool:
    """Stochastic rounding's decision for the discarded fraction 0 < frac < 1 and the element's 32
    random bits, under the policy's random_bits and sr_fraction (see `SrFraction`)."""
    if policy.sr_default:
        return u32 < math.floor(frac * 2**32)  # P(up) = floor(frac·2^32) / 2^32
    bits = policy.sr_bits
    rule = policy.sr_fraction
    q = bits + 1 if rule is SrFraction.HALF else bits
    scaled = frac * 2**q
    t = math.floor(scaled)
    if rule in (SrFraction.NEAREST_EVEN, SrFraction.NEAREST_ODD):
        d = scaled - t
        tie_up = (t % 2 == 1) if rule is SrFraction.NEAREST_EVEN else (t % 2 == 0)
        t += 1 if d > Fraction(1, 2) or (d == Fraction(1, 2) and tie_up) else 0
    srb = (~u32 & 0xFFFFFFFF) >> (32 - bits)  # the top N bits of the word's complement
    if rule is SrFraction.HALF:
        return t + 2 * srb + 1 >= 2**q
    return t + srb >= 2**q


def _round_significand(q: Fraction, negative: bool, policy: CastPolicy, u32: int | None,
                       floor_code_odd: bool | None = None) -> int:
    """Round q ≥ 0 (a value measured in quanta) to an integer under the policy's rounding.

    The tie and odd rules read the parity of the code of floor(q) (default: floor(q) itself)."""
    rounding = policy.rounding
    n = math.floor(q)
    frac = q - n
    if frac == 0:
        return n
    odd = n % 2 == 1 if floor_code_odd is None else floor_code_odd
    if rounding is Rounding.NEAREST_EVEN:
        return n + 1 if frac > Fraction(1, 2) or (frac == Fraction(1, 2) and odd) else n
    if rounding is Rounding.NEAREST_AWAY:
        return n + 1 if frac >= Fraction(1, 2) else n
    if rounding is Rounding.TOWARD_ZERO:
        return n
    if rounding is Rounding.UP:
        return n if negative else n + 1
    if rounding is Rounding.DOWN:
        return n + 1 if negative else n
    if rounding is Rounding.TO_ODD:
        return n if odd else n + 1
    assert u32 is not None, "stochastic rounding needs a 32-bit random integer u32"
    return n + 1 if _sr_up(frac, u32, policy) else n


def _nan_code(f: FloatFormat, negative: bool, policy: CastPolicy) -> int:
    """The NaN code of a payload-free NaN input, by the format's `nan_kind`."""
    sbit = (1 << f.sign_shift) if (f.signed and negative) else 0
    kind = f.nan_kind
    if kind == "negative_zero":
        return 1 << f.sign_shift
    if kind == "unsigned_top":
        return f.magnitude_mask
    if policy.nan_payload is NanPayload.ALL_ONES_NEGATIVE:
        return f.magnitude_mask | (1 << f.sign_shift)
    if kind == "top":
        return f.magnitude_mask | sbit
    if policy.nan_payload is NanPayload.ALL_ONES:
        return f.inf_code | ((1 << f.mantissa_bits) - 1) | sbit
    return f.inf_code | (1 << (f.mantissa_bits - 1)) | sbit  # canonical quiet NaN (payload-free input)


def encode_scalar(x: float, fmt: str | Format, policy: CastPolicy | None = None,
                  u32: int | None = None) -> int:
    """Code of one Python float (float64, or float32 widened) under `policy`.

    Stochastic rounding takes the element's 32 random bits as `u32`. NaN inputs are taken to be
    payload-free quiet NaNs (payload rules are the vectorised codec's).
    """
    from .codec import _check_policy, default_policy

    f = get_format(fmt)
    pol = policy or default_policy(f)
    _check_policy(f, pol)
    if isinstance(x, bool) or not isinstance(x, (int, float, np.integer, np.floating)):
        raise TypeError(f"x must be a real number (a Python or numpy scalar), got {x!r}")
    x = float(x)
    if pol.float64_via_float32:
        with np.errstate(over="ignore"):
            x = float(np.float32(x))
    negative = math.copysign(1.0, x) < 0
    if isinstance(f, IntFormat):
        if math.isnan(x):
            return _int_nan(f, negative, pol)
        v = Fraction(x) if math.isfinite(x) else Fraction(int(f.max) * 2 if x > 0 else int(f.min) * 2)
        n = _round_significand(abs(v), v < 0, pol, u32)
        n = -n if v < 0 else n
        n = max(int(f.min), min(int(f.max), n))
        return n & (f.n_codes - 1)
    sbit = (1 << f.sign_shift) if (f.signed and negative) else 0
    if math.isnan(x):
        if f.has_nan:
            return _nan_code(f, negative, pol)
        return _float_nan_to_finite(f, negative, pol)
    if not f.signed and negative and x != 0:
        if pol.unsigned_negative is UnsignedNegative.RAISE:
            raise ValueError(f"negative value {x!r} cannot be encoded in unsigned {f.name}")
        if pol.unsigned_negative is UnsignedNegative.NAN:
            return _nan_code(f, False, pol)
        x, negative, sbit = -x, False, 0
    if (not f.subnormals and pol.e8m0_float32_subnormals == "exponent_field"
            and 2.0**-127 < x < 2.0**-126 and float(np.float32(x)) == x):
        return 1  # the backends read the float32 exponent field: subnormals above 2^-127 go up
    if x == 0 and not f.has_zero:  # (a format with a zero takes ±0 as 0 below)
        if pol.unsigned_zero is UnsignedZero.RAISE:
            raise ValueError(f"zero cannot be encoded in {f.name} (it has no zero)")
        return _nan_code(f, False, pol) if pol.unsigned_zero is UnsignedZero.NAN else 0
    max_code = f.max_magnitude_code
    if math.isinf(x):
        if pol.overflow is Overflow.SATURATE:  # saturate_propagate keeps ±Inf
            return max_code | sbit
        return (max_code + 1) | sbit if f.has_inf else _nan_code(f, negative, pol)
    v = abs(Fraction(x))
    m = f.mantissa_bits
    if v == 0:
        mag = 0
    else:
        e = math.floor(math.log2(v)) if v.numerator else 0
        while Fraction(2) ** e > v:  # make e = floor(log2 v) exactly
            e -= 1
        while Fraction(2) ** (e + 1) <= v:
            e += 1
        e_eff = max(e, f.emin)  # below emin the quantum stays 2^(emin - m): subnormals
        quantum = Fraction(2) ** (e_eff - m)
        # the code's last bit is the mantissa's, or the exponent field's when m = 0 (E8M0, P3109
        # K8P1): the code of floor is (e_eff - emin) + n with subnormals, (e_eff - emin) without
        n_floor = math.floor(v / quantum)
        odd = None if m > 0 else ((e_eff - f.emin + n_floor) % 2 == 1 if f.subnormals
                                  else (e_eff - f.emin) % 2 == 1)
        n = _round_significand(v / quantum, negative, pol, u32, odd)
        if f.subnormals:
            mag = ((e_eff - f.emin) << m) + n
        else:
            mag = ((e_eff - f.emin) << m) + max(n, 1 << m) - (1 << m)
        if mag > max_code:
            toward_zero = pol.rounding is Rounding.TOWARD_ZERO or (
                pol.rounding is Rounding.UP and negative) or (pol.rounding is Rounding.DOWN and not negative)
            if toward_zero or pol.overflow is not Overflow.NONFINITE:
                mag = max_code
            elif f.has_inf:
                mag = max_code + 1
            else:
                return _nan_code(f, negative, pol)
        if f.subnormals and pol.subnormals is Subnormals.FLUSH and 0 < mag < (1 << m):
            mag = 0
    if not f.has_negative_zero and mag == 0:  # the -0 code is NaN (or there is no sign)
        return 0
    return mag | sbit


def _float_nan_to_finite(f: FloatFormat, negative: bool, pol: CastPolicy) -> int:
    rule = pol.nan_to_finite
    if rule is NanToFinite.RAISE:
        raise ValueError(f"NaN cannot be encoded in {f.name} (it has no NaN)")
    sbit = 1 << f.sign_shift
    if rule is NanToFinite.ZERO:
        return 0
    if rule is NanToFinite.SIGNED_MAX:
        return f.max_magnitude_code | (sbit if negative else 0)
    return 0 if negative else sbit  # NEGATED_ZERO


def _int_nan(f: IntFormat, negative: bool, pol: CastPolicy) -> int:
    rule = pol.nan_to_finite
    if rule is NanToFinite.RAISE:
        raise ValueError(f"NaN cannot be encoded in {f.name} (it has no NaN)")
    if rule is NanToFinite.SIGNED_MAX:
        return (-int(f.max) if negative and f.signed else int(f.max)) & (f.n_codes - 1)
    return 0
