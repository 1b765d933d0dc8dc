"""Cast policies: how a real number becomes a code, with every edge case a named choice.

A `CastPolicy` is pure data. Each field is one decision that real backends make differently; the
named conventions in `formats.conventions` are the measured settings of real backends.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import Enum
from typing import Any

import numpy as np


class Rounding(str, Enum):
    """Rounding to the format's grid, applied to the exact input value.

    NEAREST_EVEN: nearest grid value; a tie (exact midpoint) goes to the code whose last mantissa bit
        is 0 (IEEE 754 roundTiesToEven).
    NEAREST_AWAY: nearest grid value; a tie goes away from zero (IEEE roundTiesToAway).
    TOWARD_ZERO: truncate the magnitude (IEEE roundTowardZero).
    UP: toward +Inf (IEEE roundTowardPositive).  DOWN: toward -Inf (IEEE roundTowardNegative).
    STOCHASTIC: x between grid neighbours lo < x < hi rounds to hi with probability
        P(up) = floor(2^32 · (x - lo) / (hi - lo)) / 2^32, i.e. 32 random bits per element
        compared with the discarded fraction; unbiased up to 2^-32 of a gap. `CastPolicy.random_bits`
        and `sr_fraction` give fewer bits the way hardware stochastic-rounding units do.
    TO_ODD: an inexact x goes to whichever neighbour has an odd code (last mantissa bit 1; the
        exponent's last bit when there is no mantissa): truncate, then set the last bit if anything
        was lost ("round to odd", von Neumann rounding; gfloat `RoundMode.ToOdd`). It keeps the
        sticky information, so a later rounding to a narrower format rounds once. Also accepted:
        'round_to_odd', 'odd'.

    gfloat's / P3109's names are accepted too, case-insensitively: TiesToEven, TiesToAway,
    TowardZero, TowardPositive, TowardNegative, ToOdd, Stochastic.
    """

    NEAREST_EVEN = "nearest_even"
    NEAREST_AWAY = "nearest_away"
    TOWARD_ZERO = "toward_zero"
    UP = "up"
    DOWN = "down"
    STOCHASTIC = "stochastic"
    TO_ODD = "to_odd"

    @classmethod
    def _missing_(cls, value: object) -> "Rounding | None":
        if isinstance(value, str):
            key = value.strip().lower()
            alias = _ROUNDING_ALIASES.get(key, key)
            for member in cls:
                if member.value == alias:
                    return member
        return None


_ROUNDING_ALIASES = {
    "round_to_odd": "to_odd", "odd": "to_odd", "toodd": "to_odd", "tiestoeven": "nearest_even",
    "tiestoaway": "nearest_away", "towardzero": "toward_zero", "towardpositive": "up",
    "towardnegative": "down",
}


class Overflow(str, Enum):
    """What a finite value beyond the largest finite code (after rounding) becomes, and ±Inf input.

    SATURATE: ±max (clamp), also for ±Inf input (PTX `cvt.satfinite`, torch E4M3FN).
    NONFINITE: ±Inf where the format has Inf, else NaN (IEEE overflow under round-to-nearest).
        As in IEEE 754 §7.4, a directed rounding toward zero (toward_zero; up for negatives; down
        for positives) still gives ±max for finite input; ±Inf input stays ±Inf.
    SATURATE_PROPAGATE: finite values beyond max give ±max whatever the rounding; ±Inf input stays
        ±Inf (NaN where the format has no Inf).

    IEEE P3109's three conversion modes are these three, and their names are accepted
    (case-insensitively): SatFinite = saturate, SatPropagate = saturate_propagate, OvfInf = nonfinite.
    """

    SATURATE = "saturate"
    NONFINITE = "nonfinite"
    SATURATE_PROPAGATE = "saturate_propagate"

    @classmethod
    def _missing_(cls, value: object) -> "Overflow | None":
        if isinstance(value, str):
            alias = _OVERFLOW_ALIASES.get(value.strip().lower())
            if alias is not None:
                return cls(alias)
        return None


#: IEEE P3109's conversion modes (interim report v3) as lowprec's overflow rules
_OVERFLOW_ALIASES = {"satfinite": "saturate", "satpropagate": "saturate_propagate", "ovfinf": "nonfinite"}


class Subnormals(str, Enum):
    """KEEP: gradual underflow. FLUSH: a result that rounds to a subnormal code becomes ±0
    (flush after rounding, as flush-to-zero hardware does on output)."""

    KEEP = "keep"
    FLUSH = "flush"


class NanToFinite(str, Enum):
    """NaN input into a format without NaN (E2M1, E3M2, E2M3, INT8, INT4).

    RAISE: ValueError (the default: a NaN has no honest code there).
    ZERO: +0.   SIGNED_MAX: ±max with the NaN's sign bit.
    NEGATED_ZERO: zero with the opposite of the NaN's sign bit (what ml_dtypes 0.5–0.7 do: +NaN → -0).
    """

    RAISE = "raise"
    ZERO = "zero"
    SIGNED_MAX = "signed_max"
    NEGATED_ZERO = "negated_zero"


class NanPayload(str, Enum):
    """Which NaN code a NaN input gets in a format with NaN (the sign bit is kept unless stated).

    CANONICAL: the quiet NaN: all-ones exponent and the top mantissa bit only (fn formats: their
        single NaN code; fnuz: 0x80; E8M0: 0xFF). ml_dtypes.
    ALL_ONES: all-ones exponent and all-ones mantissa (torch E5M2).
    ALL_ONES_NEGATIVE: every bit set whatever the input's sign (torch 2.13 BF16 for tensors of rank
        ≥ 1; a 0-d tensor gives the canonical 0x7FC0).
    TRUNCATE: the input payload's top bits; a payload that truncates to zero becomes 1 (numpy FP16).
    QUIET_TRUNCATE: quiet bit set, then the payload's top bits (torch FP16).
    """

    CANONICAL = "canonical"
    ALL_ONES = "all_ones"
    ALL_ONES_NEGATIVE = "all_ones_negative"
    TRUNCATE = "truncate"
    QUIET_TRUNCATE = "quiet_truncate"


class UnsignedZero(str, Enum):
    """Zero into unsigned E8M0 (which has no zero). RAISE: ValueError. NAN: the NaN code 0xFF
    (ml_dtypes). SMALLEST: 2^-127, code 0x00 (torch)."""

    RAISE = "raise"
    NAN = "nan"
    SMALLEST = "smallest"


class UnsignedNegative(str, Enum):
    """A negative value into unsigned E8M0. RAISE: ValueError. NAN: 0xFF (ml_dtypes).
    MAGNITUDE: the sign bit is dropped and |x| is encoded (torch)."""

    RAISE = "raise"
    NAN = "nan"
    MAGNITUDE = "magnitude"


class SrFraction(str, Enum):
    """How stochastic rounding with N random bits (`CastPolicy.random_bits`) reads the discarded
    fraction f (0 ≤ f < 1 of a quantum), as a hardware unit with an N-bit adder does; r is the
    element's N random bits (0 ≤ r < 2^N) and the magnitude rounds up when the test holds.

    TRUNCATE: floor(f·2^N) + r ≥ 2^N — the fraction cut to N bits (gfloat `StochasticFastest`).
        P(up) = floor(f·2^N)/2^N ≤ f: biased toward zero by less than 2^-N of a quantum. With the
        default 32 bits this is lowprec's rule P(up) = floor(f·2^32)/2^32 code for code.
    NEAREST_EVEN: rne(f·2^N) + r ≥ 2^N — the fraction rounded to N bits, ties to even (gfloat
        `Stochastic`, P3109's stochastic rounding).
    NEAREST_ODD: the same with ties to odd (gfloat `StochasticOdd`).
    HALF: floor(f·2^(N+1)) + 2r + 1 ≥ 2^(N+1) — half a step of offset, unbiased for f on the
        N-bit grid (gfloat `StochasticFast`).

    The N random bits of element i are the top N bits of the bitwise complement of its 32-bit
    Philox word (`formats.philox`): complementing makes TRUNCATE with N = 32 the default rule
    `u < floor(f·2^32)` exactly."""

    TRUNCATE = "truncate"
    NEAREST_EVEN = "nearest_even"
    NEAREST_ODD = "nearest_odd"
    HALF = "half"


#: the most random bits a stochastic rounding uses per element (one Philox word)
MAX_RANDOM_BITS = 32


@dataclass(frozen=True)
class CastPolicy:
    """Every decision a cast makes, as data. Strings or the enums above are accepted."""

    rounding: Rounding = Rounding.NEAREST_EVEN
    overflow: Overflow = Overflow.NONFINITE
    subnormals: Subnormals = Subnormals.KEEP
    nan_to_finite: NanToFinite = NanToFinite.RAISE
    nan_payload: NanPayload = NanPayload.CANONICAL
    unsigned_zero: UnsignedZero = UnsignedZero.RAISE
    unsigned_negative: UnsignedNegative = UnsignedNegative.RAISE
    # float64 input is first rounded to float32 (nearest-even), then cast: double rounding, as
    # ml_dtypes < 0.7 and torch 2.13 do. False: float64 input is rounded once, exactly (ml_dtypes 0.7).
    float64_via_float32: bool = False
    # E8M0 from float32 subnormal input: "nearest" rounds the true value; "exponent_field" imitates
    # ml_dtypes < 0.7 and torch 2.13, which read the float32 exponent field as if the input were
    # normal, so every float32 subnormal above 2^-127 gives 2^-126 (code 0x01).
    e8m0_float32_subnormals: str = "nearest"
    name: str = ""  # the convention this policy came from, for reports ("" = hand-made)
    # stochastic rounding: how many random bits decide (None: 32, the full word) and how the
    # discarded fraction is cut to them (`SrFraction`); other roundings ignore both
    random_bits: int | None = None
    sr_fraction: SrFraction = SrFraction.TRUNCATE

    def __post_init__(self) -> None:
        for field_name, enum in (
            ("rounding", Rounding),
            ("overflow", Overflow),
            ("subnormals", Subnormals),
            ("nan_to_finite", NanToFinite),
            ("nan_payload", NanPayload),
            ("unsigned_zero", UnsignedZero),
            ("unsigned_negative", UnsignedNegative),
            ("sr_fraction", SrFraction),
        ):
            value = getattr(self, field_name)
            try:
                object.__setattr__(self, field_name, enum(value))
            except ValueError:
                allowed = ", ".join(repr(m.value) for m in enum)
                raise ValueError(f"{field_name}={value!r} is not one of {allowed}") from None
        if self.e8m0_float32_subnormals not in ("nearest", "exponent_field"):
            raise ValueError(
                f"e8m0_float32_subnormals={self.e8m0_float32_subnormals!r} is not one of "
                f"'nearest', 'exponent_field'"
            )
        if not isinstance(self.float64_via_float32, bool):
            raise TypeError(f"float64_via_float32 must be a bool, got {self.float64_via_float32!r}")
        bits = self.random_bits
        if bits is not None and (isinstance(bits, bool) or not isinstance(bits, (int, np.integer))
                                 or not 1 <= int(bits) <= MAX_RANDOM_BITS):
            raise ValueError(f"random_bits={bits!r} must be None (the full {MAX_RANDOM_BITS}-bit word) "
                             f"or an integer in 1..{MAX_RANDOM_BITS}")
        if bits is not None:
            object.__setattr__(self, "random_bits", int(bits))

    @property
    def sr_bits(self) -> int:
        """The number of random bits stochastic rounding uses (random_bits, or the full 32)."""
        return MAX_RANDOM_BITS if self.random_bits is None else self.random_bits

    @property
    def sr_default(self) -> bool:
        """Whether stochastic rounding is the default rule (32 bits, truncated fraction)."""
        return self.sr_bits == MAX_RANDOM_BITS and self.sr_fraction is SrFraction.TRUNCATE

    def with_(self, **changes: Any) -> "CastPolicy":
        """A copy with some fields changed (validated); the name is cleared unless given."""
        changes.setdefault("name", "")
        return replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        return {
            "rounding": self.rounding.value,
            "overflow": self.overflow.value,
            "subnormals": self.subnormals.value,
            "nan_to_finite": self.nan_to_finite.value,
            "nan_payload": self.nan_payload.value,
            "unsigned_zero": self.unsigned_zero.value,
            "unsigned_negative": self.unsigned_negative.value,
            "float64_via_float32": self.float64_via_float32,
            "e8m0_float32_subnormals": self.e8m0_float32_subnormals,
            "name": self.name,
            "random_bits": self.random_bits,
            "sr_fraction": self.sr_fraction.value,
        }
