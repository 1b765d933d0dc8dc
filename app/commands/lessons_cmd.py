"""`lowprec lessons [SLUG ...] [--json] [--root DIR]`: the course, lesson by lesson, with what it asks.

Per lesson: slug, title, order, summary, goal, and its predictions (id, question, answer kind, the
computed answer as `Answer.to_dict()`, the widget it unlocks) and exercises (id, prompt, answer
kind, answer, hints, worked solution), so a script can check every answer. `--json` prints the list
as strict JSON (`lowprec.strictjson`); the text form is one line per lesson with its goal and its
blocks' ids. `--root` reads another lesson folder (a draft course); slugs select lessons, and an
unknown slug is an error that lists the known ones. A lesson that does not parse or whose answer
cannot be computed is an error naming its file and line.

Pure Python: the lesson parser and the worked examples (numpy, `lowprec.formats`,
`lowprec.simulations`); no Panel, Bokeh or torch.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from lowprec import strictjson


def register(sub: Any) -> None:
    p = sub.add_parser("lessons")
    p.add_argument("slugs", nargs="*", metavar="SLUG", help="only these lessons (default: all)")
    p.add_argument("--json", action="store_true",
                   help="print every lesson's goal, predictions and exercises with their computed answers")
    p.add_argument("--root", metavar="DIR", default=None,
                   help="lesson folder to read (default: the lessons installed with lowprec)")
    p.set_defaults(func=run)


def lesson_record(lesson: Any) -> dict[str, Any]:
    """One lesson as JSON-ready data (its answers computed)."""
    from lowprec.app.lessons import (
        ExerciseBlock,
        PredictionBlock,
        WidgetDirective,
        render_blocks,
    )

    predictions: list[dict[str, Any]] = []
    exercises: list[dict[str, Any]] = []
    waiting: dict[str, Any] | None = None  # the last prediction, until a widget follows it
    for block in render_blocks(lesson):
        if isinstance(block, WidgetDirective) and waiting is not None:
            waiting["unlocks"] = block.name
            waiting = None
        elif isinstance(block, PredictionBlock):
            waiting = {"id": block.id, "question": block.question, "kind": block.answer.kind,
                       "answer": block.answer.to_dict(), "unlocks": None}
            predictions.append(waiting)
        elif isinstance(block, ExerciseBlock):
            exercises.append({"id": block.id, "prompt": block.prompt, "kind": block.answer.kind,
                              "answer": block.answer.to_dict(), "hints": list(block.hints),
                              "solution": block.solution})
    return {"slug": lesson.slug, "title": lesson.title, "order": lesson.order, "summary": lesson.summary,
            "goal": lesson.goal, "predictions": predictions, "exercises": exercises}


def run(args: argparse.Namespace) -> int:
    from lowprec.app.lessons import load_lessons

    lessons = load_lessons(Path(args.root) if args.root else None)
    if args.slugs:
        known = {lesson.slug: lesson for lesson in lessons}
        unknown = [s for s in args.slugs if s not in known]
        if unknown:
            raise ValueError(f"unknown lesson {unknown[0]!r}; lessons: {', '.join(known)}")
        lessons = [known[s] for s in args.slugs]
    records = [lesson_record(lesson) for lesson in lessons]
    if args.json:
        strictjson.write(records, None)
        return 0
    for r in records:
        asks = [f"{len(r['predictions'])} prediction{'s' * (len(r['predictions']) != 1)}",
                f"{len(r['exercises'])} exercise{'s' * (len(r['exercises']) != 1)}"]
        print(f"{r['order']:>3}  {r['slug']}  {r['title']} — {', '.join(asks)}")
        print(f"     goal: {r['goal']}")
        for p in r["predictions"]:
            print(f"     predict {p['id']} ({p['kind']}): {p['answer']['text']}"
                  + (f" → unlocks {p['unlocks']}" if p["unlocks"] else ""))
        for e in r["exercises"]:
            shown = e["answer"].get("hex", e["answer"]["text"])
            print(f"     exercise {e['id']} ({e['kind']}): {shown}")
    return 0
