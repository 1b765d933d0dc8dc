"""The blockwise machinery shared by the MX and NVFP4 quantizers: blocks as rows (`Granularity`), the
amax of each row read from float bit patterns, work split into chunks of blocks (each chunk fits in
L2, reuses one per-thread scratch buffer and, for stochastic rounding, draws from its own generator
seeded from the caller's), and scale arrays moved between the row order and the input's layout.
No format knowledge lives here.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable

import numpy as np

from lowprec import formats

from ..scaling.granularity import Granularity

CHUNK_BLOCKS = 8192  # blocks per work item: a chunk stays in L2
# Work items run on one thread by default: measured on a shared 2-core machine, a second thread
# lost more to contention than it gained. LOWPREC_BLOCK_THREADS=2 enables the pool.
_THREADS = max(1, int(os.environ.get("LOWPREC_BLOCK_THREADS", "1")))
_POOL: ThreadPoolExecutor | None = None


def _pool() -> ThreadPoolExecutor:
    global _POOL
    if _POOL is None:
        _POOL = ThreadPoolExecutor(max_workers=_THREADS, thread_name_prefix="lowprec-blocks")
    return _POOL


def amax_bits(blocks: np.ndarray, ignore_nan: bool = False) -> np.ndarray:
    """max |x| per row as the float's bit pattern (an unsigned view: NaN > Inf > finite); with
    `ignore_nan`, NaN elements are skipped (an all-NaN row gives 0), as `fmaxf` does."""
    uint = np.uint32 if blocks.dtype == np.float32 else np.uint64
    mask = uint(0x7FFFFFFF) if uint is np.uint32 else uint(0x7FFFFFFFFFFFFFFF)
    mags = np.bitwise_and(blocks.view(uint), mask)
    if ignore_nan:
        mags[mags > uint(inf_bits(blocks.dtype))] = 0
    return mags.max(axis=1)


def inf_bits(dtype: np.dtype) -> int:
    """The bit pattern of +Inf in `dtype` (float32 or float64): amax bits at or above it are Inf/NaN."""
    return 0x7F800000 if dtype == np.float32 else 0x7FF0000000000000


def map_chunks(n_blocks: int, fn: Callable[[int, int, int], None]) -> None:
    """Run fn(chunk_index, lo, hi) over block ranges, on two threads when large."""
    n_chunks = max(1, (n_blocks + CHUNK_BLOCKS - 1) // CHUNK_BLOCKS)

    def run(ids: range) -> None:
        for ci in ids:
            fn(ci, ci * CHUNK_BLOCKS, min(n_blocks, (ci + 1) * CHUNK_BLOCKS))

    if n_chunks >= 4 and _THREADS > 1:
        per = (n_chunks + _THREADS - 1) // _THREADS
        list(_pool().map(run, [range(i * per, min(n_chunks, (i + 1) * per)) for i in range(_THREADS)]))
    else:
        run(range(n_chunks))


_LOCAL = threading.local()


def scratch(shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """A per-thread reusable buffer of `shape` (at most one chunk), so chunks allocate nothing."""
    n = int(np.prod(shape))
    buf = getattr(_LOCAL, "buf", None)
    if buf is None or buf.dtype != dtype or buf.size < n:
        buf = np.empty(max(n, CHUNK_BLOCKS * 32), dtype)
        _LOCAL.buf = buf
    return buf[:n].reshape(shape)


def chunk_rngs(rng: np.random.Generator | None, n_blocks: int) -> list[np.random.Generator] | None:
    """One generator per chunk, seeded from `rng` (None when `rng` is None)."""
    if rng is None:
        return None
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy.random.Generator (e.g. numpy.random.default_rng(0)) or None, "
                        f"got {type(rng).__name__}")
    n_chunks = max(1, (n_blocks + CHUNK_BLOCKS - 1) // CHUNK_BLOCKS)
    seeds = rng.integers(0, 2**63 - 1, size=n_chunks, dtype=np.int64)
    return [np.random.default_rng(int(s)) for s in seeds]


def block_grouping(shape: tuple[int, ...], axis: int, block: int, block_2d: bool) -> Granularity:
    """Blocks of `block` along `axis`, or block × block tiles of a 2-D array."""
    if not isinstance(block_2d, (bool, np.bool_)):
        raise TypeError(f"block_2d must be True or False, got {block_2d!r}")
    if isinstance(axis, (bool, np.bool_)) or not isinstance(axis, (int, np.integer)):
        raise TypeError(f"axis must be an integer, got {axis!r}")
    if block_2d:
        if len(shape) != 2:
            raise ValueError(f"16×16 weight blocks need a 2-D array, got shape {shape}")
        return Granularity("block2d", (block, block))
    if len(shape) == 0:
        raise ValueError("block quantization needs an array with at least one axis")
    if not -len(shape) <= axis < len(shape):
        raise ValueError(f"axis {axis} is out of range for an array of {len(shape)} axes")
    return Granularity("block", (block,), axis)


def scale_layout(grid: np.ndarray, g: Granularity, shape: tuple[int, ...]) -> np.ndarray:
    """Scales from `to_groups` order (block axis last) to x's layout (block axis at `axis`)."""
    if g.kind == "block":
        return np.ascontiguousarray(np.moveaxis(grid.reshape(g.grid_shape(shape)), -1, g.axis % len(shape)))
    return grid.reshape(g.grid_shape(shape))


def scale_groups(scales: np.ndarray, g: Granularity, shape: tuple[int, ...]) -> np.ndarray:
    """Inverse of `scale_layout`: one scale per row of `to_groups`."""
    if g.kind == "block":
        return np.ascontiguousarray(np.moveaxis(scales, g.axis % len(shape), -1)).reshape(-1)
    return scales.reshape(-1)


def float_input(x: Any) -> np.ndarray:
    """`x` as a float32 or float64 array (other dtypes become float32)."""
    arr = formats.as_float_array(x)
    return arr if arr.dtype in (np.float32, np.float64) else arr.astype(np.float32)

