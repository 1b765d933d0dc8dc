"""Serve every page of the app from one local Bokeh/Panel server.

Binds 127.0.0.1 unless told otherwise and serves every resource itself: Panel's server resource
mode ('server') makes Bokeh and Panel JS/CSS load from this server's /static paths and the site's
own CSS/JS (`app/static/`) is served at `/_static/lowprec/` (`app.layout.STATIC_ROUTE`), so a page
makes no request to any other host (checked by the browser tests with request interception).
Routes come from `app.pages.routes()`.
"""

from __future__ import annotations

import asyncio
import atexit
import errno
import gc
import logging
import signal
import socket
import threading
from typing import Any, Callable

import panel as pn

from lowprec.app import layout, pages, work
from lowprec.extras import missing_dependency

log = logging.getLogger(__name__)
#: set when the event loop has stopped: start-up work still in flight starts nothing more
STOPPING = threading.Event()


def check_address(address: str, port: int) -> None:
    """ValueError naming the address unless it is a host name or IP address this machine can
    listen on (`256.1.1.1`, `no-such-host`: one line, before anything starts)."""
    if not isinstance(port, int) or isinstance(port, bool) or not 0 <= port <= 65535:
        raise ValueError(f"port must be an integer 0..65535, got {port!r}")
    if not isinstance(address, str) or not address or address != address.strip():
        raise ValueError(f"address must be a host name or IP address, got {address!r}")
    try:
        socket.getaddrinfo(address, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except (socket.gaierror, UnicodeError) as exc:
        reason = exc.strerror if isinstance(exc, socket.gaierror) and exc.strerror else str(exc)
        raise ValueError(f"cannot listen on {address!r}: not an address of this machine ({reason})") from None


def _bind_error(exc: OSError, address: str, port: int) -> ValueError:
    """The one-line message for a socket the server could not open."""
    if exc.errno == errno.EADDRINUSE:
        return ValueError(f"port {port} on {address} is already in use (another lowprec serve?); "
                          f"pick another with --port, or stop the one running")
    if exc.errno == errno.EADDRNOTAVAIL:
        return ValueError(f"cannot listen on {address}:{port}: not an address of this machine")
    if exc.errno == errno.EACCES:
        return ValueError(f"cannot listen on {address}:{port}: permission denied (ports below 1024 need "
                          f"administrator rights)")
    return ValueError(f"cannot listen on {address}:{port}: {exc.strerror or exc}")


def serve(port: int = 5006, address: str = "127.0.0.1", show: bool = True, start: bool = True,
          announce: Callable[[str], None] | None = None, **kwargs: Any) -> Any:
    """Start the server; returns the server object. The address is checked and the port opened
    first: a bad address or a port in use is a one-line ValueError before anything is said or
    started. Then `announce(url)` (the CLI prints its one start-up line) and, with `start`, the
    event loop runs until SIGINT or SIGTERM, after which the server and the worker processes stop
    cleanly (no leaked semaphores)."""
    check_address(address, port)
    origins = [f"{address}:{port}", f"localhost:{port}", f"127.0.0.1:{port}"]
    if address in ("0.0.0.0", "::"):  # bound to every interface: accept the host the browser used
        origins = ["*"]
    static = dict(kwargs.pop("static_dirs", {}) or {})
    static[layout.STATIC_ROUTE] = str(layout.STATIC_DIR)
    extra = list(kwargs.pop("extra_patterns", []) or []) + alias_routes()
    kwargs.setdefault("default_handler_class", NotFoundHandler)
    try:
        server = pn.serve(
            pages.routes(), port=port, address=address, show=show, start=False, verbose=False,
            title=pages.page_titles(), websocket_origin=origins, resources="server",
            static_dirs=static, extra_patterns=extra, **kwargs,
        )
    except OSError as exc:
        raise _bind_error(exc, address, port) from None
    harden_static_handlers(server)
    # the recompute widget's first checkpoint call would import torch._dynamo (~1.5 s) and the recipe
    # lab's first analysis compiles its kernels on a fresh install: do both now, in the background,
    # while the server starts (spare widgets wait for it: `pages.Spares.hold`)
    pages.SPARES.hold()
    threading.Thread(target=_warm_up, name="lowprec-warm-up", daemon=True).start()
    if announce is not None:
        announce(f"http://{address}:{server.port}/")
    if start:
        run(server)
    return server


def run(server: Any) -> None:
    """Run `server`'s event loop until SIGINT or SIGTERM, then stop it and the worker processes."""
    loop = server.io_loop

    def stop(*_: Any) -> None:
        loop.add_callback_from_signal(loop.stop)

    previous = {}
    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            previous[sig] = signal.signal(sig, stop)
        except ValueError:  # not the main thread: the caller handles signals
            pass
    loop.asyncio_loop.set_exception_handler(_quiet_closed_sockets)
    server.start()
    try:
        loop.start()
    finally:
        STOPPING.set()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        try:
            server.stop()
        except Exception:  # noqa: BLE001 - stopping a server that failed half-way: nothing left to do
            log.debug("stopping the server", exc_info=True)
        work.shutdown()


def _quiet_closed_sockets(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    """The event loop's exception handler: a websocket or stream closed by the browser mid-send (a
    tab closed while an update went out) is the end of that session, not an error worth a
    traceback in the log; anything else goes to asyncio's default handler."""
    from tornado.iostream import StreamClosedError
    from tornado.websocket import WebSocketClosedError

    if isinstance(context.get("exception"), (WebSocketClosedError, StreamClosedError)):
        log.debug("a browser closed its connection while the server wrote to it")
        return
    loop.default_exception_handler(context)


def alias_routes() -> list[tuple[str, Any, dict[str, Any]]]:
    """Redirects from the other names a reader may type or paste to a lesson's page: the lesson's
    file name (`/lesson/01-arithmetic-contract` → `/lesson/arithmetic-contract`) and an exported
    page's name (`/lesson/arithmetic-contract.html`, `/widget/BinExplorer.html`)."""
    import re

    from tornado.web import RedirectHandler

    from lowprec.app.lessons import load_lessons
    from lowprec.app.widgets import WIDGETS

    routes: list[tuple[str, Any, dict[str, Any]]] = []
    for lesson in load_lessons():
        target = f"/{pages.lesson_route(lesson)}"
        names = {f"{lesson.slug}.html"}
        if lesson.path is not None and lesson.path.stem != lesson.slug:
            names |= {lesson.path.stem, f"{lesson.path.stem}.html", lesson.path.name}
        for name in sorted(names):
            routes.append((rf"/lesson/{re.escape(name)}/?", RedirectHandler, {"url": target, "permanent": False}))
    for name in WIDGETS:
        routes.append((rf"/widget/{re.escape(name)}\.html/?", RedirectHandler,
                       {"url": f"/{pages.widget_route(name)}", "permanent": False}))
    routes.append((r"/index\.html/?", RedirectHandler, {"url": "/", "permanent": False}))
    return routes


def not_found_html(path: str) -> str:
    """The page for an address the site does not have: what was asked (escaped), and the way back
    to the start page and the list of lessons."""
    import html

    asked = html.escape(path if len(path) <= 200 else path[:200] + "…")
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            "<title>Page not found · lowprec</title>"
            "<style>body{font-family:system-ui,sans-serif;max-width:40em;margin:3em auto;padding:0 1em;"
            "line-height:1.5;color:#1c2127;background:#fff}a{color:#0a58b0}code{background:#eef1f4;padding:0 .2em}"
            "@media (prefers-color-scheme: dark){body{color:#e4e7eb;background:#15181c}a{color:#8cc4ff}"
            "code{background:#262c33}}</style></head><body><main>"
            "<h1>Page not found</h1>"
            f"<p>There is no page at <code>{asked}</code> on this site.</p>"
            "<p><a href=\"/\">Go to the start page</a> · <a href=\"/#lessons\">the list of lessons</a> · "
            "<a href=\"/#widgets\">the widgets</a></p>"
            "<p>Lesson pages are named <code>/lesson/&lt;name&gt;</code> without the number of the lesson "
            "file, and widget pages <code>/widget/&lt;Name&gt;</code>.</p></main></body></html>\n")


def _not_found_handler() -> type:
    from tornado.web import RequestHandler

    class NotFound(RequestHandler):
        """Any address no route serves: the friendly 404 page (`not_found_html`)."""

        def prepare(self) -> None:
            self.set_status(404)
            self.set_header("Content-Type", "text/html; charset=utf-8")
            self.finish(not_found_html(self.request.path))

    return NotFound


NotFoundHandler = _not_found_handler()


def harden_static_handlers(server: Any) -> int:
    """Make every static-file route of `server` answer a path it cannot serve (an embedded NUL,
    `/_static/lowprec/lowprec.js%00.py`: Tornado raised ValueError, an HTTP 500 with a traceback)
    with a 4xx; returns how many routes it changed."""
    from tornado.web import StaticFileHandler

    app = getattr(server, "_tornado", None)
    if app is None:
        return 0
    changed = 0
    for router in (getattr(app, "wildcard_router", None), getattr(app, "default_router", None)):
        for rule in getattr(router, "rules", []):
            target = rule.target
            if isinstance(target, type) and issubclass(target, StaticFileHandler) and not getattr(
                    target, "_lowprec_safe", False):
                rule.target = _safe_static(target)
                changed += 1
    return changed


def _safe_static(handler: type) -> type:
    from tornado.web import HTTPError

    class SafeStatic(handler):  # type: ignore[misc,valid-type]
        _lowprec_safe = True

        def validate_absolute_path(self, root: str, absolute_path: str) -> Any:
            if "\x00" in str(absolute_path) or "\x00" in str(root):
                raise HTTPError(400, "bad path")
            try:
                return super().validate_absolute_path(root, absolute_path)
            except (ValueError, OSError):
                raise HTTPError(404) from None

    SafeStatic.__name__ = SafeStatic.__qualname__ = f"Safe{handler.__name__}"
    return SafeStatic


def _warm_up() -> None:
    """Start-up work off the event loop: the simulations' worker processes (`app.work`: started now,
    not at the first heavy request), the recompute import, then `gc.freeze()`. Panel runs a full
    `gc.collect()` after sessions close; with the start-up heap (Panel, Bokeh, torch) frozen it
    scans only what sessions allocated, instead of stalling every session's event loop for a
    pass over everything."""
    try:
        work.start_processes(worker_modules())
        _warm_up_recompute()
        if pages.Spares.enabled():  # only a spare RecipeLab would analyse on the event loop
            _warm_up_lab()
        gc.collect()
        gc.freeze()
        atexit.register(gc.unfreeze)  # at exit everything is collectable again (no leak reports)
    finally:
        pages.SPARES.release()
    _warm_up_lesson_records()


def worker_modules() -> tuple[str, ...]:
    """The simulation modules the app's widgets run in worker processes (from the widget registry)."""
    from lowprec.app.widgets import WIDGETS
    from lowprec.app.widgets._sim_base import SimulationWidget

    classes = []
    for entry in WIDGETS.values():
        try:
            classes.append(entry.load())
        except ModuleNotFoundError as exc:  # a widget of an extra that is not installed (torch)
            if missing_dependency(exc) is None:
                raise
    return tuple(sorted({cls.simulation.module for cls in classes
                         if issubclass(cls, SimulationWidget) and cls.runs_in_worker()
                         and cls.simulation is not None}))


def _warm_up_lab() -> None:
    """The recipe lab's default analysis (its bundled sample under the default recipes), off the
    event loop: on a fresh install this compiles the lab's kernels (numba; cached on disk after),
    which the first RecipeLab, spare or page, would otherwise do on the event loop."""
    from lowprec.simulations.lab.workbench import LabConfig, run_lab, sample_input

    try:
        config = LabConfig()
        run_lab(sample_input(config.sample), config)
    except Exception:  # a bug: the RecipeLab page reports it when it builds
        log.exception("warming up the recipe lab failed")


#: how long a `lessons.warming` marker in the record cache keeps other servers from starting the
#: same computation (a server killed mid-way leaves it behind)
LESSON_WARM_LOCK_S = 600.0


def _warm_up_lesson_records(root: str | None = None) -> None:
    """Fill `lowprec lessons`' record cache (every lesson's computed answers) in a background process
    at the lowest CPU priority, when records are missing: afterwards `lowprec lessons --json` reads
    them (under a second) instead of computing the worked examples (tens of seconds, some train small
    torch models). `root`: another lesson folder (`lessons --root`). Nothing when the cache is off
    (`LOWPREC_CACHE_DIR=""`) or already current; one server at a time (a marker file in the cache
    folder); stopped with the server."""
    import os
    import subprocess
    import sys
    import time
    from pathlib import Path

    from lowprec.app.commands import lessons_cmd

    if STOPPING.is_set():
        return
    try:
        folder = lessons_cmd.cache_dir()
        if folder is None or lessons_cmd.missing_records(Path(root) if root else None) == 0:
            return
        folder.mkdir(parents=True, exist_ok=True)
        marker = folder / "lessons.warming"
        try:
            if time.time() - marker.stat().st_mtime < LESSON_WARM_LOCK_S:
                return  # another server is computing them
            marker.unlink()
        except FileNotFoundError:
            pass
        fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        os.close(fd)
    except (OSError, ValueError):  # an unwritable cache or an unreadable course: nothing to warm
        return
    argv = ["lessons", "--json"] + (["--root", root] if root else [])
    child = ("import os, sys\nif hasattr(os, 'nice'): os.nice(19)\n"
             f"from lowprec.app.cli import main\nsys.exit(main({argv!r}))")
    proc = subprocess.Popen([sys.executable, "-c", child], stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def stop() -> None:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        try:
            marker.unlink()
        except OSError:
            pass

    atexit.register(stop)
    proc.wait()
    stop()


def _warm_up_recompute() -> None:
    try:
        from lowprec.simulations.recompute import warm_up
    except ModuleNotFoundError as exc:
        if missing_dependency(exc) is None:
            raise
        return  # without torch the recompute widget says what to install; nothing to warm up
    warm_up()
