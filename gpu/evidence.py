"""Compact evidence in a cross-check report: backend result codes packed into a few kilobytes, and
the fingerprint of the inputs they answer.

`pack_codes` stores an unsigned code array as zlib-compressed little-endian bytes in base64 (uint16
and uint32 codes split into byte planes first: all low bytes, then the next, which compresses far
better than interleaved bytes); `unpack_codes` is its inverse. `inputs_sha256` is the sha256 of the
float32 input bits, so a replay knows it regenerated the same inputs; `vector_inputs` regenerates
them from a report's vector spec ({'generator', 'format', 'n_random', 'seed'}, `gpu.vectors`).
"""

from __future__ import annotations

import base64
import hashlib
import zlib
from typing import Any

import numpy as np

from . import vectors

__all__ = ["CODE_ENCODING", "hex32", "inputs_sha256", "pack_codes", "unpack_codes", "vector_inputs"]

CODE_ENCODING = "zlib+base64,byte-planes"
_WIDTH = {"uint8": 1, "uint16": 2, "uint32": 4}


def pack_codes(codes: np.ndarray) -> dict[str, Any]:
    """{'dtype', 'count', 'encoding', 'data'}: the codes, compressed (see the module docstring)."""
    arr = np.ascontiguousarray(np.asarray(codes).reshape(-1))
    width = _WIDTH.get(str(arr.dtype))
    if width is None:
        raise TypeError(f"pack_codes takes uint8/uint16/uint32 codes, got {arr.dtype}")
    raw = arr.astype(f"<u{width}").view(np.uint8).reshape(-1, width).T.copy().tobytes()
    return {"dtype": str(arr.dtype), "count": int(arr.size), "encoding": CODE_ENCODING,
            "data": base64.b64encode(zlib.compress(raw, 9)).decode("ascii")}


def unpack_codes(packed: dict[str, Any]) -> np.ndarray:
    """Inverse of `pack_codes`."""
    if packed.get("encoding") != CODE_ENCODING:
        raise ValueError(f"unknown code encoding {packed.get('encoding')!r}; expected {CODE_ENCODING!r}")
    width = _WIDTH.get(str(packed.get("dtype")))
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


def hex32(v: float | np.floating[Any]) -> str:
    """The float32 bits of `v` as '0x3f800000'."""
    return f"0x{int(np.float32(v).view(np.uint32)):08x}"
