"""Delayed scaling against Transformer Engine's rule written out here: the scale used at step t is
float32(F / max(recorded amaxes t-H .. t-1)) / 2^margin (or the newest one), kept when that amax is
0 or not finite; casts against ml_dtypes on the float32 product x · scale, clamped (saturating)."""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import ml_dtypes
import numpy as np
import pytest

from lowprec import formats, strictjson
from lowprec.config import ConfigError
from lowprec.simulations.scaling import delayed as D
from lowprec.simulations.studies.spike import SpikeConfig, simulate_stream
from lowprec.simulations.scaling.streams import TensorStream

F = 448.0


def te_scales(amaxes: list[float], history: int, algo: str, margin: int = 0) -> list[float]:
    """Encode scale used at each step, by the recipe's formula (initial scale 1.0)."""
    used, scale = [], 1.0
    for t, _ in enumerate(amaxes):
        used.append(scale)
        window = amaxes[max(0, t + 1 - history):t + 1] if algo == "max" else [amaxes[t]]
        a = max(window)
        if a > 0 and np.isfinite(a):
            scale = float(np.float32(np.float32(F) / np.float32(a)) / np.float32(2.0**margin))
    return used


@pytest.mark.parametrize("history", [1, 4, 16])
@pytest.mark.parametrize("algo", ["max", "most_recent"])
def test_spike_reduces_scale_for_history_steps(history: int, algo: str) -> None:
    amaxes = [2.0] * 30 + [100.0] + [2.0] * 40
    s = D.DelayedScaler("E4M3FN", history, algo)
    used = []
    for a in amaxes:
        used.append(s.encode_scale)
        s.update(a)
    assert used == te_scales(amaxes, history, algo)
    steady = float(np.float32(F) / np.float32(2.0))
    reduced = [t for t, u in enumerate(used) if t > 0 and u < steady]
    expected = history if algo == "max" else 1
    assert reduced == list(range(31, 31 + expected))  # the spike at step 30 is first used at 31


def test_margin_halves_the_scale() -> None:
    for margin in range(4):
        s = D.DelayedScaler("E4M3FN", 4, "max", margin)
        s.update(3.0)
        assert s.encode_scale == float(np.float32(F) / np.float32(3.0)) / 2**margin


def test_zero_and_nonfinite_amax_keep_previous_scale() -> None:
    s = D.DelayedScaler("E4M3FN", 1, "most_recent")
    assert s.encode_scale == 1.0  # TE's initial scale
    s.update(7.0)
    kept = s.encode_scale
    for bad in (0.0, float("inf"), float("nan")):
        s.update(bad)
        assert s.encode_scale == kept
    with pytest.raises(ValueError, match="negative"):
        s.update(-1.0)


def test_cast_against_ml_dtypes() -> None:
    x = (np.random.default_rng(0).standard_normal(2048) * 3).astype(np.float32)
    s = D.DelayedScaler("E4M3FN", 4)
    s.update(1.0)  # scale 448: most of x clips
    out = s.quantize(x)
    prod = np.clip(x * np.float32(out.encode_scale), -F, F)  # float32 product, then saturate
    np.testing.assert_array_equal(out.codes, prod.astype(ml_dtypes.float8_e4m3fn).view(np.uint8))
    assert out.amax == float(np.abs(x).max())
    c = D.CurrentScaler("E5M2")
    oc = c.quantize(x)
    assert oc.encode_scale == float(np.float32(57344.0) / np.float32(np.abs(x).max()))
    np.testing.assert_array_equal(
        oc.codes, (x * np.float32(oc.encode_scale)).astype(ml_dtypes.float8_e5m2).view(np.uint8))


def test_simulate_stream_metrics() -> None:
    cfg = SpikeConfig(format="E4M3FN", history=8, algo="max", margin=0, steps=40, spike_step=20,
                      spike=50.0, seed=3, size=1024)
    r = simulate_stream(cfg)
    stream = cfg.tensor_stream()
    amaxes = [float(np.abs(stream.tensor(t)).max()) for t in range(40)]
    assert r.amax.tolist() == amaxes
    used = te_scales(amaxes, 8, "max")
    assert r.delayed["encode_scale"].tolist() == used
    for t in (0, 19, 20, 21, 28, 29):
        x = stream.tensor(t)
        s = np.float32(used[t])
        scaled = x * s
        assert r.delayed["clipped_fraction"][t] == np.count_nonzero(np.abs(scaled) > 464) / x.size
        xh = np.clip(scaled, -F, F).astype(ml_dtypes.float8_e4m3fn).astype(np.float64) / float(s)
        want = np.sqrt(np.sum((xh - x) ** 2) / np.sum(x.astype(np.float64) ** 2))
        assert r.delayed["rms_rel_error"][t] == pytest.approx(want, rel=1e-12)
    assert r.delayed["clipped_fraction"][20] > 0.5  # the spike step clips under delayed scaling
    assert r.current["clipped_fraction"][20] == 0.0  # current scaling sees the spike
    reduced = np.flatnonzero(r.delayed["amax_used"] > 2 * r.amax).tolist()
    # step 0 uses TE's initial scale 1.0 (sized for amax 448); then history 8 → steps 21..28
    assert reduced == [0] + list(range(21, 29))


def test_stream_result_serialises_and_is_seeded() -> None:
    a = simulate_stream(steps=12, spike_step=5, size=256, seed=1)
    b = simulate_stream(steps=12, spike_step=5, size=256, seed=1)
    assert a.to_dict() == b.to_dict()
    d = strictjson.loads(strictjson.dumps(a.to_dict()))
    assert d["parameters"]["history"] == 16 and len(d["steps"]) == 12
    assert d["parameters"]["policy"]["overflow"] == "saturate"
    assert isinstance(d["steps"][3]["amax"], float)
    for key in ("encode_scale", "clipped_fraction", "rms_rel_error", "flushed_fraction", "amax_used"):
        assert isinstance(d["steps"][3]["delayed"][key], float)
        assert isinstance(d["steps"][3]["current"][key], float)
    assert a.csv_text().splitlines()[0].startswith("step,amax,delayed_encode_scale")


def test_streams() -> None:
    drift = SpikeConfig(stream="drift", drift=0.1).tensor_stream()
    assert drift.sigma_at(10) == pytest.approx(np.exp(1.0))
    bursts = SpikeConfig(stream="bursts", burst_period=10, burst_length=2,
                         burst_magnitude=8.0).tensor_stream()
    assert [bursts.sigma_at(t) for t in range(12)] == [8.0, 8.0] + [1.0] * 8 + [8.0, 8.0]
    el = SpikeConfig(size=512, spike_step=3, spike=10.0, spike_kind="element").tensor_stream()
    x3 = el.tensor(3)
    assert np.count_nonzero(np.abs(x3) > 5) == 1


@pytest.mark.parametrize("kwargs, match", [
    ({"history": -1}, r"^history: must be ≥ 1, got -1$"),
    ({"history": 0}, r"^history: must be ≥ 1, got 0$"),
    ({"history": 1.5}, r"^history: must be an integer, got 1.5$"),
    ({"algo": "mean"}, r"^algo: must be one of max, most_recent; got 'mean'$"),
    ({"margin": -2}, r"^margin: must be ≥ 0, got -2$"),
    ({"spike_step": 500}, r"^spike_step: 500 is outside the stream of 10 steps; allowed 0..9$"),
    ({"steps": 0}, r"^steps: must be ≥ 2, got 0$"),
    ({"spike": -3.0}, r"^spike: must be ≥ 1.0, got -3.0$"),
    ({"format": "E9M9"}, r"^format: must be one of E4M3FN, E5M2, .*; got 'E9M9'$"),
    ({"format": "E8M0"}, r"^format: must be one of .*; got 'E8M0'$"),  # unsigned: not a choice
    ({"fmt": "E4M3FN"}, r"^fmt: unknown parameter; allowed: format, history, "),
    ({"stream": "drift", "drift": 0.1, "steps": 2000, "spike_step": 0}, r"^drift: \|drift\| × \(steps − 1\) must be ≤ 80"),
])
def test_bad_input(kwargs: dict, match: str) -> None:
    args: dict[str, Any] = {"steps": 10, "spike_step": 5, "size": 64}
    args.update(kwargs)
    with pytest.raises(ConfigError, match=match):
        simulate_stream(**args)


def test_unsigned_scaler_is_refused() -> None:
    with pytest.raises(ValueError, match="E8M0 is unsigned"):
        D.DelayedScaler("E8M0")


@pytest.mark.parametrize("fmt", SpikeConfig.knobs()[0].choices)
def test_every_format_choice_runs(fmt: str) -> None:
    r = simulate_stream(format=fmt, steps=6, spike_step=3, size=64)
    assert r.delayed["clipped_fraction"][3] > 0 and r.current["clipped_fraction"].max() == 0.0


@pytest.mark.parametrize("kw", [
    {},
    dict(format="E5M2", algo="most_recent", margin=2, stream="bursts"),
    dict(format="E2M1", stream="drift", steps=300, size=5000),
    dict(stream="steady", size=100, steps=3000),  # several batches
])
def test_batched_stream_equals_stepping_the_scalers(kw: dict) -> None:
    """simulate_stream batches steps; stepping DelayedScaler/CurrentScaler.quantize one tensor at a
    time and calling cast_metrics must give the same bits for every metric."""
    import lowprec.simulations.scaling.delayed as D

    args: dict[str, Any] = dict(format="E4M3FN", history=16, algo="max", margin=0, steps=200, spike_step=100,
                                spike=50.0, seed=0, stream="spike", size=4096)
    args.update(kw)
    r = simulate_stream(**args)
    f = D.formats.get_format(args["format"])
    src = TensorStream(args["stream"], args["size"], 1.0, args["spike_step"], args["spike"], "tensor", 0.01,
                         50, 5, 10.0, args["seed"])
    d = D.DelayedScaler(f, args["history"], args["algo"], args["margin"])
    c = D.CurrentScaler(f, args["margin"])
    for t in range(args["steps"]):
        x = src.tensor(t)
        od, oc = d.quantize(x), c.quantize(x)
        assert r.amax[t] == od.amax
        for rows, out in ((r.delayed, od), (r.current, oc)):
            for k, v in D.cast_metrics(x, out, f, args["margin"]).items():
                assert np.float64(rows[k][t]).view(np.uint64) == np.float64(v).view(np.uint64), (t, k)


# ------------------------------------------------------------------------------------------------
# one delayed-scaling model (issue 27.2) against TE's published update, written out exactly
# ------------------------------------------------------------------------------------------------

F32_MAX = float(np.finfo(np.float32).max)


def round_f32(q: Fraction) -> float:
    """A positive rational rounded to binary32, nearest-even, subnormals and overflow included
    (∞ beyond the largest finite value's rounding bin): exact arithmetic, no float division."""
    if q == 0:
        return 0.0
    e = q.numerator.bit_length() - q.denominator.bit_length()  # 2^e ≤ q < 2^(e+2)
    if Fraction(2) ** e > q:
        e -= 1
    quantum = Fraction(2) ** (max(e, -126) - 23)
    n, rest = divmod(q, quantum)
    n = int(n) + (1 if rest > quantum / 2 or (rest == quantum / 2 and int(n) % 2) else 0)
    value = n * quantum
    return math.inf if value >= Fraction(2) ** 128 else float(value)


def te_update(amax: float, fmt_max: float, margin: int, previous: float) -> float:
    """Transformer Engine's delayed-scaling update (transformer_engine/common/recipe/delayed_scaling.cu):
    scaled_max = F · 2^-margin; scale = scaled_max / amax in float32 when amax is finite and > 0,
    else the previous scale; an infinite scale becomes float32's max. (A quotient that rounds to 0
    also keeps the previous scale: lowprec's documented rule, where TE would store 0.)"""
    if not (math.isfinite(amax) and amax > 0):
        return previous
    s = round_f32(Fraction(fmt_max) / 2**margin / Fraction(amax))
    if s == math.inf:
        return F32_MAX
    return previous if s == 0 else s


def _amaxes(rng: np.random.Generator, n: int) -> list[float]:
    """float32 amaxes over the whole positive range (random bit patterns: subnormal to max) and edges."""
    bits = rng.integers(1, 0x7F800000, size=n, dtype=np.uint32)
    edges = [0.0, float("inf"), float("nan"), 1.0, 2.0**-149, 2.0**-126, F32_MAX, 448.0, 3.0]
    return edges + [float(b) for b in bits.view(np.float32)]


@pytest.mark.parametrize("fmt", ["E4M3FN", "E5M2", "E2M1", "BF16", "FP16", "INT8"])
def test_scale_update_is_te_formula_over_the_whole_float32_range(fmt: str) -> None:
    """`scale_from_amax` (current scaling and the history's update) equals TE's formula computed
    exactly, for every margin's extremes and amaxes from the smallest subnormal to float32's max:
    clamped to float32's max where F / amax overflows, one rounding where the scale is subnormal."""
    rng = np.random.default_rng(sum(map(ord, fmt)))
    big_f = formats.get_format(fmt).max
    for margin in (0, 1, 7, 16, 40, 64):
        for a in _amaxes(rng, 300):
            got = D.scale_from_amax(a, big_f, margin, 0.5)
            want = te_update(a, big_f, margin, 0.5)
            assert np.float64(got).view(np.uint64) == np.float64(want).view(np.uint64), (fmt, margin, a)


def test_a_tiny_amax_is_clamped_to_float32_max_not_infinite() -> None:
    """F / amax beyond float32 (TE: 'the amax is too tiny that the scale becomes infinite in FP32'):
    the scale is float32's largest value, in the current scaler, the delayed scaler and the
    recompute state alike, and the decode scale stays finite and non-zero."""
    from lowprec.simulations.recompute.state import DelayedScaleState, HistoryEntry

    tiny = 2.0**-149  # the smallest float32 subnormal: 448 / tiny ≈ 3e47
    assert D.scale_from_amax(tiny, F, 0, 1.0) == F32_MAX
    assert D.CurrentScaler("E4M3FN").quantize(np.array([tiny, -tiny], np.float32)).encode_scale == F32_MAX
    s = D.DelayedScaler("E4M3FN", 4)
    assert s.update(tiny) == F32_MAX
    r = DelayedScaleState("layer0", F, 4)
    assert r.record(HistoryEntry(tiny, 0, 0)) == F32_MAX and r.decode_scale > 0
    # BF16's max over an amax below 1: beyond float32 unless the margin brings it back in range
    bf = formats.BF16.max
    assert D.scale_from_amax(0.75, bf, 0, 1.0) == F32_MAX
    assert D.scale_from_amax(0.75, bf, 1, 1.0) == round_f32(Fraction(bf) / 2 / Fraction(0.75))


def test_spike_scaler_and_recompute_state_are_one_model() -> None:
    """The spike simulation's scaler and the recompute quantizer's state are the same model
    (`DelayedScaling`): fed the same amaxes (zeros, Inf, NaN, a spike), they hold the same scale
    at every step, for both reductions, equal to TE's update over the window written out here
    (a NaN in a `max` window keeps the previous scale until it leaves the window)."""
    from lowprec.simulations.recompute.state import DelayedScaleState, HistoryEntry

    amaxes = [2.0, 3.0, 0.0, 100.0, 1.5, float("nan"), 2.5, float("inf"), 1.0, 1.25, 0.5, 4.0, 3.0]
    for algo in ("max", "most_recent"):
        for margin in (0, 3):
            spike_scaler = D.DelayedScaler("E4M3FN", 3, algo, margin)
            state = DelayedScaleState("layer1", F, 3, algo, margin)
            assert isinstance(spike_scaler, D.DelayedScaling) and isinstance(state, D.DelayedScaling)
            scale = 1.0
            for t, a in enumerate(amaxes):
                window = amaxes[max(0, t - 2):t + 1]
                chosen = window[-1] if algo == "most_recent" else (
                    math.nan if any(math.isnan(v) for v in window) else max(window))
                scale = te_update(chosen, F, margin, scale)
                assert spike_scaler.update(a) == scale, (algo, margin, t)
                assert state.record(HistoryEntry(a, 1, t)) == scale, (algo, margin, t)
            assert state.scale_source_layer == 1


def test_the_recompute_state_names_the_entry_that_set_its_scale() -> None:
    """Under `max` the scale comes from the first maximal entry of the window, and the state names
    that entry's layer; a kept scale keeps its source."""
    from lowprec.simulations.recompute.state import DelayedScaleState, HistoryEntry

    state = DelayedScaleState("shared", F, 4, "max")
    assert state.scale_source_layer == -1  # the initial scale
    for layer, a in ((0, 4.0), (1, 1.0), (2, 4.0), (3, 2.0)):
        state.record(HistoryEntry(a, layer, 0))
    assert state.scale_source_layer == 0 and state.encode_scale == 112.0
    state.record(HistoryEntry(0.5, 4, 1))  # the window drops layer 0's entry: layer 2's 4.0 is first
    assert state.scale_source_layer == 2 and state.encode_scale == 112.0
    state.record(HistoryEntry(float("nan"), 5, 1))  # NaN in the window: scale and source kept
    assert state.scale_source_layer == 2 and state.encode_scale == 112.0
