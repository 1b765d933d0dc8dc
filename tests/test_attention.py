"""Attention rounding (simulations.studies.attention) against independent oracles: torch softmax, ml_dtypes /
numpy casts, grids built from ml_dtypes code lists, Fraction arithmetic and exact enumeration.

Statistical tolerances come from the number of trials T: a mean of T independent errors with variance
σ² has standard error σ/√T; a sample variance s² of T draws has
Var(s²) = σ⁴·2/(T−1) + κ4/T (κ4 the fourth cumulant of one draw, computed exactly below). Every check
allows Z = 5 standard errors; the normal tail beyond 5 is 5.7e-7, so over the ≤ 256 elements checked
at once the chance of a false failure is below 2e-4 (and the seeds are fixed).
"""

from __future__ import annotations

import itertools
import json
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest
import torch

from lowprec import strictjson
from lowprec.config import ConfigError

from lowprec.simulations.studies.attention import (AttentionInputs, attention_product_example, make_inputs,
                                                   round_probs, run_attention, simulate_attention, softmax_probs,
                                                   stochastic_variance)

Z = 5.0

ML_DTYPES = {
    "E4M3FN": ml_dtypes.float8_e4m3fn,
    "E5M2": ml_dtypes.float8_e5m2,
    "BF16": ml_dtypes.bfloat16,
    "FP16": np.float16,
    "E2M1": ml_dtypes.float4_e2m1fn,
}
MAXES = {"E4M3FN": 448.0, "E5M2": 57344.0, "BF16": float(ml_dtypes.finfo(ml_dtypes.bfloat16).max),
         "FP16": 65504.0, "E2M1": 6.0}


def _positive_grid(dtype: type) -> np.ndarray:
    """All finite non-negative values of an 8-bit (or smaller) ml_dtypes type, sorted."""
    codes = np.arange(256, dtype=np.uint8)
    if dtype is ml_dtypes.float4_e2m1fn:
        codes = np.arange(16, dtype=np.uint8)
    vals = codes.view(dtype).astype(np.float64)
    return np.unique(vals[np.isfinite(vals) & (vals >= 0)])


def _neighbours(p: np.ndarray, grid: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    hi_idx = np.searchsorted(grid, p, side="left")
    hi = grid[np.minimum(hi_idx, grid.size - 1)]
    lo = np.where(hi == p, p, grid[np.maximum(hi_idx - 1, 0)])
    return lo, hi


# ------------------------------------------------------------------------------------------------
# the deterministic example
# ------------------------------------------------------------------------------------------------


def test_product_example_matches_fractions() -> None:
    r = attention_product_example()
    step = Fraction(1, 4)
    p = [Fraction("0.6"), Fraction("0.3"), Fraction("0.1")]
    v = [Fraction(0), Fraction(2), Fraction(10)]
    # round(Fraction) is round-half-even; 0.6/0.25 = 2.4 → 2, 0.3/0.25 = 1.2 → 1, 0.1/0.25 = 0.4 → 0
    p_rounded = [round(Fraction(float(x)) / step) * step for x in p]
    assert r.probs_rounded == [float(x) for x in p_rounded] == [0.5, 0.25, 0.0]
    assert r.exact_product == sum(a * b for a, b in zip(p, v)) == Fraction(8, 5)
    assert r.rounded_product == sum(a * b for a, b in zip(p_rounded, v)) == Fraction(1, 2)
    strictjson.loads(strictjson.dumps(r.to_dict()))


# ------------------------------------------------------------------------------------------------
# softmax
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("mask", ["none", "causal"])
def test_softmax_matches_torch(mask: str) -> None:
    inp = make_inputs(24, 4, temperature=0.3, mask=mask, seed=3)
    p = softmax_probs(inp.scores, inp.mask)
    s = torch.from_numpy(inp.scores.copy())
    if inp.mask is not None:
        s = s.masked_fill(~torch.from_numpy(inp.mask), float("-inf"))
    ref = torch.softmax(s, dim=1).numpy()
    np.testing.assert_allclose(p, ref, rtol=1e-13, atol=1e-300)
    if inp.mask is not None:
        assert np.all(p[~inp.mask] == 0)


def test_softmax_is_stable_for_large_scores() -> None:
    p = softmax_probs(np.array([[1000.0, 999.0, -1000.0]]))
    e = np.exp(np.array([0.0, -1.0, -2000.0]))
    np.testing.assert_allclose(p[0], e / e.sum(), rtol=1e-15)


# ------------------------------------------------------------------------------------------------
# nearest rounding against the backends' own casts
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", list(ML_DTYPES))
@pytest.mark.parametrize("scale", ["none", "row"])
def test_nearest_rounding_matches_ml_dtypes(fmt: str, scale: str) -> None:
    inp = make_inputs(32, 8, seed=5)
    p = softmax_probs(inp.scores)
    dt = ML_DTYPES[fmt]
    if scale == "row":
        ds = p.max(axis=1) / MAXES[fmt]
    else:
        ds = np.ones(p.shape[0])
    # float64 → float32 is exact enough here: P/ds is never within 2^-29 of a midpoint for this seed
    ref = (p / ds[:, None]).astype(np.float32).astype(dt)
    ours = round_probs(p, fmt, "nearest_even", scale=scale) / ds[:, None]
    ours_codes = ours.astype(dt)
    # on the grid (up to the float64 rounding of P̃·ds / ds when a row scale is used)
    np.testing.assert_allclose(ours_codes.astype(np.float64), ours, rtol=1e-15 if scale == "row" else 0)
    width = np.uint16 if dt in (ml_dtypes.bfloat16, np.float16) else np.uint8
    np.testing.assert_array_equal(ours_codes.view(width), ref.view(width))


def test_nearest_run_errors_match_independent_product() -> None:
    inp = make_inputs(32, 8, seed=7, v_outlier_fraction=0.05)
    r = run_attention(inp, "E4M3FN", "nearest_even", trials=3, v_format="BF16")
    p = softmax_probs(inp.scores)
    p_rne = p.astype(np.float32).astype(ml_dtypes.float8_e4m3fn).astype(np.float64)
    v = inp.values
    v_rne = v.astype(np.float32).astype(ml_dtypes.bfloat16).astype(np.float64)
    np.testing.assert_array_equal(r.probs_rounded.astype(ml_dtypes.float8_e4m3fn).view(np.uint8),
                                  p_rne.astype(ml_dtypes.float8_e4m3fn).view(np.uint8))
    np.testing.assert_array_equal(r.values_rounded.astype(ml_dtypes.bfloat16).view(np.uint16),
                                  v_rne.astype(ml_dtypes.bfloat16).view(np.uint16))
    exact = p_rne @ v_rne - p @ v
    np.testing.assert_allclose(r.delta_o, exact, rtol=1e-12, atol=1e-15)
    # the first-order estimate misses exactly the second-order term ΔP·ΔV
    second = (p_rne - p) @ (v_rne - v)
    np.testing.assert_allclose(r.delta_o - r.delta_o_first_order, second, rtol=1e-9, atol=1e-15)
    # nearest rounding is deterministic: every trial the same, zero variance
    np.testing.assert_allclose(r.mc_mean_error, exact, rtol=1e-12, atol=1e-15)
    assert np.all(r.mc_variance == 0) and np.all(r.analytic_variance == 0)
    # row mass error and the error norms, recomputed
    np.testing.assert_allclose(r.row_mass_error, p_rne.sum(1) - p.sum(1), atol=1e-15)
    assert r.abs_error == pytest.approx(float(np.max(np.abs(exact))), rel=1e-12)
    assert r.rel_error == pytest.approx(float(np.linalg.norm(exact) / np.linalg.norm(p @ v)), rel=1e-12)


# ------------------------------------------------------------------------------------------------
# stochastic rounding: Monte-Carlo against the analytic mean and variance
# ------------------------------------------------------------------------------------------------


def _bernoulli_parts(p: np.ndarray, grid: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    lo, hi = _neighbours(p, grid)
    gap = hi - lo
    q = np.divide(p - lo, gap, out=np.zeros_like(p), where=gap > 0)
    return gap, q


def test_stochastic_variance_formula_uses_true_neighbours() -> None:
    inp = make_inputs(16, 4, seed=11)
    p = softmax_probs(inp.scores)
    gap, q = _bernoulli_parts(p, _positive_grid(ml_dtypes.float8_e4m3fn))
    np.testing.assert_allclose(stochastic_variance(p, "E4M3FN"), gap ** 2 * q * (1 - q), rtol=1e-12,
                               atol=1e-300)


def test_monte_carlo_matches_analytic_mean_and_variance() -> None:
    trials = 4000
    inp = make_inputs(32, 8, seed=1)
    r = run_attention(inp, "E4M3FN", "stochastic", trials=trials, seed=2)
    p = softmax_probs(inp.scores)
    v = inp.values
    gap, q = _bernoulli_parts(p, _positive_grid(ml_dtypes.float8_e4m3fn))
    var_e = gap ** 2 * q * (1 - q)
    sigma2 = var_e @ v ** 2  # Σ_j V_j² Var(e_j), independent entries
    np.testing.assert_allclose(r.analytic_variance, sigma2, rtol=1e-10)
    # fourth cumulant of Σ_j a_j (B_j − q_j), a_j = V_j·gap_j: Σ a_j⁴ q(1−q)(1 − 6q(1−q))
    k4 = (q * (1 - q) * (1 - 6 * q * (1 - q)) * gap ** 4) @ v ** 4
    sd_s2 = np.sqrt(2 * sigma2 ** 2 / (trials - 1) + k4 / trials)
    assert np.all(np.abs(r.mc_variance - sigma2) <= Z * sd_s2)
    # unbiased: every element's mean error within Z standard errors of 0
    se = np.sqrt(sigma2 / trials)
    assert np.all(np.abs(r.mc_mean_error) <= Z * se)
    # nearest rounding on the same inputs keeps a deterministic error far outside that band
    nearest = p.astype(np.float32).astype(ml_dtypes.float8_e4m3fn).astype(np.float64) @ v - p @ v
    np.testing.assert_allclose(r.delta_o_nearest, nearest, rtol=1e-12, atol=1e-15)
    assert np.mean(np.abs(nearest) > Z * se) > 0.5


def test_analytic_variance_weights_the_rounded_values() -> None:
    """With V rounded too (v_format), ΔO = (P̃ − P)·Ṽ + P·ΔV: only the first term is random, so
    Var(ΔO) = Σ_j Ṽ_j² Var(e_j) with the *rounded* Ṽ (ml_dtypes' E2M1 cast here, whose grid is
    coarse enough that Ṽ² differs from V² by far more than the tolerance), and the Monte-Carlo
    variance agrees with it, not with the exact-V formula."""
    trials = 4000
    inp = make_inputs(16, 8, seed=6)
    r = run_attention(inp, "E4M3FN", "stochastic", trials=trials, v_format="E2M1", seed=8)
    p = softmax_probs(inp.scores)
    v_tilde = inp.values.astype(np.float32).astype(ml_dtypes.float4_e2m1fn).astype(np.float64)  # |V| < 6
    assert np.all(np.abs(inp.values) < 6.0)
    gap, q = _bernoulli_parts(p, _positive_grid(ml_dtypes.float8_e4m3fn))
    var_e = gap ** 2 * q * (1 - q)
    sigma2 = var_e @ v_tilde ** 2
    exact_v = var_e @ inp.values ** 2
    assert np.max(np.abs(sigma2 / exact_v - 1)) > 0.2  # the two weightings are far apart here
    np.testing.assert_allclose(r.values_rounded, v_tilde, rtol=0, atol=0)
    np.testing.assert_allclose(r.analytic_variance, sigma2, rtol=1e-10)
    k4 = (q * (1 - q) * (1 - 6 * q * (1 - q)) * gap ** 4) @ v_tilde ** 4
    sd_s2 = np.sqrt(2 * sigma2 ** 2 / (trials - 1) + k4 / trials)
    assert np.all(np.abs(r.mc_variance - sigma2) <= Z * sd_s2)
    # the mean error is the deterministic P·ΔV (stochastic rounding of P is unbiased)
    np.testing.assert_allclose(r.analytic_mean_error, p @ (v_tilde - inp.values), rtol=1e-12, atol=1e-15)


def test_trials_are_bounded_and_arrays_must_be_real() -> None:
    """trials beyond the one bound (the config record's too) is refused at once, naming it; an
    object (or text, or complex) array is a TypeError naming the parameter, never converted."""
    import time

    from lowprec.config import fields_of
    from lowprec.simulations.studies.attention import MAX_TRIALS, AttentionConfig

    assert {k.name: k.bounds for k in fields_of(AttentionConfig)}["trials"] == (1, MAX_TRIALS)
    inp = make_inputs(4, 2)
    start = time.perf_counter()
    for rounding in ("nearest_even", "stochastic"):
        with pytest.raises(ValueError, match=rf"^trials must be at most {MAX_TRIALS}, got {2**70}$"):
            run_attention(inp, "E4M3FN", rounding, trials=2**70)
    assert time.perf_counter() - start < 5  # refused before any work (generous for a loaded machine)
    assert run_attention(inp, "E4M3FN", "stochastic", trials=3).trials == 3
    for bad in (np.ones((4, 2), dtype=object), np.full((4, 2), "1"), np.ones((4, 2)) + 0j, np.ones((4, 2), bool)):
        with pytest.raises(TypeError, match="^values must be an array of real numbers"):
            run_attention(AttentionInputs(inp.scores, bad))
    with pytest.raises(TypeError, match="^probs must be an array of real numbers"):
        stochastic_variance(np.full((2, 2), 0.5, dtype=object), "E4M3FN")


def test_row_scale_monte_carlo_variance() -> None:
    trials = 3000
    inp = make_inputs(16, 4, temperature=0.5, seed=4)
    r = run_attention(inp, "E5M2", "stochastic", scale="row", trials=trials, seed=9)
    p = softmax_probs(inp.scores)
    ds = p.max(axis=1) / 57344.0
    gap, q = _bernoulli_parts(p / ds[:, None], _positive_grid(ml_dtypes.float8_e5m2))
    gap = gap * ds[:, None]
    sigma2 = (gap ** 2 * q * (1 - q)) @ inp.values ** 2
    k4 = (q * (1 - q) * (1 - 6 * q * (1 - q)) * gap ** 4) @ inp.values ** 4
    sd_s2 = np.sqrt(2 * sigma2 ** 2 / (trials - 1) + k4 / trials)
    np.testing.assert_allclose(r.analytic_variance, sigma2, rtol=1e-9)
    assert np.all(np.abs(r.mc_variance - sigma2) <= Z * sd_s2)
    assert np.all(np.abs(r.mc_mean_error) <= Z * np.sqrt(sigma2 / trials))


def test_renormalisation_bias_sign_on_constructed_case() -> None:
    """P = [0.6, 0.3, 0.1], V = [0, 2, 10], E2M1 grid {0, 0.5, 1, …}: the exact expectation of the
    renormalised product, by enumerating the 8 outcomes with Fractions, is below P·V; the
    second-order prediction Σ_j V_j (P_j ΣVar − Var_j) = −0.296 has the same sign; without
    renormalisation stochastic rounding stays unbiased."""
    trials = 20000
    scores = np.log(np.array([[0.6, 0.3, 0.1]]))
    inp = AttentionInputs(scores, np.array([[0.0], [2.0], [10.0]]))
    r = run_attention(inp, "E2M1", "stochastic", trials=trials, renormalize=True, seed=3)
    p = [Fraction(float(x)) for x in r.probs[0]]
    v = [Fraction(0), Fraction(2), Fraction(10)]
    grid = [Fraction(0), Fraction(1, 2), Fraction(1)]
    choices = []
    for pj in p:
        lo = max(g for g in grid if g <= pj)
        hi = min(g for g in grid if g >= pj)
        q_up = (pj - lo) / (hi - lo)
        choices.append([(lo, 1 - q_up), (hi, q_up)])
    exact_o = sum(a * b for a, b in zip(p, v))
    mean: Fraction = Fraction(0)
    second: Fraction = Fraction(0)
    mean_plain: Fraction = Fraction(0)
    for outcome in itertools.product(*choices):
        prob = Fraction(1)
        for _, w in outcome:
            prob *= w
        vals = [x for x, _ in outcome]
        o = Fraction(sum(a * b for a, b in zip(vals, v))) / sum(vals)
        mean += prob * o
        second += prob * o * o
        mean_plain += prob * Fraction(sum(a * b for a, b in zip(vals, v)))
    bias = mean - exact_o
    sd = float(second - mean * mean) ** 0.5
    assert r.renorm_bias_first_order is not None and r.mc_mean_error_renorm is not None
    assert bias < 0
    assert float(r.renorm_bias_first_order[0, 0]) < 0
    assert float(r.renorm_bias_first_order[0, 0]) == pytest.approx(-0.296, rel=1e-12)
    mc = float(r.mc_mean_error_renorm[0, 0])
    assert mc < 0
    assert abs(mc - float(bias)) <= Z * sd / trials ** 0.5
    assert mean_plain == exact_o  # stochastic rounding itself is unbiased …
    sd_plain = float(r.analytic_variance[0, 0]) ** 0.5
    assert abs(float(r.mc_mean_error[0, 0])) <= Z * sd_plain / trials ** 0.5  # … and measured so


# ------------------------------------------------------------------------------------------------
# masks, bad input, results
# ------------------------------------------------------------------------------------------------


def test_fully_masked_row_policy() -> None:
    scores = np.zeros((3, 4))
    mask = np.ones((3, 4), dtype=bool)
    mask[1] = False
    with pytest.raises(ValueError, match="fully masked"):
        softmax_probs(scores, mask)
    inp = AttentionInputs(scores, np.ones((4, 2)), mask)
    r = run_attention(inp, "E4M3FN", "stochastic", trials=5, masked_rows="zero")
    assert np.all(r.probs[1] == 0) and np.all(r.out_exact[1] == 0) and np.all(r.out_rounded[1] == 0)
    assert r.row_mass_error[1] == 0
    np.testing.assert_allclose(r.probs[0], 0.25)


@pytest.mark.parametrize("kwargs, exc, match", [
    ({"trials": 0}, ValueError, "trials"),
    ({"trials": -3}, ValueError, "trials"),
    ({"trials": 2.5}, TypeError, "trials"),
    ({"fmt": "E8M0"}, ValueError, "E8M0"),
    ({"fmt": "INT8"}, ValueError, "INT8"),
    ({"fmt": "nope"}, ValueError, "nope"),
    ({"rounding": "toward_zero"}, ValueError, "rounding"),
    ({"scale": "column"}, ValueError, "scale"),
    ({"masked_rows": "nan"}, ValueError, "masked_rows"),
])
def test_bad_arguments(kwargs: dict, exc: type, match: str) -> None:
    inp = make_inputs(4, 2)
    with pytest.raises(exc, match=match):
        run_attention(inp, **kwargs)


def test_bad_inputs() -> None:
    with pytest.raises(ValueError, match="not finite"):
        softmax_probs(np.array([[0.0, np.nan]]))
    with pytest.raises(ValueError, match="not finite"):
        softmax_probs(np.array([[0.0, np.inf]]))
    # -inf where the mask forbids attention is fine
    p = softmax_probs(np.array([[0.0, -np.inf]]), np.array([[True, False]]))
    assert p.tolist() == [[1.0, 0.0]]
    with pytest.raises(ValueError, match="empty"):
        softmax_probs(np.zeros((3, 0)))
    with pytest.raises(ValueError, match="2-D"):
        softmax_probs(np.zeros(3))
    with pytest.raises(TypeError, match="boolean"):
        softmax_probs(np.zeros((2, 2)), np.ones((2, 2)))
    with pytest.raises(ValueError, match="values"):
        run_attention(AttentionInputs(np.zeros((2, 3)), np.zeros((4, 2))))
    with pytest.raises(ValueError, match="seq"):
        make_inputs(0)
    with pytest.raises(ValueError, match="temperature"):
        make_inputs(4, temperature=0.0)
    with pytest.raises(ValueError, match="mask"):
        make_inputs(4, mask="diagonal")
    with pytest.raises(TypeError, match="rng"):
        round_probs(np.full((1, 2), 0.5), "E4M3FN", "stochastic")


def test_result_is_json_and_reproducible() -> None:
    calls: list[tuple[int, int]] = []
    a = simulate_attention(8, 4, "BF16", "stochastic", trials=70, renormalize=True, mask="causal",
                           seed=5, progress=lambda d, t: calls.append((d, t)))
    b = simulate_attention(8, 4, "BF16", "stochastic", trials=70, renormalize=True, mask="causal",
                           seed=5)
    assert calls[-1] == (70, 70)
    d = a.to_dict()
    text = strictjson.dumps(d)
    assert strictjson.loads(text)["config"]["format"] == "BF16"
    assert strictjson.loads(text)["config"]["parameters"]["mask"] == "causal"
    np.testing.assert_array_equal(a.mc_mean_error, b.mc_mean_error)
    assert set(a.summary()) >= {"rel_error", "abs_error", "rms_bias", "rms_bias_renorm"}


def test_module_main_and_cli_write_json(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from lowprec.app.cli import main as cli_main
    from lowprec.simulations.studies.attention import main

    out = tmp_path / "a.json"
    assert main(["--seq", "8", "--head-dim", "4", "--trials", "10", "--rounding", "stochastic",
                 "--json", str(out)]) == 0
    assert json.loads(out.read_text())["config"]["trials"] == 10
    out2 = tmp_path / "b.json"
    html = tmp_path / "b.html"
    rc = cli_main(["simulate", "attention", "--format", "E4M3FN", "--rounding", "stochastic", "--seq",
                   "8", "--head-dim", "4", "--trials", "20", "--seed", "0", "--quiet", "--json",
                   str(out2), "--html", str(html)])
    assert rc == 0
    assert json.loads(out2.read_text())["config"]["rounding"] == "stochastic"
    text = html.read_text()
    assert "<html" in text.lower() and "cdn.bokeh.org" not in text
    assert cli_main(["simulate", "attention", "--trials", "0", "--quiet"]) == 2


@pytest.mark.parametrize("knobs, match", [
    ({"trials": 0}, r"^trials: must be ≥ 1, got 0$"),
    ({"format": "INT8"}, r"^format: must be one of E4M3FN, E5M2, E2M1, BF16, FP16, FP32, E3M2, E2M3, "),
    ({"v_format": "E8M0"}, r"^v_format: must be one of none, E4M3FN, "),
    ({"temperature": 0.0}, r"^temperature: must be ≥ 0.01, got 0.0$"),
    ({"preset": "two_probs"}, r"^preset: must be one of random, three_probs; got 'two_probs'$"),
    ({"fmt": "E4M3FN"}, r"^fmt: unknown parameter; allowed: format, rounding, scale, seq, "),
])
def test_config_refuses_bad_values(knobs: dict, match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        simulate_attention(**knobs)


@pytest.mark.parametrize("fmt", ["E4M3FN", "E5M2", "E2M1", "BF16", "FP16", "FP32", "E3M2", "E2M3", "E4M3FNUZ",
                                 "E5M2FNUZ"])
def test_every_format_choice_rounds_like_ml_dtypes(fmt: str) -> None:
    """P̃ of the three-probability preset is P cast by ml_dtypes (float64 → float32 first is exact
    enough here: none of 0.6, 0.3, 0.1 lies within a float32 step of a midpoint of these grids)."""
    dtypes = {"E4M3FN": ml_dtypes.float8_e4m3fn, "E5M2": ml_dtypes.float8_e5m2, "E2M1": ml_dtypes.float4_e2m1fn,
              "BF16": ml_dtypes.bfloat16, "FP16": np.float16, "FP32": np.float32, "E3M2": ml_dtypes.float6_e3m2fn,
              "E2M3": ml_dtypes.float6_e2m3fn, "E4M3FNUZ": ml_dtypes.float8_e4m3fnuz,
              "E5M2FNUZ": ml_dtypes.float8_e5m2fnuz}
    r = simulate_attention(preset="three_probs", format=fmt)
    p = np.array([0.6, 0.3, 0.1])
    assert np.allclose(r.probs[0], p, rtol=1e-15, atol=0)
    expected = r.probs[0].astype(np.float32).astype(dtypes[fmt]).astype(np.float64)
    if fmt == "FP32":
        expected = r.probs[0].astype(np.float32).astype(np.float64)
    assert r.probs_rounded[0].tolist() == expected.tolist()
    assert r.config["parameters"]["preset"] == "three_probs" and r.values.tolist() == [[0.0], [2.0], [10.0]]


def test_python_m_attention_matches_the_function(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import subprocess
    import sys

    out = tmp_path / "m.json"
    res = subprocess.run([sys.executable, "-m", "lowprec.simulations.studies.attention", "--seq", "6", "--head-dim", "3",
                          "--format", "e5m2", "--v-format", "BF16", "--json", str(out), "--quiet"],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert res.stdout == ""  # --quiet: no summary
    d = strictjson.loads(out.read_text())
    r = simulate_attention(6, 3, "E5M2", v_format="BF16")
    assert d["config"]["parameters"]["format"] == "E5M2" and d["config"]["v_format"] == "BF16"
    assert d["rel_error"] == r.rel_error


def test_plot_sources_have_matching_columns() -> None:
    from lowprec.app.plots.attention import attention_layout, attention_sources

    r = simulate_attention(8, 4, "E5M2", "stochastic", trials=20, seed=1)
    src = attention_sources(r)
    assert set(src) == {"delta_p", "first_order", "variance", "bias", "row_mass"}
    for name, cols in src.items():
        if name != "delta_p":
            assert len({len(c) for c in cols.values()}) == 1, name
    assert len(src["bias"]["index"]) == 8 * 4
    np.testing.assert_array_equal(np.array(src["delta_p"]["image"][0]), r.delta_p)
    strictjson.loads(strictjson.dumps(src))
    from bokeh.models import Plot

    titles = {p.title.text for p in attention_layout(r).select({"type": Plot}) if p.title is not None}
    cfg = r.config
    assert f"ΔP ({cfg['format']}, {cfg['rounding']}, scale {cfg['scale']})" in titles
