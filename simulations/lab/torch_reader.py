"""PyTorch state dicts for the recipe lab: the one module of the lab that imports torch, lazily, and
only for a `.pt`/`.pth`/`.bin`/`.ckpt` file.

A file is loaded with `torch.load(path, weights_only=True, mmap=True, map_location="cpu")`:
torch's restricted unpickler accepts tensors and plain containers only and refuses any other
object (so a checkpoint can never run code here), and the tensor storages stay memory-mapped (only
the rows being analysed are paged in). A file saved in torch's legacy (non-zip) format cannot be
memory-mapped and is refused with a message saying so. Before torch sees it, the file must be a
regular file and its zip directory is checked against the limits (`limits.ReadLimits`: the member
count, the pickle's size, no compressed member that would inflate like a zip bomb).

Nested dicts, lists and tuples are flattened to dotted names (`model.layers.0.weight`,
`optimizer.state.0.exp_avg`); a bare tensor is named `tensor`. The flattening walks the structure
with its own stack (never Python's recursion) within the limits: at most `max_depth` levels, at most
`max_entries` leaves and four times as many visits in all — a container referenced from several
places is expanded once per place, so a 1.7 KB file of `y = [y, y]` twenty times, which would expand
to a million leaves, is refused after the first hundred thousand — and names of at most
`max_name_chars` characters; a container that holds itself is refused as self-referential. Two
entries that flatten to the same name (`{"a.b": t1, "a": {"b": t2}}`) are both kept: the later one is
named `a.b#2` (`tensors.UniqueNames`), and the inventory notes it.

Entries that are not tensors (a step counter, a string, None) and tensors of other dtypes (integer,
bool, FP8, complex), sparse or quantized tensors, and tensors with more elements than their storage
holds (an expanded view: strides that repeat elements) are listed as skipped with the reason.
Without torch installed, reading such a file raises the one-line message that names the `torch`
extra (`lowprec.extras`).

Each process keeps the last file it loaded, flattened, so a worker that analyses several tensors of
one checkpoint loads and flattens it once.
"""

from __future__ import annotations

import zipfile
from typing import Any

import ml_dtypes
import numpy as np

from lowprec.extras import missing_dependency

from .limits import LIMITS, ReadLimits
from .tensors import (
    ANALYSED_DTYPES,
    dtype_label,
    dtype_reason,
    ArrayRows,
    Inventory,
    LabReadError,
    Skipped,
    TensorRef,
    UniqueNames,
    check_regular,
    check_zip_directory,
    open_regular,
    reason_of,
)

__all__ = ["flatten", "load_state_dict", "scan_state_dict", "state_dict_rows"]

_TORCH_DTYPES = {"bfloat16": "BF16", "float16": "FP16", "float32": "FP32", "float64": "FP64"}


class _Loaded:
    """One loaded file: its identity, the object, its flattened entries and the notes on them."""

    def __init__(self, key: tuple[Any, ...], limits: ReadLimits, obj: Any, entries: list[tuple[str, Any]],
                 notes: list[str]) -> None:
        self.key = key
        self.limits = limits
        self.obj = obj
        self.entries = entries
        self.by_name = dict(entries)
        self.notes = notes


_CACHE: dict[str, _Loaded] = {}


def _import_torch(path: str) -> Any:
    try:
        import torch
    except ModuleNotFoundError as exc:
        message = missing_dependency(exc, f"reading the PyTorch file {path}")
        if message is None:
            raise
        raise LabReadError(message) from None
    return torch


def _check_zip(path: str, limits: ReadLimits) -> None:
    """A PyTorch zip file's directory within the limits (a file that is no zip is left to torch,
    which names the legacy format or refuses it)."""
    with open_regular(path) as fh:
        try:
            zf = zipfile.ZipFile(fh)
        except Exception:  # not a zip: torch's own message says what it is
            return
        with zf:
            infos = zf.infolist()
    check_zip_directory(path, infos, limits, "PyTorch file", "Re-save it with torch.save.")
    for info in infos:
        if info.filename.endswith("data.pkl") and info.file_size > limits.max_pickle_bytes:
            raise LabReadError(f"{path}: its pickle {info.filename[:80]!r} is {info.file_size} bytes; the lab reads "
                               f"pickles of at most {limits.max_pickle_bytes}")


def _load(path: str, limits: ReadLimits | None) -> _Loaded:
    """The file loaded and flattened under `limits` (None: whatever limits the cached copy was
    read with, else LIMITS)."""
    st = check_regular(path)
    key = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
    hit = _CACHE.get(path)
    if hit is not None and hit.key == key and (limits is None or hit.limits == limits):
        return hit
    limits = LIMITS if limits is None else limits
    torch = _import_torch(path)
    _check_zip(path, limits)
    try:
        obj = torch.load(path, weights_only=True, mmap=True, map_location="cpu")
    except Exception as exc:  # torch raises RuntimeError, UnpicklingError, EOFError, ValueError …
        text = str(exc)
        if "Weights only load failed" in text:
            reason = ("holds Python objects other than tensors and plain containers; lowprec loads with "
                      "torch.load(weights_only=True) and never unpickles them")
        elif "mmap" in text and "zip" in text and not _starts_as_pickle(path):
            reason = "is not a PyTorch checkpoint or is corrupt (neither torch's zip format nor a pickle)"
        elif "mmap" in text and "zip" in text:
            reason = "is in torch's legacy (non-zip) format, which cannot be memory-mapped; re-save it with torch.save"
        elif isinstance(exc, (RecursionError, MemoryError)):
            reason = f"is too deeply nested or too large to load ({type(exc).__name__})"
        else:
            reason = f"is not a PyTorch checkpoint or is corrupt ({type(exc).__name__}: {reason_of(exc)})"
        raise LabReadError(f"{path}: {reason}") from None
    entries, notes = flatten(obj, path, limits)
    loaded = _Loaded(key, limits, obj, entries, notes)
    _CACHE.clear()
    _CACHE[path] = loaded
    return loaded


def _starts_as_pickle(path: str) -> bool:
    """Whether the file starts with a pickle's PROTO opcode (torch's legacy format is a pickle)."""
    with open_regular(path) as fh:
        return fh.read(1) == b"\x80"


def load_state_dict(path: str, limits: ReadLimits = LIMITS) -> Any:
    """The object in `path`, loaded with weights_only=True and mmap=True (cached per process by
    path, file identity and modification time). LabReadError, one line naming the file, when torch
    refuses it or it is over the limits."""
    return _load(path, limits).obj


def _items(obj: Any) -> Any:
    if isinstance(obj, dict):
        return ((str(k), v) for k, v in obj.items())
    return ((str(i), v) for i, v in enumerate(obj))


def _short(name: str) -> str:
    return name if len(name) <= 80 else f"{name[:77]}…"


def flatten(obj: Any, path: str, limits: ReadLimits = LIMITS) -> tuple[list[tuple[str, Any]], list[str]]:
    """(dotted name, leaf) of nested dicts, lists and tuples, in order, and notes on renamed
    entries; a bare leaf is named `tensor`. LabReadError naming `path` over the limits or for a
    self-referential structure (see the module docstring)."""
    if not isinstance(obj, (dict, list, tuple)):
        return [("tensor", obj)], []
    out: list[tuple[str, Any]] = []
    notes: list[str] = []
    names = UniqueNames()
    max_visits = 4 * limits.max_entries
    visits = 0
    stack: list[tuple[str, Any, int]] = [("", _items(obj), id(obj))]
    on_path = {id(obj)}  # the containers from the root to the one being walked
    while stack:
        prefix, items, oid = stack[-1]
        item = next(items, None)
        if item is None:
            stack.pop()
            on_path.discard(oid)
            continue
        key, value = item
        name = f"{prefix}.{key}" if prefix else key
        visits += 1
        if visits > max_visits:
            raise LabReadError(f"{path}: its nested containers expand to more than {max_visits} entries (a container "
                               f"referenced from several places counts once per place); the lab reads at most "
                               f"{limits.max_entries} entries of a file")
        if len(name) > limits.max_name_chars:
            raise LabReadError(f"{path}: entry {_short(name)!r} has a name of {len(name)} characters (at most "
                               f"{limits.max_name_chars})")
        if isinstance(value, (dict, list, tuple)):
            if id(value) in on_path:
                raise LabReadError(f"{path}: self-referential structure: entry {_short(name)!r} refers back to a "
                                   f"container that encloses it")
            if len(stack) >= limits.max_depth:
                raise LabReadError(f"{path}: nested deeper than {limits.max_depth} levels (at {_short(name)!r})")
            stack.append((name, _items(value), id(value)))
            on_path.add(id(value))
            continue
        if len(out) >= limits.max_entries:
            raise LabReadError(f"{path}: holds more than {limits.max_entries} entries once its nested containers are "
                               f"expanded (a container referenced from several places counts once per place); the "
                               f"lab reads at most {limits.max_entries} entries of a file")
        unique = names(name)
        if unique != name:
            notes.append(f"{path}: two entries flatten to the name {_short(name)!r}; the later is reported as "
                         f"{_short(unique)!r}")
        out.append((unique, value))
    return out, notes


def scan_state_dict(path: str, inv: Inventory, limits: ReadLimits = LIMITS) -> None:
    """Add the float tensors of a state dict to `inv`, and every other entry as skipped."""
    torch = _import_torch(path)
    loaded = _load(path, limits)
    inv.notes.extend(loaded.notes)
    for name, value in loaded.entries:
        if not isinstance(value, torch.Tensor):
            inv.skipped.append(Skipped(path, name, f"not a tensor ({type(value).__name__})"))
            continue
        shape = tuple(int(s) for s in value.shape)
        dtype = str(value.dtype).replace("torch.", "")
        if len(shape) > limits.max_dims:
            inv.skipped.append(Skipped(path, name, f"{len(shape)} dimensions (at most {limits.max_dims})", None, dtype))
        elif value.layout != torch.strided:
            inv.skipped.append(Skipped(path, name, f"{value.layout} tensor (dense tensors only)", shape, dtype))
        elif value.is_quantized:
            inv.skipped.append(Skipped(path, name, "quantized tensor", shape, dtype))
        elif dtype not in _TORCH_DTYPES:
            inv.skipped.append(Skipped(path, name, dtype_reason(dtype), shape, dtype_label(dtype)))
        elif _expanded(value):
            held = value.untyped_storage().nbytes() // value.element_size()
            inv.skipped.append(Skipped(path, name, f"an expanded view: {value.numel()} elements over a storage of "
                                                   f"{held} (strides that repeat elements)", shape, dtype))
        else:
            inv.tensors.append(TensorRef(path, name, "torch", shape, _TORCH_DTYPES[dtype], -1))


def _expanded(t: Any) -> bool:
    """Whether a tensor has more elements than its storage holds past its offset."""
    held = t.untyped_storage().nbytes() // t.element_size() - t.storage_offset()
    return bool(t.numel() > max(held, 0))


def state_dict_rows(ref: TensorRef) -> ArrayRows:
    """The rows of one state-dict tensor, as a numpy view of its (memory-mapped) storage (no copy:
    a non-contiguous tensor is read through its strides)."""
    torch = _import_torch(ref.path)
    value = _load(ref.path, None).by_name.get(ref.name)
    if not isinstance(value, torch.Tensor):
        raise LabReadError(f"{ref.path}: has no tensor {ref.name!r} any more (was the file changed?)")
    t = value.detach()
    if t.dtype == torch.bfloat16:
        arr = t.view(torch.int16).numpy().view(ml_dtypes.bfloat16)
    else:
        arr = t.numpy()
    return ArrayRows(np.asarray(arr).reshape(ref.shape), ref.dtype)
