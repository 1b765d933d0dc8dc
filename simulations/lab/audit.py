"""The audit of a pre-quantized tensor: what its stored scales and codes say, measured in one streaming
pass over the stored parts (`quantized.QuantizedRows.stored_rows`: a chunk of codes and the scale
rows it uses at a time).

- **The layout**: layout, the lowprec recipe with the same codes and scales, element format, how
  the scales are stored (FP32, UE8M0 powers of two in FP32, E8M0 codes, E4M3 codes; BF16/FP16), the
  tile and the number of blocks, ModelOpt's second level.
- **Scales**: smallest and largest finite positive scale, a histogram of log2(scale) in whole
  binades, the blocks at the ends of the scale's format (E8M0 codes 0 and 254; E4M3's largest value
  448 — the block's amax was beyond what the tensor scale lets E4M3 hold, its elements clip — and
  E4M3 subnormals, which keep fewer bits; FP32 subnormals; DeepGEMM's amax floor of 1e-4, the scale
  of a block whose amax was clamped), zero scales and blocks whose codes are all zero, and blocks
  with a non-finite scale (E8M0 0xFF, E4M3 NaN, FP32 NaN/Inf).
- **Non-power-of-two scales** (FP32 / BF16 / FP16 scales): a kernel that takes UE8M0 scales and
  keeps only each value's exponent bits (DeepGEMM's `pack_fp32_into_ue8m0` before its
  power-of-two assert; the effect sglang #39193 reports, ~25 % wrong) turns s into
  2^floor(log2 s): the block's values shrink by that factor (0.5 < factor ≤ 1). The audit counts
  those blocks, names the worst (block row, block column, scale, what is kept, the factor), and
  measures what the truncation does: the weight's RMS relative error and that of the product
  y = x Wᵀ with an activation x (the caller's, or `samples.activation_like`) — ‖ŷ − y‖ / ‖y‖ over
  every output, each formed in float64 from the dequantized operands.
- **Codes**: the usage histogram of the element codes (every code of the element format), the
  codes used, the *effective bits* — the entropy −Σ p log2 p of that histogram, what an ideal
  entropy coder would need per element — and the elements at ±max of the element format (E4M3 448,
  E2M1 6: the top of the grid, where values clip).
- **Producer vs recipe**: elements whose value by the producer's arithmetic (the lab's values)
  differs from the recipe's exact dequantization — ModelOpt's two FP32 roundings, compressed-tensors'
  FP32 decode scale, gpt-oss' 2^128 under scale code 255.
- **Other recipes**: the lab's table measures every recipe on the dequantized values: a re-quantization
  of an already-quantized tensor, whose original high-precision values are gone (`REQUANT_CAVEAT`).
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from lowprec import formats

from ..quant.recipes import get_recipe, matrix_shape
from .layouts import dequantize_window, get_layout, is_pow2, truncate_to_exponent
from .measure import ExactSum
from .quantized import QuantizedRows
from .readers import TensorRef, iter_chunks
from .samples import activation_like

__all__ = ["AUDIT_TOKENS", "AFFECTED_SHOWN", "REQUANT_CAVEAT", "TensorAudit", "audit_tensor"]

AUDIT_TOKENS = 16  # tokens of the generated activation the truncation's product error is measured with
AFFECTED_SHOWN = 20  # affected blocks listed by name (the worst first); all are counted
BLOCK = 128  # rows of W per product matmul call (chunks hold a multiple of it: the same sums for every chunk size)
CHUNK_ELEMENTS = 1 << 20
REQUANT_CAVEAT = ("The other recipes are measured on the dequantized values: a re-quantization of a tensor that "
                  "was already quantized. The original high-precision weights are gone, so these errors are "
                  "relative to the stored values, not to the model before quantization: a recipe coarser than the "
                  "stored one shows its own loss on top, a finer one can look exact.")
_F32 = np.finfo(np.float32)
_DEEPGEMM_FLOOR = float(np.float32(np.float32(1e-4) / np.float32(448.0)))


@dataclass
class TensorAudit:
    """What a pre-quantized tensor's stored scales and codes say (see the module docstring)."""

    name: str
    layout: str
    producer: str
    recipe: str
    element: str
    scale_storage: str  # how the block scales are stored
    shape: tuple[int, ...]
    tile: tuple[int, int]
    blocks: int
    second_level: float | None
    scale_min: float | None  # smallest finite positive block scale
    scale_max: float | None
    scale_log2_bins: list[int]  # floor(log2 scale) of the histogram's bins
    scale_log2_counts: list[int]
    ends: dict[str, int]  # blocks at the ends of the scale's format, by end
    zero_scale_blocks: int
    zero_code_blocks: int  # blocks whose codes are all ±0
    nonfinite_blocks: int
    non_pow2_blocks: int | None  # None: the scale format holds powers of two only, or E4M3 (NVFP4 reads it natively)
    truncation: dict[str, Any] | None  # the UE8M0 kernel's effect (see the module docstring)
    affected: list[dict[str, Any]]  # the worst affected blocks, by name
    code_counts: list[int]  # one per code of the element format
    code_values: list[float]  # the element format's value of each code (NaN codes: NaN)
    codes_used: int
    effective_bits: float
    at_max: int  # elements at ±max of the element format
    numel: int
    producer_vs_recipe: int  # elements whose producer value differs from the recipe's exact dequantization
    notes: list[str] = field(default_factory=list)
    caveat: str = REQUANT_CAVEAT

    def to_dict(self) -> dict[str, Any]:
        out = dict(self.__dict__)
        out["shape"], out["tile"] = list(self.shape), list(self.tile)
        return out

    def summary_lines(self) -> list[str]:
        lines = [f"{self.name}: {self.layout} ({self.producer}) = {self.recipe}: {self.element} codes, scales "
                 f"{self.scale_storage}, {self.blocks} block(s) of {self.tile[0]}×{self.tile[1]}"]
        if self.scale_min is not None:
            lines.append(f"  scales {self.scale_min:.4g} … {self.scale_max:.4g}; zero {self.zero_scale_blocks}, "
                         f"non-finite {self.nonfinite_blocks}, all-zero codes {self.zero_code_blocks}; at the ends: "
                         + (", ".join(f"{k} {v}" for k, v in self.ends.items()) or "none"))
        lines.append(f"  codes: {self.codes_used} used, effective {self.effective_bits:.3f} bits; {self.at_max} "
                     f"element(s) at ±max")
        if self.non_pow2_blocks is not None:
            t = self.truncation or {}
            lines.append(f"  {self.non_pow2_blocks} of {self.blocks} scale(s) are not powers of two"
                         + (f": a UE8M0 kernel keeping only their exponent shrinks those blocks by "
                            f"{t['factor_min']:.3f}–{t['factor_max']:.3f}; weight error {t['weight_rel_err']:.3g}, "
                            f"product error {t['product_rel_err']:.3g}" if self.non_pow2_blocks else ""))
            for a in self.affected[:5]:
                lines.append(f"    block {tuple(a['block'])}: scale {a['scale']:.6g} → {a['kept']:.6g} "
                             f"(× {a['factor']:.4f})")
        lines += [f"  note: {n}" for n in self.notes]
        return lines


def _entropy(counts: np.ndarray) -> float:
    n = counts.sum()
    if not n:
        return 0.0
    p = counts[counts > 0] / n
    return float(-(p * np.log2(p)).sum())


def _storage(layout: str, scale_dtype: str, recipe: str) -> str:
    if layout == "gptoss_mxfp4":
        return "E8M0 codes (UE8M0)"
    if layout == "modelopt_nvfp4":
        return "E4M3 codes"
    sf = get_recipe(recipe).scale_format.value
    if layout == "deepseek_fp8" and sf == "E8M0":
        return "UE8M0 (powers of two) in FP32"
    return {"F32": "FP32", "BF16": "BF16", "F16": "FP16"}.get(scale_dtype, scale_dtype)


def _block_reduce_max(mags: np.ndarray, tr: int, tc: int) -> np.ndarray:
    """max over each tr × tc tile of a (rows, cols) array (edge tiles partial)."""
    r, c = mags.shape
    pr, pc = -(-r // tr) * tr, -(-c // tc) * tc
    if (pr, pc) != (r, c):
        padded = np.zeros((pr, pc), mags.dtype)
        padded[:r, :c] = mags
        mags = padded
    return mags.reshape(pr // tr, tr, pc // tc, tc).max(axis=(1, 3))


def audit_tensor(ref: TensorRef, activation: np.ndarray | None = None, chunk_elements: int = CHUNK_ELEMENTS
                 ) -> TensorAudit:
    """The audit of one pre-quantized tensor (streamed); `activation` (tokens × cols) measures the
    truncation's product error (default: `samples.activation_like(cols, AUDIT_TOKENS)`)."""
    src = QuantizedRows(ref)
    lay = get_layout(ref.layout)
    recipe = get_recipe(ref.recipe)
    geo = src.geo
    rows, cols = matrix_shape(ref.shape)
    elem = formats.get_format(lay.element)
    mag_mask = np.uint8(0x7F if elem.bits == 8 else 0x07)
    max_code = int(formats.encode(np.array([elem.max]), elem, formats.policy_for("ocp", elem))[0]) & int(mag_mask)
    scale_dtype = src._scales.dtype
    fp_scales = scale_dtype in ("F32", "BF16", "F16")
    tr, tc = geo.tile
    stride = tr if geo.expand_rows else 1  # stored scale rows per tile row
    x = activation if activation is not None else activation_like(cols, AUDIT_TOKENS)
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 2 or x.shape[1] != cols:
        raise ValueError(f"the audit's activation must be (tokens, {cols}), got shape {x.shape}")
    code_counts = np.zeros(1 << elem.bits, np.int64)
    hist: dict[int, int] = {}
    ends: dict[str, int] = {}
    smin, smax = math.inf, -math.inf
    zero_scale = zero_codes = nonfinite = non_pow2 = at_max = differ = 0
    fmin, fmax = math.inf, -math.inf
    worst: list[tuple[float, int, int, float, float]] = []  # (loss, block row, block column, scale, kept)
    w_sig, w_err, y_sig, y_err = ExactSum(), ExactSum(), ExactSum(), ExactSum()
    default_step = max(1, max(1, chunk_elements) // max(1, cols))
    unit = math.lcm(tr, BLOCK) if tr <= default_step else BLOCK  # chunks of whole tiles and whole product blocks
    step = max(unit, default_step // unit * unit)
    pending: tuple[int, np.ndarray] | None = None  # a block row whose codes continue in the next chunk
    col_starts = np.arange(0, cols, tc)

    def finish(g: np.ndarray, bmax: np.ndarray, sv_rows: np.ndarray, stored_rows: np.ndarray) -> None:
        """The statistics of block rows `g` (their codes all seen): `bmax` the codes' largest
        magnitude per block, `sv_rows` the blocks' scales, `stored_rows` as stored."""
        nonlocal zero_codes, nonfinite, zero_scale, smin, smax, non_pow2, fmin, fmax
        zero_codes += int(np.count_nonzero(bmax == 0))
        fin = np.isfinite(sv_rows)
        nonfinite += int(np.count_nonzero(~fin))
        zero_scale += int(np.count_nonzero(sv_rows == 0))
        pos = sv_rows[fin & (sv_rows > 0)]
        if pos.size:
            smin, smax = min(smin, float(pos.min())), max(smax, float(pos.max()))
            for e, n in zip(*np.unique(np.floor(np.log2(pos)).astype(np.int64), return_counts=True)):
                hist[int(e)] = hist.get(int(e), 0) + int(n)
        _count_ends(lay.name, recipe.scale_format.value, stored_rows, sv_rows, ends)
        if not fp_scales:
            return
        bad = ~is_pow2(sv_rows) & fin & (sv_rows > 0)
        n_bad = int(np.count_nonzero(bad))
        if not n_bad:
            return
        non_pow2 += n_bad
        s = sv_rows[bad]
        k = truncate_to_exponent(s.astype(np.float32)).astype(np.float64)
        factor = k / s
        fmin, fmax = min(fmin, float(factor.min())), max(fmax, float(factor.max()))
        bi, bj = np.nonzero(bad)
        order = np.argsort(factor, kind="stable")[:AFFECTED_SHOWN]  # only the worst can enter the list
        for i in order:
            item = (1.0 - float(factor[i]), -int(g[bi[i]]), -int(bj[i]), float(s[i]), float(k[i]))
            if len(worst) < AFFECTED_SHOWN:
                heapq.heappush(worst, item)
            elif item > worst[0]:
                heapq.heapreplace(worst, item)

    with np.errstate(all="ignore"):
        for lo, hi in iter_chunks(rows, step):
            codes, stored = src.stored_rows(lo, hi)
            mags = codes & mag_mask
            code_counts += np.bincount(codes.reshape(-1), minlength=code_counts.size)
            at_max += int(np.count_nonzero(mags == max_code))
            g0 = lo // tr
            blk = stored[(-lo) % tr::stride] if stride > 1 else stored  # one stored row per block row
            sv = _scale_floats(lay.name, blk, scale_dtype)
            # the codes' largest magnitude in each block, block row by block row
            colmax = np.maximum.reduceat(mags, col_starts, axis=1)
            starts = np.unique(np.concatenate([[0], np.arange((-lo) % tr, hi - lo, tr)])).astype(np.int64)
            parts = np.maximum.reduceat(colmax, starts, axis=0)
            gs = (lo + starts) // tr  # the block row of each part
            if pending is not None and pending[0] == gs[0]:
                parts[0] = np.maximum(parts[0], pending[1])
                pending = None
            done = np.minimum((gs + 1) * tr, rows) <= hi  # block rows whose codes are all seen
            if done.any():
                finish(gs[done], parts[done], sv[gs[done] - g0], blk[gs[done] - g0])
            if not done[-1]:
                pending = (int(gs[-1]), parts[-1])
            per_scale = geo.expand(stored, lo, hi)
            values32 = dequantize_window(lay, codes, per_scale, src.scale_2, scale_dtype)
            exact = _recipe_exact(lay.name, codes, per_scale, src.scale_2, scale_dtype)
            differ += int(np.count_nonzero(exact.view(np.uint32) != values32.view(np.uint32)))
            if fp_scales:
                values = values32.astype(np.float64)
                fin = np.isfinite(sv) & (sv > 0)
                kept = truncate_to_exponent(sv.astype(np.float32)).astype(np.float64)
                shrink = np.where(fin, kept / np.where(fin, sv, 1.0), 1.0) - 1.0  # factor − 1 per block
                w_sig.add((values * values).sum(axis=1))
                dv = values * geo.expand(shrink, lo, hi) if shrink.any() else None  # truncated − stored values
                if dv is not None:
                    w_err.add((dv * dv).sum(axis=1))
                for b in range(0, hi - lo, BLOCK):  # the same matmul calls whatever the chunk size
                    y = x @ values[b:b + BLOCK].T
                    y_sig.add((y * y).sum(axis=0))
                    if dv is not None:
                        yd = x @ dv[b:b + BLOCK].T  # what the truncation changes in y
                        y_err.add((yd * yd).sum(axis=0))
    numel = rows * cols
    truncation = None
    affected: list[dict[str, Any]] = []
    if fp_scales:
        truncation = {"factor_min": fmin if non_pow2 else 1.0, "factor_max": fmax if non_pow2 else 1.0,
                      "weight_rel_err": math.sqrt(w_err.value / w_sig.value) if w_sig.value else 0.0,
                      "product_rel_err": math.sqrt(y_err.value / y_sig.value) if y_sig.value else 0.0,
                      "tokens": int(x.shape[0]),
                      "activation": "given" if activation is not None else
                      f"samples.activation_like({cols}, {AUDIT_TOKENS})"}
        affected = [{"block": [-gi, -gj], "scale": s, "kept": k, "factor": k / s}
                    for _, gi, gj, s, k in sorted(worst, reverse=True)]
    notes = _notes(ref, lay.name, recipe.scale_format.value, non_pow2, fp_scales)
    bins = sorted(hist)
    return TensorAudit(
        name=ref.label, layout=lay.name, producer=lay.producer, recipe=recipe.name, element=lay.element,
        scale_storage=_storage(lay.name, scale_dtype, recipe.name), shape=tuple(ref.shape), tile=(tr, tc),
        blocks=geo.grid[0] * geo.grid[1], second_level=src.scale_2,
        scale_min=smin if math.isfinite(smin) else None, scale_max=smax if math.isfinite(smax) else None,
        scale_log2_bins=bins, scale_log2_counts=[hist[b] for b in bins], ends=ends, zero_scale_blocks=zero_scale,
        zero_code_blocks=zero_codes, nonfinite_blocks=nonfinite, non_pow2_blocks=non_pow2 if fp_scales else None,
        truncation=truncation, affected=affected, code_counts=[int(c) for c in code_counts],
        code_values=[float(v) for v in formats.decode(np.arange(code_counts.size, dtype=np.uint8), elem)],
        codes_used=int(np.count_nonzero(code_counts)), effective_bits=_entropy(code_counts), at_max=at_max,
        numel=numel, producer_vs_recipe=differ, notes=notes)


def _scale_floats(layout: str, stored: np.ndarray, dtype: str) -> np.ndarray:
    from .layouts import scale_values

    return scale_values(layout, stored, dtype)[0].reshape(stored.shape[0], -1)


def _count_ends(layout: str, scale_format: str, stored: np.ndarray, sv: np.ndarray, ends: dict[str, int]) -> None:
    def add(key: str, n: int) -> None:
        if n:
            ends[key] = ends.get(key, 0) + n

    if layout == "gptoss_mxfp4":
        add("E8M0 code 0 (2^-127, the smallest scale)", int(np.count_nonzero(stored == 0)))
        add("E8M0 code 254 (2^127, the largest scale)", int(np.count_nonzero(stored == 254)))
        return
    if layout == "modelopt_nvfp4":
        mag = stored & np.uint8(0x7F)
        add("E4M3 448 (the largest scale: the block's elements may clip)", int(np.count_nonzero(mag == 0x7E)))
        add("E4M3 subnormal scale (fewer significant bits)", int(np.count_nonzero((mag > 0) & (mag < 8))))
        return
    fin = np.isfinite(sv) & (sv > 0)
    add("subnormal FP32 scale", int(np.count_nonzero(fin & (sv < float(_F32.smallest_normal)))))
    add("at FP32's largest value", int(np.count_nonzero(fin & (sv >= float(_F32.max)))))
    if layout == "deepseek_fp8" and scale_format == "FP32":
        add("at DeepGEMM's amax floor 1e-4 / 448 (block amax below 1e-4)",
            int(np.count_nonzero(sv.astype(np.float32) == np.float32(_DEEPGEMM_FLOOR))))
    if layout == "deepseek_fp8" and scale_format == "E8M0":
        ok = is_pow2(sv)
        if ok.any():
            e = np.floor(np.log2(sv[ok])).astype(np.int64)
            add("UE8M0 code 1 (2^-126, DeepGEMM's smallest)", int(np.count_nonzero(e == -126)))
            add("UE8M0 code 254 (2^127, DeepGEMM's largest)", int(np.count_nonzero(e == 127)))


def _notes(ref: TensorRef, layout: str, scale_format: str, non_pow2: int, fp_scales: bool) -> list[str]:
    out = []
    if layout == "deepseek_fp8" and scale_format == "E8M0" and non_pow2:
        out.append(f"the checkpoint declares UE8M0 scales (scale_fmt ue8m0) but {non_pow2} are not powers of two: a "
                   f"UE8M0 kernel keeps only their exponent (see the affected blocks)")
    if layout == "gptoss_mxfp4":
        out.append("scale code 255 is NaN in OCP's E8M0; transformers' ldexp reads it as 2^128 (0 stays 0, 0.5 gives "
                   "2^127, larger values ±Inf): the lab's values follow transformers")
    if layout == "modelopt_nvfp4":
        out.append("ModelOpt multiplies scale · scale_2 and then value · that product in FP32 (two roundings); the "
                   "recipe forms value · scale · scale_2 exactly and rounds once: producer_vs_recipe counts where "
                   "they differ")
    if layout == "compressed_tensors_fp8":
        out.append("the stored FP32 decode scale is the rounding of the recipe's exact reciprocal of its FP32 encode "
                   "scale: producer_vs_recipe counts the elements where that rounding shows")
    if not fp_scales:
        out.append("the block scales are stored in a low-precision format read natively by the kernels of this "
                   "layout (no UE8M0 truncation applies)" if layout == "modelopt_nvfp4"
                   else "the scales are powers of two by construction (E8M0): no truncation applies")
    return out


def _recipe_exact(layout: str, codes: np.ndarray, per_scale: np.ndarray, scale_2: float | None,
                  scale_dtype: str) -> np.ndarray:
    """The recipe's exact dequantization of stored codes under their per-element stored scales
    (float32): value · scale (· scale_2) formed exactly and rounded once, as the recipe's own
    `dequantize()` does (`quant.mx.MXTensor`, `quant.nvfp4.NVFP4Tensor`,
    `quant.fp8_blockwise.FP8TileTensor`); an E8M0 scale code 255 is NaN (OCP)."""
    from .layouts import scale_values

    sv, _ = scale_values(layout, per_scale, scale_dtype)
    vals = formats.decode(codes, formats.get_format(get_layout(layout).element)).astype(np.float64)
    with np.errstate(all="ignore"):
        exact = vals * sv.reshape(vals.shape)
        if layout == "modelopt_nvfp4":
            exact = exact * float(scale_2 if scale_2 is not None else 1.0)
        if layout == "gptoss_mxfp4":
            exact = np.where(per_scale == 255, np.nan, exact)
        return exact.astype(np.float32)
