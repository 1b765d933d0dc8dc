"""The instruction records of `lowprec.simulations.gemm.isa` against MMA-Sim's own tables: the same
instructions on every architecture, and for each the same arithmetic parameters (F, products per
step, output rounding, zero exponent, group length) that mmasim 2.1.1 builds its model from."""

from __future__ import annotations

import pytest

from lowprec.simulations import gemm
from lowprec.simulations.gemm import isa

from tests.gemm_oracle import MMASIM_ARCH, mmasim_available

needs_mmasim = pytest.mark.skipif(not mmasim_available(), reason="mmasim (the test extra) is not installed")

_RHO = {"rz_fp32": "RZ-FP32", "rz_e8m13": "RZ-E8M13", "rne_fp16": "RNE-FP16"}


def _mmasim_names(arch: str) -> dict[str, set[str]]:
    """mmasim's instruction strings per operation (PTX shape and types), double precision left out."""
    from mmasim.nv_ptx import isa_mma, isa_tcgen05mma, isa_wgmma

    a = MMASIM_ARCH[arch]
    mma = set(isa_mma.mma_shape_and_type.get(a, [])) | set(isa_mma.mma_block_scale_shape_and_type.get(a, []))
    out = {"mma": {s for s in mma if "f64" not in s},
           "wgmma": set(isa_wgmma.wgmma_shape_and_type.get(a, [])),
           "tcgen05.mma": set(isa_tcgen05mma.tcgen05mma_shape_and_type.get(a, []))
           | set(isa_tcgen05mma.tcgen05mma_block_scale_shape_and_type.get(a, []))}
    return out


@needs_mmasim
@pytest.mark.parametrize("arch", gemm.ARCHS)
def test_every_mmasim_instruction_is_modelled(arch: str) -> None:
    ours: dict[str, set[str]] = {"mma": set(), "wgmma": set(), "tcgen05.mma": set()}
    for name in gemm.instructions(arch):
        ins = gemm.get_instruction(arch, name)
        ours[ins.operation].add(name[len(ins.operation) + 1:])
    assert ours == _mmasim_names(arch)


@needs_mmasim
@pytest.mark.parametrize("arch", gemm.ARCHS)
def test_parameters_are_mmasims(arch: str) -> None:
    """F, L, rounding and zero exponent of every instruction equal those mmasim builds."""
    from tests.gemm_oracle import _op

    checked = set()
    for name in gemm.instructions(arch):
        ins = gemm.get_instruction(arch, name)
        key = (ins.family.name, ins.k, ins.d_type, ins.a_type, ins.c_type, ins.kind, ins.block, ins.scale_type)
        if key in checked:
            continue
        checked.add(key)
        op = _op(arch, name).arithmetic_op
        u = ins.unit
        assert (op.F, op.L_max, op.e_zero) == (u.frac_bits, u.fused, u.zero_exponent), name
        assert op.rho == _RHO[u.output.value], name
        assert getattr(op, "G", 1) == u.group, name
        assert type(op).__name__ == {"T-FDPA": "MMA_T_FDPA", "ST-FDPA": "MMA_ST_FDPA",
                                     "GST-FDPA": "MMA_GST_FDPA"}[u.algorithm], name


def test_the_issue_families_are_covered() -> None:
    """Each family the issue names exists with the numbers the MMA-Sim paper reports."""
    hopper_fp8 = gemm.get_instruction("hopper", "wgmma.m64n8k32.f32.e4m3.e4m3").unit
    assert (hopper_fp8.frac_bits, hopper_fp8.output, hopper_fp8.fused) == (13, gemm.OutputRounding.RZ_E8M13, 32)
    assert gemm.get_instruction("hopper", "wgmma.m64n8k32.f16.e4m3.e4m3").unit.output is gemm.OutputRounding.RNE_FP16
    blackwell_fp8 = gemm.get_instruction("blackwell", "tcgen05.mma.m64n8k32.kind::f8f6f4.f32.e2m1.e3m2").unit
    assert blackwell_fp8.frac_bits == 25
    nvfp4 = gemm.get_instruction("blackwell", "tcgen05.mma.m128n8k64.kind::mxf4nvf4.block16.f32.e2m1.e2m1.ue4m3")
    assert (nvfp4.unit.group, nvfp4.unit.frac_bits, nvfp4.block, nvfp4.scale_type) == (16, 35, 16, "ue4m3")
    ada = gemm.get_instruction("ada", "mma.m16n8k32.f32.e4m3.e4m3.f32")
    assert (ada.unit.steps(ada.k), ada.unit.frac_bits) == (2, 13)
    rtx = gemm.get_instruction("rtx_blackwell", "mma.m16n8k32.kind::mxf8f6f4.block32.f32.e4m3.e4m3.f32.ue8m0")
    assert (rtx.unit.algorithm, rtx.block, rtx.scale_type) == ("ST-FDPA", 32, "ue8m0")
    assert {f.operation for f in gemm.FAMILIES} == {"mma", "wgmma", "tcgen05.mma"}
    assert {f.arch for f in gemm.FAMILIES} == set(gemm.ARCHS)


def test_every_family_names_its_sources() -> None:
    for fam in gemm.FAMILIES:
        assert "PTX ISA" in fam.sources and "MMA-Sim" in fam.sources, fam.name
        assert set(fam.units) <= {"f32", "f16"} and fam.units, fam.name
        for v in fam.variants:
            assert v[0] in fam.units, (fam.name, v)
    names = [f.name for f in gemm.FAMILIES]
    assert len(names) == len(set(names))


def test_instruction_fields_follow_the_string() -> None:
    ins = gemm.get_instruction("rtx_blackwell", "mma.m16n8k64.kind::mxf4nvf4.block16.f32.e2m1.e2m1.f32.ue4m3")
    assert (ins.m, ins.n, ins.k, ins.kind, ins.block, ins.scale_type) == (16, 8, 64, "mxf4nvf4", 16, "ue4m3")
    assert (ins.a_format, ins.scale_format) == (gemm.PTX_TYPES["e2m1"], gemm.UE4M3)
    wg = gemm.get_instruction("hopper", "wgmma.m64n256k16.f16.f16.f16")
    assert (wg.m, wg.n, wg.k, wg.c_type, wg.d_type, wg.chains) == (64, 256, 16, "f16", "f16", True)
    volta = gemm.get_instruction("volta", "mma.m8n8k4.f32.f16.f16.f16")
    assert not volta.chains  # C is FP16, D FP32
    assert "K = 32 in 1 step(s) of 32 products, F = 13" in gemm.get_instruction(
        "hopper", "wgmma.m64n8k32.f32.e4m3.e4m3").describe()
    # Turing's m8n8k4 keeps Volta's arithmetic
    assert gemm.get_instruction("turing", "mma.m8n8k4.f32.f16.f16.f32").unit == \
        gemm.get_instruction("volta", "mma.m8n8k4.f32.f16.f16.f32").unit


def test_output_rounding_parameters() -> None:
    r = gemm.OutputRounding
    assert [(x.kept_bits, x.emin, x.emax, x.toward_zero) for x in (r.RZ_FP32, r.RZ_E8M13, r.RNE_FP16)] == \
        [(23, -126, 127, True), (13, -126, 127, True), (10, -14, 15, False)]
    assert gemm.TF32.max == (2 - 2.0**-10) * 2.0**127 and gemm.UE4M3.max == 448.0 and not gemm.UE4M3.signed


def test_unknown_architecture_lists_the_known_ones() -> None:
    with pytest.raises(ValueError, match="unknown architecture 'h100'; known: volta, turing"):
        gemm.instructions("h100")
    with pytest.raises(ValueError, match="unknown architecture"):
        gemm.mma([[0.0]], [[0.0]], [[0.0]], arch="sm_90", instruction="wgmma.m64n8k32.f32.e4m3.e4m3")


def test_unknown_instruction_is_one_line_naming_it() -> None:
    with pytest.raises(ValueError, match=r"unknown instruction 'wgmma.m64n8k32.f32.e4m3.e4m2' on hopper "
                                         r"\(did you mean wgmma.m64n8k32.f32.e4m3.e5m2") as e:
        gemm.get_instruction("hopper", "wgmma.m64n8k32.f32.e4m3.e4m2")
    assert "\n" not in str(e.value) and "wgmma.m64nNk32.f32.e4m3.e4m3" in str(e.value)
    with pytest.raises(ValueError, match="it exists on hopper"):
        gemm.get_instruction("blackwell", "wgmma.m64n8k32.f32.e4m3.e4m3")
    with pytest.raises(ValueError, match="instruction must be a string"):
        gemm.get_instruction("hopper", 3)  # type: ignore[arg-type]


def test_instruction_lists_are_sorted_and_complete() -> None:
    hopper = gemm.instructions("hopper")
    assert hopper == sorted(hopper) and len(hopper) == 8 + 32 * 12
    assert "wgmma.m64n8k32.f32.e4m3.e4m3" in hopper and "mma.m16n8k32.f32.e4m3.e4m3.f32" not in hopper
    assert "mma.m16n8k32.f32.e4m3.e4m3.f32" in gemm.instructions("ada")
    assert len(gemm.instructions("blackwell")) == 8 + 64 * 54 + 32 * 29
    assert isa.families("volta")[0].instruction_names() == ["mma.m8n8k4.f32.f16.f16.f32", "mma.m8n8k4.f32.f16.f16.f16",
                                                            "mma.m8n8k4.f16.f16.f16.f16"]
