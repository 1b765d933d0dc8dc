"""`lowprec export`: a site of pages that open from file:// with every network request blocked.

The default run exports a few representative pages (`FAST_ROUTES`); the `slow` tests export the
whole site and walk every page. File checks (no browser): the whole site within its size limits
(≤ 30 MB, no page over 3 MB; `slow`), each representative page under 3 MB, assets written once and
referenced relatively, no CDN link left; safe writing (a non-empty target
is refused without --force, nothing is written through a symbolic link or outside the target, a
file target or an unwritable path is a one-line error, `export --list` needs no folder).

Browser checks (`ui` marker, Debian's Chromium) open each exported page from disk with all
non-file requests aborted: no console or page error, axe-core reports no serious or critical
violation, no sideways scroll at 390 px, a lesson's prose ≤ 800 px at 1400 px and previous/next links
in course order. The bin explorer page gives, for typed values in every format up to 8 bits and
under every convention, the code `formats.encode` gives (the page looks values up in tables
computed in Python), and the very columns `app.plots.bins.bins_sources` computes; its visible table
follows a format change; a compact state replays what the served widget computes.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import numpy as np
import pytest

from lowprec.app.commands import export_cmd
from lowprec.config import fields_of
from lowprec.simulations.format_records import ExplainConfig
from lowprec.app.export import PAGE_LIMIT, SITE_LIMIT, ExportError, available_routes, export, page_file, site_size
from tests.browser import COMPLETE_JS, READY_JS, WatchedPage, answer_every_prediction, check_site_page

ROOT = Path(__file__).resolve().parents[1]
ROUTES = available_routes()

pytestmark = pytest.mark.xdist_group("exported-site")


def _lessons() -> list[str]:
    from lowprec.course.lessons import load_lessons
    from lowprec.app.pages import lesson_route

    return [lesson_route(x) for x in load_lessons()]


LESSONS = _lessons()


#: what the default run exports and opens (under a minute): the start page (compact explorer), the
#: glossary, the bin explorer, a simulation widget with compact states, and a lesson whose widget is
#: locked behind a prediction; the whole site is exported and walked by the `slow` tests
FAST_ROUTES = ["", "glossary", "widget/BinExplorer", "widget/DelayedSpike", "lesson/when-the-scale-is-measured"]


def _export_for_tests(tmp_path_factory: pytest.TempPathFactory, routes: list[str]) -> Path:
    """`routes` exported once (LOWPREC_TEST_SITE=DIR reuses a site exported before that holds
    them, when working on the browser tests)."""
    reuse = os.environ.get("LOWPREC_TEST_SITE")
    if reuse and all((Path(reuse) / page_file(r)).is_file() for r in routes):
        return Path(reuse)
    out = tmp_path_factory.mktemp("site") / "site"
    pages = export(out, routes)
    assert [p.route for p in pages] == routes
    return out


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The representative pages (FAST_ROUTES), exported once for this module."""
    return _export_for_tests(tmp_path_factory, FAST_ROUTES)


@pytest.fixture(scope="module")
def whole_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every page, exported once for this module (a few minutes)."""
    return _export_for_tests(tmp_path_factory, ROUTES)


# ------------------------------------------------------------------------------------------------
# files
# ------------------------------------------------------------------------------------------------


def test_page_size_limit(site: Path) -> None:
    """The representative pages, the lesson with a locked widget included, stay under the page limit."""
    for route in FAST_ROUTES:
        size = (site / page_file(route)).stat().st_size
        assert 0 < size <= PAGE_LIMIT, f"{route}: {size / 1e6:.2f} MB > {PAGE_LIMIT / 1e6:.0f} MB"


@pytest.mark.slow
def test_site_size_limits(whole_site: Path) -> None:
    total, largest, name = site_size(whole_site)
    assert total <= SITE_LIMIT, f"site {total / 1e6:.1f} MB > {SITE_LIMIT / 1e6:.0f} MB"
    assert largest <= PAGE_LIMIT, f"{name}: {largest / 1e6:.2f} MB > {PAGE_LIMIT / 1e6:.0f} MB"
    for route in ROUTES:
        assert (whole_site / page_file(route)).is_file(), route


def test_assets_once_and_relative(site: Path) -> None:
    """Bokeh's and Panel's JS live once under _static/ and every page links them relatively; no
    page inlines Bokeh or points at a CDN."""
    bokeh = list((site / "_static" / "bokeh").glob("bokeh-*.min.js"))
    assert bokeh, "Bokeh's JS is not in _static/bokeh"
    for route in FAST_ROUTES:
        path = site / page_file(route)
        html = path.read_text(encoding="utf-8")
        assert "cdn.holoviz.org" not in html and "cdn.bokeh.org" not in html, route
        assert "Traceback" not in html, route
        assert "Bokeh Contributors" not in html, f"{route} inlines Bokeh's JS"
        for ref in re.findall(r"<(?:script|link)[^>]+(?:src|href)=\"([^\"]+)\"", html):
            assert not ref.startswith(("http:", "https:", "//", "/")), (route, ref)
            assert (path.parent / ref.split("?")[0]).resolve().is_file(), (route, ref)


# ------------------------------------------------------------------------------------------------
# safe export (hardening: the target folder)
# ------------------------------------------------------------------------------------------------


def _cli(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "lowprec.app.cli", "export", *argv], cwd=ROOT,
                          capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})


def test_non_empty_target_is_refused_without_force(tmp_path: Path) -> None:
    mine = tmp_path / "notes.txt"
    mine.write_text("keep me", encoding="utf-8")
    with pytest.raises(ExportError, match=r"is not empty \(1 entries\); use --force"):
        export(tmp_path, ["glossary"])
    assert mine.read_text(encoding="utf-8") == "keep me" and sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]
    export(tmp_path, ["glossary"], force=True)
    assert (tmp_path / "glossary.html").is_file() and mine.read_text(encoding="utf-8") == "keep me"


def test_never_writes_through_a_symlink(tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("precious", encoding="utf-8")
    target = tmp_path / "site"
    target.mkdir()
    (target / "glossary.html").symlink_to(outside)
    with pytest.raises(ExportError, match="glossary.html is a symbolic link; refusing to write through it"):
        export(target, ["glossary"], force=True)
    assert outside.read_text(encoding="utf-8") == "precious"
    # a linked folder inside the target: refused too, nothing lands in the folder it points to
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    target2 = tmp_path / "site2"
    target2.mkdir()
    (target2 / "_static").symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(ExportError, match="_static is a symbolic link"):
        export(target2, ["glossary"], force=True)
    assert not any(elsewhere.iterdir())
    # the target itself a link
    link = tmp_path / "link"
    link.symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(ExportError, match="is a symbolic link; export into a real folder"):
        export(link, ["glossary"], force=True)


def test_cli_errors_are_one_line(tmp_path: Path) -> None:
    a_file = tmp_path / "file.txt"
    a_file.write_text("x", encoding="utf-8")
    cases = {
        str(a_file): "is a file, not a folder",
        str(a_file / "sub"): "cannot create",
        str(tmp_path): "is not empty",
    }
    for target, message in cases.items():
        r = _cli(target, "--pages", "glossary", "--quiet")
        assert r.returncode == 2, (target, r.stderr)
        assert r.stderr.count("\n") == 1 and message in r.stderr and "Traceback" not in r.stderr, r.stderr
        assert r.stdout == ""


def test_unwritable_target_is_one_line(tmp_path: Path) -> None:
    if os.geteuid() == 0:  # root writes everywhere: use a place no one can create a folder in
        target = "/proc/lowprec-export-test"
    else:
        locked = tmp_path / "locked"
        locked.mkdir()
        locked.chmod(0o500)
        target = str(locked / "site")
    r = _cli(target, "--pages", "glossary", "--quiet")
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "cannot" in r.stderr, r.stderr


def test_list_needs_no_folder() -> None:
    r = _cli("--list")
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == [route or "index" for route in ROUTES]
    r = _cli()
    assert r.returncode == 2 and "needs DIR" in r.stderr and r.stderr.count("\n") == 1


def test_unknown_page_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown page 'lesson/nope'"):
        export(tmp_path, ["lesson/nope"])
    assert not any(tmp_path.iterdir())


def test_cli_index_alias(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc = export_cmd.run(argparse.Namespace(dir=str(tmp_path / "out"), pages=["index"], list=False, quiet=True,
                                           force=False))
    assert rc == 0 and (tmp_path / "out" / "index.html").is_file()
    out = capsys.readouterr().out
    assert "index.html" in out and "site:" in out


def test_dir_may_follow_the_pages(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 33: `lowprec export --pages lesson/x DIR` took DIR as a page ("export needs DIR")."""
    from lowprec.app.cli import main

    lesson = LESSONS[0]
    assert main(["export", "--pages", lesson, "index", str(tmp_path / "out"), "--quiet"]) == 0
    assert (tmp_path / "out" / page_file(lesson)).is_file() and (tmp_path / "out" / "index.html").is_file()
    assert main(["export", "--pages", "lesson/x.html", "--quiet"]) == 2  # a folder named like no route
    assert "export needs DIR" not in capsys.readouterr().err


#: an exported page's links to other pages, in whichever escaping they sit (the page itself, or the
#: HTML of a Markdown pane inside the embedded document, escaped once or twice)
_PAGE_LINK = re.compile(r'href=(?:"|\\"|&quot;|&amp;quot;)([^"\\&#]*?\.html)')


def test_a_partial_export_links_only_to_pages_it_wrote(tmp_path: Path) -> None:
    """Issue 33: `export DIR --pages X` wrote links (the course map, the lesson's prose, the pager)
    to pages it did not write. Every link to another page of the site resolves to a written file,
    and the links that would not are left as text."""
    out = tmp_path / "site"
    routes = [LESSONS[1], "widget/BinExplorer"]
    export(out, routes)
    for route in routes:
        path = out / page_file(route)
        html = path.read_text(encoding="utf-8")
        targets = _PAGE_LINK.findall(html)
        assert targets, route
        for target in targets:
            if ":" not in target:  # another site's page is not ours to check
                assert (path.parent / target).resolve().is_file(), (route, target)
        assert "data-unexported=" in html  # the course map still names the other lessons, as text
    lesson_html = (out / page_file(LESSONS[1])).read_text(encoding="utf-8")
    assert 'href="../widget/BinExplorer.html"' in lesson_html  # the page it wrote stays linked


def test_an_exported_recipe_lab_says_what_needs_the_server(tmp_path: Path) -> None:
    """Issue 33, F9: the exported RecipeLab showed a drop zone that did nothing; it now says that
    uploading needs the server (or `lowprec analyze`) and shows no drop zone."""
    out = tmp_path / "site"
    export(out, ["widget/RecipeLab"])
    html = (out / page_file("widget/RecipeLab")).read_text(encoding="utf-8")
    assert "Uploading a file needs the server" in html and "lowprec analyze PATH" in html
    assert "Upload a file of at most" not in html
    docs = json.loads(re.search(r'<script type="application/json" id="[^"]+">(.*?)</script>', html, re.S).group(1))
    droppers = [r for d in docs.values() for r in _models(d) if r.get("type") == "object"
                and r.get("name", "").endswith("FileDropper")]
    assert droppers and all(r["attributes"].get("visible") is False for r in droppers)


def _models(node: Any) -> Iterator[dict[str, Any]]:
    """Every model record of a Bokeh document's JSON, wherever it is nested."""
    if isinstance(node, dict):
        if "attributes" in node and "name" in node:
            yield node
        for value in node.values():
            yield from _models(value)
    elif isinstance(node, list):
        for value in node:
            yield from _models(value)


def test_unlink_missing_pages_on_every_escaping(tmp_path: Path) -> None:
    from lowprec.app.export import unlink_missing_pages

    (tmp_path / "lesson").mkdir()
    (tmp_path / "lesson" / "a.html").write_text("x")
    page = ('<a href="../lesson/a.html">a</a> <a href="../lesson/b.html#x">b</a> '
            '&lt;a href=&quot;b.html&quot;&gt; &amp;lt;a href=&amp;quot;../glossary.html#t&amp;quot;&amp;gt; '
            '<a href=\\"../index.html\\">i</a> <a href="https://example.org/x.html">e</a> <a href="#top">t</a> '
            '<link href="../_static/x.css">')
    assert unlink_missing_pages(page, "lesson/a.html", tmp_path) == (
        '<a href="../lesson/a.html">a</a> <a data-unexported="../lesson/b.html#x">b</a> '
        '&lt;a data-unexported=&quot;b.html&quot;&gt; &amp;lt;a data-unexported=&amp;quot;../glossary.html#t&amp;quot;&amp;gt; '
        '<a data-unexported=\\"../index.html\\">i</a> <a href="https://example.org/x.html">e</a> <a href="#top">t</a> '
        '<link href="../_static/x.css">')


# ------------------------------------------------------------------------------------------------
# browser: open from disk, network blocked
# ------------------------------------------------------------------------------------------------


class Offline(WatchedPage):
    """A page opened from disk: only file:, data: and blob: URLs may load."""

    def __init__(self, browser: Any) -> None:
        super().__init__(browser, lambda url: urlparse(url).scheme in ("file", "data", "blob"))

    def open(self, path: Path, timeout_ms: int = 180_000) -> None:
        """Open a page and wait until Bokeh has rendered it and the site script has run."""
        self.page.goto(path.resolve().as_uri(), timeout=timeout_ms)
        self.page.wait_for_function(READY_JS, timeout=timeout_ms)
        self.page.wait_for_timeout(1000)

    def check_clean(self) -> None:
        assert self.outside == [], self.outside
        assert self.console_errors == [], self.console_errors
        assert self.page_errors == [], self.page_errors


def wait_until(condition: Any, timeout: float = 20.0) -> Any:
    import time

    end = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > end:
            raise AssertionError(f"condition not met within {timeout} s")
        time.sleep(0.1)


def _check_exported_page(site: Path, browser: Any, route: str) -> None:
    w = Offline(browser)
    w.open(site / page_file(route))
    index = LESSONS.index(route) if route in LESSONS else None
    # a partial export links only to the pages it wrote (issue 33): a lesson it did not write is
    # no previous/next link ('')
    lesson_urls = [(site / page_file(r)).resolve().as_uri() if (site / page_file(r)).is_file() else ""
                   for r in LESSONS]
    problems = check_site_page(w.page, index, lesson_urls)
    assert problems == [], problems
    w.check_clean()
    w.page.close()


@pytest.mark.ui
@pytest.mark.parametrize("route", FAST_ROUTES, ids=lambda r: r or "index")
def test_exported_page(site: Path, browser: Any, route: str) -> None:
    _check_exported_page(site, browser, route)


@pytest.mark.ui
@pytest.mark.slow
@pytest.mark.parametrize("route", ROUTES, ids=lambda r: r or "index")
def test_every_exported_page(whole_site: Path, browser: Any, route: str) -> None:
    _check_exported_page(whole_site, browser, route)


TYPED = ["3.3", "-3.3", "0", "-0", "448", "465", "-465", "1e-3", "2.6", "5.1", "0.1", "1e30", "-1e-30",
         "0x1.8p3", "inf", "-inf", "nan", "0.0009765625", "1.0000000596046448", "57344", "61440",
         "6.5", "0.75", "3", "1.0625000000000002"]


def _typed_values(seed: int = 0) -> list[str]:
    rng = np.random.default_rng(seed)
    extra = [repr(float(x)) for x in rng.standard_normal(12) * np.exp2(rng.integers(-20, 20, 12))]
    return TYPED + extra


#: the bin explorer's own rounding setting (ExplainConfig's default: '' keeps the convention's own),
#: which the exported pages keep
PAGE_ROUNDING = next(k.default for k in fields_of(ExplainConfig) if k.name == "rounding")


def _expected_code(text: str, fmt: str, convention: str) -> int | None:
    from lowprec import formats as F
    from lowprec.formats.explain import resolve_policy

    try:
        policy = resolve_policy(fmt, convention, PAGE_ROUNDING)
        return int(F.encode(np.array([F.parse_value(text)]), fmt, policy)[0])
    except ValueError:
        return None


class Explorer:
    """Drive the exported bin explorer: type a value, pick a format or convention, read the code."""

    def __init__(self, w: Offline) -> None:
        self.w = w
        self.box = w.page.get_by_placeholder("3.3, 1e-3, -0, inf, nan, 0x1.8p3")
        self.selects = w.page.locator("select:not([disabled])")

    def type(self, fmt: str, convention: str, text: str) -> None:
        """As a learner would: pick the format and convention in the menus, type the value, Enter."""
        page = self.w.page
        self.selects.nth(0).select_option(fmt)
        self.selects.nth(1).select_option(convention)
        self.box.fill(text)
        self.box.press("Enter")
        page.wait_for_function("""([fmt, text]) => { const e = window.lowprecBinExplorers[0];
            return e.current.value === text && ((e.view && e.view.main.format === fmt && e.view.input_text === text)
                                                 || !!e.error); }""", arg=[fmt, text], timeout=30000)

    def set(self, fmt: str, convention: str, text: str) -> None:
        """The same through the page's explorer object (fast, for many values)."""
        page = self.w.page
        page.evaluate("""([fmt, conv, text]) => { const e = window.lowprecBinExplorers[0];
            e.current = {format: fmt, convention: conv, value: text}; e.flipped = null; window.__done = false;
            e.update().then(() => { window.__done = true; }); }""", [fmt, convention, text])
        page.wait_for_function("() => window.__done === true", timeout=30000)

    def codes(self, fmt: str, convention: str, texts: list[str]) -> list[tuple[str | None, str]]:
        """The code of each text (None and the message when refused), computed by the page's
        explorer in one go (its tables loaded first)."""
        return [tuple(r) for r in self.w.page.evaluate(  # type: ignore[misc]
            """async ([fmt, conv, texts]) => { const e = window.lowprecBinExplorers[0];
                await window.lowprecBins.load(fmt);
                if (e.cfg.compare && e.cfg.compare.offline) await window.lowprecBins.load(e.cfg.compare.format);
                return texts.map(text => { e.current = {format: fmt, convention: conv, value: text}; e.flipped = null;
                    try { const v = e.explain(); return [v.main.hex, '']; } catch (err) { return [null, err.message]; } }); }""",
            [fmt, convention, texts])]

    def code(self) -> tuple[str | None, str]:
        res = self.w.page.evaluate("""() => { const e = window.lowprecBinExplorers[0];
            return [e.error ? null : e.view.main.hex, e.error || '']; }""")
        return res[0], res[1]


@pytest.mark.ui
def test_exported_bin_explorer_gives_the_model_code(site: Path, browser: Any) -> None:
    """Every format up to 8 bits × every convention × typed values (edges, ties, overflow, specials,
    random): the page's code is formats.encode's; a value the policy refuses shows a message."""
    from lowprec.app.bins_offline import OFFLINE_FORMATS
    from lowprec.formats.conventions import CONVENTIONS

    from lowprec.formats import get_format
    from lowprec.formats.explain import resolve_policy
    from lowprec.formats.partition import cast_partition

    w = Offline(browser)
    w.open(site / "widget" / "BinExplorer.html")
    e = Explorer(w)
    wrong = []

    def check(fmt: str, conv: str, text: str, got: str | None, error: str) -> None:
        want = _expected_code(text, fmt, conv)
        digits = (get_format(fmt).bits + 3) // 4
        if want is None:
            if got is not None or not error:
                wrong.append((fmt, conv, text, got, "should be refused"))
        elif got != f"0x{want:0{digits}X}":
            wrong.append((fmt, conv, text, got, f"0x{want:0{digits}X}", error))

    for fmt, conv, text in [("E2M1", "ml_dtypes", "5.1"), ("E4M3FN", "torch", "465"), ("E8M0", "ml_dtypes", "0.75"),
                            ("E5M2", "triton_nvidia", "61440"), ("E4M3FN", "ml_dtypes", "1.0625000000000002")]:
        e.type(fmt, conv, text)  # typed into the page
        check(fmt, conv, text, *e.code())
    rng = np.random.default_rng(3)
    for fmt in OFFLINE_FORMATS:
        for conv in CONVENTIONS:
            # the typed values, and both sides of 24 edges of this cast (the first float64 of a run
            # and the one below it: ties, double-rounding edges, overflow thresholds)
            starts = cast_partition(fmt, resolve_policy(fmt, conv, PAGE_ROUNDING)).starts
            starts = starts[np.isfinite(starts)]
            pick = rng.choice(starts, size=min(24, starts.size), replace=False)
            texts = _typed_values() + [repr(float(x)) for x in pick] + \
                [repr(float(np.nextafter(x, -np.inf))) for x in pick]
            for text, (got, error) in zip(texts, e.codes(fmt, conv, texts)):
                check(fmt, conv, text, got, error)
    assert wrong == [], wrong[:10]
    w.check_clean()
    w.page.close()


def _python_columns(text: str, fmt: str, conv: str, compare: str, scale: float) -> dict[str, Any]:
    from lowprec.app.plots.bins import bins_sources
    from lowprec.formats import explain_value

    return bins_sources(explain_value(text, fmt, conv, PAGE_ROUNDING, None, compare or None, scale))


@pytest.mark.ui
@pytest.mark.parametrize("route, compare, scale", [
    ("widget/BinExplorer", "E5M2", 1.0),
    pytest.param("lesson/moving-the-grid", "E5M2", 0.0078125, marks=pytest.mark.slow)])
def test_exported_bin_explorer_columns_equal_the_served_ones(request: pytest.FixtureRequest, browser: Any,
                                                             route: str, compare: str, scale: float) -> None:
    """The columns the page draws are those `bins_sources` computes in a served session (texts
    included: Python's %g, repr and power-of-two texts, written exactly in the browser)."""
    site = request.getfixturevalue("site" if route in FAST_ROUTES else "whole_site")
    w = Offline(browser)
    w.open(site / page_file(route))
    e = Explorer(w)
    keys = ("bits", "summary", "bins", "points", "ties", "marker", "compare_points", "gap_marker", "table")
    for fmt, conv, text in [("E4M3FN", "ml_dtypes", "3.3"), ("E4M3FN", "torch", "465"), ("E5M2", "ocp", "-0"),
                            ("E2M1", "ml_dtypes", "nan"), ("E8M0", "torch", "0"), ("E4M3FN", "ml_dtypes", "1e-3"),
                            ("INT8", "ocp", "-100.5"), ("E3M2", "triton_nvidia", "1e9"), ("E5M2", "torch", "inf"),
                            ("E4M3FN", "torch", "-inf"), ("E5M2", "ml_dtypes", "-70000")]:  # infinitely wrong: inf
        e.set(fmt, conv, text)
        got = w.page.evaluate("() => window.lowprecBinExplorers[0].lastSources")
        want = _python_columns(text, fmt, conv, compare, scale)
        for key in keys:
            for col, values in want[key].items():
                assert _same(got[key][col], values), (fmt, conv, text, key, col, got[key][col][:6], list(values)[:6])
    w.check_clean()
    w.page.close()


def _same(a: list[Any], b: list[Any]) -> bool:
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if isinstance(y, float) and isinstance(x, (int, float)):
            if not (x == y or (x != x and y != y)):
                return False
        elif x != y:
            return False
    return True


@pytest.mark.ui
def test_exported_table_updates_after_a_format_change(site: Path, browser: Any) -> None:
    w = Offline(browser)
    w.open(site / "widget" / "BinExplorer.html")
    wait_until(lambda: any(r.startswith("E4M3FN|0x45|") for r in w.table_rows()))
    w.page.locator("select:not([disabled])").first.select_option("E2M1")
    box = w.page.get_by_placeholder("3.3, 1e-3, -0, inf, nan, 0x1.8p3")
    box.fill("5.1")
    box.press("Enter")
    wait_until(lambda: any(r.startswith("E2M1|0x7|0111|6|") for r in w.table_rows()))
    assert any(r.startswith("E5M2|0x45|") for r in w.table_rows())
    assert not any(r.startswith("E4M3FN|") for r in w.table_rows())
    w.check_clean()
    w.page.close()


@pytest.mark.ui
def test_the_exported_explorer_knows_the_view_the_page_shows_without_drawing_it_again(
        site: Path, browser: Any) -> None:
    """The page holds the view Python drew; the offline engine works out the same view in JS
    (`prime`: its columns are those `bins_sources` computes) and pushes nothing into the page's
    models until the reader changes something (a redraw while Bokeh still laid the page out made
    it lay out twice: 0.3-0.5 s of the exported explorer's load). A bit flip then works at once."""
    w = Offline(browser)
    w.page.add_init_script("""window.__lpSourceSets = 0;
        const poll = setInterval(() => { if (!(window.Bokeh && Bokeh.documents.length)) return; clearInterval(poll);
          for (const m of Bokeh.documents[0].all_models) if (m.constructor.__name__ === "ColumnDataSource")
            m.property("data").change.connect(() => { window.__lpSourceSets += 1; }); }, 5);""")
    w.open(site / "widget" / "BinExplorer.html")
    w.page.wait_for_function("() => { const e = (window.lowprecBinExplorers || [])[0]; return !!(e && e.view); }",
                             timeout=30000)
    got = w.page.evaluate("() => window.lowprecBinExplorers[0].lastSources")
    settings = w.page.evaluate("() => window.lowprecBinExplorers[0].cfg.settings")
    want = _python_columns(settings["value"], settings["format"], settings["convention"], "", 1.0)
    for key in ("bits", "bins", "points", "table"):
        for col, values in want[key].items():
            assert _same(got[key][col], values), (key, col)
    assert w.page.evaluate("() => window.__lpSourceSets") == 0
    w.page.get_by_role("button", name=re.compile(r"^mantissa bit 0: [01]$")).click()  # flip the last bit
    w.page.wait_for_function("() => window.__lpSourceSets > 0", timeout=30000)
    w.check_clean()
    w.page.close()


def test_an_exported_page_loads_only_the_extension_scripts_its_widgets_need(tmp_path: Path) -> None:
    """Panel lists the scripts of every extension model the exporting process has imported unless
    the page declares its own (`pages.use_extensions`): exported after a RecipeLab, the bin
    explorer's page loaded filepond's five scripts too."""
    folder = tmp_path / "site"
    export(folder, ["widget/RecipeLab", "widget/BinExplorer"])
    recipe = (folder / page_file("widget/RecipeLab")).read_text(encoding="utf-8")
    explorer = (folder / page_file("widget/BinExplorer")).read_text(encoding="utf-8")
    assert re.search(r'<script[^>]+src="[^"]*filepond[^"]*\.js"', recipe)
    assert "filepond" not in explorer


@pytest.mark.ui
def test_exported_compact_state_replays_the_widget(site: Path, browser: Any) -> None:
    """Choosing `algo` on the exported DelayedSpike page shows the columns the widget computes."""
    from lowprec.app.widgets import DelayedSpike

    expected = DelayedSpike(algo="most_recent").source_data["steps"]["delayed_amax_used"]
    w = Offline(browser)
    w.open(site / "widget" / "DelayedSpike.html")
    before = w.column("delayed_amax_used")
    assert before and before != expected
    w.page.locator("select:not([disabled])").first.select_option("most_recent")
    wait_until(lambda: w.column("delayed_amax_used") == expected)
    w.page.locator("select:not([disabled])").first.select_option("max")
    wait_until(lambda: w.column("delayed_amax_used") == before)
    assert "Offline page: only **algo**" in (site / "widget" / "DelayedSpike.html").read_text(encoding="utf-8") or \
        w.page.get_by_text("Offline page: only").count() > 0
    w.check_clean()
    w.page.close()


def test_a_locked_widget_gets_its_note_and_its_own_live_control(tmp_path: Path) -> None:
    """Widgets hidden behind a prediction are found like the others: each gets the note that says
    what works offline and keeps its own control live (before, a locked widget had no note, and
    its live control was looked up page-wide by name: the recompute lab's six `variant` plans all
    fell on the first widget's control). Every lesson's widgets are findable by their views:
    tests/test_pages.py::test_every_lesson_renders_with_its_widgets."""
    (page,) = export(tmp_path / "s", ["lesson/stochastic-rounding"])
    html = page.path.read_text(encoding="utf-8")
    assert html.count("Offline page:") == 3  # two AttentionRounding (rounding), one BinExplorer
    assert set(page.states) == {"AttentionRounding.rounding", "AttentionRounding2.rounding", "BinExplorer.value"}
    config = json.loads(re.search(r'<script type="application/json" id="lp-offline">(.*?)</script>',
                                  html, re.S).group(1))
    assert len(config["states"]) == 2  # one live control per AttentionRounding
    assert re.search(r'data-lazy-slots="(\d+)"', html).group(1) == "3"


def test_an_exported_lesson_holds_its_widgets_in_slots(site: Path) -> None:
    """An exported lesson draws its widgets as the reader reaches them: <body data-lazy-slots> counts
    them; a widget page and the start page draw theirs at once."""
    counts = {r: re.search(r'data-lazy-slots="(\d+)"', (site / page_file(r)).read_text(encoding="utf-8")).group(1)
              for r in ("lesson/when-the-scale-is-measured", "widget/DelayedSpike", "")}
    assert counts == {"lesson/when-the-scale-is-measured": "1", "widget/DelayedSpike": "0", "": "0"}


@pytest.mark.ui
def test_an_exported_lesson_draws_its_widget_and_replays_its_states(site: Path, browser: Any) -> None:
    """The DelayedSpike of an exported lesson waits in its slot, is drawn without scrolling (the
    background loading), and once its prediction is answered its live control shows the columns the
    widget computes, as on the widget's own page."""
    from lowprec.app.widgets import DelayedSpike

    expected = DelayedSpike(algo="most_recent").source_data["steps"]["delayed_amax_used"]
    w = Offline(browser)
    w.open(site / page_file("lesson/when-the-scale-is-measured"))
    assert w.page.evaluate("() => document.body.dataset.lazySlots") == "1"
    w.page.wait_for_function(COMPLETE_JS, timeout=120_000, polling=100)
    answer_every_prediction(w.page)
    before = w.column("delayed_amax_used")
    assert before and before != expected
    algo = w.page.locator("select:not([disabled])").filter(has=w.page.locator("option[value='most_recent']"))
    algo.wait_for(state="visible")
    algo.select_option("most_recent")
    wait_until(lambda: w.column("delayed_amax_used") == expected)
    w.check_clean()
    w.page.close()
