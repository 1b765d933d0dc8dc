"""Predictions, explanations and exercises in lessons: syntax, structure rules, computed answers and
how responses are checked (lowprec.course.lesson_blocks through lowprec.course.lessons)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
import pytest

from lowprec.course.lesson_blocks import Answer, check_response, parse_response
from lowprec.course.lessons import (
    ExerciseBlock,
    ExplanationBlock,
    LessonError,
    MarkdownBlock,
    PredictionBlock,
    WidgetDirective,
    parse_lesson,
    render_blocks,
)

FRONT = "---\ntitle: T\norder: 1\nsummary: s\ngoal: g\n---\n"
VALUES: dict[tuple[str, str], tuple[Any, str]] = {
    ("bin", "code"): (0x4A, "74"),
    ("bin", "value"): (3.25, "3.25"),
    ("spike", "bucket"): ("over 90%", "over 90%"),
    ("conv", "torch"): (448.0, "448"),
    ("conv", "nan"): (float("nan"), "NaN"),
}


def fake_value(name: str, field: str) -> tuple[Any, str]:
    return VALUES[(name, field)]


def fake_text(name: str, field: str | None) -> str:
    return f"<{name}.{field}>"


EXERCISE = """::: exercise code-3-3
kind: code E4M3FN
prompt: Which code does 3.3 get? {{ example:bin.value }}
answer: example:bin.code
hint: Look at the neighbours.
hint: They are 0.25 apart
  between 2 and 4.
solution: It lies in the bin of 3.25.
  .
  A second paragraph.
:::
"""
PREDICT = """::: predict clip
kind: choice
question: How much is clipped?
choices: none | under 10% | over 90%
answer: example:spike.bucket
:::

::: widget Conventions

::: explain clip
Because the scale was stale.
:::
"""


def render(body: str, path: str = "l.md") -> list[Any]:
    lesson = parse_lesson(FRONT + body, slug="les", path=Path(path))
    return render_blocks(lesson, resolve=fake_text, resolve_value=fake_value)


def test_blocks_render_in_order_with_computed_answers() -> None:
    lesson = parse_lesson(FRONT + "Intro.\n\n" + PREDICT + "\n" + EXERCISE, slug="les")
    assert lesson.goal == "g" and lesson.predictions == ("clip",) and lesson.exercises == ("code-3-3",)
    blocks = render_blocks(lesson, resolve=fake_text, resolve_value=fake_value)
    kinds = [type(b) for b in blocks]
    assert kinds == [MarkdownBlock, PredictionBlock, WidgetDirective, ExplanationBlock, ExerciseBlock]
    pred, expl, ex = blocks[1], blocks[3], blocks[4]
    assert pred.answer.kind == "choice" and pred.answer.value == "over 90%"
    assert pred.answer.choices == ("none", "under 10%", "over 90%")
    assert expl.text == "Because the scale was stale.\n"
    assert ex.prompt == "Which code does 3.3 get? <bin.value>"
    assert ex.hints == ("Look at the neighbours.", "They are 0.25 apart between 2 and 4.")
    assert ex.solution == "It lies in the bin of 3.25.\n\nA second paragraph."
    assert ex.answer.to_dict() == {"kind": "code", "value": 0x4A, "text": "74", "source": "example:bin.code",
                                   "format": "E4M3FN", "bits": 8, "hex": "0x4A"}


@pytest.mark.parametrize("body, message", [
    ("::: exercise Bad_Id\nkind: number\n:::\n", "must be a slug"),
    ("::: exercise e\nkind: number\nprompt: p\nanswer: example:conv.torch\nhint: h\n", "is not closed"),
    ("::: exercise e\nkind: number\nprompt: p\nanswer: 448\nhint: h\nsolution: s\n:::\n",
     "answer must be example:NAME.FIELD"),
    ("::: exercise e\nkind: number\nprompt: p\nanswer: example:conv.torch\nsolution: s\n:::\n", "missing 'hint'"),
    ("::: exercise e\nkind: number\nprompt: p\nanswer: example:conv.torch\nhint: a\nhint: b\nhint: c\n"
     "solution: s\n:::\n", "at most 2 hints"),
    ("::: exercise e\nkind: code\nprompt: p\nanswer: example:bin.code\nhint: h\nsolution: s\n:::\n",
     "kind: code FORMAT"),
    ("::: exercise e\nkind: number\nprompt: p\nanswer: example:conv.torch\ntolerance: abs -1\nhint: h\n"
     "solution: s\n:::\n", "positive number"),
    ("::: exercise e\nkind: choice\nprompt: p\nanswer: example:conv.torch\nhint: h\nsolution: s\n:::\n",
     "'choices' goes with kind choice"),
    ("::: exercise e\nkind: number\nprompt: p\nprompt: q\nanswer: example:conv.torch\nhint: h\nsolution: s\n:::\n",
     "given twice"),
    ("::: exercise e\nkind: number\nauthor: me\n:::\n", "unknown key 'author'"),
    ("::: explain x\nWhy.\n:::\n", "follows no prediction"),
    ("::: predict p\nkind: number\nquestion: q\nanswer: example:conv.torch\n:::\n", "no '::: explain' block"),
    ("::: predict p\nkind: number\nquestion: q\nanswer: example:conv.torch\n:::\n::: explain p\nWhy.\n:::\n",
     "no widget between it and its explanation"),
    (EXERCISE + EXERCISE, "id 'code-3-3' already used"),
])
def test_malformed_blocks_fail_at_parse_time_naming_file_and_line(body: str, message: str) -> None:
    with pytest.raises(LessonError, match=r"^l\.md:\d+: .*" + message):
        parse_lesson(FRONT + body, path=Path("l.md"))


@pytest.mark.parametrize("answer_line, choices, message", [
    ("example:bin.value", "3 | 3.5", "must match exactly one of the choices"),
    ("example:bin.value", "3.25 | 13/4 | 3.250", "matches 2"),
])
def test_a_choice_answer_must_pick_exactly_one_choice(answer_line: str, choices: str, message: str) -> None:
    body = f"::: exercise e\nkind: choice\nprompt: p\nchoices: {choices}\nanswer: {answer_line}\nhint: h\nsolution: s\n:::\n"
    with pytest.raises(LessonError, match=message):
        render(body)


def test_a_code_answer_must_be_a_code_of_its_format() -> None:
    body = "::: exercise e\nkind: code E2M1\nprompt: p\nanswer: example:bin.code\nhint: h\nsolution: s\n:::\n"
    with pytest.raises(LessonError, match="not a code of E2M1"):
        render(body)


def _answer(kind: str, value: Any, **kw: Any) -> Answer:
    return Answer(kind, value, "example:x.y", str(value), **kw)


@pytest.mark.parametrize("response, ok", [
    ("0x4A", True), ("0x4a", True), ("01001010", True), ("0100 1010", True), ("0b01001010", True),
    ("0x4B", False), ("1001010", False), ("74", False), ("0x14A", False), ("", False), ("zz", False),
])
def test_code_responses(response: str, ok: bool) -> None:
    assert check_response(_answer("code", 0x4A, format="E4M3FN", bits=8), response) is ok


def test_code_responses_against_ml_dtypes() -> None:
    # the E4M3FN code of 3.3 (round to nearest even) from an independent cast
    code = int(np.array([3.3], np.float32).astype(ml_dtypes.float8_e4m3fn).view(np.uint8)[0])
    ans = _answer("code", code, format="E4M3FN", bits=8)
    assert check_response(ans, f"0x{code:02X}") and check_response(ans, format(code, "08b"))
    assert not check_response(ans, f"0x{code + 1:02X}")


@pytest.mark.parametrize("tol, response, ok", [
    (("exact", 0.0), "448", True), (("exact", 0.0), "448.0", True), (("exact", 0.0), "0x1.cp8", True),
    (("exact", 0.0), "447.99", False),
    (("abs", 0.5), "448.5", True), (("abs", 0.5), "448.6", False),
    (("rel", 0.01), "452", True), (("rel", 0.01), "453", False), (("rel", 0.01), "−448", False),
    (("exact", 0.0), "four", False),
])
def test_number_responses(tol: tuple[str, float], response: str, ok: bool) -> None:
    assert check_response(_answer("number", 448.0, tolerance=tol), response) is ok


@pytest.mark.parametrize("response, ok", [("-452", True), ("-444", True), ("-453", False), ("-443", False),
                                          ("452", False), ("448", False)])
def test_relative_tolerance_of_a_negative_answer(response: str, ok: bool) -> None:
    # the rule |response - answer| <= 1 % of |answer| = 4.48 around -448
    assert check_response(_answer("number", -448.0, tolerance=("rel", 0.01)), response) is ok


def test_nan_answer_takes_nan() -> None:
    assert check_response(_answer("number", float("nan")), "nan")
    assert not check_response(_answer("number", float("nan")), "0")


def test_choice_responses() -> None:
    a = _answer("choice", "over 90%", choices=("none", "under 10%", "over 90%"))
    assert check_response(a, "over 90%") and check_response(a, " over 90% ")
    assert not check_response(a, "none") and parse_response(a, "maybe") is None


def test_numeric_choice_matches_by_value() -> None:
    body = ("::: exercise e\nkind: choice\nprompt: p\nchoices: NaN | 448 | 464\nanswer: example:conv.torch\n"
            "hint: h\nsolution: s\n:::\n")
    (block,) = render(body)
    assert block.answer.value == "448"
    body_nan = body.replace("conv.torch", "conv.nan")
    (block,) = render(body_nan)
    assert block.answer.value == "NaN"
