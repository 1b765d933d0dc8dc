"""Worked examples of lesson 25 (reading a pre-quantized checkpoint): every number it quotes or checks,
computed by the recipe lab's readers on the bundled pre-quantized samples (`lab.samples.LAYOUT_SAMPLES`,
written by `lab.writeback` as `lowprec quantize` does) and by the layouts' own functions
(`lab.layouts`), so the lesson's text can never disagree with the code.
"""

from __future__ import annotations

import math
import tempfile
from typing import Callable

import numpy as np

from lowprec import formats

from lowprec.course.example_record import Example, Value, example as _ex

__all__ = ["EXAMPLES"]



def _sample_ref(name: str, folder: str) -> object:
    from lowprec.simulations.lab.readers import scan
    from lowprec.simulations.lab.samples import write_layout_sample

    path = write_layout_sample(name, folder)
    return next(r for r in scan([path]).tensors if r.layout)


def ckpt_gptoss_bytes() -> Example:
    """The gpt-oss (MXFP4) sample: bytes of its `_blocks` and `_scales` tensors as the file stores them."""
    with tempfile.TemporaryDirectory() as folder:
        ref = _sample_ref("gptoss_mxfp4", folder)
        parts = {p.role: p for p in ref.parts}  # type: ignore[attr-defined]
        shape = ref.shape  # type: ignore[attr-defined]
        from lowprec.simulations.lab.runner import analyze

        requant = analyze([ref.path], "mxfp4").tensors[0].result("mxfp4").rms_rel_err  # type: ignore[attr-defined]
    blocks, scales = parts["codes"].nbytes, parts["scales"].nbytes
    numel = math.prod(shape)
    return _ex("ckpt_gptoss_bytes", "Bytes of the gpt-oss MXFP4 sample", "lab.samples.write_layout_sample"
               "('gptoss_mxfp4'): the safetensors header's byte ranges of NAME_blocks and NAME_scales",
               {"rows": shape[0], "cols": shape[1], "blocks_bytes": blocks, "scales_bytes": scales,
                "total_bytes": blocks + scales, "bf16_bytes": 2 * numel,
                "bits_per_element": 8 * (blocks + scales) / numel,
                "blocks_shape": "×".join(str(s) for s in parts["codes"].shape),
                "requant_rel_err": float(requant if requant is not None else math.nan)},
               "total_bytes", units={"blocks_bytes": "bytes", "scales_bytes": "bytes", "total_bytes": "bytes",
                                     "bf16_bytes": "bytes", "bits_per_element": "bits"})


def ckpt_modelopt_bytes() -> Example:
    """A ModelOpt NVFP4 weight of 4096 × 11008: the bytes of weight, weight_scale and weight_scale_2."""
    from lowprec.simulations.lab.layouts import SAFETENSORS_ITEMSIZE, geometry, stored_shapes

    shape = (4096, 11008)
    parts = stored_shapes("modelopt_nvfp4", geometry("modelopt_nvfp4", "nvfp4", shape))
    size = {role: math.prod(s) * SAFETENSORS_ITEMSIZE[d] for role, (d, s) in parts.items()}
    return _ex("ckpt_modelopt_bytes", "Bytes of a ModelOpt NVFP4 weight of 4096 × 11008",
               "lab.layouts.stored_shapes('modelopt_nvfp4', …): packed E2M1 codes, E4M3 scales per 16, one FP32 "
               "scale_2", {"rows": shape[0], "cols": shape[1], "weight_bytes": size["codes"],
                           "scale_bytes": size["scales"], "scale_2_bytes": size["scale_2"],
                           "total_bytes": sum(size.values()),
                           "bits_per_element": 8 * sum(size.values()) / math.prod(shape)},
               "total_bytes", units={**{k: "bytes" for k in ("weight_bytes", "scale_bytes", "scale_2_bytes",
                                                             "total_bytes")}, "bits_per_element": "bits"})


#: the choices of the nibble question, and how each reads a byte (first element, second element)
_NIBBLE_BYTE, _NIBBLE_SCALE = 0x2F, 128


def ckpt_nibbles() -> Example:
    """One gpt-oss `_blocks` byte 0x2F under scale byte 128: the two elements as transformers decodes them
    (low nibble first, E2M1 values, 2^(scale − 127))."""
    from lowprec.simulations.lab.layouts import dequantize_window

    codes = formats.unpack_fp4(np.array([[_NIBBLE_BYTE]], np.uint8))
    vals = dequantize_window("gptoss_mxfp4", codes, np.full(codes.shape, _NIBBLE_SCALE, np.uint8), None, "U8")
    first, second = (float(v) for v in vals[0])

    def text(a: float, b: float) -> str:
        return f"{a:g} then {b:g}".replace("-", "−")

    return _ex("ckpt_nibbles", "A gpt-oss MXFP4 byte decoded", "lab.layouts.dequantize_window('gptoss_mxfp4'): "
               "formats.unpack_fp4 (low nibble first), E2M1 values, ldexp by scale − 127",
               {"byte": f"0x{_NIBBLE_BYTE:02X}", "scale_byte": _NIBBLE_SCALE, "scale": 2.0 ** (_NIBBLE_SCALE - 127),
                "first": first, "second": second, "answer": text(first, second),
                "swapped": text(second, first), "unscaled": text(first / 2, second / 2),
                "unscaled_swapped": text(second / 2, first / 2)}, "answer")


def ckpt_truncation() -> Example:
    """The DeepSeek (V3, FP32 scales) sample read by a UE8M0 kernel that keeps only each scale's
    exponent: its worst block (the audit), and a per-channel FP32 scale of 0.0015 treated the same way."""
    from lowprec.simulations.lab.audit import audit_tensor
    from lowprec.simulations.lab.layouts import truncate_to_exponent

    with tempfile.TemporaryDirectory() as folder:
        ref = _sample_ref("deepseek_fp8", folder)
        a = audit_tensor(ref)  # type: ignore[arg-type]
    worst = a.affected[0]
    assert a.truncation is not None
    s = np.float32(0.0015)
    kept = float(truncate_to_exponent(np.array([s]))[0])
    factor = kept / float(s)
    return _ex("ckpt_truncation", "FP32 scales read by a UE8M0 kernel", "lab.audit.audit_tensor on the "
               "deepseek_fp8 sample; lab.layouts.truncate_to_exponent (bits & 0x7F800000)",
               {"blocks": a.blocks, "affected": a.non_pow2_blocks or 0, "worst_block": str(tuple(worst["block"])),
                "worst_scale": worst["scale"], "worst_kept": worst["kept"], "worst_factor": worst["factor"],
                "worst_log2": math.log2(worst["scale"]), "worst_kept_exp": int(math.log2(worst["kept"])),
                "weight_rel_err": a.truncation["weight_rel_err"], "product_rel_err": a.truncation["product_rel_err"],
                "product_pct": 100 * a.truncation["product_rel_err"],
                "channel_scale": float(s), "channel_kept": kept, "channel_kept_exp": int(math.log2(kept)),
                "channel_factor": factor,
                "channel_lost": 1.0 - factor},
               "worst_factor", digits={"worst_scale": 6, "worst_kept": 6, "worst_factor": 4, "worst_log2": 2,
                                       "weight_rel_err": 3,
                                       "product_rel_err": 3, "product_pct": 0, "channel_kept": 10,
                                       "channel_factor": 4, "channel_lost": 4})


def ckpt_requant() -> Example:
    """The DeepSeek sample re-quantized by `fp8_128x128_ue8m0`: its error against the stored values (what
    the lab measures) and against the weight before quantization (what the file no longer holds)."""
    from lowprec.simulations.lab.readers import open_rows
    from lowprec.simulations.lab.runner import analyze
    from lowprec.simulations.lab.samples import weight
    from lowprec.simulations.quant import quantize

    with tempfile.TemporaryDirectory() as folder:
        ref = _sample_ref("deepseek_fp8", folder)
        stored = open_rows(ref).read(0, 256).astype(np.float64)  # type: ignore[arg-type]
        report = analyze([ref.path], "fp8_128x128_ue8m0")  # type: ignore[attr-defined]
    lab_err = report.tensors[0].result("fp8_128x128_ue8m0").rms_rel_err or 0.0
    original = weight().astype(np.float64)
    again = np.asarray(quantize(stored.astype(np.float32), "fp8_128x128_ue8m0").dequantize(), np.float64)
    vs_original = float(np.linalg.norm(again - original) / np.linalg.norm(original))
    stored_vs_original = float(np.linalg.norm(stored - original) / np.linalg.norm(original))
    if abs(lab_err - vs_original) < 0.1 * vs_original:
        answer = "about the error against the original weight"
    elif lab_err < vs_original:
        answer = "smaller than the error against the original weight"
    else:
        answer = "larger than the error against the original weight"
    return _ex("ckpt_requant", "Re-quantizing a quantized checkpoint", "lab.analyze on the deepseek_fp8 sample "
               "(fp8_128x128_ue8m0 on the stored values); the same codes' error against samples.weight()",
               {"lab_rel_err": lab_err, "vs_original": vs_original, "stored_vs_original": stored_vs_original,
                "answer": answer}, "answer", digits={"lab_rel_err": 3, "vs_original": 3, "stored_vs_original": 3})


EXAMPLES: dict[str, Callable[[], Example]] = {
    "ckpt_gptoss_bytes": ckpt_gptoss_bytes,
    "ckpt_modelopt_bytes": ckpt_modelopt_bytes,
    "ckpt_nibbles": ckpt_nibbles,
    "ckpt_truncation": ckpt_truncation,
    "ckpt_requant": ckpt_requant,
}
