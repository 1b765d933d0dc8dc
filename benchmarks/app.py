"""App speed (`lowprec bench app`): server-side compute per widget update at default settings, and
time to first page. It drives the app's own widgets and pages, so it is one of the benchmarks that may
import `lowprec.app` (`APP_BENCHMARKS` in tests/test_import_graph.py); `python -m lowprec.app.bench`
is an alias of `python -m lowprec.benchmarks.app`.

Budgets: each widget's update ≤ 50 ms, the recompute widget's ≤ 1 s (issue 6); every page ready
in the browser ≤ 2 s (`PAGE_READY_BUDGET_S`, issue 13), served and exported. An update is
`widget.update()` at the default parameters (recompute the result, push the new columns into the
Bokeh sources), median of several runs after one warm-up. Page ready is measured in Debian's
headless Chromium through Playwright (1280×720 window), in a fresh browser context per load (no
cache), each cold load started on a quiet machine (`settle`: what the previous page left running —
a background build on the server, a browser context closing — is not charged to the next page):
from `goto` until the page is ready as `layout.PAGE_READY_JS` says — Bokeh has rendered
the page and no widget in the window still waits to be built (a served lesson builds its widgets
as the reader reaches them: `pages.LazyWidget`); median of `loads` loads per page, for every
route of the site on a server started by `lowprec serve --no-show`, and for every page of a site
written by `lowprec export` opened from disk. For a lesson, `page_complete_s` is also recorded:
until every widget of the page is built (the background loading included), which is what a
reader who scrolls at once waits for at the bottom of the page; and for every page
`page_ready_warm_s`: the same page opened again in the same context, its scripts in the browser's
cache, as for every page a reader opens after the first. One untimed load of the first page comes
first (a new server's first session pays one-off imports).
`python -m lowprec.benchmarks.app --pages [--loads N] [--quick] [--no-settle]` (or `python -m
lowprec.app.bench …`) prints only the page
figures (`--no-settle`: each load right after the previous one, as before stop 27).
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from typing import Any

from lowprec.extras import missing_dependency

BUDGET_MS = {"RecomputeDivergence": 1000.0}
PAGE_READY_BUDGET_S = 2.0
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


def _start_server() -> tuple[Any, str]:
    """(the served app or None when it did not start within two minutes, its URL)."""
    from lowprec.app.serving import ServeError, serve_and_wait

    try:
        app = serve_and_wait(timeout_s=120)
    except ServeError:
        return None, ""
    return app, app.url


def _stop(app: Any) -> None:
    if app is not None:
        app.close()


def _cpu_times() -> tuple[int, int] | None:
    """(busy, total) CPU ticks of the whole machine since boot (Linux `/proc/stat`), else None."""
    try:
        with open("/proc/stat", encoding="ascii") as f:
            ticks = [int(x) for x in f.readline().split()[1:9]]  # user nice system idle iowait irq softirq steal
    except (OSError, ValueError):
        return None
    total = sum(ticks)
    return total - ticks[3] - ticks[4], total


def settle(busy_below: float = 0.15, window_s: float = 0.1, max_s: float = 5.0) -> float:
    """Wait until the machine's CPUs were less than `busy_below` busy over `window_s`, at most
    `max_s`; the seconds waited. Without `/proc/stat`, a fixed half second."""
    start = time.perf_counter()
    before = _cpu_times()
    if before is None:
        time.sleep(0.5)
        return 0.5
    while time.perf_counter() - start < max_s:
        time.sleep(window_s)
        after = _cpu_times()
        assert after is not None
        busy, total = after[0] - before[0], after[1] - before[1]
        if total > 0 and busy / total < busy_below:
            break
        before = after
    return time.perf_counter() - start


def page_ready_s(urls: dict[str, str], loads: int = 3, complete: dict[str, float] | None = None,
                 warm: dict[str, float] | None = None, quiet: bool = True) -> dict[str, float]:
    """Median seconds from `goto` to the page ready (`layout.PAGE_READY_JS`), per name → URL,
    each load in a fresh browser context (no cache). `complete`, when given, receives per name
    the median seconds until every widget of the page is built (`layout.PAGE_COMPLETE_JS`), for
    the pages that build widgets as the reader reaches them; `warm`, when given, the median
    seconds to ready of the same page opened again in the same context (the site's scripts in the
    browser's cache, as for every page a reader opens after the first). With `quiet`, each cold
    load waits for a quiet machine first (`settle`)."""
    from playwright.sync_api import sync_playwright

    from lowprec.app.layout import PAGE_COMPLETE_JS, PAGE_READY_JS

    out: dict[str, float] = {}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=[
            "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
            "--disable-component-update", "--disable-sync", "--no-first-run", "--allow-file-access-from-files"])
        try:
            if urls:  # one untimed load first: a new server's first session pays one-off imports
                context = browser.new_context()
                page = context.new_page()
                page.goto(next(iter(urls.values())), timeout=120_000)
                page.wait_for_function(PAGE_READY_JS, timeout=120_000, polling=50)
                context.close()
            for name, url in urls.items():
                times, whole, again = [], [], []
                lazy = False
                for _ in range(loads):
                    context = browser.new_context()
                    page = context.new_page()
                    if quiet:
                        settle()
                    start = time.perf_counter()
                    page.goto(url, timeout=120_000)
                    page.wait_for_function(PAGE_READY_JS, timeout=120_000, polling=20)
                    times.append(time.perf_counter() - start)
                    if complete is not None:
                        lazy = lazy or bool(page.evaluate("() => Number(document.body.dataset.lazySlots || 0) > 0"))
                        page.wait_for_function(PAGE_COMPLETE_JS, timeout=300_000, polling=50)
                        whole.append(time.perf_counter() - start)
                    if warm is not None:
                        start = time.perf_counter()
                        page.goto(url, timeout=120_000)
                        page.wait_for_function(PAGE_READY_JS, timeout=120_000, polling=20)
                        again.append(time.perf_counter() - start)
                    context.close()
                out[name] = round(statistics.median(times), 3)
                if complete is not None and lazy:
                    complete[name] = round(statistics.median(whole), 3)
                if warm is not None:
                    warm[name] = round(statistics.median(again), 3)
        finally:
            browser.close()
    return out


def pages_report(quick: bool = False, loads: int = 3, site: str | None = None,
                 quiet: bool = True) -> dict[str, Any]:
    """page_ready_s[served:<route>] and [exported:<route>] for every page, the slowest of each and
    whether every page is within PAGE_READY_BUDGET_S (and how many are); page_complete_s[...] for
    the lessons, served and exported, that build widgets as the reader reaches them, and
    page_ready_warm_s[...] for every page (the same page again, its scripts cached). `quiet`: see
    `page_ready_s`."""
    try:  # playwright is a test dependency, not one of lowprec's
        import playwright  # noqa: F401
    except ModuleNotFoundError:
        from lowprec.extras import not_installed

        return {"page_ready": f"n/a ({not_installed('playwright')})"}
    if not os.path.exists(CHROMIUM):
        return {"page_ready": f"n/a ({CHROMIUM} missing)"}
    import tempfile
    from pathlib import Path

    from lowprec.app.export import export, page_file
    from lowprec.app.pages import route_names

    routes = route_names()
    if quick:
        routes = routes[:3]
        loads = 1
    results: dict[str, Any] = {}
    proc, url = _start_server()
    try:
        if proc is None:
            results["page_ready"] = "n/a (server did not start)"
        else:
            complete: dict[str, float] = {}
            warm: dict[str, float] = {}
            served = page_ready_s({r or "/": f"{url}/{r}" for r in routes}, loads, complete, warm, quiet)
            results.update({f"page_ready_s[served:{k}]": v for k, v in served.items()})
            results.update({f"page_complete_s[served:{k}]": v for k, v in complete.items()})
            results.update({f"page_ready_warm_s[served:{k}]": v for k, v in warm.items()})
    finally:
        _stop(proc)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(site) if site else Path(tmp) / "site"
        if not site:
            export(folder, routes)
        complete_x: dict[str, float] = {}
        warm_x: dict[str, float] = {}
        exported = page_ready_s({r or "/": (folder / page_file(r)).resolve().as_uri() for r in routes}, loads,
                                complete_x, warm_x, quiet)
        results.update({f"page_ready_s[exported:{k}]": v for k, v in exported.items()})
        results.update({f"page_complete_s[exported:{k}]": v for k, v in complete_x.items()})
        results.update({f"page_ready_warm_s[exported:{k}]": v for k, v in warm_x.items()})
    times = {k: v for k, v in results.items() if k.startswith("page_ready_s[") and isinstance(v, float)}
    warm_times = {k: v for k, v in results.items() if k.startswith("page_ready_warm_s[") and isinstance(v, float)}
    if warm_times:
        results["page_ready_warm_within_budget"] = (
            f"{sum(v <= PAGE_READY_BUDGET_S for v in warm_times.values())} of {len(warm_times)} pages")
    if times:
        results["page_ready_within_budget_count"] = (
            f"{sum(v <= PAGE_READY_BUDGET_S for v in times.values())} of {len(times)} pages")
        slowest = max(times, key=lambda k: times[k])
        results["page_ready_slowest"] = f"{slowest} {times[slowest]} s"
        results["page_ready_budget_s"] = PAGE_READY_BUDGET_S
        results["page_ready_within_budget"] = "yes" if times[slowest] <= PAGE_READY_BUDGET_S else "NO"
    return results


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
    results.update(pages_report(quick=quick))
    return results


def main(argv: list[str] | None = None, prog: str = "python -m lowprec.benchmarks.app") -> int:
    """The command line (`prog`: the name its usage and errors give, the alias's own when run as
    `python -m lowprec.app.bench`)."""
    from lowprec.commandline import ArgumentParser  # the one bad-option report

    parser = ArgumentParser(prog=prog, description="app speed figures")
    parser.add_argument("--pages", action="store_true", help="only the page-ready figures")
    parser.add_argument("--quick", action="store_true", help="three pages, one load each")
    parser.add_argument("--loads", type=int, default=3, help="loads per page (median)")
    parser.add_argument("--site", help="an exported site to time instead of exporting one")
    parser.add_argument("--no-settle", action="store_true",
                        help="start each cold load right after the previous page (no wait for a quiet machine)")
    args = parser.parse_args(argv)
    figures = (pages_report(args.quick, args.loads, args.site, quiet=not args.no_settle) if args.pages
               else run(quick=args.quick))
    for key, value in figures.items():
        print(f"{key}: {value}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
