"""The attention simulation's P·V accumulator (`pv_accumulator`, the shared `knobs.accumulator_knob`):
exact by default (nothing changes); through a tensor core, Õ = P̃·Ṽ is MMA-Sim's FP32 D of P̃'s codes
times Ṽ (K padded with zeros), times the row decode scale; a tensor core without V in its operand
formats (v_format none) rounds V to P's format (as an FP8 attention kernel does), and a format pair the
architecture lacks is refused naming the knob on every face."""

from __future__ import annotations

import subprocess
import sys

import ml_dtypes
import numpy as np
import pytest

from lowprec import formats
from lowprec.config import ConfigError
from lowprec.simulations.framework import knobs
from lowprec.simulations.studies.attention import AttentionConfig, simulate_attention
from lowprec.simulations.gemm import ACCUMULATORS
from tests.gemm_oracle import mmasim_available, mmasim_mma

needs_mmasim = pytest.mark.skipif(not mmasim_available(), reason="mmasim (the test extra) is not installed")


def test_the_knob_is_the_shared_declaration() -> None:
    k = {f.name: f for f in AttentionConfig.knobs()}["pv_accumulator"]
    assert k.default == "exact" and k.choices == knobs.ACCUMULATOR_CHOICES == tuple(ACCUMULATORS)


def test_exact_accumulation_changes_nothing() -> None:
    a = simulate_attention(seq=32, head_dim=8, v_format="E4M3FN")
    b = simulate_attention(seq=32, head_dim=8, v_format="E4M3FN", pv_accumulator="exact")
    assert np.array_equal(a.out_rounded, b.out_rounded) and a.accumulation_error == b.accumulation_error == 0.0
    assert np.array_equal(a.out_rounded, a.probs_rounded @ a.values_rounded)


@needs_mmasim
@pytest.mark.parametrize("accumulator,arch,name", [
    ("hopper", "hopper", "wgmma.m64n8k32.f32.e4m3.e4m3"),
    ("blackwell", "blackwell", "tcgen05.mma.m64n8k32.kind::f8f6f4.f32.e4m3.e4m3"),
])
def test_tensor_core_pv_is_mmasims(accumulator: str, arch: str, name: str) -> None:
    r = simulate_attention(seq=64, head_dim=8, v_format="E4M3FN", pv_accumulator=accumulator, seed=4)
    p = r.probs_rounded  # scale none: P̃ holds E4M3 values
    codes = formats.decode(formats.encode(p, "E4M3FN"), "E4M3FN").astype(np.float64)
    assert np.array_equal(codes, p)
    pad = (-p.shape[1]) % 32
    a = np.concatenate([p, np.zeros((64, pad))], axis=1)
    b = np.concatenate([r.values_rounded, np.zeros((pad, 8))], axis=0)
    want = mmasim_mma(arch, name, a, b, np.zeros((64, 8))).view(np.float32).astype(np.float64)
    assert np.array_equal(r.out_rounded, want)
    assert r.accumulation_error == float(np.max(np.abs(want - p @ r.values_rounded)))


def test_a_tensor_core_rounds_v_to_ps_format_when_v_format_is_none() -> None:
    r = simulate_attention(seq=16, head_dim=4, pv_accumulator="hopper")
    assert r.config["v_format"] == "E4M3FN"
    v = np.clip(r.values, -448, 448).astype(ml_dtypes.float8_e4m3fn).astype(np.float64)
    assert np.array_equal(r.values_rounded, v)
    assert simulate_attention(seq=16, head_dim=4).config["v_format"] is None  # exact: V stays exact


def test_promotion_and_blackwell_lose_less_than_the_hopper_chain() -> None:
    errs = {acc: simulate_attention(seq=512, head_dim=16, v_format="E4M3FN", pv_accumulator=acc, seed=1,
                                    temperature=0.05).accumulation_error
            for acc in ("hopper", "hopper_promote128", "blackwell")}
    assert errs["hopper"] > 0 and errs["hopper_promote128"] <= errs["hopper"]
    assert errs["blackwell"] < errs["hopper"]


def test_row_scaled_p_goes_through_its_codes() -> None:
    r = simulate_attention(seq=40, head_dim=4, v_format="E5M2", scale="row", pv_accumulator="hopper")
    assert 0 < r.accumulation_error < 1e-2 * float(np.max(np.abs(r.out_exact)))


@pytest.mark.parametrize("values,needle", [
    ({"pv_accumulator": "hopper", "format": "BF16", "v_format": "E4M3FN"}, "multiplies BF16 by E4M3FN"),
    ({"pv_accumulator": "hopper", "format": "E2M1", "v_format": "E2M1"}, "multiplies E2M1 by E2M1"),
    ({"pv_accumulator": "volta", "v_format": "E4M3FN"}, "one of exact"),
])
def test_bad_accumulator_requests_name_the_knob(values: dict, needle: str) -> None:  # type: ignore[type-arg]
    with pytest.raises(ConfigError, match=r"^pv_accumulator: ") as info:
        AttentionConfig(**values)
    assert info.value.name == "pv_accumulator" and needle in str(info.value)
    options = [x for k, v in values.items() for x in ("--" + k.replace("_", "-"), v)]
    r = subprocess.run([sys.executable, "-m", "lowprec.app.cli", "simulate", "attention", *options, "--seq", "8"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and "--pv-accumulator" in r.stderr


def test_fp4_probabilities_run_on_blackwell() -> None:
    r = simulate_attention(seq=32, head_dim=4, format="E2M1", v_format="E2M1", pv_accumulator="blackwell")
    assert r.config["pv_accumulator"] == "blackwell" and np.isfinite(r.out_rounded).all()
