"""The Accumulator widget (the face of `simulations.gemm.study`): it draws the study's result and
nothing else — its columns are `gemm_sources` of a direct `simulate_gemm` run with the same
parameters, bit for bit; the cut line sits where the picture's kept bits end; a bad value (an
instruction the architecture lacks, a C the C type cannot hold, a K that is no multiple of the
instruction's, a request over the page budget) shows one "Invalid input" line naming it and keeps
the last view; every option of every choice control builds."""

from __future__ import annotations

from typing import Any

import numpy as np
import panel as pn
import param
import pytest
from bokeh.models.annotations import Span

from lowprec.app.plots.gemm import gemm_sources
from lowprec.app.widgets import Accumulator, get_widget_class
from lowprec.simulations.gemm.study import simulate_gemm


def shown(w: Any) -> dict[str, dict[str, Any]]:
    return {name: {k: (np.asarray(v, dtype=np.float64).tobytes() if isinstance(v, np.ndarray) else list(v))
                   for k, v in src.data.items()} for name, src in w.sources.items()}


def as_lists(data: dict[str, dict[str, Any]]) -> dict[str, dict[str, list[Any]]]:
    return {n: {k: (v.tolist() if isinstance(v, np.ndarray) else list(v)) for k, v in cols.items()}
            for n, cols in data.items()}


SMALL = dict(k_max=256, rows=8, cols=4)


def test_registered_and_draws_the_study() -> None:
    assert get_widget_class("Accumulator") is Accumulator
    w = Accumulator(**SMALL)
    assert w.error == "" and "wgmma.m64n8k32.f32.e4m3.e4m3" in w.summary
    want = gemm_sources(simulate_gemm(**SMALL))
    got = {n: {k: (v.tolist() if isinstance(v, np.ndarray) else list(v)) for k, v in src.data.items()}
           for n, src in w.sources.items()}
    assert got.keys() == want.keys()
    for name in want:
        for col in want[name]:
            a, b = got[name][col], want[name][col]
            assert len(a) == len(b) and all(x == y or (x != x and y != y) for x, y in zip(a, b)), (name, col)
    span = next(iter(w._pic.select({"type": Span})))
    assert span.location == w.result.picture.cut - 0.5
    root = pn.panel(w).get_root()  # type: ignore[attr-defined]
    shown_models = {id(m) for m in root.references()}
    assert all(id(src) in shown_models for src in w.sources.values())  # the page draws every source


@pytest.mark.parametrize("change,words", [
    ({"distribution": "positive"}, "whole K"),
    ({"arch": "blackwell"}, "tcgen05"),
    ({"arch": "ampere"}, "bf16"),
    ({"metric": "median_rel"}, "median relative error"),
    ({"promote_every": "64,128"}, "promoted every 64"),
    ({"picture_step": 0}, "Step 0 of"),
])
def test_each_change_redraws_from_the_simulation(change: dict, words: str) -> None:  # type: ignore[type-arg]
    w = Accumulator(**SMALL)
    w.param.update(**change)
    assert w.error == "" and words in w.summary, w.summary
    want = as_lists(gemm_sources(simulate_gemm(**{**SMALL, **change})))
    assert w.source_data["curves"]["label"] == want["curves"]["label"]
    assert w.source_data["cells"]["bit"] == want["cells"]["bit"]


@pytest.mark.parametrize("change,needle", [
    ({"arch": "blackwell", "instruction": "wgmma.m64n8k32.f32.e4m3.e4m3"}, "instruction: 'wgmma.m64n8k32.f32.e4m3.e4m3' "
                                                                          "is not an instruction of blackwell"),
    ({"c": 0.1}, "c: 0.1 is not exactly representable in FP32"),
    ({"k_max": 100}, "k_max: K = 100 is not a multiple"),
    ({"k_max": 16384, "rows": 1024}, "over a page's budget"),
])
def test_bad_input_is_one_message_and_the_view_stays(change: dict, needle: str) -> None:  # type: ignore[type-arg]
    w = Accumulator(**SMALL)
    before, summary = shown(w), w.summary
    w.param.update(**change)
    assert w.error.startswith("Invalid input: ") and needle in w.error, w.error
    assert "\n" not in w.error and w._alert.visible
    assert shown(w) == before and w.summary == summary
    w.param.update(**{k: Accumulator.param[k].default if k not in SMALL else SMALL[k] for k in change})
    assert w.error == "" and not w._alert.visible


def test_every_choice_builds() -> None:
    for name in Accumulator.watched:
        p = Accumulator.param[name]
        values = [not p.default] if isinstance(p, param.Boolean) else (
            [v for v in p.objects if v != p.default] if isinstance(p, param.Selector) else [])
        for value in values:
            if name == "compare" and value in ("volta", "turing", "ampere"):  # no FP8 tensor cores there
                with pytest.raises(ValueError, match=f"compare: no tensor-core instruction of {value} multiplies "
                                                     f"E4M3FN by E4M3FN"):
                    Accumulator(**{**SMALL, name: value})
                continue
            w = Accumulator(**{**SMALL, name: value})
            assert w.error == "" and w.summary, (name, value)


def test_the_bit_picture_cells_spell_the_terms() -> None:
    w = Accumulator(**SMALL, distribution="positive", picture_step=2)
    p = w.result.picture
    cells = w.source_data["cells"]
    for row_i, row in enumerate(p.rows):
        y = float(len(p.rows) - 1 - row_i)
        mine = [(int(x), b) for x, yy, b in zip(cells["x"], cells["y"], cells["bit"]) if yy == y]
        assert mine == [(j, ch) for j, ch in enumerate(row.bits) if ch != " "]
    kept = {c for c, part in zip(cells["x"], cells["part"]) if part == "kept"}
    assert max(kept) == p.cut - 1 and all(x >= p.cut for x, part in zip(cells["x"], cells["part"]) if part != "kept")
