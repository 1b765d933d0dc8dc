"""Block-format conventions as data: how a real implementation turns a block's amax into its scale,
scales the elements and casts them — for MX (E8M0 scales), NVFP4 (E4M3 block scales under an FP32
tensor or row scale), FP8 blockwise tiles (1×128 / 128×128 under FP32, power-of-two or UE8M0 scales)
and MXINT8 — the block-format analogue of `formats.CastPolicy`.

A `BlockConvention` is one record of named choices; every choice is a member of an enum whose
docstring carries its formula, `fl32(·)` meaning "rounded to float32 (nearest-even)" and `max_elem`,
`emax_elem` the element format's largest value and its exponent. Five named conventions, each a
measured or read implementation (`CONVENTIONS`, `get_block_convention`; `BLOCK_CONVENTIONS` holds
the three that implement MX and NVFP4):

- `ocp` — our reading of the OCP Microscaling Formats v1.0 specification (§5–6), and of NVIDIA's NVFP4
  description for the two-level format; exact arithmetic (every quotient formed exactly, rounded
  once). It is the default of `quantize_mx` / `quantize_nvfp4` and is the behaviour those functions
  had before conventions were named. Its MXINT8 is gfloat 0.5.2's (`format_info_mxint8`,
  `quantize_block`): the OCP INT8 element with −2 (0x80) reachable.
- `torchao` — torchao 0.18.0 (PyPI), `torchao.prototype.mx_formats`: `mx_tensor.to_mx` (scale modes
  floor, ceil, even, rceil; eager, CPU) and `nvfp4_tensor.nvfp4_quantize` with the per-tensor scale
  `per_tensor_amax_to_scale(torch.max(torch.abs(x)))`, as its NVFP4 workflow computes it.
- `transformer_engine` — Transformer Engine 2.20.2 (PyPI `transformer_engine`), read from its
  published sources: MXFP8 from `docs/features/low_precision_training/mxfp8/mxfp8.rst`, the C++ test
  reference `tests/cpp/operator/test_cast_mxfp8.cu` (`compute_ref`) with `tests/cpp/test_common.h`
  (`float_to_e8m0`, `exp2f_rcp`) and the kernel helpers `transformer_engine/common/CuTeDSL/utils.py`
  (`exp2f_rcp`) and `utils_fp8.py` (`cvt_f32_to_fp8e8m0fnu`); NVFP4 (1×16 and 16×16) from the
  Python reference `transformer_engine/pytorch/custom_recipes/reference_nvfp4.py`
  (`NVFP4QuantizerRef._quantize_blockwise_reference`: the default path, `nvfp4_use_4over6` with its
  MAE selection, `row_scaled_nvfp4`, and `with_rht`'s fixed sign vector `get_wgrad_sign_vector`);
  FP8 blockwise tiles from `tests/pytorch/references/blockwise_quantizer_reference.py` with
  `quantize_scale_calc.py` (`scale_from_amax_tensor`, eps 0: the `Float8BlockScaling` recipe).
- `deepseek` — DeepSeek-V3's FP8 recipe as DeepGEMM publishes it (`deep_gemm/utils/math.py`,
  `per_token_cast_to_fp8` for 1×128 tiles and `per_block_cast_to_fp8` for 128×128, with and without
  `use_ue8m0` / `ceil_to_ue8m0`): FP8 tiles only.
- `microxcaling` — Microsoft's MX emulation library (`mx/mx_ops.py` `_quantize_mx`,
  `mx/elemwise_ops.py` `_quantize_elemwise_core`, `mx/formats.py`; its default rounding 'nearest'):
  MXINT8 only.

Where they differ (`simulations.blocks.comparison.block_conventions_table` computes each cell from
the models):

| | ocp | torchao | transformer_engine |
|---|---|---|---|
| MX rceil exponent | exact ceil(log2(amax/max_elem)) | ceil of float32 log2 of fl32(amax/max_elem) | exponent of fl32(amax · fl32(1/max_elem)), rounded up |
| MX block at X = −127 | elements × 2^127 | floor: ÷ 2^−126 (F32_MIN_NORMAL); rceil: × 1 | × 2^127 |
| MX Inf / NaN block | NaN scale, zero codes | Inf: scale 2^(128−emax_elem) (floor) or 2^127 (rceil); NaN: NaN scale, and NaN codes (rceil: every element; floor: the NaN/Inf ones, the rest ±0) | NaN skipped by the amax; Inf: scale 2^127, Inf → ±max code |
| NVFP4 tensor amax | finite blocks only; FP32 overflow saturates | every element (NaN/Inf propagate) | every element; Inf gives global scale 1 |
| NVFP4 block scale | E4M3(amax / 6 / ts), exact; may be subnormal or 0 | clamped to [2^−6, 448] | no lower clamp; product with fl32(enc · fl32(1/6)) |
| NVFP4 elements | x / (s · ts), exact; zero scale → zero codes | x · fl32(fl32(1/ts) / s) | x · min(fl32(1/fl32(s · dec)), FLT_MAX): zero scale → ±6 codes |
| −0 / NaN element | −0 code; NaN only in NaN blocks (zero codes) | NaN keeps a NaN-derived code | E2M1: −0 → +0 code, NaN → code 0 |

The ocp convention's rule for an NVFP4 tensor whose amax overflows the FP32 tensor scale (only float64
input can: amax / 2688 > FLT_MAX) is to saturate the tensor scale at FLT_MAX, as every OCP conversion
saturates: the result stays finite, the outlier decodes as the largest NVFP4 magnitude and the
recipe is unchanged for every tensor FP32 can scale. torchao and Transformer Engine take float32 (or
bfloat16) input only, so under their conventions float64 input is rounded to float32 first (1e300
becomes Inf) and their own Inf rule applies.

FP8 blockwise tiles (E4M3 elements, one scale per 1×128 or 128×128 tile of the matrix view; a partial
edge tile is the tile over the elements that exist, as both implementations pad with zeros):

| | transformer_engine | deepseek |
|---|---|---|
| scale | encode s = fl32(448 / amax), decode fl32(1 / s) | decode d = fl32(max(amax, 1e-4) / 448) |
| power of two | s rounded down (frexp) | UE8M0: d rounded up, exponent field clamped to [1, 254] |
| amax 0 / tiny | s = 1 / s = the input dtype's max where 448 / amax is Inf | clamped at 1e-4 |
| Inf / NaN amax | Inf: s = 0 (finite → ±0, Inf → NaN); NaN: s NaN (pow2: ½) | UE8M0: 2^127; FP32: NaN / Inf |
| elements | clamp(fl32(x · s), ±448), torch's E4M3 cast | torch's E4M3 cast of fl32(x · fl32(1 / d)) (saturating) |

MXINT8 (OCP MX v1.0 §5.3: INT8 elements with an implicit 2^-6, an E8M0 scale per 32):

| | ocp (= gfloat) | microxcaling |
|---|---|---|
| exponent | floor(log2 amax), exact; amax 0 → −127 | floor(fl32(log2 amax)); amax 0 → −126 |
| elements | nearest even, saturating at −128 / +127 (−2 reachable) | half away from zero, clamped to ±127 |
| Inf / NaN block | NaN scale, zero codes | NaN scale (every element NaN) |
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from enum import Enum
from typing import Any

import numpy as np

from lowprec import formats
from lowprec.formats import E2M1, E4M3FN, CastPolicy, FloatFormat, Overflow

from .scale_rules import E8M0_BIAS, E8M0_NAN_CODE, MX_ELEMENT_FORMATS, ScaleRule, mx_scale_exponent

__all__ = [
    "AmaxNaN",
    "BLOCK_CONVENTIONS",
    "BlockConvention",
    "CONVENTIONS",
    "DEFAULT_CONVENTION",
    "ElementCast",
    "FLT_MAX",
    "FP8TileScale",
    "GlobalScale",
    "MXElementScaling",
    "MXIntScale",
    "MXRule",
    "MXScale",
    "NVFP4BlockScale",
    "NVFP4ElementScaling",
    "TensorAmax",
    "cast_elements",
    "e4m3_as_float32",
    "element_policy",
    "float32_log2_ceil_codes",
    "get_block_convention",
    "mx_element_multipliers",
    "mx_scale_codes",
    "nvfp4_encode_reciprocal",
    "nvfp4_scales",
    "scale_by_multiplier",
    "torchao_floatx_nan_codes",
]

FLT_MAX = float(np.finfo(np.float32).max)
E2M1_MAX = E2M1.max  # 6
E4M3_MAX = E4M3FN.max  # 448
NVFP4_TENSOR_DIVISOR = E4M3_MAX * E2M1_MAX  # 448 · 6 = 2688, exact in float32
E4M3_NAN_CODE = E4M3FN.magnitude_mask  # 0x7F
TORCH_MAX_NAN = np.array([0xFFFFFFFF], np.uint32).view(np.float32)[0]  # what torch.max returns for NaN


# ------------------------------------------------------------------------------------------------
# the choices
# ------------------------------------------------------------------------------------------------


class AmaxNaN(str, Enum):
    """Whether a NaN element enters an MX block's amax.

    PROPAGATE: amax = max |x| is NaN when any element is (torch.amax; the OCP reading: the block is NaN).
    IGNORE: NaN elements are skipped, as `std::max(amax, |x|)` / `fmaxf` do (Transformer Engine):
        amax = max over the non-NaN |x|, 0 for an all-NaN block; ±Inf still counts.
    """

    PROPAGATE = "propagate"
    IGNORE = "ignore"


class MXScale(str, Enum):
    """How an MX block's E8M0 scale code follows from its amax (the scale is 2^(code − 127)).

    EXACT: X by the ScaleRule's formula on the exact amax (`blocks.records.ScaleRule`), clamped to
        [−127, 127]; code = X + 127; a block holding NaN or ±Inf gets the NaN scale 0xFF (OCP §6.3).
    EXPONENT_FIELD: torchao floor / ceil / even. e = the exponent field of fl32(amax) minus 127 (an
        Inf amax reads as e = 128; even first adds 2^(22 − m) to amax's bits and clears the
        mantissa, m the element's mantissa bits); X = e − emax_elem, + 1 under ceil when amax's
        mantissa is non-zero; clamped to [−127, 128]; a NaN amax gives 0xFF. So an Inf block gets
        the finite scale 2^(128 − emax_elem).
    FLOAT32_LOG2: torchao rceil (eager). d = fl32(amax / max_elem); code = 0xFF for a NaN d, 0xFE
        for an Inf d, else clamp(ceil(fl32(log2 d)), −127, 127) + 127. Both roundings can miss a
        binade: just above max_elem · 2^k, d or its log2 rounds to k and the amax saturates.
    RECIPROCAL_ROUND_UP: Transformer Engine (`float_to_e8m0`). d = fl32(amax · fl32(1 / max_elem));
        code = 0xFF for NaN, 0xFE for Inf, 0 for 0, else d's float32 exponent field, plus one when
        d's mantissa is non-zero — except from 0xFE (satfinite) and for a subnormal d ≤ 2^−127,
        which give their field unchanged.
    """

    EXACT = "exact"
    EXPONENT_FIELD = "exponent_field"
    FLOAT32_LOG2 = "float32_log2"
    RECIPROCAL_ROUND_UP = "reciprocal_round_up"


class MXElementScaling(str, Enum):
    """How an MX element is brought to the element grid before its cast: x · r(code), the product
    in float32 (a power of two, so exact except in float32's subnormal range, where it is rounded).

    EXACT: r = 2^−X, the element divided exactly by its scale; a NaN-scale block gets zero codes.
    DIVIDE_NORMAL: torchao floor / ceil / even: x / max(2^X, 2^−126) — the float32 scale is clamped
        to F32_MIN_NORMAL, so at X = −127 elements are divided by 2^−126 and decode at half their
        value; the NaN scale 0xFF reads as the float32 +Inf (0xFF << 23), so finite elements → ±0 and
        NaN / ±Inf elements → NaN.
    RECIPROCAL_ONE_AT_ZERO: torchao rceil: r = 2^(127 − code), with r(0x00) = 1 (elements of a
        2^−127 block are not scaled up, so they round to zero), r(0xFE) = 2^−127 and r(0xFF) = the
        NaN amax itself (every element becomes NaN). torchao cites Transformer Engine's ptx.cuh
        `exp2f_rcp` at commit b7598aa for this table.
    RECIPROCAL: Transformer Engine 2.20's `exp2f_rcp`: r = 2^(127 − code) for every code up to
        0xFD (r(0x00) = 2^127), r(0xFE) = 2^−127, r(0xFF) = NaN (0x7FFFFFFF).
    """

    EXACT = "exact"
    DIVIDE_NORMAL = "divide_normal"
    RECIPROCAL_ONE_AT_ZERO = "reciprocal_one_at_zero"
    RECIPROCAL = "reciprocal"


class ElementCast(str, Enum):
    """How a scaled element becomes its code (round to nearest even throughout).

    OCP: `formats.encode` under `policy_for('ocp', element)`: saturating; NaN elements occur only in
        NaN-scale blocks, whose codes are set to zero.
    TORCH_CLAMPED: torchao: clamp to ±max_elem (NaN kept), then FP8 through torch's cast
        (`policy_for('torch', element)`: a NaN keeps its sign) and FP6 / FP4 through torchao's
        `_f32_to_floatx_unpacked`, whose NaN gets the code its bits produce:
        ((|bits| + ((bias − 127) << 23) + 2^(22 − m) − 1 + odd) >> (23 − m)) mod 256, with the sign
        bit of the NaN (odd = bit 23 − m of |bits|; +NaN 0x7FC00000 → E2M1 code 3).
    SATFINITE: PTX `cvt.rn.satfinite` (`policy_for('triton_nvidia', element)`): finite overflow and
        ±Inf → ±max, NaN → NaN.
    E2M1_THRESHOLDS: Transformer Engine's `cast_to_fp4x2`: nearest-even by comparisons against the
        midpoints 0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5 (ties to the even code), except that −0 gets
        code 0 (+0) and NaN, matching no comparison, gets code 0.
    """

    OCP = "ocp"
    TORCH_CLAMPED = "torch_clamped"
    SATFINITE = "satfinite"
    E2M1_THRESHOLDS = "e2m1_thresholds"


class TensorAmax(str, Enum):
    """Which elements set an NVFP4 tensor's amax.

    FINITE_BLOCKS: max |x| over the blocks that hold no NaN or ±Inf (those blocks get the NaN scale).
    ALL: max |x| over every element (`torch.max(torch.abs(x))`), Inf counting; a NaN anywhere makes
        it the all-ones NaN 0xFFFFFFFF, as torch 2.13's vectorized CPU max reduction returns (it ORs
        the unordered-compare mask into the result), so NaNs derived from it are negative.
    """

    FINITE_BLOCKS = "finite_blocks"
    ALL = "all"


class GlobalScale(str, Enum):
    """NVFP4's FP32 tensor scale, as the decode scale `ts` that multiplies every block scale.

    DECODE_QUOTIENT: ts = fl32(amax / 2688) from the exact quotient (2688 = 448 · 6); a zero tensor
        gets ts = 1; a quotient below float32's smallest subnormal gets that subnormal; one beyond
        FLT_MAX saturates to FLT_MAX (only float64 input can overflow: amax > 2688 · FLT_MAX).
    DECODE_QUOTIENT_FLOAT32: torchao's `per_tensor_amax_to_scale`: ts = fl32(fl32(amax) / 2688), no
        guard: a zero tensor gives ts = 0 (every block scale becomes 0/0 = NaN), an Inf amax ts = Inf
        (every finite block gets zero codes).
    ENCODE_RECIPROCAL: Transformer Engine: enc = min(fl32(2688 / amax), FLT_MAX), enc = 1 where it
        is 0 (an Inf amax); ts = fl32(1 / enc). A zero tensor gets enc = FLT_MAX.
    """

    DECODE_QUOTIENT = "decode_quotient"
    DECODE_QUOTIENT_FLOAT32 = "decode_quotient_float32"
    ENCODE_RECIPROCAL = "encode_reciprocal"


class NVFP4BlockScale(str, Enum):
    """NVFP4's E4M3 block scale from the block amax (then cast by torch's E4M3 cast where a library
    forms it in float32).

    EXACT_QUOTIENT: E4M3(amax / (6 · ts)), the quotient exact, nearest-even, saturating at 448; no
        lower clamp: it may round to an E4M3 subnormal or to zero.
    CLAMPED_QUOTIENT: torchao: E4M3(clamp(fl32(fl32(amax / 6) / ts), 2^−6, 448)): never below
        E4M3's smallest normal 2^−6.
    SCALED_PRODUCT: Transformer Engine: E4M3(clamp(min(fl32(amax · fl32(enc · fl32(1 / 6))),
        FLT_MAX), ≤ 448)): no lower clamp. A NaN anywhere in the tensor makes every block scale the
        E4M3 NaN; its sign bit is not TE's (in TE's torch reference it depends on the SIMD lane that
        handles the block), and is set here (0xFF).
    """

    EXACT_QUOTIENT = "exact_quotient"
    CLAMPED_QUOTIENT = "clamped_quotient"
    SCALED_PRODUCT = "scaled_product"


class NVFP4ElementScaling(str, Enum):
    """How an NVFP4 element is brought to E2M1's grid, s the decoded block scale.

    EXACT_DIVIDE: x / (s · ts), exact (float64, where both factors are exact); a zero or NaN block
        scale gives zero codes.
    TENSOR_OVER_BLOCK_RECIPROCAL: torchao: x · fl32(fl32(1 / ts) / s), one float32 product.
    CAPPED_RECIPROCAL: Transformer Engine: x · min(fl32(1 / fl32(s · ts)), FLT_MAX): a zero block
        scale multiplies by FLT_MAX, so its non-zero elements saturate to ±6 codes (and still
        dequantize to 0).
    """

    EXACT_DIVIDE = "exact_divide"
    TENSOR_OVER_BLOCK_RECIPROCAL = "tensor_over_block_reciprocal"
    CAPPED_RECIPROCAL = "capped_reciprocal"


class FP8TileScale(str, Enum):
    """How an FP8 blockwise tile's scale follows from its amax (float32 arithmetic; F = 448 for E4M3).

    TE_ENCODE: Transformer Engine's `scale_from_amax_tensor` (eps 0): encode scale s = fl32(F / amax);
        s = the input dtype's largest finite value where that is +Inf (a tiny amax); with
        power-of-two scales s = 2^(e − 1), e the frexp exponent of s (s rounded down to a power of
        two; frexp of a NaN gives e = 0, so a NaN amax gets s = 1/2), and s = 0 for an Inf amax;
        finally s = 1 for amax 0. Decode scale (`scale_inv`) fl32(1 / s); elements x · s.
    DEEPGEMM_DECODE: DeepGEMM's `per_token_cast_to_fp8` / `per_block_cast_to_fp8`: decode scale
        d = fl32(max(amax, fl32(1e-4)) / F) (a NaN amax stays NaN); with UE8M0 scales
        (`ceil_to_ue8m0`) d becomes 2^(k − 127), k = d's float32 exponent field plus one where its
        mantissa is non-zero, clamped to [1, 254]: d rounded up to a power of two in
        [2^-126, 2^127] (NaN and Inf give 2^127), stored as the UE8M0 code k. Elements
        x · fl32(1 / d).
    """

    TE_ENCODE = "te_encode"
    DEEPGEMM_DECODE = "deepgemm_decode"


class MXIntScale(str, Enum):
    """How an MXINT8 block (INT8 elements with an implicit 2^-6, emax_elem 0) gets its exponent X and
    its element codes.

    OCP: gfloat 0.5.2's `compute_scale_amax` and `encode_block`: X = floor(log2 amax) exactly,
        clamped to [−127, 127], amax 0 → −127 (code 0); code = the two's-complement INT8 of
        x / 2^X · 64 rounded to nearest even and saturated at −128 / +127 (−2 = 0x80 is reachable,
        +2 is not); a block holding NaN or ±Inf gets the NaN scale 0xFF and zero codes. (gfloat takes
        numpy's float64 log2 of the amax: the same X for float32 input; for a float64 amax within
        2^-52 below a power of two its log2 rounds up to the power, and gfloat's X is one higher.)
    MICROXCALING: `_shared_exponents` / `_quantize_mx` / `_quantize_elemwise_core` (round
        'nearest'): X = floor(fl32(log2 amax)) with fl32(log2) torch's float32 log2 (an amax just
        below a power of two can round up to it), amax 0 → −126 (log2 of FLT_MIN), X < −127 → −127,
        X > 127 → the NaN scale; code = sign · floor(|x / 2^X · 64| + 0.5) (half away from zero),
        clamped to ±127 (symmetric); a NaN or Inf amax gives the NaN scale and a block of NaN.
    """

    OCP = "ocp"
    MICROXCALING = "microxcaling"


@dataclass(frozen=True)
class MXRule:
    """One MX scale rule as an implementation computes it."""

    rule: ScaleRule  # the rule's name (its exact formula is on ScaleRule)
    scale: MXScale  # how the scale code is computed
    element_scaling: MXElementScaling  # how elements are scaled under that code

    def to_dict(self) -> dict[str, str]:
        return {"rule": self.rule.value, "scale": self.scale.value, "element_scaling": self.element_scaling.value}


@dataclass(frozen=True)
class BlockConvention:
    """How one implementation quantizes MX and NVFP4 blocks, FP8 blockwise tiles and MXINT8 (what it
    has of them); every field a named choice."""

    name: str  # registry key
    source: str  # the implementation and version matched
    float32_input: bool  # input is rounded to float32 first (the implementation takes float32/bf16)
    mx_elements: tuple[str, ...]  # MX element formats the implementation has
    mx_block_sizes: tuple[int, ...] | None  # MX block sizes it has (None: any)
    mx_rules: tuple[MXRule, ...]  # the scale rules it has; the first is its default
    mx_amax_nan: AmaxNaN  # whether NaN elements enter the block amax
    mx_element_cast: ElementCast
    nvfp4_tensor_amax: TensorAmax
    nvfp4_global_scale: GlobalScale
    nvfp4_block_scale: NVFP4BlockScale
    nvfp4_element_scaling: NVFP4ElementScaling
    nvfp4_element_cast: ElementCast
    nvfp4_tiles_2d: bool  # whether it has 16×16 tiles (weights) besides 1×16 blocks
    nvfp4: bool = True  # whether it has NVFP4 at all (the nvfp4_* fields apply only then)
    nvfp4_variants: tuple[str, ...] = ()  # NVFP4 variants beyond the default: "4over6", "row_scaled"
    rht: str = "seeded"  # the signs of its random Hadamard transform (`quant.rht.RHT_CONVENTIONS`)
    fp8_tile_scale: FP8TileScale | None = None  # how FP8 blockwise tiles get their scale (None: no tiles)
    fp8_tile_scale_formats: tuple[str, ...] = ()  # the scale formats its FP8 tiles store (`quant.ScaleFormat`)
    mxint: MXIntScale | None = None  # its MXINT8 rule (None: no MXINT8)

    @property
    def default_rule(self) -> ScaleRule:
        if not self.mx_rules:
            raise ValueError(f"the {self.name} convention has no MX blocks, so no MX scale rule")
        return self.mx_rules[0].rule

    @property
    def rules(self) -> tuple[str, ...]:
        return tuple(r.rule.value for r in self.mx_rules)

    def mx_rule(self, scale_rule: Any = None) -> MXRule:
        """The MXRule for `scale_rule` (None: the default); ValueError naming the rules it has."""
        if not self.mx_rules:
            raise ValueError(f"the {self.name} convention has no MX blocks, so no MX scale rule")
        if scale_rule is None:
            return self.mx_rules[0]
        try:
            wanted = ScaleRule(scale_rule)
        except ValueError:
            allowed = ", ".join(repr(r.value) for r in ScaleRule)
            raise ValueError(f"scale_rule={scale_rule!r} is not one of {allowed}") from None
        for r in self.mx_rules:
            if r.rule is wanted:
                return r
        raise ValueError(f"the {self.name} convention has no scale rule {wanted.value!r}; it has "
                         f"{', '.join(self.rules)}")

    def check_mx(self, elem: FloatFormat, block_size: int) -> None:
        """ValueError when the implementation has no such MX element format or block size."""
        if not self.mx_elements:
            raise ValueError(f"the {self.name} convention has no MX blocks")
        if elem.name not in self.mx_elements:
            raise ValueError(f"the {self.name} convention has no MX blocks of {elem.name}; it has "
                             f"{', '.join(self.mx_elements)}")
        if self.mx_block_sizes is not None and block_size not in self.mx_block_sizes:
            raise ValueError(f"the {self.name} convention has MX blocks of "
                             f"{', '.join(str(b) for b in self.mx_block_sizes)} elements, not {block_size}")

    def check_nvfp4(self, block_2d: bool = False, variant: str | None = None) -> None:
        """ValueError when the implementation has no NVFP4, no 16×16 tiles or not that variant."""
        if not self.nvfp4:
            raise ValueError(f"the {self.name} convention has no NVFP4")
        if block_2d and not self.nvfp4_tiles_2d:
            raise ValueError(f"the {self.name} convention has NVFP4 1×16 blocks only, not 16×16 tiles")
        if variant is not None and variant not in self.nvfp4_variants:
            have = ", ".join(self.nvfp4_variants) or "none"
            raise ValueError(f"the {self.name} convention has no NVFP4 variant {variant!r} (it has: {have})")

    def check_fp8_tiles(self, scale_format: str) -> FP8TileScale:
        """The FP8 tile rule, or ValueError when the implementation has no FP8 tiles with that scale format."""
        if self.fp8_tile_scale is None:
            raise ValueError(f"the {self.name} convention has no FP8 blockwise tiles")
        if scale_format not in self.fp8_tile_scale_formats:
            raise ValueError(f"the {self.name} convention's FP8 tiles store {' or '.join(self.fp8_tile_scale_formats)} "
                             f"scales, not {scale_format}")
        return self.fp8_tile_scale

    def check_mxint(self) -> MXIntScale:
        """The MXINT8 rule, or ValueError when the implementation has none."""
        if self.mxint is None:
            raise ValueError(f"the {self.name} convention has no MXINT8")
        return self.mxint

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"name": self.name, "source": self.source, "float32_input": self.float32_input,
                             "rht": self.rht}
        if self.mx_elements:
            d.update(self._mx_dict())
        if self.nvfp4:
            d.update(self._nvfp4_dict())
        if self.fp8_tile_scale is not None:
            d.update({"fp8_tile_scale": self.fp8_tile_scale.value,
                      "fp8_tile_scale_formats": list(self.fp8_tile_scale_formats)})
        if self.mxint is not None:
            d["mxint"] = self.mxint.value
        return d

    def _mx_dict(self) -> dict[str, Any]:
        return {
            "mx_elements": list(self.mx_elements),
            "mx_block_sizes": None if self.mx_block_sizes is None else list(self.mx_block_sizes),
            "mx_rules": [r.to_dict() for r in self.mx_rules], "mx_amax_nan": self.mx_amax_nan.value,
            "mx_element_cast": self.mx_element_cast.value,
        }

    def _nvfp4_dict(self) -> dict[str, Any]:
        return {
            "nvfp4_tensor_amax": self.nvfp4_tensor_amax.value,
            "nvfp4_global_scale": self.nvfp4_global_scale.value,
            "nvfp4_block_scale": self.nvfp4_block_scale.value,
            "nvfp4_element_scaling": self.nvfp4_element_scaling.value,
            "nvfp4_element_cast": self.nvfp4_element_cast.value, "nvfp4_tiles_2d": self.nvfp4_tiles_2d,
            "nvfp4_variants": list(self.nvfp4_variants),
        }


_EXACT_RULES = tuple(MXRule(r, MXScale.EXACT, MXElementScaling.EXACT)
                     for r in (ScaleRule.FLOOR, ScaleRule.CEIL, ScaleRule.RCEIL, ScaleRule.EVEN))

OCP = BlockConvention(
    name="ocp",
    source="OCP Microscaling Formats (MX) v1.0 §5–6 (floor; ceil, rceil and even computed exactly) and "
           "NVIDIA's NVFP4 description; exact arithmetic; the default",
    float32_input=False,
    mx_elements=MX_ELEMENT_FORMATS,
    mx_block_sizes=None,
    mx_rules=_EXACT_RULES,
    mx_amax_nan=AmaxNaN.PROPAGATE,
    mx_element_cast=ElementCast.OCP,
    nvfp4_tensor_amax=TensorAmax.FINITE_BLOCKS,
    nvfp4_global_scale=GlobalScale.DECODE_QUOTIENT,
    nvfp4_block_scale=NVFP4BlockScale.EXACT_QUOTIENT,
    nvfp4_element_scaling=NVFP4ElementScaling.EXACT_DIVIDE,
    nvfp4_element_cast=ElementCast.OCP,
    nvfp4_tiles_2d=True,
    mxint=MXIntScale.OCP,
)

TORCHAO = BlockConvention(
    name="torchao",
    source="torchao 0.18.0 (PyPI), torchao.prototype.mx_formats: mx_tensor.to_mx (eager) and "
           "nvfp4_tensor.nvfp4_quantize with per_tensor_amax_to_scale(torch.max(torch.abs(x)))",
    float32_input=True,
    mx_elements=MX_ELEMENT_FORMATS,
    mx_block_sizes=None,
    mx_rules=(
        MXRule(ScaleRule.FLOOR, MXScale.EXPONENT_FIELD, MXElementScaling.DIVIDE_NORMAL),
        MXRule(ScaleRule.CEIL, MXScale.EXPONENT_FIELD, MXElementScaling.DIVIDE_NORMAL),
        MXRule(ScaleRule.RCEIL, MXScale.FLOAT32_LOG2, MXElementScaling.RECIPROCAL_ONE_AT_ZERO),
        MXRule(ScaleRule.EVEN, MXScale.EXPONENT_FIELD, MXElementScaling.DIVIDE_NORMAL),
    ),
    mx_amax_nan=AmaxNaN.PROPAGATE,
    mx_element_cast=ElementCast.TORCH_CLAMPED,
    nvfp4_tensor_amax=TensorAmax.ALL,
    nvfp4_global_scale=GlobalScale.DECODE_QUOTIENT_FLOAT32,
    nvfp4_block_scale=NVFP4BlockScale.CLAMPED_QUOTIENT,
    nvfp4_element_scaling=NVFP4ElementScaling.TENSOR_OVER_BLOCK_RECIPROCAL,
    nvfp4_element_cast=ElementCast.TORCH_CLAMPED,
    nvfp4_tiles_2d=False,  # nvfp4_quantize has 1×16 blocks only
)

TRANSFORMER_ENGINE = BlockConvention(
    name="transformer_engine",
    source="Transformer Engine 2.20.2: MXFP8 per docs mxfp8.rst, tests/cpp/operator/test_cast_mxfp8.cu "
           "compute_ref, tests/cpp/test_common.h float_to_e8m0/exp2f_rcp; NVFP4 per "
           "pytorch/custom_recipes/reference_nvfp4.py NVFP4QuantizerRef (1×16 and 16×16, 4over6, row-scaled, "
           "RHT); FP8 blockwise per tests/pytorch/references/blockwise_quantizer_reference.py",
    float32_input=True,
    mx_elements=("E4M3FN", "E5M2"),
    mx_block_sizes=(32,),
    mx_rules=(MXRule(ScaleRule.RCEIL, MXScale.RECIPROCAL_ROUND_UP, MXElementScaling.RECIPROCAL),),
    mx_amax_nan=AmaxNaN.IGNORE,
    mx_element_cast=ElementCast.SATFINITE,
    nvfp4_tensor_amax=TensorAmax.ALL,
    nvfp4_global_scale=GlobalScale.ENCODE_RECIPROCAL,
    nvfp4_block_scale=NVFP4BlockScale.SCALED_PRODUCT,
    nvfp4_element_scaling=NVFP4ElementScaling.CAPPED_RECIPROCAL,
    nvfp4_element_cast=ElementCast.E2M1_THRESHOLDS,
    nvfp4_tiles_2d=True,
    nvfp4_variants=("4over6", "row_scaled"),
    rht="transformer_engine",
    fp8_tile_scale=FP8TileScale.TE_ENCODE,
    fp8_tile_scale_formats=("FP32", "POW2_FP32"),
)


def _tiles_only(name: str, source: str, **fields: Any) -> BlockConvention:
    """A convention with neither MX nor NVFP4 (FP8 tiles or MXINT8 only): the MX and NVFP4 fields
    are OCP's and unused (`mx_elements` empty, `nvfp4` False; `to_dict` leaves them out)."""
    base: dict[str, Any] = {"mx_elements": (), "mx_block_sizes": None, "mx_rules": (), "nvfp4": False,
                            "nvfp4_tiles_2d": False, "mxint": None}
    return dataclasses.replace(OCP, name=name, source=source, **{**base, **fields})


DEEPSEEK = _tiles_only(
    "deepseek",
    "DeepSeek-V3 FP8 as DeepGEMM publishes it (deepseek-ai/DeepGEMM deep_gemm/utils/math.py: "
    "per_token_cast_to_fp8, per_block_cast_to_fp8, ceil_to_ue8m0; torch float32 arithmetic)",
    float32_input=True, fp8_tile_scale=FP8TileScale.DEEPGEMM_DECODE, fp8_tile_scale_formats=("FP32", "E8M0"),
)

MICROXCALING = _tiles_only(
    "microxcaling",
    "microsoft/microxcaling mx/mx_ops.py _quantize_mx, mx/elemwise_ops.py _quantize_elemwise_core "
    "(round 'nearest'), mx/formats.py int8: ebits 0, mbits 8, emax 0, max_norm 127/64",
    float32_input=True, mxint=MXIntScale.MICROXCALING,
)

#: every convention, by name
CONVENTIONS: dict[str, BlockConvention] = {
    c.name: c for c in (OCP, TORCHAO, TRANSFORMER_ENGINE, DEEPSEEK, MICROXCALING)}
#: the conventions that implement MX and NVFP4 (the blocks simulation's comparison and the Conventions table)
BLOCK_CONVENTIONS: dict[str, BlockConvention] = {c.name: c for c in CONVENTIONS.values() if c.mx_elements and c.nvfp4}
DEFAULT_CONVENTION = OCP.name


def get_block_convention(name: str | BlockConvention) -> BlockConvention:
    """The convention called `name` (case-insensitive); a BlockConvention passes through.
    ValueError naming the known ones."""
    if isinstance(name, BlockConvention):
        return name
    if isinstance(name, str) and name.strip().lower() in CONVENTIONS:
        return CONVENTIONS[name.strip().lower()]
    raise ValueError(f"unknown block convention {name!r}; known: {', '.join(CONVENTIONS)}")


# ------------------------------------------------------------------------------------------------
# the arithmetic of each choice (float32 throughout where the implementation works in float32)
# ------------------------------------------------------------------------------------------------

_F32 = np.float32


def _expect(value: Any, kind: type, name: str) -> Any:
    """`value` if it is a `kind` (an enum member may be given by its value); TypeError naming
    `name` and what is allowed otherwise."""
    if isinstance(value, kind):
        return value
    if issubclass(kind, Enum) and isinstance(value, str):
        try:
            return kind(value)
        except ValueError:
            allowed = ", ".join(str(m.value) for m in kind)  # type: ignore[attr-defined]
            raise ValueError(f"{name} must be one of {allowed}; got {value!r}") from None
    raise TypeError(f"{name} must be a {kind.__name__}, got {type(value).__name__}")


def _float32_array(a: Any, name: str) -> np.ndarray:
    """`a` as a float32 array (real input only: TypeError naming `name` otherwise)."""
    arr = formats.as_float_array(a, name)
    return arr if arr.dtype == np.float32 else arr.astype(np.float32)


def _float_format(elem: Any) -> FloatFormat:
    f = formats.get_format(elem)
    if not isinstance(f, FloatFormat):
        raise ValueError(f"elem must be a float element format, got the integer grid {f.name}")
    return f


def _bits(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.float32).view(np.uint32).astype(np.int64)


def mx_scale_codes(amax: np.ndarray, elem: FloatFormat, rule: MXRule) -> np.ndarray:
    """E8M0 scale codes (uint8) for block amaxes (float32 for the float32 conventions, else any
    float; NaN and ±Inf allowed), by `rule.scale` (see MXScale)."""
    rule = _expect(rule, MXRule, "rule")
    elem = _float_format(elem)
    amax = formats.as_float_array(amax, "amax")
    how = rule.scale
    if how is MXScale.EXACT:
        a = np.asarray(amax, dtype=np.float64)
        bad = ~np.isfinite(a)
        codes = (mx_scale_exponent(np.where(bad, 0.0, a), elem, rule.rule.value) + E8M0_BIAS).astype(np.uint8)
        codes[bad] = E8M0_NAN_CODE
        return codes
    a32 = np.asarray(amax, dtype=np.float32)
    nan = np.isnan(a32)
    if how is MXScale.EXPONENT_FIELD:
        bits = _bits(a32)
        if rule.rule is ScaleRule.EVEN:
            bits = (bits + (1 << (22 - elem.mantissa_bits))) & 0xFF800000
        e = ((bits >> 23) & 0xFF) - 127
        if rule.rule is ScaleRule.CEIL:
            e = e + ((_bits(a32) & 0x7FFFFF) > 0)
        elif rule.rule is not ScaleRule.FLOOR and rule.rule is not ScaleRule.EVEN:
            raise ValueError(f"the exponent-field scale has no rule {rule.rule.value!r}")
        codes = (np.clip(e - elem.emax, -E8M0_BIAS, E8M0_BIAS + 1) + E8M0_BIAS).astype(np.uint8)
        codes[nan] = E8M0_NAN_CODE
        return codes
    if rule.rule is not ScaleRule.RCEIL:
        raise ValueError(f"the {how.value} scale computes rceil only, not {rule.rule.value!r}")
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        if how is MXScale.FLOAT32_LOG2:
            d = a32 / _F32(elem.max)
            codes = float32_log2_ceil_codes(d)
        elif how is MXScale.RECIPROCAL_ROUND_UP:
            d = a32 * _F32(1.0 / elem.max)
            bits = _bits(d)
            field, mant = (bits >> 23) & 0xFF, bits & 0x7FFFFF
            up = (mant > 0) & (field != 0xFE) & ~((field == 0) & (mant <= 0x400000))
            codes = (field + up).astype(np.uint8)
        else:
            raise ValueError(f"unknown MX scale {how!r}")
    codes[np.isinf(d)] = 0xFE
    codes[np.isnan(d)] = E8M0_NAN_CODE
    return codes


def float32_log2_ceil_codes(d: np.ndarray) -> np.ndarray:
    """clamp(ceil(fl32(log2 d)), −127, 127) + 127 for float32 ratios d (uint8; a non-finite d gives
    127, which the caller replaces): torchao rceil's step after the division (MXScale.FLOAT32_LOG2)."""
    if not isinstance(d, np.ndarray) or d.dtype != np.float32:
        raise TypeError(f"d must be a float32 numpy array, got {d!r:.80}")
    with np.errstate(divide="ignore", invalid="ignore"):
        log2 = np.log2(d.astype(np.float64)).astype(np.float32)  # torch's float32 log2, rounded
    x = np.clip(np.ceil(np.where(np.isfinite(d), log2, 0)), -E8M0_BIAS, E8M0_BIAS)
    return (x + E8M0_BIAS).astype(np.uint8)


def scale_by_multiplier(x: np.ndarray, m: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """x · m per row (m one float32 per row) in float32, as torch's broadcast multiply computes it:
    a row whose multiplier is NaN becomes that NaN in every element (the broadcast operand's NaN
    wins over a NaN element's own)."""
    x = _float32_array(x, "x")
    m = _float32_array(m, "m")
    if x.ndim != 2 or m.shape != (x.shape[0],):
        raise ValueError(f"x must be rows × elements and m one multiplier per row; got shapes {x.shape} and {m.shape}")
    with np.errstate(over="ignore", invalid="ignore"):
        scaled = np.multiply(x, m[:, None], out=out)
    nan_rows = np.isnan(m)
    if nan_rows.any():
        scaled[nan_rows] = m[nan_rows][:, None]
    return scaled


def _pow2_f32(k: np.ndarray) -> np.ndarray:
    return np.ldexp(np.ones(k.shape, np.float32), k.astype(np.int32))


def mx_element_multipliers(how: MXElementScaling) -> np.ndarray:
    """r(code) for every E8M0 code, float32[256]: elements are scaled as x · r(code) (see
    MXElementScaling; under RECIPROCAL_ONE_AT_ZERO the entry at 0xFF is replaced by the block's NaN
    amax by the caller)."""
    how = _expect(how, MXElementScaling, "how")
    codes = np.arange(256)
    r = _pow2_f32(E8M0_BIAS - codes)  # 2^(127 − code): 2^127 … 2^−128 (0xFF is overwritten)
    if how is MXElementScaling.EXACT:
        r[E8M0_NAN_CODE] = 0.0  # unused: NaN-scale blocks get zero codes
    elif how is MXElementScaling.DIVIDE_NORMAL:
        r[0] = _F32(2.0**126)  # x / max(2^-127, 2^-126)
        r[E8M0_NAN_CODE] = 0.0  # x / +Inf
    elif how is MXElementScaling.RECIPROCAL_ONE_AT_ZERO:
        r[0] = 1.0
        r[0xFE] = _F32(2.0**-127)
        r[E8M0_NAN_CODE] = np.nan
    elif how is MXElementScaling.RECIPROCAL:
        r[0xFE] = _F32(2.0**-127)
        r[E8M0_NAN_CODE] = np.array([0x7FFFFFFF], np.uint32).view(np.float32)[0]
    else:
        raise ValueError(f"unknown MX element scaling {how!r}")
    return r


def torchao_floatx_nan_codes(x: np.ndarray, elem: FloatFormat) -> np.ndarray:
    """The code torchao's `_f32_to_floatx_unpacked` gives each float32 NaN in `x` (see ElementCast)."""
    elem = _float_format(elem)
    bits = _bits(_float32_array(x, "x"))
    sign = (bits >> 31) & 1
    mag = bits & 0x7FFFFFFF
    m = elem.mantissa_bits
    odd = (mag >> (23 - m)) & 1
    n = (mag + ((elem.bias - 127) << 23) + ((1 << (22 - m)) - 1) + odd) >> (23 - m)
    return ((n & 0xFF) | (sign << (elem.bits - 1))).astype(np.uint8)


def element_policy(how: ElementCast, elem: FloatFormat) -> CastPolicy:
    """The CastPolicy an element cast applies to finite and infinite values (its NaN rule aside)."""
    how = _expect(how, ElementCast, "how")
    elem = _float_format(elem)
    if how is ElementCast.SATFINITE:
        return formats.policy_for("triton_nvidia", elem)
    if how is ElementCast.TORCH_CLAMPED and elem.has_nan:
        return formats.policy_for("torch", elem).with_(overflow=Overflow.SATURATE, name="torch_clamped")
    return formats.policy_for("ocp", elem)


def cast_elements(scaled: np.ndarray, elem: FloatFormat, how: ElementCast,
                  policy: CastPolicy | None = None, rng: np.random.Generator | None = None) -> np.ndarray:
    """Element codes (uint8) of already-scaled values by `how` (see ElementCast); `policy`, when
    given, replaces the OCP cast's policy (stochastic rounding draws from `rng`)."""
    how = _expect(how, ElementCast, "how")
    elem = _float_format(elem)
    scaled = formats.as_float_array(scaled, "scaled")
    if how is ElementCast.OCP:
        return formats.encode(scaled, elem, element_policy(how, elem) if policy is None else policy, rng=rng)
    if how is ElementCast.SATFINITE or (how is ElementCast.TORCH_CLAMPED and elem.has_nan):
        return formats.encode(scaled, elem, element_policy(how, elem))
    nan = np.isnan(scaled)
    has_nan = bool(nan.any())
    codes = formats.encode(np.where(nan, 0, scaled) if has_nan else scaled, elem, element_policy(how, elem))
    if how is ElementCast.TORCH_CLAMPED:
        if has_nan:
            codes[nan] = torchao_floatx_nan_codes(scaled[nan], elem)
        return codes
    if how is ElementCast.E2M1_THRESHOLDS:
        codes[nan | ((scaled == 0) & np.signbit(scaled))] = 0
        return codes
    raise ValueError(f"unknown element cast {how!r}")


def nvfp4_tensor_amax(block_amax: np.ndarray, bad: np.ndarray, how: TensorAmax) -> float:
    """The tensor amax from the block amaxes (NaN/Inf blocks flagged by `bad`), see TensorAmax."""
    if block_amax.size == 0:
        return 0.0
    if how is TensorAmax.FINITE_BLOCKS:
        return float(np.max(np.where(bad, 0.0, block_amax)))
    if np.isnan(block_amax).any():
        return float(TORCH_MAX_NAN)
    return float(np.max(block_amax))


def nvfp4_scales(block_amax: np.ndarray, tensor_amax: float | np.ndarray, conv: BlockConvention
                 ) -> tuple[np.ndarray, Any, np.ndarray]:
    """For NVFP4 blocks: (E4M3 scale codes, the tensor decode scale ts, the per-block element
    multiplier m), elements being scaled as x · m in float32 (see GlobalScale, NVFP4BlockScale,
    NVFP4ElementScaling). Not for EXACT_DIVIDE, which `quantize_nvfp4` computes exactly.
    `tensor_amax` is one number (ts a float) or one per block (row-scaled NVFP4: each block gets its
    row's amax; ts an array, one per block)."""
    conv = _expect(conv, BlockConvention, "conv")
    per_block = isinstance(tensor_amax, np.ndarray)
    if not per_block and (isinstance(tensor_amax, (bool, np.bool_))
                          or not isinstance(tensor_amax, (int, float, np.integer, np.floating))):
        raise TypeError(f"tensor_amax must be a real number, got {type(tensor_amax).__name__}")
    a = formats.as_float_array(block_amax, "block_amax").astype(np.float32)
    t = np.asarray(tensor_amax, np.float32) if per_block else _F32(tensor_amax)
    if per_block and t.shape != a.shape:
        raise ValueError(f"a tensor amax per block needs one per block amax; got shapes {t.shape} and {a.shape}")
    torch_e4m3 = formats.policy_for("torch", E4M3FN)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        if conv.nvfp4_global_scale is GlobalScale.DECODE_QUOTIENT_FLOAT32:
            ts = t / _F32(NVFP4_TENSOR_DIVISOR)
            enc = None
        elif conv.nvfp4_global_scale is GlobalScale.ENCODE_RECIPROCAL:
            enc = nvfp4_encode_reciprocal(t)
            ts = _F32(1.0) / enc
        else:
            raise ValueError(f"{conv.nvfp4_global_scale.value} is computed exactly by quantize_nvfp4")
        if conv.nvfp4_block_scale is NVFP4BlockScale.CLAMPED_QUOTIENT:
            q = np.clip((a / _F32(E2M1_MAX)) / ts, _F32(E4M3FN.smallest_normal), _F32(E4M3_MAX))
        elif conv.nvfp4_block_scale is NVFP4BlockScale.SCALED_PRODUCT:
            assert enc is not None
            mult = _F32(enc) * (_F32(1.0) / _F32(E2M1_MAX))
            q = np.clip(np.minimum(a * mult, _F32(FLT_MAX)), -_F32(E4M3_MAX), _F32(E4M3_MAX))
        else:
            raise ValueError(f"{conv.nvfp4_block_scale.value} is computed exactly by quantize_nvfp4")
        codes = formats.encode(q, E4M3FN, torch_e4m3)
        s = e4m3_as_float32(codes)
        if conv.nvfp4_element_scaling is NVFP4ElementScaling.TENSOR_OVER_BLOCK_RECIPROCAL:
            m = (_F32(1.0) / _F32(ts)) / s
        elif conv.nvfp4_element_scaling is NVFP4ElementScaling.CAPPED_RECIPROCAL:
            m = np.minimum(_F32(1.0) / (s * (ts if per_block else _F32(ts))), _F32(FLT_MAX))
        else:
            raise ValueError(f"{conv.nvfp4_element_scaling.value} is computed exactly by quantize_nvfp4")
    return codes, (np.asarray(ts, np.float32) if per_block else float(ts)), m.astype(np.float32)


def nvfp4_encode_reciprocal(t: Any, divisor: float = NVFP4_TENSOR_DIVISOR) -> Any:
    """Transformer Engine's global encode scale (GlobalScale.ENCODE_RECIPROCAL) of float32 amaxes `t`
    (a scalar or an array): min(fl32(divisor / t), FLT_MAX), and 1 where that is 0 (an Inf amax)."""
    if isinstance(divisor, (bool, np.bool_)) or not isinstance(divisor, (int, float, np.integer, np.floating)):
        raise TypeError(f"divisor must be a real number, got {type(divisor).__name__}")
    t = _float32_array(t, "t") if np.ndim(t) else _F32(formats.as_float_array(t, "t"))
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        enc = np.minimum(_F32(divisor) / t, _F32(FLT_MAX))
    if np.ndim(enc) == 0:
        return _F32(1.0) if enc == 0 else _F32(enc)
    return np.where(enc == 0, _F32(1.0), enc).astype(np.float32)


def e4m3_as_float32(codes: np.ndarray) -> np.ndarray:
    """E4M3FN codes as float32, a NaN code becoming the float32 NaN torch's upcast makes of it:
    sign, all-ones exponent, the code's mantissa bits at the top (0x7F → 0x7FF00000)."""
    codes = np.asarray(codes)
    if codes.dtype.kind not in "ui":
        raise TypeError(f"codes must be E4M3FN codes (integers), got dtype {codes.dtype}")
    vals = np.asarray(formats.decode(codes, E4M3FN)).astype(np.float32)
    codes = codes.astype(np.int64)
    nan = (codes & E4M3_NAN_CODE) == E4M3_NAN_CODE
    if nan.any():
        c = codes[nan].astype(np.uint32)
        bits = ((c & 0x80) << 24) | 0x7F800000 | ((c & 0x7) << 20)
        vals[nan] = bits.view(np.float32)
    return vals
