"""The quant wing (`lowprec.simulations.quant`): the registry's records, the one quantizer's contract
for every recipe, MXINT8 against gfloat 0.5.2 and microxcaling's published arithmetic (transcribed in
torch), the random Hadamard transform (signs on the inputs, orthogonality, exact inverse), and the
transposed view of FP8 1×128 tiles. Codes are compared as unsigned integers, values as float32 bits."""

from __future__ import annotations

import dataclasses

import ml_dtypes
import numpy as np
import pytest

from lowprec import formats, strictjson
from lowprec.simulations import quant
from lowprec.simulations.quant import Scheme
from lowprec.simulations.quant.conventions import FP8TileScale, MXIntScale
from lowprec.simulations.quant.rht import (
    RHT_CONVENTIONS,
    TE_WGRAD_SIGNS,
    apply_blockwise,
    apply_rht,
    inverse_rht,
    random_hadamard,
    rht_matrix,
    sylvester,
)
from tests.block_oracles import edge_blocks, step, wide_tensor

F32 = np.float32
NEW = ("fp8_1x128", "fp8_128x128", "fp8_1x128_pow2", "fp8_128x128_pow2", "fp8_1x128_ue8m0", "fp8_128x128_ue8m0",
       "mxint8", "nvfp4_4over6", "nvfp4_rowscaled")


def tensor(rows: int = 64, cols: int = 256, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return (rng.standard_t(3, size=(rows, cols)) * np.exp2(rng.uniform(-4, 4, size=(rows, 1)))).astype(F32)


# ------------------------------------------------------------------------------------------------
# the registry
# ------------------------------------------------------------------------------------------------


def test_registry_records() -> None:
    assert set(NEW) <= set(quant.RECIPES)
    for name, r in quant.RECIPES.items():
        assert r.name == name and r.description and r.source, name
        assert r.conventions[0] == r.convention and r.unsupported(r.convention) is None
        d = strictjson.loads(strictjson.dumps(r.to_dict()))
        assert d["name"] == name and d["scheme"] == r.scheme.value
        with pytest.raises(dataclasses.FrozenInstanceError, match="cannot assign to field 'name'"):
            r.name = "x"  # type: ignore[misc]
    assert quant.get_recipe("fp8_1x128").convention == "transformer_engine"
    assert quant.get_recipe("FP8_1X128@DeepSeek").name == "fp8_1x128@deepseek"
    assert quant.get_recipe("fp8_1x128_ue8m0").conventions == ("deepseek",)
    assert quant.get_recipe("mxint8").conventions == ("ocp", "microxcaling")
    assert quant.get_recipe("nvfp4_rht@transformer_engine").rht_convention == "transformer_engine"
    assert quant.get_recipe("nvfp4_rht").rht_convention == "seeded"


@pytest.mark.parametrize("spec, match", [
    ("fp8_1x128@ocp", r"the ocp convention has no FP8 blockwise tiles"),
    ("fp8_1x128_pow2@deepseek", r"the deepseek convention's FP8 tiles store FP32 or E8M0 scales, not POW2_FP32"),
    ("mxint8@torchao", r"the torchao convention has no MXINT8"),
    ("nvfp4_4over6@ocp", r"the ocp convention has no NVFP4 variant '4over6'"),
    ("mxfp8_e4m3@deepseek", r"the deepseek convention has no MX blocks"),
    ("nvfp4@microxcaling", r"the microxcaling convention has no NVFP4"),
    ("fp9", r"unknown recipe 'fp9'; known: bf16, fp16"),
    ("nvfp4@cuda", r"unknown block convention 'cuda'"),
])
def test_refusals_name_what_is_allowed(spec: str, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        quant.get_recipe(spec)


def test_ue5m3_is_declared_but_refused_with_a_reason() -> None:
    sf = quant.ScaleFormat.parse("float8_e5m3fnu")
    assert sf is quant.ScaleFormat.UE5M3 and sf.bits == 8
    try:
        fmt = sf.storage_format()
    except ValueError as exc:  # `formats` lacks the dtype on this build
        assert "UE5M3" in str(exc) and "float8_e5m3fnu" in str(exc)
    else:
        assert fmt is not None and fmt.bits == 8


def test_new_rule_enums_carry_their_formulas() -> None:
    for enum in (FP8TileScale, MXIntScale, Scheme, quant.ScaleFormat):
        doc = enum.__doc__ or ""
        for member in enum:
            assert f"{member.name}:" in doc, f"{enum.__name__}.{member.name} has no formula"


def test_bits_per_element_of_the_new_recipes() -> None:
    shape = (256, 384)  # 384 = 3 × 128: no partial tiles
    n = 256 * 384
    want = {"fp8_1x128": 8 + 32 / 128, "fp8_128x128": 8 + 32 / 128**2, "fp8_1x128_pow2": 8 + 32 / 128,
            "fp8_1x128_ue8m0": 8 + 8 / 128, "fp8_128x128_ue8m0": 8 + 8 / 128**2, "mxint8": 8 + 8 / 32,
            "nvfp4_4over6": 4 + 8 / 16 + 32 / n, "nvfp4_rowscaled": 4 + 8 / 16 + 32 / 384}
    for name, bits in want.items():
        assert quant.RECIPES[name].bits_per_element(shape) == pytest.approx(bits, rel=1e-15), name
    # a partial tile stores a whole scale: 200 × 300 has 2 × 3 tiles of 128 × 128
    assert quant.RECIPES["fp8_128x128"].bits_per_element((200, 300)) == pytest.approx(8 + 32 * 6 / 60000, rel=1e-15)
    assert quant.RECIPES["fp8_1x128"].check((3, 5)) is None  # partial tiles apply
    assert quant.RECIPES["mxint8"].check((3, 48)) == "blocks of 32 do not divide the last axis (48)"


# ------------------------------------------------------------------------------------------------
# the quantizer's contract, every recipe
# ------------------------------------------------------------------------------------------------


def _grid_shape(r: quant.Recipe, shape: tuple[int, int]) -> tuple[int, ...]:
    rows, cols = shape
    g = r.granularity
    if r.scheme is Scheme.CAST:
        return ()
    br, bc = r.block
    if (br, bc) == (0, 0):
        return {"tensor": (), "row": (rows,), "column": (cols,)}[g]
    return (-(-rows // br) if br > 1 else rows, -(-cols // bc))


@pytest.mark.parametrize("name", list(quant.RECIPES))
def test_every_recipe_keeps_the_contract(name: str) -> None:
    r = quant.RECIPES[name]
    x = tensor()
    q = quant.quantize(x, name)
    assert q.codes.shape == x.shape and q.codes.dtype.kind == "u"
    assert q.recipe is r or q.recipe == r
    if r.scheme is Scheme.CAST:
        assert q.scales is None and q.scale_codes is None and q.tensor_scale is None
    else:
        assert q.scales is not None and q.scales.shape == _grid_shape(r, x.shape)
        assert q.scales.dtype == (np.float64 if r.scheme is Scheme.SCALED else np.float32)
        low = r.scale_format not in (quant.ScaleFormat.FP32, quant.ScaleFormat.POW2_FP32)
        assert (q.scale_codes is not None) == low
        if low:
            assert q.scale_codes.shape == q.scales.shape
            sf = r.scale_format.storage_format()
            assert sf is not None
            # the stored decode scale is the scale code decoded (MXINT8: before the element's 2^-6)
            same = formats.decode(q.scale_codes, sf).astype(np.float64)
            np.testing.assert_array_equal(same, q.scales.astype(np.float64))
        assert (q.tensor_scale is not None) == (r.second_level is not None)
    # dequantize() is the decoded code times the element's decode scale (a stated property, the
    # element values decoded by ml_dtypes-checked `formats.decode`), rounded to the input's dtype
    decoded = formats.decode(q.codes, r.fmt).astype(np.float64) * q.element_scales()
    want = decoded if r.scheme is Scheme.SCALED else decoded.astype(F32)
    got = q.dequantize()
    assert np.array_equal(np.asarray(got, want.dtype).view(np.uint8), want.view(np.uint8))
    # the error is that of the element format at its block's scale (finite data, no saturation here)
    err = np.abs(q.restore() - x.astype(np.float64))
    rel = float(np.sqrt((err**2).sum() / (x.astype(np.float64) ** 2).sum()))
    bound = {4: 0.35, 6: 0.1, 8: 0.08, 16: 0.005}[r.fmt.bits] if r.fmt.name != "INT4" else 0.35
    assert rel < bound, (name, rel)
    strictjson.loads(strictjson.dumps(q.to_dict()))


@pytest.mark.parametrize("name", ["mxfp8_e4m3", "mxfp4", "nvfp4", "nvfp4_16x16", "int4_g32", "e4m3_row", "bf16"])
def test_quantize_is_the_old_entry_points(name: str) -> None:
    """The MX, NVFP4, scaled and cast recipes run the bit-exact quantizers the oracle tests check
    (test_blocks, test_torchao_blocks, test_te_reference, test_scaling): the same codes."""
    from lowprec.simulations.mx import quantize_mx
    from lowprec.simulations.nvfp4 import quantize_nvfp4
    from lowprec.simulations.scaling import quantize_scaled

    x = tensor(32, 128)
    r = quant.RECIPES[name]
    got = quant.quantize(x, name).codes
    if r.scheme is Scheme.MX:
        want = quantize_mx(x, r.element, 32).codes
    elif r.scheme is Scheme.NVFP4:
        want = quantize_nvfp4(x, block_2d=r.block_2d).codes
    elif r.scheme is Scheme.SCALED:
        want = quantize_scaled(x, r.element, r.granularity, scale_format=r.scale_format.storage_format()
                               if r.scale_format is not quant.ScaleFormat.FP32 else None).codes
    else:
        want = formats.encode(x, r.fmt, formats.policy_for("torch", r.fmt))
    np.testing.assert_array_equal(got, want)


def test_stochastic_rounding_is_a_record_field() -> None:
    x = tensor(16, 64)
    sr = quant.get_recipe("mxfp4").with_rounding("stochastic")
    a = quant.quantize(x, sr, rng=np.random.default_rng(5))
    b = quant.quantize(x, sr, rng=np.random.default_rng(5))
    np.testing.assert_array_equal(a.codes, b.codes)  # reproducible for its seed
    assert not np.array_equal(a.codes, quant.quantize(x, "mxfp4").codes)
    with pytest.raises(ValueError, match="rounds stochastically: pass rng"):
        quant.quantize(x, sr)
    with pytest.raises(ValueError, match="stochastic rounding is available under the ocp convention"):
        quant.get_recipe("mxfp8_e4m3@transformer_engine").with_rounding("stochastic")


def test_n_d_tensors_use_the_matrix_view() -> None:
    x = tensor(24, 256).reshape(2, 12, 256)
    q = quant.quantize(x, "fp8_1x128")
    assert q.codes.shape == x.shape and q.scales.shape == (2, 12, 2)
    flat = quant.quantize(x.reshape(24, 256), "fp8_1x128")
    np.testing.assert_array_equal(q.codes.reshape(24, 256), flat.codes)
    t = quant.quantize(x, "fp8_128x128")
    assert t.scales.shape == (1, 2)  # 24 rows of the matrix view: one partial tile row


# ------------------------------------------------------------------------------------------------
# MXINT8: gfloat and microxcaling
# ------------------------------------------------------------------------------------------------


def mxint_blocks() -> np.ndarray:
    labels, finite = edge_blocks(32, 127 / 64, nonfinite=False)
    rng = np.random.default_rng(9)
    extra = rng.standard_normal((6, 32)).astype(F32)
    extra[0] *= 0.25
    extra[0, 0] = -1.996  # amax 1.996: X = 0, and −1.996 · 64 = −127.74 rounds to −128 = −2.0 under gfloat
    extra[1, 0] = F32(1.99)  # +127.36: 127
    extra[2, :] = np.arange(32) / 64 - 0.25  # exactly on the grid
    extra[3, :] = (np.arange(32) + 0.5) / 64  # every element a tie
    extra[4, 0] = step(2.0, -1)  # just below a power of two: floor(log2) = 0
    extra[5, :] = 0.0
    return np.concatenate([finite, extra])


def test_mxint8_matches_gfloat() -> None:
    gfloat = pytest.importorskip("gfloat")
    from gfloat.block import compute_scale_amax
    from gfloat.formats import format_info_mxint8 as fi

    x = mxint_blocks()
    q = quant.quantize(x, "mxint8")
    deq = q.dequantize().astype(np.float64)
    for i, block in enumerate(x.astype(np.float64)):
        scale = compute_scale_amax(fi.etype.emax, block)
        codes = list(gfloat.encode_block(fi, scale, block / scale))
        assert q.scale_codes[i, 0] == codes[0], (i, q.scale_codes[i, 0], codes[0])
        np.testing.assert_array_equal(q.codes[i], np.array(codes[1:], np.uint8), err_msg=f"block {i}")
        np.testing.assert_array_equal(deq[i], gfloat.quantize_block(fi, block, compute_scale_amax))
    assert q.codes[-6, 0] == 0x80 and deq[-6, 0] == -2.0  # −2 is reachable, as gfloat and OCP's INT8 allow


def test_mxint8_microxcaling_against_its_torch_arithmetic() -> None:
    """microxcaling `_quantize_mx` for int8 (ebits 0, mbits 8, emax 0, max_norm 127/64, round
    'nearest'), transcribed in torch float32."""
    torch = pytest.importorskip("torch")
    x = mxint_blocks()
    x[7, :] = step(2.0**5, -1)  # log2 of 2^5 (1 − 2^-24) rounds to 5.0 in float32: floor gives 5, not 4
    a = torch.from_numpy(x.copy())
    amax = torch.abs(a).amax(dim=1, keepdim=True)
    shared = torch.floor(torch.log2(amax + 2.0**-126 * (amax == 0).float()))
    shared[shared > 127] = float("nan")
    shared[shared < -127] = -127
    v = a / (2**shared) * 64
    v = torch.sign(v) * torch.floor(torch.abs(v) + 0.5)
    v = torch.clamp(v / 64, min=-127 / 64, max=127 / 64) * (2**shared)
    q = quant.quantize(x, "mxint8@microxcaling")
    # equal values (microxcaling's sign · floor keeps −0 where INT8 has only 0)
    np.testing.assert_array_equal(q.dequantize(), v.numpy())
    np.testing.assert_array_equal(q.scale_codes[:, 0], (shared.numpy()[:, 0] + 127).astype(np.uint8))
    assert q.scale_codes[7, 0] == 127 + 5  # float32's log2, not the exact floor(log2) = 4
    assert quant.quantize(x, "mxint8").scale_codes[7, 0] == 127 + 4
    assert q.scale_codes[-1, 0] == 127 - 126  # a zero block: log2 of FLT_MIN
    assert (q.codes.view(np.int8) >= -127).all()  # symmetric: −128 never appears


def test_mxint8_nonfinite_blocks() -> None:
    x = np.ones((3, 32), F32)
    x[0, 4], x[1, 0] = np.nan, -np.inf
    for conv in ("ocp", "microxcaling"):
        q = quant.quantize(x, f"mxint8@{conv}")
        assert q.scale_codes[:2, 0].tolist() == [0xFF, 0xFF] and q.scale_codes[2, 0] == 127
        assert np.isnan(q.dequantize()[:2]).all() and (q.dequantize()[2] == 1.0).all()


# ------------------------------------------------------------------------------------------------
# the random Hadamard transform
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("conv", list(RHT_CONVENTIONS))
def test_rht_signs_on_the_inputs_and_orthogonal(conv: str) -> None:
    h = rht_matrix(conv, seed=3)
    d = np.array(TE_WGRAD_SIGNS) if conv == "transformer_engine" else np.random.default_rng(3).choice([-1.0, 1.0], 16)
    np.testing.assert_array_equal(h, np.diag(d) @ sylvester(16) / 4)
    np.testing.assert_array_equal(h @ h.T, np.eye(16))  # entries ±1/4: exact
    # x · H = (x ⊙ d) · S / 4: flipping an input's sign is the same as flipping that sign in d
    x = np.random.default_rng(0).standard_normal((4, 16))
    np.testing.assert_allclose(apply_blockwise(x, h), (x * d) @ sylvester(16) / 4, rtol=0, atol=1e-15)


def test_gemm_identity_still_holds() -> None:
    """(A·H)(Hᵀ·B) = A·B for H blockwise along the inner dimension (float64: rounding only)."""
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((8, 64)), rng.standard_normal((64, 5))
    for conv in RHT_CONVENTIONS:
        h = rht_matrix(conv)
        diff = apply_blockwise(a, h, axis=1) @ apply_blockwise(b, h, axis=0) - a @ b
        assert np.abs(diff).max() < 1e-12


def test_signs_change_the_amax_only_on_the_inputs() -> None:
    """With signs on the outputs (the old matrix) |x · H| would not depend on them; on the inputs it does."""
    x = np.random.default_rng(2).standard_normal((64, 16))
    s = sylvester(16) / 4
    d1, d2 = np.ones(16), np.array(TE_WGRAD_SIGNS)
    assert np.array_equal(np.abs(x @ (s * d1[None, :])), np.abs(x @ (s * d2[None, :])))
    assert not np.array_equal(np.abs(x @ random_hadamard(signs=d1)), np.abs(x @ random_hadamard(signs=d2)))


@pytest.mark.parametrize("name", ["nvfp4_rht", "mxfp4_rht", "nvfp4_rht@transformer_engine", "nvfp4_rht@torchao"])
def test_rht_recipes_restore_with_the_transpose(name: str) -> None:
    """restore() is Q(x·H)·Hᵀ: its error has the norm of the error in the transformed basis (Hᵀ is
    orthogonal), up to the rounding of x·H to float32 — an exact-inverse bound that H (instead of
    Hᵀ) or no inverse would break by orders of magnitude."""
    x = tensor(32, 128)
    q = quant.quantize(x, name)
    assert q.hadamard is not None and q.operand is not None
    e_basis = float(np.sum((q.dequantize().astype(np.float64) - q.operand.astype(np.float64)) ** 2))
    e_x = float(np.sum((q.restore() - x.astype(np.float64)) ** 2))
    assert e_x == pytest.approx(e_basis, rel=1e-4)
    # and with the test's own matrix: restore = decoded · Hᵀ
    h = np.diag(np.array(TE_WGRAD_SIGNS) if "transformer_engine" in name
                else np.random.default_rng(0).choice([-1.0, 1.0], 16)) @ sylvester(16) / 4
    back = (q.dequantize().astype(np.float64).reshape(-1, 16) @ h.T).reshape(x.shape)
    np.testing.assert_allclose(q.restore(), back, rtol=0, atol=1e-12 * float(np.abs(x).max()))


def test_apply_rht_rounds_once_to_the_operand_dtype() -> None:
    rng = np.random.default_rng(5)
    h = rht_matrix("seeded")
    x = rng.standard_normal((8, 32)).astype(ml_dtypes.bfloat16)
    out = apply_rht(x, h)
    assert out.dtype == ml_dtypes.bfloat16
    exact = x.astype(np.float64).reshape(-1, 16) @ h
    np.testing.assert_array_equal(out.reshape(-1, 16).view(np.uint16),
                                  exact.astype(F32).astype(ml_dtypes.bfloat16).view(np.uint16))
    assert np.allclose(inverse_rht(out, h).reshape(-1, 16), x.astype(np.float64).reshape(-1, 16), atol=0.05)


# ------------------------------------------------------------------------------------------------
# the transposed view of FP8 1×128 tiles
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["fp8_1x128_pow2", "fp8_1x128_ue8m0", "fp8_1x128"])
def test_transpose_requantization(name: str) -> None:
    x = wide_tensor(128, rows=256, cols=256)
    t = quant.transpose_requantization(x, name)
    pow2 = name != "fp8_1x128"
    assert t.exact_where_normal is pow2
    assert t.columns_requantized >= t.columns_from_source * 0.9
    # independently: row-decoded values, column scale 2^j — the value × 2^j keeps its E4M3 significand
    rows = quant.quantize(x, name).dequantize()
    cols = quant.quantize(rows.T.copy(), name)
    normal = np.abs(rows.T.astype(np.float64)) / cols.element_scales() >= 2.0**-6
    moved = cols.dequantize() != rows.T
    assert t.second_rounding_changes == float(np.mean(moved))
    if pow2:  # only values pushed below E4M3's smallest normal by the column scale can move
        np.testing.assert_array_equal(cols.dequantize()[normal], rows.T[normal])
        assert np.mean(moved) <= np.mean(~normal)
    else:  # an FP32 scale changes the significands: most normal values move
        assert np.mean(moved[normal]) > 0.5
    strictjson.loads(strictjson.dumps(t.to_dict()))


def test_transpose_requantization_refuses_other_recipes() -> None:
    with pytest.raises(ValueError, match="takes a 1×k FP8 tile recipe"):
        quant.transpose_requantization(tensor(), "mxfp8_e4m3")
