"""Browser tests of the RecipeLab page with pre-quantized files (issue 30 item 5): served, the bundled
DeepSeek FP8 sample (by URL state) shows its layout in the table and its scale audit with the lab's
numbers, at 1400 and 390 px, with no serious accessibility violation and nothing leaving the server;
an uploaded gpt-oss checkpoint is read and audited; the exported page (no server) says that uploads,
pre-quantized ones included, need the server, and passes the same checks from disk; the `--html`
report of a pre-quantized checkpoint draws its audit and reads at both widths."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.browser import axe_serious, sideways_px
from tests.test_ui import Watched, wait_until

pytestmark = pytest.mark.ui


def test_served_layout_sample_shows_its_audit(server: str, browser: Any) -> None:
    from lowprec.simulations.lab.workbench import LabConfig, run_lab, sample_input

    view = run_lab(sample_input("deepseek_fp8"), LabConfig(sample="deepseek_fp8"))
    audit = view.report.tensors[0].audit
    w = Watched(browser, server)
    w.open(f"{server}/widget/RecipeLab?sample=deepseek_fp8")
    w.page.get_by_text("Audit of").first.wait_for(timeout=90000)
    wait_until(lambda: w.source_data("layout", "rms_rel_err") and set(w.source_data("layout", "rms_rel_err"))
               == {"deepseek_fp8"}, timeout=60)
    factors = w.source_data("factor", "kept")
    assert factors == pytest.approx([a["factor"] for a in audit.affected], rel=1e-12)
    assert w.source_data("count", "hex") == audit.code_counts
    assert axe_serious(w.page) == []
    w.page.set_viewport_size({"width": 390, "height": 900})
    w.page.wait_for_timeout(1500)
    assert sideways_px(w.page) <= 0
    assert axe_serious(w.page) == []
    w.check_clean()
    w.page.close()


def test_uploaded_quantized_checkpoint_is_audited(server: str, browser: Any, tmp_path: Path) -> None:
    from lowprec.simulations.lab.samples import write_layout_sample

    path = Path(write_layout_sample("gptoss_mxfp4", str(tmp_path / "g")))
    w = Watched(browser, server)
    w.open(f"{server}/widget/RecipeLab")
    w.page.get_by_text("Upload a file of at most 200 MB").first.wait_for(timeout=30000)
    w.page.locator("input[type=file]").first.set_input_files(
        {"name": "experts.safetensors", "mimeType": "application/octet-stream", "buffer": path.read_bytes()})
    wait_until(lambda: "gptoss_mxfp4" in (w.source_data("layout", "rms_rel_err") or []), timeout=120)
    w.page.get_by_text("Audit of").first.wait_for(timeout=60000)
    assert w.page.get_by_text("1 of them stored pre-quantized").count() >= 1
    w.check_clean()
    w.page.close()


def test_exported_page_says_what_needs_the_server(browser: Any, tmp_path: Path) -> None:
    from lowprec.app.export import export, page_file
    from tests.test_export import Offline

    out = tmp_path / "site"
    export(out, ["widget/RecipeLab"])
    page = out / page_file("widget/RecipeLab")
    html = page.read_text(encoding="utf-8")
    assert "Uploading a file needs the server" in html and "pre-quantized checkpoints too" in html
    w = Offline(browser)
    w.open(page)
    assert axe_serious(w.page) == []
    w.page.set_viewport_size({"width": 390, "height": 900})
    w.page.wait_for_timeout(1000)
    assert sideways_px(w.page) <= 0
    w.check_clean()
    w.page.close()


@pytest.mark.parametrize("width", [1400, 390])
def test_html_report_of_a_quantized_checkpoint_reads_at_both_widths(browser: Any, tmp_path: Path, width: int) -> None:
    from lowprec.app.cli import main
    from lowprec.simulations.lab.samples import write_layout_sample
    from tests.browser import WatchedPage

    path = write_layout_sample("deepseek_fp8", str(tmp_path / "d"))
    out = tmp_path / "r.html"
    assert main(["analyze", path, "--html", str(out), "--quiet"]) == 0
    w = WatchedPage(browser)
    w.page.set_viewport_size({"width": width, "height": 900})
    w.page.goto(out.resolve().as_uri())
    w.page.wait_for_function("() => window.Bokeh && Bokeh.documents.length >= 1", timeout=60000)
    w.page.wait_for_timeout(1500)
    w.page.get_by_text("Audit of the pre-quantized tensors").first.scroll_into_view_if_needed()
    assert sideways_px(w.page) == 0
    assert w.page.locator("canvas").count() >= 4  # the two lab figures and the audit's two histograms
    assert axe_serious(w.page) == []
    assert w.console_errors == [] and w.page_errors == [] and w.outside == []
    w.page.close()
