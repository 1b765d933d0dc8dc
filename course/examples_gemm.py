"""Worked examples of the tensor-core lessons (lesson 8's accumulator part, lesson 23 "What the tensor
core keeps"): every number those lessons quote and every answer they check, computed by the
bit-exact instruction models of `simulations.gemm` (`mma`, `matmul`, the accumulator study) — only
the inputs are typed in (the operand values, C, K, the seed).

- `tensor_core_bits`: the fraction bits F each instruction keeps after alignment (`gemm.isa`).
- `c_low_bits`: Hopper FP8 wgmma with A = B = 0 and C = 1 + 2^-20 + 2^-13 (the issue's example);
  D as a sum of powers of two, for a choice question; the same on Blackwell.
- `swamped_step`: one Hopper FP8 step, C = 4096 and 32 products of 1.5 × 0.5: each product is cut
  to the window's last bit 2^-1.
- `blackwell_step`: one Blackwell tcgen05 step, C = 2^20 and 32 products of 0.375 × 0.125.
- `exact_interval`: products all 1.5 × 0.5 from C = 0 on Hopper FP8: the longest run of products
  (a multiple of 32) whose chained sum stays exact — the largest promotion interval that loses
  nothing on such inputs.
- `hopper_ones`: 2^16 products equal to 1 through Hopper FP8 wgmma, the whole K chained, and with
  promotion every 128 (lesson 8).
- `positive_k4096`: the accumulator study on all-positive inputs at K = 4096 (DeepSeek-V3's test),
  no promotion / promoted every 128 / Blackwell, and the bucket a prediction offers.
- `accumulation_roles`: what the per-role table says (`gemm.stacks`), for the lesson's prose.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Callable

import numpy as np

from lowprec.course.example_record import Example, Value
from lowprec.simulations.gemm import get_instruction, matmul, mma
from lowprec.simulations.gemm.stacks import STACKS
from lowprec.simulations.gemm.study import simulate_gemm

__all__ = ["EXAMPLES", "power_sum_text"]

HOPPER_FP8 = "wgmma.m64n8k32.f32.e4m3.e4m3"
BLACKWELL_FP8 = "tcgen05.mma.m64n8k32.kind::f8f6f4.f32.e4m3.e4m3"


def _ex(name: str, title: str, source: str, values: dict[str, Value], summary: str,
        digits: dict[str, int] | None = None) -> Example:
    return Example(name=name, title=title, source=source, values=values, units={k: "" for k in values},
                   summary_field=summary, digits=dict(digits or {}))


def power_sum_text(x: float) -> str:
    """A positive dyadic number as its powers of two, largest first: 1 + 2^-13 + 2^-20 ('1' for 2^0)."""
    if not (x > 0 and math.isfinite(x)):
        raise ValueError(f"a positive finite value, got {x!r}")
    f = Fraction(x)
    terms = []
    while f:
        e = f.numerator.bit_length() - f.denominator.bit_length()
        if Fraction(2) ** e > f:
            e -= 1
        terms.append("1" if e == 0 else f"2^{e}")
        f -= Fraction(2) ** e
    return " + ".join(terms)


def _one_step(arch: str, name: str, a: float, b: float, c: float) -> float:
    """D of output (0, 0) of one instruction whose A row is all `a`, B column all `b`, C = `c`."""
    ins = get_instruction(arch, name)
    d = mma(np.full((ins.m, ins.k), a), np.full((ins.k, ins.n), b), np.full((ins.m, ins.n), c), arch=arch,
            instruction=name)
    return float(d[0, 0])


def tensor_core_bits() -> Example:
    f = {key: get_instruction(arch, name).unit.frac_bits for key, (arch, name) in {
        "volta_f16": ("volta", "mma.m8n8k4.f32.f16.f16.f32"),
        "ampere_bf16": ("ampere", "mma.m16n8k16.f32.bf16.bf16.f32"),
        "ada_fp8": ("ada", "mma.m16n8k32.f32.e4m3.e4m3.f32"),
        "hopper_bf16": ("hopper", "wgmma.m64n8k16.f32.bf16.bf16"),
        "hopper_fp8": ("hopper", HOPPER_FP8),
        "blackwell_fp8": ("blackwell", BLACKWELL_FP8),
        "blackwell_nvfp4": ("blackwell", "tcgen05.mma.m128n8k64.kind::mxf4nvf4.block16.f32.e2m1.e2m1.ue4m3"),
    }.items()}
    hopper = get_instruction("hopper", HOPPER_FP8).unit
    values: dict[str, Value] = {**f, "hopper_fp8_products_per_step": hopper.fused,
                                "hopper_fp8_significant": f["hopper_fp8"] + 1}
    return _ex("tensor_core_bits", "Fraction bits kept after alignment, per instruction",
               "lowprec.simulations.gemm.isa (MMA-Sim's parameters, arXiv:2511.10909): DotUnit.frac_bits and fused",
               values, "hopper_fp8")


def c_low_bits() -> Example:
    c = 1 + 2.0 ** -20 + 2.0 ** -13
    d = _one_step("hopper", HOPPER_FP8, 0.0, 0.0, c)
    bw = _one_step("blackwell", BLACKWELL_FP8, 0.0, 0.0, c)
    return _ex("c_low_bits", "Hopper FP8 wgmma with A = B = 0 and C = 1 + 2^-20 + 2^-13",
               "lowprec.simulations.gemm.mma on wgmma.m64n8k32.f32.e4m3.e4m3 (hopper) and "
               "tcgen05.mma.m64n8k32.kind::f8f6f4.f32.e4m3.e4m3 (blackwell), A = B = 0",
               {"c": c, "c_text": power_sum_text(c), "d": d, "d_text": power_sum_text(d), "blackwell_d": bw,
                "blackwell_d_text": power_sum_text(bw), "lost": c - d},
               "d_text")


def swamped_step() -> Example:
    a, b, c = 1.5, 0.5, 4096.0
    d = _one_step("hopper", HOPPER_FP8, a, b, c)
    exact = c + 32 * a * b
    return _ex("swamped_step", "One Hopper FP8 step: C = 4096 and 32 products of 0.75",
               "lowprec.simulations.gemm.mma on wgmma.m64n8k32.f32.e4m3.e4m3: A's row all 1.5, B's column all 0.5, "
               "C = 4096", {"a": a, "b": b, "product": a * b, "c": c, "d": d, "exact": exact, "lost": exact - d},
               "d")


def blackwell_step() -> Example:
    a, b, c = 0.375, 0.125, 2.0 ** 20
    d = _one_step("blackwell", BLACKWELL_FP8, a, b, c)
    exact = c + 32 * a * b
    return _ex("blackwell_step", "One Blackwell FP8 step: C = 2^20 and 32 products of 0.046875",
               "lowprec.simulations.gemm.mma on tcgen05.mma.m64n8k32.kind::f8f6f4.f32.e4m3.e4m3: A's row all 0.375, "
               "B's column all 0.125, C = 2^20",
               {"a": a, "b": b, "product": a * b, "c": c, "d": d, "exact": exact, "lost": exact - d}, "d")


def exact_interval() -> Example:
    """The chain of one Hopper FP8 instruction from C = 0, products all 1.5 × 0.5, step by step
    (each step's D the next C, through `mma`), until a step's D differs from the exact sum."""
    a, b = 1.5, 0.5
    c = 0.0
    steps = 0
    while True:
        d = _one_step("hopper", HOPPER_FP8, a, b, c)
        if Fraction(d) != Fraction(32 * (steps + 1)) * Fraction(a) * Fraction(b):
            break
        c = d
        steps += 1
        if steps > 1 << 16:
            raise RuntimeError("the chain never lost a product")
    return _ex("exact_interval", "The longest exact run of products of 0.75 on Hopper FP8",
               "lowprec.simulations.gemm.mma on wgmma.m64n8k32.f32.e4m3.e4m3 chained from C = 0, A's row all 1.5, "
               "B's column all 0.5: the first step whose D differs from the exact sum",
               {"a": a, "b": b, "product": a * b, "products": 32 * steps, "steps": steps, "last_exact_sum": c,
                "first_inexact_d": d, "first_inexact_exact": float(32 * (steps + 1) * a * b)}, "products")


def hopper_ones() -> Example:
    k = 1 << 16
    ones_a, ones_b = np.ones((1, k)), np.ones((k, 1))
    narrow = float(matmul(ones_a, ones_b, arch="hopper", instruction=HOPPER_FP8, reference=False).d_values[0, 0])
    promoted = float(matmul(ones_a, ones_b, arch="hopper", instruction=HOPPER_FP8, promote_every=128,
                            reference=False).d_values[0, 0])
    f = get_instruction("hopper", HOPPER_FP8).unit.frac_bits
    return _ex("hopper_ones", "2^16 products of 1 through Hopper's FP8 wgmma",
               "lowprec.simulations.gemm.matmul on wgmma.m64n8k32.f32.e4m3.e4m3, A and B all ones, K = 2^16, the "
               "whole K chained, and with promote_every=128",
               {"k": k, "frac_bits": f, "significant_bits": f + 1, "chunk": 128, "narrow_sum": narrow,
                "exact_sum": float(k), "promoted_sum": promoted, "narrow_rel_error": (k - narrow) / k,
                "largest_exact": float(2 ** (f + 1))}, "narrow_sum")


#: the buckets the prediction offers (text → representative value)
POSITIVE_BUCKETS = {"0.01 %": 1e-4, "0.1 %": 1e-3, "1 %": 1e-2, "7 %": 7e-2, "30 %": 0.3}


def positive_k4096() -> Example:
    s = simulate_gemm(k_max=4096, rows=32, cols=16, distribution="positive", promote_every="128",
                      compare="blackwell", table=False, seed=0)
    none, promoted, bw = s.curve(None), s.curve(128), s.curve(None, "blackwell")
    med = none.median_rel[-1]
    bucket = min(POSITIVE_BUCKETS, key=lambda t: abs(math.log(med / POSITIVE_BUCKETS[t])))
    return _ex("positive_k4096", "All-positive products, K = 4096, Hopper FP8 (DeepSeek-V3's test)",
               "lowprec.simulations.gemm.study.simulate_gemm: |N(0, 1)| operands cast to E4M3FN, 32 × 16 outputs, "
               "seed 0, K = 4096; median and max relative error of the outputs",
               {"k": 4096, "median_none": med, "max_none": none.max_rel[-1],
                "median_every_128": promoted.median_rel[-1], "max_every_128": promoted.max_rel[-1],
                "median_blackwell": bw.median_rel[-1], "bucket": bucket,
                "median_none_percent": 100 * med, "median_every_128_percent": 100 * promoted.median_rel[-1],
                "max_none_percent": 100 * none.max_rel[-1], "ratio": med / promoted.median_rel[-1]},
               "bucket", digits={"median_none": 2, "median_every_128": 2, "median_none_percent": 2,
                                 "median_every_128_percent": 2, "max_none_percent": 2, "ratio": 0})


def accumulation_roles() -> Example:
    deep = [r for r in STACKS if r.stack == "DeepGEMM"]
    te_fast = sorted({r.role for r in STACKS if r.stack.startswith("Transformer Engine") and r.accumulation == "fast"})
    return _ex("accumulation_roles", "What real stacks set per GEMM role",
               "lowprec.simulations.gemm.stacks.STACKS (Transformer Engine 2.x, torchao 0.18, DeepGEMM sources)",
               {"deepgemm_interval": int(deep[0].promote_every or 0), "te_fast_roles": ", ".join(te_fast),
                "rows": len(STACKS)}, "deepgemm_interval")


EXAMPLES: dict[str, Callable[[], Example]] = {
    "tensor_core_bits": tensor_core_bits,
    "c_low_bits": c_low_bits,
    "swamped_step": swamped_step,
    "blackwell_step": blackwell_step,
    "exact_interval": exact_interval,
    "hopper_ones": hopper_ones,
    "positive_k4096": positive_k4096,
    "accumulation_roles": accumulation_roles,
}
