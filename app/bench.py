"""App speed (`lowprec bench app`): server-side compute per widget update at default settings, and
time to first page. It lives in `app` because it drives the app's own widgets; `lowprec.benchmarks`
holds the benchmarks of the layers below and imports nothing of `app`.

Budgets (issue 6): each widget's update ≤ 50 ms, the recompute widget's ≤ 1 s; the first page
ready in the browser ≤ 3 s after the server is up. An update is `widget.update()` at the default
parameters (recompute the result, push the new columns into the Bokeh sources), median of several
runs after one warm-up. The page time is measured in Debian's headless Chromium through
Playwright: from `goto` until Bokeh has rendered the document and the network is idle, for the
landing page and the bin explorer page, on a server started by `lowprec serve --no-show`.
"""

from __future__ import annotations

import os
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from typing import Any

from lowprec.extras import missing_dependency

BUDGET_MS = {"RecomputeDivergence": 1000.0}
DEFAULT_BUDGET_MS = 50.0
CHROMIUM = "/usr/bin/chromium"


def _time_updates(name: str, repeats: int) -> float:
    from lowprec.app.widgets import get_widget_class

    widget = get_widget_class(name)()
    widget.update()  # warm-up (caches, first-call imports)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        ok = widget.update()
        times.append(time.perf_counter() - start)
        if ok is False:
            raise RuntimeError(f"{name}.update() failed at defaults: {getattr(widget, 'error', '')}")
    return statistics.median(times) * 1e3


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _first_page_s(routes: list[str]) -> dict[str, float | str]:
    try:  # playwright is a test dependency, not one of lowprec's
        from playwright.sync_api import sync_playwright
    except ModuleNotFoundError:
        return {"first_page": "n/a (playwright is not installed: pip install 'lowprec[test]')"}
    if not os.path.exists(CHROMIUM):
        return {"first_page": f"n/a ({CHROMIUM} missing)"}
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "lowprec.app.cli", "serve", "--no-show", "--port", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    out: dict[str, float | str] = {}
    try:
        end = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(url + "/", timeout=5):
                    break
            except OSError:
                if time.monotonic() > end:
                    return {"first_page": "n/a (server did not start)"}
                time.sleep(0.2)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=[
                "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--no-first-run"])
            for route in routes:
                page = browser.new_page()
                start = time.perf_counter()
                page.goto(f"{url}/{route}")
                page.wait_for_function("() => window.Bokeh !== undefined && Bokeh.documents.length > 0"
                                       " && Bokeh.index && Object.keys(Bokeh.index).length > 0",
                                       timeout=60000)
                page.wait_for_load_state("networkidle", timeout=60000)
                out[f"page_ready_s[{route or '/'}]"] = round(time.perf_counter() - start, 3)
                page.close()
            browser.close()
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
    return out


def run(quick: bool = False) -> dict[str, float | str]:
    """Figures: update_ms[Widget], within_budget[Widget], page_ready_s[route]."""
    from lowprec.app.widgets import WIDGETS

    results: dict[str, Any] = {}
    for name in WIDGETS:
        repeats = 3 if name == "RecomputeDivergence" or quick else 15
        try:
            ms = _time_updates(name, repeats)
        except ModuleNotFoundError as exc:  # an optional dependency (torch), never our own module
            message = missing_dependency(exc, name)
            if message is None:
                raise
            results[f"update_ms[{name}]"] = f"n/a ({message})"
            continue
        budget = BUDGET_MS.get(name, DEFAULT_BUDGET_MS)
        results[f"update_ms[{name}]"] = round(ms, 2)
        results[f"budget_ms[{name}]"] = budget
        results[f"within_budget[{name}]"] = "yes" if ms <= budget else "NO"
    routes = [""] if quick else ["", "widget/BinExplorer"]
    results.update(_first_page_s(routes))
    return results


if __name__ == "__main__":
    for key, value in run(quick="--quick" in sys.argv).items():
        print(f"{key}: {value}")
