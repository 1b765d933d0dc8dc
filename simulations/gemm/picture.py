"""The bit picture of one fused step: every term of the step (each product a_k·b_k — or each group of
16 for GST-FDPA — and the C it starts from) written in binary, lined up under the step's largest
exponent e_max, with the column where the unit cuts (F fraction bits below e_max's leading bit).

Built from `scalar.dot`'s trace (the rule step by step, in Python integers), so it shows exactly
what the model does: a column j has the weight 2^(top − j) with top = e_max + 1 (a product of two
significands in [1, 2) lies in [1, 4) · 2^e: its leading bit can sit one place above e_max);
columns down to e_max − F are kept, the ones below are cut (truncated toward zero, or rounded in the
nearest-even what-if). A term's bits are drawn within its own span — from its leading bit down to
its last set bit — and blank elsewhere; bits below the picture's last column are counted in
`beyond`. The widget draws this record; it computes nothing.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from fractions import Fraction
from typing import Any

from .scalar import DotTrace

__all__ = ["BitPicture", "PictureRow", "bit_picture", "MAX_BELOW"]

#: columns drawn below the cut at most (the rest of a term's dropped bits are counted, not drawn)
MAX_BELOW = 16


@dataclass(frozen=True)
class PictureRow:
    """One term of the step, aligned."""

    label: str  # "a0·b0", "group 0", "C"
    role: str  # "product", "group", "c"
    value: float  # the term's exact value (float64 of it)
    exponent: int  # its alignment exponent (the zero exponent for a zero term)
    shift: int  # e_max − exponent: how far it moves right
    bits: str  # one character per column: "1", "0", or " " outside the term's span
    negative: bool
    zero: bool
    kept: float  # what the adder receives from it (its value cut to the window)
    dropped: float  # value − kept
    beyond: int  # set bits below the picture's last column (drawn as "…")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class BitPicture:
    """One fused step of one dot product, term by term (see the module docstring)."""

    arch: str
    instruction: str
    step: int  # index of the fused step
    k0: int  # its first product
    k1: int  # one past its last
    e_max: int
    frac_bits: int
    top: int  # exponent of the first column
    columns: int  # number of columns (column j weighs 2^(top − j))
    cut: int  # index of the first cut column (top − cut = e_max − F − 1)
    rows: tuple[PictureRow, ...]
    c_in: float  # the step's C
    d_out: float  # the step's D
    step_exact: float  # the exact sum of the step's terms (products and C), float64 of it
    kept_sum: float  # Σ kept, before the output rounding
    dropped_sum: float  # Σ dropped: what the alignment lost in this step
    steps: int  # fused steps of the traced dot product

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["rows"] = [r.to_dict() for r in self.rows]
        return out

    def column_exponents(self) -> list[int]:
        return [self.top - j for j in range(self.columns)]


def _lowest_set_exponent(x: Fraction) -> int:
    """The exponent of the last set bit of |x| (x a non-zero dyadic rational)."""
    n, d = abs(x.numerator), x.denominator
    low_n = (n & -n).bit_length() - 1
    return low_n - (d.bit_length() - 1)


def _lead(x: Fraction) -> int:
    e = abs(x.numerator).bit_length() - x.denominator.bit_length()
    if Fraction(2) ** e > abs(x):
        e -= 1
    return e


def bit_picture(trace: DotTrace, step: int, *, first_step: int = 0, k_offset: int = 0,
                steps: int | None = None) -> BitPicture:
    """The picture of fused step `step` of `trace` (ValueError when the trace has no such step).
    A trace of a slice of a longer dot product (its C the chain's D so far) gives the slice's place:
    `first_step` (the number of the trace's first step), `k_offset` (its first product's index)
    and `steps` (the whole dot product's step count)."""
    if isinstance(step, bool) or not isinstance(step, int) or not 0 <= step < len(trace.steps):
        raise ValueError(f"step must be 0 … {len(trace.steps) - 1} (the traced dot product has "
                         f"{len(trace.steps)} fused steps), got {step!r}")
    s = trace.steps[step]
    top = s.e_max + 1
    cut_exp = s.e_max - s.frac_bits  # the last kept column's exponent
    lows = [_lowest_set_exponent(t.value) for t in s.terms if t.value != 0]
    lowest = min(lows) if lows else cut_exp
    bottom = max(min(lowest, cut_exp - 1), cut_exp - MAX_BELOW)
    columns = top - bottom + 1
    rows = []
    for t in s.terms:
        v = t.value
        index = t.index + (k_offset if t.role == "product" else 0)
        label = {"product": f"a{index}·b{index}", "group": f"group {t.index}", "c": "C"}[t.role]
        chars = [" "] * columns
        beyond = 0
        if v != 0:
            mag = abs(v)
            hi, lo = _lead(v), _lowest_set_exponent(v)
            for j in range(columns):
                e = top - j
                if lo <= e <= hi:
                    chars[j] = "1" if math.floor(mag / Fraction(2) ** e) % 2 else "0"
            if lo < bottom:
                scaled = mag / Fraction(2) ** lo  # an odd integer: bits below `bottom` are its low bits
                beyond = bin(int(scaled) & ((1 << (bottom - lo)) - 1)).count("1")
        kept = Fraction(t.kept) * s.quantum
        rows.append(PictureRow(label, t.role, float(v), t.exponent, t.shift(s.e_max), "".join(chars), v < 0,
                               t.zero, float(kept), float(t.dropped), beyond))
    exact = sum((t.value for t in s.terms), Fraction(0))
    return BitPicture(trace.arch, trace.instruction, first_step + step, k_offset + s.k0, k_offset + s.k1, s.e_max,
                      s.frac_bits, top, columns, top - cut_exp + 1, tuple(rows), s.c, s.d, float(exact),
                      float(Fraction(s.total) * s.quantum), float(sum((t.dropped for t in s.terms), Fraction(0))),
                      len(trace.steps) if steps is None else steps)
