"""The product, not only the tensor: for a 2-D weight W (out × in) and activations x (tokens × in), the
error of y = x Wᵀ when W is stored by a weight recipe and x by an activation recipe, for every
(weight recipe, activation recipe) pair — exactly from the dequantized operands, and through a
tensor-core model (`simulations.gemm.matmul`, `--mma hopper`), with and without promotion.

- **Activations**: the caller's file (`ProductConfig.activations`: a `.npy` of one (tokens × in)
  array used for every weight whose `in` matches, or a `.npz` / `.safetensors` of arrays named after
  the layers — a weight `L.weight` takes the array `L.weight` or `L`; any array is read as rows of
  its last axis, at most `MAX_TOKENS` of them), else the bundled sample
  `samples.activation_like(in, tokens)` (normal values, a log-normal scale per token, three outlier
  features near ±60).
- **Weight recipes**: "as stored" (the weight's own values: a pre-quantized tensor's dequantized
  values, a float tensor itself — only the activation's recipe then costs anything) and every recipe
  of the lab run, each quantizing W by row chunks with the whole tensor's amaxes, exactly as the
  lab's metrics do. **Activation recipes** (`ProductConfig.activation_recipes`): "none" (x itself),
  and lowprec recipes run on x (`e4m3_row` per token, `fp8_1x128` as DeepSeek-V3's activations,
  `mxfp8_e4m3`, `nvfp4` …).
- **Reference and exact path**: y = x Wᵀ and ŷ = x̂ Ŵᵀ in float64 from the dequantized operands
  (each chunk of W's rows gives those columns of y); `rel_err` = ‖ŷ − y‖ / ‖y‖ over every output,
  `max_abs_err` = max |ŷ − y|.
- **Tensor-core path** (`mma="hopper"`): the element values of both operands (the codes decoded;
  E2M1 values are E4M3 values too) with their decode scales, as `gemm.matmul` takes them — per
  tensor, per row of x / output channel of W, x's 1×k blocks, W's 1×k or 128×128 blocks (a coarser
  K block is repeated down to the finer one, a tile grid is spread to one scale per output channel),
  FP32 values (a SCALED recipe's exact reciprocal is rounded to the FP32 decode scale a kernel
  holds) — on `wgmma.m64n256k32.f32.{a}.{b}` (FP8) or `wgmma.m64n256k16.f32.bf16.bf16` (BF16 casts):
  promoted to FP32 every 128 elements of K (DeepSeek-V3) and not promoted (the whole K in the tensor
  core), where the scales allow; block scales are applied at promotion, so they fix the interval to
  their K block. The model runs on the first `mma_rows` output channels (a multiple of 128): its
  `rel_err` is against the float64 reference over those columns (`exact_rel_err`: the exact path's
  over the same columns, to compare with), `core_rel_err` against the model's exact product of the
  same quantized operands (what the tensor core's arithmetic adds). A
  pair the instruction cannot run (NVFP4's 16-element blocks are shorter than wgmma's K of 32; a BF16
  operand against an FP8 one) says why.
- **Ranking** (`ranking`): the weight recipes by their exact product error under the rank
  activation recipe (the first of the list unless named), so the lab can rank by product error
  instead of tensor error (`lowprec analyze --rank-by product`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from lowprec import formats

from ..quant import engine as _engine
from ..quant.recipes import Recipe, Scheme, get_recipe, matrix_shape
from .measure import ExactSum
from .readers import TensorRef, iter_chunks, open_rows
from .recipes import GlobalAmax, quantize_chunk
from .samples import activation_like

__all__ = ["AS_STORED", "DEFAULT_ACTIVATION_RECIPES", "MAX_TOKENS", "MMA_ARCHS", "PairResult", "ProductConfig",
           "ProductReport", "load_activation", "product_task"]

AS_STORED = "as stored"
NONE = "none"
DEFAULT_ACTIVATION_RECIPES: tuple[str, ...] = (NONE, "e4m3_row", "fp8_1x128", "mxfp8_e4m3", "nvfp4")
MAX_TOKENS = 4096  # rows of a given activation used (the first ones)
MMA_ARCHS = ("hopper",)
PROMOTE_EVERY = 128
BLOCK = 128  # rows of W per matmul call (chunks hold a multiple of it)


@dataclass(frozen=True)
class ProductConfig:
    """What the product measures (picklable: a worker loads the activations itself)."""

    activations: str | None = None  # a .npy / .npz / .safetensors file; None: the bundled sample
    activation_recipes: tuple[str, ...] = DEFAULT_ACTIVATION_RECIPES
    mma: str | None = None  # "hopper": also the tensor-core path
    tokens: int = 32  # tokens of the bundled sample
    mma_rows: int = 256  # output channels through the tensor-core model
    rank_activation: str | None = None  # the activation recipe the ranking uses (default: the first)

    def __post_init__(self) -> None:
        if self.mma is not None and self.mma not in MMA_ARCHS:
            raise ValueError(f"--mma {self.mma!r}: the product models {', '.join(MMA_ARCHS)} tensor cores")
        for name in self.activation_recipes:
            if name != NONE:
                get_recipe(name)
        if not self.activation_recipes:
            raise ValueError("give at least one activation recipe (or 'none')")
        for what, v, hi in (("tokens", self.tokens, MAX_TOKENS), ("mma_rows", self.mma_rows, 1 << 16)):
            if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= hi:
                raise ValueError(f"{what} must be an integer 1 … {hi}, got {v!r}")
        if self.rank_activation is not None and self.rank_activation not in self.activation_recipes:
            raise ValueError(f"the ranking's activation recipe {self.rank_activation!r} is not among "
                             f"{', '.join(self.activation_recipes)}")

    @property
    def ranked_by(self) -> str:
        return self.rank_activation or self.activation_recipes[0]


@dataclass
class PairResult:
    """One (weight recipe, activation recipe) pair on one weight."""

    weight: str
    activation: str
    rel_err: float | None = None  # exact path: ‖ŷ − y‖ / ‖y‖
    max_abs_err: float | None = None
    skipped: str | None = None  # why the pair does not apply
    mma: dict[str, Any] = field(default_factory=dict)  # "promoted" / "unpromoted" → {"rel_err", "core_rel_err"} or
    #                                                    {"skipped": why}

    def to_dict(self) -> dict[str, Any]:
        return {"weight": self.weight, "activation": self.activation, "rel_err": self.rel_err,
                "max_abs_err": self.max_abs_err, "skipped": self.skipped, "mma": self.mma or None}


@dataclass
class ProductReport:
    """The product y = x Wᵀ of one 2-D weight under every pair (see the module docstring)."""

    tensor: str
    shape: tuple[int, ...]
    activation: str  # where x came from
    tokens: int
    mma: str | None
    mma_rows: int
    pairs: list[PairResult]
    ranked_by: str
    skipped: str | None = None  # why no product was measured for this weight

    @property
    def ranking(self) -> list[str]:
        """Weight recipes by exact product error under the ranking's activation recipe, best first."""
        rows = [p for p in self.pairs if p.activation == self.ranked_by and p.rel_err is not None
                and p.weight != AS_STORED]
        rows.sort(key=lambda p: (math.isnan(p.rel_err or 0.0), p.rel_err, p.weight))
        return [p.weight for p in rows]

    def pair(self, weight: str, activation: str) -> PairResult:
        for p in self.pairs:
            if p.weight == weight and p.activation == activation:
                return p
        raise ValueError(f"no pair ({weight}, {activation}) for tensor {self.tensor!r}")

    def to_dict(self) -> dict[str, Any]:
        return {"tensor": self.tensor, "shape": list(self.shape), "activation": self.activation, "tokens": self.tokens,
                "mma": self.mma, "mma_rows": self.mma_rows, "ranked_by": self.ranked_by, "ranking": self.ranking,
                "skipped": self.skipped, "pairs": [p.to_dict() for p in self.pairs]}

    def summary_lines(self) -> list[str]:
        if self.skipped is not None:
            return [f"product: not measured ({self.skipped})"]
        best = self.ranking[:3]
        lines = [f"product y = x Wᵀ with {self.tokens} token(s) of {self.activation}: best weight recipes under "
                 f"activation {self.ranked_by}: {', '.join(best) or 'none'}"]
        for p in self.pairs:
            if p.activation == self.ranked_by and p.rel_err is not None and p.weight in best[:1] + [AS_STORED]:
                mma = "; ".join(f"{k} {v['rel_err']:.3g}" for k, v in p.mma.items() if "rel_err" in v)
                lines.append(f"  {p.weight} × {p.activation}: exact {p.rel_err:.3g}" + (f", {self.mma} {mma}" if mma else ""))
        return lines


# ------------------------------------------------------------------------------------------------
# activations
# ------------------------------------------------------------------------------------------------


def load_activation(path: str | None, name: str, features: int, tokens: int) -> tuple[np.ndarray | None, str]:
    """(x as a float64 (tokens × features) array, where it came from), or (None, why not)."""
    if path is None:
        return activation_like(features, tokens).astype(np.float64), f"samples.activation_like({features}, {tokens})"
    from .readers import scan

    inv = scan(path)
    base = name[: -len(".weight")] if name.endswith(".weight") else name
    refs = {r.name: r for r in inv.tensors}
    ref = refs.get(name) or refs.get(base)
    if ref is None and len(inv.tensors) == 1:
        ref = inv.tensors[0]  # one array for every layer
    if ref is None:
        return None, f"{path} has no activation named {name!r} or {base!r} (and more than one array)"
    if not ref.shape or ref.shape[-1] != features:
        return None, (f"the activation {ref.label!r} has shape {list(ref.shape)}; the weight takes {features} input "
                      f"features (its last axis)")
    src = open_rows(ref)
    if len(ref.shape) == 1:
        return src.read_span(0, features).astype(np.float64).reshape(1, features), f"{path}[{ref.label}]"
    n = min(src.rows, MAX_TOKENS)
    x = src.read(0, n).astype(np.float64)
    return x, f"{path}[{ref.label}]" + (f" (the first {n} of {src.rows} rows)" if n < src.rows else "")


# ------------------------------------------------------------------------------------------------
# operands for the tensor-core model
# ------------------------------------------------------------------------------------------------


@dataclass
class _Operand:
    """Element values (rows × K, exact in `element`) and decode scales as (rows, K blocks) FP32 values
    with `kb` elements per K block (kb = K for one per row) and the row grouping `row_tile`."""

    values: np.ndarray
    element: str  # E4M3FN, E5M2, E2M1 or BF16
    scales: np.ndarray | None  # (rows or row tiles, K blocks) float64, FP32-exact; None: no scale
    kb: int
    row_tile: int = 1  # rows sharing one scale row (128 for 128×128 tiles)
    per_tensor: bool = False


def _operand_from_result(q: Any, rows: int, k: int) -> tuple[_Operand | None, str]:
    """The tensor-core operand of a `QuantResult` of a (rows × k) matrix, or (None, why)."""
    r: Recipe = q.recipe
    if r.scheme is Scheme.CAST:
        if r.element != "BF16":
            return None, f"{r.name} casts to {r.element}, not an operand type of the modelled instructions"
        return _Operand(formats.decode(q.codes, r.fmt).astype(np.float64), "BF16", None, k), ""
    if r.scheme is Scheme.NVFP4:
        return None, "NVFP4's blocks of 16 are shorter than wgmma's K of 32 (Blackwell's block-scaled MMA reads them)"
    if r.element not in ("E4M3FN", "E5M2", "E2M1"):
        return None, f"{r.name} has {r.element} elements, not an FP8 operand type"
    vals = formats.decode(q.codes, r.fmt).astype(np.float64)
    with np.errstate(over="ignore"):
        s = np.asarray(q.scales, dtype=np.float64).astype(np.float32).astype(np.float64)
    if r.scheme is Scheme.SCALED:
        if r.granularity == "tensor":
            return _Operand(vals, r.element, s.reshape(1, 1), k, rows, per_tensor=True), ""
        if r.granularity == "row":
            return _Operand(vals, r.element, s.reshape(rows, 1), k), ""
        return None, f"{r.name}'s scales ({r.granularity}) are not per tensor, row or block of K"
    br, bc = r.block
    if k % bc:
        return None, f"K = {k} is not a whole number of {r.name}'s {bc}-element blocks"
    grid = s.reshape(-(-rows // br), k // bc)
    if bc % 32:
        return None, f"{r.name}'s K blocks of {bc} are not a multiple of wgmma's K of 32"
    return _Operand(vals, r.element, grid, bc, br), ""


def _spread(op: _Operand, rows: int, kb: int) -> np.ndarray:
    """op's decode scales as (rows, K / kb): one row per row of the operand, K blocks of `kb` (a
    divisor of op.kb); ones for an operand without a scale."""
    k = op.values.shape[1]
    if op.scales is None:
        return np.ones((rows, k // kb))
    s = op.scales
    per_row = np.broadcast_to(s, (rows, s.shape[1])) if op.per_tensor else np.repeat(s, op.row_tile, axis=0)[:rows]
    return np.ascontiguousarray(np.repeat(per_row, op.kb // kb, axis=1))


def _mma(a: _Operand, b: _Operand, arch: str) -> dict[str, Any]:
    """The tensor-core runs of x̂ (a: tokens × K) times Ŵᵀ (b: rows × K): promoted / unpromoted → result."""
    from .. import gemm

    t, k = a.values.shape
    n = b.values.shape[0]
    fp8 = {"E4M3FN": "e4m3", "E5M2": "e5m2", "E2M1": "e4m3"}
    if a.element == "BF16" and b.element == "BF16":
        ins = "wgmma.m64n256k16.f32.bf16.bf16"
    elif a.element in fp8 and b.element in fp8:
        ins = f"wgmma.m64n256k32.f32.{fp8[a.element]}.{fp8[b.element]}"
    else:
        why = f"{a.element} activations against {b.element} weights: no {arch} instruction multiplies them"
        return {"promoted": {"skipped": why}, "unpromoted": {"skipped": why}}
    ins_k = 16 if a.element == "BF16" else 32
    if k % ins_k:
        why = f"K = {k} is not a multiple of the instruction's K = {ins_k}"
        return {"promoted": {"skipped": why}, "unpromoted": {"skipped": why}}
    blockwise = (a.scales is not None and a.kb < k) or (b.scales is not None and b.kb < k)
    kb = min(a.kb, b.kb) if blockwise else k
    if blockwise and (max(a.kb, b.kb) % kb or kb % ins_k):
        why = f"K blocks of {a.kb} and {b.kb} do not nest"
        return {"promoted": {"skipped": why}, "unpromoted": {"skipped": why}}
    kwargs: dict[str, Any] = {}
    if a.scales is not None or b.scales is not None:
        sa = _spread(a, t, kb if blockwise else a.kb)
        sb = _spread(b, n, kb if blockwise else b.kb)
        if blockwise:
            kwargs["scale_a"] = sa
            kwargs["scale_b"] = np.ascontiguousarray(sb.T)
        else:
            kwargs["scale_a"] = sa[:, 0]
            kwargs["scale_b"] = sb[:, 0]
    runs: dict[str, Any] = {}
    for label, promote in (("promoted", kb if blockwise else PROMOTE_EVERY), ("unpromoted", None)):
        if blockwise and promote is None:
            runs[label] = {"skipped": f"block scales of {kb} elements are applied at promotion, every {kb} of K"}
            continue
        if promote is not None and k % promote:
            runs[label] = {"skipped": f"K = {k} is not a multiple of the promotion interval {promote}"}
            continue
        res = gemm.matmul(a.values, b.values.T, arch=arch, instruction=ins, promote_every=promote, budget=None,
                          **kwargs)
        runs[label] = {"d": np.asarray(res.d, dtype=np.float64), "exact": res.exact, "promote_every": promote,
                       "instruction": ins}
    return runs


# ------------------------------------------------------------------------------------------------
# one weight
# ------------------------------------------------------------------------------------------------


def _rel(err: float, sig: float) -> float:
    if sig == 0.0:
        return 0.0 if err == 0.0 else math.inf
    return math.sqrt(err / sig)


def product_task(ref: TensorRef, recipes: Sequence[Recipe], config: ProductConfig,
                 chunk_elements: int = 1 << 20) -> ProductReport:
    """The product report of one 2-D weight (streamed over row chunks of W)."""
    rows, cols = matrix_shape(ref.shape)
    x, origin = load_activation(config.activations, ref.name, cols, config.tokens)
    mma_rows = -(-min(config.mma_rows, rows) // 128) * 128
    if x is None:
        return ProductReport(ref.label, ref.shape, origin, 0, config.mma, mma_rows, [], config.ranked_by, origin)
    t = x.shape[0]
    weights: list[Recipe | None] = [None] + [r for r in recipes if r.check(ref.shape) is None
                                             and r.rounding != "stochastic"]
    wnames = [AS_STORED] + [r.name for r in weights[1:] if r is not None]
    acts: dict[str, tuple[np.ndarray | None, Any, str]] = {}
    for name in config.activation_recipes:
        if name == NONE:
            acts[name] = (x, None, "")
            continue
        rec = get_recipe(name)
        why = rec.check((t, cols))
        if why is None and rec.rounding == "stochastic":
            why = "stochastic rounding"
        if why is not None:
            acts[name] = (None, None, why)
            continue
        with np.errstate(all="ignore"):
            q = _engine.quantize(x.astype(np.float32), rec)
        acts[name] = (np.asarray(q.restore(), dtype=np.float64), q, "")
    pairs = {(w, a): PairResult(w, a, skipped=acts[a][2] or None) for w in wnames for a in acts}
    maxabs = {key: 0.0 for key in pairs}
    src = open_rows(ref)
    step = max(128, (max(1, chunk_elements) // max(1, cols)) // 128 * 128)
    amax = GlobalAmax()
    with np.errstate(all="ignore"):
        for lo, hi in iter_chunks(rows, step):
            w = src.read(lo, hi)
            for r in weights[1:]:
                if r is not None:
                    amax.add(r, w)
        y_sig = ExactSum()
        errors = {key: ExactSum() for key in pairs}
        mma_w: dict[str, Any] = {}
        for lo, hi in iter_chunks(rows, step):
            w = src.read(lo, hi)
            w64 = w.astype(np.float64)
            w_hats = [w64 if r is None else quantize_chunk(r, w, amax).x_hat for r in weights]
            # products by blocks of BLOCK rows of W, aligned on the tensor: the same matmul calls, so
            # the same sums, whatever the chunk size (sums per output channel, added exactly)
            for b in range(0, hi - lo, BLOCK):
                y = x @ w64[b:b + BLOCK].T
                y_sig.add((y * y).sum(axis=0))
                for w_hat, wname in zip(w_hats, wnames):
                    for aname, (x_hat, _, why) in acts.items():
                        if x_hat is None:
                            continue
                        d = x_hat @ w_hat[b:b + BLOCK].T - y
                        errors[(wname, aname)].add((d * d).sum(axis=0))
                        if d.size:
                            maxabs[(wname, aname)] = max(maxabs[(wname, aname)], float(np.abs(d).max()))
            if config.mma is not None and lo < mma_rows:
                top = min(hi, mma_rows) - lo
                for r, wname in zip(weights, wnames):
                    part = _weight_part(ref, src, r, w[:top], lo, lo + top, amax)
                    mma_w.setdefault(wname, []).append(part)
    for key, p in pairs.items():
        if p.skipped is None:
            p.rel_err = _rel(errors[key].value, y_sig.value)
            p.max_abs_err = maxabs[key]
    if config.mma is not None:
        _mma_pairs(ref, src, x, acts, mma_w, wnames, pairs, config.mma, min(rows, mma_rows))
    return ProductReport(ref.label, ref.shape, origin, t, config.mma, min(rows, mma_rows), list(pairs.values()),
                         config.ranked_by)


def _weight_part(ref: TensorRef, src: Any, r: Recipe | None, w: np.ndarray, lo: int, hi: int, amax: GlobalAmax
                 ) -> tuple[_Operand | None, str]:
    """The tensor-core operand of rows lo..hi of W under weight recipe `r` (None: as stored)."""
    rows, k = w.shape
    if r is not None:
        q = _engine.quantize(w, r, global_amax=amax.of(r) if r.global_amax else None)
        return _operand_from_result(q, rows, k)
    if not ref.layout:
        if ref.dtype == "BF16":
            return _Operand(w.astype(np.float64), "BF16", None, k), ""
        return None, f"the weight is {ref.dtype}, not an operand type of the modelled instructions"
    codes, stored = src.stored_rows(lo, hi)
    from .layouts import get_layout, scale_values

    lay = get_layout(ref.layout)
    if lay.name == "modelopt_nvfp4":
        return None, "NVFP4's blocks of 16 are shorter than wgmma's K of 32 (Blackwell's block-scaled MMA reads them)"
    if lay.name == "compressed_tensors_fp8" and stored.dtype != np.float32:
        return None, "the stored decode scales are not FP32"
    vals = formats.decode(codes, formats.get_format(lay.element)).astype(np.float64)
    sv, _ = scale_values(lay, stored, src._scales.dtype)
    sv = sv.reshape(stored.shape[0], -1)
    geo = src.geo
    if lay.name == "compressed_tensors_fp8":
        per_tensor = geo.grid == (1, 1) and geo.tile[0] == geo.rows
        return _Operand(vals, lay.element, sv[:1] if per_tensor else sv, k, rows, per_tensor=per_tensor), ""
    if lay.name == "gptoss_mxfp4" and not np.all(np.isfinite(sv)):
        return None, "a NaN scale (E8M0 code 255)"
    return _Operand(vals, lay.element, sv, geo.tile[1], geo.tile[0]), ""


def _mma_pairs(ref: TensorRef, src: Any, x: np.ndarray, acts: dict[str, tuple[np.ndarray | None, Any, str]],
               mma_w: dict[str, Any], wnames: list[str], pairs: dict[tuple[str, str], PairResult], arch: str,
               n_rows: int) -> None:
    """The tensor-core path of every pair on the first `n_rows` output channels."""
    cols = x.shape[1]
    w_ref = src.read(0, n_rows).astype(np.float64)
    y = x @ w_ref.T
    y_sig = float((y * y).sum())
    for wname in wnames:
        parts = mma_w.get(wname, [])
        why_w = next((why for op, why in parts if op is None), "")
        wop = None
        if not why_w and parts:
            ops = [op for op, _ in parts]
            first = ops[0]
            vals = np.concatenate([op.values for op in ops], axis=0)
            scales = None if first.scales is None else (
                first.scales if first.per_tensor else np.concatenate([op.scales for op in ops], axis=0))
            wop = _Operand(vals, first.element, scales, first.kb, first.row_tile, first.per_tensor)
        for aname, (x_hat, q, why_a) in acts.items():
            p = pairs[(wname, aname)]
            if why_a:
                continue
            if wop is None:
                p.mma = {"promoted": {"skipped": why_w or "no rows"}, "unpromoted": {"skipped": why_w or "no rows"}}
                continue
            if q is None:
                aop: _Operand | None = (_Operand(x, "BF16", None, cols) if _bf16_exact(x) else None)
                why = "" if aop is not None else "the activation is not BF16-exact (use an activation recipe)"
            else:
                aop, why = _operand_from_result(q, x.shape[0], cols)
            if aop is None:
                p.mma = {"promoted": {"skipped": why}, "unpromoted": {"skipped": why}}
                continue
            try:
                runs = _mma(aop, wop, arch)
            except ValueError as exc:
                p.mma = {"promoted": {"skipped": str(exc)}, "unpromoted": {"skipped": str(exc)}}
                continue
            out: dict[str, Any] = {}
            for label, run in runs.items():
                if "skipped" in run:
                    out[label] = run
                    continue
                d, exact = run["d"], run["exact"]
                e = d - y
                c = d - exact
                x_err = exact - y
                out[label] = {"rel_err": _rel(float((e * e).sum()), y_sig),
                              "exact_rel_err": _rel(float((x_err * x_err).sum()), y_sig),
                              "core_rel_err": _rel(float((c * c).sum()), float((exact * exact).sum())),
                              "promote_every": run["promote_every"], "instruction": run["instruction"]}
            p.mma = out


def _bf16_exact(x: np.ndarray) -> bool:
    import ml_dtypes

    with np.errstate(over="ignore"):
        return bool(np.array_equal(x.astype(np.float32).astype(ml_dtypes.bfloat16).astype(np.float64), x))
