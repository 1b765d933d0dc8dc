"""Worked examples of the block-format conventions (`simulations.block_conventions`): one NVFP4 block
under the OCP reading, torchao 0.18 and Transformer Engine 2.20, as the MXFP8/NVFP4 lesson quotes it.

The worked tensor is two NVFP4 blocks of float32: a block spanning ±2688 (= 448 · 6, so the FP32
tensor scale is exactly 1 under all three conventions) and the worked block, sixteen values of at
most 0.0058. Its block scale 0.0058 / 6 ≈ 0.00097 lies just below half of E4M3's smallest subnormal
(2^-9 / 2 ≈ 0.00098): the OCP reading rounds it to 0 and stores zero codes; torchao clamps it up to
2^-6 first; Transformer Engine rounds it to 0 like OCP but multiplies the elements by an encode scale
capped at FLT_MAX, so they saturate to ±6 codes that still decode to 0. Every value below is computed
by `compare_conventions`; only the tensor is typed in.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from lowprec import formats
from lowprec.formats import E2M1, E4M3FN

from .blocks.comparison import ConventionComparison, compare_conventions
from .example_record import Example, Value, as_number, format_number

__all__ = ["EXAMPLES", "WORKED_BLOCK", "worked_block_comparison", "worked_tensor"]

#: the worked block (input): sixteen small values next to a tensor amax of 2688
WORKED_BLOCK = (0.0058, -0.0052, 0.0047, 0.0041, -0.0036, 0.0031, -0.0027, 0.0022,
                0.0018, -0.0014, 0.0011, 0.0008, -0.0005, 0.0003, 0.0002, -0.0001)


def worked_tensor() -> np.ndarray:
    """float32[32]: a block spanning ±2688 (tensor amax 2688, tensor scale 1), then WORKED_BLOCK."""
    return np.concatenate([np.linspace(-2688.0, 2688.0, 16), np.array(WORKED_BLOCK)]).astype(np.float32)


def worked_block_comparison() -> ConventionComparison:
    """The worked block (block 1 of `worked_tensor`) under every convention."""
    return compare_conventions(worked_tensor(), "NVFP4", 1)


def _scale_text(v: float) -> str:
    """A block scale in prose: 2^k for a power of two, else its shortest decimal."""
    if v > 0:
        m, e = np.frexp(v)
        if m == 0.5:
            return f"2^{int(e) - 1}"
    return format_number(v, None)


def nvfp4_three_conventions() -> Example:
    c = worked_block_comparison()
    values: dict[str, Value] = {"block_amax": float(np.max(np.abs(c.input))), "elements": len(c.input)}
    short = {"ocp": "ocp", "torchao": "torchao", "transformer_engine": "te"}
    for o in c.outcomes:
        key = short[o.convention]
        values[f"{key}_scale_code"] = o.scale_code
        values[f"{key}_block_scale"] = o.decode_scale / float(o.tensor_scale or 1.0)
        values[f"{key}_rms_rel_error"] = o.rms_rel_error
        values[f"{key}_nonzero"] = int(np.count_nonzero(o.decoded))
        values[f"{key}_largest_code"] = int(o.codes[int(np.argmax(c.input))])
        values[f"{key}_tensor_scale"] = float(o.tensor_scale or 0.0)
    values["e4m3_smallest_normal"] = E4M3FN.smallest_normal
    values["e4m3_half_smallest_subnormal"] = E4M3FN.smallest_subnormal / 2
    values["e2m1_max"] = E2M1.max
    te = c.outcome("transformer_engine")
    te_largest = float(formats.decode(np.array([te.codes[int(np.argmax(c.input))]], np.uint8), E2M1)[0])
    values["summary"] = (
        f"ocp: block scale {_scale_text(as_number(values['ocp_block_scale']))}, RMS error "
        f"{as_number(values['ocp_rms_rel_error']):.2f}; torchao: block scale "
        f"{_scale_text(as_number(values['torchao_block_scale']))}, RMS error "
        f"{as_number(values['torchao_rms_rel_error']):.2f}; Transformer Engine: block scale "
        f"{_scale_text(as_number(values['te_block_scale']))}, its largest element stored as {te_largest:g}, "
        f"RMS error {as_number(values['te_rms_rel_error']):.2f}")
    units = {k: "" for k in values}
    return Example(
        "nvfp4_three_conventions", "One NVFP4 block under OCP, torchao and Transformer Engine",
        "lowprec.simulations.blocks.comparison.compare_conventions on examples_blocks.worked_tensor(): a block "
        "spanning ±2688 (tensor scale 1) and sixteen values of at most 0.0058, quantized as NVFP4 under the "
        "ocp, torchao (0.18.0) and transformer_engine (2.20.2) conventions",
        values, units, "summary",
        digits={"ocp_rms_rel_error": 2, "torchao_rms_rel_error": 2, "te_rms_rel_error": 2},
    )


EXAMPLES: dict[str, Callable[[], Example]] = {
    "nvfp4_three_conventions": nvfp4_three_conventions,
}
