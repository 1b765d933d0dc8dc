"""Cross-check a real backend against the format-model convention it claims, and keep the evidence.

`run_crosscheck(backend)` runs the `gpu.vectors` inputs (every code, midpoints ± one float32 step,
overflow and subnormal edges, specials, seeded random values) through the backend and through
`formats.encode` with `formats.policy_for(backend.convention, fmt)`, compares codes as unsigned
integers, decodes every code both ways (float32 bits; NaN bit patterns per the backend's
`nan_bits`, or NaN-ness alone where the backend's NaN bits are unspecified), and returns a report
(schema `gpu.report_schema.SCHEMA`) that stores every backend result compactly
(`gpu.evidence.pack_codes`) with the fingerprint of its inputs, so `replay_problems` can re-run the
current model against recorded hardware output with no hardware. Scaled casts use
`codes = encode(fp32(x · encode_scale))`.

This module is the one door to reports: they are written (`write_report`, strict JSON through
`lowprec.strictjson`), read and validated (`load_report`), listed (`committed_reports`, the files
under `REPORT_DIR` = `gpu/reports/`) and summarised (`report_summary`, `report_rows`) here, and
nowhere else. The command line is `lowprec crosscheck`.
"""

from __future__ import annotations

import datetime as _dt
import platform
from functools import partial
from importlib import metadata
from pathlib import Path
from typing import Any, Callable

import numpy as np

from lowprec import strictjson
from lowprec.formats import decode, encode, get_format, policy_for

from .backends import Backend, get_backend
from .evidence import hex32, inputs_sha256, pack_codes, unpack_codes, vector_inputs
from .report_schema import CONVENTION_LIBRARY, MAX_EXAMPLES, SCHEMA, validate_report

__all__ = [
    "KERNEL_ENCODE_SCALES", "MAX_EXAMPLES", "MAX_N_RANDOM", "REPORT_DIR", "REPORT_N_RANDOM", "REPORT_ROW_KEYS", "SCHEMA",
    "check_writable", "committed_reports", "decode_check", "encode_check", "inputs_sha256",
    "library_version", "load_report", "model_codes", "pack_codes", "replay_check", "replay_problems",
    "report_rows",
    "report_summary", "run_crosscheck", "summary_lines", "unpack_codes", "validate_report",
    "vector_inputs", "write_report",
]

REPORT_DIR = Path(__file__).resolve().parent / "reports"
#: random vectors per format in the committed reports (the structured vectors are always complete)
REPORT_N_RANDOM = 50_000
#: the most random vectors per format one run may ask for (each costs a few float64 arrays of
#: that length: 10^7 is a few hundred MB at most)
MAX_N_RANDOM = 10_000_000
#: scaled-cast cases tried on kernels that multiply by an encode scale before the cast
KERNEL_ENCODE_SCALES = (1.0, float(np.float32(448.0 / 300.0)))

Progress = Callable[[int, int], None]


def _scaled(x: np.ndarray, encode_scale: float) -> np.ndarray:
    if encode_scale == 1.0:
        return np.asarray(x, np.float32)
    with np.errstate(over="ignore", invalid="ignore"):
        return (np.asarray(x, np.float32) * np.float32(encode_scale)).astype(np.float32)


def model_codes(x: np.ndarray, fmt: str, convention: str, encode_scale: float = 1.0,
                version: str | None = None) -> np.ndarray:
    """What the model says `convention` gives for fp32(x · encode_scale) in `fmt` (`version`: the
    ml_dtypes release whose rules apply, None for the installed one; see `policy_for`)."""
    with np.errstate(invalid="ignore", over="ignore"):
        return encode(_scaled(x, encode_scale), fmt, policy_for(convention, fmt, version=version))


def library_version(report: dict[str, Any]) -> str | None:
    """The release of a versioned convention's library that produced `report` (ml_dtypes: the
    recorded `versions['ml_dtypes']`), or None when the convention is not versioned."""
    if report.get("convention") == "ml_dtypes":
        v = report.get("versions", {}).get("ml_dtypes")
        return v if isinstance(v, str) and v != "not installed" else None
    return None


# ------------------------------------------------------------------------------------------------
# running a backend
# ------------------------------------------------------------------------------------------------


def _versions(backend: Backend) -> dict[str, str]:
    v = {"python": platform.python_version(), "platform": platform.platform()}
    for dist in ("lowprec", "numpy", "ml_dtypes", "torch", "triton"):
        try:
            v[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            v[dist] = "not installed"
    v.update(backend.versions())  # the backend's own view (torch.__version__, CUDA, device, driver)
    return v


def _headline_version(backend: Backend) -> str:
    """One line naming the library that did the casts, e.g. 'ml_dtypes 0.7.0'."""
    lib = CONVENTION_LIBRARY.get(backend.convention, "torch")
    v = backend.versions()
    line = f"{lib} {v.get(lib, '?')}"
    if "device_name" in v:
        line += f" on {v['device_name']} (driver {v.get('driver', '?')}, CUDA {v.get('cuda', '?')})"
    return line


def _cases(backend: Backend, fmt: str) -> list[tuple[str, float]]:
    sources = backend.supported[fmt]
    if backend.name.startswith("triton"):
        cases = [(s, 1.0) for s in sources]
        cases += [("float32", s) for s in KERNEL_ENCODE_SCALES if s != 1.0]
        return cases
    return [(s, 1.0) for s in sources]


def encode_check(backend: Backend, fmt: str, *, source_dtype: str = "float32",
                 encode_scale: float = 1.0, n_random: int = REPORT_N_RANDOM, seed: int = 0,
                 store_codes: bool = True) -> dict[str, Any]:
    """One cast check: the backend's codes against the model's, over the full vectors of `fmt`."""
    f = get_format(fmt)
    spec = {"generator": "bf16_inputs" if source_dtype == "bfloat16" else "all_inputs",
            "format": f.name, "n_random": int(n_random), "seed": int(seed)}
    x = vector_inputs(spec)
    got, amax = backend.encode(x, f, source_dtype=source_dtype, encode_scale=encode_scale)
    want = model_codes(x, f.name, backend.convention, encode_scale)
    got = np.asarray(got).astype(want.dtype)
    bad = np.flatnonzero(got != want)
    examples = [{"index": int(i), "input_bits": hex32(x[i]), "input": float(x[i]).hex(),
                 "backend_code": int(got[i]), "model_code": int(want[i])}
                for i in bad[:MAX_EXAMPLES]]
    check: dict[str, Any] = {
        "kind": "encode", "format": f.name, "source_dtype": source_dtype,
        "encode_scale": float(encode_scale), "convention": backend.convention,
        "policy": policy_for(backend.convention, f).to_dict(), "vectors": spec,
        "inputs_sha256": inputs_sha256(x), "tried": int(x.size), "mismatches": int(bad.size),
        "examples": examples,
    }
    if amax is not None:
        with np.errstate(invalid="ignore"):
            want_amax = np.float32(np.nanmax(np.abs(x))) if x.size else np.float32(0)
        check["amax"] = {"backend": float(amax).hex(), "model": float(want_amax).hex(),
                         "match": bool(np.float32(amax).view(np.uint32) == want_amax.view(np.uint32))}
    if store_codes:
        check["codes"] = pack_codes(got)
    return check


def decode_check(backend: Backend, fmt: str, *, store_values: bool = True) -> dict[str, Any]:
    """Decode every code of `fmt` with the backend and the model; compare float32 bits."""
    f = get_format(fmt)
    codes = np.arange(f.n_codes, dtype=np.uint8 if f.bits <= 8 else np.uint16)
    got = np.asarray(backend.decode(codes, f), np.float32)
    want = decode(codes, f, nan_bits=backend.nan_bits or "canonical")
    gb, wb = got.view(np.uint32), want.view(np.uint32)
    if backend.nan_bits is None:  # only NaN-ness is specified
        same = (gb == wb) | (np.isnan(got) & np.isnan(want))
    else:
        same = gb == wb
    bad = np.flatnonzero(~same)
    check: dict[str, Any] = {
        "kind": "decode", "format": f.name, "nan_bits": backend.nan_bits,
        "tried": int(codes.size), "mismatches": int(bad.size),
        "examples": [{"code": int(codes[i]), "backend_bits": f"0x{int(gb[i]):08x}",
                      "model_bits": f"0x{int(wb[i]):08x}"} for i in bad[:MAX_EXAMPLES]],
    }
    if store_values:
        check["values"] = pack_codes(gb)
    return check


def run_crosscheck(backend_name: str, formats: list[str] | None = None, *,
                   n_random: int = REPORT_N_RANDOM, seed: int = 0, store_codes: bool = True,
                   progress: Progress | None = None) -> dict[str, Any]:
    """Report of `backend_name` against its convention over `formats` (default: all it supports)."""
    backend = get_backend(backend_name)
    ok, why = backend.available()
    if not ok:
        raise ValueError(f"backend {backend.name!r} is not available here: {why}")
    if isinstance(n_random, bool) or not isinstance(n_random, (int, np.integer)):
        raise TypeError(f"n_random must be an integer, got {n_random!r}")
    if not 0 <= n_random <= MAX_N_RANDOM:
        raise ValueError(f"n_random must be 0 … {MAX_N_RANDOM}, got {n_random}")
    names = list(dict.fromkeys(get_format(f).name for f in formats)) if formats else list(
        backend.supported)
    skipped = {n: backend.unsupported.get(n, "not supported by this backend")
               for n in names if n not in backend.supported}
    if not formats:
        skipped = dict(backend.unsupported)
    todo = [n for n in names if n in backend.supported]
    if not todo:
        reasons = "; ".join(f"{n}: {why}" for n, why in skipped.items())
        raise ValueError(f"backend {backend.name!r} cannot cast to {', '.join(names)} ({reasons}); "
                         f"it supports {', '.join(backend.supported)}")
    total = sum(len(_cases(backend, n)) + 1 for n in todo)
    checks: list[dict[str, Any]] = []
    done = 0
    for name in todo:
        # a backend build without a cast (e.g. a dtype missing on a device) raises: that check is
        # reported under 'skipped' with the error, and the other checks still run
        jobs: list[tuple[str, Callable[[], dict[str, Any]]]] = [
            (f"{name} encode from {src}" + (f" ×{scale:.6g}" if scale != 1.0 else ""),
             partial(encode_check, backend, name, source_dtype=src, encode_scale=scale,
                     n_random=n_random, seed=seed, store_codes=store_codes))
            for src, scale in _cases(backend, name)]
        jobs.append((f"{name} decode", partial(decode_check, backend, name,
                                                  store_values=store_codes)))
        for label, job in jobs:
            try:
                checks.append(job())
            except (RuntimeError, NotImplementedError, TypeError) as exc:
                skipped[label] = f"backend raised {type(exc).__name__}: {exc}"[:300]
            done += 1
            if progress:
                progress(done, total)
    if not checks:
        raise ValueError(f"backend {backend.name!r} failed on every format: {skipped}")
    disagree = sum(c["mismatches"] for c in checks)
    amax_bad = sum(1 for c in checks if "amax" in c and not c["amax"]["match"])
    report: dict[str, Any] = {
        "schema": SCHEMA, "backend": backend.name, "convention": backend.convention,
        "device": backend.device, "oracle": backend.oracle,
        "deviation_note": backend.deviation_note or None,
        "date": _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat(),
        "versions": _versions(backend), "version": _headline_version(backend),
        "formats": list(dict.fromkeys(c["format"] for c in checks)), "skipped": skipped,
        "mismatches": disagree,
        "total_tried": sum(c["tried"] for c in checks), "total_mismatches": disagree,
        "ok": (disagree == 0 and amax_bad == 0) or not backend.oracle,
        "checks": checks,
    }
    validate_report(report)
    return report


# ------------------------------------------------------------------------------------------------
# reading and writing reports
# ------------------------------------------------------------------------------------------------


def check_writable(path: str | Path) -> Path:
    """`path` as a Path if a report can be written there (parents are created); ValueError if not."""
    p = Path(path)
    if p.is_dir():
        raise ValueError(f"report path {str(p)!r} is a directory; give a file name such as "
                         f"{str(p / 'report.json')!r}")
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ValueError(f"cannot create the folder for report {str(p)!r}: {exc.strerror}") from exc
    return p


def write_report(report: dict[str, Any], path: str | Path) -> Path:
    """Validate `report` and write it as strict JSON to `path`."""
    validate_report(report)
    p = check_writable(path)
    try:
        strictjson.write(report, p)
    except OSError as exc:
        raise ValueError(f"cannot write report {str(p)!r}: {exc.strerror}") from exc
    return p


def load_report(path: str | Path) -> dict[str, Any]:
    """A report read from `path` (strict JSON) and validated; ValueError naming the file when it is
    not one."""
    try:
        report = strictjson.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise ValueError(f"cannot read report {str(path)!r}: {exc.strerror}") from exc
    except (ValueError, UnicodeDecodeError) as exc:
        raise ValueError(f"{str(path)!r} is not a JSON cross-check report: {exc}") from exc
    try:
        validate_report(report)
    except ValueError as exc:
        raise ValueError(f"{str(path)!r} is not a valid cross-check report: {exc}") from exc
    return report  # type: ignore[no-any-return]


def committed_reports() -> list[Path]:
    """The report files under `REPORT_DIR` (gpu/reports/*.json), sorted by name."""
    return sorted(REPORT_DIR.glob("*.json"))


def report_summary(report: dict[str, Any]) -> dict[str, Any]:
    """The report without its packed code arrays (JSON-ready)."""
    drop = {"codes", "values"}
    out = {k: v for k, v in report.items() if k != "checks"}
    out["checks"] = [{k: v for k, v in c.items() if k not in drop} for c in report["checks"]]
    return out


#: the columns of `report_rows`
REPORT_ROW_KEYS = ("file", "backend", "convention", "version", "device", "date", "tried", "mismatches")


def report_rows(format_name: str | None = None) -> list[dict[str, Any]]:
    """One row per committed report that covers `format_name` (every report when None): file,
    backend, convention, version, device, date, and the values tried and the mismatches summed over
    that format's checks. A file that is not a valid report gives a row saying why (backend
    'invalid report: …'), so a broken file shows instead of vanishing."""
    want = get_format(format_name).name if format_name is not None else None
    rows: list[dict[str, Any]] = []
    for path in committed_reports():
        try:
            rep = load_report(path)
        except ValueError as exc:
            rows.append({**{k: "" for k in REPORT_ROW_KEYS}, "file": path.name,
                         "backend": f"invalid report: {exc}"})
            continue
        checks = rep["checks"]
        if want is not None:
            if want not in rep["formats"]:
                continue
            checks = [c for c in checks if c["format"] == want]
        rows.append({"file": path.name, "backend": rep["backend"], "convention": rep["convention"],
                     "version": rep["version"], "device": rep["device"], "date": rep["date"][:19],
                     "tried": sum(c["tried"] for c in checks),
                     "mismatches": sum(c["mismatches"] for c in checks)})
    return rows


# ------------------------------------------------------------------------------------------------
# replay and summary
# ------------------------------------------------------------------------------------------------


def replay_check(check: dict[str, Any], version: str | None = None) -> dict[str, Any]:
    """Re-run the current model on one recorded check: {'inputs_match', 'mismatches', 'examples'}.

    Encode checks regenerate the inputs (their sha256 must match the recorded one) and compare the
    recorded backend codes with today's model codes under the rules of the library release that
    recorded them (`version`, from `library_version(report)`); decode checks compare recorded
    backend float32 bits with today's `formats.decode`."""
    if check["kind"] == "encode":
        x = vector_inputs(check["vectors"])
        if inputs_sha256(x) != check["inputs_sha256"]:
            return {"inputs_match": False, "mismatches": None, "examples": []}
        if "codes" not in check:
            raise ValueError(f"check for {check['format']} stores no codes; cannot replay it")
        got = unpack_codes(check["codes"])
        want = model_codes(x, check["format"], check["convention"], check["encode_scale"], version)
        bad = np.flatnonzero(got.astype(want.dtype) != want)
        return {"inputs_match": True, "mismatches": int(bad.size),
                "examples": [{"input_bits": hex32(x[i]), "backend_code": int(got[i]),
                              "model_code": int(want[i])} for i in bad[:MAX_EXAMPLES]]}
    if "values" not in check:
        raise ValueError(f"decode check for {check['format']} stores no values; cannot replay it")
    f = get_format(check["format"])
    codes = np.arange(f.n_codes)
    gb = unpack_codes(check["values"]).astype(np.uint32)
    nan_bits = check.get("nan_bits")
    want = decode(codes, f, nan_bits=nan_bits or "canonical").view(np.uint32)
    same = gb == want
    if nan_bits is None:
        same |= np.isnan(gb.view(np.float32)) & np.isnan(want.view(np.float32))
    bad = np.flatnonzero(~same)
    return {"inputs_match": True, "mismatches": int(bad.size),
            "examples": [{"code": int(i), "backend_bits": f"0x{int(gb[i]):08x}",
                          "model_bits": f"0x{int(want[i]):08x}"} for i in bad[:MAX_EXAMPLES]]}


def replay_problems(report: dict[str, Any]) -> list[str]:
    """Where recorded evidence contradicts today's model (empty list: consistent).

    For an oracle backend every replayed mismatch is a problem; for the interpreter (not an oracle)
    only inputs that cannot be regenerated are. Changed vectors (sha256) are always a problem:
    regenerate the report with `lowprec crosscheck`."""
    validate_report(report)
    problems: list[str] = []
    for check in report["checks"]:
        label = (f"{report['backend']} {check['kind']} {check['format']}"
                 + (f" from {check['source_dtype']} ×{check['encode_scale']}"
                    if check["kind"] == "encode" else ""))
        r = replay_check(check, library_version(report))
        if not r["inputs_match"]:
            problems.append(f"{label}: test vectors changed since the report was recorded "
                            "(sha256 differs); regenerate it with `lowprec crosscheck`")
        elif report["oracle"] and r["mismatches"]:
            problems.append(f"{label}: current model disagrees with recorded backend output on "
                            f"{r['mismatches']} of {check['tried']} (first: {r['examples'][:3]})")
    return problems


def summary_lines(report: dict[str, Any]) -> list[str]:
    if not report["oracle"]:
        verdict = "not an oracle: its mismatches are a documented deviation, listed below"
    else:
        verdict = "ok" if report["ok"] else "DISAGREES"
    lines = [f"{report['backend']} vs convention {report['convention']}: "
             f"{report['total_mismatches']} mismatches in {report['total_tried']} "
             f"({verdict})"]
    for c in report["checks"]:
        extra = ""
        if c["kind"] == "encode":
            extra = f" from {c['source_dtype']}" + (
                f" ×{c['encode_scale']:.6g}" if c["encode_scale"] != 1.0 else "")
        if "amax" in c and not c["amax"]["match"]:
            extra += f" (amax differs: backend {c['amax']['backend']}, model {c['amax']['model']})"
        lines.append(f"  {c['kind']:6s} {c['format']:9s}{extra}: {c['mismatches']} / {c['tried']}")
    for name, why in report["skipped"].items():
        lines.append(f"  skipped {name}: {why}")
    if report.get("deviation_note"):
        lines.append(f"  documented deviation: {report['deviation_note']}")
    return lines
