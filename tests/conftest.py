"""Shared fixtures and the `slow` switch.

Panel state is reset after every test, or served apps hang the run. Tests marked `slow` (exhaustive
sweeps, the whole-site export walk) are left out of the default run, which CI keeps under 20 minutes
on two cores; `./dev slow` (or `pytest --slow`, or a `-m` expression naming `slow`) runs them.

Browser tests take their Chromium from `browser` (one per module, Debian's chromium through
Playwright): an `OfflineBrowser` (tests/browser.py) that aborts every request leaving 127.0.0.1
and fails the test that made one. `server` is the app served by `lowprec serve` for a module
(`app.serving.serve_and_wait`, the one serve-and-wait helper of tests and benchmarks)."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any, Iterator

import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

# `lowprec lessons`' record cache off for the suite (tests that check it name their own folder):
# the suite neither writes the user's ~/.cache nor has every `lowprec serve` it starts compute the
# course's records in the background (app.server._warm_up_lesson_records)
os.environ.setdefault("LOWPREC_CACHE_DIR", "")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--slow", action="store_true", default=False,
                     help="also run the tests marked slow (exhaustive sweeps, whole-site export)")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--slow") or "slow" in (config.option.markexpr or ""):
        return
    skip = pytest.mark.skip(reason="slow: left out of the default run; `./dev slow` runs it")
    for item in items:
        if item.get_closest_marker("slow") is not None:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def _reset_panel_state() -> Iterator[None]:
    yield
    if "panel" in sys.modules:
        import panel as pn

        pn.state.kill_all_servers()
        pn.state.reset()


@pytest.fixture(params=["numpy", "fast"])
def each_codec_path(request: pytest.FixtureRequest) -> Iterator[str]:
    """Runs a test once on the numpy reference codec and once on the compiled one (the codec switch
    of `formats.codec`, which the block quantizers follow too); the compiled run is skipped without
    numba."""
    from lowprec.formats import codec

    if request.param == "fast" and codec.compiled_kernels() is None:
        pytest.skip("numba is not installed: no compiled path")
    with codec.codec_path(request.param):
        yield request.param


@pytest.fixture(scope="module")
def _chromium() -> Iterator[Any]:
    """Debian's headless Chromium for one test module (skipped where it is not installed)."""
    import os

    from tests.browser import CHROMIUM, CHROMIUM_ARGS

    if not os.path.exists(CHROMIUM):
        pytest.skip(f"{CHROMIUM} is not installed")
    import playwright.sync_api as api

    with api.sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS + ["--allow-file-access-from-files"])
        yield chromium
        chromium.close()


@pytest.fixture
def browser(_chromium: Any) -> Iterator[Any]:
    """The offline browser every browser test uses: a request leaving 127.0.0.1 fails the test."""
    from tests.browser import OfflineBrowser

    offline = OfflineBrowser(_chromium)
    yield offline
    offline.close()
    assert offline.outside == [], f"requests left 127.0.0.1: {offline.outside}"


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    """`lowprec serve` for one test module: its base URL once the start page answers."""
    from lowprec.app.serving import serve_and_wait

    with serve_and_wait(cwd=ROOT) as app:
        yield app.url
