"""The page builders: a lesson's body in order (`lesson_body`), the lesson, widget, glossary and
start pages, and `build_page` (route → page; ValueError naming the routes for an unknown one)."""

from __future__ import annotations

from typing import Any

import panel as pn

from lowprec.course.lessons import (
    Lesson,
    LessonError,
    MarkdownBlock,
    WidgetDirective,
    load_lessons,
    render_blocks,
)
from lowprec.app.pages.building import compact_view
from lowprec.app.pages.frame import Page, PlacedWidget, chrome, href
from lowprec.app.pages.lazy import place_widget
from lowprec.app.pages.links import heading_ids, rewrite_site_links
from lowprec.app.pages.site import (
    GLOSSARY_PATH,
    LANDING_PARAMS,
    LANDING_WIDGET,
    ROUTE_GLOSSARY,
    ROUTE_HOME,
    SITE_TITLE,
    TAGLINE,
    has_glossary,
    lab_lessons,
    lesson_route,
    route_names,
    widget_route,
)
from lowprec.app.pages.url_state import _addressed, _query_names, sync_url
from lowprec.app.text import as_text
from lowprec.app.widgets import WIDGETS


def lesson_body(lesson: Lesson, lazy: bool = False, query: frozenset[str] = frozenset(),
                sync: bool = False) -> tuple[list[pn.viewable.Viewable], list[PlacedWidget]]:
    """The lesson's Markdown, widgets and interactive blocks as Panel objects, in order, and the
    widgets placed. With `lazy` (served pages) a widget is a `LazyWidget`, built when the browser
    asks for it, unless the URL query (`query`: its parameter names) addresses it — a link that sets
    a widget's parameters gets that widget at once, with any refused value reported at once. (A
    widget whose view needs page scripts, `WidgetEntry.page_scripts`, is lazy too: `Page.serve`
    has the session load them.)

    Predictions, explanations and exercises become `app.exercises` components (client-side: they
    work the same on exported pages). The first widget after a prediction is placed in an
    `exercises.LockRegion` (`data-locked-by="<slug>/<id>"`) that keeps it hidden until the
    prediction is answered; the widget itself is built here either way, and its `PlacedWidget`
    is the widget, not the region (so URL sync reaches it); refused URL values show in the
    region's alert, outside its hidden part."""
    from lowprec.app import exercises  # imported here: this function is the lesson-blocks face
    from lowprec.course.lessons import PredictionBlock

    objects: list[pn.viewable.Viewable] = []
    placed: list[PlacedWidget] = []
    counts: dict[str, int] = {}
    try:
        blocks = render_blocks(lesson)
    except LessonError as exc:
        return [pn.pane.Alert(as_text(f"Invalid lesson: {exc}"), alert_type="danger")], []
    lock: str | None = None  # the prediction whose answer unlocks the next widget
    for block in blocks:
        if isinstance(block, MarkdownBlock):
            objects.append(pn.pane.Markdown(block.text, sizing_mode="stretch_width", plugins=[heading_ids]))
        elif isinstance(block, WidgetDirective):
            counts[block.name] = counts.get(block.name, 0) + 1
            k = counts[block.name]
            prefix = f"{block.name}{'' if k == 1 else k}."
            item, view = place_widget(block.name, dict(block.params), prefix, lazy and not _addressed(prefix, query),
                                      sync)
            placed.append(item)
            if lock is None:
                objects.append(view)
            else:
                region = exercises.locked(view, lock)
                item.url_alert = region.alert
                objects.append(region)
            lock = None
        else:
            if isinstance(block, PredictionBlock):
                lock = exercises.block_key(lesson.slug, block.id)
            objects.append(exercises.block_view(block, lesson.slug))
    return objects, placed


def lesson_page(lesson: Lesson, sync: bool = True, suffix: str = "", lazy: bool = False) -> Page:
    """A lesson rendered with its widgets (URL-synced when served; with `lazy`, each widget the
    URL does not address is built when the browser asks for it: `LazyWidget`)."""
    objects, placed = lesson_body(lesson, lazy=lazy, query=_query_names() if lazy else frozenset(), sync=sync)
    if sync:
        sync_url(placed)
    route = lesson_route(lesson)
    rewrite_site_links(objects, 1, suffix)
    crumbs: list[tuple[str, str | None]] = [("Start", ""), ("Lessons", "#lessons"),
                                            (f"{lesson.order}. {lesson.title}", None)]
    page_chrome = chrome(route, lesson.title, suffix, crumbs)
    return Page(route, f"{lesson.title} · lowprec", objects, placed, page_chrome)


def widget_page(name: str, params: dict[str, Any] | None = None, sync: bool = True,
                suffix: str = "", lazy: bool = False) -> Page:
    """One widget alone, with its title and the lessons that use it. With `lazy` (served pages)
    the widget is a `LazyWidget` unless the URL query sets any of its parameters: `served()` then
    builds it right after the page is sent, while the browser loads the page's scripts."""
    item, view = place_widget(name, dict(params or {}), "", lazy and not _query_names(), sync)
    placed = [item]
    if sync and item.widget is not None:
        sync_url(placed)
    uses = [lesson for lesson in load_lessons() if f"::: widget {name}" in lesson.text]
    links = ", ".join(f"[{lesson.order}. {lesson.title}]({href(lesson_route(lesson), False, suffix)})"
                      for lesson in uses)
    intro = f"# {WIDGETS[name].title}\n\n" + (f"Used in: {links}" if links else "")
    route = widget_route(name)
    crumbs: list[tuple[str, str | None]] = [("Start", ""), ("Widgets", "#widgets"), (name, None)]
    page_chrome = chrome(route, name, suffix, crumbs)
    return Page(route, f"{name} · lowprec", [pn.pane.Markdown(intro, sizing_mode="stretch_width"), view],
                placed, page_chrome)


def _glossary_lesson() -> Lesson:
    text = GLOSSARY_PATH.read_text(encoding="utf-8").removeprefix("\ufeff")
    lines = text.splitlines()
    body_line = 1
    if lines and lines[0].strip() == "---":  # front matter is allowed and not shown
        end = next((i for i, line in enumerate(lines[1:], start=1) if line.strip() == "---"), None)
        if end is not None:
            lines = lines[end + 1:]
            body_line = end + 2
    return Lesson(slug="glossary", title="Glossary", order=0, summary="", path=GLOSSARY_PATH,
                  text="\n".join(lines) + "\n", body_line=body_line)


def glossary_page(sync: bool = True, suffix: str = "", lazy: bool = False) -> Page:
    """`content/glossary.md`: Markdown (placeholders and widgets allowed, as in a lesson)."""
    objects, placed = lesson_body(_glossary_lesson(), lazy=lazy, query=_query_names() if lazy else frozenset(),
                                  sync=sync)
    if sync:
        sync_url(placed)
    rewrite_site_links(objects, 0, suffix)
    crumbs: list[tuple[str, str | None]] = [("Start", ""), ("Glossary", None)]
    page_chrome = chrome(ROUTE_GLOSSARY, "Glossary", suffix, crumbs)
    return Page(ROUTE_GLOSSARY, "Glossary · lowprec", objects, placed, page_chrome)


def landing_page(suffix: str = "", sync: bool = True, lazy: bool = False) -> Page:
    """What this is in one sentence, a live bin explorer, the learning path with "start here", the
    lab and the widgets. With `lazy` (served) the explorer is a `LazyWidget` unless the URL query
    sets its parameters."""
    lessons = load_lessons()  # a missing or broken lesson folder is an error, never an empty list
    first = lessons[0]
    intro = pn.pane.Markdown(
        f"# Low-precision number formats, bit by bit\n\n{TAGLINE}\n\n"
        f"Every number on these pages is computed by bit-exact models of the formats, checked "
        f"against ml_dtypes and torch. **[Start here: {first.order}. {first.title} →]"
        f"({href(lesson_route(first), True, suffix)})**",
        sizing_mode="stretch_width", css_classes=["lp-intro"])
    # served: built right after the page is sent (`served`)
    item, live = place_widget(LANDING_WIDGET, dict(LANDING_PARAMS), "", lazy and not _query_names(), sync,
                              view_of=compact_view)
    placed = [item]
    try_it = pn.pane.Markdown(
        "## Try it\n\nType any number and pick a format: the explorer shows the code it becomes, "
        "its bits, the error, and the *rounding bin* — every real number that lands on the same code.",
        sizing_mode="stretch_width")
    path = ['<a id="lessons"></a>', "## The learning path", "",
            f"{len(lessons)} short lessons, each with one goal, a prediction to make before a widget "
            f"reveals the answer, and exercises checked on the page. Your progress marks appear in "
            f"the course map.", ""]
    for lesson in lessons:
        start = " — **start here**" if lesson is first else ""
        goal = f"  \n  *Goal:* {lesson.goal}" if lesson.goal else ""
        path.append(f"{lesson.order}. [{lesson.title}]({href(lesson_route(lesson), True, suffix)}){start}"
                    f" — {lesson.summary}{goal}")
    labs = lab_lessons()
    lab_lines = ['<a id="lab"></a>', "## The lab", ""]
    if labs:
        for lesson in labs:
            lab_lines.append(f"- [{lesson.title}]({href(lesson_route(lesson), True, suffix)}) — {lesson.summary} "
                             f"(a stateful quantizer under real `torch.utils.checkpoint`, step by step)")
    lab_lines.append("- On your own machine: `lowprec simulate spike|attention|recompute|grouping|blocks` "
                     "writes the same results as JSON and HTML plots.")
    widget_lines = ['<a id="widgets"></a>', "## Widgets", "",
                    "Each widget also works alone (and in a notebook: `from lowprec.app.widgets import "
                    "BinExplorer`).", ""]
    for name in WIDGETS:
        widget_lines.append(f"- [{name}]({href(widget_route(name), True, suffix)}) — {WIDGETS[name].title}")
    if has_glossary():
        widget_lines += ["", f"Terms are defined in the [glossary]({href(ROUTE_GLOSSARY, True, suffix)})."]
    objects: list[Any] = [
        intro, try_it, live,
        pn.pane.Markdown("\n".join(path), sizing_mode="stretch_width"),
        pn.pane.Markdown("\n".join(lab_lines), sizing_mode="stretch_width"),
        pn.pane.Markdown("\n".join(widget_lines), sizing_mode="stretch_width"),
    ]
    if sync and item.widget is not None:
        sync_url(placed)
    return Page(ROUTE_HOME, SITE_TITLE, objects, placed, chrome(ROUTE_HOME, SITE_TITLE, suffix))


def build_page(route: str, suffix: str = "", sync: bool = True, lazy: bool = False) -> Page:
    """The page at `route` (see the module docstring); ValueError for an unknown route. `lazy`:
    the widgets of a lesson (or of the glossary) are built when the browser asks for them
    (served pages); so is the widget of a widget page and of the start page, which `served()`
    builds as soon as the page has gone out."""
    route = route.strip("/")
    if route == ROUTE_HOME:
        return landing_page(suffix=suffix, sync=sync, lazy=lazy)
    if route == ROUTE_GLOSSARY and has_glossary():
        return glossary_page(sync=sync, suffix=suffix, lazy=lazy)
    kind, _, name = route.partition("/")
    if kind == "widget" and name in WIDGETS:
        return widget_page(name, sync=sync, suffix=suffix, lazy=lazy)
    if kind == "lesson":
        lesson = next((x for x in load_lessons() if x.slug == name), None)
        if lesson is not None:
            return lesson_page(lesson, sync=sync, suffix=suffix, lazy=lazy)
    known = ", ".join(repr(r) for r in route_names())
    raise ValueError(f"unknown page {route!r}; pages: {known}")
