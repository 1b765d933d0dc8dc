"""Parse a number typed by a person: decimal (`3.3`, `1e-3`, `-0`), `inf`/`-inf`/`nan`, and C99
hex floats (`0x1.8p3`). Used by the CLI and the app's value boxes; errors say what is accepted."""

from __future__ import annotations

import math

ACCEPTED = "a decimal (3.3, 1e-3, -0), inf, -inf, nan, or a hex float (0x1.8p3)"


def parse_value(text: str) -> float:
    """The float64 value of `text`; ValueError naming the text and what is accepted."""
    if not isinstance(text, str):
        raise TypeError(f"value must be text, got {type(text).__name__}")
    s = text.strip().replace("_", "").replace("−", "-")
    if not s:
        raise ValueError(f"empty value; expected {ACCEPTED}")
    low = s.lower()
    sign = -1.0 if low.startswith("-") else 1.0
    body = low.lstrip("+-")
    if body in ("inf", "infinity", "∞"):
        return sign * math.inf
    if body == "nan":
        return math.copysign(math.nan, sign)
    try:
        x = float.fromhex(s) if body.startswith("0x") else float(s)
    except ValueError:
        raise ValueError(f"cannot read {text!r} as a number; expected {ACCEPTED}") from None
    if math.isinf(x):
        raise ValueError(f"{text!r} is beyond float64's range (max ≈ 1.8e308); type a smaller number or inf")
    return x
