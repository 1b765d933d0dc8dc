"""Parse a number typed by a person: decimal (`3.3`, `1e-3`, `-0`), `inf`/`-inf`/`nan`, and C99
hex floats (`0x1.8p3`). Used by the CLI and the app's value boxes; errors say what is accepted."""

from __future__ import annotations

import math
import re

ACCEPTED = "a decimal (3.3, 1e-3, -0), inf, -inf, nan, or a hex float (0x1.8p3)"


#: the grammar: one optional sign, then a decimal, a C99 hex float, inf/infinity/∞ or nan
_NUMBER = re.compile(
    r"""[+-]?(?:
        (?:\d+\.?\d*|\.\d+)(?:e[+-]?\d+)?          # decimal: 3.3, 1e-3, .5, 7.
      | 0x(?:[0-9a-f]+\.?[0-9a-f]*|\.[0-9a-f]+)(?:p[+-]?\d+)?  # hex float: 0x1.8p3
      | inf(?:inity)? | ∞ | nan
    )""", re.VERBOSE)

#: longest text read as a number (float64 needs at most ~770 significant digits; longer is a typo
#: or an attack on the parser)
MAX_LENGTH = 1000


def parse_value(text: str) -> float:
    """The float64 value of `text`; ValueError naming the text and what is accepted.

    Grammar (`_NUMBER`): one optional sign, then a decimal, a hex float, inf/infinity/∞ or nan;
    underscores between digits and a Unicode minus are accepted, surrounding blanks ignored. A value
    beyond float64's range is a ValueError (type inf for infinity)."""
    if not isinstance(text, str):
        raise TypeError(f"value must be text, got {type(text).__name__}")
    if len(text) > MAX_LENGTH:
        raise ValueError(f"value is {len(text)} characters long (at most {MAX_LENGTH}); expected {ACCEPTED}")
    s = text.strip().replace("_", "").replace("−", "-")
    if not s:
        raise ValueError(f"empty value; expected {ACCEPTED}")
    low = s.lower()
    if _NUMBER.fullmatch(low) is None:
        raise ValueError(f"cannot read {text!r} as a number; expected {ACCEPTED}")
    sign = -1.0 if low.startswith("-") else 1.0
    body = low.lstrip("+-")
    if body in ("inf", "infinity", "∞"):
        return sign * math.inf
    if body == "nan":
        return math.copysign(math.nan, sign)
    try:
        x = float.fromhex(low) if body.startswith("0x") else float(low)
    except OverflowError:  # float.fromhex: a hex float beyond float64
        x = math.inf
    except ValueError:
        raise ValueError(f"cannot read {text!r} as a number; expected {ACCEPTED}") from None
    if math.isinf(x):
        raise ValueError(f"{text!r} is beyond float64's range (max ≈ 1.8e308); type a smaller number or inf")
    return x
