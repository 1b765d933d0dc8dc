"""Offline by construction (issue 33, F2 and item 2).

- The browser fixture every browser test uses (`tests/conftest.py::browser`, an `OfflineBrowser`)
  aborts and records any request that leaves 127.0.0.1, and no test module launches a Chromium of
  its own (a test that forgot the check could not exist).
- F2's cause, reproduced: Bokeh discards a session no browser connected to within its
  unused-session lifetime, and when the browser's websocket arrives later it builds a new session
  for the same id without rendering a page. Panel gives such a document's stylesheets the CDN's
  address; `pages.pin_local_resources` gives every served document this server's before any model
  is built. The test serves with a half-second lifetime and holds the page's script back two
  seconds: the server builds the page twice, and the second one loads nothing from a CDN.
- Server side, under load (a busy process on one core, the spare widgets being built, many sessions
  at once): no HTML, CSS or script the served pages send, and no document or patch the websocket
  carries, names a CDN host; the same for every file of an exported site. The vendored libraries'
  own bundles mention CDN addresses for features the site never uses (Bokeh's Tabler icons and
  MathJax); those mentions are listed here by file and URL, so a new one fails.
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.browser import READY_JS, is_local

ROOT = Path(__file__).resolve().parents[1]

#: hosts that serve libraries to pages (what an offline page must never name as a resource)
CDN_HOST = re.compile(r"(?:https?:)?//((?:[a-z0-9-]+\.)*(?:cdn\.[a-z0-9.-]+|[a-z0-9-]*cdn[a-z0-9-]*\.[a-z.]+|"
                      r"unpkg\.com|jsdelivr\.(?:net|com)|cdnjs\.cloudflare\.com|fonts\.googleapis\.com|"
                      r"fonts\.gstatic\.com|ajax\.googleapis\.com|code\.jquery\.com|holoviz\.org|bokeh\.org))"
                      r"[^\s\"'<>)\\]*", re.IGNORECASE)
#: (file name pattern, URL) of the CDN mentions inside vendored library bundles: code paths for
#: features the site does not use (Bokeh loads Tabler's icon font only for a TablerIcon, MathJax only
#: for TeX labels); the browser fixture would still catch the request if one were ever made
LIBRARY_MENTIONS = {
    ("bokeh", "https://cdn.jsdelivr.net/npm/@tabler/icons-webfont@latest"),
    ("bokeh", "https://cdn.jsdelivr.net/npm/mathjax@3/es5/tex-svg.js"),
    ("bokeh", "https://docs.bokeh.org/en/latest/docs/user_guide/interaction/tools.html#custom-actions"),
    ("bokeh", "https://bokeh.org/"),
    ("es-module-shims", "https://www.jsdelivr.com/using-sri-with-dynamic-files"),  # an error message's link
}


def cdn_mentions(text: str) -> set[str]:
    """Every URL in `text` whose host serves libraries (`CDN_HOST`)."""
    return {m.group(0) for m in CDN_HOST.finditer(text)}


def unexpected_mentions(name: str, text: str) -> set[str]:
    """The CDN mentions of file `name` that `LIBRARY_MENTIONS` does not list for it."""
    allowed = {url for pattern, url in LIBRARY_MENTIONS if pattern in name and name.endswith(".js")}
    found = set()
    for url in cdn_mentions(text):
        if not any(url.startswith(a) or a.startswith(url) for a in allowed):
            found.add(url)
    return found


# ------------------------------------------------------------------------------------------------
# the check itself
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("url, local", [
    ("http://127.0.0.1:5006/widget/BinExplorer", True),
    ("ws://127.0.0.1:5006/widget/BinExplorer/ws", True),
    ("https://127.0.0.1/x.css", True),
    ("data:image/png;base64,AAAA", True),
    ("blob:http://127.0.0.1:5006/3f0e", True),
    ("file:///tmp/site/index.html", True),
    ("about:blank", True),
    ("https://cdn.holoviz.org/panel/1.9.4/dist/css/listpanel.css", False),
    ("http://localhost:5006/", False),  # may resolve elsewhere: only the address itself is local
    ("http://127.0.0.2/", False),
    ("http://127.0.0.1.example.com/", False),
    ("ftp://127.0.0.1/x", False),
])
def test_is_local(url: str, local: bool) -> None:
    assert is_local(url) is local


def test_cdn_mentions_finds_library_hosts() -> None:
    text = ('<link href="https://cdn.holoviz.org/panel/1.9.4/dist/css/x.css"> url(//unpkg.com/a.css) '
            '"https://cdn.jsdelivr.net/npm/y" http://127.0.0.1:5006/static/z.js https://example.org/ok')
    assert cdn_mentions(text) == {"https://cdn.holoviz.org/panel/1.9.4/dist/css/x.css", "//unpkg.com/a.css",
                                  "https://cdn.jsdelivr.net/npm/y"}


def test_no_test_module_launches_a_browser_of_its_own() -> None:
    """Every browser test takes Chromium from the `browser` fixture (its offline check): launching
    one anywhere else in tests/ would make a test that can reach the internet."""
    offenders = []
    for path in sorted((ROOT / "tests").glob("*.py")):
        if path.name == "conftest.py":
            continue
        text = path.read_text(encoding="utf-8")
        if re.search(r"sync_playwright\(|\.launch\(|chromium\.connect", text):
            offenders.append(path.name)
    assert offenders == []


@pytest.mark.ui
def test_the_offline_browser_aborts_and_records_every_outside_request(_chromium: Any) -> None:
    from tests.browser import OfflineBrowser

    offline = OfflineBrowser(_chromium)
    try:
        page = offline.new_page()
        page.set_content('<link rel="stylesheet" href="https://cdn.holoviz.org/panel/1.9.4/dist/css/x.css">'
                         '<img src="http://example.com/a.png"><img src="data:image/gif;base64,R0lGODlhAQABAAAAACw=">')
        page.wait_for_timeout(500)
        page.evaluate("() => { try { new WebSocket('ws://example.com/ws'); } catch (e) {} }")
        page.wait_for_timeout(500)
    finally:
        offline.close()
    outside = " ".join(offline.outside)
    assert "https://cdn.holoviz.org/panel/1.9.4/dist/css/x.css" in outside
    assert "http://example.com/a.png" in outside
    assert "websocket ws://example.com/ws" in outside
    assert "data:" not in outside


# ------------------------------------------------------------------------------------------------
# F2: a session the server rebuilt for a late websocket
# ------------------------------------------------------------------------------------------------

#: the app with a half-second unused-session lifetime, printing a line each time it builds a page
SHORT_LIVED = """
import sys
if __name__ == "__main__":
    from lowprec.app import server
    from lowprec.app.pages import session  # where `routes()` looks `served` up
    real = session.served
    def served(route):
        print("built page", repr(route), flush=True)
        return real(route)
    session.served = served
    print("lowprec: serving", flush=True)
    server.serve(port=int(sys.argv[1]), show=False, unused_session_lifetime_milliseconds=500,
                 check_unused_sessions_milliseconds=250)
"""


@pytest.mark.ui
def test_a_session_rebuilt_for_a_late_websocket_loads_nothing_from_a_cdn(browser: Any) -> None:
    from lowprec.app.serving import serve_and_wait
    from tests.test_ui import Watched, wait_until

    with serve_and_wait([sys.executable, "-c", SHORT_LIVED, "{port}"], cwd=ROOT) as app:
        w = Watched(browser, app.url)

        def late(route: Any) -> None:
            if "panel.min.js" in route.request.url:
                time.sleep(3.0)  # a slow browser: its websocket connects after the session was discarded
            route.fallback()

        w.page.route("**/*", late)
        w.open(f"{app.url}/widget/BinExplorer?format=E5M2")
        wait_until(lambda: (w.source_data("format") or [None])[0] == "E5M2", timeout=60)
        # the server built the page twice: once for the HTML, once for the websocket that came late
        assert app.log().count("built page 'widget/BinExplorer'") == 2, app.log()
        w.check_clean()
        w.page.close()


def test_a_served_document_gets_the_servers_resource_path_before_any_model() -> None:
    """`pin_local_resources` on a session document: `dist_url` is this server's copy, relative to
    the page, and a model built afterwards names no CDN; outside a session it does nothing."""
    import panel as pn
    from bokeh.document import Document
    from bokeh.models import ImportedStyleSheet
    from panel.io.state import set_curdoc

    from lowprec.app import pages

    from types import SimpleNamespace

    doc = Document()
    context = SimpleNamespace(request=SimpleNamespace(arguments={}, cookies={}, headers={}), id="probe")
    doc._session_context = lambda: context  # type: ignore[assignment,return-value]  # "served"
    with set_curdoc(doc):
        pn.state.rel_path = ".."
        assert pages.pin_local_resources() is True
        root = pn.Column(pn.pane.Markdown("x"), pn.widgets.Select(options=["a"]), pn.pane.Alert("y")).get_root(doc)
    assert doc.template_variables["dist_url"] == "../static/extensions/panel/"
    urls = {str(m.url) for m in root.select({"type": ImportedStyleSheet})}
    assert urls and not any(cdn_mentions(u) for u in urls), urls
    assert all(u.startswith("../static/extensions/panel/") for u in urls if u.endswith((".css", f"?v={pn.__version__}")))
    assert pages.pin_local_resources(Document()) is False  # not served: nothing to pin


# ------------------------------------------------------------------------------------------------
# server side, under load: what the pages send names no CDN host
# ------------------------------------------------------------------------------------------------


def _routes_under_load() -> list[str]:
    from urllib.parse import quote

    from lowprec.app.pages import route_names

    routes = route_names()
    lessons = [r for r in routes if r.startswith("lesson/")]
    widgets = [r for r in routes if r.startswith("widget/")]
    payload = quote("<img src=x onerror=alert(1)>")
    return (["", "glossary", lessons[0], lessons[-1]] + widgets
            + [f"widget/BinExplorer?value={payload}&format={payload}", "widget/BinExplorer?format=E5M2"])


@pytest.mark.ui
def test_no_served_page_names_a_cdn_host_under_load(server: str, browser: Any) -> None:
    """Every widget page, the start page, the glossary and two lessons opened at once twice over
    (the second round takes the spares the first left to be rebuilt), with a busy process on one
    core: every HTML, CSS and script response and every websocket frame is scanned."""
    import urllib.request

    problems: list[str] = []
    scanned = {"responses": 0, "frames": 0}

    def on_response(response: Any) -> None:
        url = response.url
        kind = (response.headers.get("content-type") or "").split(";")[0]
        if not is_local(url) or not (kind.startswith("text/") or "javascript" in kind or "json" in kind):
            return
        try:
            text = response.text()
        except Exception:  # noqa: BLE001 - a redirect or an aborted body has none
            return
        scanned["responses"] += 1
        name = url.split("?")[0].rsplit("/", 1)[-1]
        bad = unexpected_mentions(name, text)
        if bad:
            problems.append(f"{url}: {sorted(bad)[:5]}")

    def on_frame(frame: Any) -> None:
        if isinstance(frame, str):
            scanned["frames"] += 1
            bad = cdn_mentions(frame)
            if bad:
                problems.append(f"websocket frame: {sorted(bad)[:5]}")

    with urllib.request.urlopen(server + "/", timeout=120):
        pass  # the first page starts the spares (built a few seconds later, on the event loop)
    hog = subprocess.Popen([sys.executable, "-c", "import time\nend = time.time() + 600\nwhile time.time() < end: pass"])
    try:
        for _ in range(2):
            context = browser.new_context(viewport={"width": 1400, "height": 1000})
            context.set_default_timeout(180_000)
            context.on("response", on_response)
            opened = []
            for route in _routes_under_load():
                page = context.new_page()
                page.on("websocket", lambda ws: ws.on("framereceived", on_frame))
                page.goto(f"{server}/{route}", wait_until="commit")
                opened.append(page)
            for page in opened:
                page.wait_for_function(READY_JS, timeout=180_000, polling=200)
            for page in opened:
                page.wait_for_load_state("networkidle", timeout=180_000)
            context.close()
    finally:
        hog.kill()
        hog.wait()
    assert problems == [], problems
    assert scanned["responses"] > 20 and scanned["frames"] > 20, scanned


def test_no_exported_file_names_a_cdn_host(tmp_path: Path) -> None:
    """Every file an export writes (pages, CSS, scripts, tables) for the start page, a widget with
    an offline note and the recipe lab."""
    from lowprec.app.export import export

    out = tmp_path / "site"
    export(out, ["", "widget/RecipeLab", "widget/DelayedSpike"])
    problems = {}
    files = [p for p in out.rglob("*") if p.is_file()]
    for path in files:
        text = path.read_text(encoding="utf-8", errors="replace")
        bad = unexpected_mentions(path.name, text)
        if bad:
            problems[path.relative_to(out).as_posix()] = sorted(bad)[:5]
    assert problems == {}
    assert any(p.suffix == ".css" for p in files) and any(p.suffix == ".js" for p in files)


def test_a_served_page_pins_the_resource_path_before_it_builds_anything(monkeypatch: pytest.MonkeyPatch) -> None:
    """The order the F2 fix depends on, without a browser: `served` gives the session's document
    this server's resource path before it builds the page (whose models would otherwise take the
    CDN's, in a session Bokeh made for a websocket with no page rendered)."""
    from types import SimpleNamespace

    from bokeh.document import Document
    from panel.io.state import set_curdoc

    from lowprec.app import pages

    seen: list[object] = []

    class Stop(Exception):
        def __init__(self) -> None:
            super().__init__("stopped before building the page")

    def build_page(route: str, **kwargs: Any) -> Any:
        import panel as pn

        seen.append(pn.state.curdoc.template_variables.get("dist_url"))
        raise Stop

    monkeypatch.setattr(pages.session, "build_page", build_page)  # where `served` looks it up
    doc = Document()
    context = SimpleNamespace(request=SimpleNamespace(arguments={}, cookies={}, headers={}), id="probe")
    doc._session_context = lambda: context  # type: ignore[assignment,return-value]
    with set_curdoc(doc), pytest.raises(Stop, match="stopped before building"):
        pages.served("widget/BinExplorer")
    assert seen == ["static/extensions/panel/"]
