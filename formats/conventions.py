"""Named conventions: the cast policy each real backend applies, measured, per format.

Measured on torch 2.13.0 (CPU eager casts of tensors of rank ≥ 1) and ml_dtypes 0.5.4, 0.6.0 and
0.7.0 (numpy `astype`; FP16 is numpy's own cast) with the vectors of `gpu.vectors`; `triton_nvidia` follows the
PTX ISA's `cvt.rn.satfinite` description (round to nearest even, saturate finite values and ±Inf,
NaN stays NaN); `ocp` is our reading of the OCP OFP8 / MX v1.0 specifications. The differences at
the edges are the point: see `conventions_table()`.

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
from functools import lru_cache
from importlib import metadata
from typing import Any

from lowprec.config import config_record, knob

from .policy import (
    CastPolicy,
    NanPayload,
    NanToFinite,
    Overflow,
    Rounding,
    UnsignedNegative,
    UnsignedZero,
)
from .specs import FLOAT_FORMATS, Format, FloatFormat, get_format

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
}


def _ml_dtypes(fmt: FloatFormat, version: str | None = None) -> CastPolicy:
    via_float32, e8m0_subnormals = ml_dtypes_rules(version)
    base = CastPolicy(name="ml_dtypes", float64_via_float32=via_float32 and fmt.name != "FP16")
    if fmt.name == "FP16":  # numpy's float16 cast: single rounding from float64, payload kept
        return base.with_(nan_payload=NanPayload.TRUNCATE, name="ml_dtypes")
    if fmt.name == "E8M0":
        return base.with_(rounding=Rounding.NEAREST_AWAY, unsigned_zero=UnsignedZero.NAN,
                          unsigned_negative=UnsignedNegative.NAN,
                          e8m0_float32_subnormals=e8m0_subnormals, name="ml_dtypes")
    if not (fmt.has_inf or fmt.has_nan):  # E2M1, E3M2, E2M3
        return base.with_(overflow=Overflow.SATURATE, nan_to_finite=NanToFinite.NEGATED_ZERO,
                          name="ml_dtypes")
    return base


def _torch(fmt: FloatFormat) -> CastPolicy:
    base = CastPolicy(name="torch", float64_via_float32=True)
    if fmt.name == "FP16":
        return base.with_(nan_payload=NanPayload.QUIET_TRUNCATE, name="torch")
    if fmt.name == "BF16":
        return base.with_(nan_payload=NanPayload.ALL_ONES_NEGATIVE, name="torch")
    if fmt.name == "E5M2":
        return base.with_(nan_payload=NanPayload.ALL_ONES, name="torch")
    if fmt.name == "E4M3FN":
        return base.with_(overflow=Overflow.SATURATE, name="torch")
    if fmt.name == "E8M0":
        return base.with_(rounding=Rounding.NEAREST_AWAY, unsigned_zero=UnsignedZero.SMALLEST,
                          unsigned_negative=UnsignedNegative.MAGNITUDE,
                          e8m0_float32_subnormals="exponent_field", name="torch")
    if not (fmt.has_inf or fmt.has_nan):
        # torch 2.13 has no CPU cast to FP4/FP6; we use the saturating, raise-on-NaN rule.
        return base.with_(overflow=Overflow.SATURATE, name="torch")
    return base


def _triton_nvidia(fmt: FloatFormat) -> CastPolicy:
    return CastPolicy(overflow=Overflow.SATURATE, nan_payload=NanPayload.ALL_ONES,
                      name="triton_nvidia",
                      unsigned_zero=UnsignedZero.RAISE if fmt.name != "E8M0" else UnsignedZero.NAN,
                      unsigned_negative=UnsignedNegative.NAN)


def _ocp(fmt: FloatFormat) -> CastPolicy:
    if fmt.name in ("E4M3FN", "E5M2", "E2M1", "E3M2", "E2M3"):
        return CastPolicy(overflow=Overflow.SATURATE, name="ocp")
    if fmt.name == "E8M0":
        return CastPolicy(overflow=Overflow.NONFINITE, unsigned_zero=UnsignedZero.NAN,
                          unsigned_negative=UnsignedNegative.NAN, name="ocp")
    return CastPolicy(overflow=Overflow.NONFINITE if (fmt.has_inf or fmt.has_nan) else Overflow.SATURATE,
                      name="ocp")


_BUILDERS: dict[str, Any] = {"ml_dtypes": _ml_dtypes, "torch": _torch, "triton_nvidia": _triton_nvidia, "ocp": _ocp}


def policy_for(convention: str, fmt: str | Format, *, version: str | None = None) -> CastPolicy:
    """The CastPolicy that backend `convention` applies when casting to `fmt`.

    Conventions: ml_dtypes, torch, triton_nvidia, ocp. Integer grids get nearest-even with
    saturation under every convention. `version` (ml_dtypes only, e.g. '0.6.0') asks for that
    release's rules instead of the installed release's (see `ML_DTYPES_RULES`).
    """
    if not isinstance(convention, str) or convention.lower() not in _BUILDERS:
        raise ValueError(f"unknown convention {convention!r}; known: {', '.join(_BUILDERS)}")
    conv = convention.lower()
    if version is not None and conv != "ml_dtypes":
        raise ValueError(f"version={version!r}: only the ml_dtypes convention is versioned "
                         f"(torch is measured at 2.13 only), not {conv!r}")
    if version is not None:
        ml_dtypes_rules(version)  # a bad version string raises even for integer grids
    f = get_format(fmt)
    if not isinstance(f, FloatFormat):
        return CastPolicy(overflow=Overflow.SATURATE, name=conv)
    if conv == "ml_dtypes":
        return _ml_dtypes(f, version)
    return _BUILDERS[conv](f)


@config_record
class ConventionsConfig:
    """The conventions view's parameters: which float format's edge cases to tabulate."""

    format: str = knob("E4M3FN", "float format whose edge cases are tabulated",
                       choices=tuple(f.name for f in FLOAT_FORMATS))


def conventions_table(formats: tuple[FloatFormat, ...] = FLOAT_FORMATS) -> list[dict[str, Any]]:
    """One row per (format, convention): what happens at each edge, computed by the model."""
    import numpy as np

    from .codec import decode, encode

    if isinstance(formats, (str, FloatFormat)):
        formats = (formats,)  # type: ignore[assignment]
    if not isinstance(formats, (tuple, list)):
        raise TypeError(f"formats must be a tuple of float formats (or names), got {type(formats).__name__}")
    checked = tuple(get_format(f) for f in formats)
    for f in checked:
        if not isinstance(f, FloatFormat):
            raise ValueError(f"formats: {f.name} is an integer grid; the conventions table covers float formats")
    rows: list[dict[str, Any]] = []
    for f in checked:
        probes: dict[str, float] = {
            "max": f.max,
            "overflow (2·max)": 2 * f.max,
            "+Inf": float("inf"),
            "-Inf": float("-inf"),
            "NaN": float("nan"),
        }
        if not f.signed:
            probes.update({"0": 0.0, "-1": -1.0, "3 (tie)": 3.0})
        for conv in _BUILDERS:
            pol = policy_for(conv, f)
            row: dict[str, Any] = {"format": f.name, "convention": conv, "policy": pol.to_dict()}
            for label, v in probes.items():
                try:
                    with np.errstate(over="ignore"):
                        x32 = np.array([v], np.float32)
                    code = int(encode(x32, f, pol)[0])
                    val = float(decode(np.array([code]), f)[0])
                    row[label] = {"code": code, "value": val}
                except ValueError as exc:
                    row[label] = {"error": str(exc).split(";")[0]}
            rows.append(row)
    return rows
