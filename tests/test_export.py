"""`lowprec export`: standalone pages that open from file:// with every network request blocked.

The file checks need no browser: no Panel CDN link is left, every local reference exists. The
browser checks (`ui` marker, Debian's Chromium) open each exported page from disk with all
non-file requests aborted and recorded, assert zero outside requests, no console or page error,
no traceback, and that the embedded control changes the plotted data (E5M2's gap plot has its
subnormal plateau at 2^-16, E4M3FN's at 2^-9: formula 2^(emin - m)).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pytest

from lowprec.app.commands import export_cmd
from tests.browser import CHROMIUM, WatchedPage
from tests.browser import CHROMIUM_ARGS as CHROMIUM_BASE_ARGS
from lowprec.app.export import export, page_file

ROUTES = ["", "widget/BinExplorer", "widget/Conventions", "lesson/range-vs-resolution"]
CHROMIUM_ARGS = CHROMIUM_BASE_ARGS + ["--allow-file-access-from-files"]


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("export")
    pages = export(out, ROUTES)
    assert [p.route for p in pages] == ROUTES
    return out


def test_files_written_with_local_resources_only(exported: Path) -> None:
    for route in ROUTES:
        html = (exported / page_file(route)).read_text(encoding="utf-8")
        assert "cdn.holoviz.org" not in html, route
        assert "Traceback" not in html
        for ref in re.findall(r"(?:\.\./)*_static/panel/[^\"'\\\s)]+", html):
            assert (exported / page_file(route)).parent.joinpath(ref).resolve().is_file(), ref
    # <link>/<script> tags may not point off the machine
    for route in ROUTES:
        html = (exported / page_file(route)).read_text(encoding="utf-8")
        for tag in re.findall(r"<(?:script|link)[^>]+(?:src|href)=\"([^\"]+)\"", html):
            assert not tag.startswith(("http:", "https:", "//")), (route, tag)


def test_pages_say_which_control_is_live(exported: Path) -> None:
    html = (exported / "widget/BinExplorer.html").read_text(encoding="utf-8")
    assert "Offline page: only" in html and "precomputed states" in html


def test_unknown_page_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown page 'lesson/nope'"):
        export(tmp_path, ["lesson/nope"])
    assert not any(tmp_path.iterdir())


def test_cli_index_alias(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import argparse

    rc = export_cmd.run(argparse.Namespace(dir=str(tmp_path), pages=["index"], list=False, quiet=True))
    assert rc == 0 and (tmp_path / "index.html").is_file()
    assert "index.html" in capsys.readouterr().out


# ------------------------------------------------------------------------------------------------
# browser: open from disk, network blocked
# ------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    import playwright.sync_api as api
    if not os.path.exists(CHROMIUM):
        pytest.skip(f"{CHROMIUM} is not installed")
    with api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()


class Offline(WatchedPage):
    """A page opened from disk: only file:, data: and blob: URLs may load; exported pages inline
    ~3 MB of JS each, hence the generous timeouts."""

    def __init__(self, browser: Any) -> None:
        super().__init__(browser, lambda url: urlparse(url).scheme in ("file", "data", "blob"))

    def open(self, path: Path, timeout_ms: int = 180_000) -> None:
        """Open a page and wait until it has loaded and Bokeh has rendered."""
        self.page.goto(path.resolve().as_uri(), timeout=timeout_ms)
        self.page.wait_for_load_state("load", timeout=timeout_ms)
        self.page.wait_for_function(
            "() => window.Bokeh !== undefined && Bokeh.documents.length > 0", timeout=timeout_ms)
        # Not "networkidle": Chromium sometimes never reports it for a file:// page that has made
        # every request (seen on the lesson 6 page: no request pending, none outside). Every
        # request is intercepted by _route anyway; give late ones a moment to show up.
        self.page.wait_for_timeout(1000)

    def column(self, column: str) -> Any:
        return self.page.evaluate(
            """(column) => {
                for (const doc of Bokeh.documents) for (const m of doc.all_models) {
                    const d = m.data;
                    if (d === undefined || d === null || typeof d !== 'object') continue;
                    const c = d instanceof Map ? d.get(column) : d[column];
                    if (c !== undefined) return Array.from(c);
                }
                return null;
            }""", column)


@pytest.mark.ui
def test_exported_pages_open_offline(exported: Path, browser: Any) -> None:
    w = Offline(browser)
    for route in ROUTES:
        w.open(exported / page_file(route))
        w.page.get_by_text("lowprec").first.wait_for(timeout=30000)
        assert "Traceback" not in w.page.content()
    assert w.outside == [], w.outside
    assert w.console_errors == [], w.console_errors
    assert w.page_errors == [], w.page_errors
    w.page.close()


@pytest.mark.ui
def test_exported_control_changes_the_view(exported: Path, browser: Any) -> None:
    import time

    w = Offline(browser)
    w.open(exported / "widget/BinExplorer.html")
    assert min(w.column("log2_gap")) == -9  # E4M3FN: emin 1 - 7 = -6, m = 3
    w.page.get_by_role("combobox").first.select_option("E5M2")
    end = time.monotonic() + 15
    while min(w.column("log2_gap")) != -16 and time.monotonic() < end:  # E5M2: -14 - 2
        time.sleep(0.1)
    assert min(w.column("log2_gap")) == -16
    assert w.outside == [] and w.page_errors == [] and w.console_errors == []
    w.page.close()


@pytest.mark.ui
@pytest.mark.slow
def test_every_page_exports_and_opens_offline(tmp_path: Path, browser: Any) -> None:
    """The whole site (about two minutes: the recompute pages run their simulation per state)."""
    pages = export(tmp_path)
    w = Offline(browser)
    for page in pages:
        try:
            w.open(page.path)
        except Exception as exc:  # say which page and what it was asking for
            raise AssertionError(f"{page.route}: {exc!s:.200} outside={w.outside[:5]} "
                                 f"errors={w.page_errors[:3]} console={w.console_errors[:3]}") from None
        w.page.get_by_text("lowprec").first.wait_for(timeout=30000)
        assert "Traceback" not in w.page.content(), page.route
    assert w.outside == [] and w.page_errors == [] and w.console_errors == []
    w.page.close()
