"""Running the recipe lab: each tensor through each recipe in row chunks, tensors mapped over any
`concurrent.futures.Executor`, and the report (strict JSON, CSV, summary lines).

One tensor (`analyze_rows`) takes two passes over its rows, `chunk_elements` elements at a time
(rounded to whole rows, and to multiples of 16 rows when a recipe has 16×16 tiles): the first
measures the statistics' sums and the whole-tensor amaxes some recipes need (`recipes.GlobalAmax`),
the second quantizes each chunk with every applicable recipe and accumulates the error sums
(`measure`). Memory therefore stays at about one chunk's working set (on the compiled path a few
bytes per element of a chunk: the rows, one recipe's codes where its quantizer runs apart, and
row-sized buffers; on the numpy path ≈ 100 bytes per element at the peak, for the float64
temporaries of one recipe) plus what the reader maps: rows read
from `.npy` / `.safetensors` files are copied chunk by chunk, a `.npz` member is streamed from the
archive, a state dict's storage is memory-mapped. A 1-D tensor longer than `limits.LINE_SEGMENT`
elements is read in segments of that many elements (a multiple of every block width), so it is
chunked like a matrix too: its per-row recipes, whose one row is the whole tensor, take the
whole-tensor amax of the first pass (the same codes as one scale per row). A matrix whose single row
is longer than a chunk is one row per chunk. A chunk the machine has no memory for is a one-line
error naming the tensor and the option that lowers it.

Each `TensorReport` carries its flags (`measure.Flag`: non-finite elements, no finite element — then
no recipe is measured on it —, an amax out of FP32's range, no usable recipe) and its best recipe
(`measure.best_of`: the first usable one, else none); the report's ranking over all files leaves
out the tensors with no finite element and explains each partial recipe's place.

Tensors are independent, so `analyze` maps `analyze_task` over them with the executor it is given:
None runs them one after the other in this process; a `ProcessPoolExecutor` (`lowprec analyze
--workers N`) or a Dask `distributed` client's executor (`--scheduler ADDRESS`, the
`lowprec[cluster]` extra; every worker must see the files at the same paths) run them elsewhere. A
task is a `TensorTask` (the file, the tensor's name and where its bytes are, the recipes): each
worker opens the file itself and returns a small `TensorReport`, and `executor.map` keeps the order,
so every executor gives a report identical to the serial one. A pool's workers share the CPUs out
for the codec's threads (`worker_threads`), so N workers do not run N × the codec's threads.
"""

from __future__ import annotations

import contextlib
import csv
import dataclasses
import functools
import io
import math
import os
import re
import threading
from concurrent.futures import Executor, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Sequence

import numpy as np

from lowprec import numtext
from lowprec.formats import codec

from ..scaling.granularity import parse_granularity
from .limits import LIMITS, LINE_SEGMENT, ReadLimits
from .measure import (
    DetailSums,
    Flag,
    RecipeDetail,
    RecipeResult,
    RecipeSums,
    StatsSums,
    TensorStats,
    best_of,
    compiled_metrics,
    file_ranking,
    map_tile,
    pareto_front,
    rank_results,
    tensor_flags,
    usable_error,
)
from .readers import Inventory, LabReadError, RowSource, Skipped, TensorRef, array_source, iter_chunks, open_rows, scan
from .recipes import Family, GlobalAmax, Recipe, parse_recipes, quantize_chunk

__all__ = ["CHUNK_ELEMENTS", "LabReport", "TensorReport", "TensorTask", "analyze", "analyze_arrays",
           "analyze_rows", "analyze_task", "available_cpus", "check_scheduler_address", "init_worker",
           "open_executor", "rows_per_chunk", "worker_count", "worker_threads"]

CHUNK_ELEMENTS = 1 << 20  # elements per chunk (rounded to whole rows)

ProgressFn = Callable[[int, int], None]


@dataclass
class TensorReport:
    """One tensor: where it is, its statistics, each recipe's result, the ranking."""

    name: str
    file: str
    shape: tuple[int, ...]
    dtype: str
    stats: TensorStats
    results: list[RecipeResult]
    ranking: list[str]  # applicable recipes, best first
    pareto: list[str]  # the recipes on the error/bits Pareto front, in rank order
    detail: RecipeDetail | None = None  # one recipe's drawing data, when asked (the widget)
    flags: list[Flag] = field(default_factory=list)  # what the numbers alone would hide (`measure.FLAGS`)
    layout: str = ""  # the pre-quantized layout it came in ("" for a float tensor; `lab.layouts`)
    stored_recipe: str = ""  # the lowprec recipe with its stored codes and scales (pre-quantized tensors)
    audit: Any = None  # `audit.TensorAudit` of a pre-quantized tensor
    product: Any = None  # `product.ProductReport` of a 2-D weight, when asked
    rank_by: str = "tensor"  # "product": `ranking` and `best` follow the product's error (`product.ranking`)

    @property
    def best(self) -> str | None:
        """The first usable recipe of the ranking (`measure.best_of`), None when none is usable; with
        `rank_by` "product", the first of the product's ranking whose product error is usable."""
        if self.rank_by == "product" and self.product is not None and self.product.skipped is None:
            act = self.product.ranked_by
            return next((w for w in self.product.ranking
                         if usable_error(self.product.pair(w, act).rel_err)), None)
        return best_of(self.results)

    @property
    def measured(self) -> bool:
        """Whether the tensor had a finite element, so its recipes were measured."""
        return not any(f.code == "no_finite" for f in self.flags)

    def result(self, recipe: str) -> RecipeResult:
        for r in self.results:
            if r.recipe == recipe:
                return r
        raise ValueError(f"tensor {self.name!r} has no result for recipe {recipe!r}")

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "file": self.file, "shape": list(self.shape), "dtype": self.dtype,
                "stats": self.stats.to_dict(), "results": [r.to_dict() for r in self.results],
                "ranking": self.ranking, "pareto": self.pareto, "best": self.best,
                "flags": [f.to_dict() for f in self.flags], "layout": self.layout or None,
                "stored_recipe": self.stored_recipe or None,
                "audit": None if self.audit is None else self.audit.to_dict(),
                "product": None if self.product is None else self.product.to_dict()}


@dataclass(frozen=True)
class TensorTask:
    """What a worker needs to analyse one tensor (picklable, small)."""

    ref: TensorRef
    recipes: tuple[Recipe, ...]
    chunk_elements: int = CHUNK_ELEMENTS
    detail: str | None = None  # a recipe name whose `RecipeDetail` to compute
    audit: bool = True  # audit a pre-quantized tensor (`audit.audit_tensor`)
    product: Any = None  # a `product.ProductConfig`: measure y = x Wᵀ of a 2-D weight


def rows_per_chunk(cols: int, recipes: Sequence[Recipe], chunk_elements: int, tile_rows: int = 1) -> int:
    """Rows per chunk: about `chunk_elements` elements, a multiple of every recipe's row multiple
    (16 for 16×16 tiles) and of the detail map's tile height."""
    m = math.lcm(tile_rows, *(r.row_multiple for r in recipes)) if recipes else tile_rows
    return max(m, (max(1, chunk_elements) // max(1, cols)) // m * m)


def _line_recipe(recipe: Recipe) -> Recipe:
    """The recipe as it runs on the segments of a 1-D tensor: a per-row scale, whose one row is the
    whole tensor, becomes the per-tensor scale (the same amax, so the same scale and codes)."""
    if recipe.family is Family.SCALED and parse_granularity(recipe.granularity).kind == "row":
        return dataclasses.replace(recipe, granularity="tensor")
    if recipe.second_level == "row":
        # NVFP4's per-row second-level scale: the one row is the whole tensor, so it is the tensor scale
        recipe = dataclasses.replace(recipe, second_level="tensor")
    rows, cols = recipe.block
    if recipe.partial_tiles and rows > 1:
        # a k×k tile of a one-row matrix is padded to one row of k: the same amax, scale and codes as
        # a 1×k block, which is what each segment (a row of the chunk) must get
        return dataclasses.replace(recipe, granularity=f"block{cols}")
    return recipe


def _chunks(source: RowSource, line: bool, step: int) -> Iterator[tuple[int, np.ndarray]]:
    """(first row, or first element with `line`, rows) of each chunk, in order: rows of `step` rows,
    or `step` segments of LINE_SEGMENT elements of a one-row source and then its shorter tail."""
    if not line:
        for lo, hi in iter_chunks(source.rows, step):
            yield lo, source.read(lo, hi)
        return
    n = source.cols
    full = n // LINE_SEGMENT
    for lo, hi in iter_chunks(full, step):
        yield lo * LINE_SEGMENT, source.read_span(lo * LINE_SEGMENT, hi * LINE_SEGMENT).reshape(hi - lo, LINE_SEGMENT)
    if n % LINE_SEGMENT:
        yield full * LINE_SEGMENT, source.read_span(full * LINE_SEGMENT, n)


def analyze_rows(ref: TensorRef, source: RowSource, recipes: Sequence[Recipe],
                 chunk_elements: int = CHUNK_ELEMENTS, detail: str | None = None) -> TensorReport:
    """Statistics and every recipe's result for one tensor (see the module docstring)."""
    try:
        report = _analyze_rows(ref, source, recipes, chunk_elements, detail)
        report.layout, report.stored_recipe = ref.layout, ref.recipe
        return report
    except MemoryError:
        where = f"{ref.path}: tensor {ref.name!r}" if ref.path and ref.name else (ref.path or f"tensor {ref.label!r}")
        raise LabReadError(f"{where} ({'×'.join(str(s) for s in ref.shape) or 'scalar'}): out of memory for chunks "
                           f"of {chunk_elements} elements; lower --chunk-elements (chunk_elements)") from None


def _analyze_rows(ref: TensorRef, source: RowSource, recipes: Sequence[Recipe], chunk_elements: int,
                  detail: str | None) -> TensorReport:
    rows, cols = source.rows, source.cols
    reasons = {r.name: r.check(ref.shape) for r in recipes}
    active = [r for r in recipes if reasons[r.name] is None]
    detail_recipe = next((r for r in active if r.name == detail), None)
    if detail is not None and detail_recipe is None:
        known = {r.name for r in recipes}
        why = reasons.get(detail) if detail in known else "it is not among the recipes run"
        raise ValueError(f"recipe {detail!r} cannot be drawn for tensor {ref.label!r}: {why}")
    line = len(ref.shape) <= 1 and rows == 1 and cols > LINE_SEGMENT
    run = {r.name: _line_recipe(r) if line else r for r in active}  # what quantizes each chunk
    tile = map_tile(detail_recipe, rows, cols) if detail_recipe is not None else (1, 1)
    step = (max(1, chunk_elements // LINE_SEGMENT) if line
            else rows_per_chunk(cols, active, chunk_elements, tile[0]))
    stats = StatsSums(cols=cols, has_channels=len(ref.shape) >= 2)
    amax = GlobalAmax()
    with np.errstate(all="ignore"):  # NaN, Inf and huge inputs are measured, not warned about
        for _, x in _chunks(source, line, step):
            both = _in_parallel(x)
            _each([functools.partial(stats.add_first, x)]
                  + [functools.partial(amax.add, run[r.name], x) for r in active if run[r.name].global_amax], both)
        e = stats.scale_log2
        sums = {r.name: RecipeSums(r, scale_log2=e) for r in active}
        dsums = (DetailSums(detail_recipe, rows, cols, tile, scale_log2=e, line=line)
                 if detail_recipe is not None else None)
        for lo, x in _chunks(source, line, step):
            chunk = stats.add_second(x)
            both = _in_parallel(x)

            def one(r: Recipe, lo: int = lo, x: np.ndarray = x, chunk: Any = chunk, both: bool = both) -> None:
                q = quantize_chunk(run[r.name], x, amax)
                sums[r.name].add(x, q, chunk, split=not both)
                if dsums is not None and r is detail_recipe:
                    dsums.add(lo, x, q)

            _each([functools.partial(one, r) for r in active], both)
    tstats = stats.result()
    no_finite = tstats.numel > 0 and tstats.nonfinite == tstats.numel
    results = []
    for r in recipes:
        reason = reasons[r.name]
        if reason is None and no_finite:
            reason = "every element is NaN or ±Inf: there is no error to measure"
        results.append(RecipeResult.not_applicable(r.name, reason) if reason is not None
                       else sums[r.name].result(r.bits_per_element(ref.shape)))
    return TensorReport(ref.label, ref.path, ref.shape, ref.dtype, tstats, results, rank_results(results),
                        pareto_front(results), dsums.result() if dsums is not None else None,
                        tensor_flags(tstats, results))


_POOL: ThreadPoolExecutor | None = None
_POOL_SIZE = 0
_POOL_LOCK = threading.Lock()


def _pool() -> ThreadPoolExecutor:
    """The lab's thread pool (as many threads as the codec's; apart from the codec's own pool, which
    the recipes' quantizers use from inside these threads)."""
    global _POOL, _POOL_SIZE
    with _POOL_LOCK:
        if _POOL is None or _POOL_SIZE != codec.codec_threads():
            _POOL_SIZE = codec.codec_threads()
            _POOL = ThreadPoolExecutor(max_workers=_POOL_SIZE, thread_name_prefix="lowprec-lab")
        return _POOL


def _in_parallel(x: np.ndarray) -> bool:
    """Whether a chunk's recipes run side by side on the lab's threads: on the compiled path (whose
    working set per recipe is a few bytes per element) with more than one codec thread."""
    return codec.codec_threads() > 1 and compiled_metrics(x) is not None


def _quiet(fn: Callable[[], None]) -> None:
    with np.errstate(all="ignore"):  # numpy's error state is per thread
        fn()


def _each(fns: Sequence[Callable[[], None]], parallel: bool) -> None:
    """Call each of `fns` — on the lab's threads when `parallel` (they touch disjoint sums: every
    figure is the same whatever the order; a chunk's work ends before the next chunk's starts)."""
    if not parallel or len(fns) < 2:
        for fn in fns:
            fn()
        return
    for future in [_pool().submit(_quiet, fn) for fn in fns]:
        future.result()


def analyze_task(task: TensorTask) -> TensorReport:
    """A worker's job: open the tensor's file and analyse it (a pre-quantized one also audited, a 2-D
    weight's product measured when asked)."""
    report = analyze_rows(task.ref, open_rows(task.ref), task.recipes, task.chunk_elements, task.detail)
    if task.ref.layout and task.audit:
        from .audit import audit_tensor

        report.audit = audit_tensor(task.ref, chunk_elements=task.chunk_elements)
    if task.product is not None:
        from .product import product_task

        report.product = product_task(task.ref, task.recipes, task.product, task.chunk_elements)
    return report


# ------------------------------------------------------------------------------------------------
# many tensors
# ------------------------------------------------------------------------------------------------


@dataclass
class LabReport:
    """Every tensor of some files under some recipes."""

    files: list[str]
    recipes: tuple[Recipe, ...]
    tensors: list[TensorReport]
    skipped: list[Skipped] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what the readers decided (a renamed entry, a file read once)

    @property
    def ranking(self) -> list[dict[str, Any]]:
        """The recipes over the whole file(s), best first (`measure.file_ranking`), over the tensors
        that were measured (those with a finite element)."""
        measured = [t for t in self.tensors if t.measured]
        return file_ranking([t.results for t in measured], [r.name for r in self.recipes],
                            [t.name for t in measured])

    @property
    def best(self) -> str | None:
        """The best recipe over every measured tensor: the first row of the ranking that applies to
        all of them with a usable error (`measure.usable_error`); None when there is none."""
        return next((row["recipe"] for row in self.ranking if row["complete"] and usable_error(row["rms_rel_err"])),
                    None)

    def tensor(self, name: str) -> TensorReport:
        for t in self.tensors:
            if t.name == name:
                return t
        raise ValueError(f"no tensor {name!r}; tensors: {', '.join(t.name for t in self.tensors)}")

    def to_dict(self) -> dict[str, Any]:
        return {"files": self.files, "recipes": [r.to_dict() for r in self.recipes],
                "tensors": [t.to_dict() for t in self.tensors], "skipped": [s.to_dict() for s in self.skipped],
                "ranking": self.ranking, "best": self.best, "notes": self.notes}

    def to_csv(self) -> str:
        """One row per tensor × recipe (non-finite numbers spelled nan / inf / -inf, absent ones empty)."""
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        cols = ["rms_rel_err", "sqnr_db", "max_abs_err", "clipped_frac", "zero_frac", "bits_per_element"]
        w.writerow(["file", "tensor", "shape", "dtype", "layout", "recipe", "rank", *cols, "skipped", "flags"])
        for t in self.tensors:
            ranks = {name: i + 1 for i, name in enumerate(t.ranking)}
            flags = ";".join(f.code for f in t.flags)
            for r in t.results:
                values = ["" if (v := getattr(r, c)) is None else numtext.roundtrip(float(v)) for c in cols]
                w.writerow([t.file, t.name, "x".join(str(s) for s in t.shape), t.dtype, t.layout, r.recipe,
                            ranks.get(r.recipe, ""), *values, r.skipped or "", flags])
        return buf.getvalue()

    def summary_lines(self) -> list[str]:
        lines = [f"{len(self.files)} file(s): {len(self.tensors)} tensor(s) analysed, {len(self.skipped)} skipped, "
                 f"{len(self.recipes)} recipe(s)"]
        lines += [f"  note: {n}" for n in self.notes]
        for s in self.skipped:
            lines.append(f"  skipped {s.name or s.path}: {s.reason}")
        measured = [t for t in self.tensors if t.measured]
        if measured:
            lines.append("ranking over every tensor (pooled RMS relative error ‖x̂ − x‖ / ‖x‖):")
            rows = self.ranking
            for row in rows:
                if row["rms_rel_err"] is None:
                    lines.append(f"  {row['rank']:>2}. {row['recipe']:<22} {row['note']}")
                    continue
                note = "" if row["complete"] else f"  (applies to {row['tensors']} of {len(measured)} tensors)"
                front = " *" if row["pareto"] else ""
                lines.append(f"  {row['rank']:>2}. {row['recipe']:<22} {row['rms_rel_err']:.3e}  SQNR "
                             f"{row['sqnr_db']:6.2f} dB  {row['bits_per_element']:.4g} bits{front}{note}")
                if not row["complete"] or math.isnan(row["rms_rel_err"]):
                    lines.append(f"      {row['note']}")
            if any(row["pareto"] for row in rows):
                lines.append("  (* on the Pareto front: no recipe has both fewer bits and a smaller error)")
            best = self.best
            lines.append(f"best over every tensor: {best}" if best is not None else
                         "best over every tensor: none (no recipe applies to every tensor with a finite error "
                         "below 1)")
        for t in self.tensors:
            best = t.best or "none"
            front = ", ".join(t.pareto) or "none"
            stored = f" stored as {t.layout} ({t.stored_recipe})" if t.layout else ""
            lines.append(f"{t.name} {list(t.shape)} {t.dtype}{stored}: best {best}; Pareto front {front}")
            lines += [f"  ! {f.message}" for f in t.flags]
            if t.audit is not None:
                lines += ["  " + line for line in t.audit.summary_lines()[1:]]
            if t.product is not None:
                lines += ["  " + line for line in t.product.summary_lines()]
        return lines


def _run(tasks: Sequence[TensorTask], executor: Executor | None, progress: ProgressFn | None) -> list[TensorReport]:
    n = len(tasks)
    out: list[TensorReport] = []
    if progress is not None:
        progress(0, n)
    results: Iterator[TensorReport] = (map(analyze_task, tasks) if executor is None
                                       else executor.map(analyze_task, tasks))
    for report in results:
        out.append(report)
        if progress is not None:
            progress(len(out), n)
    return out


def analyze(paths: Sequence[str] | str | Inventory, recipes: str | Sequence[str] | Sequence[Recipe] | None = None, *,
            executor: Executor | None = None, progress: ProgressFn | None = None,
            chunk_elements: int = CHUNK_ELEMENTS, limits: ReadLimits = LIMITS, layout: str | None = None,
            audit: bool = True, product: Any = None, rank_by: str = "tensor") -> LabReport:
    """Every float tensor of the files `paths` names (files, globs, directories, a shard index)
    through `recipes` (names, `default`, `all`; default DEFAULT_RECIPES), mapped over `executor`
    (None: serially, here). Files are read within `limits` (`limits.ReadLimits`). Unreadable files
    named explicitly raise `readers.LabReadError` before any work; those of a directory or a glob
    are listed as skipped. Pre-quantized tensors (`lab.layouts`; `layout` names theirs, else the
    checkpoint's config or their names) are analysed as their dequantized values and, with
    `audit`, audited (`lab.audit`); `product` (a `product.ProductConfig`) measures y = x Wᵀ of every
    2-D weight (`lab.product`), and `rank_by` "product" ranks those weights' recipes by it."""
    if rank_by not in RANK_BY:
        raise ValueError(f"rank_by must be one of {', '.join(RANK_BY)}, got {rank_by!r}")
    if rank_by == "product" and product is None:
        raise ValueError("ranking by product error needs the product: give activations (or the bundled sample)")
    if isinstance(chunk_elements, bool) or not isinstance(chunk_elements, int) or chunk_elements < 1:
        raise ValueError(f"chunk_elements must be a positive integer, got {chunk_elements!r}")
    chosen = _recipes(recipes)
    inv = paths if isinstance(paths, Inventory) else scan(paths, limits, layout)
    skipped = list(inv.skipped)
    refs = []
    for ref in inv.tensors:
        if ref.numel == 0:
            skipped.append(Skipped(ref.path, ref.name, "empty tensor (no elements)", ref.shape, ref.dtype))
        else:
            refs.append(ref)
    tasks = [TensorTask(ref, chosen, chunk_elements, None, audit,
                        product if product is not None and len(ref.shape) == 2 else None) for ref in refs]
    report = LabReport(list(inv.files), chosen, _run(tasks, executor, progress), skipped, list(inv.notes))
    if rank_by == "product":
        rank_by_product(report)
    return report


RANK_BY = ("tensor", "product")


def rank_by_product(report: "LabReport") -> None:
    """Rank each tensor with a product by its product error (`product.ProductReport.ranking`): the
    recipes measured on the product first, in that order, then the others in the tensor's order."""
    for t in report.tensors:
        if t.product is not None and t.product.skipped is None:
            first = [n for n in t.product.ranking if n in t.ranking]
            t.ranking = first + [n for n in t.ranking if n not in first]
            t.rank_by = "product"


def _recipes(recipes: str | Sequence[str] | Sequence[Recipe] | None) -> tuple[Recipe, ...]:
    if recipes is not None and not isinstance(recipes, str) and all(isinstance(r, Recipe) for r in recipes):
        return tuple(r for r in recipes if isinstance(r, Recipe))
    return parse_recipes(recipes)  # type: ignore[arg-type]


def analyze_arrays(arrays: dict[str, Any], recipes: str | Sequence[str] | Sequence[Recipe] | None = None, *,
                   detail: tuple[str, str] | None = None, chunk_elements: int = CHUNK_ELEMENTS,
                   label: str = "", progress: ProgressFn | None = None) -> LabReport:
    """The lab on in-memory arrays (the widget's samples, tests), serially; `detail` = (tensor,
    recipe) adds that recipe's drawing data to that tensor's report. Non-float arrays are skipped.
    `progress(done, total)` follows each array (it may raise to stop the run)."""
    chosen = _recipes(recipes)
    reports, skipped = [], []
    for done, (name, arr) in enumerate(arrays.items()):
        if progress is not None:
            progress(done, len(arrays))
        try:
            ref, source = array_source(arr, name)
        except ValueError as exc:
            skipped.append(Skipped(label, name, str(exc).split(": ", 1)[-1]))
            continue
        if ref.numel == 0:
            skipped.append(Skipped(label, name, "empty tensor (no elements)", ref.shape, ref.dtype))
            continue
        ref = TensorRef(label, ref.name, ref.kind, ref.shape, ref.dtype, ref.offset)
        want = detail[1] if detail is not None and detail[0] == name else None
        reports.append(analyze_rows(ref, source, chosen, chunk_elements, want))
    return LabReport([label] if label else [], chosen, reports, skipped)


def tensor_detail(ref: TensorRef, recipe: str | Recipe, source: RowSource | None = None,
                  chunk_elements: int = CHUNK_ELEMENTS) -> TensorReport:
    """One tensor under one recipe with its drawing data (`TensorReport.detail`)."""
    chosen = _recipes([recipe] if isinstance(recipe, Recipe) else recipe)
    src = source if source is not None else open_rows(ref)
    return analyze_rows(ref, src, chosen, chunk_elements, chosen[0].name)


# ------------------------------------------------------------------------------------------------
# executors
# ------------------------------------------------------------------------------------------------


def available_cpus() -> int:
    """The CPUs this process may run on (its affinity mask where the system has one)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def worker_count(workers: int) -> int:
    """`workers` capped at `available_cpus()` (more processes than CPUs only share them, and each
    spawned interpreter costs its start-up and memory); ValueError unless a positive integer."""
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ValueError(f"workers must be a positive integer, got {workers!r}")
    return min(workers, available_cpus())


_SCHEMES = ("tcp", "tls", "ws", "wss", "ucx", "inproc")
_HOST = re.compile(r"[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)*|[0-9A-Fa-f:.]+")


def check_scheduler_address(address: str) -> str:
    """`address` when it has the form of a Dask scheduler address — `[PROTOCOL://]HOST:PORT` with
    PROTOCOL one of tcp (the default), tls, ws, wss, ucx, or `inproc://…` —, ValueError naming it
    otherwise (before a client is made: a client made for a bad address hangs the interpreter's
    exit)."""
    if not isinstance(address, str) or not address.strip():
        raise ValueError(f"the Dask scheduler address must be text like tcp://HOST:PORT, got {address!r}")
    text = address.strip()
    scheme, sep, rest = text.partition("://")
    if not sep:
        scheme, rest = "tcp", text
    if scheme.lower() not in _SCHEMES:
        raise ValueError(f"scheduler address {address!r}: unknown protocol {scheme!r} (expected tcp://HOST:PORT; "
                         f"protocols: {', '.join(_SCHEMES)})")
    if scheme.lower() == "inproc":
        if not rest:
            raise ValueError(f"scheduler address {address!r}: an inproc address names its scheduler after inproc://")
        return text
    host, colon, port = rest.rpartition(":")
    if not colon or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"scheduler address {address!r} needs a port from 1 to 65535: {scheme}://HOST:PORT")
    bare = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    octets = bare.split(".")
    dotted = len(octets) == 4 and all(o.isdigit() for o in octets)
    if not bare or not _HOST.fullmatch(bare) or (dotted and any(int(o) > 255 for o in octets)):
        raise ValueError(f"scheduler address {address!r}: {host!r} is not a host name or IP address")
    return text


@contextlib.contextmanager
def open_executor(workers: int = 1, scheduler: str | None = None,
                  timeout_s: float = 20.0) -> Iterator[Executor | None]:
    """The executor `lowprec analyze` maps tensors over: a Dask distributed client's executor when
    `scheduler` names one (needs `lowprec[cluster]`; ValueError for an address of the wrong form
    (`check_scheduler_address`) or one that does not answer within `timeout_s` seconds), else a
    process pool of `worker_count(workers)` processes (at most one per CPU; spawned: a clean
    interpreter each), or None (this process) for one worker."""
    n = worker_count(workers)
    if scheduler:
        address = check_scheduler_address(scheduler)
        from distributed import Client

        try:
            client = Client(address, timeout=f"{timeout_s}s", set_as_default=False)
        except (OSError, ValueError, TypeError) as exc:
            raise ValueError(f"cannot reach the Dask scheduler at {scheduler}: {exc}") from None
        try:
            yield client.get_executor(pure=False)
        finally:
            client.close()
        return
    if n == 1:
        yield None
        return
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(max_workers=n, mp_context=multiprocessing.get_context("spawn"), initializer=init_worker,
                             initargs=(worker_threads(n),)) as pool:
        yield pool


def worker_threads(workers: int) -> int:
    """Codec threads for each of `workers` pool processes: the CPUs shared out among them (at least
    one each, at most the codec's own count), so a pool does not run more threads than CPUs."""
    return max(1, min(codec.codec_threads(), available_cpus() // max(1, workers)))


def init_worker(threads: int) -> None:
    """A pool worker's start: its codec threads (`worker_threads`), unless LOWPREC_CODEC_THREADS
    names them."""
    if not os.environ.get("LOWPREC_CODEC_THREADS"):
        codec.set_codec_threads(threads)


def stats_array(report: LabReport, column: str) -> np.ndarray:
    """One metric of every tensor × recipe as a (tensors, recipes) float array (NaN where absent)."""
    out = np.full((len(report.tensors), len(report.recipes)), np.nan)
    for i, t in enumerate(report.tensors):
        for j, r in enumerate(t.results):
            v = getattr(r, column)
            out[i, j] = np.nan if v is None else float(v)
    return out
