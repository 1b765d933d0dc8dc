"""formats.partition: the cast of every float64 as runs — the offline bin explorer's lookup table.

Oracles: the installed ml_dtypes' astype from float64 (0.7 rounds once, earlier releases through
float32 first, as the versioned ml_dtypes convention says) and torch's `.to(dtype)` from float64, compared as unsigned code views. Probes:
every run start and the float64 just below it (each edge from both sides), the float32 neighbours of
every midpoint between representable values (where double rounding differs from single rounding),
and random values over the whole exponent range, both signs. The keys' order is checked against
float64 order with -0 below +0.
"""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest

from lowprec import formats as F
from lowprec.formats.explain import resolve_policy
from lowprec.formats.partition import cast_partition, float_key, key_float, nan_codes

ML_TYPES = {"E4M3FN": ml_dtypes.float8_e4m3fn, "E5M2": ml_dtypes.float8_e5m2, "E4M3FNUZ": ml_dtypes.float8_e4m3fnuz,
            "E5M2FNUZ": ml_dtypes.float8_e5m2fnuz, "E2M1": ml_dtypes.float4_e2m1fn, "E3M2": ml_dtypes.float6_e3m2fn,
            "E2M3": ml_dtypes.float6_e2m3fn, "E8M0": ml_dtypes.float8_e8m0fnu}


def probes(fmt: str, seed: int = 0) -> np.ndarray:
    """Run edges from both sides, float32 neighbours of every midpoint, random values."""
    part = cast_partition(fmt, resolve_policy(fmt, "ml_dtypes"))
    starts = part.starts[np.isfinite(part.starts)]
    values = np.unique(np.abs(F.code_table(fmt).value[np.isfinite(F.code_table(fmt).value)]))
    mids = (values[1:] + values[:-1]) / 2  # exact in float64: a few more bits than the format
    m32 = mids.astype(np.float32)
    near = np.concatenate([mids, np.nextafter(m32, np.float32(np.inf)).astype(np.float64),
                           np.nextafter(m32, np.float32(-np.inf)).astype(np.float64),
                           np.nextafter(mids, np.inf), np.nextafter(mids, -np.inf)])
    rng = np.random.default_rng(seed)
    rand = rng.standard_normal(20000) * np.exp2(rng.uniform(-140, 130, 20000))
    xs = np.concatenate([starts, np.nextafter(starts, -np.inf), near, -near, rand, [0.0, -0.0]])
    return xs[np.isfinite(xs)]


def ml_codes(xs: np.ndarray, fmt: str) -> np.ndarray:
    with np.errstate(all="ignore"):
        return xs.astype(ML_TYPES[fmt]).view(np.uint8).astype(np.int64)


def lookup_all(part: object, xs: np.ndarray) -> np.ndarray:
    starts = getattr(part, "starts")
    idx = np.searchsorted(float_key(starts), float_key(xs), side="right") - 1
    return np.asarray(getattr(part, "codes"))[idx]


@pytest.mark.parametrize("fmt", ["E4M3FN", "E5M2", "E4M3FNUZ", "E5M2FNUZ", "E2M1", "E3M2", "E2M3"])
def test_runs_match_ml_dtypes_from_float64(fmt: str) -> None:
    part = cast_partition(fmt, resolve_policy(fmt, "ml_dtypes"))
    xs = probes(fmt)
    got, want = lookup_all(part, xs), ml_codes(xs, fmt)
    bad = np.nonzero(got != want)[0]
    assert bad.size == 0, [(float(xs[i]).hex(), int(got[i]), int(want[i])) for i in bad[:5]]


def test_e8m0_runs_match_ml_dtypes_on_positive_values() -> None:
    part = cast_partition("E8M0", resolve_policy("E8M0", "ml_dtypes"))
    xs = probes("E8M0")
    xs = xs[xs > 0]
    assert np.array_equal(lookup_all(part, xs), ml_codes(xs, "E8M0"))
    # zero and negative inputs: NaN (0xFF) under ml_dtypes
    assert part.lookup(0.0) == part.lookup(-1.0) == 0xFF


def test_double_rounding_is_in_the_runs() -> None:
    # 1 + 2^-4 + 2^-30 lies above the E4M3FN midpoint 1.0625 of 1 and 1.125, so rounding once
    # gives 1.125 (0x39); through float32 it first becomes exactly 1.0625, a tie that goes to the even
    # code 1.0 (0x38). torch 2.13 and ml_dtypes < 0.7 round through float32; ml_dtypes 0.7 once.
    torch = pytest.importorskip("torch")
    x = 1 + 2.0**-4 + 2.0**-30
    assert int(torch.tensor([x], dtype=torch.float64).to(torch.float8_e4m3fn).view(torch.uint8)[0]) == 0x38
    assert cast_partition("E4M3FN", resolve_policy("E4M3FN", "torch")).lookup(x) == 0x38
    assert cast_partition("E4M3FN", F.policy_for("ml_dtypes", "E4M3FN", version="0.6.0")).lookup(x) == 0x38
    assert cast_partition("E4M3FN", F.policy_for("ml_dtypes", "E4M3FN", version="0.7.0")).lookup(x) == 0x39
    assert cast_partition("E4M3FN", F.CastPolicy(name="once")).lookup(x) == 0x39
    installed = int(np.array([x]).astype(ml_dtypes.float8_e4m3fn).view(np.uint8)[0])
    assert cast_partition("E4M3FN", resolve_policy("E4M3FN", "ml_dtypes")).lookup(x) == installed


@pytest.mark.parametrize("fmt, dtype", [("E4M3FN", "float8_e4m3fn"), ("E5M2", "float8_e5m2")])
def test_runs_match_torch_from_float64(fmt: str, dtype: str) -> None:
    torch = pytest.importorskip("torch")
    part = cast_partition(fmt, resolve_policy(fmt, "torch"))
    xs = probes(fmt, seed=1)
    want = torch.from_numpy(xs).to(getattr(torch, dtype)).view(torch.uint8).numpy().astype(np.int64)
    got = lookup_all(part, xs)
    bad = np.nonzero(got != want)[0]
    assert bad.size == 0, [(float(xs[i]).hex(), int(got[i]), int(want[i])) for i in bad[:5]]


def test_refused_inputs_are_runs_of_minus_one() -> None:
    # the default E8M0 policy refuses zero and negative values (ValueError from encode)
    part = cast_partition("E8M0")
    for x in (0.0, -0.0, -1.0, -1e-300):
        with pytest.raises(ValueError, match="E8M0"):
            F.encode(np.array([x]), "E8M0")
        assert part.lookup(x) == -1
    assert part.lookup(1.0) == 127  # 2^0: exponent field 127


def test_nan_codes() -> None:
    assert nan_codes("E4M3FN", resolve_policy("E4M3FN", "ml_dtypes")) == (0x7F, 0xFF)
    assert nan_codes("E2M1", resolve_policy("E2M1", "ocp")) == (-1, -1)  # refused: no NaN in E2M1
    with pytest.raises(ValueError, match="NaN"):
        cast_partition("E4M3FN").lookup(math.nan)


def test_keys_order_float64_with_signed_zero() -> None:
    xs = np.array([-np.inf, -1e300, -1.0, -5e-324, -0.0, 0.0, 5e-324, 1.0, 1e300, np.inf])
    keys = float_key(xs)
    assert np.all(keys[1:] > keys[:-1])
    back = key_float(keys)
    assert np.array_equal(back.view(np.uint64), xs.view(np.uint64))  # -0 keeps its sign


def test_stochastic_has_no_partition() -> None:
    with pytest.raises(ValueError, match="stochastic"):
        cast_partition("E4M3FN", F.CastPolicy(rounding="stochastic"))
