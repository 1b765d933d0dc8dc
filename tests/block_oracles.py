"""Shared test data for the block-convention tests: named edge blocks (zero, subnormal-only, tiny,
one huge element, NaN / Inf, amax exactly at a power of two, amax one float32 step either side of
the rceil and floor boundaries, signed zeros, grid midpoints) and a seeded wide-range tensor whose
rows span 2^-12 … 2^12, all float32."""

from __future__ import annotations

import numpy as np

F32 = np.float32


def step(v: float, d: int) -> np.float32:
    """The float32 `d` representable steps above (below for d < 0) float32(v) (v > 0)."""
    bits = np.array([v], F32).view(np.uint32).astype(np.int64) + d
    return F32(bits.astype(np.uint32).view(F32)[0])


def edge_blocks(n: int, elem_max: float, grid: np.ndarray | None = None, *, nonfinite: bool = True,
                seed: int = 1) -> tuple[list[str], np.ndarray]:
    """Labelled rows of `n` float32 values; `elem_max` places the rceil boundary (the element's
    largest value times a power of two); `grid` (positive element values) adds a row of midpoints."""
    rng = np.random.default_rng(seed)
    labels: list[str] = []
    rows: list[np.ndarray] = []

    def add(label: str, row: np.ndarray) -> None:
        labels.append(label)
        rows.append(np.asarray(row, F32))

    def base(scale: float = 1.0) -> np.ndarray:
        return (rng.standard_normal(n) * scale).astype(F32)

    add("zero", np.zeros(n, F32))
    add("float32 subnormals only", base(1e-40))
    add("tiny normal (2^-120)", base(2.0**-120))
    add("around 2^-128", base(2.0**-128))
    r = base()
    r[3] = F32(3e38)
    add("one huge element", r)
    if nonfinite:
        r = base()
        r[1] = np.nan
        add("NaN", r)
        r = base()
        r[2] = np.inf
        add("+Inf", r)
        r = base()
        r[2], r[5] = -np.inf, np.nan
        add("-Inf and NaN", r)
        add("all NaN", np.full(n, np.nan, F32))
        r = base()
        r[0] = -np.nan
        add("-NaN", r)
    for k in (-100, -3, 0, 7, 100):
        r = base(2.0**k / 8)
        r[4] = F32(2.0**k)
        add(f"amax 2^{k}", r)
        for d in (-2, -1, 0, 1, 2, 3):
            r = base(2.0**k / 8)
            r[6] = -step(elem_max * 2.0**k, d)
            add(f"amax max·2^{k} {d:+d} steps (rceil boundary)", r)
            r = base(2.0**k / 8)
            r[7] = step(2.0 ** (k + 1), d)
            add(f"amax 2^{k + 1} {d:+d} steps (floor boundary)", r)
    r = base()
    r[:4] = [-0.0, 0.0, -1e-30, 1e-30]
    add("signed zeros and ±1e-30", r)
    if grid is not None:
        g = np.sort(np.asarray(grid, np.float64))
        mids = (g[:-1] + g[1:]) / 2
        vals = np.resize(np.concatenate([mids, -mids]), n)
        vals[0] = elem_max
        add("grid midpoints (ties)", vals)
    return labels, np.stack(rows)


def wide_tensor(block: int, rows: int = 512, cols: int = 1024, seed: int = 0) -> np.ndarray:
    """Seeded float32 normals whose rows are scaled from 2^-12 to 2^12 (log-spaced), each block of
    `block` along a row further scaled by 2^u, u uniform in [-2, 2]."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((rows, cols)) * np.exp2(np.linspace(-12, 12, rows))[:, None]
    x *= np.exp2(rng.uniform(-2, 2, size=(rows, cols // block))).repeat(block, axis=1)
    return x.astype(F32)


def same_float32(a: float, b: float) -> bool:
    """Equal float32 bit patterns, or both NaN (a tensor scale is a Python float: NaN payloads do not
    survive it)."""
    if np.isnan(a) or np.isnan(b):
        return bool(np.isnan(a) and np.isnan(b))
    return bool(np.array([a], F32).view(np.uint32)[0] == np.array([b], F32).view(np.uint32)[0])


def first_mismatches(labels: list[str], want: np.ndarray, got: np.ndarray, limit: int = 3) -> str:
    """Readable description of the first rows that differ (for assertion messages)."""
    bad = np.nonzero((want.reshape(len(labels), -1) != got.reshape(len(labels), -1)).any(axis=1))[0]
    return "; ".join(f"{labels[i]}: want {want.reshape(len(labels), -1)[i][:8].tolist()} "
                     f"got {got.reshape(len(labels), -1)[i][:8].tolist()}" for i in bad[:limit])
