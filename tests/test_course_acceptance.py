"""Issue 31's acceptance, over every lesson of the course (the lessons other helpers add included):
read from `lowprec lessons --json`, as a learner's tools would read it.

- every lesson has at least two exercises and one prediction;
- every lesson lists its objectives (the parts of its goal), each checked by at least one named
  exercise, and every exercise or prediction it names exists;
- no question offers two options: a choice has 3 to 5, an order or a classification at least 3
  possible answers; a number or a code is open;
- no answer is given away: an answer's text must not appear verbatim in the 400 characters of
  lesson text a reader has seen when the answer box appears (`context` in the record: the Markdown
  before it, earlier questions and explanations, and its own question). A number is matched as a
  whole number (not as part of a longer one), a code as its hex or its bits, a choice as whole
  words; an order is given away when its items appear in the context in the right order. An answer
  text of one character ("0", "2") is too common to count as given away. `GIVEAWAY_EXCEPTIONS`
  lists the allowed cases, each with its reason.

The course's records are computed once per test module (`lowprec lessons --json --no-cache`: every
worked example, neither the record cache nor the records shipped with the course), and the shipped
records (content/lesson-records.json, `./dev records`) must be exactly these.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from lowprec import strictjson
from lowprec.course.lessons import load_lessons

ROOT = Path(__file__).resolve().parents[1]
SLUGS = [lesson.slug for lesson in load_lessons()]
CONTEXT_CHARS = 400

#: (lesson slug, block id) → why its answer may appear in the text before it
GIVEAWAY_EXCEPTIONS: dict[tuple[str, str], str] = {}


@pytest.fixture(scope="module")
def course(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    cache = tmp_path_factory.mktemp("lesson-cache")
    env = {**os.environ, "LOWPREC_CACHE_DIR": str(cache)}
    r = subprocess.run([sys.executable, "-m", "lowprec.app.cli", "lessons", "--json", "--no-cache"],
                       capture_output=True, text=True, cwd=ROOT, timeout=1800, check=False, env=env)
    assert r.returncode == 0, r.stderr[-3000:]
    records = strictjson.loads(r.stdout)
    return {rec["slug"]: rec for rec in records}


def test_the_shipped_records_are_the_computed_ones(course: dict[str, dict[str, Any]]) -> None:
    """What `lowprec lessons --json` serves from the records shipped with the course (issue 33: the
    first listing after a bare install computes nothing) is what computing every lesson gives, field
    for field, for every lesson (their inputs being current is tests/test_lessons_cmd.py's check)."""
    from lowprec.app.commands import lessons_cmd

    shipped = lessons_cmd.ShippedRecords(lessons_cmd.SHIPPED_RECORDS).entries()
    assert sorted(shipped) == sorted(course)
    for slug, record in course.items():
        assert shipped[slug]["record"] == record, f"{slug}: the shipped record is not the computed one; ./dev records"


def questions(record: dict[str, Any]) -> list[dict[str, Any]]:
    return [*record["predictions"], *record["exercises"]]


# ------------------------------------------------------------------------------------------------
# the checks, as functions of one record (so that a test can show each one fails)
# ------------------------------------------------------------------------------------------------


def structure_problems(record: dict[str, Any]) -> list[str]:
    out = []
    if len(record["exercises"]) < 2:
        out.append(f"{len(record['exercises'])} exercises (at least 2)")
    if len(record["predictions"]) < 1:
        out.append("no prediction")
    return out


def objective_problems(record: dict[str, Any]) -> list[str]:
    out = []
    exercises = {e["id"] for e in record["exercises"]}
    known = exercises | {p["id"] for p in record["predictions"]}
    objectives = record.get("objectives") or []
    if not objectives:
        out.append("no objectives listed (front matter `objectives:`)")
    for o in objectives:
        unknown = [x for x in o["checked_by"] if x not in known]
        if unknown:
            out.append(f"objective {o['text']!r} names unknown blocks {unknown}")
        if not any(x in exercises for x in o["checked_by"]):
            out.append(f"objective {o['text']!r} is checked by no exercise")
    return out


def option_problems(record: dict[str, Any]) -> list[str]:
    out = []
    for q in questions(record):
        answer = q["answer"]
        if answer["kind"] == "choice" and not 3 <= len(answer["choices"]) <= 5:
            out.append(f"{q['id']}: {len(answer['choices'])} choices (3 to 5)")
        if answer["kind"] in ("order", "classify") and (q.get("options") or 0) < 3:
            out.append(f"{q['id']}: only {q.get('options')} possible answers")
    return out


def _number_token(text: str) -> str | None:
    m = re.match(r"^\s*(-?[0-9][0-9_,]*(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?|-?(?:inf|Inf|NaN|nan))", text)
    return m.group(1) if m else None


def given_away(answer: dict[str, Any], context: str) -> str | None:
    """The answer's text found in `context` (see the module docstring), or None."""
    kind = answer["kind"]
    if kind == "order":
        items = answer["parts"]
        where = [context.find(item) for item in items]
        if all(i >= 0 for i in where) and where == sorted(where):
            return " | ".join(items)
        return None
    if kind == "classify":
        return None  # a classification names every category anyway; its pairing is what is asked
    forms: list[str] = []
    if kind == "number":
        token = _number_token(str(answer["text"]))
        if token is not None:
            forms.append(token)
    elif kind == "code":
        forms.append(str(answer["hex"]))
    else:
        forms.append(str(answer["value"]))
    for form in forms:
        if len(form) < 2:
            continue
        if kind == "number":
            pattern = r"(?<![\w.])" + re.escape(form) + r"(?![\w]|\.[0-9])"
        elif kind == "code":
            pattern = r"(?i)(?<![\w])" + re.escape(form) + r"(?![\w])"
        else:
            pattern = r"(?<![\w-])" + re.escape(form) + r"(?![\w-])"
        if re.search(pattern, context):
            return form
    if kind == "code":
        bits = format(int(answer["value"]), f"0{answer['bits']}b")
        if bits in context.replace(" ", ""):
            return bits
    return None


def giveaway_problems(record: dict[str, Any]) -> list[str]:
    out = []
    for q in questions(record):
        if (record["slug"], q["id"]) in GIVEAWAY_EXCEPTIONS:
            continue
        context = q["context"]
        assert len(context) <= CONTEXT_CHARS
        found = given_away(q["answer"], context)
        if found is not None:
            out.append(f"{q['id']}: the answer {found!r} appears in the text before it: …{context[-160:]!r}")
    return out


# ------------------------------------------------------------------------------------------------
# the tests: every lesson, whoever wrote it
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("slug", SLUGS)
def test_every_lesson_asks_two_exercises_and_a_prediction(course: dict[str, dict[str, Any]], slug: str) -> None:
    assert structure_problems(course[slug]) == []


@pytest.mark.parametrize("slug", SLUGS)
def test_every_goal_part_is_checked_by_a_named_exercise(course: dict[str, dict[str, Any]], slug: str) -> None:
    assert objective_problems(course[slug]) == []


@pytest.mark.parametrize("slug", SLUGS)
def test_no_two_option_question(course: dict[str, dict[str, Any]], slug: str) -> None:
    assert option_problems(course[slug]) == []


@pytest.mark.parametrize("slug", SLUGS)
def test_no_answer_in_the_400_characters_before_it(course: dict[str, dict[str, Any]], slug: str) -> None:
    assert giveaway_problems(course[slug]) == []


def test_every_exception_names_a_real_question_and_says_why(course: dict[str, dict[str, Any]]) -> None:
    for (slug, qid), reason in GIVEAWAY_EXCEPTIONS.items():
        assert slug in course and qid in {q["id"] for q in questions(course[slug])}, (slug, qid)
        assert len(reason.split()) >= 5, reason


def test_records_carry_what_the_checks_read(course: dict[str, dict[str, Any]]) -> None:
    for record in course.values():
        for q in questions(record):
            assert isinstance(q["context"], str) and q["context"]
            if q["answer"]["kind"] in ("choice", "order", "classify"):
                assert isinstance(q["options"], int)
            else:
                assert q["options"] is None


# ------------------------------------------------------------------------------------------------
# the checks can fail
# ------------------------------------------------------------------------------------------------


def _q(qid: str, answer: dict[str, Any], context: str, options: int | None = None) -> dict[str, Any]:
    return {"id": qid, "answer": answer, "context": context, "options": options}


def test_the_checks_can_fail() -> None:
    number = {"kind": "number", "text": "448", "value": 448.0}
    bad = {"slug": "x", "predictions": [], "objectives": [{"text": "t", "checked_by": ["p"]}],
           "exercises": [_q("a", number, "its largest value is 448, so"),
                         _q("b", {"kind": "choice", "value": "yes", "choices": ["yes", "no"]}, "…")]}
    bad["predictions"] = [_q("p", number, "nothing here")]
    assert structure_problems({**bad, "exercises": bad["exercises"][:1]})
    assert structure_problems({**bad, "predictions": []})
    assert objective_problems(bad) == ["objective 't' is checked by no exercise"]
    assert objective_problems({**bad, "objectives": []})
    assert option_problems(bad) == ["b: 2 choices (3 to 5)"]
    assert giveaway_problems(bad)[0].startswith("a: the answer '448'")
    # whole numbers only: 448 inside 4480 or 1.448 is not the answer; a code by its hex or bits
    assert given_away(number, "4480 and 1.448 and 448.5") is None
    assert given_away(number, "up to 448.") == "448"
    code = {"kind": "code", "value": 0x45, "hex": "0x45", "bits": 8}
    assert given_away(code, "its code 0X45 is") == "0x45"
    assert given_away(code, "bits 0100 0101 here") == "01000101"
    assert given_away({"kind": "choice", "value": "E5M2"}, "the E5M2FNUZ variant") is None
    order = {"kind": "order", "parts": ["first", "second", "third"]}
    assert given_away(order, "first, then second, then third") == "first | second | third"
    assert given_away(order, "third, then first, then second") is None
    assert given_away({"kind": "number", "text": "7", "value": 7.0}, "7 steps") is None  # one character
