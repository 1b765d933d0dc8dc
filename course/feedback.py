"""What a learner is told about an answer, computed by the model (pure Python, no Panel): the decode
table a page looks a typed code up in, the answer as the page states it, how to type a response and
what the page says when it cannot read one. `lowprec.app.exercises` puts these into the lesson
components' data; the browser only looks them up (`app/static/exercises.js`).
"""

from __future__ import annotations

import functools
from typing import Any

from lowprec.course.challenge import grouped_bits, shown_text
from lowprec.course.lesson_blocks import Answer
from lowprec.formats import code_table, get_format
from lowprec.formats.explain import bit_fields

__all__ = ["DECODE_WINDOW", "FULL_TABLE_BITS", "answer_text", "decode_table", "how_text", "unreadable_text"]

#: formats wider than 8 bits carry the decode table of the codes within this distance of the answer
#: (and of its sign twin) only; any other code is "far from the answer"
DECODE_WINDOW = 64
FULL_TABLE_BITS = 8


def decode_table(fmt: str, answer_code: int) -> dict[str, dict[str, Any]]:
    """Code (decimal text) → {"value", "text"} for the codes a learner may type: every code of a
    format up to 8 bits, else the codes within DECODE_WINDOW of the answer and of its sign twin.
    `text` is the exact value ('3.25 = 13/8 × 2^1', 'NaN', '-0')."""
    return {code: dict(entry) for code, entry in _decode_table(fmt, answer_code)}


@functools.lru_cache(maxsize=256)
def _decode_table(fmt: str, answer_code: int) -> tuple[tuple[str, dict[str, Any]], ...]:
    """decode_table's entries, computed once per (format, answer) for every session (the caller
    copies them)."""
    f = get_format(fmt)
    table = code_table(f)
    if f.bits <= FULL_TABLE_BITS:
        codes = range(f.n_codes)
    else:
        twin = answer_code ^ (1 << (f.bits - 1))
        near = {c for centre in (answer_code, twin)
                for c in range(max(0, centre - DECODE_WINDOW), min(f.n_codes, centre + DECODE_WINDOW + 1))}
        codes = sorted(near)  # type: ignore[assignment]
    out: dict[str, dict[str, Any]] = {}
    for code in codes:
        value = float(table.value[code])
        out[str(code)] = {"value": value, "text": shown_text(value)}
    return tuple(out.items())


def answer_text(answer: Answer) -> str:
    """The answer as the page states it: a code with its bits and value ('0x45 (0 1000 101) =
    3.25 = 13/8 × 2^1'), a number as the lesson's prose prints it, a choice as written."""
    if answer.kind == "code":
        fmt, code = str(answer.format), int(answer.value)
        bits = grouped_bits(format(code, f"0{answer.bits}b"), bit_fields(fmt))
        value = decode_table(fmt, code)[str(code)]["text"]
        return f"{answer.to_dict()['hex']} ({bits}) = {value}"
    if answer.kind in ("choice", "order", "classify"):
        return answer.text
    return answer.text


def how_text(answer: Answer) -> str:
    """How to type a response (shown next to the box)."""
    if answer.kind == "code":
        return f"(a code of {answer.format}: hex like 0x{'45' if (answer.bits or 8) > 4 else 'A'} " \
               f"or its {answer.bits} bits)"
    if answer.kind == "number":
        rule, amount = answer.tolerance
        within = {"exact": "the exact value",
                  "abs": f"within ±{amount:g}",
                  "rel": f"within {amount * 100:g} % of the answer"}[rule]
        return f"(a number, decimal like 0.1 or hex float like 0x1.8p3; {within} counts)"
    if answer.kind == "order":
        return "(move the items into order with their buttons, then check)"
    if answer.kind == "classify":
        return "(pick a category for every item, then check)"
    return ""


def unreadable_text(answer: Answer) -> str:
    """What the page says when it cannot read a response."""
    if answer.kind == "code":
        return (f"Type a code of {answer.format}: hex like 0x{'45' if (answer.bits or 8) > 4 else 'A'}, "
                f"or exactly {answer.bits} bits of 0 and 1.")
    if answer.kind == "number":
        return "Type a number: decimal like 0.1, or a hex float like 0x1.8p3 (inf and nan are numbers too)."
    if answer.kind == "order":
        return "Arrange every item once."
    if answer.kind == "classify":
        return "Pick a category for every item."
    return "Pick one of the choices."
