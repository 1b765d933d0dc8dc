"""The conventions table as the app shows it: what each convention does at a float format's edges.

`conventions_table(formats)` runs the probes (the largest value, overflow, ±Inf, NaN; for unsigned
formats zero, a negative value and the tie at 3) through `formats.encode` under each convention's
policy (`formats.conventions.policy_for`), one row per (format, convention). It lives apart from
`formats.conventions` because it runs the codec, whose decode reads that table.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .codec import decode, encode
from .conventions import CONVENTIONS, convention_row, policy_for
from .specs import FLOAT_FORMATS, FloatFormat, get_format

__all__ = ["conventions_table"]


def conventions_table(formats: tuple[FloatFormat, ...] = FLOAT_FORMATS) -> list[dict[str, Any]]:
    """One row per (format, convention): what happens at each edge, computed by the model. A cell the
    convention does not provide has `policy` None, `provided` False and, for each probe,
    {"not_provided": why}."""
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
        for conv in CONVENTIONS:
            cell = convention_row(conv, f)
            if not cell.provided:
                rows.append({"format": f.name, "convention": conv, "policy": None, "provided": False,
                             "note": cell.note,
                             **{label: {"not_provided": cell.note} for label in probes}})
                continue
            pol = policy_for(conv, f)
            row: dict[str, Any] = {"format": f.name, "convention": conv, "policy": pol.to_dict(),
                                   "provided": True, "note": cell.note}
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
