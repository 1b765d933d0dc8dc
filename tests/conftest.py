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
