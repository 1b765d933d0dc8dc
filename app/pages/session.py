"""A page in a server session: `routes()` (what `lowprec serve` serves), `served` (build a route
for the current session: framed, URL-synced, widgets built as the reader reaches them, the first
screen's widget prebuilt right after the page goes out) and the session's resource path."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import panel as pn

from lowprec.app.pages.builders import build_page
from lowprec.app.pages.lazy import LazyWidget
from lowprec.app.pages.site import ROUTE_HOME, route_names
from lowprec.app.pages.spares import SPARES


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


def routes() -> dict[str, Callable[[], pn.viewable.Viewable]]:
    """Every page of the app keyed by route ("/" for the start page); each value builds a fresh
    page per session."""
    return {("/" if r == ROUTE_HOME else r): _bind(r) for r in route_names()}


def _bind(route: str) -> Callable[[], pn.viewable.Viewable]:
    def build() -> pn.viewable.Viewable:
        return served(route)

    return build
