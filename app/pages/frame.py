"""What a page is: `Page` (its route, title, body, placed widgets and site frame), `PlacedWidget`,
the frame's contents (`chrome`: the course map, breadcrumb and pager of `app.layout`), relative
links from a page (`href`) and the Panel extensions a page's session loads (`use_extensions`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import panel as pn

from lowprec.app import layout
from lowprec.course.lessons import load_lessons
from lowprec.app.pages.site import has_glossary, lesson_route
from lowprec.app.widgets import WIDGETS


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


def nav_lessons() -> list[layout.NavLesson]:
    return [layout.NavLesson(lesson_route(x), x.order, x.title, x.slug, x.goal, x.exercises, x.predictions)
            for x in load_lessons()]


def chrome(route: str, title: str, suffix: str = "", crumbs: list[tuple[str, str | None]] | None = None,
           mode: str = "served") -> layout.Chrome:
    return layout.Chrome(route=route, title=title, lessons=nav_lessons(),
                         widgets=[(n, e.title) for n, e in WIDGETS.items()], suffix=suffix,
                         has_glossary=has_glossary(), crumbs=crumbs or [],
                         mode="export" if suffix else mode)


def caption(text: str) -> pn.pane.Markdown:
    """A short line under a figure saying what to look at."""
    return pn.pane.Markdown(text, css_classes=["lp-caption"], sizing_mode="stretch_width")
