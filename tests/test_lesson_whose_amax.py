"""Lesson 26 ("Whose amax?") in the course's form (issue 31's rules) and in `lowprec lessons --json`.

- `lowprec lessons --json --root DIR` (the lesson alone) lists its goal, its five predictions and four
  exercises with the answers the model computed (strict JSON), each equal to its worked example;
- every question offers 3 to 5 choices or asks for a number; no answer's text appears in the 400
  characters of lesson text before its question (the rendered text: placeholders resolved);
- each section places the WhoseAmax widget on a design of a different family, the five families
  together (`stateful.SCENARIOS`), and the checklist keeps seed 000's headings.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

from lowprec import strictjson
from lowprec.course.lessons import ExerciseBlock, ExplanationBlock, MarkdownBlock, PredictionBlock, WidgetDirective
from lowprec.course.lessons import load_lessons, render_blocks
from lowprec.course.examples import example
from lowprec.simulations.stateful import DESIGNS, SCENARIOS

ROOT = Path(__file__).resolve().parents[1]
LESSON = ROOT / "content" / "lessons" / "26-whose-amax.md"


def _lesson():  # type: ignore[no-untyped-def]
    return next(x for x in load_lessons() if x.slug == "whose-amax")


def test_the_lesson_is_listed_with_its_computed_answers(tmp_path: Path) -> None:
    folder = tmp_path / "lessons"
    folder.mkdir()
    shutil.copy(LESSON, folder / LESSON.name)
    r = subprocess.run([sys.executable, "-m", "lowprec.app.cli", "lessons", "--json", "--no-cache", "--root",
                        str(folder)], capture_output=True, text=True, cwd=ROOT, timeout=600, check=False)
    assert r.returncode == 0, r.stderr
    (record,) = strictjson.loads(r.stdout)
    assert record["slug"] == "whose-amax" and record["order"] == _lesson().order and record["goal"].endswith(".")
    assert len(record["predictions"]) == 5 and len(record["exercises"]) == 4
    for item in record["predictions"] + record["exercises"]:
        answer = item["answer"]
        name, field = answer["source"].removeprefix("example:").split(".")
        assert answer["value"] == example(name).values[field], item["id"]
    shard = next(e for e in record["exercises"] if e["id"] == "mis-read-shard")
    assert shard["answer"]["value"] == example("whose_amax_exercises").values["shard_factor"]


def _text_before(blocks: list, index: int) -> str:  # type: ignore[type-arg]
    """The lesson text a reader has seen before block `index` (Markdown, explanations, the questions'
    own prompts)."""
    parts = []
    for b in blocks[:index]:
        if isinstance(b, (MarkdownBlock, ExplanationBlock)):
            parts.append(b.text)
        elif isinstance(b, PredictionBlock):
            parts.append(b.question)
        elif isinstance(b, ExerciseBlock):
            parts.append(b.prompt + " " + b.solution)
    return " ".join(parts)


def giveaways(blocks: list) -> list[str]:  # type: ignore[type-arg]
    """Ids of the questions whose answer text appears in the 400 characters read before them or in
    their own question."""
    out = []
    for i, b in enumerate(blocks):
        if not isinstance(b, (PredictionBlock, ExerciseBlock)):
            continue
        own = b.question if isinstance(b, PredictionBlock) else b.prompt
        before = _text_before(blocks, i)[-400:] + " " + own
        text = b.answer.text.split(" %")[0]
        if re.search(rf"(?<![\w.]){re.escape(text)}(?![\w]|\.\d)", before, flags=re.IGNORECASE):
            out.append(b.id)
    return out


def test_no_two_option_question_and_no_answer_in_the_text_before_it() -> None:
    blocks = render_blocks(_lesson())
    asked = [b for b in blocks if isinstance(b, (PredictionBlock, ExerciseBlock))]
    assert len(asked) == 9
    for b in asked:
        if b.answer.kind == "choice":
            assert 3 <= len(b.answer.choices) <= 5, b.id
        else:
            assert b.answer.kind == "number", b.id
    assert giveaways(blocks) == []


def test_the_giveaway_check_can_fail() -> None:
    blocks = render_blocks(_lesson())
    i, b = next((i, b) for i, b in enumerate(blocks) if isinstance(b, ExerciseBlock))
    planted = blocks[:i] + [MarkdownBlock(f"Hint: the answer is {b.answer.text}.")] + blocks[i:]
    assert giveaways(planted) == [b.id]


def test_the_sections_walk_every_family_and_the_checklist_keeps_seed_000s_headings() -> None:
    blocks = render_blocks(_lesson())
    widgets = [b for b in blocks if isinstance(b, WidgetDirective)]
    assert {w.name for w in widgets} == {"WhoseAmax"}
    families = [DESIGNS[w.params["variant"]].scenario for w in widgets]
    assert families == list(SCENARIOS)
    assert all(DESIGNS[w.params["variant"]].defective for w in widgets)  # each section shows the defect first
    text = LESSON.read_text(encoding="utf-8")
    checklist = text[text.index("## Checklist"):]
    for heading in ("Ownership", "Window", "Idle owners", "Pairing", "Recompute", "Counts",
                    "Training-effective work"):
        assert f"**{heading}.**" in checklist, heading
