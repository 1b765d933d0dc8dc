"""`lowprec analyze --html` (issue 33, F6): the page carries what the CLI and the RecipeLab page show
— the files, each tensor's statistics and flags, the ranking with the reason for each place, every
result, the skipped list, what the columns mean, figures with legends — escapes what comes from the
files, keeps a 0-d tensor from stretching the bits axis, and reads at 390 px (browser)."""

from __future__ import annotations

import html
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from lowprec.app.cli import main
from lowprec.app.plots.lab_report import bits_axis, rank_reason, report_html, tensor_figure
from lowprec.simulations.lab import analyze


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """An .npy, an .npz with an integer member, a scalar and a hostile name, a .pt with an integer
    tensor, a safetensors of FP64 — what a user's folder holds."""
    import torch
    from safetensors.numpy import save_file

    folder = tmp_path_factory.mktemp("ckpt")
    rng = np.random.default_rng(7)
    np.save(folder / "a.npy", rng.standard_normal((16, 64)).astype(np.float32))
    np.savez(folder / "b.npz", x=rng.standard_normal((8, 32)).astype(np.float16), step=np.int64(3),
             z=np.float32(3.0), **{"<script>alert(1)</script>": rng.standard_normal((4, 32)).astype(np.float32)})
    torch.save({"w": torch.randn(32, 32, dtype=torch.bfloat16), "i": torch.arange(3)}, folder / "c.pt")
    save_file({"s": rng.standard_normal((4, 32))}, str(folder / "d.safetensors"))
    return [folder / n for n in ("a.npy", "b.npz", "c.pt", "d.safetensors")]


def _text(page: str) -> str:
    """The page's text: tags dropped, entities decoded (what a reader sees)."""
    body = page.split("<body>", 1)[1]
    return html.unescape(re.sub(r"<[^>]+>", " ", body))


def test_the_report_carries_files_statistics_ranking_reasons_skips_and_legends(files: list[Path]) -> None:
    report = analyze([str(f) for f in files])
    page = report_html(report)
    text = " ".join(_text(page).split())
    for f in report.files:
        assert html.escape(f) in page
    # every tensor with its statistics and its best recipe
    for t in report.tensors:
        assert t.name in text and t.dtype in text
        assert format(t.stats.amax, ".4g") in text and format(t.stats.rms, ".4g") in text
    # the ranking in the CLI's order, each place with its reason
    measured = sum(t.measured for t in report.tensors)
    ranked = re.findall(r'<td data-label="rank" class=num>(\d+)</td><td data-label="recipe">([^<★]+?)(?: ★)?</td>',
                        page)
    assert [(int(k), name) for k, name in ranked] == [(r["rank"], r["recipe"]) for r in report.ranking]
    for row in report.ranking:
        assert " ".join(rank_reason(row, measured).split()) in text
        if row["note"]:  # the lab's own reason for a partial recipe's place is on the page
            assert " ".join(html.escape(row["note"], quote=False).split()) in " ".join(page.split()) or \
                " ".join(row["note"].split()) in text
        if not row["complete"]:
            assert row["note"].startswith("applies to")  # a partial recipe says why it ranks lower
    assert any(not r["complete"] for r in report.ranking)  # the scalar: block recipes do not apply
    assert text.count("★") >= sum(r["pareto"] for r in report.ranking)
    # the skipped entries with their reasons, and what the columns mean
    assert {s.name for s in report.skipped} == {"step", "i"}
    for s in report.skipped:
        assert f"{s.name}: {s.reason}" in text
    for term in ("RMS rel. error", "SQNR (dB)", "bits / element", "Pareto front", "How to read it"):
        assert term in text
    for r in report.recipes:
        assert r.description in text
    # the figures: a ranking with its front and a per-tensor scatter with a tensor legend
    assert page.count('class="bk-root"') + page.count("data-root-id") >= 2
    assert "Pareto front (no recipe has fewer bits and a smaller error)" in page and '"tensor"' in page


def test_names_from_the_files_are_text(files: list[Path]) -> None:
    page = report_html(analyze([str(f) for f in files]))
    assert "<script>alert(1)</script>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page


def test_a_0d_tensor_does_not_stretch_the_bits_axis(files: list[Path]) -> None:
    """A scalar under a per-tensor FP32 scale costs 40 bits per element: the axis spans the ranking's
    pooled bits (16 here), and the scalar is named under the figure instead."""
    report = analyze([str(f) for f in files])
    scalar = report.tensor("z")
    assert max(r.bits_per_element or 0 for r in scalar.results) == 40
    lo, hi = bits_axis(report)
    assert hi == pytest.approx(16.5) and lo <= 4.0
    fig, notes = tensor_figure(report)
    assert (fig.x_range.start, fig.x_range.end) == (lo, hi)
    assert len(notes) == 1 and notes[0].startswith("z: up to 40 bits per element")
    assert "Off the bits axis: z: up to 40 bits" in _text(report_html(report))


def test_a_report_with_nothing_measured_is_still_a_page(tmp_path: Path) -> None:
    np.save(tmp_path / "nan.npy", np.full((4, 32), np.nan, np.float32))
    page = report_html(analyze([str(tmp_path / "nan.npy")]))
    text = _text(page)
    assert "No tensor had a finite element: nothing to rank." in text
    assert "every element is NaN or ±Inf" in text


def test_the_cli_writes_it(files: list[Path], tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    assert main(["analyze", *map(str, files), "--html", str(out), "--quiet"]) == 0
    page = out.read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>") and "<title>Recipe lab</title>" in page
    assert not re.search(r'<(script|link)[^>]*\b(src|href)=["\']?(https?:)?//', page)  # everything inline


@pytest.mark.ui
@pytest.mark.parametrize("width", [1400, 390])
def test_the_report_reads_at_phone_width(files: list[Path], tmp_path: Path, browser: Any, width: int) -> None:
    from tests.browser import WatchedPage, axe_serious, sideways_px

    out = tmp_path / "r.html"
    assert main(["analyze", *map(str, files), "--html", str(out), "--quiet"]) == 0
    w = WatchedPage(browser)
    w.page.set_viewport_size({"width": width, "height": 900})
    w.page.goto(out.resolve().as_uri())
    w.page.wait_for_function("() => window.Bokeh && Bokeh.documents.length >= 1", timeout=60000)
    w.page.wait_for_timeout(1500)
    assert sideways_px(w.page) == 0
    assert w.page.locator("canvas").count() >= 2  # both figures drew
    assert axe_serious(w.page) == []
    rank = w.page.locator("td[data-label='why this place']").first
    box = rank.bounding_box()
    assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= width + 1  # the reason is on screen
    assert w.console_errors == [] and w.page_errors == [] and w.outside == []
    w.page.close()
