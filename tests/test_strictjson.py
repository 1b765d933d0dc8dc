"""`lowprec.strictjson` against RFC 8259, read by a validator written here from the RFC's grammar
(section 2–7: value, object, array, number, string; no NaN/Infinity tokens), never by `json`:
every non-finite float — Python's, numpy's float64/float32/float16 scalars and arrays — is written
as the string "nan"/"inf"/"-inf", and the strict reader refuses the NaN/Infinity tokens Python's
`json` accepts."""

from __future__ import annotations

import enum
import math
import re
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

from lowprec import strictjson

# ---- a minimal RFC 8259 parser ------------------------------------------------------------------

_WS = " \t\n\r"
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}


class NotJSON(ValueError):
    pass


def rfc8259(text: str) -> Any:
    """Parse `text` as one JSON text (RFC 8259) or raise NotJSON; numbers become int or float."""
    value, i = _value(text, _skip(text, 0))
    if _skip(text, i) != len(text):
        raise NotJSON(f"trailing text at {i}")
    return value


def _skip(t: str, i: int) -> int:
    while i < len(t) and t[i] in _WS:
        i += 1
    return i


def _value(t: str, i: int) -> tuple[Any, int]:
    if i >= len(t):
        raise NotJSON("unexpected end")
    c = t[i]
    for word, value in (("true", True), ("false", False), ("null", None)):
        if t.startswith(word, i):
            return value, i + len(word)
    if c == "{":
        out: dict[str, Any] = {}
        i = _skip(t, i + 1)
        if i < len(t) and t[i] == "}":
            return out, i + 1
        while True:
            if i >= len(t) or t[i] != '"':
                raise NotJSON(f"object key expected at {i}")
            key, i = _string(t, i)
            i = _skip(t, i)
            if i >= len(t) or t[i] != ":":
                raise NotJSON(f"':' expected at {i}")
            out[key], i = _value(t, _skip(t, i + 1))
            i = _skip(t, i)
            if i < len(t) and t[i] == ",":
                i = _skip(t, i + 1)
                continue
            if i < len(t) and t[i] == "}":
                return out, i + 1
            raise NotJSON(f"',' or '}}' expected at {i}")
    if c == "[":
        items: list[Any] = []
        i = _skip(t, i + 1)
        if i < len(t) and t[i] == "]":
            return items, i + 1
        while True:
            item, i = _value(t, _skip(t, i))
            items.append(item)
            i = _skip(t, i)
            if i < len(t) and t[i] == ",":
                i += 1
                continue
            if i < len(t) and t[i] == "]":
                return items, i + 1
            raise NotJSON(f"',' or ']' expected at {i}")
    if c == '"':
        return _string(t, i)
    m = _NUMBER.match(t, i)
    if m is None or m.end() == i:
        raise NotJSON(f"no JSON value at {i}: {t[i:i + 10]!r}")
    s = m.group(0)
    return (float(s) if any(ch in s for ch in ".eE") else int(s)), m.end()


def _string(t: str, i: int) -> tuple[str, int]:
    out = []
    i += 1
    while i < len(t):
        c = t[i]
        if c == '"':
            return "".join(out), i + 1
        if c == "\\":
            e = t[i + 1:i + 2]
            if e == "u":
                out.append(chr(int(t[i + 2:i + 6], 16)))
                i += 6
                continue
            if e not in _ESCAPES:
                raise NotJSON(f"bad escape at {i}")
            out.append(_ESCAPES[e])
            i += 2
            continue
        if ord(c) < 0x20:
            raise NotJSON(f"control character in a string at {i}")
        out.append(c)
        i += 1
    raise NotJSON("unterminated string")


def test_the_validator_itself() -> None:
    assert rfc8259(' {"a": [1, -2.5e3, true, null, "x\\u00e9"]} ') == {"a": [1, -2500.0, True, None, "xé"]}
    for bad in ("NaN", "[Infinity]", "[-Infinity]", "[1,]", "01", "[.5]", "{'a': 1}", '"\x01"', "[1] x"):
        with pytest.raises(NotJSON, match="."):
            rfc8259(bad)


# ---- the writer ---------------------------------------------------------------------------------

NONFINITE = [(math.nan, "nan"), (math.inf, "inf"), (-math.inf, "-inf")]
FLOAT_TYPES = [float, np.float64, np.float32, np.float16]


@pytest.mark.parametrize("ftype", FLOAT_TYPES, ids=lambda t: t.__name__)
@pytest.mark.parametrize("value, word", NONFINITE, ids=["nan", "inf", "-inf"])
def test_every_nonfinite_float_is_written_as_its_word(ftype: type, value: float, word: str) -> None:
    scalar = ftype(value)
    assert strictjson.to_jsonable(scalar) == word and type(strictjson.to_jsonable(scalar)) is str
    text = strictjson.dumps({"x": scalar, "list": [scalar, ftype(1.5)], "arr": np.array([value, 2.0], dtype=ftype)})
    assert rfc8259(text) == {"x": word, "list": [word, 1.5], "arr": [word, 2.0]}
    assert strictjson.from_jsonable_float(word) == value or (math.isnan(value) and math.isnan(
        strictjson.from_jsonable_float(word)))


def test_finite_numpy_values_keep_their_exact_value() -> None:
    x32 = np.float32(0.1)
    data = rfc8259(strictjson.dumps([x32, np.float16(65504), np.int64(2**62), np.uint8(255), np.bool_(True),
                                     np.array([[1, 2]], np.int32), (1, 2), {3, 1}]))
    assert data == [float(x32), 65504.0, 2**62, 255, True, [[1, 2]], [1, 2], [1, 3]]
    assert np.float32(data[0]) == x32  # the float32 written as the float64 it equals, digits enough


def test_objects_keys_enums_dataclasses() -> None:
    class Mode(enum.Enum):
        UP = "up"

    @dataclass
    class Rec:
        v: float

        def to_dict(self) -> dict[str, Any]:
            return {"v": self.v, "mode": Mode.UP}

    assert rfc8259(strictjson.dumps({Mode.UP: Rec(np.float32(-np.inf)), 2: None})) == {
        "up": {"v": "-inf", "mode": "up"}, "2": None}
    with pytest.raises(TypeError, match="cannot write a object as JSON"):
        strictjson.dumps(object())
    with pytest.raises(TypeError, match="keys must be text or numbers"):
        strictjson.dumps({(1, 2): 3})


# ---- the reader ---------------------------------------------------------------------------------


@pytest.mark.parametrize("text", ["NaN", "[NaN]", '{"a": Infinity}', "[1, -Infinity]", '{"a": [0, NaN]}'])
def test_the_reader_refuses_what_rfc8259_refuses(text: str) -> None:
    with pytest.raises(NotJSON, match="no JSON value|expected"):
        rfc8259(text)
    with pytest.raises(ValueError, match="not strict JSON"):
        strictjson.loads(text)


def test_the_reader_reads_what_the_writer_wrote() -> None:
    obj = {"a": [np.float32(np.nan), np.float32(np.inf), -0.0, 1e300, "nan"], "b": {"c": None}}
    text = strictjson.dumps(obj)
    assert strictjson.loads(text) == rfc8259(text) == {"a": ["nan", "inf", -0.0, 1e300, "nan"], "b": {"c": None}}
