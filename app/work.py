"""Heavy work off the server's event loop: one thread pool for every session's simulation runs.

A served Panel app runs every session's callbacks on one event loop; a simulation run there stalls
every other session (issue 16: one heavy tab took another tab's reply from 0.2 s to 6.8 s). A
widget hands its run to `submit(doc, compute, finish)`: `compute()` runs on a pool thread
(`POOL_SIZE` of them, one per core this process may use; the threads run at a lower OS priority
where the platform allows, so the event loop — page loads and light widgets — gets the CPU first;
the codec's compiled kernels release the GIL), and `finish(Outcome)` runs back on the event loop
with the document locked, where Bokeh models may change — once the page has loaded in the browser
(before that Panel drops held model changes, so an early result waits for `pn.state.onload`). `Superseded` is what a run raises to stop
early when a newer request of the same widget exists. `served_document()` says whether there is an
event loop to keep free at all (None outside a served session: tests and notebooks run inline).
"""

from __future__ import annotations

import os
import threading
from contextlib import contextmanager
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Callable, Iterator

import panel as pn

__all__ = ["POOL_SIZE", "Outcome", "Superseded", "batched", "busy_indicator", "served_document", "submit"]

#: worker threads: one per core this process may run on (at least 2, so one run never queues
#: behind another on a small machine)
POOL_SIZE = max(2, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 2))
#: nice value of the worker threads (Linux: per thread); the event loop keeps the default 0
WORKER_NICENESS = 10

_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


class Superseded(Exception):
    """Raised inside a run when a newer request of the same widget makes its result useless."""


@dataclass(frozen=True)
class Outcome:
    """What a run gave: its value, or the exception it raised (`Superseded` never arrives here)."""

    value: Any = None
    error: BaseException | None = None


def _lower_priority() -> None:
    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), WORKER_NICENESS)
    except (AttributeError, OSError):  # not Linux, or not allowed: plain threads still help
        pass


def pool() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=POOL_SIZE, thread_name_prefix="lowprec-work",
                                       initializer=_lower_priority)
        return _pool


#: environment variable that makes served sessions run inline, as before issue 16 (the isolation
#: benchmark's baseline: `LOWPREC_APP_INLINE=1 lowprec serve`)
INLINE_ENV = "LOWPREC_APP_INLINE"


def served_document() -> Any:
    """The Bokeh document of the current served session, or None (no server, or `INLINE_ENV` set:
    run inline)."""
    if os.environ.get(INLINE_ENV) == "1":
        return None
    doc = pn.state.curdoc
    return doc if doc is not None and doc.session_context is not None else None


@contextmanager
def batched() -> Iterator[None]:
    """Where a widget changes its Bokeh models: `pn.io.hold()` (the changes go out as one patch)
    once the page has loaded in the browser; before that, plain changes. Panel treats a session
    whose page has not yet reported `document_ready` as unconnected and *drops* the changes made
    under hold() (it expects a full document sync that has already happened), so a value typed
    while the page still renders would never reach it; plain changes are sent one by one."""
    if pn.state.loaded:
        with pn.io.hold():
            yield
    else:
        yield


def submit(doc: Any, compute: Callable[[], Any], finish: Callable[[Outcome], None]) -> Future[Any]:
    """Run `compute()` on the pool, then `finish(outcome)` on `doc`'s event loop, document locked
    (skipped when `compute` raised `Superseded`)."""
    from panel.io.state import set_curdoc

    def apply(outcome: Outcome) -> None:
        with set_curdoc(doc), batched():
            finish(outcome)

    def on_loop(outcome: Outcome) -> None:
        # Until the browser reports the page rendered (document_ready), Panel treats the session as
        # not connected and drops model changes made under hold(); a result that arrives then (a
        # URL parameter's run finishing while the page still renders) waits for the page to load.
        with set_curdoc(doc):
            if pn.state.loaded:
                apply(outcome)
            else:
                pn.state.onload(lambda: apply(outcome))

    def done(future: Future[Any]) -> None:
        error = future.exception()
        if isinstance(error, Superseded):
            return
        outcome = Outcome(error=error) if error is not None else Outcome(value=future.result())
        try:
            doc.add_next_tick_callback(lambda: on_loop(outcome))
        except Exception:  # the session closed meanwhile: nobody is waiting for this result
            pass

    future = pool().submit(compute)
    future.add_done_callback(done)
    return future


def busy_indicator() -> pn.indicators.LoadingSpinner:
    """The spinner a widget shows while its run is in progress (hidden when idle)."""
    return pn.indicators.LoadingSpinner(value=False, visible=False, size=28, label="Computing…",
                                        css_classes=["lp-busy"])
