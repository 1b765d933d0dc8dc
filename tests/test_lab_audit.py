"""The audit of a pre-quantized tensor (`simulations.lab.audit`), against independent computations:

- the UE8M0-truncation effect sglang #39193 describes, on a synthetic DeepSeek-V3.1 checkpoint in which
  two 128×128 blocks were quantized with FP32 (non-power-of-two) scales: the audit names exactly those
  blocks, the factor each loses (2^floor(log2 s) / s from `math.frexp`), the weight's and the
  product's error — checked in float64 here and through `gemm.matmul`'s Hopper FP8 GEMM with the
  truncated block scales; a V3 checkpoint (all FP32 scales) read by a UE8M0 kernel loses ~25 %;
- the code-usage histogram, effective bits (entropy), elements at ±max, all-zero and non-finite
  blocks, the blocks at the ends of E8M0, and the lab report carrying the audit.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from lowprec.simulations import gemm, quant
from lowprec.simulations.lab import audit, readers, runner
from lowprec.simulations.lab.writeback import quantize_arrays

torch = pytest.importorskip("torch")
st_torch = pytest.importorskip("safetensors.torch")


def weight(shape: tuple[int, int], seed: int = 7) -> np.ndarray:
    rng = np.random.default_rng(seed)
    w = rng.standard_normal(shape) * 0.02
    w[:, 5] *= 20
    return w.astype(np.float32)


def only_ref(folder: Path) -> readers.TensorRef:
    refs = [r for r in readers.scan([str(p) for p in sorted(folder.glob("*.safetensors"))]).tensors if r.layout]
    assert len(refs) == 1
    return refs[0]


def v31_with_two_fp32_blocks(tmp: Path, w: np.ndarray, blocks: list[tuple[int, int]]) -> tuple[Path, np.ndarray,
                                                                                                 np.ndarray]:
    """A DeepSeek-V3.1 checkpoint (scale_fmt ue8m0) whose `blocks` were quantized with FP32 scales
    amax / 448 (as V3 does): (folder, stored FP32 scales, the E4M3 codes)."""
    ue = quant.quantize(w, "fp8_128x128_ue8m0")
    f32 = quant.quantize(w, "fp8_128x128@deepseek")
    codes = ue.codes.copy()
    scales = np.asarray(ue.scales, np.float32).copy()
    for i, j in blocks:
        codes[i * 128:(i + 1) * 128, j * 128:(j + 1) * 128] = f32.codes[i * 128:(i + 1) * 128, j * 128:(j + 1) * 128]
        scales[i, j] = np.float32(f32.scales[i, j])
    folder = tmp / "v31"
    folder.mkdir()
    st_torch.save_file({"mlp.weight": torch.from_numpy(codes).view(torch.float8_e4m3fn),
                        "mlp.weight_scale_inv": torch.from_numpy(scales)}, str(folder / "model.safetensors"))
    (folder / "config.json").write_text(json.dumps({"quantization_config": {
        "quant_method": "fp8", "fmt": "e4m3", "weight_block_size": [128, 128], "scale_fmt": "ue8m0",
        "activation_scheme": "dynamic"}}))
    return folder, scales, codes


def kept_by_exponent(s: float) -> float:
    """2^floor(log2 s) for a positive normal s (what keeping only the exponent byte leaves)."""
    _, e = math.frexp(s)  # s = m · 2^e, 0.5 ≤ m < 1
    return math.ldexp(1.0, e - 1)


def test_ue8m0_truncation_names_the_affected_blocks_and_their_gemm_error(tmp_path: Path) -> None:
    w = weight((384, 256))
    blocks = [(1, 0), (2, 1)]
    folder, scales, codes = v31_with_two_fp32_blocks(tmp_path, w, blocks)
    ref = only_ref(folder)
    assert (ref.layout, ref.recipe) == ("deepseek_fp8", "fp8_128x128_ue8m0")
    x = np.random.default_rng(1).standard_normal((24, 256)).astype(np.float32)
    a = audit.audit_tensor(ref, activation=x, chunk_elements=128 * 256 // 3)
    assert a.non_pow2_blocks == 2 and a.blocks == 6
    want = sorted(({"block": [i, j], "scale": float(scales[i, j]), "kept": kept_by_exponent(float(scales[i, j])),
                    "factor": kept_by_exponent(float(scales[i, j])) / float(scales[i, j])} for i, j in blocks),
                  key=lambda d: d["factor"])
    assert a.affected == want
    assert all(0.5 < d["factor"] < 1.0 for d in a.affected)
    assert any("scale_fmt ue8m0" in n for n in a.notes)
    # the weight and the product as a UE8M0 kernel would see them, formed here in float64
    vals = readers.open_rows(ref).read(0, 384).astype(np.float64)  # the stored values, as DeepSeek dequantizes
    trunc = vals.copy()
    for d in want:
        i, j = d["block"]
        trunc[i * 128:(i + 1) * 128, j * 128:(j + 1) * 128] *= d["factor"]
    w_err = np.linalg.norm(trunc - vals) / np.linalg.norm(vals)
    y, yt = x.astype(np.float64) @ vals.T, x.astype(np.float64) @ trunc.T
    y_err = np.linalg.norm(yt - y) / np.linalg.norm(y)
    assert a.truncation is not None
    assert a.truncation["weight_rel_err"] == pytest.approx(w_err, rel=1e-12)
    assert a.truncation["product_rel_err"] == pytest.approx(y_err, rel=1e-12)
    # through the tensor-core model: DeepGEMM's Hopper FP8 GEMM, 1×128 activation blocks, 128×128 weight
    # blocks applied at promotion — once with the stored scales, once with the exponent-only ones
    from lowprec import formats

    qa = quant.quantize(x, "fp8_1x128@deepseek")
    av = formats.decode(qa.codes, formats.E4M3FN).astype(np.float64)
    bv = formats.decode(codes, formats.E4M3FN).astype(np.float64).T
    sa = np.asarray(qa.scales, np.float64)
    kept = scales.astype(np.float64).copy()
    for d in want:
        kept[tuple(d["block"])] = d["kept"]
    ins = "wgmma.m64n256k32.f32.e4m3.e4m3"
    good = gemm.matmul(av, bv, arch="hopper", instruction=ins, scale_a=sa, scale_b=scales.astype(np.float64).T,
                       promote_every=128, budget=None, reference=False)
    bad = gemm.matmul(av, bv, arch="hopper", instruction=ins, scale_a=sa, scale_b=kept.T, promote_every=128,
                      budget=None, reference=False)
    d_good, d_bad = good.d.astype(np.float64), bad.d.astype(np.float64)
    gemm_err = np.linalg.norm(d_bad - d_good) / np.linalg.norm(d_good)
    assert gemm_err == pytest.approx(y_err, rel=0.02)  # the same effect, through the kernel model
    # only the affected blocks' output columns change
    changed_cols = np.flatnonzero(np.any(d_bad != d_good, axis=0))
    assert set(changed_cols // 128) <= {i for i, _ in blocks}


def test_v3_fp32_scales_read_by_a_ue8m0_kernel_lose_about_a_quarter(tmp_path: Path) -> None:
    """Every scale of a V3 checkpoint is amax / 448 in FP32: a kernel keeping only the exponent
    shrinks each block by 2^floor(log2 s) / s — ~25 % wrong, as sglang #39193 reports."""
    w = weight((512, 512), seed=3)
    quantize_arrays({"p.weight": w}, "fp8_128x128@deepseek", "deepseek_fp8", str(tmp_path / "v3"))
    a = audit.audit_tensor(only_ref(tmp_path / "v3"))
    assert a.non_pow2_blocks == a.blocks == 16
    assert a.truncation is not None and 0.1 < a.truncation["product_rel_err"] < 0.45
    assert 0.5 < a.truncation["factor_min"] <= a.truncation["factor_max"] < 1.0
    # a V3.1 (UE8M0) checkpoint of the same weight: nothing to truncate
    quantize_arrays({"p.weight": w}, "fp8_128x128_ue8m0", "deepseek_fp8", str(tmp_path / "v31"))
    b = audit.audit_tensor(only_ref(tmp_path / "v31"))
    assert b.non_pow2_blocks == 0 and b.affected == [] and b.truncation is not None
    assert b.truncation["product_rel_err"] == 0.0


def entropy(counts: np.ndarray) -> float:
    p = counts[counts > 0] / counts.sum()
    return float(-(p * np.log2(p)).sum())


@pytest.mark.parametrize("layout,recipe,element_max_mag", [("deepseek_fp8", "fp8_128x128@deepseek", 0x7E),
                                                           ("gptoss_mxfp4", "mxfp4", 0x7),
                                                           ("modelopt_nvfp4", "nvfp4", 0x7),
                                                           ("compressed_tensors_fp8", "e4m3_row", 0x7E)])
def test_code_usage_effective_bits_and_elements_at_max(layout: str, recipe: str, element_max_mag: int,
                                                        tmp_path: Path) -> None:
    w = weight((160, 256))
    w[7] = 0.0  # one all-zero row
    quantize_arrays({"q.weight": w}, recipe, layout, str(tmp_path))
    ref = only_ref(tmp_path)
    a = audit.audit_tensor(ref, chunk_elements=5000)
    codes = quant.quantize(w, recipe).codes.reshape(-1)  # the codes, from the recipe itself
    counts = np.bincount(codes, minlength=len(a.code_counts))
    assert a.code_counts == counts.tolist()
    assert a.codes_used == int(np.count_nonzero(counts))
    assert a.effective_bits == pytest.approx(entropy(counts), rel=1e-12)
    mag = codes & (0x7F if element_max_mag == 0x7E else 0x7)
    assert a.at_max == int(np.count_nonzero(mag == element_max_mag))
    assert a.numel == w.size and a.producer_vs_recipe >= 0
    # all-zero blocks: the zero row makes every 1×k block of it zero (tiles of 128 rows are not all zero)
    bc = {"deepseek_fp8": 0, "gptoss_mxfp4": 256 // 32, "modelopt_nvfp4": 256 // 16, "compressed_tensors_fp8": 1}
    assert a.zero_code_blocks == bc[layout]
    if layout in ("deepseek_fp8", "gptoss_mxfp4"):
        assert a.producer_vs_recipe == 0  # the same arithmetic as the recipe's own dequantization


def test_e8m0_ends_and_nan_blocks_are_counted(tmp_path: Path) -> None:
    blocks = np.full((4, 3, 16), 0x22, np.uint8)  # every element 1.0
    scales = np.array([[0, 254, 127], [255, 127, 127], [0, 0, 127], [254, 127, 255]], np.uint8)
    st_torch.save_file({"e.w_blocks": torch.from_numpy(blocks), "e.w_scales": torch.from_numpy(scales)},
                       str(tmp_path / "m.safetensors"))
    a = audit.audit_tensor(only_ref(tmp_path))
    assert a.ends == {"E8M0 code 0 (2^-127, the smallest scale)": 3, "E8M0 code 254 (2^127, the largest scale)": 2}
    assert a.nonfinite_blocks == 2 and a.blocks == 12 and a.non_pow2_blocks is None
    assert a.scale_min == 2.0**-127 and a.scale_max == 2.0**127
    assert a.scale_log2_bins == [-127, 0, 127] and a.scale_log2_counts == [3, 5, 2]
    # transformers reads code 255 as 2^128 where OCP's E8M0 is NaN: the two readings differ on those blocks
    assert a.producer_vs_recipe == 2 * 32


def test_nvfp4_second_level_and_the_e4m3_end(tmp_path: Path) -> None:
    w = weight((64, 128))
    quantize_arrays({"n.weight": w}, "nvfp4", "modelopt_nvfp4", str(tmp_path))
    a = audit.audit_tensor(only_ref(tmp_path))
    q = quant.quantize(w, "nvfp4")
    assert a.second_level == pytest.approx(float(np.float32(q.tensor_scale)), rel=0)
    # the block holding the tensor's amax gets scale 448 by construction (amax / (448 · 6) above it)
    sc = np.asarray(q.scale_codes) & 0x7F
    assert a.ends.get("E4M3 448 (the largest scale: the block's elements may clip)", 0) == int(np.sum(sc == 0x7E))
    assert a.non_pow2_blocks is None


def test_analyze_reports_the_layout_and_the_audit(tmp_path: Path) -> None:
    w = weight((128, 256))
    quantize_arrays({"d.weight": w, "d.bias": w[0]}, "fp8_128x128_ue8m0", "deepseek_fp8", str(tmp_path))
    rep = runner.analyze(str(tmp_path / "model.safetensors"), "bf16,mxfp4")
    by = {t.name: t for t in rep.tensors}
    assert by["d.weight"].layout == "deepseek_fp8" and by["d.weight"].stored_recipe == "fp8_128x128_ue8m0"
    assert by["d.bias"].layout == "" and by["d.bias"].audit is None
    d = rep.to_dict()["tensors"]
    assert d[[t["name"] for t in d].index("d.weight")]["audit"]["non_pow2_blocks"] == 0
    assert "deepseek_fp8" in rep.to_csv().splitlines()[1 + [t.name for t in rep.tensors].index("d.weight") * 2]
    assert audit.REQUANT_CAVEAT in json.dumps(rep.to_dict())
    no = runner.analyze(str(tmp_path / "model.safetensors"), "bf16", audit=False)
    assert all(t.audit is None for t in no.tensors)
