"""`gemm.matmul` against independent oracles: K chained through the instruction equals repeated
`mma` (itself held to mmasim in test_gemm_oracle.py); promotion equals FP32 additions of the
partial sums (numpy float32 arithmetic, and a Fraction-exact FFMA); decode scales where DeepGEMM
and vLLM apply them; the output cast equals ml_dtypes/numpy casts; the exact reference equals a
Fraction sum; a process pool gives the same bits; bad input is one ValueError naming it."""

from __future__ import annotations

import math
import multiprocessing
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest

from lowprec import strictjson
from lowprec.config import Budget
from lowprec.simulations import gemm
from lowprec.simulations.gemm import _kernels as K
from lowprec.simulations.gemm import scalar
from tests.gemm_oracle import random_scales, random_values

HOPPER_FP8 = "wgmma.m64n8k32.f32.e4m3.e4m3"


def bits(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x)
    return x.view({4: np.uint32, 2: np.uint16}[x.dtype.itemsize])


def fp32_of(x: Fraction) -> float:
    """x rounded once to binary32 (nearest even, gradual underflow, ±Inf from 2^128 − 2^103)."""
    if x == 0:
        return 0.0
    e = scalar.lead_exponent(x, -126)
    q = Fraction(2) ** (e - 23)
    r = round(x / q) * q
    if abs(r) >= Fraction(2) ** 128:
        return math.copysign(math.inf, float(x))
    return float(r)


def ffma(a: float, b: float, c: float) -> float:
    return fp32_of(Fraction(a) * Fraction(b) + Fraction(c))


def operands(ins: gemm.Instruction, m: int, n: int, k: int, seed: int = 0, scaled: bool = False):  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(seed)
    a = random_values(rng, ins.a_type, (m, k), zeros=0.05)
    b = random_values(rng, ins.b_type, (k, n), zeros=0.05)
    c = random_values(rng, ins.c_type, (m, n), spread=6)
    sa = sb = None
    if ins.block_scaled:
        sa = random_scales(rng, ins.scale_type, (m, k // ins.block))
        sb = random_scales(rng, ins.scale_type, (k // ins.block, n))
    return a, b, c, sa, sb


CHAIN_CASES = [("hopper", HOPPER_FP8), ("ada", "mma.m16n8k32.f32.e4m3.e5m2.f32"),
               ("hopper", "wgmma.m64n8k16.f16.f16.f16"), ("ampere", "mma.m16n8k8.f32.tf32.tf32.f32"),
               ("volta", "mma.m8n8k4.f32.f16.f16.f32"), ("hopper", "wgmma.m64n8k16.f32.bf16.bf16"),
               ("rtx_blackwell", "mma.m16n8k32.kind::mxf8f6f4.block32.f32.e4m3.e2m1.f32.ue8m0"),
               ("blackwell", "tcgen05.mma.m128n8k64.kind::mxf4nvf4.block16.f32.e2m1.e2m1.ue4m3")]


def repeated_mma(arch: str, name: str, a, b, c, sa, sb):  # type: ignore[no-untyped-def]
    ins = gemm.get_instruction(arch, name)
    d = c
    for k0 in range(0, a.shape[1], ins.k):
        blk = slice(k0 // ins.block, (k0 + ins.k) // ins.block) if ins.block_scaled else None
        d = gemm.mma(a[:, k0:k0 + ins.k], b[k0:k0 + ins.k], d, arch=arch, instruction=name,
                     scale_a=None if sa is None else sa[:, blk], scale_b=None if sb is None else sb[blk])
        d = d.astype(np.float64)
    return d


@pytest.mark.parametrize("arch,name", CHAIN_CASES, ids=[n for _, n in CHAIN_CASES])
def test_matmul_chains_k_through_the_instruction(arch: str, name: str) -> None:
    """D of one instruction is C of the next: matmul over 4 instructions' K = repeated mma."""
    ins = gemm.get_instruction(arch, name)
    a, b, c, sa, sb = operands(ins, ins.m, ins.n, 4 * ins.k, seed=1)
    want = repeated_mma(arch, name, a, b, c, sa, sb)
    out = "FP16" if ins.d_type == "f16" else "FP32"
    res = gemm.matmul(a, b, c, arch=arch, instruction=name, scale_a=sa, scale_b=sb, out_format=out)
    assert np.array_equal(bits(res.d), bits(want.astype(res.d.dtype)))


def test_any_m_and_n_are_instruction_tiles() -> None:
    """A 5 × 3 GEMM is the corner of the instruction-shaped one (outputs are independent)."""
    ins = gemm.get_instruction("hopper", HOPPER_FP8)
    a, b, c, _, _ = operands(ins, 64, 8, 64, seed=2)
    full = repeated_mma("hopper", HOPPER_FP8, a, b, c, None, None)
    res = gemm.matmul(a[:5], b[:, :3], c[:5, :3], arch="hopper", instruction=HOPPER_FP8, tile=2)
    assert np.array_equal(bits(res.d), bits(full[:5, :3].astype(np.float32)))


@pytest.mark.parametrize("arch,name", CHAIN_CASES[:4], ids=[n for _, n in CHAIN_CASES[:4]])
def test_promotion_every_k_equals_no_promotion(arch: str, name: str) -> None:
    ins = gemm.get_instruction(arch, name)
    a, b, _, _, _ = operands(ins, 16, 8, 8 * ins.k, seed=3)
    plain = gemm.matmul(a, b, arch=arch, instruction=name)
    promoted = gemm.matmul(a, b, arch=arch, instruction=name, promote_every=8 * ins.k)
    assert np.array_equal(bits(plain.d), bits(promoted.d))


def test_promotion_adds_fp32_partials() -> None:
    """Every 128 elements the tensor core restarts from 0 and its partial sum is added in FP32
    (numpy float32 addition, IEEE); C is added at the end."""
    ins = gemm.get_instruction("hopper", HOPPER_FP8)
    a, b, c, _, _ = operands(ins, 4, 6, 512, seed=4)
    acc = np.zeros((4, 6), np.float32)
    for k0 in range(0, 512, 128):
        part = gemm.matmul(a[:, k0:k0 + 128], b[k0:k0 + 128], arch="hopper", instruction=HOPPER_FP8).d
        acc = acc + part
    acc = acc + c.astype(np.float32)
    res = gemm.matmul(a, b, c, arch="hopper", instruction=HOPPER_FP8, promote_every=128)
    assert np.array_equal(bits(res.d), bits(acc))
    # and it is not the unpromoted result (this data loses bits without promotion)
    assert not np.array_equal(bits(res.d), bits(gemm.matmul(a, b, c, arch="hopper", instruction=HOPPER_FP8).d))


def test_blockwise_scales_are_applied_at_promotion_deepgemm() -> None:
    """DeepGEMM: final_accum += (scale_a · scale_b) · accum — one FMUL, then one FFMA — with A's
    scales per 1×128 and B's per 128×128 (N = 130: two column blocks)."""
    ins = gemm.get_instruction("hopper", HOPPER_FP8)
    rng = np.random.default_rng(5)
    m, n, k = 3, 130, 256
    a, b, _, _, _ = operands(ins, m, n, k, seed=5)
    sa = rng.uniform(0.01, 3, (m, k // 128)).astype(np.float32).astype(np.float64)
    sb = rng.uniform(0.01, 3, (k // 128, 2)).astype(np.float32).astype(np.float64)
    acc = np.zeros((m, n))
    for blk in range(k // 128):
        part = gemm.matmul(a[:, blk * 128:(blk + 1) * 128], b[blk * 128:(blk + 1) * 128], arch="hopper",
                           instruction=HOPPER_FP8).d.astype(np.float64)
        for i in range(m):
            for j in range(n):
                s = float(np.float32(sa[i, blk]) * np.float32(sb[blk, j // 128]))
                acc[i, j] = ffma(s, part[i, j], acc[i, j])
    res = gemm.matmul(a, b, arch="hopper", instruction=HOPPER_FP8, scale_a=sa, scale_b=sb, out_format="BF16")
    assert res.promote_every == 128
    assert np.array_equal(bits(res.accumulator), bits(acc.astype(np.float32)))
    assert np.array_equal(bits(res.d), bits(acc.astype(np.float32).astype(ml_dtypes.bfloat16)))


@pytest.mark.parametrize("layout", ["tensor", "row_column"])
def test_epilogue_scales_are_vllms_order(layout: str) -> None:
    """vLLM ScaledEpilogue: D = s_a · (s_b · acc) in FP32; with C (ScaledEpilogueBias) the outer
    step is FFMA(s_a, s_b · acc, C)."""
    ins = gemm.get_instruction("hopper", HOPPER_FP8)
    rng = np.random.default_rng(6)
    a, b, c, _, _ = operands(ins, 5, 7, 96, seed=6)
    if layout == "tensor":
        sa, sb = np.float32(0.37), np.float32(1.93)
        sa_full, sb_full = np.full((5, 1), sa), np.full((1, 7), sb)
    else:
        sa_full = rng.uniform(0.1, 2, (5, 1)).astype(np.float32)
        sb_full = rng.uniform(0.1, 2, (1, 7)).astype(np.float32)
        sa, sb = sa_full.reshape(5), sb_full.reshape(7)
    acc = gemm.matmul(a, b, arch="hopper", instruction=HOPPER_FP8).d
    want = sa_full * (sb_full * acc)  # numpy float32 arithmetic: one rounding each
    res = gemm.matmul(a, b, arch="hopper", instruction=HOPPER_FP8, scale_a=sa, scale_b=sb)
    assert np.array_equal(bits(res.d), bits(want))
    res_c = gemm.matmul(a, b, c, arch="hopper", instruction=HOPPER_FP8, scale_a=sa, scale_b=sb)
    t = sb_full * acc
    want_c = np.array([[ffma(float(sa_full[i, 0]), float(t[i, j]), c[i, j]) for j in range(7)] for i in range(5)],
                      np.float32)
    assert np.array_equal(bits(res_c.d), bits(want_c))


def test_output_casts_are_nearest_even_with_canonical_nan() -> None:
    ins = gemm.get_instruction("hopper", HOPPER_FP8)
    a, b, _, _, _ = operands(ins, 8, 8, 64, seed=7)
    a[0, :] = 448.0
    b[:, 0] = 448.0  # 64 · 448² overflows FP16: Inf
    acc = gemm.matmul(a, b, arch="hopper", instruction=HOPPER_FP8).d
    for fmt, dtype in (("BF16", ml_dtypes.bfloat16), ("FP16", np.float16)):
        res = gemm.matmul(a, b, arch="hopper", instruction=HOPPER_FP8, out_format=fmt)
        with np.errstate(over="ignore"):  # numpy's FP16 cast overflows to Inf, as it should
            want = acc.astype(dtype)
        assert res.d.dtype == dtype and np.array_equal(bits(res.d), bits(want))
    assert np.isinf(gemm.matmul(a, b, arch="hopper", instruction=HOPPER_FP8, out_format="fp16").d[0, 0])
    e5 = gemm.get_instruction("hopper", "wgmma.m64n8k32.f32.e5m2.e5m2")
    x = np.zeros((2, 32))
    x[0, 0] = np.inf
    y = np.zeros((32, 2))  # Inf · 0: NaN
    for fmt, code in (("FP32", 0x7FFFFFFF), ("BF16", 0x7FFF), ("FP16", 0x7FFF)):
        d = gemm.matmul(x, y, arch="hopper", instruction=e5.name, out_format=fmt, reference=False).d
        assert int(bits(d)[0, 0]) == code and int(bits(d)[1, 1]) == 0


def test_mma_returns_the_instruction_dtype_canonical_nan_and_no_negative_zero() -> None:
    name = "wgmma.m64n8k16.f16.f16.f16"
    a = np.zeros((64, 16))
    b = np.zeros((16, 8))
    c = np.full((64, 8), -0.0)
    a[1, 0], b[0, 1] = np.inf, -np.inf
    d = gemm.mma(a, b, c, arch="hopper", instruction=name)
    assert d.dtype == np.float16 and int(bits(d)[0, 0]) == 0 and np.isneginf(d[1, 1])
    a[2, 0], a[2, 1], b[1, 1] = np.inf, np.inf, np.inf  # +Inf − Inf in one sum: NaN
    d = gemm.mma(a, b, c, arch="hopper", instruction=name)
    assert int(bits(d)[2, 1]) == 0x7FFF
    d32 = gemm.mma(np.zeros((64, 32)), np.zeros((32, 8)), None, arch="hopper", instruction=HOPPER_FP8)
    assert d32.dtype == np.float32 and not np.any(bits(d32))


def test_more_fraction_bits_give_the_exactly_rounded_sum() -> None:
    """With F large enough nothing is cut: D is the exact sum rounded once (the readable model
    with F = 400 against an independent Fraction rounding); and on the real Hopper FP8 unit, when
    every product bit lies within its 13 bits (operands in [1, 2), C = 0), D = RZ_E8M13(exact)."""
    rng = np.random.default_rng(8)
    ins = gemm.get_instruction("hopper", "wgmma.m64n8k16.f32.bf16.bf16")
    wide = scalar.with_frac_bits(ins, 400)
    for _ in range(20):
        a = random_values(rng, "bf16", (16,), spread=60)
        b = random_values(rng, "bf16", (16,), spread=60)
        t = scalar.dot(a, b, 0.0, arch="hopper", instruction=ins.name, unit=wide)
        assert t.exact is not None
        q = Fraction(2) ** (scalar.lead_exponent(t.exact, -126) - 23) if t.exact else Fraction(1)
        assert t.d == float(math.trunc(t.exact / q) * q)  # RZ to FP32 of the exact sum
    vals = np.array([1 + m / 8 for m in range(8)])  # E4M3 values in [1, 2)
    a = rng.choice(vals, (64, 32)) * rng.choice([-1, 1], (64, 32))
    b = rng.choice(vals, (32, 8))
    d = gemm.mma(a, b, np.zeros((64, 8)), arch="hopper", instruction=HOPPER_FP8)
    exact = [[sum(Fraction(a[i, k]) * Fraction(b[k, j]) for k in range(32)) for j in range(8)] for i in range(64)]
    for i in range(64):
        for j in range(8):
            x = exact[i][j]
            q = Fraction(2) ** (scalar.lead_exponent(x, -126) - 13) if x else Fraction(1)
            assert float(d[i, j]) == float(math.trunc(x / q) * q)


EXACT_CASES = [("hopper", HOPPER_FP8, None), ("hopper", "wgmma.m64n8k16.f32.bf16.bf16", None),
               ("hopper", "wgmma.m64n8k16.f32.f16.f16", None), ("hopper", HOPPER_FP8, "blockwise"),
               ("hopper", HOPPER_FP8, "rows"),
               ("blackwell", "tcgen05.mma.m128n8k64.kind::mxf4nvf4.block16.f32.e2m1.e2m1.ue4m3", None),
               ("rtx_blackwell", "mma.m16n8k32.kind::mxf8f6f4.block32.f32.e5m2.e5m2.f32.ue8m0", None)]


@pytest.mark.parametrize("arch,name,scales", EXACT_CASES, ids=[f"{n}-{s}" for _, n, s in EXACT_CASES])
def test_exact_reference_is_the_fraction_sum(arch: str, name: str, scales: str | None) -> None:
    ins = gemm.get_instruction(arch, name)
    m, n, k = 3, 4, 256
    a, b, c, sa, sb = operands(ins, m, n, k, seed=9)
    rng = np.random.default_rng(9)
    if ins.a_type == "bf16":  # exponents far apart: the Kulisch accumulator, not float64
        a = random_values(rng, "bf16", (m, k), spread=55)  # products up to 2^112, sums finite in FP32
        b = random_values(rng, "bf16", (k, n), spread=55)
    if scales == "blockwise":
        sa = rng.uniform(0.001, 5, (m, 2)).astype(np.float32).astype(np.float64)
        sb = rng.uniform(0.001, 5, (2, 1)).astype(np.float32).astype(np.float64)
    elif scales == "rows":
        sa = rng.uniform(0.001, 5, (m,)).astype(np.float32).astype(np.float64)
        sb = rng.uniform(0.001, 5, (n,)).astype(np.float32).astype(np.float64)
    res = gemm.matmul(a, b, c, arch=arch, instruction=name, scale_a=sa, scale_b=sb)
    assert res.exact is not None and res.error is not None
    for i in range(m):
        for j in range(n):
            total = Fraction(c[i, j])
            for kk in range(k):
                if sa is None or sb is None:
                    s = Fraction(1)
                elif ins.block_scaled:
                    s = Fraction(sa[i, kk // ins.block]) * Fraction(sb[kk // ins.block, j])
                elif scales == "blockwise":
                    s = Fraction(sa[i, kk // 128]) * Fraction(sb[kk // 128, 0])
                else:
                    s = Fraction(sa[i]) * Fraction(sb[j])
                total += Fraction(a[i, kk]) * Fraction(b[kk, j]) * s
            assert res.exact[i, j] == float(total)
            assert res.error[i, j] == float(Fraction(float(res.d[i, j])) - total)


def test_exact_reference_float64_path_equals_the_accumulator() -> None:
    rng = np.random.default_rng(10)
    a = random_values(rng, "e4m3", (6, 512))
    b = random_values(rng, "e4m3", (512, 5))
    c = random_values(rng, "f32", (6, 5), spread=30)
    out = np.zeros((6, 5))
    runs = []
    for fixed in (True, False):
        ex, er = np.empty((6, 5)), np.empty((6, 5))
        K.exact_tile(a, b, np.ones((6, 1)), np.ones((1, 5)), 512, c, out, ex, er, fixed)
        runs.append((ex, er))
    assert np.array_equal(runs[0][0], runs[1][0]) and np.array_equal(runs[0][1], runs[1][1])
    assert runs[0][0][0, 0] == float(sum(Fraction(a[0, k]) * Fraction(b[k, 0]) for k in range(512)) + Fraction(c[0, 0]))


def test_exact_reference_of_huge_cancellation() -> None:
    """2^100 − 2^100 + 2^-100: float64 summation would lose the small term; the reference keeps it."""
    a = np.array([[2.0**50, -(2.0**50), 2.0**-50, 0.0] + [0.0] * 12])
    b = np.array([[2.0**50], [2.0**50], [2.0**-50], [0.0]] + [[0.0]] * 12)
    res = gemm.matmul(a, b, arch="hopper", instruction="wgmma.m64n8k16.f32.bf16.bf16")
    assert res.exact is not None and res.exact[0, 0] == 2.0**-100
    assert res.error is not None and res.error[0, 0] == float(res.d[0, 0]) - 2.0**-100


def test_exact_reference_when_d_overflows() -> None:
    a = np.full((1, 16), 2.0**127)
    b = np.full((16, 1), 2.0**10)
    res = gemm.matmul(a, b, arch="hopper", instruction="wgmma.m64n8k16.f32.bf16.bf16")
    assert res.exact is not None and res.error is not None
    assert res.exact[0, 0] == 2.0**141 and np.isposinf(res.d[0, 0]) and np.isposinf(res.error[0, 0])


def test_exact_reference_with_infinities() -> None:
    name = "wgmma.m64n8k32.f32.e5m2.e5m2"
    a = np.zeros((2, 32))
    b = np.ones((32, 2))
    a[0, 0] = np.inf
    res = gemm.matmul(a, b, arch="hopper", instruction=name)
    assert res.exact is not None and res.error is not None
    assert np.isposinf(res.exact[0, 0]) and res.error[0, 0] == 0.0 and np.isposinf(res.d[0, 0])
    assert res.exact[1, 1] == 0.0 and res.error[1, 1] == 0.0


def test_a_process_pool_gives_the_same_bits() -> None:
    ins = gemm.get_instruction("hopper", HOPPER_FP8)
    a, b, c, _, _ = operands(ins, 70, 45, 256, seed=11)
    kw = dict(arch="hopper", instruction=HOPPER_FP8, promote_every=128, out_format="BF16", tile=32)
    serial = gemm.matmul(a, b, c, **kw)  # type: ignore[arg-type]
    with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")) as pool:
        pooled = gemm.matmul(a, b, c, executor=pool, **kw)  # type: ignore[arg-type]
    with ThreadPoolExecutor(2) as threads:
        threaded = gemm.matmul(a, b, c, executor=threads, **kw)  # type: ignore[arg-type]
    for other in (pooled, threaded):
        assert np.array_equal(bits(serial.d), bits(other.d))
        assert np.array_equal(bits(serial.accumulator), bits(other.accumulator))
        assert serial.exact is not None and other.exact is not None
        assert np.array_equal(serial.exact.view(np.uint64), other.exact.view(np.uint64))


def test_promotion_lowers_the_error_of_a_long_k() -> None:
    """DeepSeek-V3's observation on its smallest scale: K = 4096 of positive E4M3 values (as in
    P·V), no promotion against promotion every 128."""
    rng = np.random.default_rng(12)
    from lowprec import formats

    a = formats.quantize(np.abs(rng.standard_normal((4, 4096))), "E4M3FN").astype(np.float64)
    b = formats.quantize(np.abs(rng.standard_normal((4096, 4))), "E4M3FN").astype(np.float64)
    plain = gemm.matmul(a, b, arch="hopper", instruction=HOPPER_FP8)
    promoted = gemm.matmul(a, b, arch="hopper", instruction=HOPPER_FP8, promote_every=128)
    assert plain.max_rel_error() > 10 * promoted.max_rel_error()
    assert plain.max_rel_error() > 2.0**-13  # truncation biases every step down


def test_ffma_rounds_once() -> None:
    """FFMA(1 + 2^-23, −2^-24 (1 − 2^-23), 1 + 2^-23): the exact value 1 + 2^-24 + 2^-70 lies just
    above the midpoint, so FP32 gives 1 + 2^-23; rounding to float64 first lands on the midpoint
    itself and would give 1 (the tie to even)."""
    a, b, c = 1 + 2.0**-23, -(2.0**-24) * (1 - 2.0**-23), 1 + 2.0**-23
    assert ffma(a, b, c) == 1 + 2.0**-23
    assert K.f32_fma(a, b, c) == 1 + 2.0**-23
    rng = np.random.default_rng(13)
    for _ in range(200):
        x, y, z = (float(np.float32(v)) for v in rng.standard_normal(3) * 2.0 ** rng.integers(-30, 30, 3))
        assert K.f32_fma(x, y, z) == ffma(x, y, z)


def test_exact_reference_rounds_ties_to_even() -> None:
    """1 + 2^-53 is the midpoint of 1 and its float64 neighbour: the even one, 1; 1 + 2^-52 + 2^-53
    goes up to 1 + 2^-51; a bit below the tie decides it."""
    name = "wgmma.m64n8k16.f32.bf16.bf16"
    a = np.zeros((3, 16))
    b = np.ones((16, 1))
    a[0, :2] = 1.0, 2.0**-53
    a[1, :3] = 1.0, 2.0**-52, 2.0**-53
    a[2, :3] = 1.0, 2.0**-53, 2.0**-120
    res = gemm.matmul(a, b, arch="hopper", instruction=name)
    assert res.exact is not None
    assert list(res.exact[:, 0]) == [1.0, 1 + 2.0**-51, 1 + 2.0**-52]


def test_result_to_dict_is_strict_json() -> None:
    res = gemm.matmul(np.ones((2, 32)), np.ones((32, 2)), arch="hopper", instruction=HOPPER_FP8)
    d = res.to_dict()
    assert d["d"] == [[32.0, 32.0], [32.0, 32.0]] and d["max_abs_error"] == 0.0
    assert strictjson.loads(strictjson.dumps(d))["instruction"] == HOPPER_FP8


# ------------------------------------------------------------------------------------------------
# bad input: one line naming it
# ------------------------------------------------------------------------------------------------

def test_a_value_outside_the_operand_type_is_named() -> None:
    a = np.ones((4, 32))
    a[2, 5] = 0.1
    with pytest.raises(ValueError, match=r"a\[2, 5\] = 0.1 is not exactly representable in E4M3FN, the a type "
                                         r"\.e4m3 of wgmma"):
        gemm.matmul(a, np.ones((32, 4)), arch="hopper", instruction=HOPPER_FP8)
    b = np.ones((32, 8))
    b[0, 0] = 512.0  # above E4M3's 448
    with pytest.raises(ValueError, match=r"b\[0, 0\] = 512.0 is not exactly representable in E4M3FN"):
        gemm.mma(np.ones((64, 32)), b, np.zeros((64, 8)), arch="hopper", instruction=HOPPER_FP8)
    with pytest.raises(ValueError, match=r"c\[0, 0\] = 0.1 is not exactly representable in FP32"):
        gemm.mma(np.ones((64, 32)), np.ones((32, 8)), np.full((64, 8), 0.1), arch="hopper", instruction=HOPPER_FP8)
    tf = np.full((16, 8), 1 + 2.0**-12)  # FP32, not TF32
    with pytest.raises(ValueError, match=r"a\[0, 0\] = 1.000244140625 is not exactly representable in TF32"):
        gemm.mma(tf, np.ones((8, 8)), np.zeros((16, 8)), arch="ampere", instruction="mma.m16n8k8.f32.tf32.tf32.f32")
    with pytest.raises(ValueError, match=r"a\[0, 0\] = nan is not exactly representable in E2M1"):
        gemm.matmul(np.full((1, 32), np.nan), np.ones((32, 1)), arch="blackwell",
                    instruction="tcgen05.mma.m64n8k32.kind::f8f6f4.f32.e2m1.e2m1")
    with pytest.raises(TypeError, match="a must be an array of numbers"):
        gemm.matmul("ones", np.ones((32, 1)), arch="hopper", instruction=HOPPER_FP8)


def test_k_must_be_a_multiple_of_the_instruction() -> None:
    with pytest.raises(ValueError, match="K = 48 is not a multiple of wgmma.m64n8k32.f32.e4m3.e4m3's K = 32"):
        gemm.matmul(np.ones((2, 48)), np.ones((48, 2)), arch="hopper", instruction=HOPPER_FP8)
    with pytest.raises(ValueError, match="their K differ"):
        gemm.matmul(np.ones((2, 32)), np.ones((64, 2)), arch="hopper", instruction=HOPPER_FP8)
    with pytest.raises(ValueError, match=r"multiplies a \(64, 32\) by a \(32, 8\) matrix"):
        gemm.mma(np.ones((2, 32)), np.ones((32, 2)), np.zeros((2, 2)), arch="hopper", instruction=HOPPER_FP8)
    with pytest.raises(ValueError, match="promote_every = 48 is not a multiple"):
        gemm.matmul(np.ones((2, 96)), np.ones((96, 2)), arch="hopper", instruction=HOPPER_FP8, promote_every=48)


def test_a_gemm_over_the_budget_is_refused_before_it_runs() -> None:
    with pytest.raises(ValueError, match=r"a GEMM of M = 65536, N = 65536, K = 32 needs .* over the command "
                                         r"line's budget of 4 GiB and 120 s"):
        gemm.matmul(np.ones((65536, 32)), np.ones((32, 65536)), arch="hopper", instruction=HOPPER_FP8)
    tiny = Budget(bytes=2**20, seconds=1e-4, where="a test")
    with pytest.raises(ValueError, match="M = 64, N = 64, K = 64 needs .* over a test's budget"):
        gemm.matmul(np.ones((64, 64)), np.ones((64, 64)), arch="hopper", instruction=HOPPER_FP8, budget=tiny)


def test_scales_must_fit_the_instruction() -> None:
    name = "tcgen05.mma.m128n8k64.kind::mxf4nvf4.block16.f32.e2m1.e2m1.ue4m3"
    a, b = np.ones((2, 64)), np.ones((64, 2))
    with pytest.raises(ValueError, match="is block-scaled: give scale_a of shape"):
        gemm.matmul(a, b, arch="blackwell", instruction=name)
    with pytest.raises(ValueError, match=r"scale_a must have shape \(2, 4\)"):
        gemm.matmul(a, b, arch="blackwell", instruction=name, scale_a=np.ones((2, 2)), scale_b=np.ones((4, 2)))
    with pytest.raises(ValueError, match=r"scale_b\[0, 0\] = -1.0 is not exactly representable in UE4M3"):
        gemm.matmul(a, b, arch="blackwell", instruction=name, scale_a=np.ones((2, 4)), scale_b=-np.ones((4, 2)))
    with pytest.raises(ValueError, match="is not block-scaled: it takes no scale_a"):
        gemm.mma(np.ones((64, 32)), np.ones((32, 8)), None, arch="hopper", instruction=HOPPER_FP8, scale_a=1.0)
    with pytest.raises(ValueError, match="decode scales must be finite"):
        gemm.matmul(np.ones((2, 32)), np.ones((32, 2)), arch="hopper", instruction=HOPPER_FP8, scale_a=np.nan)
    with pytest.raises(ValueError, match="promote_every must be their K block, 128, got 256"):
        gemm.matmul(np.ones((2, 256)), np.ones((256, 2)), arch="hopper", instruction=HOPPER_FP8,
                    scale_a=np.ones((2, 2)), promote_every=256)
    with pytest.raises(ValueError, match="a 1-D decode scale has one value per row of A"):
        gemm.matmul(np.ones((2, 32)), np.ones((32, 2)), arch="hopper", instruction=HOPPER_FP8, scale_a=np.ones(3))


def test_other_bad_arguments() -> None:
    with pytest.raises(ValueError, match="out_format must be one of FP32, BF16, FP16, got 'E4M3FN'"):
        gemm.matmul(np.ones((1, 32)), np.ones((32, 1)), arch="hopper", instruction=HOPPER_FP8, out_format="E4M3FN")
    with pytest.raises(ValueError, match="D cannot be chained into the next instruction's C"):
        gemm.matmul(np.ones((1, 8)), np.ones((8, 1)), arch="volta", instruction="mma.m8n8k4.f32.f16.f16.f16")
    res = gemm.matmul(np.ones((1, 8)), np.ones((8, 1)), arch="volta", instruction="mma.m8n8k4.f32.f16.f16.f16",
                      promote_every=4)
    assert float(res.d[0, 0]) == 8.0
    with pytest.raises(ValueError, match=r"c must have shape \(1, 1\)"):
        gemm.matmul(np.ones((1, 32)), np.ones((32, 1)), np.zeros((2, 2)), arch="hopper", instruction=HOPPER_FP8)
    with pytest.raises(ValueError, match=r"c\[0, 0\] = 1e-08 is not exactly representable in FP16"):
        gemm.matmul(np.ones((1, 16)), np.ones((16, 1)), np.full((1, 1), 1e-8), arch="hopper",
                    instruction="wgmma.m64n8k16.f16.f16.f16")
    with pytest.raises(ValueError, match="tile must be a positive integer"):
        gemm.matmul(np.ones((1, 32)), np.ones((32, 1)), arch="hopper", instruction=HOPPER_FP8, tile=0)
    with pytest.raises(ValueError, match="must be a 2-D array"):
        gemm.matmul(np.ones(32), np.ones((32, 1)), arch="hopper", instruction=HOPPER_FP8)
    with pytest.raises(ValueError, match="has no reference"):
        gemm.matmul(np.ones((1, 32)), np.ones((32, 1)), arch="hopper", instruction=HOPPER_FP8,
                    reference=False).max_abs_error()


@pytest.mark.slow
def test_the_benchmark_runs_and_agrees_with_mmasim() -> None:
    """`lowprec bench gemm --quick`: every comparison bit-identical (the speed figures are its job)."""
    from lowprec.app.commands.bench_cmd import BENCHMARKS
    from lowprec.benchmarks import gemm as bench

    assert BENCHMARKS["gemm"] == "lowprec.benchmarks.gemm"
    res = bench.run(quick=True)
    versus = res["versus mmasim"]
    if "skipped" not in versus:
        assert all(v["bit_identical"] for k, v in versus.items() if isinstance(v, dict))
    big = res["256^3 E4M3 Hopper GEMM (quick)"]
    assert big["2 threads bit-identical"] and big["2-process pool bit-identical"]
