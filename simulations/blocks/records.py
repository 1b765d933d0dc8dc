"""The MX and NVFP4 block formats as `BlockFormat` views of the quant wing's recipe records, and the
MX scale rule, kept under their old names (the records and rules themselves live in
`lowprec.simulations.quant`: `quant.RECIPES`, `quant.scale_rules`).

A block format stores elements of an `element` format in blocks of `block_size` consecutive values
that share one scale of a `scale` format, and optionally one more `tensor_scale` for the whole tensor:
MX (OCP Microscaling Formats v1.0 §5–6: 32 elements under an E8M0 scale 2^X — MXFP8, MXFP6, MXFP4)
and NVFP4 (E2M1 elements, an E4M3FN scale per 16 elements and an FP32 tensor scale). `BLOCK_FORMATS`
maps each name to its record, made from the recipe of the same name (`mxfp8_e4m3` → `MXFP8_E4M3`);
bits per element are element bits plus the block scale amortised (MXFP8 8.25, MXFP6 6.25, MXFP4
4.25, NVFP4 4.5 plus the FP32 tensor scale over the tensor). How a real implementation rounds is a
separate record, a block convention (`quant.conventions`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lowprec.formats import E8M0, FP32, FloatFormat

from ..quant.nvfp4 import nvfp4_bits_per_element
from ..quant.recipes import RECIPES, Recipe, Scheme
from ..quant.scale_rules import (E8M0_BIAS, E8M0_NAN_CODE, MX_ELEMENT_FORMATS, ScaleRule, check_block_size,
                                 element_format, mx_scale_exponent, scale_rule_of)

__all__ = [
    "BLOCK_FORMATS",
    "BlockFormat",
    "E8M0_BIAS",
    "E8M0_NAN_CODE",
    "MXFP4",
    "MXFP6_E2M3",
    "MXFP6_E3M2",
    "MXFP8_E4M3",
    "MXFP8_E5M2",
    "MX_ELEMENT_FORMATS",
    "NVFP4",
    "ScaleRule",
    "check_block_size",
    "element_format",
    "get_block_format",
    "mx_bits_per_element",
    "mx_scale_exponent",
    "nvfp4_bits_per_element",
    "scale_rule_of",
]


@dataclass(frozen=True)
class BlockFormat:
    """One block-scaled format: which element format, how many elements share a scale, in what."""

    name: str  # registry key, e.g. "MXFP8_E4M3"
    family: str  # "MX" (OCP Microscaling: a power-of-two E8M0 scale) or "NVFP4"
    element: FloatFormat  # format of each element
    block_size: int  # consecutive elements (along the block axis) that share one scale
    scale: FloatFormat  # format of the block scale: E8M0 for MX, E4M3FN for NVFP4
    tensor_scale: FloatFormat | None = None  # a second-level scale for the whole tensor (NVFP4: FP32)

    @classmethod
    def of(cls, recipe: Recipe) -> "BlockFormat":
        """The block format of an MX or NVFP4 recipe record."""
        elem, scale = recipe.fmt, recipe.scale_format.storage_format()
        assert isinstance(elem, FloatFormat) and isinstance(scale, FloatFormat)
        family = "MX" if recipe.scheme is Scheme.MX else "NVFP4"
        return cls(recipe.name.upper(), family, elem, recipe.block_elements, scale,
                   FP32 if recipe.second_level == "tensor" else None)

    @property
    def bits_per_element(self) -> float:
        """Element bits plus the block scale's bits amortised (the tensor scale not counted)."""
        return self.element.bits + self.scale.bits / self.block_size

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "family": self.family, "element": self.element.name,
                "block_size": self.block_size, "scale": self.scale.name,
                "tensor_scale": None if self.tensor_scale is None else self.tensor_scale.name,
                "bits_per_element": self.bits_per_element}


BLOCK_FORMATS: dict[str, BlockFormat] = {
    bf.name: bf for bf in (BlockFormat.of(RECIPES[n]) for n in
                           ("mxfp8_e4m3", "mxfp8_e5m2", "mxfp6_e3m2", "mxfp6_e2m3", "mxfp4", "nvfp4"))
}
MXFP8_E4M3 = BLOCK_FORMATS["MXFP8_E4M3"]
MXFP8_E5M2 = BLOCK_FORMATS["MXFP8_E5M2"]
MXFP6_E3M2 = BLOCK_FORMATS["MXFP6_E3M2"]
MXFP6_E2M3 = BLOCK_FORMATS["MXFP6_E2M3"]
MXFP4 = BLOCK_FORMATS["MXFP4"]
NVFP4 = BLOCK_FORMATS["NVFP4"]


def get_block_format(name: str | BlockFormat) -> BlockFormat:
    """The block format called `name` (case-insensitive; '-' for '_'); a BlockFormat passes through.
    Raises ValueError naming the known ones."""
    if isinstance(name, BlockFormat):
        return name
    if isinstance(name, str):
        key = name.strip().upper().replace("-", "_")
        if key in BLOCK_FORMATS:
            return BLOCK_FORMATS[key]
    raise ValueError(f"unknown block format {name!r}; known: {', '.join(BLOCK_FORMATS)}")


def mx_bits_per_element(elem_format: str = "E4M3FN", block_size: int = 32) -> float:
    """Element bits + E8M0 bits / block_size: MXFP8 8.25, MXFP6 6.25, MXFP4 4.25 at block 32."""
    f = element_format(elem_format, MX_ELEMENT_FORMATS)
    return f.bits + E8M0.bits / check_block_size(block_size)
