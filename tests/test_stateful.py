"""The stateful-scaling simulation (`lowprec.simulations.stateful`) against oracles written here.

- Transformer Engine's delayed-scaling rule re-implemented in the test (`te_scale`: float32(float32(F ·
  2^-margin) / amax) from the history's maximum or newest entry, the previous scale kept for a zero
  or non-finite amax, a quotient beyond float32 clamped) and replayed over the amaxes each design
  must insert, recomputed here from the run's per-cast amaxes: every encode scale the run used must
  be the replay's, bit for bit. This checks who owns each state (per role, rank, reduction group),
  when it advances (per microbatch or per optimizer step) and what an idle window records.
- Per design, the defect's signature is shown and the corrected form removes it (history holds the
  last microbatch's amax, not the max; two ranks' scales differ by the shard amax ratio; a read
  paired with the wrong scale; a recompute that is not the forward's; an idle module that rolls);
  state-transition counts (history insertions and scale advances per logical step) are asserted
  against counts derived here from the schedule, as seed 000 asks.
- Closed forms: the clipped share of a spike that only one microbatch or one rank sees (counted here
  on the regenerated input with E4M3FN's edge 464, and its expectation (1/parts)·erfc(464 / (E ·
  spike · √2))), the scale a correct reduction gives, and the layer-0 GEMM output of a mis-read
  pair (recomputed with ml_dtypes casts, and with the tensor-core model `simulations.gemm.matmul`).
"""

from __future__ import annotations

import math
import re
from collections import deque
from typing import Any

import ml_dtypes
import numpy as np
import pytest

from lowprec import strictjson
from lowprec.config import ConfigError
from lowprec.simulations import stateful
from lowprec.simulations.stateful import DESIGNS, SCENARIOS, StatefulConfig, layer_input, simulate_stateful

F32 = np.float32
E4M3_MAX = 448.0
E4M3_EDGE = 464.0  # midpoint of 448 and the next (absent) step 480: a tie that goes to 448 (even mantissa 110)
X0, W0, H1, W1 = 0, 1, 2, 3


def te_scale(history: list[float], algo: str, margin: int, previous: float, fmt_max: float = E4M3_MAX) -> float:
    """Transformer Engine's delayed-scaling update (delayed_scaling.cu), written here."""
    if not history:
        return previous
    a = F32(max(history) if algo == "max" else history[-1])
    if not (np.isfinite(a) and a > 0):
        return previous
    with np.errstate(over="ignore"):
        s = F32(F32(fmt_max) * F32(2.0 ** -margin) / a)
    if np.isinf(s):
        s = np.finfo(F32).max
    return float(s)


def replay(inserts: list[float | None], history: int, algo: str = "max", margin: int = 0) -> list[float]:
    """The encode scale held before each window, for a sequence of windows that insert a value (or
    nothing: None), starting from TE's initial scale 1."""
    hist: deque[float] = deque(maxlen=history)
    scale, out = 1.0, []
    for v in inserts:
        out.append(scale)
        if v is not None:
            hist.append(v)
            scale = te_scale(list(hist), algo, margin, scale)
    return out


def run(variant: str, **knobs: Any) -> stateful.StatefulResult:
    return simulate_stateful(variant=variant, **knobs)


def cast_e4m3(x: np.ndarray, encode_scale: float) -> np.ndarray:
    """Saturating E4M3FN cast of x · E (float32 product) through ml_dtypes, decoded to float64."""
    scaled = (x.astype(F32) * F32(encode_scale)).astype(F32)
    return np.clip(scaled, -E4M3_MAX, E4M3_MAX).astype(ml_dtypes.float8_e4m3fn).astype(np.float64)


# ------------------------------------------------------------------------------------------------
# the registry of designs
# ------------------------------------------------------------------------------------------------


def test_every_design_states_its_source_and_signature_and_each_family_has_both_forms() -> None:
    for name, d in DESIGNS.items():
        assert d.name == name and d.scenario in SCENARIOS
        assert d.description() and d.signature(), name
        assert re.search(r"#\d+", d.source()), (name, "the source names an issue or pull request")
    for family in SCENARIOS:
        kinds = [d.defective for d in stateful.designs_of(family)]
        assert True in kinds and False in kinds, family
    with pytest.raises(ValueError, match="variant='nope' is not one of accum-last-microbatch"):
        stateful.get_design("nope")


# ------------------------------------------------------------------------------------------------
# gradient accumulation
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("variant, rule", [("accum-last-microbatch", "last"), ("accum-window-max", "max"),
                                           ("accum-per-microbatch", "each")])
def test_accumulation_scales_are_tes_rule_over_what_the_design_inserts(variant: str, rule: str) -> None:
    r = run(variant)
    c = r.config
    seen = r.amax_seen[:, :, :, X0]  # [T, M, R]
    T, M, R = seen.shape
    if rule == "each":  # every microbatch a window: the max over the ranks (the owner group)
        inserts: list[float | None] = [float(seen[t, k].max()) for t in range(T) for k in range(M)]
        held = np.array(replay(inserts, c.history)).reshape(T, M)
    else:
        per_step = [float(seen[t, M - 1].max() if rule == "last" else seen[t].max()) for t in range(T)]
        held = np.repeat(np.array(replay(per_step, c.history))[:, None], M, axis=1)  # held for the window
    for rank in range(R):
        assert np.array_equal(r.scale_used[:, :, rank, X0], held), variant
    # transition counts per logical step: every owner (4 roles × R ranks) once, or once per microbatch
    per_owner = M if rule == "each" else 1
    assert (r.history_insertions() == 4 * R * per_owner).all()
    assert (r.scale_advances() == r.history_insertions()).all()
    assert (r.expected_insertions == r.history_insertions()).all()


def test_last_microbatch_history_holds_the_last_amax_not_the_max_and_window_max_removes_it() -> None:
    last, window = run("accum-last-microbatch"), run("accum-window-max")
    c = last.config
    spikes = [t for t in range(c.steps) if c.spike_at(t, c.spike_microbatch)]
    assert spikes == [4, 8, 12]
    M = c.microbatches
    for t in spikes:
        # the signature: what the defect inserted is the last microbatch's amax, below the window's max
        assert last.inserted[t, X0, 0] == last.amax_seen[t, M - 1, :, X0].max()
        assert last.inserted[t, X0, 0] < last.amax_seen[t, :, :, X0].max() / 4
        assert window.inserted[t, X0, 0] == window.amax_seen[t, :, :, X0].max()
    # the recurring spike: clipped at every occurrence by the defect, at the first only once corrected
    spiked = (slice(None), c.spike_microbatch, c.spike_rank, X0)
    assert all(last.clipped[spiked][t] > 0.5 for t in spikes)
    assert window.clipped[spiked][spikes[0]] > 0.5
    assert all(window.clipped[spiked][t] == 0 for t in spikes[1:])
    assert "below the step's maximum" in last.verdict() and window.findings() == []


# ------------------------------------------------------------------------------------------------
# closed forms: the clipped share of a spike one microbatch or one rank sees
# ------------------------------------------------------------------------------------------------


def test_the_edge_of_e4m3fn_is_464() -> None:
    below, edge, above = np.nextafter(F32(464), F32(0)), F32(464), np.nextafter(F32(464), F32(1000))
    got = np.array([below, edge, above]).astype(ml_dtypes.float8_e4m3fn).astype(np.float64)
    assert got[0] == 448 and got[1] == 448 and not np.isfinite(got[2])  # ml_dtypes: beyond the bin is NaN
    assert stateful.spike_clip_threshold("E4M3FN", 2.0) == 232.0


@pytest.mark.parametrize("variant, parts_of", [("accum-last-microbatch", "microbatches"), ("dist-local-amax", "ranks")])
def test_clipped_share_of_a_spike_one_part_sees(variant: str, parts_of: str) -> None:
    """Counted here on the regenerated input (|x · E| > 464) and against the expectation
    (1/parts)·erfc(464 / (E·spike·√2)) over the spiked part."""
    r = run(variant, rows=256, width=64, spike=8.0, steps=12)
    c = r.config
    expected_counts, observed_counts, variance = 0.0, 0, 0.0
    for t in range(c.steps):
        if not c.spike_at(t, c.spike_microbatch):
            continue
        k, s = c.spike_microbatch, c.spike_rank
        x = layer_input(c, t, k)
        rows = np.array_split(np.arange(c.rows), c.ranks)[s]
        E = float(r.scale_used[t, k, s, X0])
        count = int(np.count_nonzero(np.abs(x[rows] * F32(E)) > F32(E4M3_EDGE)))
        assert r.clipped[t, k, s, X0] == count / x[rows].size  # the run's own count, exactly
        p = math.erfc(E4M3_EDGE / E / c.spike / math.sqrt(2.0))
        assert stateful.spike_clipped_share(c.spike, E, "E4M3FN", c.microbatches * c.ranks) == pytest.approx(
            p / (c.microbatches * c.ranks), rel=1e-12)
        expected_counts += p * x[rows].size
        variance += p * (1 - p) * x[rows].size
        observed_counts += count
    assert expected_counts > 100
    assert abs(observed_counts - expected_counts) < 5 * math.sqrt(variance)  # binomial, 5 standard deviations


# ------------------------------------------------------------------------------------------------
# a module that did not run
# ------------------------------------------------------------------------------------------------


def _expert_inserts(r: stateful.StatefulResult, rank: int, idle: str) -> list[float | None]:
    """What the layer-1 input owner of `rank` inserts per microbatch window, by the idle rule."""
    out: list[float | None] = []
    running = 0.0
    T, M = r.scale_used.shape[:2]
    for t in range(T):
        for k in range(M):
            a = float(r.amax_seen[t, k, rank, H1]) if r.expert_ran[t] else 0.0
            running = max(running, a)
            if idle == "stale":
                out.append(running)
            elif idle == "zero":
                out.append(a)
            else:
                out.append(a if r.expert_ran[t] else None)
    return out


@pytest.mark.parametrize("variant, idle", [("skip-rolls-zero", "zero"), ("skip-rolls-stale", "stale"),
                                           ("skip-holds", "hold")])
def test_an_idle_module_records_what_its_rule_says(variant: str, idle: str) -> None:
    r = run(variant, history=4)
    c = r.config
    T, M = r.scale_used.shape[:2]
    idle_steps = [t for t in range(T) if t % c.run_every]
    assert list(np.flatnonzero(~r.expert_ran)) == idle_steps
    for rank in range(c.ranks):
        held = replay(_expert_inserts(r, rank, idle), c.history)
        for t in range(T):
            for k in range(M):
                if r.expert_ran[t]:
                    assert r.scale_used[t, k, rank, H1] == held[t * M + k], (variant, t, k)
        assert np.isnan(r.scale_used[idle_steps, :, rank, H1]).all()  # nothing cast while idle
    ins = r.insertions[:, H1]
    if idle == "hold":  # the corrected form: no insertion, no advance, the scale held while idle
        assert (ins[idle_steps] == 0).all() and (r.advances[idle_steps][:, H1] == 0).all()
        assert (r.scale_held[idle_steps, H1] == r.scale_held[[t - 1 for t in idle_steps], H1]).all()
        assert r.history_insertions().sum() == r.expected_insertions.sum() and r.idle_changes() == 0
    else:  # the defect's signature: one insertion per window whether or not the module ran
        assert (ins[idle_steps] == M).all()
        assert r.history_insertions().sum() - r.expected_insertions.sum() == 2 * c.ranks * M * len(idle_steps)
        if idle == "zero":
            assert (r.inserted[idle_steps, H1] == 0).all()
            assert r.idle_changes() > 0  # the scale moved in steps the module did not run
        else:
            for t in idle_steps:  # the slot's running maximum of everything this owner observed
                for rank in range(c.ranks):
                    assert r.inserted[t, H1, rank] == np.nanmax(r.amax_seen[:t, :, rank, H1])


def test_a_stale_slot_never_forgets_the_spike() -> None:
    stale, holds = run("skip-rolls-stale", history=4), run("skip-holds", history=4)
    peak = float(np.nanmax(stale.amax_seen[:, :, 0, H1]))
    assert stale.sized_for("h1")[-1] == pytest.approx(peak, rel=1e-6)  # the last step still sized for it
    assert holds.sized_for("h1")[-1] < peak / 4


# ------------------------------------------------------------------------------------------------
# distributed amax
# ------------------------------------------------------------------------------------------------


def _groups(variant: str, ranks: int, group: int) -> list[list[int]]:
    if variant == "dist-owner-group":
        return [list(range(ranks))]
    if variant == "dist-subgroup":
        return [list(range(i, min(i + group, ranks))) for i in range(0, ranks, group)]
    return [[r] for r in range(ranks)]


@pytest.mark.parametrize("variant", ["dist-local-amax", "dist-subgroup", "dist-owner-group"])
def test_each_reduction_group_owns_one_scale(variant: str) -> None:
    r = run(variant, ranks=6, group=4)  # groups of 4 and 2: the last group is smaller
    c = r.config
    seen = r.amax_seen[:, :, :, X0]
    T, M, R = seen.shape
    for g in _groups(variant, R, c.group):
        inserts: list[float | None] = [float(seen[t, k, g].max()) for t in range(T) for k in range(M)]
        held = np.array(replay(inserts, c.history)).reshape(T, M)
        for rank in g:
            assert np.array_equal(r.scale_used[:, :, rank, X0], held), (variant, rank)
    for role in (W0, H1, W1):  # consumed by the rank that cast it: its own owner, never reduced
        for rank in range(R):
            inserts = [float(r.amax_seen[t, k, rank, role]) for t in range(T) for k in range(M)]
            assert np.array_equal(r.scale_used[:, :, rank, role], np.array(replay(inserts, c.history)).reshape(T, M))


def test_local_amax_scales_differ_by_the_shard_amax_ratio_and_a_reduction_removes_it() -> None:
    local, owner = run("dist-local-amax"), run("dist-owner-group")
    c = local.config
    H, R = c.history, c.ranks
    t, k = 5, 0  # after the first spike (step 4, rank 0)
    windows = [(s, m) for s in range(c.steps) for m in range(c.microbatches)]
    before = windows[max(0, windows.index((t, k)) - H):windows.index((t, k))]
    A = [max(float(local.amax_seen[s, m, rank, X0]) for s, m in before) for rank in range(R)]
    E = local.scale_used[t, k, :, X0]
    for a in range(R):
        for b in range(R):
            assert E[a] / E[b] == pytest.approx(A[b] / A[a], rel=1e-6)  # the shard amax ratio
    assert E[1] / E[0] > 4  # rank 0 saw the spike
    # the read matrix: rank c's output rows of shard s are scaled by E_s · D_c
    m = local.read_matrix(t, k)
    for s, cons, f in zip(m["shard"], m["consumer"], m["factor"]):
        assert f == float(E[s]) * float(F32(1.0 / E[cons]))
    # a correct reduction: one scale, the TE rule on the maximum over ranks and the window
    amaxes = [[float(owner.amax_seen[s, mm, rank, X0]) for s, mm in before] for rank in range(R)]
    assert (owner.scale_used[t, k, :, X0] == stateful.reduced_encode_scale(amaxes, "E4M3FN")).all()
    assert stateful.reduced_encode_scale(amaxes, "E4M3FN") == te_scale([max(map(max, amaxes))], "max", 0, 1.0)
    assert owner.unpaired.sum() == 0 and owner.gemm_error.max() == 0 and owner.scale_spread().max() == 1
    assert local.unpaired.sum() > 0 and local.gemm_error.max() > 1


def test_a_mis_read_shard_scales_the_gemm_output_by_the_factor() -> None:
    """Step 0 (the initial weights), microbatch 1: the layer-0 output recomputed here with ml_dtypes
    casts, each consumer decoding every gathered shard with its own scale; and the tensor-core model
    (Hopper FP8 wgmma, FP32 accumulation) gives the same mis-scaling."""
    from lowprec.simulations import gemm

    r = stateful.run_stateful(StatefulConfig(variant="dist-local-amax", spike_step=0, spike_every=1, steps=2),
                              keep_outputs=True)
    c = r.config
    t, k = 1, 0
    kept = r.outputs[(t, k)]
    x, w0 = kept["x"], kept["w0"]
    rows = np.array_split(np.arange(c.rows), c.ranks)
    cols = np.array_split(np.arange(c.width), c.ranks)
    E = [float(r.scale_used[t, k, s, X0]) for s in range(c.ranks)]
    Ew = [float(r.scale_used[t, k, cc, W0]) for cc in range(c.ranks)]
    codes = [cast_e4m3(x[rows[s]], E[s]) for s in range(c.ranks)]
    assert len(set(E)) > 1
    for cc in range(c.ranks):
        Dc, Dw = float(F32(1 / E[cc])), float(F32(1 / Ew[cc]))
        wq = cast_e4m3(w0[:, cols[cc]], Ew[cc])
        h = np.concatenate(codes) * Dc @ (wq * Dw)
        np.testing.assert_allclose(kept["layer0"][:, cols[cc]], h, rtol=1e-12, atol=1e-300)
        paired = np.concatenate([codes[s] * float(F32(1 / E[s])) for s in range(c.ranks)]) @ (wq * Dw)
        for s in range(c.ranks):  # rows of shard s: the paired product × D_c / D_s (= E_s · D_c to float32's eps)
            Ds = float(F32(1 / E[s]))
            np.testing.assert_allclose(h[rows[s]], paired[rows[s]] * (Dc / Ds), rtol=1e-12, atol=1e-300)
            assert Dc / Ds == pytest.approx(E[s] * Dc, rel=2.0**-22)
        # the tensor core sums the same code products whatever the epilogue scale: reading shard s
        # with D_c instead of D_s scales its rows by D_c / D_s there too (to FP32's rounding)
        kw = {"arch": "hopper", "instruction": "wgmma.m64n8k32.f32.e4m3.e4m3", "reference": False}
        hw = np.asarray(gemm.matmul(np.concatenate(codes), wq, scale_a=Dc, scale_b=Dw, **kw).d, dtype=np.float64)
        assert np.max(np.abs(hw - h)) < 2.0**-8 * np.max(np.abs(h))  # Hopper keeps 13 fraction bits
        for s in range(c.ranks):
            Ds = float(F32(1 / E[s]))
            own = np.asarray(gemm.matmul(codes[s], wq, scale_a=Ds, scale_b=Dw, **kw).d, dtype=np.float64)
            np.testing.assert_allclose(hw[rows[s]], own * (Dc / Ds), rtol=2.0**-21, atol=1e-30)


# ------------------------------------------------------------------------------------------------
# cached FP8 weights
# ------------------------------------------------------------------------------------------------


def test_a_cached_weight_read_with_the_live_scale_is_unpaired_and_the_pair_removes_it() -> None:
    live, paired, recast = run("cache-live-scale"), run("cache-paired"), run("cache-recompute-recast")
    c = live.config
    M, R = c.microbatches, c.ranks
    for r in (live, paired, recast):
        # the weight is cast on the first microbatch only: one insertion per weight owner per step
        assert np.isfinite(r.scale_used[:, 0, :, W0]).all() and np.isnan(r.scale_used[:, 1:, :, W0]).all()
        assert (r.insertions[:, W0] == 1).all() and (r.insertions[:, W1] == 1).all()
        assert (r.insertions[:, X0] == M).all()
    # step 0: the initial scale 1 casts the cache, the update after microbatch 0 moves both weights'
    # scales, so microbatches 1 … M-1 read 2 weights × R ranks with a decode scale that is not the pair
    assert live.unpaired[0] == 2 * R * (M - 1)
    assert live.gemm_error[0] > 0.9  # codes cast at scale 1 read with amax/448: the output nearly vanishes
    assert paired.unpaired.sum() == 0 and paired.gemm_error.max() == 0
    assert np.array_equal(paired.insertions, recast.insertions)  # same state counts…
    assert recast.unpaired.sum() == 0
    assert recast.recompute_mismatches[0] > 0 and recast.grad_mismatch[0] > 0.01  # …another weight in backward
    assert paired.recompute_mismatches.sum() == 0 and paired.grad_mismatch.max() == 0


# ------------------------------------------------------------------------------------------------
# recompute under another autocast state
# ------------------------------------------------------------------------------------------------


def test_a_bf16_recompute_differs_everywhere_while_every_count_is_clean() -> None:
    bf16, recorded = run("recompute-bf16"), run("recompute-recorded-autocast")
    assert (bf16.recompute_mismatches == bf16.recompute_operands).all() and bf16.recompute_operands.sum() > 0
    assert (bf16.grad_mismatch > 0).all()
    # the counts a state check looks at are identical to the corrected form's
    assert np.array_equal(bf16.insertions, recorded.insertions) and bf16.unpaired.sum() == 0
    assert np.array_equal(bf16.scale_used[0], recorded.scale_used[0])  # the first forward is the same…
    assert recorded.recompute_mismatches.sum() == 0 and (recorded.grad_mismatch == 0).all()
    # …and a BF16 operand is BF16's grid: every recomputed layer input equals ml_dtypes' cast
    kept = stateful.run_stateful(StatefulConfig(variant="recompute-bf16", steps=1, spike_step=0),
                                 keep_outputs=True).outputs[(0, 0)]
    xb = kept["x"].astype(ml_dtypes.bfloat16).astype(np.float64)
    assert np.array_equal(xb, stateful.engine._Machine.bf16(kept["x"]))


# ------------------------------------------------------------------------------------------------
# telemetry, outputs, errors
# ------------------------------------------------------------------------------------------------


def test_a_clipped_nonfinite_cast_skips_the_optimizer_step() -> None:
    """With a non-saturating cast (overflow=nonfinite) and a margin of one binade, only the spike
    overflows when the ranks share a scale; with local scales the mis-read shards overflow the next
    layer's cast at every step the spike stays in rank 0's history."""
    owner = run("dist-owner-group", overflow="nonfinite", margin=1, steps=6, spike_step=2)
    local = run("dist-local-amax", overflow="nonfinite", margin=1, steps=6, spike_step=2)
    assert list(np.flatnonzero(owner.skipped)) == [2] and owner.nonfinite[2] and not owner.applied[2]
    assert list(np.flatnonzero(local.skipped)) == [2, 3, 4, 5]
    assert owner.attempted.all() and owner.skipped_updates() == 1 and int(owner.applied.sum()) == 5
    data = strictjson.loads(strictjson.dumps(owner.to_dict()))
    assert data["steps"][2]["loss"] == "nan" and data["totals"]["optimizer_steps_skipped"] == 1
    assert "1 of 6 optimizer steps skipped" in owner.verdict()


def test_json_csv_and_summary() -> None:
    r = run("cache-live-scale", steps=3, spike_step=1)
    data = strictjson.loads(strictjson.dumps(r.to_dict()))
    assert data["simulation"] == "stateful" and data["design"]["name"] == "cache-live-scale"
    assert data["design"]["defective"] is True and "#1047" in data["design"]["source"]
    assert data["cells"]["w0"]["encode_scale"][0][1] == [None] * r.config.ranks  # not cast: absent
    assert data["totals"]["history_insertions"] == int(r.history_insertions().sum())
    lines = r.csv_text().splitlines()
    assert lines[0].startswith("step,loss,grad_norm") and len(lines) == 1 + 3
    assert lines[2].split(",")[lines[0].split(",").index("clipped_w0")] != ""  # cast on microbatch 0
    text = r.summary()
    assert "cache-live-scale (cached-weight, defect)" in text and "unpaired" in text


@pytest.mark.parametrize("knobs, match", [
    ({"spike_step": 16}, r"^spike_step: 16 is outside the run of 16 steps; allowed 0..15$"),
    ({"spike_rank": 4}, r"^spike_rank: 4 is outside the 4 ranks"),
    ({"spike_microbatch": 4}, r"^spike_microbatch: 4 is outside the 4 microbatches"),
    ({"rows": 2}, r"^rows: 2 rows cannot be split over 4 ranks"),
    ({"width": 3}, r"^width: 3 features cannot be split over 4 ranks"),
    ({"variant": "nope"}, r"^variant: "),
    ({"format": "INT8"}, r"^format: "),
])
def test_bad_values_are_one_clear_error(knobs: dict[str, Any], match: str) -> None:
    with pytest.raises((ConfigError, ValueError), match=match):
        StatefulConfig(**knobs)


def test_the_app_budget_takes_the_defaults_and_refuses_the_largest_run() -> None:
    from lowprec.config import APP_BUDGET, BudgetError, check_budget

    check_budget(StatefulConfig(), APP_BUDGET)
    with pytest.raises(BudgetError, match="over a page's budget"):
        check_budget(StatefulConfig(steps=100, microbatches=8, ranks=8, rows=512, width=128), APP_BUDGET)

