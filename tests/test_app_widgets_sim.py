"""The five simulation widgets (DelayedSpike, AttentionRounding, RecomputeDivergence, ScaleGrouping,
BlockFormats), without a browser.

Every widget builds with its defaults and with each option of each discrete control; changing a
parameter changes the plotted columns exactly as a direct call of the simulation with the same
parameters predicts (the arguments are spelled out here, not taken from the widget). Independent
oracles where the physics is simple: Transformer Engine's delayed-scaling rule (a spike stays in the
`max` history for exactly H steps), per-group amax and float32 encode scales from plain numpy,
ml_dtypes casts for P̃, MX and NVFP4 element codes (compared as unsigned integer views), the MX scale
rules written out, the one-commit-per-layer-per-step rule of the corrected recompute design. A
simulation that raises shows an "Invalid" message and keeps the last good data. The four widgets that
are faces of a `lowprec.simulations` simulation take their parameters from its config record
(tests/test_config_faces.py checks the names).
"""

from __future__ import annotations

import math
from typing import Any

import ml_dtypes
import numpy as np
import panel as pn
import pytest
import torch

from lowprec.app.plots.style import power_of_two_text
from lowprec.app.widgets import get_widget_class
from lowprec.app.widgets._sim_base import SimulationWidget
from lowprec.app.widgets.attention_rounding import AttentionRounding
from lowprec.app.widgets.block_formats import BlockFormats
from lowprec.app.widgets.delayed_spike import DelayedSpike
from lowprec.app.widgets.recompute_divergence import RecomputeDivergence
from lowprec.app.widgets.scale_grouping import ScaleGrouping
from lowprec.simulations.studies import attention, grouping, spike
from lowprec.simulations import blocks, recompute, scaling

E4M3_MAX = 448.0
F32_EPS = 2.0**-23


def columns(widget: Any, source: str) -> dict[str, list[Any]]:
    """A source's columns as lists (float columns are arrays in the source: sent as binary)."""
    return {k: (v.tolist() if isinstance(v, np.ndarray) else list(v))
            for k, v in widget.sources[source].data.items()}


def shown_bits(widget: Any) -> dict[str, dict[str, Any]]:
    """Every source's columns, comparable with == bit for bit (NaN included): float columns as
    their bytes, the others as lists."""
    return {name: {k: (np.asarray(v, dtype=np.float64).tobytes() if isinstance(v, np.ndarray) else list(v))
                   for k, v in src.data.items()} for name, src in widget.sources.items()}


def same(a: list[Any], b: list[Any]) -> bool:
    """Elementwise equality of two float lists, NaN equal to NaN."""
    return len(a) == len(b) and all(x == y or (isinstance(x, float) and isinstance(y, float)
                                               and math.isnan(x) and math.isnan(y)) for x, y in zip(a, b))


def u8(values: Any, dtype: Any) -> list[int]:
    """ml_dtypes codes of float32 values, as unsigned integers."""
    return [int(c) for c in np.asarray(values, np.float32).astype(dtype).view(np.uint8)]


@pytest.fixture(autouse=True)
def _one_torch_thread() -> Any:
    """Direct recompute runs here use one thread, as the widget does (tiny matrices; much faster)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


# ------------------------------------------------------------------------------------------------
# every widget: registry, defaults, each option, rendering, bad input
# ------------------------------------------------------------------------------------------------

WIDGETS: list[type[SimulationWidget]] = [DelayedSpike, AttentionRounding, RecomputeDivergence, ScaleGrouping,
                                         BlockFormats]


@pytest.mark.parametrize("cls", WIDGETS, ids=lambda c: c.__name__)
def test_registry_defaults_and_render(cls: type[SimulationWidget]) -> None:
    assert get_widget_class(cls.__name__) is cls
    w = cls()
    assert w.error == ""
    assert w.summary.strip()
    for name, src in w.sources.items():  # every column of a source has the same length
        assert len({len(col) for col in src.data.values()}) == 1, name
    assert sum(len(next(iter(src.data.values()))) for src in w.sources.values()) > 0
    root = pn.panel(w).get_root()  # type: ignore[attr-defined]
    shown = {id(m) for m in root.references()}
    # the page draws the widget's data (an empty source may belong to a view not shown: ScaleGrouping
    # builds a study's figures when the study is first shown)
    assert all(id(src) in shown for src in w.sources.values() if len(next(iter(src.data.values()), [])))


def _options(cls: type[SimulationWidget]) -> list[tuple[str, Any]]:
    import param

    out = []
    for name in cls.watched:
        p = cls.param[name]
        if isinstance(p, param.Boolean):
            out.append((name, not p.default))
        elif isinstance(p, param.Selector):
            out.extend((name, v) for v in p.objects if v != p.default)
    return out


@pytest.mark.parametrize("cls", WIDGETS, ids=lambda c: c.__name__)
def test_builds_with_each_option(cls: type[SimulationWidget]) -> None:
    for name, value in _options(cls):
        w = cls(**{name: value})
        assert w.error == "", (name, value, w.error)
        assert w.summary.strip(), (name, value)


@pytest.mark.parametrize(
    "cls, module, func, change",
    [
        (DelayedSpike, spike, "simulate_spike", ("history", 4)),
        (AttentionRounding, attention, "run_attention_config", ("rounding", "stochastic")),
        (RecomputeDivergence, recompute, "run_recompute", ("layers", 2)),
        (ScaleGrouping, grouping, "simulate_grouping", ("format", "E5M2")),
        (BlockFormats, blocks, "quantize", ("scale_rule", "rceil")),
    ],
    ids=lambda v: v.__name__ if isinstance(v, type) else None,
)
def test_simulation_error_shows_message_and_keeps_view(cls: type[SimulationWidget], module: Any, func: str, change: tuple[str, Any],
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    w = cls()
    before = shown_bits(w)
    summary = w.summary

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise ValueError("bad combination for this test")

    monkeypatch.setattr(module, func, broken)
    setattr(w, *change)  # must not raise out of the callback
    assert w.error.startswith("Invalid") and "bad combination" in w.error
    assert w._alert.visible and w._alert.object.startswith("Invalid")
    assert shown_bits(w) == before
    assert w.summary == summary
    monkeypatch.undo()
    setattr(w, change[0], cls.param[change[0]].default)
    assert w.error == "" and not w._alert.visible


# ------------------------------------------------------------------------------------------------
# DelayedSpike
# ------------------------------------------------------------------------------------------------

DELAYED_DEFAULTS = dict(format="E4M3FN", history=16, algo="max", margin=0, steps=200, spike_step=100,
                        spike=50.0, seed=0)
PLOTTED = ("amax", "delayed_amax_used", "current_amax_used", "delayed_clipped_fraction",
           "current_clipped_fraction", "delayed_rms_rel_error", "current_rms_rel_error")


@pytest.mark.parametrize(
    "param_name, value, sim_name",
    [("history", 4, "history"), ("algo", "most_recent", "algo"), ("margin", 2, "margin"),
     ("format", "E5M2", "format"), ("steps", 150, "steps"), ("spike_step", 40, "spike_step"),
     ("spike", 8.0, "spike"), ("seed", 3, "seed"), ("size", 1000, "size")],
)
def test_delayed_spike_follows_simulation(param_name: str, value: Any, sim_name: str) -> None:
    w = DelayedSpike()
    default_cols = columns(w, "steps")
    setattr(w, param_name, value)
    expected = spike.simulate_stream(**{**DELAYED_DEFAULTS, sim_name: value}).columns()
    cols = columns(w, "steps")
    for key in PLOTTED:
        assert same(cols[key], expected[key]), key
    assert any(not same(cols[k], default_cols[k]) for k in PLOTTED), "the plot did not change"
    # independently of the simulation: from step 1 on, the delayed scale was sized for the largest
    # (or, most_recent, the last) amax of the previous `history` steps, up to float32 rounding of F/amax
    args = {**DELAYED_DEFAULTS, sim_name: value}
    amax = np.asarray(cols["amax"], np.float64)
    h = 1 if args["algo"] == "most_recent" else int(args["history"])
    want = np.array([amax[max(0, t - h):t].max() for t in range(1, amax.size)])
    np.testing.assert_allclose(np.asarray(cols["delayed_amax_used"][1:], np.float64), want, rtol=2.0**-22)
    assert all(span.location == w.spike_step for span in w._spans)


@pytest.mark.parametrize("algo, held", [("max", 16), ("most_recent", 1)])
def test_delayed_spike_history_semantics(algo: str, held: int) -> None:
    # TE delayed scaling: the scale at step t comes from amaxes recorded before t, so the spike at
    # s is used from s + 1 on, for H steps under "max" and one under "most_recent"
    w = DelayedSpike(algo=algo)
    cols = columns(w, "steps")
    s = w.spike_step
    spike_amax = cols["amax"][s]
    used = np.asarray(cols["delayed_amax_used"])
    sized_for_spike = np.abs(used / spike_amax - 1) < 4 * F32_EPS
    assert list(np.flatnonzero(sized_for_spike)) == list(range(s + 1, s + 1 + held))
    # the amax a scale was sized for is F / encode_scale (margin 0)
    assert np.allclose(used, E4M3_MAX / np.asarray(cols["delayed_encode_scale"]), rtol=1e-12)
    # current scaling sizes from the tensor itself: never clips
    assert max(cols["current_clipped_fraction"]) == 0
    assert cols["delayed_clipped_fraction"][s] > 0


def test_delayed_spike_margin_halves_scale() -> None:
    base, halved = DelayedSpike(), DelayedSpike(margin=1)
    a = np.asarray(columns(base, "steps")["delayed_encode_scale"][1:])
    b = np.asarray(columns(halved, "steps")["delayed_encode_scale"][1:])
    assert np.array_equal(b, a / 2)


def test_delayed_spike_step_outside_stream() -> None:
    w = DelayedSpike()
    before = columns(w, "steps")
    w.spike_step = 500
    assert w.error.startswith("Invalid") and "500" in w.error and "0..199" in w.error
    assert columns(w, "steps") == before
    w.spike_step = 120
    assert w.error == ""
    assert all(span.location == 120 for span in w._spans)


def test_delayed_spike_other_streams() -> None:
    """A bursts stream: no spike marker, the summary speaks of the largest amax; σ is 10 on the
    first 5 steps of every 50 (the stream written out: step t drawn from Philox(seed, counter t))."""
    w = DelayedSpike(stream="bursts", steps=120, size=512)
    assert not any(span.visible for span in w._spans)
    amax = np.asarray(columns(w, "steps")["amax"])
    for t in (0, 7, 52):
        rng = np.random.Generator(np.random.Philox(key=0, counter=[0, 0, t, 0]))
        x = rng.standard_normal(512, dtype=np.float32) * np.float32(10.0 if t % 50 < 5 else 1.0)
        assert amax[t] == float(np.abs(x).max())
    assert "At the largest amax" in w.summary
    w.stream = "spike"
    assert all(span.visible for span in w._spans)


# ------------------------------------------------------------------------------------------------
# AttentionRounding
# ------------------------------------------------------------------------------------------------


def softmax(scores: np.ndarray) -> np.ndarray:
    z = scores - scores.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


ATT_DEFAULTS = dict(seq=128, head_dim=64, format="E4M3FN", rounding="nearest_even", scale="none", trials=200,
                    temperature=1.0, renormalize=False, seed=0)


def test_attention_nearest_matches_ml_dtypes() -> None:
    w = AttentionRounding(seq=32)
    inputs = attention.make_inputs(32, 64, seed=0)
    p = softmax(inputs.scores)
    cols = columns(w, "probs")
    assert np.allclose(cols["p"], p.reshape(-1), rtol=1e-12, atol=0)
    assert u8(cols["p_rounded"], ml_dtypes.float8_e4m3fn) == u8(p.reshape(-1), ml_dtypes.float8_e4m3fn)


@pytest.mark.parametrize(
    "param_name, value, sim_name",
    [("format", "E5M2", "format"), ("rounding", "stochastic", "rounding"), ("scale", "row", "scale"),
     ("seq", 48, "seq"), ("temperature", 0.3, "temperature"), ("seed", 2, "seed"), ("head_dim", 8, "head_dim"),
     ("mask", "causal", "mask"), ("v_format", "E4M3FN", "v_format")],
)
def test_attention_follows_simulation(param_name: str, value: Any, sim_name: str) -> None:
    w = AttentionRounding(seq=64, trials=50)
    default_cols = columns(w, "first_order")
    setattr(w, param_name, value)
    kwargs = {**ATT_DEFAULTS, "seq": 64, "trials": 50, sim_name: value}
    r = attention.simulate_attention(kwargs.pop("seq"), kwargs.pop("head_dim"), kwargs.pop("format"),
                                     kwargs.pop("rounding"), **kwargs)
    assert same(columns(w, "first_order")["exact"], r.delta_o.reshape(-1).tolist())
    assert same(columns(w, "first_order")["first_order"], r.delta_o_first_order.reshape(-1).tolist())
    assert same(columns(w, "variance")["monte_carlo"], r.mc_variance.reshape(-1).tolist())
    assert same(columns(w, "variance")["analytic"], r.analytic_variance.reshape(-1).tolist())
    assert same(columns(w, "bias")["mc_mean"], r.mc_mean_error.reshape(-1).tolist())
    assert same(columns(w, "probs")["p_rounded"], r.probs_rounded.reshape(-1).tolist())
    assert not same(columns(w, "first_order")["exact"], default_cols["exact"]), "the plot did not change"


def test_attention_trials_and_renormalize() -> None:
    w = AttentionRounding(seq=32, rounding="stochastic", trials=20)
    assert all(math.isnan(v) for v in columns(w, "renorm")["mc_mean"])
    var20 = columns(w, "variance")["monte_carlo"]
    w.trials = 40
    r = attention.simulate_attention(32, 64, "E4M3FN", "stochastic", trials=40, seed=0)
    assert same(columns(w, "variance")["monte_carlo"], r.mc_variance.reshape(-1).tolist())
    assert not same(var20, columns(w, "variance")["monte_carlo"])
    w.renormalize = True
    r = attention.simulate_attention(32, 64, "E4M3FN", "stochastic", trials=40, renormalize=True, seed=0)
    assert r.mc_mean_error_renorm is not None and r.renorm_bias_first_order is not None
    assert same(columns(w, "renorm")["mc_mean"], r.mc_mean_error_renorm.reshape(-1).tolist())
    assert same(columns(w, "renorm")["predicted"], r.renorm_bias_first_order.reshape(-1).tolist())
    assert "Renormalising" in w.summary


def test_attention_three_probs_preset() -> None:
    w = AttentionRounding(preset="three_probs")
    cols = columns(w, "probs")
    assert np.allclose(cols["p"], [0.6, 0.3, 0.1], rtol=1e-12)
    # E4M3FN, gap 2^(e-3) in binade 2^e: 0.6 = 9.6/16 → 10/16 = 0.625, 0.3 = 9.6/32 → 10/32 = 0.3125,
    # 0.1 = 12.8/128 → 13/128 = 0.1015625
    assert u8(cols["p_rounded"], ml_dtypes.float8_e4m3fn) == u8([0.6, 0.3, 0.1], ml_dtypes.float8_e4m3fn)
    assert cols["p_rounded"] == [0.625, 0.3125, 0.1015625]
    # the worked example on a grid of step 1/4: [0.5, 0.25, 0] and 0.6·0 + 0.3·2 + 0.1·10 = 1.6 → 0.5
    assert "1.6 → 0.5" in w.summary
    exact = 0.6 * 0 + 0.3 * 2 + 0.1 * 10
    assert columns(w, "first_order")["exact"][0] == pytest.approx(0.625 * 0 + 0.3125 * 2 + 0.1015625 * 10 - exact,
                                                                   abs=1e-12)


# ------------------------------------------------------------------------------------------------
# RecomputeDivergence
# ------------------------------------------------------------------------------------------------


def test_recompute_fixed_is_bitwise_identical_one_commit_per_layer() -> None:
    w = RecomputeDivergence()
    cells = columns(w, "cells")
    assert cells["status"] == ["bitwise identical"] * 80
    assert columns(w, "steps")["state_commits"] == [4] * 20  # one per layer per logical step
    assert set(cells["commits"]) == {1}
    assert "bitwise identical in all 80 activations" in w.summary
    assert w._expected_commits.location == 4


def test_recompute_cells_name_an_unpaired_consumer_descale() -> None:
    """consume-after-advance with checkpointing: every recompute is bitwise identical, yet the
    consumer read a descale that is not 1 / the codes' encode scale; those cells say so. Pairing is
    computed here from the scales (the formula), not read from the result's flag."""
    w = RecomputeDivergence(variant="consume-after-advance", checkpointing=True)
    r = w.result
    paired = r.consumer_decode_scale_forward == np.float32(1.0) / r.encode_scale_forward.astype(np.float32)
    cells = columns(w, "cells")
    want = ["bitwise identical" if paired[t, layer] else "identical, consumer descale unpaired"
            for t, layer in zip(cells["step"], cells["layer"])]
    assert cells["status"] == want
    assert not paired[0, 0] and paired.sum() > 0  # both kinds of cell are present


@pytest.mark.parametrize(
    "param_name, value, sim_kwargs",
    [("variant", "recompute-mutates", {"variant": "recompute-mutates"}),
     ("variant", "stale-centre", {"variant": "stale-centre"}),
     ("layers", 2, {"layers": 2}), ("steps", 6, {"steps": 6}), ("format", "E5M2", {"fmt": "E5M2"}),
     ("seed", 5, {"seed": 5}), ("checkpointing", False, {"checkpointing": False})],
)
def test_recompute_follows_simulation(param_name: str, value: Any, sim_kwargs: dict[str, Any]) -> None:
    w = RecomputeDivergence(variant="shared-state")
    w.variant = "fixed"
    default = {name: columns(w, name) for name in ("cells", "steps")}
    setattr(w, param_name, value)
    r = recompute.run_recompute(**{"variant": "fixed", "layers": 4, "steps": 20, "fmt": "E4M3FN", "seed": 0,
                                   "checkpointing": True, **sim_kwargs})
    cells, steps = columns(w, "cells"), columns(w, "steps")
    n_steps, n_layers = r.recomputed.shape
    assert len(cells["x"]) == n_steps * n_layers
    differs = [c == "differs" for c in cells["status"]]
    assert differs == list((r.recomputed & ~r.bitwise_equal).reshape(-1))
    assert same(steps["grad_norm"], [float(g) for g in r.grad_norm])
    assert steps["state_commits"] == [int(c) for c in r.state_commits]
    assert r.verdict() in w.summary
    assert {name: columns(w, name) for name in ("cells", "steps")} != default, "the plot did not change"


def test_recompute_defect_signatures() -> None:
    w = RecomputeDivergence(variant="recompute-mutates")
    assert columns(w, "steps")["state_commits"] == [8] * 20  # recompute commits a second time
    assert "first mismatch" in w.summary
    w.variant = "gate-asymmetry"
    assert "failed at step 0" in w.summary and "KeyError" in w.summary
    assert w.error == ""  # a failing run is a verdict, not an error
    w.variant = "bf16-control"
    assert columns(w, "steps")["state_commits"] == [0] * 20
    assert w._expected_commits.location == 0
    w.variant = "fixed"
    w.checkpointing = False
    assert set(columns(w, "cells")["status"]) == {"not recomputed"}


# ------------------------------------------------------------------------------------------------
# ScaleGrouping
# ------------------------------------------------------------------------------------------------


def grouping_tensor(outlier: float = 100.0, r: int = 3, c: int = 5, seed: int = 0) -> np.ndarray:
    x = np.random.default_rng(seed).standard_normal((32, 64)).astype(np.float32)
    x[r, c] = outlier
    return x


def group_amax_per_element(x: np.ndarray, granularity: str, k: int = 16) -> np.ndarray:
    a = np.abs(x.astype(np.float64))
    if granularity == "tensor":
        return np.full(x.shape, a.max())
    if granularity == "row":
        return np.repeat(a.max(axis=1, keepdims=True), x.shape[1], axis=1)
    if granularity == "column":
        return np.repeat(a.max(axis=0, keepdims=True), x.shape[0], axis=0)
    if granularity == "block":
        blk = a.reshape(x.shape[0], -1, k).max(axis=2)
        return np.repeat(blk, k, axis=1)
    tiles = a.reshape(x.shape[0] // k, k, x.shape[1] // k, k).max(axis=(1, 3))
    return np.kron(tiles, np.ones((k, k)))


GRANULARITY_LABELS = {"tensor": "tensor", "row": "row", "column": "column", "block": "block16",
                      "block2d": "block16x16"}


@pytest.mark.parametrize("granularity, n_groups", [("tensor", 1), ("row", 32), ("column", 64), ("block", 128),
                                                    ("block2d", 8)])
def test_grouping_scales_and_dequantized_values(granularity: str, n_groups: int) -> None:
    label = GRANULARITY_LABELS[granularity]
    w = ScaleGrouping(granularities=f"tensor,{label}" if label != "tensor" else "tensor")
    result = w.result
    w._view.value = label  # the buttons choose what is drawn: no new simulation
    assert w.result is result
    x = grouping_tensor()
    cells = columns(w, "cells")
    assert cells["value"] == x.astype(np.float64).reshape(-1).tolist()
    encode = (E4M3_MAX / group_amax_per_element(x, granularity)).astype(np.float32).astype(np.float64)
    assert np.array_equal(np.asarray(cells["decode_scale"]), (1.0 / encode).reshape(-1))
    assert len(set(cells["group"])) == n_groups
    # x̂ = E4M3(x · encode_scale) / encode_scale, the cast by ml_dtypes (the scaled values are exact in float64)
    scaled = x.astype(np.float64) * encode
    codes = scaled.astype(ml_dtypes.float8_e4m3fn)
    x_hat = codes.astype(np.float64) * (1.0 / encode)
    assert np.allclose(cells["dequantized"], x_hat.reshape(-1), rtol=1e-15, atol=0)
    rel = np.abs(x_hat - x.astype(np.float64)) / np.abs(x.astype(np.float64))
    assert np.array_equal(np.asarray(cells["rel_error"]), rel.reshape(-1))
    bits = 8 + 32 * n_groups / x.size
    assert f"{bits:.4g} bits per element" in w.summary and f", {label}:" in w.summary
    assert cells["scale_text"][0] == power_of_two_text(cells["decode_scale"][0])


@pytest.mark.parametrize("param_name, value", [("outlier", 1000.0), ("outlier_row", 10), ("outlier_col", 40),
                                               ("seed", 1), ("format", "E2M1"), ("granularities", "block8,row")])
def test_grouping_follows_simulation(param_name: str, value: Any) -> None:
    w = ScaleGrouping(granularities="block16")
    default = columns(w, "cells")
    setattr(w, param_name, value)
    args = {"outlier": 100.0, "outlier_row": 3, "outlier_col": 5, "seed": 0, "format": "E4M3FN",
            "granularities": "block16", param_name: value}
    first = str(args["granularities"]).split(",")[0]
    x = grouping_tensor(args["outlier"], args["outlier_row"], args["outlier_col"], args["seed"])
    st = scaling.quantize_scaled(x, args["format"], first)
    cells = columns(w, "cells")
    assert np.array_equal(np.asarray(cells["dequantized"]), st.dequantize().reshape(-1))
    # independently: element (0, 0)'s decode scale is its group's amax / F (float32-rounded F/amax)
    width = {"block16": 16, "block8": 8}[first]
    fmax = {"E4M3FN": E4M3_MAX, "E2M1": 6.0}[str(args["format"])]
    assert cells["decode_scale"][0] == pytest.approx(float(np.abs(x[0, :width]).max()) / fmax, rel=2.0**-23)
    assert columns(w, "outlier") == {"x": [args["outlier_col"]], "y": [args["outlier_row"]]}
    assert cells != default, "the plot did not change"
    # the summary's overall error is the outlier study's for this granularity
    study = grouping.outlier_study(args["format"], (32, 64), args["outlier"],
                                   (args["outlier_row"], args["outlier_col"]), granularities=[first], seed=args["seed"])
    assert f"RMS relative error {study.entries[0].report.rms_rel_error:.3g}" in w.summary
    assert columns(w, "granularities")["granularity"] == str(args["granularities"]).split(",")


@pytest.mark.parametrize("granularity", ["tensor", "row", "column"])
def test_grouping_outlier_neighbours(granularity: str) -> None:
    # the outlier's neighbours: the other elements sharing its scale (row 3 / column 5 / all)
    w = ScaleGrouping(granularities=granularity, format="INT8")
    x = grouping_tensor().astype(np.float64)
    cells = columns(w, "cells")
    x_hat = np.asarray(cells["dequantized"]).reshape(x.shape)
    same_group = {"tensor": np.ones(x.shape, bool), "row": np.zeros(x.shape, bool),
                  "column": np.zeros(x.shape, bool)}[granularity]
    if granularity == "row":
        same_group[3, :] = True
    if granularity == "column":
        same_group[:, 5] = True
    same_group[3, 5] = False
    d = x_hat[same_group] - x[same_group]
    expected = math.sqrt(float(np.sum(d * d)) / float(np.sum(x[same_group] ** 2)))
    assert f"{expected:.3g}" in w.summary
    bars = columns(w, "granularities")
    assert bars["outlier_group"] == [pytest.approx(expected, rel=1e-12, abs=0)]


def test_grouping_window_of_a_large_tensor() -> None:
    w = ScaleGrouping(rows=200, cols=300, outlier_row=150, outlier_col=290, granularities="row")
    cells = columns(w, "cells")
    assert len(cells["x"]) == 64 * 128
    assert (min(cells["row"]), max(cells["row"])) == (118, 181)  # 64 rows centred on 150
    assert (min(cells["col"]), max(cells["col"])) == (172, 299)  # 128 columns, clamped at the edge
    assert columns(w, "outlier") == {"x": [290], "y": [150]}
    assert "window around the outlier" in w.summary


def _transpose_errors_by_ml_dtypes() -> list[float]:
    """The transpose study's three RMS relative errors at its defaults (Student-t, 32 × 64, seed 0),
    computed with ml_dtypes' E4M3FN cast: row blocks of 32, column blocks from the source, column
    blocks re-quantized from the rounded row-blocked data."""
    x = np.random.default_rng(0).standard_t(3, size=(32, 64)).astype(np.float32).astype(np.float64)

    def e4m3_blocks(z: np.ndarray, axis: int) -> np.ndarray:
        zt = np.moveaxis(z, axis, -1)
        g = zt.reshape(*zt.shape[:-1], -1, 32)
        enc = np.asarray(E4M3_MAX / np.abs(g).max(axis=-1, keepdims=True), np.float32).astype(np.float64)
        q = np.clip(g * enc, -E4M3_MAX, E4M3_MAX).astype(ml_dtypes.float8_e4m3fn).astype(np.float64) / enc
        return np.moveaxis(q.reshape(zt.shape), -1, axis)

    rows = e4m3_blocks(x, 1)
    return [rms_rel(x, rows), rms_rel(x, e4m3_blocks(x, 0)), rms_rel(x, e4m3_blocks(rows, 0))]


def test_grouping_other_studies() -> None:
    """Each study shows its own figure; the numbers are the study's (the transpose errors against
    an ml_dtypes computation of the same data)."""
    w = ScaleGrouping()
    assert w._views["outlier"].visible and "transpose" not in w._views  # built when first shown
    w.study = "transpose"
    assert w.error == "" and w._views["transpose"].visible and not w._views["outlier"].visible
    assert columns(w, "cells")["x"] == [] and columns(w, "granularities")["granularity"] == []
    expected = _transpose_errors_by_ml_dtypes()
    assert np.allclose(columns(w, "transpose")["error"], expected, rtol=1e-12, atol=0)
    w.study = "scale_choice"
    assert w._views["scale_choice"].visible and len(columns(w, "curves")["magnitude"]) == 41
    w.study = "hadamard"
    h = columns(w, "hadamard")
    from lowprec.simulations.studies.hadamard import hadamard_study

    st = hadamard_study((32, 64), 100.0, 0)
    assert h["scheme"] == ["NVFP4", "NVFP4 + RHT", "MXFP4", "MXFP4 + RHT"]
    assert h["error"] == [st.nvfp4_rms_rel_error_before, st.nvfp4_rms_rel_error_after, st.mxfp4_rms_rel_error_before,
                          st.mxfp4_rms_rel_error_after]
    w.study = "outlier"
    assert w._views["outlier"].visible and len(columns(w, "cells")["x"]) == 32 * 64


def test_grouping_caption_describes_the_study_shown_with_its_numbers() -> None:
    """The caption under the figures speaks of the study on screen: the heatmaps and outlined cell
    for `outlier` only; the transpose errors it quotes are the ml_dtypes computation's (3 digits);
    the Hadamard numbers are `hadamard_study`'s; the fixed-scale band it quotes is where the drawn
    E4M3FN curve is under 10 %."""
    w = ScaleGrouping()
    assert "outlined cell is the outlier" in w._caption.object
    expected = _transpose_errors_by_ml_dtypes()
    w.study = "transpose"
    text = w._caption.object
    assert "outlined cell" not in text and "rounds twice" in text
    assert (f"{expected[0]:.3g} for the row view, {expected[1]:.3g} for the columns from the source, "
            f"{expected[2]:.3g} for the columns re-quantized") in text
    w.study = "hadamard"
    from lowprec.simulations.studies.hadamard import hadamard_study

    st = hadamard_study((32, 64), 100.0, 0)
    text = w._caption.object
    assert "Hadamard" in text and "outlined cell" not in text
    assert (f"from {st.nvfp4_rms_rel_error_before:.3g} to {st.nvfp4_rms_rel_error_after:.3g} in NVFP4 and "
            f"from {st.mxfp4_rms_rel_error_before:.3g} to {st.mxfp4_rms_rel_error_after:.3g} in MXFP4") in text
    w.study = "scale_choice"
    curves = columns(w, "curves")
    sigma = np.array(curves["magnitude"])
    ok = sigma[np.array(curves["E4M3FN_fixed"]) < 0.1]
    assert 0 < ok.size < sigma.size  # a band, not everywhere
    assert f"E4M3FN from σ = {ok.min():g} to {ok.max():g}" in w._caption.object


def test_grouping_builds_a_studys_figures_when_it_is_first_shown_styled_as_its_page() -> None:
    """Only the shown study's figures exist (and reach the page); another study's are built when
    it is first shown, drawing its sources, and a widget placed on a page gets the page's styling
    for them (`restyle` = `layout.finish`: the site's Bokeh look and a full-width pane)."""
    from bokeh.document import Document

    from lowprec.app import layout, pages
    from lowprec.app.theme import BOKEH_ROLES

    plain = ScaleGrouping()
    assert list(plain._figures) == list(plain._views) == ["outlier"] and plain.restyle is None
    w, holder = pages.built_view("ScaleGrouping", {})
    assert w.restyle is layout.finish
    w.study = "hadamard"
    assert w.error == "" and list(w._figures) == ["outlier", "hadamard"]
    fig = w._figures["hadamard"]
    assert w._views["hadamard"].visible and fig in [getattr(o, "object", None) for o in w._views["hadamard"].objects]
    shown = {id(m) for m in holder.get_root(Document()).references()}
    assert id(w.sources["hadamard"]) in shown and id(fig) in shown
    assert fig.border_fill_color == BOKEH_ROLES["border_fill"][0]  # the site's look (style_bokeh)
    assert all(o.sizing_mode == "stretch_width" for o in w._views["hadamard"].objects)
    w.study = "outlier"
    w.study = "hadamard"  # built once
    assert w._figures["hadamard"] is fig


def test_grouping_bad_value_keeps_view() -> None:
    w = ScaleGrouping()
    before = columns(w, "cells")
    w.granularities = "tensor,block7"
    assert w.error.startswith("Invalid") and "granularities: block size 7 does not divide" in w.error
    assert columns(w, "cells") == before
    w.granularities = "tensor,row"
    assert w.error == "" and w._view.options == ["tensor", "row"]


# ------------------------------------------------------------------------------------------------
# BlockFormats
# ------------------------------------------------------------------------------------------------


def block_input(seed: int = 0, outlier: float = 0.0, row: int = 0, distribution: str = "student_t") -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = (rng.standard_t(3, size=(32, 128)) if distribution == "student_t" else rng.standard_normal((32, 128)))
    x = x.astype(np.float32)
    if outlier:
        x[row, 5] = outlier
    return x


MX_DTYPES = {"MXFP8_E4M3": ("E4M3FN", ml_dtypes.float8_e4m3fn, 8, 448.0),
             "MXFP8_E5M2": ("E5M2", ml_dtypes.float8_e5m2, 15, 57344.0),
             "MXFP6_E2M3": ("E2M3", ml_dtypes.float6_e2m3fn, 2, 7.5),
             "MXFP6_E3M2": ("E3M2", ml_dtypes.float6_e3m2fn, 4, 28.0),
             "MXFP4": ("E2M1", ml_dtypes.float4_e2m1fn, 2, 6.0)}


@pytest.mark.parametrize("recipe", list(MX_DTYPES))
@pytest.mark.parametrize("rule", ["floor", "rceil"])
def test_mx_block_against_ml_dtypes(recipe: str, rule: str) -> None:
    w = BlockFormats(recipe=recipe, scale_rule=rule, outlier=30.0, row=2)
    _, dtype, emax, fmax = MX_DTYPES[recipe]
    x = block_input(outlier=30.0, row=2)
    block = x[2, :32].astype(np.float64)
    amax = np.abs(block).max()
    if rule == "floor":  # OCP: X = floor(log2 amax) − emax_elem
        x_exp = math.floor(math.log2(amax)) - emax
    else:  # amax / max_elem rounded up to a power of two
        x_exp = math.ceil(math.log2(amax / fmax))
    cols = columns(w, "block")
    assert cols["scale_text"] == [power_of_two_text(2.0**x_exp)] * 32
    assert f"2^{x_exp}" in w.summary
    # dividing by 2^X is exact; the OCP conversion saturates beyond ±max (ml_dtypes would give NaN/Inf)
    scaled = np.clip(block / 2.0**x_exp, -fmax, fmax)
    assert [int(c, 16) for c in cols["code"]] == u8(scaled, dtype)
    decoded = scaled.astype(np.float32).astype(dtype).astype(np.float64) * 2.0**x_exp
    assert cols["decoded"] == decoded.tolist()


def test_worked_fact_957() -> None:
    # an E4M3 block with amax 957: floor gives 2^1 and 957 decodes as 896; rceil gives 2^2 and 960
    w = BlockFormats(outlier=957.0)
    assert columns(w, "block")["decoded"][5] == 896.0
    w.scale_rule = "rceil"
    assert columns(w, "block")["decoded"][5] == 960.0


def test_nvfp4_block_against_formula() -> None:
    w = BlockFormats(recipe="NVFP4", row=1)
    x = block_input(row=1)
    tensor_scale = float(np.float32(np.abs(x).max() / (448.0 * 6.0)))
    block = x[1, :32].astype(np.float64).reshape(2, 16)
    block_scale = (np.abs(block).max(axis=1) / 6.0 / tensor_scale).astype(ml_dtypes.float8_e4m3fn).astype(np.float64)
    scaled = block / (block_scale * tensor_scale)[:, None]
    codes = scaled.reshape(-1).astype(ml_dtypes.float4_e2m1fn).view(np.uint8)
    cols = columns(w, "block")
    assert [int(c, 16) for c in cols["code"]] == [int(c) for c in codes]
    decoded = codes.view(ml_dtypes.float4_e2m1fn).astype(np.float64).reshape(2, 16) * (block_scale * tensor_scale)[:, None]
    assert np.allclose(cols["decoded"], decoded.reshape(-1), rtol=1e-7, atol=0)
    assert "the scale rule does not apply" in w.summary


def rms_rel_per_block(x: np.ndarray, x_hat: np.ndarray) -> np.ndarray:
    xb, hb = x.astype(np.float64).reshape(-1, 32), x_hat.astype(np.float64).reshape(-1, 32)
    return np.sqrt(((hb - xb) ** 2).sum(axis=1) / (xb**2).sum(axis=1))


@pytest.mark.parametrize("param_name, value", [("recipe", "MXFP4"), ("scale_rule", "ceil"), ("distribution", "normal"),
                                               ("outlier", 200.0), ("seed", 4), ("row", 9)])
def test_block_errors_follow_simulation(param_name: str, value: Any) -> None:
    w = BlockFormats()
    default = {name: columns(w, name) for name in w.sources}
    setattr(w, param_name, value)
    args = {"recipe": "MXFP8_E4M3", "scale_rule": "floor", "distribution": "normal" if value == "normal" else "student_t",
            "outlier": 0.0, "seed": 0, "row": 0, param_name: value}
    x = block_input(args["seed"], args["outlier"], args["row"], args["distribution"])
    elem = MX_DTYPES[args["recipe"]][0]
    q = blocks.quantize_mx(x, elem, 32, args["scale_rule"])
    pt = scaling.quantize_scaled(x, elem, "tensor")
    errs = columns(w, "errors")
    assert np.allclose(errs["recipe"], rms_rel_per_block(x, q.dequantize()), rtol=1e-12, atol=0)
    # independently for block 0: the OCP exponent from Fraction arithmetic, elements cast by ml_dtypes
    from tests.test_block_gaps import ELEM, oracle_exponent

    dt, fmax_e = ELEM[elem][0], ELEM[elem][1]
    b0 = x.reshape(-1, 32)[0].astype(np.float64)
    scale = 2.0 ** oracle_exponent(float(np.abs(b0).max()), elem, args["scale_rule"])
    b0_hat = np.clip(b0 / scale, -fmax_e, fmax_e).astype(np.float32).astype(dt).astype(np.float64) * scale
    assert errs["recipe"][0] == pytest.approx(float(np.linalg.norm(b0_hat - b0) / np.linalg.norm(b0)), rel=1e-12)
    assert np.allclose(errs["per_tensor"], rms_rel_per_block(x, pt.dequantize()), rtol=1e-12, atol=0)
    assert columns(w, "shown")["block"] == [args["row"] * 4]
    assert {name: columns(w, name) for name in w.sources} != default, "the plot did not change"


def test_hadamard_input_and_error_in_original_basis() -> None:
    w = BlockFormats(recipe="MXFP4", hadamard=True, outlier=100.0)
    x = block_input(outlier=100.0)
    s16 = np.array([[1.0]])
    while s16.shape[0] < 16:
        s16 = np.kron(np.array([[1.0, 1.0], [1.0, -1.0]]), s16)
    signs = np.random.default_rng(0).choice([-1.0, 1.0], size=16)
    h = signs[:, None] * s16 / 4.0  # the signs on the inputs: x · H = (x ⊙ d) · S / 4
    assert np.allclose(h @ h.T, np.eye(16), atol=1e-15)  # orthogonal
    x_h = (x.astype(np.float64).reshape(-1, 16) @ h).reshape(x.shape).astype(np.float32)
    assert np.array_equal(np.asarray(columns(w, "block")["input"]), x_h[0, :32].astype(np.float64))
    # the outlier is spread: the block's amax falls to about 100 / 4
    assert max(abs(v) for v in columns(w, "block")["input"]) < 40
    q = blocks.quantize_mx(x_h, "E2M1", 32, "floor")
    back = (q.dequantize().astype(np.float64).reshape(-1, 16) @ h.T).reshape(x.shape)
    assert np.allclose(columns(w, "errors")["recipe"], rms_rel_per_block(x, back), rtol=1e-9, atol=0)


def test_block_lattice_is_the_element_grid_times_the_scale() -> None:
    # E2M1 magnitudes 0, 0.5, 1, 1.5, 2, 3, 4, 6; amax 30: floor gives X = floor(log2 30) − 2 = 2, so
    # the block decodes onto multiples of those by 4 and 30 saturates to 6 · 4 = 24
    w = BlockFormats(recipe="MXFP4", outlier=30.0)
    e2m1 = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]
    expected = sorted({s * 4.0 * v for v in e2m1 for s in (1.0, -1.0)})
    assert sorted(columns(w, "grid")["value"]) == expected
    assert columns(w, "block")["decoded"][5] == 24.0


def mx_floor_oracle(x: np.ndarray, axis: int, dtype: Any, emax: int, fmax: float) -> tuple[np.ndarray, np.ndarray]:
    """OCP MX with the floor rule written out with ml_dtypes: blocks of 32 along `axis`, shared
    scale 2^(floor(log2 amax) − emax), elements cast (saturating at ±fmax) to `dtype`.
    Returns (uint8 codes, decoded float64), both in x's layout."""
    moved = np.moveaxis(x.astype(np.float64), axis, -1)
    b = moved.reshape(-1, 32)
    _, e = np.frexp(np.abs(b).max(axis=1))  # amax = m · 2^e with m in [0.5, 1): floor(log2 amax) = e − 1
    scale = np.ldexp(1.0, (e - 1 - emax).astype(np.int64))[:, None]
    scaled = np.clip(b / scale, -fmax, fmax).astype(np.float32)  # exact: a power-of-two division
    codes = scaled.astype(dtype)
    decoded = codes.astype(np.float64) * scale
    back = lambda a: np.moveaxis(a.reshape(moved.shape), -1, axis)  # noqa: E731
    return back(codes.view(np.uint8)), back(decoded)


def rms_rel(x: np.ndarray, x_hat: np.ndarray) -> float:
    x64 = x.astype(np.float64)
    return float(np.sqrt(((x_hat.astype(np.float64) - x64) ** 2).sum() / (x64**2).sum()))


@pytest.mark.parametrize("recipe", ["MXFP8_E4M3", "MXFP4"])
def test_transposed_view_against_ml_dtypes(recipe: str) -> None:
    """Row view, column view from the source and column view from the row-rounded data, each an
    independent ml_dtypes computation; the re-quantized column view of MXFP4 is measurably worse."""
    w = BlockFormats(recipe=recipe, scale_rule="floor", seed=3, transposed_view=True)
    _, dtype, emax, fmax = MX_DTYPES[recipe]
    x = block_input(seed=3)
    _, rows = mx_floor_oracle(x, 1, dtype, emax, fmax)
    src_codes, cols_src = mx_floor_oracle(x, 0, dtype, emax, fmax)
    two_codes, cols_two = mx_floor_oracle(rows.astype(np.float32), 0, dtype, emax, fmax)
    expected = [rms_rel(x, rows), rms_rel(x, cols_src), rms_rel(x, cols_two)]
    bars = columns(w, "transpose")
    assert bars["view"] == ["row blocks", "columns from source", "columns re-quantized"]
    assert np.allclose(bars["error"], expected, rtol=1e-12, atol=0)
    assert w.result.selected.transposed.codes_differ == float(np.mean(src_codes != two_codes))
    assert f"{expected[1]:.4g}" in w.summary and f"{expected[2]:.4g}" in w.summary
    if recipe == "MXFP4":
        assert expected[2] > 1.05 * expected[1]


def test_transposed_view_nvfp4_follows_direct_calls() -> None:
    w = BlockFormats(recipe="NVFP4", transposed_view=True, distribution="normal", seed=2)
    x = block_input(seed=2, distribution="normal")
    rows = blocks.quantize_nvfp4(x, axis=-1)
    cols_src = blocks.quantize_nvfp4(x, axis=0)
    cols_two = blocks.quantize_nvfp4(rows.dequantize(), axis=0)
    expected = [rms_rel(x, q.dequantize()) for q in (rows, cols_src, cols_two)]
    assert np.allclose(columns(w, "transpose")["error"], expected, rtol=1e-12, atol=0)
    t = w.result.selected.transposed
    assert t.extra == pytest.approx(expected[2] - expected[1], rel=1e-12, abs=0)
    assert t.codes_differ == float(np.mean(cols_src.codes.view(np.uint8) != cols_two.codes.view(np.uint8)))


def test_transposed_view_toggle_changes_the_plot() -> None:
    w = BlockFormats(recipe="MXFP4")
    assert columns(w, "transpose") == {"view": [], "error": [], "color": []}
    assert not w._transpose_fig.visible and "Transposed view" not in w.summary
    before = {name: columns(w, name) for name in w.sources}
    w.transposed_view = True
    assert len(columns(w, "transpose")["error"]) == 3 and w._transpose_fig.visible
    assert "Transposed view" in w.summary
    after = {name: columns(w, name) for name in w.sources}
    assert after != before
    assert {k: v for k, v in after.items() if k != "transpose"} == {k: v for k, v in before.items() if k != "transpose"}
    w.recipe = "NVFP4"  # the bars follow the recipe
    assert columns(w, "transpose")["error"] != after["transpose"]["error"]
    w.transposed_view = False
    assert columns(w, "transpose")["error"] == [] and not w._transpose_fig.visible


def test_recompute_scale_trace_offsets_layers() -> None:
    """Layers with equal scales stay visible: each layer's markers sit at step + a fixed offset,
    distinct per layer, within ±0.25 step."""
    from lowprec.app.plots.recompute import recompute_sources

    r = recompute.run_recompute("fixed", layers=3, width=8, steps=2, batch=4)
    sc = recompute_sources(r)["scales"]
    offsets = {(layer, round(x - step, 12)) for x, step, layer in zip(sc["x"], sc["step"], sc["layer"])}
    assert sorted(offsets) == [(0, -0.25), (1, 0.0), (2, 0.25)]


@pytest.mark.parametrize("granularity", ["tensor", "row", "block"])
def test_grouping_colour_bars_span_the_simulated_scales(granularity: str) -> None:
    """The colour bar of the scale map spans log2 of the simulation's decode scales (min..max;
    a single scale: the bar starts at it, where the first palette colour is), and follows a
    parameter change."""
    from bokeh.models.annotations import ColorBar

    from lowprec.app.widgets import ScaleGrouping

    w = ScaleGrouping(format="E2M1", granularities="tensor")
    w.granularities = GRANULARITY_LABELS[granularity]
    entry = w.shown_entry()
    assert entry is not None
    dec = np.asarray(entry.scaled.decode_scales, dtype=np.float64).reshape(-1)
    lo, hi = float(np.log2(dec.min())), float(np.log2(dec.max()))
    if lo == hi:
        hi = lo + 1.0
    bars = {b.name: b.color_mapper for b in w._heatmaps.select({"type": ColorBar})}
    assert set(bars) == {"scale", "error"}
    assert (bars["scale"].low, bars["scale"].high) == pytest.approx((lo, hi), rel=0, abs=1e-12)
