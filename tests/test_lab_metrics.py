"""The recipe lab's numbers against direct computations: each metric of a few recipes recomputed here
from the definition with ml_dtypes casts, exact rational rounding (tests/scaling_oracles) or torchao's
own MX / NVFP4 quantizers (dequantized here with torch and ml_dtypes); the statistics against numpy
formulas; row chunks giving exactly the whole-tensor result for every recipe and convention (NaN and
Inf included); the ranking rule; bits per element; recipe parsing and applicability."""

from __future__ import annotations

import logging
import math
from fractions import Fraction
from typing import Any

import ml_dtypes
import numpy as np
import pytest

from lowprec import strictjson
from lowprec.simulations.lab import measure
from lowprec.simulations.lab.measure import RecipeResult, pareto_front, rank_results
from lowprec.simulations.lab.readers import array_source
from lowprec.simulations.lab.recipes import RECIPES, Family, get_recipe, parse_recipes
from lowprec.simulations.lab.runner import TensorReport, analyze_arrays, analyze_rows
from lowprec.simulations.lab.samples import activation, gradient, weight
from tests.scaling_oracles import code_value, rne_code

F32 = np.float32


def run(x: np.ndarray, recipes: str, chunk_elements: int = 1 << 20) -> TensorReport:
    ref, src = array_source(x, "t")
    return analyze_rows(ref, src, parse_recipes(recipes), chunk_elements)


def rel_err(x: np.ndarray, x_hat: np.ndarray) -> float:
    x64, h64 = x.astype(np.float64), np.asarray(x_hat, np.float64)
    return float(np.linalg.norm(h64 - x64) / np.linalg.norm(x64))


def check(r: RecipeResult, x: np.ndarray, x_hat: np.ndarray, clipped: int, zeroed: int) -> None:
    x64, h64 = x.astype(np.float64), np.asarray(x_hat, np.float64)
    d = h64 - x64
    err, sig = float((d * d).sum()), float((x64 * x64).sum())
    assert r.rms_rel_err == pytest.approx(math.sqrt(err / sig), rel=1e-12)
    assert r.sqnr_db == pytest.approx(10 * math.log10(sig / err), rel=1e-12)
    assert r.max_abs_err == float(np.abs(d).max())
    assert r.clipped_frac == clipped / x.size and r.zero_frac == zeroed / x.size


# ------------------------------------------------------------------------------------------------
# metrics against direct computations
# ------------------------------------------------------------------------------------------------


def test_e4m3_per_tensor_against_exact_rounding() -> None:
    x = activation()[:64, :128].copy()
    x[0, 0] = F32(1e-9)  # flushes: 1e-9 · 448 / amax is far below E4M3's smallest subnormal
    amax = float(np.abs(x).max())
    enc = F32(448.0 / amax)  # the FP32 encode scale (current scaling), stored as float32
    codes = [rne_code(Fraction(float(v)) * Fraction(float(enc)), "E4M3FN") for v in x.reshape(-1)]
    decoded = np.array([code_value(c, "E4M3FN") for c in codes]).reshape(x.shape)
    x_hat = decoded / np.float64(enc)
    zeroed = int(np.count_nonzero((x != 0) & (decoded == 0)))
    assert zeroed >= 1
    check(run(x, "e4m3_tensor").result("e4m3_tensor"), x, x_hat, 0, zeroed)


def test_int8_per_row_against_rint() -> None:
    x = weight().astype(np.float32)
    enc = (np.float64(127.0) / np.abs(x).max(axis=1, keepdims=True).astype(np.float64)).astype(F32)
    q = np.clip(np.rint(x.astype(np.float64) * enc), -127, 127)  # rint: ties to even
    x_hat = q / enc.astype(np.float64)
    check(run(x, "int8_row").result("int8_row"), x, x_hat, 0, int(np.count_nonzero((x != 0) & (q == 0))))


def test_bf16_and_fp16_casts_against_ml_dtypes_and_numpy() -> None:
    x = activation()
    check(run(x, "bf16").result("bf16"), x, x.astype(ml_dtypes.bfloat16).astype(np.float64), 0, 0)
    g = gradient()  # tiny values: FP16 flushes some to zero
    h = g.astype(np.float16)
    zeroed = int(np.count_nonzero((g != 0) & (h == 0)))
    assert zeroed > 0
    check(run(g, "fp16").result("fp16"), g, h.astype(np.float64), 0, zeroed)


def test_fp16_overflow_is_clipped_and_infinite_error() -> None:
    x = np.array([[1.0, 70000.0, -65519.0, 65520.0]], F32)  # 65520 is the tie that overflows
    r = run(x, "fp16").result("fp16")
    assert r.clipped_frac == 2 / 4 and r.rms_rel_err == math.inf and r.sqnr_db == -math.inf
    assert r.max_abs_err == math.inf
    data = strictjson.loads(strictjson.dumps(r.to_dict()))
    assert (data["rms_rel_err"], data["sqnr_db"]) == ("inf", "-inf")


def test_exact_cast_has_zero_error_and_infinite_sqnr_in_strict_json() -> None:
    w = weight()  # stored as BF16: the BF16 cast is exact
    r = run(w, "bf16").result("bf16")
    assert (r.rms_rel_err, r.sqnr_db, r.max_abs_err) == (0.0, math.inf, 0.0)
    assert strictjson.loads(strictjson.dumps(r.to_dict()))["sqnr_db"] == "inf"


torch = None


def _torchao() -> Any:
    pytest.importorskip("torch")
    logging.getLogger("torchao").setLevel(logging.ERROR)
    return pytest.importorskip("torchao")


def test_mxfp8_torchao_convention_against_torchao() -> None:
    _torchao()
    import torch
    from torchao.prototype.mx_formats.config import ScaleCalculationMode
    from torchao.prototype.mx_formats.mx_tensor import to_mx

    x = activation()
    scale, data = to_mx(torch.from_numpy(x.copy()), torch.float8_e4m3fn, 32, ScaleCalculationMode.FLOOR)
    s = torch.exp2(scale.view(torch.uint8).to(torch.float64) - 127).reshape(x.shape[0], -1, 1)
    x_hat = (data.to(torch.float64).reshape(x.shape[0], -1, 32) * s).reshape(x.shape).numpy()
    # clipped: |x| / 2^X beyond E4M3's top rounding bin (448 + 16 = 464; 464 itself rounds to even 448)
    clipped = int(np.count_nonzero(np.abs(x.astype(np.float64).reshape(x.shape[0], -1, 32)) / s.numpy() > 464))
    assert clipped > 0  # the floor rule saturates some block maxima
    zeroed = int(np.count_nonzero((x != 0) & (x_hat == 0)))
    check(run(x, "mxfp8_e4m3@torchao").result("mxfp8_e4m3@torchao"), x, x_hat, clipped, zeroed)


def test_nvfp4_torchao_convention_against_torchao() -> None:
    _torchao()
    import torch
    from torchao.prototype.mx_formats.kernels import unpack_uint4
    from torchao.prototype.mx_formats.nvfp4_tensor import nvfp4_quantize, per_tensor_amax_to_scale

    x = gradient()
    t = torch.from_numpy(x.copy())
    pts = per_tensor_amax_to_scale(torch.max(torch.abs(t)))
    scale, data = nvfp4_quantize(t, 16, pts)
    codes = unpack_uint4(data.view(torch.uint8)).numpy().reshape(x.shape).astype(np.uint8)
    values = codes.view(ml_dtypes.float4_e2m1fn).astype(np.float64)
    block = scale.view(torch.float8_e4m3fn).to(torch.float64).numpy().reshape(x.shape[0], -1)
    x_hat = (values.reshape(x.shape[0], -1, 16) * (block * float(pts))[:, :, None]).reshape(x.shape)
    x_hat = x_hat.astype(np.float32)  # dequantized to the input's dtype, as torchao's NVFP4 tensor does
    zeroed = int(np.count_nonzero((x != 0) & (x_hat == 0)))
    r = run(x, "nvfp4@torchao").result("nvfp4@torchao")
    assert r.rms_rel_err == pytest.approx(rel_err(x, x_hat), rel=1e-12)
    assert r.zero_frac == zeroed / x.size and r.clipped_frac == 0.0  # block scales are rounded-up amax / 6


# ------------------------------------------------------------------------------------------------
# row chunks give the whole-tensor result exactly
# ------------------------------------------------------------------------------------------------


def _variants() -> list[str]:
    names = list(RECIPES)
    for name, r in RECIPES.items():
        if r.family in (Family.MX, Family.NVFP4) and not r.rht:
            for conv in ("torchao", "transformer_engine"):
                try:
                    names.append(get_recipe(f"{name}@{conv}").name)
                except ValueError:
                    pass  # not every convention has every format (TE: MXFP8 only; torchao: 1×16 NVFP4)
    return names


VARIANTS = _variants()


def _tensor_with_specials() -> np.ndarray:
    x = activation()[:64, :64].copy() * F32(3.0)
    x[5, 3] = np.nan
    x[20, 40] = np.inf
    x[33, 0] = -np.inf
    x[40:48, :] = 0.0
    return x


@pytest.mark.parametrize("data", ["activation", "with NaN and Inf"])
def test_row_chunks_equal_the_whole_tensor(data: str) -> None:
    x = activation()[:64, :64] if data == "activation" else _tensor_with_specials()
    whole = run(x, ",".join(VARIANTS), chunk_elements=1 << 30)
    chunked = run(x, ",".join(VARIANTS), chunk_elements=16 * 64)  # 16 rows per chunk: 4 chunks
    assert strictjson.dumps(chunked.to_dict()) == strictjson.dumps(whole.to_dict())
    assert whole.stats.nonfinite == (3 if data != "activation" else 0)


def test_convention_variants_exist_and_differ() -> None:
    assert {"nvfp4@torchao", "nvfp4@transformer_engine", "nvfp4_16x16@transformer_engine",
            "mxfp8_e4m3@transformer_engine", "mxfp4@torchao"} <= set(VARIANTS)
    assert "nvfp4_16x16@torchao" not in VARIANTS
    x = activation()
    r = run(x, "mxfp8_e4m3,mxfp8_e4m3@transformer_engine")
    # ocp's floor rule saturates block maxima; Transformer Engine's rceil never does
    assert r.result("mxfp8_e4m3").clipped_frac > 0 and r.result("mxfp8_e4m3@transformer_engine").clipped_frac == 0


# ------------------------------------------------------------------------------------------------
# the tensor's own statistics
# ------------------------------------------------------------------------------------------------


def test_stats_against_numpy() -> None:
    x = gradient()
    s = run(x, "bf16", chunk_elements=4096).stats
    x64 = x.astype(np.float64)
    d = x64 - x64.mean()
    assert s.numel == x.size and s.amax == float(np.abs(x).max())
    assert s.rms == pytest.approx(float(np.sqrt(np.mean(x64 * x64))), rel=1e-12)
    assert s.mean == pytest.approx(float(x64.mean()), rel=1e-9)
    assert s.std == pytest.approx(float(x64.std()), rel=1e-12)
    assert s.kurtosis == pytest.approx(float(np.mean(d**4) / np.mean(d**2) ** 2 - 3.0), rel=1e-9)
    # excess kurtosis: about 0 for normal data, 3 for Laplace
    rng = np.random.default_rng(0)
    assert abs(run(rng.standard_normal((512, 512)).astype(F32), "bf16").stats.kurtosis or 9) < 0.05
    assert run(rng.laplace(size=(512, 512)).astype(F32), "bf16").stats.kurtosis == pytest.approx(3.0, abs=0.15)
    assert run(np.ones((4, 4), F32), "bf16").stats.kurtosis is None  # constant: undefined


def test_outlier_channels() -> None:
    rng = np.random.default_rng(1)
    x = rng.standard_normal((1024, 64)).astype(F32)
    x[:, 3] *= 10  # RMS 10 × the median: an outlier channel
    x[:, 9] *= 10
    x[:, 20] *= 5  # 5 × the median: not one (the factor is 6)
    s = run(x, "bf16").stats
    assert (s.channels, s.outlier_channels) == (64, 2)
    assert run(x[0], "bf16").stats.outlier_channels is None  # 1-D: no channels
    assert run(weight(), "bf16").stats.outlier_channels == 4  # the sample's four large input channels
    assert run(activation(), "bf16").stats.outlier_channels == 3  # and the activation's three features


# ------------------------------------------------------------------------------------------------
# recipes: bits, applicability, parsing; the ranking
# ------------------------------------------------------------------------------------------------


def test_bits_per_element() -> None:
    shape = (256, 512)
    n = 256 * 512
    want = {"bf16": 16, "fp16": 16, "e4m3_tensor": 8 + 32 / n, "e4m3_row": 8 + 32 / 512, "e4m3_column": 8 + 32 / 256,
            "int8_row": 8 + 32 / 512, "int4_g32": 4 + 16 / 32, "int4_g128": 4 + 16 / 128, "mxfp8_e4m3": 8.25,
            "mxfp6_e2m3": 6.25, "mxfp4": 4.25, "mxfp4_rht": 4.25, "nvfp4": 4.5 + 32 / n,
            "nvfp4_16x16": 4 + 8 / 256 + 32 / n, "nvfp4_rht": 4.5 + 32 / n}
    for name, bits in want.items():
        assert RECIPES[name].bits_per_element(shape) == pytest.approx(bits, rel=1e-15), name


def test_applicability_reasons() -> None:
    assert RECIPES["mxfp4"].check((4, 48)) == "blocks of 32 do not divide the last axis (48)"
    assert RECIPES["nvfp4_16x16"].check((8, 32)) == "16×16 tiles do not divide the rows (8) of the matrix view"
    assert RECIPES["nvfp4_rht"].check((4, 40)) == ("the Hadamard transform needs the last axis (40) to be a "
                                                    "multiple of 16")
    assert RECIPES["e4m3_column"].check((64,)) == "a tensor with fewer than two axes has no columns (channels)"
    assert RECIPES["int4_g128"].check((2, 3, 256)) is None  # N-D: blocks along the last axis
    r = run(np.ones((4, 48), F32), "mxfp4,bf16").result("mxfp4")
    assert r.skipped == "blocks of 32 do not divide the last axis (48)" and r.rms_rel_err is None
    assert r.to_dict()["skipped"] == r.skipped


def test_parse_recipes() -> None:
    assert [r.name for r in parse_recipes("default")][:3] == ["bf16", "e4m3_tensor", "e4m3_row"]
    assert len(parse_recipes("all")) == len(RECIPES)
    assert [r.name for r in parse_recipes("NVFP4@TorchAO, nvfp4, nvfp4@ocp")] == ["nvfp4@torchao", "nvfp4"]
    assert parse_recipes("bf16@ml_dtypes")[0].convention == "ml_dtypes"
    with pytest.raises(ValueError, match="unknown recipe 'fp7'; known: bf16, fp16"):
        parse_recipes("fp7")
    with pytest.raises(ValueError, match="unknown block convention 'nvidia'"):
        parse_recipes("nvfp4@nvidia")
    with pytest.raises(ValueError, match="the torchao convention has NVFP4 1×16 blocks only"):
        parse_recipes("nvfp4_16x16@torchao")
    with pytest.raises(ValueError, match="recipe int8_row takes no convention"):
        parse_recipes("int8_row@torchao")
    with pytest.raises(ValueError, match="no recipe given"):
        parse_recipes(" , ")


def _res(name: str, err: float | None, bits: float) -> RecipeResult:
    return RecipeResult(name, err, None, None, None, None, bits)


def test_ranking_rule() -> None:
    rs = [_res("a", 0.1, 8), _res("b", 0.01, 16), _res("c", 0.1, 4.5), _res("d", math.nan, 4),
          _res("e", math.inf, 16), RecipeResult.not_applicable("f", "blocks"), _res("g", 0.2, 4.5)]
    # by error; the tie a/c broken by fewer bits; +inf after finite errors, NaN last, skipped left out
    assert rank_results(rs) == ["b", "c", "a", "g", "e", "d"]
    # a is beaten by c (same error, fewer bits); g by c; e by b; NaN is never on the front
    assert pareto_front(rs) == ["b", "c"]


def test_file_ranking_pools_errors_and_puts_incomplete_recipes_last() -> None:
    x, y = activation()[:, :64], np.ones((4, 48), F32) * F32(0.3)
    report = analyze_arrays({"x": x, "y": y}, "mxfp4,e4m3_tensor")
    rows = report.ranking
    assert [r["recipe"] for r in rows] == ["e4m3_tensor", "mxfp4"]
    assert rows[1]["complete"] is False and rows[1]["tensors"] == 1
    e = rows[0]
    xs = [report.tensor(n).result("e4m3_tensor") for n in ("x", "y")]
    assert e["rms_rel_err"] == pytest.approx(math.sqrt(sum(r.error for r in xs) / sum(r.signal for r in xs)))
    assert e["bits_per_element"] == pytest.approx((xs[0].bits_per_element * x.size + xs[1].bits_per_element * y.size)
                                                  / (x.size + y.size))


def test_detail_histogram_grid_and_map() -> None:
    x = activation()
    report = analyze_arrays({"a": x}, "nvfp4,bf16", detail=("a", "nvfp4"))
    d = report.tensor("a").detail
    assert d is not None and d.recipe == "nvfp4" and d.grid_kind == "values"
    assert 2 ** np.array(d.grid_log2) == pytest.approx([0.5, 1, 1.5, 2, 3, 4, 6])  # E2M1's positive values
    assert (d.flush_log2, d.clip_log2) == (-2.0, math.log2(7.0))  # 0.25 ties to 0; 7 is the edge above 6
    assert sum(d.counts_input) == x.size == sum(d.counts_scaled) + 0  # no zeros, no zero scales
    assert d.tile == (8, 16) and (d.map_rows, d.map_cols) == (64, 16)
    # each map cell is its tile's RMS relative error, recomputed here
    from lowprec.simulations.nvfp4 import quantize_nvfp4

    x_hat = quantize_nvfp4(x).dequantize().astype(np.float64)
    tile = (x_hat - x)[8:16, 32:48], x[8:16, 32:48].astype(np.float64)
    assert d.map_rel_err[1][2] == pytest.approx(float(np.linalg.norm(tile[0]) / np.linalg.norm(tile[1])), rel=1e-12)
    with pytest.raises(ValueError, match="recipe 'mxfp4' cannot be drawn for tensor 'a': it is not among"):
        analyze_arrays({"a": x}, "nvfp4", detail=("a", "mxfp4"))
    assert measure.format_grid(RECIPES["bf16"].fmt)[1] == "binades"
