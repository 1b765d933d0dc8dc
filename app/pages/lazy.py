"""Placing a widget on a page: now, or as a `LazyWidget` (a slot the browser asks to fill when the
reader nears it; a prebuilt page's widget is taken from the spares)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import panel as pn
import param

from lowprec.app.pages.building import build_widget, built_view
from lowprec.app.pages.frame import PlacedWidget
from lowprec.app.pages.spares import SPARES, spare_key
from lowprec.app.pages.url_state import sync_url
from lowprec.app.widgets import WIDGETS


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
