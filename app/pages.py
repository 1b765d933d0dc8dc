"""Pages of the app: the start page, one page per lesson, one per widget, and the glossary.

A lesson page renders `app.lessons.render_blocks(lesson)` in order (`lesson_body`): Markdown
blocks become Markdown panes and each `::: widget Name key=value` directive becomes that widget
built with those parameters (bad directive parameters show an "Invalid …" alert and do not stop the
page). Every page sits in the site frame of `app.layout` (top bar with the theme toggle, course map
with progress marks, breadcrumb and previous/next links on lessons). In a served session the
widgets' parameters are synced with the URL query (`pn.state.location.sync`), so a link reproduces
a view: a widget page uses the bare parameter names (`/widget/BinExplorer?format=E5M2&value=0x1.8p3`),
a lesson page prefixes them with the widget name (`BinExplorer.value=…`; a second widget of the same
class gets `BinExplorer2.value=…`).

Served lessons (and the glossary) build their widgets as the reader reaches them
(`LazyWidget`): the page goes out with its prose and a slot per widget, and each widget is built
when its slot nears the window, or in the background once the page is idle; a widget the URL
addresses is built with the page. A served widget page and the start page go out with a slot too,
and the server puts their widget in right after sending the page, while the browser loads its
scripts (`prebuild`), so the document the browser pulls already holds it; the widget itself is
usually a spare built before anyone asked (`Spares`: one per such page, replaced after use). An exported lesson
builds its widgets as the reader reaches them in the browser (`export._defer_widgets`); exported
widget pages and the start page hold theirs from the start.

Routes: `ROUTE_HOME` (""), `glossary` (when `content/glossary.md` exists), `lesson/<slug>`,
`widget/<Name>`. Links between pages are relative and written for the served site; lesson Markdown
links another page by its route relative to the lesson page (`../glossary#term`,
`../lesson/<slug>`, `../widget/<Name>`; `/glossary#term` works too) and `site_links` rewrites them
for the page's depth and, in an exported site, adds `.html`.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import logging
import os
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, parse_qsl, urlencode

import panel as pn
import param

from lowprec.app import layout
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
ROUTE_GLOSSARY = "glossary"
SITE_TITLE = "lowprec — low-precision formats, explained bit by bit"
TAGLINE = ("See exactly how a number becomes an 8-bit code in E4M3FN, E5M2, E2M1 or BF16, and how "
           "the scaling recipes built on those formats succeed or fail in training.")

#: the glossary's source (package data), rendered at /glossary when present
GLOSSARY_PATH = Path(str(resources.files("lowprec.content").joinpath("glossary.md")))

log = logging.getLogger(__name__)


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
    widget: Any  # the Viewer, or None when it could not be built (or is not built yet)
    prefix: str
    url_alert: Any = None
    lazy: bool = False  # built when the browser asks for it (`LazyWidget`)
    builder: Any = None  # the `LazyWidget` that builds it (served pages), else None


@dataclass(repr=False)
class Page:
    """One page: its route, the objects of its body, the widgets placed in it and the frame."""

    route: str
    title: str  # the browser tab's title
    objects: list[Any]
    placed: list[PlacedWidget]
    chrome: layout.Chrome

    @property
    def lazy_slots(self) -> int:
        """How many widgets the browser will find as slots to build (a prebuilt one arrives built)."""
        return sum(p.lazy and not (p.builder is not None and p.builder.prebuilt) for p in self.placed)

    @property
    def extensions(self) -> list[str]:
        """The Panel extensions whose scripts the page's widgets need (`WidgetEntry.page_scripts`)."""
        return sorted({e for p in self.placed for e in WIDGETS[p.name].page_scripts})

    def __repr__(self) -> str:
        return f"<Page /{self.route}: {self.title!r}, {len(self.objects)} blocks, {len(self.placed)} widget(s)>"

    def view(self) -> pn.Column:
        """The page's content without the site frame (what a notebook shows of it)."""
        return pn.Column(*self.objects, sizing_mode="stretch_width")

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> Any:
        """A page as a notebook cell's result shows its content (it showed `Page(route=…)`)."""
        return self.view()._repr_mimebundle_(include, exclude)

    def render(self) -> tuple[pn.Column, dict[str, Any]]:
        """The framed Panel root and the template variables (`layout.frame`)."""
        self.chrome.lazy_slots = self.lazy_slots
        return layout.frame(self.objects, self.chrome)

    def serve(self) -> pn.Column:
        """The framed root for the current server session, which renders in the site template,
        loading the scripts of exactly the Panel extensions its widgets name
        (`WidgetEntry.page_scripts`, `use_extensions`): a widget built after the page is sent finds
        them, and a page without such a widget does not load them."""
        use_extensions(self.extensions)
        root, variables = self.render()
        layout.use_in_session(variables, self.title)
        return root


def use_extensions(names: list[str], doc: Any = None) -> None:
    """The current server session's page (or the page of document `doc`, written by the export
    while `doc` is Panel's current document) loads the scripts of the Panel extensions `names` and
    of no other optional one. Panel decides per page which extension scripts go out: those a session
    declared, else those of every extension model the *process* has imported so far — so without
    a declaration a page's scripts depended on what earlier sessions had shown (after one RecipeLab,
    every page loaded filepond), and a widget built after the page was sent could miss its own.
    The declaration is Panel's per-document extension list (`pn.state._extensions_`, what
    `pn.extension(...)` fills inside a session; called directly because `pn.extension` also
    re-applies every class signature and grows a global list on each call)."""
    import importlib

    if doc is None:
        doc = pn.state.curdoc
        if doc is None or doc.session_context is None:
            return
    registry = getattr(pn.state, "_extensions_", None)
    if registry is None:  # a Panel without the per-document list: its public call
        if names:
            pn.extension(*names)
        return
    for name in names:  # the extension's models must be registered for their scripts to be listed
        importlib.import_module(pn.extension._imports[name])
    registry[doc] = sorted(set(registry.get(doc, [])) | set(names))  # keep what the session declared


def href(route: str, from_home: bool, suffix: str = "") -> str:
    """Relative link to `route` from the home page or from a page one level down; `suffix` is
    '.html' for exported files ('' when served)."""
    return layout.href(route, 0 if from_home else 1, suffix)


# ------------------------------------------------------------------------------------------------
# widgets on pages
# ------------------------------------------------------------------------------------------------


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
    as an "Invalid URL parameters" alert in that widget (or in its `url_alert`)."""
    oversized: dict[str, int] = {}
    if location is None:
        location, oversized = _session_location()
    if location is None:
        return False
    oversized.update(_drop_oversized_query_values(location))
    unparsed = _drop_unparseable_query_values(location)
    for item in placed:
        if item.widget is None:
            continue
        widget = item.widget

        def on_error(values: dict[str, Any], widget: Any = widget, prefix: str = item.prefix,
                     url_alert: Any = item.url_alert, raw: dict[str, str] | None = None) -> None:
            # Panel reads query values as JSON first, so a text parameter can arrive as a number
            # (value=3.3 → 3.3, and -0 → 0, losing the sign): retry text parameters with the raw
            # query text, one parameter at a time, and report only what is still refused.
            if raw is None:
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
        # values Panel would have ignored with only a log line (`[1`, `{`): the widget gets the text,
        # as it gets any other, and says what is wrong with it
        mine = {k[len(item.prefix):]: v for k, v in unparsed.items()
                if k.startswith(item.prefix) and k[len(item.prefix):] in url_parameters(widget)}
        if mine:
            on_error(mine, raw={f"{item.prefix}{k}": v for k, v in mine.items()})
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


def _drop_unparseable_query_values(location: Any) -> dict[str, str]:
    """Remove from `location.search` the values Panel would read as JSON and fail on (a value that
    starts with `[` or `{` but is no JSON: Panel logs a warning and ignores the parameter, and the
    page said nothing); returns {name: raw text} of what was removed."""
    search = str(getattr(location, "search", "") or "")
    pairs = parse_qsl(search.lstrip("?"), keep_blank_values=True)
    bad: dict[str, str] = {}
    for name, value in pairs:
        if value.lstrip().startswith(("[", "{")):
            try:
                json.loads(value)
            except ValueError:
                bad[name] = value
    if bad:
        kept = [(k, v) for k, v in pairs if k not in bad]
        location.search = ("?" + urlencode(kept)) if kept else ""
    return bad


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


class LazyWidget(pn.Column):
    """A widget of a served lesson page, built when the browser asks for it. The page goes out
    with its prose and, in each widget's place, an `exercises.LazySlot`; the page's script asks for
    the widget when the slot nears the view (else in the background, one at a time, once the page
    is idle), and `build()` then makes the widget, syncs it with the URL, styles it as
    `layout.frame` styles a page (`layout.finish`) and swaps it in. A lesson with six simulation
    widgets no longer builds, sends and draws all six before the reader sees its first line."""

    def __init__(self, item: PlacedWidget, params: dict[str, Any], sync: bool = True,
                 view_of: Callable[[Any], Any] | None = None) -> None:
        from lowprec.app.exercises import LazySlot, lazy_spec

        self.item = item
        self.built = False
        self.prebuilt = False  # `prebuild` scheduled the build for right after the page goes out
        self._params = dict(params)
        self._sync = sync
        self._view_of = view_of  # what to show of a built widget (default: the widget itself)
        self.slot = LazySlot(lazy_spec(item.name, WIDGETS[item.name].title))
        self.spare_key = spare_key(item.name, self._params, view_of)
        super().__init__(self.slot, sizing_mode="stretch_width", margin=0)
        self.slot.param.watch(self._on_request, "requested")

    def _on_request(self, event: param.parameterized.Event) -> None:
        if event.new:
            self.build()

    def build(self) -> None:
        """Build the widget and show it in place of the slot (once; later calls do nothing)."""
        if self.built:
            return
        self.built = True
        try:
            spare = SPARES.take(self.spare_key) if self.prebuilt else None
            widget, holder = spare if spare is not None else built_view(self.item.name, self._params, self._view_of)
            self.item.widget = widget
            if self._sync and widget is not None:
                sync_url([self.item])
        except Exception as exc:  # a bug, not bad input (build_widget reports that): say so, log it
            # no user text here: the name is a registered widget's, the error a class name
            self.objects = [pn.pane.Alert(
                f"The {self.item.name} widget could not be built (internal error: "
                f"{type(exc).__name__}); see the server log.", alert_type="danger",
                sizing_mode="stretch_width")]
            raise
        self.objects = list(holder.objects)


def built_view(name: str, params: dict[str, Any],
               view_of: Callable[[Any], Any] | None = None) -> tuple[Any, pn.Column]:
    """(widget or None, a column holding what to show of it, placed and styled as `layout.frame`
    places and styles a page's widgets): what `LazyWidget.build` swaps in for its slot."""
    widget, view = build_widget(name, params)
    if widget is not None and view_of is not None:
        view = view_of(widget)
    holder = pn.Column(layout.placed(view), sizing_mode="stretch_width", margin=0)
    layout.finish(holder)
    return widget, holder


def place_widget(name: str, params: dict[str, Any], prefix: str, lazy: bool, sync: bool,
                 view_of: Callable[[Any], Any] | None = None) -> tuple[PlacedWidget, Any]:
    """(the placed widget, what the page shows): a `LazyWidget` when `lazy`, else the widget built
    now (`build_widget`; its alert when it cannot be). `view_of` picks what to show of a built
    widget (default: the widget itself)."""
    if lazy:
        item = PlacedWidget(name, None, prefix, lazy=True)
        item.builder = LazyWidget(item, params, sync=sync, view_of=view_of)
        return item, item.builder
    widget, view = build_widget(name, params)
    if widget is not None and view_of is not None:
        view = view_of(widget)
    return PlacedWidget(name, widget, prefix), view


def _addressed(prefix: str, query: frozenset[str]) -> bool:
    """Whether the URL query names a parameter of the widget with this prefix."""
    return any(q.startswith(prefix) for q in query)


def _query_names() -> frozenset[str]:
    """The parameter names of the current session's URL query (empty outside a server)."""
    try:
        return frozenset(str(k) for k in (pn.state.session_args or {}))
    except Exception:  # noqa: BLE001 — no session: nothing addressed
        return frozenset()


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


# ------------------------------------------------------------------------------------------------
# links between pages
# ------------------------------------------------------------------------------------------------

_SITE_TARGET = (r"(?:\.\./|\./|/)*(glossary|index|lesson/[A-Za-z0-9_-]+|widget/[A-Za-z0-9_]+)(?:\.html)?"
                r"(\?[^\s)#\"']*)?(#[^\s)\"']*)?")
_MD_LINK_RE = re.compile(r"\]\(" + _SITE_TARGET + r"\)")
_HTML_LINK_RE = re.compile(r"href=\"" + _SITE_TARGET + "\"")


def site_links(text: str, depth: int, suffix: str = "") -> str:
    """Rewrite links to other pages of the site in Markdown/HTML `text` for a page `depth` folders
    down: `../glossary#x`, `/glossary#x`, `glossary#x` all become the right relative link, with
    `suffix` ('.html' when exported) after the route and a query (a widget's URL state:
    `../widget/BinExplorer?format=E4M3FN&value=3.3`) kept after it."""

    def target(match: re.Match[str]) -> str:
        route = "" if match.group(1) == "index" else match.group(1)
        link = layout.href(route + (match.group(3) or ""), depth, suffix)
        query = match.group(2) or ""  # a widget's URL state (a shareable view) goes after the file name
        if query:
            path, mark, frag = link.partition("#")
            link = path + query + mark + frag
        return link

    text = _MD_LINK_RE.sub(lambda m: f"]({target(m)})", text)
    return _HTML_LINK_RE.sub(lambda m: f'href="{target(m)}"', text)


def rewrite_site_links(objects: list[Any], depth: int, suffix: str) -> None:
    """`site_links` on every Markdown and HTML pane in `objects` (and inside their layouts)."""
    for obj in objects:
        if not hasattr(obj, "select"):
            continue
        for pane in obj.select(lambda o: isinstance(o, (pn.pane.Markdown, pn.pane.HTML))):
            text = pane.object
            if isinstance(text, str) and ("](" in text or "href=" in text):
                new = site_links(text, depth, suffix)
                if new != text:
                    pane.object = new


# ------------------------------------------------------------------------------------------------
# the frame's contents
# ------------------------------------------------------------------------------------------------


def nav_lessons() -> list[layout.NavLesson]:
    return [layout.NavLesson(lesson_route(x), x.order, x.title, x.slug, x.goal, x.exercises, x.predictions)
            for x in load_lessons()]


def chrome(route: str, title: str, suffix: str = "", crumbs: list[tuple[str, str | None]] | None = None,
           mode: str = "served") -> layout.Chrome:
    return layout.Chrome(route=route, title=title, lessons=nav_lessons(),
                         widgets=[(n, e.title) for n, e in WIDGETS.items()], suffix=suffix,
                         has_glossary=has_glossary(), crumbs=crumbs or [],
                         mode="export" if suffix else mode)


#: a heading's explicit anchor, `### Decode scale {#decode-scale}` (the glossary's terms)
_HEADING_ID = re.compile(r"\s*\{#([A-Za-z][A-Za-z0-9_-]*)\}\s*$")


def heading_ids(md: Any) -> None:
    """markdown-it plugin: a heading ending in `{#id}` gets that id (and loses the marker), so
    `glossary#term` links have a target (Panel's parser has no attribute syntax)."""

    def rule(state: Any) -> None:
        tokens = state.tokens
        for opening, inline in zip(tokens, tokens[1:]):
            if opening.type == "heading_open" and inline.type == "inline":
                match = _HEADING_ID.search(inline.content)
                if match:
                    opening.attrSet("id", match.group(1))
                    inline.content = inline.content[:match.start()]

    md.core.ruler.before("inline", "lowprec_heading_ids", rule)


def has_glossary() -> bool:
    return GLOSSARY_PATH.is_file()


def caption(text: str) -> pn.pane.Markdown:
    """A short line under a figure saying what to look at."""
    return pn.pane.Markdown(text, css_classes=["lp-caption"], sizing_mode="stretch_width")


# ------------------------------------------------------------------------------------------------
# pages
# ------------------------------------------------------------------------------------------------


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


def lab_lessons() -> list[Lesson]:
    """Lessons that are labs: those that run the recompute simulation step by step."""
    return [x for x in load_lessons() if "::: widget RecomputeDivergence" in x.text]


#: the start page's live widget, its parameters, and what it shows of it (`compact_view`). Its value
#: is none that a prediction of the course asks about (it opened on 3.3, the answer to lesson 1's
#: first prediction, before the reader had made it): 1.7 lands between two codes too, with an error
LANDING_WIDGET = "BinExplorer"
LANDING_PARAMS: dict[str, Any] = {"compare_format": "", "value": "1.7"}


def compact_view(widget: Any) -> Any:
    """The small view of a widget that has one (the bin explorer on the start page)."""
    return widget.compact_view() if hasattr(widget, "compact_view") else widget


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


# ------------------------------------------------------------------------------------------------
# routes
# ------------------------------------------------------------------------------------------------


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


def route_names() -> list[str]:
    """Every route ('' is the start page), in site order."""
    names = [ROUTE_HOME] + [lesson_route(x) for x in load_lessons()]
    names += [widget_route(n) for n in WIDGETS]
    if has_glossary():
        names.append(ROUTE_GLOSSARY)
    return names


def served(route: str) -> pn.viewable.Viewable:
    """Build `route` for the current server session: framed, URL-synced, in the site template, a
    lesson's widgets built as the reader reaches them (`LazyWidget`), and the widget of a widget
    page or of the start page built as soon as the page has been sent (`prebuild`). A lesson does
    not prebuild: its first widget is often below the first screen, and building it before the
    browser's document pull only delays the page (measured on the recompute lab: ready 1.4–2.0 s
    without, 2.3–2.9 s with)."""
    pin_local_resources()
    page = build_page(route, sync=True, lazy=True)
    if prebuilds(page.route):
        first = next((p.builder for p in page.placed if p.builder is not None), None)
        if first is not None:
            prebuild(first)  # it arrives built: `Page.lazy_slots` no longer counts it
    SPARES.start()
    return page.serve()


def local_dist_url() -> str:
    """Where the current session's page loads Panel's CSS from: this server's own copy, relative to
    the page (`../static/extensions/panel/` on a page one folder down), as Panel computes it when
    it renders a session's page."""
    from panel.io.resources import LOCAL_DIST

    rel = pn.state.rel_path
    return f"{rel}/{LOCAL_DIST}" if rel else LOCAL_DIST


def pin_local_resources(doc: Any = None) -> bool:
    """Give the current session's document (or `doc`) this server's resource path before any of its
    Bokeh models is built. Panel gives a model's stylesheets the address in the document's template
    variable `dist_url`, and the CDN's when it is missing; it sets it only when it renders the
    session's HTML page. A session Bokeh builds for a websocket instead never gets it: Bokeh
    discards a session nobody connected to within its unused-session lifetime (15 s), and when the
    browser's websocket arrives later (a loaded machine, a slow first load) it builds a new session
    for the same id without a page — whose every stylesheet then pointed at cdn.holoviz.org
    (issue 33's F2: listpanel, markdown, select, alerts, button and native.css requested from the
    CDN under load). False outside a served session."""
    if doc is None:
        doc = pn.state.curdoc
    if doc is None or doc.session_context is None:
        return False
    doc.template_variables.setdefault("dist_url", local_dist_url())
    return True


def prebuilds(route: str) -> bool:
    """Whether a served page builds its widget right after it is sent (`prebuild`): the start page
    and the widget pages, whose widget is the first screen."""
    return route == ROUTE_HOME or route.partition("/")[0] == "widget"


def prebuild(lazy: LazyWidget) -> bool:
    """Schedule `lazy.build()` on the current session's event loop, to run once the page's HTML has
    gone out: the server builds the widget while the browser loads and runs the page's scripts
    (about half a second on this kind of machine), so the document the browser then pulls holds
    the widget, and the page needs no round trip for it. A page sent with this widget's slot
    instead (the browser connected first, or the session closed) is left alone: the slot asks for
    the widget as usual. False outside a served session (nothing scheduled)."""
    from panel.io.state import set_curdoc

    doc = pn.state.curdoc
    context = getattr(doc, "session_context", None)
    if doc is None or context is None or not hasattr(context, "destroyed"):
        return False

    def run() -> None:
        # Bokeh keeps the session private (`_session`); without it, or with a browser already
        # connected (it would then render a slot and may miss changes Panel holds back until the
        # page reports it rendered), the slot's own request builds the widget.
        session = getattr(context, "_session", None)
        if session is None or context.destroyed or session.connection_count > 0:
            return
        with set_curdoc(doc):
            lazy.build()
        SPARES.refill(lazy.spare_key)

    doc.add_next_tick_callback(run)
    lazy.prebuilt = True
    return True


# ------------------------------------------------------------------------------------------------
# spare widgets: the widget of a prebuilt page, built before anyone asks
# ------------------------------------------------------------------------------------------------

#: environment variable that turns spare widgets off (`LOWPREC_APP_SPARES=0 lowprec serve`: every
#: prebuilt widget is built after its page is sent, as before stop 27; for A/B measurements)
SPARES_ENV = "LOWPREC_APP_SPARES"

SpareKey = tuple[str, str, Any]  # (widget name, its parameters as sorted JSON, what to show of it)


def spare_key(name: str, params: dict[str, Any], view_of: Callable[[Any], Any] | None = None) -> SpareKey:
    """The key of a widget built with `params` and shown as `view_of` shows it."""
    return name, json.dumps(params, sort_keys=True, default=repr), view_of


class Spares:
    """At most one spare per key of the prebuilt pages (the start page's explorer and each widget
    page's widget at its defaults): `built_view` run ahead, on the server's event loop with no
    session, so a page that needs one takes it and its `prebuild` only syncs it with the URL and
    swaps it in. Building a widget (its Python objects, figures and styles) is about half of what
    the server does for such a page before the browser can draw it (0.13-0.36 s per widget
    measured in-process, more when the browser shares the CPUs); with a spare, that part no longer
    competes with sending the page's scripts. A spare is used by one session only and replaced
    `REFILL_DELAY_S` after it is taken; the first served page schedules one of each, after
    `START_DELAY_S`, one per event-loop turn."""

    START_DELAY_S = 2.0
    REFILL_DELAY_S = 2.0
    HOLD_RETRY_S = 1.0

    def __init__(self) -> None:
        self._ready: dict[SpareKey, tuple[Any, pn.Column]] = {}
        self._pending: set[SpareKey] = set()
        self._lock = threading.Lock()
        self._started = False
        self.taken = 0  # spares handed to pages since the process started
        self.built = 0  # spares built
        # set while spares may be built; the server clears it during its start-up warm-up (a spare
        # RecipeLab analyses its sample: on a fresh install that compiles the lab's kernels, about a
        # minute on two cores, which on the event loop would stall every page)
        self._released = threading.Event()
        self._released.set()

    def hold(self) -> None:
        """Build no spare until `release()` (scheduled ones wait, checking once a second)."""
        self._released.clear()

    def release(self) -> None:
        self._released.set()

    @staticmethod
    def enabled() -> bool:
        return os.environ.get(SPARES_ENV, "1") != "0"

    def take(self, key: SpareKey) -> tuple[Any, pn.Column] | None:
        """The spare for `key` (removed: nobody else gets it), or None."""
        with self._lock:
            spare = self._ready.pop(key, None)
            if spare is not None:
                self.taken += 1
            return spare

    def fill(self, key: SpareKey) -> bool:
        """Build the spare for `key` now (no-op when there is one; True when one was built). A widget
        that cannot be built (bad parameters, a missing extra) gets no spare: its page says why."""
        with self._lock:
            self._pending.discard(key)
            if key in self._ready:
                return False
        name, params, view_of = key
        widget, holder = built_view(name, json.loads(params), view_of)
        if widget is None:
            return False
        with self._lock:
            self._ready.setdefault(key, (widget, holder))
            self.built += 1
        return True

    def _schedule(self, key: SpareKey, delay: float) -> None:
        """Build the spare for `key` on the current event loop in `delay` seconds (no loop: never)."""
        if not self.enabled():
            return
        try:
            loop = asyncio.get_running_loop()  # the server's (Tornado runs on asyncio)
        except RuntimeError:
            return
        with self._lock:
            if key in self._pending or key in self._ready:
                return
            self._pending.add(key)

        def run() -> None:
            if not self._released.is_set():  # the server is still warming up: try again later
                loop.call_later(self.HOLD_RETRY_S, run)
                return
            try:  # in an empty context: no session's document is current (`pn.state.curdoc` is None)
                contextvars.Context().run(self.fill, key)
            except Exception:  # a bug: the page that needs it builds its own (and reports it there)
                log.exception("building a spare %s failed", key[0])

        loop.call_later(delay, run)

    def refill(self, key: SpareKey) -> None:
        """Replace a taken spare, `REFILL_DELAY_S` from now (the page that took it is then drawing)."""
        self._schedule(key, self.REFILL_DELAY_S)

    def start(self) -> None:
        """Once per process, on the first served page: schedule a spare for every prebuilt page,
        `START_DELAY_S` from now, one per event-loop turn."""
        with self._lock:
            if self._started or not self.enabled():
                return
            self._started = True
        for i, key in enumerate(prebuilt_keys()):
            self._schedule(key, self.START_DELAY_S + 0.05 * i)

    def clear(self) -> None:
        """Forget every spare and pending build (tests)."""
        with self._lock:
            self._ready.clear()
            self._pending.clear()
            self._started = False


def prebuilt_keys() -> list[SpareKey]:
    """The spare key of every page that `served` prebuilds, in site order: the start page's explorer,
    then each widget page's widget at its defaults (what `landing_page` and `widget_page` place
    when the URL sets no parameter)."""
    return ([spare_key(LANDING_WIDGET, dict(LANDING_PARAMS), compact_view)]
            + [spare_key(name, {}) for name in WIDGETS])


SPARES = Spares()


def routes() -> dict[str, Callable[[], pn.viewable.Viewable]]:
    """Every page of the app keyed by route ("/" for the start page); each value builds a fresh
    page per session."""
    return {("/" if r == ROUTE_HOME else r): _bind(r) for r in route_names()}


def _bind(route: str) -> Callable[[], pn.viewable.Viewable]:
    def build() -> pn.viewable.Viewable:
        return served(route)

    return build


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
