"""`lowprec lessons [--json] [--root DIR]`: strict JSON listing every lesson's goal, predictions and
exercises with computed answers (checked here against independent oracles), a text form, clear
errors, and no Panel/Bokeh/torch import."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import ml_dtypes
import numpy as np
import torch

from lowprec import strictjson
from lowprec.app.lessons import load_lessons
from tests.lesson_fixture import write_lesson_folder

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("torch", "panel", "bokeh", "param", "triton")


def lowprec(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "lowprec.app.cli", *argv], capture_output=True, text=True,
                          cwd=ROOT, timeout=300, check=False)


def test_json_lists_goal_predictions_and_exercises_with_computed_answers(tmp_path: Path) -> None:
    folder = write_lesson_folder(tmp_path / "lessons")
    r = lowprec("lessons", "--json", "--root", str(folder))
    assert r.returncode == 0, r.stderr
    (lesson,) = strictjson.loads(r.stdout)  # strict RFC 8259
    assert {k: lesson[k] for k in ("slug", "title", "order", "goal")} == {
        "slug": "probe", "title": "Probe lesson", "order": 1, "goal": "Check the components."}
    (pred,) = lesson["predictions"]
    # torch 2.13 saturates E4M3FN: 465 → 448 (an independent cast)
    torch_465 = float(torch.tensor([465.0]).to(torch.float8_e4m3fn).float()[0])
    assert torch_465 == 448.0
    assert pred == {"id": "overflow-torch", "question": "What does 465 become in E4M3FN under torch?",
                    "kind": "choice", "unlocks": "Conventions",
                    "answer": {"kind": "choice", "value": "448", "text": "448", "choices": ["448", "NaN", "480"],
                               "source": "example:e4m3fn_overflow_conventions.torch"}}
    code, number = lesson["exercises"]
    assert [code["id"], number["id"]] == ["smallest-normal-code", "max-value"]
    # the code whose value ml_dtypes decodes to 2^-6 (the smallest normal)
    assert float(np.array([code["answer"]["value"]], np.uint8).view(ml_dtypes.float8_e4m3fn)[0]) == 2.0**-6
    assert code["kind"] == "code" and code["answer"]["hex"] == "0x08" and code["answer"]["format"] == "E4M3FN"
    assert len(code["hints"]) == 2 and code["solution"].endswith("= 0x08.")
    assert number["answer"]["value"] == float(ml_dtypes.finfo(ml_dtypes.float8_e4m3fn).max) == 448.0
    assert number["answer"]["tolerance"] == {"rule": "abs", "amount": 0.5}


def test_every_installed_lesson_is_listed() -> None:
    r = lowprec("lessons", "--json")
    assert r.returncode == 0, r.stderr
    listed = strictjson.loads(r.stdout)
    lessons = load_lessons()
    assert [x["slug"] for x in listed] == [x.slug for x in lessons]
    assert all(x["goal"] for x in listed)
    for record, lesson in zip(listed, lessons):
        assert [p["id"] for p in record["predictions"]] == list(lesson.predictions)
        assert [e["id"] for e in record["exercises"]] == list(lesson.exercises)


def test_text_form_and_errors(tmp_path: Path) -> None:
    folder = write_lesson_folder(tmp_path / "lessons")
    r = lowprec("lessons", "probe", "--root", str(folder))
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == [
        "  1  probe  Probe lesson — 1 prediction, 2 exercises",
        "     goal: Check the components.",
        "     predict overflow-torch (choice): 448 → unlocks Conventions",
        "     exercise smallest-normal-code (code): 0x08",
        "     exercise max-value (number): 448",
    ]
    r = lowprec("lessons", "nope", "--root", str(folder))
    assert r.returncode == 2 and r.stderr == "lowprec: error: unknown lesson 'nope'; lessons: probe\n"
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "01-bad.md").write_text((folder / "01-probe.md").read_text().replace(
        "example:e4m3fn_range.max", "example:e4m3fn_range.nope"), encoding="utf-8")
    r = lowprec("lessons", "--root", str(bad))
    assert r.returncode == 2 and r.stderr.startswith(f"lowprec: error: {bad / '01-bad.md'}:")
    assert "cannot compute the answer example:e4m3fn_range.nope" in r.stderr and "Traceback" not in r.stderr


def test_lessons_imports_neither_panel_nor_torch(tmp_path: Path) -> None:
    folder = write_lesson_folder(tmp_path / "lessons")
    code = ("import contextlib, io, sys\nfrom lowprec.app.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            f"    rc = main(['lessons', '--json', '--root', {str(folder)!r}])\n"
            f"print(rc, sorted(m for m in {HEAVY!r} if m in sys.modules))\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300,
                       check=False)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "0 []"
