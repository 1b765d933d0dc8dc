"""One dot product through a tensor core, written to be read: Python integers and fractions, the
rule of `isa` step by step, and a record of every term's alignment (what a step keeps, what it
drops) — what a learner reads and what the bit picture of a widget draws. `core` runs the same
arithmetic compiled; the tests hold both to MMA-Sim.

Unlike the compiled kernels, this follows the rule literally: every zero term (a zero product, a
zero C, an all-zero group) enters the largest-exponent search with the unit's zero exponent.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any, Sequence

import numpy as np

from lowprec.formats import FloatFormat

from .isa import Alignment, DotUnit, Instruction, OutputRounding, get_instruction
from .operands import require_representable

__all__ = ["DotTrace", "Step", "Term", "dot", "lead_exponent", "round_output", "with_frac_bits"]


@dataclass(frozen=True)
class Term:
    """One term of a fused step, aligned to the step's largest exponent."""

    role: str  # "product" (a_k·b_k, with its block scales), "group" (a sum of 16 products), "c"
    index: int  # k of a product, the group's number, -1 for C
    value: Fraction  # the term's exact value
    exponent: int  # its alignment exponent (the unit's zero exponent for a zero term)
    zero: bool  # a zero term (its exponent is the zero exponent)
    kept: int  # the integer the adder receives, in units of 2^(e_max − F)
    dropped: Fraction  # value − kept · 2^(e_max − F): what the alignment cut off

    def shift(self, e_max: int) -> int:
        """How many places the term moves right to line up with e_max."""
        return e_max - self.exponent


@dataclass(frozen=True)
class Step:
    """One fused step: its products, the C it started from, the alignment and the D it returned."""

    k0: int  # first product (index into K)
    k1: int  # one past the last
    c: float  # C of this step
    e_max: int  # the largest exponent of the step's terms
    frac_bits: int  # F
    terms: tuple[Term, ...]
    total: int  # Σ kept, in units of 2^(e_max − F)
    d: float  # the step's output

    @property
    def quantum(self) -> Fraction:
        """The weight of the adder's last bit, 2^(e_max − F)."""
        return Fraction(2) ** (self.e_max - self.frac_bits)


@dataclass(frozen=True)
class DotTrace:
    """A dot product D = Σ_k a_k·b_k (·scales) + c through an instruction, step by step."""

    arch: str
    instruction: str
    steps: tuple[Step, ...]
    d: float  # the result (a float64 holding the FP32 / FP16 value; NaN and ±Inf as such)
    exact: Fraction | None  # the exact Σ + c (None when an operand is Inf/NaN)
    d_format: str  # "FP32" or "FP16"

    @property
    def d_bits(self) -> int:
        """D's bit pattern as the hardware returns it (canonical NaN, never −0)."""
        if math.isnan(self.d):
            return 0x7FFFFFFF if self.d_format == "FP32" else 0x7FFF
        if self.d_format == "FP32":
            return int(np.array(self.d, np.float32).view(np.uint32))
        return int(np.array(self.d, np.float16).view(np.uint16))

    @property
    def error(self) -> float:
        """d − exact, rounded once to float64 (NaN when there is no exact value or d is not finite)."""
        if self.exact is None or not math.isfinite(self.d):
            return math.nan
        return float(Fraction(self.d) - self.exact)


def lead_exponent(x: Fraction, fmt_emin: int) -> int:
    """floor(log2 |x|) clamped below at the format's smallest normal exponent (x ≠ 0)."""
    e = x.numerator.bit_length() - x.denominator.bit_length()
    if Fraction(2) ** e > abs(x):
        e -= 1
    return max(e, fmt_emin)


def _cut(x: Fraction, alignment: Alignment) -> int:
    """x to an integer: toward zero, or to nearest with ties to even."""
    if alignment is Alignment.TRUNCATE:
        return math.trunc(x)
    return round(x)  # Fraction.__round__ rounds half to even


def round_output(v: Fraction, out: OutputRounding) -> float:
    """The exact step sum v rounded to D (see OutputRounding)."""
    if v == 0:
        return 0.0
    e = lead_exponent(v, out.emin)
    q = Fraction(2) ** (e - out.kept_bits)
    n = math.trunc(v / q) if out.toward_zero else round(v / q)
    r = n * q
    if abs(r) >= Fraction(2) ** (out.emax + 1):
        return math.copysign(math.inf, float(v))
    return float(r) + 0.0


def _special(values: Sequence[float]) -> float | None:
    """The IEEE result when a term is Inf/NaN (NaN for NaN, Inf·0 or Inf − Inf), else None."""
    if all(math.isfinite(v) for v in values):
        return None
    total = 0.0
    for v in values:
        total += v  # finite terms cannot overflow here: the float sum is IEEE's answer
    return total


def dot(a: Sequence[float] | Any, b: Sequence[float] | Any, c: float = 0.0, *, arch: str, instruction: str,
        scale_a: Sequence[float] | Any = None, scale_b: Sequence[float] | Any = None,
        unit: DotUnit | None = None) -> DotTrace:
    """One output of `instruction`: Σ_k a_k·b_k + c with K a multiple of the instruction's K
    (chained), `scale_a`/`scale_b` the block scales of a block-scaled instruction (K/block each).
    `unit` replaces the instruction's arithmetic (e.g. more fraction bits, for what-ifs)."""
    ins = get_instruction(arch, instruction)
    u = unit if unit is not None else ins.unit
    av = np.asarray(a, np.float64).reshape(-1)
    bv = np.asarray(b, np.float64).reshape(-1)
    k = av.size
    if bv.size != k or k == 0 or k % ins.k:
        raise ValueError(f"a and b must have the same length, a multiple of {ins.name}'s K = {ins.k}; "
                         f"got {av.size} and {bv.size}")
    require_representable(av, ins.a_format, "a", f"the a type .{ins.a_type} of {ins.name}")
    require_representable(bv, ins.b_format, "b", f"the b type .{ins.b_type} of {ins.name}")
    require_representable(np.asarray(c, np.float64), ins.c_format, "c", f"the c type .{ins.c_type} of {ins.name}")
    sa = sb = None
    if ins.block_scaled:
        if scale_a is None or scale_b is None:
            raise ValueError(f"{ins.name} is block-scaled: give scale_a and scale_b ({k // ins.block} each)")
        sa = np.asarray(scale_a, np.float64).reshape(-1)
        sb = np.asarray(scale_b, np.float64).reshape(-1)
        if sa.size != k // ins.block or sb.size != k // ins.block:
            raise ValueError(f"scale_a and scale_b need {k // ins.block} values each")
        fmt = ins.scale_format
        assert fmt is not None
        require_representable(sa, fmt, "scale_a", f"the scale type .{ins.scale_type}")
        require_representable(sb, fmt, "scale_b", f"the scale type .{ins.scale_type}")
    steps: list[Step] = []
    acc = float(c)
    c_fmt: FloatFormat = ins.c_format
    step = u.step(ins.k)
    for k0 in range(0, k, step):
        s = _step(ins, u, av, bv, sa, sb, k0, k0 + step, acc, c_fmt)
        steps.append(s)
        acc = s.d
        c_fmt = ins.d_format
    exact = None
    scalars = [float(x) for x in av] + [float(x) for x in bv] + [float(c)]
    if sa is not None and sb is not None:
        scalars += [float(x) for x in sa] + [float(x) for x in sb]
    if all(math.isfinite(x) for x in scalars):
        total = Fraction(float(c))
        for kk in range(k):
            t = Fraction(float(av[kk])) * Fraction(float(bv[kk]))
            if sa is not None and sb is not None:
                t *= Fraction(float(sa[kk // ins.block])) * Fraction(float(sb[kk // ins.block]))
            total += t
        exact = total
    return DotTrace(arch, ins.name, tuple(steps), acc, exact, ins.d_format.name)


def _step(ins: Instruction, u: DotUnit, av: np.ndarray, bv: np.ndarray, sa: np.ndarray | None,
          sb: np.ndarray | None, k0: int, k1: int, c: float, c_fmt: FloatFormat) -> Step:
    def e_of(x: float, fmt: FloatFormat) -> int:
        return lead_exponent(Fraction(x), fmt.emin)

    scale_fmt = ins.scale_format
    # the terms: (role, index, float value (Inf/NaN detection), alignment exponent, zero?)
    raw: list[tuple[str, int, float, int, bool]] = []
    if u.group > 1:  # GST-FDPA: each group summed exactly, then times its scale product
        assert sa is not None and sb is not None and scale_fmt is not None
        for g, g0 in enumerate(range(k0, k1, u.group)):
            fa, fb = float(sa[g0 // ins.block]), float(sb[g0 // ins.block])
            prods = [float(av[kk]) * float(bv[kk]) for kk in range(g0, g0 + u.group)]
            zero = all(p == 0.0 for p in prods) or fa * fb == 0.0
            e = u.zero_exponent if zero or not math.isfinite(fa * fb) else e_of(fa, scale_fmt) + e_of(fb, scale_fmt)
            raw.append(("group", g, math.fsum(prods) * (fa * fb), e, zero))
    else:  # T-FDPA, and ST-FDPA when each product carries its block scales
        for kk in range(k0, k1):
            x, y = float(av[kk]), float(bv[kk])
            v = x * y
            zero = x == 0.0 or y == 0.0
            finite = math.isfinite(x) and math.isfinite(y)
            e = e_of(x, ins.a_format) + e_of(y, ins.b_format) if finite and not zero else u.zero_exponent
            if sa is not None and sb is not None and scale_fmt is not None:
                fa, fb = float(sa[kk // ins.block]), float(sb[kk // ins.block])
                v *= fa * fb
                if math.isfinite(fa * fb):
                    if finite and not zero:
                        e += e_of(fa, scale_fmt) + e_of(fb, scale_fmt)
                else:
                    zero = False  # a NaN scale makes even a zero product NaN
            raw.append(("product", kk, v, e, zero))
    zero_c = c == 0.0
    e_c = u.zero_exponent if zero_c or not math.isfinite(c) else e_of(c, c_fmt)
    raw.append(("c", -1, c, e_c, zero_c))
    special = _special([v for _, _, v, _, _ in raw])
    e_max = max(e for _, _, _, e, _ in raw)  # a zero term takes part with the zero exponent
    quantum = Fraction(2) ** (e_max - u.frac_bits)
    terms: list[Term] = []
    total = 0
    for role, idx, v, e, zero in raw:
        exact = Fraction(v) if special is None else Fraction(0)  # v is exact in float64 here
        kept = _cut(exact / quantum, u.alignment)
        total += kept
        terms.append(Term(role, idx, exact, e, zero, kept, exact - kept * quantum))
    d = special if special is not None else round_output(total * quantum, u.output)
    return Step(k0, k1, c, e_max, u.frac_bits, tuple(terms), total, d)


def with_frac_bits(ins: Instruction, frac_bits: int) -> DotUnit:
    """The instruction's unit with another F (a what-if: how many bits would make it exact?)."""
    return replace(ins.unit, frac_bits=frac_bits)
