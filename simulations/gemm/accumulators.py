"""Which tensor-core instruction a product runs on, named the way a user picks it: an architecture's
default instruction, the dense instruction for two operand formats, and the named accumulators a
simulation offers (`ACCUMULATORS`, the choices of `simulations.framework.knobs.accumulator_knob`).

- `default_instruction(arch)`: the instruction a study of `arch` starts from — FP8 (E4M3 × E4M3,
  FP32 D) where the architecture has FP8 tensor cores (Ada, Hopper, Blackwell, RTX Blackwell), BF16
  on Ampere, FP16 with FP32 D on Volta and Turing.
- `dense_instruction(arch, a_format, b_format)`: the unscaled instruction of `arch` that multiplies
  operands of these two formats with an FP32 D, smallest shape (M and N do not change the
  arithmetic of one output): Hopper `wgmma` (FP8 pairs; BF16 or FP16 pairs), Blackwell
  `tcgen05.mma` (`kind::f8f6f4`: any pair of E5M2, E4M3FN, E3M2, E2M3, E2M1; `kind::f16`), `mma`
  elsewhere. A pair no instruction of `arch` takes is a ValueError naming it.
- `ACCUMULATORS`: how a simulation's product is accumulated — `exact` (every product and the sum
  exact, the reference), or through a tensor core: `hopper` (the whole contraction chained through
  Hopper's instruction: FP8 keeps 13 fraction bits, "fast accumulation"), `hopper_promote128` (the
  same, its partial sum promoted to an FP32 accumulator every 128 elements: DeepSeek-V3 §3.3.2,
  DeepGEMM), `blackwell` (tcgen05.mma, 25 fraction bits). `accumulate(a, b, accumulator)` runs one.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from lowprec import formats
from lowprec.config import Budget
from lowprec.formats import FloatFormat

from ..framework.knobs import ACCUMULATOR_CHOICES
from .core import matmul
from .isa import ARCHS, PTX_TYPES, get_instruction

__all__ = ["ACCUMULATORS", "Accumulator", "accumulate", "accumulator", "default_instruction", "dense_instruction",
           "ptx_type"]

_F8F6F4 = ("e5m2", "e4m3", "e3m2", "e2m3", "e2m1")
_DEFAULTS = {
    "volta": "mma.m8n8k4.f32.f16.f16.f32",
    "turing": "mma.m16n8k8.f32.f16.f16.f32",
    "ampere": "mma.m16n8k16.f32.bf16.bf16.f32",
    "ada": "mma.m16n8k32.f32.e4m3.e4m3.f32",
    "hopper": "wgmma.m64n8k32.f32.e4m3.e4m3",
    "blackwell": "tcgen05.mma.m64n8k32.kind::f8f6f4.f32.e4m3.e4m3",
    "rtx_blackwell": "mma.m16n8k32.f32.e4m3.e4m3.f32",
}


def default_instruction(arch: str) -> str:
    """The instruction a study of `arch` starts from (FP8 where the architecture has it)."""
    if not isinstance(arch, str) or arch not in _DEFAULTS:
        raise ValueError(f"unknown architecture {arch!r}; known: {', '.join(ARCHS)}")
    return _DEFAULTS[arch]


def ptx_type(fmt: str | FloatFormat) -> str:
    """The PTX type qualifier of an operand format (`E4M3FN` → `e4m3`); ValueError for a format no
    tensor core takes as an operand."""
    f = formats.get_format(fmt) if isinstance(fmt, str) else fmt
    for name, g in PTX_TYPES.items():
        if g.name == f.name and name not in ("f32", "ue8m0", "ue4m3"):
            return name
    operands = ", ".join(g.name for n, g in PTX_TYPES.items() if n not in ("f32", "ue8m0", "ue4m3"))
    raise ValueError(f"{f.name} is not a tensor-core operand format; operand formats: {operands}")


def dense_instruction(arch: str, a_format: str | FloatFormat, b_format: str | FloatFormat) -> str:
    """The unscaled instruction of `arch` with FP32 D for operands of these formats (module docstring)."""
    a, b = ptx_type(a_format), ptx_type(b_format)
    default_instruction(arch)  # checks arch
    pair = f"{a}.{b}"
    if arch == "hopper":
        if a in ("e4m3", "e5m2") and b in ("e4m3", "e5m2"):
            name = f"wgmma.m64n8k32.f32.{pair}"
        elif a == b and a in ("bf16", "f16"):
            name = f"wgmma.m64n8k16.f32.{pair}"
        elif a == b == "tf32":
            name = "wgmma.m64n8k8.f32.tf32.tf32"
        else:
            name = ""
    elif arch == "blackwell":
        if a in _F8F6F4 and b in _F8F6F4:
            name = f"tcgen05.mma.m64n8k32.kind::f8f6f4.f32.{pair}"
        elif a == b and a in ("bf16", "f16"):
            name = f"tcgen05.mma.m64n8k16.kind::f16.f32.{pair}"
        elif a == b == "tf32":
            name = "tcgen05.mma.m64n8k8.kind::tf32.f32.tf32.tf32"
        else:
            name = ""
    else:
        k = {"e4m3": 32, "e5m2": 32, "bf16": 16, "f16": 16, "tf32": 8}
        name = ""
        if a in k and b in k and (a == b or (a in ("e4m3", "e5m2") and b in ("e4m3", "e5m2"))):
            shape = "m8n8k4" if arch == "volta" else (f"m16n8k{k[a]}" if arch != "turing" else "m16n8k8")
            name = f"mma.{shape}.f32.{pair}.f32"
    try:
        get_instruction(arch, name)
    except ValueError:
        raise ValueError(f"no tensor-core instruction of {arch} multiplies {formats.get_format(a_format).name if isinstance(a_format, str) else a_format.name} "
                         f"by {formats.get_format(b_format).name if isinstance(b_format, str) else b_format.name} "
                         f"(its default is {default_instruction(arch)})") from None
    return name


@dataclass(frozen=True)
class Accumulator:
    """A named way to accumulate a product (see the module docstring)."""

    name: str
    arch: str | None  # None: exact
    promote_every: int | None
    description: str


_SPECS: dict[str, Accumulator] = {a.name: a for a in (
    Accumulator("exact", None, None, "every product and the sum exact (the reference)"),
    Accumulator("hopper", "hopper", None, "Hopper tensor cores, the whole contraction chained through the "
                "instruction (FP8: 13 fraction bits, fast accumulation)"),
    Accumulator("hopper_promote128", "hopper", 128, "Hopper tensor cores, the partial sum promoted to FP32 every "
                "128 elements (DeepSeek-V3 §3.3.2, DeepGEMM)"),
    Accumulator("blackwell", "blackwell", None, "Blackwell tcgen05.mma, 25 fraction bits"),
)}
#: the named accumulators, keyed by the choices of `simulations.framework.knobs.accumulator_knob` (the names are
#: declared there; a name without a record here fails at import)
ACCUMULATORS: dict[str, Accumulator] = {name: _SPECS[name] for name in ACCUMULATOR_CHOICES}


def accumulator(name: str) -> Accumulator:
    if not isinstance(name, str) or name not in ACCUMULATORS:
        raise ValueError(f"unknown accumulator {name!r}; known: {', '.join(ACCUMULATORS)}")
    return ACCUMULATORS[name]


def accumulate(a: np.ndarray, b: np.ndarray, name: str, a_format: str | FloatFormat,
               b_format: str | FloatFormat, *, budget: Budget | None = None) -> np.ndarray:
    """A·B (float64 result) as accumulator `name` computes it: exact (float64 of the exact sum), or
    the FP32 D of the tensor-core model. `a` (M, K) and `b` (K, N) must hold values exact in
    `a_format`/`b_format`; K is padded with zeros to a multiple of the instruction's K (a kernel
    pads a partial K tile with zeros)."""
    acc = accumulator(name)
    a = np.asarray(a, np.float64)
    b = np.asarray(b, np.float64)
    if acc.arch is None:
        from ._kernels import exact_tile  # the exact reference, as matmul computes it

        m, n = a.shape[0], b.shape[1]
        exact = np.empty((m, n))
        err = np.empty((m, n))
        exact_tile(np.ascontiguousarray(a), np.ascontiguousarray(b), np.ones((m, 1)), np.ones((1, n)),
                   max(a.shape[1], 1), np.zeros((m, n)), np.zeros((m, n)), exact, err, False)
        return exact
    name_ins = dense_instruction(acc.arch, a_format, b_format)
    ins = get_instruction(acc.arch, name_ins)
    pad = (-a.shape[1]) % ins.k
    if pad:
        a = np.concatenate([a, np.zeros((a.shape[0], pad))], axis=1)
        b = np.concatenate([b, np.zeros((pad, b.shape[1]))], axis=0)
    res = matmul(a, b, arch=acc.arch, instruction=name_ins, promote_every=acc.promote_every, reference=False,
                 budget=budget)
    return res.d_values
