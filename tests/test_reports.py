"""Committed cross-check reports (gpu/reports/*.json): schema, size, and replay against the current
model — a model change that contradicts recorded backend output fails here, with no hardware."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from lowprec import formats as F
from lowprec.gpu import crosscheck

REPORTS = crosscheck.committed_reports()
IDS = [p.stem for p in REPORTS]


def _load(path: Path) -> dict[str, Any]:
    # strict JSON: no NaN/Infinity literals
    def reject(token: str) -> None:
        raise ValueError(f"non-standard JSON constant {token}")

    return json.loads(path.read_text(), parse_constant=reject)  # type: ignore[arg-type]


def test_ml_dtypes_and_torch_reports_are_committed() -> None:
    backends = {_load(p)["backend"] for p in REPORTS}
    assert {"ml_dtypes", "torch"} <= backends


@pytest.mark.parametrize("path", REPORTS, ids=IDS)
def test_report_fits_the_schema_and_size(path: Path) -> None:
    report = _load(path)
    crosscheck.validate_report(report)
    assert path.stat().st_size < 2 * 1024 * 1024
    assert report["versions"]
    for check in report["checks"]:
        key = "codes" if check["kind"] == "encode" else "values"
        assert check[key]["count"] == check["tried"]
        if check["kind"] == "encode":
            assert check["policy"]["name"] == report["convention"]
    if report["oracle"]:
        assert report["ok"] == (report["total_mismatches"] == 0)


@pytest.mark.parametrize("path", REPORTS, ids=IDS)
def test_recorded_backend_output_agrees_with_current_model(path: Path) -> None:
    report = _load(path)
    assert crosscheck.replay_problems(report) == []


@pytest.mark.parametrize("path", REPORTS, ids=IDS)
def test_replay_counts_equal_recorded_counts(path: Path) -> None:
    report = _load(path)
    for check in report["checks"]:
        r = crosscheck.replay_check(check, crosscheck.library_version(report))
        assert r["inputs_match"], check["format"]
        assert r["mismatches"] == check["mismatches"], (check["kind"], check["format"])


def _first_encode(report: dict[str, Any], fmt: str = "E4M3FN") -> dict[str, Any]:
    return next(c for c in report["checks"] if c["kind"] == "encode" and c["format"] == fmt)


def test_contradicting_evidence_is_caught() -> None:
    report = _load(crosscheck.REPORT_DIR / "torch.json")
    bad = copy.deepcopy(report)
    check = _first_encode(bad)
    codes = crosscheck.unpack_codes(check["codes"])
    codes[0] ^= np.uint8(1)  # one recorded code that today's model does not produce
    check["codes"] = crosscheck.pack_codes(codes)
    problems = crosscheck.replay_problems(bad)
    assert len(problems) == 1 and "E4M3FN" in problems[0] and "1 of" in problems[0]


@pytest.mark.parametrize("change", [{"rounding": "nearest_away"}, {"overflow": "nonfinite"},
                                    {"subnormals": "flush"}], ids=lambda c: next(iter(c)))
def test_a_model_change_that_contradicts_the_evidence_is_caught(
        monkeypatch: pytest.MonkeyPatch, change: dict[str, str]) -> None:
    # today's torch convention, altered in one rule, replayed against torch's recorded E4M3FN codes:
    # ties (1.0625 → 1 or 1.125), overflow (465 → 448 or NaN) and subnormals (2^-9 → 2^-9 or 0)
    # all occur in the vectors, so each alteration must contradict the recorded output
    report = _load(crosscheck.REPORT_DIR / "torch.json")
    check = _first_encode(report)
    real_policy_for = crosscheck.policy_for

    def altered(convention: str, fmt: Any, version: str | None = None) -> Any:
        policy = real_policy_for(convention, fmt, version=version)
        return policy.with_(**change) if str(fmt).upper() == "E4M3FN" else policy

    monkeypatch.setattr(crosscheck, "policy_for", altered)
    assert crosscheck.replay_check(check)["mismatches"] > 0
    problems = crosscheck.replay_problems(report)
    assert problems and all("encode E4M3FN" in p for p in problems)


def test_each_ml_dtypes_release_replays_under_its_own_rules() -> None:
    # ml_dtypes 0.7 changed how E8M0 reads a float32 subnormal (by value, not by its exponent field):
    # the recorded 0.6.0 and 0.7.0 outputs differ there, and each agrees with the model only under
    # the rules of the release that produced it
    old = _load(crosscheck.REPORT_DIR / "ml_dtypes-0.6.0.json")
    new = _load(crosscheck.REPORT_DIR / "ml_dtypes.json")
    assert crosscheck.library_version(old) == "0.6.0"
    assert crosscheck.library_version(new) == "0.7.0"
    assert crosscheck.replay_problems(old) == [] and crosscheck.replay_problems(new) == []
    for report, other in ((old, "0.7.0"), (new, "0.6.0")):
        e8m0 = next(c for c in report["checks"] if c["kind"] == "encode" and c["format"] == "E8M0")
        assert crosscheck.replay_check(e8m0, other)["mismatches"] > 0
        for check in report["checks"]:
            if check["kind"] == "encode" and check["format"] != "E8M0":  # float32 input: the same
                assert crosscheck.replay_check(check, other)["mismatches"] == 0, check["format"]


def test_ml_dtypes_versions_are_checked() -> None:
    for bad in ("0.4.1", "banana"):
        with pytest.raises(ValueError, match="ml_dtypes|release"):
            F.policy_for("ml_dtypes", "E8M0", version=bad)
    with pytest.raises(ValueError, match="only the ml_dtypes convention"):
        F.policy_for("torch", "E4M3FN", version="2.13.0")
    newest = F.policy_for("ml_dtypes", "E8M0", version="9.9.0")  # a later release: the newest rules
    assert newest == F.policy_for("ml_dtypes", "E8M0", version="0.7.0")


def test_an_ml_dtypes_older_than_modelled_is_named_not_a_crash(monkeypatch: pytest.MonkeyPatch) -> None:
    from lowprec.formats import conventions

    monkeypatch.setattr(conventions, "ml_dtypes_version", lambda: "0.4.1")
    conventions.ml_dtypes_rules.cache_clear()
    try:
        assert "unavailable" in conventions._ml_dtypes_description()  # import-time text: no exception
        with pytest.raises(ValueError, match="ml_dtypes 0.4.1 is older"):
            F.policy_for("ml_dtypes", "E4M3FN")
        assert F.policy_for("ml_dtypes", "E4M3FN", version="0.7.0").float64_via_float32 is False
    finally:
        conventions.ml_dtypes_rules.cache_clear()


def test_contradicting_decode_evidence_is_caught() -> None:
    bad = copy.deepcopy(_load(crosscheck.REPORT_DIR / "ml_dtypes.json"))
    check = next(c for c in bad["checks"] if c["kind"] == "decode" and c["format"] == "E5M2")
    vals = crosscheck.unpack_codes(check["values"])
    vals[0x7C] = np.uint32(0x7F800001)  # +Inf recorded as a NaN
    check["values"] = crosscheck.pack_codes(vals)
    assert any("decode E5M2" in p for p in crosscheck.replay_problems(bad))


def test_changed_vectors_are_caught() -> None:
    bad = copy.deepcopy(_load(crosscheck.REPORT_DIR / "ml_dtypes.json"))
    check = _first_encode(bad, "E2M1")
    check["vectors"]["seed"] = 1 + int(check["vectors"]["seed"])
    problems = crosscheck.replay_problems(bad)
    assert len(problems) == 1 and "sha256" in problems[0]


def test_non_oracle_reports_never_fail_on_mismatches() -> None:
    report = copy.deepcopy(_load(crosscheck.REPORT_DIR / "torch.json"))
    report["oracle"] = False
    check = _first_encode(report)
    codes = crosscheck.unpack_codes(check["codes"])
    codes[:10] = 0
    check["codes"] = crosscheck.pack_codes(codes)
    assert crosscheck.replay_problems(report) == []


def test_schema_bounds_mismatches_by_tried_inclusive() -> None:
    """A check in which every value mismatched is a valid (failing) report; one mismatch more than
    the values tried is not."""
    report = copy.deepcopy(_load(crosscheck.REPORT_DIR / "ml_dtypes.json"))
    check = report["checks"][0]

    def set_mismatches(n: int) -> None:
        check["mismatches"] = n
        report["total_mismatches"] = report["mismatches"] = sum(c["mismatches"] for c in report["checks"])

    set_mismatches(check["tried"])
    crosscheck.validate_report(report)
    set_mismatches(check["tried"] + 1)
    with pytest.raises(ValueError, match=f"mismatches={check['tried'] + 1} does not fit"):
        crosscheck.validate_report(report)


@pytest.mark.parametrize("mutation, message", [
    (lambda r: r.pop("versions"), "versions"),
    (lambda r: r["versions"].pop("ml_dtypes"), "versions lack 'ml_dtypes'"),
    (lambda r: r.update(device="cuda"), "versions lack 'device_name'"),
    (lambda r: r.update(date="yesterday"), "date"),
    (lambda r: r.update(schema="lowprec.crosscheck/0"), "schema"),
    (lambda r: r.update(oracle="yes"), "oracle"),
    (lambda r: r.update(convention="numpy"), "convention"),
    (lambda r: r.update(total_mismatches=5), "total_mismatches"),
    (lambda r: r["checks"][0].pop("inputs_sha256"), "inputs_sha256"),
    (lambda r: r["formats"].pop(), "formats"),
    (lambda r: r.update(mismatches=1), "mismatches"),
    (lambda r: r["checks"][0].update(kind="cast"), "kind"),
    (lambda r: r["checks"][0].update(format="E9M9"), "E9M9"),
    (lambda r: r["checks"][0].update(tried=True), "tried"),
    (lambda r: r["checks"][0]["codes"].update(count=3), "stored results"),
    (lambda r: r["checks"][0].update(examples=[{}] * 51), "examples"),
])
def test_schema_rejects_malformed_reports(mutation: Any, message: str) -> None:
    report = copy.deepcopy(_load(crosscheck.REPORT_DIR / "ml_dtypes.json"))
    crosscheck.validate_report(report)
    mutation(report)
    with pytest.raises(ValueError, match=message):
        crosscheck.validate_report(report)


def test_replay_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from lowprec.app.cli import main

    assert main(["crosscheck", "--replay", *map(str, REPORTS)]) == 0
    bad = copy.deepcopy(_load(crosscheck.REPORT_DIR / "torch.json"))
    check = _first_encode(bad, "BF16")
    codes = crosscheck.unpack_codes(check["codes"])
    codes[-1] ^= np.uint16(0x8000)
    check["codes"] = crosscheck.pack_codes(codes)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(bad))
    assert main(["crosscheck", "--replay", str(path)]) == 1
    assert "CONTRADICTED" in capsys.readouterr().out


def test_report_summary_drops_only_the_packed_arrays() -> None:
    report = _load(crosscheck.REPORT_DIR / "ml_dtypes.json")
    summary = crosscheck.report_summary(report)
    text = json.dumps(summary, allow_nan=False)
    assert len(text) < 100_000 and '"data"' not in text
    assert [c["format"] for c in summary["checks"]] == [c["format"] for c in report["checks"]]
    assert summary["versions"] == report["versions"] and "codes" in report["checks"][0]
