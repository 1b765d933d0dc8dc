"""The one number-to-text module of lowprec: every number a page, a table, a CLI line, a CSV cell or a
summary prints goes through these functions, so a non-finite value reads the same everywhere, in the
words of the strict JSON writer (`lowprec.strictjson`):

    NaN → "nan"        +Inf → "inf"        -Inf → "-inf"

These are also the words Python's `format()` and `repr()` use, and the words `float()` reads back.
A NaN has no sign in text (its sign bit is not a value); `sign=True` writes "+inf" for +Inf as for
any positive number, never "+nan". `None` (absent, not computed) is not a number: it raises
`TypeError` unless the caller says what to print for it (`none="–"`).

Functions (each takes a Python or numpy real number; booleans are refused):

- `general(v, digits)` — `%g` with `digits` significant digits ('0.1', '1.23e-05', '448')
- `fixed(v, decimals)` — `%f` with `decimals` digits after the point ('0.125', '-3.000')
- `scientific(v, decimals)` — `%e` with `decimals` digits after the point ('1.250e+02')
- `percent(fraction, digits)` — 100 × fraction in `%g`, or in `%f` with `decimals`, then ' %'
  ('12.5 %'); a non-finite percentage is its word alone ('nan', not 'nan %')
- `roundtrip(v)` — the shortest text that reads back to exactly `v` (Python's `repr`: '0.1', '1.0')
- `shortest(v)` — `roundtrip` without a trailing '.0' ('1', '-0', '0.1', '1e+16')
- `nonfinite_text(v)` — the word of a non-finite value, None for a finite one

This module is the floor of the leaves: it imports nothing of lowprec (not even the other leaves), so
every layer and every leaf (`lowprec.strictjson` takes its words from here) may use it.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

__all__ = [
    "ABSENT",
    "INF",
    "NAN",
    "NEG_INF",
    "NONFINITE_WORDS",
    "fixed",
    "general",
    "nonfinite_text",
    "percent",
    "roundtrip",
    "scientific",
    "shortest",
]

#: the word of NaN, of +Inf and of -Inf, in text and in lowprec's strict JSON
NAN = "nan"
INF = "inf"
NEG_INF = "-inf"
#: the three words, in the order NaN, +Inf, -Inf
NONFINITE_WORDS: tuple[str, str, str] = (NAN, INF, NEG_INF)
#: what a table or a sentence shows for an absent value (None: not computed), given as `none=ABSENT`
ABSENT = "–"


def _real(v: Any) -> float | int:
    """`v` as a Python int (integers, exactly) or float; TypeError for anything else (bool included)."""
    if isinstance(v, bool) or (type(v).__module__ == "numpy" and type(v).__name__ in ("bool", "bool_")):
        raise TypeError(f"a number is needed, got the boolean {v!r}")
    if isinstance(v, numbers.Integral):
        return int(v)
    if isinstance(v, numbers.Real):
        return float(v)
    raise TypeError(f"a real number is needed, got {v!r} ({type(v).__name__})")


def _count(name: str, n: Any) -> int:
    if isinstance(n, bool) or not isinstance(n, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {n!r}")
    if not 0 <= int(n) <= 100:
        raise ValueError(f"{name} must be between 0 and 100, got {n}")
    return int(n)


def nonfinite_text(v: Any) -> str | None:
    """"nan", "inf" or "-inf" for a non-finite `v`; None for a finite one."""
    x = _real(v)
    if isinstance(x, int) or math.isfinite(x):
        return None
    if math.isnan(x):
        return NAN
    return INF if x > 0 else NEG_INF


def _spec(v: Any, spec: str, sign: bool, none: str | None) -> str:
    if v is None:
        if none is None:
            raise TypeError("a number is needed, got None (pass none='…' to print absent values)")
        return none
    x = _real(v)
    word = nonfinite_text(x)
    if word is not None:
        return "+" + word if sign and word == INF else word
    return format(x, ("+" if sign else "") + spec)


def general(v: Any, digits: int = 6, *, sign: bool = False, none: str | None = None) -> str:
    """`v` with `digits` significant digits, `%g` style: 0.1 → '0.1', 1.234e-5 → '1.23e-05' (3)."""
    return _spec(v, f".{_count('digits', digits)}g", sign, none)


def fixed(v: Any, decimals: int, *, sign: bool = False, none: str | None = None) -> str:
    """`v` with `decimals` digits after the point: 0.125 → '0.125' (3), 3 → '3.0' (1)."""
    return _spec(v, f".{_count('decimals', decimals)}f", sign, none)


def scientific(v: Any, decimals: int, *, sign: bool = False, none: str | None = None) -> str:
    """`v` as d.ddd e±XX with `decimals` digits after the point: 125 → '1.250e+02' (3)."""
    return _spec(v, f".{_count('decimals', decimals)}e", sign, none)


def percent(fraction: Any, digits: int = 3, *, decimals: int | None = None, sign: bool = False,
            none: str | None = None) -> str:
    """100 × `fraction` followed by ' %': in `digits` significant digits ('12.5 %'), or with
    `decimals` digits after the point when given ('12.500 %'). A non-finite percentage (of a
    non-finite fraction, or of one so large that 100 × it overflows) is its word alone ('nan', 'inf',
    '-inf')."""
    if fraction is None:
        return _spec(None, "", sign, none)
    hundred = 100 * _real(fraction)  # a huge fraction overflows to inf here
    spec = f".{_count('decimals', decimals)}f" if decimals is not None else f".{_count('digits', digits)}g"
    text = _spec(hundred, spec, sign, none)
    return text if nonfinite_text(hundred) is not None else text + " %"


def roundtrip(v: Any, *, none: str | None = None) -> str:
    """The shortest text that reads back to exactly `v`: Python's `repr` of the float ('0.1', '1.0',
    '-0.0', '1e-05'), an integer's digits ('3'), or the word of a non-finite value."""
    if v is None:
        return _spec(None, "", False, none)
    x = _real(v)
    if isinstance(x, int):
        return str(x)
    word = nonfinite_text(x)
    return word if word is not None else repr(x)


def shortest(v: Any, *, none: str | None = None) -> str:
    """`roundtrip` without a trailing '.0': 1.0 → '1', -0.0 → '-0', 0.1 → '0.1', 1e16 → '1e+16'."""
    return roundtrip(v, none=none).removesuffix(".0")
