"""Worked examples behind the course's transfer questions (issue 31): each applies a lesson's
mechanism to a case the lesson's text does not work through — another value, format, scale, layer
or arrangement — and computes the answer with the models of this package.

Same conventions as `course.examples_course` (decode scale `s` multiplies codes back; encode
scale `F / amax`; casts through `formats` with round-to-nearest-even and saturation unless a
convention is named; random tensors from `numpy.random.default_rng(seed)` with the seed among the
values). A field that answers a `choice` question holds the right choice's text; one that answers
an `order` or `classify` question holds a list of texts (the items in order, or each item's
category). Examples that need torch (`torch.utils.checkpoint` is the point) are in
`TORCH_EXAMPLES`; the rest import no torch.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any, Callable

import numpy as np

from lowprec import formats
from lowprec.formats import BF16, E2M1, E3M2, E4M3FN, E5M2, FP16, CastPolicy, Overflow, explain_cast

from lowprec.course.example_record import Example, Value, example as _ex

__all__ = ["ATTENTION_STAGES", "EXAMPLES", "TORCH_EXAMPLES", "PROMOTION_STEPS", "contract_of_label"]

SATURATE = CastPolicy(overflow=Overflow.SATURATE)



def _q(x: Any, fmt: formats.Format, policy: CastPolicy | None = None) -> np.ndarray:
    return np.asarray(formats.quantize(np.asarray(x, dtype=np.float64), fmt, policy or SATURATE), dtype=np.float64)


def _q1(x: float, fmt: formats.Format, policy: CastPolicy | None = None) -> float:
    return float(_q(np.array([x]), fmt, policy)[0])


def _next_up(v: float, fmt: formats.FloatFormat) -> float:
    """The value of `fmt` just above the representable positive v."""
    table = formats.code_table(fmt)
    vals = table.value[np.isfinite(table.value)]
    return float(np.min(vals[vals > v]))


# ------------------------------------------------------------------------------------------------
# 1 the arithmetic contract
# ------------------------------------------------------------------------------------------------

BITS = {"FP32": 32, "BF16": 16, "FP16": 16, "FP8": 8, "E4M3FN": 8, "E5M2": 8, "INT8": 8, "INT4": 4, "FP4": 4}


def contract_of_label(weights_bits: int, activation_bits: int, accumulator: str, kv_cache: str) -> dict[str, int]:
    """The widths a `WxAy` label with a stated accumulator and KV-cache format sets, by the rules the
    lesson states: weights are stored in x bits; activations are y bits; a product reads both of its
    operands in the activations' width (a narrower weight is expanded to it before the product); its
    partial sums are kept in the accumulator's format; the cache is stored as stated."""
    for name, v in (("weights_bits", weights_bits), ("activation_bits", activation_bits)):
        if v not in (4, 8, 16):
            raise ValueError(f"{name}={v!r} must be 4, 8 or 16")
    if accumulator not in BITS or kv_cache not in BITS:
        raise ValueError(f"accumulator and kv_cache must be one of {', '.join(BITS)}")
    return {"weights as stored": weights_bits, "weights as the product reads them": activation_bits,
            "activations": activation_bits, "partial sums of the product": BITS[accumulator],
            "the KV cache": BITS[kv_cache]}


def precision_label() -> Example:
    contract = contract_of_label(4, 8, "FP32", "FP8")
    return _ex("precision_label", "Reading W4A8 with FP32 accumulation and an FP8 KV cache",
               "contract_of_label(4, 8, 'FP32', 'FP8'): the widths the label's rules set",
               {"label": "W4A8, FP32 accumulation, FP8 KV cache", "items": list(contract),
                "classes": [f"{b} bits" for b in contract.values()]},
               "label")


def decode_traffic() -> Example:
    """Bytes a batch-1 decode step reads per generated token: every weight once, plus the KV cache."""
    params, kv_bytes = 7 * 10**9, 2 * 10**9  # inputs: a 7-billion-parameter model, a 2 GB BF16 cache
    bf16_bytes = Fraction(params * BF16.bits, 8)
    nvfp4_bits = E2M1.bits + Fraction(E4M3FN.bits, 16)
    quant_bytes = Fraction(params) * nvfp4_bits / 8
    before, after = bf16_bytes + kv_bytes, quant_bytes + kv_bytes
    return _ex("decode_traffic", "Weight-only quantization of a memory-bound decode step",
               "bytes read per token = weights (7e9 × bits / 8) + a 2 GB BF16 KV cache; NVFP4 layout "
               "4 + 8/16 bits per weight (formats widths); exact Fractions",
               {"params_billion": 7, "kv_gb": float(Fraction(kv_bytes, 10**9)),
                "weights_gb_bf16": float(bf16_bytes / 10**9), "weights_gb_nvfp4": float(quant_bytes / 10**9),
                "storage_ratio": float(Fraction(BF16.bits) / nvfp4_bits), "traffic_ratio": float(before / after),
                "bytes_before_gb": float(before / 10**9), "bytes_after_gb": float(after / 10**9)},
               "traffic_ratio", digits={"storage_ratio": 2, "traffic_ratio": 2, "weights_gb_nvfp4": 4,
                                        "bytes_after_gb": 4})


# ------------------------------------------------------------------------------------------------
# 2 range vs resolution
# ------------------------------------------------------------------------------------------------


def e3m2_facts() -> Example:
    fmt = E3M2
    return _ex("e3m2_facts", "E3M2 (MXFP6's element): largest and smallest values",
               "formats.E3M2: 3 exponent bits (bias 3), 2 mantissa bits, no Inf or NaN",
               {"bias": fmt.bias, "max": float(fmt.max), "smallest_subnormal": float(fmt.smallest_subnormal),
                "smallest_normal": float(fmt.smallest_normal)},
               "max")


def code_minus_27() -> Example:
    e = explain_cast("-27", "E4M3FN", "torch")
    b = e.rounding_bin
    assert b is not None
    return _ex("code_minus_27", "-27 in E4M3FN: a tie between 26 and 28",
               "formats.explain_cast('-27', 'E4M3FN', 'torch')",
               {"x": -27.0, "code": int(e.code), "hex": f"0x{int(e.code):02X}", "value": e.value,
                "bits": f"{int(e.code):08b}"},
               "hex")


# ------------------------------------------------------------------------------------------------
# 3 absorption before underflow
# ------------------------------------------------------------------------------------------------


def fp16_at_4() -> Example:
    from lowprec.simulations.studies.cliffs import absorption

    r = absorption("FP16", 0.0, base=4.0)
    tie = _q1(4.0 + r.threshold, FP16)
    above = _q1(4.0 + float(np.nextafter(r.threshold, 1.0)), FP16)
    return _ex("fp16_at_4", "4 + x in FP16", "lowprec.simulations.studies.cliffs.absorption('FP16', x, base=4): "
               "the gap above 4 and the tie at half of it (nearest-even)",
               {"gap": r.gap_above, "threshold": r.threshold, "tie_goes_to": tie, "just_above_goes_to": above},
               "threshold")


def softmax_more() -> Example:
    """Softmax saturation of more cases: FP16 over four logits op by op, and BF16 rounded once."""
    from lowprec.simulations.studies.cliffs import softmax_saturation

    d_fp16_4 = next(d for d in range(1, 200) if softmax_saturation("FP16", [float(d), 0.0, 0.0, 0.0]).saturated)
    once = next(d for d in range(1, 200)
                if _q1(1.0 / (1.0 + 2.0 * math.exp(-d)), BF16) == 1.0)
    return _ex("softmax_more", "Where softmax saturates: four FP16 logits, and BF16 rounded once",
               "simulations.studies.cliffs.softmax_saturation('FP16', [d, 0, 0, 0]) (every operation rounded); "
               "the exact 1 / (1 + 2 e^-d) rounded once to BF16 (what torch 2.13's CPU softmax of a "
               "BF16 tensor returns: it computes in FP32 and rounds the result)",
               {"fp16_four_d": d_fp16_4, "bf16_once_d": once}, "bf16_once_d")


# ------------------------------------------------------------------------------------------------
# 4 moving the grid
# ------------------------------------------------------------------------------------------------


def zero_amax_sequence() -> Example:
    from lowprec.simulations.scaling.delayed import DelayedScaler

    s = DelayedScaler("E4M3FN", history_len=1, algo="most_recent", initial_encode_scale=64.0)
    seen = []
    for amax in (0.0, float("nan"), 1.75):
        s.update(amax)
        seen.append(s.encode_scale)
    return _ex("zero_amax_sequence", "A delayed scale through a zero, a NaN and a real amax",
               "simulations.scaling.delayed.DelayedScaler(E4M3FN, most_recent, initial encode scale 64): amaxes "
               "0, NaN, 1.75 recorded in turn (Transformer Engine's rule: 448 / amax, the previous "
               "scale for an amax of 0 or not finite)",
               {"start": 64.0, "after_zero": seen[0], "after_nan": seen[1], "final": seen[2]}, "final")


def scale_one_zeroed() -> Example:
    sigma, n, seed = 0.001, 2**16, 0
    x = (np.random.default_rng(seed).standard_normal(n) * sigma).astype(np.float32).astype(np.float64)
    zeroed = float(np.mean(_q(x, E4M3FN) == 0))
    return _ex("scale_one_zeroed", "A small tensor cast to E4M3FN with encode scale 1",
               "65536 values N(0, 0.001²) (seed 0) in float32, cast to E4M3FN (nearest-even) with scale 1: "
               "the share that becomes 0",
               {"sigma": sigma, "n": n, "seed": seed, "zeroed_pct": 100 * zeroed,
                "half_smallest_subnormal": E4M3FN.smallest_subnormal / 2},
               "zeroed_pct", units={"zeroed_pct": "%"}, digits={"zeroed_pct": 1})


# ------------------------------------------------------------------------------------------------
# 5 scale grouping
# ------------------------------------------------------------------------------------------------

_GROUP_NAMES = {"tensor": "one per tensor", "row": "one per row", "column": "one per column",
                "block32": "one per 1×32 block", "block16x16": "one per 16×16 tile"}


def outlier_column() -> Example:
    """The ScaleGrouping tensor (32 × 64 standard normal, seed 0) with a whole outlier feature:
    column 5 multiplied by 100. Error of the other columns per grouping, in E2M1."""
    from lowprec.simulations.scaling import quantize_scaled

    x = np.random.default_rng(0).standard_normal((32, 64)).astype(np.float32)
    x[:, 5] *= np.float32(100.0)
    ordinary = np.ones(x.shape, bool)
    ordinary[:, 5] = False
    errs: dict[str, float] = {}
    for g in _GROUP_NAMES:
        x_hat = quantize_scaled(x, "E2M1", g).dequantize().astype(np.float64)
        d = (x_hat - x)[ordinary]
        errs[g] = float(np.linalg.norm(d) / np.linalg.norm(x[ordinary].astype(np.float64)))
    best = min(errs, key=lambda k: errs[k])
    values: dict[str, Value] = {f"err_{k}": v for k, v in errs.items()}
    values["best"] = _GROUP_NAMES[best]
    return _ex("outlier_column", "A whole outlier feature column under five groupings",
               "32 × 64 N(0, 1) (seed 0), column 5 × 100; simulations.scaling.quantize_scaled(x, 'E2M1', "
               "grouping); error ‖x̂ − x‖ / ‖x‖ over the other 63 columns",
               values, "best", digits={k: 3 for k in values if k.startswith("err_")})


def tile_metadata() -> Example:
    rows = cols = 4096
    tile_bits = Fraction(32, 128 * 128)
    row_bits = Fraction(32, 128)
    return _ex("tile_metadata", "Scale bits per element of FP8 blockwise tiles",
               "one FP32 scale (32 bits) per 128×128 tile or per 1×128 tile of a 4096×4096 matrix",
               {"rows": rows, "cols": cols, "tile_128x128_bits": float(tile_bits), "tile_1x128_bits": float(row_bits),
                "tile_128x128_text": "2^-9"},
               "tile_128x128_bits")


def contraction_axis() -> Example:
    """Which per-group scales of Y = X W can be applied to the product after the GEMM: tested by
    computing with the scales applied to the operands before the product and to the result after."""
    rng = np.random.default_rng(0)
    t, k, n = 3, 4, 5  # tokens, input features, output channels
    x = rng.standard_normal((t, k))
    w = rng.standard_normal((k, n))
    exact = x @ w
    items = {"one scale per token (a row of X)": ("x_row", t),
             "one scale per input feature (a column of X)": ("x_col", k),
             "one scale per output channel (a column of W)": ("w_col", n),
             "one scale per input channel (a row of W)": ("w_row", k)}
    classes = []
    for where, size in items.values():
        s = rng.uniform(0.5, 2.0, size)
        if where == "x_row":
            before = (x / s[:, None]) @ w
        elif where == "x_col":
            before = (x / s[None, :]) @ w
        elif where == "w_col":
            before = x @ (w / s[None, :])
        else:
            before = x @ (w / s[:, None])
        # an epilogue multiplies output (i, j) by a row factor times a column factor: it can restore
        # the product only when exact / before is such an outer product (rank one)
        ratio = exact / before
        factorable = bool(np.allclose(ratio * ratio[0, 0], ratio[:, :1] * ratio[:1, :], rtol=1e-9, atol=0))
        classes.append("apply after the GEMM" if factorable else "must be applied before the sum")
    return _ex("contraction_axis", "Which scales of Y = X W factor out of the sum",
               "random X (3×4), W (4×5) and positive scales (seed 0): each grouping's scales divided out "
               "of the operand before the product; an epilogue works when one factor per output element "
               "restores X W exactly",
               {"items": list(items), "classes": classes}, "classes")


# ------------------------------------------------------------------------------------------------
# 6 MXFP8 and NVFP4
# ------------------------------------------------------------------------------------------------


def mxfp4_rules() -> Example:
    from lowprec.simulations.quant.mx import mx_scale_rule_table

    amax = 100.0
    rows = {r["rule"]: r for r in mx_scale_rule_table(amax, "E2M1")}
    return _ex("mxfp4_rules", "An MXFP4 block with amax 100 under the floor and round-up rules",
               "lowprec.simulations.quant.mx.mx_scale_rule_table(100, 'E2M1')",
               {"amax": amax, "floor_exponent": int(rows["floor"]["scale_exponent"]),
                "floor_decoded": float(rows["floor"]["decoded_amax"]),
                "rceil_exponent": int(rows["rceil"]["scale_exponent"]),
                "rceil_decoded": float(rows["rceil"]["decoded_amax"])},
               "rceil_exponent")


# ------------------------------------------------------------------------------------------------
# 7 when the scale is measured
# ------------------------------------------------------------------------------------------------


def spike_questions_more() -> Example:
    from lowprec.simulations.scaling.delayed import DelayedScaler
    from lowprec.simulations.studies.spike import simulate_stream

    r = simulate_stream(format="E4M3FN", history=16, algo="max", steps=140, spike_step=100, spike=4.0, seed=0)
    clipped_x4 = float(r.delayed["clipped_fraction"][100])
    # a spike lasting steps 100-102 (amax 50, else 1), history 8: steps whose scale a spike amax sized
    h, steps = 8, 140
    amax = np.ones(steps)
    amax[100:103] = 50.0
    s = DelayedScaler("E4M3FN", history_len=h, algo="max")
    spiked = []
    for t in range(steps):
        if s.encode_scale == float(np.float32(448.0) / np.float32(50.0)):
            spiked.append(t)
        s.update(float(amax[t]))
    return _ex("spike_questions_more", "A smaller spike, and a spike of three steps",
               "simulations.studies.spike.simulate_stream(E4M3FN, history 16, max, spike ×4 at step 100, seed 0): "
               "the share the delayed scale clips at the spike; simulations.scaling.delayed.DelayedScaler(E4M3FN, "
               "history 8, max) over amax 1 with 50 at steps 100-102: the steps cast with a spike-sized scale",
               {"clipped_x4_pct": 100 * clipped_x4, "window_steps": len(spiked), "first": spiked[0],
                "last": spiked[-1]},
               "window_steps", units={"clipped_x4_pct": "%"}, digits={"clipped_x4_pct": 1})


# ------------------------------------------------------------------------------------------------
# 8 three products
# ------------------------------------------------------------------------------------------------

#: the three GEMMs of Y = X W and the tensors each reads (role names)
PRODUCTS = {"forward Y = X W": ("activation", "weight"),
            "activation gradient dX = dY Wᵀ": ("gradient", "weight"),
            "weight gradient dW = Xᵀ dY": ("activation", "gradient")}


def hybrid_products() -> Example:
    fmt = {"activation": "E4M3FN", "weight": "E4M3FN", "gradient": "E5M2"}  # TE's Format.HYBRID
    classes = []
    for a, b in PRODUCTS.values():
        pair = {fmt[a], fmt[b]}
        classes.append("both E4M3FN" if pair == {"E4M3FN"} else "both E5M2" if pair == {"E5M2"}
                       else "one E4M3FN, one E5M2")
    return _ex("hybrid_products", "The three GEMMs under a HYBRID recipe",
               "PRODUCTS (the operands of each GEMM of a linear layer) with activations and weights in "
               "E4M3FN and gradients in E5M2 (Transformer Engine's Format.HYBRID)",
               {"items": list(PRODUCTS), "classes": classes}, "classes")


def eighth_grid() -> Example:
    probs = [Fraction(6, 10), Fraction(3, 10), Fraction(1, 10)]
    values = [Fraction(0), Fraction(2), Fraction(10)]
    step = Fraction(1, 8)
    rounded = [round(p / step) * step for p in probs]  # Python's round: half to even
    out = sum((p * v for p, v in zip(rounded, values)), Fraction(0))
    return _ex("eighth_grid", "Probabilities on a grid of 1/8",
               "[0.6, 0.3, 0.1] rounded to multiples of 1/8 (nearest, ties to even), dot [0, 2, 10], exact",
               {"rounded": [float(r) for r in rounded], "output": float(out),
                "exact": float(sum((p * v for p, v in zip(probs, values)), Fraction(0)))},
               "output")


# ------------------------------------------------------------------------------------------------
# 9 sensitive paths
# ------------------------------------------------------------------------------------------------


def path_sensitivity() -> Example:
    """Four computations with their inputs stored in BF16 against float64: the relative error of the
    result; reductions accumulate in FP32 (as GEMM and norm kernels do); a stored result is rounded
    to BF16; a changed discrete choice counts as 100 %."""
    rng = np.random.default_rng(0)

    def bf(v: Any) -> np.ndarray:
        return _q(np.asarray(v, dtype=np.float64), BF16)

    def f32_sum(v: np.ndarray) -> float:
        acc = np.float32(0.0)
        for t in np.asarray(v, dtype=np.float32):
            acc = np.float32(acc + t)
        return float(acc)

    # a projection's outputs: X (16 × 4096) W (4096 × 16) with BF16 operands, accumulated in FP32
    xa, wa = rng.standard_normal((16, 4096)), rng.standard_normal((4096, 16)) / 64
    exact_y = xa @ wa
    y = bf(xa).astype(np.float32) @ bf(wa).astype(np.float32)
    dot_err = float(np.linalg.norm(y - exact_y) / np.linalg.norm(exact_y))
    # a router's top-1 between scores 3.000 (expert 0) and 3.005 (expert 1); ties go to the lower index
    scores = np.array([3.0, 3.005])
    router_err = 0.0 if int(np.argmax(scores)) == int(np.argmax(bf(scores))) else 1.0
    # a variance in one pass, mean(x²) − mean(x)², of 1024 BF16 values of mean 100 and spread 0.1, in FP32
    x = 100.0 + 0.1 * rng.standard_normal(1024)
    xb = bf(x)
    m1 = np.float32(f32_sum(xb) / np.float32(1024))
    m2 = np.float32(f32_sum(xb * xb) / np.float32(1024))
    var = float(np.float32(m2 - np.float32(m1 * m1)))
    var_exact = float(np.mean(x * x) - np.mean(x) ** 2)
    var_err = abs(var - var_exact) / var_exact
    # a residual value of 256 stored in BF16, to which 64 layers each add 0.5
    h = 256.0
    for _ in range(64):
        h = float(bf(h + 0.5))
    res_err = abs(h - 288.0) / 288.0
    items = {"a projection's outputs: X W over 4096 features with BF16 operands, summed in FP32": dot_err,
             "the top-1 choice between router scores 3.000 and 3.005 cast to BF16": router_err,
             "a norm's variance in one pass, mean(x²) − mean(x)², of BF16 values with mean 100 and spread 0.1": var_err,
             "a residual value of 256 kept in BF16, to which 64 layers each add 0.5": res_err}
    classes = ["protect it (error of 1 % or more)" if e >= 0.01 else "low precision is fine (error under 1 %)"
               for e in items.values()]
    return _ex("path_sensitivity", "Four paths with BF16 inputs: which ones break",
               "inputs rounded to BF16 (nearest-even), reductions summed in FP32, a stored residual rounded to "
               "BF16 after each add, against float64; relative error of the result, 100 % for a changed "
               "discrete choice; seed 0",
               {"items": list(items), "classes": classes, "dot_err_pct": 100 * dot_err,
                "var_err_pct": 100 * var_err, "residual_bf16": h, "router_changed": router_err == 1.0},
               "classes", units={"dot_err_pct": "%", "var_err_pct": "%"},
               digits={"dot_err_pct": 2, "var_err_pct": 0})


# ------------------------------------------------------------------------------------------------
# 11 loss scaling
# ------------------------------------------------------------------------------------------------


def loss_vs_tensor() -> Example:
    """Two gradient tensors in one backward pass, cast to FP16 under one loss scale of 2^16, or each
    with its own scale FP16max / amax."""
    a = np.geomspace(1e-10, 1e-6, 64)  # tensor A: tiny gradients (inputs of the example)
    b = np.geomspace(1e-3, 8.0, 64)  # tensor B: large gradients
    fmax = FP16.max

    def verdict(x: np.ndarray, scale: float) -> str:
        y = _q(x * scale, FP16, CastPolicy(overflow=Overflow.NONFINITE))
        if not np.all(np.isfinite(y)):
            return "some values overflow"
        if np.any(y == 0):
            return "some values round to zero"
        return "every value stays finite and nonzero"

    own_a, own_b = float(np.float32(fmax / a.max())), float(np.float32(fmax / b.max()))
    items = {"tensor A under the loss scale 2^8": verdict(a, 2.0**8),
             "tensor B under the loss scale 2^8": verdict(b, 2.0**8),
             "tensor A under the loss scale 2^16": verdict(a, 2.0**16),
             "tensor B under the loss scale 2^16": verdict(b, 2.0**16),
             "tensor A under its own tensor scale": verdict(a, own_a),
             "tensor B under its own tensor scale": verdict(b, own_b)}
    return _ex("loss_vs_tensor", "One loss scale against one scale per tensor",
               "A: 64 values from 1e-10 to 1e-6, B: 64 values from 1e-3 to 8 (geometric); cast to FP16 "
               "(nearest-even, overflow to Inf) after × 2^8, × 2^16, or × float32(65504 / the tensor's amax)",
               {"items": list(items), "classes": list(items.values()), "own_scale_a": own_a, "own_scale_b": own_b},
               "classes")


# ------------------------------------------------------------------------------------------------
# 12 what a resume must restore
# ------------------------------------------------------------------------------------------------


def resume_at_105() -> Example:
    from lowprec.course.examples_course import RESUME_HISTORY, RESUME_SPIKE_STEP, resume_scales

    history, spike_step, resume_step = RESUME_HISTORY, RESUME_SPIKE_STEP, 105
    used, used_r, differ = resume_scales(resume_step)
    return _ex("resume_at_105", "The same resume, taken five steps later",
               "simulations.scaling.delayed.DelayedScaler(E4M3FN, history 16, max): amax 1, 50 at step 95; resumed at "
               "step 105 with a fresh scaler (encode scale 1, empty history)",
               {"steps_differ": len(differ), "first": differ[0], "last": differ[-1]}, "steps_differ")


# ------------------------------------------------------------------------------------------------
# 15 ties and bias
# ------------------------------------------------------------------------------------------------


def bias_populations() -> Example:
    """Mean error of round-to-nearest-even to E4M3FN over three stated populations in [1, 2)."""
    table = formats.code_table(E4M3FN)
    v = table.value
    grid = np.unique(v[np.isfinite(v) & (v >= 1.0) & (v < 2.0)])
    mids = (grid + np.append(grid[1:], 2.0)) / 2
    pops = {"the eight midpoints between neighbouring E4M3FN values in [1, 2)": mids,
            "every E4M3FN value in [1, 2) plus 0.01": grid + 0.01,
            "every E4M3FN value in [1, 2) once plus 0.01 and once minus 0.01":
                np.concatenate([grid + 0.01, grid - 0.01])}
    means = {k: float(np.mean(_q(x, E4M3FN) - x)) for k, x in pops.items()}
    nonzero = [k for k, m in means.items() if abs(m) > 1e-12]
    return _ex("bias_populations", "Three populations, one rounding: which has a nonzero mean error?",
               "the populations rounded to E4M3FN (nearest-even); mean of (rounded − value) over each",
               {"means": list(means.values()), "nonzero": nonzero[0] if len(nonzero) == 1 else "; ".join(nonzero)},
               "nonzero", digits={"means": 4})


# ------------------------------------------------------------------------------------------------
# 17 the recompute lab
# ------------------------------------------------------------------------------------------------


def lab_more() -> Example:
    """More of the recompute lab's signatures: the consume-after-advance comparison, which check
    flags shared-state-snapshot, stale-centre against recompute-mutates, and shared state over 6 layers."""
    from lowprec.simulations.recompute import run_recompute

    def max_diff(variant: str) -> float:
        r = run_recompute(variant)
        return float(np.nanmax(np.where(r.recomputed, r.max_abs_diff, np.nan)))

    cab = run_recompute("consume-after-advance")
    cab_differ = int((cab.recomputed & ~cab.bitwise_equal).sum())
    cab_steps_flagged = "never" if cab_differ == 0 else "in some steps"
    snap = run_recompute("shared-state-snapshot")
    checks = {"a bitwise forward-vs-recompute comparison": bool((snap.recomputed & ~snap.bitwise_equal).any()),
              "a count of state commits per step": bool(np.any(snap.state_commits != snap.expected_state_commits)),
              "a check of whose amax sized each scale": bool(snap.contaminated("forward").any())}
    flagged = [k for k, v in checks.items() if v]
    ratio = max_diff("stale-centre") / max_diff("recompute-mutates")
    bucket = min({"about the same": 1.0, "about 3 times larger": 3.0, "about 30 times larger": 30.0}.items(),
                 key=lambda kv: abs(math.log(ratio / kv[1])))[0]
    six = run_recompute("shared-state", layers=6)
    foreign = int(six.contaminated("forward")[: six.steps_run].sum())
    calls = six.steps_run * 6
    return _ex("lab_more", "More signatures of the recompute lab",
               "lowprec.simulations.recompute.run_recompute with the widget defaults (and layers=6 for the "
               "last): counts over every (step, layer)",
               {"cab_flagged": cab_steps_flagged, "snapshot_flagged_by": flagged[0] if len(flagged) == 1 else "; ".join(flagged),
                "centre_bucket": bucket, "six_foreign": foreign, "six_calls": calls,
                "six_foreign_share": foreign / calls},
               "six_foreign_share", digits={"six_foreign_share": 4})


# ------------------------------------------------------------------------------------------------
# 18 the isfinite lesson: which recipes carry state; a new σ
# ------------------------------------------------------------------------------------------------


def stateful_recipes() -> Example:
    """Cast tensor B fresh, and after casting tensor A, under each recipe: a recipe carries state when
    the two casts of B differ."""
    from lowprec.simulations.scaling.delayed import DelayedScaler
    from lowprec.simulations.quant import quantize

    rng = np.random.default_rng(0)
    a = (rng.standard_normal((4, 128)) * 4.0).astype(np.float32)
    b = rng.standard_normal((4, 128)).astype(np.float32)

    def delayed(first: np.ndarray | None) -> np.ndarray:
        s = DelayedScaler("E4M3FN", history_len=16, algo="max")
        if first is not None:
            s.quantize(first)
        return s.quantize(b).codes

    def pure(recipe: str) -> Callable[[np.ndarray | None], np.ndarray]:
        def run(first: np.ndarray | None) -> np.ndarray:
            if first is not None:
                quantize(first, recipe)
            return np.asarray(quantize(b, recipe).codes)
        return run

    recipes = {"DelayedScaling (per tensor, amax history)": delayed,
               "Float8CurrentScaling (per tensor)": pure("e4m3_tensor"),
               "MXFP8BlockScaling (1×32 blocks)": pure("mxfp8_e4m3"),
               "Float8BlockScaling (1×128 tiles)": pure("fp8_1x128"),
               "NVFP4BlockScaling (1×16 blocks)": pure("nvfp4")}
    classes = ["carries state from one call to the next" if not np.array_equal(fn(a), fn(None))
               else "sizes its scales from the tensor it casts" for fn in recipes.values()]
    return _ex("stateful_recipes", "Which recipes carry state across calls",
               "tensor B (4×128, N(0,1), seed 0) cast fresh and after tensor A (×4): delayed scaling with "
               "simulations.scaling.delayed.DelayedScaler, the others with simulations.quant.quantize",
               {"items": list(recipes), "classes": classes}, "classes")


def sigma_0_01() -> Example:
    from lowprec.course.examples_course import scale_one_errors

    runs = [scale_one_errors(0.01, seed, 2**18) for seed in (0, 1)]
    ratio = float(np.mean([one / amax for one, amax in runs]))
    return _ex("sigma_0_01", "A tensor of σ = 0.01 cast with scale 1",
               "course.examples_course.scale_one_errors(0.01, seed, 2^18) for seeds 0 and 1: mean ratio "
               "of the error at encode scale 1 to the error at the amax scale",
               {"ratio": ratio}, "ratio", digits={"ratio": 2})


# ------------------------------------------------------------------------------------------------
# 20 calibration
# ------------------------------------------------------------------------------------------------

_RANGES = {"max": "the maximum", "p999": "the 99.9th percentile", "p99": "the 99th percentile"}


def _best_range(x: np.ndarray, fmt: str) -> tuple[str, dict[str, float]]:
    from lowprec.simulations.scaling.metrics import error_metrics
    from lowprec.simulations.scaling import quantize_scaled

    ax = np.abs(x.astype(np.float64))
    ranges = {"max": float(ax.max()), "p999": float(np.quantile(ax, 0.999)), "p99": float(np.quantile(ax, 0.99))}
    errs = {k: error_metrics(x, quantize_scaled(x, fmt, "tensor", amax=a).dequantize()).rms_rel_error
            for k, a in ranges.items()}
    return _RANGES[min(errs, key=lambda k: errs[k])], errs


def calibration_more() -> Example:
    seed, n = 1, 8192
    t10 = (np.random.default_rng(seed).standard_t(10, size=n) * 1e-3).astype(np.float32)
    t3 = (np.random.default_rng(seed).standard_t(3, size=n) * 1e-3).astype(np.float32)
    int4_t10, e_int4 = _best_range(t10, "INT4")
    e2m1_t3, e_e2m1 = _best_range(t3, "E2M1")
    return _ex("calibration_more", "Calibrating a lighter tail for INT4, and the heavy tail for E2M1",
               "8192 Student-t values × 1e-3 (seed 1), 10 and 3 degrees of freedom; "
               "simulations.scaling.quantize_scaled(x, fmt, 'tensor', amax=range), error ‖x̂ − x‖ / ‖x‖",
               {"int4_t10_best": int4_t10, "e2m1_t3_best": e2m1_t3,
                **{f"int4_t10_{k}_err": v for k, v in e_int4.items()},
                **{f"e2m1_t3_{k}_err": v for k, v in e_e2m1.items()}},
               "int4_t10_best", digits={k: 3 for k in ("int4_t10_max_err", "int4_t10_p999_err", "int4_t10_p99_err",
                                                       "e2m1_t3_max_err", "e2m1_t3_p999_err", "e2m1_t3_p99_err")})


# ------------------------------------------------------------------------------------------------
# 21 reading published recipes
# ------------------------------------------------------------------------------------------------


def cache_layouts() -> Example:
    mx_bits = E2M1.bits + Fraction(8, 32)
    report_bits = E2M1.bits + Fraction(E4M3FN.bits, 16)
    layers, heads, dims = 80, 8, 128  # inputs: a 70B-class model with grouped-query attention
    per_token = Fraction(2 * layers * heads * dims) * report_bits / 8
    return _ex("cache_layouts", "Cache layouts per element and per token",
               "E2M1 with an E8M0 scale per 32 (MXFP4); E2M1 with an E4M3FN scale per 16; K and V of 80 "
               "layers × 8 KV heads × 128 dims per token; KiB = 1024 bytes",
               {"mxfp4_bits": float(mx_bits), "report_bits": float(report_bits),
                "per_token_bytes": float(per_token), "per_token_kib": float(per_token / 1024),
                "bf16_per_token_kib": float(Fraction(2 * layers * heads * dims * 2, 1024))},
               "per_token_kib")


def lab_norm_share() -> Example:
    """Where the recipe lab's sample weight keeps its squared norm: the share in its outlier channels."""
    from lowprec.simulations.lab.samples import weight

    w = np.asarray(weight(), dtype=np.float64)
    col = np.sqrt(np.mean(w * w, axis=0))
    outliers = col > 6 * np.median(col)
    share = float(np.sum(w[:, outliers] ** 2) / np.sum(w * w))
    rows_max_in_outlier = float(np.mean(outliers[np.argmax(np.abs(w), axis=1)]))
    return _ex("lab_norm_share", "The sample weight's squared norm by channel",
               "simulations.lab.samples.weight() in float64: channels whose RMS exceeds 6 × the median, their "
               "share of Σx², and the share of rows whose largest entry lies in one of them",
               {"outlier_channels": int(outliers.sum()), "share": share, "rows_max_in_outlier": rows_max_in_outlier},
               "share", digits={"share": 3})


# ------------------------------------------------------------------------------------------------
# 22 promoting a precision change
# ------------------------------------------------------------------------------------------------

#: steps of a promotion and the evidence each needs from another (a step is run once what it
#: needs exists): the order follows from these
PROMOTION_STEPS: dict[str, tuple[str, ...]] = {
    "establish a stable higher-precision reference": (),
    "test the casts bit for bit against the target backend": ("establish a stable higher-precision reference",),
    "run a matched short experiment against the reference": (
        "establish a stable higher-precision reference", "test the casts bit for bit against the target backend"),
    "validate the converted artifact on real serving shapes": ("run a matched short experiment against the reference",),
    "promote the versioned recipe": ("validate the converted artifact on real serving shapes",),
}


def promotion_order() -> Example:
    order = _topological(PROMOTION_STEPS)
    return _ex("promotion_order", "The order of a promotion's experiments",
               "PROMOTION_STEPS: each step after the evidence it needs (a topological order, unique here)",
               {"order": order}, "order")


#: where rounding can enter attention, each stage after the tensors it reads
ATTENTION_STAGES: dict[str, tuple[str, ...]] = {
    "the casts of Q, K and V": (),
    "the score product Q Kᵀ": ("the casts of Q, K and V",),
    "the softmax's exponentials and their sum": ("the score product Q Kᵀ",),
    "the stored probabilities P": ("the softmax's exponentials and their sum",),
    "the product P V": ("the stored probabilities P", "the casts of Q, K and V"),
    "the final cast of O": ("the product P V",),
}


def _topological(steps: dict[str, tuple[str, ...]]) -> list[str]:
    order: list[str] = []
    remaining = dict(steps)
    while remaining:
        ready = [s for s, needs in remaining.items() if all(n in order for n in needs)]
        if len(ready) != 1:
            raise ValueError(f"the steps do not fix one order: {ready}")
        order.append(ready[0])
        del remaining[ready[0]]
    return order


def attention_stages() -> Example:
    return _ex("attention_stages", "Where rounding enters attention, in data-flow order",
               "ATTENTION_STAGES: each stage after the tensors it reads (a topological order, unique here)",
               {"order": _topological(ATTENTION_STAGES)}, "order")


def e5m2_first_inf() -> Example:
    from lowprec.formats import decode, encode, policy_for

    pol = policy_for("torch", E5M2)
    mid = (E5M2.max + 2.0 ** 16) / 2  # midpoint of 57344 and the next power of two
    below = float(np.nextafter(np.float32(mid), np.float32(0)))
    out = {x: float(decode(encode(np.array([x]), E5M2, pol), E5M2)[0]) for x in (below, mid)}
    first = mid if math.isinf(out[mid]) and not math.isinf(out[below]) else float("nan")
    return _ex("e5m2_first_inf", "The smallest float32 that torch casts to Inf in E5M2",
               "formats.policy_for('torch', 'E5M2') applied by formats.encode at the midpoint of 57344 and 2^16 "
               "and at the float32 just below it",
               {"first_inf": first, "midpoint": mid, "below": below, "below_goes_to": out[below]},
               "first_inf")


# ------------------------------------------------------------------------------------------------
# torch: activation checkpointing probes (lesson 16)
# ------------------------------------------------------------------------------------------------


def checkpoint_probes() -> Example:
    """Real torch.utils.checkpoint: a counter the body increments only with grad enabled; what the
    recompute sees of four kinds of state; the order of body runs with use_reentrant=True."""
    import warnings

    import torch
    from torch.utils.checkpoint import checkpoint

    def counter_run(reentrant: bool, layers: int = 3) -> int:
        count = {"n": 0}

        def body(h: torch.Tensor) -> torch.Tensor:
            if torch.is_grad_enabled():
                count["n"] += 1
            return torch.tanh(h)

        x = torch.randn(2, 4, requires_grad=True)
        h = x
        for _ in range(layers):
            h = checkpoint(body, h, use_reentrant=reentrant)
        h.sum().backward()
        return count["n"]

    torch.manual_seed(0)
    reentrant_count, non_count = counter_run(True), counter_run(False)

    # what a recompute sees: the CPU random draw, torch's CPU autocast, a Python counter, a module attribute
    class Probe(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.flag = 0

    probe = Probe()
    state = {"counter": 0}
    seen: list[dict[str, Any]] = []

    def body2(h: torch.Tensor) -> torch.Tensor:
        seen.append({"rand": float(torch.rand(1)), "autocast": torch.is_autocast_enabled("cpu"),
                     "counter": state["counter"], "flag": probe.flag})
        state["counter"] += 1
        probe.flag += 1
        return torch.tanh(h)

    x = torch.randn(2, 4, requires_grad=True)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        y = checkpoint(body2, x, use_reentrant=False)
    y.float().sum().backward()
    fwd, rec = seen[0], seen[1]
    names = {"the CPU random state": "rand", "torch's CPU autocast state": "autocast",
             "a Python counter the body increments": "counter", "an attribute the body changes on its module": "flag"}
    classes = ["restored to what the forward saw" if fwd[k] == rec[k] else "seen as the forward left it"
               for k in names.values()]

    # the order of body runs in one step of 3 layers, use_reentrant=True
    runs: list[str] = []
    phase = {"p": "forward"}

    def body3(h: torch.Tensor, i: int) -> torch.Tensor:
        runs.append(f"layer {i} {phase['p']}")
        return torch.tanh(h)

    x = torch.randn(2, 4, requires_grad=True)
    h = x
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for i in range(3):
            h = checkpoint(body3, h, i, use_reentrant=True)
    phase["p"] = "recompute"
    h.sum().backward()
    return _ex("checkpoint_probes", "What torch.utils.checkpoint runs and restores, probed",
               f"torch {torch.__version__}: three checkpointed tanh layers whose body counts calls with grad "
               "enabled (use_reentrant True and False); one layer under torch.autocast('cpu') recording a "
               "random draw, the autocast state, a counter and a module attribute in the forward and the "
               "recompute; the order of body runs with use_reentrant=True",
               {"reentrant_count": reentrant_count, "nonreentrant_count": non_count,
                "state_items": list(names), "state_classes": classes, "run_order": runs},
               "reentrant_count")


EXAMPLES: dict[str, Callable[[], Example]] = {
    "precision_label": precision_label,
    "decode_traffic": decode_traffic,
    "e3m2_facts": e3m2_facts,
    "code_minus_27": code_minus_27,
    "fp16_at_4": fp16_at_4,
    "softmax_more": softmax_more,
    "zero_amax_sequence": zero_amax_sequence,
    "scale_one_zeroed": scale_one_zeroed,
    "outlier_column": outlier_column,
    "tile_metadata": tile_metadata,
    "contraction_axis": contraction_axis,
    "mxfp4_rules": mxfp4_rules,
    "spike_questions_more": spike_questions_more,
    "hybrid_products": hybrid_products,
    "eighth_grid": eighth_grid,
    "path_sensitivity": path_sensitivity,
    "loss_vs_tensor": loss_vs_tensor,
    "resume_at_105": resume_at_105,
    "bias_populations": bias_populations,
    "stateful_recipes": stateful_recipes,
    "sigma_0_01": sigma_0_01,
    "calibration_more": calibration_more,
    "cache_layouts": cache_layouts,
    "lab_norm_share": lab_norm_share,
    "promotion_order": promotion_order,
    "attention_stages": attention_stages,
    "e5m2_first_inf": e5m2_first_inf,
}

TORCH_EXAMPLES: dict[str, Callable[[], Example]] = {
    "checkpoint_probes": checkpoint_probes,
    "lab_more": lab_more,
}


# ------------------------------------------------------------------------------------------------
# FP8 blockwise scaling (the lesson on tiles, power-of-two and UE8M0 scales, MXINT8)
# ------------------------------------------------------------------------------------------------


def fp8_tiles() -> Example:
    """One tile's scales under Transformer Engine's and DeepGEMM's rules, the transposed view made
    from the rows' decoded data, and MXINT8 against MXFP8 on three tensors."""
    from lowprec.simulations.quant import quantize, transpose_requantization
    from lowprec.simulations.quant.conventions import FP8TileScale
    from lowprec.simulations.quant.fp8_blockwise import tile_scales

    def one(amax: float, rule: FP8TileScale, fmt: str) -> float:
        return float(tile_scales(np.array([amax], dtype=np.float32), rule, fmt)[0][0])

    te_pow2_3 = one(3.0, FP8TileScale.TE_ENCODE, "POW2_FP32")
    te_fp32_3 = one(3.0, FP8TileScale.TE_ENCODE, "FP32")
    ue8m0_zero = one(0.0, FP8TileScale.DEEPGEMM_DECODE, "E8M0")
    te_zero = one(0.0, FP8TileScale.TE_ENCODE, "POW2_FP32")
    x = np.random.default_rng(0).standard_normal((256, 256)).astype(np.float32)
    fp32 = transpose_requantization(x, "fp8_1x128")
    pow2 = transpose_requantization(x, "fp8_1x128_pow2")
    ratio = fp32.columns_requantized / fp32.columns_from_source
    ratio_bucket = min({"about the same": 1.0, "about 1.4 times as large": 1.4, "about 3 times as large": 3.0}.items(),
                       key=lambda kv: abs(math.log(ratio / kv[1])))[0]
    changes = pow2.second_rounding_changes

    def bucket(share: float) -> str:
        return "none" if share == 0 else "about 1 %" if share < 0.05 else "about 30 %" if share < 0.6 else "almost all"

    change_bucket = bucket(changes)
    from lowprec.simulations.blocks import sample_tensor

    wide = sample_tensor("lognormal", (256, 256), 0)  # ±exp(N(0, 2²)): magnitudes over many binades
    wide_pow2 = transpose_requantization(wide, "fp8_1x128_pow2")
    # MXINT8 against MXFP8 (E4M3): error of the ordinary elements (every element but the planted ones)
    rng = np.random.default_rng(0)
    normal = rng.standard_normal((64, 256)).astype(np.float32)
    heavy = rng.standard_t(2, (64, 256)).astype(np.float32)
    planted = rng.standard_normal((64, 256))
    mask = np.zeros(planted.shape, bool)
    mask[:, ::32] = True
    planted[mask] *= 100.0
    tensors = {"standard normal values": (normal, np.ones(normal.shape, bool)),
               "Student-t values with 2 degrees of freedom (heavy tails)": (heavy, np.ones(heavy.shape, bool)),
               "normal values with one element per block of 32 made 100 times larger": (planted.astype(np.float32), ~mask)}
    errs: dict[str, dict[str, float]] = {}
    classes = []
    for name, (t, keep) in tensors.items():
        e = {}
        for recipe in ("mxint8", "mxfp8_e4m3"):
            d = np.asarray(quantize(t, recipe).dequantize(), dtype=np.float64)
            ref = t.astype(np.float64)
            e[recipe] = float(np.linalg.norm((d - ref)[keep]) / np.linalg.norm(ref[keep]))
        errs[name] = e
        classes.append("MXINT8 is lower" if e["mxint8"] < e["mxfp8_e4m3"] else "MXFP8 (E4M3) is lower")
    values: dict[str, Value] = {
        "te_pow2_decode_3": te_pow2_3, "te_pow2_decode_3_text": "2^-7" if te_pow2_3 == 2.0**-7 else str(te_pow2_3),
        "te_fp32_decode_3": te_fp32_3, "ue8m0_zero_decode": ue8m0_zero,
        "ue8m0_zero_exponent": int(round(math.log2(ue8m0_zero))), "te_zero_decode": te_zero,
        "fp32_rows": fp32.rows_error, "fp32_from_source": fp32.columns_from_source,
        "fp32_requantized": fp32.columns_requantized, "fp32_ratio": ratio, "fp32_ratio_bucket": ratio_bucket,
        "fp32_changes_pct": 100 * fp32.second_rounding_changes,
        "pow2_changes_pct": 100 * changes, "pow2_change_bucket": change_bucket,
        "wide_changes_pct": 100 * wide_pow2.second_rounding_changes,
        "wide_change_bucket": bucket(wide_pow2.second_rounding_changes),
        "pow2_from_source": pow2.columns_from_source, "pow2_requantized": pow2.columns_requantized,
        "int_fp_items": list(tensors), "int_fp_classes": classes,
        **{f"int8_err_{i}": errs[n]["mxint8"] for i, n in enumerate(tensors)},
        **{f"fp8_err_{i}": errs[n]["mxfp8_e4m3"] for i, n in enumerate(tensors)},
    }
    return _ex("fp8_tiles", "FP8 tiles: scales, the transposed view, and MXINT8 against MXFP8",
               "simulations.quant.fp8_blockwise.tile_scales (Transformer Engine's FP32 and power-of-two rules, "
               "DeepGEMM's UE8M0 rule); simulations.quant.transpose_requantization on 256 × 256 N(0, 1) "
               "(seed 0) with fp8_1x128 and fp8_1x128_pow2; simulations.quant.quantize with mxint8 and "
               "mxfp8_e4m3 on 64 × 256 tensors (seed 0), error ‖x̂ − x‖ / ‖x‖ of the ordinary elements",
               values, "fp32_ratio_bucket",
               units={"fp32_changes_pct": "%", "pow2_changes_pct": "%", "wide_changes_pct": "%"},
               digits={"te_fp32_decode_3": 6, "fp32_rows": 4, "fp32_from_source": 4, "fp32_requantized": 4,
                       "fp32_ratio": 2, "fp32_changes_pct": 1, "pow2_changes_pct": 1, "pow2_from_source": 4,
                       "wide_changes_pct": 2,
                       "pow2_requantized": 4, **{f"{p}_err_{i}": 3 for p in ("int8", "fp8") for i in range(3)},
                       "ue8m0_zero_decode": 4})


EXAMPLES["fp8_tiles"] = fp8_tiles


# ------------------------------------------------------------------------------------------------
# the Transformer Engine placement lab
# ------------------------------------------------------------------------------------------------

#: the arrangements the lab lesson's classification asks about: (label, placement, changes)
PLACEMENT_ITEMS: tuple[tuple[str, str, dict[str, Any]], ...] = (
    ("outer, use_reentrant=True, before the fix", "outer", {"use_reentrant": True, "gate": "entry"}),
    ("inner, use_reentrant=False, before the fix", "inner", {"use_reentrant": False, "gate": "entry"}),
    ("inner, use_reentrant=True, after the fix", "inner", {"use_reentrant": True, "gate": "live"}),
    ("inner, use_reentrant=False, after the fix", "inner", {"use_reentrant": False, "gate": "live"}),
    ("mixed, use_reentrant=True, after the fix", "mixed", {"use_reentrant": True, "gate": "live"}),
    ("inner, use_reentrant=False, after the fix, module A in .eval()", "inner",
     {"use_reentrant": False, "gate": "live", "a_in_eval": True}),
)


def te_placement_questions() -> Example:
    from lowprec.simulations.studies.te_placement import OUTSIDE, run_placement, with_placement

    inner_default = run_placement(with_placement("inner", use_reentrant=True, gate="live"))
    per_step = max(inner_default.updates_per_step)
    updates_text = {0: "never: it stays at 1.0", 1: "once per step", 2: "twice per step"}[per_step]
    outcomes = [run_placement(with_placement(p, **c)).outcome() for _, p, c in PLACEMENT_ITEMS]
    # the pull request's numeric test: autocast(enabled=False) around te.checkpoint, the autocast inside
    numeric = [run_placement(with_placement("inner", outside=OUTSIDE[1], use_reentrant=r)) for r in (True, False)]
    blind = all(max(r.updates_per_step) == 0 and r.restores > 0 for r in numeric)
    blind_reason = ("the forward scale never updates, so the stash and the live scale are both 1.0" if blind
                    else "the recompute never restores")
    nullctx = run_placement(with_placement("inner", outside=OUTSIDE[2], use_reentrant=False))
    flush = run_placement(with_placement("inner", use_reentrant=True, gate="live", module_outside=True))
    outer = run_placement(with_placement("outer", use_reentrant=True))
    return _ex("te_placement_questions", "Placing te.autocast and te.checkpoint: what the model of TE's control flow gives",
               "lowprec.simulations.studies.te_placement.run_placement over 3 steps for each arrangement (Transformer "
               "Engine's control flow read from its source; module A's input amax 2 + 0.5 t at step t)",
               {"inner_default_updates": updates_text,
                "placement_items": [label for label, _, _ in PLACEMENT_ITEMS], "placement_classes": outcomes,
                "numeric_blind_reason": blind_reason,
                "nullcontext_updates_per_step": max(nullctx.updates_per_step),
                "flush_scale_step1": flush.a_scale_forward[1], "outer_updates_per_step": max(outer.updates_per_step),
                "inner_default_scale_final": inner_default.a_scale_forward[-1]},
               "inner_default_updates", digits={"flush_scale_step1": 4})


EXAMPLES["te_placement_questions"] = te_placement_questions


# ------------------------------------------------------------------------------------------------
# find the defect; quantizer state you can test (seed 000's toolkit)
# ------------------------------------------------------------------------------------------------

#: the designs a hunt case can be, as the classification names them
DESIGN_NAMES = {"fixed": "the corrected design", "consume-after-advance": "consume-after-advance",
                "recompute-mutates": "recompute-mutates", "shared-state": "shared-state",
                "shared-state-snapshot": "shared-state-snapshot", "stale-centre": "stale-centre"}

#: the order of a fix, each step after what it needs (seed 000's "order of operations")
FIX_STEPS: dict[str, tuple[str, ...]] = {
    "identify who owns the state": (),
    "give every independent owner its own storage": ("identify who owns the state",),
    "define when the state may advance": ("give every independent owner its own storage",),
    "snapshot the state a logical operation uses": ("define when the state may advance",),
    "make re-entry read-only": ("snapshot the state a logical operation uses",),
}


def defect_hunt() -> Example:
    from lowprec.simulations.studies.defect_hunt import CASES, hunt_lab

    data = hunt_lab()
    cases = data["cases"]
    # a case whose recompute matches bit for bit yet whose consumers read a foreign descale
    matching = [k for k, c in cases.items() if c["differ"] == 0]
    unpaired_hidden = any(cases[k]["pairing"]["unpaired_forward"] > 0 for k in matching)
    still_wrong = ("the consumer could read a descale that did not encode its codes" if unpaired_hidden
                   else "nothing: a bitwise match proves the design correct")
    # matched points: the input matches and the output does not, in the case with two commits per layer
    mutates = next(k for k, v in CASES.items() if v == "recompute-mutates")
    m = cases[mutates]["matched_points"]
    inputs_match = all(p["input_differs"] == 0 for p in m)
    outputs_differ = any(p["output_differs"] > 0 for p in m)
    matched_reason = ("the quantization metadata it consumed (the scale)" if inputs_match and outputs_differ
                      else "its input")
    control = next(iter(cases.values()))["low_precision_off"]
    return _ex("defect_hunt", "Find the defect: the hidden designs and what the controls say",
               "lowprec.simulations.studies.defect_hunt.hunt_lab(): six cases of the recompute simulation (defaults: 4 "
               "layers, 20 steps, seed 0, E4M3FN, history 16, max) and the controls' results",
               {"letters": list(CASES), "case_items": [f"case {k}" for k in CASES],
                "case_classes": [DESIGN_NAMES[v] for v in CASES.values()], "still_wrong": still_wrong,
                "mutates_letter": mutates, "matched_reason": matched_reason,
                "control_differ": int(control["differ"]), "fix_order": _topological(FIX_STEPS)},
               "still_wrong")


def quantizer_api() -> Example:
    """The separated API's guards, called for real: a consumer handed a stale snapshot, a second commit
    for one (step, layer), and two workers entering one state."""
    from lowprec.formats import get_format

    from lowprec.simulations.recompute.concurrency import simulate_concurrent_entry
    from lowprec.simulations.recompute.state import (DoubleCommitError, FixedQuantizer, PhaseInfo, QuantizedTensor,
                                  SnapshotIdentityError, begin_logical_quantization, commit_quant_observation,
                                  observe_for_future_state)

    fmt = get_format("E4M3FN")
    assert isinstance(fmt, formats.FloatFormat)
    q = FixedQuantizer(4, fmt, CastPolicy())
    stale = begin_logical_quantization(q.states[2], logical_step=6, layer_id=2)
    tensor = QuantizedTensor(np.zeros((1, 1), np.uint8), np.zeros((1, 1), np.float32), stale, None)
    try:
        q.consumer_scaling(tensor, 2, PhaseInfo(phase="forward", step=7))
        stale_outcome = "it reads the snapshot's descale"
    except SnapshotIdentityError:
        stale_outcome = "SnapshotIdentityError is raised"
    x = np.ones((2, 4), np.float32)
    snap = begin_logical_quantization(q.states[1], logical_step=3, layer_id=1)
    commit_quant_observation(q.states[1], observe_for_future_state(x, snap))
    try:
        commit_quant_observation(q.states[1], observe_for_future_state(x, snap))
        double_outcome = "the history gets a second entry"
    except DoubleCommitError:
        double_outcome = "DoubleCommitError is raised"
    shared = simulate_concurrent_entry(per_worker_state=False)
    own = simulate_concurrent_entry(per_worker_state=True)

    def verdict(outcome: str) -> str:
        return "commits its transition" if outcome == "ok" else "is refused (ConcurrentStateError)"

    workers = sorted(shared.outcomes)
    items = [f"worker {w}, one shared state" for w in workers] + [f"worker {w}, a state per worker" for w in workers]
    classes = [verdict(shared.outcomes[w]) for w in workers] + [verdict(own.outcomes[w]) for w in workers]
    return _ex("quantizer_api", "The separated quantizer API's guards, exercised",
               "lowprec.simulations.recompute.state (FixedQuantizer.consumer_scaling with a snapshot of step 6 "
               "at step 7; commit_quant_observation twice for one (step, layer)); "
               "recompute.concurrency.simulate_concurrent_entry with one shared state and with one per worker",
               {"stale_outcome": stale_outcome, "double_outcome": double_outcome, "worker_items": items,
                "worker_classes": classes, "shared_commits": int(sum(shared.commits.values())),
                "own_commits": int(sum(own.commits.values()))},
               "stale_outcome")


def telemetry_effective() -> Example:
    from lowprec.simulations.recompute import run_recompute

    r = run_recompute("consume-after-advance", overflow="nonfinite")
    fixed = run_recompute("fixed", overflow="nonfinite")
    attempted, applied = int(r.attempted.sum()), int(r.applied.sum())
    return _ex("telemetry_effective", "Optimizer steps attempted and applied",
               "lowprec.simulations.recompute.run_recompute(consume-after-advance, overflow=nonfinite) with the "
               "widget defaults (20 steps); the fixed design under the same cast for comparison",
               {"attempted": attempted, "applied": applied, "skipped": int(r.skipped.sum()),
                "effective_share": applied / attempted, "fixed_applied": int(fixed.applied.sum()),
                "fixed_skipped": int(fixed.skipped.sum())},
               "applied", digits={"effective_share": 3})


TORCH_EXAMPLES["defect_hunt"] = defect_hunt
TORCH_EXAMPLES["telemetry_effective"] = telemetry_effective
EXAMPLES["quantizer_api"] = quantizer_api


# ------------------------------------------------------------------------------------------------
# seed 002's checks: the Hadamard transform, renormalisation, isolating casts, communication
# ------------------------------------------------------------------------------------------------


def hadamard_spread() -> Example:
    """A block of 16 that is zero but for one value 8, through Transformer Engine's random Hadamard
    transform (x · diag(d) · S_16 / 4): the largest magnitude after it, and NVFP4's block scale."""
    from lowprec.simulations.quant.rht import apply_rht, rht_matrix

    x = np.zeros((1, 16), dtype=np.float32)
    x[0, 5] = 8.0
    y = np.asarray(apply_rht(x, rht_matrix("transformer_engine")), dtype=np.float64)
    return _ex("hadamard_spread", "One outlier through a 16-point random Hadamard transform",
               "lowprec.simulations.quant.rht.apply_rht with rht_matrix('transformer_engine') on a block "
               "zero but for x[5] = 8",
               {"amax_before": 8.0, "amax_after": float(np.max(np.abs(y))),
                "min_after": float(np.min(np.abs(y))), "energy_kept": float(np.sum(y * y) / 64.0)},
               "amax_after")


def renormalized_output() -> Example:
    probs = [0.6, 0.3, 0.1]
    values = [Fraction(0), Fraction(2), Fraction(10)]
    rounded = [Fraction(_q1(p, E4M3FN)) for p in probs]
    mass = sum(rounded, Fraction(0))
    plain = sum((p * v for p, v in zip(rounded, values)), Fraction(0))
    renorm = plain / mass
    return _ex("renormalized_output", "A rounded probability row divided by its own sum",
               "[0.6, 0.3, 0.1] rounded to E4M3FN (nearest-even), dot [0, 2, 10], divided by the rounded "
               "row's sum; exact Fractions",
               {"mass": float(mass), "plain": float(plain), "renormalized": float(renorm), "exact": 1.6},
               "renormalized", digits={"renormalized": 6})


def isolate_casts() -> Example:
    o = [Fraction(3, 10**7), Fraction(-4, 10**7)]
    o_hat = [o[0] + Fraction(1, 10**7), o[1]]
    eps = Fraction(1, 10**6)
    err = sum(((a - b) ** 2 for a, b in zip(o_hat, o)), Fraction(0))
    norm = Fraction(5, 10**7)  # ‖O‖ = 5e-7 exactly (3-4-5)
    assert sum((a * a for a in o), Fraction(0)) == norm * norm
    err_norm = Fraction(1, 10**7)  # ‖Ô − O‖ = 1e-7 exactly
    assert err == err_norm * err_norm
    return _ex("isolate_casts", "A relative error with a floor in its denominator",
               "‖Ô − O‖ / max(‖O‖, ε) with O = [3e-7, −4e-7], Ô = O + [1e-7, 0], ε = 1e-6; exact Fractions",
               {"with_floor": float(err_norm / max(norm, eps)), "without_floor": float(err_norm / norm)},
               "with_floor")


def shared_scale_binades() -> Example:
    from lowprec.simulations.scaling.delayed import scale_from_amax

    own = scale_from_amax(3.0, E4M3FN.max, 0, 1.0)
    shared = scale_from_amax(max(3.0, 96.0), E4M3FN.max, 0, 1.0)
    return _ex("shared_scale_binades", "One scale shared by two ranks",
               "encode scales 448 / amax (simulations.scaling.delayed.scale_from_amax) for rank A alone (amax 3) and for "
               "the group (the max of 3 and 96): log2 of their ratio",
               {"own": own, "shared": shared, "binades": round(math.log2(own / shared))}, "binades")


def audio_encoder_sizes() -> Example:
    before_mb, after_mb, before_params, after_params = 390, 87, 680, 305  # reported inputs (MB, millions)
    bits_before = Fraction(before_mb * 8, before_params)
    bits_after = Fraction(after_mb * 8, after_params)
    return _ex("audio_encoder_sizes", "A reported size reduction split into architecture and precision",
               "390 → 87 MB against a 680M-parameter older encoder and the new 305M one: bits per parameter "
               "= MB × 8 / millions of parameters",
               {"total_factor": float(Fraction(before_mb, after_mb)), "params_factor": float(Fraction(before_params, after_params)),
                "bits_before": float(bits_before), "bits_after": float(bits_after),
                "precision_factor": float(bits_before / bits_after)},
               "precision_factor", digits={"total_factor": 2, "params_factor": 2, "bits_before": 2, "bits_after": 2,
                                           "precision_factor": 2})


EXAMPLES.update({"hadamard_spread": hadamard_spread, "renormalized_output": renormalized_output,
                 "isolate_casts": isolate_casts, "shared_scale_binades": shared_scale_binades,
                 "audio_encoder_sizes": audio_encoder_sizes})
