"""Scale granularities: which elements share one scale, and the grouping of an array by it.

Per-tensor (one group), per-row (each slice along the last axis, i.e. per token), per-column (each
slice along the leading axes, i.e. per channel), 1-D blocks of k consecutive elements along a named
axis, and 2-D tiles (r × c) of a 2-D array. `Granularity.to_groups` lays an array out as one row per
group (groups in the row-major order of `grid_shape`; 1-D blocks with the block axis moved last) and
`from_groups` inverts it. A shape that a block does not divide raises ValueError (no implicit
padding). Spelled as text by `parse_granularity`: 'tensor', 'row' ('token'), 'column' ('channel'),
'block32' (along the last axis), 'block32@0' (along axis 0), 'block16x16' (2-D tiles).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from lowprec import formats

__all__ = ["GRANULARITY_KINDS", "Granularity", "group_amax", "parse_granularity"]

GRANULARITY_KINDS = ("tensor", "row", "column", "block", "block2d")


@dataclass(frozen=True)
class Granularity:
    """How elements share a scale.

    kind: 'tensor' (one group), 'row' (each slice along the last axis: per token), 'column' (each
    slice along the leading axes: per channel), 'block' (runs of `block[0]` consecutive elements
    along `axis`), 'block2d' (tiles of block[0] × block[1] of a 2-D array).
    """

    kind: str
    block: tuple[int, ...] = ()
    axis: int = -1

    def __post_init__(self) -> None:
        if self.kind not in GRANULARITY_KINDS:
            raise ValueError(f"granularity kind {self.kind!r} is not one of {', '.join(GRANULARITY_KINDS)}")
        want = {"block": 1, "block2d": 2}.get(self.kind, 0)
        if len(self.block) != want:
            raise ValueError(f"granularity {self.kind!r} needs {want} block size(s), got {self.block!r}")
        for b in self.block:
            if isinstance(b, bool) or not isinstance(b, (int, np.integer)) or b < 1:
                raise ValueError(f"block size {b!r} must be a positive integer")

    @property
    def label(self) -> str:
        if self.kind == "block":
            return f"block{self.block[0]}" + ("" if self.axis == -1 else f"@axis{self.axis}")
        if self.kind == "block2d":
            return f"block{self.block[0]}x{self.block[1]}"
        return self.kind

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "block": list(self.block), "axis": self.axis, "label": self.label}

    # ---- grouping -------------------------------------------------------------------------------
    def _check(self, shape: tuple[int, ...]) -> None:
        nd = len(shape)
        if self.kind in ("row", "column") and nd < 1:
            raise ValueError(f"granularity {self.kind!r} needs an array with at least one axis")
        if self.kind == "block":
            if nd < 1:
                raise ValueError("block granularity needs an array with at least one axis")
            if not -nd <= self.axis < nd:
                raise ValueError(f"axis {self.axis} is out of range for an array of {nd} axes")
            n = shape[self.axis]
            if n % self.block[0]:
                raise ValueError(
                    f"block size {self.block[0]} does not divide axis {self.axis} of length {n} "
                    f"(shape {shape}); pad the array or pick a block size that divides it"
                )
        if self.kind == "block2d":
            if nd != 2:
                raise ValueError(f"2-D blocks need a 2-D array, got shape {shape}")
            r, c = self.block
            if shape[0] % r or shape[1] % c:
                raise ValueError(f"{r}×{c} tiles do not divide shape {shape}; pad it or pick tiles that divide it")

    def grid_shape(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        """Shape of the array of scales (one per group), in the layout `to_groups` orders them."""
        self._check(shape)
        if self.kind == "tensor":
            return ()
        if self.kind == "row":
            return shape[:-1] if len(shape) > 1 else (1,)
        if self.kind == "column":
            return (shape[-1],)
        if self.kind == "block":
            ax = self.axis % len(shape)
            return tuple(s for i, s in enumerate(shape) if i != ax) + (shape[ax] // self.block[0],)
        r, c = self.block
        return (shape[0] // r, shape[1] // c)

    def to_groups(self, x: np.ndarray) -> np.ndarray:
        """The elements as a (n_groups, group_size) array; groups in the row-major order of
        `grid_shape` (for 1-D blocks: the block axis moved last)."""
        shape = x.shape
        self._check(shape)
        if self.kind == "tensor":
            return x.reshape(1, -1)
        if self.kind == "row":
            return x.reshape(-1, shape[-1]) if x.ndim else x.reshape(1, 1)
        if self.kind == "column":
            return np.ascontiguousarray(x.reshape(-1, shape[-1]).T)
        if self.kind == "block":
            moved = np.moveaxis(x, self.axis, -1)
            return np.ascontiguousarray(moved).reshape(-1, self.block[0])
        r, c = self.block
        m, n = shape
        return np.ascontiguousarray(x.reshape(m // r, r, n // c, c).transpose(0, 2, 1, 3)).reshape(-1, r * c)

    def from_groups(self, g: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
        """Inverse of `to_groups`: the (n_groups, group_size) array back in `shape`."""
        self._check(shape)
        if self.kind in ("tensor", "row"):
            return g.reshape(shape)
        if self.kind == "column":
            return np.ascontiguousarray(g.T).reshape(shape)
        if self.kind == "block":
            ax = self.axis % len(shape)
            moved_shape = tuple(s for i, s in enumerate(shape) if i != ax) + (shape[ax],)
            return np.ascontiguousarray(np.moveaxis(g.reshape(moved_shape), -1, ax))
        r, c = self.block
        m, n = shape
        return np.ascontiguousarray(g.reshape(m // r, n // c, r, c).transpose(0, 2, 1, 3)).reshape(shape)


    def element_groups(self, shape: tuple[int, ...]) -> np.ndarray:
        """The index of each element's group (in `to_groups` order), shaped as `shape`."""
        n_groups = int(np.prod(self.grid_shape(shape), dtype=np.int64))
        n = int(np.prod(shape, dtype=np.int64))
        ids = np.repeat(np.arange(n_groups, dtype=np.int64), n // max(n_groups, 1)).reshape(n_groups, -1)
        return self.from_groups(ids, shape)


def parse_granularity(spec: str | Granularity) -> Granularity:
    """'tensor', 'row' (alias 'token'), 'column' (alias 'channel'), 'block32' (1-D along the last
    axis), 'block32@0' (along axis 0), 'block16x16' (2-D tiles)."""
    if isinstance(spec, Granularity):
        return spec
    if not isinstance(spec, str):
        raise TypeError(f"granularity must be a string or Granularity, got {type(spec).__name__}")
    s = spec.strip().lower().replace("per-", "").replace("per_", "")
    alias = {"tensor": "tensor", "row": "row", "token": "row", "column": "column", "channel": "column",
             "col": "column"}
    if s in alias:
        return Granularity(alias[s])
    allowed = "tensor, row (token), column (channel), blockK, blockK@AXIS, blockRxC"
    if s.startswith("block"):
        body = s[5:].lstrip(":")
        axis = -1
        if "@" in body:
            body, ax = body.split("@", 1)
            ax = ax.replace("axis", "")
            try:
                axis = int(ax)
            except ValueError:
                raise ValueError(f"granularity {spec!r}: axis {ax!r} is not an integer") from None
        try:
            if "x" in body:
                r, c = body.split("x", 1)
                return Granularity("block2d", (int(r), int(c)))
            return Granularity("block", (int(body),), axis)
        except ValueError as exc:
            if "block size" in str(exc):
                raise
            raise ValueError(f"granularity {spec!r} is not one of: {allowed}") from None
    raise ValueError(f"granularity {spec!r} is not one of: {allowed}")


def group_amax(x: Any, granularity: str | Granularity) -> np.ndarray:
    """max |x| per group, shaped as `Granularity.grid_shape`; NaN where a group holds a NaN."""
    g = parse_granularity(granularity)
    arr = formats.as_float_array(x)
    groups = g.to_groups(arr)
    with np.errstate(invalid="ignore"):
        am = np.abs(groups).max(axis=1) if groups.shape[1] else np.zeros(groups.shape[0])
    return am.astype(np.float64).reshape(g.grid_shape(arr.shape))

