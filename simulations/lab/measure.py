"""What the recipe lab measures, accumulated chunk by chunk: a tensor's own statistics, each recipe's
error metrics, the ranking of recipes, and (for the widget) one recipe's histogram and error map.

Error metrics of a recipe on a tensor x with dequantized x̂ (`RecipeResult`), over the finite
elements of x (a NaN or Inf input has no error to measure; the stats count them):

- `rms_rel_err` = ‖x̂ − x‖₂ / ‖x‖₂ and `sqnr_db` = 10·log10(Σx² / Σ(x̂ − x)²), by
  `simulations.scaling.metrics`' formula: an exact result has error 0 and SQNR +inf (written "inf" in strict
  JSON); a zero tensor with an error has relative error +inf and SQNR -inf; a NaN in x̂ makes both NaN.
- `max_abs_err` = max |x̂ − x|.
- `clipped_frac` = share of the elements whose magnitude, as the cast sees it (|x| divided by its
  group's decode scale; in the Hadamard basis for RHT recipes), lies beyond the rounding bin of the
  element format's largest finite value (`metrics.clips`): the cast saturated it (or, for a 16-bit
  cast, overflowed it to Inf) instead of rounding it. Elements under a zero or NaN scale never clip.
- `zero_frac` = share of the elements that were non-zero and came back as exactly zero (flushed):
  x ≠ 0 and x̂ = 0, counted where the cast happens (in the Hadamard basis for RHT recipes, where an
  inverse-transformed value is almost never exactly 0).
- `bits_per_element` from `Recipe.bits_per_element` (scales included).

Both fractions are over all elements of the tensor. Sums are taken per row and accumulated exactly
(`ExactSum`), so every figure is the same whatever the chunk size or executor. Sums of squares are
taken of the values divided by a power of two, 2^e with e the exponent of the tensor's amax
(`scale_log2`, known after the first pass): an exact rescaling, so the figures of an ordinary tensor
are the same bits as without it, while an FP64 tensor of 1e300 (whose squares overflow float64) or of
1e-300 (whose squares underflow to 0) still gets its true ratios instead of NaN or a false "exact".

Two paths, one report. The numpy code of this module is the readable reference; where the codec's
switch sends a chunk to the compiled path (`formats.codec.compiled_kernels_for`: LOWPREC_CODEC,
numba installed; `compiled_metrics`), `_kernels` computes the same per-row sums, maxima and counts in
one pass per recipe over its codes and block scales (`recipes.block_layout`), or with the quantizer
inside the pass for scaled casts and ocp NVFP4 (`recipes.fused_cast`), bit for bit the numpy
numbers (`tests/test_lab_kernels.py`, and the whole report against the one frozen before the
kernels, `tests/test_lab_frozen.py`). Statistics (`TensorStats`) over the finite
elements: amax, RMS, mean, standard deviation and *excess* kurtosis m4 / m2² − 3 (population moments:
0 for a normal distribution, 3 for a Laplace, large for heavy tails; None for a constant tensor),
the share of exact zeros and the count of non-finite values, and the outlier channels: the channels
are the last axis's indices (input channels of a (out, in) weight, features of a (tokens, features)
activation); a channel is an *outlier* when its RMS exceeds OUTLIER_FACTOR = 6 times the median
channel RMS (None for a tensor with fewer than two axes).

Ranking (`rank_results`): by `rms_rel_err` ascending (NaN last), ties by fewer bits per element, then
by name; a recipe is on the Pareto front when no other recipe has both fewer-or-equal bits and a
smaller-or-equal error, one of them strictly. Over a whole file (`file_ranking`) each recipe's errors
are pooled — ‖x̂ − x‖ / ‖x‖ over every tensor it applied to, as one vector — and bits are averaged
per element; recipes that did not apply to every tensor rank after those that did (each such row
carries a `note` saying which tensors it missed and why it ranks there).

Flags (`Flag`, `tensor_flags`) mark what a number alone would hide: non-finite elements left out,
a tensor with no finite element at all (no recipe is measured on it), an amax beyond or below the
FP32 range every recipe's scales and casts live in, and no usable recipe — a recipe is *usable* on
a tensor when its error is finite and below 1 (`usable_error`; storing zeros gives exactly 1), and
the best recipe (`best_of`) is the first usable one of the ranking, else none.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, Sequence

import numpy as np

from lowprec import formats
from lowprec.formats import Format, codec

from ..scaling.metrics import _ratio_metrics, clips, overflow_threshold
from .recipes import BlockLayout, FusedCast, QuantizedChunk, Recipe

__all__ = ["ChunkSignal", "ExactSum", "FLAGS", "Flag", "OUTLIER_FACTOR", "RecipeDetail", "RecipeResult", "RecipeSums",
           "StatsSums", "TensorStats", "best_of", "file_ranking", "pareto_front", "rank_results", "scale_log2",
           "tensor_flags", "usable_error"]

OUTLIER_FACTOR = 6.0
#: histogram bins per binade, and the log2 range they cover (magnitudes outside go to the end bins)
BINS_PER_BINADE = 8
LOG2_LO, LOG2_HI = -160, 140
#: the per-block error map has at most this many cells along each axis
MAP_CELLS = 64


class ExactSum:
    """A sum of floats that does not depend on their grouping: each chunk adds its per-row sums
    (numpy sums each row the same way whatever the chunk), accumulated exactly (Shewchuk's
    partials, as `math.fsum`), so a tensor's totals are the same for every chunk size and executor.
    Non-finite terms are summed apart (they make the total Inf or NaN)."""

    def __init__(self) -> None:
        self.partials: list[float] | np.ndarray = []
        self.special = 0.0

    def add(self, values: np.ndarray, compiled: bool = False) -> None:
        """Add each of `values`; `compiled`: by the compiled twin of the loop (`_kernels.exact_grow`)."""
        v = np.asarray(values, dtype=np.float64).reshape(-1)
        fin = np.isfinite(v)
        if not fin.all():
            self.special += float(v[~fin].sum())
            v = v[fin]
        if compiled and v.size:  # the partials are kept as an array between compiled adds
            from . import _kernels

            n = len(self.partials)
            buf = np.empty(n + v.size)
            buf[:n] = self.partials
            self.partials = buf[:_kernels.exact_grow(buf, n, v)]
            return
        if not isinstance(self.partials, list):
            self.partials = [float(p) for p in self.partials]
        partials = self.partials
        for x in v.tolist():
            i = 0
            for y in partials:
                if abs(x) < abs(y):
                    x, y = y, x
                hi = x + y
                lo = y - (hi - x)
                if lo:
                    partials[i] = lo
                    i += 1
                x = hi
            partials[i:] = [x]

    @property
    def value(self) -> float:
        total = math.fsum(self.partials)
        return total + self.special if self.special else total


def _nanmax(a: float, b: float) -> float:
    """max that keeps a NaN (Python's max drops it depending on the order)."""
    if math.isnan(a) or math.isnan(b):
        return float("nan")
    return max(a, b)


def compiled_metrics(x: np.ndarray) -> ModuleType | None:
    """The compiled metric kernels (`_kernels`) when the codec's switch sends an array of x's size
    to the compiled path (`formats.codec.compiled_kernels_for`: LOWPREC_CODEC, numba present) and x
    is a 2-D float32/float64 chunk; None: the numpy code below runs (the reference)."""
    if x.ndim != 2 or x.dtype not in (np.float32, np.float64) or codec.compiled_kernels_for(x.size) is None:
        return None
    from . import _kernels

    return _kernels


def _finite_mask(x: np.ndarray) -> np.ndarray | None:
    """None when every element is finite (the common case, no masking), else the mask."""
    fin = np.isfinite(x)
    return None if fin.all() else fin


def scale_log2(amax: float) -> int:
    """e with amax = m · 2^e, 0.5 ≤ m < 1 (0 for a zero or non-finite amax): values divided by 2^e
    are at most 1, so their squares neither overflow nor (for any FP32 tensor) underflow."""
    if not math.isfinite(amax) or amax <= 0:
        return 0
    return math.frexp(amax)[1]


def _descale(x: np.ndarray, e: int) -> np.ndarray:
    """x / 2^e, exactly (a new array)."""
    return np.ldexp(x, -e) if e else np.array(x, dtype=np.float64, copy=True)


def _rescale(value: float, e2: int) -> float:
    """value · 2^e2 as a float (±inf where it overflows)."""
    with np.errstate(over="ignore"):
        return float(np.ldexp(value, e2))


# ------------------------------------------------------------------------------------------------
# the tensor's own statistics
# ------------------------------------------------------------------------------------------------


@dataclass
class TensorStats:
    numel: int
    amax: float
    rms: float
    mean: float
    std: float
    kurtosis: float | None  # excess kurtosis; None for a constant (or empty) tensor
    zero_frac: float  # exact zeros among all elements
    nonfinite: int  # NaN and ±Inf elements (left out of every other figure)
    channels: int | None  # the last axis's length (None below two axes)
    outlier_channels: int | None

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class StatsSums:
    """Pass 1 (`add_first`): counts, Σx and amax; pass 2 (`add_second`): Σx², per-channel Σx² and
    the central moments about the pass-1 mean, each of the values divided by 2^scale_log2(amax)."""

    cols: int
    has_channels: bool
    numel: int = 0
    finite: int = 0
    zeros: int = 0
    total: ExactSum = field(default_factory=ExactSum)
    sumsq: ExactSum = field(default_factory=ExactSum)
    amax: float = 0.0
    col_sumsq: np.ndarray | None = None
    col_count: np.ndarray | None = None
    m2: ExactSum = field(default_factory=ExactSum)
    m4: ExactSum = field(default_factory=ExactSum)

    def add_first(self, x: np.ndarray) -> None:
        k = compiled_metrics(x)
        if k is not None:
            xc = np.ascontiguousarray(x)
            rows = np.empty(x.shape[0])
            finite, zeros, amax = k.stats_first(xc, 0, x.shape[0], rows)
            self.numel += x.size
            self.finite += int(finite)
            self.zeros += int(zeros)
            self.total.add(rows, compiled=True)
            if x.size:
                self.amax = max(self.amax, float(amax))
            return
        fin = _finite_mask(x)
        xf = x if fin is None else np.where(fin, x, 0.0)
        x64 = xf.astype(np.float64)
        self.numel += x.size
        self.finite += x.size if fin is None else int(fin.sum())
        self.zeros += int(np.count_nonzero(x == 0))
        with np.errstate(over="ignore"):
            self.total.add(x64.sum(axis=1))
        if x.size:
            self.amax = max(self.amax, float(np.abs(xf).max()))

    @property
    def mean(self) -> float:
        return self.total.value / self.finite if self.finite else 0.0

    @property
    def scale_log2(self) -> int:
        """The exponent the second pass divides by (`scale_log2` of the finite amax)."""
        return scale_log2(self.amax)

    def add_second(self, x: np.ndarray) -> "ChunkSignal":
        """Pass 2 on rows x; returns the chunk's `ChunkSignal` (each row's Σ(x / 2^scale_log2)² over
        its finite elements, the signal every recipe's sums share)."""
        k = compiled_metrics(x)
        if k is not None:
            return self._add_second_compiled(k, np.ascontiguousarray(x))
        fin = _finite_mask(x)
        e = self.scale_log2
        xs = _descale(x.astype(np.float64), e)
        if fin is not None:
            xs = np.where(fin, xs, 0.0)
        sq = xs * xs
        row_sumsq = sq.sum(axis=1)
        self.sumsq.add(row_sumsq)
        if self.has_channels:
            cs = sq.sum(axis=0)
            cc = (np.full(x.shape[1], x.shape[0], np.int64) if fin is None else fin.sum(axis=0))
            self.col_sumsq = cs if self.col_sumsq is None else self.col_sumsq + cs
            self.col_count = cc if self.col_count is None else self.col_count + cc
        with np.errstate(over="ignore", invalid="ignore"):
            d = _descale(x.astype(np.float64) - self.mean, e)
        if fin is not None:
            d = np.where(fin, d, 0.0)
        d2 = d * d
        self.m2.add(d2.sum(axis=1))
        self.m4.add((d2 * d2).sum(axis=1))
        return ChunkSignal(x, e, row_sumsq, fin)

    def _add_second_compiled(self, k: ModuleType, x: np.ndarray) -> "ChunkSignal":
        rows, cols = x.shape
        sumsq, m2, m4 = np.empty(rows), np.empty(rows), np.empty(rows)
        width = cols if self.has_channels else 0
        cs, cc = np.zeros(width), np.zeros(width, np.int64)
        with np.errstate(over="ignore", invalid="ignore"):
            e = self.scale_log2
            finite = k.stats_second(x, 0, rows, e, k.descale_factor(e), self.mean, sumsq, m2, m4, cs, cc,
                                    self.has_channels)
        self.sumsq.add(sumsq, compiled=True)
        if self.has_channels:
            self.col_sumsq = cs if self.col_sumsq is None else self.col_sumsq + cs
            self.col_count = cc if self.col_count is None else self.col_count + cc
        self.m2.add(m2, compiled=True)
        self.m4.add(m4, compiled=True)
        return ChunkSignal(x, e, sumsq, None if finite == x.size else _UNKNOWN)

    def result(self) -> TensorStats:
        n = self.finite
        e = self.scale_log2
        m2 = self.m2.value / n if n else 0.0  # of the descaled values
        kurt = (self.m4.value / n) / (m2 * m2) - 3.0 if n and m2 > 0 else None
        channels = outliers = None
        if self.has_channels and self.col_sumsq is not None and self.col_count is not None:
            with np.errstate(invalid="ignore", divide="ignore"):
                rms_c = np.sqrt(np.where(self.col_count > 0, self.col_sumsq / np.maximum(self.col_count, 1), 0.0))
            median = float(np.median(rms_c))
            channels = int(self.cols)
            outliers = int(np.count_nonzero((rms_c > OUTLIER_FACTOR * median) & (rms_c > 0)))
        elif self.has_channels:
            channels, outliers = int(self.cols), 0
        return TensorStats(
            numel=self.numel, amax=self.amax, rms=_rescale(math.sqrt(self.sumsq.value / n), e) if n else 0.0,
            mean=self.mean, std=_rescale(math.sqrt(m2), e), kurtosis=kurt,
            zero_frac=self.zeros / self.numel if self.numel else 0.0, nonfinite=self.numel - self.finite,
            channels=channels, outlier_channels=outliers)


# ------------------------------------------------------------------------------------------------
# a recipe's error
# ------------------------------------------------------------------------------------------------


@dataclass
class RecipeResult:
    """One recipe on one tensor (metrics None when it does not apply: `skipped` says why)."""

    recipe: str
    rms_rel_err: float | None
    sqnr_db: float | None
    max_abs_err: float | None
    clipped_frac: float | None
    zero_frac: float | None
    bits_per_element: float | None
    skipped: str | None = None
    # pooled over a file by `file_ranking`; not written. signal = Σx², error = Σ(x̂ − x)² (±inf
    # where they overflow float64); the same sums of the values divided by 2^scale_log2, exact
    signal: float = 0.0
    error: float = 0.0
    clipped: int = 0
    zeroed: int = 0
    numel: int = 0
    signal_scaled: float = 0.0
    error_scaled: float = 0.0
    scale_log2: int = 0

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"recipe": self.recipe, "rms_rel_err": self.rms_rel_err, "sqnr_db": self.sqnr_db,
                               "max_abs_err": self.max_abs_err, "clipped_frac": self.clipped_frac,
                               "zero_frac": self.zero_frac, "bits_per_element": self.bits_per_element}
        if self.skipped is not None:
            out["skipped"] = self.skipped
        return out

    @classmethod
    def not_applicable(cls, recipe: str, reason: str) -> "RecipeResult":
        return cls(recipe, None, None, None, None, None, None, reason)


def ratio_metrics(signal: float, error: float) -> tuple[float, float]:
    """(RMS relative error, SQNR dB) of summed squares, by `simulations.scaling.metrics`' formula."""
    rel, sq = _ratio_metrics(np.array([signal]), np.array([error]))
    return float(rel[0]), float(sq[0])


@dataclass
class RecipeSums:
    """Σx², Σ(x̂ − x)² (of the values divided by 2^scale_log2), max |x̂ − x|, clipped and flushed
    counts of one recipe, chunk by chunk."""

    recipe: Recipe
    signal: ExactSum = field(default_factory=ExactSum)
    error: ExactSum = field(default_factory=ExactSum)
    max_abs: float = 0.0
    clipped: int = 0
    zeroed: int = 0
    numel: int = 0
    scale_log2: int = 0  # the exponent the sums' values are divided by (the tensor's, `scale_log2`)

    def add(self, x: np.ndarray, q: QuantizedChunk, chunk: "ChunkSignal | None" = None, split: bool = True) -> None:
        """Rows `x` and the recipe's result on them; `chunk` is `ChunkSignal(x, scale_log2)`, shared
        by every recipe of the chunk (made here when not given); `split`: the compiled kernels split
        the rows over the codec's threads (the runner, which runs recipes side by side, says no)."""
        c = ChunkSignal(x, self.scale_log2) if chunk is None else chunk
        if c.scale_log2 != self.scale_log2:
            raise ValueError(f"the chunk is scaled by 2^{c.scale_log2}, the sums by 2^{self.scale_log2}")
        k = compiled_metrics(x)
        if k is not None and q.fused is not None and self._add_fused(k, np.ascontiguousarray(x), q.fused, c, split):
            return
        # (a single block of 16 under an RHT: numpy's product of one row sums in another order)
        layout = (q.layout if k is not None and q.cast_in.shape == x.shape and (q.hadamard is None or x.size > 16)
                  else None)
        if k is not None and layout is not None:
            self._add_compiled(k, np.ascontiguousarray(x), q, layout, c, split)
            return
        with np.errstate(invalid="ignore", over="ignore"):
            d = q.x_hat - c.x64
            if c.finite is not None:
                d = np.where(c.finite, d, 0.0)
            self.signal.add(c.row_sumsq)
            if d.size:
                self.max_abs = _nanmax(self.max_abs, float(np.abs(d).max()))
            if self.scale_log2:
                d = np.ldexp(d, -self.scale_log2, out=d)
            self.error.add((d * d).sum(axis=1))
        self.numel += x.size
        self.clipped += int(np.count_nonzero(clipped_mask(q, self.recipe.fmt)))
        cin = q.cast_in
        self.zeroed += int(np.count_nonzero((cin != 0) & np.isfinite(cin) & (q.cast_out == 0)))

    def _add_fused(self, k: ModuleType, x: np.ndarray, f: FusedCast, c: "ChunkSignal", split: bool = True) -> bool:
        """`add` by the fused kernel, the quantizer included (`recipes.fused_cast`); False, with
        nothing added, where the policy refuses an element (the numpy quantizer raises its error)."""
        rows = x.shape[0]
        err = np.empty(rows)
        edge, edge_overflows = overflow_threshold(self.recipe.fmt)
        e = self.scale_log2
        factor, all_finite = k.descale_factor(e), c.finite is None
        h_inv = _NO_MATRIX if f.hadamard is None else np.ascontiguousarray(np.asarray(f.hadamard, np.float64).T)

        def part(span: tuple[int, int]) -> tuple[float, bool, int, int, bool]:
            return f.kernel(x, f.src, f.a, f.s, f.br, f.bc, f.divide, f.round32, f.table, h_inv, edge, edge_overflows,
                            e, factor, all_finite, span[0], span[1], err, _NO_FLAT, _NO_CODES)

        with np.errstate(invalid="ignore", over="ignore"):  # rows are independent: any split over threads
            parts = codec.map_on_threads(part, _row_spans(rows, x.size) if split else [(0, rows)])
        if any(p[4] for p in parts):
            return False
        self._add_parts(x, err, parts, c)
        return True

    def _add_parts(self, x: np.ndarray, err: np.ndarray, parts: Sequence[tuple[Any, ...]], c: "ChunkSignal") -> None:
        """Add a chunk's kernel results: row error sums and each part's (max, NaN, clipped, flushed)."""
        self.signal.add(c.row_sumsq, compiled=True)
        if x.size:
            for p in parts:
                self.max_abs = _nanmax(self.max_abs, math.nan if p[1] else float(p[0]))
        self.error.add(err, compiled=True)
        self.numel += x.size
        self.clipped += sum(int(p[2]) for p in parts)
        self.zeroed += sum(int(p[3]) for p in parts)

    def _add_compiled(self, k: ModuleType, x: np.ndarray, q: QuantizedChunk, layout: BlockLayout,
                      c: "ChunkSignal", split: bool = True) -> None:
        """`add` by the compiled kernel (the same numbers: see `_kernels`)."""
        rows = x.shape[0]
        err = np.empty(rows)
        edge, edge_overflows = overflow_threshold(self.recipe.fmt)
        h_inv = _NO_MATRIX if q.hadamard is None else np.ascontiguousarray(np.asarray(q.hadamard, np.float64).T)
        cin = np.ascontiguousarray(q.cast_in)
        codes = np.ascontiguousarray(q.result.codes)

        e = self.scale_log2
        factor, all_finite = k.descale_factor(e), c.finite is None

        def part(span: tuple[int, int]) -> tuple[float, bool, int, int]:
            return k.recipe_sums(x, codes, layout.table, layout.scales, layout.br, layout.bc, layout.round32, cin,
                                 h_inv, edge, edge_overflows, e, factor, all_finite, span[0], span[1], err,
                                 _NO_FLAT)

        with np.errstate(invalid="ignore", over="ignore"):
            parts = codec.map_on_threads(part, _row_spans(rows, x.size) if split else [(0, rows)])
        self._add_parts(x, err, parts, c)

    def result(self, bits: float) -> RecipeResult:
        signal, error = self.signal.value, self.error.value
        rel, sq = ratio_metrics(signal, error)
        n = self.numel
        e2 = 2 * self.scale_log2
        return RecipeResult(self.recipe.name, rel, sq, self.max_abs, self.clipped / n if n else 0.0,
                            self.zeroed / n if n else 0.0, bits, None, _rescale(signal, e2), _rescale(error, e2),
                            self.clipped, self.zeroed, n, signal, error, self.scale_log2)


def scaled_magnitudes(q: QuantizedChunk) -> np.ndarray:
    """|value| / decode scale of each element entering the cast (NaN where the scale is 0 or NaN)."""
    s = q.decode_scales
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where((s > 0) & np.isfinite(s), np.abs(q.cast_in.astype(np.float64)) / np.where(s > 0, s, 1.0),
                        np.nan)


def clipped_mask(q: QuantizedChunk, fmt: Format) -> np.ndarray:
    """Finite elements that the cast saturated (see the module docstring): `scaled_magnitudes`
    beyond the format's edge, where the input and its scale are finite and the scale positive."""
    s = q.decode_scales
    cin = q.cast_in
    with np.errstate(divide="ignore", invalid="ignore"):
        mag = np.abs(cin.astype(np.float64))
        mag /= s
    return clips(mag, fmt) & (s > 0) & np.isfinite(s) & np.isfinite(cin)


_NO_MATRIX = np.zeros((0, 0))
_NO_FLAT = np.zeros(0)
_NO_CODES = np.zeros(0, np.uint16)
_UNKNOWN = object()  # a ChunkSignal's finite mask not known yet


def _row_spans(rows: int, size: int) -> list[tuple[int, int]]:
    """Row ranges of a chunk, one per codec thread (`codec.threads_for` its size)."""
    n = max(1, min(rows, codec.threads_for(size)))
    step = -(-rows // n)
    return [(lo, min(rows, lo + step)) for lo in range(0, rows, step)] or [(0, 0)]


class ChunkSignal:
    """What every recipe's sums need from one chunk of rows: the rows as float64, the finite mask
    (None when all are finite) and each row's Σ(x / 2^scale_log2)² over its finite elements
    (`row_sumsq`: given when known, as `StatsSums.add_second` returns it). The float64 rows and the
    mask are formed when first read (the compiled metrics read x itself)."""

    def __init__(self, x: np.ndarray, scale_log2: int = 0, row_sumsq: np.ndarray | None = None,
                 finite: Any = _UNKNOWN) -> None:
        self.x = x
        self.scale_log2 = scale_log2
        if finite is not _UNKNOWN:  # None when every element is finite, else the mask (_UNKNOWN: form it)
            self.finite = finite
        if row_sumsq is None:
            masked = self.x64 if self.finite is None else np.where(self.finite, self.x64, 0.0)
            if scale_log2:
                masked = np.ldexp(masked, -scale_log2)
            with np.errstate(over="ignore"):
                row_sumsq = (masked * masked).sum(axis=1)
        self.row_sumsq = row_sumsq

    @functools.cached_property
    def finite(self) -> np.ndarray | None:
        return _finite_mask(self.x)

    @functools.cached_property
    def x64(self) -> np.ndarray:
        return self.x.astype(np.float64)


# ------------------------------------------------------------------------------------------------
# ranking
# ------------------------------------------------------------------------------------------------


def _key(r: RecipeResult) -> tuple[int, float, float, str]:
    """Sort key: error ascending (+inf after every finite error, NaN or absent last), then bits, then name."""
    e = r.rms_rel_err
    bad = e is None or math.isnan(e)
    return (1 if bad else 0, math.inf if bad or e is None else e,
            math.inf if r.bits_per_element is None else r.bits_per_element, r.recipe)


def rank_results(results: Sequence[RecipeResult]) -> list[str]:
    """Names of the applicable recipes, best first (see the module docstring)."""
    return [r.recipe for r in sorted((r for r in results if r.skipped is None), key=_key)]


def pareto_front(results: Sequence[RecipeResult]) -> list[str]:
    """Recipes no other beats on both bits and error (NaN errors are never on it), in rank order."""
    ok = [r for r in results if r.skipped is None and r.rms_rel_err is not None and not math.isnan(r.rms_rel_err)]
    front = []
    for r in ok:
        assert r.rms_rel_err is not None and r.bits_per_element is not None
        dominated = any(o is not r and o.bits_per_element is not None and o.rms_rel_err is not None
                        and o.bits_per_element <= r.bits_per_element and o.rms_rel_err <= r.rms_rel_err
                        and (o.bits_per_element < r.bits_per_element or o.rms_rel_err < r.rms_rel_err)
                        for o in ok)
        if not dominated:
            front.append(r.recipe)
    order = rank_results(results)
    return [n for n in order if n in front]


def usable_error(e: float | None) -> bool:
    """Whether an RMS relative error says the recipe kept something of the tensor: finite and below
    1 (storing zeros gives exactly 1; NaN and +inf say nothing was measured or everything lost)."""
    return e is not None and math.isfinite(e) and e < 1.0


def best_of(results: Sequence[RecipeResult]) -> str | None:
    """The best usable recipe of one tensor (first of `rank_results` with a usable error), or None."""
    by_name = {r.recipe: r for r in results}
    return next((n for n in rank_results(results) if usable_error(by_name[n].rms_rel_err)), None)


def _pooled(rs: Sequence[RecipeResult]) -> tuple[float, float]:
    """(Σx², Σ(x̂ − x)²) over several tensors, each tensor's scaled sums brought to the largest
    exponent among them (exact unless a term is negligible), so huge and tiny tensors pool without
    overflow; the ratio is that of the plain sums."""
    top = max(r.scale_log2 for r in rs)
    signal = math.fsum(_rescale(r.signal_scaled, 2 * (r.scale_log2 - top)) for r in rs)
    error = math.fsum(_rescale(r.error_scaled, 2 * (r.scale_log2 - top)) for r in rs)
    return signal, error


def _missed(missed: Sequence[tuple[str, str]], shown: int = 3) -> str:
    parts = [f"{name} ({why})" if name else why for name, why in missed[:shown]]
    more = f" and {len(missed) - shown} more" if len(missed) > shown else ""
    return "; ".join(parts) + more


def file_ranking(per_tensor: Sequence[Sequence[RecipeResult]], recipes: Sequence[str],
                 names: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """One row per recipe with its errors pooled over the tensors it applied to, best first, each
    with a `note` on its place (which tensors a partial recipe missed and why; a NaN error);
    `names` are the tensors' names for the notes."""
    n_tensors = len(per_tensor)
    labels = list(names) if names is not None else [f"tensor {i + 1}" for i in range(n_tensors)]
    pooled: list[tuple[bool, RecipeResult, int, str]] = []
    for name in recipes:
        pairs = [(label, r) for label, results in zip(labels, per_tensor) for r in results if r.recipe == name]
        rs = [r for _, r in pairs if r.skipped is None]
        missed = [(label, r.skipped) for label, r in pairs if r.skipped is not None]
        numel = sum(r.numel for r in rs)
        rel, sq = ratio_metrics(*_pooled(rs)) if rs else (float("nan"), float("nan"))
        max_abs = 0.0
        for r in rs:
            max_abs = _nanmax(max_abs, float(r.max_abs_err if r.max_abs_err is not None else 0.0))
        bits = sum((r.bits_per_element or 0.0) * r.numel for r in rs) / numel if numel else None
        row = RecipeResult(name, rel if rs else None, sq if rs else None, max_abs if rs else None,
                           sum(r.clipped for r in rs) / numel if numel else None,
                           sum(r.zeroed for r in rs) / numel if numel else None, bits,
                           None if rs else "applies to no tensor")
        complete = bool(rs) and len(rs) == n_tensors
        if not rs:
            note = f"applies to no tensor: {_missed(missed)}" if missed else "applies to no tensor"
        elif not complete:
            note = (f"applies to {len(rs)} of {n_tensors} tensors, so it ranks after every recipe that applies to "
                    f"all of them (an error pooled over fewer tensors is not comparable); not to {_missed(missed)}")
        elif math.isnan(rel):
            note = "its pooled error is NaN (a NaN or infinite scale on some tensor): ranked after every number"
        else:
            note = ""
        pooled.append((complete, row, len(rs), note))
    pooled.sort(key=lambda t: (not t[0], t[1].skipped is not None, _key(t[1])))
    front = set(pareto_front([row for complete, row, _, _ in pooled if complete]))
    out = []
    for rank, (complete, row, count, note) in enumerate(pooled, start=1):
        d = row.to_dict()
        d.update({"rank": rank, "tensors": count, "complete": complete, "pareto": row.recipe in front, "note": note})
        out.append(d)
    return out


# ------------------------------------------------------------------------------------------------
# flags: what a number alone would hide
# ------------------------------------------------------------------------------------------------

_F32 = np.finfo(np.float32)

#: every flag a tensor can carry: code → what it means (a legend for pages and reports)
FLAGS: dict[str, str] = {
    "nonfinite": "some elements are NaN or ±Inf; they are left out of every figure",
    "no_finite": "every element is NaN or ±Inf; there is no error to measure, so no recipe is measured",
    "beyond_fp32": "the amax is beyond the FP32 range that every recipe's casts and scales live in",
    "below_fp32": "the amax is below the smallest FP32 subnormal: every recipe flushes the tensor to zero",
    "no_usable_recipe": "no recipe has a finite error below 1 (storing zeros gives 1): none is named best",
}


@dataclass(frozen=True)
class Flag:
    """Something about a tensor that its numbers alone would hide: a FLAGS code and the sentence
    for this tensor."""

    code: str
    message: str

    def __post_init__(self) -> None:
        if self.code not in FLAGS:
            raise ValueError(f"unknown flag {self.code!r}; flags: {', '.join(FLAGS)}")

    def to_dict(self) -> dict[str, Any]:
        return {"code": self.code, "message": self.message}


def tensor_flags(stats: TensorStats, results: Sequence[RecipeResult]) -> list[Flag]:
    """The flags of one analysed tensor (see FLAGS)."""
    out: list[Flag] = []
    if stats.numel and stats.nonfinite == stats.numel:
        return [Flag("no_finite", f"every one of its {stats.numel} elements is NaN or ±Inf: there is no error "
                                  "to measure, so no recipe is measured")]
    if stats.nonfinite:
        out.append(Flag("nonfinite", f"{stats.nonfinite} of its {stats.numel} elements are NaN or ±Inf; they are "
                                     "left out of every figure"))
    if stats.amax > float(_F32.max):
        out.append(Flag("beyond_fp32", f"its amax {stats.amax:.4g} is beyond FP32's largest value "
                                       f"{float(_F32.max):.4g}: every recipe's casts and scales overflow"))
    elif 0 < stats.amax < float(_F32.smallest_subnormal):
        out.append(Flag("below_fp32", f"its amax {stats.amax:.4g} is below FP32's smallest subnormal "
                                      f"{float(_F32.smallest_subnormal):.4g}: every recipe flushes it to zero"))
    applied = [r for r in results if r.skipped is None]
    if applied and best_of(results) is None:
        out.append(Flag("no_usable_recipe", "no recipe has a finite error below 1 on it (storing zeros gives 1): "
                                            "none is named best"))
    return out


# ------------------------------------------------------------------------------------------------
# one recipe in detail: histogram on a log2 axis with the format's grid, per-block error map
# ------------------------------------------------------------------------------------------------


def _log2_bins(values: np.ndarray) -> np.ndarray:
    """Histogram counts of log2 of positive finite values over the fixed bins."""
    n_bins = (LOG2_HI - LOG2_LO) * BINS_PER_BINADE
    v = values[np.isfinite(values) & (values > 0)]
    if not v.size:
        return np.zeros(n_bins, np.int64)
    idx = np.floor((np.log2(v) - LOG2_LO) * BINS_PER_BINADE).astype(np.int64)
    return np.bincount(np.clip(idx, 0, n_bins - 1), minlength=n_bins)


def format_grid(fmt: Format) -> tuple[list[float], str]:
    """log2 of the positive finite values of `fmt` when it has at most 64 of them, else the powers
    of two between its smallest and largest (with which of the two it is)."""
    if fmt.bits <= 8:
        codes = np.arange(1 << fmt.bits, dtype=np.uint8 if fmt.bits <= 8 else np.uint16)
        with np.errstate(invalid="ignore"):
            vals = formats.decode(codes, fmt).astype(np.float64)
        pos = np.unique(vals[np.isfinite(vals) & (vals > 0)])
        if pos.size <= 64:
            return [float(v) for v in np.log2(pos)], "values"
    lo = math.floor(math.log2(fmt.smallest_subnormal))
    hi = math.floor(math.log2(fmt.max))
    return [float(e) for e in range(lo, hi + 1)], "binades"


def flush_edge(fmt: Format) -> float:
    """Largest magnitude that rounds to zero under the recipe's rounding (the upper edge of code 0's
    rounding bin, `formats.rounding_bin`)."""
    return float(formats.rounding_bin(fmt, 0, formats.policy_for("ocp", fmt)).hi)


@dataclass
class RecipeDetail:
    """The drawing data of one recipe on one tensor (computed here, drawn by the app)."""

    recipe: str
    element: str
    # histogram of log2 |x| (the tensor itself) and of log2 of the magnitudes as the cast sees them
    # (|x| / decode scale); `bin_lo` are the bins' left edges (log2), trimmed to the occupied range
    bin_lo: list[float]
    bin_width: float
    counts_input: list[int]
    counts_scaled: list[int]
    zeros: int  # exact zeros (not on a log axis)
    grid_log2: list[float]  # the element format's values (or binades), log2
    grid_kind: str  # "values" or "binades"
    flush_log2: float  # log2 of the flush edge: below it the cast gives 0
    clip_log2: float  # log2 of the clip edge: beyond it the cast saturates
    # the per-block error map: RMS relative error of each tile of the matrix view
    tile: tuple[int, int]  # (rows, cols) of one cell
    map_rows: int
    map_cols: int
    map_rel_err: list[list[float]]

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class DetailSums:
    """Histogram counts and per-tile squared sums of one recipe, chunk by chunk (of the values
    divided by 2^scale_log2, as `RecipeSums`). With `line`, the tensor is one row (a 1-D tensor
    read in segments) and each chunk's elements follow each other along it."""

    recipe: Recipe
    rows: int
    cols: int
    tile: tuple[int, int]
    scale_log2: int = 0
    line: bool = False
    counts_input: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    counts_scaled: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    zeros: int = 0
    tile_signal: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))
    tile_error: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))

    def __post_init__(self) -> None:
        th, tw = self.tile
        n_bins = (LOG2_HI - LOG2_LO) * BINS_PER_BINADE
        self.counts_input = np.zeros(n_bins, np.int64)
        self.counts_scaled = np.zeros(n_bins, np.int64)
        shape = (-(-self.rows // th), -(-self.cols // tw))
        self.tile_signal = np.zeros(shape)
        self.tile_error = np.zeros(shape)

    def add(self, lo: int, x: np.ndarray, q: QuantizedChunk) -> None:
        """Rows lo.. of the tensor (a chunk starting on a tile boundary); with `line`, its elements
        lo.. (anywhere along the row)."""
        self.counts_input += _log2_bins(np.abs(x.astype(np.float64)))
        self.counts_scaled += _log2_bins(scaled_magnitudes(q))
        self.zeros += int(np.count_nonzero(x == 0))
        th, tw = self.tile
        x64 = x.astype(np.float64)
        with np.errstate(invalid="ignore", over="ignore"):
            d = q.x_hat - x64
        if self.scale_log2:
            x64, d = np.ldexp(x64, -self.scale_log2), np.ldexp(d, -self.scale_log2)
        if self.line:
            self._add_line(lo, x64.reshape(-1), d.reshape(-1))
            return
        col_starts = np.arange(0, self.cols, tw)
        row_starts = np.arange(0, x.shape[0], th)
        sig = np.add.reduceat(np.add.reduceat(x64 * x64, col_starts, axis=1), row_starts, axis=0)
        err = np.add.reduceat(np.add.reduceat(d * d, col_starts, axis=1), row_starts, axis=0)
        r0 = lo // th
        self.tile_signal[r0:r0 + sig.shape[0]] += sig
        self.tile_error[r0:r0 + err.shape[0]] += err

    def _add_line(self, first: int, x64: np.ndarray, d: np.ndarray) -> None:
        """Elements first.. of the one row: each run of them inside one tile is summed into it."""
        tw = self.tile[1]
        to_next = (-first) % tw  # elements before the next tile boundary
        starts = np.unique(np.concatenate([[0], np.arange(to_next, x64.size, tw)])).astype(np.int64)
        starts = starts[starts < x64.size]
        cells = (first + starts) // tw
        with np.errstate(over="ignore", invalid="ignore"):
            np.add.at(self.tile_signal[0], cells, np.add.reduceat(x64 * x64, starts))
            np.add.at(self.tile_error[0], cells, np.add.reduceat(d * d, starts))

    def result(self) -> RecipeDetail:
        fmt = self.recipe.fmt
        grid, kind = format_grid(fmt)
        flush, clip = flush_edge(fmt), overflow_threshold(fmt)[0]
        occupied = np.nonzero(self.counts_input + self.counts_scaled)[0]
        width = 1.0 / BINS_PER_BINADE
        lo_edge = math.log2(flush) if flush > 0 else math.log2(fmt.smallest_subnormal) - 1
        lo_bin = int((math.floor(lo_edge) - 1 - LOG2_LO) * BINS_PER_BINADE)
        hi_bin = int((math.ceil(math.log2(clip)) + 1 - LOG2_LO) * BINS_PER_BINADE)
        if occupied.size:
            lo_bin = min(lo_bin, int(occupied[0]))
            hi_bin = max(hi_bin, int(occupied[-1]) + 1)
        n_bins = (LOG2_HI - LOG2_LO) * BINS_PER_BINADE
        lo_bin, hi_bin = max(0, lo_bin), min(n_bins, hi_bin)
        rel, _ = _ratio_metrics(self.tile_signal.reshape(-1), self.tile_error.reshape(-1))
        rel = rel.reshape(self.tile_signal.shape)
        map_rows, map_cols = (int(n) for n in self.tile_signal.shape)
        return RecipeDetail(
            recipe=self.recipe.name, element=fmt.name,
            bin_lo=[LOG2_LO + i * width for i in range(lo_bin, hi_bin)], bin_width=width,
            counts_input=[int(c) for c in self.counts_input[lo_bin:hi_bin]],
            counts_scaled=[int(c) for c in self.counts_scaled[lo_bin:hi_bin]], zeros=self.zeros,
            grid_log2=grid, grid_kind=kind, flush_log2=math.log2(flush) if flush > 0 else -math.inf,
            clip_log2=math.log2(clip), tile=self.tile, map_rows=map_rows, map_cols=map_cols,
            map_rel_err=[[float(v) for v in row] for row in rel])


def map_tile(recipe: Recipe, rows: int, cols: int) -> tuple[int, int]:
    """The error map's cell: the recipe's scale block (1 × 32 for recipes without one), grown by
    whole blocks until the map has at most MAP_CELLS cells along each axis."""
    br, bc = recipe.block
    if br == 0 or (br, bc) == (1, 1):
        br, bc = 1, min(32, cols)
    th = br * max(1, -(-rows // (br * MAP_CELLS)))
    tw = bc * max(1, -(-cols // (bc * MAP_CELLS)))
    return th, tw
