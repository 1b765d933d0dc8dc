"""Recompute divergence (simulations/recompute/__init__.py): the seed write-up's checklist as code.

Oracles: ml_dtypes casts for codes, an independent plain-torch training loop (no checkpointing, its
own delayed scaler written here) for the fixed design, torch's non-checkpointed autograd for the
gradients, and bounds derived from the format's epsilon. Float tensors are compared as uint32
bit patterns.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

import ml_dtypes
import numpy as np
import pytest
import torch

from lowprec import formats, strictjson
from lowprec.simulations import recompute as rc

E4M3 = formats.E4M3FN
SAT = formats.CastPolicy(overflow=formats.Overflow.SATURATE)
DEFECTS = ("consume-after-advance", "recompute-mutates", "shared-state", "shared-state-snapshot",
           "stale-centre", "gate-asymmetry")


@pytest.fixture(autouse=True)
def _one_thread() -> Iterator[None]:
    old = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(old)


_CACHE: dict[tuple[Any, ...], rc.RecomputeResult] = {}


def run(variant: str, checkpointing: bool = True, **kw: Any) -> rc.RecomputeResult:
    """Small runs (4 layers, width 32, 8 steps), cached: every test reads, none mutates."""
    params = dict(layers=4, width=32, steps=8, seed=0, batch=8)
    params.update(kw)
    key = (variant, checkpointing, tuple(sorted(params.items())))
    if key not in _CACHE:
        _CACHE[key] = rc.run_recompute(variant, checkpointing=checkpointing,
                                       keep_activations=True, **params)  # type: ignore[arg-type]
    return _CACHE[key]


def bits(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.float32).view(np.uint32)


def e4m3_codes_oracle(x: np.ndarray) -> np.ndarray:
    """ml_dtypes cast with saturation: clip to ±448 first (for finite input and round-to-nearest
    that equals satfinite), then the uint8 view."""
    return np.clip(x, -448.0, 448.0).astype(ml_dtypes.float8_e4m3fn).view(np.uint8)


# ------------------------------------------------------------------------------------------------
# fixed design
# ------------------------------------------------------------------------------------------------


def test_fixed_forward_and_recompute_bitwise_equal_everywhere() -> None:
    r = run("fixed")
    steps, layers = r.recomputed.shape
    assert r.recomputed.all()
    for t in range(steps):
        for i in range(layers):
            f, g = r.activations[(t, i, "forward")], r.activations[(t, i, "recompute")]
            for name in ("input", "dequant", "output"):
                np.testing.assert_array_equal(bits(f[name]), bits(g[name]), err_msg=f"{t},{i},{name}")
    assert r.bitwise_equal.all() and (r.max_abs_diff == 0).all()
    assert (r.forward_hash == r.recompute_hash).all()
    assert r.verdict() == f"bitwise identical in all {steps * layers} activations"


def test_fixed_one_commit_per_layer_per_logical_step() -> None:
    r = run("fixed")
    assert (r.commits == 1).all()
    assert (r.state_commits == r.commits.shape[1]).all()
    hist = r.parameters["history"]
    expected = np.minimum(np.arange(1, r.commits.shape[0] + 1), hist)[:, None]
    assert (r.history_len == expected).all()


def test_fixed_gradients_equal_the_non_checkpointed_run() -> None:
    ck, plain = run("fixed"), run("fixed", checkpointing=False)
    np.testing.assert_array_equal(ck.grad_norm.view(np.uint64), plain.grad_norm.view(np.uint64))
    for a, b in zip(ck.final_weights, plain.final_weights):
        np.testing.assert_array_equal(bits(a), bits(b))


class _STE(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, values: torch.Tensor, s: float) -> torch.Tensor:
        ctx.s = s
        return values.clone()

    @staticmethod
    def backward(ctx: Any, g: torch.Tensor) -> tuple[torch.Tensor, None, None]:
        return g * ctx.s, None, None


def test_fixed_matches_an_independent_reference_loop() -> None:
    """Plain torch, no checkpoint, a delayed scaler written here (TE: scale = F / max(history)),
    ml_dtypes for the E4M3 cast: the losses and final weights are bit-identical."""
    layers, width, steps, batch, hist_len, lr = 4, 32, 8, 8, 16, 0.1
    prob = rc.make_problem(0, layers, width, batch, steps)
    W = [torch.from_numpy(w.copy()).requires_grad_(True) for w in prob.weights]
    B = [torch.from_numpy(b.copy()).requires_grad_(True) for b in prob.biases]
    history: list[list[float]] = [[] for _ in range(layers)]
    losses = []
    for t in range(steps):
        h = torch.from_numpy(prob.inputs[t])
        for i in range(layers):
            x = h.detach().numpy()
            s = np.float32(448.0 / max(history[i][-hist_len:])) if history[i] else np.float32(1.0)
            values = e4m3_codes_oracle(x * s).view(ml_dtypes.float8_e4m3fn).astype(np.float32)
            history[i].append(float(np.max(np.abs(x))))
            xq = _STE.apply(h, torch.from_numpy(values), float(s)) * float(np.float32(1.0 / s))
            h = torch.tanh(torch.nn.functional.linear(xq, W[i], B[i]))
        loss = torch.mean((h - torch.from_numpy(prob.targets[t])) ** 2)
        loss.backward()
        losses.append(float(loss.detach()))
        with torch.no_grad():
            for p in (*W, *B):
                assert p.grad is not None
                p -= lr * p.grad
                p.grad = None
    r = run("fixed")
    np.testing.assert_array_equal(bits(r.loss), bits(np.array(losses)))
    for a, b in zip(r.final_weights, W):
        np.testing.assert_array_equal(bits(a), bits(b.detach().numpy()))


def test_fixed_scale_follows_the_amax_history_formula() -> None:
    r = run("fixed", algo="max", history=3)
    amax = r.amax_forward
    for t in range(1, amax.shape[0]):
        for i in range(amax.shape[1]):
            window = amax[max(0, t - 3):t, i]
            assert r.encode_scale_forward[t, i] == np.float32(448.0 / window.max())
            assert r.consumer_decode_scale_forward[t, i] == np.float32(1.0 / r.encode_scale_forward[t, i])
    assert (r.encode_scale_forward[0] == 1.0).all()


# ------------------------------------------------------------------------------------------------
# the separated API, the call graph, identity
# ------------------------------------------------------------------------------------------------


def test_one_commit_per_logical_step_however_often_the_body_runs() -> None:
    state = rc.DelayedScaleState("layer0", E4M3.max)
    x = np.random.default_rng(1).standard_normal((8, 16)).astype(np.float32)
    for step in range(3):
        snap = rc.begin_logical_quantization(state, step, 0)
        codes = [rc.quantize_with_snapshot(x, snap, E4M3, SAT).codes for _ in range(3)]  # re-entry
        rc.commit_quant_observation(state, rc.observe_for_future_state(x, snap))
        assert all(np.array_equal(c, codes[0]) for c in codes)
        with pytest.raises(rc.DoubleCommitError, match=f"logical step {step}"):
            rc.commit_quant_observation(state, rc.observe_for_future_state(x, snap))
    assert state.commits == 3 and len(state.history) == 3


def test_call_graph_consumer_uses_the_descale_paired_with_the_codes() -> None:
    """quantize → state update → GEMM consumer over steps. Oracle: ml_dtypes decode of the codes
    times the scale the codes were made with (1 at step 0, then 448/amax of the previous input)."""
    rng = np.random.default_rng(2)
    weight = rng.standard_normal((16, 16)).astype(np.float32)
    ph = rc.PhaseInfo()
    for variant in ("fixed", "consume-after-advance"):
        quantizer = rc.make_quantizer(variant, 1, E4M3, SAT)
        prev_amax = None
        mismatched = 0
        for step in range(4):
            ph.step = step
            x = (rng.standard_normal((8, 16)) * (1.0 + step)).astype(np.float32)  # growing amax
            q = quantizer.quantize(x, 0, ph)  # quantize and update state
            cs = quantizer.consumer_scaling(q, 0, ph)
            y = (q.values * np.float32(cs.decode_scale)) @ weight.T  # the GEMM consumer
            s = np.float32(1.0) if prev_amax is None else np.float32(448.0 / prev_amax)
            codes = e4m3_codes_oracle(x * s)
            np.testing.assert_array_equal(q.codes, codes)  # the kernel itself is right
            oracle = (codes.view(ml_dtypes.float8_e4m3fn).astype(np.float32)
                      * np.float32(1.0 / s)) @ weight.T
            prev_amax = max(prev_amax or 0.0, float(np.abs(x).max()))
            if np.array_equal(bits(y), bits(oracle)):
                assert cs.paired
            else:
                mismatched += 1
                assert not cs.paired
        if variant == "fixed":
            assert mismatched == 0
        else:  # the live descale was advanced past the codes' scale at every step (amax grows)
            assert mismatched == 4


def test_consumer_asserts_snapshot_identity() -> None:
    quantizer = rc.make_quantizer("fixed", 2, E4M3, SAT)
    x = np.ones((2, 4), dtype=np.float32)
    q = quantizer.quantize(x, 1, rc.PhaseInfo(step=0))
    with pytest.raises(rc.SnapshotIdentityError, match="layer 0 at step 0"):
        quantizer.consumer_scaling(q, 0, rc.PhaseInfo(step=0))
    with pytest.raises(rc.SnapshotIdentityError, match="step 1"):
        quantizer.consumer_scaling(q, 1, rc.PhaseInfo(step=1))


@pytest.mark.parametrize("variant", DEFECTS)
def test_single_call_of_each_defect_quantizer_is_locally_correct(variant: str) -> None:
    """The seed's main claim, half one: one call on fresh state encodes exactly what ml_dtypes
    encodes with that call's scale, and the consumer reads the pair of the codes."""
    x = np.random.default_rng(3).standard_normal((8, 16)).astype(np.float32) * 3
    quantizer = rc.make_quantizer(variant, 1, E4M3, SAT)
    ph = rc.PhaseInfo(step=0)
    q = quantizer.quantize(x, 0, ph)
    assert q.snapshot.encode_scale == 1.0
    centre = np.zeros(16, np.float32) if variant == "stale-centre" else 0.0
    np.testing.assert_array_equal(q.codes, e4m3_codes_oracle((x - centre) * np.float32(1.0)))
    if variant != "consume-after-advance":
        assert quantizer.consumer_scaling(q, 0, ph).paired


@pytest.mark.parametrize("variant", ["recompute-mutates", "stale-centre", "gate-asymmetry"])
def test_defect_shows_only_when_backward_recomputes(variant: str) -> None:
    """The seed's main claim, half two: without checkpointing the run is healthy; with it, the
    first forward is the same (step 0 loss bit-identical) but the trajectory diverges or fails."""
    plain, ck = run(variant, checkpointing=False), run(variant)
    assert plain.failure is None
    assert (plain.commits == 1).all()
    if variant == "gate-asymmetry":
        assert ck.failure is not None and ck.failure["type"] == "KeyError" and ck.failure["step"] == 0
        return
    assert bits(np.array([ck.loss[0]])) == bits(np.array([plain.loss[0]]))
    assert not all(np.array_equal(bits(a), bits(b)) for a, b in zip(ck.final_weights,
                                                                      plain.final_weights))
    if variant == "recompute-mutates":  # healthy without recompute = the fixed design exactly
        fixed = run("fixed", checkpointing=False)
        for a, b in zip(plain.final_weights, fixed.final_weights):
            np.testing.assert_array_equal(bits(a), bits(b))


# ------------------------------------------------------------------------------------------------
# defect signatures
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("checkpointing", [True, False])
def test_consume_after_advance_unpaired_even_without_checkpointing(checkpointing: bool) -> None:
    r = run("consume-after-advance", checkpointing=checkpointing)
    # step 0, layer 0: codes made with the initial scale 1, the consumer reads amax_0 / 448
    assert not r.paired_forward[0, 0]
    assert r.consumer_decode_scale_forward[0, 0] == np.float32(r.amax_forward[0, 0] / 448.0)
    # in every call, "paired" means exactly: the consumer's descale is 1 / the codes' scale
    paired_by_formula = (r.consumer_decode_scale_forward
                         == np.float32(1.0) / r.encode_scale_forward.astype(np.float32))
    np.testing.assert_array_equal(r.paired_forward, paired_by_formula)
    assert (~r.paired_forward).sum() >= r.paired_forward.shape[0]  # at least one per step
    assert "not paired" in r.verdict()
    if checkpointing:  # recompute repeats the same wrong read: forward/recompute comparison is blind
        assert r.bitwise_equal.all()


def test_recompute_mutates_double_commits_and_small_multiplicative_mismatch() -> None:
    r = run("recompute-mutates")
    assert (r.commits == 2).all()
    assert (r.history_len[:, 0] == np.minimum(2 * np.arange(1, r.commits.shape[0] + 1), 16)).all()
    assert not r.bitwise_equal[0].any()  # step 0: forward used scale 1, recompute F/amax_0
    assert r.verdict().startswith("first mismatch: layer 0, step 0")
    # both encodings are paired, so away from saturation the GEMM-input difference is two
    # roundings of the same value: |f - r| ≤ 2 · 2^-(m+1) · |x| + (smallest subnormal / 2) ·
    # (both decode scales). Elements beyond ±448 in either encoding were clipped instead: the
    # forward's scale came from a history that had not seen this step's amax yet.
    eps_half = 2.0 ** -(E4M3.mantissa_bits + 1)
    sub = E4M3.smallest_subnormal / 2
    clipped_any = 0
    for (t, i, ph), acts in r.activations.items():
        if ph != "recompute":
            continue
        f = r.activations[(t, i, "forward")]["dequant"].astype(np.float64)
        g = acts["dequant"].astype(np.float64)
        x = acts["input"].astype(np.float64)
        s_f, s_r = r.encode_scale_forward[t, i], r.encode_scale_recompute[t, i]
        inside = (np.abs(x) * s_f <= 448) & (np.abs(x) * s_r <= 448)
        clipped_any += int((~inside).sum())
        bound = 2 * eps_half * np.abs(x) + sub * (r.consumer_decode_scale_forward[t, i]
                                                  + r.consumer_decode_scale_recompute[t, i])
        assert (np.abs(f - g)[inside] <= bound[inside] * (1 + 1e-6)).all(), (t, i)
    assert clipped_any > 0  # both kinds of difference occur in this run


def test_shared_state_contaminates_in_reverse_traversal() -> None:
    r = run("shared-state")
    layers = r.recomputed.shape[1]
    assert all(order == list(range(layers - 1, -1, -1)) for order in r.recompute_order)
    # layer 0's input (the data, amax ≈ 4) dominates every tanh layer's (amax < 1) in the shared
    # max-history, so every later layer's scale is layer 0's
    assert r.contaminated("recompute")[:, 1:].all()
    assert not r.bitwise_equal.all()
    # step 0 layer 0: forward used the initial scale, recompute read the shared state after all
    # layers had committed
    assert r.encode_scale_forward[0, 0] == 1.0 and r.encode_scale_recompute[0, 0] != 1.0
    fixed = run("fixed")
    assert not fixed.contaminated("forward").any() and not fixed.contaminated("recompute").any()


def test_shared_state_snapshot_preserves_the_wrong_owner() -> None:
    r = run("shared-state-snapshot")
    assert r.bitwise_equal.all()  # forward and recompute agree ...
    assert r.contaminated("forward")[:, 1:].all()  # ... on a scale that is another layer's
    layers = r.recomputed.shape[1]
    steps = r.recomputed.shape[0]
    foreign = int(r.contaminated("forward").sum())
    assert foreign >= steps * (layers - 1)
    assert r.verdict() == (f"bitwise identical in all {steps * layers} activations; scale sized from "
                           f"another layer's amax in {foreign} of {steps * layers} forward calls")


def test_stale_centre_additive_error_comparable_to_the_data() -> None:
    r = run("stale-centre")
    assert not r.bitwise_equal.any()
    # the error is the centre shift, added to every element: compare with the input's own RMS
    assert (r.dequant_max_abs_diff[0] >= 0.5 * r.input_rms[0]).all()
    # and it is the shift itself, element by element: forward f = Q((x - c0)·s)/s + c0 and
    # recompute g = Q((x - c1)·s)/s + c0 (encoder read the live centre c1, consumer added the
    # snapshot's c0), so g - f - (c0 - c1) is two roundings, each ≤ 2^-(m+1)·|x - c| + half the
    # smallest subnormal step, away from saturation
    eps_half = 2.0 ** -(E4M3.mantissa_bits + 1)
    shifted = within = 0
    for t in range(r.recomputed.shape[0]):
        for i in range(r.recomputed.shape[1]):
            fa, ra = r.activations[(t, i, "forward")], r.activations[(t, i, "recompute")]
            x = fa["input"].astype(np.float64)
            c0, c1 = ra["snapshot_centre"].astype(np.float64), ra["encoder_centre"].astype(np.float64)
            np.testing.assert_array_equal(bits(fa["encoder_centre"]), bits(ra["snapshot_centre"]))
            s = r.encode_scale_forward[t, i]
            inside = (np.abs(x - c0) * s <= 448) & (np.abs(x - c1) * s <= 448)
            rounding = (eps_half * (np.abs(x - c0) + np.abs(x - c1))
                        + E4M3.smallest_subnormal / s) * (1 + 1e-6)
            # plus the float32 rounding of ·decode_scale and +c0 in both results
            rounding = rounding + 2.0 ** -22 * (np.abs(fa["dequant"]) + np.abs(ra["dequant"]))
            err = (ra["dequant"] - fa["dequant"]).astype(np.float64) - (c0 - c1)
            assert (np.abs(err)[inside] <= rounding[inside]).all(), (t, i)
            shifted += int((np.abs(c0 - c1) > rounding)[inside].sum())
            within += int(inside.sum())
    # additive: the shift dominates the rounding on most elements, not on a few clipped ones
    assert shifted > 0.5 * within


def test_gate_asymmetry_restore_finds_nothing_and_is_reported_as_data() -> None:
    r = run("gate-asymmetry")
    assert r.failure is not None
    assert r.failure["type"] == "KeyError" and r.failure["step"] == 0
    assert "no stashed quantization snapshot" in r.failure["message"]
    assert r.verdict().startswith("failed at step 0: KeyError")
    assert r.steps_run == 1 and not r.applied.any()
    strictjson.loads(strictjson.dumps(r.to_dict()))


def test_gate_asymmetry_repaired_stashes_and_restores() -> None:
    r = run("gate-asymmetry-repaired")
    assert r.failure is None and r.bitwise_equal.all() and (r.commits == 1).all()


def test_bf16_control_identical_and_stateless() -> None:
    r = run("bf16-control")
    assert r.bitwise_equal.all() and (r.commits == 0).all() and (r.state_commits == 0).all()
    acts = r.activations[(0, 0, "forward")]
    expected = acts["input"].astype(ml_dtypes.bfloat16).astype(np.float32)
    np.testing.assert_array_equal(bits(acts["dequant"]), bits(expected))


# ------------------------------------------------------------------------------------------------
# concurrency, telemetry, input validation
# ------------------------------------------------------------------------------------------------


def test_two_workers_on_one_state_fail_closed() -> None:
    shared = rc.simulate_concurrent_entry(per_worker_state=False)
    assert shared.outcomes["A"] == "ok"
    assert shared.outcomes["B"].startswith("ConcurrentStateError: delayed-scaling state 'shared'")
    assert "worker 'A'" in shared.outcomes["B"]
    assert shared.commits == {"shared": 1} and shared.failed_closed
    own = rc.simulate_concurrent_entry(per_worker_state=True)
    assert own.outcomes == {"A": "ok", "B": "ok"} and own.commits == {"workerA": 1, "workerB": 1}


def test_overflow_nonfinite_gives_skipped_steps() -> None:
    r = run("shared-state", algo="most_recent", overflow="nonfinite", steps=4)
    # layer 0 (amax ≈ 4) quantized with a scale from layer 3's amax (≤ 1): beyond 448 → NaN
    assert r.nonfinite[1:].all() and r.skipped[1:].all() and not r.applied[1:].any()
    assert (r.attempted == 1).all()


def test_to_dict_is_json_with_the_documented_step_fields() -> None:
    r = run("recompute-mutates")
    d = strictjson.loads(strictjson.dumps(r.to_dict()))
    assert d["parameters"]["variant"] == "recompute-mutates" and d["parameters"]["format"] == "E4M3FN"
    assert len(d["steps"]) == 8
    s0 = d["steps"][0]
    for key in ("forward_recompute_max_abs_diff", "forward_recompute_bitwise_equal",
                "state_commits", "grad_norm", "skipped", "loss", "nonfinite", "attempted",
                "applied"):
        assert key in s0
    assert s0["state_commits"] == 8 and s0["forward_recompute_bitwise_equal"] is False
    assert np.array(d["per_layer"]["max_abs_diff"]).shape == (8, 4)


@pytest.mark.parametrize("kwargs, match", [
    ({"variant": "nope"}, r"^variant: must be one of fixed, consume-after-advance, .*; got 'nope'$"),
    ({"layers": 0}, r"^layers: must be ≥ 1, got 0$"),
    ({"layers": 17}, r"^layers: must be ≤ 16, got 17$"),
    ({"fmt": "E8M0"}, "E8M0"),
    ({"fmt": "INT8"}, "INT8"),
    ({"format": "E8M0"}, r"^format: must be one of E4M3FN, .*; got 'E8M0'$"),
    ({"rounding": "stochastic"}, r"^rounding: must be one of nearest_even, .*; got 'stochastic'$"),
    ({"algo": "mean"}, r"^algo: must be one of max, most_recent; got 'mean'$"),
    ({"fmt": "E2M1", "overflow": "nonfinite"}, r"^overflow: 'nonfinite' needs .*E2M1 has neither"),
    ({"history_len": 4}, r"^history_len: unknown parameter; allowed: variant, layers, width"),
])
def test_bad_input_raises_value_error(kwargs: dict[str, Any], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        rc.run_recompute(**kwargs)


def test_layers_must_be_an_integer() -> None:
    with pytest.raises(TypeError, match=r"^layers: must be an integer, got 2.5$"):
        rc.run_recompute(layers=2.5)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="format must be a name or a FloatFormat"):
        rc.run_recompute(fmt=8)  # type: ignore[arg-type]


# ------------------------------------------------------------------------------------------------
# faces: python -m and lowprec simulate recompute
# ------------------------------------------------------------------------------------------------


def test_module_main_writes_json(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    assert rc.main(["--variant", "fixed", "--layers", "2", "--width", "8", "--steps", "3",
                    "--json", str(out), "--csv", str(tmp_path / "r.csv")]) == 0
    d = strictjson.loads(out.read_text())
    assert d["verdict"] == "bitwise identical in all 6 activations"
    assert len((tmp_path / "r.csv").read_text().splitlines()) == 1 + 3 * 2


def test_cli_simulate_recompute_json_and_html(tmp_path: Path) -> None:
    from lowprec.app.cli import main

    out, html = tmp_path / "r.json", tmp_path / "r.html"
    assert main(["simulate", "recompute", "--variant", "gate-asymmetry", "--layers", "2",
                 "--width", "8", "--steps", "3", "--seed", "0", "--format", "E4M3FN",
                 "--json", str(out), "--html", str(html), "--quiet"]) == 0
    d = strictjson.loads(out.read_text())
    assert d["failure"]["type"] == "KeyError"
    text = html.read_text()
    assert "<script" in text and "cdn.bokeh.org" not in text
    assert main(["simulate", "recompute", "--variant", "fixed", "--format", "E8M0",
                 "--json", str(out), "--quiet"]) == 2


def test_plot_sources_are_column_data() -> None:
    from lowprec.app.plots.recompute import recompute_figure, recompute_sources

    r = run("recompute-mutates")
    src = recompute_sources(r)
    cells = src["cells"]
    assert len(cells["step"]) == 8 * 4 and len(set(map(len, cells.values()))) == 1
    assert len(src["steps"]["step"]) == 8
    import html

    from bokeh.models import Div

    texts = [d.text for d in recompute_figure(r).select({"type": Div})]
    assert any(f"<b>Verdict:</b> {html.escape(r.verdict())}" in t for t in texts)


def test_runs_on_one_torch_thread_and_restores_the_pool() -> None:
    """The simulation pins torch to one intra-op thread while it runs (tiny GEMMs; also makes the
    floats independent of the core count) and gives the caller's setting back, even on error."""
    seen: list[int] = []
    torch.set_num_threads(2)
    r = rc.run_recompute("fixed", layers=2, width=8, steps=2, batch=4,
                         progress=lambda done, total: seen.append(torch.get_num_threads()))
    assert seen == [1, 1] and torch.get_num_threads() == 2
    with pytest.raises(ValueError, match="variant: must be one of fixed.*got 'nope'"):
        rc.run_recompute("nope")
    assert torch.get_num_threads() == 2
    again = rc.run_recompute("fixed", layers=2, width=8, steps=2, batch=4)
    for a, b in zip(r.final_weights, again.final_weights):  # deterministic for a seed
        np.testing.assert_array_equal(bits(a), bits(b))


def test_warm_up_loads_the_lazy_checkpoint_machinery() -> None:
    import subprocess
    import sys

    code = ("import sys, lowprec.simulations.recompute.harness as R; assert 'torch._dynamo' not in sys.modules; "
            "R.warm_up(); assert 'torch._dynamo' in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)
