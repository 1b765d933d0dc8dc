"""Screenshots of every page of the site at desktop and phone width, for a reviewer to look at.

`python -m lowprec.app.screenshots OUT [--site DIR | --url URL] [--widths 1400 390] [--theme light|dark]
[--pages ROUTE ...] [--locked]` starts `lowprec serve` on a free port (or opens an exported site from disk
with `--site`, or uses a running server with `--url`), opens each page in Debian's headless Chromium
through Playwright (the test extra), waits until the page is ready (`layout.PAGE_READY_JS`) and every
widget of it is built (a served lesson builds its widgets as the reader reaches them), and writes
`OUT/<route>@<width>[-dark].png` (full page) plus `OUT/index.txt`: per shot the seconds to page
ready, whether the page scrolls sideways, and any console or page error. Every prediction of the
course is marked answered in the page's progress store first, so the widgets locked behind them show
(`--locked`: as a new learner sees the pages). `./dev screenshots OUT` runs it. Nothing leaves the machine: requests to other hosts are aborted and listed.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from lowprec.app.layout import PAGE_COMPLETE_JS, PAGE_READY_JS

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run",
                 "--allow-file-access-from-files"]


def page_url(base: str, route: str, site: Path | None) -> str:
    if site is not None:
        from lowprec.app.export import page_file

        return (site / page_file(route)).resolve().as_uri()
    return f"{base.rstrip('/')}/{route}"


def shot_name(route: str, width: int, theme: str) -> str:
    name = (route or "index").replace("/", "_")
    return f"{name}@{width}{'-dark' if theme == 'dark' else ''}.png"


def answered_script() -> str:
    """A page init script that marks every prediction of the course answered in the progress store
    (localStorage "lowprec-progress"), as a learner who has answered them would have it."""
    import json

    from lowprec.app.exercises import block_key
    from lowprec.course.lessons import load_lessons

    marks = {block_key(x.slug, pid): "answered" for x in load_lessons() for pid in x.predictions}
    return (f"try {{ const d = JSON.parse(localStorage.getItem('lowprec-progress') || '{{}}') || {{}}; "
            f"Object.assign(d, {json.dumps(marks)}); localStorage.setItem('lowprec-progress', JSON.stringify(d)); "
            f"}} catch (e) {{}}")


def take(pages: list[str], out: Path, widths: list[int], theme: str, base: str = "",
         site: Path | None = None, settle_ms: int = 1500, locked: bool = False) -> list[dict[str, Any]]:
    """Screenshot every route at every width (predictions answered unless `locked`); returns one
    record per shot."""
    import playwright.sync_api as api

    out.mkdir(parents=True, exist_ok=True)
    host = urlparse(base).netloc
    records: list[dict[str, Any]] = []
    with api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            for width in widths:
                context = browser.new_context(viewport={"width": width, "height": 900},
                                              color_scheme="dark" if theme == "dark" else "light")
                if not locked:
                    context.add_init_script(answered_script())
                for route in pages:
                    page = context.new_page()
                    errors: list[str] = []
                    outside: list[str] = []

                    def route_check(r: Any, outside: list[str] = outside) -> None:
                        u = urlparse(r.request.url)
                        if u.scheme in ("file", "data", "blob") or (host and u.netloc == host):
                            r.continue_()
                        else:
                            outside.append(r.request.url)
                            r.abort()

                    page.route("**/*", route_check)

                    def on_console(m: Any, e: list[str] = errors) -> None:
                        if m.type == "error":
                            e.append(m.text)

                    def on_error(x: Any, e: list[str] = errors) -> None:
                        e.append(str(x))

                    page.on("console", on_console)
                    page.on("pageerror", on_error)
                    start = time.perf_counter()
                    page.goto(page_url(base, route, site), timeout=180_000)
                    page.wait_for_function(PAGE_READY_JS, timeout=180_000)
                    ready = time.perf_counter() - start
                    page.wait_for_function(PAGE_COMPLETE_JS, timeout=180_000)  # the whole page is shot
                    page.wait_for_timeout(settle_ms)
                    sideways = page.evaluate("() => document.documentElement.scrollWidth - window.innerWidth")
                    path = out / shot_name(route, width, theme)
                    page.screenshot(path=str(path), full_page=True, timeout=180_000)
                    records.append({"route": route or "index", "width": width, "ready_s": round(ready, 2),
                                    "sideways_px": int(sideways), "errors": errors, "outside": outside,
                                    "file": path.name})
                    print(f"{path.name}: ready {ready:.1f} s, sideways {sideways} px"
                          + (f", errors {errors[:2]}" if errors else "") + (f", outside {outside[:2]}" if outside else ""),
                          flush=True)
                    page.close()
                context.close()
        finally:
            browser.close()
    lines = [f"{r['file']}\tready {r['ready_s']} s\tsideways {r['sideways_px']} px\terrors {len(r['errors'])}"
             f"\toutside {len(r['outside'])}" for r in records]
    (out / "index.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return records


def main(argv: list[str] | None = None) -> int:
    from lowprec.commandline import ArgumentParser  # the one bad-option report

    parser = ArgumentParser(prog="python -m lowprec.app.screenshots", description=__doc__.split("\n\n")[0])
    parser.add_argument("out", metavar="OUT", help="folder for the PNG files (created)")
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--site", metavar="DIR", help="an exported site to open from disk")
    where.add_argument("--url", help="a running `lowprec serve` (default: start one)")
    parser.add_argument("--widths", type=int, nargs="+", default=[1400, 390], help="viewport widths")
    parser.add_argument("--theme", choices=("light", "dark"), default="light")
    parser.add_argument("--pages", nargs="+", metavar="ROUTE", help="routes (default: every page)")
    parser.add_argument("--locked", action="store_true",
                        help="leave predictions unanswered (widgets behind them stay locked)")
    args = parser.parse_args(argv)
    if not os.path.exists(CHROMIUM):
        parser.exit(2, f"{CHROMIUM} is not installed (apt-get install chromium)\n")
    from lowprec.app.pages import route_names

    routes = [("" if r in ("index", "/") else r.strip("/")) for r in (args.pages or route_names())]
    from lowprec.app.serving import ServedApp, serve_and_wait

    app: ServedApp | None = None
    base = args.url or ""
    try:
        if args.site is None and not base:
            app = serve_and_wait(timeout_s=120)
            base = app.url
        take(routes, Path(args.out), args.widths, args.theme, base=base,
             site=Path(args.site) if args.site else None, locked=args.locked)
    finally:
        if app is not None:
            app.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
