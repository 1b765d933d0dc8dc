"""Argument types the command modules share (argparse `type=` callables; the standard library only)."""

from __future__ import annotations

import argparse
import re
from decimal import Decimal
from fractions import Fraction
from typing import Callable

__all__ = ["integer_option"]


def integer_option(lo: int, hi: int) -> Callable[[str], int]:
    """An argparse `type` for a bounded count: decimal digits (`50000`, `50_000`) or an exact
    integer in scientific notation (`5e4`); outside `lo … hi`, or not an integer, it is refused in
    one line naming the option (`argument --n-random: must be an integer 0 … 10000000, got '1e10'`)."""

    def parse(text: str) -> int:
        t = text.strip().replace("_", "")
        value: int | None = None
        if re.fullmatch(r"[+-]?\d+", t):
            value = int(t)
        elif re.fullmatch(r"[+-]?(\d+\.?\d*|\.\d+)[eE][+-]?\d{1,4}", t):
            exact = Fraction(Decimal(t))
            value = int(exact) if exact.denominator == 1 else None
        if value is None or not lo <= value <= hi:
            raise argparse.ArgumentTypeError(f"must be an integer {lo} … {hi}, got {text!r}")
        return value

    parse.__name__ = "integer"  # argparse names the type in some messages
    return parse
