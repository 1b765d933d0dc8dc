"""The records the recipe lab's readers share (imported by `readers` and `torch_reader`, which import
nothing of each other): the float dtypes the lab analyses, `LabReadError`, `TensorRef` (where one
tensor's bytes are), `Skipped`, `Inventory`, the matrix view of a shape (`matrix_shape`: rows × last
axis), `ArrayRows` (rows of an array in memory or memory-mapped, widened to float32 or float64), and
the checks every reader shares: only regular files are opened (`open_regular`, `check_regular`: a
FIFO, a device or a socket is refused before a read could block or never end), names are unique
within a file (`UniqueNames`), and an error's text never quotes a file's bytes (`reason_of`)."""

from __future__ import annotations

import io
import math
import os
import re
import stat
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import ml_dtypes
import numpy as np

from .limits import ReadLimits

__all__ = ["ANALYSED_DTYPES", "ArrayRows", "FLOAT_DTYPES", "Inventory", "LabReadError", "Skipped", "StoredPart", "TensorRef",
           "UniqueNames", "check_regular", "check_zip_directory", "dtype_label", "dtype_reason", "matrix_shape",
           "open_regular", "reason_of", "widen"]
from ..quant.recipes import matrix_shape  # the matrix view (rows × last axis) the recipes quantize

#: the dtypes the lab analyses, by our name → numpy dtype of the stored bytes
FLOAT_DTYPES: dict[str, Any] = {
    "BF16": np.dtype(ml_dtypes.bfloat16),
    "FP16": np.dtype(np.float16),
    "FP32": np.dtype(np.float32),
    "FP64": np.dtype(np.float64),
}
#: what a skipped tensor's reason says the lab reads: one spelling (our format names), from FLOAT_DTYPES
ANALYSED_DTYPES = "the lab analyses " + ", ".join(FLOAT_DTYPES)

_DTYPE_WORDS = {"bool": "BOOL", "bfloat16": "BF16", "bf16": "BF16", "half": "FP16", "float": "FP32",
                "double": "FP64", "float8_e4m3fn": "E4M3FN", "f8_e4m3": "E4M3FN", "float8_e4m3fnuz": "E4M3FNUZ",
                "float8_e5m2": "E5M2", "f8_e5m2": "E5M2", "float8_e5m2fnuz": "E5M2FNUZ", "float8_e8m0fnu": "E8M0",
                "f8_e8m0": "E8M0", "float4_e2m1fn_x2": "E2M1 (packed ×2)", "f4": "E2M1"}
_DTYPE_PATTERNS = ((re.compile(r"u(?:int)?(\d+)"), "UINT"), (re.compile(r"i(?:nt)?(\d+)"), "INT"),
                   (re.compile(r"f(?:loat)?(\d+)"), "FP"), (re.compile(r"c(?:omplex)?(\d+)"), "COMPLEX"))


def dtype_label(name: str) -> str:
    """One spelling of a stored dtype whichever library named it (issue 33: numpy's `int64`,
    torch's `int64`, safetensors' `I64` all read INT64): the lab's float names (BF16, FP16, FP32,
    FP64), the formats' for FP8 (E4M3FN, E5M2, E8M0), INTn / UINTn / COMPLEXn / BOOL, else the name
    in capitals."""
    key = str(name).strip().lower().removeprefix("torch.")
    if key in _DTYPE_WORDS:
        return _DTYPE_WORDS[key]
    for pattern, word in _DTYPE_PATTERNS:
        match = pattern.fullmatch(key)
        if match:
            return f"{word}{match.group(1)}"
    return key.upper()


def dtype_reason(name: str) -> str:
    """Why a tensor of another dtype is skipped, with its dtype in the one spelling (`dtype_label`)."""
    return f"dtype {dtype_label(name)} ({ANALYSED_DTYPES})"


class LabReadError(ValueError):
    """A file the lab cannot read: the message is one line naming the file."""


@dataclass(frozen=True)
class StoredPart:
    """One stored tensor of a quantized tensor (its codes, its scales, a second-level scale): where
    its bytes are in a .safetensors file (`simulations.lab.layouts`)."""

    role: str  # "codes", "scales", "scale_2"
    name: str  # the stored tensor's name in the file
    dtype: str  # its safetensors dtype ("F8_E4M3", "U8", "F32", "BF16" …)
    shape: tuple[int, ...]
    offset: int  # absolute byte offset of its data in the file
    nbytes: int
    digest: str = ""  # the SHA-256 lowprec recorded when it wrote the file ("" when none was recorded)


@dataclass(frozen=True)
class TensorRef:
    """Where one float tensor lives (or, for a pre-quantized tensor, its stored parts, read as the
    float32 values its producer dequantizes them to); small and picklable (a worker opens the file
    itself)."""

    path: str  # the file ("" for an in-memory array: see `array_source`)
    name: str  # the tensor's name in the file ("" for a bare .npy array)
    kind: str  # "npy", "npz", "safetensors", "torch", "memory"
    shape: tuple[int, ...]
    dtype: str  # a key of FLOAT_DTYPES
    offset: int = 0  # byte offset of the data (npy C-order, safetensors; a .npz member's header
    #                  length); -1: not readable by offset
    fortran_order: bool = False
    index: int = -1  # position of the entry in its file (a .npz member's place in the zip directory)
    layout: str = ""  # a pre-quantized layout (`layouts.LAYOUTS`: "deepseek_fp8" …); "" for a float tensor
    recipe: str = ""  # the lowprec recipe with the same codes and scales (pre-quantized tensors)
    parts: tuple[StoredPart, ...] = ()  # the stored parts of a pre-quantized tensor

    @property
    def numel(self) -> int:
        return math.prod(self.shape)  # Python integers: a shape cannot wrap around

    @property
    def nbytes(self) -> int:
        """Bytes the tensor occupies in its file (a pre-quantized tensor: all its stored parts)."""
        if self.parts:
            return sum(p.nbytes for p in self.parts)
        return self.numel * int(FLOAT_DTYPES[self.dtype].itemsize)

    def part(self, role: str) -> StoredPart:
        for p in self.parts:
            if p.role == role:
                return p
        raise KeyError(f"tensor {self.label!r} has no stored {role}")

    @property
    def label(self) -> str:
        """`name` for a named tensor, the file's name for a bare array."""
        return self.name or Path(self.path).name


@dataclass(frozen=True)
class Skipped:
    """An entry of a file that the lab does not analyse, and why."""

    path: str
    name: str
    reason: str
    shape: tuple[int, ...] | None = None
    dtype: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"file": self.path, "name": self.name, "shape": None if self.shape is None else list(self.shape),
                "dtype": self.dtype, "reason": self.reason}


@dataclass
class Inventory:
    """What a set of files holds: the tensors to analyse, in file order, and the skipped entries."""

    files: list[str] = field(default_factory=list)
    tensors: list[TensorRef] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what the reader decided (a renamed entry, a file read once)


# ------------------------------------------------------------------------------------------------
# checks every reader shares
# ------------------------------------------------------------------------------------------------

_NOT_REGULAR = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a named pipe (FIFO)"),
                (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                (stat.S_ISSOCK, "a socket"))


def _irregular(mode: int) -> str | None:
    """What a non-regular file is ("a named pipe (FIFO)" …), None for a regular file."""
    if stat.S_ISREG(mode):
        return None
    return next((what for test, what in _NOT_REGULAR if test(mode)), "not a regular file")


def check_regular(path: str) -> os.stat_result:
    """The `os.stat` of `path` (links followed) when it is a regular file; LabReadError naming it
    otherwise (the lab never opens a FIFO, a device or a socket: a read from one could block for
    ever or never end)."""
    try:
        st = os.stat(path)
    except OSError as exc:
        raise LabReadError(f"{path}: cannot be read ({exc.strerror or type(exc).__name__})") from None
    what = _irregular(st.st_mode)
    if what is not None:
        raise LabReadError(f"{path}: not a regular file ({what}); the lab reads regular files only")
    return st


def open_regular(path: str) -> io.BufferedReader:
    """`path` opened for binary reading, refused (LabReadError) unless it is a regular file. It is
    opened without blocking and checked on the open descriptor, so a FIFO put in its place after a
    check cannot make the open hang."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        raise LabReadError(f"{path}: cannot be read ({exc.strerror or type(exc).__name__})") from None
    try:
        what = _irregular(os.fstat(fd).st_mode)
        if what is not None:
            raise LabReadError(f"{path}: not a regular file ({what}); the lab reads regular files only")
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        fh: io.BufferedReader = os.fdopen(fd, "rb")
        return fh
    except BaseException:
        os.close(fd)
        raise


_BYTES_LITERAL = re.compile(r"""\bb(['"]).*?(?<!\\)\1""")
_LOAD_KEY = re.compile(r"invalid load key, '.*?'")
MAX_REASON_CHARS = 200


def reason_of(exc: BaseException) -> str:
    """The first line of a library's error message, as a reason in one of our messages: bytes
    literals (`b'root:x'`) and pickle's 'invalid load key' byte are cut out, so a message never
    quotes the file's content, and it is at most MAX_REASON_CHARS long."""
    lines = str(exc).strip().splitlines()
    text = lines[0] if lines else ""
    text = _LOAD_KEY.sub("invalid load key", _BYTES_LITERAL.sub("…", text))
    if len(text) > MAX_REASON_CHARS:
        text = text[:MAX_REASON_CHARS - 1] + "…"
    return text or type(exc).__name__


def check_zip_directory(path: str, infos: Sequence[zipfile.ZipInfo], limits: ReadLimits, what: str,
                        hint: str) -> None:
    """Refuse a zip whose directory declares more than the limits allow, before inflating anything:
    more than `max_entries` members, or a compressed member that would inflate more than
    `max_inflate_ratio` times its size once over `inflate_floor` bytes (a zip bomb)."""
    if len(infos) > limits.max_entries:
        raise LabReadError(f"{path}: {len(infos)} members in the {what}; the lab reads at most {limits.max_entries} "
                           f"entries of a file")
    for info in infos:
        packed = max(1, info.compress_size)
        if (info.compress_type != zipfile.ZIP_STORED and info.file_size > limits.inflate_floor
                and info.file_size > limits.max_inflate_ratio * packed):
            raise LabReadError(
                f"{path}: member {info.filename[:80]!r} would inflate {info.compress_size} bytes to {info.file_size} "
                f"({info.file_size // packed}× its size; at most {limits.max_inflate_ratio}× for a compressed "
                f"member over {limits.inflate_floor} bytes): a zip bomb? {hint}")


class UniqueNames:
    """Names of one file's entries, each unique: `names(name)` gives `name`, or `name#2`, `name#3` …
    (the first free one) when an earlier entry already has it (a .pt's `{"a.b": t1, "a": {"b": t2}}`
    flattens both to `a.b`; a zip may repeat a member's name). Every entry is kept under its own
    name, later ones renamed, in file order."""

    def __init__(self) -> None:
        self._used: set[str] = set()
        self._next: dict[str, int] = {}

    def __call__(self, name: str) -> str:
        if name not in self._used:
            self._used.add(name)
            return name
        k = self._next.get(name, 2)
        while f"{name}#{k}" in self._used:
            k += 1
        self._next[name] = k + 1
        out = f"{name}#{k}"
        self._used.add(out)
        return out


def widen(raw: np.ndarray, dtype: str) -> np.ndarray:
    """Stored values as float32 (BF16, FP16, FP32: exact) or float64 (FP64)."""
    if dtype == "FP64":
        return np.ascontiguousarray(raw, dtype=np.float64)
    return np.ascontiguousarray(raw, dtype=np.float32)


class ArrayRows:
    """Rows of an array already in memory (or memory-mapped)."""

    def __init__(self, array: np.ndarray, dtype: str) -> None:
        self.rows, self.cols = matrix_shape(array.shape)
        self._matrix = array.reshape(self.rows, self.cols)
        self._dtype = dtype

    def read(self, lo: int, hi: int) -> np.ndarray:
        return widen(self._matrix[lo:hi], self._dtype)

    def read_span(self, lo: int, hi: int) -> np.ndarray:
        """Elements lo..hi of a one-row source, as a (1, hi − lo) array."""
        return widen(self._matrix[:, lo:hi], self._dtype)
