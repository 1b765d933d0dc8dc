"""The one JSON writer of lowprec: strict RFC 8259 text for every `--json`, report and export.

Python's `json` module writes `NaN`, `Infinity` and `-Infinity` by default, which are not JSON and
which strict parsers (browsers' `JSON.parse`, `jq`, Go, Rust …) reject. lowprec's numbers are often
non-finite on purpose (a NaN code, an overflow to Inf), so every writer goes through `to_jsonable`,
which spells a non-finite float as a **string**, in one documented way:

    NaN → "nan"        +Inf → "inf"        -Inf → "-inf"

`float(s)` reads each spelling back in Python (and `Number(s)` does not, on purpose: a reader must
decide). `None` stays `null` and means "absent / not computed", never NaN. numpy scalars and arrays,
tuples, sets (sorted), dataclasses with `to_dict()` and enums (their `.value`) are converted; other
objects raise `TypeError` naming the type, so nothing is written by `str()` by accident.

The words are `lowprec.numtext`'s (the one number-to-text module), so a page, a CSV cell and a JSON
file spell a non-finite number alike. This module is a leaf: it imports nothing of lowprec but that
floor module, so every layer (formats included) may use it.
"""

from __future__ import annotations

import enum
import json
import sys
from pathlib import Path
from typing import Any

from lowprec.numtext import INF, NAN, NEG_INF, nonfinite_text

__all__ = [
    "NONFINITE_SPELLING",
    "STDOUT",
    "dumps",
    "from_jsonable_float",
    "json_float",
    "loads",
    "to_jsonable",
    "write",
]

#: the spelling of each non-finite float in lowprec's JSON
NONFINITE_SPELLING: dict[str, str] = {NAN: NAN, INF: INF, NEG_INF: NEG_INF}
#: the path that means "standard output" for every writer
STDOUT = "-"


def json_float(v: Any) -> float | str:
    """A real number (Python or numpy, integers included) as the JSON value of a float: the float
    itself when finite, else its word ("nan", "inf", "-inf")."""
    if isinstance(v, bool) or not isinstance(v, (int, float)) and not _is_numpy_real(v):
        raise TypeError(f"not a real number: {v!r} ({type(v).__name__})")
    f = float(v)
    word = nonfinite_text(f)
    return f if word is None else word


def _is_numpy_real(v: Any) -> bool:
    np = sys.modules.get("numpy")
    return np is not None and isinstance(v, (np.integer, np.floating)) and not isinstance(v, np.bool_)


def to_jsonable(obj: Any) -> Any:
    """`obj` as plain JSON values: dicts with string keys, lists, str, int, finite float, bool, None,
    and the strings "nan" / "inf" / "-inf" for non-finite floats."""
    if obj is None or isinstance(obj, (bool, str)):
        return obj
    if isinstance(obj, int):
        return int(obj)
    if isinstance(obj, float):
        return json_float(obj)
    if isinstance(obj, enum.Enum):
        return to_jsonable(obj.value)
    if isinstance(obj, dict):
        out: dict[str, Any] = {}
        for k, v in obj.items():
            if isinstance(k, enum.Enum):
                k = k.value
            if not isinstance(k, (str, int, float, bool)) or k is None:
                raise TypeError(f"JSON object keys must be text or numbers, got {type(k).__name__}")
            out[str(k)] = to_jsonable(v)
        return out
    if isinstance(obj, (list, tuple)):
        return [to_jsonable(v) for v in obj]
    if isinstance(obj, (set, frozenset)):
        return [to_jsonable(v) for v in sorted(obj)]
    if isinstance(obj, Path):
        return str(obj)
    to_dict = getattr(obj, "to_dict", None)
    if callable(to_dict):
        return to_jsonable(to_dict())
    np = sys.modules.get("numpy")  # numpy values only exist where numpy was imported
    if np is not None:
        if isinstance(obj, np.ndarray):
            return to_jsonable(obj.tolist())
        if isinstance(obj, np.bool_):
            return bool(obj)
        if isinstance(obj, np.integer):
            return int(obj)
        if isinstance(obj, np.floating):
            return json_float(obj)
    raise TypeError(f"cannot write a {type(obj).__name__} as JSON")


def dumps(obj: Any, indent: int | None = 1) -> str:
    """Strict JSON text of `obj` (see `to_jsonable`), UTF-8 characters kept, ending in a newline."""
    return json.dumps(to_jsonable(obj), indent=indent, allow_nan=False, ensure_ascii=False) + "\n"


def write(obj: Any, path: str | Path | None, indent: int | None = 1) -> None:
    """Write `dumps(obj)` to `path`, or to standard output when `path` is None or "-"."""
    text = dumps(obj, indent)
    if path is None or str(path) == STDOUT:
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    Path(path).write_text(text, encoding="utf-8")


def _reject_constant(token: str) -> Any:
    raise ValueError(f"not strict JSON: the token {token} (non-finite numbers are written as strings)")


def loads(text: str) -> Any:
    """Parse strict JSON: `NaN`, `Infinity` and `-Infinity` tokens raise ValueError."""
    return json.loads(text, parse_constant=_reject_constant)


def from_jsonable_float(v: Any) -> float:
    """A number written by `to_jsonable` back to a float ("nan", "inf", "-inf" included)."""
    if isinstance(v, str):
        if v not in NONFINITE_SPELLING:
            raise ValueError(f"not a number in lowprec JSON: {v!r} (allowed strings: nan, inf, -inf)")
        return float(v)
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise TypeError(f"not a number in lowprec JSON: {v!r}")
    return float(v)
