"""Issue 33's surviving bugs that no test caught, each now checked against an independent oracle
(the others are in the tests of their own modules; tests/MUTANTS.md lists them all):

- the `ocp` convention's E8M0 overflow: NaN (the OCP MX encoding has no infinity and 0xFF is NaN),
  as ml_dtypes' `float8_e8m0fnu` gives, not a saturated 2^127;
- ml_dtypes before 0.7 rounds float64 to FP16 once (numpy's own cast), though it rounds float64
  through float32 for its 8-bit types: numpy's `astype(float16)` is the oracle;
- the export's writer refuses a relative path that climbs out of its folder (`..`), including into
  a sibling folder whose name starts with the export folder's name, and creates nothing there.
"""

from __future__ import annotations

from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from lowprec import formats as F


@pytest.mark.parametrize("x", [1.2 * 2.0**127, 1.9 * 2.0**127, 2.0**128, 1e39, 3.0e38, float("inf"),
                               2.0**126, 2.0**-127, 0.7 * 2.0**-126])
def test_ocp_e8m0_overflow_is_nan_as_ml_dtypes_gives(x: float) -> None:
    """Above 2^127 (after rounding) E8M0 has no value: the encoding's NaN, 0xFF. ml_dtypes' E8M0
    agrees on every value here that is no tie (the conventions differ on ties only)."""
    want = int(np.array([x]).astype(ml_dtypes.float8_e8m0fnu).view(np.uint8)[0])
    got = int(F.encode(np.array([x]), F.E8M0, F.policy_for("ocp", "E8M0"))[0])
    assert got == want, (x, hex(got), hex(want))
    if x >= 2.0**128 or x == 1.9 * 2.0**127:
        assert got == 0xFF


#: float64 values just above an FP16 midpoint by less than float32 can hold: rounding them to float32
#: first lands on the midpoint, then ties-to-even goes down; rounded once they go up
DOUBLE_ROUNDING = [1 + 2.0**-11 + 2.0**-40, 1024 + 0.5 + 2.0**-30, -(2048 + 1 + 2.0**-29),
                   6.103515625e-05 * (1 + 2.0**-11 + 2.0**-40)]


@pytest.mark.parametrize("version", ["0.5.4", "0.6.0", "0.7.0", None])
def test_ml_dtypes_fp16_rounds_float64_once_in_every_release(version: str | None) -> None:
    """FP16 under the ml_dtypes convention is numpy's float16 cast in every release: float64 rounded
    once. (Releases before 0.7 round float64 through float32 for their own 8-bit types only.)"""
    x = np.array(DOUBLE_ROUNDING + [0.1, 65519.0, 65520.0, 5.960464477539063e-08 * 0.5 * (1 + 2.0**-40)])
    want = x.astype(np.float16).view(np.uint16)
    got = F.encode(x, F.FP16, F.policy_for("ml_dtypes", "FP16", version=version))
    np.testing.assert_array_equal(got.astype(np.uint16), want)
    # the same values through float32 first land elsewhere: the cases do tell the two rules apart
    twice = x.astype(np.float32).astype(np.float16).view(np.uint16)
    assert (twice[:len(DOUBLE_ROUNDING)] != want[:len(DOUBLE_ROUNDING)]).all()


@pytest.mark.parametrize("rel", ["../escape.html", "a/../../escape.html", "lesson/../../escape.html",
                                 "../{sibling}/x.html", "lesson/../../{sibling}/y.html"])
def test_the_export_writer_never_climbs_out_of_its_folder(tmp_path: Path, rel: str) -> None:
    from lowprec.app.export import ExportError, SafeWriter

    root = tmp_path / "site"
    root.mkdir()
    sibling = "site2"  # starts with the export folder's name: a prefix check alone lets it through
    before = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*"))
    with pytest.raises(ExportError, match="refusing to write"):
        SafeWriter(root).write_text(rel.format(sibling=sibling), "<p>x</p>")
    assert sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*")) == before  # nothing made
    # a plain path inside is written
    SafeWriter(root).write_text("lesson/ok.html", "<p>ok</p>")
    assert (root / "lesson" / "ok.html").read_text() == "<p>ok</p>"
