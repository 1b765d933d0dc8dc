"""Worked examples of the course's predictions and exercises: every answer a lesson checks and every
figure its questions quote that the core registry (`course.examples`) and the lesson-specific
one (`course.examples_extra`) lack.

Each entry of `EXAMPLES` builds a `course.example_record.Example` whose values are computed here
from `formats` (casts through `formats.encode`/`explain_cast` under a named convention or
round-to-nearest-even with saturation), from the simulations of this package (softmax saturation,
scale grouping, delayed scaling, attention rounding, the recompute divergence runs) or from exact
`fractions.Fraction` arithmetic; only inputs are typed in (a value to cast, a standard deviation, a
seed). A field that answers a `choice` question holds the text of the right choice, computed from a
number or a run (e.g. "no" when no recomputed activation differs). Conventions: the decode scale `s`
multiplies codes back to real values; the encode scale is `F / amax` with `F` the format's largest
finite value. Random tensors come from `numpy.random.default_rng(seed)` with the seed among the
values. Examples marked "explanatory model" model a mechanism described by a source (a gate of
Transformer Engine, a truncating accumulator); they are not measurements of that software or
hardware. Torch is imported lazily, only where autograd or `torch.utils.checkpoint` is the point
(the checkpointing primer, the silent scale of 1.0) and by the recompute runs; those examples form
`TORCH_EXAMPLES`, apart from the torch-free `EXAMPLES`.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any, Callable

import numpy as np

from lowprec import formats
from lowprec.formats import BF16, E2M1, E4M3FN, E5M2, E8M0, FP16, FP32, CastPolicy, Overflow, explain_cast

from lowprec.course.example_record import Example, Value, format_number, example as _ex

__all__ = ["EXAMPLES", "TORCH_EXAMPLES"]

SATURATE = CastPolicy(overflow=Overflow.SATURATE)



def _q(x: Any, fmt: formats.Format, policy: CastPolicy | None = None) -> np.ndarray:
    return np.asarray(formats.quantize(np.asarray(x, dtype=np.float64), fmt, policy or SATURATE),
                      dtype=np.float64)


def _q1(x: float, fmt: formats.Format, policy: CastPolicy | None = None) -> float:
    return float(_q(np.array([x]), fmt, policy)[0])


def _pow2(v: float) -> str:
    """1/256 → '2^-8' (exact powers of two only, else the number)."""
    if v > 0 and math.isfinite(v):
        e = math.log2(v)
        if e == int(e):
            return f"2^{int(e)}"
    return format_number(v, None)


def _nearest_label(value: float, labels: dict[str, float]) -> str:
    """The label whose number is nearest to `value` on a log scale (a choice answer from a number)."""
    return min(labels, key=lambda k: abs(math.log(value / labels[k])))


# ------------------------------------------------------------------------------------------------
# lesson: the arithmetic contract / range vs resolution — one value, one bin
# ------------------------------------------------------------------------------------------------


def bin_3_3() -> Example:
    e = explain_cast("3.3", "E4M3FN", "torch")
    b = e.rounding_bin
    assert b is not None
    return _ex("bin_3_3", "3.3 in E4M3FN: its bin and its code",
               "formats.explain_cast('3.3', 'E4M3FN', 'torch'): the code, its value and the bin of "
               "reals that round to it (nearest-even; both edges are ties that go to even neighbours)",
               {"x": 3.3, "code": e.code, "hex": e.hex, "bits": e.bits, "value": e.value,
                "value_text": e.exact, "lo": b.lo, "hi": b.hi, "rel_error_pct": 100 * e.rel_error,
                "gap": b.hi - b.lo},
               "hex", digits={"rel_error_pct": 2})


def range_questions() -> Example:
    """Lesson 2's numbers: E5M2's largest value, the E4M3FN gap at 1 and at 448."""
    table = formats.code_table(E4M3FN)
    v = table.value
    pos = np.isfinite(v) & (v > 0) & (table.sign == 0)
    below_max = float(np.max(v[pos & (v < E4M3FN.max)]))
    a = explain_cast("460", "E4M3FN", "ml_dtypes")
    b = explain_cast("460", "E5M2", "ml_dtypes")
    closer = ("both give the same value" if a.value == b.value else
              "E4M3FN" if abs(a.value - 460) < abs(b.value - 460) else "E5M2")
    bin_b = b.rounding_bin
    assert bin_b is not None
    return _ex("range_questions", "Range and resolution of the 8-bit formats",
               "formats.E5M2.max, formats.E4M3FN.max; neighbours from formats.code_table('E4M3FN'); "
               "formats.explain_cast('460', fmt, 'ml_dtypes') in E4M3FN and E5M2",
               {"e5m2_max": float(E5M2.max), "e4m3fn_max": float(E4M3FN.max),
                "e4m3fn_gap_at_1": float(table.gap_next[pos & (v == 1.0)][0]),
                "e4m3fn_gap_at_max": float(E4M3FN.max) - below_max, "e4m3fn_below_max": below_max,
                "e4m3fn_460": a.value, "e5m2_460": b.value, "closer_460": closer,
                "e5m2_460_lo": bin_b.lo, "e5m2_460_hi": bin_b.hi},
               "e4m3fn_max")


# ------------------------------------------------------------------------------------------------
# lesson: absorption before underflow
# ------------------------------------------------------------------------------------------------


def softmax_threshold() -> Example:
    """The smallest integer d for which softmax([d, 0, 0]), computed op by op in the format, gives
    the first class a probability of exactly 1 (simulations.studies.cliffs.softmax_saturation)."""
    from lowprec.simulations.studies.cliffs import softmax_saturation

    values: dict[str, Value] = {}
    for name in ("FP32", "BF16", "FP16"):
        key = name.lower()
        d = next(d for d in range(1, 200) if softmax_saturation(name, [float(d), 0.0, 0.0]).saturated)
        at = softmax_saturation(name, [float(d), 0.0, 0.0])
        below = softmax_saturation(name, [float(d - 1), 0.0, 0.0])
        values[f"{key}_d"] = d
        values[f"{key}_logits"] = [float(d), 0.0, 0.0]
        values[f"{key}_p_top_below"] = below.probs[0]
        values[f"{key}_p_top_below_is_one"] = below.probs[0] == 1.0
        values[f"{key}_grad_naive"] = at.grad_naive[0]
        values[f"{key}_grad_rewritten"] = at.grad_rewritten[0]
        values[f"{key}_grad_reference"] = at.grad_reference[0]
    return _ex("softmax_threshold", "Where softmax saturates to exactly 1",
               "lowprec.simulations.studies.cliffs.softmax_saturation(fmt, [d, 0, 0]) for d = 1, 2, …: the "
               "first d whose top probability rounds to exactly 1 (every operation rounded to the "
               "format, nearest-even); gradients of the target class 0 at that d",
               values, "fp32_d",
               digits={**{k: 4 for k in values
                          if "grad_r" in k or (k.endswith("_p_top_below") and not k.startswith("fp32"))},
                       "fp32_p_top_below": 8})


def absorption_bf16() -> Example:
    from lowprec.simulations.studies.cliffs import absorption

    small = absorption("BF16", 0.003)
    large = absorption("BF16", 0.005)
    fp16 = absorption("FP16", 0.0)
    return _ex("absorption_bf16", "1 + 0.003 in BF16",
               "lowprec.simulations.studies.cliffs.absorption('BF16', x): the exact sum 1 + x rounded once to "
               "BF16 (nearest-even)",
               {"x_small": 0.003, "sum_small": small.total,
                "outcome_small": "stays 1" if small.total == 1.0 else f"moves to {small.total}",
                "x_large": 0.005, "sum_large": large.total, "threshold": small.threshold,
                "threshold_text": _pow2(small.threshold), "gap": small.gap_above,
                "fp16_threshold": fp16.threshold, "fp16_threshold_text": _pow2(fp16.threshold)},
               "outcome_small", digits={"fp16_threshold": 11})


# ------------------------------------------------------------------------------------------------
# lesson: moving the grid — scale 1 vs the amax scale (also the seed-001 lesson's table)
# ------------------------------------------------------------------------------------------------

SCALE_ONE_SIGMAS = {"1": 1.0, "0_03": 0.03, "0_02": 0.02, "0_005": 0.005}
SCALE_ONE_N = 2**20  # values per tensor
SCALE_ONE_SEEDS = (0, 1, 2, 3)  # independent tensors per standard deviation


def scale_one_errors(sigma: float, seed: int, n: int = SCALE_ONE_N) -> tuple[float, float]:
    """(error with encode scale 1, error with the amax scale 448 / amax) of n values N(0, σ²) in
    float32 cast to E4M3FN (nearest-even, saturating); error = ‖x̂ − x‖₂ / ‖x‖₂."""
    x = (np.random.default_rng(seed).standard_normal(n) * sigma).astype(np.float32).astype(np.float64)
    norm = float(np.linalg.norm(x))
    enc = float(np.float32(E4M3FN.max) / np.float32(np.max(np.abs(x))))
    at_one = float(np.linalg.norm(_q(x, E4M3FN) - x)) / norm
    at_amax = float(np.linalg.norm(_q(x * enc, E4M3FN) / enc - x)) / norm
    return at_one, at_amax


def scale_one_table() -> Example:
    values: dict[str, Value] = {"n": SCALE_ONE_N, "tensors": len(SCALE_ONE_SEEDS),
                                "seeds": list(SCALE_ONE_SEEDS), "n_text": "2^20 = 1,048,576"}
    digits: dict[str, int] = {}
    for label, sigma in SCALE_ONE_SIGMAS.items():
        runs = np.array([scale_one_errors(sigma, seed) for seed in SCALE_ONE_SEEDS])
        one, amax = runs[:, 0], runs[:, 1]
        ratio = one / amax
        k = len(SCALE_ONE_SEEDS)
        values[f"sigma_{label}"] = sigma
        values[f"err_one_pct_{label}"] = 100 * float(one.mean())
        values[f"err_amax_pct_{label}"] = 100 * float(amax.mean())
        values[f"ratio_{label}"] = float(ratio.mean())
        # standard error of each mean over the independent tensors: the precision the sample supports
        values[f"se_err_one_pct_{label}"] = 100 * float(one.std(ddof=1) / math.sqrt(k))
        values[f"se_err_amax_pct_{label}"] = 100 * float(amax.std(ddof=1) / math.sqrt(k))
        values[f"se_ratio_{label}"] = float(ratio.std(ddof=1) / math.sqrt(k))
        digits.update({f"err_one_pct_{label}": 2, f"err_amax_pct_{label}": 2, f"ratio_{label}": 2})
    digits["err_one_pct_0_005"] = 1  # 11.3 %: three significant figures, like the other errors
    ratio_small = values["ratio_0_005"]
    assert isinstance(ratio_small, float)
    values["ratio_0_005_bucket"] = _nearest_label(
        ratio_small, {"about the same": 1.0, "about 1.25 times": 1.25, "about 4 times": 4.0,
                      "about 20 times": 20.0})
    # the shape of the scale-1 error over magnitudes, as the ScaleGrouping widget's scale_choice study
    # draws it (simulations.studies.grouping.scale_choice_study, E4M3FN)
    from lowprec.simulations.studies.grouping import scale_choice_study

    study = scale_choice_study(("E4M3FN",))
    curve = study.rms_rel_error_fixed["E4M3FN"]
    floor = float(np.min(curve))
    low_rises, high_rises = bool(curve[0] > 2 * floor), bool(curve[-1] > 2 * floor)
    values["scale_one_shape"] = ("rises for small and for large magnitudes" if low_rises and high_rises
                                 else "rises only for small magnitudes" if low_rises
                                 else "rises only for large magnitudes" if high_rises else "flat")
    values["scale_one_floor"] = floor
    probe = explain_cast("0.005", "E4M3FN", "torch")
    values.update({"probe_x": 0.005, "probe_value": probe.value, "probe_value_text": probe.exact,
                   "probe_rel_err_pct": 100 * probe.rel_error, "probe_class": probe.cls})
    digits["probe_rel_err_pct"] = 0
    return _ex("scale_one_table", "E4M3FN with encode scale 1 vs the amax scale, by standard deviation",
               f"{SCALE_ONE_N} values N(0, σ²) in float32 per tensor, {len(SCALE_ONE_SEEDS)} tensors "
               "(seeds 0-3) per σ; formats.quantize to E4M3FN (nearest-even, saturating) with encode "
               "scale 1 and with float32(448 / amax); error ‖x̂ − x‖₂ / ‖x‖₂; means over the tensors "
               "with their standard errors (se_*)",
               values, "err_one_pct_0_005", units={k: "%" for k in values if "_pct_" in k},
               digits=digits)


def scaled_bin_0_01() -> Example:
    s = 2.0**-7
    e = explain_cast("0.01", "E4M3FN", "torch", decode_scale=s)
    b = e.rounding_bin
    assert b is not None
    return _ex("scaled_bin_0_01", "0.01 on the E4M3FN grid scaled by 2^-7",
               "formats.explain_cast('0.01', 'E4M3FN', 'torch', decode_scale=2^-7): the code of 0.01 / s "
               "and its value times s",
               {"x": 0.01, "decode_scale": s, "decode_scale_text": "2^-7", "x_scaled": 0.01 / s,
                "code": e.code, "hex": e.hex, "stored": e.value / s, "value": e.value,
                "lo": b.lo, "hi": b.hi},
               "value")


def te_scale_rule() -> Example:
    """Transformer Engine's delayed-scaling update (`_default_sf_compute`) as modelled by
    simulations.scaling.delayed: F / amax / 2^margin in float32, the previous scale when amax is 0 or not
    finite; current scaling (simulations.scaling.scales) gives 1 for an all-zero tensor."""
    from lowprec.simulations.scaling.delayed import DelayedScaler, scale_from_amax
    from lowprec.simulations.scaling.scales import encode_scale

    previous = 2.0
    hist = DelayedScaler("E4M3FN", history_len=16, algo="max", margin=1)
    for a in (2.0, 3.0, 1.5):
        hist.update(a)
    recent = DelayedScaler("E4M3FN", history_len=16, algo="most_recent", margin=1)
    for a in (2.0, 3.0, 1.5):
        recent.update(a)
    return _ex("te_scale_rule", "How a delayed scale is updated, and what a zero amax does",
               "lowprec.simulations.scaling.delayed.scale_from_amax(amax, 448, margin, previous) and "
               "DelayedScaler(E4M3FN, history 16, margin 1) fed the amaxes 2, 3, 1.5; "
               "lowprec.simulations.scaling.scales.encode_scale(0, E4M3FN) for current scaling",
               {"previous": previous,
                "delayed_zero": scale_from_amax(0.0, E4M3FN.max, 0, previous),
                "delayed_nan": scale_from_amax(float("nan"), E4M3FN.max, 0, previous),
                "delayed_3_5": scale_from_amax(3.5, E4M3FN.max, 0, previous),
                "current_zero": float(encode_scale(0.0, E4M3FN)),
                "history": [2.0, 3.0, 1.5], "margin": 1,
                "max_encode_scale": hist.encode_scale, "max_decode_scale": 1.0 / hist.encode_scale,
                "recent_encode_scale": recent.encode_scale},
               "delayed_zero", digits={"max_encode_scale": 4, "max_decode_scale": 6,
                                       "recent_encode_scale": 4})


# ------------------------------------------------------------------------------------------------
# lesson: scale grouping
# ------------------------------------------------------------------------------------------------

GROUPINGS = ("tensor", "row", "column", "block32", "block16x16")


def grouping_table() -> Example:
    """The ScaleGrouping widget's default outlier study (32 × 64 standard normal, x[3, 5] = 100,
    seed 0), per format and grouping: the error of the ordinary elements and the share of them that
    round to zero; the baseline is the same tensor without the outlier, one scale per tensor."""
    from lowprec.simulations.studies.grouping import outlier_study

    values: dict[str, Value] = {"rows": 32, "cols": 64, "outlier": 100.0, "seed": 0}
    for fmt in ("E4M3FN", "E2M1"):
        st = outlier_study(fmt, (32, 64), 100.0, (3, 5), GROUPINGS, 0)
        key = fmt.lower()
        values[f"{key}_baseline"] = st.baseline_rms_rel_error
        ordinary = np.ones(st.x.shape, bool)
        ordinary[3, 5] = False
        for entry in st.entries:
            label = entry.granularity.replace("x", "_")
            values[f"{key}_{label}"] = entry.ordinary_rms_rel_error
            values[f"{key}_{label}_zero_pct"] = 100 * float(np.mean(entry.dequantized[ordinary] == 0))
    names = {"tensor": "one per tensor", "row": "one per row", "column": "one per column",
             "block32": "one per 1×32 block", "block16_16": "one per 16×16 tile"}
    e2m1 = {label: float(values[f"e2m1_{label}"]) for label in names}  # type: ignore[arg-type]
    values["e2m1_best_grouping"] = names[min(e2m1, key=lambda k: e2m1[k])]
    tensor_zero = values["e2m1_tensor_zero_pct"]
    assert isinstance(tensor_zero, float)
    values["e2m1_tensor_zero_bucket"] = ("none" if tensor_zero == 0 else "under half" if tensor_zero < 50
                                         else "all of them" if tensor_zero == 100 else "over half")
    return _ex("grouping_table", "One outlier under five groupings (the ScaleGrouping widget's tensor)",
               "lowprec.simulations.studies.grouping.outlier_study(fmt, (32, 64), 100, (3, 5), [tensor, row, "
               "column, block32, block16x16], seed 0): error ‖x̂ − x‖ / ‖x‖ of the ordinary elements "
               "(the outlier left out), decode scale amax / F per group in FP32; baseline: no outlier, "
               "per tensor",
               values, "e2m1_tensor_zero_bucket",
               units={k: "%" for k in values if k.endswith("_pct")},
               digits={**{k: 3 for k in values if isinstance(values[k], float) and not k.endswith("_pct")},
                       **{k: 1 for k in values if k.endswith("_pct")}})


def nvfp4_metadata() -> Example:
    rows = cols = 4096
    scale_bits = E4M3FN.bits
    logical_16x16 = Fraction(scale_bits, 16 * 16)
    # Transformer Engine's NVFP4 quantizer keeps its scale tensor at one entry per 1×16 row segment
    # also for 16×16 weight tiles (the tile's scale repeated on its 16 rows)
    stored_segments = (rows * cols) // 16
    stored = Fraction(stored_segments * scale_bits, rows * cols)
    tensor_scale = Fraction(FP32.bits, rows * cols)
    return _ex("nvfp4_metadata", "NVFP4 scale metadata: logical 16×16 tiles vs stored 1×16 segments",
               "E4M3FN scale bits (formats) per elements sharing one scale: 16·16 for a logical tile, 16 for "
               "a stored 1×16 segment; the FP32 tensor scale over 4096 × 4096 elements",
               {"rows": rows, "cols": cols, "scale_bits": scale_bits,
                "logical_bits": float(logical_16x16), "stored_bits": float(stored),
                "stored_scales": stored_segments, "tensor_scale_bits": float(tensor_scale),
                "stored_total_bits": float(E2M1.bits + stored + tensor_scale),
                "mx_bits": float(Fraction(E8M0.bits, 32)),
                "row_fp32_bits": float(Fraction(FP32.bits, cols))},
               "stored_bits", units={"logical_bits": "bits/element", "stored_bits": "bits/element",
                                     "tensor_scale_bits": "bits/element", "mx_bits": "bits/element",
                                     "row_fp32_bits": "bits/element", "stored_total_bits": "bits/element"},
               digits={"tensor_scale_bits": 3, "stored_total_bits": 7})


def block_views() -> Example:
    """The BlockFormats widget's tensor (32 × 128 Student-t, seed 0) with the transposed view on: the
    column-blocked view made from the source (one rounding) or re-quantized from the row-blocked
    decoded data (two roundings), for NVFP4 and MXFP8 (E4M3, floor)."""
    from lowprec.simulations.blocks import simulate_blocks

    values: dict[str, Value] = {}
    for recipe, key in (("NVFP4", "nvfp4"), ("MXFP8_E4M3", "mxfp8")):
        t = simulate_blocks(recipe=recipe, transposed_view=True).selected
        assert t is not None and t.transposed is not None
        tv = t.transposed
        values[f"{key}_from_source"] = tv.columns_from_source
        values[f"{key}_requantized"] = tv.columns_requantized
        values[f"{key}_ratio"] = tv.requantized_ratio
        values[f"{key}_codes_differ_pct"] = 100 * tv.codes_differ
    ratio = float(values["nvfp4_ratio"])  # type: ignore[arg-type]
    values["nvfp4_bucket"] = ("about the same" if abs(ratio - 1) < 0.05 else
                              "clearly larger" if ratio > 1 else "clearly smaller")
    return _ex("block_views", "The column view: from the source or re-quantized",
               "lowprec.simulations.blocks.simulate_blocks(recipe, transposed_view=True) with the widget's "
               "defaults (32 × 128 Student-t(3), seed 0): ‖x̂ − x‖ / ‖x‖ of the column-blocked view made "
               "each way, and the share of its codes that differ",
               values, "nvfp4_bucket", units={k: "%" for k in values if k.endswith("_pct")},
               digits={**{k: 3 for k in values if not k.endswith("_pct")}, "nvfp4_ratio": 2, "mxfp8_ratio": 2,
                       **{k: 0 for k in values if k.endswith("_pct")}})


# ------------------------------------------------------------------------------------------------
# lesson: when the scale is measured
# ------------------------------------------------------------------------------------------------


def spike_questions() -> Example:
    """The default spike scenario of the DelayedSpike widget (and of the core example delayed_spike):
    E4M3FN, history 16 (max), the whole tensor × 50 at step 100 of 200, seed 0."""
    from lowprec.simulations.studies.spike import simulate_stream

    history, spike_step = 16, 100
    r = simulate_stream(format="E4M3FN", history=history, algo="max", steps=200, spike_step=spike_step,
                        spike=50.0, seed=0)
    clipped = float(r.delayed["clipped_fraction"][spike_step])
    bucket = ("none" if clipped == 0 else "under 10%" if clipped < 0.1 else
              "about half" if clipped < 0.9 else "over 90%")
    return _ex("spike_questions", "What a delayed scale clips when a spike arrives",
               "lowprec.simulations.studies.spike.simulate_stream(E4M3FN, history 16, max, 200 steps, × 50 at "
               "step 100, seed 0; 4096 values per step): the clipped fraction at the spike, bucketed, "
               "and the steps of coarse grid after it",
               {"clipped_bucket": bucket, "clipped_pct": 100 * clipped, "coarse_steps": r.reduced_steps(),
                "history": history, "clipped_current_pct": 100 * float(r.current["clipped_fraction"][spike_step])},
               "clipped_bucket", units={"clipped_pct": "%", "clipped_current_pct": "%", "coarse_steps": "steps"},
               digits={"clipped_pct": 0, "clipped_current_pct": 0})


# ------------------------------------------------------------------------------------------------
# lesson: three products — a narrow accumulator swamps a long sum
# ------------------------------------------------------------------------------------------------


def _truncate(n: int, bits: int) -> int:
    """The non-negative integer n truncated to `bits` significant bits (exact)."""
    drop = max(n.bit_length() - bits, 0)
    return (n >> drop) << drop


def accumulator_swamping() -> Example:
    """Explanatory model of a chunked FP8 dot product: K products of 1 summed in an accumulator that
    keeps `bits` significant bits (truncating), with and without promoting each chunk of 128 partial
    sums into FP32 (the DeepSeek-V3 report's remedy)."""
    k, bits, chunk = 2**16, 14, 128
    acc = 0
    for _ in range(k):
        acc = _truncate(acc + 1, bits)
    promoted = np.float32(0)
    for _ in range(k // chunk):
        part = 0
        for _ in range(chunk):
            part = _truncate(part + 1, bits)
        promoted = np.float32(promoted + np.float32(part))
    exact = k
    return _ex("accumulator_swamping", "A long sum in a 14-bit accumulator",
               "explanatory model: 2^16 products equal to 1 added one at a time into an accumulator of "
               "14 significant bits that truncates (exact integer arithmetic), vs chunks of 128 each "
               "added into an FP32 sum",
               {"k": k, "bits": bits, "chunk": chunk, "narrow_sum": float(acc), "exact_sum": exact,
                "promoted_sum": float(promoted), "narrow_rel_error": (exact - float(acc)) / exact,
                "largest_exact": 2**bits},
               "narrow_sum")


# ------------------------------------------------------------------------------------------------
# lesson: protecting sensitive paths
# ------------------------------------------------------------------------------------------------


def bf16_bin_at_3() -> Example:
    e = explain_cast("3", "BF16")
    b = e.rounding_bin
    assert b is not None
    return _ex("bf16_bin_at_3", "The BF16 bin of 3",
               "formats.explain_cast('3', 'BF16'): the reals that round to 3 (nearest-even; 3 = 1.5 × 2^1 "
               "has an even code, so both edge ties round to it)",
               {"lo": b.lo, "hi": b.hi, "hi_closed": b.hi_closed, "gap": 2 * (b.hi - 3.0),
                "code": e.code, "hex": e.hex},
               "hi")


# ------------------------------------------------------------------------------------------------
# lessons: small updates, loss scaling, what a resume must save
# ------------------------------------------------------------------------------------------------


def bf16_bin_at_256() -> Example:
    e = explain_cast("256", "BF16")
    b = e.rounding_bin
    assert b is not None
    up = _q1(256.0 + 2.0, BF16)  # the neighbour above
    return _ex("bf16_bin_at_256", "Updates that vanish at a BF16 weight of 256",
               "formats.explain_cast('256', 'BF16'): the bin of 256 and the neighbour above",
               {"w": 256.0, "next": up, "gap": up - 256.0, "vanishing_update": b.hi - 256.0,
                "hi_closed": b.hi_closed},
               "vanishing_update")


def loss_scale_choice() -> Example:
    grad = 1e-8
    ieee = formats.default_policy(FP16)
    k = next(k for k in range(0, 64)
             if _q1(grad * 2.0**k, FP16, ieee) >= float(FP16.smallest_normal))
    s = 2.0**k
    scaled = _q1(grad * s, FP16, ieee)
    return _ex("loss_scale_choice", "The smallest power-of-two loss scale that makes 1e-8 a normal FP16 value",
               "formats.quantize(1e-8 · 2^k, FP16) for k = 0, 1, …: the first result at or above "
               "FP16's smallest normal 2^-14; unscaled in FP32",
               {"grad": grad, "k": k, "loss_scale": s, "scaled_fp16": scaled,
                "unscaled_fp32": float(np.float32(scaled) / np.float32(s)),
                "rel_error": abs(float(np.float32(scaled) / np.float32(s)) - grad) / grad,
                "smallest_normal": float(FP16.smallest_normal)},
               "loss_scale", digits={"scaled_fp16": 6, "unscaled_fp32": 4, "rel_error": 2})


#: the resume scenario of `resume_history` (and the transfer question `resume_at_105`): a delayed
#: scaler (E4M3FN, history 16, max) on an amax stream of 1 for 140 steps with one spike of 50
RESUME_HISTORY, RESUME_SPIKE_STEP, RESUME_STEPS = 16, 95, 140


def resume_scales(resume_step: int) -> tuple[list[float], list[float], list[int]]:
    """The encode scale each step casts with, uninterrupted and resumed at `resume_step` with a fresh
    scaler (Transformer Engine's initial scale 1, empty history), and the steps where they differ."""
    from lowprec.simulations.scaling.delayed import DelayedScaler

    amax = np.ones(RESUME_STEPS)
    amax[RESUME_SPIKE_STEP] = 50.0
    whole = DelayedScaler("E4M3FN", history_len=RESUME_HISTORY, algo="max")
    used_whole = []
    for t in range(RESUME_STEPS):
        used_whole.append(whole.encode_scale)
        whole.update(float(amax[t]))
    resumed = DelayedScaler("E4M3FN", history_len=RESUME_HISTORY, algo="max")
    used_resumed = list(used_whole[:resume_step])
    for t in range(resume_step, RESUME_STEPS):
        used_resumed.append(resumed.encode_scale)
        resumed.update(float(amax[t]))
    differ = [t for t in range(RESUME_STEPS) if used_whole[t] != used_resumed[t]]
    return used_whole, used_resumed, differ


def resume_history() -> Example:
    """A delayed scaler (E4M3FN, history 16, max) on an amax stream of 1 with one spike of 50 at
    step 95; a run checkpointed and resumed at step 100 without its amax history restarts from
    Transformer Engine's initial scale 1 and an empty history."""
    history, spike_step, resume_step = RESUME_HISTORY, RESUME_SPIKE_STEP, 100
    used_whole, used_resumed, differ = resume_scales(resume_step)
    return _ex("resume_history", "A resume that drops the amax history",
               "lowprec.simulations.scaling.delayed.DelayedScaler(E4M3FN, history 16, max): amax 1 every step, 50 "
               "at step 95; uninterrupted vs resumed at step 100 with a fresh scaler (encode scale 1, "
               "empty history); the encode scale each step casts with",
               {"history": history, "spike_step": spike_step, "resume_step": resume_step,
                "steps_differ": len(differ), "first_differ": differ[0], "last_differ": differ[-1],
                "scale_whole_at_resume": used_whole[resume_step],
                "scale_resumed_at_resume": used_resumed[resume_step],
                "scale_resumed_after": used_resumed[resume_step + 1]},
               "steps_differ", digits={"scale_whole_at_resume": 4})


def sr_rerandomized() -> Example:
    from lowprec.formats import Rounding

    x = 0.3
    lo = _q1(x, E4M3FN, SATURATE.with_(rounding=Rounding.DOWN))
    hi = _q1(x, E4M3FN, SATURATE.with_(rounding=Rounding.UP))
    p = (x - lo) / (hi - lo)
    return _ex("sr_rerandomized", "Two stochastic roundings of 0.3 with different random streams",
               "E4M3FN neighbours of 0.3 from formats.quantize (rounding down / up); P(round up) = "
               "(x − lo) / (hi − lo); P(two independent draws store different codes) = 2 p (1 − p)",
               {"x": x, "lo": lo, "hi": hi, "p_up": p, "p_differ": 2 * p * (1 - p)}, "p_differ",
               digits={"p_differ": 4, "p_up": 4})


# ------------------------------------------------------------------------------------------------
# lessons: error through attention, stochastic rounding, ties
# ------------------------------------------------------------------------------------------------


def attention_three_probs() -> Example:
    from lowprec.simulations.studies.attention import THREE_PROBS, THREE_VALUES, round_probs, stochastic_variance

    p = np.array([THREE_PROBS])
    v = np.array(THREE_VALUES)
    # sums of products in exact Fraction arithmetic (the decimal probabilities as written)
    p_exact = [Fraction(str(x)) for x in THREE_PROBS]
    v_exact = [Fraction(x) for x in THREE_VALUES]
    exact = sum((a * b for a, b in zip(p_exact, v_exact)), Fraction(0))
    values: dict[str, Value] = {"probs": list(THREE_PROBS), "values": list(THREE_VALUES), "exact": float(exact)}
    for fmt in ("E2M1", "E4M3FN"):
        key = fmt.lower()
        r = round_probs(p, fmt)[0]
        r_exact = [Fraction(float(x)) for x in r]
        out = sum((a * b for a, b in zip(r_exact, v_exact)), Fraction(0))
        values[f"{key}_probs"] = [float(x) for x in r]
        values[f"{key}_output"] = float(out)
        values[f"{key}_delta_o"] = float(out - exact)
        values[f"{key}_mass_error"] = float(sum(r_exact) - 1)
    var = stochastic_variance(p, "E4M3FN")[0]
    values["e4m3fn_sr_var_entries"] = [float(x) for x in var]
    values["e4m3fn_sr_var_output"] = float(np.sum(v**2 * var))
    values["e4m3fn_sr_std_output"] = math.sqrt(float(np.sum(v**2 * var)))
    return _ex("attention_three_probs", "One query's probabilities [0.6, 0.3, 0.1] over values [0, 2, 10]",
               "lowprec.simulations.studies.attention.round_probs (nearest-even, no scale) and "
               "stochastic_variance (E4M3FN); output P̃·V and ΔO summed exactly (Fraction); "
               "Var(ΔO) = Σ V_j² Var(e_j)",
               values, "e2m1_output",
               digits={"e4m3fn_sr_var_output": 6, "e4m3fn_sr_std_output": 4})


def tie_cases() -> Example:
    even = explain_cast("1.0625", "E4M3FN")  # midpoint of 1 (code 0x38, even) and 1.125
    odd = explain_cast("1.1875", "E4M3FN")  # midpoint of 1.125 (0x39, odd) and 1.25
    return _ex("tie_cases", "Ties in E4M3FN: one goes down, the next goes up",
               "formats.explain_cast of the midpoints 1.0625 and 1.1875 in E4M3FN (nearest-even)",
               {"even_mid": 1.0625, "even_code": even.code, "even_value": even.value,
                "odd_mid": 1.1875, "odd_code": odd.code, "odd_value": odd.value},
               "even_value")


# ------------------------------------------------------------------------------------------------
# lesson: activation checkpointing (real torch.utils.checkpoint)
# ------------------------------------------------------------------------------------------------


def _probe_checkpoint(use_reentrant: bool | None, preserve_rng_state: bool = True,
                      layers: int = 4) -> dict[str, Any]:
    """One training step of `layers` checkpointed layers whose body records each call: phase
    (forward while the loss is being built, recompute during backward), layer, grad mode, and a
    dropout mask's hash."""
    import warnings

    import torch
    from torch.utils.checkpoint import checkpoint

    calls: list[dict[str, Any]] = []
    in_backward = {"on": False}

    def body(h: torch.Tensor, layer: int, weight: torch.Tensor) -> torch.Tensor:
        mask = torch.nn.functional.dropout(torch.ones(8), p=0.5, training=True)
        calls.append({"phase": "recompute" if in_backward["on"] else "forward", "layer": layer,
                      "grad": torch.is_grad_enabled(), "mask": tuple(mask.tolist())})
        return torch.tanh(h @ weight)

    torch.manual_seed(0)
    weights = [torch.randn(8, 8, requires_grad=True) for _ in range(layers)]
    x = torch.randn(2, 8, requires_grad=True)
    caught: list[str] = []
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        h = x
        for i, w in enumerate(weights):
            kwargs: dict[str, Any] = {"preserve_rng_state": preserve_rng_state}
            if use_reentrant is not None:
                kwargs["use_reentrant"] = use_reentrant
            h = checkpoint(body, h, i, w, **kwargs)
        loss = h.sum()
        in_backward["on"] = True
        loss.backward()
        caught = [str(w.message) for w in seen if "use_reentrant" in str(w.message)]
    fwd = [c for c in calls if c["phase"] == "forward"]
    rec = [c for c in calls if c["phase"] == "recompute"]
    masks_equal = all(any(r["layer"] == f["layer"] and r["mask"] == f["mask"] for r in rec) for f in fwd)
    return {"calls": calls, "forward_grad": all(c["grad"] for c in fwd),
            "recompute_grad": all(c["grad"] for c in rec), "recompute_order": [c["layer"] for c in rec],
            "calls_per_layer": len(calls) // layers, "masks_equal": masks_equal, "warned": bool(caught)}


def checkpoint_primer() -> Example:
    import torch

    non = _probe_checkpoint(False)
    reent = _probe_checkpoint(True)
    default = _probe_checkpoint(None)
    no_rng = _probe_checkpoint(False, preserve_rng_state=False)

    def mode(on: bool) -> str:
        return "enabled" if on else "disabled"

    return _ex("checkpoint_primer", "What torch.utils.checkpoint runs, in which order and grad mode",
               f"torch {torch.__version__}: one step of 4 checkpointed layers (x @ W, tanh, and a dropout "
               "mask drawn in the body) with use_reentrant False / True / not passed, preserve_rng_state "
               "True / False; the body records phase, layer, torch.is_grad_enabled() and its mask",
               {"torch": torch.__version__, "layers": 4,
                "calls_per_layer": non["calls_per_layer"],
                "recompute_order": non["recompute_order"],
                "recompute_order_text": ", ".join(str(i) for i in non["recompute_order"]),
                "nonreentrant_forward_grad": mode(non["forward_grad"]),
                "nonreentrant_recompute_grad": mode(non["recompute_grad"]),
                "reentrant_forward_grad": mode(reent["forward_grad"]),
                "reentrant_recompute_grad": mode(reent["recompute_grad"]),
                "reentrant_calls_per_layer": reent["calls_per_layer"],
                "default_variant": "reentrant" if not default["forward_grad"] else "non-reentrant",
                "default_warns": default["warned"],
                "masks_equal_preserved": "the same mask" if non["masks_equal"] else "a different mask",
                "masks_equal_not_preserved": "the same mask" if no_rng["masks_equal"] else "a different mask"},
               "calls_per_layer")


# ------------------------------------------------------------------------------------------------
# lesson: the recompute lab (the RecomputeDivergence widget's default run, per variant)
# ------------------------------------------------------------------------------------------------

LAB_VARIANTS = ("consume-after-advance", "recompute-mutates", "shared-state", "shared-state-snapshot",
                "stale-centre", "gate-asymmetry")


def lab_signatures() -> Example:
    """Each defect variant run with the widget's defaults (4 layers, width 64, batch 16, 20 steps,
    seed 0, E4M3FN, history 16, max): the signature each step of the lab asks about."""
    from lowprec.simulations.recompute import run_recompute

    runs = {v: run_recompute(v) for v in (*LAB_VARIANTS, "fixed")}
    values: dict[str, Value] = {"layers": 4, "steps": 20}

    def yes_no(b: bool) -> str:
        return "yes" if b else "no"

    for v, r in runs.items():
        key = v.replace("-", "_")
        calls = r.steps_run * r.recomputed.shape[1]
        values[f"{key}_differ"] = int((r.recomputed & ~r.bitwise_equal).sum())
        values[f"{key}_recomputed"] = int(r.recomputed.sum())
        values[f"{key}_unpaired"] = int((~r.paired_forward[: r.steps_run]).sum()) if r.failure is None else 0
        values[f"{key}_foreign"] = int(r.contaminated("forward")[: r.steps_run].sum())
        values[f"{key}_calls"] = calls
        values[f"{key}_commits_per_layer"] = int(r.commits[0, 0])
        values[f"{key}_total_commits"] = int(r.state_commits.sum())
        values[f"{key}_max_diff"] = float(np.nanmax(r.max_abs_diff)) if r.recomputed.any() else 0.0
        values[f"{key}_verdict"] = r.verdict()
    cab = runs["consume-after-advance"]
    values["cab_comparison_flags"] = yes_no(bool((cab.recomputed & ~cab.bitwise_equal).any()))
    checks = {
        "a bitwise forward-vs-recompute comparison": bool((cab.recomputed & ~cab.bitwise_equal).any()),
        "a count of state commits per step": bool(np.any(cab.state_commits != cab.expected_state_commits)),
        "a check that each consumer reads the descale its codes were encoded with":
            bool((~cab.paired_forward).any()),
    }
    flagged = [name for name, fails in checks.items() if fails]
    values["cab_catching_check"] = flagged[0] if len(flagged) == 1 else "; ".join(flagged)
    foreign = values["shared_state_foreign"]
    calls = values["shared_state_calls"]
    assert isinstance(foreign, int) and isinstance(calls, int)
    share = Fraction(foreign, calls)
    values["shared_state_foreign_share"] = {Fraction(0): "none", Fraction(1, 4): "one in four",
                                            Fraction(1, 2): "one in two", Fraction(3, 4): "three in four",
                                            Fraction(1): "all"}.get(share, f"{share}")
    snap = runs["shared-state-snapshot"]
    values["snapshot_comparison_passes"] = yes_no(not bool((snap.recomputed & ~snap.bitwise_equal).any()))
    mutates = float(values["recompute_mutates_max_diff"])  # type: ignore[arg-type]
    centre = float(values["stale_centre_max_diff"])  # type: ignore[arg-type]
    values["larger_error"] = "stale-centre" if centre > mutates else "recompute-mutates"
    values["centre_over_mutates"] = centre / mutates
    values["stale_centre_input_rms"] = float(np.nanmean(runs["stale-centre"].input_rms))
    gate = runs["gate-asymmetry"]
    values["gate_outcome"] = (f"it raises {gate.failure['type']}" if gate.failure is not None
                              else "it runs")
    values["gate_failing_layer"] = gate.recompute_order[gate.failure["step"]][0] if gate.failure else -1
    return _ex("lab_signatures", "The signature of each recompute defect (widget defaults)",
               "lowprec.simulations.recompute.run_recompute(variant) with RecomputeConfig defaults (4 layers, "
               "width 64, batch 16, 20 steps, seed 0, E4M3FN, history 16, max, real non-reentrant "
               "torch.utils.checkpoint); counts over every (step, layer)",
               values, "cab_catching_check",
               digits={k: 3 for k in values if k.endswith("_max_diff") or k in ("centre_over_mutates",
                                                                                  "stale_centre_input_rms")})


# ------------------------------------------------------------------------------------------------
# lesson: a test that checks isfinite passes a wrong scale (seed 001)
# ------------------------------------------------------------------------------------------------


def _te_forward_update_fires(grad_enabled_at_exit: bool, depth_after_exit: int, fp8_enabled: bool = True) -> bool:
    """Transformer Engine's forward amax reduction and scale update at autocast exit
    (`FP8GlobalStateManager.autocast_exit`): only when FP8 is enabled, the autocast depth is back to
    0 and grad mode is on (and no CUDA graph is being captured)."""
    return fp8_enabled and depth_after_exit == 0 and grad_enabled_at_exit


#: the assertions the seed-001 lesson asks the learner to choose from, in the order shown
SILENT_SCALE_CANDIDATES = (
    "every gradient is finite",
    "the stashed metadata is present after the forward",
    "the weight gradients match the reference within rtol 0.125, atol 0.0675",
    "the recomputed activations equal the forward's bit for bit",
    "the forward scale equals the scale of a run without checkpointing at every step",
)


def _delayed_layer_run(xs: np.ndarray, dys: np.ndarray, w: np.ndarray, *, checkpointing: bool,
                       update_fires: bool, restore_stash: bool) -> dict[str, Any]:
    """Explanatory model of one checkpointed linear layer y = Q(x) W under E4M3FN delayed scaling
    (simulations.scaling.delayed.DelayedScaler, history 16, max), step by step: the first forward casts
    with the current scale and stashes it; the scale update runs at the end of the forward when it
    fires; the recompute casts with the stash when it is restored, else with the live scale; the
    weight gradient is (recomputed input)ᵀ dY. Without checkpointing the forward's cast is used."""
    from lowprec.simulations.scaling.delayed import DelayedScaler

    scaler = DelayedScaler("E4M3FN", history_len=16, algo="max")
    out: dict[str, Any] = {"grads": [], "forward_inputs": [], "recomputed_inputs": [], "scales": [],
                           "stashed": []}
    for x, dy in zip(xs, dys):
        x64 = x.astype(np.float64)
        used = scaler.encode_scale
        x_fwd = _q(x64 * used, E4M3FN) / used
        stash = used if checkpointing else None
        if update_fires:
            scaler.update(float(np.max(np.abs(x))))
        if checkpointing:
            rec_scale = stash if (restore_stash and stash is not None) else scaler.encode_scale
            x_rec = _q(x64 * rec_scale, E4M3FN) / rec_scale
        else:
            x_rec = x_fwd
        out["grads"].append(x_rec.T @ dy.astype(np.float64))
        out["forward_inputs"].append(x_fwd)
        out["recomputed_inputs"].append(x_rec)
        out["scales"].append(used)
        out["stashed"].append(stash is not None)
    out["w"] = w
    return out


def _candidate_verdicts(run: dict[str, Any], ref: dict[str, Any]) -> list[bool]:
    """Whether each of SILENT_SCALE_CANDIDATES passes on `run` (against the reference `ref`)."""
    grads, ref_grads = np.array(run["grads"]), np.array(ref["grads"])
    return [
        bool(np.all(np.isfinite(grads))),
        all(run["stashed"]),
        bool(np.all(np.abs(grads - ref_grads) <= 0.0675 + 0.125 * np.abs(ref_grads))),
        all(np.array_equal(a.view(np.uint64), b.view(np.uint64))
            for a, b in zip(run["forward_inputs"], run["recomputed_inputs"])),
        run["scales"] == ref["scales"],
    ]


def _catching(buggy: list[bool], fixed: list[bool]) -> list[str]:
    return [name for name, b, f in zip(SILENT_SCALE_CANDIDATES, buggy, fixed) if f and not b]


def silent_scale() -> Example:
    """Explanatory model of seed 001's two findings. (1) A fix that only stops the KeyError but lets
    recompute cast with the live, already updated scale (no restore) against a fix that restores
    the stash: which candidate assertion fails on the first and passes on the second? (2) With
    use_reentrant=True the first forward runs under no_grad (measured on real
    torch.utils.checkpoint), so Transformer Engine's update gate never fires and the scale stays at
    its initial 1.0: which assertion notices that against a run with use_reentrant=False?"""
    reent = _probe_checkpoint(True)
    non = _probe_checkpoint(False)
    fires_reentrant = _te_forward_update_fires(reent["forward_grad"], 0)
    fires_nonreentrant = _te_forward_update_fires(non["forward_grad"], 0)
    steps, n, width, seed = 10, 256, 64, 0
    rng = np.random.default_rng(seed)
    xs = rng.standard_normal((steps, n, width)).astype(np.float32)  # activations, σ = 1
    dys = (rng.standard_normal((steps, n, width)) / n).astype(np.float32)
    w = (rng.standard_normal((width, width)) / math.sqrt(width)).astype(np.float32)
    ref = _delayed_layer_run(xs, dys, w, checkpointing=False, update_fires=True, restore_stash=False)
    no_restore = _delayed_layer_run(xs, dys, w, checkpointing=True, update_fires=fires_nonreentrant,
                                    restore_stash=False)
    restored = _delayed_layer_run(xs, dys, w, checkpointing=True, update_fires=fires_nonreentrant,
                                  restore_stash=True)
    reentrant = _delayed_layer_run(xs, dys, w, checkpointing=True, update_fires=fires_reentrant,
                                   restore_stash=True)
    reentrant_no_restore = _delayed_layer_run(xs, dys, w, checkpointing=True, update_fires=fires_reentrant,
                                              restore_stash=False)
    v_no_restore, v_restored = _candidate_verdicts(no_restore, ref), _candidate_verdicts(restored, ref)
    v_reentrant = _candidate_verdicts(reentrant, ref)
    v_reent_no_restore = _candidate_verdicts(reentrant_no_restore, ref)
    wrong_restore = _catching(v_no_restore, v_restored)
    silent = _catching(v_reentrant, v_restored)
    # the same comparison with ten times larger output gradients: the fixed atol no longer hides it
    dys10 = (dys * np.float32(10.0)).astype(np.float32)
    ref10 = _delayed_layer_run(xs, dys10, w, checkpointing=False, update_fires=True, restore_stash=False)
    wrong10 = _catching(
        _candidate_verdicts(_delayed_layer_run(xs, dys10, w, checkpointing=True, update_fires=fires_nonreentrant,
                                               restore_stash=False), ref10),
        _candidate_verdicts(_delayed_layer_run(xs, dys10, w, checkpointing=True, update_fires=fires_nonreentrant,
                                               restore_stash=True), ref10))
    values: dict[str, Value] = {
        "reentrant_forward_grad": "enabled" if reent["forward_grad"] else "disabled",
        "nonreentrant_forward_grad": "enabled" if non["forward_grad"] else "disabled",
        "update_fires_reentrant": fires_reentrant, "update_fires_nonreentrant": fires_nonreentrant,
        "steps": steps, "reentrant_final_scale": reentrant["scales"][-1],
        "grad_std": float(np.std(np.array(ref["grads"]))),
        "wrong_restore_caught_by_10x": "; ".join(wrong10),
        "nonreentrant_final_scale": restored["scales"][-1],
        "wrong_restore_caught_by": wrong_restore[0] if len(wrong_restore) == 1 else "; ".join(wrong_restore),
        "silent_scale_caught_by": silent[0] if len(silent) == 1 else "; ".join(silent),
        # in the reentrant configuration a missing restore is invisible: nothing updates in between
        "reentrant_restore_visible": "yes" if _catching(v_reent_no_restore, v_reentrant) else "no",
    }
    for i, name in enumerate(SILENT_SCALE_CANDIDATES):
        values[f"candidate_{i}"] = name
        for label, verdicts in (("no_restore", v_no_restore), ("restored", v_restored),
                                ("reentrant", v_reentrant)):
            values[f"candidate_{i}_{label}"] = "passes" if verdicts[i] else "fails"
    # which recipes carry state from one call to the next: cast tensor B after tensor A vs fresh
    from lowprec.simulations.scaling.delayed import CurrentScaler, DelayedScaler
    from lowprec.simulations.quant.mx import quantize_mx

    a = (rng.standard_normal(1024) * 4.0).astype(np.float32)
    b = rng.standard_normal(1024).astype(np.float32)

    def delayed_codes(first: np.ndarray | None) -> np.ndarray:
        s = DelayedScaler("E4M3FN", history_len=16, algo="max")
        if first is not None:
            s.quantize(first)
        return s.quantize(b).codes

    def current_codes(first: np.ndarray | None) -> np.ndarray:
        s = CurrentScaler("E4M3FN")
        if first is not None:
            s.quantize(first)
        return s.quantize(b).codes

    def mx_codes(first: np.ndarray | None) -> np.ndarray:
        if first is not None:
            quantize_mx(first, "E4M3FN")
        return quantize_mx(b, "E4M3FN").codes

    stateful = [name for name, fn in (("delayed scaling", delayed_codes), ("current scaling", current_codes),
                                      ("MXFP8 block scaling", mx_codes))
                if not np.array_equal(fn(a), fn(None))]
    values["stateful_recipes"] = stateful
    values["exposed_recipes"] = f"{stateful[0]} only" if len(stateful) == 1 else ", ".join(stateful)
    return _ex("silent_scale", "A wrong or frozen FP8 scale, and the assertions that notice",
               "explanatory model: grad mode of the first forward measured on torch.utils.checkpoint "
               "(use_reentrant True / False); Transformer Engine's forward update gate (FP8 on, autocast "
               "depth 0, grad enabled); a 64-wide linear layer, 256 rows of N(0, 1) activations per step, "
               "E4M3FN delayed scaling (simulations.scaling.delayed.DelayedScaler, history 16, max) for 10 steps; "
               "each candidate assertion evaluated on both runs against a run without checkpointing; "
               "stateful recipes: tensor B cast after tensor A vs cast fresh",
               values, "silent_scale_caught_by", digits={"nonreentrant_final_scale": 4, "grad_std": 2})


# ------------------------------------------------------------------------------------------------
# lessons: fake quantization and the STE; calibration
# ------------------------------------------------------------------------------------------------


def fake_quant_ste() -> Example:
    """Fake quantization q = clamp(round(x / s), qmin, qmax), value q·s, and the straight-through
    gradient: 1 where x / s lies inside [qmin, qmax] after rounding, else 0 (simulations.studies.cliffs)."""
    from lowprec.simulations.studies.cliffs import fake_quant_scalar

    s, qmin, qmax = 0.25, -7, 7

    def ste_grad(x: float) -> float:
        return 1.0 if qmin <= round(x / s) <= qmax else 0.0

    xs = {"0_6": 0.6, "2": 2.0, "minus_1_9": -1.9, "1_8": 1.8}
    values: dict[str, Value] = {"scale": s, "qmin": qmin, "qmax": qmax}
    for label, x in xs.items():
        values[f"x_{label}"] = x
        values[f"value_{label}"] = fake_quant_scalar(x, s, 0, qmin, qmax)
        values[f"grad_{label}"] = ste_grad(x)
    values["value_minus_2_full_range"] = fake_quant_scalar(-2.0, s, 0, -8, 7)
    values["value_minus_2"] = fake_quant_scalar(-2.0, s, 0, qmin, qmax)
    return _ex("fake_quant_ste", "Fake quantization and its straight-through gradient",
               "lowprec.simulations.studies.cliffs.fake_quant_scalar(x, 0.25, 0, -7, 7) (round-half-to-even); "
               "STE gradient 1 inside the unclipped range, 0 outside",
               values, "value_0_6")


CALIBRATION_RANGES = {"max": "the maximum", "p999": "the 99.9th percentile", "p99": "the 99th percentile"}


def calibration_ranges() -> Example:
    """A heavy-tailed tensor (Student t, 3 degrees of freedom) cast to INT4, INT8 and E4M3FN with one
    decode scale per tensor sized from the max, the 99.9th or the 99th percentile of |x|."""
    from lowprec.simulations.scaling.metrics import error_metrics
    from lowprec.simulations.scaling import quantize_scaled

    seed, n = 1, 8192
    x = (np.random.default_rng(seed).standard_t(3, size=n) * 1e-3).astype(np.float32)
    ax = np.abs(x.astype(np.float64))
    ranges = {"max": float(ax.max()), "p999": float(np.quantile(ax, 0.999)), "p99": float(np.quantile(ax, 0.99))}
    values: dict[str, Value] = {"seed": seed, "n": n, "amax": ranges["max"], "p99": ranges["p99"],
                                "median_abs": float(np.median(ax))}
    for fmt in ("INT4", "INT8", "E4M3FN"):
        key = fmt.lower()
        for label, amax in ranges.items():
            x_hat = quantize_scaled(x, fmt, "tensor", amax=amax).dequantize()
            rep = error_metrics(x, x_hat)
            values[f"{key}_{label}_err"] = rep.rms_rel_error
            values[f"{key}_{label}_zero_pct"] = 100 * rep.flushed_fraction
            values[f"{key}_{label}_zero_count"] = int(round(rep.flushed_fraction * n))
            values[f"{key}_{label}_clipped_pct"] = 100 * float(np.mean(ax > amax))
            bulk = ax <= ranges["p99"]  # the 99 % of values inside every range
            values[f"{key}_{label}_bulk_err"] = error_metrics(x[bulk], x_hat[bulk]).rms_rel_error
        errs = {label: float(values[f"{key}_{label}_err"]) for label in ranges}  # type: ignore[arg-type]
        values[f"{key}_best"] = CALIBRATION_RANGES[min(errs, key=lambda k: errs[k])]
        bulk_errs = {label: float(values[f"{key}_{label}_bulk_err"]) for label in ranges}  # type: ignore[arg-type]
        values[f"{key}_bulk_best"] = CALIBRATION_RANGES[min(bulk_errs, key=lambda k: bulk_errs[k])]
    grid = explain_cast("0.001", "INT4", decode_scale=0.003)
    values.update({"probe_x": 0.001, "probe_decode_scale": 0.003, "probe_value": grid.value})
    return _ex("calibration_ranges", "Calibrating a heavy-tailed tensor for INT4, INT8 and E4M3FN",
               "8192 Student-t(3) values × 1e-3 (seed 1) in float32; lowprec.simulations.scaling."
               "quantize_scaled(x, fmt, 'tensor', amax=range) with range = max, 99.9th or 99th "
               "percentile of |x|; error ‖x̂ − x‖ / ‖x‖ over all values and over the bulk (|x| ≤ the 99th "
               "percentile), share flushed to zero (simulations.scaling.metrics); "
               "formats.explain_cast('0.001', 'INT4', decode_scale=0.003)",
               values, "int4_best", units={k: "%" for k in values if k.endswith("_pct")},
               digits={**{k: 3 for k in values if k.endswith("_err")},
                       **{k: 1 for k in values if k.endswith("_pct")}, "amax": 4, "p99": 4, "median_abs": 5})


# ------------------------------------------------------------------------------------------------
# lessons: reading published recipes; promoting a precision change
# ------------------------------------------------------------------------------------------------


def kv_cache_check() -> Example:
    bytes_per_token, tokens = 890, 10**6  # inputs: a reported per-token cache footprint, a million tokens
    total = bytes_per_token * tokens
    gib = total / 2**30
    bits = E2M1.bits + Fraction(E4M3FN.bits, 16)
    return _ex("kv_cache_check", "Checking a KV-cache figure against its denominators",
               "890 bytes per token × 10^6 tokens; MB = 10^6 bytes, GiB = 2^30 bytes; E2M1 bits + one "
               "E4M3FN scale per 16 values (formats)",
               {"bytes_per_token": bytes_per_token, "tokens": tokens, "megabytes": total / 10**6, "gib": gib,
                "vs_one_gib": "less than 1 GiB" if gib < 1 else "1 GiB or more",
                "bits_per_element": float(bits), "vs_bf16": float(Fraction(BF16.bits) / bits),
                "vs_fp8": float(Fraction(E4M3FN.bits) / bits)},
               "vs_one_gib", digits={"gib": 3, "vs_bf16": 2, "vs_fp8": 2})


def conventions_edges() -> Example:
    from lowprec.formats import decode, encode, policy_for

    def cast(x: float, fmt: formats.FloatFormat, convention: str) -> float:
        pol = policy_for(convention, fmt)
        return float(decode(encode(np.array([x], dtype=np.float64), fmt, pol), fmt)[0])

    first_nan = float(np.nextafter(np.float32(464.0), np.float32(np.inf)))
    return _ex("conventions_edges", "Test vectors that tell backends apart",
               "formats.policy_for(convention, fmt) applied by formats.encode: E5M2 62000 (above the "
               "midpoint 61440 of 57344 and the next power of two), E8M0 of 0, E4M3FN at 464 and the "
               "next float32 above it",
               {"e5m2_62000_ml_dtypes": cast(62000.0, E5M2, "ml_dtypes"),
                "e5m2_62000_torch": cast(62000.0, E5M2, "torch"),
                "e5m2_62000_triton": cast(62000.0, E5M2, "triton_nvidia"),
                "e8m0_zero_torch": cast(0.0, E8M0, "torch"),
                "e8m0_zero_torch_text": "2^-127",
                "e8m0_zero_ml_dtypes": cast(0.0, E8M0, "ml_dtypes"),
                "e4m3fn_464_ml_dtypes": cast(464.0, E4M3FN, "ml_dtypes"),
                "first_nan_input": first_nan, "first_nan_text": float(first_nan).hex(),
                "first_nan_ml_dtypes": cast(first_nan, E4M3FN, "ml_dtypes"),
                "first_nan_torch": cast(first_nan, E4M3FN, "torch")},
               "e5m2_62000_triton", digits={"first_nan_input": 15, "e8m0_zero_torch": 16})


def lab_samples() -> Example:
    """The recipe lab's sample weight (`simulations.lab.samples`, BF16, four input channels ×16)
    under the default recipes: its outlier input channels, and the BF16 cast's error on a tensor
    already stored as BF16."""
    from lowprec.simulations.lab import analyze_arrays
    from lowprec.simulations.lab.samples import weight

    report = analyze_arrays({"weight": weight()}, "bf16,e4m3_row,e4m3_column")
    t = report.tensors[0]
    assert t.stats.outlier_channels is not None and t.stats.channels is not None
    row, col = t.result("e4m3_row"), t.result("e4m3_column")
    assert row.rms_rel_err is not None and col.rms_rel_err is not None
    return _ex("lab_samples", "The recipe lab's sample weight: outlier channels and a BF16 checkpoint",
               "simulations.lab on samples.weight(): per-channel RMS against 6 × the median; recipes bf16, "
               "e4m3_row, e4m3_column",
               {"outlier_channels": t.stats.outlier_channels, "channels": t.stats.channels,
                "bf16_rms_rel_err": t.result("bf16").rms_rel_err or 0.0,
                "e4m3_row_rms_rel_err": row.rms_rel_err, "e4m3_column_rms_rel_err": col.rms_rel_err},
               "outlier_channels", digits={"e4m3_row_rms_rel_err": 3, "e4m3_column_rms_rel_err": 3})


EXAMPLES: dict[str, Callable[[], Example]] = {
    "bin_3_3": bin_3_3,
    "range_questions": range_questions,
    "softmax_threshold": softmax_threshold,
    "absorption_bf16": absorption_bf16,
    "scale_one_table": scale_one_table,
    "scaled_bin_0_01": scaled_bin_0_01,
    "te_scale_rule": te_scale_rule,
    "grouping_table": grouping_table,
    "nvfp4_metadata": nvfp4_metadata,
    "block_views": block_views,
    "spike_questions": spike_questions,
    "accumulator_swamping": accumulator_swamping,
    "bf16_bin_at_3": bf16_bin_at_3,
    "bf16_bin_at_256": bf16_bin_at_256,
    "loss_scale_choice": loss_scale_choice,
    "resume_history": resume_history,
    "sr_rerandomized": sr_rerandomized,
    "attention_three_probs": attention_three_probs,
    "tie_cases": tie_cases,
    "fake_quant_ste": fake_quant_ste,
    "calibration_ranges": calibration_ranges,
    "kv_cache_check": kv_cache_check,
    "conventions_edges": conventions_edges,
    "lab_samples": lab_samples,
}

#: examples that run torch (real torch.utils.checkpoint, the recompute simulation): resolved by
#: `course.examples.example(name)` like the others, but left out of the default listing so that
#: listing the examples stays torch-free (torch is optional)
TORCH_EXAMPLES: dict[str, Callable[[], Example]] = {
    "checkpoint_primer": checkpoint_primer,
    "lab_signatures": lab_signatures,
    "silent_scale": silent_scale,
}
