"""Cross-check a real backend against the format-model convention it claims, and keep the evidence.

`run_crosscheck(backend)` runs the `gpu.vectors` inputs (every code, midpoints ± one float32 step,
overflow and subnormal edges, specials, seeded random values) through the backend and through
`formats.encode` with `formats.policy_for(backend.convention, fmt)`, compares codes as unsigned
integers, decodes every code both ways (float32 bits; NaN bit patterns per the backend's
`nan_bits`, or NaN-ness alone where the backend's NaN bits are unspecified), and returns a JSON-ready
report (schema `SCHEMA`): backend, versions, date, and per check the vectors tried, mismatches, up to
`MAX_EXAMPLES` examples, and every backend result code compactly (`pack_codes`: zlib + base64 of
the little-endian code bytes, uint16 split into byte planes first) with the vector generator's
parameters and the sha256 of the float32 input bits, so `replay_report` can re-run the current
model against recorded hardware output with no hardware. Scaled casts use
`codes = encode(fp32(x · encode_scale))`. Also here: the float64 reference and the stated error
bound of an FP8 GEMM with FP32 accumulation (`reference_gemm`, `gemm_error_bound`).
"""

from __future__ import annotations

import argparse
import base64
import datetime as _dt
import hashlib
import json
import math
import platform
import sys
import zlib
from functools import partial
from importlib import metadata
from pathlib import Path
from typing import Any, Callable

import numpy as np

from lowprec.formats import decode, encode, get_format, policy_for

from . import vectors
from .backends import Backend, get_backend

SCHEMA = "lowprec.crosscheck/1"
MAX_EXAMPLES = 50
REPORT_DIR = Path(__file__).resolve().parent / "reports"
#: random vectors per format in the committed reports (the structured vectors are always complete)
REPORT_N_RANDOM = 50_000
#: scaled-cast cases tried on kernels that multiply by an encode scale before the cast
KERNEL_ENCODE_SCALES = (1.0, float(np.float32(448.0 / 300.0)))
#: significand bits assumed for the in-chunk accumulation of Hopper FP8 tensor-core dots: the
#: DeepSeek-V3 technical report (arXiv:2412.19437, §3.3.2) measures about 14 bits retained on H800;
#: truncation with 14 bits has unit roundoff 2^-13
GPU_FP8_ACC_BITS = 13

Progress = Callable[[int, int], None]


# ------------------------------------------------------------------------------------------------
# compact code arrays and input fingerprints
# ------------------------------------------------------------------------------------------------


def pack_codes(codes: np.ndarray) -> dict[str, Any]:
    """{'dtype', 'count', 'encoding', 'data'}: zlib-compressed little-endian bytes, base64.

    uint16 codes are stored as two byte planes (all low bytes, then all high bytes), which
    compresses far better than interleaved bytes."""
    arr = np.ascontiguousarray(np.asarray(codes).reshape(-1))
    if arr.dtype == np.uint8:
        raw = arr.tobytes()
    elif arr.dtype == np.uint16:
        raw = arr.astype("<u2").view(np.uint8).reshape(-1, 2).T.copy().tobytes()
    elif arr.dtype == np.uint32:
        raw = arr.astype("<u4").view(np.uint8).reshape(-1, 4).T.copy().tobytes()
    else:
        raise TypeError(f"pack_codes takes uint8/uint16/uint32 codes, got {arr.dtype}")
    return {"dtype": str(arr.dtype), "count": int(arr.size), "encoding": "zlib+base64,byte-planes",
            "data": base64.b64encode(zlib.compress(raw, 9)).decode("ascii")}


def unpack_codes(packed: dict[str, Any]) -> np.ndarray:
    """Inverse of `pack_codes`."""
    if packed.get("encoding") != "zlib+base64,byte-planes":
        raise ValueError(f"unknown code encoding {packed.get('encoding')!r}; "
                         "expected 'zlib+base64,byte-planes'")
    width = {"uint8": 1, "uint16": 2, "uint32": 4}.get(str(packed.get("dtype")))
    if width is None:
        raise ValueError(f"unknown code dtype {packed.get('dtype')!r}; expected uint8/uint16/uint32")
    raw = np.frombuffer(zlib.decompress(base64.b64decode(packed["data"])), np.uint8)
    count = int(packed["count"])
    if raw.size != count * width:
        raise ValueError(f"packed codes hold {raw.size} bytes, expected {count} × {width}")
    planes = raw.reshape(width, count).T.copy()
    return planes.view(f"<u{width}").reshape(-1).astype(f"u{width}")


def inputs_sha256(x: np.ndarray) -> str:
    """sha256 of the float32 input bits (little-endian), the fingerprint a report is replayed on."""
    return hashlib.sha256(np.ascontiguousarray(x, np.float32).astype("<f4").tobytes()).hexdigest()


def vector_inputs(spec: dict[str, Any]) -> np.ndarray:
    """Regenerate inputs from a report's vector spec {'generator', 'format', 'n_random', 'seed'}."""
    gen = spec.get("generator")
    if gen == "all_inputs":
        return vectors.all_inputs(spec["format"], int(spec["n_random"]), int(spec["seed"]))
    if gen == "bf16_inputs":
        return vectors.bf16_inputs(spec["format"], int(spec["n_random"]), int(spec["seed"]))
    raise ValueError(f"unknown vector generator {gen!r}; known: all_inputs, bf16_inputs")


def _hex32(v: float | np.floating[Any]) -> str:
    return f"0x{int(np.float32(v).view(np.uint32)):08x}"


def _scaled(x: np.ndarray, encode_scale: float) -> np.ndarray:
    if encode_scale == 1.0:
        return np.asarray(x, np.float32)
    with np.errstate(over="ignore", invalid="ignore"):
        return (np.asarray(x, np.float32) * np.float32(encode_scale)).astype(np.float32)


def model_codes(x: np.ndarray, fmt: str, convention: str, encode_scale: float = 1.0) -> np.ndarray:
    """What the model says `convention` gives for fp32(x · encode_scale) in `fmt`."""
    with np.errstate(invalid="ignore", over="ignore"):
        return encode(_scaled(x, encode_scale), fmt, policy_for(convention, fmt))


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


#: convention → the library whose casts a report of that convention records
_LIBRARY = {"ml_dtypes": "ml_dtypes", "torch": "torch", "triton_nvidia": "triton"}


def _headline_version(backend: Backend) -> str:
    """One line naming the library that did the casts, e.g. 'ml_dtypes 0.6.0'."""
    lib = _LIBRARY.get(backend.convention, "torch")
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
    examples = [{"index": int(i), "input_bits": _hex32(x[i]), "input": float(x[i]).hex(),
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
    if n_random < 0:
        raise ValueError(f"n_random must be ≥ 0, got {n_random}")
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
    p = check_writable(path)
    try:
        p.write_text(json.dumps(report, indent=1, allow_nan=False) + "\n")
    except OSError as exc:
        raise ValueError(f"cannot write report {str(p)!r}: {exc.strerror}") from exc
    return p


def load_report(path: str | Path) -> dict[str, Any]:
    """A report read from `path` and validated; ValueError naming the file when it is not one."""
    try:
        report = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise ValueError(f"cannot read report {str(path)!r}: {exc.strerror}") from exc
    except (ValueError, UnicodeDecodeError) as exc:
        raise ValueError(f"{str(path)!r} is not a JSON cross-check report: {exc}") from exc
    try:
        validate_report(report)
    except ValueError as exc:
        raise ValueError(f"{str(path)!r} is not a valid cross-check report: {exc}") from exc
    return report


def committed_reports() -> list[Path]:
    return sorted(REPORT_DIR.glob("*.json"))


def report_summary(report: dict[str, Any]) -> dict[str, Any]:
    """The report without its packed code arrays: what a Conventions view shows (JSON-ready)."""
    drop = {"codes", "values"}
    out = {k: v for k, v in report.items() if k != "checks"}
    out["checks"] = [{k: v for k, v in c.items() if k not in drop} for c in report["checks"]]
    return out


# ------------------------------------------------------------------------------------------------
# schema and replay
# ------------------------------------------------------------------------------------------------

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
    if report["convention"] not in ("ml_dtypes", "torch", "triton_nvidia", "ocp"):
        raise ValueError(f"report convention {report['convention']!r} is unknown")
    try:
        _dt.datetime.fromisoformat(report["date"])
    except ValueError as exc:
        raise ValueError(f"report date {report['date']!r} is not an ISO 8601 date") from exc
    need = [_LIBRARY[report["convention"]]] if report["convention"] in _LIBRARY else []
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


def replay_check(check: dict[str, Any]) -> dict[str, Any]:
    """Re-run the current model on one recorded check: {'inputs_match', 'mismatches', 'examples'}.

    Encode checks regenerate the inputs (their sha256 must match the recorded one) and compare the
    recorded backend codes with today's model codes; decode checks compare recorded backend float32
    bits with today's `formats.decode`."""
    if check["kind"] == "encode":
        x = vector_inputs(check["vectors"])
        if inputs_sha256(x) != check["inputs_sha256"]:
            return {"inputs_match": False, "mismatches": None, "examples": []}
        if "codes" not in check:
            raise ValueError(f"check for {check['format']} stores no codes; cannot replay it")
        got = unpack_codes(check["codes"])
        want = model_codes(x, check["format"], check["convention"], check["encode_scale"])
        bad = np.flatnonzero(got.astype(want.dtype) != want)
        return {"inputs_match": True, "mismatches": int(bad.size),
                "examples": [{"input_bits": _hex32(x[i]), "backend_code": int(got[i]),
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
        r = replay_check(check)
        if not r["inputs_match"]:
            problems.append(f"{label}: test vectors changed since the report was recorded "
                            "(sha256 differs); regenerate it with `lowprec crosscheck`")
        elif report["oracle"] and r["mismatches"]:
            problems.append(f"{label}: current model disagrees with recorded backend output on "
                            f"{r['mismatches']} of {check['tried']} (first: {r['examples'][:3]})")
    return problems


# ------------------------------------------------------------------------------------------------
# FP8 GEMM reference and error bound
# ------------------------------------------------------------------------------------------------


def reference_gemm(a_values: np.ndarray, b_values: np.ndarray, a_decode_scale: np.ndarray,
                   b_decode_scale: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(C, |A|·|B| · |sa sb|) in float64 from the exact dequantized operands (decoded fp8 values,
    decode scales per tensor (1), per row of A (M) or per column of B (N))."""
    a = np.asarray(a_values, np.float64)
    b = np.asarray(b_values, np.float64)
    sa = np.asarray(a_decode_scale, np.float64).reshape(-1, 1)
    sb = np.asarray(b_decode_scale, np.float64).reshape(1, -1)
    s = np.abs(sa * sb)
    return (a @ b) * sa * sb, (np.abs(a) @ np.abs(b)) * s


def gemm_error_bound(abs_product: np.ndarray, k: int, *, block_k: int, acc_bits: int = 24) -> np.ndarray:
    """Bound on |C - C_ref| for `gpu.kernels.fp8_gemm` (Higham, Accuracy and Stability, §3.1).

    Each fp8×fp8 product is exact in FP32. Within a chunk of `block_k` products the sum is formed
    by the dot unit with a `acc_bits`-bit significand (unit roundoff u1 = 2^-acc_bits when
    rounding; a truncating unit is covered by passing one bit fewer), in any order: error ≤
    γ(block_k - 1, u1) Σ|p|. The ceil(k / block_k) chunk sums are added in FP32 (u = 2^-24) and the
    result is multiplied by the two decode scales: γ(ceil(k/block_k) + 2, u). Altogether
    |C - C_ref| ≤ [(1 + γ(block_k - 1, u1))(1 + γ(chunks + 2, u)) - 1] · (|A||B|)[m,n] · |sa sb|,
    with γ(n, u) = n·u / (1 - n·u). The float64 reference is exact for E4M3 operands and off by
    at most k·2^-53 relative otherwise (added). FP32 underflow is not covered: keep
    |C| ≥ 2^-100 · |A||B| in tests.
    """
    def gamma(n: int, u: float) -> float:
        return n * u / (1 - n * u)

    u = 2.0**-24
    u1 = 2.0**-acc_bits
    chunks = math.ceil(k / block_k)
    rel = (1 + gamma(max(block_k - 1, 0), u1)) * (1 + gamma(chunks + 2, u)) - 1 + k * 2.0**-53
    return rel * np.asarray(abs_product, np.float64)


# ------------------------------------------------------------------------------------------------
# python -m lowprec.gpu.crosscheck
# ------------------------------------------------------------------------------------------------


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


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m lowprec.gpu.crosscheck",
                                description="Cross-check a backend against its format convention.")
    p.add_argument("--backend", required=True, help="ml_dtypes, torch, torch-cuda, triton, "
                   "triton-interpret")
    p.add_argument("--formats", nargs="*", default=None, help="formats (default: all supported)")
    p.add_argument("--json", default=None, help="write the report here")
    p.add_argument("--n-random", type=int, default=REPORT_N_RANDOM)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    try:
        if args.json:
            check_writable(args.json)
        report = run_crosscheck(args.backend, args.formats, n_random=args.n_random, seed=args.seed)
        if args.json:
            write_report(report, args.json)
    except (ValueError, TypeError) as exc:
        print(f"{p.prog}: error: {exc}", file=sys.stderr)
        return 2
    print("\n".join(summary_lines(report)))
    return 0 if report["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
