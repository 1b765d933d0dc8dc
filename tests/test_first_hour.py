"""Issue 33's rough edges of the app, without a browser: the bin explorer's invalid-input message
and stale view, its x label, the recipe lab's headline, summary, legend, colour bar and series
colours, and the theme toggle's text. (The browser tests in tests/test_ui.py and
tests/test_recipe_lab_ui.py look at the same things on the page.)"""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import panel as pn
import pytest

from lowprec.app.plots.bins import bins_sources
from lowprec.app.widgets import BinExplorer
from lowprec.app.widgets.recipe_lab import RecipeLab
from lowprec.formats import explain_value

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("value, fmt, align", [("465", "E4M3FN", "right"), ("-465", "E4M3FN", "left"),
                                                ("57000", "E5M2", "right"), ("3.3", "E4M3FN", None),
                                                ("1e-9", "E4M3FN", None), ("-0.3", "E2M1", None)])
def test_the_x_label_sits_on_the_side_with_room(value: str, fmt: str, align: str | None) -> None:
    """`x = 465` sat right of its line at the window's right edge and was cut: the label goes on the
    side of the line where the window has room — left of x in the right half of the drawn bins,
    right of it in the left half (the exported page computes the same columns)."""
    data = bins_sources(explain_value(value, fmt, "torch"))
    marker = data["marker"]
    middle = (min(data["bins"]["left"]) + max(data["bins"]["right"])) / 2
    want = "right" if marker["x0"][0] > middle else "left"
    assert align is None or align == want
    assert marker["align"] == [want] and marker["dx"] == [-4 if want == "right" else 4]
    assert marker["label"] == [f"x = {value}"]


def test_invalid_input_is_said_under_the_box_and_marks_the_view_stale() -> None:
    w = BinExplorer(value="465")
    left = w.__panel__().objects[0]
    assert left.objects[1] is w.control("value") and left.objects[2] is w._alert  # the message under its box
    shown = dict(w.sources["bits"].data)
    w.value = "12.5.7"
    assert w.error.startswith("Invalid input:") and w._alert.visible
    assert w._stale.visible and "Not updated" in w._stale.object and "<code>465</code>" in w._stale.object
    assert w._bits.styles == {"opacity": "0.45"} and w._number_line.styles == {"opacity": "0.45"}
    assert dict(w.sources["bits"].data) == shown  # the last valid view, marked, not replaced
    w.value = "<b>x</b>"
    assert "&lt;b&gt;" not in w._stale.object and "<code>465</code>" in w._stale.object
    w.value = "3.5"
    assert not w._stale.visible and not w._alert.visible and w._bits.styles == {} and w.error == ""


def _front(rows: list[dict[str, object]]) -> list[str]:
    """The error/bits Pareto front of the complete rows, worked out here: a recipe is on it when no
    other has both no more bits and no larger error, one of them strictly."""
    rows = [r for r in rows if r["complete"] and isinstance(r["rms_rel_err"], float)
            and math.isfinite(r["rms_rel_err"]) and r["rms_rel_err"] < 1]
    front = []
    for r in rows:
        b, e = float(r["bits_per_element"]), float(r["rms_rel_err"])  # type: ignore[arg-type]
        beaten = any(float(o["bits_per_element"]) <= b and float(o["rms_rel_err"]) <= e  # type: ignore[arg-type]
                     and (float(o["bits_per_element"]) < b or float(o["rms_rel_err"]) < e)  # type: ignore[arg-type]
                     for o in rows if o is not r)
        if not beaten:
            front.append((b, str(r["recipe"])))
    return [name for _, name in sorted(front, reverse=True)]


@pytest.mark.parametrize("sample", ["layer", "activation", "gradient"])
def test_the_headline_names_the_best_recipe_for_each_size_not_a_16_bit_cast(sample: str) -> None:
    """Issue 33: "lowest error: bf16" crowned a 16-bit cast on every input. The headline now names
    each recipe no other beats on both bits and error, most bits first, with its error and size."""
    w = RecipeLab(sample=sample)
    text = w.headline()
    names = [re.sub(r"\\(.)", r"\1", n) for n in re.findall(r"\*\*(.+?)\*\*", text)]  # Markdown-escaped
    assert names == _front(w.view_data.report.ranking)
    assert len(names) >= 3 and any(name not in ("bf16", "fp16") for name in names)
    for name in names:
        row = next(r for r in w.view_data.report.ranking if r["recipe"] == name)
        assert f"{row['rms_rel_err']:.2e} at {row['bits_per_element']:.3g} bits" in text


def test_the_summary_ends_the_skipped_list_before_the_next_sentence() -> None:
    import io

    buf = io.BytesIO()
    np.savez(buf, w=np.random.default_rng(1).standard_normal((32, 64)).astype(np.float32), step=np.int64(3),
             ids=np.arange(4))
    w = RecipeLab()
    assert w.load_file("ckpt.npz", buf.getvalue()), w.error
    text = re.sub(r"\\(.)", r"\1", str(w._summary.object))  # Markdown-escaped: read as text
    assert "- skipped step: dtype INT64 (the lab analyses BF16, FP16, FP32, FP64).\n- skipped ids:" in text
    listing, headline = text.split("\n\n")[1:3]
    assert listing.startswith("- skipped") and headline.startswith("Lowest error for its size")


def test_the_scatter_names_its_tensors_and_the_map_has_a_colour_bar() -> None:
    from bokeh.models.annotations import ColorBar

    from lowprec.app.plots.lab import TENSOR_PALETTE
    from lowprec.app.plots.style import INK

    w = RecipeLab(sample="layer")
    fig = w._scatter.object
    assert fig.legend and fig.legend[0].title == "tensor"
    assert len(set(w.sources["table"].data["color"])) == len(w.view_data.report.tensors) == 3
    assert INK not in TENSOR_PALETTE and "#5F5F5F" not in TENSOR_PALETTE  # no near-black series on a dark plot
    (bar,) = w._map.object.select({"type": ColorBar})
    finite = [v for v in w.sources["map"].data["log10"] if math.isfinite(v)]
    assert (bar.color_mapper.low, bar.color_mapper.high) == (min(finite), max(finite))
    w.recipe = "mxfp8_e4m3"
    finite = [v for v in w.sources["map"].data["log10"] if math.isfinite(v)]
    assert (bar.color_mapper.low, bar.color_mapper.high) == (min(finite), max(finite))
    w.recipe = "bf16"  # the BF16 weight cast to BF16: exact everywhere, every cell grey
    assert not any(math.isfinite(v) for v in w.sources["map"].data["log10"])
    assert (bar.color_mapper.low, bar.color_mapper.high) == (0.0, 1.0)


def test_the_lab_table_prints_errors_in_scientific_notation_without_a_sign() -> None:
    from bokeh.models.widgets.tables import NumberFormatter, ScientificFormatter

    w = RecipeLab()
    table = w._table.object
    formats = {c.field: c.formatter for c in table.columns}
    for field in ("rms_rel_err", "max_abs_err"):
        f = formats[field]
        assert isinstance(f, ScientificFormatter) and f.precision == 3
        assert f.power_limit_high == 0 and f.power_limit_low == 0
    # numbro (what NumberFormatter runs) has no exponent format: its "0.000e+0" printed "+0.02622"
    assert not any(isinstance(f, NumberFormatter) and "e" in f.format for f in formats.values())
    assert table.autosize_mode == "none" and all(c.width >= 50 for c in table.columns)


def test_the_theme_toggle_names_the_theme_it_switches_to() -> None:
    """Issue 33: the toggle always read "Dark theme". It names the theme a click gives: "Dark
    theme" in the light one, "Light theme" in the dark one (set by the page's script)."""
    from lowprec.app import layout

    js = (ROOT / "app" / "static" / "lowprec.js").read_text(encoding="utf-8")
    assert re.search(r't\.textContent = dark \? "Light theme" : "Dark theme";', js)
    assert 'aria-pressed' not in layout.theme_toggle_html()
    assert 'class="lp-theme-text">Dark theme<' in layout.theme_toggle_html()


def test_a_page_object_displays_in_a_notebook() -> None:
    """Issue 33, F5: `lesson_page(...)` as a notebook cell's last line showed `Page(route=…)`; a page
    shows its content (its `_repr_mimebundle_` is Panel's, of `Page.view()`)."""
    from lowprec.app import pages
    from lowprec.course.lessons import load_lessons

    lesson = next(x for x in load_lessons() if x.slug == "range-vs-resolution")
    page = pages.lesson_page(lesson, sync=False)
    view = page.view()
    assert isinstance(view, pn.Column) and len(view.objects) == len(page.objects) > 3
    assert hasattr(page, "_repr_mimebundle_")


@pytest.mark.parametrize("library_name, label", [
    ("int64", "INT64"), ("I64", "INT64"), ("torch.int64", "INT64"), ("U8", "UINT8"), ("uint8", "UINT8"),
    ("BOOL", "BOOL"), ("bool", "BOOL"), ("float8_e4m3fn", "E4M3FN"), ("F8_E4M3", "E4M3FN"), ("F8_E5M2", "E5M2"),
    ("float8_e5m2", "E5M2"), ("complex64", "COMPLEX64"), ("C64", "COMPLEX64"), ("BF16", "BF16"), ("bfloat16", "BF16"),
    ("F16", "FP16"), ("float16", "FP16"), ("F64", "FP64"), ("float8_e8m0fnu", "E8M0"), ("qint8", "QINT8"),
])
def test_every_library_spelling_of_a_dtype_reads_one_way(library_name: str, label: str) -> None:
    """Issue 33: skipped tensors said `integer dtype int64` (numpy), `dtype int64` (torch) and
    `dtype I64` (safetensors); now one spelling, the lab's own names."""
    from lowprec.simulations.lab.tensors import dtype_label, dtype_reason

    assert dtype_label(library_name) == label
    assert dtype_reason(library_name) == f"dtype {label} (the lab analyses BF16, FP16, FP32, FP64)"


def test_the_three_readers_name_an_integer_tensor_alike(tmp_path: Path) -> None:
    import torch
    from safetensors.numpy import save_file

    from lowprec.simulations.lab.readers import scan

    ids = np.arange(4, dtype=np.int64)
    np.save(tmp_path / "a.npy", ids)
    torch.save({"ids": torch.from_numpy(ids)}, tmp_path / "b.pt")
    save_file({"ids": ids}, str(tmp_path / "c.safetensors"))
    inv = scan([str(tmp_path / n) for n in ("a.npy", "b.pt", "c.safetensors")])
    assert [s.reason for s in inv.skipped] == ["dtype INT64 (the lab analyses BF16, FP16, FP32, FP64)"] * 3


def test_formats_lists_no_subnormal_a_format_does_not_have(capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 33: `lowprec formats` gave E8M0, INT8 and INT4 a "min subnormal" (their smallest value);
    they have none. The others keep theirs, which ml_dtypes' finfo confirms."""
    import ml_dtypes

    from lowprec.app.cli import main

    assert main(["formats"]) == 0
    lines = {line.split()[0]: line.split() for line in capsys.readouterr().out.splitlines()[1:]}
    for name in ("E8M0", "INT8", "INT4"):
        assert lines[name][4] == "—", lines[name]
    oracle = {"E4M3FN": ml_dtypes.float8_e4m3fn, "E5M2": ml_dtypes.float8_e5m2, "BF16": ml_dtypes.bfloat16,
              "E2M1": ml_dtypes.float4_e2m1fn, "E3M2": ml_dtypes.float6_e3m2fn, "E2M3": ml_dtypes.float6_e2m3fn}
    for name, dtype in oracle.items():
        assert float(lines[name][4]) == pytest.approx(float(ml_dtypes.finfo(dtype).smallest_subnormal), rel=1e-5)
    assert main(["formats", "E8M0"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"^smallest_subnormal\s+— \(no subnormals; the smallest positive value is 5\.8774718e-39\)$",
                     out, re.M)


def test_a_cold_outline_imports_no_numpy_and_still_names_a_bad_widget(tmp_path: Path) -> None:
    """Issue 33: `lowprec lessons` took 4–8 s and 460 MB to print a list. The outline (ids, kinds,
    the widget a prediction unlocks) is parsed without the widgets' config records, so a cold
    listing imports neither numpy nor ml_dtypes nor any simulation (measured: 0.4 s, 21 MB cold at
    load 6 on two cores; tests/MUTANTS.md has the figures); an unknown widget is still an error,
    and a lesson parsed for the outline is never handed to a caller that needs checked parameters."""
    import subprocess
    import sys

    from lowprec.course import lessons as L

    code = ("import contextlib, io, sys\nfrom lowprec.app.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            "    rc = main(['lessons', '--no-cache'])\n"
            "heavy = ('numpy', 'ml_dtypes', 'lowprec.simulations', 'lowprec.formats', 'panel', 'torch')\n"
            "print(rc, sorted(m for m in heavy if m in sys.modules))\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300,
                       check=False)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "0 []"
    text = "::: widget BinExplorer value=3.3 nosuch=1"
    with L.outline_only():
        d = L.parse_directive(text)  # the outline reads the name; the parameters are not its business
        assert d.name == "BinExplorer" and d.params == {"value": 3.3, "nosuch": 1}
        with pytest.raises(L.LessonError, match="unknown widget 'NoSuchWidget'"):
            L.parse_directive("::: widget NoSuchWidget a=1")
    with pytest.raises(L.LessonError, match="BinExplorer has no parameter 'nosuch'"):
        L.parse_directive(text)
    assert L.parse_directive("::: widget BinExplorer value=3.3").params == {"value": "3.3"}  # checked: text


def test_the_lab_table_widens_its_text_columns_to_the_longest_name() -> None:
    """Columns keep their widths at any window width; a long tensor name widens its column
    (the 1400 px screenshot cut "model.layers.0.self_attn.q_proj.wei")."""
    from lowprec.app.plots.lab import CHAR_PX

    w = RecipeLab()
    name = "model.layers.0.self_attn.q_proj.weight"
    assert w.load_file(f"{name}.npy", _npy(np.ones((4, 32), np.float32))), w.error
    widths = {c.field: c.width for c in w._table.object.columns}
    assert widths["tensor"] >= CHAR_PX * len(f"{name}.npy") and widths["tensor"] <= 640
    assert widths["rank"] == 50  # numbers keep their declared widths


def _npy(x: np.ndarray) -> bytes:
    import io

    buf = io.BytesIO()
    np.save(buf, x)
    return buf.getvalue()


def test_colour_bars_and_legend_titles_follow_the_theme() -> None:
    """Dark-mode contrast (issue 33): a colour bar's labels and title and a legend's title were
    Bokeh's dark defaults, which the theme switch does not know, so they stayed dark on the dark
    plot. They take the theme's roles (which the page's script swaps); a legend of a data column
    (one entry per tensor) stacks under the plot instead of running off a phone's screen."""
    from bokeh.models.annotations import ColorBar

    from lowprec.app.theme import BOKEH_ROLES, style_bokeh

    w = RecipeLab()
    (bar,) = style_bokeh(w._map.object).select({"type": ColorBar})
    assert bar.major_label_text_color == BOKEH_ROLES["muted_text"][0]
    assert bar.title_text_color == BOKEH_ROLES["text"][0]
    fig = style_bokeh(w._scatter.object)
    legend = fig.legend[0]
    assert legend.title_text_color == BOKEH_ROLES["text"][0]
    assert legend in fig.below and legend.orientation == "vertical"


def test_a_request_whose_worker_pool_broke_is_tried_once_more(monkeypatch: pytest.MonkeyPatch) -> None:
    """A worker that dies breaks its pool for every request in flight, another session's included:
    `run_in_process` takes a fresh pool once before it reports the death (as RuntimeError)."""
    from concurrent.futures import Future
    from concurrent.futures.process import BrokenProcessPool

    from lowprec.app import work

    class Pool:
        def __init__(self, broken: bool) -> None:
            self.broken = broken

        def submit(self, *args: object) -> Future[str]:
            if self.broken:
                raise BrokenProcessPool("a worker died")
            done: Future[str] = Future()
            done.set_result("ok")
            return done

    pools = [Pool(True), Pool(False)]
    monkeypatch.setattr(work, "processes", lambda: pools.pop(0) if len(pools) > 1 else pools[0])
    assert work.run_in_process("lowprec.app.lab_jobs:run", 1) == "ok"
    pools[:] = [Pool(True), Pool(True), Pool(True)]
    with pytest.raises(RuntimeError, match="died twice"):
        work.run_in_process("lowprec.app.lab_jobs:run", 1)
