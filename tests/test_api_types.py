"""Public entry points that take arrays refuse object (and text) arrays with a TypeError naming the
parameter, instead of converting them element by element; scalar parameters of the wrong type get a
TypeError that names them (issue 33: "object arrays are accepted; some TypeErrors don't name the
parameter"). Each case states the parameter its message must start with."""

from __future__ import annotations

import re
from typing import Any, Callable

import numpy as np
import pytest

from lowprec import formats as F
from lowprec.formats import explain
from lowprec.simulations.studies import attention, cliffs, hadamard
from lowprec.simulations.blocks import records as block_formats
from lowprec.simulations.scaling import metrics, scales
from lowprec.simulations import mx, nvfp4

OBJ = np.array([[1.0, 2.0, 3.0, 4.0]] * 2, dtype=object)
TEXT = np.array(["1", "2"])
OK = np.ones((2, 4))

CASES: list[tuple[str, Callable[[], Any], str]] = [
    ("formats.encode", lambda: F.encode(OBJ, "E4M3FN"), "x has dtype object"),
    ("formats.quantize", lambda: F.quantize(TEXT, "E4M3FN"), "x has dtype <U1"),
    ("formats.encode_scalar", lambda: F.encode_scalar(None, "E4M3FN"), "x must be a real number"),
    ("formats.encode_scalar array", lambda: F.encode_scalar(OK, "E4M3FN"), "x must be a real number"),
    ("formats.decode_scalar", lambda: F.decode_scalar("1", "E4M3FN"), "code must be an integer"),
    ("explain.power_of_two_text", lambda: explain.power_of_two_text("0.5"), "value must be a real number"),
    ("explain.resolve_policy", lambda: explain.resolve_policy("E4M3FN", ["torch"]), "convention must be a name"),
    ("explain.explain_cast", lambda: explain.explain_cast("1", "E4M3FN", rounding=3), "rounding must be a name"),
    ("explain.explain_value", lambda: explain.explain_value("1", code="56"), "code must be an integer"),
    ("scales.amax_array", lambda: scales.amax_array(OBJ), "amax has dtype object"),
    ("scales.encode_scale", lambda: scales.encode_scale(OBJ, "E4M3FN"), "amax has dtype object"),
    ("scales.decode_scale", lambda: scales.decode_scale(TEXT, "E4M3FN"), "amax has dtype <U1"),
    ("scales.usable_amax", lambda: scales.usable_amax(OBJ), "amax has dtype object"),
    ("block_formats.mx_scale_exponent", lambda: block_formats.mx_scale_exponent(OBJ), "amax has dtype object"),
    ("metrics.error_metrics x", lambda: metrics.error_metrics(OBJ, OK), "x has dtype object"),
    ("metrics.error_metrics x_hat", lambda: metrics.error_metrics(OK, OBJ), "x_hat has dtype object"),
    ("metrics.element_rel_error", lambda: metrics.element_rel_error(OK, OBJ), "x_hat has dtype object"),
    ("cliffs.round_to", lambda: cliffs.round_to(OBJ, "BF16"), "x has dtype object"),
    ("cliffs.add_in", lambda: cliffs.add_in(OK, OBJ, "BF16"), "b has dtype object"),
    ("attention.values", lambda: attention.run_attention(attention.AttentionInputs(np.zeros((2, 4)), OBJ.T)),
     "values must be an array of real numbers"),
    ("attention.stochastic_variance", lambda: attention.stochastic_variance(OBJ, "E4M3FN"),
     "probs must be an array of real numbers"),
    ("attention.make_inputs", lambda: attention.make_inputs(4, 2, seed="1"), "seed must be an integer"),
    ("hadamard.random_hadamard seed", lambda: hadamard.random_hadamard(16, seed="1"), "seed must be an integer"),
    ("hadamard.random_hadamard signs", lambda: hadamard.random_hadamard(16, signs=np.ones(16, dtype=object)),
     "signs has dtype object"),
    ("hadamard.hadamard_study", lambda: hadamard.hadamard_study(seed=1.5), "seed must be an integer"),
    ("nvfp4.nvfp4_tensor_scale", lambda: nvfp4.nvfp4_tensor_scale(None), "tensor amax must be a real number"),
    ("mx.mx_scale_rule_table", lambda: mx.mx_scale_rule_table(OK), "amax must be a real number"),
]


@pytest.mark.parametrize("name, call, start", CASES, ids=[c[0] for c in CASES])
def test_wrong_types_are_refused_naming_the_parameter(name: str, call: Callable[[], Any], start: str) -> None:
    with pytest.raises(TypeError, match="^" + re.escape(start)):
        call()


def test_real_arrays_still_work() -> None:
    """The checks refuse only what is not real numbers: ints, float16/32/64 and Python scalars pass."""
    assert scales.encode_scale(np.array([448, 224]), "E4M3FN").tolist() == [1.0, 2.0]
    assert scales.encode_scale(448.0, "E4M3FN") == 1.0
    assert metrics.error_metrics(np.float32([1, 2]), np.float16([1, 2])).rms_rel_error == 0.0
    assert cliffs.add_in(np.array([1.0]), np.array([2.0**-9]), "BF16").tolist() == [1.0]
    assert F.encode_scalar(np.float32(448.0), "E4M3FN") == 0x7E and F.decode_scalar(np.int64(0x7E), "E4M3FN") == 448.0
    assert explain.power_of_two_text(np.float32(0.3125)) == "5/4 × 2^-2" and explain.power_of_two_text(448) == "7/4 × 2^8"
    assert hadamard.random_hadamard(16, seed=np.int64(3)).shape == (16, 16)
