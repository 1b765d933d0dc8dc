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

A simulation declared in `lowprec.simulations` runs one step further away, in a worker *process*
(`run_simulation`: `POOL_SIZE` processes, spawned fresh (no fork of a server that has imported torch
and started threads), niced, each exiting on its own once the server is gone): a thread still
holds the GIL for the Python-level steps of a run, and the event loop thread then waits for it
(issue 16's isolation benchmark: a light reply's p95 was 1.5 s with three heavy sessions on thread
workers). A process shares nothing with the loop but the CPU, and the OS gives the loop (and the
browser) that first. Superseding crosses the process boundary through a shared array: each widget
holds a slot (`claim_slot`) where it posts its newest request number (`post_generation`), and the
run's progress callback in the worker compares it with its own.
"""

from __future__ import annotations

import importlib
import multiprocessing
import os
import threading
import time
import weakref
from contextlib import contextmanager
from concurrent.futures import Future, ProcessPoolExecutor, ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import Any, Callable, Iterator

import panel as pn
import param

__all__ = ["POOL_SIZE", "Outcome", "Superseded", "batched", "busy_indicator", "claim_slot", "post_generation",
           "run_in_process", "run_simulation", "served_document", "shutdown", "start_processes", "submit"]

#: worker threads: one per core this process may run on (at least 2, so one run never queues
#: behind another on a small machine)
POOL_SIZE = max(2, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 2))
#: nice value of the worker threads (Linux: per thread); the event loop keeps the default 0
WORKER_NICENESS = 10

_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


class Superseded(Exception):
    """Raised inside a run when a newer request of the same widget makes its result useless."""

    def __init__(self, message: str = "superseded by a newer request of the same widget") -> None:
        super().__init__(message)


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


#: the busy indicator's stylesheet: a small ring turning next to "Computing…" (motion only where
#: the reader allows it)
BUSY_CSS = """
.lp-spinner { display: inline-flex; align-items: center; gap: 8px; font-size: 14px;
  color: var(--lp-text, #1b1f24); }
.lp-spinner::before { content: ""; width: 16px; height: 16px; border-radius: 50%;
  border: 3px solid var(--lp-border, #c8ccd2); border-top-color: var(--lp-focus, #1a66d6);
  animation: lp-turn 0.9s linear infinite; }
@keyframes lp-turn { to { transform: rotate(360deg); } }
@media (prefers-reduced-motion: reduce) { .lp-spinner::before { animation: none; } }
"""
BUSY_HTML = '<span class="lp-spinner" role="status">Computing…</span>'


class BusyIndicator(pn.viewable.Viewer):
    """What a widget shows while its run is in progress: "Computing…" with a turning ring, in a
    box of fixed height that is always there (empty when idle).

    Only the box's text changes. Panel's LoadingSpinner, shown and hidden through `visible` and
    its CSS classes, made BokehJS lay out and repaint the whole page at each of its four changes
    per run: about 0.3 s of the browser's main thread each on an attention page (1.2 s per run,
    measured), which every other tab of the same browser waited for."""

    value = param.Boolean(default=False, doc="whether a run is in progress")

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        self._pane = pn.pane.HTML("", height=28, sizing_mode="stretch_width", margin=(2, 10),
                                  css_classes=["lp-busy"], stylesheets=[BUSY_CSS])
        self.param.watch(self._draw, "value")

    def _draw(self, event: param.parameterized.Event) -> None:
        self._pane.object = BUSY_HTML if event.new else ""

    def __panel__(self) -> pn.viewable.Viewable:
        return self._pane


def busy_indicator() -> BusyIndicator:
    """The indicator a widget shows while its run is in progress (empty when idle)."""
    return BusyIndicator()


# -- simulation runs in worker processes ---------------------------------------------------------

#: how many widgets can hold a supersede slot at once (a widget without one still works: its runs
#: just finish before a newer one starts instead of stopping early)
SLOTS = 4096
_procs: ProcessPoolExecutor | None = None
_procs_lock = threading.Lock()
#: modules a worker imports as it starts (`start_processes`), so a first request finds them loaded
_preload: tuple[str, ...] = ()
#: multiprocessing RawArray('q', SLOTS): the newest request number per slot (in the server, and in
#: a worker, where its initializer sets it)
_tokens: Any = None
_free_slots: list[int] = []
_slots_lock = threading.Lock()


def _context() -> Any:
    return multiprocessing.get_context("spawn")


def _exit_with(server_pid: int) -> None:
    """A worker's watchdog: exit as soon as the server process is gone (a server stopped by a
    signal runs no clean-up, and an orphaned worker would keep its memory)."""
    while True:
        time.sleep(1.0)
        if os.getppid() != server_pid:
            os._exit(0)


def _process_init(tokens: Any, niceness: int, server_pid: int, preload: tuple[str, ...]) -> None:
    global _tokens
    _tokens = tokens
    try:
        os.nice(niceness)
    except (AttributeError, OSError):
        pass
    threading.Thread(target=_exit_with, args=(server_pid,), name="lowprec-watchdog", daemon=True).start()
    for module in preload:
        importlib.import_module(module)


def _tokens_array() -> Any:
    global _tokens
    with _slots_lock:
        if _tokens is None:
            _tokens = _context().RawArray("q", SLOTS)
            _free_slots.extend(range(SLOTS - 1, -1, -1))
        return _tokens


def processes() -> ProcessPoolExecutor:
    """The worker processes (created on first use, or again after a worker died)."""
    global _procs
    tokens = _tokens_array()
    with _procs_lock:
        if _procs is None:
            _procs = ProcessPoolExecutor(max_workers=POOL_SIZE, mp_context=_context(),
                                         initializer=_process_init,
                                         initargs=(tokens, WORKER_NICENESS, os.getpid(), _preload))
        return _procs


def _noop() -> int:
    return os.getpid()


def start_processes(preload: tuple[str, ...] = ()) -> None:
    """Start every worker process now, each importing the modules `preload` (a server calls this at
    start-up with its simulations' modules, so the first heavy request waits for neither a process
    nor an import). A pool created again after a worker died imports them too."""
    global _preload
    _preload = tuple(preload)
    pool = processes()
    for future in [pool.submit(_noop) for _ in range(POOL_SIZE)]:
        future.result()


def claim_slot(owner: object) -> int | None:
    """A supersede slot for `owner` (freed when it is garbage-collected), or None when all are taken."""
    _tokens_array()
    with _slots_lock:
        if not _free_slots:
            return None
        slot = _free_slots.pop()
    _tokens[slot] = 0
    weakref.finalize(owner, _release_slot, slot)
    return slot


def _release_slot(slot: int) -> None:
    with _slots_lock:
        _free_slots.append(slot)


def post_generation(slot: int | None, generation: int) -> None:
    """Record `generation` as the newest request of `slot`: older runs stop at their next progress report."""
    if slot is not None:
        _tokens_array()[slot] = generation


def _run_in_worker(module: str, config: Any, slot: int | None, generation: int) -> Any:
    simulation = importlib.import_module(module).SIMULATION

    def progress(done: int, total: int) -> None:
        if slot is not None and _tokens is not None and _tokens[slot] != generation:
            raise Superseded()

    return simulation.run(config, progress)


def _call_in_worker(target: str, args: tuple[Any, ...], slot: int | None, generation: int) -> Any:
    module, _, name = target.partition(":")
    fn = getattr(importlib.import_module(module), name)

    def progress(done: int, total: int) -> None:
        if slot is not None and _tokens is not None and _tokens[slot] != generation:
            raise Superseded()

    return fn(*args, progress=progress)


def run_in_process(target: str, *args: Any, slot: int | None = None, generation: int = 0) -> Any:
    """`module:function` called with `args` and `progress=` in a worker process, as
    `run_simulation` runs a simulation: the calling pool thread blocks until it is done; the
    function stops (`Superseded`) at its next progress report once a newer request of `slot`
    exists. A worker that died (its pool is then broken for every request in flight, another
    session's included) is replaced and the request tried once more; RuntimeError after that."""
    global _procs
    for attempt in (1, 2):
        pool = processes()
        try:
            return pool.submit(_call_in_worker, target, args, slot, generation).result()
        except BrokenProcessPool:
            # a worker died — maybe running another session's request, which breaks the whole pool
            # for every request in flight: a fresh pool takes this one once more
            with _procs_lock:
                if _procs is pool:
                    _procs = None
            if attempt == 2:
                raise RuntimeError(f"the worker process running {target} died twice (out of memory?)") from None
    raise AssertionError("unreachable")


def shutdown() -> None:
    """Stop the worker processes and threads (a server's clean exit): without it the processes'
    queues die with the interpreter and Python's resource tracker reports leaked semaphores."""
    global _procs, _pool
    with _procs_lock:
        procs, _procs = _procs, None
    if procs is not None:
        procs.shutdown(wait=True, cancel_futures=True)
    with _pool_lock:
        threads, _pool = _pool, None
    if threads is not None:
        threads.shutdown(wait=False, cancel_futures=True)


def run_simulation(simulation: Any, config: Any, slot: int | None = None, generation: int = 0) -> Any:
    """`simulation.run(config)` in a worker process; blocks the calling (pool) thread until it is
    done and returns its result, or raises what the run raised (`Superseded` when a newer request
    of `slot` stopped it). A worker that died (killed for memory) is replaced for the next request
    and this one raises RuntimeError."""
    global _procs
    pool = processes()
    try:
        return pool.submit(_run_in_worker, simulation.module, config, slot, generation).result()
    except BrokenProcessPool:
        with _procs_lock:
            if _procs is pool:
                _procs = None
        raise RuntimeError(f"the worker process running {simulation.name} died (out of memory?)") from None
