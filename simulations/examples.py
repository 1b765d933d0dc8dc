"""Worked examples: every number a lesson quotes, as a named function that computes it.

A lesson writes `{{ example:NAME }}` (the example's summary field) or `{{ example:NAME.FIELD }}`, and
the renderer prints `example(NAME).format(FIELD)`, so prose can never drift from the code. Values are
computed with `formats` (round-to-nearest-even unless a convention is named; conventions from
`formats.policy_for`), `fractions.Fraction` and the simulations in this package; only inputs are
typed in (a block size, a byte count per token, the value being cast). Sizes use decimal megabytes
(10^6 bytes) and binary gibibytes (2^30 bytes). Block layouts follow the OCP Microscaling Formats (MX)
v1.0 specification (32 elements per E8M0 scale) and NVIDIA's NVFP4 description (16 E2M1 elements per
E4M3 scale, one FP32 scale per tensor). The record itself is `simulations.example_record.Example`;
the lesson-specific examples of `simulations.examples_extra`, the predictions and exercises of
`simulations.examples_course` and the block-convention examples of `simulations.examples_blocks`
join this registry.
"""

from __future__ import annotations

import math
import sys
from fractions import Fraction
from typing import Any, Callable, Sequence

import numpy as np

from lowprec.formats import (
    BF16,
    E2M1,
    E4M3FN,
    E5M2,
    E8M0,
    FP16,
    FP32,
    FloatFormat,
    code_table,
    decode,
    encode,
    policy_for,
)

from . import (examples_blocks, examples_ckpt, examples_course, examples_extra, examples_gemm, examples_stateful,
               examples_transfer)
from .framework.io import ArgumentParser, check_output_path, error_exit, write_json
from .example_record import Example, Value, as_number, format_number
from .quant.mx import mx_scale_rule_table
from .studies.spike import simulate_stream

__all__ = ["EXAMPLES", "TORCH_EXAMPLES", "Example", "example", "list_examples"]


def _short_exp(v: float) -> str:
    """1e-08 → '1e-8' (Python's %g keeps a two-digit exponent)."""
    return f"{v:g}".replace("e-0", "e-").replace("e+0", "e+")


def _fraction_text(value: float) -> str:
    """1.00390625 → '1 + 1/256'; exact, for values with a short binary expansion."""
    q = Fraction(value)
    whole = math.floor(q)
    rest = q - whole
    if rest == 0:
        return str(whole)
    return f"{whole} + {rest.numerator}/{rest.denominator}" if whole else f"{rest.numerator}/{rest.denominator}"


def _cast(x: float, fmt: Any, convention: str | None = None) -> float:
    pol = None if convention is None else policy_for(convention, fmt)
    return float(decode(encode(np.array([x], dtype=np.float64), fmt, pol), fmt)[0])


# ------------------------------------------------------------------------------------------------
# the examples
# ------------------------------------------------------------------------------------------------


def attention_product() -> Example:
    from lowprec.simulations.studies.attention import attention_product_example

    r = attention_product_example()
    return Example(
        "attention_product", "Rounded attention probabilities lose the product",
        "lowprec.simulations.studies.attention.attention_product_example: P rounded to multiples of 0.25 "
        "(nearest-even), products summed exactly with Fractions",
        {"probs": r.probs, "probs_rounded": r.probs_rounded, "values": r.values,
         "grid_step": r.grid_step, "exact_product": float(r.exact_product),
         "rounded_product": float(r.rounded_product),
         "change": f"{format_number(float(r.exact_product), None)} → "
                   f"{format_number(float(r.rounded_product), None)}"},
        {"probs": "", "probs_rounded": "", "values": "", "grid_step": "", "exact_product": "",
         "rounded_product": "", "change": ""},
        "change")


def bf16_tie_flip() -> Example:
    from lowprec.simulations.studies.cliffs import tie_flip

    even = tie_flip("BF16", 1.0, 2.0 ** -16)
    odd = tie_flip("BF16", even.upper, 2.0 ** -16)
    return Example(
        "bf16_tie_flip", "A perturbation of 2^-16 flips a BF16 tie",
        "simulations.studies.cliffs.tie_flip: neighbours from formats (BF16 codes), nearest-even casts of "
        "exact sums",
        {"lower": even.lower, "upper": even.upper, "upper_text": _fraction_text(even.upper),
         "midpoint": even.midpoint, "midpoint_text": _fraction_text(even.midpoint),
         "rounded_midpoint": even.rounded_midpoint, "perturbation": even.perturbation,
         "perturbation_text": "2^-16", "rounded_perturbed": even.rounded_plus,
         "rounded_perturbed_text": _fraction_text(even.rounded_plus),
         "odd_lower": odd.lower, "odd_lower_text": _fraction_text(odd.lower),
         "odd_midpoint": odd.midpoint, "odd_midpoint_text": _fraction_text(odd.midpoint),
         "odd_rounded_midpoint": odd.rounded_midpoint,
         "odd_rounded_midpoint_text": _fraction_text(odd.rounded_midpoint),
         "flip": f"{_fraction_text(even.midpoint)} → {_fraction_text(even.rounded_midpoint)}, "
                 f"but + 2^-16 → {_fraction_text(even.rounded_plus)}"},
        {k: "" for k in ("lower", "upper", "upper_text", "midpoint", "midpoint_text", "rounded_midpoint",
                         "perturbation", "perturbation_text", "rounded_perturbed",
                         "rounded_perturbed_text", "odd_lower", "odd_lower_text", "odd_midpoint",
                         "odd_midpoint_text", "odd_rounded_midpoint", "odd_rounded_midpoint_text",
                         "flip")},
        "flip")


def fp32_absorption() -> Example:
    from lowprec.simulations.studies.cliffs import absorption

    r32 = absorption("FP32", 1e-8)
    thresholds = {f: absorption(f, 0.0).threshold for f in ("FP32", "BF16", "FP16")}
    return Example(
        "fp32_absorption", "1 + 1e-8 == 1 in FP32",
        "lowprec.simulations.studies.cliffs.absorption: the exact sum rounded once to the format (nearest-even); "
        "threshold = half the gap above 1 (a tie at exactly the threshold goes to 1, whose code is even)",
        {"x": r32.x, "x_in_fp32": r32.x_in_format, "sum_fp32": r32.total, "absorbed": r32.absorbed,
         "statement": f"1 + {_short_exp(r32.x)} {'==' if r32.absorbed else '!='} 1 in FP32",
         "threshold_fp32": thresholds["FP32"], "threshold_bf16": thresholds["BF16"],
         "threshold_fp16": thresholds["FP16"],
         "threshold_fp32_text": f"2^{int(math.log2(thresholds['FP32']))}",
         "threshold_bf16_text": f"2^{int(math.log2(thresholds['BF16']))}",
         "threshold_fp16_text": f"2^{int(math.log2(thresholds['FP16']))}"},
        {"x": "", "x_in_fp32": "", "sum_fp32": "", "absorbed": "", "statement": "",
         "threshold_fp32": "", "threshold_bf16": "", "threshold_fp16": "", "threshold_fp32_text": "",
         "threshold_bf16_text": "", "threshold_fp16_text": ""},
        "statement", digits={"x_in_fp32": 9})


def fake_quant_scalar() -> Example:
    from lowprec.simulations.studies.cliffs import fake_quant_scalar as fq

    return Example(
        "fake_quant_scalar", "Fake quantization of a scalar",
        "lowprec.simulations.studies.cliffs.fake_quant_scalar: clamp(round_half_even(x / s) + z, qmin, qmax), "
        "then (q − z)·s",
        {"x1": 0.6, "scale": 0.25, "zero_point": 0, "qmin": -7, "qmax": 7,
         "result1": fq(0.6, 0.25, 0, -7, 7), "x2": 2.0, "result2": fq(2.0, 0.25, 0, -7, 7),
         "q2_unclipped": round(2.0 / 0.25)},
        {"x1": "", "scale": "", "zero_point": "", "qmin": "", "qmax": "", "result1": "", "x2": "",
         "result2": "", "q2_unclipped": ""},
        "result1")


def _range_example(fmt: FloatFormat) -> Example:
    table = code_table(fmt)
    finite = np.isfinite(table.value)
    n_finite = int(np.count_nonzero(finite))
    n_distinct = int(np.unique(table.value[finite]).size)
    smallest = fmt.smallest_subnormal
    values: dict[str, Value] = {
        "max": fmt.max, "max_text": _pow2_text(fmt.max),
        "smallest_normal": fmt.smallest_normal, "smallest_normal_text": _pow2_text(fmt.smallest_normal),
        "smallest_subnormal": smallest, "smallest_subnormal_text": _pow2_text(smallest),
        "eps": fmt.eps, "eps_text": _pow2_text(fmt.eps),
        "bits": fmt.bits, "n_codes": fmt.n_codes, "n_finite": n_finite,
        "n_distinct_finite": n_distinct,
        "n_nan": int(np.count_nonzero(np.isnan(table.value))),
        "n_inf": int(np.count_nonzero(np.isinf(table.value))),
        "emax": fmt.emax, "emin": fmt.emin,
        "binades": round(math.log2(fmt.max / smallest), 6),
    }
    units = {k: "" for k in values}
    units.update({"bits": "bits", "binades": "binades"})
    return Example(
        f"{fmt.name.lower()}_range", f"{fmt.name}: range and resolution",
        f"formats.{fmt.name} properties and formats.code_table('{fmt.name}') (count of finite codes, "
        f"both zeros counted, and of distinct finite values)",
        values, units, "max", digits={"binades": 3})


def _pow2_text(v: float) -> str:
    if v <= 0 or not math.isfinite(v):
        return format_number(v, None)
    q = Fraction(v)
    e = math.floor(math.log2(v))
    if Fraction(2) ** e > q:
        e -= 1
    m = q / Fraction(2) ** e
    return f"2^{e}" if m == 1 else f"{m.numerator}/{m.denominator} × 2^{e}"


def e4m3fn_range() -> Example:
    return _range_example(E4M3FN)


def e5m2_range() -> Example:
    return _range_example(E5M2)


def e2m1_range() -> Example:
    return _range_example(E2M1)


def e8m0_range() -> Example:
    return _range_example(E8M0)


def e4m3fn_gaps() -> Example:
    table = code_table(E4M3FN)
    v, gap = table.value, table.gap_next
    pos = np.isfinite(v) & (v > 0) & (table.sign == 0)

    def gap_above(x: float) -> float:
        return float(gap[pos & (v == x)][0])

    below_max = float(np.max(v[pos & (v < E4M3FN.max)]))
    values: dict[str, Value] = {
        "gap_at_1": gap_above(1.0),
        "gap_below_1": 1.0 - float(np.max(v[pos & (v < 1.0)])),
        "rel_gap_at_1": gap_above(1.0) / 1.0,
        "gap_at_max": E4M3FN.max - below_max,
        "below_max": below_max,
        "gap_at_smallest_normal": gap_above(E4M3FN.smallest_normal),
        "gap_subnormal": E4M3FN.smallest_subnormal,
        "max_rel_gap_normal": float(np.nanmax(table.rel_gap[pos & (v >= E4M3FN.smallest_normal)])),
        "min_rel_gap_normal": float(np.nanmin(table.rel_gap[pos & (v >= E4M3FN.smallest_normal)])),
    }
    return Example(
        "e4m3fn_gaps", "E4M3FN: gaps between neighbours",
        "formats.code_table('E4M3FN'): gap_next and rel_gap per code; the gap at max is "
        "max − (largest value below max)",
        values, {k: "" for k in values}, "gap_at_1")


def mxfp8_bits_per_element() -> Example:
    block = 32  # input: OCP MX v1.0 block size
    bits = E4M3FN.bits + Fraction(E8M0.bits, block)
    return Example(
        "mxfp8_bits_per_element", "MXFP8 storage cost",
        "OCP MX v1.0: 32 E4M3 (or E5M2) elements share one E8M0 scale; bits = element bits + "
        "scale bits / 32 (widths from formats)",
        {"element_bits": E4M3FN.bits, "scale_bits": E8M0.bits, "block_size": block,
         "bits_per_element": float(bits), "overhead_percent": float((bits / E4M3FN.bits - 1) * 100)},
        {"element_bits": "bits", "scale_bits": "bits", "block_size": "elements",
         "bits_per_element": "bits", "overhead_percent": "%"},
        "bits_per_element", digits={"overhead_percent": 3})


def nvfp4_bits_per_element() -> Example:
    block = 16  # input: NVFP4 block size
    rows, cols = 4096, 4096  # input: an example weight matrix for amortising the tensor scale
    per_block = E2M1.bits + Fraction(E4M3FN.bits, block)
    with_tensor = per_block + Fraction(FP32.bits, rows * cols)
    return Example(
        "nvfp4_bits_per_element", "NVFP4 storage cost",
        "NVFP4: 16 E2M1 elements share one E4M3 scale, plus one FP32 scale per tensor amortised over "
        "its elements (widths from formats)",
        {"element_bits": E2M1.bits, "block_scale_bits": E4M3FN.bits, "block_size": block,
         "tensor_scale_bits": FP32.bits, "tensor_elements": rows * cols,
         "tensor_shape": f"{rows} × {cols}",
         "bits_per_element": float(per_block),
         "bits_per_element_with_tensor_scale": float(with_tensor),
         "tensor_scale_bits_per_element": float(Fraction(FP32.bits, rows * cols))},
        {"element_bits": "bits", "block_scale_bits": "bits", "block_size": "elements",
         "tensor_scale_bits": "bits", "tensor_elements": "elements", "tensor_shape": "",
         "bits_per_element": "bits", "bits_per_element_with_tensor_scale": "bits",
         "tensor_scale_bits_per_element": "bits"},
        "bits_per_element", digits={"bits_per_element_with_tensor_scale": 7,
                                    "tensor_scale_bits_per_element": 3})


def kv_cache_memory() -> Example:
    bytes_per_token = 890  # input: a reported compressed KV-cache footprint
    tokens = 1_000_000  # input: one million tokens of context
    total = bytes_per_token * tokens
    return Example(
        "kv_cache_memory", "KV-cache memory for a million tokens",
        "890 bytes per token (a reported figure for one model's compressed cache) × 10^6 tokens; "
        "MB = 10^6 bytes, GiB = 2^30 bytes",
        {"bytes_per_token": bytes_per_token, "tokens": tokens, "bytes": total,
         "megabytes": total / 10 ** 6, "gibibytes": total / 2 ** 30,
         "summary": f"{format_number(total / 10 ** 6, None)} MB ≈ "
                    f"{format_number(total / 2 ** 30, 2)} GiB"},
        {"bytes_per_token": "bytes", "tokens": "tokens", "bytes": "bytes", "megabytes": "MB",
         "gibibytes": "GiB", "summary": ""},
        "megabytes", digits={"gibibytes": 2})


def softmax_saturation() -> Example:
    from lowprec.simulations.studies.cliffs import softmax_saturation as sat

    values: dict[str, Value] = {}
    for fmt in ("FP32", "BF16", "FP16"):
        r = sat(fmt)
        key = fmt.lower()
        values[f"{key}_logits"] = r.logits
        values[f"{key}_p_target"] = r.probs[r.target]
        values[f"{key}_p_other"] = r.probs[1 - r.target if r.target < 2 else 0]
        values[f"{key}_grad_naive"] = r.grad_naive[r.target]
        values[f"{key}_grad_rewritten"] = r.grad_rewritten[r.target]
        values[f"{key}_grad_reference"] = r.grad_reference[r.target]
    return Example(
        "softmax_saturation", "A probability that rounds to 1 loses its gradient",
        "lowprec.simulations.studies.cliffs.softmax_saturation: softmax op by op in each format (nearest-even), "
        "logits [d, 0, 0] with the smallest integer d that saturates; target class 0; the rewrite "
        "is −Σ_{k≠y} e_k / Σ e_k; the reference is float64",
        values | {"statement": (
            f"FP32: p_y rounds to {format_number(as_number(values['fp32_p_target']), None)}, so p − y = "
            f"{format_number(as_number(values['fp32_grad_naive']), None)}; the rewrite gives "
            f"{as_number(values['fp32_grad_rewritten']):.4g}")},
        {k: "" for k in values} | {"statement": ""}, "statement",
        digits={k: 4 for k in values if "grad_r" in k or "p_other" in k})


def e4m3fn_overflow_conventions() -> Example:
    x = 465.0  # input: just above the overflow threshold 464 (midpoint of 448 and 480)
    values: dict[str, Value] = {"x": x}
    for conv in ("ml_dtypes", "torch", "triton_nvidia", "ocp"):
        values[conv] = _cast(x, E4M3FN, conv)
    values["threshold"] = E4M3FN.max + (E4M3FN.max - float(
        decode(encode(np.array([E4M3FN.max]), E4M3FN) - 1, E4M3FN)[0])) / 2
    values["threshold_ml_dtypes"] = _cast(as_number(values["threshold"]), E4M3FN, "ml_dtypes")
    values["summary"] = (f"{format_number(x, None)} → {format_number(as_number(values['ml_dtypes']), None)} "
                         f"in ml_dtypes, {format_number(as_number(values['torch']), None)} in torch")
    return Example(
        "e4m3fn_overflow_conventions", "E4M3FN overflow differs between backends",
        "formats.policy_for(convention, 'E4M3FN') applied by formats.encode; the threshold is "
        "max + half the top gap (a tie there rounds to max, whose code is even)",
        values, {k: "" for k in values}, "summary")


def e8m0_ties() -> Example:
    values: dict[str, Value] = {"x1": 3.0, "x2": 0.75}
    for conv in ("ml_dtypes", "torch"):
        values[f"x1_{conv}"] = _cast(3.0, E8M0, conv)
        values[f"x2_{conv}"] = _cast(0.75, E8M0, conv)
    values["summary"] = (f"3 → {format_number(as_number(values['x1_ml_dtypes']), None)}, "
                         f"0.75 → {format_number(as_number(values['x2_ml_dtypes']), None)}")
    return Example(
        "e8m0_ties", "E8M0 ties round up",
        "formats.policy_for('ml_dtypes' / 'torch', 'E8M0'): 3 lies midway between 2 and 4, 0.75 "
        "midway between 0.5 and 1; both backends round such ties away from zero",
        values, {k: "" for k in values}, "summary")


def bf16_update_stall() -> Example:
    from lowprec.simulations.studies.cliffs import update_stall_sweep

    r = update_stall_sweep(np.array([2.0 ** -10, 2.0 ** -8]), steps=100)
    return Example(
        "bf16_update_stall", "Updates below half a BF16 gap never move the weight",
        "lowprec.simulations.studies.cliffs.update_stall_sweep: weight 1.0, gradient 1, 100 SGD steps in BF16 vs an "
        "FP32 master weight",
        {"weight": r.weight, "stall_threshold": r.stall_threshold,
         "stall_threshold_text": _pow2_text(r.stall_threshold),
         "small_update": float(r.update[0]), "small_change_bf16": float(r.change_low[0]),
         "small_change_master": float(r.change_master[0]),
         "large_update": float(r.update[1]), "large_change_bf16": float(r.change_low[1]),
         "steps": r.steps},
        {"weight": "", "stall_threshold": "", "stall_threshold_text": "", "small_update": "",
         "small_change_bf16": "", "small_change_master": "", "large_update": "",
         "large_change_bf16": "", "steps": "steps"},
        "stall_threshold_text")


def format_maxima() -> Example:
    values: dict[str, Value] = {f.name.lower(): f.max for f in (E4M3FN, E5M2, E2M1, BF16, FP16)}
    return Example("format_maxima", "Largest finite values", "formats.<FORMAT>.max",
                   values, {k: "" for k in values}, "e4m3fn", digits={"bf16": 4})


def mx_scale_rounding() -> Example:
    amax = 957.0  # input: a block amax just above 2 × 448
    rows = {r["rule"]: r for r in mx_scale_rule_table(amax, "E4M3FN")}
    values: dict[str, Value] = {"amax": amax, "element_format": "E4M3FN", "element_max": E4M3FN.max}
    for rule in ("floor", "rceil"):
        values[f"{rule}_exponent"] = int(rows[rule]["scale_exponent"])
        values[f"{rule}_scale"] = float(rows[rule]["decode_scale"])
        values[f"{rule}_scale_text"] = f"2^{int(rows[rule]['scale_exponent'])}"
        values[f"{rule}_decoded"] = float(rows[rule]["decoded_amax"])
    values["summary"] = (f"floor: 2^{values['floor_exponent']}, {format_number(amax, None)} → "
                         f"{format_number(as_number(values['floor_decoded']), None)}; rceil: "
                         f"2^{values['rceil_exponent']}, {format_number(amax, None)} → "
                         f"{format_number(as_number(values['rceil_decoded']), None)}")
    return Example(
        "mx_scale_rounding", "MX scale rule: floor saturates, rceil does not",
        "lowprec.simulations.mx.mx_scale_rule_table(957, 'E4M3FN'): one block, the E8M0 exponent per "
        "scale rule and what the amax decodes as",
        values, {k: "" for k in values}, "summary")


def delayed_spike() -> Example:
    history_len, spike_step, spike, steps = 16, 100, 50.0, 140  # inputs: the default spike scenario
    r = simulate_stream(format="E4M3FN", history=history_len, algo="max", steps=steps,
                        spike_step=spike_step, spike=spike, seed=0)
    values: dict[str, Value] = {
        "format": "E4M3FN", "history_len": history_len, "spike_step": spike_step, "spike": spike,
        "clipped_at_spike_delayed": float(r.delayed["clipped_fraction"][spike_step]),
        "clipped_at_spike_current": float(r.current["clipped_fraction"][spike_step]),
        "rms_rel_error_at_spike_delayed": float(r.delayed["rms_rel_error"][spike_step]),
        "rms_rel_error_at_spike_current": float(r.current["rms_rel_error"][spike_step]),
        "reduced_steps": r.reduced_steps(),
        "clipped_at_spike_delayed_percent": 100 * float(r.delayed["clipped_fraction"][spike_step]),
    }
    units = {k: "" for k in values}
    units.update({"history_len": "steps", "reduced_steps": "steps",
                  "clipped_at_spike_delayed_percent": "%"})
    return Example(
        "delayed_spike", "A spike under delayed scaling",
        "lowprec.simulations.studies.spike.simulate_stream: E4M3FN, amax history 16 (max), the whole tensor × 50 "
        "at step 100, seed 0; clipped fraction = |x · scale| > 464, the top of 448's rounding bin",
        values, units, "clipped_at_spike_delayed_percent",
        digits={"clipped_at_spike_delayed": 3, "clipped_at_spike_current": 3,
                "rms_rel_error_at_spike_delayed": 3, "rms_rel_error_at_spike_current": 3,
                "clipped_at_spike_delayed_percent": 3})


EXAMPLES: dict[str, Callable[[], Example]] = {
    "attention_product": attention_product,
    "bf16_tie_flip": bf16_tie_flip,
    "fp32_absorption": fp32_absorption,
    "fake_quant_scalar": fake_quant_scalar,
    "e4m3fn_range": e4m3fn_range,
    "e5m2_range": e5m2_range,
    "e2m1_range": e2m1_range,
    "e8m0_range": e8m0_range,
    "e4m3fn_gaps": e4m3fn_gaps,
    "mxfp8_bits_per_element": mxfp8_bits_per_element,
    "nvfp4_bits_per_element": nvfp4_bits_per_element,
    "kv_cache_memory": kv_cache_memory,
    "softmax_saturation": softmax_saturation,
    "e4m3fn_overflow_conventions": e4m3fn_overflow_conventions,
    "e8m0_ties": e8m0_ties,
    "bf16_update_stall": bf16_update_stall,
    "format_maxima": format_maxima,
    "mx_scale_rounding": mx_scale_rounding,
    "delayed_spike": delayed_spike,
    **examples_extra.EXAMPLES,  # lesson-specific examples
    **examples_course.EXAMPLES,  # the course's predictions and exercises
    **examples_blocks.EXAMPLES,  # block-format conventions
    **examples_transfer.EXAMPLES,  # the course's transfer questions
    **examples_gemm.EXAMPLES,  # tensor-core products (lessons 8 and 23)
    **examples_stateful.EXAMPLES,  # lesson 26: whose amax?
    **examples_ckpt.EXAMPLES,  # lesson 25: reading a pre-quantized checkpoint
}

#: examples that need torch (autograd or torch.utils.checkpoint is the point): `example(name)`
#: resolves them, the default listing leaves them out so that it stays torch-free
TORCH_EXAMPLES: dict[str, Callable[[], Example]] = {**examples_course.TORCH_EXAMPLES,
                                                     **examples_transfer.TORCH_EXAMPLES}

_CACHE: dict[str, Example] = {}


def example(name: str) -> Example:
    """The example called `name` (of EXAMPLES or TORCH_EXAMPLES), computed once and cached;
    ValueError listing known names."""
    known = {**EXAMPLES, **TORCH_EXAMPLES}
    if not isinstance(name, str) or name not in known:
        raise ValueError(f"unknown example {name!r}; known: {', '.join(sorted(known))}")
    if name not in _CACHE:
        ex = known[name]()
        if ex.name != name:
            raise ValueError(f"example function for {name!r} returned an example named {ex.name!r}")
        _CACHE[name] = ex
    return _CACHE[name]


def list_examples(include_torch: bool = False) -> list[Example]:
    """Every registered example, sorted by name; those of TORCH_EXAMPLES only with
    `include_torch` (they import torch)."""
    names = sorted({*EXAMPLES, *(TORCH_EXAMPLES if include_torch else ())})
    return [example(name) for name in names]


def main(argv: Sequence[str] | None = None) -> int:
    parser = ArgumentParser(prog="python -m lowprec.simulations.examples",
                                     description="List the worked examples; writes JSON.")
    parser.add_argument("--json", metavar="OUT", help="output file (default: a text listing on stdout)")
    args = parser.parse_args(argv)
    try:
        check_output_path(args.json, "--json")
    except ValueError as exc:
        return error_exit(parser.prog, exc)
    examples = list_examples()
    if args.json:
        write_json([e.to_dict() for e in examples], args.json)
    else:
        for e in examples:
            print(f"{e.name}: {e.format()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
