"""BinExplorer and Conventions widgets, and the bin-explorer computations behind them
(`formats.explain`).

Oracles: ml_dtypes and torch casts (codes compared as unsigned integer views), `formats.encode`
probed just inside and outside every rounding-bin edge (the bins are computed separately, from the
sorted value grid), float.fromhex for parsing, and the binade formula gap = 2^(floor(log2 v) - m).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
import torch

from lowprec import formats
from lowprec.formats import parse_value
from lowprec.app.plots.bins import bins_sources
from lowprec.app.plots.conventions import conventions_sources
from lowprec.formats.explain import BIN_VIEW_FORMATS, explain_value, window_bins
from tests.backends import ML_DTYPES as ML


def ml_code(x: float, name: str) -> int:
    """ml_dtypes' code for x (from float32), as an unsigned integer."""
    arr = np.array([x], dtype=np.float32).astype(ML[name])
    width = np.dtype(ML[name]).itemsize
    return int(arr.view(np.uint8 if width == 1 else np.uint16)[0])


# ------------------------------------------------------------------------------------------------
# parsing
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("text,expected", [
    ("3.3", 3.3), ("1e-3", 0.001), ("0x1.8p3", 12.0), ("-0x1p-9", -(2.0**-9)), ("inf", math.inf),
    ("-inf", -math.inf), (" 448 ", 448.0), ("+2", 2.0),
])
def test_parse_value_accepts(text: str, expected: float) -> None:
    assert parse_value(text) == expected


def test_parse_value_signed_zero_and_nan() -> None:
    z = parse_value("-0")
    assert z == 0 and math.copysign(1.0, z) == -1.0
    assert math.isnan(parse_value("nan"))


@pytest.mark.parametrize("text", ["", "abc", "3.3.3", "0x", "1e400", "1,5"])
def test_parse_value_rejects_naming_the_text(text: str) -> None:
    # the message names the text (or says it is empty), and what is allowed or why it is refused
    with pytest.raises(ValueError, match=r"expected a decimal|beyond float64's range") as exc:
        parse_value(text)
    assert repr(text) in str(exc.value) or (text == "" and "empty value" in str(exc.value))


# ------------------------------------------------------------------------------------------------
# encoded codes against ml_dtypes / torch
# ------------------------------------------------------------------------------------------------

VALUES = ["3.3", "1e-3", "-0", "0x1.8p3", "448", "465", "-1000", "0.0078125", "5e-3", "6.5", "0.25"]


@pytest.mark.parametrize("name", ["E4M3FN", "E5M2", "BF16", "FP16", "E3M2", "E2M3", "E4M3FNUZ"])
@pytest.mark.parametrize("text", VALUES)
def test_main_code_matches_ml_dtypes(name: str, text: str) -> None:
    view = explain_value(text, name, "ml_dtypes", rounding="", compare_format=None)
    assert view.main.code == ml_code(float(np.float32(parse_value(text))), name)


@pytest.mark.parametrize("text", ["465", "-1e6", "3.3", "0.001"])
def test_torch_convention_matches_torch(text: str) -> None:
    x = torch.tensor([float(np.float32(parse_value(text)))], dtype=torch.float32)
    expected = int(x.to(torch.float8_e4m3fn).view(torch.uint8)[0])
    assert explain_value(text, "E4M3FN", "torch", rounding="").main.code == expected


def test_e8m0_ties_follow_the_convention() -> None:
    # 3 is the midpoint of 2 (code 0x80) and 4 (code 0x81): ml_dtypes rounds the tie up (away) to 4;
    # nearest-even picks the even code, 0x80 (2); toward_zero gives 2 as well
    assert explain_value("3", "E8M0", "ml_dtypes", rounding="").main.code == ml_code(3.0, "E8M0") == 0x81
    assert explain_value("3", "E8M0", "ml_dtypes", rounding="nearest_even").main.code == 0x80
    assert explain_value("3", "E8M0", "ml_dtypes", rounding="toward_zero").main.code == 0x80
    own = explain_value("3", "E8M0", "ml_dtypes", rounding="nearest_even").main.rounding_bin
    assert own is not None and own.hi == 3.0 and own.hi_closed
    away = explain_value("3", "E8M0", "ml_dtypes", rounding="").main.rounding_bin
    assert away is not None and away.lo == 3.0 and away.lo_closed


def test_decode_scale_moves_the_grid() -> None:
    # 1000 / 4 = 250 lies between 240 and 256 (gap 16): nearer 256, so the value is 256 × 4
    view = explain_value("1000", "E4M3FN", decode_scale=4.0)
    assert view.main.code == ml_code(250.0, "E4M3FN")
    assert view.main.value == float(np.float32(250).astype(ml_dtypes.float8_e4m3fn)) * 4 == 1024.0
    assert view.main.error == 24.0
    grid = [float(v) for v in view.bins["value"]]
    unscaled = explain_value("250", "E4M3FN").bins["value"]
    assert grid == [4 * v for v in unscaled]


def test_compare_format_is_cast_too() -> None:
    view = explain_value("3.3", "E4M3FN", compare_format="E5M2")
    assert view.compare is not None
    assert view.compare.code == ml_code(3.3, "E5M2")
    data = bins_sources(view)
    assert data["summary"]["format"] == ["E4M3FN", "E5M2"]
    cmp_values = [float(v) for v in data["compare_points"]["x"]]
    e5m2 = {float(np.array([c], np.uint8).view(ml_dtypes.float8_e5m2)[0]) for c in range(256)}
    assert cmp_values and all(v in e5m2 for v in cmp_values)


# ------------------------------------------------------------------------------------------------
# rounding bins against formats.encode probes
# ------------------------------------------------------------------------------------------------

POLICIES = [
    formats.CastPolicy(rounding=formats.Rounding(r), overflow=formats.Overflow(o))
    for r in ("nearest_even", "nearest_away", "toward_zero", "up", "down")
    for o in ("saturate", "nonfinite")
]


def _bin_cases() -> list[tuple[str, formats.CastPolicy]]:
    cases = []
    for name in ("E4M3FN", "E5M2", "E2M1", "E3M2", "E4M3FNUZ", "E8M0", "INT8", "INT4"):
        f = formats.get_format(name)
        for pol in POLICIES:
            nonfinite_ok = isinstance(f, formats.FloatFormat) and (f.has_inf or f.has_nan)
            if pol.overflow.value == "nonfinite" and not nonfinite_ok:
                continue
            cases.append((name, pol))
    return cases


@pytest.mark.parametrize("name,policy", _bin_cases(),
                         ids=[f"{n}-{p.rounding.value}-{p.overflow.value}" for n, p in _bin_cases()])
def test_every_bin_edge_against_encode(name: str, policy: formats.CastPolicy) -> None:
    f = formats.get_format(name)
    table = formats.code_table(f)
    n_values = np.unique(table.value[np.isfinite(table.value)]).size
    bins = window_bins(f, policy, 0, half_width=n_values)
    assert len(bins["code"]) == n_values
    probes: list[float] = []
    expect: list[bool] = []
    owner: list[int] = []
    for code, v, lo, hi, lo_c, hi_c in zip(bins["code"], bins["value"], bins["lo"], bins["hi"],
                                          bins["lo_closed"], bins["hi_closed"]):
        if v == 0:
            continue  # ±0 share one bin on the number line; covered by the zero test below
        for edge, closed, inward in ((lo, lo_c, math.inf), (hi, hi_c, -math.inf)):
            if not math.isfinite(edge):
                # unbounded: a value far out still lands here
                probes.append(v * 16 if edge > 0 else (v * 16 if v < 0 else -abs(v) * 16))
                expect.append(True)
                owner.append(code)
                continue
            if f.name == "E8M0" and edge == 0:
                continue  # zero follows unsigned_zero (raise), not the bin
            probes += [edge, math.nextafter(edge, inward), math.nextafter(edge, -inward)]
            expect += [closed, True, False]
            owner += [code] * 3
    codes = formats.encode(np.array(probes, dtype=np.float64), f, policy).astype(np.int64)
    values = table.value[codes]
    own_values = table.value[np.array(owner)]
    for p, e, got, want in zip(probes, expect, values, own_values):
        assert (got == want) == e, f"{name} {policy.rounding.value}: probe {p!r} → {got}, bin of {want} says {e}"


@pytest.mark.parametrize("name", ["FP16", "BF16"])
def test_16bit_window_bins_against_encode(name: str) -> None:
    f = formats.get_format(name)
    pol = formats.CastPolicy()
    table = formats.code_table(f)
    vals = np.unique(table.value[np.isfinite(table.value)])
    for centre in (1, vals.size // 3, int(np.searchsorted(vals, 1.0)), vals.size - 2):
        bins = window_bins(f, pol, centre, half_width=3)
        for v, lo, hi, lo_c, hi_c in zip(bins["value"], bins["lo"], bins["hi"], bins["lo_closed"],
                                         bins["hi_closed"]):
            for edge, closed in ((lo, lo_c), (hi, hi_c)):
                if not math.isfinite(edge):
                    continue
                got = float(formats.quantize(np.array([edge]), f, pol)[0])
                assert (got == v) == closed, (name, v, edge)


def test_zero_bin_nearest_even() -> None:
    # E4M3FN smallest subnormal 2^-9: the midpoint 2^-10 ties to even, which is zero (code 0x00)
    bins = window_bins(formats.E4M3FN, formats.CastPolicy(), 127, half_width=1)
    k = bins["value"].index(0.0)
    assert bins["lo"][k] == -(2.0**-10) and bins["hi"][k] == 2.0**-10
    assert bins["lo_closed"][k] and bins["hi_closed"][k]
    assert ml_code(2.0**-10, "E4M3FN") == 0x00


@pytest.mark.parametrize("name", ["E4M3FN", "E5M2", "E2M1", "FP16", "BF16", "E8M0", "INT8"])
def test_gap_plot_follows_binades(name: str) -> None:
    f = formats.get_format(name)
    view = explain_value("1", name, compare_format=None)
    for lv, lg in zip(view.gaps["log2_value"], view.gaps["log2_gap"]):
        v = 2.0**lv
        if isinstance(f, formats.IntFormat):
            expected = 0.0  # integers: gap 1 everywhere
        elif v < f.smallest_normal:
            expected = f.emin - f.mantissa_bits  # the subnormal plateau
        else:
            expected = math.floor(math.log2(v)) - f.mantissa_bits
        assert lg == expected, (name, v)


def test_view_is_strict_json() -> None:
    from lowprec import strictjson

    for text in ("3.3", "nan", "465", "-0", "inf"):
        d = strictjson.loads(strictjson.dumps(explain_value(text, "E4M3FN")))
        assert d["main"]["input"] == text
    # E4M3FN has no Inf: under ml_dtypes inf → NaN (0x7F), and NaN has no error
    d = strictjson.loads(strictjson.dumps(explain_value("inf", "E4M3FN")))
    assert d["main"]["value"] == "nan" and d["main"]["rel_error"] == "nan" and d["x"] == "inf"


def test_refused_inputs_raise_value_error() -> None:
    with pytest.raises(ValueError, match="NaN"):
        explain_value("nan", "E2M1", "torch")
    with pytest.raises(ValueError, match="decode_scale"):
        explain_value("1", "E4M3FN", decode_scale=0.0)
    with pytest.raises(ValueError, match="FP32"):
        explain_value("1", "FP32")
    with pytest.raises(ValueError, match="convention"):
        explain_value("1", "E4M3FN", "numpy")


# ------------------------------------------------------------------------------------------------
# BinExplorer widget
# ------------------------------------------------------------------------------------------------


def test_bin_explorer_defaults_and_every_option() -> None:
    from lowprec.app.widgets import BinExplorer

    w = BinExplorer()
    assert w.view.main.code == ml_code(3.3, "E4M3FN")
    for name in BIN_VIEW_FORMATS:
        w.format = name
        assert w.error == "" and w.view.main.format == name
        n = formats.get_format(name).bits
        assert len(w._bit_toggles) == n
        # every shown toggle is in the row, pressed exactly where the code has a 1, and named
        # after its field and weight (the names screen readers read; the 0/1 is drawn from `value`)
        shown = [t for t in w._bits.objects if t.visible]
        assert shown == w._bit_toggles
        assert "".join("1" if t.value else "0" for t in shown) == format(w.view.main.code, f"0{n}b")
        fields = formats.explain.bit_fields(name)
        assert [t.label for t in shown] == [f"{f} bit {n - 1 - i}: " for i, f in enumerate(fields)]
    w.format = "E4M3FN"
    for param_name in ("convention", "rounding", "overflow", "compare_format"):
        for option in w.param[param_name].objects:
            setattr(w, param_name, option)
            assert w.error == "" or w.error.startswith("Invalid"), (param_name, option, w.error)
        setattr(w, param_name, w.param[param_name].default)
    w.__panel__()


def test_bin_explorer_value_change_updates_plots_as_ml_dtypes_says() -> None:
    from lowprec.app.widgets import BinExplorer

    w = BinExplorer(format="E5M2", compare_format="E4M3FN")
    before = dict(w.sources["points"].data)
    w.value = "0x1.8p3"
    assert w.sources["summary"].data["code"][0] == f"0x{ml_code(12.0, 'E5M2'):02X}"
    assert w.sources["summary"].data["code"][1] == f"0x{ml_code(12.0, 'E4M3FN'):02X}"
    assert w.sources["points"].data["x"] != before["x"]
    assert 12.0 in w.sources["points"].data["x"]
    assert w.sources["marker"].data["x0"] == [12.0]
    assert "".join(w.sources["bits"].data["bit"]) == format(ml_code(12.0, "E5M2"), "08b")


def test_bin_explorer_overflow_convention_edges() -> None:
    from lowprec.app.widgets import BinExplorer

    w = BinExplorer(value="465", rounding="")
    assert w.view.main.code == ml_code(465.0, "E4M3FN") == 0x7F  # ml_dtypes: NaN
    w.convention = "torch"
    t = torch.tensor([465.0]).to(torch.float8_e4m3fn).view(torch.uint8)
    assert w.view.main.code == int(t[0]) == 0x7E  # torch saturates to 448


def test_bin_explorer_flip_bits() -> None:
    from lowprec.app.widgets import BinExplorer

    w = BinExplorer(format="E4M3FN", value="448")
    code = ml_code(448.0, "E4M3FN")
    w._bit_toggles[0].value = not w._bit_toggles[0].value  # sign bit
    assert w.view.main.code == code ^ 0x80
    assert float(w.value) == -448.0
    w._bit_toggles[7].value = not w._bit_toggles[7].value  # LSB: 0xFE → 0xFF is NaN
    assert w.view.main.code == (code ^ 0x80) ^ 0x01
    assert w.value == "nan" and w.error == ""
    w.value = "1"
    w.flip_bit(4)  # lowest exponent bit of 1.0 (0x38) → 0x30 = 0.5
    assert w.view.main.code == ml_code(0.5, "E4M3FN") and float(w.value) == 0.5


def test_bin_explorer_garbage_shows_message_and_keeps_view() -> None:
    from lowprec.app.widgets import BinExplorer

    w = BinExplorer(value="3.3")
    before = {k: dict(v.data) for k, v in w.sources.items()}
    w.value = "three point three"
    assert w.error.startswith("Invalid") and "three point three" in w.error
    assert w._alert.visible and w._alert.object.startswith("Invalid")
    assert {k: dict(v.data) for k, v in w.sources.items()} == before
    w.value = "6"
    assert w.error == "" and not w._alert.visible
    assert w.view.main.code == ml_code(6.0, "E4M3FN")


def test_bin_explorer_decode_scale_param() -> None:
    from lowprec.app.widgets import BinExplorer

    w = BinExplorer(value="1000")
    w.decode_scale = 4.0
    assert w.view.main.value == 1024.0
    with pytest.raises(ValueError, match="decode_scale' must be at least"):
        w.decode_scale = 0.0  # outside the declared bounds


def test_code_table_only_for_small_formats() -> None:
    from lowprec.app.widgets import BinExplorer

    w = BinExplorer(format="E2M1")
    data = w.sources["table"].data
    assert data["value"][:8] == ["0", "0.5", "1", "1.5", "2", "3", "4", "6"]
    w.format = "BF16"
    assert w.sources["table"].data["code"] == [] and not w._table.visible


# ------------------------------------------------------------------------------------------------
# Conventions widget
# ------------------------------------------------------------------------------------------------


def _row(data: dict, convention: str, column: str) -> str:
    return str(data[column][data["convention"].index(convention)])


def test_conventions_table_matches_backends() -> None:
    from lowprec.app.widgets import Conventions

    w = Conventions()
    data = w.sources["table"].data
    # 2·max = 896: ml_dtypes → NaN, torch saturates to 448
    assert _row(data, "ml_dtypes", "overflow (2·max)").startswith(f"0x{ml_code(896.0, 'E4M3FN'):02X}")
    t = int(torch.tensor([896.0]).to(torch.float8_e4m3fn).view(torch.uint8)[0])
    assert _row(data, "torch", "overflow (2·max)").startswith(f"0x{t:02X}")
    w.format = "E8M0"
    data = w.sources["table"].data
    assert _row(data, "ml_dtypes", "0").startswith(f"0x{ml_code(0.0, 'E8M0'):02X}")
    t0 = int(torch.tensor([0.0]).to(torch.float8_e8m0fnu).view(torch.uint8)[0])
    assert _row(data, "torch", "0").startswith(f"0x{t0:02X}")
    assert _row(data, "ml_dtypes", "3 (tie)").startswith(f"0x{ml_code(3.0, 'E8M0'):02X}")
    w.format = "E2M1"
    assert _row(w.sources["table"].data, "torch", "NaN").startswith("error")
    w.__panel__()


def test_conventions_every_format_builds() -> None:
    for f in formats.FLOAT_FORMATS:
        data = conventions_sources(f.name)
        assert data["table"]["convention"] == list(formats.CONVENTIONS)


def test_conventions_widget_reads_the_crosscheck_reports(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The widget lists every report (read through `gpu.crosscheck`, the one reader) that covers
    its format, with the values tried and the mismatches summed over that format's checks; a file
    that is not a valid report is listed as such. The sums are written here from the JSON."""
    import copy
    import json

    from lowprec.app.widgets import Conventions
    from lowprec.gpu import crosscheck

    base = crosscheck.load_report(crosscheck.REPORT_DIR / "torch.json")
    report = copy.deepcopy(base)
    checks = [c for c in report["checks"] if c["format"] in ("E4M3FN", "E5M2")]
    e4_tried = sum(c["tried"] for c in checks if c["format"] == "E4M3FN")
    checks[0]["mismatches"] = 1  # an E4M3FN check, recorded with one mismatch
    assert checks[0]["format"] == "E4M3FN"
    report.update(checks=checks, formats=["E4M3FN", "E5M2"], device="H200-test",
                  total_tried=sum(c["tried"] for c in checks), mismatches=1, total_mismatches=1)
    crosscheck.validate_report(report)
    (tmp_path / "a.json").write_text(json.dumps(report), encoding="utf-8")
    (tmp_path / "broken.json").write_text('{"schema": "lowprec.crosscheck/1"}', encoding="utf-8")
    monkeypatch.setattr(crosscheck, "REPORT_DIR", tmp_path)
    w = Conventions(format="E4M3FN")
    rows = w.sources["reports"].data
    assert rows["file"] == ["a.json", "broken.json"]
    assert (rows["device"][0], rows["tried"][0], rows["mismatches"][0]) == ("H200-test", str(e4_tried), "1")
    assert rows["backend"][1].startswith("invalid report:") and "missing key" in rows["backend"][1]
    w.format = "BF16"  # covered by neither valid report
    assert w.sources["reports"].data["file"] == ["broken.json"]


def test_conventions_widget_lists_the_committed_reports() -> None:
    import json

    from lowprec.app.widgets import Conventions
    from lowprec.gpu import crosscheck

    expected = []
    for path in sorted(crosscheck.REPORT_DIR.glob("*.json")):
        rep = json.loads(path.read_text(encoding="utf-8"))
        if "E4M3FN" in rep["formats"]:
            expected.append(path.name)
    assert expected and Conventions(format="E4M3FN").sources["reports"].data["file"] == expected


def test_bin_explorer_legends_name_the_formats() -> None:
    from lowprec.app.widgets import BinExplorer

    def labels(fig: object) -> list[str]:
        return [item.label.value for item in fig.legend[0].items]  # type: ignore[attr-defined]

    w = BinExplorer(format="FP16", compare_format="BF16")
    assert labels(w._gap.object) == ["FP16", "BF16"]
    assert labels(w._number_line.object) == ["BF16"]
    w.param.update(format="E2M1", compare_format="")
    # no compare format: its entry is hidden, not labelled "(none)"
    assert labels(w._gap.object) == ["E2M1", ""]
    assert [item.visible for item in w._gap.object.legend[0].items] == [True, False]
