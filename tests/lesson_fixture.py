"""A one-lesson course for the lesson-component tests (tests/test_exercises*.py, test_lessons_cmd.py):
written to a temporary folder, read with `load_lessons(folder)`; its answers come from real worked
examples, so pages and `lowprec lessons` compute them as they do for the shipped lessons."""

from __future__ import annotations

from pathlib import Path

LESSON = """---
title: Probe lesson
order: 1
summary: A test lesson.
goal: Check the components.
---
Intro text.

::: predict overflow-torch
kind: choice
question: What does 465 become in E4M3FN under torch?
choices: 448 | NaN | 480
answer: example:e4m3fn_overflow_conventions.torch
:::

::: widget Conventions

::: explain overflow-torch
torch saturates: values beyond 464 become **448**.
:::

::: widget BinChallenge value=0.1 format=E4M3FN convention=torch

::: exercise smallest-normal-code
kind: code E4M3FN
prompt: Which E4M3FN code is the smallest normal value 2^-6?
answer: example:e4m3fn_range.emax
hint: The exponent field of the smallest normal is 1.
hint: The bias is 7, so the value is 2^(1 - 7).
solution: Sign 0, exponent 0001, mantissa 000: 0 0001 000 = 0x08.
:::

::: exercise max-value
kind: number
prompt: What is the largest finite E4M3FN value?
answer: example:e4m3fn_range.max
tolerance: abs 0.5
hint: In E4M3FN only S.1111.111 is NaN.
solution: 1.75 × 2^8 = 448.
:::
"""


def write_lesson_folder(folder: Path) -> Path:
    """A one-lesson course (slug 'probe'): a prediction locking a widget, its explanation, a second
    widget (not locked), a code exercise and a number exercise. The code exercise's answer is the
    field e4m3fn_range.emax (8), which is also the code of 2^-6 (0 0001 000): a fixture."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "01-probe.md").write_text(LESSON, encoding="utf-8")
    return folder
