"""The compiled codec (formats._kernels) and the numpy reference through the same oracles.

Every check here runs on both paths (the `path` fixture forces one with `codec_path`): encode against
ml_dtypes and torch for every format and convention they implement, decode of every code, every
CastPolicy field against the readable scalar twin, refusals, shapes and threads. Codes are compared
as unsigned-integer views. The engine's own behaviour (fallback without numba, a read-only cache,
the environment knobs) is tested in subprocesses.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import tracemalloc
from pathlib import Path
from typing import Iterator

import numpy as np
import pytest

from lowprec import formats as F
from lowprec.formats import codec
from lowprec.gpu.vectors import all_inputs, structured_inputs
from tests.backends import (
    CODEC_FORMATS,
    ML_DTYPES,
    ML_DTYPES_CASTS,
    TORCH,
    ml_dtypes_decode,
    ml_dtypes_encode,
    torch_decode,
    torch_encode,
)

ROOT = Path(__file__).resolve().parents[1]
PATHS = ["numpy", "fast"]
SMALL_FLOATS = [f for f in CODEC_FORMATS if isinstance(f, F.FloatFormat) and f.bits <= 16]
FLOAT_ML = sorted(n for n in ML_DTYPES_CASTS if isinstance(F.get_format(n), F.FloatFormat))


@pytest.fixture(params=PATHS)
def path(request: pytest.FixtureRequest) -> Iterator[str]:
    if request.param == "fast" and codec.compiled_kernels() is None:
        pytest.skip("numba is not installed: no compiled path")
    with codec.codec_path(request.param):
        yield request.param


def _report(x: np.ndarray, want: np.ndarray, got: np.ndarray) -> str:
    bad = np.flatnonzero(want.astype(np.int64) != got.astype(np.int64))
    rows = [f"x={float(x.reshape(-1)[i])!r} want={int(want.reshape(-1)[i]):#x} got={int(got.reshape(-1)[i]):#x}"
            for i in bad[:8]]
    return f"{bad.size} mismatches of {x.size}:\n" + "\n".join(rows)


# ---- encode against the real backends --------------------------------------------------------------

@pytest.mark.parametrize("name", FLOAT_ML, ids=str)
def test_encode_vs_ml_dtypes(path: str, name: str) -> None:
    fmt = F.get_format(name)
    x = all_inputs(fmt, n_random=200_000, seed=11)
    want = ml_dtypes_encode(x, name)
    got = F.encode(x, fmt, F.policy_for("ml_dtypes", fmt))
    assert got.dtype == want.dtype
    assert np.array_equal(got, want), _report(x, want, got)


@pytest.mark.parametrize("name", sorted(TORCH), ids=str)
def test_encode_vs_torch(path: str, name: str) -> None:
    fmt = F.get_format(name)
    x = all_inputs(fmt, n_random=200_000, seed=12)
    want = torch_encode(x, name)
    got = F.encode(x, fmt, F.policy_for("torch", fmt))
    assert np.array_equal(got, want), _report(x, want, got)


@pytest.mark.parametrize("backend", ["ml_dtypes", "torch"])
@pytest.mark.parametrize("name", ["E4M3FN", "E5M2", "BF16", "FP16", "E8M0", "E2M1", "E4M3FNUZ"])
def test_encode_float64_vs_backends(path: str, backend: str, name: str) -> None:
    """float64 between float32 neighbours: torch and ml_dtypes < 0.7 round to float32 first (double
    rounding), ml_dtypes 0.7 rounds once; the installed ml_dtypes is the oracle."""
    if backend == "torch" and name not in TORCH:
        pytest.skip(f"torch 2.13 has no CPU cast to {name}")
    fmt = F.get_format(name)
    with np.errstate(invalid="ignore"):
        x = all_inputs(fmt, n_random=50_000, seed=13).astype(np.float64) * (1 + 2.0**-30)
    want = ml_dtypes_encode(x, name) if backend == "ml_dtypes" else torch_encode(x, name)
    got = F.encode(x, fmt, F.policy_for(backend, fmt))
    assert np.array_equal(got, want), _report(x, want, got)


def test_int_grids_vs_numpy_rint_clip(path: str) -> None:
    x = np.concatenate([np.arange(-140, 140, 0.25), np.random.default_rng(0).uniform(-300, 300, 20000),
                        [np.inf, -np.inf, 1e300, -1e300, -0.0, 0.5, 1.5, 2.5, -0.5, -2.5]])
    want8 = np.clip(np.rint(x), -128, 127).astype(np.int8).view(np.uint8)  # rint: ties to even
    np.testing.assert_array_equal(F.encode(x, F.INT8), want8)
    want4 = np.clip(np.rint(x), -8, 7).astype(np.int8).view(np.uint8) & 0x0F
    np.testing.assert_array_equal(F.encode(x.astype(np.float32), F.INT4), want4)


# ---- decode: every code --------------------------------------------------------------------------

def _canonical(values: np.ndarray) -> np.ndarray:
    """The 'canonical' NaN rule as a formula: quiet NaN 0x7FC00000 with the value's sign bit."""
    bits = values.view(np.uint32).copy()
    nan = np.isnan(values)
    bits[nan] = np.uint32(0x7FC00000) | (bits[nan] & np.uint32(0x80000000))
    return bits


@pytest.mark.parametrize("fmt", SMALL_FLOATS + [F.INT8, F.INT4], ids=lambda f: f.name)
def test_decode_every_code(path: str, fmt: F.Format) -> None:
    codes = np.arange(fmt.n_codes, dtype=np.uint16 if fmt.bits > 8 else np.uint8)
    if fmt.name in ML_DTYPES:
        want = ml_dtypes_decode(codes, fmt.name)
        np.testing.assert_array_equal(F.decode(codes, fmt).view(np.uint32), want.view(np.uint32))
        np.testing.assert_array_equal(F.decode(codes, fmt, nan_bits="canonical").view(np.uint32),
                                      _canonical(want))
    if fmt.name in TORCH:
        want_t = torch_decode(codes, fmt.name).view(np.uint32)
        np.testing.assert_array_equal(F.decode(codes, fmt, nan_bits="torch").view(np.uint32), want_t)
    # any integer dtype holding the same codes decodes the same
    for dt in (np.int64, np.uint32, np.int32):
        np.testing.assert_array_equal(F.decode(codes.astype(dt), fmt).view(np.uint32),
                                      F.decode(codes, fmt).view(np.uint32))


def test_decode_large_and_shaped(path: str) -> None:
    codes = np.random.default_rng(3).integers(0, 256, size=(1 << 20) + 5, dtype=np.uint8)
    want = ml_dtypes_decode(codes, "E4M3FN")
    np.testing.assert_array_equal(F.decode(codes, F.E4M3FN).view(np.uint32), want.view(np.uint32))
    c2 = codes[: 6 * 7 * 8].reshape(6, 7, 8)[:, ::2, ::-1]  # non-contiguous
    got = F.decode(c2, F.E4M3FN)
    assert got.shape == c2.shape
    np.testing.assert_array_equal(got.view(np.uint32), ml_dtypes_decode(c2, "E4M3FN").view(np.uint32))
    assert F.decode(np.uint8(0x38), F.E4M3FN).shape == ()
    assert float(F.decode(np.uint8(0x38), F.E4M3FN)) == 1.0  # 0.0111.000 = 2^0
    assert F.decode(np.zeros((0, 3), np.uint8), F.E4M3FN).shape == (0, 3)


@pytest.mark.parametrize("codes, fmt, bad", [
    (np.array([1, 2, 16], np.int64), F.E2M1, 16),
    (np.array([3, -1, 5], np.int8), F.E4M3FN, -1),
    (np.array([7, 300], np.uint16), F.E4M3FN, 300),
    (np.array([0, 1 << 16], np.int64), F.BF16, 1 << 16),
    (np.array([0, 2**63 + 5], np.uint64), F.E4M3FN, 2**63 + 5),
])
def test_decode_out_of_range_is_an_error(path: str, codes: np.ndarray, fmt: F.Format, bad: int) -> None:
    big = np.concatenate([np.zeros(1 << 20, codes.dtype), codes])  # also past the threading threshold
    for c in (codes, big):
        with pytest.raises(ValueError, match=f"code {bad} is out of range for {fmt.name}"):
            F.decode(c, fmt)


# ---- every CastPolicy field, against the scalar twin --------------------------------------------

def _variants(fmt: F.Format, dtype: type) -> list[F.CastPolicy]:
    """A base policy per format and variants covering every applicable value of every field
    (float64 inputs: the rounding modes and the float64 → float32 double rounding)."""
    has_nonfinite = fmt.has_inf or fmt.has_nan
    base = F.CastPolicy(overflow="nonfinite" if has_nonfinite else "saturate",
                        nan_to_finite="zero", unsigned_zero="smallest", unsigned_negative="magnitude")
    out = [base.with_(rounding=r) for r in ("nearest_even", "nearest_away", "toward_zero", "up", "down",
                                            "to_odd")]
    if dtype == np.float64:
        return out + [base.with_(float64_via_float32=True), base.with_(float64_via_float32=True, rounding="up")]
    if has_nonfinite:
        out += [base.with_(rounding=r, overflow="saturate") for r in ("nearest_even", "up")]
        out += [base.with_(rounding=r, overflow="saturate_propagate") for r in ("nearest_even", "to_odd")]
    if isinstance(fmt, F.FloatFormat) and fmt.subnormals:
        out += [base.with_(subnormals="flush", rounding=r) for r in ("nearest_even", "down")]
    if not fmt.has_nan:
        out += [base.with_(nan_to_finite=v) for v in ("signed_max", "negated_zero")]
    if isinstance(fmt, F.FloatFormat) and fmt.nan_encoding == "ieee":
        out += [base.with_(nan_payload=v) for v in ("all_ones", "all_ones_negative", "truncate", "quiet_truncate")]
    if isinstance(fmt, F.FloatFormat) and not fmt.signed:
        out += [base.with_(unsigned_zero="nan"), base.with_(unsigned_negative="nan"),
                base.with_(e8m0_float32_subnormals="exponent_field"),
                base.with_(e8m0_float32_subnormals="exponent_field", rounding="up")]
    return out


def _policy_inputs(fmt: F.Format) -> np.ndarray:
    if fmt.bits > 16:
        from lowprec.gpu.vectors import random_inputs, special_inputs

        return np.concatenate([special_inputs(), random_inputs(F.BF16, 40_000, seed=5)])
    x = structured_inputs(fmt)
    if x.size > 20_000:
        keep = np.random.default_rng(0).choice(x.size, 20_000, replace=False)
        x = np.concatenate([x[np.sort(keep)], x[-200:]])  # the specials sit at the end
    return x


@pytest.mark.parametrize("fmt", list(CODEC_FORMATS), ids=lambda f: f.name)
def test_every_policy_field_matches_numpy_and_scalar(fmt: F.Format) -> None:
    """For each policy variant and float32/float64 input: the compiled codes equal the numpy
    reference on every input (NaN payloads included) and the scalar twin on the non-NaN ones."""
    if codec.compiled_kernels() is None:
        pytest.skip("numba is not installed: no compiled path")
    x32 = _policy_inputs(fmt)
    rng = np.random.default_rng(1)
    for dtype in (np.float32, np.float64):
        with np.errstate(invalid="ignore", over="ignore"):
            x = x32.astype(dtype) if dtype == np.float32 else x32.astype(np.float64) * (1 + 2.0**-30)
        sample = rng.choice(np.flatnonzero(~np.isnan(x)), 600, replace=False)
        for pol in _variants(fmt, dtype):
            with codec.codec_path("fast"):
                fast = F.encode(x, fmt, pol)
            with codec.codec_path("numpy"):
                ref = F.encode(x, fmt, pol)
            assert np.array_equal(fast, ref), f"{pol} {np.dtype(dtype).name}\n" + _report(x, ref, fast)
            sca = np.array([F.encode_scalar(float(x[i]), fmt, pol) for i in sample])
            assert np.array_equal(fast[sample].astype(np.int64), sca), f"{pol}\n" + _report(x[sample], sca, fast[sample])


# ---- refusals: the same error, for the first offending element, on both paths -------------------

@pytest.mark.parametrize("values, fmt, policy, message", [
    ([1.0, -2.0, 0.0], F.E8M0, F.CastPolicy(), r"negative value -2\.0 cannot be encoded in unsigned E8M0"),
    ([1.0, 0.0, -2.0], F.E8M0, F.CastPolicy(), r"zero cannot be encoded in E8M0 \(it has no zero\)"),
    ([1.0, -0.0, -2.0], F.E8M0, F.CastPolicy(), r"zero cannot be encoded in E8M0"),
    ([1.0, -2.0, 0.0], F.E8M0, F.CastPolicy(unsigned_zero="nan"), r"negative value -2\.0"),
    ([1.0, np.nan], F.E2M1, F.CastPolicy(overflow="saturate"), r"NaN cannot be encoded in E2M1 \(it has no NaN\)"),
    ([np.nan, 3.0], F.INT8, F.CastPolicy(overflow="saturate"), r"NaN cannot be encoded in INT8"),
    ([2.5, np.nan], F.E3M2, F.CastPolicy(overflow="saturate", rounding="up"), r"NaN cannot be encoded in E3M2"),
])
def test_refusals(path: str, values: list[float], fmt: F.Format, policy: F.CastPolicy, message: str) -> None:
    small = np.array(values, np.float32)
    big = np.concatenate([np.ones((1 << 20) + 3000, np.float32), small])  # offender in the last range
    for x in (small, big, big.astype(np.float64)):
        with pytest.raises(ValueError, match=message):
            F.encode(x, fmt, policy)
    if policy.rounding is F.Rounding.NEAREST_EVEN:
        with pytest.raises(ValueError, match=message):
            F.encode(big, fmt, policy.with_(rounding="stochastic"), seed=1)


# ---- shapes, dtypes, threads -------------------------------------------------------------------

def test_shapes_and_input_dtypes(path: str) -> None:
    assert F.encode(np.float32(1.5), F.E4M3FN).shape == ()
    assert F.encode(np.zeros((0, 3), np.float32), F.E4M3FN).shape == (0, 3)
    x = np.linspace(-500, 500, 2 * 3 * 40).reshape(2, 3, 40)[:, ::2, ::-1]  # non-contiguous float64
    codes = F.encode(x, F.E5M2)
    assert codes.shape == x.shape and codes.dtype == np.uint8
    np.testing.assert_array_equal(codes, ml_dtypes_encode(np.ascontiguousarray(x), "E5M2"))
    ints = np.arange(-300, 300, dtype=np.int32)
    np.testing.assert_array_equal(F.encode(ints, F.BF16), ml_dtypes_encode(ints.astype(np.float64), "BF16"))
    halfs = np.linspace(-100, 100, 1001).astype(np.float16)
    np.testing.assert_array_equal(F.encode(halfs, F.E4M3FN, F.policy_for("ml_dtypes", F.E4M3FN)),
                                  ml_dtypes_encode(halfs.astype(np.float32), "E4M3FN"))
    assert F.encode(np.array([1.0], np.float32), F.FP32).dtype == np.uint32


@pytest.mark.parametrize("name, convention, rounding", [
    ("E4M3FN", "torch", "nearest_even"), ("E2M1", "ocp", "toward_zero"), ("E8M0", "torch", "nearest_even"),
    ("BF16", "torch", "stochastic"), ("INT8", "ocp", "stochastic"),
])
def test_threads_do_not_change_codes(path: str, name: str, convention: str, rounding: str) -> None:
    fmt = F.get_format(name)
    x = np.random.default_rng(4).standard_normal(3 * (1 << 20) + 333).astype(np.float32) * 8
    pol = F.policy_for(convention, fmt).with_(rounding=rounding)
    results = []
    for threads in (1, 2, 3):
        before = codec.set_codec_threads(threads)
        try:
            results.append(F.encode(x, fmt, pol, seed=99))
        finally:
            codec.set_codec_threads(before)
    for r in results[1:]:
        np.testing.assert_array_equal(r, results[0])


def test_compiled_encode_allocates_only_its_output() -> None:
    """Peak traced memory of a compiled encode is the output plus less than 10% of it."""
    if codec.compiled_kernels() is None:
        pytest.skip("numba is not installed: no compiled path")
    x = np.random.default_rng(0).standard_normal(1 << 22).astype(np.float32)
    pol = F.policy_for("torch", F.E4M3FN)
    with codec.codec_path("fast"):
        F.encode(x[:2048], F.E4M3FN, pol)  # compile outside the measurement
        F.encode(x[:2048], F.E4M3FN, pol.with_(rounding="stochastic"), seed=1)
        for p in (pol, pol.with_(rounding="stochastic")):
            tracemalloc.start()
            codes = F.encode(x, F.E4M3FN, p, seed=1 if p.rounding is F.Rounding.STOCHASTIC else None)
            _, peak = tracemalloc.get_traced_memory()
            tracemalloc.stop()
            assert peak - codes.nbytes <= 0.1 * codes.nbytes, (p.rounding, peak, codes.nbytes)


# ---- knobs and the engine --------------------------------------------------------------------------

def test_knobs_reject_bad_values() -> None:
    with pytest.raises(ValueError, match="codec path 'gpu' is not one of auto, fast, numpy"):
        codec.set_codec_path("gpu")
    with pytest.raises(ValueError, match="threads=0 must be a positive integer"):
        codec.set_codec_threads(0)
    with pytest.raises(ValueError, match="threads=True must be a positive integer"):
        codec.set_codec_threads(True)


def _run_python(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    full_env = dict(os.environ, PYTHONPATH=str(ROOT), **env)
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, env=full_env, timeout=600, cwd=str(ROOT))


def test_without_numba_the_numpy_path_runs_with_one_warning() -> None:
    res = _run_python("""
        import sys, warnings
        sys.modules["numba"] = None  # import numba now fails, as on a machine without it
        import numpy as np
        from lowprec import formats as F
        from lowprec.formats import codec
        x = np.linspace(-500, 500, 50_000, dtype=np.float32)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            a = F.encode(x, F.E4M3FN)
            b = F.encode(x, F.E5M2)
            c = F.decode(a, F.E4M3FN)
        with codec.codec_path("numpy"):
            assert np.array_equal(a, F.encode(x, F.E4M3FN))
        msgs = [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]
        print(len(msgs), msgs[0] if msgs else "")
    """, LOWPREC_CODEC="fast")
    assert res.returncode == 0, res.stderr
    count, _, message = res.stdout.strip().partition(" ")
    assert count == "1" and "compiled codec is unavailable" in message and "numpy path" in message


def test_read_only_install_compiles_in_memory(tmp_path: Path) -> None:
    """No writable cache directory: numba finds no cache locator; kernels still compile and run."""
    res = _run_python("""
        import numba.core.caching as caching
        caching.CacheImpl._locator_classes = []  # as where no cache directory is writable
        import numpy as np
        from lowprec import formats as F
        from tests.backends import ml_dtypes_encode
        x = np.linspace(-500, 500, 50_000, dtype=np.float32)
        got = F.encode(x, F.E5M2, F.policy_for("ml_dtypes", F.E5M2))
        assert np.array_equal(got, ml_dtypes_encode(x, "E5M2"))
        print("ok")
    """, LOWPREC_CODEC="fast", NUMBA_CACHE_DIR=str(tmp_path / "unused"))
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "ok"


def test_bad_environment_values_warn_and_fall_back() -> None:
    res = _run_python("""
        import warnings
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            from lowprec.formats import codec
        print(codec._PATH, codec.codec_threads() >= 1, len(caught))
    """, LOWPREC_CODEC="gpu", LOWPREC_CODEC_THREADS="many")
    assert res.returncode == 0, res.stderr
    assert res.stdout.split() == ["auto", "True", "2"]
