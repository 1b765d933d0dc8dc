"""Readers of the recipe lab: which tensors a set of files holds, and each tensor's rows on demand.

Formats, by file name (`.npy`, `.npz`, `.safetensors`, `.pt`/`.pth`/`.bin`/`.ckpt`; a sharded
checkpoint's `*.index.json` names its shards; a directory means every such file in it, a glob every
file it matches, all sorted by path):

- `.npy` — numpy's format, header read with `numpy.lib.format`; never unpickled (`allow_pickle` is
  never set). C-order arrays are read row chunk by row chunk from the file; Fortran-order ones
  through a read-only memory map.
- `.npz` — a zip of `.npy` members: each member's header is read from the archive (no data) and
  checked against the member's size in the zip directory (numpy allocates what a header promises
  before reading, so a lying header is refused here); the data is loaded whole when the tensor is
  analysed (a compressed member cannot be read in part).
- `.safetensors` — the `safetensors` package validates the file (`safe_open`: a truncated or
  corrupt file is refused there) and lists its tensors with their dtypes and shapes; the rows are
  then read from the byte range the header gives (`data_offsets`), chunk by chunk, because the
  package's numpy face has no bfloat16.
- PyTorch state dicts — `torch.load(path, weights_only=True, mmap=True, map_location="cpu")`
  (`simulations.lab.torch_reader`; torch is imported only there, only for such a file): plain
  containers and tensors only, never arbitrary objects; nested dicts and lists are flattened to
  dotted names; storages stay memory-mapped.

Float inputs the lab analyses: BF16, FP16, FP32 and FP64 (BF16 and FP16 rows are widened to float32
exactly, FP64 stays float64). Anything else is listed as `Skipped` with its reason (integer, bool,
complex, FP8 and other dtypes, object arrays, non-tensor entries of a state dict, a raw 2-byte `V2`
array — what numpy writes for a bfloat16 array, whose type it cannot record). A file that cannot be
read — corrupt, truncated, of an unsupported type, or holding pickled objects — raises `LabReadError`
(a ValueError): one line that names the file.

A tensor is analysed as a matrix: `rows × cols` with cols its last axis and rows the product of the
others (1-D: one row; 0-d: 1 × 1). `TensorRef` (picklable: path, name, where the bytes are) is what
a worker receives; `open_rows(ref)` gives a `RowSource` whose `read(lo, hi)` returns rows lo..hi as
a float32 (or float64) array, so a worker reads only the chunk it quantizes.
"""

from __future__ import annotations

import glob
import json
import os
import zipfile
from pathlib import Path
from typing import Any, Iterator, Protocol, Sequence

import numpy as np

from .tensors import ANALYSED_DTYPES, FLOAT_DTYPES, ArrayRows, Inventory, LabReadError, Skipped, TensorRef, matrix_shape, widen

__all__ = [
    "FLOAT_DTYPES",
    "Inventory",
    "LabReadError",
    "RowSource",
    "Skipped",
    "TensorRef",
    "array_source",
    "expand_paths",
    "file_kind",
    "matrix_shape",
    "open_rows",
    "scan",
    "scan_arrays",
]

#: safetensors dtype codes of those, and numpy dtype names
_SAFETENSORS_DTYPES = {"BF16": "BF16", "F16": "FP16", "F32": "FP32", "F64": "FP64"}
_NUMPY_DTYPES = {"bfloat16": "BF16", "float16": "FP16", "float32": "FP32", "float64": "FP64"}

#: file suffix → kind of file
SUFFIXES: dict[str, str] = {".npy": "npy", ".npz": "npz", ".safetensors": "safetensors", ".pt": "torch",
                            ".pth": "torch", ".bin": "torch", ".ckpt": "torch"}


# ------------------------------------------------------------------------------------------------
# paths
# ------------------------------------------------------------------------------------------------


def file_kind(path: str) -> str:
    """The kind of `path` by its suffix (see SUFFIXES); LabReadError naming it otherwise."""
    suffix = Path(path).suffix.lower()
    if suffix in SUFFIXES:
        return SUFFIXES[suffix]
    known = ", ".join(sorted(SUFFIXES))
    raise LabReadError(f"{path}: unsupported file type {suffix or '(no suffix)'!r}; the lab reads {known} "
                       f"and a sharded checkpoint's *.index.json")


#: the largest `*.index.json` read (real ones are tens of kilobytes)
MAX_INDEX_BYTES = 64 << 20


def _index_shards(path: str) -> list[str]:
    """The shard files a `*.index.json` (Hugging Face sharded checkpoint) names, sorted: bare file
    names in the index's folder (a name with a folder part is refused: an index cannot point the
    lab at other files)."""
    size = os.path.getsize(path)
    if size > MAX_INDEX_BYTES:
        raise LabReadError(f"{path}: {size} bytes is too large for a sharded-checkpoint index (at most "
                           f"{MAX_INDEX_BYTES})")
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        weight_map = data["weight_map"]
        names = sorted({str(v) for v in weight_map.values()})
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise LabReadError(f"{path}: not a sharded-checkpoint index (a JSON object with a weight_map): "
                           f"{type(exc).__name__}: {exc}") from None
    for n in names:
        if not n or n in (".", "..") or "/" in n or "\\" in n or "\0" in n:
            raise LabReadError(f"{path}: shard name {n!r} is not a file name in the index's folder")
    base = Path(path).parent
    return [str(base / n) for n in names]


def expand_paths(paths: Sequence[str]) -> list[str]:
    """Files named by `paths` (files, globs, directories, `*.index.json`), each once, in order
    (a glob's and a directory's matches sorted). LabReadError for a path that names nothing."""
    out: list[str] = []
    for p in paths:
        if not isinstance(p, (str, os.PathLike)):
            raise TypeError(f"a path must be text, got {type(p).__name__}")
        p = str(p)
        if any(ch in p for ch in "*?["):
            matches = sorted(m for m in glob.glob(p) if os.path.isfile(m))
            if not matches:
                raise LabReadError(f"{p}: no file matches this pattern")
            found = matches
        elif os.path.isdir(p):
            found = sorted(str(q) for q in Path(p).iterdir() if q.is_file() and q.suffix.lower() in SUFFIXES)
            if not found:
                raise LabReadError(f"{p}: the directory holds no {', '.join(sorted(SUFFIXES))} file")
        elif not os.path.exists(p):
            raise LabReadError(f"{p}: no such file")
        elif p.endswith(".index.json"):
            found = _index_shards(p)
        else:
            found = [p]
        for f in found:
            if f not in out:
                out.append(f)
    return out


# ------------------------------------------------------------------------------------------------
# scanning: which tensors, with dtype and shape, without reading data
# ------------------------------------------------------------------------------------------------


def _numpy_dtype_name(dt: np.dtype) -> str | None:
    """Our name for a float dtype the lab reads, or None."""
    if dt.byteorder == ">":
        return None
    return _NUMPY_DTYPES.get(dt.name)


def _numpy_skip_reason(dt: np.dtype) -> str:
    if dt.hasobject:
        return "object array (pickled Python objects are never loaded)"
    if dt.kind == "V" and dt.itemsize == 2:
        return ("raw 2-byte void dtype '|V2' (numpy cannot record bfloat16: save it as float32 or in "
                "a .safetensors file)")
    if dt.byteorder == ">":
        return f"big-endian dtype {dt.str}"
    kinds = {"i": "integer", "u": "unsigned integer", "b": "boolean", "c": "complex", "U": "text", "S": "bytes",
             "M": "datetime", "m": "timedelta"}
    return f"{kinds.get(dt.kind, 'non-float')} dtype {dt.name} ({ANALYSED_DTYPES})"


def _read_npy_header(fh: Any, where: str) -> tuple[tuple[int, ...], bool, np.dtype]:
    fmt = np.lib.format
    try:
        version = fmt.read_magic(fh)
        if version == (1, 0):
            shape, fortran, dtype = fmt.read_array_header_1_0(fh)
        elif version in ((2, 0), (3, 0)):
            shape, fortran, dtype = fmt.read_array_header_2_0(fh)
        else:
            raise ValueError(f"unknown .npy version {version}")
    except (ValueError, OSError, EOFError, SyntaxError) as exc:
        raise LabReadError(f"{where}: not a .npy array or corrupt ({_first_line(exc)})") from None
    dims = tuple(int(s) for s in shape)
    if any(d < 0 for d in dims):
        raise LabReadError(f"{where}: corrupt .npy header: negative dimension in shape {dims}")
    return dims, bool(fortran), np.dtype(dtype)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def _scan_npy(path: str, inv: Inventory) -> None:
    with open(path, "rb") as fh:
        shape, fortran, dt = _read_npy_header(fh, path)
        offset = fh.tell()
    size = os.path.getsize(path)
    need = int(np.prod(shape, dtype=np.int64)) * dt.itemsize
    if offset + need > size:
        raise LabReadError(f"{path}: truncated: the header promises {need} bytes of data, the file holds "
                           f"{max(size - offset, 0)}")
    name = _numpy_dtype_name(dt)
    if name is None:
        inv.skipped.append(Skipped(path, "", _numpy_skip_reason(dt), shape, dt.str))
        return
    inv.tensors.append(TensorRef(path, "", "npy", shape, name, offset, fortran))


def _scan_npz(path: str, inv: Inventory) -> None:
    try:
        zf = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as exc:
        raise LabReadError(f"{path}: not a .npz archive or corrupt ({_first_line(exc)})") from None
    with zf:
        for info in zf.infolist():
            if not info.filename.endswith(".npy"):
                inv.skipped.append(Skipped(path, info.filename, "not a .npy member"))
                continue
            name = info.filename[:-4]
            try:
                with zf.open(info) as fh:
                    shape, _, dt = _read_npy_header(fh, f"{path}[{name}]")
                    header_bytes = fh.tell()
            except (zipfile.BadZipFile, OSError, EOFError) as exc:  # a damaged member
                raise LabReadError(f"{path}[{name}]: corrupt member ({_first_line(exc)})") from None
            need = int(np.prod(shape, dtype=np.int64)) * dt.itemsize
            if not dt.hasobject and header_bytes + need != info.file_size:
                # numpy would allocate what the header promises before reading: check it first
                raise LabReadError(f"{path}[{name}]: corrupt member: the header promises {need} bytes of data, "
                                   f"the archive holds {max(info.file_size - header_bytes, 0)}")
            dname = _numpy_dtype_name(dt)
            if dname is None:
                inv.skipped.append(Skipped(path, name, _numpy_skip_reason(dt), shape, dt.str))
            else:
                inv.tensors.append(TensorRef(path, name, "npz", shape, dname, -1))


def _safetensors_header(path: str) -> dict[str, Any]:
    """The JSON header of a safetensors file (8-byte little-endian length, then the JSON)."""
    with open(path, "rb") as fh:
        n = int.from_bytes(fh.read(8), "little")
        header: dict[str, Any] = json.loads(fh.read(n))
    header["__data_start__"] = 8 + n
    return header


def _scan_safetensors(path: str, inv: Inventory) -> None:
    from safetensors import SafetensorError, safe_open

    try:
        with safe_open(path, framework="numpy") as f:
            names = list(f.offset_keys())
            listing = [(k, f.get_slice(k).get_dtype(), tuple(int(s) for s in f.get_slice(k).get_shape()))
                       for k in names]
    except (SafetensorError, OSError) as exc:
        raise LabReadError(f"{path}: not a safetensors file or corrupt ({_first_line(exc)})") from None
    header = _safetensors_header(path)
    start = int(header["__data_start__"])
    for name, code, shape in listing:
        ours = _SAFETENSORS_DTYPES.get(code)
        if ours is None:
            inv.skipped.append(Skipped(path, name, f"dtype {code} ({ANALYSED_DTYPES})",
                                       shape, code))
            continue
        begin = int(header[name]["data_offsets"][0])
        inv.tensors.append(TensorRef(path, name, "safetensors", shape, ours, start + begin))


def scan(paths: Sequence[str]) -> Inventory:
    """Every tensor of the files `paths` names (see `expand_paths`), without reading their data."""
    inv = Inventory()
    for path in expand_paths(paths):
        kind = file_kind(path)
        inv.files.append(path)
        if kind == "npy":
            _scan_npy(path, inv)
        elif kind == "npz":
            _scan_npz(path, inv)
        elif kind == "safetensors":
            _scan_safetensors(path, inv)
        else:
            from .torch_reader import scan_state_dict

            scan_state_dict(path, inv)
    return inv


# ------------------------------------------------------------------------------------------------
# reading rows
# ------------------------------------------------------------------------------------------------


class RowSource(Protocol):
    """Rows of one tensor's matrix view, read on demand."""

    rows: int
    cols: int

    def read(self, lo: int, hi: int) -> np.ndarray:
        """Rows lo..hi as a C-contiguous (hi − lo, cols) float32 array (float64 for FP64 data)."""
        ...


class FileRows:
    """Rows of a C-order tensor stored contiguously in a file at a byte offset (npy, safetensors):
    each read copies only the rows asked for."""

    def __init__(self, ref: TensorRef) -> None:
        self.rows, self.cols = matrix_shape(ref.shape)
        self._ref = ref
        self._stored = FLOAT_DTYPES[ref.dtype]

    def read(self, lo: int, hi: int) -> np.ndarray:
        n = (hi - lo) * self.cols
        raw = np.empty(n, self._stored)
        start = self._ref.offset + lo * self.cols * self._stored.itemsize
        with open(self._ref.path, "rb") as fh:
            fh.seek(start)
            got = fh.readinto(raw.view(np.uint8).data)
        if got != raw.nbytes:
            raise LabReadError(f"{self._ref.path}: truncated: tensor {self._ref.label!r} ends past the end of the file")
        return widen(raw.reshape(hi - lo, self.cols), self._ref.dtype)


def array_source(array: Any, name: str = "tensor") -> tuple[TensorRef, RowSource]:
    """A TensorRef and RowSource for an in-memory float array (samples, tests); ValueError for a
    dtype the lab does not analyse."""
    arr = np.asarray(array)
    dname = _numpy_dtype_name(arr.dtype)
    if dname is None:
        raise ValueError(f"tensor {name!r}: {_numpy_skip_reason(arr.dtype)}")
    return TensorRef("", name, "memory", tuple(int(s) for s in arr.shape), dname, -1), ArrayRows(arr, dname)


def scan_arrays(arrays: dict[str, Any]) -> list[tuple[TensorRef, RowSource]]:
    """`array_source` for each named array, in order."""
    return [array_source(a, n) for n, a in arrays.items()]


def open_rows(ref: TensorRef) -> RowSource:
    """The RowSource of a scanned tensor (opens its file; torch state dicts through torch)."""
    if ref.kind in ("safetensors",) or (ref.kind == "npy" and not ref.fortran_order):
        return FileRows(ref)
    if ref.kind == "npy":
        return ArrayRows(np.load(ref.path, mmap_mode="r", allow_pickle=False), ref.dtype)
    if ref.kind == "npz":
        try:
            with np.load(ref.path, allow_pickle=False) as npz:
                arr = npz[ref.name]
        except (ValueError, OSError, zipfile.BadZipFile, EOFError) as exc:
            raise LabReadError(f"{ref.path}[{ref.name}]: cannot be read ({_first_line(exc)})") from None
        return ArrayRows(arr, ref.dtype)
    if ref.kind == "torch":
        from .torch_reader import state_dict_rows

        return state_dict_rows(ref)
    raise ValueError(f"tensor {ref.label!r} of kind {ref.kind!r} has no file to read (use array_source)")


def iter_chunks(rows: int, rows_per_chunk: int) -> Iterator[tuple[int, int]]:
    """(lo, hi) row ranges of at most `rows_per_chunk` rows covering 0..rows."""
    step = max(1, int(rows_per_chunk))
    for lo in range(0, rows, step):
        yield lo, min(rows, lo + step)
