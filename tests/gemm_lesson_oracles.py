"""Oracles of the tensor-core lessons' answers (lesson 8's accumulator part, lesson 23), computed
without `lowprec.simulations.gemm`: MMA-Sim (mmasim) for single instructions and short chains, and for
the 2^16-product chain the T-FDPA step of the MMA-Sim paper (arXiv:2511.10909, Algorithm T-FDPA with
Hopper FP8's parameters: 32 products a step, F = 13, truncation, RZ to 13 fraction bits) re-implemented
here in Fractions. Operand casts through ml_dtypes."""

from __future__ import annotations

import math
from fractions import Fraction

import ml_dtypes
import numpy as np

from tests.gemm_oracle import mmasim_mma

HOPPER = ("hopper", "wgmma.m64n8k32.f32.e4m3.e4m3")
BLACKWELL = ("blackwell", "tcgen05.mma.m64n8k32.kind::f8f6f4.f32.e4m3.e4m3")


def _lead(x: Fraction) -> int:
    e = abs(x.numerator).bit_length() - x.denominator.bit_length()
    return e - 1 if Fraction(2) ** e > abs(x) else e


def tfdpa_step(c: Fraction, products: list[Fraction], product_exponent: int, frac_bits: int = 13) -> Fraction:
    """One T-FDPA step (finite, normal terms): align to the largest exponent, truncate each term to
    `frac_bits` fraction bits below it, add, round toward zero to `frac_bits` fraction bits."""
    exps = [product_exponent] if any(products) else []
    if c:
        exps.append(_lead(c))
    if not exps:
        return Fraction(0)
    q = Fraction(2) ** (max(exps) - frac_bits)
    total = sum((math.trunc(t / q) * q for t in [c, *products]), Fraction(0))
    if total == 0:
        return total
    q_out = Fraction(2) ** (max(_lead(total), -126) - frac_bits)
    return math.trunc(total / q_out) * q_out


def _one(arch_name: tuple[str, str], a: float, b: float, c: float) -> float:
    d = mmasim_mma(*arch_name, np.full((64, 32), a), np.full((32, 8), b), np.full((64, 8), c))
    return float(d.view(np.float32)[0, 0])


def power_sum_text(x: float) -> str:
    f = Fraction(x)
    out = []
    while f:
        e = _lead(f)
        out.append("1" if e == 0 else f"2^{e}")
        f -= Fraction(2) ** e
    return " + ".join(out)


def c_low_bits_text() -> str:
    return power_sum_text(_one(HOPPER, 0.0, 0.0, 1 + 2.0 ** -20 + 2.0 ** -13))


def swamped_step() -> float:
    return _one(HOPPER, 1.5, 0.5, 4096.0)


def blackwell_step() -> float:
    return _one(BLACKWELL, 0.375, 0.125, 2.0 ** 20)


def exact_interval() -> int:
    """Steps of MMA-Sim's Hopper FP8 wgmma, each D fed back as C, until one loses a product."""
    c, steps = 0.0, 0
    while True:
        d = _one(HOPPER, 1.5, 0.5, c)
        if Fraction(d) != Fraction(3, 4) * 32 * (steps + 1):
            return 32 * steps
        c, steps = d, steps + 1


def hopper_ones_narrow() -> float:
    """2^16 products of 1, chained through the re-implemented Hopper FP8 step."""
    c = Fraction(0)
    ones = [Fraction(1)] * 32
    for _ in range((1 << 16) // 32):
        c = tfdpa_step(c, ones, 0)
    return float(c)


def positive_k4096_bucket(choices: dict[str, float]) -> str:
    """The median relative error of MMA-Sim's Hopper FP8 wgmma over K = 4096 on the worked example's
    inputs (|N(0, 1)| by numpy's default_rng(0), 32 × 16 outputs, cast to E4M3FN by ml_dtypes),
    against an exactly rounded float64 sum (math.fsum), as the nearest of `choices` on a log scale."""
    rng = np.random.default_rng(0)
    a = np.abs(rng.standard_normal((32, 4096)))
    b = np.abs(rng.standard_normal((4096, 16)))
    a8 = np.clip(a, 0, 448).astype(ml_dtypes.float8_e4m3fn).astype(np.float64)
    b8 = np.clip(b, 0, 448).astype(ml_dtypes.float8_e4m3fn).astype(np.float64)
    a64 = np.concatenate([a8, np.zeros((32, 4096))], axis=0)  # the instruction's M = 64: rows 32… unused
    b16 = np.concatenate([b8, np.zeros((4096, 0))], axis=1)
    d = mmasim_mma(*HOPPER, a64, b16, np.zeros((64, 16))).view(np.float32)[:32].astype(np.float64)
    rel = [abs(d[i, j] - math.fsum(a8[i] * b8[:, j])) / math.fsum(a8[i] * b8[:, j])
           for i in range(32) for j in range(16)]
    med = float(np.median(rel))
    return min(choices, key=lambda t: abs(math.log(med / choices[t])))
