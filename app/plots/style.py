"""The one visual vocabulary: fixed colours for sign / exponent / mantissa bits and for the
series every plot shares, used by every view (bits, formula, tables, tooltips). The three bit
colours are reserved for bits: series (current/delayed scaling, errors, highlights) use colours of
their own, so a blue mark always means "exponent"."""

from __future__ import annotations

from fractions import Fraction

SIGN_COLOR = "#d62728"  # red
EXPONENT_COLOR = "#1f77b4"  # blue
MANTISSA_COLOR = "#2ca02c"  # green
DELAYED_COLOR = "#ff7f0e"  # delayed scaling / defect variant
CURRENT_COLOR = "#8c564b"  # current scaling / reference (brown: not a bit colour)
HIGHLIGHT_COLOR = "#9467bd"  # a highlighted step or element
ERROR_COLOR = "#222222"  # the value being cast / an error mark (not the sign red)
# one colour per series (layers, variants) that avoids the three bit colours
SERIES_PALETTE = ("#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf",
                  "#222222", "#aec7e8", "#ffbb78")


def power_of_two_text(value: float) -> str:
    """Exact value as a fraction times a power of two, e.g. 448 → '7/4 × 2^8', 0.3125 → '5/4 × 2^-2'."""
    if value != value:
        return "NaN"
    if value in (float("inf"), float("-inf")):
        return "+Inf" if value > 0 else "-Inf"
    if value == 0:
        return "-0" if str(value).startswith("-") else "0"
    frac = Fraction(abs(value))
    e = frac.numerator.bit_length() - frac.denominator.bit_length()
    if Fraction(2) ** e > frac:
        e -= 1
    mant = frac / Fraction(2) ** e
    sign = "-" if value < 0 else ""
    m = f"{mant.numerator}" if mant.denominator == 1 else f"{mant.numerator}/{mant.denominator}"
    return f"{sign}{m} × 2^{e}"
