"""Pre-quantized checkpoint layouts as data: how DeepSeek, gpt-oss, NVIDIA ModelOpt and
llm-compressor (compressed-tensors) store a quantized weight in a `.safetensors` file, how their own
published code dequantizes it, and which lowprec recipe (`simulations.quant`) has the same codes
and scales, so every metric, plot and convention of the lab applies to the tensor.

One `Layout` record per layout, in `LAYOUTS`; the functions below work from the record:

- `deepseek_fp8` — DeepSeek-V3 / V3.1 (and the `quant_method: fp8` family): `NAME` holds E4M3FN
  codes (`F8_E4M3`), `NAME_scale_inv` one FP32 *decode* scale per 128 × 128 tile of the 2-D weight
  (the grid is ceil(rows / 128) × ceil(cols / 128): the last tiles may be partial). V3.1 declares
  `scale_fmt: ue8m0` and stores powers of two, still as FP32. Dequantization, as DeepSeek-V3's
  `inference/kernel.py` `weight_dequant` computes it: the E4M3 value widened to FP32 times the
  tile's FP32 scale, one FP32 multiply (one rounding). Recipes: `fp8_128x128@deepseek` (FP32
  scales), `fp8_128x128_ue8m0` (UE8M0), any other 128 × 128 FP8 tile recipe.
- `gptoss_mxfp4` — OpenAI gpt-oss MoE experts: `NAME_blocks` (`U8`, shape (…, rows, cols / 32, 16))
  holds two E2M1 codes per byte, the first element of each pair in the *low* nibble; `NAME_scales`
  (`U8`, shape (…, rows, cols / 32)) one E8M0 exponent per 32 elements, biased by 127. The logical
  tensor is (…, rows, cols). Dequantization, as transformers' `convert_moe_packed_tensors` computes
  it: the E2M1 value (a BF16 table) times 2^(code − 127) by `torch.ldexp`, in BF16 — exact, except
  that scale code 255 (NaN in OCP's E8M0) gives 2^128 there: 0 stays 0, 0.5 gives 2^127, larger
  values overflow to ±Inf. (transformers then transposes the last two axes for its own matmul; the
  lab keeps the blocks along the last axis, the contraction axis.) Recipes: `mxfp4` under any
  convention.
- `modelopt_nvfp4` — NVIDIA ModelOpt's NVFP4 export: `NAME` (`U8`, shape (…, cols / 2)) two E2M1
  codes per byte, the even element in the low nibble; `NAME_scale` (`F8_E4M3`) one E4M3 scale per
  16 elements along the last axis; `NAME_scale_2` (`F32`, one value) the second-level decode scale.
  16 × 16 tiles (`nvfp4_16x16`) are stored as ModelOpt's 1 × 16 scales (each tile's scale repeated
  on its 16 rows, what a 1 × 16 kernel reads), or as a (rows / 16, cols / 16) grid. Dequantization,
  as ModelOpt's `NVFP4QTensor.dequantize` computes it: per block `s = float32(scale) · scale_2`
  (an FP32 multiply), then `value · s` (a second FP32 multiply): two roundings, where the recipe's
  own `dequantize()` forms value · scale · scale_2 exactly and rounds once (and ModelOpt's E2M1 table
  holds +0 for code 0b1000, the recipe −0). Recipes: `nvfp4`,
  `nvfp4_16x16`, `nvfp4_4over6` under any convention (one FP32 second level per tensor).
- `compressed_tensors_fp8` — llm-compressor's compressed-tensors `float-quantized` format: `NAME`
  E4M3FN codes and `NAME_scale` the decode scale, per tensor (shape () or (1,)) or per output channel
  (shape (rows, 1)), stored as FP32 (or BF16 / FP16). Dequantization, as compressed-tensors'
  `_dequantize` computes it: the code widened to the scale's dtype times the scale, in that dtype
  (one rounding). Recipes: `e4m3_tensor`, `e4m3_row`; their FP32 encode scale's exact reciprocal is
  stored as the FP32 decode scale the format keeps (rounded once, as Transformer Engine's
  `scale_inv` is), and the reader reports that stored scale.

Names and dtypes recognise a layout (`recognise`), or the checkpoint's `config.json` /
`hf_quant_config.json` (`layout_from_config`), or the caller (`--layout`). Every check a file can
fail — a missing partner tensor, a scale of the wrong dtype or shape (a transposed grid named so),
codes of the wrong dtype — is one line naming the tensor and the problem (`LayoutError`).

What lowprec writes (`lab.writeback`) also records, in the config entry, each tensor's recipe and
the SHA-256 of every stored part, so a file changed afterwards — nibbles swapped, a square scale grid
transposed — is refused with the change named (`diagnose_digest`), where a file from elsewhere can
only be checked for what its names, dtypes and shapes declare.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from typing import Any, Sequence

import ml_dtypes
import numpy as np

from lowprec import formats
from lowprec.formats import E2M1, E4M3FN, E8M0

from ..quant.recipes import Recipe, ScaleFormat, Scheme, get_recipe, matrix_shape

__all__ = [
    "LAYOUTS",
    "Geometry",
    "Layout",
    "LayoutError",
    "SAFETENSORS_ITEMSIZE",
    "dequantize_window",
    "digest",
    "geometry",
    "get_layout",
    "layout_from_config",
    "recognise",
    "stored_from_result",
]


class LayoutError(ValueError):
    """A quantized tensor that does not follow its layout: one line naming the tensor and the problem."""


#: bytes per element of the safetensors dtypes the layouts store
SAFETENSORS_ITEMSIZE: dict[str, int] = {"F8_E4M3": 1, "F8_E5M2": 1, "F8_E8M0": 1, "U8": 1, "I8": 1, "BF16": 2,
                                        "F16": 2, "F32": 4, "F64": 8}
_NUMPY_OF: dict[str, Any] = {"F8_E4M3": np.uint8, "F8_E8M0": np.uint8, "U8": np.uint8, "F32": np.float32,
                             "BF16": ml_dtypes.bfloat16, "F16": np.float16, "F64": np.float64}


@dataclass(frozen=True)
class Layout:
    """One way a producer stores a quantized weight (see the module docstring)."""

    name: str  # registry key (`--layout NAME`)
    producer: str  # who writes it
    element: str  # the element format (a `formats` name)
    packed: bool  # two E2M1 codes per byte, the first element of each pair in the low nibble
    parts: tuple[str, ...]  # suffixes added to the tensor's name: the codes' own first ("" = the name itself)
    config_file: str  # where the checkpoint declares it: config.json or hf_quant_config.json
    scale_dtypes: tuple[str, ...]  # safetensors dtypes its block scales may have (the first is written)
    dequantization: str  # the producer's formula, as its code computes it
    source: str  # the producer's published code this follows
    description: str

    def accepts(self, recipe: str | Recipe) -> str | None:
        """Why `recipe` cannot be stored in this layout, or None when it can."""
        r = get_recipe(recipe)
        if r.transform is not None:
            return (f"recipe {r.name} stores x·H (the Hadamard-transformed weight); no loader of {self.name} undoes "
                    f"the transform")
        if self.name == "deepseek_fp8":
            if r.scheme is not Scheme.FP8_TILES or r.block != (128, 128):
                return f"{self.name} stores E4M3 with one scale per 128×128 tile (fp8_128x128 recipes), not {r.name}"
            return None
        if self.name == "gptoss_mxfp4":
            if r.scheme is not Scheme.MX or r.element != "E2M1" or r.block != (1, 32):
                return f"{self.name} stores MXFP4 (E2M1 with an E8M0 scale per 32: the mxfp4 recipe), not {r.name}"
            return None
        if self.name == "modelopt_nvfp4":
            if r.scheme is not Scheme.NVFP4:
                return f"{self.name} stores NVFP4 (the nvfp4 recipes), not {r.name}"
            if r.second_level != "tensor":
                return (f"{self.name} stores one FP32 second-level scale per tensor; recipe {r.name} has one per "
                        f"{r.second_level}")
            return None
        if self.name == "compressed_tensors_fp8":
            if r.scheme is not Scheme.SCALED or r.element != "E4M3FN" or r.granularity not in ("tensor", "row"):
                return (f"{self.name} stores E4M3 with a scale per tensor or per output channel (e4m3_tensor, "
                        f"e4m3_row), not {r.name}")
            return None
        raise ValueError(f"unknown layout {self.name!r}")

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "producer": self.producer, "element": self.element, "packed": self.packed,
                "parts": list(self.parts), "config_file": self.config_file, "scale_dtypes": list(self.scale_dtypes),
                "dequantization": self.dequantization, "source": self.source, "description": self.description}


LAYOUTS: dict[str, Layout] = {lay.name: lay for lay in (
    Layout("deepseek_fp8", "DeepSeek-V3 / V3.1", "E4M3FN", False, ("", "_scale_inv"), "config.json", ("F32",),
           "float32(e4m3) · scale_inv, one FP32 multiply per element",
           "deepseek-ai/DeepSeek-V3 inference/kernel.py weight_dequant (block_size 128)",
           "E4M3 weight with an FP32 decode scale per 128×128 tile (V3.1: UE8M0 powers of two, stored as FP32)"),
    Layout("gptoss_mxfp4", "OpenAI gpt-oss", "E2M1", True, ("_blocks", "_scales"), "config.json", ("U8", "F8_E8M0"),
           "ldexp(bf16 E2M1 value, scale − 127) in BF16 (scale 255 gives 2^128, not NaN)",
           "huggingface/transformers integrations/mxfp4.py convert_moe_packed_tensors (FP4_VALUES, low nibble "
           "first, scales − 127)",
           "MXFP4: E2M1 codes packed two per byte (low nibble first) with an E8M0 scale per 32 elements"),
    Layout("modelopt_nvfp4", "NVIDIA ModelOpt", "E2M1", True, ("", "_scale", "_scale_2"), "hf_quant_config.json",
           ("F8_E4M3",),
           "value · float32(float32(weight_scale) · weight_scale_2): two FP32 multiplies",
           "NVIDIA/TensorRT-Model-Optimizer modelopt/torch/quantization/qtensor/nvfp4_tensor.py "
           "NVFP4QTensor.dequantize (packed: q[1::2] << 4 | q[0::2])",
           "NVFP4: E2M1 codes packed two per byte (low nibble first), an E4M3 scale per 16, an FP32 scale_2"),
    Layout("compressed_tensors_fp8", "llm-compressor (compressed-tensors)", "E4M3FN", False, ("", "_scale"),
           "config.json", ("F32", "BF16", "F16"),
           "code.to(scale.dtype) · scale, in the scale's dtype (one rounding)",
           "vllm-project/compressed-tensors quantization/lifecycle/forward.py _dequantize",
           "E4M3 weight with a decode scale per tensor or per output channel (float-quantized format)"),
)}


def get_layout(name: str | Layout) -> Layout:
    """The layout called `name`; ValueError naming the known ones."""
    if isinstance(name, Layout):
        return name
    if not isinstance(name, str):
        raise TypeError(f"a layout is named by text, got {type(name).__name__}")
    key = name.strip().lower().replace("-", "_")
    if key not in LAYOUTS:
        raise ValueError(f"unknown layout {name!r}; layouts: {', '.join(LAYOUTS)}")
    return LAYOUTS[key]


# ------------------------------------------------------------------------------------------------
# geometry: where a tensor's scales sit on its matrix view
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Geometry:
    """A quantized tensor's scale layout on its matrix view (rows × cols): one scale per tile of
    `tile` = (tile rows, tile cols) elements, `grid` = (grid rows, grid cols) of them; with a second
    level (ModelOpt's scale_2) above them. `expand_rows` (ModelOpt 16×16 stored per 1×16): the file
    holds the tile scales repeated on every row, i.e. a (rows, grid cols) array."""

    shape: tuple[int, ...]  # the logical tensor
    tile: tuple[int, int]
    grid: tuple[int, int]
    second_level: bool = False
    expand_rows: bool = False

    @property
    def rows(self) -> int:
        return matrix_shape(self.shape)[0]

    @property
    def cols(self) -> int:
        return matrix_shape(self.shape)[1]

    @property
    def stored_grid_rows(self) -> int:
        """Rows of scales the file holds (the grid's, or every row's with `expand_rows`)."""
        return self.rows if self.expand_rows else self.grid[0]

    def grid_rows_of(self, lo: int, hi: int) -> tuple[int, int]:
        """The stored scale rows that rows lo..hi of the matrix view use."""
        if self.expand_rows:
            return lo, hi
        tr = self.tile[0]
        return lo // tr, -(-hi // tr)

    def expand(self, scales: np.ndarray, lo: int, hi: int, col_lo: int = 0, col_hi: int | None = None) -> np.ndarray:
        """The scale of each element of rows lo..hi (columns col_lo..col_hi) from the stored scale rows
        `grid_rows_of(lo, hi)` (any per-block array laid out as they are), by repeating rows and
        columns (no per-element index arrays)."""
        col_hi = self.cols if col_hi is None else col_hi
        s2 = scales.reshape(scales.shape[0], -1)
        tr = 1 if self.expand_rows else self.tile[0]
        g0 = lo // tr
        counts = np.diff(np.clip(np.arange(g0, g0 + s2.shape[0] + 1, dtype=np.int64) * tr, lo, hi)).astype(np.int64)
        rows = np.repeat(s2, counts, axis=0)
        tc = self.tile[1]
        c0, c1 = col_lo // tc, -(-col_hi // tc)
        off = col_lo - c0 * tc
        return np.repeat(rows[:, c0:c1], tc, axis=1)[:, off:off + (col_hi - col_lo)]


def geometry(layout: str | Layout, recipe: str | Recipe, shape: Sequence[int], *, compact_tiles: bool = False
             ) -> Geometry:
    """The scale geometry of `recipe` stored in `layout` for a tensor of `shape` (see Geometry);
    `compact_tiles`: ModelOpt 16×16 tiles stored as a grid rather than per row."""
    lay, r = get_layout(layout), get_recipe(recipe)
    shp = tuple(int(s) for s in shape)
    rows, cols = matrix_shape(shp)
    if lay.name == "compressed_tensors_fp8":
        if r.granularity == "tensor":
            return Geometry(shp, (rows, cols), (1, 1))
        return Geometry(shp, (1, cols), (rows, 1))
    br, bc = r.block
    grid = (-(-rows // br), -(-cols // bc))
    second = r.second_level is not None
    expand = lay.name == "modelopt_nvfp4" and br > 1 and not compact_tiles
    return Geometry(shp, (br, bc), grid, second, expand)


# ------------------------------------------------------------------------------------------------
# the stored parts of a quantized tensor, and back
# ------------------------------------------------------------------------------------------------


def part_names(layout: str | Layout, name: str) -> dict[str, str]:
    """role → the tensor name that holds it, for a logical tensor `name` ("codes", "scales",
    and "scale_2" for ModelOpt)."""
    lay = get_layout(layout)
    if lay.name == "gptoss_mxfp4":
        return {"codes": f"{name}_blocks", "scales": f"{name}_scales"}
    out = {"codes": name, "scales": name + lay.parts[1]}
    if lay.name == "modelopt_nvfp4":
        out["scale_2"] = name + "_scale_2"
    return out


def stored_shapes(layout: str | Layout, geo: Geometry, scale_dtype: str | None = None) -> dict[str, tuple[str, tuple[int, ...]]]:
    """role → (safetensors dtype, shape) of each stored part of a tensor of geometry `geo`."""
    lay = get_layout(layout)
    shp = geo.shape
    sd = scale_dtype or lay.scale_dtypes[0]
    if lay.name == "deepseek_fp8":
        return {"codes": ("F8_E4M3", shp), "scales": (sd, geo.grid)}
    if lay.name == "gptoss_mxfp4":
        g = geo.grid[1]
        return {"codes": ("U8", shp[:-1] + (g, 16)), "scales": (sd, shp[:-1] + (g,))}
    if lay.name == "modelopt_nvfp4":
        scales = (shp[:-1] + (geo.grid[1],)) if geo.tile[0] == 1 or geo.expand_rows else geo.grid
        return {"codes": ("U8", shp[:-1] + (shp[-1] // 2,)), "scales": (sd, scales), "scale_2": ("F32", ())}
    if geo.grid == (1, 1) and geo.tile[0] == geo.rows:
        return {"codes": ("F8_E4M3", shp), "scales": (sd, (1,))}
    return {"codes": ("F8_E4M3", shp), "scales": (sd, (geo.grid[0], 1))}


def stored_from_result(layout: str | Layout, q: Any, geo: Geometry) -> dict[str, np.ndarray]:
    """The arrays a layout stores for a `quant.QuantResult` `q` of a chunk of rows of a tensor's matrix
    view: "codes" (chunk rows × stored bytes per row: E4M3 codes, or two E2M1 codes per byte, the first
    element in the low nibble), "scales" (the stored scale rows of the chunk: FP32 decode scales, E8M0
    or E4M3 codes as uint8, one row per stored grid row) and, for ModelOpt, "scale_2" (its FP32
    second level)."""
    lay = get_layout(layout)
    codes = np.ascontiguousarray(q.codes, dtype=np.uint8)
    codes = codes.reshape(-1, codes.shape[-1]) if codes.ndim else codes.reshape(1, 1)
    if lay.packed:
        codes = formats.pack_fp4(codes)
    if lay.name == "deepseek_fp8":
        return {"codes": codes, "scales": np.ascontiguousarray(q.scales, dtype=np.float32)}
    if lay.name == "gptoss_mxfp4":
        sc = np.ascontiguousarray(q.scale_codes, dtype=np.uint8)
        return {"codes": codes, "scales": sc.reshape(-1, sc.shape[-1])}
    if lay.name == "modelopt_nvfp4":
        sc = np.ascontiguousarray(q.scale_codes, dtype=np.uint8)
        sc = sc.reshape(-1, sc.shape[-1])
        if geo.expand_rows:
            sc = np.repeat(sc, geo.tile[0], axis=0)[:codes.shape[0]]
        return {"codes": codes, "scales": sc, "scale_2": np.asarray(q.tensor_scale, dtype=np.float32).reshape(())}
    # compressed-tensors: the FP32 rounding of the recipe's exact decode scale
    with np.errstate(over="ignore"):
        dec = np.asarray(q.scales, dtype=np.float64).astype(np.float32)
    return {"codes": codes, "scales": dec.reshape(-1, 1)}


def scale_values(layout: str | Layout, raw: np.ndarray, dtype: str) -> tuple[np.ndarray, np.ndarray | None]:
    """(decode scales as float64, their codes where the scale has a low-precision format) of stored
    scale bytes `raw` (a uint8 / float array viewed from the file)."""
    lay = get_layout(layout)
    if lay.name == "gptoss_mxfp4":
        codes = np.asarray(raw, dtype=np.uint8)
        return formats.decode(codes, E8M0).astype(np.float64), codes
    if lay.name == "modelopt_nvfp4":
        codes = np.asarray(raw, dtype=np.uint8)
        return formats.decode(codes, E4M3FN).astype(np.float64), codes
    return np.asarray(raw, dtype=_NUMPY_OF[dtype]).astype(np.float64), None


def ue8m0_codes(scales: np.ndarray) -> np.ndarray | None:
    """The UE8M0 codes of FP32 scales when every one is a positive normal power of two (DeepSeek-V3.1's
    `scale_fmt: ue8m0`), else None."""
    s = np.asarray(scales, dtype=np.float32)
    bits = s.view(np.uint32)
    if s.size and not np.all((bits & np.uint32(0x807FFFFF)) == 0):
        return None
    exp = (bits >> np.uint32(23)) & np.uint32(0xFF)
    if s.size and (np.any(exp == 0) or np.any(exp == 0xFF)):
        return None
    return exp.astype(np.uint8)


# ------------------------------------------------------------------------------------------------
# dequantization, as each producer's code computes it
# ------------------------------------------------------------------------------------------------


def _bf16_round(x: np.ndarray) -> np.ndarray:
    """x rounded to BF16 (nearest even; beyond BF16's range: ±Inf), back as float32."""
    with np.errstate(over="ignore", invalid="ignore"):
        return np.asarray(x, dtype=np.float32).astype(ml_dtypes.bfloat16).astype(np.float32)


def dequantize_window(layout: str | Layout, codes: np.ndarray, scales: np.ndarray, scale_2: float | None,
                      scale_dtype: str) -> np.ndarray:
    """Dequantized values (float32) of element `codes` (uint8, one per element) under the per-element
    stored `scales` (as stored: float32 / bfloat16 / float16 values, or uint8 codes), by the
    producer's own arithmetic (see the module docstring and each Layout's `dequantization`)."""
    lay = get_layout(layout)
    with np.errstate(over="ignore", invalid="ignore"):
        if lay.name == "deepseek_fp8":
            v = formats.decode(codes, E4M3FN).astype(np.float32)
            return (v * np.asarray(scales, dtype=np.float32)).astype(np.float32)
        if lay.name == "gptoss_mxfp4":
            v = formats.decode(codes, E2M1).astype(np.float64)
            e = np.asarray(scales, dtype=np.int64) - 127  # ldexp's exponent; code 255 gives 2^128
            return _bf16_round(np.ldexp(v, e.astype(np.int32)))
        if lay.name == "modelopt_nvfp4":
            block = (formats.decode(np.asarray(scales, dtype=np.uint8), E4M3FN).astype(np.float32)
                     * np.float32(scale_2 if scale_2 is not None else 1.0)).astype(np.float32)
            v = formats.decode(codes, E2M1).astype(np.float32) + np.float32(0.0)  # ModelOpt's table: code 8 is +0
            return (v * block).astype(np.float32)
        # compressed-tensors: in the scale's dtype
        v = formats.decode(codes, E4M3FN).astype(np.float32)
        s = np.asarray(scales)
        if scale_dtype == "F32":
            return (v * s.astype(np.float32)).astype(np.float32)
        prod = v * s.astype(np.float32)  # exact in float32 (4 × 11 significant bits at most)
        if scale_dtype == "BF16":
            return _bf16_round(prod)
        return prod.astype(np.float16).astype(np.float32)


# ------------------------------------------------------------------------------------------------
# recognising a layout: names and dtypes, the config
# ------------------------------------------------------------------------------------------------


def layout_from_config(config: dict[str, Any] | None, hf_quant: dict[str, Any] | None) -> tuple[str | None, str]:
    """(layout, why) a checkpoint's `config.json` `quantization_config` or `hf_quant_config.json`
    declares; (None, "") when it declares none the lab reads (another method: its tensors are then
    judged by their names and dtypes). ValueError for a compressed-tensors format other than FP8."""
    if isinstance(hf_quant, dict):
        producer = hf_quant.get("producer", {})
        quant = hf_quant.get("quantization", {})
        algo = str(quant.get("quant_algo", "")).upper() if isinstance(quant, dict) else ""
        if algo == "NVFP4":
            name = producer.get("name", "modelopt") if isinstance(producer, dict) else "modelopt"
            return "modelopt_nvfp4", f"hf_quant_config.json: {name} quant_algo NVFP4"
    qc = config.get("quantization_config") if isinstance(config, dict) else None
    if not isinstance(qc, dict):
        return None, ""
    method = str(qc.get("quant_method", "")).lower()
    if method == "fp8":
        return "deepseek_fp8", "config.json quant_method fp8 (DeepSeek's block FP8)"
    if method == "mxfp4":
        return "gptoss_mxfp4", "config.json quant_method mxfp4 (gpt-oss)"
    if method == "modelopt":
        algo = str(qc.get("quant_algo", "")).upper()
        if algo == "NVFP4":
            return "modelopt_nvfp4", "config.json quant_method modelopt, quant_algo NVFP4"
        return None, ""
    if method == "compressed-tensors":
        fmt = str(qc.get("format", "")).lower()
        if fmt not in ("float-quantized", "naive-quantized", ""):
            raise ValueError(f"config.json declares compressed-tensors format {fmt!r}; the lab reads "
                             f"float-quantized FP8")
        return "compressed_tensors_fp8", f"config.json quant_method compressed-tensors ({fmt or 'float-quantized'})"
    return None, ""  # another method (gptq, awq, bitsandbytes …): its tensors are read, or skipped, by dtype


def recognise(name: str, dtype: str, names: dict[str, str]) -> str | None:
    """The layout whose codes `name` (of safetensors `dtype`) is, judged by its name, its dtype and its
    partners in `names` (every tensor of the file: name → dtype); None when it is no quantized
    layout's codes. A partner's name decides where it is unambiguous (`NAME_scale_inv`,
    `NAME_blocks`), so codes of the wrong dtype are refused by the layout's checks rather than read
    as another tensor."""
    if name.endswith(("_blocks", ".blocks")):
        return "gptoss_mxfp4"
    if name + "_scale_inv" in names:
        return "deepseek_fp8"
    if name + "_scale_2" in names or (name + "_scale" in names and (dtype == "U8" or names[name + "_scale"] == "F8_E4M3")):
        return "modelopt_nvfp4"
    if name + "_scale" in names and dtype.startswith("F8_"):
        return "compressed_tensors_fp8"
    return None


def gptoss_base(name: str) -> str:
    """The logical name of a gpt-oss `*_blocks` / `*.blocks` tensor."""
    return name[: -len("_blocks")] if name.endswith("_blocks") else name[: -len(".blocks")]


def gptoss_scales_name(blocks_name: str) -> str:
    return blocks_name[: -len("blocks")] + "scales"


# ------------------------------------------------------------------------------------------------
# digests: what lowprec recorded when it wrote a tensor
# ------------------------------------------------------------------------------------------------


def digest(data: bytes | np.ndarray) -> str:
    """SHA-256 (hex) of stored bytes."""
    buf = data if isinstance(data, bytes) else np.ascontiguousarray(data).view(np.uint8).tobytes()
    return hashlib.sha256(buf).hexdigest()


def swap_nibbles(raw: np.ndarray) -> np.ndarray:
    """Each byte with its two nibbles exchanged."""
    b = np.asarray(raw, dtype=np.uint8)
    return ((b & np.uint8(0x0F)) << np.uint8(4)) | (b >> np.uint8(4))


def diagnose_scales(raw: np.ndarray, shape: tuple[int, ...], recorded: str) -> str:
    """Why stored scales `raw` (shaped `shape`) do not match the digest lowprec `recorded`: a
    transposed grid when the transpose matches, else a change it cannot name."""
    a = np.asarray(raw).reshape(shape)
    if a.ndim >= 2 and digest(np.ascontiguousarray(np.swapaxes(a, -1, -2))) == recorded:
        return "its scale grid is transposed (rows and columns of tiles exchanged)"
    return "its scales differ from what lowprec wrote (changed after writing)"


def element_size_bits(layout: str | Layout) -> int:
    return 4 if get_layout(layout).packed else 8


def bits_of(layout: str | Layout, recipe: str | Recipe, shape: Sequence[int]) -> float:
    """Bits per element as stored (the recipe's, which counts the same scales)."""
    return get_recipe(recipe).bits_per_element(tuple(int(s) for s in shape))


def is_pow2(values: np.ndarray) -> np.ndarray:
    """Whether each (finite, positive) value is an exact power of two (float64 view)."""
    v = np.asarray(values, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        m, _ = np.frexp(v)
    return np.isfinite(v) & (v > 0) & (m == 0.5)


def truncate_to_exponent(values: np.ndarray) -> np.ndarray:
    """What a UE8M0 kernel keeps of FP32 scales: the exponent byte only (bits & 0x7F800000), i.e.
    2^floor(log2 s) for a normal s (sglang #39193, DeepGEMM's exponent-only packing)."""
    s = np.asarray(values, dtype=np.float32)
    return (s.view(np.uint32) & np.uint32(0x7F800000)).view(np.float32)


def recipe_scale_format(recipe: str | Recipe) -> ScaleFormat:
    return get_recipe(recipe).scale_format


def n_blocks(geo: Geometry) -> int:
    return math.prod(geo.grid)
