"""The one update protocol every widget of the registry (`app.widgets.WIDGETS`) shares.

`RecordWidget` is a `pn.viewable.Viewer` whose parameters are the knobs of one config record
(`@config_widget(Record)`, `lowprec.config`): the controls (`record_controls`), the URL state
(`app.pages.sync_url` syncs every parameter and reports refused query values in the widget's
`_alert`) and the lesson directives all use the record's names. This module owns what happens when
a parameter changes, once for every widget:

1. `update()` numbers the request (`_generation`, posted to the widget's supersede slot) and asks
   the widget for it (`_request()`: on the event loop, validates — the record's `ConfigError`, a
   page budget — and returns what the computation needs).
2. The computation (`_work(request, generation)`) runs inline outside a server (tests, notebooks:
   finished when `update()` returns) and, in a served session of a widget with `off_loop = True`,
   on a pool thread (`app.work.submit`; the widget may hand it on to a worker process) while the
   busy indicator shows. A newer request supersedes an older run: the run may stop early
   (`work.Superseded`) and its result is dropped in any case — only the newest request paints.
3. Success: `_accept` clears the message and the stale mark and hands the outcome to `_paint` (on
   the event loop, inside one Bokeh patch). Failure (`ValueError`/`TypeError`, from the request or
   the computation): `_refuse` shows "<error_prefix>: <the message>" escaped (`app.text.set_alert`)
   in the widget's alert, keeps the last good view and marks it as not current (`stale`, drawn by
   `_show_stale`). An unexpected error of a served run says "internal error … see the server log"
   and is re-raised for that log; a worker process that died says so and asks to try again.

A widget supplies `_build()` (its first computation and its views: a bad constructor argument
raises), `_work` and `_paint`, and where it needs them `_request`, `_before_update` (parameters that
move together), `_request_failed` (cleanup of a failed request) and `_show_stale`. It never watches
its record's parameters itself nor shows its own error: `tests/test_widget_base.py` checks that no
widget class redefines a method of `PROTOCOL`.
"""

from __future__ import annotations

import logging
import time
from typing import Any

import panel as pn
import param

from lowprec.app import work
from lowprec.app.params import control_widgets, widget_config
from lowprec.app.text import set_alert
from lowprec.config import fields_of

__all__ = ["PROTOCOL", "RecordWidget"]

log = logging.getLogger(__name__)

#: the methods of the update protocol: defined here only, never in a widget class
PROTOCOL = ("config", "update", "busy", "watched_names", "record_controls", "_on_param_change", "_submit",
            "_accept", "_refuse", "_mark_stale")


class RecordWidget(pn.viewable.Viewer):
    """Base of every widget: a config record's parameters and the update protocol (module docstring).

    After `__init__`: `error` is the message shown ('' when none), `stale` whether the view on screen
    is older than the request that failed, `last_update_s` the seconds the last shown update took.
    """

    #: the record whose knobs are the parameters (set by `app.params.config_widget`)
    config_class: type
    #: parameters whose change triggers an update; None: every knob of the record
    watched: tuple[str, ...] | None = None
    #: the words before a refused request's message
    error_prefix: str = "Invalid input"
    #: whether a served update runs off the event loop (on a pool thread, superseded by newer ones)
    off_loop: bool = False
    #: the alert's Panel sizing mode (None: Panel's default)
    alert_sizing_mode: str | None = "stretch_width"

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        self.error = ""
        self.stale = False
        self.last_update_s = 0.0
        sizing = {} if self.alert_sizing_mode is None else {"sizing_mode": self.alert_sizing_mode}
        self._alert = pn.pane.Alert("", alert_type="danger", visible=False, **sizing)
        self._busy = work.busy_indicator()
        self._generation = 0  # bumped by every update; a run whose number is older is superseded
        self._slot = work.claim_slot(self) if self.off_loop else None  # where a worker process sees it
        self._build()
        names = self.watched_names()
        if names:
            self.param.watch(self._on_param_change, list(names))

    # -- what a widget supplies -------------------------------------------------------------------
    def _build(self) -> None:
        """The first computation (at the constructor's parameters: a bad one raises) and the views."""
        raise NotImplementedError

    def _request(self) -> Any:
        """What the computation needs, read on the event loop; raises ValueError/TypeError to refuse.
        The default: the parameters as the record."""
        return self.config()

    def _work(self, request: Any, generation: int | None) -> Any:
        """The computation of `request`: inline (`generation` None) or on a pool thread (`generation`
        the request's number: a run may stop with `work.Superseded` once `_generation` is newer).
        Raises ValueError/TypeError for input it refuses."""
        raise NotImplementedError

    def _paint(self, request: Any, outcome: Any) -> None:
        """Show `outcome` (what `_work` returned), on the event loop."""
        raise NotImplementedError

    def _before_update(self, names: set[str]) -> None:
        """Called with the changed parameters' names before the update they trigger (parameters that
        move together are set here, events discarded)."""

    def _request_failed(self, request: Any, error: BaseException) -> None:
        """Cleanup after `request` failed in its computation (the message is shown by the protocol)."""

    def _show_stale(self, stale: bool) -> None:
        """Draw (or clear) the mark that the view is the last good request's, not the current one."""

    # -- the protocol ---------------------------------------------------------------------------------
    def config(self) -> Any:
        """The widget's parameters as its config record (raises its ConfigError, a ValueError)."""
        return widget_config(self)

    @classmethod
    def watched_names(cls) -> tuple[str, ...]:
        """The parameters whose change triggers an update."""
        if cls.watched is not None:
            return cls.watched
        record = getattr(cls, "config_class", None)
        return () if record is None else tuple(k.name for k in fields_of(record))

    def record_controls(self, parameters: list[str] | None = None,
                        widgets: dict[str, dict[str, Any]] | None = None, **layout: Any) -> pn.Param:
        """The controls of `parameters` (default: the watched ones), generated from the record: typed
        entry where a knob asks for it (`app.params.control_widgets`), then `widgets`' per-parameter
        options; `layout` goes to `pn.Param` (`show_name=False` unless given)."""
        names = list(self.watched_names() if parameters is None else parameters)
        spec: dict[str, dict[str, Any]] = {}
        for name, kind in control_widgets(type(self).config_class).items():
            if name in names:
                spec[name] = {"type": kind}
        for name, options in (widgets or {}).items():
            spec.setdefault(name, {}).update(options)
        layout.setdefault("show_name", False)
        return pn.Param(self.param, parameters=names, widgets=spec, **layout)

    def _on_param_change(self, *events: param.parameterized.Event) -> None:
        self._before_update({e.name for e in events})
        self.update()

    def update(self) -> bool:
        """Recompute and show; on bad input show the message and keep the last view, marked stale.
        Served (`off_loop`): the run goes off the event loop and this returns True once it is
        submitted (the view follows when it finishes)."""
        start = time.perf_counter()
        self._generation += 1
        generation = self._generation
        work.post_generation(self._slot, generation)
        doc = work.served_document() if self.off_loop else None
        if doc is not None:
            try:
                request = self._request()
            except (ValueError, TypeError) as exc:
                self._busy.value = False  # a run in flight is superseded: nothing else stops the spinner
                self._refuse(exc)
                return False
            self._submit(doc, generation, request, start)
            return True
        with work.batched():  # Bokeh model changes go out as one patch (once the page has loaded)
            try:
                request = self._request()
            except (ValueError, TypeError) as exc:
                self._refuse(exc)
                return False
            try:
                outcome = self._work(request, None)
            except (ValueError, TypeError) as exc:
                self._request_failed(request, exc)
                self._refuse(exc)
                return False
            self._accept(request, outcome, start)
        return True

    def _submit(self, doc: Any, generation: int, request: Any, start: float) -> None:
        self._busy.value = True

        def compute() -> Any:
            return self._work(request, generation)

        def finish(outcome: work.Outcome) -> None:
            if generation != self._generation:
                return  # superseded: a newer request owns the view and the spinner
            self._busy.value = False
            error = outcome.error
            if error is None:
                self._accept(request, outcome.value, start)
                return
            self._request_failed(request, error)
            if isinstance(error, (ValueError, TypeError)):
                self._refuse(error)
                return
            if isinstance(error, RuntimeError) and "worker process" in str(error):
                log.warning("%s: %s", type(self).__name__, error)  # the pool is replaced: the next run works
                self._refuse(RuntimeError(f"{error}; try again"))
                return
            self._refuse(RuntimeError(f"internal error ({type(error).__name__}); see the server log"))
            raise error

        work.submit(doc, compute, finish)

    @property
    def busy(self) -> bool:
        """Whether a served run is in progress."""
        return bool(self._busy.value)

    def _accept(self, request: Any, outcome: Any, start: float | None = None) -> None:
        """Show a computed `outcome`: the message and the stale mark go, `_paint` draws it."""
        self.error = ""
        set_alert(self._alert, "")
        self._mark_stale(False)
        self._paint(request, outcome)
        if start is not None:
            self.last_update_s = time.perf_counter() - start

    def _refuse(self, exc: BaseException, stale: bool = True) -> None:
        """Show `exc`'s message (escaped) and keep the last view, marked as not current unless `stale`
        is False (a refusal that leaves the view current: an upload dropped on arrival)."""
        self.error = f"{self.error_prefix}: {exc}"
        set_alert(self._alert, self.error)
        if stale:
            self._mark_stale(True)

    def _mark_stale(self, stale: bool) -> None:
        self.stale = stale
        self._show_stale(stale)
