"""The RecipeLab widget without a browser: it draws what `simulations.lab` computes (its table and
detail columns equal the lab's report, recomputed here with `analyze_arrays`), its parameters are
LabConfig's, an upload is read with the lab's readers (size limit, unsupported type, corrupt file:
a message, the last view kept), user text reaches Markdown escaped, and its page builds."""

from __future__ import annotations

import io
import math
from pathlib import Path

import numpy as np
import panel as pn
import pytest

from lowprec.app import pages
from lowprec.course.lessons import WIDGET_PARAMS
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
    assert w.error == ("Invalid input: model.txt: unsupported file type '.txt' and no tensor file by its content; "
                       "the lab reads .bin, .ckpt, .npy, .npz, .pt, .pth, .safetensors")
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


# ------------------------------------------------------------------------------------------------
# issue 33: uploads accepted by name and content, limited on the server, analysed off the loop
# ------------------------------------------------------------------------------------------------


def _checkpoints(folder: Path) -> dict[str, bytes]:
    """One real file per kind, as its library writes it: {kind: bytes}."""
    import pickle

    import torch
    from safetensors.numpy import save as save_safetensors

    x = np.arange(64, dtype=np.float32).reshape(2, 32)
    out = {".npy": npy_bytes(x)}
    buf = io.BytesIO()
    np.savez(buf, w=x)
    out[".npz"] = buf.getvalue()
    out[".safetensors"] = save_safetensors({"w": x})
    torch.save({"w": torch.from_numpy(x)}, folder / "zip.pt")
    out[".pt"] = (folder / "zip.pt").read_bytes()
    out["legacy .pt"] = pickle.dumps({"w": [1.0, 2.0]}, protocol=2)
    return out


def test_the_browser_is_asked_for_no_file_type() -> None:
    """Issue 33, F1: filepond compared the accepted suffixes with the browser's MIME type, which
    Chromium leaves empty for these files, so every real checkpoint was refused. The drop area
    accepts any file; the server decides by name and content (the browser test uploads real files
    of every suffix, tests/test_recipe_lab_ui.py)."""
    w = RecipeLab()
    assert w._dropper.accepted_filetypes == []
    assert w._dropper.max_file_size == "200MB" and w._dropper.limit_bytes == 200_000_000


def test_content_suffix_names_each_kind_by_its_magic_bytes(tmp_path: Path) -> None:
    from lowprec.simulations.lab.workbench import content_suffix, upload_kind

    files = _checkpoints(tmp_path)
    assert {k: content_suffix(v) for k, v in files.items()} == {
        ".npy": ".npy", ".npz": ".npz", ".safetensors": ".safetensors", ".pt": ".pt", "legacy .pt": ".pt"}
    for junk in (b"", b"hello world", b"PK\x05\x06" + bytes(18), b"\x00" * 16, b"<html>"):
        assert content_suffix(junk) is None
    # a known suffix decides; without one the content does; neither: one line naming the file
    assert upload_kind("C:\\tmp\\model.safetensors", files[".npy"]) == ("model.safetensors", ".safetensors")
    assert upload_kind("weights", files[".safetensors"]) == ("weights", ".safetensors")
    assert upload_kind("model.data", files[".npz"]) == ("model.data", ".npz")
    with pytest.raises(ValueError, match=r"^notes\.txt: unsupported file type '\.txt' and no tensor file by its content"):
        upload_kind("notes.txt", b"hello")


def test_an_upload_is_read_by_its_content_whatever_its_name(tmp_path: Path) -> None:
    files = _checkpoints(tmp_path)
    w = RecipeLab()
    assert w.load_file("download", files[".safetensors"]), w.error
    assert w.sources["table"].data["tensor"][0] == "w" and w.view_data.input_label == "download"
    assert w.load_file("weights.data", files[".npy"]), w.error
    assert w.view_data.input_label == "weights.data"


class _Event:
    def __init__(self, event_name: str, **data: object) -> None:
        self.event_name = event_name
        self.data = data


def test_the_dropper_enforces_the_limit_as_the_chunks_arrive() -> None:
    """Issue 33: a crafted chunk count, order or size is dropped on arrival, before anything is
    assembled, and nothing of it stays in memory; a well-formed upload is assembled as sent."""
    from lowprec.app.widgets.recipe_lab import LabDropper

    d = LabDropper(limit_bytes=2_000_000, chunk_size=1_000_000)
    assert d.max_chunks() == 3  # ceil((2e6 + 1) / 1e6), as the browser counts
    piece = bytes(1_000_000)

    def send(**data: object) -> None:
        d._process_event(_Event("upload_event", **{"type": "", **data}))
        assert d._file_buffer == {}  # nothing of an upload is held in memory: it goes to disk
        spooled = d._spool[1] if d._spool is not None else None
        assert spooled is None or os.path.getsize(spooled) <= d.limit_bytes

    import os

    send(name="huge.npy", chunk=1, total_chunks=1_000_000, data=piece)
    assert d.refused.startswith("huge.npy: over the 2 MB upload limit") and d._spool is None
    for i in (1, 2):  # a complete upload whose size the total did not give away
        send(name="big.npy", chunk=i, total_chunks=3, data=piece)
    assert d.refused == "" and d._spool is not None and os.path.getsize(d._spool[1]) == 2 * len(piece)
    spooled = d._spool[1]
    send(name="big.npy", chunk=3, total_chunks=3, data=piece + b"x")
    assert d.refused.startswith("big.npy: over the 2 MB upload limit") and d._spool is None
    assert not os.path.exists(spooled) and d.received is None  # dropped: its file deleted, nothing received
    send(name="late.npy", chunk=2, total_chunks=3, data=piece)  # the rest of a dropped upload
    assert "out of order" in d.refused and d._spool is None
    send(name="gap.npy", chunk=1, total_chunks=3, data=b"a")
    send(name="gap.npy", chunk=3, total_chunks=3, data=b"c")  # chunk 2 never came
    assert "out of order (chunk 3 of 3)" in d.refused and d._spool is None and d.received is None
    send(name="bad.npy", chunk=True, total_chunks=2, data=piece)
    assert "malformed" in d.refused
    send(name=7, chunk=1, total_chunks=1, data=piece)
    assert "file name" in d.refused
    send(name="C:\\x\\<b>ok.npy", chunk=1, total_chunks=2, data=b"ab")
    send(name="C:\\x\\<b>ok.npy", chunk=2, total_chunks=2, data=b"cd")
    assert d.refused == "" and d._spool is None and d.value == {}
    name, path = d.received
    assert name == "C:\\x\\<b>ok.npy" and open(path, "rb").read() == b"abcd"
    assert os.path.dirname(path) == d.spool_folder()  # the dropper's own folder, never the user's name
    d._process_event(_Event("delete_event", name="C:\\x\\<b>ok.npy"))
    assert d.value == {} and d._spool is None


def test_a_refused_upload_shows_its_reason_and_keeps_the_view() -> None:
    w = RecipeLab()
    before = list(w.sources["table"].data["rms_rel_err"])
    w._dropper._process_event(_Event("upload_event", name="<img src=x>.pt", chunk=1, total_chunks=10**6,
                                     data=b"x", type=""))
    assert w.error.startswith("Invalid input: <img src=x>.pt: over the 200 MB upload limit")
    assert "\\<img src\\=x\\>" in str(w._alert.object) and w._alert.visible  # escaped: text, not markup
    assert list(w.sources["table"].data["rms_rel_err"]) == before


def test_a_served_upload_is_analysed_in_a_worker_process_and_superseded(monkeypatch: pytest.MonkeyPatch,
                                                                        tmp_path: Path) -> None:
    """Served, the upload goes to a pool thread that writes the server's copy and hands the run to a
    worker process; a newer upload stops the older one and only the newest reaches the view; the
    server keeps only the newest file."""
    import os
    import threading

    from lowprec.app import work
    from tests.test_hardening import _fake_document

    w = RecipeLab()
    doc = _fake_document()
    monkeypatch.setattr(work, "served_document", lambda: doc)
    loop = threading.get_ident()
    calls: list[tuple[int, str, str]] = []
    outcomes: list[str] = []
    real = work.run_in_process
    release = threading.Event()

    def gated(target: str, *args: object, slot: int | None = None, generation: int = 0) -> object:
        source = args[0]
        assert isinstance(source, tuple)
        calls.append((threading.get_ident(), target, str(source[1])))
        if source[1] == "first.npy":
            release.wait(30)
        try:
            view = real(target, *args, slot=slot, generation=generation)
        except work.Superseded:
            outcomes.append(f"{source[1]} superseded")
            raise
        outcomes.append(f"{source[1]} finished")
        return view

    monkeypatch.setattr(work, "run_in_process", gated)
    rng = np.random.default_rng(4)
    shown = list(w.sources["table"].data["tensor"])
    assert w.load_file("first.npy", npy_bytes(rng.standard_normal((64, 64)).astype(np.float32)))
    assert w.busy and list(w.sources["table"].data["tensor"]) == shown  # submitted, not run inline
    assert w.load_file("second.npy", npy_bytes(rng.standard_normal((32, 64)).astype(np.float32)))
    release.set()
    doc.drain(until=lambda: not w.busy and len(outcomes) == 2)
    assert calls and all(t != loop and target == "lowprec.app.lab_jobs:run" for t, target, _ in calls)
    assert sorted(outcomes) == ["first.npy superseded", "second.npy finished"]
    assert w.view_data.input_label == "second.npy" and w.sources["table"].data["tensor"][0] == "second.npy"
    assert w._folder is not None and [e.name for e in os.scandir(w._folder)] == ["upload-2.npy"]
    # a control change re-runs from the server's copy, in the worker, keeping the table
    w.recipe = "mxfp4"
    doc.drain(until=lambda: not w.busy)
    assert w.view_data.input_label == "second.npy" and w.view_data.detail is not None
    assert w.view_data.detail.recipe == "mxfp4" and calls[-1][2] == "second.npy"
    # a corrupt upload: the message, the last view and its file stay
    assert w.load_file("broken.npy", b"\x93NUMPY junk")
    doc.drain(until=lambda: not w.busy)
    assert w.error.startswith("Invalid input: broken.npy:") and w.view_data.input_label == "second.npy"
    assert [e.name for e in os.scandir(w._folder)] == ["upload-2.npy"]
    w.sample = "gradient"  # a sample replaces the upload, and its copy goes
    doc.drain(until=lambda: not w.busy)
    assert w.view_data.input_label == "sample gradient" and list(os.scandir(w._folder)) == []
    # a drop: the dropper writes the file as it arrives; the widget moves it, never reads it here
    w.tensor = "mlp.up_proj.weight.grad"
    doc.drain(until=lambda: not w.busy)
    w._dropper._process_event(_Event("upload_event", name="dropped.npy", chunk=1, total_chunks=1, type="",
                                     data=npy_bytes(rng.standard_normal((16, 32)).astype(np.float32))))
    doc.drain(until=lambda: not w.busy and w.view_data.input_label == "dropped.npy")
    assert w.error == "" and w.view_data.tensor == "dropped.npy"  # its own tensor, not the sample's
    assert os.listdir(w._dropper.spool_folder()) == [] and len(os.listdir(w._folder)) == 1


def test_a_table_is_reused_only_for_the_same_recipes() -> None:
    """A change of the detail reuses the table; a change of the recipe set computes it again."""
    inp = sample_input("layer")
    default = run_lab(inp, LabConfig())
    again = run_lab(inp, LabConfig(recipe="mxfp4"), report=default.report)
    assert again.report is default.report and again.detail is not None and again.detail.recipe == "mxfp4"
    every = run_lab(inp, LabConfig(recipes="all"), report=default.report)
    assert every.report is not default.report
    assert [r.name for r in every.report.recipes] == [r.name for r in run_lab(inp, LabConfig(recipes="all")).report.recipes]
