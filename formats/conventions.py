"""Named conventions: the cast policy each real backend applies, measured, per format.

Measured on torch 2.13.0 (CPU eager casts of tensors of rank ≥ 1) and ml_dtypes 0.5.4, 0.6.0 and
0.7.0 (numpy `astype`; FP16 is numpy's own cast) with the vectors of `gpu.vectors`; `triton_nvidia` follows the
PTX ISA's `cvt.rn.satfinite` description (round to nearest even, saturate finite values and ±Inf,
NaN stays NaN); `ocp` is our reading of the OCP OFP8 / MX v1.0 specifications. The differences at
the edges are the point: see `formats.conventions_table()` (in `formats.conventions_view`).

ml_dtypes changed two edges in 0.7.0, so its convention is versioned data (`ML_DTYPES_RULES`):
releases before 0.7 round float64 input to float32 first (double rounding) and give every float32
subnormal above 2^-127 the E8M0 code of 2^-126 (they read its exponent field as if it were normal);
0.7 rounds float64 input once and rounds a float32 subnormal by its value. Everything else (overflow,
NaN codes, E8M0 ties away from zero, zero and negatives into E8M0) is the same in 0.5.4, 0.6.0 and
0.7.0. `policy_for("ml_dtypes", fmt)` follows the installed ml_dtypes; `version=` asks for another
release's rules (a recorded report is replayed under the release that produced it).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import metadata
from typing import Any

from .policy import (
    CastPolicy,
    NanPayload,
    NanToFinite,
    Overflow,
    Rounding,
    UnsignedNegative,
    UnsignedZero,
)
from .specs import (
    ALL_FORMATS,
    CORE_FORMATS,
    FLOAT_FORMATS,
    ML_DTYPES_EXTRA_FORMATS,
    P3109_FORMATS,
    Format,
    FloatFormat,
    get_format,
)

#: ml_dtypes releases whose cast rules differ, oldest first: (first release, float64 input rounded to
#: float32 first, how E8M0 reads a float32 subnormal). A release uses the last row at or below it;
#: releases after the newest row are assumed to keep its rules (the test suite checks the installed one).
ML_DTYPES_RULES: tuple[tuple[tuple[int, int], bool, str], ...] = (
    ((0, 5), True, "exponent_field"),   # 0.5.x, 0.6.x (measured: 0.5.4, 0.6.0)
    ((0, 7), False, "nearest"),         # 0.7.0: float64 rounded once; subnormals by value
)
_ML_DTYPES_OLDEST = ML_DTYPES_RULES[0][0]


def _release(version: str) -> tuple[int, int]:
    """(major, minor) of a version string such as '0.7.0' or '0.6.0rc1'."""
    if not isinstance(version, str):
        raise TypeError(f"version must be a string such as '0.7.0', got {type(version).__name__}")
    m = re.match(r"\s*(\d+)\.(\d+)", version)
    if m is None:
        raise ValueError(f"version {version!r} is not a release number such as '0.7.0'")
    return int(m.group(1)), int(m.group(2))


@lru_cache(maxsize=None)
def ml_dtypes_version() -> str:
    """The installed ml_dtypes release (from its package metadata; ml_dtypes is not imported)."""
    try:
        return metadata.version("ml_dtypes")
    except metadata.PackageNotFoundError:  # a dependency of lowprec: only a broken install lacks it
        return ".".join(map(str, ML_DTYPES_RULES[-1][0])) + ".0"


@lru_cache(maxsize=64)
def ml_dtypes_rules(version: str | None = None) -> tuple[bool, str]:
    """(float64 via float32, E8M0 float32-subnormal reading) of ml_dtypes `version` (None: installed).

    Raises ValueError for a release older than the oldest measured one (0.5)."""
    text = ml_dtypes_version() if version is None else version
    rel = _release(text)
    if rel < _ML_DTYPES_OLDEST:
        raise ValueError(f"ml_dtypes {text} is older than the releases measured "
                         f"(0.5.4, 0.6.0, 0.7.0); lowprec models ml_dtypes ≥ 0.5")
    rules = [r for r in ML_DTYPES_RULES if r[0] <= rel][-1]
    return rules[1], rules[2]


def _ml_dtypes_description() -> str:
    """The ml_dtypes convention's one-line description, naming the installed release's rules."""
    try:
        release = ".".join(map(str, _release(ml_dtypes_version())))
        float64 = "via float32 (double rounding)" if ml_dtypes_rules()[0] else "rounded once"
    except ValueError as e:  # an install older than pyproject allows: say so here, raise on use
        return f"ml_dtypes astype: unavailable ({e})"
    return (f"ml_dtypes {release} astype (numpy for FP16): overflow to Inf/NaN, E8M0 ties up, "
            f"zero → NaN, float64 {float64}")


CONVENTIONS: dict[str, str] = {
    "ml_dtypes": _ml_dtypes_description(),
    "torch": "torch 2.13 CPU eager .to(dtype): E4M3FN saturates, E8M0 drops the sign, zero → 2^-127",
    "triton_nvidia": "Triton on NVIDIA, compiled cvt.rn.satfinite: nearest-even, saturating (E5M2 too)",
    "ocp": "OCP OFP8 / MX v1.0 reading: nearest-even, saturating conversion for the MX element types",
    "p3109": "IEEE P3109 interim report v3 as gfloat 0.5 models it (round_float defaults): nearest-even, "
             "overflow to ±Inf (NaN in finite formats); negatives into unsigned formats → NaN",
}

# ------------------------------------------------------------------------------------------------
# the (convention × format) table
# ------------------------------------------------------------------------------------------------

#: a row value standing for "the ml_dtypes release's own rule" (`ML_DTYPES_RULES`)
RELEASE_RULE = "<the ml_dtypes release's rule>"
#: how a backend's decode writes a NaN code as float32 bits (`codec.decode(nan_bits=...)`)
DECODE_NAN_RULES = ("canonical", "payload", "quiet_payload", "snan1")


@dataclass(frozen=True)
class ConventionRow:
    """One cell of the conventions table: what `convention` does when it casts to `format`.

    provided: False — the convention has no cast to this format (`policy_for` raises, naming the
    conventions that do; `note` says why). Otherwise the policy is the convention's base policy
    (`_BASES`; `from_base=False`: a plain `CastPolicy(name=convention)`) with `changes` applied.
    dtype: the backend's type of this layout (an attribute of ml_dtypes/numpy, torch or
    triton.language), '' where the backend has none; casts: whether the backend's own cast to that
    type is the rounding cast this row describes (then it is an oracle: the tests and
    `gpu.backends` compare against it; otherwise, e.g. torch's missing FP4 cast or numpy's
    truncating float → int, the row is lowprec's reading and `note` says so). sources: the source
    dtypes the backend casts from. decode_nan: the float32 bits its decode gives NaN codes
    (`DECODE_NAN_RULES`, see `codec._nan_float_bits`)."""

    convention: str
    format: str
    provided: bool = True
    changes: tuple[tuple[str, Any], ...] = ()
    from_base: bool = True
    dtype: str = ""
    casts: bool = False
    sources: tuple[str, ...] = ("float32",)
    decode_nan: str = "canonical"
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"convention": self.convention, "format": self.format, "provided": self.provided,
                "changes": {k: (v.value if hasattr(v, "value") else v) for k, v in self.changes},
                "dtype": self.dtype, "casts": self.casts, "sources": list(self.sources),
                "decode_nan": self.decode_nan, "note": self.note}


def _rows(convention: str, formats: tuple[str, ...] | str, **fields: Any) -> tuple[ConventionRow, ...]:
    """Rows of one convention for several formats that share their settings; policy fields go to
    `changes`, the rest to the row (`dtype=True`: each format's own `dtype_name`)."""
    names = (formats,) if isinstance(formats, str) else formats
    row_fields = {k: fields.pop(k) for k in list(fields)
                  if k in ("provided", "from_base", "dtype", "casts", "sources", "decode_nan", "note")}
    changes = tuple(sorted(fields.items()))
    out = []
    for name in names:
        extra = dict(row_fields)
        if extra.get("dtype") is True:
            extra["dtype"] = get_format(name).dtype_name
        out.append(ConventionRow(convention, name, changes=changes, **extra))
    return tuple(out)


def _not_provided(convention: str, formats: tuple[str, ...] | str, note: str) -> tuple[ConventionRow, ...]:
    return _rows(convention, formats, provided=False, note=note)


_NO_SPECIALS = ("E2M1", "E3M2", "E2M3")  # the OCP MX elements with neither Inf nor NaN
_ML_EXTRA_FLOATS = ("E3M4", "E4M3IEEE", "E4M3B11FNUZ", "E5M3FNU")
_INTS = ("INT8", "INT4", "INT2", "UINT2", "UINT4", "INT1", "UINT1")
_P3109 = tuple(f.name for f in P3109_FORMATS)
_INT_RULE = {"from_base": False, "overflow": Overflow.SATURATE}  # every convention's integer grids
_INT_NOTE = "lowprec's integer rounding (nearest-even, saturate): the backends' float → int casts truncate"

#: the base policy of each convention (ml_dtypes: float64 input by the release's rule)
_BASES: dict[str, dict[str, Any]] = {
    "ml_dtypes": {"float64_via_float32": RELEASE_RULE},
    "torch": {"float64_via_float32": True},
    "triton_nvidia": {"overflow": Overflow.SATURATE, "nan_payload": NanPayload.ALL_ONES,
                      "unsigned_negative": UnsignedNegative.NAN},
    "ocp": {},
    "p3109": {"unsigned_negative": UnsignedNegative.NAN},
}

#: every (convention, format) cell; adding a format is one record in `formats.specs` plus its rows
CONVENTION_ROWS: tuple[ConventionRow, ...] = (
    # ---- ml_dtypes 0.5–0.7 (numpy astype; FP16 is numpy's own float16) --------------------------
    *_rows("ml_dtypes", ("E4M3FN", "E5M2", "E4M3FNUZ", "E5M2FNUZ"), dtype=True, casts=True),
    *_rows("ml_dtypes", "BF16", dtype=True, casts=True, decode_nan="payload"),
    *_rows("ml_dtypes", "FP16", dtype="float16", casts=True, decode_nan="payload",
           float64_via_float32=False, nan_payload=NanPayload.TRUNCATE,
           note="numpy's own float16 cast: float64 rounded once, NaN payload kept"),
    *_rows("ml_dtypes", "E8M0", dtype=True, casts=True, rounding=Rounding.NEAREST_AWAY,
           unsigned_zero=UnsignedZero.NAN, unsigned_negative=UnsignedNegative.NAN,
           e8m0_float32_subnormals=RELEASE_RULE),
    *_rows("ml_dtypes", _NO_SPECIALS, dtype=True, casts=True, overflow=Overflow.SATURATE,
           nan_to_finite=NanToFinite.NEGATED_ZERO),
    *_rows("ml_dtypes", "FP32", note="float32 is the source dtype itself: no cast to compare"),
    *_rows("ml_dtypes", ("E3M4", "E4M3IEEE", "E4M3B11FNUZ"), dtype=True, casts=True),
    *_rows("ml_dtypes", "E5M3FNU", dtype=True, casts=True, unsigned_negative=UnsignedNegative.NAN),
    *_rows("ml_dtypes", _INTS, dtype=True, note=_INT_NOTE + " (ml_dtypes: toward zero; a result "
           "outside the grid, ±Inf and NaN give 0)", **_INT_RULE),
    *_not_provided("ml_dtypes", _P3109, "ml_dtypes 0.7 has no P3109 types"),
    # ---- torch 2.13 CPU eager (tensors of rank ≥ 1) ----------------------------------------------
    *_rows("torch", "FP16", dtype=True, casts=True, decode_nan="quiet_payload",
           nan_payload=NanPayload.QUIET_TRUNCATE),
    *_rows("torch", "BF16", dtype=True, casts=True, decode_nan="payload",
           nan_payload=NanPayload.ALL_ONES_NEGATIVE),
    *_rows("torch", "E5M2", dtype=True, casts=True, decode_nan="quiet_payload",
           nan_payload=NanPayload.ALL_ONES),
    *_rows("torch", "E4M3FN", dtype=True, casts=True, decode_nan="quiet_payload",
           overflow=Overflow.SATURATE),
    *_rows("torch", "E8M0", dtype=True, casts=True, decode_nan="snan1", rounding=Rounding.NEAREST_AWAY,
           unsigned_zero=UnsignedZero.SMALLEST, unsigned_negative=UnsignedNegative.MAGNITUDE,
           e8m0_float32_subnormals="exponent_field"),
    *_rows("torch", ("E4M3FNUZ", "E5M2FNUZ"), dtype=True, casts=True, decode_nan="snan1"),
    *_rows("torch", _NO_SPECIALS, overflow=Overflow.SATURATE,
           note="torch 2.13 has no element cast to FP4/FP6 (float4_e2m1fn_x2 is a packed storage "
                "type): lowprec's reading, saturating, NaN refused"),
    *_rows("torch", "FP32", note="float32 is the source dtype itself: no cast to compare"),
    *_rows("torch", _INTS, note=_INT_NOTE, **_INT_RULE),
    *_not_provided("torch", _ML_EXTRA_FLOATS, "torch 2.13 has no such dtype"),
    *_not_provided("torch", _P3109, "torch 2.13 has no P3109 types"),
    # ---- Triton on NVIDIA, compiled (PTX cvt.rn.satfinite) ---------------------------------------
    *_rows("triton_nvidia", "E4M3FN", dtype="float8e4nv", casts=True, sources=("float32", "bfloat16")),
    *_rows("triton_nvidia", "E5M2", dtype="float8e5", casts=True, sources=("float32", "bfloat16")),
    *_rows("triton_nvidia", ("BF16", "FP16", "FP32", "E4M3FNUZ", "E5M2FNUZ") + _NO_SPECIALS,
           note="the PTX ISA's cvt.rn.satfinite rule read for this format; lowprec's Triton kernels "
                "cast to fp8 E4M3FN/E5M2 only"),
    *_rows("triton_nvidia", "E8M0", unsigned_zero=UnsignedZero.NAN,
           note="the PTX ISA's cvt.rn.satfinite rule read for E8M0; lowprec's Triton kernels cast to "
                "fp8 E4M3FN/E5M2 only"),
    *_rows("triton_nvidia", _INTS, note=_INT_NOTE, **_INT_RULE),
    *_not_provided("triton_nvidia", _ML_EXTRA_FLOATS + _P3109, "no PTX conversion to this format"),
    # ---- the OCP OFP8 / MX v1.0 reading ----------------------------------------------------------
    *_rows("ocp", ("E4M3FN", "E5M2") + _NO_SPECIALS, overflow=Overflow.SATURATE,
           note="OCP MX v1.0 §6.3: conversion to the MX element types saturates"),
    *_rows("ocp", "E8M0", unsigned_zero=UnsignedZero.NAN, unsigned_negative=UnsignedNegative.NAN),
    *_rows("ocp", ("BF16", "FP16", "FP32", "E4M3FNUZ", "E5M2FNUZ"),
           note="not an OCP format: IEEE overflow (to Inf, or NaN where there is no Inf)"),
    *_rows("ocp", _INTS, note=_INT_NOTE, **_INT_RULE),
    *_not_provided("ocp", _ML_EXTRA_FLOATS + _P3109, "not an OCP format"),
    # ---- IEEE P3109 as gfloat models it ----------------------------------------------------------
    *_rows("p3109", _P3109, dtype=True, note="gfloat 0.5 round_float(fi, v) with its defaults; its "
           "saturation modes are CastPolicy.overflow's (SatFinite, SatPropagate, OvfInf)"),
    *_not_provided("p3109", tuple(f.name for f in CORE_FORMATS + ML_DTYPES_EXTRA_FORMATS),
                   "not a P3109 binary8 format"),
)
_TABLE: dict[tuple[str, str], ConventionRow] = {}
for _row in CONVENTION_ROWS:
    if (_row.convention, _row.format) in _TABLE:
        raise RuntimeError(f"conventions table: ({_row.convention}, {_row.format}) is given twice")
    _TABLE[(_row.convention, _row.format)] = _row
for _conv in CONVENTIONS:
    for _fmt in ALL_FORMATS:
        if (_conv, _fmt.name) not in _TABLE:
            raise RuntimeError(f"conventions table: no row for ({_conv}, {_fmt.name}); give one "
                               f"(or an explicit not-provided row)")


def convention_row(convention: str, fmt: str | Format) -> ConventionRow:
    """The table's cell for (`convention`, `fmt`); ValueError for an unknown convention."""
    if not isinstance(convention, str) or convention.lower() not in CONVENTIONS:
        raise ValueError(f"unknown convention {convention!r}; known: {', '.join(CONVENTIONS)}")
    f = get_format(fmt)
    row = _TABLE.get((convention.lower(), f.name))
    if row is None:  # a format built outside the registry (gemm's TF32, UE4M3): nothing provided
        return ConventionRow(convention.lower(), f.name, provided=False,
                             note=f"{f.name} is not a registered format")
    return row


def providers(fmt: str | Format) -> tuple[str, ...]:
    """The conventions that provide a cast to `fmt`, in `CONVENTIONS` order."""
    f = get_format(fmt)
    return tuple(c for c in CONVENTIONS if convention_row(c, f).provided)


def backend_dtypes(convention: str, *, casts_only: bool = True) -> dict[str, ConventionRow]:
    """format name → row, for the formats whose backend type the convention names (with
    `casts_only`, only where the backend's cast is the row's rounding cast: the oracles)."""
    return {r.format: r for r in CONVENTION_ROWS
            if r.convention == convention and r.provided and r.dtype and (r.casts or not casts_only)}


def decode_nan_rule(convention: str, fmt: Format) -> str:
    """How `convention`'s backend writes fmt's NaN codes as float32 (a `DECODE_NAN_RULES` name)."""
    row = _TABLE.get((convention, fmt.name))
    return row.decode_nan if row is not None else "canonical"


def _resolved(value: Any, release: tuple[bool, str], field: str) -> Any:
    if value != RELEASE_RULE:
        return value
    return release[0] if field == "float64_via_float32" else release[1]


def _policy(row: ConventionRow, version: str | None) -> CastPolicy:
    release = ml_dtypes_rules(version) if row.convention == "ml_dtypes" else (False, "nearest")
    fields: dict[str, Any] = dict(_BASES[row.convention]) if row.from_base else {}
    fields.update(row.changes)
    fields = {k: _resolved(v, release, k) for k, v in fields.items()}
    return CastPolicy(name=row.convention, **fields)


def policy_for(convention: str, fmt: str | Format, *, version: str | None = None) -> CastPolicy:
    """The CastPolicy that backend `convention` applies when casting to `fmt`: its cell of the
    conventions table (`CONVENTION_ROWS`).

    Conventions: ml_dtypes, torch, triton_nvidia, ocp, p3109. Integer grids get nearest-even with
    saturation under every convention but p3109. A cell marked not provided raises ValueError naming
    the conventions that do provide the format. `version` (ml_dtypes only, e.g. '0.6.0') asks for
    that release's rules instead of the installed release's (see `ML_DTYPES_RULES`).
    """
    if not isinstance(convention, str) or convention.lower() not in CONVENTIONS:
        raise ValueError(f"unknown convention {convention!r}; known: {', '.join(CONVENTIONS)}")
    conv = convention.lower()
    if version is not None and conv != "ml_dtypes":
        raise ValueError(f"version={version!r}: only the ml_dtypes convention is versioned "
                         f"(torch is measured at 2.13 only), not {conv!r}")
    if version is not None:
        ml_dtypes_rules(version)  # a bad version string raises even for integer grids
    f = get_format(fmt)
    row = convention_row(conv, f)
    if not row.provided:
        others = providers(f)
        raise ValueError(f"the {conv} convention does not provide {f.name} ({row.note}); "
                         + (f"conventions that do: {', '.join(others)}" if others else "no convention does"))
    return _policy(row, version)
