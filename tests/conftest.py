"""Shared fixtures. Panel state is reset after every test, or served apps hang the run."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Iterator

import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


@pytest.fixture(autouse=True)
def _reset_panel_state() -> Iterator[None]:
    yield
    if "panel" in sys.modules:
        import panel as pn

        pn.state.kill_all_servers()
        pn.state.reset()
