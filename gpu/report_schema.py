"""The schema of a cross-check report (`lowprec.crosscheck/1`) and its validation.

A report is a JSON object: the backend, the convention it claims (one of `formats.CONVENTIONS`),
its device, whether it is an oracle, the date (ISO 8601), the library versions (the library that
did the casts always; device name, driver and CUDA for a CUDA report), the formats checked, what
was skipped and why, the totals, and one entry per check — an encode check (format, source dtype,
encode scale, policy, vector spec, input fingerprint, tried, mismatches, at most `MAX_EXAMPLES`
examples, the packed backend codes) or a decode check (every code's float32 bits). `validate_report`
raises ValueError naming the first thing that does not fit. Reading and writing reports is
`gpu.crosscheck`'s.
"""

from __future__ import annotations

import datetime as _dt
from typing import Any

from lowprec.formats import CONVENTIONS, get_format

__all__ = ["CONVENTION_LIBRARY", "MAX_EXAMPLES", "SCHEMA", "validate_report"]

SCHEMA = "lowprec.crosscheck/1"
MAX_EXAMPLES = 50
#: convention → the library whose casts a report of that convention records
CONVENTION_LIBRARY = {"ml_dtypes": "ml_dtypes", "torch": "torch", "triton_nvidia": "triton"}

_TOP = {"schema": str, "backend": str, "convention": str, "device": str, "oracle": bool,
        "date": str, "versions": dict, "version": str, "formats": list, "skipped": dict,
        "total_tried": int, "total_mismatches": int, "mismatches": int, "ok": bool,
        "checks": list}
_ENCODE = {"kind": str, "format": str, "source_dtype": str, "encode_scale": float,
           "convention": str, "policy": dict, "vectors": dict, "inputs_sha256": str, "tried": int,
           "mismatches": int, "examples": list}
_DECODE = {"kind": str, "format": str, "tried": int, "mismatches": int, "examples": list}


def _require(obj: dict[str, Any], keys: dict[str, type], where: str) -> None:
    for key, typ in keys.items():
        if key not in obj:
            raise ValueError(f"{where}: missing key {key!r}")
        val = obj[key]
        ok = isinstance(val, (int, float)) and not isinstance(val, bool) if typ is float else (
            isinstance(val, typ) and (typ is not int or not isinstance(val, bool)))
        if not ok:
            raise ValueError(f"{where}: {key!r} should be {typ.__name__}, got {type(val).__name__}")


def validate_report(report: Any) -> None:
    """Raise ValueError naming the first thing that does not fit schema `SCHEMA`."""
    if not isinstance(report, dict):
        raise ValueError(f"a report is a JSON object, got {type(report).__name__}")
    _require(report, _TOP, "report")
    if report["schema"] != SCHEMA:
        raise ValueError(f"report schema {report['schema']!r} is not {SCHEMA!r}")
    if report["convention"] not in CONVENTIONS:
        raise ValueError(f"report convention {report['convention']!r} is unknown")
    try:
        _dt.datetime.fromisoformat(report["date"])
    except ValueError as exc:
        raise ValueError(f"report date {report['date']!r} is not an ISO 8601 date") from exc
    need = [CONVENTION_LIBRARY[report["convention"]]] if report["convention"] in CONVENTION_LIBRARY else []
    if report["device"] == "cuda":
        need += ["device_name", "driver", "cuda"]
    for key in need:
        if not isinstance(report["versions"].get(key), str):
            raise ValueError(f"report versions lack {key!r} (a {report['device']} report of "
                             f"convention {report['convention']} records it)")
    for i, check in enumerate(report["checks"]):
        where = f"check {i}"
        if not isinstance(check, dict) or check.get("kind") not in ("encode", "decode"):
            raise ValueError(f"{where}: kind must be 'encode' or 'decode'")
        _require(check, _ENCODE if check["kind"] == "encode" else _DECODE, where)
        get_format(check["format"])
        if len(check["examples"]) > MAX_EXAMPLES:
            raise ValueError(f"{where}: {len(check['examples'])} examples, at most {MAX_EXAMPLES}")
        if check["mismatches"] < len(check["examples"]) or check["mismatches"] > check["tried"]:
            raise ValueError(f"{where}: mismatches={check['mismatches']} does not fit "
                             f"{len(check['examples'])} examples of {check['tried']} tried")
        stored = check.get("codes" if check["kind"] == "encode" else "values")
        if stored is not None and int(stored.get("count", -1)) != check["tried"]:
            raise ValueError(f"{where}: {stored.get('count')} stored results for "
                             f"{check['tried']} tried")
    if report["total_tried"] != sum(c["tried"] for c in report["checks"]):
        raise ValueError("report: total_tried is not the sum over checks")
    if report["total_mismatches"] != sum(c["mismatches"] for c in report["checks"]):
        raise ValueError("report: total_mismatches is not the sum over checks")
    if report["mismatches"] != report["total_mismatches"]:
        raise ValueError("report: mismatches differs from total_mismatches")
    if set(report["formats"]) != {c["format"] for c in report["checks"]}:
        raise ValueError("report: formats does not list the formats of its checks")
