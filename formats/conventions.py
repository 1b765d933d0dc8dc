"""Named conventions: the cast policy each real backend applies, measured, per format.

Measured on torch 2.13.0 (CPU eager casts of tensors of rank ≥ 1) and ml_dtypes 0.6.0 (numpy
`astype`; FP16 is numpy's own cast) with the vectors of `gpu.vectors`; `triton_nvidia` follows the
PTX ISA's `cvt.rn.satfinite` description (round to nearest even, saturate finite values and ±Inf,
NaN stays NaN); `ocp` is our reading of the OCP OFP8 / MX v1.0 specifications. The differences at
the edges are the point: see `conventions_table()`.
"""

from __future__ import annotations

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

CONVENTIONS: dict[str, str] = {
    "ml_dtypes": "ml_dtypes 0.6 astype (numpy for FP16): overflow to Inf/NaN, E8M0 ties up, zero → NaN",
    "torch": "torch 2.13 CPU eager .to(dtype): E4M3FN saturates, E8M0 drops the sign, zero → 2^-127",
    "triton_nvidia": "Triton on NVIDIA, compiled cvt.rn.satfinite: nearest-even, saturating (E5M2 too)",
    "ocp": "OCP OFP8 / MX v1.0 reading: nearest-even, saturating conversion for the MX element types",
}


def _ml_dtypes(fmt: FloatFormat) -> CastPolicy:
    base = CastPolicy(name="ml_dtypes", float64_via_float32=fmt.name != "FP16")
    if fmt.name == "FP16":  # numpy's float16 cast: single rounding from float64, payload kept
        return base.with_(nan_payload=NanPayload.TRUNCATE, name="ml_dtypes")
    if fmt.name == "E8M0":
        return base.with_(rounding=Rounding.NEAREST_AWAY, unsigned_zero=UnsignedZero.NAN,
                          unsigned_negative=UnsignedNegative.NAN,
                          e8m0_float32_subnormals="exponent_field", name="ml_dtypes")
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


_BUILDERS = {"ml_dtypes": _ml_dtypes, "torch": _torch, "triton_nvidia": _triton_nvidia, "ocp": _ocp}


def policy_for(convention: str, fmt: str | Format) -> CastPolicy:
    """The CastPolicy that backend `convention` applies when casting to `fmt`.

    Conventions: ml_dtypes, torch, triton_nvidia, ocp. Integer grids get nearest-even with
    saturation under every convention.
    """
    if not isinstance(convention, str) or convention.lower() not in _BUILDERS:
        raise ValueError(f"unknown convention {convention!r}; known: {', '.join(_BUILDERS)}")
    f = get_format(fmt)
    conv = convention.lower()
    if not isinstance(f, FloatFormat):
        return CastPolicy(overflow=Overflow.SATURATE, name=conv)
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
