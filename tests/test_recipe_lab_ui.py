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


def _real_files(folder: Any) -> dict[str, str]:
    """One real checkpoint file per suffix the lab reads, written to disk the way its library
    writes it, each holding one float tensor: {path: tensor name}. Chromium gives most of these
    files no MIME type (`File.type == ""`)."""
    import torch
    from safetensors.numpy import save_file

    rng = np.random.default_rng(11)
    out: dict[str, str] = {}

    def tensor() -> np.ndarray:
        return rng.standard_normal((16, 64)).astype(np.float32)

    np.save(folder / "weights.npy", tensor())
    out[str(folder / "weights.npy")] = "weights.npy"
    np.savez(folder / "archive.npz", npz_member=tensor())
    out[str(folder / "archive.npz")] = "npz_member"
    save_file({"st.weight": tensor()}, str(folder / "model.safetensors"))
    out[str(folder / "model.safetensors")] = "st.weight"
    for suffix in (".pt", ".pth", ".ckpt", ".bin"):
        name = f"torch{suffix.replace('.', '_')}.weight"
        torch.save({name: torch.from_numpy(tensor())}, folder / f"state{suffix}")
        out[str(folder / f"state{suffix}")] = name
    return out


def test_real_files_from_disk_through_the_file_chooser(server: str, browser: Any, tmp_path: Any) -> None:
    """Issue 33, F1: every suffix the page names, picked from disk through the file chooser with no
    MIME type forced (Chromium reports none for most of them): each is read and its tensor shown;
    a file without a known suffix is recognised by its content; nothing turns the drop zone red."""
    files = _real_files(tmp_path)
    np.save(tmp_path / "no_suffix_weights", np.ones((8, 32), np.float32))  # np.save adds .npy
    (tmp_path / "no_suffix_weights.npy").rename(tmp_path / "exported-weights")
    files[str(tmp_path / "exported-weights")] = "exported-weights"
    w = Watched(browser, server)
    w.open(f"{server}/widget/RecipeLab")
    w.page.get_by_text("Upload a file of at most 200 MB").first.wait_for(timeout=30000)
    types = []
    for path, tensor in files.items():
        remove = w.page.locator(".filepond--action-revert-item-processing")
        if remove.count():  # the last file still sits in the drop area: take it out, as a user would
            remove.first.click()
            w.page.get_by_text("Browse").first.wait_for(timeout=30000)
        with w.page.expect_file_chooser(timeout=30000) as chooser:
            w.page.get_by_text("Browse").first.click()
        chooser.value.set_files(path)
        types.append(w.page.evaluate("() => { const walk = (r) => { for (const el of r.querySelectorAll('*')) {"
                                     " if (el.tagName === 'INPUT' && el.type === 'file' && el.files.length)"
                                     " return el.files[0].type; if (el.shadowRoot) { const t = walk(el.shadowRoot);"
                                     " if (t !== null) return t; } } return null; }; return walk(document); }"))
        wait_until(lambda t=tensor: t in (w.source_data("tensor", "rms_rel_err") or []), timeout=120)
        assert w.page.get_by_text("invalid type").count() == 0, path
        assert w.page.get_by_text("Invalid input").count() == 0 or not w.page.get_by_text("Invalid input").first.is_visible()
    assert "" in types  # Chromium gave at least one of them no MIME type: the case F1 refused
    w.check_clean()
    w.page.close()
