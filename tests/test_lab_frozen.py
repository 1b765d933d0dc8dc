"""The recipe lab's report is the same, bit for bit, as the one frozen before its speed work (issue 30
item 6: the compiled metric kernels must not move a single figure): every case of `tests.lab_frozen`
run with today's code gives the strict-JSON, CSV and summary text stored in `lab_frozen.json.gz`,
written by the code of 981d4dc — on the codec's default switch (`auto`: the compiled kernels for
chunks of at least `codec.FAST_MIN` elements, the numpy code below, so the small-chunk case runs
the numpy reference) and forced onto the compiled kernels (`fast`: every chunk, with many chunk
boundaries, the details' drawing data).

The report gained, after the freeze, what issue 30's pre-quantized checkpoints add (h-ckpt): per
tensor `layout`, `stored_recipe`, `audit`, `product` in the JSON and a `layout` column in the CSV.
For these float-only cases they must be empty (asserted), and are then taken out before the
comparison, which stays byte for byte on everything else."""

from __future__ import annotations

import csv
import io
import json
import math
from pathlib import Path
from typing import Any

import pytest

from lowprec.formats import codec
from tests import lab_frozen


@pytest.fixture(scope="module")
def frozen() -> dict[str, Any]:
    return lab_frozen.frozen()


def _first_difference(a: Any, b: Any, where: str = "") -> str | None:
    """Where two JSON values first differ (a path and both values), None when equal."""
    if type(a) is not type(b):
        return f"{where}: {a!r:.80} != {b!r:.80}"
    if isinstance(a, dict):
        if list(a) != list(b):
            return f"{where}: keys {list(a)} != {list(b)}"
        for k in a:
            d = _first_difference(a[k], b[k], f"{where}.{k}")
            if d:
                return d
        return None
    if isinstance(a, list):
        if len(a) != len(b):
            return f"{where}: length {len(a)} != {len(b)}"
        for i, (x, y) in enumerate(zip(a, b)):
            d = _first_difference(x, y, f"{where}[{i}]")
            if d:
                return d
        return None
    if isinstance(a, float) and math.isnan(a) and math.isnan(b):
        return None
    return None if a == b else f"{where}: {a!r} != {b!r}"


def assert_same_json(got: str, want: str, label: str) -> None:
    if got == want:
        return
    diff = _first_difference(json.loads(got), json.loads(want))
    pytest.fail(f"{label}: the report differs from the frozen one at {diff or 'its text (formatting)'}")


#: what the pre-quantized layouts (issue 30, h-ckpt) added to each tensor of the JSON report
QUANTIZED_KEYS = ("layout", "stored_recipe", "audit", "product")


def without_quantized_fields(text: str) -> str:
    """The JSON report without the pre-quantized fields, each asserted empty (float tensors only)."""
    from lowprec import strictjson

    rep = json.loads(text)
    for t in rep["tensors"]:
        for k in QUANTIZED_KEYS:
            assert k in t and t[k] is None, f"tensor {t['name']}: {k} = {t.get(k)!r:.80} on a float tensor"
            del t[k]
    return strictjson.dumps(rep, indent=1 if "\n " in text else None)  # as it was written


def csv_without_layout(text: str) -> str:
    """The CSV report without its `layout` column, asserted empty (float tensors only)."""
    rows = list(csv.reader(io.StringIO(text)))
    at = rows[0].index("layout")
    assert all(r[at] == "" for r in rows[1:]), "a float tensor with a layout"
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows([r[:at] + r[at + 1:] for r in rows])
    return buf.getvalue()


def _check_report(got: dict[str, str], want: dict[str, str], label: str) -> None:
    assert_same_json(without_quantized_fields(got["json"]), want["json"], f"{label} json")
    assert csv_without_layout(got["csv"]) == want["csv"], f"{label}: CSV differs"
    assert got["summary"] == want["summary"], f"{label}: summary differs"


def test_report_every_recipe_default_chunks(frozen: dict[str, Any]) -> None:
    _check_report(lab_frozen.case_report(), frozen["report"], "report")


@pytest.mark.parametrize("path", ["auto", "fast"])
def test_report_every_recipe_small_chunks(frozen: dict[str, Any], path: str) -> None:
    with codec.codec_path(path):
        _check_report(lab_frozen.case_report_small_chunks(), frozen["report_small_chunks"], f"small chunks ({path})")


def test_details_histograms_and_error_maps(frozen: dict[str, Any]) -> None:
    with codec.codec_path("fast"):
        got = lab_frozen.case_details()
    want = frozen["details"]
    assert sorted(got) == sorted(want)
    for key in want:
        assert_same_json(got[key], want[key], f"detail {key}")


def test_cli_json_and_csv(frozen: dict[str, Any], tmp_path: Path) -> None:
    got = lab_frozen.case_cli(tmp_path)
    assert_same_json(without_quantized_fields(got["json"]), frozen["cli"]["json"], "cli --json")
    assert csv_without_layout(got["csv"]) == frozen["cli"]["csv"]
