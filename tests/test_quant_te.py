"""The quant wing's Transformer Engine and DeepSeek recipes against those implementations' published
rules, transcribed here with torch float32 operations (so the roundings are torch's, not ours; TE and
DeepGEMM need CUDA and cannot be installed here):

FP8 blockwise (`fp8_1x128`, `fp8_128x128`, `_pow2`) — Transformer Engine
  `tests/pytorch/references/blockwise_quantizer_reference.py` (`BlockwiseQuantizerReference`:
  zero-padded tiles, amax per tile in the input dtype then float, x · scale, clamp ±448, cast to
  float8_e4m3fn) with `tests/pytorch/references/quantize_scale_calc.py` (`scale_from_amax_tensor`,
  eps 0: scale = 448 / amax, Inf → the input dtype's max, power of two by frexp's exponent − 1, an Inf
  amax → 0, amax 0 → 1, scale_inv = 1 / scale).
FP8 with UE8M0 / FP32 scales under `@deepseek` — DeepGEMM `deep_gemm/utils/math.py`
  (`per_token_cast_to_fp8`, `per_block_cast_to_fp8`: amax.clamp(1e-4) / 448, `ceil_to_ue8m0`: the
  float32 exponent field plus one where the mantissa is non-zero, clamped to [1, 254]; elements
  x · (1 / sf) cast to float8_e4m3fn).
NVFP4 variants — `transformer_engine/pytorch/custom_recipes/reference_nvfp4.py`, `NVFP4QuantizerRef`:
  `nvfp4_use_4over6=True` (`_quantize_blockwise_4over6_reference`, MAE, not fast-math, e4m3 max 448),
  `row_scaled_nvfp4=True` (a global amax per row), `with_rht=True` (`_build_hadamard_matrix` with
  `get_wgrad_sign_vector`, `_apply_rht`: x @ (H / 4) in the operand's dtype, on the column-wise input;
  the global amax of the transformed operand).

Codes are compared as unsigned integers. Where a block's scale is NaN, the sign of the NaN code is not
pinned (torch's amax reduction decides it by SIMD lane), so NaN codes are compared without it.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from lowprec.simulations import quant
from tests.block_oracles import edge_blocks, step, wide_tensor

torch = pytest.importorskip("torch")

F32 = np.float32
FLT_MAX = float(np.finfo(np.float32).max)
TE_SIGNS = [1.0, 1.0, 1.0, -1.0, 1.0, -1.0, -1.0, -1.0, -1.0, -1.0, -1.0, 1.0, -1.0, 1.0, -1.0, -1.0]


def to_torch(x: np.ndarray) -> torch.Tensor:
    if x.dtype == ml_dtypes.bfloat16:
        return torch.from_numpy(x.view(np.int16).copy()).view(torch.bfloat16)
    return torch.from_numpy(np.ascontiguousarray(x).copy())


def same_codes(want: np.ndarray, got: np.ndarray, nan_code: int = 0x7F) -> None:
    """Equal as unsigned bytes; at NaN codes (both sides) the sign bit is not compared."""
    want, got = np.asarray(want, np.uint8), np.asarray(got, np.uint8)
    nan = (want & 0x7F) == nan_code
    assert np.array_equal(nan, (got & 0x7F) == nan_code), "NaN codes in different places"
    bad = (want != got) & ~nan
    assert not bad.any(), (f"{int(bad.sum())} codes differ; first at {np.argwhere(bad)[:3].tolist()}: "
                           f"want {want[bad][:5].tolist()} got {got[bad][:5].tolist()}")


def same_float32(want: np.ndarray, got: np.ndarray) -> None:
    w, g = np.asarray(want, np.float32), np.asarray(got, np.float32)
    assert w.shape == g.shape
    nan = np.isnan(w)
    assert np.array_equal(nan, np.isnan(g))
    assert np.array_equal(w[~nan].view(np.uint32), g[~nan].view(np.uint32))


# ------------------------------------------------------------------------------------------------
# FP8 blockwise: Transformer Engine's reference
# ------------------------------------------------------------------------------------------------


def te_blockwise(x: np.ndarray, tile: tuple[int, int], pow2: bool) -> tuple[np.ndarray, np.ndarray]:
    """(E4M3 codes, scale_inv per tile) as BlockwiseQuantizerReference computes them (eps 0)."""
    t = to_torch(x)
    m, k = t.shape
    r, c = tile
    pm, pk = (-m) % r, (-k) % c
    if pm or pk:
        t = torch.nn.functional.pad(t, (0, pk, 0, pm), mode="constant", value=0)
    mm, kk = t.shape
    tiles = t.reshape(mm // r, r, kk // c, c)
    amax = torch.abs(tiles.transpose(-3, -2)).reshape(mm // r, kk // c, r * c).amax(dim=-1).float()
    amax = torch.max(amax, torch.tensor(0.0))
    scale = torch.div(448.0, amax)
    scale = torch.where(scale == torch.inf, torch.finfo(t.dtype).max, scale)
    if pow2:
        _, e = torch.frexp(scale)
        scale = torch.ldexp(torch.ones_like(scale), e - 1)
        scale = torch.where(amax == float("inf"), 0.0, scale)
    scale = torch.where(amax == 0, 1.0, scale)
    scale_inv = torch.reciprocal(scale)
    q = tiles * scale.reshape(mm // r, 1, kk // c, 1)
    q = torch.clamp(q, min=-448.0, max=448.0).to(torch.float8_e4m3fn).reshape(mm, kk)[:m, :k]
    return q.contiguous().view(torch.uint8).numpy(), scale_inv.numpy()


def fp8_cases() -> dict[str, np.ndarray]:
    """Matrices with partial tiles, zero tiles, tiny and huge amaxes, Inf and NaN tiles."""
    rng = np.random.default_rng(4)
    wide = wide_tensor(128, rows=256, cols=384)
    edge_labels, edge = edge_blocks(128, 448.0, nonfinite=False)
    nf_labels, nonfinite = edge_blocks(128, 448.0)
    partial = (rng.standard_normal((200, 300)) * np.exp2(rng.uniform(-20, 20, size=(200, 1)))).astype(F32)
    partial[130:, 256:] = 0.0  # a zero tile at the corner (partial, 70 × 44)
    tiny = np.full((3, 130), F32(1e-40))  # 448 / amax overflows float32: the scale is FLT_MAX
    tiny[1] = F32(2.0**-126)
    tiny[2, :5] = step(2.0**-120, 1)
    huge = np.full((2, 128), F32(3e38))
    huge[1, 1:] = 1.0
    return {"wide": wide, "edge": edge, "edge with Inf and NaN": nonfinite, "partial tiles": partial,
            "tiny amax": tiny, "huge amax": huge, "zero": np.zeros((129, 257), F32)}


@pytest.mark.parametrize("pow2", [False, True], ids=["fp32", "pow2"])
@pytest.mark.parametrize("tile", [(1, 128), (128, 128)], ids=["1x128", "128x128"])
@pytest.mark.parametrize("case", list(fp8_cases()))
def test_fp8_tiles_match_te_reference(case: str, tile: tuple[int, int], pow2: bool) -> None:
    x = fp8_cases()[case]
    name = f"fp8_{tile[0]}x{tile[1]}" + ("_pow2" if pow2 else "")
    want_codes, want_inv = te_blockwise(x, tile, pow2)
    got = quant.quantize(x, name)
    assert got.convention == "transformer_engine" and got.scale_codes is None
    same_codes(want_codes, got.codes)
    same_float32(want_inv, got.scales)
    # TE dequantizes as the E4M3 value times scale_inv, in float32
    deq = (torch.from_numpy(want_codes).view(torch.float8_e4m3fn).float()
           * torch.from_numpy(np.repeat(np.repeat(want_inv, tile[0], 0), tile[1], 1)[:x.shape[0], :x.shape[1]]))
    same_float32(deq.numpy(), got.dequantize())


@pytest.mark.parametrize("name", ["fp8_1x128", "fp8_128x128_pow2"])
def test_fp8_tiles_bf16_input_match_te_reference(name: str) -> None:
    """bf16 operands: the amax in bf16, the product promoted to float32, the Inf rule at bf16's max."""
    rng = np.random.default_rng(7)
    x = (rng.standard_normal((130, 260)) * 3).astype(ml_dtypes.bfloat16)
    x[5, :128] = np.asarray(1e-39, ml_dtypes.bfloat16)  # bf16 subnormal amax: 448 / amax is +Inf
    tile = (1, 128) if "1x128" in name else (128, 128)
    want_codes, want_inv = te_blockwise(x, tile, "pow2" in name)
    got = quant.quantize(x, name)
    same_codes(want_codes, got.codes)
    same_float32(want_inv, got.scales)
    if tile == (1, 128):  # the row of bf16 subnormals: scale = bf16's largest value, not FLT_MAX
        assert got.scales[5, 0] == np.float32(1.0) / np.float32(ml_dtypes.finfo(ml_dtypes.bfloat16).max)


def test_fp8_tile_scales_by_hand() -> None:
    """The TE rules on four 1×128 tiles, worked out by hand."""
    x = np.zeros((4, 128), F32)
    x[0, 0] = 957.0  # 448 / 957 = 0.46813…: fp32 keeps it, pow2 rounds it down to 2^-2
    x[1, 0] = np.inf  # Inf amax: scale 0, so the Inf element is NaN and the rest ±0
    x[1, 1] = -1.0
    x[2, 0] = np.nan  # NaN amax: fp32 scale NaN; pow2: frexp(NaN) has exponent 0, so the scale is 1/2
    x[2, 1] = 3.0
    x[3, 0] = 448.0  # amax 448: scale exactly 1 (both)
    fp32, pow2 = quant.quantize(x, "fp8_1x128"), quant.quantize(x, "fp8_1x128_pow2")
    assert fp32.scales[0, 0] == np.float32(1.0) / (np.float32(448.0) / np.float32(957.0))
    assert pow2.scales[0, 0] == 4.0  # scale_inv of 2^-2
    assert pow2.codes[0, 0] == 0x77  # 957 / 4 = 239.25 → E4M3 240 = 0 1110 111
    assert fp32.scales[1, 0] == np.inf and pow2.scales[1, 0] == np.inf  # 1 / 0
    assert (fp32.codes[1, 0] & 0x7F) == 0x7F and fp32.codes[1, 1] == 0x80  # NaN; −1 · 0 = −0
    assert np.isnan(fp32.scales[2, 0]) and pow2.scales[2, 0] == 2.0
    assert pow2.codes[2, 1] == 0x3C  # 3 · 1/2 = 1.5 = 0 0111 100
    assert fp32.scales[3, 0] == 1.0 and pow2.scales[3, 0] == 1.0 and fp32.codes[3, 0] == 0x7E


# ------------------------------------------------------------------------------------------------
# FP8 blockwise: DeepGEMM's casts
# ------------------------------------------------------------------------------------------------


def ceil_to_ue8m0(sf: torch.Tensor) -> torch.Tensor:
    bits = sf.abs().float().view(torch.int32)
    exp = ((bits >> 23) & 0xFF) + (bits & 0x7FFFFF).bool().int()
    return (exp.clamp(1, 254) << 23).view(torch.float32)


def deepgemm_cast(x: np.ndarray, tile: tuple[int, int], ue8m0: bool) -> tuple[np.ndarray, np.ndarray]:
    """(E4M3 codes, decode scale per tile) as per_token_cast_to_fp8 / per_block_cast_to_fp8."""
    t = to_torch(x)
    m, k = t.shape
    r, c = tile
    mm, kk = m + (-m) % r, k + (-k) % c
    padded = torch.zeros((mm, kk), dtype=t.dtype)
    padded[:m, :k] = t
    view = padded.view(mm // r, r, kk // c, c)
    amax = view.abs().float().amax(dim=(1, 3), keepdim=True).clamp(1e-4)
    sf = amax / 448.0
    if ue8m0:
        sf = ceil_to_ue8m0(sf)
    q = (view * (1.0 / sf)).to(torch.float8_e4m3fn).reshape(mm, kk)[:m, :k]
    return q.contiguous().view(torch.uint8).numpy(), sf.reshape(mm // r, kk // c).numpy()


@pytest.mark.parametrize("ue8m0", [False, True], ids=["fp32", "ue8m0"])
@pytest.mark.parametrize("tile", [(1, 128), (128, 128)], ids=["1x128", "128x128"])
@pytest.mark.parametrize("case", list(fp8_cases()))
def test_fp8_tiles_match_deepgemm(case: str, tile: tuple[int, int], ue8m0: bool) -> None:
    x = fp8_cases()[case]
    name = f"fp8_{tile[0]}x{tile[1]}" + ("_ue8m0" if ue8m0 else "@deepseek")
    want_codes, want_sf = deepgemm_cast(x, tile, ue8m0)
    got = quant.quantize(x, name)
    assert got.convention == "deepseek"
    same_codes(want_codes, got.codes)
    same_float32(want_sf, got.scales)
    if ue8m0:  # the UE8M0 code is the scale's float32 exponent field
        np.testing.assert_array_equal(got.scale_codes, (want_sf.view(np.uint32) >> 23).astype(np.uint8))
        assert got.bits_per_element == 8 + 8 * got.scales.size / x.size


def test_ue8m0_rounds_up_and_fp32_does_not() -> None:
    """amax 957: 957 / 448 = 2.136… is the FP32 decode scale; UE8M0 rounds it up to 4 (never clips)."""
    x = np.zeros((1, 128), F32)
    x[0, :2] = [957.0, 1e-3]
    fp32, ue = quant.quantize(x, "fp8_1x128@deepseek"), quant.quantize(x, "fp8_1x128_ue8m0")
    assert fp32.scales[0, 0] == np.float32(957.0) / np.float32(448.0)
    assert ue.scales[0, 0] == 4.0 and ue.scale_codes[0, 0] == 127 + 2
    assert ue.dequantize()[0, 0] == 960.0  # 957 / 4 = 239.25 → 240, × 4


# ------------------------------------------------------------------------------------------------
# NVFP4: Transformer Engine's variants
# ------------------------------------------------------------------------------------------------


def cast_to_fp4(x: torch.Tensor) -> torch.Tensor:
    """`cast_to_fp4x2`'s comparisons, unpacked: E2M1 codes (ties to even; −0 and NaN → code 0)."""
    c = torch.zeros_like(x, dtype=torch.uint8)
    c[(x >= 0.0) & (x <= 0.25)] = 0
    c[(x > 0.25) & (x < 0.75)] = 1
    c[(x >= 0.75) & (x <= 1.25)] = 2
    c[(x > 1.25) & (x < 1.75)] = 3
    c[(x >= 1.75) & (x <= 2.5)] = 4
    c[(x > 2.5) & (x < 3.5)] = 5
    c[(x >= 3.5) & (x <= 5.0)] = 6
    c[x > 5.0] = 7
    c[(x >= -0.25) & (x < -0.0)] = 8
    c[(x < -0.25) & (x > -0.75)] = 9
    c[(x <= -0.75) & (x >= -1.25)] = 10
    c[(x < -1.25) & (x > -1.75)] = 11
    c[(x <= -1.75) & (x >= -2.5)] = 12
    c[(x < -2.5) & (x > -3.5)] = 13
    c[(x <= -3.5) & (x >= -5.0)] = 14
    c[x < -5.0] = 15
    return c


def fp4_values(code: torch.Tensor) -> torch.Tensor:
    table = torch.tensor([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0])
    return table[code.long()]


def te_nvfp4(x: np.ndarray, *, four_over_six: bool = False, row_scaled: bool = False
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(E4M3 scale codes per 1×16 block, E2M1 codes, global decode scale(s)) of the row-wise path."""
    t = to_torch(x).float() if x.dtype == ml_dtypes.bfloat16 else to_torch(x)
    m, n = t.shape
    xb = t.view(m, n // 16, 16)
    vec_max = torch.amax(torch.abs(xb), dim=-1, keepdim=True).float()
    fp4_max, fp8_max = torch.tensor(6.0), torch.tensor(448.0)
    flt_max = torch.tensor(FLT_MAX)
    if row_scaled:
        global_amax = torch.max(torch.abs(t), dim=1).values.float().view(m, 1, 1)
    else:
        global_amax = torch.max(torch.abs(t)).float().view(1)
    enc = torch.min(torch.div(fp8_max * fp4_max, global_amax), flt_max)
    enc = torch.where(enc == 0.0, torch.ones_like(enc), enc)
    dec = torch.div(1.0, enc)
    if four_over_six:
        base = torch.div(vec_max, fp4_max) * enc
        picks = []
        for cand in (base * 1.5, base):
            s = torch.clamp(cand, min=-fp8_max, max=fp8_max).to(torch.float8_e4m3fn)
            e = torch.min(torch.div(1.0, s.float() * dec), flt_max)
            codes = cast_to_fp4(torch.clamp(xb * e, -fp4_max, fp4_max))
            vals = fp4_values(codes)
            err = torch.zeros_like(vec_max)
            sf = s.float().squeeze(-1)
            for i in range(16):
                v = ((vals[:, :, i] * sf) * global_amax) / (fp4_max * fp8_max)
                err = err + torch.abs(v - xb[:, :, i]).unsqueeze(-1)
            picks.append((s, codes, err))
        (s4, c4, e4), (s6, c6, e6) = picks
        take4 = e4 < e6
        scale = torch.where(take4, s4, s6)
        codes = torch.where(take4.expand(-1, -1, 16), c4, c6)
    else:
        mult = enc * torch.reciprocal(fp4_max)
        scale = torch.clamp(torch.min(vec_max * mult, flt_max), min=-fp8_max, max=fp8_max).to(torch.float8_e4m3fn)
        e = torch.min(torch.div(1.0, scale.float() * dec), flt_max)
        codes = cast_to_fp4(torch.clamp(xb * e, -fp4_max, fp4_max))
    return (scale.squeeze(-1).view(torch.uint8).numpy(), codes.reshape(m, n).numpy(), dec.reshape(-1).numpy())


def nvfp4_cases() -> dict[str, np.ndarray]:
    labels, finite = edge_blocks(16, 448.0 * 6.0, nonfinite=False)
    keep = [i for i, lab in enumerate(labels) if lab != "one huge element"]
    rng = np.random.default_rng(2)
    x = (rng.standard_normal((48, 64)) * np.exp2(rng.uniform(-6, 6, size=(48, 1)))).astype(F32)
    x[3, 5], x[9, :16] = 300.0, 0.0
    return {"edge (finite)": finite[keep], "wide range": wide_tensor(16, rows=64, cols=128),
            "rows of different magnitude": x}


@pytest.mark.parametrize("case", list(nvfp4_cases()))
def test_nvfp4_4over6_matches_te_reference(case: str) -> None:
    x = nvfp4_cases()[case]
    want_scale, want_codes, dec = te_nvfp4(x, four_over_six=True)
    got = quant.quantize(x, "nvfp4_4over6")
    np.testing.assert_array_equal(got.scale_codes, want_scale)
    np.testing.assert_array_equal(got.codes, want_codes)
    assert np.float32(got.tensor_scale) == dec[0]


def test_nvfp4_4over6_tie_keeps_map_to_6() -> None:
    """Blocks both candidates store exactly: equal errors (0), and TE keeps map-to-6. With a block at
    2688 the global encode scale is 1; a constant block of 6 gets s6 = 1 (6 → code 6) or s4 = 1.5
    (6 / 1.5 = 4 → code 6 too, value 4): both exact."""
    x = np.zeros((1, 64), F32)
    x[0, :16] = 2688.0
    x[0, 16:32] = 6.0
    x[0, 32:48] = 3.0  # s6 = 0.5, s4 = 0.75: 3 / 0.75 = 4, exact as well
    x[0, 48:] = [6.0, 4.0] * 8  # s6 = 1 stores 4 exactly; s4 = 1.5 stores 6 but not 4 (4 / 1.5 → 3 → 4.5)
    want_scale, want_codes, _ = te_nvfp4(x, four_over_six=True)
    got = quant.quantize(x, "nvfp4_4over6")
    np.testing.assert_array_equal(got.scale_codes, want_scale)
    e4m3 = {1.0: 0x38, 0.5: 0x30}
    assert got.scale_codes[0, 1:].tolist() == [e4m3[1.0], e4m3[0.5], e4m3[1.0]]  # map-to-6 kept on the ties
    np.testing.assert_array_equal(got.codes, want_codes)


def test_nvfp4_4over6_picks_the_smaller_error() -> None:
    """An independent reading of the rule: per block, map-to-4 is kept exactly where its absolute
    error (computed here in float64 from the decoded values) is smaller than map-to-6's, up to
    float32 rounding of TE's error sums (only near-ties can differ)."""
    x = wide_tensor(16, rows=64, cols=128)
    got = quant.quantize(x, "nvfp4_4over6")
    plain = quant.quantize(x, "nvfp4@transformer_engine")
    err46 = np.abs(got.dequantize().astype(np.float64) - x).reshape(-1, 16).sum(axis=1)
    err6 = np.abs(plain.dequantize().astype(np.float64) - x).reshape(-1, 16).sum(axis=1)
    changed = got.scale_codes.reshape(-1) != plain.scale_codes.reshape(-1)
    assert changed.any() and (~changed).any()
    # where 4over6 moved a block to map-to-4, that block's error did not grow (float32 tolerance)
    assert np.all(err46[changed] <= err6[changed] * (1 + 1e-5) + 1e-30)
    assert got.bits_per_element == plain.bits_per_element  # the choice costs no bits


@pytest.mark.parametrize("case", list(nvfp4_cases()))
def test_nvfp4_rowscaled_matches_te_reference(case: str) -> None:
    x = nvfp4_cases()[case]
    want_scale, want_codes, dec = te_nvfp4(x, row_scaled=True)
    got = quant.quantize(x, "nvfp4_rowscaled")
    np.testing.assert_array_equal(got.scale_codes, want_scale)
    np.testing.assert_array_equal(got.codes, want_codes)
    same_float32(dec, got.tensor_scale)
    assert got.bits_per_element == pytest.approx(4.5 + 32 / x.shape[1], rel=1e-15)


def test_rowscaled_rows_do_not_see_each_other() -> None:
    """A row's codes depend on that row only: scaling another row changes nothing in it."""
    x = nvfp4_cases()["rows of different magnitude"].copy()
    a = quant.quantize(x, "nvfp4_rowscaled")
    x[7] *= 1000
    b = quant.quantize(x, "nvfp4_rowscaled")
    keep = np.arange(x.shape[0]) != 7
    np.testing.assert_array_equal(a.codes[keep], b.codes[keep])
    np.testing.assert_array_equal(a.scale_codes[keep], b.scale_codes[keep])


# ------------------------------------------------------------------------------------------------
# NVFP4 + RHT: Transformer Engine's transform on the operand it is given
# ------------------------------------------------------------------------------------------------


def te_rht(x: torch.Tensor) -> torch.Tensor:
    """`_apply_rht`: x_mat @ (diag(signs) · S_16 · 1/4), in x's dtype."""
    h = torch.ones((1, 1))
    while h.shape[0] < 16:
        h = torch.cat([torch.cat([h, h], dim=1), torch.cat([h, -h], dim=1)], dim=0)
    h = (torch.tensor(TE_SIGNS) * torch.eye(16)) @ h
    h = h.to(x.dtype)
    return (x.contiguous().view(-1, 16) @ (h * (1.0 / 16**0.5))).view(x.shape)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_nvfp4_rht_matches_te_reference(dtype: str) -> None:
    rng = np.random.default_rng(11)
    x = rng.standard_normal((32, 128)) * np.exp2(rng.uniform(-3, 3, size=(32, 1)))
    x[np.arange(32), rng.integers(0, 128, 32)] = 40.0  # one outlier per row
    x = x.astype(ml_dtypes.bfloat16 if dtype == "bfloat16" else F32)
    transformed = te_rht(to_torch(x))
    operand = transformed.float().numpy() if dtype == "bfloat16" else transformed.numpy()
    want_scale, want_codes, dec = te_nvfp4(operand)
    got = quant.quantize(x, "nvfp4_rht@transformer_engine")
    assert got.operand is not None
    # the transformed operand itself, in the operand's dtype
    same_float32(operand, got.operand)
    np.testing.assert_array_equal(got.scale_codes, want_scale)
    np.testing.assert_array_equal(got.codes, want_codes)
    assert np.float32(got.tensor_scale) == dec[0]  # the global amax is the transformed operand's


def test_te_rht_constant_block_crest_factor_is_two() -> None:
    """16 equal values: TE's signs give crest factor 2 (|d · S_j| ≤ 8 over the columns j); with the
    signs on the outputs (the old matrix) or no signs it is 4 (column 0 sums all sixteen)."""
    from lowprec.simulations.quant.rht import block_crest_factor, rht_matrix, sylvester

    x = np.full((1, 16), 3.0, F32)
    h_te = rht_matrix("transformer_engine")
    assert block_crest_factor(x @ h_te)[0] == pytest.approx(2.0, rel=1e-15)
    s = sylvester(16) / 4
    outputs_signed = s * np.array(TE_SIGNS)[None, :]  # the sign vector applied to the outputs instead
    assert block_crest_factor(x @ outputs_signed)[0] == pytest.approx(4.0, rel=1e-15)
    assert block_crest_factor(x @ s)[0] == pytest.approx(4.0, rel=1e-15)
    # TE's own matrix, built in torch as the reference builds it, agrees entry for entry
    t = te_rht(torch.eye(16, dtype=torch.float64)).numpy()
    np.testing.assert_array_equal(t, h_te)
