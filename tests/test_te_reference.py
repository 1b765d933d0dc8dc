"""`convention="transformer_engine"` against Transformer Engine's rules, written here as an independent
reference (TE cannot be installed on these machines; it needs CUDA). The rules are those of Transformer
Engine 2.20.2 (PyPI `transformer_engine` 2.20.2, and the repository's tests of the same release line):

MXFP8 — `tests/cpp/operator/test_cast_mxfp8.cu`, `compute_ref` (rowwise branch):
    block_amax = std::max(block_amax, std::abs(x)) over the 32 elements (a NaN never wins std::max);
    biased_exponent = float_to_e8m0(block_amax * Quantized_Limits<OutputType>::max_reciprocal());
    scale_reciprocal = exp2f_rcp(biased_exponent);
    output = static_cast<OutputType>(x * scale_reciprocal)   (fp8 constructors: __NV_SATFINITE)
  `tests/cpp/test_common.h`: `max_reciprocal() = static_cast<fp32>(1.0 / max())`;
    `float_to_e8m0(val)`: NaN → 0xFF, Inf → 0xFE, 0 → 0x00, else the float32 exponent field, plus one
    when the mantissa is non-zero, unless the field is 0xFE or (field 0 and mantissa ≤ 0x400000);
    `exp2f_rcp(e)`: 255 → bits 0x7fffffff, 254 → bits 0x00400000, else bits (254 − e) << 23.
  The kernel helpers of the 2.20.2 wheel agree: `transformer_engine/common/CuTeDSL/utils_fp8.py`
  (`cvt_f32_to_fp8e8m0fnu`, software path), `transformer_engine/common/CuTeDSL/utils.py` (`exp2f_rcp`),
  `transformer_engine/common/CuTeDSL/cast/mxfp8/quantize_mxfp8.py` (amax · MAX_NORM_RCP, `mul` then
  `cvt.rn.satfinite`); the docs' `docs/features/low_precision_training/mxfp8/mxfp8.rst` state the
  rule as e = float_to_e8m0(amax / 448).

NVFP4 — `transformer_engine/pytorch/custom_recipes/reference_nvfp4.py`,
  `NVFP4QuantizerRef._quantize_blockwise_reference` (default path: pow_2_scales False, no 4over6, no
  row scaling) and `_quantize` (global_amax = torch.max(torch.abs(x)) of the row-wise input), and
  `cast_to_fp4x2` (comparison thresholds). Transcribed below with torch float32 operations, so the
  roundings are torch's, not ours.
"""

from __future__ import annotations

import numpy as np
import pytest

from lowprec import formats
from lowprec.simulations.mx import quantize_mx
from lowprec.simulations.nvfp4 import quantize_nvfp4
from tests.block_oracles import edge_blocks, first_mismatches, same_float32, wide_tensor

torch = pytest.importorskip("torch")

FLT_MAX = float(np.finfo(np.float32).max)
TE = "transformer_engine"


# ------------------------------------------------------------------------------------------------
# MXFP8, after tests/cpp/operator/test_cast_mxfp8.cu and tests/cpp/test_common.h
# ------------------------------------------------------------------------------------------------


def float_to_e8m0(val: np.float32) -> int:
    """test_common.h `float_to_e8m0`, one value."""
    if np.isnan(val):
        return 0xFF
    if np.isinf(val):
        return 0xFE
    if val == 0:
        return 0x00
    bits = int(np.array([val], np.float32).view(np.uint32)[0])
    exponent = (bits >> 23) & 0xFF  # fp8e8m0 exponent = (val_u32 >> FP32_MANTISSA_BITS): sign is 0 here
    mantissa = bits & 0x7FFFFF
    if (mantissa > 0 and exponent != 0xFE) and not (exponent == 0 and mantissa <= 0x400000):
        exponent += 1
    return exponent


def exp2f_rcp(biased_exp: int) -> np.float32:
    """test_common.h `exp2f_rcp`, one code."""
    if biased_exp == 255:
        bits = 0x7FFFFFFF
    elif biased_exp == 254:
        bits = 0x00400000
    else:
        bits = (254 - biased_exp) << 23
    return np.array([bits], np.uint32).view(np.float32)[0]


def te_mxfp8_reference(x: np.ndarray, name: str) -> tuple[np.ndarray, np.ndarray]:
    """compute_ref rowwise: (scale codes per block of 32, element codes)."""
    f = formats.get_format(name)
    dtype = {"E4M3FN": torch.float8_e4m3fn, "E5M2": torch.float8_e5m2}[name]
    max_reciprocal = np.float32(1.0 / f.max)
    blocks = x.reshape(-1, 32)
    scales = np.empty(blocks.shape[0], np.uint8)
    scaled = np.empty(blocks.shape, np.float32)
    for b, block in enumerate(blocks):
        block_amax = np.float32(0.0)
        for v in block:
            a = np.float32(abs(v))
            block_amax = a if block_amax < a else block_amax  # std::max(block_amax, a)
        with np.errstate(over="ignore"):
            e = float_to_e8m0(np.float32(block_amax * max_reciprocal))
        scales[b] = e
        with np.errstate(over="ignore", invalid="ignore"):
            scaled[b] = block * exp2f_rcp(e)
    # static_cast<fp8>(v) saturates finite values and ±Inf to ±max (__NV_SATFINITE), NaN stays NaN:
    # clamp, then torch's round-to-nearest-even cast
    t = torch.clamp(torch.from_numpy(scaled), -f.max, f.max).to(dtype).view(torch.uint8).numpy()
    return scales.reshape(x.shape[0], -1), t.reshape(x.shape)


@pytest.mark.parametrize("kind", ["edge", "wide"])
@pytest.mark.parametrize("name", ["E4M3FN", "E5M2"])
def test_mxfp8_matches_te_reference(name: str, kind: str) -> None:
    f = formats.get_format(name)
    if kind == "wide":
        x = wide_tensor(32, rows=64, cols=256)
        labels = [f"row {i}" for i in range(x.shape[0])]
    else:
        grid = formats.decode(np.arange(f.n_codes // 2), f)
        labels, x = edge_blocks(32, f.max, grid[np.isfinite(grid)])
    want_scale, want_codes = te_mxfp8_reference(x, name)
    got = quantize_mx(x, name, 32, convention=TE)
    assert got.scale_rule.value == "rceil"  # TE's only rule, its default
    n_scale, n_codes = int(np.sum(got.scale_codes != want_scale)), int(np.sum(got.codes != want_codes))
    assert (n_scale, n_codes) == (0, 0), (
        f"{n_scale} scale and {n_codes} element mismatches; "
        + first_mismatches(labels, want_scale, got.scale_codes) + " | "
        + first_mismatches(labels, want_codes, got.codes))


def test_te_mxfp8_edges_by_hand() -> None:
    """What the rules say on four blocks, worked out by hand."""
    x = np.zeros((4, 32), np.float32)
    x[0, 0], x[0, 1] = np.nan, 1.0
    x[1, 0], x[1, 1] = np.inf, 1.0
    x[2, 0] = 2.0**-140
    x[3, 0] = 448.0 * 2.0**7
    t = quantize_mx(x, "E4M3FN", convention=TE)
    sc = t.scale_codes[:, 0].tolist()
    # NaN loses std::max: amax 1; 1 · fl32(1/448) = 0x1.24924ap-9, mantissa non-zero → 2^-8 (code 119);
    # 1 · 2^8 = 256 = E4M3 0 1111 000; NaN · 2^8 stays NaN (0x7F)
    assert sc[0] == 127 - 8 and t.codes[0, 1] == 0x78 and t.codes[0, 0] == 0x7F
    # amax Inf → 0xFE (2^127), reciprocal 2^-127: Inf → satfinite 448 (0x7E), 1 · 2^-127 → 0
    assert sc[1] == 0xFE and t.codes[1, 0] == 0x7E and t.codes[1, 1] == 0
    # 2^-140 · fl32(1/448) is a float32 subnormal with mantissa ≤ 0x400000: code 0, whose reciprocal
    # is 2^127 (TE 2.20; older exp2f_rcp returned 1): 2^-140 · 2^127 = 2^-13, below E4M3's 2^-10 → 0
    assert sc[2] == 0 and t.codes[2, 0] == 0
    # 448 · 2^7 · fl32(1/448): fl32(1/448) exceeds 1/448 by 2^-25 relative, the product rounds to
    # exactly 2^7: code 127 + 7, and the amax lands on 448 (0x7E)
    assert sc[3] == 127 + 7 and t.codes[3, 0] == 0x7E


# ------------------------------------------------------------------------------------------------
# NVFP4, after transformer_engine/pytorch/custom_recipes/reference_nvfp4.py
# ------------------------------------------------------------------------------------------------


def cast_to_fp4x2_codes(x: torch.Tensor) -> np.ndarray:
    """`cast_to_fp4x2` without its packing: E2M1 codes by comparisons, in the reference's order."""
    result = torch.zeros_like(x, dtype=torch.uint8)
    result[(x >= 0.0) & (x <= 0.25)] = 0
    result[(x > 0.25) & (x < 0.75)] = 1
    result[(x >= 0.75) & (x <= 1.25)] = 2
    result[(x > 1.25) & (x < 1.75)] = 3
    result[(x >= 1.75) & (x <= 2.5)] = 4
    result[(x > 2.5) & (x < 3.5)] = 5
    result[(x >= 3.5) & (x <= 5.0)] = 6
    result[x > 5.0] = 7
    result[(x >= -0.25) & (x < -0.0)] = 8
    result[(x < -0.25) & (x > -0.75)] = 9
    result[(x <= -0.75) & (x >= -1.25)] = 10
    result[(x < -1.25) & (x > -1.75)] = 11
    result[(x <= -1.75) & (x >= -2.5)] = 12
    result[(x < -2.5) & (x > -3.5)] = 13
    result[(x <= -3.5) & (x >= -5.0)] = 14
    result[x < -5.0] = 15
    return result.numpy()


def te_nvfp4_reference(x: np.ndarray, two_d: bool) -> tuple[np.ndarray, np.ndarray, float]:
    """`_quantize_blockwise_reference` row-wise, default path: (E4M3 scale codes per 1×16 block or
    per 16×16 tile, E2M1 codes, global decode scale)."""
    t = torch.from_numpy(x.copy())
    m, n = t.shape
    global_amax = torch.max(torch.abs(t)).to(torch.float32).view(1)
    if two_d:
        tiles = t.unfold(0, 16, 16).unfold(1, 16, 16).to(torch.float32)
        vec_max = torch.amax(torch.abs(tiles), dim=(-1, -2)).repeat_interleave(16, dim=0).unsqueeze(-1)
    else:
        vec_max = torch.amax(torch.abs(t.view(m, n // 16, 16)), dim=-1, keepdim=True).to(torch.float32)
    xb = t.view(m, n // 16, 16)
    fp4_max = torch.tensor(6.0, dtype=torch.float32)
    fp8_max = torch.tensor(448.0, dtype=torch.float32)
    flt_max = torch.tensor(FLT_MAX, dtype=torch.float32)
    global_encode_scale = torch.min(torch.div(fp8_max * fp4_max, global_amax), flt_max)
    if global_encode_scale == torch.tensor(0.0, dtype=torch.float32):
        global_encode_scale = torch.tensor(1.0, dtype=torch.float32)
    global_decode_scale = torch.div(1.0, global_encode_scale)
    multiplier = global_encode_scale * torch.reciprocal(fp4_max)
    decode_scale = torch.min(vec_max * multiplier, flt_max)
    decode_scale = torch.clamp(decode_scale, min=-fp8_max, max=fp8_max).to(torch.float8_e4m3fn)
    encode_scale = torch.min(torch.div(1.0, decode_scale.to(torch.float32) * global_decode_scale), flt_max)
    scaled = torch.clamp(xb.to(torch.float32) * encode_scale, -fp4_max, fp4_max).reshape(m, n)
    scales = decode_scale.squeeze(-1).view(torch.uint8).numpy()
    if two_d:
        scales = scales[::16]  # one scale per tile (the reference repeats it for the tile's 16 rows)
    return scales, cast_to_fp4x2_codes(scaled), float(global_decode_scale)


def nvfp4_cases() -> dict[str, tuple[list[str], np.ndarray]]:
    labels, finite = edge_blocks(16, 448.0 * 6.0, formats.decode(np.arange(8), formats.E2M1), nonfinite=False)
    keep = [i for i, lab in enumerate(labels) if lab != "one huge element"]
    nf_labels, nonfinite = edge_blocks(16, 448.0 * 6.0)
    inf_rows = [i for i, lab in enumerate(nf_labels) if "NaN" not in lab]
    wide = wide_tensor(16, rows=64, cols=256)
    return {
        "edge (finite)": ([labels[i] for i in keep], finite[keep]),
        "edge with a huge element": (labels, finite),
        "edge with +Inf and -Inf": ([nf_labels[i] for i in inf_rows], nonfinite[inf_rows]),
        "edge with NaN": (nf_labels, nonfinite),
        "zero tensor": (["zero"] * 16, np.zeros((16, 32), np.float32)),
        "wide range": ([f"row {i}" for i in range(wide.shape[0])], wide),
    }


@pytest.mark.parametrize("case", list(nvfp4_cases()))
def test_nvfp4_1x16_matches_te_reference(case: str) -> None:
    labels, x = nvfp4_cases()[case]
    want_scale, want_codes, dec = te_nvfp4_reference(x, two_d=False)
    got = quantize_nvfp4(x, convention=TE)
    assert same_float32(got.tensor_scale, dec)
    got_scale = got.scale_codes
    if case == "edge with NaN":
        # A NaN anywhere makes the global amax NaN, so every block scale is the E4M3 NaN and every
        # element code 0 (cast_to_fp4x2 matches no comparison for NaN). The sign of that NaN is not
        # TE's: in the torch reference it depends on which SIMD lane torch.min handles the block in
        # (full vectors OR an all-ones mask into the result, the scalar tail keeps 0x7FC00000), so
        # here both sides' NaN codes are compared without their sign bit.
        assert ((got_scale & 0x7F) == 0x7F).all() and (got.codes == 0).all()
        want_scale, got_scale = want_scale & 0x7F, got_scale & 0x7F
    n_scale, n_codes = int(np.sum(got_scale != want_scale)), int(np.sum(got.codes != want_codes))
    assert (n_scale, n_codes) == (0, 0), (
        f"{n_scale} scale and {n_codes} element mismatches; "
        + first_mismatches(labels, want_scale, got_scale) + " | "
        + first_mismatches(labels, want_codes, got.codes))


@pytest.mark.parametrize("case", ["wide range", "edge (finite)"])
def test_nvfp4_16x16_matches_te_reference(case: str) -> None:
    _, x = nvfp4_cases()[case]
    x = x[: x.shape[0] // 16 * 16]
    want_scale, want_codes, dec = te_nvfp4_reference(x, two_d=True)
    got = quantize_nvfp4(x, block_2d=True, convention=TE)
    assert same_float32(got.tensor_scale, dec)
    np.testing.assert_array_equal(got.scale_codes, want_scale)
    np.testing.assert_array_equal(got.codes, want_codes)


def test_te_nvfp4_zero_scale_block_saturates_codes() -> None:
    """The issue's observation: a block whose scale rounds to zero gets ±6 codes (the encode scale is
    capped at FLT_MAX, not zeroed) and still dequantizes to 0; ocp gives it zero codes."""
    x = np.zeros((1, 32), np.float32)
    x[0, 0] = 2688.0  # tensor amax: global encode scale 1
    x[0, 16:32] = np.float32(1e-4) * np.array([1, -1] * 8, np.float32)  # 1e-4/6 → E4M3 0
    te, ocp = quantize_nvfp4(x, convention=TE), quantize_nvfp4(x)
    assert te.scale_codes[0, 1] == 0 and ocp.scale_codes[0, 1] == 0
    assert te.codes[0, 16:32].tolist() == [0x7, 0xF] * 8  # ±6
    assert (ocp.codes[0, 16:32] == 0).all()
    assert (te.dequantize()[0, 16:32] == 0).all()
