"""The recipe lab's use of the quant wing, against independent oracles: the RHT recipes' errors
against the same quantizer run on a tensor transformed here with this file's own H (the exact
inverse transform preserves the error's norm), the flushed fraction counted where the cast happens,
the chunked global amax with a NaN in a later chunk, tiles that do not divide a tensor, the new
recipes in the lab, and the Hadamard study's numbers recomputed here (issue 33's survivors)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from lowprec import strictjson
from lowprec.simulations import quant
from lowprec.simulations.studies.hadamard import hadamard_study
from lowprec.simulations.lab.readers import array_source
from lowprec.simulations.lab.recipes import parse_recipes
from lowprec.simulations.lab.runner import TensorReport, analyze_arrays, analyze_rows
from lowprec.simulations.lab.samples import activation
from lowprec.simulations.quant.rht import TE_WGRAD_SIGNS

F32 = np.float32


def run(x: np.ndarray, recipes: str, chunk_elements: int = 1 << 20) -> TensorReport:
    ref, src = array_source(x, "t")
    return analyze_rows(ref, src, parse_recipes(recipes), chunk_elements)


def own_h(signs: np.ndarray) -> np.ndarray:
    """diag(signs) · S_16 / 4, built here from the Sylvester recursion."""
    s = np.array([[1.0]])
    while s.shape[0] < 16:
        s = np.block([[s, s], [s, -s]])
    return signs[:, None] * s / 4


SEEDED = np.random.default_rng(0).choice([-1.0, 1.0], size=16)  # lowprec's seeded signs (seed 0)


@pytest.mark.parametrize("rht, plain, signs", [
    ("nvfp4_rht", "nvfp4", SEEDED),
    ("mxfp4_rht", "mxfp4", SEEDED),
    ("nvfp4_rht@transformer_engine", "nvfp4@transformer_engine", np.array(TE_WGRAD_SIGNS)),
])
def test_rht_recipe_error_equals_the_error_in_the_transformed_basis(rht: str, plain: str, signs: np.ndarray) -> None:
    """‖Q(x·H)·Hᵀ − x‖ = ‖Q(x·H) − x·H‖ (Hᵀ orthogonal): the lab's RHT error against the plain
    recipe on x·H made here. Transforming back with H instead of Hᵀ (or not at all) breaks it."""
    x = activation()[:64, :128].astype(F32)
    h = own_h(signs)
    if "transformer_engine" in rht:  # TE's reference sums the 16 products in float32, in order
        acc = np.zeros((x.size // 16, 16), F32)
        for i in range(16):
            acc += x.reshape(-1, 16)[:, i:i + 1] * h[i].astype(F32)
        xh = acc.reshape(x.shape)
    else:
        xh = (x.astype(np.float64).reshape(-1, 16) @ h).reshape(x.shape).astype(F32)
    r = run(x, rht).result(rht)
    want = run(xh, plain).result(plain)
    # same quantization of the same operand: the error sums agree up to the rounding of x·H to float32
    signal = float(np.sum(x.astype(np.float64) ** 2))
    assert r.error == pytest.approx(want.error * signal / want.signal, rel=2e-3)
    # and the flushed fraction is counted where the cast happens: on x·H, as the plain recipe counts it
    assert r.zero_frac == want.zero_frac and r.clipped_frac == want.clipped_frac


def test_rht_flushed_fraction_is_counted_in_the_transformed_basis() -> None:
    """Elements that the cast flushes in the Hadamard basis come back (after Hᵀ) as non-zero values:
    the flushed count must be read before the inverse transform."""
    rng = np.random.default_rng(3)
    x = (rng.standard_normal((16, 64)) * 1e-3).astype(F32)
    x[:, 0] = 1000.0  # one huge value per block of 16: after the transform every entry is near ±250
    x[:, 16] = 1000.0
    x[:, 32] = 1000.0
    x[:, 48] = 1000.0
    r = run(x, "nvfp4_rht").result("nvfp4_rht")
    q = quant.quantize(x, "nvfp4_rht")
    flushed_at_cast = np.count_nonzero((q.operand != 0) & (q.dequantize() == 0)) / x.size
    after_inverse = np.count_nonzero((x != 0) & (q.restore() == 0)) / x.size
    assert r.zero_frac == flushed_at_cast and flushed_at_cast != after_inverse


@pytest.mark.parametrize("recipe", ["e4m3_tensor", "nvfp4@torchao", "nvfp4@transformer_engine", "e4m3_column",
                                    "nvfp4_4over6"])
def test_nan_in_a_later_chunk_reaches_the_global_amax(recipe: str) -> None:
    """Chunked runs measure the whole tensor's amax first; a NaN in the last chunk must win there as
    in the whole tensor (e4m3_tensor: the safe scale 1; torchao / TE NVFP4: NaN scales everywhere)."""
    x = activation()[:64, :64].copy() * F32(3.0)
    x[60, 7] = np.nan  # the fourth of four 16-row chunks
    whole = run(x, recipe, chunk_elements=1 << 30).result(quant.get_recipe(recipe).name)
    chunked = run(x, recipe, chunk_elements=16 * 64).result(quant.get_recipe(recipe).name)
    assert strictjson.dumps(chunked.to_dict()) == strictjson.dumps(whole.to_dict())  # NaN metrics too
    if recipe == "e4m3_tensor":  # NaN amax: the safe scale 1.0 for every element (documented in scales.py)
        q = quant.quantize(x, recipe)
        assert float(q.scales) == 1.0
        assert whole.rms_rel_err is not None and whole.rms_rel_err > 0.01


@pytest.mark.parametrize("rows", [8, 24, 40])
def test_partial_16x16_tiles_are_refused_and_the_analysis_goes_on(rows: int) -> None:
    x = np.random.default_rng(rows).standard_normal((rows, 32)).astype(F32)
    report = analyze_arrays({"w": x}, "nvfp4_16x16,nvfp4,fp8_128x128")
    t = report.tensors[0]
    tile = t.result("nvfp4_16x16")
    assert tile.skipped == f"16×16 tiles do not divide the rows ({rows}) of the matrix view"
    assert tile.rms_rel_err is None
    assert t.result("nvfp4").skipped is None and t.result("nvfp4").rms_rel_err is not None
    assert t.result("fp8_128x128").skipped is None  # FP8 tiles are padded: a partial tile applies


@pytest.mark.parametrize("name", ["fp8_1x128", "fp8_128x128_pow2", "fp8_1x128_ue8m0", "mxint8@microxcaling",
                                  "nvfp4_rowscaled", "nvfp4_4over6"])
def test_new_recipes_in_the_lab_match_quantize(name: str) -> None:
    """The lab's error of a new recipe is the error of `quant.quantize` on the whole tensor, also when
    the rows come in chunks (128×128 tiles: chunks of 128 rows)."""
    x = np.random.default_rng(8).standard_t(3, size=(256, 192)).astype(F32)
    q = quant.quantize(x, name)
    d = q.restore() - x.astype(np.float64)
    want = math.sqrt(float(np.sum(d * d)) / float(np.sum(x.astype(np.float64) ** 2)))
    for chunk in (1 << 30, 128 * 192):
        r = run(x, name, chunk_elements=chunk).result(quant.get_recipe(name).name)
        assert r.rms_rel_err == pytest.approx(want, rel=1e-12)
        assert r.bits_per_element == q.bits_per_element


def test_lab_lists_the_new_recipes() -> None:
    names = [r.name for r in parse_recipes("all")]
    for n in ("fp8_1x128", "fp8_128x128_ue8m0", "mxint8", "nvfp4_4over6", "nvfp4_rowscaled"):
        assert n in names
    for name in ("nvfp4_rht", "mxfp4_rht"):  # TE applies the RHT to the wgrad operands only
        assert "(wgrad) operands only, never to weights" in quant.RECIPES[name].description


def test_hadamard_study_against_its_definition() -> None:
    """The study's numbers recomputed here: A·H with this file's H, NVFP4 and MXFP4 of it (the
    quantizers the oracle tests check), back with Hᵀ, error over the ordinary elements."""
    shape, outlier, seed = (16, 64), 100.0, 1
    s = hadamard_study(shape, outlier=outlier, seed=seed)
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(shape)
    cols = rng.integers(0, shape[1], size=shape[0])
    a[np.arange(shape[0]), cols] = outlier
    ordinary = np.ones(shape, bool)
    ordinary[np.arange(shape[0]), cols] = False
    h = own_h(np.random.default_rng(seed).choice([-1.0, 1.0], size=16))
    assert s.signs == (h[:, 0] * 4).tolist()  # column 0 of S is all ones: it holds the signs
    ah = (a.reshape(-1, 16) @ h).reshape(shape).astype(F32)

    def err(recipe: str, z: np.ndarray, transformed: bool) -> float:
        dq = quant.quantize(z, recipe).dequantize().astype(np.float64)
        back = (dq.reshape(-1, 16) @ h.T).reshape(shape) if transformed else dq
        d = back[ordinary] - a[ordinary]
        return math.sqrt(float(np.sum(d * d)) / float(np.sum(a[ordinary] ** 2)))

    assert s.nvfp4_rms_rel_error_after == pytest.approx(err("nvfp4", ah, True), rel=1e-12)
    assert s.mxfp4_rms_rel_error_after == pytest.approx(err("mxfp4", ah, True), rel=1e-12)
    assert s.nvfp4_rms_rel_error_before == pytest.approx(err("nvfp4", a.astype(F32), False), rel=1e-12)
    b = (a.reshape(-1, 16) @ h).reshape(shape)
    crest = np.abs(b.reshape(-1, 16)).max(axis=1) / np.sqrt((b.reshape(-1, 16) ** 2).mean(axis=1))
    hit = np.zeros(shape, bool)
    hit[np.arange(shape[0]), cols] = True
    assert s.block_crest_after == pytest.approx(float(crest[hit.reshape(-1, 16).any(axis=1)].mean()), rel=1e-12)
