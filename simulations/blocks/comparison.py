"""One block under every block convention, and the table of where the conventions differ.

`compare_conventions` quantizes a small 1-D tensor as MX or NVFP4 under each convention of
`simulations.quant.conventions` (ocp, torchao, transformer_engine) and returns one block as each
stores it — scale code, decode scale, element codes, decoded values — with its error against the
input. `block_conventions_table` runs it on a fixed set of probes (an MX amax at the rceil boundary,
a tiny MX block, MX blocks holding Inf or NaN, NVFP4 block scales below E4M3's smallest normal or
rounding to zero, a zero tensor, Inf and an overflowing float64 amax, a negative zero): the rows the
Conventions widget draws. MX probes use rceil, the one rule all three conventions have.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from lowprec import formats
from lowprec.formats import E4M3FN

from .records import get_block_format
from ..quant.conventions import BLOCK_CONVENTIONS
from ..quant.mx import quantize_mx
from ..quant.nvfp4 import quantize_nvfp4
from ..quant.scale_rules import E8M0_BIAS, E8M0_NAN_CODE

__all__ = ["ConventionComparison", "ConventionOutcome", "ConventionProbe", "block_conventions_table",
           "compare_conventions"]


@dataclass
class ConventionOutcome:
    """One block as one convention stores it."""

    convention: str
    scale_code: int  # E8M0 code (MX) or E4M3FN code (NVFP4) of the block
    decode_scale: float  # what one element unit decodes to: 2^X (MX), block scale × tensor scale (NVFP4)
    tensor_scale: float | None  # NVFP4's FP32 tensor decode scale; None for MX
    codes: np.ndarray  # element codes of the block (uint8)
    decoded: np.ndarray  # the block dequantized (float64)
    rms_rel_error: float  # ‖decoded − input‖ / ‖input‖ over the block (NaN if it decodes to NaN)
    max_abs_error: float

    def to_dict(self) -> dict[str, Any]:
        return {"convention": self.convention, "scale_code": self.scale_code, "decode_scale": self.decode_scale,
                "tensor_scale": self.tensor_scale, "codes": self.codes.astype(np.int64), "decoded": self.decoded,
                "rms_rel_error": self.rms_rel_error, "max_abs_error": self.max_abs_error}


@dataclass
class ConventionComparison:
    """One block of a 1-D tensor under every convention."""

    block_format: str
    scale_rule: str | None  # MX: the rule used under every convention; None for NVFP4
    block: int  # index of the block along the tensor
    input: np.ndarray  # the block's values (float64)
    outcomes: list[ConventionOutcome]

    def outcome(self, convention: str) -> ConventionOutcome:
        for o in self.outcomes:
            if o.convention == convention:
                return o
        raise ValueError(f"no outcome for convention {convention!r}; have "
                         f"{', '.join(o.convention for o in self.outcomes)}")

    def to_dict(self) -> dict[str, Any]:
        return {"block_format": self.block_format, "scale_rule": self.scale_rule, "block": self.block,
                "input": self.input, "outcomes": [o.to_dict() for o in self.outcomes]}


def compare_conventions(x: Any, block_format: str = "NVFP4", block: int = 0, scale_rule: str = "rceil",
                        conventions: tuple[str, ...] | None = None) -> ConventionComparison:
    """Quantize the 1-D tensor `x` (float32 or float64) in `block_format` under each convention
    (default: all; rceil for MX, the rule all three have) and return block `block` as each stores
    it, with its error against the input."""
    bf = get_block_format(block_format)
    arr = np.asarray(x)
    if arr.ndim != 1:
        raise ValueError(f"compare_conventions takes a 1-D tensor, got shape {arr.shape}")
    n_blocks = arr.size // bf.block_size
    if not isinstance(block, (int, np.integer)) or not 0 <= block < n_blocks:
        raise ValueError(f"block={block!r} is out of range: the tensor has {n_blocks} blocks of {bf.block_size}")
    span = slice(block * bf.block_size, (block + 1) * bf.block_size)
    inp = arr[span].astype(np.float64)
    outcomes = []
    for name in conventions or tuple(BLOCK_CONVENTIONS):
        if bf.family == "NVFP4":
            q4 = quantize_nvfp4(arr[None, :], convention=name)
            sc = int(q4.scale_codes[0, block])
            ts: float | None = q4.tensor_scale
            decode_scale = float(formats.decode(np.array([sc], np.uint8), E4M3FN)[0]) * q4.tensor_scale
            codes, deq = q4.codes[0, span], q4.dequantize()[0, span]
        else:
            qm = quantize_mx(arr[None, :], bf.element.name, bf.block_size, scale_rule, convention=name)
            sc = int(qm.scale_codes[0, block])
            ts = None
            decode_scale = float("nan") if sc == E8M0_NAN_CODE else 2.0 ** (sc - E8M0_BIAS)
            codes, deq = qm.codes[0, span], qm.dequantize()[0, span]
        dec = deq.astype(np.float64)
        with np.errstate(invalid="ignore", over="ignore"):
            err = dec - inp
            big = float(np.max(np.abs(inp[np.isfinite(inp)]), initial=0.0)) or 1.0  # scaled: no overflow
            norm = float(np.sqrt(np.sum((inp / big) ** 2)))
            rms = float(np.sqrt(np.sum((err / big) ** 2))) / (norm if norm > 0 else 1.0 / big)
            max_abs = float(np.max(np.abs(err)))
        outcomes.append(ConventionOutcome(name, sc, decode_scale, ts, np.asarray(codes, np.uint8), dec, rms, max_abs))
    return ConventionComparison(bf.name, scale_rule if bf.family == "MX" else None, block, inp, outcomes)


@dataclass
class ConventionProbe:
    """One row of the table of differences: a small tensor, the block looked at, and each convention's
    outcome on it."""

    name: str  # what is probed
    description: str  # the input in words
    elements: tuple[int, ...]  # the elements of the block worth showing
    comparison: ConventionComparison

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "elements": list(self.elements),
                "comparison": self.comparison.to_dict()}


def _probe_tensors() -> list[tuple[str, str, str, np.ndarray, int, tuple[int, ...]]]:
    """(name, description, block format, tensor, block, elements): the inputs of the table."""
    f32 = np.float32
    probes: list[tuple[str, str, str, np.ndarray, int, tuple[int, ...]]] = []
    x = np.full(32, 1.0, f32)
    x[0] = (np.array([448.0 * 2**7], f32).view(np.uint32) + 1).view(f32)[0]
    probes.append(("MX rceil at the boundary", "MXFP8 E4M3 block, amax one float32 step above 448·2^7", "MXFP8_E4M3",
                   x, 0, (0,)))
    probes.append(("MX tiny block", "MXFP8 E4M3 block of 2^-120 (rceil: X = −127)", "MXFP8_E4M3",
                   np.full(32, 2.0**-120, f32), 0, (0,)))
    x = np.full(32, 1.0, f32)
    x[0] = np.inf
    probes.append(("MX block with +Inf", "MXFP8 E4M3 block: +Inf and 31 ones (448 · 2^127 is +Inf in float32)", "MXFP8_E4M3",
                   x, 0, (0, 1)))
    x = np.full(32, 1.0, f32)
    x[0] = np.nan
    probes.append(("MX block with NaN", "MXFP8 E4M3 block: NaN and 31 ones", "MXFP8_E4M3", x, 0, (0, 1)))
    x = np.zeros(32, f32)
    x[:16] = 2688.0
    x[16:] = 0.06
    probes.append(("NVFP4 small block scale", "NVFP4: a block at 2688 (tensor scale 1), then a block at 0.06: "
                   "0.06/6 lies below E4M3's smallest normal 2^-6", "NVFP4", x, 1, (0,)))
    x = np.zeros(32, f32)
    x[:16] = 2688.0
    x[16:] = np.array([1e-4, -1e-4] * 8, f32)
    probes.append(("NVFP4 zero block scale", "NVFP4: a block at 2688, then a block at ±1e-4 whose scale rounds "
                   "to 0", "NVFP4", x, 1, (0, 1)))
    probes.append(("NVFP4 zero tensor", "NVFP4: every element 0", "NVFP4", np.zeros(32, f32), 0, (0,)))
    x = np.ones(32, f32)
    x[3] = np.inf
    probes.append(("NVFP4 Inf in the tensor", "NVFP4: ones, and +Inf in the first block", "NVFP4", x, 1, (0,)))
    x64 = np.ones(32)
    x64[3] = 1e300
    probes.append(("NVFP4 overflowing amax", "NVFP4, float64: ones, and 1e300 in the first block", "NVFP4", x64, 0,
                   (3, 0)))
    x = np.ones(32, f32)
    x[1] = -0.0
    probes.append(("NVFP4 negative zero", "NVFP4: ones and a −0", "NVFP4", x, 0, (1,)))
    return probes


def block_conventions_table() -> list[ConventionProbe]:
    """Where the three conventions differ: each probe quantized under each convention (MX with
    rceil, the rule they all have)."""
    return [ConventionProbe(name, desc, elems, compare_conventions(x, bf, block))
            for name, desc, bf, x, block, elems in _probe_tensors()]
