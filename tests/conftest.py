"""Shared fixtures and the `slow` switch.

Panel state is reset after every test, or served apps hang the run. Tests marked `slow` (exhaustive
sweeps, the whole-site export walk) are left out of the default run, which CI keeps under 20 minutes
on two cores; `./dev slow` (or `pytest --slow`, or a `-m` expression naming `slow`) runs them."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Iterator

import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


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
