"""The accumulator study (`lowprec simulate gemm`) against independent oracles: every curve's errors
recomputed here from MMA-Sim's D (the whole K through its instruction; promotion as FP32 additions of
MMA-Sim partial sums in numpy float32) and an exact Fraction reference, on operands cast by
ml_dtypes; the bit picture against Fraction arithmetic and MMA-Sim's D of the same chain; the
per-role table against the installed torchao's configs; stated properties (promotion every n equals
no promotion up to K = n; Blackwell's 25 bits never lose more than Hopper's 13 on all-positive
inputs; promotion every 128 shrinks DeepSeek-V3's K = 4096 error by well over an order of
magnitude); bad values refused with one message naming the parameter on every face."""

from __future__ import annotations

import math
import subprocess
import sys
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest

from lowprec import strictjson
from lowprec.config import ConfigError
from lowprec.simulations import gemm
from lowprec.simulations.gemm import picture, scalar, stacks, study
from lowprec.simulations.gemm.study import GemmConfig, simulate_gemm
from tests.gemm_oracle import mmasim_available, mmasim_mma

needs_mmasim = pytest.mark.skipif(not mmasim_available(), reason="mmasim (the test extra) is not installed")

E4M3 = ml_dtypes.float8_e4m3fn


def e4m3(x: np.ndarray) -> np.ndarray:
    """Round to nearest even with saturation at ±448, through ml_dtypes."""
    return np.clip(x, -448, 448).astype(E4M3).astype(np.float64)


def fraction_exact(a: np.ndarray, b: np.ndarray, c: float) -> list[list[Fraction]]:
    return [[sum((Fraction(float(a[i, k])) * Fraction(float(b[k, j])) for k in range(a.shape[1])), Fraction(c))
             for j in range(b.shape[1])] for i in range(a.shape[0])]


def metrics(d: np.ndarray, exact: list[list[Fraction]], a: np.ndarray, b: np.ndarray, c: float) -> tuple[float, ...]:
    rel, norm = [], []
    for i in range(d.shape[0]):
        for j in range(d.shape[1]):
            err = abs(Fraction(float(d[i, j])) - exact[i][j])
            if exact[i][j] != 0:
                rel.append(float(err / abs(exact[i][j])))
            mag = sum(abs(Fraction(float(a[i, k])) * Fraction(float(b[k, j]))) for k in range(a.shape[1])) + abs(Fraction(c))
            if mag:
                norm.append(float(err / mag))
    return max(rel), float(np.median(rel)), max(norm)


def mmasim_promoted(arch: str, name: str, a: np.ndarray, b: np.ndarray, n: int) -> np.ndarray:
    """Promotion every n: MMA-Sim's partial sums (C = 0) added into an FP32 accumulator by numpy."""
    acc = np.zeros((a.shape[0], b.shape[1]), np.float32)
    for k0 in range(0, a.shape[1], n):
        part = mmasim_mma(arch, name, a[:, k0:k0 + n], b[k0:k0 + n], np.zeros(acc.shape)).view(np.float32)
        acc = acc + part  # numpy float32 addition: IEEE round to nearest even, as FADD
    return acc.astype(np.float64)


@needs_mmasim
def test_every_curve_is_mmasim_against_a_fraction_reference() -> None:
    cfg = GemmConfig(k_max=128, rows=64, cols=8, promote_every="64", compare="blackwell", table=False, seed=3,
                     c=0.0)
    s = simulate_gemm(cfg)
    xa, xb = study.draw_inputs("normal", 64, 8, 128, 3)
    a, b = e4m3(xa), e4m3(xb)
    assert s.k_values == [32, 64, 128]
    hopper, bw = "wgmma.m64n8k32.f32.e4m3.e4m3", "tcgen05.mma.m64n8k32.kind::f8f6f4.f32.e4m3.e4m3"
    for k_i, k in enumerate(s.k_values):
        exact = fraction_exact(a[:, :k], b[:k], 0.0)
        runs = {
            ("hopper", None): mmasim_mma("hopper", hopper, a[:, :k], b[:k], np.zeros((64, 8))).view(np.float32),
            ("hopper", 64): mmasim_promoted("hopper", hopper, a[:, :k], b[:k], 64),
            ("blackwell", None): mmasim_mma("blackwell", bw, a[:, :k], b[:k], np.zeros((64, 8))).view(np.float32),
        }
        for (arch, promote), d in runs.items():
            curve = s.curve(promote, arch)
            want = metrics(np.asarray(d, np.float64), exact, a[:, :k], b[:k], 0.0)
            got = (curve.max_rel[k_i], curve.median_rel[k_i], curve.max_norm[k_i])
            assert got == pytest.approx(want, rel=1e-12, abs=0), (arch, promote, k)


def test_promotion_every_n_equals_no_promotion_up_to_k_n() -> None:
    s = simulate_gemm(k_max=512, rows=16, cols=8, promote_every="128,256", compare="none", table=False,
                      distribution="positive")
    none = s.curve(None)
    for n in (128, 256):
        promoted = s.curve(n)
        for i, k in enumerate(s.k_values):
            same = (promoted.max_rel[i], promoted.median_rel[i]) == (none.max_rel[i], none.median_rel[i])
            assert same == (k <= n) or (k > n and promoted.max_rel[i] < none.max_rel[i]), (n, k)


def test_blackwell_never_loses_more_than_hopper_on_positive_inputs() -> None:
    s = simulate_gemm(k_max=2048, rows=16, cols=8, distribution="positive", table=False, promote_every="")
    hopper, bw = s.curve(None, "hopper"), s.curve(None, "blackwell")
    assert all(b <= h for b, h in zip(bw.max_rel, hopper.max_rel))
    assert hopper.max_rel[-1] > 100 * bw.max_rel[-1] > 0


def test_deepseek_v3_setup_promotion_removes_most_of_the_error() -> None:
    r = study.deepseek_v3_setup(rows=32, cols=16, distributions=("normal", "positive"))
    pos, nor = r["positive"], r["normal"]
    assert 0.02 < pos["max_rel_none"] < 0.15  # every truncation has one sign: several per cent lost
    assert pos["max_rel_every_128"] < pos["max_rel_none"] / 30
    assert nor["median_rel_every_128"] < nor["median_rel_none"] / 3
    assert nor["max_norm_every_128"] < nor["max_norm_none"] / 3


def test_bit_picture_of_the_issue_example_cuts_two_to_the_minus_20() -> None:
    """Hopper FP8, A = B = 0, C = 1 + 2^-20 + 2^-13: C's row keeps 2^0 and 2^-13, 2^-20 is cut."""
    c = 1 + 2.0 ** -20 + 2.0 ** -13
    t = scalar.dot(np.zeros(32), np.zeros(32), c, arch="hopper", instruction="wgmma.m64n8k32.f32.e4m3.e4m3")
    p = picture.bit_picture(t, 0)
    row = p.rows[-1]
    assert row.label == "C" and p.e_max == 0 and p.frac_bits == 13
    ones = [p.top - j for j, ch in enumerate(row.bits) if ch == "1"]
    assert ones == [0, -13, -20]
    assert [p.top - j < p.e_max - p.frac_bits for j, ch in enumerate(row.bits) if ch == "1"] == [False, False, True]
    assert row.kept == 1 + 2.0 ** -13 and row.dropped == 2.0 ** -20 and p.d_out == 1 + 2.0 ** -13
    # the cut: column j is kept exactly when its weight 2^(top − j) is at least 2^(e_max − F)
    assert all((j < p.cut) == (p.top - j >= p.e_max - p.frac_bits) for j in range(p.columns))


@needs_mmasim
@pytest.mark.parametrize("step", [0, 5, -1])
def test_bit_picture_rows_are_the_terms_and_d_is_mmasims(step: int) -> None:
    cfg = GemmConfig(k_max=256, rows=64, cols=8, table=False, picture_step=step, distribution="positive",
                     c=2.5, compare="none", promote_every="")
    s = simulate_gemm(cfg)
    p = s.picture
    xa, xb = study.draw_inputs("positive", 64, 8, 256, 0)
    a, b = e4m3(xa), e4m3(xb)
    k1 = (cfg.pictured_step() + 1) * 32
    assert (p.k0, p.k1) == (k1 - 32, k1)
    q = Fraction(2) ** (p.e_max - p.frac_bits)
    for r_i, row in enumerate(p.rows[:-1]):
        k = p.k0 + r_i
        v = Fraction(float(a[0, k])) * Fraction(float(b[k, 0]))
        assert row.value == float(v) and row.label == f"a{k}·b{k}"
        drawn = sum(Fraction(2) ** (p.top - j) for j, ch in enumerate(row.bits) if ch == "1")
        assert row.beyond or drawn == abs(v)
        assert row.kept == float(math.trunc(v / q) * q) and row.dropped == float(v - math.trunc(v / q) * q)
    want = mmasim_mma("hopper", "wgmma.m64n8k32.f32.e4m3.e4m3", a[:, :k1], b[:k1], np.full((64, 8), 2.5))
    assert np.float32(p.d_out).view(np.uint32) == want[0, 0]


@pytest.mark.parametrize("values,name,needle", [
    ({"instruction": "wgmma.m64n8k32.f32.e4m3.e4m3", "arch": "blackwell"}, "instruction", "exists on hopper"),
    ({"instruction": "nonsense"}, "instruction", "not an instruction of hopper"),
    ({"k_max": 100}, "k_max", "not a multiple"),
    ({"promote_every": "48"}, "promote_every", "not a multiple"),
    ({"promote_every": "x"}, "promote_every", "integers"),
    ({"c": 0.1}, "c", "not exactly representable in FP32"),
    ({"picture_step": 200}, "picture_step", "must be < 128"),
    ({"compare": "ampere"}, "compare", "multiplies E4M3FN by E4M3FN"),
    ({"k_max": 20000}, "k_max", "≤ 16384"),
])
def test_bad_values_name_their_parameter(values: dict, name: str, needle: str) -> None:  # type: ignore[type-arg]
    with pytest.raises(ConfigError, match=f"^{name}: ") as info:
        GemmConfig(**values)
    assert info.value.name == name and needle in str(info.value) and "\n" not in str(info.value)


def test_the_command_line_refuses_in_one_line() -> None:
    for args, option in ((["--k-max", "100"], "--k-max"), (["--c", "0.1"], "--c"),
                         (["--instruction", "mma.bogus"], "--instruction"),
                         (["--k-max", "16384", "--rows", "1024", "--cols", "1024"], "--cols")):
        r = subprocess.run([sys.executable, "-m", "lowprec.app.cli", "simulate", "gemm", *args],
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 2 and r.stdout == "", args
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and option in lines[0], (args, r.stderr)


def test_the_api_refuses_what_the_config_refuses() -> None:
    with pytest.raises(ValueError, match="k_max"):
        simulate_gemm(k_max=100)
    with pytest.raises(ValueError, match=r"a\[0, 0\] = 0\.1 is not exactly representable in E4M3FN"):
        gemm.matmul(np.full((1, 32), 0.1), np.ones((32, 1)), arch="hopper", instruction="wgmma.m64n8k32.f32.e4m3.e4m3")


def test_outputs_are_strict_json_and_csv() -> None:
    s = simulate_gemm(k_max=64, rows=4, cols=2, table=True)
    text = strictjson.dumps(s.to_dict())
    back = strictjson.loads(text)
    assert back["instruction"] == "wgmma.m64n8k32.f32.e4m3.e4m3" and len(back["stacks"]) == len(stacks.STACKS)
    rows = study.csv_text(s).strip().splitlines()
    assert len(rows) == 1 + sum(len(c.k) for c in s.curves)
    assert "\n".join(study.summary_lines(s))


def test_stacks_against_the_installed_torchao() -> None:
    cfgmod = pytest.importorskip("torchao.float8.config")
    import torch

    fmt = {torch.float8_e4m3fn: "E4M3FN", torch.float8_e5m2: "E5M2"}
    for recipe, label in (("tensorwise", "tensorwise"), ("rowwise", "rowwise")):
        c = cfgmod.Float8LinearConfig.from_recipe_name(recipe)
        fast = {"fprop": c.gemm_config_output.use_fast_accum, "dgrad": c.gemm_config_grad_input.use_fast_accum,
                "wgrad": c.gemm_config_grad_weight.use_fast_accum}
        operands = {"fprop": (c.cast_config_input, c.cast_config_weight),
                    "dgrad": (c.cast_config_grad_output, c.cast_config_weight_for_grad_input),
                    "wgrad": (c.cast_config_input_for_grad_weight, c.cast_config_grad_output_for_grad_weight)}
        rows = [r for r in stacks.STACKS if r.stack.startswith("torchao") and r.recipe.startswith(label)]
        assert {r.role for r in rows} == set(stacks.ROLES)
        for r in rows:
            assert (r.accumulation == "fast") == fast[r.role], (recipe, r.role)
            assert (r.promote_every is None) == fast[r.role]
            assert (r.a_format, r.b_format) == tuple(fmt[x.target_dtype] for x in operands[r.role]), (recipe, r.role)


def test_stacks_follow_their_published_sources() -> None:
    """Transformer Engine (recipe/__init__.py, module/base.py): per-tensor recipes split the backward
    GEMMs only; Float8BlockScaling asserts split accumulation in all three; DeepGEMM promotes every
    128. Every row names a source and says how it is modelled."""
    te = [r for r in stacks.STACKS if r.stack.startswith("Transformer Engine")]
    for r in te:
        split = r.role != "fprop" or r.recipe.startswith("Float8BlockScaling")
        assert (r.accumulation == "split") == split and (r.promote_every == 128) == split, (r.recipe, r.role)
    assert {r.recipe.split(" ")[0] for r in te} == {"DelayedScaling", "Float8CurrentScaling", "Float8BlockScaling"}
    deep = [r for r in stacks.STACKS if r.stack == "DeepGEMM"]
    assert len(deep) == 3 and all(r.promote_every == 128 and "as published" in r.modelled_as for r in deep)
    assert all(r.source and r.modelled_as for r in stacks.STACKS)


def test_the_table_models_each_row_with_its_operands() -> None:
    s = simulate_gemm(k_max=512, rows=8, cols=4, distribution="positive", promote_every="", compare="none")
    by = {(e.row.recipe, e.row.role): e for e in s.stacks}
    fprop = by[("DelayedScaling (HYBRID)", "fprop")]
    wgrad = by[("DelayedScaling (HYBRID)", "wgrad")]
    assert fprop.instruction == "wgmma.m64n8k32.f32.e4m3.e4m3" and wgrad.instruction == "wgmma.m64n8k32.f32.e4m3.e5m2"
    # fast accumulation over K = 512 of positive products loses far more than promotion every 128
    assert fprop.max_rel > 5 * by[("Float8BlockScaling (E4M3)", "fprop")].max_rel
    # the fast row of the table is the study's own no-promotion curve on the same operands
    assert fprop.max_rel == s.curve(None).max_rel[-1] or s.config.rows > study.TABLE_ROWS


def test_accumulators_name_real_instructions() -> None:
    for arch in gemm.ARCHS:
        gemm.get_instruction(arch, gemm.default_instruction(arch))
    assert gemm.dense_instruction("blackwell", "E2M1", "E4M3FN") == "tcgen05.mma.m64n8k32.kind::f8f6f4.f32.e2m1.e4m3"
    with pytest.raises(ValueError, match="no tensor-core instruction of hopper multiplies E2M1 by E2M1"):
        gemm.dense_instruction("hopper", "E2M1", "E2M1")
    rng = np.random.default_rng(0)
    a, b = e4m3(rng.standard_normal((3, 40))), e4m3(rng.standard_normal((40, 2)))
    exact = gemm.accumulate(a, b, "exact", "E4M3FN", "E4M3FN")
    want = fraction_exact(a, b, 0.0)
    assert all(exact[i, j] == float(want[i][j]) for i in range(3) for j in range(2))
    padded_a = np.concatenate([a, np.zeros((3, 24))], axis=1)
    padded_b = np.concatenate([b, np.zeros((24, 2))], axis=0)
    d = gemm.matmul(padded_a, padded_b, arch="hopper", instruction="wgmma.m64n8k32.f32.e4m3.e4m3").d_values
    assert np.array_equal(gemm.accumulate(a, b, "hopper", "E4M3FN", "E4M3FN"), d)
    assert set(gemm.ACCUMULATORS) == {"exact", "hopper", "hopper_promote128", "blackwell"}
