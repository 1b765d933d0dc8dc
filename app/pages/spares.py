"""Spare widgets: the widget of each prebuilt page (the start page's explorer, every widget page's
widget at its defaults), built on the server's event loop before anyone asks (`Spares`, `SPARES`)."""

from __future__ import annotations

import asyncio
import contextvars
import json
import logging
import os
import threading
from collections.abc import Callable
from typing import Any

import panel as pn

from lowprec.app.pages.building import built_view, compact_view
from lowprec.app.pages.site import LANDING_PARAMS, LANDING_WIDGET
from lowprec.app.widgets import WIDGETS


log = logging.getLogger(__name__)

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
