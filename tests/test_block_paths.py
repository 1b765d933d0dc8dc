"""The compiled MX block quantizer (`simulations.quant._mx_kernels`) against the numpy reference path of
`quantize_mx`, bit for bit, for every block convention × element format × scale rule (and float64
input under ocp), on named edge blocks: all ±0, NaN (payloads, signs, all-NaN), ±Inf, amax exactly at
and one float32 step either side of the floor / rceil boundaries and of each element format's
overflow midpoint (max + half a step) across the whole E8M0 range (X = −127 … 127, beyond it the
clamps), subnormal amaxes, grid midpoints ±1 float32 step, FLT_MAX. Codes and scale codes are
compared as unsigned integers.

The independent oracles (exact rational formulas, torchao 0.18, Transformer Engine's reference) are
run on both paths in tests/test_blocks.py, test_torchao_blocks.py and test_te_reference.py (the
`each_codec_path` fixture); here the twin is checked where those oracles do not reach (every
convention on one edge set, stochastic rounding, threads, layouts, refusals), and the float32 log2
table of torchao's rceil against the reference function (near every threshold here; every float32
ratio in the slow sweep).
"""

from __future__ import annotations

import os
import time
from typing import Any, Callable

import numpy as np
import pytest

from lowprec import formats
from lowprec.formats import CastPolicy, FloatFormat, codec
from lowprec.simulations.block_conventions import BLOCK_CONVENTIONS, float32_log2_ceil_codes
from lowprec.simulations.mx import MXTensor, quantize_mx
from tests.block_oracles import edge_blocks, first_mismatches, step

pytestmark = pytest.mark.skipif(codec.compiled_kernels() is None, reason="numba is not installed")

F32 = np.float32
CASES = [(c.name, e, r) for c in BLOCK_CONVENTIONS.values() for e in c.mx_elements for r in c.rules]


def both_paths(fn: Callable[[], Any]) -> tuple[Any, Any]:
    with codec.codec_path("numpy"):
        want = fn()
    with codec.codec_path("fast"):
        got = fn()
    return want, got


def assert_same(want: MXTensor, got: MXTensor, labels: list[str] | None = None) -> None:
    assert want.codes.dtype == got.codes.dtype == np.uint8
    assert want.scale_codes.dtype == got.scale_codes.dtype == np.uint8
    assert want.codes.shape == got.codes.shape and want.scale_codes.shape == got.scale_codes.shape
    n_scale = int(np.sum(want.scale_codes.view(np.uint8) != got.scale_codes.view(np.uint8)))
    n_codes = int(np.sum(want.codes.view(np.uint8) != got.codes.view(np.uint8)))
    where = ""
    if labels is not None and (n_scale or n_codes):
        where = (first_mismatches(labels, want.scale_codes, got.scale_codes) + " | "
                 + first_mismatches(labels, want.codes, got.codes))
    assert (n_scale, n_codes) == (0, 0), f"{n_scale} scale and {n_codes} element mismatches; {where}"


def bits32(pattern: int) -> F32:
    return F32(np.array([pattern], np.uint32).view(F32)[0])


def path_edge_blocks(elem: FloatFormat, seed: int = 3) -> tuple[list[str], np.ndarray]:
    """tests/block_oracles.edge_blocks plus the rows this twin needs (blocks of 32, float32)."""
    grid = formats.decode(np.arange(elem.n_codes // 2), elem)
    grid = np.sort(grid[np.isfinite(grid)].astype(np.float64))
    labels, x = edge_blocks(32, elem.max, grid, seed=seed)
    rng = np.random.default_rng(seed)
    rows: list[np.ndarray] = list(x)

    def add(label: str, row: Any) -> None:
        labels.append(label)
        rows.append(np.asarray(row, F32))

    def base(scale: float) -> np.ndarray:
        with np.errstate(over="ignore", under="ignore"):
            return (rng.standard_normal(32) * scale).astype(F32)

    add("all -0", np.full(32, -0.0, F32))
    for pattern in (0x7F800001, 0xFFC00000, 0x7FFFFFFF, 0xFF800001):
        r = base(1.0)
        r[9] = bits32(pattern)
        add(f"NaN {pattern:#x}", r)
    add("Inf and -Inf only", np.resize(np.array([np.inf, -np.inf], F32), 32))
    half = (grid[-1] - grid[-2]) / 2  # the element's overflow midpoint is max + half a step
    for k in (-149, -140, -133, -127, -126, -120, -1, 0, 1, 64, 118, 120, 126, 127):
        for d in (-1, 0, 1):
            with np.errstate(over="ignore", under="ignore"):
                target = (elem.max + half) * 2.0**k
            if not 0 < target < 3.4e38:
                continue
            r = base(2.0**k)
            r[11] = step(target, d) * (-1 if d else 1)
            add(f"amax (max + half step)·2^{k} {d:+d} steps (overflow midpoint)", r)
            if elem.max * 2.0**k < 3.4e38 and elem.max * 2.0**k > 1.5e-45:
                r = base(2.0**k)
                r[12] = step(elem.max * 2.0**k, d)
                add(f"amax max·2^{k} {d:+d} steps", r)
    for amax in (2.0**-149, 3 * 2.0**-149, 2.0**-130, 2.0**-127, 2.0**-126, 1.17e-38):
        for d in (-1, 0, 1):
            if amax == 2.0**-149 and d < 0:
                continue
            r = np.zeros(32, F32)
            r[0] = step(amax, d)
            r[1:] = (rng.uniform(-1, 1, 31) * float(step(amax, d))).astype(F32)
            add(f"subnormal amax {amax:.3g} {d:+d} steps", r)
    for k in (-127, -100, 0, 50, 120):
        mids = (grid[:-1] + grid[1:]) / 2 * 2.0**k
        for d in (-1, 1):
            with np.errstate(over="ignore", under="ignore"):
                vals = np.resize(np.array([step(m, d) if m > 1.5e-45 else F32(0) for m in mids], F32), 32)
                vals[0] = F32(elem.max * 2.0**k)
            vals[1::2] *= -1
            add(f"midpoints·2^{k} {d:+d} step", vals)
    add("FLT_MAX", np.r_[F32(3.4028235e38), base(1e37)[1:]])
    add("2^127 and its neighbours", np.r_[F32(2.0**127), step(2.0**127, 1), step(2.0**127, -1), base(1e30)[3:]])
    return labels, np.stack(rows)


@pytest.mark.parametrize("convention, name, rule", CASES, ids=lambda v: str(v))
def test_edge_blocks_same_codes_on_both_paths(convention: str, name: str, rule: str) -> None:
    elem = formats.get_format(name)
    assert isinstance(elem, FloatFormat)
    labels, x = path_edge_blocks(elem)
    want, got = both_paths(lambda: quantize_mx(x, name, 32, rule, convention=convention))
    assert_same(want, got, labels)


@pytest.mark.parametrize("name", ["E4M3FN", "E5M2", "E3M2", "E2M3", "E2M1"])
@pytest.mark.parametrize("rule", ["floor", "ceil", "rceil", "even"])
def test_float64_input_same_codes_on_both_paths(name: str, rule: str) -> None:
    """ocp keeps float64 input: amaxes and elements beyond float32's range and precision."""
    elem = formats.get_format(name)
    assert isinstance(elem, FloatFormat)
    labels, x32 = path_edge_blocks(elem, seed=5)
    with np.errstate(invalid="ignore"):  # signalling NaN patterns are quieted by the cast
        x = x32.astype(np.float64)
    x[:, 20] *= 1 + 2.0**-40  # between float32 neighbours
    extra = np.random.default_rng(1).standard_normal((6, 32))
    extra[0, 3], extra[1, 4] = 1e300, -1e-310  # beyond float32; a float64 subnormal
    extra[2] = 5e-324 * np.arange(32)  # float64 subnormal amax
    extra[3] *= 2.0**-1050
    extra[4, 0] = np.nextafter(2.0**127 * elem.max, 0)
    extra[5, 0] = 2.0**200
    x = np.vstack([x, extra])
    labels = labels + [f"float64 row {i}" for i in range(6)]
    want, got = both_paths(lambda: quantize_mx(x, name, 32, rule))
    assert_same(want, got, labels)


@pytest.mark.parametrize("convention, name, rule", [("ocp", "E4M3FN", "floor"), ("torchao", "E2M1", "rceil"),
                                                    ("transformer_engine", "E5M2", "rceil")])
def test_threads_and_layouts_same_codes(convention: str, name: str, rule: str) -> None:
    """A tensor large enough to be split over threads (2^20 elements), blocks along either axis of a
    2-D and the middle axis of a 3-D array, against the reference; 1 and 2 threads agree."""
    rng = np.random.default_rng(4)
    x = (rng.standard_normal((512, 2048)) * np.exp2(rng.uniform(-30, 30, (512, 1)))).astype(F32)
    x[5, 7], x[300, 1000] = np.nan, -np.inf
    for axis in (-1, 0):
        want, got = both_paths(lambda: quantize_mx(x, name, 32, rule, axis=axis, convention=convention))
        assert_same(want, got)
        previous = codec.set_codec_threads(1)
        try:
            with codec.codec_path("fast"):
                one = quantize_mx(x, name, 32, rule, axis=axis, convention=convention)
        finally:
            codec.set_codec_threads(previous)
        assert_same(got, one)
    y = x[:64].reshape(4, 64, 512)
    want, got = both_paths(lambda: quantize_mx(y, name, 32, rule, axis=1, convention=convention))
    assert_same(want, got)


@pytest.mark.parametrize("name", ["E4M3FN", "E2M1"])
def test_stochastic_rounding_same_stream_on_both_paths(name: str) -> None:
    """ocp with a stochastic element policy: the kernel draws the reference's chunk keys and counts
    elements within each chunk, so three chunks of blocks give the same codes on both paths."""
    x = np.random.default_rng(6).standard_normal((3 * 8192 + 5, 4)).astype(F32)  # blocks of 4
    x[2, 2] = np.nan
    pol = formats.policy_for("ocp", name).with_(rounding="stochastic")
    want, got = both_paths(lambda: quantize_mx(x, name, 4, "rceil", policy=pol, rng=np.random.default_rng(9)))
    assert_same(want, got)
    other = quantize_mx(x, name, 4, "rceil", policy=pol, rng=np.random.default_rng(10))
    assert np.mean(other.codes != got.codes) > 0.01  # the stream is really used


def test_a_policy_the_element_cannot_take_raises_the_same_error_on_both_paths() -> None:
    """overflow='nonfinite' into E2M1, which has neither Inf nor NaN."""
    pol = CastPolicy(overflow="nonfinite")  # type: ignore[arg-type]
    x = np.zeros((2, 32), F32)
    x[1, :2] = [7.9, 4.0]
    messages = []
    for path in ("numpy", "fast"):
        with codec.codec_path(path):
            with pytest.raises(ValueError, match="overflow='nonfinite' needs a format with Inf or NaN") as err:
                quantize_mx(x, "E2M1", 32, "floor", policy=pol)
        messages.append(str(err.value))
    assert messages[0] == messages[1]


@pytest.mark.parametrize("convention", ["ocp", "torchao"])
def test_compiled_mx_allocates_only_its_output(convention: str) -> None:
    """Peak traced memory of the compiled MX quantizer (blocks along rows) is its output (codes and
    scale codes) plus less than 10% of it; the numpy path's chunk scratch is not allocated."""
    import tracemalloc

    x = np.random.default_rng(0).standard_normal((1024, 4096)).astype(F32)
    with codec.codec_path("fast"):
        quantize_mx(x[:8], "E4M3FN", 32, "floor", convention=convention)  # compile outside the measurement
        tracemalloc.start()
        t = quantize_mx(x, "E4M3FN", 32, "floor", convention=convention)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    out = t.codes.nbytes + t.scale_codes.nbytes
    assert peak - out <= 0.1 * out, (peak, out)


def _log2_reference(field: np.ndarray, mant: np.ndarray) -> np.ndarray:
    d = ((field.astype(np.uint32) << np.uint32(23)) | mant.astype(np.uint32)).view(F32)
    return float32_log2_ceil_codes(d).astype(np.int64)


@pytest.mark.parametrize("max_elem", [448.0, 57344.0, 28.0, 7.5, 6.0])
def test_log2_table_near_every_threshold(max_elem: float) -> None:
    """torchao rceil's step after the division, as the kernel's table, against the reference
    function at mantissas 0, max and each binade's threshold ±2 (the slow sweep covers every d)."""
    from lowprec.simulations.quant._mx_kernels import log2_tables

    base, thr = log2_tables(max_elem)
    offsets = np.tile(np.array([-2, -1, 0, 1, 2]), 255)
    mant = np.concatenate([np.clip(np.repeat(thr[:255], 5) + offsets, 0, (1 << 23) - 1),
                           np.zeros(255, np.int64), np.full(255, (1 << 23) - 1),
                           np.random.default_rng(0).integers(0, 1 << 23, 510)])
    fields = np.concatenate([np.repeat(np.arange(255), 5), np.arange(255), np.arange(255),
                             np.tile(np.arange(255), 2)])
    want = _log2_reference(fields, mant)
    got = base[fields] + (mant >= thr[fields])
    np.testing.assert_array_equal(got, want)


@pytest.mark.slow
def test_log2_table_every_float32_ratio() -> None:
    """Every non-negative finite float32 d (2^31 − 2^23 patterns) through the table and the
    reference function, for each MX element format's max (about a minute per format)."""
    from lowprec.simulations.quant._mx_kernels import log2_tables

    chunk = 1 << 24
    t0 = time.perf_counter()
    for max_elem in sorted({formats.get_format(n).max for n in ("E4M3FN", "E5M2", "E3M2", "E2M3", "E2M1")}):
        base, thr = log2_tables(float(max_elem))
        for lo in range(0, 0x7F800000, chunk):
            bits = np.arange(lo, min(lo + chunk, 0x7F800000), dtype=np.uint32)
            field, mant = (bits >> 23).astype(np.int64), (bits & 0x7FFFFF).astype(np.int64)
            want = float32_log2_ceil_codes(bits.view(F32)).astype(np.int64)
            got = base[field] + (mant >= thr[field])
            bad = np.flatnonzero(got != want)
            assert bad.size == 0, f"max {max_elem}: d bits {int(bits[bad[0]]):#x} want {want[bad[0]]} got {got[bad[0]]}"
    print(f"log2 table sweep: {time.perf_counter() - t0:.0f} s")


@pytest.mark.slow
@pytest.mark.parametrize("convention, name, rule", [("ocp", "E4M3FN", "floor"), ("ocp", "E2M1", "even"),
                                                    ("torchao", "E4M3FN", "rceil"), ("torchao", "E3M2", "floor"),
                                                    ("transformer_engine", "E5M2", "rceil")])
def test_every_float32_as_a_one_element_block(convention: str, name: str, rule: str) -> None:
    """All 2^32 float32 patterns as blocks of one element (amax = |x|: every scale code path and
    every element), both paths, in chunks of 2^24; LOWPREC_SWEEP_STRIDE=k checks every k-th chunk."""
    stride = int(os.environ.get("LOWPREC_SWEEP_STRIDE", "1"))
    t0 = time.perf_counter()
    for lo in range(0, 1 << 32, (1 << 24) * stride):
        x = np.arange(lo, lo + (1 << 24), dtype=np.uint64).astype(np.uint32).view(F32).reshape(-1, 1)
        want, got = both_paths(lambda: quantize_mx(x, name, 1, rule, convention=convention))
        assert_same(want, got)
    print(f"{convention} {name} {rule}: {time.perf_counter() - t0:.0f} s (stride {stride})")
