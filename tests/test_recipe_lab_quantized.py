"""The RecipeLab's data for pre-quantized files (`simulations.lab.workbench`): each bundled layout sample
and an uploaded quantized checkpoint are read as their producers dequantize them, carry their layout,
recipe and audit to the report the page draws, and a wrong file is one message naming the tensor."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import numpy as np
import pytest

from lowprec.simulations.lab import readers, workbench
from lowprec.simulations.lab.samples import LAYOUT_SAMPLES, weight, write_layout_sample


@pytest.mark.parametrize("name", list(LAYOUT_SAMPLES))
def test_each_layout_sample_reaches_the_report(name: str) -> None:
    inp = workbench.sample_input(name)
    view = workbench.run_lab(inp, workbench.LabConfig(sample=name, recipe="mxfp4"))
    t = view.report.tensors[0]
    layout, recipe = LAYOUT_SAMPLES[name]
    assert (t.layout, t.stored_recipe) == (layout, recipe)
    assert t.audit is not None and t.audit.layout == layout
    assert view.detail_report is not None and view.detail_report.audit is t.audit
    assert workbench.describe(view)["quantized"] == 1
    # the values are the file's: read again here from a fresh copy of the sample
    with tempfile.TemporaryDirectory() as folder:
        path = write_layout_sample(name, os.path.join(folder, "s"))
        ref = next(r for r in readers.scan([path]).tensors if r.layout)
        again = readers.open_rows(ref).read(0, ref.shape[0])
    np.testing.assert_array_equal(inp.arrays["mlp.up_proj.weight"].view(np.uint32), again.view(np.uint32))


def test_a_quantized_upload_is_read_and_audited(tmp_path: Path) -> None:
    path = write_layout_sample("modelopt_nvfp4", str(tmp_path / "m"))
    # an upload arrives alone: the config beside it is gone, names and dtypes still tell the layout
    inp = workbench.upload_input("model.safetensors", Path(path).read_bytes())
    assert inp.stored == {"mlp.up_proj.weight": ("modelopt_nvfp4", "nvfp4")}
    view = workbench.run_lab(inp, workbench.LabConfig(recipe="nvfp4"))
    t = view.report.tensors[0]
    assert t.audit is not None and t.audit.recipe == "nvfp4" and t.audit.blocks == 256 * 512 // 16
    err = t.result("nvfp4").rms_rel_err
    assert err is not None and 0.0 <= err < 0.01  # re-quantizing NVFP4 values by NVFP4: (almost) the same codes
    assert np.abs(inp.arrays["mlp.up_proj.weight"] - weight().astype(np.float32)).max() > 0  # quantized values


def test_a_wrong_quantized_upload_names_the_tensor(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    st = pytest.importorskip("safetensors.torch")
    path = write_layout_sample("deepseek_fp8", str(tmp_path / "d"))
    t = st.load_file(path)
    t["mlp.up_proj.weight_scale_inv"] = t["mlp.up_proj.weight_scale_inv"].to(torch.float16)
    st.save_file(t, str(tmp_path / "bad.safetensors"))
    with pytest.raises(ValueError, match=r"^bad\.safetensors: scale tensor 'mlp\.up_proj\.weight_scale_inv' has dtype "
                                         r"FP16; deepseek_fp8 stores it as FP32$"):
        workbench.upload_input("bad.safetensors", (tmp_path / "bad.safetensors").read_bytes())


def test_the_widget_shows_the_audit_of_a_pre_quantized_tensor() -> None:
    from lowprec.app.widgets.recipe_lab import RecipeLab
    from lowprec.simulations.lab.audit import TensorAudit

    w = RecipeLab(sample="deepseek_fp8", recipe="fp8_128x128_ue8m0")
    audit = w.view_data.report.tensors[0].audit
    assert isinstance(audit, TensorAudit)
    assert w._audit_box.visible and w._affected_box.visible
    assert "Audit of" in w._audit_note.object and audit.caveat in w._audit_note.object
    # the page draws the audit's own numbers: every affected block, every code count, every binade
    affected = w.sources["audit_affected"].data
    assert affected["factor"] == [a["factor"] for a in audit.affected] and len(affected["factor"]) == 8
    assert w.sources["audit_codes"].data["count"] == audit.code_counts
    assert w.sources["audit_scales"].data["count"] == audit.scale_log2_counts
    assert "8 of 8" in w._audit_facts.object  # the scales that are not powers of two
    # every affected block shows whole, none cut at the table's foot (Bokeh's 25 px rows, a header)
    assert w._audit_affected.object.height >= 25 * 9
    assert set(w.sources["table"].data["layout"]) == {"deepseek_fp8"}
    assert "1 of them stored pre-quantized" in w._summary.object
    # a float sample: no audit on the page
    w.sample = "weight"
    assert not (w._audit_box.visible or w._affected_box.visible)
    assert w.sources["audit_codes"].data["count"] == []
    assert set(w.sources["table"].data["layout"]) == {"float"}
    # E8M0 scales: an audit without truncation, so no affected-blocks table
    w.sample = "gptoss_mxfp4"
    assert w._audit_box.visible and not w._affected_box.visible


def test_the_html_report_carries_the_audit(tmp_path: Path) -> None:
    from lowprec.app.cli import main

    path = write_layout_sample("deepseek_fp8", str(tmp_path / "d"))
    out = tmp_path / "r.html"
    assert main(["analyze", path, "--recipes", "bf16,mxfp4", "--html", str(out), "--quiet"]) == 0
    page = out.read_text(encoding="utf-8")
    assert "Audit of the pre-quantized tensors" in page and "mlp.up_proj.weight: stored as deepseek_fp8" in page
    assert "a UE8M0 kernel keeping only their exponent" in page
    import re

    assert not re.search(r"<(script|link)[^>]+(src|href)=\"https?://", page)  # offline: nothing fetched
