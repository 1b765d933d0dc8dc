"""`convention="torchao"` against torchao itself, bit for bit: the reference functions of
torchao.prototype.mx_formats (0.18.0), `to_mx` (eager, CPU) and `nvfp4_quantize` with the per-tensor
scale its NVFP4 workflow computes, `per_tensor_amax_to_scale(torch.max(torch.abs(x)))`. Scale codes
and element codes are compared as unsigned integers (torchao's packed FP4 bytes unpacked into their
two nibbles), over named edge blocks and a seeded tensor whose rows span 2^-12 … 2^12."""

from __future__ import annotations

import logging

import numpy as np
import pytest

from lowprec import formats
from lowprec.simulations.mx import quantize_mx
from lowprec.simulations.nvfp4 import quantize_nvfp4
from tests.block_oracles import edge_blocks, first_mismatches, same_float32, wide_tensor

torch = pytest.importorskip("torch")
logging.getLogger("torchao").setLevel(logging.ERROR)
torchao = pytest.importorskip("torchao")
from torchao.prototype.mx_formats.config import ScaleCalculationMode  # noqa: E402
from torchao.prototype.mx_formats.constants import DTYPE_FP6_E2M3, DTYPE_FP6_E3M2  # noqa: E402
from torchao.prototype.mx_formats.kernels import unpack_uint4  # noqa: E402
from torchao.prototype.mx_formats.mx_tensor import to_mx  # noqa: E402
from torchao.prototype.mx_formats.nvfp4_tensor import nvfp4_quantize, per_tensor_amax_to_scale  # noqa: E402

TORCHAO_VERSION = "0.18.0"  # the release the torchao convention was matched against
ELEMENT_DTYPES = {"E4M3FN": torch.float8_e4m3fn, "E5M2": torch.float8_e5m2, "E3M2": DTYPE_FP6_E3M2,
                  "E2M3": DTYPE_FP6_E2M3, "E2M1": torch.float4_e2m1fn_x2}
RULES = ("floor", "rceil", "ceil", "even")


def test_matched_version() -> None:
    assert torchao.__version__.split("+")[0] == TORCHAO_VERSION


def torchao_mx(x: np.ndarray, name: str, rule: str) -> tuple[np.ndarray, np.ndarray]:
    """(scale codes, element codes) as uint8, one scale per row of 32."""
    scale, data = to_mx(torch.from_numpy(x.copy()), ELEMENT_DTYPES[name], 32, ScaleCalculationMode(rule))
    codes = unpack_uint4(data.view(torch.uint8)) if name == "E2M1" else data.view(torch.uint8)
    return scale.view(torch.uint8).numpy().reshape(x.shape[0], -1), codes.numpy().reshape(x.shape)


def torchao_nvfp4(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    """(E4M3 scale codes, E2M1 codes, per-tensor scale) of `nvfp4_quantize`."""
    t = torch.from_numpy(x.copy())
    pts = per_tensor_amax_to_scale(torch.max(torch.abs(t)))
    scale, data = nvfp4_quantize(t, 16, pts)
    return (scale.view(torch.uint8).numpy().reshape(x.shape[0], -1),
            unpack_uint4(data.view(torch.uint8)).numpy().reshape(x.shape), float(pts))


def mx_data(kind: str, name: str) -> tuple[list[str], np.ndarray]:
    f = formats.get_format(name)
    if kind == "wide":
        x = wide_tensor(32)
        return [f"row {i}" for i in range(x.shape[0])], x
    grid = formats.decode(np.arange(f.n_codes // 2), f)
    return edge_blocks(32, f.max, grid[np.isfinite(grid)])


@pytest.mark.parametrize("kind", ["edge", "wide"])
@pytest.mark.parametrize("rule", RULES)
@pytest.mark.parametrize("name", list(ELEMENT_DTYPES))
def test_mx_bit_equal_to_torchao(name: str, rule: str, kind: str) -> None:
    labels, x = mx_data(kind, name)
    want_scale, want_codes = torchao_mx(x, name, rule)
    got = quantize_mx(x, name, 32, rule, convention="torchao")
    assert got.scale_codes.dtype == np.uint8 and got.codes.dtype == np.uint8
    n_scale = int(np.sum(got.scale_codes != want_scale))
    n_codes = int(np.sum(got.codes != want_codes))
    assert (n_scale, n_codes) == (0, 0), (
        f"{n_scale} scale and {n_codes} element mismatches; "
        + first_mismatches(labels, want_scale, got.scale_codes) + " | "
        + first_mismatches(labels, want_codes, got.codes))


def nvfp4_cases() -> dict[str, tuple[list[str], np.ndarray]]:
    labels, finite = edge_blocks(16, 448.0 * 6.0, formats.decode(np.arange(8), formats.E2M1),
                                 nonfinite=False)
    keep = [i for i, lab in enumerate(labels) if lab != "one huge element"]
    lab_f = [labels[i] for i in keep]
    finite = finite[keep]
    nf_labels, with_nonfinite = edge_blocks(16, 448.0 * 6.0)
    inf_rows = [i for i, lab in enumerate(nf_labels) if "NaN" not in lab]
    wide = wide_tensor(16)
    return {
        "edge (finite, tensor amax 2^100)": (lab_f, finite),
        "edge with a huge element": (labels, edge_blocks(16, 448.0 * 6.0, nonfinite=False)[1]),
        "edge with +Inf and -Inf": ([nf_labels[i] for i in inf_rows], with_nonfinite[inf_rows]),
        "edge with NaN": (nf_labels, with_nonfinite),
        "zero tensor": (["zero", "zero"], np.zeros((2, 32), np.float32)),
        "wide range": ([f"row {i}" for i in range(wide.shape[0])], wide),
    }


@pytest.mark.parametrize("case", list(nvfp4_cases()))
def test_nvfp4_bit_equal_to_torchao(case: str) -> None:
    labels, x = nvfp4_cases()[case]
    want_scale, want_codes, pts = torchao_nvfp4(x)
    got = quantize_nvfp4(x, convention="torchao")
    assert same_float32(got.tensor_scale, pts)
    n_scale = int(np.sum(got.scale_codes != want_scale))
    n_codes = int(np.sum(got.codes != want_codes))
    assert (n_scale, n_codes) == (0, 0), (
        f"{n_scale} scale and {n_codes} element mismatches; "
        + first_mismatches(labels, want_scale, got.scale_codes) + " | "
        + first_mismatches(labels, want_codes, got.codes))


def test_torchao_is_not_ocp_on_the_wide_tensor() -> None:
    """The convention matters: on blocks spanning many binades torchao's 2^-6 floor on NVFP4 block
    scales changes thousands of scale codes; at the rceil boundary its float32 arithmetic changes
    MX scales."""
    x = wide_tensor(16)
    ocp, ao = quantize_nvfp4(x), quantize_nvfp4(x, convention="torchao")
    below = formats.decode(ocp.scale_codes, formats.E4M3FN) < formats.E4M3FN.smallest_normal
    assert below.sum() > 1000
    np.testing.assert_array_equal(ao.scale_codes[below], 0x08)  # E4M3 code of 2^-6
    labels, e = edge_blocks(32, 448.0)
    o, a = quantize_mx(e, "E4M3FN", 32, "rceil"), quantize_mx(e, "E4M3FN", 32, "rceil", convention="torchao")
    differ = {labels[i] for i in np.nonzero(o.scale_codes[:, 0] != a.scale_codes[:, 0])[0]}
    assert "amax max·2^7 +1 steps (rceil boundary)" in differ  # 448·2^7 + 1 step: fl32(amax/448) = 2^7
