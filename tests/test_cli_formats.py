"""`lowprec formats`, `lowprec formats table`, `lowprec cast` — outputs checked against ml_dtypes/torch."""

from __future__ import annotations

import json

import ml_dtypes
import numpy as np
import pytest
import torch

from lowprec import formats as F
from lowprec.app.cli import main


def _json_out(capsys: pytest.CaptureFixture[str], argv: list[str]) -> object:
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


def test_formats_json_lists_every_format(capsys: pytest.CaptureFixture[str]) -> None:
    props = _json_out(capsys, ["formats", "--json"])
    assert isinstance(props, list)
    by_name = {p["name"]: p for p in props}
    assert set(by_name) == set(F.format_names())
    assert by_name["E4M3FN"]["max"] == float(ml_dtypes.finfo(ml_dtypes.float8_e4m3fn).max)
    assert by_name["E5M2"]["smallest_subnormal"] == float(ml_dtypes.finfo(ml_dtypes.float8_e5m2).smallest_subnormal)


def test_formats_table_json(capsys: pytest.CaptureFixture[str]) -> None:
    table = _json_out(capsys, ["formats", "table", "e5m2", "--json"])
    assert isinstance(table, dict)
    rows = table["rows"]
    assert len(rows) == 256
    want = np.arange(256, dtype=np.uint8).view(ml_dtypes.float8_e5m2).astype(np.float64)
    for row, v in zip(rows, want):
        if np.isnan(v):
            assert row["value"] == "nan" and row["class"] == "nan"
        elif np.isinf(v):
            assert row["value"] == ("inf" if v > 0 else "-inf")
        else:
            assert row["value"] == v
    assert rows[0x7B]["bits"] == "01111011"


def test_formats_table_text(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["formats", "table", "E2M1"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 17 and "subnormal" in out[2]


def test_cast_json_matches_torch(capsys: pytest.CaptureFixture[str]) -> None:
    values = ["464", "465", "inf", "-0", "0x1.8p3", "3.3", "1e-3"]
    rows = _json_out(capsys, ["cast", "E4M3FN", *values, "--convention", "torch", "--json"])
    assert isinstance(rows, list)
    x = torch.tensor([float.fromhex("0x1.8p3") if v.startswith("0x") else float(v) for v in values])
    want = x.to(torch.float8_e4m3fn).view(torch.uint8).tolist()
    assert [r["code"] for r in rows] == want
    assert rows[5]["bits"] == format(want[5], "08b") and rows[5]["hex"] == f"0x{want[5]:02X}"
    assert rows[5]["abs_error"] == pytest.approx(abs(3.25 - 3.3))


def test_cast_rounding_override(capsys: pytest.CaptureFixture[str]) -> None:
    rows = _json_out(capsys, ["cast", "E4M3FN", "3.3", "--rounding", "up", "--json"])
    assert isinstance(rows, list) and rows[0]["value"] == 3.5  # 3.3 lies between 3.25 and 3.5


@pytest.mark.parametrize("argv,message", [
    (["cast", "E9M9", "1"], "unknown format"),
    (["cast", "E4M3FN", "abc"], "cannot read 'abc'"),
    (["cast", "E2M1", "nan", "--convention", "torch"], "E2M1"),  # torch has no NaN → E2M1 cast
    (["formats", "table"], "needs one FORMAT"),
    (["formats", "table", "FP32"], "up to 16 bits"),
])
def test_cli_bad_input_is_one_clear_line(capsys: pytest.CaptureFixture[str], argv: list[str], message: str) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_parse_value() -> None:
    assert F.parse_value("0x1.8p3") == 12.0
    assert np.signbit(F.parse_value("-0"))
    assert np.isnan(F.parse_value("nan")) and F.parse_value("-inf") == -np.inf
    with pytest.raises(ValueError, match="hex float"):
        F.parse_value("1..2")


def test_output_into_a_closed_pipe_is_quiet(tmp_path: "object") -> None:
    import subprocess
    import sys

    cmd = f"{sys.executable} -m lowprec.app.cli formats table BF16 | head -1"
    res = subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, timeout=120)
    assert "Traceback" not in res.stderr and "BrokenPipe" not in res.stderr
    assert res.stdout.split()[0] == "code"
