"""The recipe lab's compiled kernels (`simulations.lab._kernels`, issue 30 item 6) piece by piece
against independent references: numpy's own reductions (pairwise row sums, column sums, `np.ldexp`),
`math.fsum`, numpy's and BLAS's Hadamard products (`quant.rht`), the quantizers' own codes, scales
and `dequantize`, and the lab's numpy reference path for every recipe and convention on adversarial
rows (zeros, subnormals, NaN, ±Inf, values next to FP32's largest, amaxes one float32 step either
side of a scale boundary); then the metrics' formulas on the compiled path — RMS relative error, SQNR,
max |x̂ − x|, clipped and flushed fractions, the statistics, histograms and error maps — against
direct computations here (exact rationals, ml_dtypes casts, fsum); and the numpy path where numba
is missing. `tests/test_lab_frozen.py` checks whole reports bit for bit."""

from __future__ import annotations

import math
import os
import subprocess
import sys
import textwrap
from fractions import Fraction
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
import pytest

from lowprec import strictjson
from lowprec.formats import codec
from lowprec.simulations.lab import _kernels as K
from lowprec.simulations.lab import analyze_arrays, measure
from lowprec.simulations.lab.measure import ExactSum, RecipeSums, StatsSums
from lowprec.simulations.lab.readers import array_source
from lowprec.simulations.lab.recipes import (
    GlobalAmax,
    block_layout,
    fused_cast,
    parse_recipes,
    quantize_chunk,
    transform_compiled,
)
from lowprec.simulations.lab.runner import analyze_rows
from lowprec.simulations.scaling.metrics import overflow_threshold
from lowprec.simulations.quant.rht import RHT_CONVENTIONS, apply_rht, inverse_rht
from tests import lab_frozen
from tests import test_lab_metrics as oracle
from tests.block_oracles import edge_blocks, wide_tensor
from tests.scaling_oracles import code_value, rne_code

ROOT = Path(__file__).resolve().parents[1]
F32 = np.float32
ALL = lab_frozen.recipe_names()  # every recipe and every other convention of each


def bits(a: Any) -> np.ndarray:
    a = np.asarray(a)
    return a.view(np.uint64 if a.dtype == np.float64 else np.uint32)


def adversarial(dtype: Any = F32, cols: int = 256) -> np.ndarray:
    """Rows of edge cases (`tests.block_oracles.edge_blocks`: zeros, subnormals, NaN, ±Inf, a huge
    element, amaxes at and one step beside power-of-two boundaries) laid out `cols` wide, plus a
    wide-range row block (2^-12 … 2^12)."""
    _, rows = edge_blocks(cols, 448.0)
    wide = wide_tensor(32, rows=16, cols=cols)
    return np.concatenate([rows, wide]).astype(dtype)


def finite_adversarial(cols: int = 256) -> np.ndarray:
    x = adversarial(F32, cols)
    return x[np.isfinite(x).all(axis=1)]


# ------------------------------------------------------------------------------------------------
# the building blocks against numpy
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("n", [*range(0, 140), 255, 256, 257, 511, 1000, 1024, 4095, 4097, 16385, 65536, 70001])
def test_pairwise_row_sum_is_numpy_add_reduce(n: int) -> None:
    rng = np.random.default_rng(n)
    rows = max(1, 4000 // max(n, 1))
    a = rng.standard_normal((rows, n)) * np.exp2(rng.integers(-60, 60, (rows, n)))
    a[rng.random((rows, n)) < 0.05] = 0.0
    a[rng.random((rows, n)) < 0.02] *= -1e-300
    want = a.sum(axis=1)
    got = np.array([K._row_sum(np.ascontiguousarray(r), n) for r in a])
    assert np.array_equal(bits(got), bits(want))
    z = np.full(max(n, 1), -0.0)  # numpy adds to +0.0: a row of -0.0 sums to +0.0
    assert bits(K._row_sum(z, z.size)) == bits(np.add.reduce(z))


def test_descale_is_numpy_ldexp_for_every_exponent() -> None:
    rng = np.random.default_rng(1)
    v = np.concatenate([rng.standard_normal(64) * np.exp2(rng.integers(-1074, 1023, 64)),
                        [0.0, -0.0, 5e-324, -5e-324, 1.7976931348623157e308, np.inf, -np.inf, np.nan]])
    for e in [*range(-1100, -1000, 7), *range(-60, 61), *range(1000, 1100, 7), -1023, -1024, 1023, 1024, 1074]:
        factor = K.descale_factor(e)
        got = np.array([K._descale(float(x), e, factor) for x in v])
        with np.errstate(over="ignore"):
            want = np.ldexp(v, -e)
        same = (bits(got) == bits(want)) | (np.isnan(got) & np.isnan(want))
        assert same.all(), (e, v[~same][:3], got[~same][:3], want[~same][:3])


def test_exact_sum_compiled_is_the_python_loop_and_fsum() -> None:
    rng = np.random.default_rng(2)
    for trial in range(20):
        v = rng.standard_normal(300) * np.exp2(rng.integers(-1000, 1000, 300))
        v[::7] = -v[::7][::-1]  # cancellations
        if trial % 3 == 0:
            v[5] = 1e308
            v[6] = 1e308  # a sum that overflows on the way
        a, b = ExactSum(), ExactSum()
        for part in np.array_split(v, 7):
            a.add(part)
            b.add(part, compiled=True)
        assert bits(np.array(a.partials)).tolist() == bits(np.array(b.partials)).tolist()
        assert bits(np.float64(a.value)) == bits(np.float64(b.value))
        if math.isfinite(a.value) and trial % 3:
            assert a.value == math.fsum(v)
    c = ExactSum()
    c.add(np.array([1.0, np.inf, 2.0, -np.inf]), compiled=True)
    assert math.isnan(c.value)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_stats_kernels_are_the_numpy_sums(dtype: Any) -> None:
    x = adversarial(dtype, 256)
    x[3, 7] = dtype(-0.0)
    fin = np.isfinite(x)
    rows = np.empty(x.shape[0])
    finite, zeros, amax = K.stats_first(np.ascontiguousarray(x), 0, x.shape[0], rows)
    xf = np.where(fin, x, 0.0).astype(np.float64)
    assert (finite, zeros) == (int(fin.sum()), int(np.count_nonzero(x == 0)))
    assert amax == float(np.abs(np.where(fin, x, 0)).max())
    assert np.array_equal(bits(rows), bits(xf.sum(axis=1)))
    for e in (0, 3, -40):
        mean = float(xf.mean())
        factor = K.descale_factor(e)
        sumsq, m2, m4 = np.empty(x.shape[0]), np.empty(x.shape[0]), np.empty(x.shape[0])
        cs, cc = np.zeros(x.shape[1]), np.zeros(x.shape[1], np.int64)
        with np.errstate(over="ignore", invalid="ignore"):
            n = K.stats_second(np.ascontiguousarray(x), 0, x.shape[0], e, factor, mean, sumsq, m2, m4, cs, cc, True)
            xs = np.where(fin, np.ldexp(x.astype(np.float64), -e), 0.0)
            d = np.where(fin, np.ldexp(x.astype(np.float64) - mean, -e), 0.0)
        assert n == int(fin.sum())
        assert np.array_equal(bits(sumsq), bits((xs * xs).sum(axis=1)))
        assert np.array_equal(bits(m2), bits((d * d).sum(axis=1)))
        assert np.array_equal(bits(m4), bits(((d * d) * (d * d)).sum(axis=1)))
        assert np.array_equal(bits(cs), bits((xs * xs).sum(axis=0)))
        assert np.array_equal(cc, fin.sum(axis=0))


@pytest.mark.parametrize("convention", list(RHT_CONVENTIONS))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_rht_forward_and_inverse_are_the_numpy_products(convention: str, dtype: Any) -> None:
    rht = RHT_CONVENTIONS[convention]
    h = rht.matrix(0)
    x = finite_adversarial(256).astype(dtype)
    rng = np.random.default_rng(3)  # blocks whose 16 values span 2^±60: the sums' order shows
    x = np.concatenate([x, (rng.standard_normal((64, 256)) * np.exp2(rng.integers(-60, 60, (64, 256)))).astype(dtype)])
    out = np.empty_like(x)
    in_order = rht.accumulate == "float32_in_order" and dtype == np.float32
    K.rht_forward(np.ascontiguousarray(x), h, in_order, 0, x.shape[0], out)
    want = apply_rht(x, h, accumulate=rht.accumulate)
    assert np.array_equal(bits(out), bits(want))
    # the inverse inside the metric kernel: x̂ written out, against numpy's (BLAS) product
    y = want.astype(np.float64)
    codes = np.zeros(x.shape, np.uint8)  # table[0] · scale = the values themselves: scale y, table 1
    err = np.empty(x.shape[0])
    x_hat = np.empty(x.size)
    table = np.ones(256)
    K.recipe_sums(np.ascontiguousarray(x), codes, table, y, 1, 1, False, np.ascontiguousarray(x),
                  np.ascontiguousarray(h.T), 1e300, False, 0, 1.0, True, 0, x.shape[0], err, x_hat)
    assert np.array_equal(bits(x_hat.reshape(x.shape)), bits(inverse_rht(y, h)))


def test_transform_compiled_matches_transform_input_for_every_rht_recipe() -> None:
    from lowprec.simulations.quant.engine import transform_input

    x = finite_adversarial(128)
    for name in [n for n in ALL if "rht" in n]:
        r = parse_recipes(name)[0]
        for arr in (x, x.astype(np.float64)):
            with codec.codec_path("fast"):
                got = transform_compiled(r, arr)
            assert got is not None
            want, h = transform_input(r, arr)
            assert got[0].dtype == want.dtype and np.array_equal(bits(got[0]), bits(want)), name
            assert np.array_equal(got[1], h)
    with codec.codec_path("fast"):  # one block of 16: numpy's product takes another order; numpy runs
        assert transform_compiled(parse_recipes("nvfp4_rht")[0], x[:1, :16]) is None


def test_a_single_rht_block_takes_the_numpy_path() -> None:
    """A chunk of one block of 16 under an RHT recipe: numpy's product of one row (gemv) may sum in
    another order than the kernels, so the compiled path leaves that chunk to numpy: the same sums."""
    x = (np.random.default_rng(10).standard_normal((1, 16)) * np.exp2(np.arange(-40, 40, 5))).astype(F32)
    ran = 0
    for name in [n for n in ALL if "rht" in n]:
        r = parse_recipes(name)[0]
        if r.check(x.shape) is None:
            ran += 1
            assert _sums(r, x, "fast") == _sums(r, x, "numpy"), name
    assert ran >= 3


# ------------------------------------------------------------------------------------------------
# each recipe: layouts, fused quantizers and sums against the quantizers and the numpy path
# ------------------------------------------------------------------------------------------------


def _inputs() -> dict[str, np.ndarray]:
    x = adversarial(F32, 256)
    big = (np.random.default_rng(4).standard_t(3, (128, 256)) * 1e-3).astype(F32)
    return {"float32": x, "float64": x.astype(np.float64), "float64 huge": big.astype(np.float64) * 1e300,
            "finite": finite_adversarial(256), "student-t": big}


INPUTS = _inputs()


@pytest.mark.parametrize("name", ALL)
def test_block_layout_is_element_scales_and_dequantize(name: str) -> None:
    r = parse_recipes(name)[0]
    for label, x in INPUTS.items():
        if r.check(x.shape) is not None:
            continue
        amax = GlobalAmax()
        with codec.codec_path("numpy"), np.errstate(all="ignore"):
            amax.add(r, x)
            q = quantize_chunk(r, x, amax)
            res = q.result
        lay = block_layout(res)
        assert lay is not None, (name, label)
        rows, cols = x.shape
        idx_r, idx_c = np.arange(rows) // lay.br, np.arange(cols) // lay.bc
        scales = lay.scales[idx_r][:, idx_c]
        with np.errstate(invalid="ignore", over="ignore"):
            values = lay.table[res.codes.astype(np.int64)] * scales
            if lay.round32:
                values = values.astype(np.float32).astype(np.float64)
            want = np.asarray(res.dequantize(), np.float64)
        es = res.element_scales()
        assert np.array_equal(bits(scales), bits(es)) or np.array_equal(scales, es, equal_nan=True), (name, label)
        same = (bits(values) == bits(want)) | (np.isnan(values) & np.isnan(want))
        assert same.all(), (name, label, values[~same][:3], want[~same][:3])


def _sums(r: Any, x: np.ndarray, path: str) -> tuple[Any, ...]:
    """Every field a RecipeSums accumulates for recipe r on chunk x, on one codec path."""
    with codec.codec_path(path), np.errstate(all="ignore"):
        stats = StatsSums(cols=x.shape[1], has_channels=True)
        stats.add_first(x)
        amax = GlobalAmax()
        amax.add(r, x)
        c = stats.add_second(x)
        sums = RecipeSums(r, scale_log2=stats.scale_log2)
        sums.add(x, quantize_chunk(r, x, amax), c)
    return (bits(np.array(sums.signal.partials)).tolist(), bits(np.array(sums.error.partials)).tolist(),
            bits(np.float64(sums.error.special)).tolist(), bits(np.float64(sums.max_abs)).tolist(), sums.clipped,
            sums.zeroed, sums.numel)


@pytest.mark.parametrize("name", ALL)
def test_recipe_sums_compiled_are_the_numpy_sums(name: str) -> None:
    r = parse_recipes(name)[0]
    for label, x in INPUTS.items():
        if r.check(x.shape) is None:
            assert _sums(r, x, "fast") == _sums(r, x, "numpy"), (name, label)


@pytest.mark.parametrize("name", [n for n in ALL if parse_recipes(n)[0].scheme.value in ("scaled", "nvfp4")])
def test_fused_quantizer_codes_are_the_quantizers(name: str) -> None:
    r = parse_recipes(name)[0]
    ran = 0
    for label, x in INPUTS.items():
        if r.check(x.shape) is not None:
            continue
        amax = GlobalAmax()
        with codec.codec_path("fast"), np.errstate(all="ignore"):
            amax.add(r, x)
            q = quantize_chunk(r, x, amax)
            f = q.fused
            if f is None:
                continue
            ran += 1
            codes = np.empty(x.size, np.uint16)
            err = np.empty(x.shape[0])
            x_hat = np.empty(x.size)
            edge, over = overflow_threshold(r.fmt)
            h_inv = np.zeros((0, 0)) if f.hadamard is None else np.ascontiguousarray(f.hadamard.T)
            *_, refused = f.kernel(np.ascontiguousarray(x), f.src, f.a, f.s, f.br, f.bc, f.divide, f.round32, f.table,
                                   h_inv, edge, over, 0, 1.0, False, 0, x.shape[0], err, x_hat, codes)
        with codec.codec_path("numpy"), np.errstate(all="ignore"):
            ref = quantize_chunk(r, x, amax)
            want = ref.result.codes
            want_hat = ref.x_hat
        assert not refused
        assert np.array_equal(codes.reshape(x.shape), want.astype(np.uint16)), (name, label)
        got_hat = x_hat.reshape(x.shape)
        same = (bits(got_hat) == bits(want_hat)) | (np.isnan(want_hat) & np.isnan(got_hat))
        assert same.all(), (name, label)
    if r.convention == "ocp":  # scaled casts and NVFP4 under the ocp rule have a fused kernel
        assert ran > 0, name


# ------------------------------------------------------------------------------------------------
# the metrics' formulas on the compiled path, against direct computations
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["fast", "numpy"])
@pytest.mark.parametrize("test", [oracle.test_e4m3_per_tensor_against_exact_rounding,
                                  oracle.test_int8_per_row_against_rint,
                                  oracle.test_bf16_and_fp16_casts_against_ml_dtypes_and_numpy,
                                  oracle.test_fp16_overflow_is_clipped_and_infinite_error,
                                  oracle.test_exact_cast_has_zero_error_and_infinite_sqnr_in_strict_json,
                                  oracle.test_stats_against_numpy, oracle.test_outlier_channels,
                                  oracle.test_detail_histogram_grid_and_map],
                         ids=lambda t: getattr(t, "__name__", str(t)))
def test_metric_oracles_on_both_paths(test: Any, path: str) -> None:
    with codec.codec_path(path):
        test()


def _report(x: np.ndarray, recipes: str, chunk: int = 1 << 20, detail: str | None = None) -> Any:
    ref, src = array_source(x, "t")
    with codec.codec_path("fast"):
        return analyze_rows(ref, src, parse_recipes(recipes), chunk, detail)


def test_e4m3_row_metrics_with_specials_against_exact_rounding_in_chunks() -> None:
    """E4M3 per row on a chunked tensor with NaN, ±Inf, zeros and a flushing element, each element
    rounded here as an exact rational (`scaling_oracles.rne_code`) from the FP32 encode scale 448 /
    row amax (1 for a row whose amax is not finite) and decoded with the stored decode scale, the
    float64 reciprocal of the encode scale: RMS relative error and SQNR over the finite elements,
    max |x̂ − x|, the flushed and clipped fractions over all elements."""
    rng = np.random.default_rng(5)
    x = (rng.standard_normal((48, 128)) * 3).astype(F32)
    x[2, 5], x[7, 0], x[7, 9], x[30, 3] = np.nan, np.inf, -np.inf, 0.0
    x[11, 1] = F32(1e-7)  # flushes: far below E4M3's smallest subnormal after scaling
    r = _report(x, "e4m3_row", chunk=1024).result("e4m3_row")
    num = den = Fraction(0)
    max_abs, zeroed = 0.0, 0
    for row in x:
        fin = np.isfinite(row)
        amax = float(np.abs(row).max()) if fin.all() else math.nan
        enc = F32(448.0 / amax) if math.isfinite(amax) and amax > 0 else F32(1.0)
        for v, ok in zip(row, fin):
            if not ok:
                continue
            code = rne_code(Fraction(float(v)) * Fraction(float(enc)), "E4M3FN")
            back = Fraction(code_value(code, "E4M3FN") * (1.0 / float(enc)))
            if v != 0 and back == 0:
                zeroed += 1
            d = back - Fraction(float(v))
            num += d * d
            den += Fraction(float(v)) ** 2
            max_abs = max(max_abs, abs(float(d)))
    assert r.rms_rel_err == pytest.approx(math.sqrt(num / den), rel=1e-12)
    assert r.sqnr_db == pytest.approx(10 * math.log10(den / num), rel=1e-12)
    assert r.max_abs_err == max_abs
    assert r.zero_frac == zeroed / x.size and zeroed >= 1
    assert r.clipped_frac == 0.0


def test_mxfp4_clipped_fraction_and_max_against_the_ocp_rule() -> None:
    """MXFP4 (ocp floor rule): X = floor(log2 block amax) − 2; an element clips when |x| / 2^X lies
    beyond 6's rounding bin: above 7, the midpoint to the next binade's 8, or at 7 itself, a tie that
    nearest-even sends up (6 = 1.1₂ · 2² has an odd significand); x̂ = E2M1 (ml_dtypes) of the
    saturated quotient (exact in float32) times 2^X."""
    rng = np.random.default_rng(6)
    x = (rng.standard_normal((64, 256)) * np.exp2(rng.integers(-8, 8, (64, 1)))).astype(F32)
    x[0, :32] = F32(1.0)
    x[0, 0] = F32(1.75)  # block amax 1.75: X = -2 and 1.75 / 2^-2 = 7, the tie: clipped
    x[1, :32] = F32(1.0)
    x[1, 0] = F32(1.74999)  # just below: rounds to 6 inside the bin, not clipped
    r = _report(x, "mxfp4").result("mxfp4")
    b = x.astype(np.float64).reshape(64, -1, 32)
    X = np.floor(np.log2(np.abs(b).max(axis=2, keepdims=True))) - 2
    q = b / np.exp2(X)
    clipped = int(np.count_nonzero(np.abs(q) >= 7))
    assert abs(q[0, 0, 0]) == 7 and abs(q[1, 0, 0]) < 7
    x_hat = np.clip(q, -6, 6).astype(ml_dtypes.float4_e2m1fn).astype(np.float64) * np.exp2(X)
    assert r.clipped_frac == clipped / x.size and clipped >= 1
    assert r.max_abs_err == float(np.abs(x_hat - b).max())
    assert r.rms_rel_err == pytest.approx(float(np.linalg.norm(x_hat - b) / np.linalg.norm(b)), rel=1e-12)
    assert r.zero_frac == int(np.count_nonzero((b != 0) & (x_hat == 0))) / x.size


def test_nvfp4_rht_metrics_against_the_transform_and_the_ocp_rule() -> None:
    """NVFP4 after the RHT (ocp): y = x·H (seeded signs, rounded to float32), tensor scale
    ts = fl32(amax_y / 2688), block scale s = E4M3(fl64(block amax / (6 ts))), elements
    E2M1(fl64(y / (s · ts))) — each rounded here as an exact rational (nearest even, saturating);
    x̂ = fl32(code · s · ts) · Hᵀ; flushed counted on y, where the cast happens."""
    rng = np.random.default_rng(7)
    x = (rng.standard_t(4, (32, 128)) * 0.02).astype(F32)
    x[3, 16:32] = F32(0.0)  # a zero block: scale 0, zero codes
    h = RHT_CONVENTIONS["seeded"].matrix(0)
    y = (x.astype(np.float64).reshape(-1, 16) @ h).astype(F32).reshape(x.shape)
    ts = float(F32(float(np.abs(y).max()) / 2688.0))
    yb = y.astype(np.float64).reshape(-1, 16)
    out = np.zeros_like(yb)
    for i, block in enumerate(yb):
        s = code_value(rne_code(Fraction(float(np.abs(block).max() / (6 * ts))), "E4M3FN"), "E4M3FN")
        full = s * ts
        for j, v in enumerate(block):
            q = v / full if full > 0 else 0.0
            out[i, j] = float(F32(code_value(rne_code(Fraction(q), "E2M1"), "E2M1") * full))
    x_hat = (out @ h.T).reshape(x.shape)
    r = _report(x, "nvfp4_rht").result("nvfp4_rht")
    d = x_hat - x.astype(np.float64)
    assert r.max_abs_err == float(np.abs(d).max())
    assert r.rms_rel_err == pytest.approx(float(np.linalg.norm(d) / np.linalg.norm(x.astype(np.float64))), rel=1e-12)
    assert r.zero_frac == int(np.count_nonzero((yb != 0) & (out == 0))) / x.size
    assert r.clipped_frac == 0.0


def test_statistics_with_specials_and_chunks_against_fsum() -> None:
    """amax, RMS, mean, std and excess kurtosis over the finite elements (population moments), the
    exact-zero share and the non-finite count, on the compiled path over many chunks."""
    rng = np.random.default_rng(8)
    x = rng.laplace(size=(300, 64)).astype(F32)
    x[4, 4], x[100, 9], x[200, 0] = np.nan, np.inf, 0.0
    s = _report(x, "bf16", chunk=640).stats
    v = [float(a) for a in x.reshape(-1) if np.isfinite(a)]
    n = len(v)
    mean = math.fsum(v) / n
    m2 = math.fsum((a - mean) ** 2 for a in v) / n
    m4 = math.fsum((a - mean) ** 4 for a in v) / n
    assert (s.numel, s.nonfinite, s.zero_frac) == (x.size, 2, 1 / x.size)
    assert s.amax == max(abs(a) for a in v)
    assert s.mean == pytest.approx(mean, rel=1e-12, abs=1e-15)
    assert s.rms == pytest.approx(math.sqrt(math.fsum(a * a for a in v) / n), rel=1e-12)
    assert s.std == pytest.approx(math.sqrt(m2), rel=1e-12)
    assert s.kurtosis == pytest.approx(m4 / (m2 * m2) - 3.0, rel=1e-10)


def _bin_of(v: float) -> int:
    """The histogram bin of |v| > 0, exactly: floor(8 · log2 |v|) from the binade and the mantissa's
    8th power against powers of two (rationals), shifted by LOG2_LO, clipped to the end bins."""
    m, e = math.frexp(abs(v))  # |v| = m · 2^e, 0.5 ≤ m < 1: log2 |v| = e − 1 + log2(2m)
    f = Fraction(2 * m) ** 8  # 1 ≤ f < 256: k = floor(8 · log2(2m)) is the largest k with 2^k ≤ f
    k = max(j for j in range(8) if Fraction(2) ** j <= f)
    n_bins = (measure.LOG2_HI - measure.LOG2_LO) * measure.BINS_PER_BINADE
    return min(max(8 * (e - 1) + k - measure.LOG2_LO * measure.BINS_PER_BINADE, 0), n_bins - 1)


def test_histograms_and_error_map_against_direct_computation() -> None:
    """The detail of MXFP8 on a chunked tensor: the input histogram by exact binning of log2 |x|, the
    scaled histogram of |x| / 2^X, and every error-map cell the RMS relative error of its tile."""
    rng = np.random.default_rng(9)
    x = (rng.standard_normal((96, 192)) * np.exp2(rng.integers(-6, 6, (96, 1)))).astype(F32)
    x[3, :32] = 0.0  # a zero block: zero scale-free values, NaN-free map
    d = _report(x, "mxfp8_e4m3", chunk=1500, detail="mxfp8_e4m3").detail
    assert d is not None
    n_bins = (measure.LOG2_HI - measure.LOG2_LO) * measure.BINS_PER_BINADE
    want_in = np.zeros(n_bins, np.int64)
    for v in x.reshape(-1):
        if v != 0:
            want_in[_bin_of(float(v))] += 1
    lo = round((d.bin_lo[0] - measure.LOG2_LO) * measure.BINS_PER_BINADE)
    assert d.counts_input == [int(c) for c in want_in[lo:lo + len(d.bin_lo)]]
    assert sum(d.counts_input) == np.count_nonzero(x) and d.zeros == x.size - np.count_nonzero(x)
    b = x.astype(np.float64).reshape(96, -1, 32)
    amax = np.abs(b).max(axis=2, keepdims=True)
    X = np.where(amax > 0, np.floor(np.log2(np.where(amax > 0, amax, 1))) - 8, -127)
    scaled = (np.abs(b) / np.exp2(X)).reshape(-1)
    want_sc = np.zeros(n_bins, np.int64)
    for v in scaled:
        if v > 0:
            want_sc[_bin_of(float(v))] += 1
    assert d.counts_scaled == [int(c) for c in want_sc[lo:lo + len(d.bin_lo)]]
    x_hat = np.clip(b / np.exp2(X), -448, 448).astype(ml_dtypes.float8_e4m3fn).astype(np.float64) * np.exp2(X)
    x_hat = x_hat.reshape(x.shape)
    th, tw = d.tile
    for i in range(d.map_rows):
        for j in range(d.map_cols):
            t = x[i * th:(i + 1) * th, j * tw:(j + 1) * tw].astype(np.float64)
            e = x_hat[i * th:(i + 1) * th, j * tw:(j + 1) * tw] - t
            sig, err = math.fsum((t * t).reshape(-1)), math.fsum((e * e).reshape(-1))
            want = 0.0 if err == 0 else math.sqrt(err / sig)
            assert d.map_rel_err[i][j] == pytest.approx(want, rel=1e-12), (i, j)


def test_pool_workers_share_the_cpus_for_the_codec_threads() -> None:
    from lowprec.simulations.lab.runner import available_cpus, open_executor, worker_threads

    assert worker_threads(1) == codec.codec_threads()
    assert worker_threads(10 * available_cpus()) == 1
    if available_cpus() < 2 or os.environ.get("LOWPREC_CODEC_THREADS"):
        pytest.skip("needs two CPUs and no LOWPREC_CODEC_THREADS")
    with open_executor(2) as pool:
        assert pool is not None
        assert pool.submit(codec.codec_threads).result(timeout=300) == worker_threads(2)


# ------------------------------------------------------------------------------------------------
# without numba: the numpy path, the same report
# ------------------------------------------------------------------------------------------------


def test_without_numba_the_lab_runs_the_numpy_path_with_the_same_report() -> None:
    names = ("w.studentt.fp32", "nonfinite.fp32", "line.fp32", "fp64.huge")
    code = f"""
        import sys, warnings
        sys.modules["numba"] = None  # import numba now fails, as on a machine without it
        warnings.simplefilter("ignore")
        from lowprec import strictjson
        from lowprec.simulations.lab import analyze_arrays
        from tests import lab_frozen
        t = lab_frozen.tensors()
        rep = analyze_arrays({{k: t[k] for k in {names!r}}}, lab_frozen.RECIPES, chunk_elements=1 << 16)
        assert "lowprec.simulations.lab._kernels" not in sys.modules
        sys.stdout.write(strictjson.dumps(rep.to_dict()))
    """
    env = dict(os.environ, PYTHONPATH=str(ROOT), LOWPREC_CODEC="fast")
    res = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, env=env,
                         timeout=900, cwd=str(ROOT))
    assert res.returncode == 0, res.stderr[-2000:]
    t = lab_frozen.tensors()
    with codec.codec_path("fast"):
        want = analyze_arrays({k: t[k] for k in names}, lab_frozen.RECIPES, chunk_elements=1 << 16)
    assert res.stdout == strictjson.dumps(want.to_dict())
