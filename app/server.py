"""Serve every page of the app from one local Bokeh/Panel server.

Binds 127.0.0.1 unless told otherwise and serves every resource itself: Panel's server resource
mode ('server') makes Bokeh and Panel JS/CSS load from this server's /static paths and the site's
own CSS/JS (`app/static/`) is served at `/_static/lowprec/` (`app.layout.STATIC_ROUTE`), so a page
makes no request to any other host (checked by the browser tests with request interception).
Routes come from `app.pages.routes()`.
"""

from __future__ import annotations

import atexit
import gc
import threading
from typing import Any

import panel as pn

from lowprec.app import layout, pages, work
from lowprec.extras import missing_dependency


def serve(port: int = 5006, address: str = "127.0.0.1", show: bool = True, start: bool = True,
          **kwargs: Any) -> Any:
    """Start the server (blocking when `start`); returns the server object."""
    if not isinstance(port, int) or not 0 <= port <= 65535:
        raise ValueError(f"port must be an integer 0..65535, got {port!r}")
    if not isinstance(address, str) or not address:
        raise ValueError(f"address must be a host name or IP address, got {address!r}")
    # the recompute widget's first checkpoint call would import torch._dynamo (~1.5 s): do it now,
    # in the background, while the server starts
    threading.Thread(target=_warm_up, name="lowprec-warm-up", daemon=True).start()
    origins = [f"{address}:{port}", f"localhost:{port}", f"127.0.0.1:{port}"]
    if address in ("0.0.0.0", "::"):  # bound to every interface: accept the host the browser used
        origins = ["*"]
    static = dict(kwargs.pop("static_dirs", {}) or {})
    static[layout.STATIC_ROUTE] = str(layout.STATIC_DIR)
    return pn.serve(
        pages.routes(), port=port, address=address, show=show, start=start,
        title=pages.page_titles(), websocket_origin=origins, resources="server",
        static_dirs=static, **kwargs,
    )


def _warm_up() -> None:
    """Start-up work off the event loop: the simulations' worker processes (`app.work`: started now,
    not at the first heavy request), the recompute import, then `gc.freeze()`. Panel runs a full
    `gc.collect()` after sessions close; with the start-up heap (Panel, Bokeh, torch) frozen it
    scans only what sessions allocated, instead of stalling every session's event loop for a
    pass over everything."""
    work.start_processes(worker_modules())
    _warm_up_recompute()
    gc.collect()
    gc.freeze()
    atexit.register(gc.unfreeze)  # at exit everything is collectable again (no leak reports)


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


def _warm_up_recompute() -> None:
    try:
        from lowprec.simulations.recompute import warm_up
    except ModuleNotFoundError as exc:
        if missing_dependency(exc) is None:
            raise
        return  # without torch the recompute widget says what to install; nothing to warm up
    warm_up()
