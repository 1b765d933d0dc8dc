"""Browser test of the RecipeLab page: upload a small `.npy` in headless Chromium, see its tensor in
the table with the lab's numbers (read from the page's Bokeh document and compared with
`simulations.lab` run here), a file name holding HTML shown as text, a corrupt file answered by a
message while the page keeps working, and no request leaving the server. Uses the served-app
fixtures of tests/test_ui.py."""

from __future__ import annotations

import io
from typing import Any

import numpy as np
import pytest

from tests.test_ui import Watched, wait_until

pytestmark = pytest.mark.ui


def _npy(name: str, x: np.ndarray) -> dict[str, Any]:
    """A file for Playwright's set_input_files, under any name (the browser's file name)."""
    buf = io.BytesIO()
    np.save(buf, x)
    return {"name": name, "mimeType": "application/octet-stream", "buffer": buf.getvalue()}


def test_upload_npy_shows_its_table(server: str, browser: Any) -> None:
    from lowprec.simulations.lab import analyze_arrays

    x = np.random.default_rng(5).standard_normal((32, 64)).astype(np.float32)
    x[:, 3] *= 40  # an outlier channel
    upload = _npy("<i>tiny&amp;.npy", x)
    want = analyze_arrays({"t": x}).tensors[0]
    w = Watched(browser, server)
    w.open(f"{server}/widget/RecipeLab")
    w.page.get_by_text("Upload a file of at most 200 MB").first.wait_for(timeout=30000)
    w.page.locator("input[type=file]").first.set_input_files(upload)
    wait_until(lambda: "<i>tiny&amp;.npy" in (w.source_data("tensor", "rms_rel_err") or []), timeout=90)
    assert w.page.get_by_text("<i>tiny&amp;.npy").count() >= 1  # the name as text, never markup
    names = w.source_data("recipe", "rms_rel_err")
    errors = w.source_data("rms_rel_err")
    shown = dict(zip(names, errors))
    for r in want.results:
        if r.skipped is not None:  # int4_g128: 128 does not divide 64 columns (NaN in the table)
            assert shown[r.recipe] is None or shown[r.recipe] != shown[r.recipe], r.recipe
            continue
        assert shown[r.recipe] == pytest.approx(r.rms_rel_err, rel=1e-12), r.recipe
    assert sum(r.skipped is None for r in want.results) >= 9
    # a corrupt file: the message, and the table stays
    bad = {"name": "broken.npy", "mimeType": "application/octet-stream", "buffer": b"\x93NUMPY junk"}
    w.page.locator("input[type=file]").first.set_input_files(bad)
    w.page.get_by_text("Invalid input: broken.npy: not a .npy array or corrupt").first.wait_for(timeout=60000)
    assert "<i>tiny&amp;.npy" in w.source_data("tensor", "rms_rel_err")
    w.check_clean()
    w.page.close()
