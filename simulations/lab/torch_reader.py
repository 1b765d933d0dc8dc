"""PyTorch state dicts for the recipe lab: the one module of the lab that imports torch, lazily, and
only for a `.pt`/`.pth`/`.bin`/`.ckpt` file.

A file is loaded with `torch.load(path, weights_only=True, mmap=True, map_location="cpu")`:
torch's restricted unpickler accepts tensors and plain containers only and refuses any other
object (so a checkpoint can never run code here), and the tensor storages stay memory-mapped (only
the rows being analysed are paged in). A file saved in torch's legacy (non-zip) format cannot be
memory-mapped and is refused with a message saying so. Nested dicts, lists and tuples are flattened
to dotted names (`model.layers.0.weight`, `optimizer.state.0.exp_avg`); a bare tensor is named
`tensor`. Entries that are not tensors (a step counter, a string, None) and tensors of other dtypes
(integer, bool, FP8, complex), sparse or quantized tensors are listed as skipped with the reason.
Without torch installed, reading such a file raises the one-line message that names the `torch`
extra (`lowprec.extras`).

Each process keeps the last file it loaded, so a worker that analyses several tensors of one
checkpoint loads its pickle once.
"""

from __future__ import annotations

from typing import Any, Iterator

import ml_dtypes
import numpy as np

from lowprec.extras import missing_dependency

from .tensors import ANALYSED_DTYPES, ArrayRows, Inventory, LabReadError, Skipped, TensorRef

__all__ = ["load_state_dict", "scan_state_dict", "state_dict_rows"]

_TORCH_DTYPES = {"bfloat16": "BF16", "float16": "FP16", "float32": "FP32", "float64": "FP64"}
_CACHE: dict[str, tuple[float, Any]] = {}


def _import_torch(path: str) -> Any:
    try:
        import torch
    except ModuleNotFoundError as exc:
        message = missing_dependency(exc, f"reading the PyTorch file {path}")
        if message is None:
            raise
        raise LabReadError(message) from None
    return torch


def load_state_dict(path: str) -> Any:
    """The object in `path`, loaded with weights_only=True and mmap=True (cached per process by
    path and modification time). LabReadError, one line naming the file, when torch refuses it."""
    import os

    mtime = os.path.getmtime(path)
    hit = _CACHE.get(path)
    if hit is not None and hit[0] == mtime:
        return hit[1]
    torch = _import_torch(path)
    try:
        obj = torch.load(path, weights_only=True, mmap=True, map_location="cpu")
    except Exception as exc:  # torch raises RuntimeError, UnpicklingError, EOFError, ValueError …
        text = str(exc)
        if "Weights only load failed" in text:
            reason = ("holds Python objects other than tensors and plain containers; lowprec loads with "
                      "torch.load(weights_only=True) and never unpickles them")
        elif "mmap" in text and "zip" in text:
            reason = "is in torch's legacy (non-zip) format, which cannot be memory-mapped; re-save it with torch.save"
        else:
            lines = text.strip().splitlines()
            reason = f"is not a PyTorch checkpoint or is corrupt ({type(exc).__name__}: {lines[0] if lines else ''})"
        raise LabReadError(f"{path}: {reason}") from None
    _CACHE.clear()
    _CACHE[path] = (mtime, obj)
    return obj


def _flatten(obj: Any, prefix: str) -> Iterator[tuple[str, Any]]:
    """(dotted name, leaf) of nested dicts, lists and tuples; a bare leaf is named `tensor`."""
    if isinstance(obj, dict):
        items: Iterator[tuple[str, Any]] = ((str(k), v) for k, v in obj.items())
    elif isinstance(obj, (list, tuple)):
        items = ((str(i), v) for i, v in enumerate(obj))
    else:
        yield (prefix or "tensor"), obj
        return
    for key, value in items:
        yield from _flatten(value, f"{prefix}.{key}" if prefix else key)


def _entries(path: str) -> dict[str, Any]:
    return dict(_flatten(load_state_dict(path), ""))


def scan_state_dict(path: str, inv: Inventory) -> None:
    """Add the float tensors of a state dict to `inv`, and every other entry as skipped."""
    torch = _import_torch(path)
    for name, value in _entries(path).items():
        if not isinstance(value, torch.Tensor):
            inv.skipped.append(Skipped(path, name, f"not a tensor ({type(value).__name__})"))
            continue
        shape = tuple(int(s) for s in value.shape)
        dtype = str(value.dtype).replace("torch.", "")
        if value.layout != torch.strided:
            inv.skipped.append(Skipped(path, name, f"{value.layout} tensor (dense tensors only)", shape, dtype))
        elif value.is_quantized:
            inv.skipped.append(Skipped(path, name, "quantized tensor", shape, dtype))
        elif dtype not in _TORCH_DTYPES:
            inv.skipped.append(Skipped(path, name, f"dtype {dtype} ({ANALYSED_DTYPES})", shape, dtype))
        else:
            inv.tensors.append(TensorRef(path, name, "torch", shape, _TORCH_DTYPES[dtype], -1))


def state_dict_rows(ref: TensorRef) -> ArrayRows:
    """The rows of one state-dict tensor, as a numpy view of its (memory-mapped) storage."""
    torch = _import_torch(ref.path)
    value = _entries(ref.path).get(ref.name)
    if not isinstance(value, torch.Tensor):
        raise LabReadError(f"{ref.path}: has no tensor {ref.name!r} any more (was the file changed?)")
    t = value.detach().contiguous()
    if t.dtype == torch.bfloat16:
        arr = t.view(torch.int16).numpy().view(ml_dtypes.bfloat16)
    else:
        arr = t.numpy()
    return ArrayRows(np.asarray(arr).reshape(ref.shape), ref.dtype)
