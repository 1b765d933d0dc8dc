"""Lesson-specific worked examples: every number the curriculum quotes that the core registry lacks.

Each entry of `EXAMPLES` builds a `simulations.example_record.Example` whose values are computed here from
`formats` (never typed in): storage per element from format bit widths, casts through
`formats.quantize`, grid neighbours through directed rounding. Conventions: a decode scale `s`
multiplies codes back to real values (`x ≈ s · q`, `s = amax / F` with `F` the format's largest finite
value, kept in FP32 and not rounded to a scale format unless an example says so); the encode scale is
its inverse `F / amax`. Casts use round-to-nearest-even with saturation (`CastPolicy(overflow=
"saturate")`) unless the example names another policy. Generated tensors use
`numpy.random.default_rng(seed)` with the seed recorded among the values. Models here are explanatory
models, not measurements of any backend or publication.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from lowprec import formats
from lowprec.formats import (
    BF16, E2M1, E4M3FN, E4M3FNUZ, E5M2, E5M2FNUZ, E8M0, FP16, FP32, CastPolicy, Overflow, Rounding, Subnormals,
)

from .example_record import Example
from .scaling.scales import decode_scale, encode_scale

__all__ = ["EXAMPLES"]

SATURATE = CastPolicy(rounding=Rounding.NEAREST_EVEN, overflow=Overflow.SATURATE)


def _example(
    name: str, title: str, source: str, values: dict, units: dict, summary_field: str,
    digits: dict[str, int] | None = None,
) -> Example:
    """Build the registry's Example; a field ending in `_pct` is a percentage (unit %, 1 decimal
    unless `digits` says otherwise)."""
    units = dict(units)
    shown = {k: 1 for k in values if k.endswith("_pct")}
    for k in shown:
        units[k] = "%"
    shown.update(digits or {})
    return Example(
        name=name, title=title, source=source, values=values, units=units, summary_field=summary_field,
        digits=shown,
    )


def _q(x: float | np.ndarray, fmt: formats.Format, policy: CastPolicy | None = None) -> np.ndarray:
    return np.asarray(formats.quantize(np.asarray(x, dtype=np.float64), fmt, policy or SATURATE), dtype=np.float64)


def _q1(x: float, fmt: formats.Format, policy: CastPolicy | None = None) -> float:
    return float(_q(np.array([x]), fmt, policy)[0])


def _scaled_quantize(x: np.ndarray, fmt: formats.Format, decode_scale: np.ndarray | float) -> np.ndarray:
    """x ≈ decode_scale · Q(x / decode_scale) with saturation; a zero decode scale means an all-zero group."""
    s = np.asarray(decode_scale, dtype=np.float64)
    safe = np.where(s > 0, s, 1.0)
    return np.where(s > 0, _q(x / safe, fmt) * safe, 0.0)


# ------------------------------------------------------------------------------------------------
# lesson 1: storage is not arithmetic
# ------------------------------------------------------------------------------------------------


def weight_memory() -> Example:
    params = 7_000_000_000
    nvfp4_bits = E2M1.bits + E4M3FN.bits / 16  # per-16 E4M3 block scale; the one FP32 tensor scale is negligible
    values = {
        "params_billion": params / 1e9,
        "bf16_bits": BF16.bits,
        "fp8_bits": E4M3FN.bits,
        "bf16_gb": params * BF16.bits / 8 / 1e9,
        "fp8_gb": params * E4M3FN.bits / 8 / 1e9,
        "nvfp4_gb": params * nvfp4_bits / 8 / 1e9,
        "nvfp4_bits": nvfp4_bits,
        "fp8_ratio": BF16.bits / E4M3FN.bits,
        "nvfp4_ratio": BF16.bits / nvfp4_bits,
    }
    units = {
        "params_billion": "billion", "bf16_bits": "bits", "fp8_bits": "bits", "bf16_gb": "GB", "fp8_gb": "GB", "nvfp4_gb": "GB",
        "nvfp4_bits": "bits/element", "fp8_ratio": "×", "nvfp4_ratio": "×",
    }
    return _example(
        "weight_memory", "Weight storage of a 7-billion-parameter model",
        "params × bits per element / 8 from formats.BF16/E4M3FN/E2M1 bit widths (decimal GB)",
        values, units, "fp8_gb", digits={"nvfp4_gb": 2, "nvfp4_ratio": 2},
    )


# ------------------------------------------------------------------------------------------------
# lesson 2: range vs resolution
# ------------------------------------------------------------------------------------------------


def fp16_vs_bf16() -> Example:
    x = 1.001
    big = 70000.0
    values = {
        "fp16_exponent_bits": FP16.exponent_bits, "fp16_mantissa_bits": FP16.mantissa_bits,
        "bf16_exponent_bits": BF16.exponent_bits, "bf16_mantissa_bits": BF16.mantissa_bits,
        "fp16_max": float(FP16.max), "bf16_max": float(BF16.max),
        "fp16_eps": float(FP16.eps), "bf16_eps": float(BF16.eps),
        "fp16_smallest_normal": float(FP16.smallest_normal), "bf16_smallest_normal": float(BF16.smallest_normal),
        "x": x, "x_fp16": _q1(x, FP16), "x_bf16": _q1(x, BF16),
        "big": big,
        "big_fp16": _q1(big, FP16, formats.default_policy(FP16)),
        "big_bf16": _q1(big, BF16, formats.default_policy(BF16)),
    }
    return _example(
        "fp16_vs_bf16", "FP16 spends bits on resolution, BF16 on range",
        "formats.FP16/BF16 properties; formats.quantize(x) with round-to-nearest-even, IEEE overflow to Inf",
        values, {k: "" for k in values}, "bf16_max",
    )


def e4m3_variants() -> Example:
    values: dict[str, float | int | str] = {}
    for fmt in (E4M3FN, E4M3FNUZ, E5M2, E5M2FNUZ):
        key = fmt.name.lower()
        values[f"{key}_max"] = float(fmt.max)
        values[f"{key}_has_inf"] = "yes" if fmt.has_inf else "no"
        values[f"{key}_bias"] = int(fmt.bias)
    return _example(
        "e4m3_variants", "Four 8-bit float layouts with the same field widths or nearly",
        "formats.E4M3FN/E4M3FNUZ/E5M2/E5M2FNUZ properties",
        values, {k: "" for k in values}, "e4m3fn_max",
    )


def subnormal_flush() -> Example:
    x = 3 * float(E4M3FN.smallest_subnormal)
    keep = SATURATE.with_(subnormals=Subnormals.KEEP)
    flush = SATURATE.with_(subnormals=Subnormals.FLUSH)
    values = {
        "smallest_subnormal": float(E4M3FN.smallest_subnormal),
        "smallest_normal": float(E4M3FN.smallest_normal),
        "x": x, "x_keep": _q1(x, E4M3FN, keep), "x_flush": _q1(x, E4M3FN, flush),
    }
    return _example(
        "subnormal_flush", "E4M3FN subnormals kept or flushed",
        "formats.quantize(3 × smallest subnormal, E4M3FN) with subnormals='keep' and 'flush'",
        values, {k: "" for k in values}, "x_flush",
    )


# ------------------------------------------------------------------------------------------------
# lesson 4: scales
# ------------------------------------------------------------------------------------------------


def scale_conventions() -> Example:
    amax = 3.5
    fmax = float(E4M3FN.max)
    decode_scale = amax / fmax
    encode_scale = fmax / amax
    x = 1.0
    code_value = _q1(x * encode_scale, E4M3FN)
    values = {
        "amax": amax, "fmt_max": fmax, "decode_scale": decode_scale, "encode_scale": encode_scale,
        "x": x, "stored": code_value, "x_back": code_value * decode_scale,
        # a reader who takes the stored encode scale for a decode scale multiplies instead of dividing
        "x_misread": code_value * encode_scale, "misread_factor": encode_scale / decode_scale,
    }
    return _example(
        "scale_conventions", "One amax, two scale conventions (E4M3FN)",
        "decode_scale = amax / E4M3FN.max, encode_scale = E4M3FN.max / amax; formats.quantize(x · encode_scale)",
        values, {k: "" for k in values}, "decode_scale",
    )


def zero_tensor_scale() -> Example:

    values = {
        "decode_scale_zero": float(decode_scale(0.0, E4M3FN)),
        "encode_scale_zero": float(encode_scale(0.0, E4M3FN)),
        "decode_scale_nan": float(decode_scale(float("nan"), E4M3FN)),
        "decode_scale_3_5": float(decode_scale(3.5, E4M3FN)),
    }
    return _example(
        "zero_tensor_scale", "The safe scale of an all-zero (or non-finite) amax",
        "lowprec.simulations.scaling.scales.decode_scale / encode_scale with amax 0, NaN and 3.5 (E4M3FN)",
        values, {k: "" for k in values}, "decode_scale_zero",
    )


def fixed_scale_shrink() -> Example:
    """Standard-normal tensors times a shrinking magnitude, cast to E4M3FN with a fixed scale of 1
    versus an amax scale: fraction rounded to zero and RMS relative error of the nonzero inputs."""
    seed = 0
    base = np.random.default_rng(seed).standard_normal(4096)
    values: dict[str, float | int | str] = {"seed": seed, "n": base.size}
    for label, magnitude in (("1", 1.0), ("1e_2", 1e-2), ("1e_3", 1e-3), ("1e_4", 1e-4)):
        x = base * magnitude
        fixed = _q(x, E4M3FN)
        amax_scaled = _scaled_quantize(x, E4M3FN, float(np.max(np.abs(x))) / float(E4M3FN.max))
        values[f"zero_fixed_{label}_pct"] = 100 * float(np.mean(fixed == 0))
        values[f"rel_err_fixed_{label}"] = float(np.sqrt(np.mean(((fixed - x) / x) ** 2)))
        values[f"rel_err_amax_{label}"] = float(np.sqrt(np.mean(((amax_scaled - x) / x) ** 2)))
    return _example(
        "fixed_scale_shrink", "A fixed scale of 1 as a tensor's magnitude shrinks (E4M3FN)",
        "4096 standard-normal values × magnitude; formats.quantize with scale 1 vs decode scale amax / 448",
        values, {k: "" for k in values}, "zero_fixed_1e_4_pct",
        digits={k: 3 for k in values if k.startswith("rel_err")},
    )


def clip_vs_zero() -> Example:
    """A heavy-tailed tensor (Student t, 3 degrees of freedom) in E4M3FN: a decode scale from the
    maximum vs from the 99th percentile magnitude. The percentile clips the tail, the max keeps it."""
    seed = 1
    x = np.random.default_rng(seed).standard_t(3, size=8192) * 1e-3
    fmax = float(E4M3FN.max)
    out: dict[str, float | int | str] = {"seed": seed, "n": x.size}
    for label, amax in (("max", float(np.max(np.abs(x)))), ("p99", float(np.quantile(np.abs(x), 0.99)))):
        s = amax / fmax
        y = _scaled_quantize(x, E4M3FN, s)
        out[f"clipped_{label}_pct"] = 100 * float(np.mean(np.abs(x) > amax))
        out[f"zero_{label}_pct"] = 100 * float(np.mean(y == 0))
        out[f"max_abs_err_{label}"] = float(np.max(np.abs(y - x)))
        out[f"rms_err_{label}"] = float(np.sqrt(np.mean((y - x) ** 2)))
    return _example(
        "clip_vs_zero", "Clipping the tail vs keeping it (E4M3FN, heavy-tailed tensor)",
        "8192 Student-t(3) values × 1e-3; decode scale amax / 448 with amax = max or 99th percentile of |x|",
        out, {k: "" for k in out}, "clipped_p99_pct",
        digits={**{k: 6 for k in out if "err" in k}, **{k: 2 for k in out if k.endswith("_pct")}},
    )


# ------------------------------------------------------------------------------------------------
# lesson 5: grouping
# ------------------------------------------------------------------------------------------------


def outlier_group() -> Example:
    """A 16×64 standard-normal matrix with one outlier of 100 at row 3, column 5: RMS relative error of
    the ordinary values under per-tensor, per-row and 1×32-block decode scales (amax / F, FP32)."""
    seed = 0
    rows, cols, outlier = 16, 64, 100.0
    x = np.random.default_rng(seed).standard_normal((rows, cols))
    x[3, 5] = outlier
    ordinary = np.ones_like(x, dtype=bool)
    ordinary[3, 5] = False
    values: dict[str, float | int | str] = {"seed": seed, "rows": rows, "cols": cols, "outlier": outlier}
    for fmt in (E4M3FN, E2M1):
        fmax = float(fmt.max)
        amax_groups = {
            "tensor": np.full_like(x, np.max(np.abs(x))),
            "row": np.repeat(np.max(np.abs(x), axis=1, keepdims=True), cols, axis=1),
            "block32": np.repeat(np.max(np.abs(x.reshape(rows, cols // 32, 32)), axis=2), 32, axis=1),
        }
        for label, amax in amax_groups.items():
            y = _scaled_quantize(x, fmt, amax / fmax)
            rel = (y - x)[ordinary] / x[ordinary]
            key = f"{fmt.name.lower()}_{label}"
            values[f"{key}_rms_rel_err"] = float(np.sqrt(np.mean(rel**2)))
            values[f"{key}_zero_pct"] = 100 * float(np.mean(y[ordinary] == 0))
    return _example(
        "outlier_group", "One outlier and the values that share its scale",
        "16×64 standard-normal matrix, x[3,5] = 100; decode scale amax / F per tensor, row or 1×32 block",
        values, {k: "" for k in values}, "e2m1_tensor_zero_pct",
        digits={k: 3 for k in values if k.endswith("rms_rel_err")},
    )


def metadata_cost() -> Example:
    rows = cols = 4096
    values = {
        "rows": rows, "cols": cols,
        "tensor_fp32_bits": FP32.bits / (rows * cols),
        "row_fp32_bits": FP32.bits / cols,
        "block32_e8m0_bits": E8M0.bits / 32,
        "block16_e4m3fn_bits": E4M3FN.bits / 16,
        "block16x16_e4m3fn_bits": E4M3FN.bits / 256,
    }
    units = {k: "bits/element" for k in values}
    units["rows"] = units["cols"] = ""
    return _example(
        "metadata_cost", "Scale metadata per element for a 4096×4096 tensor",
        "scale format bits / elements per scale (formats.FP32/E8M0/E4M3FN bit widths)",
        values, units, "block32_e8m0_bits",
    )


# ------------------------------------------------------------------------------------------------
# lesson 9 and 10: sensitive paths, small updates, loss scaling
# ------------------------------------------------------------------------------------------------


def router_near_tie() -> Example:
    logits = np.array([3.0, 3.005])
    cast = _q(logits, BF16)
    values = {
        "logit_a": float(logits[0]), "logit_b": float(logits[1]),
        "logit_a_bf16": float(cast[0]), "logit_b_bf16": float(cast[1]),
        "bf16_gap_at_3": float(2.0 ** (np.floor(np.log2(3.0)) - BF16.mantissa_bits)),
        "top1_fp32": "expert b" if logits[1] > logits[0] else "expert a",
        "top1_bf16": "tie" if cast[1] == cast[0] else ("expert b" if cast[1] > cast[0] else "expert a"),
    }
    return _example(
        "router_near_tie", "A router near-tie collapses in BF16",
        "formats.quantize([3.0, 3.005], BF16), round-to-nearest-even; gap = 2^(floor(log2 3) − 7)",
        values, {k: "" for k in values}, "top1_bf16",
    )


def stalled_update() -> Example:
    w0, update, steps = 1.0, 1e-3, 100
    w_bf16 = w0
    master = np.float32(w0)
    for _ in range(steps):
        w_bf16 = _q1(w_bf16 + update, BF16)
        master = np.float32(master + np.float32(update))
    values = {
        "w0": w0, "update": update, "steps": steps,
        "bf16_gap_at_1": float(BF16.eps),
        "bf16_only_final": w_bf16,
        "master_final": float(master),
        "master_cast_bf16": _q1(float(master), BF16),
    }
    return _example(
        "stalled_update", "Small updates vanish without a master weight",
        "w ← BF16(w + 1e-3) 100 times vs an FP32 master w ← w + 1e-3 cast to BF16 at the end",
        values, {k: "" for k in values}, "bf16_only_final", digits={"master_final": 6},
    )


def loss_scaling() -> Example:
    grad = 1e-8
    loss_scale = 2.0**16
    ieee = formats.default_policy(FP16)
    scaled = _q1(grad * loss_scale, FP16, ieee)
    values = {
        "grad": grad, "fp16_smallest_subnormal": float(FP16.smallest_subnormal),
        "grad_fp16": _q1(grad, FP16, ieee), "loss_scale": loss_scale,
        "scaled_fp16": scaled, "unscaled_fp32": float(np.float32(scaled) / np.float32(loss_scale)),
    }
    return _example(
        "loss_scaling", "Loss scaling keeps a small FP16 gradient",
        "formats.quantize(1e-8, FP16) vs formats.quantize(1e-8 · 2^16, FP16) / 2^16 in FP32",
        values, {k: "" for k in values}, "grad_fp16",
        digits={"fp16_smallest_subnormal": 3, "scaled_fp16": 6, "unscaled_fp32": 4},
    )


# ------------------------------------------------------------------------------------------------
# lesson 11: stochastic rounding variance
# ------------------------------------------------------------------------------------------------


def sr_variance() -> Example:
    p = 0.3
    lo = _q1(p, E4M3FN, SATURATE.with_(rounding=Rounding.DOWN))
    hi = _q1(p, E4M3FN, SATURATE.with_(rounding=Rounding.UP))
    p_up = (p - lo) / (hi - lo)
    values = {
        "p": p, "lo": lo, "hi": hi, "p_up": p_up,
        "nearest": _q1(p, E4M3FN), "nearest_err": _q1(p, E4M3FN) - p,
        "sr_mean": lo + p_up * (hi - lo), "sr_var": (hi - p) * (p - lo), "sr_std": float(np.sqrt((hi - p) * (p - lo))),
    }
    return _example(
        "sr_variance", "Stochastic rounding of 0.3 in E4M3FN: unbiased, not exact",
        "neighbours from formats.quantize with rounding='down'/'up'; P(up) = (p − lo)/(hi − lo); Var = (hi − p)(p − lo)",
        values, {k: "" for k in values}, "sr_var",
        digits={"p_up": 4, "nearest_err": 4, "sr_mean": 6, "sr_var": 9, "sr_std": 4},
    )


# ------------------------------------------------------------------------------------------------
# lesson 12: a stale scale under recompute (explanatory model)
# ------------------------------------------------------------------------------------------------


def recompute_stale_scale() -> Example:
    """Max-of-history delayed scaling (history 4) for one layer; at step t the true forward uses the
    scale from amaxes before t; the defective recompute reruns after the forward recorded amax_t and
    advanced the state, so it uses the next step's scale and records amax_t a second time."""
    seed, history_len = 0, 4
    amax_history = [1.0, 1.1, 0.9, 1.2]
    x = np.random.default_rng(seed).standard_normal(1024)
    x *= 1.5 / np.max(np.abs(x))  # this step's tensor peaks at 1.5, above every recorded amax
    fmax = float(E4M3FN.max)
    step_amax = float(np.max(np.abs(x)))

    def decode_scale(history: list[float]) -> float:
        return max(history[-history_len:]) / fmax

    # true forward: cast with the state before step t, then record amax_t once
    forward_s = decode_scale(amax_history)
    live = amax_history + [step_amax]
    # defective recompute: re-enters with the advanced state and records amax_t again
    recompute_s = decode_scale(live)
    defective = live + [step_amax]
    # fixed design: the recompute reuses the forward's snapshot and records nothing
    fixed = list(live)
    y_fwd = _scaled_quantize(x, E4M3FN, forward_s)
    y_rec = _scaled_quantize(x, E4M3FN, recompute_s)
    y_fixed = _scaled_quantize(x, E4M3FN, forward_s)
    values = {
        "seed": seed, "history_len": history_len, "step_amax": step_amax,
        "forward_decode_scale": forward_s, "recompute_decode_scale": recompute_s,
        "scale_ratio": recompute_s / forward_s,
        "differ_pct": 100 * float(np.mean(y_fwd != y_rec)),
        "max_abs_diff": float(np.max(np.abs(y_fwd - y_rec))),
        "clipped_forward_pct": 100 * float(np.mean(np.abs(x) > forward_s * fmax)),
        "fixed_differ_pct": 100 * float(np.mean(y_fwd != y_fixed)),
        "inserts_defective": len(defective) - len(amax_history),
        "inserts_fixed": len(fixed) - len(amax_history),
    }
    return _example(
        "recompute_stale_scale", "Forward and recompute quantize the same tensor with different scales",
        "explanatory model: E4M3FN, decode scale = max(last 4 amax) / 448; forward vs recompute from the advanced state vs recompute from the snapshot",
        values, {k: "" for k in values}, "differ_pct",
        digits={"forward_decode_scale": 6, "recompute_decode_scale": 6, "scale_ratio": 4,
                "max_abs_diff": 4, "clipped_forward_pct": 2},
    )


# ------------------------------------------------------------------------------------------------
# lesson 14: the KV-cache element format
# ------------------------------------------------------------------------------------------------


def fp4_kv_bits() -> Example:
    bits = E2M1.bits + E4M3FN.bits / 16
    values = {
        "e2m1_bits": E2M1.bits, "scale_bits": E4M3FN.bits, "group": 16,
        "bits_per_element": bits, "vs_bf16": BF16.bits / bits, "vs_fp8": E4M3FN.bits / bits,
    }
    units = {k: "" for k in values}
    units["bits_per_element"] = "bits/element"
    return _example(
        "fp4_kv_bits", "E2M1 values with one E4M3 scale per 16 channels",
        "E2M1.bits + E4M3FN.bits / 16 (no second-level tensor scale)",
        values, units, "bits_per_element", digits={"vs_bf16": 2, "vs_fp8": 2},
    )


EXAMPLES: dict[str, Callable[[], Example]] = {
    "weight_memory": weight_memory,
    "fp16_vs_bf16": fp16_vs_bf16,
    "e4m3_variants": e4m3_variants,
    "subnormal_flush": subnormal_flush,
    "scale_conventions": scale_conventions,
    "zero_tensor_scale": zero_tensor_scale,
    "fixed_scale_shrink": fixed_scale_shrink,
    "clip_vs_zero": clip_vs_zero,
    "outlier_group": outlier_group,
    "metadata_cost": metadata_cost,
    "router_near_tie": router_near_tie,
    "stalled_update": stalled_update,
    "loss_scaling": loss_scaling,
    "sr_variance": sr_variance,
    "recompute_stale_scale": recompute_stale_scale,
    "fp4_kv_bits": fp4_kv_bits,
}
