"""Building one widget for a page: `build_widget` (bad parameters or a missing optional dependency
become an alert, not an exception), `built_view` (the widget placed and styled as `layout.frame`
places a page's widgets) and `compact_view` (the small view the start page shows)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import panel as pn

from lowprec.app import layout
from lowprec.app.text import as_text
from lowprec.app.widgets import get_widget_class
from lowprec.extras import missing_dependency


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


def compact_view(widget: Any) -> Any:
    """The small view of a widget that has one (the bin explorer on the start page)."""
    return widget.compact_view() if hasattr(widget, "compact_view") else widget
