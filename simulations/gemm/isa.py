"""Tensor-core instructions as data: one frozen record per instruction family, one registry.

A `Family` is one group of PTX instructions on one architecture that share an arithmetic: the
operation (`mma`, `wgmma`, `tcgen05.mma`), the shapes (M, N, K per instruction), the operand and
accumulator types, and for each output type the `DotUnit` — what one fused dot-product-add step
does. An `Instruction` is one concrete instruction string of a family, e.g.
`"wgmma.m64n8k32.f32.e4m3.e4m3"`: the operation, then the PTX shape and type qualifiers in the order
PTX writes them (D, A, B, C, and the scale type of block-scaled MMAs), without the layout and
synchronisation qualifiers (`.sync.aligned.row.col`) that do not change the arithmetic.

The arithmetic of a step (MMA-Sim's "T-FDPA", with the block-scaled variants "ST-FDPA" and
"GST-FDPA"; Xie, Wang, Yang, Yang, *MMA-Sim: Bit-Accurate Reference Model of Tensor Cores and Matrix
Cores*, arXiv:2511.10909, 2025, validated bit for bit on the GPUs named there) for D = Σ a_k·b_k + c
over one group of `fused` products:

1. every product a_k·b_k is exact; with its exponent e_k = e(a_k) + e(b_k), where e(x) is the
   exponent of x's leading bit clamped below at its format's smallest normal exponent (a subnormal
   keeps e = emin and a significand below 1); C's exponent likewise (FP32: -126, FP16: -14);
2. e_max is the largest exponent of all terms, C included, where a zero term counts as
   `zero_exponent` (so with C = 0 the window can sit above every tiny product);
3. each term is shifted to e_max and cut to `frac_bits` (F) bits after e_max's binary point,
   toward zero (`Alignment.TRUNCATE`);
4. the cut terms are added exactly (a wide integer adder);
5. the sum is rounded once to the output (`OutputRounding`) and D's NaN is the canonical one
   (0x7FFFFFFF, 0x7FFF), −0 is returned as +0.

An instruction whose K is larger than `fused` runs ceil(K / fused) such steps, each step's D the
next step's C. Block-scaled MMAs multiply each product by its two block scales before step 2
(ST-FDPA: the scales' exponents join e_k), or, for the FP4 kinds at K = 64, sum each group of 16
products exactly first and give the group the exponent of its scale product (GST-FDPA, F = 35).

Where each number comes from is the family's `sources`; the numbers themselves are the parameters
the MMA-Sim authors published with their model (PyPI `mmasim` 2.1.1, `mmasim/nv_ptx/sim.py`:
`_mma_F_bits`, `_mma_L_max_bytes`, `_mma_e_zero_for_fp16/32` and the per-class settings), and the
shapes and types are the PTX ISA's (NVIDIA, *Parallel Thread Execution ISA* 8.7/9.0: "Warp Level
Matrix Multiply-Accumulate Instructions" (`mma`), "Asynchronous Warpgroup Level Matrix
Multiply-Accumulate Instructions" (`wgmma.mma_async`), "TensorCore 5th Generation Family
Instructions" (`tcgen05.mma`) and their "Block Scaling" sections). Double-precision `mma` (an FMA
chain) and integer MMAs are not modelled.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from enum import Enum
from functools import lru_cache

from lowprec.formats import BF16, E2M1, E2M3, E3M2, E4M3FN, E5M2, E8M0, FP16, FP32, FloatFormat

__all__ = [
    "ARCHS", "Alignment", "DotUnit", "FAMILIES", "Family", "Instruction", "OutputRounding",
    "PTX_TYPES", "TF32", "UE4M3", "families", "get_instruction", "instructions",
]

#: the architectures, oldest first (PTX targets: sm_70, sm_75, sm_80, sm_89, sm_90a, sm_100a, sm_120a)
ARCHS: tuple[str, ...] = ("volta", "turing", "ampere", "ada", "hopper", "blackwell", "rtx_blackwell")

#: NVIDIA TensorFloat-32: an FP32 bit pattern whose low 13 mantissa bits are zero
TF32 = FloatFormat("TF32", 8, 10, 127, has_inf=True, nan_encoding="ieee",
                   description="TensorFloat-32: FP32's range, 11 significant bits (FP32 with the low 13 bits 0)")
#: the unsigned E4M3 of NVFP4's block scales (PTX `.ue4m3`): E4M3FN without its sign bit
UE4M3 = FloatFormat("UE4M3", 4, 3, 7, signed=False, nan_encoding="fn",
                    description="unsigned E4M3 scale (NVFP4): 0 … 448, NaN = 0x7F")

#: PTX type qualifier → format (the one table of operand, accumulator and scale types)
PTX_TYPES: dict[str, FloatFormat] = {
    "f32": FP32, "tf32": TF32, "f16": FP16, "bf16": BF16, "e4m3": E4M3FN, "e5m2": E5M2,
    "e3m2": E3M2, "e2m3": E2M3, "e2m1": E2M1, "ue8m0": E8M0, "ue4m3": UE4M3,
}
#: bytes PTX counts per element when it sizes the fused step (FP6 and FP4 occupy a byte each in
#: the f8f6f4 kinds; TF32 is stored in 4 bytes)
_STORAGE_BYTES = {"f32": 4, "tf32": 4, "f16": 2, "bf16": 2, "e4m3": 1, "e5m2": 1, "e3m2": 1,
                  "e2m3": 1, "e2m1": 1}
_F8F6F4 = ("e5m2", "e4m3", "e3m2", "e2m3", "e2m1")


class Alignment(str, Enum):
    """What happens to the bits of a term shifted past F fraction bits of e_max.

    TRUNCATE: dropped (toward zero: |t| is cut, the sign kept) — every NVIDIA tensor core MMA-Sim
        measured.
    NEAREST_EVEN: rounded to the nearest multiple of 2^(e_max - F), ties to even — not an NVIDIA
        behaviour; for what-if comparisons only.
    """

    TRUNCATE = "truncate"
    NEAREST_EVEN = "nearest_even"


class OutputRounding(str, Enum):
    """How the exact sum of the aligned terms becomes D (v the sum, e = floor(log2 |v|)).

    RZ_FP32: toward zero to FP32: quantum 2^(max(e, -126) - 23); |v| ≥ 2^128 gives ±Inf.
    RZ_E8M13: toward zero to 13 fraction bits on FP32's exponent range, stored as FP32: quantum
        2^(max(e, -126) - 13); |v| ≥ 2^128 gives ±Inf (Hopper and Ada FP8 with FP32 output).
    RNE_FP16: nearest, ties to even, to FP16: quantum 2^(max(e, -14) - 10); a result of 2^16 or
        more (from 65520 up) gives ±Inf.
    """

    RZ_FP32 = "rz_fp32"
    RZ_E8M13 = "rz_e8m13"
    RNE_FP16 = "rne_fp16"

    @property
    def kept_bits(self) -> int:
        """Fraction bits kept in the result."""
        return {"rz_fp32": 23, "rz_e8m13": 13, "rne_fp16": 10}[self.value]

    @property
    def emin(self) -> int:
        """Exponent of the smallest normal result (below it the quantum stops shrinking)."""
        return -14 if self is OutputRounding.RNE_FP16 else -126

    @property
    def emax(self) -> int:
        """Exponent of the largest finite result."""
        return 15 if self is OutputRounding.RNE_FP16 else 127

    @property
    def toward_zero(self) -> bool:
        return self is not OutputRounding.RNE_FP16


@dataclass(frozen=True)
class DotUnit:
    """What one fused dot-product-add step of a tensor core does (see the module docstring).

    The default is MMA-Sim's T-FDPA; `group` > 1 with a scale gives GST-FDPA.
    """

    fused: int  # products added in one step (L_max); an instruction of larger K runs several steps
    frac_bits: int  # F: fraction bits kept below e_max's leading bit when the terms are aligned
    output: OutputRounding  # rounding of the step's sum to D
    zero_exponent: int  # exponent a zero term (zero product, zero C, zero group) counts with in e_max
    alignment: Alignment = Alignment.TRUNCATE  # how bits shifted past F are dropped
    group: int = 1  # products summed exactly before their scale is applied (16: GST-FDPA)
    algorithm: str = "T-FDPA"  # MMA-Sim's name for this arithmetic: T-FDPA, ST-FDPA or GST-FDPA

    def steps(self, k: int) -> int:
        """Fused steps of an instruction of this K."""
        return -(-k // self.step(k))

    def step(self, k: int) -> int:
        """Products per step for an instruction of this K: min(K, fused)."""
        return min(k, self.fused)


@dataclass(frozen=True)
class Family:
    """One family of tensor-core instructions on one architecture, and its arithmetic.

    `variants` are (d, a, b, c, scale, block, kind) type tuples in PTX's order; every shape pairs
    with every variant. `units` maps the D type ("f32", "f16") to the step's arithmetic.
    """

    name: str  # short id, e.g. "hopper-wgmma-fp8"
    arch: str  # one of ARCHS
    operation: str  # "mma", "wgmma" or "tcgen05.mma"
    ptx_target: str  # the PTX target that introduced the instructions (sm_90a …)
    shapes: tuple[tuple[int, int, int], ...]  # (M, N, K) per instruction
    variants: tuple[tuple[str, str, str, str, str, int, str], ...]  # (d, a, b, c, scale, block, kind)
    units: dict[str, DotUnit] = field(hash=False, compare=False)  # D type → arithmetic
    sources: str = field(default="", compare=False)  # where each number comes from
    note: str = field(default="", compare=False)  # what is particular to this family, in words

    @property
    def block_scaled(self) -> bool:
        return bool(self.variants and self.variants[0][4])

    def instruction_names(self) -> list[str]:
        return [_format_name(self.operation, s, v) for s in self.shapes for v in self.variants]


@dataclass(frozen=True)
class Instruction:
    """One concrete instruction: its string, its family, its shape and types."""

    name: str  # e.g. "wgmma.m64n8k32.f32.e4m3.e4m3"
    family: Family
    m: int
    n: int
    k: int
    d_type: str
    a_type: str
    b_type: str
    c_type: str
    scale_type: str = ""  # block-scaled MMAs: "ue8m0" or "ue4m3"; else ""
    block: int = 0  # block-scaled MMAs: elements of K per scale (16 or 32); else 0
    kind: str = ""  # PTX .kind qualifier without "kind::" ("f8f6f4", "mxf4nvf4" …), or ""

    @property
    def arch(self) -> str:
        return self.family.arch

    @property
    def operation(self) -> str:
        return self.family.operation

    @property
    def unit(self) -> DotUnit:
        return self.family.units[self.d_type]

    @property
    def block_scaled(self) -> bool:
        return bool(self.scale_type)

    @property
    def a_format(self) -> FloatFormat:
        return PTX_TYPES[self.a_type]

    @property
    def b_format(self) -> FloatFormat:
        return PTX_TYPES[self.b_type]

    @property
    def c_format(self) -> FloatFormat:
        return PTX_TYPES[self.c_type]

    @property
    def d_format(self) -> FloatFormat:
        return PTX_TYPES[self.d_type]

    @property
    def scale_format(self) -> FloatFormat | None:
        return PTX_TYPES[self.scale_type] if self.scale_type else None

    @property
    def chains(self) -> bool:
        """Whether D can be fed back as the next instruction's C (same type)."""
        return self.c_type == self.d_type

    def describe(self) -> str:
        u = self.unit
        scale = (f", scales {self.scale_type} per {self.block} of K" if self.scale_type else "")
        group = f", groups of {u.group} summed before the scale" if u.group > 1 else ""
        return (f"{self.name} on {self.arch}: K = {self.k} in {u.steps(self.k)} step(s) of "
                f"{u.step(self.k)} products, F = {u.frac_bits} ({u.alignment.value}), output "
                f"{u.output.value}, zero exponent {u.zero_exponent}{scale}{group} [{u.algorithm}]")


# ------------------------------------------------------------------------------------------------
# instruction strings
# ------------------------------------------------------------------------------------------------

def _format_name(operation: str, shape: tuple[int, int, int], v: tuple[str, str, str, str, str, int, str]) -> str:
    d, a, b, c, s, block, kind = v
    parts = [operation, f"m{shape[0]}n{shape[1]}k{shape[2]}"]
    if kind:
        parts.append(f"kind::{kind}")
    if block:
        parts.append(f"block{block}")
    parts += [d, a, b]
    if operation == "mma":  # mma names C's type; wgmma and tcgen05.mma accumulate in D's
        parts.append(c)
    if s:
        parts.append(s)
    return ".".join(parts)


def _units(L_bytes: int, item: int, F: int, e_zero_f16: int, e_zero_f32: int,
           f32_output: OutputRounding = OutputRounding.RZ_FP32) -> dict[str, DotUnit]:
    """The per-D-type units of an MMA-Sim T-FDPA family: L = L_bytes / item products per step."""
    fused = L_bytes // item
    return {"f32": DotUnit(fused, F, f32_output, e_zero_f32),
            "f16": DotUnit(fused, F, OutputRounding.RNE_FP16, e_zero_f16)}


def _v(d: str, a: str, b: str, c: str, s: str = "", block: int = 0, kind: str = "") -> tuple[str, str, str, str, str, int, str]:
    return (d, a, b, c, s, block, kind)


_N8_256 = tuple(range(8, 257, 8))

# sources, in words (each family names the ones it uses)
_PTX_MMA = ("shapes and types: PTX ISA 8.7/9.0, 'Warp Level Matrix Multiply-Accumulate Instructions', "
            "mma.sync.aligned shape/type table")
_PTX_WGMMA = ("shapes and types: PTX ISA 8.7/9.0, 'Asynchronous Warpgroup Level Matrix Multiply-Accumulate', "
              "wgmma.mma_async (M = 64, N = 8 … 256 step 8, K = 32 bytes of A)")
_PTX_TCGEN05 = ("shapes and types: PTX ISA 8.7/9.0, 'TensorCore 5th Generation Family Instructions', "
                "tcgen05.mma (cta_group::1, M = 64/128, N = 8 … 256 step 8)")
_PTX_BLOCK = "block scaling: PTX ISA 8.7/9.0, 'Block Scaling' for mma / tcgen05.mma (.kind::mxf8f6f4/mxf4/mxf4nvf4)"
_SIM = ("arithmetic: MMA-Sim, arXiv:2511.10909 (bit-accurate model validated on V100, T4, A100, RTX 4090, "
        "H100/H800, B200, RTX 5090); parameters as published in mmasim 2.1.1 nv_ptx/sim.py")


def _sim(detail: str) -> str:
    return f"{_SIM}: {detail}"


_F16_SM70 = (_v("f32", "f16", "f16", "f32"), _v("f32", "f16", "f16", "f16"), _v("f16", "f16", "f16", "f16"))
_F16_SM75 = (_v("f32", "f16", "f16", "f32"), _v("f16", "f16", "f16", "f16"))
_FP8_MMA = tuple(_v(d, a, b, d) for d in ("f32", "f16") for a in ("e5m2", "e4m3") for b in ("e5m2", "e4m3"))


def _sm80_families(arch: str, F: int, L_bytes: int, e16: int, e32: int, src: str) -> list[Family]:
    """The sm_80 `mma` set (TF32, FP16, BF16) and sm_75's m16n8k8 FP16 on one architecture."""
    target = "sm_80"  # m16n8k8 FP16 dates from sm_75, the rest from sm_80
    return [
        Family(f"{arch}-mma-tf32", arch, "mma", target, ((16, 8, 8), (16, 8, 4)),
               (_v("f32", "tf32", "tf32", "f32"),), _units(L_bytes, 4, F, e16, e32), f"{_PTX_MMA}; {src}"),
        Family(f"{arch}-mma-f16", arch, "mma", target, ((16, 8, 16), (16, 8, 8)),
               _F16_SM75, _units(L_bytes, 2, F, e16, e32), f"{_PTX_MMA}; {src}"),
        Family(f"{arch}-mma-bf16", arch, "mma", target, ((16, 8, 16), (16, 8, 8)),
               (_v("f32", "bf16", "bf16", "f32"),), _units(L_bytes, 2, F, e16, e32), f"{_PTX_MMA}; {src}"),
    ]


def _build() -> tuple[Family, ...]:
    rz13 = OutputRounding.RZ_E8M13
    fams: list[Family] = []
    # ---- Volta (sm_70): F = 23, 8-byte steps (4 FP16 products), zero exponents -19 / -131
    volta = _sim("Volta F = 23, L = 8 bytes, e_zero -19 (FP16 D) / -131 (FP32 D)")
    fams.append(Family("volta-mma-f16", "volta", "mma", "sm_70", ((8, 8, 4),), _F16_SM70,
                       _units(8, 2, 23, -19, -131), f"{_PTX_MMA}; {volta}"))
    # ---- Turing (sm_75): F = 24, 16-byte steps; its m8n8k4 runs with Volta's arithmetic
    turing = _sim("Turing F = 24, L = 16 bytes, e_zero -20 / -132; m8n8k4 falls back to Volta's settings")
    fams.append(Family("turing-mma-f16", "turing", "mma", "sm_75", ((16, 8, 8),), _F16_SM75,
                       _units(16, 2, 24, -20, -132), f"{_PTX_MMA}; {turing}"))
    fams.append(Family("turing-mma-f16-m8n8k4", "turing", "mma", "sm_70", ((8, 8, 4),), _F16_SM70,
                       _units(8, 2, 23, -19, -131), f"{_PTX_MMA}; {turing}",
                       note="Volta's m8n8k4 on Turing keeps Volta's arithmetic (F = 23, 4 products a step)"))
    # ---- Ampere (sm_80) and Ada (sm_89): F = 24, 16-byte steps, zero exponents -20 / -132
    ampere = _sim("Ampere/Ada F = 24, L = 16 bytes, e_zero -20 / -132")
    fams += _sm80_families("ampere", 24, 16, -20, -132, ampere)
    fams += _sm80_families("ada", 24, 16, -20, -132, ampere)
    ada_fp8 = _sim("Ada FP8 keeps F = 13 and rounds FP32 D toward zero to 13 fraction bits (E8M13); "
                   "L = 16 bytes")
    fams.append(Family("ada-mma-fp8", "ada", "mma", "sm_89", ((16, 8, 32), (16, 8, 16)), _FP8_MMA,
                       _units(16, 1, 13, -20, -132, rz13), f"{_PTX_MMA}; {ada_fp8}",
                       note="FP8 on Ada: 13 fraction bits, an m16n8k32 is two steps of 16"))
    # ---- Hopper (sm_90): F = 25, 32-byte steps, zero exponents -21 / -133
    hopper = _sim("Hopper/Blackwell F = 25, L = 32 bytes, e_zero -21 / -133")
    fams += _sm80_families("hopper", 25, 32, -21, -133, hopper)
    wg = f"{_PTX_WGMMA}; {hopper}"
    fams.append(Family("hopper-wgmma-tf32", "hopper", "wgmma", "sm_90a",
                       tuple((64, n, 8) for n in _N8_256), (_v("f32", "tf32", "tf32", "f32"),),
                       _units(32, 4, 25, -21, -133), wg))
    fams.append(Family("hopper-wgmma-f16", "hopper", "wgmma", "sm_90a",
                       tuple((64, n, 16) for n in _N8_256),
                       (_v("f32", "f16", "f16", "f32"), _v("f16", "f16", "f16", "f16")),
                       _units(32, 2, 25, -21, -133), wg))
    fams.append(Family("hopper-wgmma-bf16", "hopper", "wgmma", "sm_90a",
                       tuple((64, n, 16) for n in _N8_256), (_v("f32", "bf16", "bf16", "f32"),),
                       _units(32, 2, 25, -21, -133), wg))
    hopper_fp8 = _sim("Hopper FP8 wgmma keeps F = 13 and rounds FP32 D toward zero to 13 fraction bits "
                      "(E8M13); L = 32 products; also DeepSeek-V3, arXiv:2412.19437 §3.3.2 ('around 14 "
                      "bits', H800)")
    fams.append(Family("hopper-wgmma-fp8", "hopper", "wgmma", "sm_90a",
                       tuple((64, n, 32) for n in _N8_256),
                       tuple(_v(d, a, b, d) for d in ("f32", "f16") for a in ("e5m2", "e4m3")
                             for b in ("e5m2", "e4m3")),
                       _units(32, 1, 13, -21, -133, rz13), f"{_PTX_WGMMA}; {hopper_fp8}",
                       note="the accumulation DeepSeek-V3 promotes to FP32 every 128 elements of K"))
    # ---- Blackwell (sm_100a): mma as Hopper; tcgen05.mma with F = 25
    fams += _sm80_families("blackwell", 25, 32, -21, -133, hopper)
    tc = f"{_PTX_TCGEN05}; {hopper}"
    mn = tuple((m, n) for m in (64, 128) for n in _N8_256)
    fams.append(Family("blackwell-tcgen05-tf32", "blackwell", "tcgen05.mma", "sm_100a",
                       tuple((m, n, 8) for m, n in mn), (_v("f32", "tf32", "tf32", "f32", kind="tf32"),),
                       _units(32, 4, 25, -21, -133), tc))
    fams.append(Family("blackwell-tcgen05-f16", "blackwell", "tcgen05.mma", "sm_100a",
                       tuple((m, n, 16) for m, n in mn),
                       (_v("f32", "f16", "f16", "f32", kind="f16"), _v("f32", "bf16", "bf16", "f32", kind="f16"),
                        _v("f16", "f16", "f16", "f16", kind="f16")),
                       _units(32, 2, 25, -21, -133), tc))
    fams.append(Family("blackwell-tcgen05-f8f6f4", "blackwell", "tcgen05.mma", "sm_100a",
                       tuple((m, n, 32) for m, n in mn),
                       tuple(_v(d, a, b, d, kind="f8f6f4") for d in ("f32", "f16") for a in _F8F6F4
                             for b in _F8F6F4),
                       _units(32, 1, 25, -21, -133), tc,
                       note="FP8 on Blackwell keeps F = 25 (Hopper's wgmma kept 13)"))
    st = DotUnit(32, 25, OutputRounding.RZ_FP32, -133, algorithm="ST-FDPA")
    gst = DotUnit(64, 35, OutputRounding.RZ_FP32, -139, group=16, algorithm="GST-FDPA")
    bs_st = _sim("block-scaled K = 32 (ST-FDPA): each product times its two UE8M0 scales, F = 25, L = 32, "
                 "e_zero -133")
    bs_gst = _sim("block-scaled FP4 K = 64 (GST-FDPA): groups of 16 products summed exactly, then times "
                  "the scale product, aligned on the scale's exponent with F = 35, L = 64, e_zero -139")
    fp4_variants = (("mxf4", 32, "ue8m0"), ("mxf4nvf4", 32, "ue8m0"), ("mxf4nvf4", 16, "ue8m0"),
                    ("mxf4nvf4", 16, "ue4m3"))
    fams.append(Family("blackwell-tcgen05-mxf8f6f4", "blackwell", "tcgen05.mma", "sm_100a",
                       tuple((128, n, 32) for n in _N8_256),
                       tuple(_v("f32", a, b, "f32", "ue8m0", 32, "mxf8f6f4") for a in _F8F6F4 for b in _F8F6F4),
                       {"f32": st}, f"{_PTX_TCGEN05}; {_PTX_BLOCK}; {bs_st}"))
    fams.append(Family("blackwell-tcgen05-mxf4", "blackwell", "tcgen05.mma", "sm_100a",
                       tuple((128, n, 64) for n in _N8_256),
                       tuple(_v("f32", "e2m1", "e2m1", "f32", s, blk, kind) for kind, blk, s in fp4_variants),
                       {"f32": gst}, f"{_PTX_TCGEN05}; {_PTX_BLOCK}; {bs_gst}",
                       note="MXFP4 and NVFP4: the group of 16 is summed before its scale is applied"))
    # ---- RTX Blackwell (sm_120a): mma only, F = 25; FP8 and f8f6f4 in 32-byte steps
    fams += _sm80_families("rtx_blackwell", 25, 32, -21, -133, hopper)
    fams.append(Family("rtx_blackwell-mma-fp8", "rtx_blackwell", "mma", "sm_89", ((16, 8, 32), (16, 8, 16)),
                       _FP8_MMA, _units(32, 1, 25, -21, -133), f"{_PTX_MMA}; {hopper}",
                       note="Ada's FP8 mma on RTX Blackwell: F = 25, one step of 32"))
    fams.append(Family("rtx_blackwell-mma-f8f6f4", "rtx_blackwell", "mma", "sm_120a", ((16, 8, 32),),
                       tuple(_v(d, a, b, d, kind="f8f6f4") for d in ("f32", "f16") for a in _F8F6F4
                             for b in _F8F6F4),
                       _units(32, 1, 25, -21, -133), f"{_PTX_MMA}; {hopper}"))
    fams.append(Family("rtx_blackwell-mma-mxf8f6f4", "rtx_blackwell", "mma", "sm_120a", ((16, 8, 32),),
                       tuple(_v("f32", a, b, "f32", "ue8m0", 32, "mxf8f6f4") for a in _F8F6F4 for b in _F8F6F4),
                       {"f32": st}, f"{_PTX_MMA}; {_PTX_BLOCK}; {bs_st}"))
    fams.append(Family("rtx_blackwell-mma-mxf4", "rtx_blackwell", "mma", "sm_120a", ((16, 8, 64),),
                       tuple(_v("f32", "e2m1", "e2m1", "f32", s, blk, kind) for kind, blk, s in fp4_variants),
                       {"f32": gst}, f"{_PTX_MMA}; {_PTX_BLOCK}; {bs_gst}"))
    return tuple(fams)


#: every family, by architecture (oldest first) and operation
FAMILIES: tuple[Family, ...] = _build()


def families(arch: str | None = None) -> tuple[Family, ...]:
    """The families of one architecture (all of them when `arch` is None)."""
    if arch is None:
        return FAMILIES
    return tuple(f for f in FAMILIES if f.arch == _check_arch(arch))


def _check_arch(arch: str) -> str:
    if not isinstance(arch, str) or arch not in ARCHS:
        raise ValueError(f"unknown architecture {arch!r}; known: {', '.join(ARCHS)}")
    return arch


@lru_cache(maxsize=None)
def _table(arch: str) -> dict[str, Instruction]:
    out: dict[str, Instruction] = {}
    for fam in families(arch):
        for shape in fam.shapes:
            for v in fam.variants:
                name = _format_name(fam.operation, shape, v)
                d, a, b, c, s, block, kind = v
                out[name] = Instruction(name, fam, *shape, d_type=d, a_type=a, b_type=b, c_type=c,
                                        scale_type=s, block=block, kind=kind)
    return out


def instructions(arch: str) -> list[str]:
    """Every instruction string modelled on `arch`, sorted."""
    return sorted(_table(_check_arch(arch)))


def _patterns(arch: str) -> list[str]:
    """The instruction strings of `arch` with N (and the M of tcgen05.mma) written as a range."""
    pats: list[str] = []
    for fam in families(arch):
        ms = sorted({s[0] for s in fam.shapes})
        ns = sorted({s[1] for s in fam.shapes})
        ks = sorted({s[2] for s in fam.shapes})
        m_text = "M" if len(ms) > 1 else str(ms[0])
        n_text = "N" if len(ns) > 1 else str(ns[0])
        for k in ks:
            for v in fam.variants:
                name = _format_name(fam.operation, (0, 0, k), v).replace("m0n0", f"m{m_text}n{n_text}")
                if name not in pats:
                    pats.append(name)
    return pats


def get_instruction(arch: str, instruction: str) -> Instruction:
    """The record of `instruction` on `arch`; ValueError naming what exists otherwise."""
    table = _table(_check_arch(arch))
    if isinstance(instruction, str) and instruction in table:
        return table[instruction]
    if not isinstance(instruction, str):
        raise ValueError(f"instruction must be a string such as 'wgmma.m64n8k32.f32.e4m3.e4m3', got {instruction!r}")
    close = difflib.get_close_matches(instruction, list(table), n=3, cutoff=0.75)
    hint = f" (did you mean {', '.join(close)}?)" if close else ""
    elsewhere = [a for a in ARCHS if a != arch and instruction in _table(a)]
    other = f"; it exists on {', '.join(elsewhere)}" if elsewhere else ""
    ranges = "M = 64 or 128, N = 8, 16, …, 256"
    raise ValueError(f"unknown instruction {instruction!r} on {arch}{other}{hint}; known on {arch} "
                     f"({ranges} where written): {', '.join(_patterns(arch))}")
