"""The RecipeLab widget without a browser: it draws what `simulations.lab` computes (its table and
detail columns equal the lab's report, recomputed here with `analyze_arrays`), its parameters are
LabConfig's, an upload is read with the lab's readers (size limit, unsupported type, corrupt file:
a message, the last view kept), user text reaches Markdown escaped, and its page builds."""

from __future__ import annotations

import io
import math

import numpy as np
import panel as pn
import pytest

from lowprec.app import pages
from lowprec.app.lessons import WIDGET_PARAMS
from lowprec.app.widgets import WIDGETS
from lowprec.app.widgets.recipe_lab import RecipeLab
from lowprec.config import ConfigError, fields_of
from lowprec.simulations.lab import analyze_arrays
from lowprec.simulations.lab.samples import sample
from lowprec.simulations.lab.workbench import LabConfig, run_lab, sample_input, upload_input


def npy_bytes(x: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, x)
    return buf.getvalue()


@pytest.fixture(scope="module")
def lab() -> RecipeLab:
    return RecipeLab()


def test_parameters_are_the_config_record() -> None:
    knobs = {k.name: k for k in fields_of(LabConfig)}
    assert WIDGETS["RecipeLab"].config_class() is LabConfig
    assert set(RecipeLab.param) - {"name"} == set(knobs)
    assert WIDGET_PARAMS["RecipeLab"] == {k.name: k.default for k in knobs.values()}
    with pytest.raises(ConfigError, match="recipe: must be one of bf16"):
        LabConfig(recipe="fp7")


def test_table_and_detail_are_the_labs_numbers(lab: RecipeLab) -> None:
    want = analyze_arrays(sample("layer"))
    data = lab.sources["table"].data
    assert len(data["tensor"]) == sum(len(t.results) for t in want.tensors) == 30
    i = 0
    for t in want.tensors:
        for r in t.results:
            assert (data["tensor"][i], data["recipe"][i]) == (t.name, r.recipe)
            assert data["rms_rel_err"][i] == r.rms_rel_err and data["sqnr_db"][i] == r.sqnr_db
            assert data["bits_per_element"][i] == r.bits_per_element
            i += 1
    # the detail: the first tensor (the BF16 weight) under NVFP4
    d = lab.view_data.detail
    assert d is not None and lab.view_data.tensor == "mlp.up_proj.weight" and d.recipe == "nvfp4"
    assert lab.sources["hist"].data["input"] == d.counts_input and sum(d.counts_input) == 256 * 512
    assert (lab._flush_box.right, lab._clip_box.left) == (d.flush_log2, d.clip_log2) == (-2.0, math.log2(7.0))
    assert len(lab.sources["map"].data["x"]) == d.map_rows * d.map_cols


def test_controls_change_the_view_and_bad_values_keep_it() -> None:
    w = RecipeLab(sample="activation", recipe="mxfp4")
    assert w.view_data.tensor == "mlp.up_proj.input" and w.view_data.detail is not None
    before = dict(w.sources["table"].data)
    w.tensor = "no such tensor"
    assert w.error.startswith("Invalid input: tensor: sample activation has no tensor 'no such tensor'")
    assert w._alert.visible and w.sources["table"].data["rms_rel_err"] == before["rms_rel_err"]
    w.tensor = ""
    assert w.error == "" and not w._alert.visible
    w.recipes = "all"
    assert len(w.sources["table"].data["recipe"]) == len(run_lab(sample_input("activation"),
                                                                 LabConfig(recipes="all")).report.recipes)


def test_upload_then_bad_uploads(lab: RecipeLab) -> None:
    w = RecipeLab()
    x = np.random.default_rng(3).standard_normal((16, 40)).astype(np.float32)
    assert w.load_file("C:\\Users\\me\\<script>act.npy", npy_bytes(x))
    assert w.view_data.input_label == "<script>act.npy"  # the base name, never a path
    assert w.sources["table"].data["tensor"][0] == "<script>act.npy"
    assert "\\<script\\>act\\.npy" in str(w._summary.object) and "<script>" not in str(w._summary.object)
    # 40 columns: MX and NVFP4 blocks do not divide them; the detail says so instead of drawing
    assert w.view_data.detail is None and "blocks of 16 do not divide the last axis (40)" in w.view_data.note
    assert w.sources["hist"].data["input"] == []
    shown = w.sources["table"].data["rms_rel_err"]
    assert not w.load_file("model.txt", b"hello")
    assert w.error == ("Invalid input: model.txt: unsupported file type '.txt'; the lab reads .bin, .ckpt, .npy, "
                       ".npz, .pt, .pth, .safetensors")
    assert not w.load_file("cut.npy", npy_bytes(x)[:300])
    assert w.error.startswith("Invalid input: cut.npy: truncated")
    assert w.sources["table"].data["rms_rel_err"] == shown  # the last good view stays
    w.sample = "gradient"  # a sample replaces the upload
    assert w.upload is None and w.view_data.tensor == "mlp.up_proj.weight.grad"


def test_upload_limits_and_skips() -> None:
    with pytest.raises(ValueError, match=r"^big\.npy: 0\.0 MB is over the 0 MB upload limit; run `lowprec analyze big"):
        upload_input("big.npy", npy_bytes(np.ones(10, np.float32)), limit_bytes=10)
    with pytest.raises(ValueError, match=r"^big\.npy: 100 float elements is over the 50 the page analyses"):
        upload_input("big.npy", npy_bytes(np.ones(100, np.float32)), limit_elements=50)
    buf = io.BytesIO()
    np.savez(buf, w=np.ones((2, 32), np.float16), step=np.int64(3))
    inp = upload_input("ckpt.npz", buf.getvalue())
    assert list(inp.arrays) == ["w"] and inp.arrays["w"].dtype == np.float32
    assert [(s.path, s.name) for s in inp.skipped] == [("ckpt.npz", "step")]
    view = run_lab(inp, LabConfig())
    assert [s.name for s in view.report.skipped] == ["step"]


def test_page_builds() -> None:
    page = pages.widget_page("RecipeLab", sync=False)
    text = "\n".join(str(m.object) for m in page.render()[0].select(pn.pane.Markdown))
    assert "Upload a file of at most 200 MB" in text and "Recipe lab" in text
    assert "widget/RecipeLab" in pages.routes()
