"""Delayed scaling against Transformer Engine's rule written out here: the scale used at step t is
float32(F / max(recorded amaxes t-H .. t-1)) / 2^margin (or the newest one), kept when that amax is
0 or not finite; casts against ml_dtypes on the float32 product x · scale, clamped (saturating)."""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np
import pytest

from lowprec import strictjson
from lowprec.config import ConfigError
from lowprec.simulations import delayed as D
from lowprec.simulations.spike import SpikeConfig, simulate_stream
from lowprec.simulations.streams import TensorStream

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
    import lowprec.simulations.delayed as D

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
