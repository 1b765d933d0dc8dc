"""Code tables against ml_dtypes' own grid, and rounding bins against the (oracle-checked) encoder."""

from __future__ import annotations

import numpy as np
import pytest

from lowprec import formats as F
from tests.backends import ML_DTYPES


@pytest.mark.parametrize("fmt", [F.E4M3FN, F.E5M2, F.E2M1, F.E3M2, F.E8M0, F.BF16], ids=lambda f: f.name)
def test_code_table_fields_and_gaps(fmt: F.FloatFormat) -> None:
    t = F.code_table(fmt)
    assert t.codes.size == fmt.n_codes
    recomposed = (t.sign << fmt.sign_shift) | (t.exponent << fmt.mantissa_bits) | t.mantissa
    np.testing.assert_array_equal(recomposed, t.codes)
    finite = np.isfinite(t.value)
    grid = np.unique(t.value[finite])
    # gap to the next value = ml_dtypes' nextafter within its own grid, for finite codes below max
    dt = ML_DTYPES[fmt.name]
    # oracle: ml_dtypes' decoding of every code, sorted; the gap is the distance to the next one
    uint = np.uint16 if fmt.bits > 8 else np.uint8
    md_vals = np.arange(fmt.n_codes).astype(uint).view(dt).astype(np.float64)
    md_grid = np.unique(md_vals[np.isfinite(md_vals)])
    sel = finite & (t.value < fmt.max)
    idx = np.searchsorted(md_grid, t.value[sel])
    np.testing.assert_array_equal(t.gap_next[sel], md_grid[idx + 1] - md_grid[idx])
    assert np.all(np.diff(grid) > 0)
    assert set(np.unique(t.cls)) <= {"zero", "subnormal", "normal", "inf", "nan"}
    if fmt.has_inf:
        assert (t.cls == "inf").sum() == 2
    rows = t.rows()
    assert rows[0]["bits"] == "0" * fmt.bits


def test_code_table_refuses_fp32() -> None:
    with pytest.raises(ValueError, match="up to 16 bits"):
        F.code_table(F.FP32)


def _encodes_to(fmt: F.Format, x: float, pol: F.CastPolicy) -> int:
    return int(F.encode(np.array([x], np.float64), fmt, pol)[0])


@pytest.mark.parametrize("rounding", ["nearest_even", "nearest_away", "toward_zero", "up", "down", "to_odd"])
@pytest.mark.parametrize("overflow", ["saturate", "nonfinite", "saturate_propagate"])
@pytest.mark.parametrize("fmt", [F.E4M3FN, F.E5M2, F.E2M1, F.E4M3FNUZ, F.E8M0, F.INT4, F.E5M3FNU, F.E3M4,
                                 F.get_format("p3109_k8p3se"), F.get_format("p3109_k8p1ue"),
                                 F.get_format("p3109_k8p4uf")], ids=lambda f: f.name)
def test_rounding_bin_edges_match_the_encoder(fmt: F.Format, rounding: str, overflow: str) -> None:
    if overflow != "saturate" and not (fmt.has_inf or fmt.has_nan):
        pytest.skip(f"{fmt.name} has no Inf/NaN")
    pol = F.CastPolicy(rounding=rounding, overflow=overflow, unsigned_zero="nan")
    classes = F.classify_codes(fmt)
    for code in range(fmt.n_codes):
        if classes[code] in ("nan", "inf"):
            continue
        b = F.rounding_bin(fmt, code, pol)
        for edge, closed in ((b.lo, b.lo_closed), (b.hi, b.hi_closed)):
            if not np.isfinite(edge) or (edge == 0 and b.lo == b.hi):
                continue
            inside = _encodes_to(fmt, edge, pol) == code
            if edge == 0:  # ±0 inputs: the sign of zero picks the code
                continue
            assert inside == closed, (code, b, edge)
        # just inside both edges encodes to the code; just outside does not
        for edge, direction in ((b.lo, np.inf), (b.hi, -np.inf)):
            if np.isfinite(edge) and b.lo < b.hi:
                probe = float(np.nextafter(edge, direction))
                if b.lo < probe < b.hi and probe != 0:
                    assert _encodes_to(fmt, probe, pol) == code, (code, b, probe)
        for edge, direction in ((b.lo, -np.inf), (b.hi, np.inf)):
            if np.isfinite(edge) and edge != 0:
                probe = float(np.nextafter(edge, direction))
                assert _encodes_to(fmt, probe, pol) != code or probe == 0, (code, b, probe)


def test_rounding_bin_of_448_in_e4m3fn() -> None:
    # 448 = 0x7E: neighbours 416 and (overflow at) 480; midpoint 432 ties to 448 (even) under RNE
    b = F.rounding_bin(F.E4M3FN, 0x7E, F.policy_for("ml_dtypes", F.E4M3FN))
    assert (b.lo, b.lo_closed, b.hi, b.hi_closed) == (432.0, True, 464.0, True)
    b_sat = F.rounding_bin(F.E4M3FN, 0x7E, F.policy_for("torch", F.E4M3FN))
    assert b_sat.hi == np.inf
    with pytest.raises(ValueError, match="code 127 of E4M3FN is nan; only finite codes have rounding bins"):
        F.rounding_bin(F.E4M3FN, 0x7F)


def test_e8m0_nearest_even_ties_go_to_the_even_exponent() -> None:
    # 3 is the midpoint of 2 (code 128, even) and 4 (code 129); 6 of 4 (129) and 8 (130, even)
    x = np.array([3.0, 6.0, 0.75])
    assert F.encode(x, F.E8M0, F.CastPolicy(rounding="nearest_even")).tolist() == [128, 130, 126]
    assert F.encode(x, F.E8M0, F.CastPolicy(rounding="nearest_away")).tolist() == [129, 130, 127]
    assert [F.encode_scalar(v, F.E8M0, F.CastPolicy(rounding="nearest_even")) for v in x] == [128, 130, 126]
