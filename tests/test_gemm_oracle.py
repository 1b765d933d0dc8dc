"""`gemm.mma` and the readable `gemm.scalar.dot` against MMA-Sim (mmasim 2.1.1), bit for bit: D
compared as unsigned integers, for every instruction family and every operand/output type
combination, on random and adversarial operands (exponent spread, cancellation, C dominating,
products below the alignment window, subnormal operands, carries, low bits in C, ±Inf/NaN, a zero
C with tiny products). The default run takes one instruction shape per type combination and the
adversarial cases on one combination per family; `slow` runs every combination through every case."""

from __future__ import annotations

import zlib

import numpy as np
import pytest

from lowprec.simulations import gemm
from lowprec.simulations.gemm import scalar
from tests.gemm_oracle import (
    ADVERSARIAL,
    adversarial,
    mmasim_available,
    mmasim_mma,
    ours_bits,
    random_scales,
    random_values,
)

pytestmark = pytest.mark.skipif(not mmasim_available(), reason="mmasim (the test extra) is not installed")


def _variants() -> list[tuple[str, str]]:
    """(arch, instruction): the smallest shape of every family with each of its type combinations."""
    out = []
    for fam in gemm.FAMILIES:
        shape = min(fam.shapes)
        for v in fam.variants:
            out.append((fam.arch, gemm.isa._format_name(fam.operation, shape, v)))
    return out


def _one_per_family() -> list[tuple[str, str]]:
    return [(f.arch, gemm.isa._format_name(f.operation, min(f.shapes), f.variants[0])) for f in gemm.FAMILIES]


VARIANTS = _variants()
FAMILY_REPS = _one_per_family() + [
    ("hopper", "wgmma.m64n8k32.f16.e5m2.e5m2"), ("ada", "mma.m16n8k32.f16.e4m3.e5m2.f16"),
    ("blackwell", "tcgen05.mma.m64n8k32.kind::f8f6f4.f16.e5m2.e2m3"),
    ("blackwell", "tcgen05.mma.m128n8k64.kind::mxf4nvf4.block16.f32.e2m1.e2m1.ue4m3"),
    ("rtx_blackwell", "mma.m16n8k64.kind::mxf4nvf4.block16.f32.e2m1.e2m1.f32.ue4m3"),
    ("blackwell", "tcgen05.mma.m128n8k32.kind::mxf8f6f4.block32.f32.e5m2.e3m2.ue8m0"),
]


def _random_case(rng: np.random.Generator, ins: gemm.Instruction, with_c: bool):  # type: ignore[no-untyped-def]
    a = random_values(rng, ins.a_type, (ins.m, ins.k), zeros=0.1)
    b = random_values(rng, ins.b_type, (ins.k, ins.n), zeros=0.1)
    c = random_values(rng, ins.c_type, (ins.m, ins.n), spread=12) if with_c else np.zeros((ins.m, ins.n))
    sa = sb = None
    if ins.block_scaled:
        sa = random_scales(rng, ins.scale_type, (ins.m, ins.k // ins.block))
        sb = random_scales(rng, ins.scale_type, (ins.k // ins.block, ins.n))
    return a, b, c, sa, sb


def _check(arch: str, name: str, a, b, c, sa, sb) -> None:  # type: ignore[no-untyped-def]
    want = mmasim_mma(arch, name, a, b, c, sa, sb)
    got = ours_bits(gemm.mma(a, b, c, arch=arch, instruction=name, scale_a=sa, scale_b=sb))
    bad = np.argwhere(got != want)
    assert bad.size == 0, (f"{name} on {arch}: {len(bad)} of {got.size} outputs differ; first at {tuple(bad[0])}: "
                           f"ours {got[tuple(bad[0])]:#x}, mmasim {want[tuple(bad[0])]:#x}")


@pytest.mark.parametrize("arch,name", VARIANTS, ids=[f"{a}-{n}" for a, n in VARIANTS])
def test_random_operands_every_type_combination(arch: str, name: str) -> None:
    ins = gemm.get_instruction(arch, name)
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    _check(arch, name, *_random_case(rng, ins, with_c=True))  # C = 0: the adversarial cases


@pytest.mark.parametrize("case", ADVERSARIAL)
@pytest.mark.parametrize("arch,name", FAMILY_REPS, ids=[f"{a}-{n}" for a, n in FAMILY_REPS])
def test_adversarial_operands(arch: str, name: str, case: str) -> None:
    ins = gemm.get_instruction(arch, name)
    rng = np.random.default_rng(zlib.crc32(f"{name}/{case}".encode()))
    _check(arch, name, *adversarial(rng, ins, case))


@pytest.mark.slow
@pytest.mark.parametrize("arch,name", VARIANTS, ids=[f"{a}-{n}" for a, n in VARIANTS])
def test_adversarial_every_type_combination(arch: str, name: str) -> None:
    ins = gemm.get_instruction(arch, name)
    for seed, case in enumerate(ADVERSARIAL * 3):
        _check(arch, name, *adversarial(np.random.default_rng(seed), ins, case))


@pytest.mark.slow
@pytest.mark.parametrize("arch", gemm.ARCHS)
def test_every_shape(arch: str) -> None:
    """Every instruction string of the architecture (every N, every M) once, random operands."""
    rng = np.random.default_rng(7)
    for name in gemm.instructions(arch):
        _check(arch, name, *_random_case(rng, gemm.get_instruction(arch, name), with_c=True))


def test_wide_instruction_shape() -> None:
    """The widest wgmma tile (N = 256) on random operands (every shape: test_every_shape, slow)."""
    rng = np.random.default_rng(11)
    name = "wgmma.m64n256k32.f32.e4m3.e5m2"
    _check("hopper", name, *_random_case(rng, gemm.get_instruction("hopper", name), with_c=True))


def test_issue_example_hopper_keeps_13_bits_of_c() -> None:
    """Hopper FP8 wgmma, A = B = 0, C = 1 + 2^-20 + 2^-13: C is cut to 13 fraction bits (2^-20 is
    dropped) and D = 1 + 2^-13; Blackwell's 25 bits keep all of C."""
    name = "wgmma.m64n8k32.f32.e4m3.e4m3"
    c = np.full((64, 8), 1 + 2.0**-20 + 2.0**-13)
    zeros_a, zeros_b = np.zeros((64, 32)), np.zeros((32, 8))
    d = gemm.mma(zeros_a, zeros_b, c, arch="hopper", instruction=name)
    assert np.all(ours_bits(d) == np.float32(1 + 2.0**-13).view(np.uint32))
    assert np.array_equal(ours_bits(d), mmasim_mma("hopper", name, zeros_a, zeros_b, c))
    trace = scalar.dot(np.zeros(32), np.zeros(32), 1 + 2.0**-20 + 2.0**-13, arch="hopper", instruction=name)
    assert trace.d == 1 + 2.0**-13 and trace.steps[0].terms[-1].dropped == 2.0**-20
    bw = "tcgen05.mma.m64n8k32.kind::f8f6f4.f32.e4m3.e4m3"
    d = gemm.mma(zeros_a, zeros_b, c, arch="blackwell", instruction=bw)
    assert np.all(d == np.float32(1 + 2.0**-20 + 2.0**-13))


def test_a_negative_result_below_fp32_returns_plus_zero() -> None:
    """BF16 products of −2^-151 with C = 0: the window sits at the zero exponent (−133), the sum
    is kept, and rounding it toward zero to FP32 (quantum 2^-149) gives −0, which the unit returns
    as +0."""
    name = "wgmma.m64n8k16.f32.bf16.bf16"
    a = np.zeros((64, 16))
    b = np.zeros((16, 8))
    a[:, 0], b[0, :] = -(2.0**-75), 2.0**-76
    want = mmasim_mma("hopper", name, a, b, np.zeros((64, 8)))
    got = ours_bits(gemm.mma(a, b, np.zeros((64, 8)), arch="hopper", instruction=name))
    assert not want.any() and np.array_equal(got, want)


SCALAR_CASES = [("hopper", "wgmma.m64n8k32.f32.e4m3.e4m3"), ("hopper", "wgmma.m64n8k16.f16.f16.f16"),
                ("ada", "mma.m16n8k32.f32.e5m2.e4m3.f32"), ("volta", "mma.m8n8k4.f32.f16.f16.f16"),
                ("ampere", "mma.m16n8k8.f32.tf32.tf32.f32"), ("hopper", "wgmma.m64n8k16.f32.bf16.bf16"),
                ("rtx_blackwell", "mma.m16n8k32.kind::mxf8f6f4.block32.f32.e2m1.e3m2.f32.ue8m0"),
                ("blackwell", "tcgen05.mma.m128n8k64.kind::mxf4nvf4.block16.f32.e2m1.e2m1.ue4m3")]


@pytest.mark.parametrize("arch,name", SCALAR_CASES, ids=[n for _, n in SCALAR_CASES])
def test_readable_dot_matches_mmasim(arch: str, name: str) -> None:
    """The literal rule (zero terms enter with the zero exponent) in Python integers, per output."""
    ins = gemm.get_instruction(arch, name)
    rng = np.random.default_rng(3)
    for case in ("spread", "zero_c_tiny", "specials", "c_low_bits", "cancellation"):
        a, b, c, sa, sb = adversarial(rng, ins, case)
        want = mmasim_mma(arch, name, a, b, c, sa, sb)
        for i, j in ((0, 0), (ins.m - 1, ins.n - 1), (1, 2)):
            t = scalar.dot(a[i], b[:, j], float(c[i, j]), arch=arch, instruction=name,
                           scale_a=None if sa is None else sa[i], scale_b=None if sb is None else sb[:, j])
            assert t.d_bits == int(want[i, j]), (case, i, j, hex(t.d_bits), hex(int(want[i, j])))


def test_a_cancelling_fp4_group_still_sets_the_window() -> None:
    """GST-FDPA: a group of 16 FP4 products that sums to 0 is no zero term — its scale product's
    exponent (2^8 · 2^8) enters the largest-exponent search, so C = 1 + 2^-20 loses 2^-20 (F = 35
    bits below 2^16 end at 2^-19); a group of zero products would leave C whole."""
    name = "tcgen05.mma.m128n8k64.kind::mxf4nvf4.block16.f32.e2m1.e2m1.ue4m3"
    a, b = np.zeros((128, 64)), np.zeros((64, 8))
    a[:, 0] = a[:, 1] = 1.0
    b[0, :], b[1, :] = 1.0, -1.0  # group 0: 1 − 1 = 0 from two non-zero products
    sa, sb = np.ones((128, 4)), np.ones((4, 8))
    sa[:, 0], sb[0, :] = 256.0, 256.0
    c = np.full((128, 8), 1 + 2.0 ** -20)
    want = mmasim_mma("blackwell", name, a, b, c, sa, sb)
    got = ours_bits(gemm.mma(a, b, c, arch="blackwell", instruction=name, scale_a=sa, scale_b=sb))
    assert np.array_equal(got, want) and np.all(want == np.float32(1.0).view(np.uint32))
    b[1, :] = 0.0
    a[:, 0] = 0.0  # now every product of group 0 is zero: C keeps its low bit
    d = gemm.mma(a, b, c, arch="blackwell", instruction=name, scale_a=sa, scale_b=sb)
    assert np.all(d == np.float32(1 + 2.0 ** -20))
    assert np.array_equal(ours_bits(d), mmasim_mma("blackwell", name, a, b, c, sa, sb))
