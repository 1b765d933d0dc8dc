"""Readers of the recipe lab: which tensors a set of files holds, and each tensor's rows on demand.

Formats, by file name (`.npy`, `.npz`, `.safetensors`, `.pt`/`.pth`/`.bin`/`.ckpt`; a sharded
checkpoint's `*.index.json` names its shards; a directory means every such file in it, a glob every
file it matches, all sorted by path):

- `.npy` — numpy's format; the header is parsed here (`read_npy_header`: its length bounded, its
  dictionary validated — exactly `descr`, `fortran_order`, `shape`; dimensions non-negative
  integers, at most `max_dims` of them; sizes in Python integers, so no shape wraps around) and the
  data it promises checked against the file's size before anything is allocated; never unpickled.
  C-order arrays are read row chunk by row chunk from the file; Fortran-order ones through a
  read-only memory map.
- `.npz` — a zip of `.npy` members, opened once per process: the directory's member count and total
  uncompressed size are checked against the limits, each compressed member's inflation ratio too (a
  zip bomb is refused before it is inflated), each member's header is read and checked against the
  member's size in the directory; a member's rows are then streamed from the archive in order (each
  pass of the runner inflates it once; a Fortran-order member is read whole). A name repeated in the
  archive keeps both members (the later named `NAME#2`, see `tensors.UniqueNames`).
- `.safetensors` — the `safetensors` package validates the file (`safe_open`: a truncated or
  corrupt file is refused there) and lists its tensors with their dtypes and shapes; the rows are
  then read from the byte range the header gives (`data_offsets`), chunk by chunk, because the
  package's numpy face has no bfloat16.
- PyTorch state dicts — `torch.load(path, weights_only=True, mmap=True, map_location="cpu")`
  (`simulations.lab.torch_reader`; torch is imported only there, only for such a file): plain
  containers and tensors only, never arbitrary objects; nested dicts and lists are flattened to
  dotted names within the entry, depth and name limits (a self-referential structure is refused);
  storages stay memory-mapped.

What a file may declare is bounded by `limits.ReadLimits` (`scan(paths, limits)`; `limits.LIMITS` by
default). Only regular files are read (`tensors.open_regular`): a FIFO, a device or a socket named
on the command line or as a shard is refused before it is opened, one in a directory is listed as
skipped. A file found in a directory or by a glob that cannot be read is listed as skipped with the
reason and the others are read; a file named explicitly, or as a shard of an index, raises. A file
reached twice (a symbolic or hard link to another file of the listing) is read once. A shard an index
names must lie in the index's folder, after links are followed.

Float inputs the lab analyses: BF16, FP16, FP32 and FP64 (BF16 and FP16 rows are widened to float32
exactly, FP64 stays float64). Anything else is listed as `Skipped` with its reason (integer, bool,
complex, FP8 and other dtypes, object arrays, non-tensor entries of a state dict, a raw 2-byte `V2`
array — what numpy writes for a bfloat16 array, whose type it cannot record). A file that cannot be
read — corrupt, truncated, of an unsupported type, holding pickled objects or over a limit — raises
`LabReadError` (a ValueError): one line that names the file (and the tensor or member), never
quoting the file's bytes.

A tensor is analysed as a matrix: `rows × cols` with cols its last axis and rows the product of the
others (1-D: one row; 0-d: 1 × 1). `TensorRef` (picklable: path, name, where the bytes are) is what
a worker receives; `open_rows(ref)` gives a `RowSource` whose `read(lo, hi)` returns rows lo..hi as
a float32 (or float64) array (`read_span(lo, hi)`: elements lo..hi of a one-row tensor), so a worker
reads only the chunk it quantizes.
"""

from __future__ import annotations

import ast
import glob
import json
import math
import os
import re
import threading
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Iterator, Protocol, Sequence

import numpy as np

from .limits import LIMITS, ReadLimits
from .tensors import (
    ANALYSED_DTYPES,
    dtype_label,
    dtype_reason,
    FLOAT_DTYPES,
    ArrayRows,
    Inventory,
    LabReadError,
    Skipped,
    TensorRef,
    check_regular,
    check_zip_directory,
    matrix_shape,
    open_regular,
    reason_of,
    UniqueNames,
    widen,
)

__all__ = [
    "FLOAT_DTYPES",
    "Inventory",
    "LabReadError",
    "NpyHeader",
    "RowSource",
    "Skipped",
    "TensorRef",
    "array_source",
    "expand_paths",
    "file_kind",
    "matrix_shape",
    "open_rows",
    "read_npy_header",
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


#: the largest `*.index.json` read (real ones are tens of kilobytes): `ReadLimits.max_json_bytes`
MAX_INDEX_BYTES = LIMITS.max_json_bytes


def _read_bounded(path: str, limit: int, what: str) -> bytes:
    """The bytes of a regular file of at most `limit` bytes (LabReadError naming `what` otherwise)."""
    with open_regular(path) as fh:
        size = os.fstat(fh.fileno()).st_size
        if size > limit:
            raise LabReadError(f"{path}: {size} bytes is too large for {what} (at most {limit})")
        data = fh.read(limit + 1)
    if len(data) > limit:
        raise LabReadError(f"{path}: too large for {what} (at most {limit} bytes)")
    return data


def _inside(path: str, folder: str) -> bool:
    """Whether `path`, links followed, lies in `folder` (links followed)."""
    real, base = os.path.realpath(path), os.path.realpath(folder)
    return os.path.commonpath([real, base]) == base


def _index_shards(path: str, limits: ReadLimits = LIMITS) -> list[str]:
    """The shard files a `*.index.json` (Hugging Face sharded checkpoint) names, sorted: bare file
    names in the index's folder (a name with a folder part, or a link that leads out of the folder,
    is refused: an index cannot point the lab at other files)."""
    raw = _read_bounded(path, limits.max_json_bytes, "a sharded-checkpoint index")
    try:
        data = json.loads(raw.decode("utf-8"))
        weight_map = data["weight_map"]
        names = sorted({str(v) for v in weight_map.values()})
    except (ValueError, KeyError, TypeError, AttributeError, RecursionError) as exc:
        raise LabReadError(f"{path}: not a sharded-checkpoint index (a JSON object with a weight_map): "
                           f"{type(exc).__name__}: {reason_of(exc)}") from None
    if len(names) > limits.max_entries:
        raise LabReadError(f"{path}: names {len(names)} shards; the lab reads at most {limits.max_entries}")
    for n in names:
        if not n or n in (".", "..") or "/" in n or "\\" in n or "\0" in n or len(n) > limits.max_name_chars:
            raise LabReadError(f"{path}: shard name {n[:80]!r} is not a file name in the index's folder")
    base = Path(path).parent
    shards = [str(base / n) for n in names]
    for shard in shards:
        if os.path.lexists(shard) and not _inside(shard, str(base)):
            raise LabReadError(f"{path}: shard {Path(shard).name!r} is a link that leads out of the index's folder "
                               f"(to {os.path.realpath(shard)}); an index reads files of its own folder only")
    return shards


@dataclass
class _Listing:
    """Files to read (with whether a failure skips the file rather than stopping), what was skipped."""

    files: list[tuple[str, bool]]
    skipped: list[Skipped]
    notes: list[str]


def _reason(exc: LabReadError, path: str) -> str:
    """A LabReadError's message without its leading `path: `."""
    text = str(exc)
    return text[len(path) + 2:] if text.startswith(f"{path}: ") else text


def _list(paths: Sequence[str] | str, limits: ReadLimits) -> _Listing:
    if isinstance(paths, (str, os.PathLike)):  # one path, not a sequence of its characters
        paths = [str(paths)]
    out = _Listing([], [], [])
    seen: dict[tuple[int, int], str] = {}

    def add(f: str, lenient: bool) -> None:
        try:
            st = check_regular(f)
            if lenient:
                file_kind(f)
        except LabReadError as exc:
            if not lenient:
                raise
            out.skipped.append(Skipped(f, "", _reason(exc, f)))
            return
        key = (st.st_dev, st.st_ino)
        if key in seen:
            if seen[key] != f:
                out.notes.append(f"{f} is the same file as {seen[key]} (a link): read once")
            return
        seen[key] = f
        out.files.append((f, lenient))

    for p in paths:
        if not isinstance(p, (str, os.PathLike)):
            raise TypeError(f"a path must be text, got {type(p).__name__}")
        p = str(p)
        if any(ch in p for ch in "*?["):
            matches = sorted(m for m in glob.glob(p) if not os.path.isdir(m))
            if not matches:
                raise LabReadError(f"{p}: no file matches this pattern")
            for m in matches:
                add(m, True)
        elif os.path.isdir(p):
            found = sorted(str(q) for q in Path(p).iterdir() if q.suffix.lower() in SUFFIXES and not q.is_dir())
            if not found:
                raise LabReadError(f"{p}: the directory holds no {', '.join(sorted(SUFFIXES))} file")
            for f in found:
                add(f, True)
        elif not os.path.exists(p):
            raise LabReadError(f"{p}: no such file")
        elif p.endswith(".index.json"):
            check_regular(p)
            for f in _index_shards(p, limits):
                add(f, False)
        else:
            add(p, False)
    return out


def expand_paths(paths: Sequence[str] | str, limits: ReadLimits = LIMITS) -> list[str]:
    """Files named by `paths` (files, globs, directories, `*.index.json`), each once, in order
    (a glob's and a directory's matches sorted; a file reached twice through a link once).
    LabReadError for a path that names nothing; files of a directory or glob that are not regular
    files or of an unknown type are left out (`scan` lists them as skipped)."""
    return [f for f, _ in _list(paths, limits).files]


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
    kinds = {"U": "text", "S": "bytes", "M": "datetime", "m": "timedelta"}
    if dt.kind in kinds:
        return f"{kinds[dt.kind]} dtype {dt.name} ({ANALYSED_DTYPES})"
    return dtype_reason(dt.name)


_NPY_MAGIC = b"\x93NUMPY"
_NPY_KEYS = {"descr", "fortran_order", "shape"}
_PY2_LONG = re.compile(r"(?<=\d)L\b")  # Python 2 wrote (3L, 4L)


@dataclass(frozen=True)
class NpyHeader:
    """A validated .npy header: shape (Python ints), order, dtype, where the data starts."""

    shape: tuple[int, ...]
    fortran_order: bool
    dtype: np.dtype
    data_offset: int

    @property
    def data_bytes(self) -> int:
        """Bytes of data the header promises (object arrays: unknown, 0)."""
        return 0 if self.dtype.hasobject else math.prod(self.shape) * self.dtype.itemsize


def read_npy_header(fh: IO[bytes], where: str, limits: ReadLimits = LIMITS) -> NpyHeader:
    """The header of the .npy array at the start of `fh` (a file or a zip member), validated here
    (numpy's own parser raises OverflowError, MemoryError or a tokenizer error on crafted headers,
    and quotes the file's bytes). LabReadError naming `where` for anything else than a header numpy
    writes: a bad magic string or version, a header over `limits.max_npy_header` bytes, a dictionary
    without exactly the keys descr / fortran_order / shape, a shape that is not a tuple of at most
    `limits.max_dims` non-negative integers, a descr that is not a dtype."""

    def bad(why: str) -> LabReadError:
        return LabReadError(f"{where}: not a .npy array or corrupt ({why})")

    start = fh.read(8)
    if len(start) < 8 or start[:6] != _NPY_MAGIC:
        raise bad("it does not start with numpy's magic string \\x93NUMPY")
    major, minor = start[6], start[7]
    if (major, minor) == (1, 0):
        width = 2
    elif (major, minor) in ((2, 0), (3, 0)):
        width = 4
    else:
        raise bad(f"unknown .npy format version {major}.{minor}")
    raw = fh.read(width)
    if len(raw) < width:
        raise bad("the header is cut short")
    length = int.from_bytes(raw, "little")
    if length > limits.max_npy_header:
        raise bad(f"a header of {length} bytes; the lab reads headers of at most {limits.max_npy_header}")
    body = fh.read(length)
    if len(body) < length:
        raise bad("the header is cut short")
    try:
        text = body.decode("utf-8" if major == 3 else "latin1")
        header = ast.literal_eval(_PY2_LONG.sub("", text))
    except Exception:  # SyntaxError, ValueError, MemoryError, RecursionError … of a crafted header
        raise bad("the header is not numpy's header dictionary") from None
    if not isinstance(header, dict) or set(header) != _NPY_KEYS:
        raise bad("the header does not hold exactly the keys descr, fortran_order and shape")
    shape, fortran = header["shape"], header["fortran_order"]
    if not isinstance(shape, tuple) or not all(type(d) is int for d in shape) or not isinstance(fortran, bool):
        raise bad("the header's shape is not a tuple of integers or its fortran_order not a bool")
    if len(shape) > limits.max_dims:
        raise LabReadError(f"{where}: corrupt .npy header: {len(shape)} dimensions (at most {limits.max_dims})")
    if any(d < 0 for d in shape):
        raise LabReadError(f"{where}: corrupt .npy header: negative dimension in shape {shape}")
    try:
        dtype = np.lib.format.descr_to_dtype(header["descr"])
    except Exception:
        raise bad("the header's descr is not a numpy dtype") from None
    return NpyHeader(shape, fortran, np.dtype(dtype), 8 + width + length)


def _scan_npy(path: str, inv: Inventory, limits: ReadLimits) -> None:
    with open_regular(path) as fh:
        size = os.fstat(fh.fileno()).st_size
        head = read_npy_header(fh, path, limits)
    need = head.data_bytes
    if not head.dtype.hasobject and head.data_offset + need > size:
        raise LabReadError(f"{path}: truncated: the header promises {need} bytes of data, the file holds "
                           f"{max(size - head.data_offset, 0)}")
    name = _numpy_dtype_name(head.dtype)
    if name is None:
        inv.skipped.append(Skipped(path, "", _numpy_skip_reason(head.dtype), head.shape, head.dtype.str))
        return
    inv.tensors.append(TensorRef(path, "", "npy", head.shape, name, head.data_offset, head.fortran_order))


def _open_zip(path: str, what: str) -> zipfile.ZipFile:
    fh = open_regular(path)
    try:
        return zipfile.ZipFile(fh)
    except Exception as exc:  # BadZipFile, and ValueError / struct errors of a mangled directory
        fh.close()
        raise LabReadError(f"{path}: not a {what} or corrupt ({reason_of(exc)})") from None


def _scan_npz(path: str, inv: Inventory, limits: ReadLimits) -> None:
    zf = _open_zip(path, ".npz archive")
    fh = zf.fp
    try:
        infos = zf.infolist()
        check_zip_directory(path, infos, limits, "archive", "Save the arrays uncompressed (np.savez).")
        total = sum(i.file_size for i in infos)
        if total > limits.max_npz_bytes:
            raise LabReadError(f"{path}: its members inflate to {total} bytes; the lab reads .npz archives of at most "
                               f"{limits.max_npz_bytes} bytes uncompressed")
        names = UniqueNames()
        for index, info in enumerate(infos):
            if not info.filename.endswith(".npy"):
                inv.skipped.append(Skipped(path, info.filename[:limits.max_name_chars], "not a .npy member"))
                continue
            original = info.filename[:-4]
            if len(original) > limits.max_name_chars:
                raise LabReadError(f"{path}: a member's name is {len(original)} characters long (at most "
                                   f"{limits.max_name_chars})")
            name = names(original)
            if name != original:
                inv.notes.append(f"{path}: a second member named {original!r} is reported as {name!r}")
            where = f"{path}[{name}]"
            try:
                with zf.open(info) as member:
                    head = read_npy_header(member, where, limits)
            except LabReadError:
                raise
            except Exception as exc:  # a damaged or encrypted member: BadZipFile, zlib.error, EOFError …
                raise LabReadError(f"{where}: corrupt member ({reason_of(exc)})") from None
            need = head.data_bytes
            if not head.dtype.hasobject and head.data_offset + need != info.file_size:
                # numpy would allocate what the header promises before reading: check it first
                raise LabReadError(f"{where}: corrupt member: the header promises {need} bytes of data, "
                                   f"the archive holds {max(info.file_size - head.data_offset, 0)}")
            dname = _numpy_dtype_name(head.dtype)
            if dname is None:
                inv.skipped.append(Skipped(path, name, _numpy_skip_reason(head.dtype), head.shape, head.dtype.str))
            else:
                inv.tensors.append(TensorRef(path, name, "npz", head.shape, dname, head.data_offset,
                                             head.fortran_order, index))
    finally:
        zf.close()
        if fh is not None:
            fh.close()


def _safetensors_header(path: str, limits: ReadLimits = LIMITS) -> dict[str, Any]:
    """The JSON header of a safetensors file (8-byte little-endian length, then the JSON), its
    length checked against `limits.max_json_bytes` and the file's size before it is read."""
    with open_regular(path) as fh:
        size = os.fstat(fh.fileno()).st_size
        head = fh.read(8)
        if len(head) < 8:
            raise LabReadError(f"{path}: not a safetensors file or corrupt (shorter than its 8-byte header length)")
        n = int.from_bytes(head, "little")
        if n > limits.max_json_bytes:
            raise LabReadError(f"{path}: not a safetensors file or corrupt (header too large: {n} bytes; the lab "
                               f"reads headers of at most {limits.max_json_bytes})")
        if 8 + n > size:
            raise LabReadError(f"{path}: not a safetensors file or corrupt (its {n}-byte header runs past the end "
                               f"of the file)")
        raw = fh.read(n)
    try:
        header: dict[str, Any] = json.loads(raw)
    except (ValueError, RecursionError) as exc:
        raise LabReadError(f"{path}: not a safetensors file or corrupt (the header is not JSON: "
                           f"{reason_of(exc)})") from None
    if not isinstance(header, dict):
        raise LabReadError(f"{path}: not a safetensors file or corrupt (the header is not a JSON object)")
    header["__data_start__"] = 8 + n
    return header


def _scan_safetensors(path: str, inv: Inventory, limits: ReadLimits, layout: str | None = None) -> None:
    from safetensors import safe_open

    from .quantized import fp8_skip_reason, scan_with_layouts

    header = _safetensors_header(path, limits)  # bounds checked before the package parses it
    if len(header) - 1 > limits.max_entries:
        raise LabReadError(f"{path}: {len(header) - 1} entries; the lab reads at most {limits.max_entries} entries "
                           f"of a file")
    start = int(header["__data_start__"])
    _check_extents(path, header, start)
    try:
        with safe_open(path, framework="numpy") as f:
            names = list(f.offset_keys())
            listing = [(k, f.get_slice(k).get_dtype(), tuple(int(s) for s in f.get_slice(k).get_shape()))
                       for k in names]
    except Exception as exc:  # SafetensorError, OSError …
        raise LabReadError(f"{path}: not a safetensors file or corrupt ({reason_of(exc)})") from None
    for name, _, shape in listing:
        if len(name) > limits.max_name_chars:
            raise LabReadError(f"{path}: a tensor's name is {len(name)} characters long (at most "
                               f"{limits.max_name_chars})")
        if len(shape) > limits.max_dims:
            raise LabReadError(f"{path}: tensor {name!r} has {len(shape)} dimensions (at most {limits.max_dims})")
    placed = [(name, code, shape, start + int(header[name]["data_offsets"][0]),
               int(header[name]["data_offsets"][1]) - int(header[name]["data_offsets"][0]))
              for name, code, shape in listing]
    quantized, consumed, skipped = scan_with_layouts(path, placed, layout, limits)
    inv.skipped.extend(skipped)
    for name, code, shape, offset, _ in placed:
        if name in quantized:
            inv.tensors.append(quantized[name])
            continue
        if name in consumed:
            continue
        ours = _SAFETENSORS_DTYPES.get(code)
        if ours is None:
            reason = fp8_skip_reason(dtype_label(code)) if code.startswith("F8_") else dtype_reason(code)
            inv.skipped.append(Skipped(path, name, reason, shape, dtype_label(code)))
            continue
        inv.tensors.append(TensorRef(path, name, "safetensors", shape, ours, offset))


def _check_extents(path: str, header: dict[str, Any], start: int) -> None:
    """LabReadError naming the first tensor whose bytes run past the end of the file (a truncated
    file), before the safetensors package refuses the file without naming one."""
    size = os.stat(path).st_size
    for name, meta in header.items():
        if name.startswith("__") or not isinstance(meta, dict):
            continue
        offsets = meta.get("data_offsets")
        if (isinstance(offsets, list) and len(offsets) == 2 and all(isinstance(o, int) for o in offsets)
                and start + offsets[1] > size):
            raise LabReadError(f"{path}: not a safetensors file or corrupt (truncated: tensor {name[:200]!r} ends at "
                               f"byte {start + offsets[1]}, past the end of the file's {size} bytes)")


def _scan_file(path: str, inv: Inventory, limits: ReadLimits, layout: str | None = None) -> None:
    kind = file_kind(path)
    if kind == "npy":
        _scan_npy(path, inv, limits)
    elif kind == "npz":
        _scan_npz(path, inv, limits)
    elif kind == "safetensors":
        _scan_safetensors(path, inv, limits, layout)
    else:
        from .torch_reader import scan_state_dict

        scan_state_dict(path, inv, limits)


def scan(paths: Sequence[str] | str, limits: ReadLimits = LIMITS, layout: str | None = None) -> Inventory:
    """Every tensor of the files `paths` names (see `expand_paths`), without reading their data.
    A file from a directory or a glob that cannot be read is listed as skipped (with the reason);
    one named explicitly or by an index raises LabReadError. Pre-quantized tensors of `.safetensors`
    files (`layouts.LAYOUTS`) are listed as one TensorRef each, with their layout: `layout` names it
    (else the checkpoint's config, else the tensors' names and dtypes; `simulations.lab.quantized`)."""
    if not isinstance(limits, ReadLimits):
        raise TypeError(f"limits must be a ReadLimits, got {type(limits).__name__}")
    if layout is not None:
        from .layouts import get_layout

        layout = get_layout(layout).name
    listing = _list(paths, limits)
    inv = Inventory(skipped=list(listing.skipped), notes=list(listing.notes))
    for path, lenient in listing.files:
        one = Inventory()
        try:
            _scan_file(path, one, limits, layout)
        except LabReadError as exc:
            if not lenient:
                raise
            inv.skipped.append(Skipped(path, "", _reason(exc, path)))
            continue
        inv.files.append(path)
        inv.tensors.extend(one.tensors)
        inv.skipped.extend(one.skipped)
        inv.notes.extend(one.notes)
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

    def read_span(self, lo: int, hi: int) -> np.ndarray:
        """Elements lo..hi of a one-row source (a 1-D tensor) as a (1, hi − lo) array, as `read`."""
        ...


class FileRows:
    """Rows of a C-order tensor stored contiguously in a file at a byte offset (npy, safetensors):
    each read copies only the rows asked for."""

    def __init__(self, ref: TensorRef) -> None:
        self.rows, self.cols = matrix_shape(ref.shape)
        self._ref = ref
        self._stored = FLOAT_DTYPES[ref.dtype]

    def _elements(self, first: int, count: int) -> np.ndarray:
        raw = np.empty(count, self._stored)
        with open_regular(self._ref.path) as fh:
            fh.seek(self._ref.offset + first * self._stored.itemsize)
            got = fh.readinto(raw.view(np.uint8).data)
        if got != raw.nbytes:
            raise LabReadError(f"{self._ref.path}: truncated: tensor {self._ref.label!r} ends past the end of the file")
        return raw

    def read(self, lo: int, hi: int) -> np.ndarray:
        return widen(self._elements(lo * self.cols, (hi - lo) * self.cols).reshape(hi - lo, self.cols), self._ref.dtype)

    def read_span(self, lo: int, hi: int) -> np.ndarray:
        return widen(self._elements(lo, hi - lo).reshape(1, hi - lo), self._ref.dtype)


_ZIPS = threading.local()  # each thread's last opened .npz: (key, ZipFile)


def _cached_zip(path: str) -> zipfile.ZipFile:
    """The .npz at `path`, opened once per thread (its directory is read once, not once per
    member) and reopened when the file changes."""
    st = check_regular(path)
    key = (path, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
    hit = getattr(_ZIPS, "entry", None)
    if hit is not None and hit[0] == key:
        zf: zipfile.ZipFile = hit[1]
        return zf
    zf = _open_zip(path, ".npz archive")
    if hit is not None:
        old: zipfile.ZipFile = hit[1]
        old_fp = old.fp
        old.close()
        if old_fp is not None:
            old_fp.close()
    _ZIPS.entry = (key, zf)
    return zf


class NpzRows:
    """Rows of a C-order .npz member, streamed from the archive in order: a read past the last one
    goes on inflating, a read before it starts the member again (the runner's two passes inflate it
    twice), so memory stays at one chunk whatever the member's size."""

    _SKIP = 1 << 20  # bytes discarded per read when skipping forward

    def __init__(self, ref: TensorRef) -> None:
        self.rows, self.cols = matrix_shape(ref.shape)
        self._ref = ref
        self._stored = FLOAT_DTYPES[ref.dtype]
        self._numel = ref.numel
        self._stream: IO[bytes] | None = None
        self._pos = 0  # elements of the member already read from the stream

    def _where(self) -> str:
        return f"{self._ref.path}[{self._ref.name}]"

    def _restart(self) -> None:
        if self._stream is not None:
            self._stream.close()
        zf = _cached_zip(self._ref.path)
        infos = zf.infolist()
        i, name = self._ref.index, self._ref.name
        member = infos[i].filename[:-4] if 0 <= i < len(infos) else None
        if member is None or not (name == member or name.startswith(f"{member}#")):
            raise LabReadError(f"{self._where()}: the archive changed since it was scanned")
        self._stream = zf.open(infos[i])
        self._read_exactly(self._ref.offset)  # the header
        self._pos = 0

    def _read_exactly(self, n: int, into: np.ndarray | None = None) -> None:
        assert self._stream is not None
        view = into.view(np.uint8).reshape(-1).data if into is not None else None
        done = 0
        while done < n:
            step = n - done if view is not None else min(n - done, self._SKIP)
            chunk = self._stream.read(step)
            if not chunk:
                raise LabReadError(f"{self._where()}: truncated: the member ends before its data")
            if view is not None:
                view[done:done + len(chunk)] = chunk
            done += len(chunk)

    def _elements(self, first: int, count: int) -> np.ndarray:
        size = self._stored.itemsize
        try:
            if self._stream is None or first < self._pos:
                self._restart()
            if first > self._pos:
                self._read_exactly((first - self._pos) * size)
            raw = np.empty(count, self._stored)
            self._read_exactly(count * size, raw)
            self._pos = first + count
            if self._pos == self._numel:  # the end: let zipfile check the member's CRC
                assert self._stream is not None
                self._stream.read(1)
        except LabReadError:
            raise
        except Exception as exc:  # BadZipFile (a bad CRC), zlib.error, EOFError, OSError …
            raise LabReadError(f"{self._where()}: corrupt member ({reason_of(exc)})") from None
        return raw

    def read(self, lo: int, hi: int) -> np.ndarray:
        return widen(self._elements(lo * self.cols, (hi - lo) * self.cols).reshape(hi - lo, self.cols), self._ref.dtype)

    def read_span(self, lo: int, hi: int) -> np.ndarray:
        return widen(self._elements(lo, hi - lo).reshape(1, hi - lo), self._ref.dtype)


def _npz_whole(ref: TensorRef) -> ArrayRows:
    """A Fortran-order .npz member, read whole (its rows are not contiguous in the stream)."""
    stream = NpzRows(ref)
    flat = stream._elements(0, ref.numel)
    return ArrayRows(flat.reshape(ref.shape, order="F"), ref.dtype)


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
    """The RowSource of a scanned tensor (opens its file; torch state dicts through torch; a
    pre-quantized tensor through `quantized.QuantizedRows`, dequantized as its producer does)."""
    if ref.layout:
        from .quantized import QuantizedRows

        return QuantizedRows(ref)
    if ref.kind in ("safetensors",) or (ref.kind == "npy" and not ref.fortran_order):
        return FileRows(ref)
    if ref.kind == "npy":
        check_regular(ref.path)
        try:
            return ArrayRows(np.load(ref.path, mmap_mode="r", allow_pickle=False), ref.dtype)
        except (ValueError, OSError) as exc:
            raise LabReadError(f"{ref.path}: cannot be read ({reason_of(exc)})") from None
    if ref.kind == "npz":
        return _npz_whole(ref) if ref.fortran_order and len(ref.shape) > 1 else NpzRows(ref)
    if ref.kind == "torch":
        from .torch_reader import state_dict_rows

        return state_dict_rows(ref)
    raise ValueError(f"tensor {ref.label!r} of kind {ref.kind!r} has no file to read (use array_source)")


def iter_chunks(rows: int, rows_per_chunk: int) -> Iterator[tuple[int, int]]:
    """(lo, hi) row ranges of at most `rows_per_chunk` rows covering 0..rows."""
    step = max(1, int(rows_per_chunk))
    for lo in range(0, rows, step):
        yield lo, min(rows, lo + step)
