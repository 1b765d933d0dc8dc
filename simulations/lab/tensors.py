"""The records the recipe lab's readers share (imported by `readers` and `torch_reader`, which import
nothing of each other): the float dtypes the lab analyses, `LabReadError`, `TensorRef` (where one
tensor's bytes are), `Skipped`, `Inventory`, the matrix view of a shape (`matrix_shape`: rows × last
axis), and `ArrayRows` (rows of an array in memory or memory-mapped, widened to float32 or float64)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np

from ..quant.recipes import matrix_shape  # the matrix view (rows × last axis) the recipes quantize

__all__ = ["ArrayRows", "FLOAT_DTYPES", "Inventory", "LabReadError", "Skipped", "TensorRef", "matrix_shape", "widen"]

#: the dtypes the lab analyses, by our name → numpy dtype of the stored bytes
FLOAT_DTYPES: dict[str, Any] = {
    "BF16": np.dtype(ml_dtypes.bfloat16),
    "FP16": np.dtype(np.float16),
    "FP32": np.dtype(np.float32),
    "FP64": np.dtype(np.float64),
}


class LabReadError(ValueError):
    """A file the lab cannot read: the message is one line naming the file."""


@dataclass(frozen=True)
class TensorRef:
    """Where one float tensor lives; small and picklable (a worker opens the file itself)."""

    path: str  # the file ("" for an in-memory array: see `array_source`)
    name: str  # the tensor's name in the file ("" for a bare .npy array)
    kind: str  # "npy", "npz", "safetensors", "torch", "memory"
    shape: tuple[int, ...]
    dtype: str  # a key of FLOAT_DTYPES
    offset: int = 0  # byte offset of the data (npy C-order, safetensors); -1: not readable by offset
    fortran_order: bool = False

    @property
    def numel(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def nbytes(self) -> int:
        return self.numel * int(FLOAT_DTYPES[self.dtype].itemsize)

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
