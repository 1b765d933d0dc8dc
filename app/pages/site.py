"""The site's map: its routes (the start page, the glossary, one per lesson, one per widget), each
page's browser-tab title, and the start page's live widget. Pure data over the lessons and the
widget registry: nothing here builds a Panel object."""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any

from lowprec.course.lessons import Lesson, load_lessons
from lowprec.app.widgets import WIDGETS


ROUTE_HOME = ""

ROUTE_GLOSSARY = "glossary"

SITE_TITLE = "lowprec — low-precision formats, explained bit by bit"

TAGLINE = ("See exactly how a number becomes an 8-bit code in E4M3FN, E5M2, E2M1 or BF16, and how "
           "the scaling recipes built on those formats succeed or fail in training.")

#: the glossary's source (package data), rendered at /glossary when present
GLOSSARY_PATH = Path(str(resources.files("lowprec.content").joinpath("glossary.md")))


def lesson_route(lesson: Lesson) -> str:
    return f"lesson/{lesson.slug}"


def widget_route(name: str) -> str:
    return f"widget/{name}"


def has_glossary() -> bool:
    return GLOSSARY_PATH.is_file()


def route_names() -> list[str]:
    """Every route ('' is the start page), in site order."""
    names = [ROUTE_HOME] + [lesson_route(x) for x in load_lessons()]
    names += [widget_route(n) for n in WIDGETS]
    if has_glossary():
        names.append(ROUTE_GLOSSARY)
    return names


def page_titles() -> dict[str, str]:
    """Browser-tab title per route key of `routes()`."""
    titles = {"/": SITE_TITLE}
    for lesson in load_lessons():
        titles[lesson_route(lesson)] = f"{lesson.title} · lowprec"
    for name in WIDGETS:
        titles[widget_route(name)] = f"{name} · lowprec"
    if has_glossary():
        titles[ROUTE_GLOSSARY] = "Glossary · lowprec"
    return titles


def lab_lessons() -> list[Lesson]:
    """Lessons that are labs: those that run the recompute simulation step by step."""
    return [x for x in load_lessons() if "::: widget RecomputeDivergence" in x.text]


#: the start page's live widget, its parameters, and what it shows of it (`compact_view`). Its value
#: is none that a prediction of the course asks about (it opened on 3.3, the answer to lesson 1's
#: first prediction, before the reader had made it): 1.7 lands between two codes too, with an error
LANDING_WIDGET = "BinExplorer"

LANDING_PARAMS: dict[str, Any] = {"compare_format": "", "value": "1.7"}
