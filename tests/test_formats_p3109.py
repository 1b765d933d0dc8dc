"""The IEEE P3109 binary8 family against gfloat (issue 28 item 4): every code decoded, and values,
midpoints ±1 float32 step, values beyond max and random inputs rounded under every rounding mode ×
every saturation mode, codes compared as unsigned integers, on both codec paths.

gfloat's records are built from the format *names* (`tests.gfloat_oracle.gfloat_info`), so a wrong
lowprec layout, special-value rule or bias disagrees with them. Round to odd and P3109's
SatPropagate are composed from gfloat's own modes (gfloat 0.5.2 has neither; see
`tests.gfloat_oracle`)."""

from __future__ import annotations

import numpy as np
import pytest
from gfloat import decode_float
from gfloat.types import FloatClass

from lowprec import formats as F
from lowprec.formats import codec
from tests.backends import P3109_SAMPLE
from tests.gfloat_oracle import codes_report, format_inputs, gfloat_codes, gfloat_info, gfloat_values

P3109 = list(F.P3109_FORMATS)
ROUNDINGS = ("nearest_even", "nearest_away", "toward_zero", "up", "down", "to_odd")
OVERFLOWS = ("nonfinite", "saturate", "saturate_propagate")  # OvfInf, SatFinite, SatPropagate
_CLASS = {FloatClass.NORMAL: "normal", FloatClass.SUBNORMAL: "subnormal", FloatClass.ZERO: "zero",
          FloatClass.INFINITE: "inf", FloatClass.NAN: "nan"}


def test_the_family_is_gfloats() -> None:
    """Precision 1..7 signed and 1..8 unsigned, extended and finite: the names gfloat gives."""
    from gfloat.formats import p3109_binary8_formats

    names = {f.name for f in P3109}
    assert len(names) == 30
    assert {fi.name for fi in p3109_binary8_formats} == {f.name for f in F.specs.P3109_LISTED} < names


@pytest.mark.parametrize("fmt", P3109, ids=lambda f: f.name)
def test_every_code_decodes_as_gfloat(fmt: F.FloatFormat) -> None:
    fi = gfloat_info(fmt)
    want = gfloat_values(fi)
    codes = np.arange(256, dtype=np.uint8)
    for path in ("numpy", "fast"):  # decode compiles nothing per format: a table lookup
        with codec.codec_path(path):
            got = F.decode(codes, fmt).astype(np.float64)
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        ok = ~np.isnan(want)
        np.testing.assert_array_equal(got[ok], want[ok])  # -0 vs 0 checked by the class below
        np.testing.assert_array_equal(np.signbit(got[ok]), np.signbit(want[ok]))
    cls = [_CLASS[decode_float(fi, c).fclass] for c in range(256)]
    assert F.classify_codes(fmt).tolist() == cls
    assert [F.decode_scalar(c, fmt) for c in range(256) if not np.isnan(want[c])] == want[ok].tolist()


@pytest.mark.parametrize("fmt", P3109, ids=lambda f: f.name)
def test_finfo_as_gfloat(fmt: F.FloatFormat) -> None:
    fi = gfloat_info(fmt)
    assert (fmt.bits, fmt.max, fmt.smallest_normal, fmt.eps) == (fi.k, fi.max, fi.smallest_normal, fi.eps)
    assert fmt.min == fi.min if fmt.signed else fmt.min == fi.smallest
    assert (fmt.has_inf, fmt.has_nan, fmt.has_negative_zero) == (fi.num_infs > 0, fi.num_nans > 0, fi.has_nz)


@pytest.mark.parametrize("fmt", P3109, ids=lambda f: f.name)
def test_every_mode_and_saturation_as_gfloat(fmt: F.FloatFormat) -> None:
    """Every rounding mode × OvfInf / SatFinite / SatPropagate; the numpy reference path for the whole
    family, the compiled path too for the sample of layouts (a kernel is compiled per policy; the
    two paths agree code for code on every policy field in tests/test_codec_paths.py)."""
    x = format_inputs(fmt, n_random=500)
    paths = ("numpy", "fast") if fmt in P3109_SAMPLE else ("numpy",)
    for rounding in ROUNDINGS:
        for overflow in OVERFLOWS:
            pol = F.CastPolicy(rounding=rounding, overflow=overflow, unsigned_negative="nan")
            want = gfloat_codes(fmt, x, rounding, overflow)
            for path in paths:
                with codec.codec_path(path):
                    got = F.encode(x, fmt, pol)
                assert np.array_equal(got.astype(np.int64), want), codes_report(
                    x, want, got, f"{rounding}/{overflow}/{path}")


@pytest.mark.parametrize("fmt", [F.get_format(n) for n in ("p3109_k8p3se", "p3109_k8p1ue", "p3109_k8p4uf",
                                                            "p3109_k8p8ue")], ids=lambda f: f.name)
def test_p3109_convention_is_gfloats_default(fmt: F.FloatFormat) -> None:
    """policy_for('p3109', …) = gfloat round_float's defaults (TiesToEven, sat=False), float64 input
    rounded once too (P3109 converts from the value)."""
    x = format_inputs(fmt, seed=7)
    pol = F.policy_for("p3109", fmt)
    assert np.array_equal(F.encode(x, fmt, pol).astype(np.int64), gfloat_codes(fmt, x))
    x64 = x.astype(np.float64) * (1 + 2.0**-30)  # between float32 neighbours: double rounding shows
    assert np.array_equal(F.encode(x64, fmt, pol).astype(np.int64), gfloat_codes(fmt, x64))


def test_unsigned_formats_take_negatives_as_nan() -> None:
    """The p3109 convention's reading: a negative value is outside an unsigned format's domain
    (NaN = 0xFF); -0 is the zero; an unsigned format has no -Inf either."""
    for name in ("p3109_k8p3ue", "p3109_k8p3uf", "p3109_k8p1ue"):
        fmt = F.get_format(name)
        x = np.array([-1.0, -1e-30, -0.0, -np.inf, 1.0], np.float32)
        codes = F.encode(x, fmt, F.policy_for("p3109", fmt)).tolist()
        assert codes[:4] == [0xFF, 0xFF, 0x00, 0xFF] and codes[4] != 0xFF, (name, codes)


def test_p3109_names_in_the_edges() -> None:
    """Facts of the family as P3109 states them: signed NaN 0x80 and ±Inf 0x7F/0xFF; unsigned NaN
    0xFF, +Inf 0xFE; K8P3 extended's max 49152 and finite's 57344; K8P1 powers of two."""
    se, sf, ue = (F.get_format(n) for n in ("p3109_k8p3se", "p3109_k8p3sf", "p3109_k8p3ue"))
    assert F.classify_codes(se)[[0x80, 0x7F, 0xFF]].tolist() == ["nan", "inf", "inf"]
    assert F.classify_codes(ue)[[0xFF, 0xFE]].tolist() == ["nan", "inf"]
    assert (se.max, sf.max) == (49152.0, 57344.0)
    p1 = F.decode(np.arange(1, 127, dtype=np.uint8), "p3109_k8p1se")
    assert np.array_equal(np.log2(p1), np.arange(1, 127) - 64)
