"""The recipe lab's pre-quantized layouts (`simulations.lab.layouts`, `quantized`, `writeback`):

- every layout's fixture is written by `lowprec quantize` (in small row chunks) and read back: the
  codes, scale codes, scales and second level are those `quant.quantize` gives the whole tensor, bit
  for bit (unsigned-integer views);
- the values the lab reads are checked against each producer's own dequantization, written here
  again in torch as the producer's code computes it (DeepSeek-V3 `weight_dequant`, transformers'
  `convert_moe_packed_tensors`, ModelOpt's `NVFP4QTensor.dequantize`, compressed-tensors'
  `_dequantize`), and against the nibble order and scale bias of the published formats;
- hand-built wrong files — swapped nibbles, transposed scales, a missing scale tensor, a scale of the
  wrong shape or dtype, a truncated file, codes of the wrong dtype, orphaned scales, a layout that
  contradicts the config — each give one line naming the tensor and the problem, never values.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
import pytest

from lowprec.app.cli import main
from lowprec.simulations import quant
from lowprec.simulations.lab import layouts, quantized, readers
from lowprec.simulations.lab.readers import LabReadError, scan

torch = pytest.importorskip("torch")
st_torch = pytest.importorskip("safetensors.torch")

#: layout → (recipe, float weights of a shape the layout takes, chunk elements that force several chunks)
CASES: dict[str, tuple[str, tuple[int, ...]]] = {
    "deepseek_fp8": ("fp8_128x128@deepseek", (200, 320)),  # partial edge tiles in both directions
    "deepseek_ue8m0": ("fp8_128x128_ue8m0", (256, 192)),
    "gptoss_mxfp4": ("mxfp4", (2, 48, 96)),  # experts × rows × cols
    "gptoss_mxfp4_te": ("mxfp4@torchao", (48, 64)),
    "modelopt_nvfp4": ("nvfp4", (48, 80)),
    "modelopt_nvfp4_16x16": ("nvfp4_16x16", (48, 64)),
    "modelopt_nvfp4_torchao": ("nvfp4@torchao", (32, 48)),
    "compressed_tensors_row": ("e4m3_row", (40, 64)),
    "compressed_tensors_tensor": ("e4m3_tensor", (40, 64)),
}
LAYOUT_OF = {"deepseek_fp8": "deepseek_fp8", "deepseek_ue8m0": "deepseek_fp8", "gptoss_mxfp4": "gptoss_mxfp4",
             "gptoss_mxfp4_te": "gptoss_mxfp4", "modelopt_nvfp4": "modelopt_nvfp4",
             "modelopt_nvfp4_16x16": "modelopt_nvfp4", "modelopt_nvfp4_torchao": "modelopt_nvfp4",
             "compressed_tensors_row": "compressed_tensors_fp8", "compressed_tensors_tensor": "compressed_tensors_fp8"}


def weights(shape: tuple[int, ...], seed: int = 0) -> np.ndarray:
    """Heavy-tailed BF16 weights with a few large input channels and one all-zero row."""
    rng = np.random.default_rng(seed)
    w = rng.standard_t(4, size=shape) * 0.02
    w[..., ::17] *= 12
    w.reshape(-1, shape[-1])[3] = 0.0
    return w.astype(np.float32).astype(ml_dtypes.bfloat16)


def write_input(folder: Path, arrays: dict[str, np.ndarray]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    tensors = {k: torch.from_numpy(np.asarray(v, np.float32)).to(torch.bfloat16) if v.dtype == ml_dtypes.bfloat16
               else torch.from_numpy(np.ascontiguousarray(v)) for k, v in arrays.items()}
    path = folder / "model.safetensors"
    st_torch.save_file(tensors, str(path))
    return path


def make_fixture(tmp: Path, case: str, chunk: int = 1000) -> tuple[Path, np.ndarray, str]:
    """(the folder `lowprec quantize` wrote, the float weight, the recipe)."""
    recipe, shape = CASES[case]
    w = weights(shape)
    src = write_input(tmp / "in", {"layer.weight": w, "layer.bias": np.ones(shape[-1], np.float32)})
    out = tmp / "out"
    assert main(["quantize", str(src), "--recipe", recipe, "--layout", LAYOUT_OF[case], "-o", str(out),
                 "--chunk-elements", str(chunk), "--quiet"]) == 0
    return out, w, recipe


def bits(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a)
    return a.view({1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[a.dtype.itemsize])


def quantized_ref(folder: Path, **kw: Any) -> readers.TensorRef:
    files = sorted(folder.glob("*.safetensors"))  # named explicitly: a bad file raises (a folder's would be skipped)
    inv = scan([str(f) for f in files], **kw)
    refs = [r for r in inv.tensors if r.layout]
    assert len(refs) == 1, inv
    return refs[0]


# ------------------------------------------------------------------------------------------------
# write-back and read back, bit for bit
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("case", sorted(CASES))
def test_round_trip_bit_for_bit(case: str, tmp_path: Path) -> None:
    out, w, recipe = make_fixture(tmp_path, case)
    ref = quantized_ref(out)
    assert (ref.layout, ref.recipe, ref.shape) == (LAYOUT_OF[case], quant.get_recipe(recipe).name, w.shape)
    stored = quantized.read_stored(ref)
    q = quant.quantize(w, recipe)  # the whole tensor at once: the writer went chunk by chunk
    np.testing.assert_array_equal(stored.codes, q.codes)
    if q.scale_codes is not None:
        assert stored.scale_codes is not None
        np.testing.assert_array_equal(stored.scale_codes, q.scale_codes)
    expected = np.asarray(q.scales, np.float64)
    if LAYOUT_OF[case] == "compressed_tensors_fp8":
        # the layout keeps the FP32 decode scale: the rounding of the recipe's exact reciprocal
        expected = expected.astype(np.float32).astype(np.float64)
    assert stored.scales.shape == expected.shape
    np.testing.assert_array_equal(bits(stored.scales), bits(expected))
    if q.tensor_scale is not None:
        assert np.float32(stored.tensor_scale) == np.float32(q.tensor_scale)
    # the float tensor beside it is kept as it was, and the config lists it as unquantized
    inv = scan(str(out))
    bias = next(r for r in inv.tensors if r.name == "layer.bias")
    assert bias.layout == "" and bias.dtype == "FP32"


@pytest.mark.parametrize("case", ["deepseek_fp8", "gptoss_mxfp4", "modelopt_nvfp4", "compressed_tensors_row"])
def test_config_entry_is_the_producers(case: str, tmp_path: Path) -> None:
    out, _, recipe = make_fixture(tmp_path, case)
    cfg = json.loads((out / "config.json").read_text())
    qc = cfg["quantization_config"]
    want = {"deepseek_fp8": "fp8", "gptoss_mxfp4": "mxfp4", "modelopt_nvfp4": "modelopt",
            "compressed_tensors_row": "compressed-tensors"}[case]
    assert qc["quant_method"] == want
    if case == "deepseek_fp8":
        assert qc["weight_block_size"] == [128, 128] and "scale_fmt" not in qc
    if case == "compressed_tensors_row":
        assert qc["config_groups"]["group_0"]["weights"]["strategy"] == "channel"
        assert qc["ignore"] == ["layer.bias"]
    if case == "modelopt_nvfp4":
        hq = json.loads((out / "hf_quant_config.json").read_text())
        assert hq["quantization"]["quant_algo"] == "NVFP4" and hq["quantization"]["group_size"] == 16
        assert hq["lowprec"]["tensors"]["layer.weight"]["recipe"] == "nvfp4"
    # the stored tensors carry the producer's names and dtypes
    header = _header(out / "model.safetensors")
    names = {k: v["dtype"] for k, v in header.items() if k != "__metadata__"}
    expect = {"deepseek_fp8": {"layer.weight": "F8_E4M3", "layer.weight_scale_inv": "F32"},
              "gptoss_mxfp4": {"layer.weight_blocks": "U8", "layer.weight_scales": "U8"},
              "modelopt_nvfp4": {"layer.weight": "U8", "layer.weight_scale": "F8_E4M3", "layer.weight_scale_2": "F32"},
              "compressed_tensors_row": {"layer.weight": "F8_E4M3", "layer.weight_scale": "F32"}}[case]
    assert {k: v for k, v in names.items() if k != "layer.bias"} == expect
    assert header["__metadata__"] == {"format": "pt"}


def test_deepseek_ue8m0_config_declares_it(tmp_path: Path) -> None:
    out, _, _ = make_fixture(tmp_path, "deepseek_ue8m0")
    qc = json.loads((out / "config.json").read_text())["quantization_config"]
    assert qc["scale_fmt"] == "ue8m0"
    s = quantized.read_stored(quantized_ref(out)).stored_scales
    assert s.dtype == np.float32 and np.all((s.view(np.uint32) & 0x807FFFFF) == 0)  # powers of two, stored as FP32


def test_safetensors_package_reads_what_lowprec_writes(tmp_path: Path) -> None:
    """The written file is a valid safetensors file (the package's own reader takes it)."""
    out, _, _ = make_fixture(tmp_path, "modelopt_nvfp4")
    loaded = st_torch.load_file(str(out / "model.safetensors"))
    assert loaded["layer.weight"].dtype == torch.uint8 and loaded["layer.weight_scale"].dtype == torch.float8_e4m3fn
    assert loaded["layer.weight_scale_2"].shape == ()


def _header(path: Path) -> dict[str, Any]:
    raw = path.read_bytes()
    n = int.from_bytes(raw[:8], "little")
    out: dict[str, Any] = json.loads(raw[8:8 + n])
    return out


# ------------------------------------------------------------------------------------------------
# each producer's dequantization, written again in torch
# ------------------------------------------------------------------------------------------------


def _load(out: Path) -> dict[str, Any]:
    return st_torch.load_file(str(out / "model.safetensors"))


def deepseek_weight_dequant(w: Any, s: Any, block: int = 128) -> Any:
    """DeepSeek-V3 inference/kernel.py weight_dequant: y = x.to(float32) * s[i // 128, j // 128], in FP32."""
    m, n = w.shape
    rows = torch.arange(m) // block
    cols = torch.arange(n) // block
    return w.to(torch.float32) * s[rows][:, cols]


FP4_VALUES = [+0.0, +0.5, +1.0, +1.5, +2.0, +3.0, +4.0, +6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0]


def gptoss_convert_moe_packed(blocks: Any, scales: Any) -> Any:
    """transformers convert_moe_packed_tensors: a BF16 table, the low nibble first, ldexp by scale − 127."""
    scales = scales.to(torch.int32) - 127
    lut = torch.tensor(FP4_VALUES, dtype=torch.bfloat16)
    *prefix, g, b = blocks.shape
    blk = blocks.reshape(-1, b)
    exp = scales.reshape(-1, 1)
    out = torch.empty(blk.shape[0], b * 2, dtype=torch.bfloat16)
    out[:, 0::2] = lut[(blk & 0x0F).to(torch.long)]
    out[:, 1::2] = lut[(blk >> 4).to(torch.long)]
    torch.ldexp(out, exp, out=out)
    return out.reshape(*prefix, g * b * 2)


E2M1_VALUES = torch.tensor([0, 0.5, 1, 1.5, 2, 3, 4, 6, 0, -0.5, -1, -1.5, -2, -3, -4, -6])


def modelopt_dequantize(packed: Any, scale: Any, scale_2: Any, block: int = 16) -> Any:
    """ModelOpt NVFP4QTensor.dequantize: unpack (even element in the low nibble), per-block scale
    scale.to(float32) * scale_2 in FP32, then the values times it in FP32."""
    unpacked = torch.empty(*packed.shape[:-1], packed.shape[-1] * 2, dtype=torch.long)
    unpacked[..., 1::2] = (packed >> 4).to(torch.long)
    unpacked[..., 0::2] = (packed & 0x0F).to(torch.long)
    vals = E2M1_VALUES.to(torch.float32)[unpacked]
    per_block = scale.to(torch.float32) * scale_2
    return (vals.view(*vals.shape[:-1], -1, block) * per_block.unsqueeze(-1)).reshape(vals.shape)


def compressed_tensors_dequantize(x_q: Any, scale: Any) -> Any:
    """compressed-tensors _dequantize: x_q.to(scale.dtype) * scale, in the scale's dtype."""
    return x_q.to(scale.dtype) * scale


def lab_values(out: Path) -> np.ndarray:
    ref = quantized_ref(out)
    src = readers.open_rows(ref)
    parts = [src.read(lo, min(src.rows, lo + 7)) for lo in range(0, src.rows, 7)]  # odd chunks of rows
    return np.concatenate(parts).reshape(ref.shape)


@pytest.mark.parametrize("case", ["deepseek_fp8", "deepseek_ue8m0"])
def test_deepseek_values_are_weight_dequant(case: str, tmp_path: Path) -> None:
    out, _, _ = make_fixture(tmp_path, case)
    t = _load(out)
    want = deepseek_weight_dequant(t["layer.weight"], t["layer.weight_scale_inv"]).numpy()
    np.testing.assert_array_equal(bits(lab_values(out)), bits(want))


@pytest.mark.parametrize("case", ["gptoss_mxfp4", "gptoss_mxfp4_te"])
def test_gptoss_values_are_convert_moe_packed_tensors(case: str, tmp_path: Path) -> None:
    out, _, _ = make_fixture(tmp_path, case)
    t = _load(out)
    want = gptoss_convert_moe_packed(t["layer.weight_blocks"], t["layer.weight_scales"]).to(torch.float32).numpy()
    np.testing.assert_array_equal(bits(lab_values(out)), bits(want))


@pytest.mark.parametrize("case", ["modelopt_nvfp4", "modelopt_nvfp4_torchao"])
def test_modelopt_values_are_nvfp4qtensor_dequantize(case: str, tmp_path: Path) -> None:
    out, w, recipe = make_fixture(tmp_path, case)
    t = _load(out)
    want = modelopt_dequantize(t["layer.weight"], t["layer.weight_scale"], t["layer.weight_scale_2"]).numpy()
    got = lab_values(out)
    np.testing.assert_array_equal(bits(got), bits(want))
    # the recipe's own dequantization rounds once; ModelOpt's twice: the audit counts where they differ
    exact = np.asarray(quant.quantize(w, recipe).dequantize(), np.float32)
    assert np.abs(got.astype(np.float64) - exact).max() <= np.abs(exact).max() * 2.0**-22


def test_modelopt_16x16_values_follow_the_per_row_scales(tmp_path: Path) -> None:
    out, _, _ = make_fixture(tmp_path, "modelopt_nvfp4_16x16")
    t = _load(out)
    assert t["layer.weight_scale"].shape == (48, 4)  # each 16×16 tile's scale on each of its 16 rows
    want = modelopt_dequantize(t["layer.weight"], t["layer.weight_scale"], t["layer.weight_scale_2"]).numpy()
    np.testing.assert_array_equal(bits(lab_values(out)), bits(want))


@pytest.mark.parametrize("case", ["compressed_tensors_row", "compressed_tensors_tensor"])
def test_compressed_tensors_values_are_its_dequantize(case: str, tmp_path: Path) -> None:
    out, _, _ = make_fixture(tmp_path, case)
    t = _load(out)
    want = compressed_tensors_dequantize(t["layer.weight"], t["layer.weight_scale"]).numpy()
    np.testing.assert_array_equal(bits(lab_values(out)), bits(want))


def test_compressed_tensors_bf16_scale_dequantizes_in_bf16(tmp_path: Path) -> None:
    """llm-compressor checkpoints may keep the scale in the weight's dtype: the product is then BF16."""
    rng = np.random.default_rng(3)
    raw = rng.integers(0, 256, size=(6, 32), dtype=np.uint8)
    raw[(raw & 0x7F) == 0x7F] = 0  # no NaN codes
    codes = torch.from_numpy(raw).view(torch.float8_e4m3fn)
    scale = torch.tensor(rng.uniform(1e-3, 2e-3, size=(6, 1)), dtype=torch.bfloat16)
    folder = tmp_path / "ct"
    folder.mkdir()
    st_torch.save_file({"p.weight": codes, "p.weight_scale": scale}, str(folder / "m.safetensors"))
    ref = quantized_ref(folder)
    assert (ref.layout, ref.recipe) == ("compressed_tensors_fp8", "e4m3_row")  # by names and dtypes alone
    want = compressed_tensors_dequantize(codes, scale).to(torch.float32).numpy()
    np.testing.assert_array_equal(bits(lab_values(folder)), bits(want))


def test_gptoss_scale_code_255_and_the_ends_follow_transformers(tmp_path: Path) -> None:
    """E8M0 0xFF is NaN for OCP; transformers' ldexp gives 2^128: 0 → 0, 0.5 → 2^127, 1 → Inf. Codes 0
    and 254 are the ends (2^-127, 2^127)."""
    blocks = np.zeros((1, 4, 16), np.uint8)
    blocks[0, :, 0] = 0x21  # elements 0.5 (low nibble, first) and 1.0
    blocks[0, :, 1] = 0x0F  # -6.0 first, then 0
    scales = np.array([[255, 0, 254, 127]], np.uint8)
    folder = tmp_path / "g"
    folder.mkdir()
    st_torch.save_file({"e.w_blocks": torch.from_numpy(blocks), "e.w_scales": torch.from_numpy(scales)},
                       str(folder / "m.safetensors"))
    got = lab_values(folder)
    want = gptoss_convert_moe_packed(torch.from_numpy(blocks), torch.from_numpy(scales)).to(torch.float32).numpy()
    np.testing.assert_array_equal(bits(got), bits(want))
    assert got[0, 0] == 2.0**127 and got[0, 1] == np.inf and got[0, 2] == -np.inf  # scale 2^128
    assert got[0, 32] == 2.0**-128 and got[0, 33] == 2.0**-127  # code 0: 0.5 · 2^-127, 1 · 2^-127
    assert got[0, 96] == 0.5 and got[0, 97] == 1.0 and got[0, 98] == -6.0  # code 127: 2^0; the low nibble first


def test_nibble_order_and_bias_against_the_published_formats() -> None:
    """The first element sits in the low nibble (gpt-oss, ModelOpt); E2M1 code 0b0111 is 6, 0b1001 is
    −0.5; E8M0 code c is 2^(c − 127); E4M3 0x7E is 448."""
    codes = np.array([[0x7, 0x9, 0x2, 0xF]], np.uint8)
    packed = layouts.stored_from_result("gptoss_mxfp4", _FakeResult(codes), layouts.geometry("gptoss_mxfp4", "mxfp4",
                                                                                              (1, 32)))["codes"]
    assert packed[0, 0] == 0x97 and packed[0, 1] == 0xF2
    vals = layouts.dequantize_window("gptoss_mxfp4", codes, np.full((1, 4), 128, np.uint8), None, "U8")
    np.testing.assert_array_equal(vals, [[12.0, -1.0, 2.0, -12.0]])
    e4m3 = layouts.dequantize_window("deepseek_fp8", np.array([[0x7E, 0xFE]], np.uint8),
                                     np.full((1, 2), 0.5, np.float32), None, "F32")
    np.testing.assert_array_equal(e4m3, [[224.0, -224.0]])


class _FakeResult:
    def __init__(self, codes: np.ndarray) -> None:
        self.codes = np.concatenate([codes, np.zeros((1, 28), np.uint8)], axis=1)
        self.scale_codes = np.full((1, 1), 127, np.uint8)


# ------------------------------------------------------------------------------------------------
# recognition
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("case", ["deepseek_fp8", "gptoss_mxfp4", "modelopt_nvfp4", "compressed_tensors_row"])
def test_names_and_dtypes_recognise_the_layout_without_a_config(case: str, tmp_path: Path) -> None:
    out, _, recipe = make_fixture(tmp_path, case)
    for f in ("config.json", "hf_quant_config.json"):
        (out / f).unlink(missing_ok=True)
    ref = quantized_ref(out)
    assert ref.layout == LAYOUT_OF[case]
    # without lowprec's record the recipe is the layout's structural one
    assert ref.recipe == {"deepseek_fp8": "fp8_128x128@deepseek", "gptoss_mxfp4": "mxfp4",
                          "modelopt_nvfp4": "nvfp4", "compressed_tensors_row": "e4m3_row"}[case]
    assert not any(p.digest for p in ref.parts)


def test_layout_option_overrides_and_activation_scales_are_skipped(tmp_path: Path) -> None:
    out, _, _ = make_fixture(tmp_path, "compressed_tensors_row")
    t = _load(out)
    t["layer.input_scale"] = torch.tensor([0.5], dtype=torch.float32)
    st_torch.save_file(t, str(out / "model.safetensors"))
    inv = scan(str(out), layout="compressed_tensors_fp8")
    assert [s.name for s in inv.skipped] == ["layer.input_scale"]
    assert "activation" in inv.skipped[0].reason


def test_fp8_without_scale_and_without_layout_is_skipped_not_guessed(tmp_path: Path) -> None:
    folder = tmp_path / "plain"
    folder.mkdir()
    st_torch.save_file({"w": torch.zeros(4, 32, dtype=torch.float8_e4m3fn)}, str(folder / "m.safetensors"))
    inv = scan(str(folder))
    assert inv.tensors == [] and "no scale tensor" in inv.skipped[0].reason


def test_other_quant_methods_leave_the_float_reader_alone(tmp_path: Path) -> None:
    folder = tmp_path / "gptq"
    write_input(folder, {"a.weight": np.ones((4, 8), np.float32)})
    (folder / "config.json").write_text(json.dumps({"quantization_config": {"quant_method": "gptq"}}))
    assert [r.name for r in scan(str(folder)).tensors] == ["a.weight"]


# ------------------------------------------------------------------------------------------------
# hand-built wrong files: one line naming the tensor and the problem
# ------------------------------------------------------------------------------------------------


def one_line_error(folder: Path, pattern: str) -> str:
    """The error of scanning the folder's file: one line matching `pattern`."""
    import re

    with pytest.raises(LabReadError, match=pattern) as info:
        quantized_ref(folder)
    msg = str(info.value)
    assert "\n" not in msg and re.search(pattern, msg), msg
    return msg


def read_error(folder: Path, pattern: str) -> str:
    """The error of scanning and reading every row (digests are checked as the rows stream)."""
    import re

    with pytest.raises(LabReadError, match=pattern) as info:
        for ref in scan([str(f) for f in sorted(folder.glob("*.safetensors"))]).tensors:
            src = readers.open_rows(ref)
            for lo in range(0, src.rows, 16):
                src.read(lo, min(src.rows, lo + 16))
    msg = str(info.value)
    assert "\n" not in msg and re.search(pattern, msg), msg
    return msg


def rewrite(out: Path, change: Any) -> None:
    """Load the fixture's tensors, change them, save them again (the config, with its digests, stays)."""
    t = _load(out)
    change(t)
    st_torch.save_file(t, str(out / "model.safetensors"))


@pytest.mark.parametrize("case", ["gptoss_mxfp4", "modelopt_nvfp4"])
def test_swapped_nibbles_are_named(case: str, tmp_path: Path) -> None:
    out, _, _ = make_fixture(tmp_path, case)
    key = "layer.weight_blocks" if case == "gptoss_mxfp4" else "layer.weight"

    def swap(t: dict[str, Any]) -> None:
        b = t[key]
        t[key] = ((b & 0x0F) << 4) | (b >> 4)

    rewrite(out, swap)
    msg = read_error(out, r"'layer\.weight'.*nibbles are swapped")
    assert key in msg


def test_transposed_square_scale_grid_is_named(tmp_path: Path) -> None:
    """A square grid keeps its shape when transposed: only the digest lowprec recorded can tell."""
    recipe = "fp8_128x128@deepseek"
    src = write_input(tmp_path / "in", {"sq.weight": weights((256, 256), 1)})
    out = tmp_path / "out"
    assert main(["quantize", str(src), "--recipe", recipe, "--layout", "deepseek_fp8", "-o", str(out), "--quiet"]) == 0
    rewrite(out, lambda t: t.__setitem__("sq.weight_scale_inv", t["sq.weight_scale_inv"].T.contiguous()))
    read_error(out, r"'sq\.weight'.*scale grid is transposed")


@pytest.mark.parametrize("case,key", [("deepseek_fp8", "layer.weight_scale_inv"),
                                      ("gptoss_mxfp4", "layer.weight_scales"),
                                      ("compressed_tensors_row", "layer.weight_scale")])
def test_transposed_non_square_scales_are_named_from_their_shape(case: str, key: str, tmp_path: Path) -> None:
    out, _, _ = make_fixture(tmp_path, case)
    for f in ("config.json",):
        cfg = json.loads((out / f).read_text())
        cfg["quantization_config"].pop("lowprec")  # no digests: the shape alone must tell
        (out / f).write_text(json.dumps(cfg))
    rewrite(out, lambda t: t.__setitem__(key, t[key].transpose(-1, -2).contiguous()))
    one_line_error(out, rf"{key.replace('.', r'[.]')}.*transpose of the expected")


@pytest.mark.parametrize("case,key,what", [
    ("deepseek_fp8", "layer.weight_scale_inv", r"'layer\.weight' has no scale tensor 'layer\.weight_scale_inv'"),
    ("gptoss_mxfp4", "layer.weight_scales", r"'layer\.weight' has no scales tensor 'layer\.weight_scales'"),
    ("modelopt_nvfp4", "layer.weight_scale", r"'layer\.weight' has no scale tensor 'layer\.weight_scale'"),
    ("modelopt_nvfp4", "layer.weight_scale_2", r"'layer\.weight' has no second-level scale 'layer\.weight_scale_2'"),
    ("compressed_tensors_row", "layer.weight_scale", r"'layer\.weight' has no scale tensor 'layer\.weight_scale'"),
])
def test_missing_scale_tensor_is_named(case: str, key: str, what: str, tmp_path: Path) -> None:
    out, _, _ = make_fixture(tmp_path, case)
    rewrite(out, lambda t: t.pop(key))
    one_line_error(out, what)


@pytest.mark.parametrize("case,key,make,what", [
    ("deepseek_fp8", "layer.weight_scale_inv", lambda s: s.to(torch.bfloat16), r"has dtype BF16; deepseek_fp8 stores "
                                                                                r"it as FP32"),
    ("gptoss_mxfp4", "layer.weight_scales", lambda s: s.to(torch.float32), r"dtype FP32; gptoss_mxfp4 stores it as UINT8"),
    ("modelopt_nvfp4", "layer.weight_scale", lambda s: s.view(torch.uint8), r"dtype UINT8; modelopt_nvfp4 stores it as "
                                                                            r"E4M3FN"),
    ("modelopt_nvfp4", "layer.weight_scale", lambda s: s.view(torch.uint8).reshape(-1), r"swizzled"),
    ("compressed_tensors_row", "layer.weight_scale", lambda s: s.to(torch.int32), r"dtype INT32"),
    ("deepseek_fp8", "layer.weight", lambda s: s.view(torch.uint8), r"weight 'layer\.weight' has dtype UINT8"),
])
def test_scale_of_the_wrong_dtype_is_named(case: str, key: str, make: Any, what: str, tmp_path: Path) -> None:
    out, _, _ = make_fixture(tmp_path, case)
    rewrite(out, lambda t: t.__setitem__(key, make(t[key])))
    one_line_error(out, what)


@pytest.mark.parametrize("case,key,make", [
    ("deepseek_fp8", "layer.weight_scale_inv", lambda s: s[:1].contiguous()),
    ("gptoss_mxfp4", "layer.weight_scales", lambda s: s[..., :1].contiguous()),
    ("modelopt_nvfp4", "layer.weight_scale", lambda s: s[:, :2].contiguous()),
    ("compressed_tensors_row", "layer.weight_scale", lambda s: s[:5].contiguous()),
])
def test_scale_of_the_wrong_shape_is_named(case: str, key: str, make: Any, tmp_path: Path) -> None:
    out, _, _ = make_fixture(tmp_path, case)
    rewrite(out, lambda t: t.__setitem__(key, make(t[key])))
    one_line_error(out, rf"'{key.replace('.', '[.]')}' has shape .*; expected")


@pytest.mark.parametrize("case", ["deepseek_fp8", "gptoss_mxfp4", "modelopt_nvfp4", "compressed_tensors_row"])
def test_truncated_file_names_the_tensor(case: str, tmp_path: Path) -> None:
    out, _, _ = make_fixture(tmp_path, case)
    path = out / "model.safetensors"
    raw = path.read_bytes()
    path.write_bytes(raw[: len(raw) - 40])
    one_line_error(out, r"truncated: tensor '[^']+' ends at byte \d+, past the end of the file's \d+ bytes")


def test_orphaned_scales_and_contradicting_config_are_named(tmp_path: Path) -> None:
    out, _, _ = make_fixture(tmp_path, "deepseek_fp8")
    rewrite(out, lambda t: t.pop("layer.weight"))
    one_line_error(out, r"scale tensor 'layer\.weight_scale_inv' has no codes tensor 'layer\.weight'")
    out2, _, _ = make_fixture(tmp_path / "b", "gptoss_mxfp4")
    cfg = json.loads((out2 / "config.json").read_text())
    cfg["quantization_config"] = {"quant_method": "fp8", "weight_block_size": [128, 128]}
    (out2 / "config.json").write_text(json.dumps(cfg))
    one_line_error(out2, r"stored as gptoss_mxfp4 .* declares deepseek_fp8")


def test_changed_codes_are_refused_while_streaming(tmp_path: Path) -> None:
    out, _, _ = make_fixture(tmp_path, "deepseek_fp8")

    def flip(t: dict[str, Any]) -> None:
        b = t["layer.weight"].view(torch.uint8).clone()
        b[5, 5] ^= 1
        t["layer.weight"] = b.view(torch.float8_e4m3fn)

    rewrite(out, flip)
    read_error(out, r"'layer\.weight'.*codes differ from what lowprec wrote")


def test_cli_errors_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out, _, _ = make_fixture(tmp_path, "deepseek_fp8")
    rewrite(out, lambda t: t.pop("layer.weight_scale_inv"))
    assert main(["analyze", str(out / "model.safetensors"), "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "layer.weight_scale_inv" in err
    # a recipe the layout cannot store, before anything is written
    src = write_input(tmp_path / "in2", {"w": weights((32, 64))})
    assert main(["quantize", str(src), "--recipe", "nvfp4", "--layout", "deepseek_fp8", "-o",
                 str(tmp_path / "x")]) == 2
    assert "128×128 tile" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()
    assert main(["quantize", str(src), "--recipe", "nvfp4_rowscaled", "--layout", "modelopt_nvfp4", "-o",
                 str(tmp_path / "x")]) == 2
    assert "one FP32 second-level scale per tensor" in capsys.readouterr().err
    assert main(["quantize", str(src), "--recipe", "mxfp4_rht", "--layout", "gptoss_mxfp4", "-o",
                 str(tmp_path / "x")]) == 2
    assert "Hadamard" in capsys.readouterr().err


def test_quantize_refuses_a_non_empty_folder_and_lists_layouts(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    out, _, _ = make_fixture(tmp_path, "compressed_tensors_row")
    src = tmp_path / "in" / "model.safetensors"
    assert main(["quantize", str(src), "--recipe", "e4m3_row", "--layout", "compressed_tensors_fp8", "-o",
                 str(out), "--quiet"]) == 2
    assert "not empty" in capsys.readouterr().err
    assert main(["quantize", str(src), "--recipe", "e4m3_row", "--layout", "compressed_tensors_fp8", "-o",
                 str(out), "--quiet", "--force", "--exclude", "*.weight"]) == 2  # nothing left to quantize
    assert "no tensor to quantize" in capsys.readouterr().err
    assert main(["quantize", "--layouts"]) == 0
    text = capsys.readouterr().out
    assert all(name in text for name in layouts.LAYOUTS)
    shutil.rmtree(out)


def test_the_layouts_benchmark_covers_every_layout_with_a_recipe_it_stores() -> None:
    """`lowprec bench analyze_layouts` writes every layout of the registry, each with a recipe the
    layout accepts (a new layout or a renamed recipe would otherwise drop out of the figures)."""
    from lowprec.app.commands.bench_cmd import BENCHMARKS
    from lowprec.benchmarks.analyze_layouts import LAYOUTS as BENCH_LAYOUTS
    from lowprec.simulations.lab.layouts import LAYOUTS, get_layout

    assert BENCHMARKS["analyze_layouts"] == "lowprec.benchmarks.analyze_layouts"
    assert sorted(name for name, _ in BENCH_LAYOUTS) == sorted(LAYOUTS)
    assert [get_layout(name).accepts(recipe) for name, recipe in BENCH_LAYOUTS] == [None] * len(LAYOUTS)
