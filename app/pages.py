"""Pages of the app: the landing page, one page per lesson, one standalone page per widget.

A lesson page renders `app.lessons.render_blocks(lesson)` in order: Markdown blocks become
Markdown panes and each `::: widget Name key=value` directive becomes that widget built with those
parameters (bad directive parameters show an "Invalid …" alert and do not stop the page). Every
page carries the same
navigation header. In a served session the widgets' parameters are synced with the URL query
(`pn.state.location.sync`), so a link reproduces a view: a widget page uses the bare parameter names
(`/widget/BinExplorer?format=E5M2&value=0x1.8p3`), a lesson page prefixes them with the widget
name (`BinExplorer.value=…`; a second widget of the same class gets `BinExplorer2.value=…`).
Route names: `ROUTE_HOME` (""), `lesson/<slug>`, `widget/<Name>`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, parse_qsl, urlencode

import panel as pn
import param

from lowprec.app.lessons import (
    Lesson,
    LessonError,
    MarkdownBlock,
    WidgetDirective,
    load_lessons,
    render_blocks,
)
from lowprec.app.widgets import WIDGETS, get_widget_class
from lowprec.extras import missing_dependency
from lowprec.app.text import as_text, set_alert

ROUTE_HOME = ""
SITE_TITLE = "lowprec — low-precision formats, explained bit by bit"


PAGE_CSS = """
.lp-header { border-bottom: 1px solid #ddd; margin-bottom: 8px; }
"""


def lesson_route(lesson: Lesson) -> str:
    return f"lesson/{lesson.slug}"


def widget_route(name: str) -> str:
    return f"widget/{name}"


@dataclass
class PlacedWidget:
    """A widget on a page with the URL prefix of its parameters ('' on a widget page), and where
    refused URL values are reported when not in the widget's own alert (a locked widget's region
    shows them outside the hidden part, so a bad link is never silent)."""

    name: str
    widget: Any  # the Viewer, or None when it could not be built
    prefix: str
    url_alert: Any = None


def href(route: str, from_home: bool, suffix: str = "") -> str:
    """Relative link to `route` from the home page or from a page one level down; `suffix` is
    '.html' for exported files ('' when served)."""
    up = "" if from_home else "../"
    if route in ("", "/"):
        return f"{up}index{suffix}" if suffix else (up or "./")
    return f"{up}{route}{suffix}"


def header(current: str = "", suffix: str = "") -> pn.viewable.Viewable:
    """Navigation shared by every page: home, and the current page's title."""
    home = href("", not current, suffix)
    text = f"[lowprec]({home}) · [lessons]({home}#lessons) · [widgets]({home}#widgets)"
    if current:
        text += f" · **{current}**"
    return pn.pane.Markdown(text, css_classes=["lp-header"], sizing_mode="stretch_width")


def build_widget(name: str, params: dict[str, Any] | None = None) -> tuple[Any, pn.viewable.Viewable]:
    """(widget or None, what to show). Bad parameters give an "Invalid …" alert instead of raising,
    and a widget whose optional dependency is not installed (torch for RecomputeDivergence) an
    alert naming the extra to install; an unknown widget name is a ValueError (lesson directives
    are checked when parsed)."""
    try:
        cls = get_widget_class(name)
    except ModuleNotFoundError as exc:
        message = missing_dependency(exc, f"The {name} widget")
        if message is None:
            raise
        return None, pn.pane.Alert(as_text(message), alert_type="warning")
    try:
        widget = cls(**(params or {}))
    except (ValueError, TypeError) as exc:
        return None, pn.pane.Alert(as_text(f"Invalid parameters for widget {name}: {exc}"), alert_type="danger")
    return widget, widget


def url_parameters(widget: param.Parameterized, prefix: str = "") -> dict[str, str]:
    """Mapping parameter → query name for every control of `widget` (all settable params but `name`)."""
    out: dict[str, str] = {}
    for p in widget.param:
        spec = widget.param[p]
        if p == "name" or spec.constant or spec.readonly or (spec.precedence is not None and spec.precedence < 0):
            continue
        out[p] = f"{prefix}{p}"
    return out


def sync_url(placed: list[PlacedWidget], location: Any = None) -> bool:
    """Sync each placed widget's parameters with the URL query (served sessions only; pass a
    `panel.io.location.Location` to sync with another one). Query values a widget refuses show
    as an "Invalid URL parameters" alert in that widget."""
    oversized: dict[str, int] = {}
    if location is None:
        location, oversized = _session_location()
    if location is None:
        return False
    oversized.update(_drop_oversized_query_values(location))
    for item in placed:
        if item.widget is None:
            continue
        widget = item.widget

        def on_error(values: dict[str, Any], widget: Any = widget, prefix: str = item.prefix,
                     url_alert: Any = item.url_alert) -> None:
            # Panel reads query values as JSON first, so a text parameter can arrive as a number
            # (value=3.3 → 3.3, and -0 → 0, losing the sign): retry text parameters with the raw
            # query text, one parameter at a time, and report only what is still refused.
            raw = {k: v[-1] for k, v in parse_qs(str(location.search).lstrip("?"),
                                                 keep_blank_values=True).items()}
            refused: dict[str, Any] = {}
            for name, value in values.items():
                if isinstance(widget.param[name], param.String):
                    value = raw.get(f"{prefix}{name}", str(value))
                try:
                    widget.param.update(**{name: value})
                except (ValueError, TypeError):
                    refused[name] = value
            alert = url_alert if url_alert is not None else getattr(widget, "_alert", None)
            if refused and alert is not None:
                text = ", ".join(f"{prefix}{k}={v!r}" for k, v in refused.items())
                set_alert(alert, f"Invalid URL parameters: {text}")

        location.sync(widget, url_parameters(widget, item.prefix), on_error=on_error)
        dropped = [k for k in oversized if k.startswith(item.prefix) and k[len(item.prefix):] in widget.param]
        if dropped and getattr(widget, "_alert", None) is not None:
            set_alert(widget._alert, "Invalid URL parameters: " + ", ".join(
                f"{k} is {oversized[k]} characters long (at most {MAX_QUERY_VALUE}); ignored" for k in dropped))
    return True


#: the longest URL query value a page reads (Panel's own query parser fails on integers of more
#: than 4300 digits, with an HTTP 500; no parameter needs more than a few dozen characters)
MAX_QUERY_VALUE = 1000


def _session_location() -> tuple[Any, dict[str, int]]:
    """`pn.state.location`, or — when Panel's own parser fails on the query (an integer of
    thousands of digits: HTTP 500 otherwise) — a Location built from the request with the
    oversized values removed, and {name: length} of those."""
    try:
        return pn.state.location, {}
    except ValueError:
        from panel.io.location import Location, _get_location_params
        from panel.util import edit_readonly

        doc: Any = pn.state.curdoc
        request = doc.session_context.request
        params = _get_location_params(request.protocol, request.host, request.uri)
        pairs = parse_qsl(str(params.get("search", "")).lstrip("?"), keep_blank_values=True)
        oversized = {k: len(v) for k, v in pairs if len(v) > MAX_QUERY_VALUE}
        kept = [(k, v) for k, v in pairs if len(v) <= MAX_QUERY_VALUE]
        params["search"] = ("?" + urlencode(kept)) if kept else ""
        location = Location()
        with edit_readonly(location):
            location.param.update(params)
        pn.state._locations[doc] = location
        return location, oversized


def _drop_oversized_query_values(location: Any) -> dict[str, int]:
    """Remove query values longer than MAX_QUERY_VALUE from `location.search` before Panel parses
    it; returns {name: length} of what was removed."""
    search = str(getattr(location, "search", "") or "")
    pairs = parse_qsl(search.lstrip("?"), keep_blank_values=True)
    oversized = {k: len(v) for k, v in pairs if len(v) > MAX_QUERY_VALUE}
    if oversized:
        kept = [(k, v) for k, v in pairs if len(v) <= MAX_QUERY_VALUE]
        location.search = ("?" + urlencode(kept)) if kept else ""
    return oversized


def lesson_body(lesson: Lesson) -> tuple[list[pn.viewable.Viewable], list[PlacedWidget]]:
    """The lesson's Markdown, widgets and interactive blocks as Panel objects, in order, and the
    widgets placed.

    Predictions, explanations and exercises become `app.exercises` components (client-side: they
    work the same on exported pages). The first widget after a prediction is placed in an
    `exercises.LockRegion` (`data-locked-by="<slug>/<id>"`) that keeps it hidden until the
    prediction is answered; the widget itself is built here either way, and its `PlacedWidget`
    is the widget, not the region (so URL sync reaches it)."""
    from lowprec.app import exercises  # imported here: this function is the lesson-blocks face
    from lowprec.app.lessons import PredictionBlock

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
            objects.append(pn.pane.Markdown(block.text, sizing_mode="stretch_width"))
        elif isinstance(block, WidgetDirective):
            counts[block.name] = counts.get(block.name, 0) + 1
            k = counts[block.name]
            prefix = f"{block.name}{'' if k == 1 else k}."
            widget, view = build_widget(block.name, dict(block.params))
            if lock is None:
                placed.append(PlacedWidget(block.name, widget, prefix))
                objects.append(view)
            else:
                region = exercises.locked(view, lock)
                placed.append(PlacedWidget(block.name, widget, prefix, url_alert=region.alert))
                objects.append(region)
            lock = None
        else:
            if isinstance(block, PredictionBlock):
                lock = exercises.block_key(lesson.slug, block.id)
            objects.append(exercises.block_view(block, lesson.slug))
    return objects, placed


def page(title: str, objects: list[pn.viewable.Viewable], current: str = "", suffix: str = "") -> pn.Column:
    """The common frame: header, then the objects."""
    return pn.Column(header(current, suffix), *objects, sizing_mode="stretch_width",
                     styles={"max-width": "1400px", "margin": "0 auto", "padding": "0 16px"},
                     stylesheets=[PAGE_CSS])


def lesson_page(lesson: Lesson, sync: bool = True, suffix: str = "") -> pn.Column:
    """A lesson rendered with its widgets (URL-synced when served)."""
    objects, placed = lesson_body(lesson)
    if sync:
        sync_url(placed)
    return page(lesson.title, objects, current=lesson.title, suffix=suffix)


def widget_page(name: str, params: dict[str, Any] | None = None, sync: bool = True,
                suffix: str = "") -> pn.Column:
    """One widget alone, with its title and the lessons that use it."""
    widget, view = build_widget(name, params)
    if sync and widget is not None:
        sync_url([PlacedWidget(name, widget, "")])
    uses = [lesson for lesson in load_lessons() if f"::: widget {name}" in lesson.text]
    links = ", ".join(f"[{lesson.title}]({href(lesson_route(lesson), False, suffix)})" for lesson in uses)
    intro = f"# {WIDGETS[name].title}\n\n" + (f"Used in: {links}" if links else "")
    return page(name, [pn.pane.Markdown(intro, sizing_mode="stretch_width"), view], current=name,
                suffix=suffix)


def landing_page(suffix: str = "") -> pn.Column:
    """Title, the lessons in order (with summaries) and the widgets."""
    lessons = load_lessons()  # a missing or broken lesson folder is an error, never an empty list
    lines = [f"# {SITE_TITLE}", "",
             "Lessons with live widgets: every number is computed by the bit-exact format models.",
             "", '<a id="lessons"></a>', "## Lessons", ""]
    for lesson in lessons:
        lines.append(f"{lesson.order}. [{lesson.title}]({href(lesson_route(lesson), True, suffix)}) — {lesson.summary}")
    lines += ["", '<a id="widgets"></a>', "## Widgets", ""]
    for name in WIDGETS:
        lines.append(f"- [{name}]({href(widget_route(name), True, suffix)}) — {WIDGETS[name].title}")
    objects: list[pn.viewable.Viewable] = [pn.pane.Markdown("\n".join(lines), sizing_mode="stretch_width")]
    return page(SITE_TITLE, objects, suffix=suffix)


def routes() -> dict[str, Callable[[], pn.viewable.Viewable]]:
    """Every page of the app keyed by route (see the module docstring); each value builds a fresh
    page per session."""
    table: dict[str, Callable[[], pn.viewable.Viewable]] = {"/": landing_page}
    for lesson in load_lessons():
        table[lesson_route(lesson)] = _bind(lesson_page, lesson)
    for name in WIDGETS:
        table[widget_route(name)] = _bind(widget_page, name)
    return table


def _bind(fn: Callable[..., pn.viewable.Viewable], arg: Any) -> Callable[[], pn.viewable.Viewable]:
    def build() -> pn.viewable.Viewable:
        return fn(arg)

    return build


def page_titles() -> dict[str, str]:
    """Browser-tab title per route."""
    titles = {"/": SITE_TITLE}
    for lesson in load_lessons():
        titles[lesson_route(lesson)] = f"{lesson.title} · lowprec"
    for name in WIDGETS:
        titles[widget_route(name)] = f"{name} · lowprec"
    return titles
