"""The worked-examples registry: every example against an independent computation (Fractions, Python
floats, ml_dtypes, numpy and torch casts), never against its own output; plus the registry API and
the `lowprec examples` command."""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import ml_dtypes
import numpy as np
import pytest
import torch

from lowprec import strictjson
from lowprec.simulations import examples as ex
from lowprec.simulations import examples_extra
from lowprec.simulations.example_record import Example
from lowprec.simulations.examples import EXAMPLES, example, list_examples

def vals(name: str) -> dict[str, Any]:
    """An example's values, typed loosely for the assertions below."""
    return dict(example(name).values)


CORE = ("attention_product", "bf16_tie_flip", "fp32_absorption", "fake_quant_scalar", "e4m3fn_range",
        "e5m2_range", "e2m1_range", "e8m0_range", "e4m3fn_gaps", "mxfp8_bits_per_element",
        "nvfp4_bits_per_element", "kv_cache_memory", "softmax_saturation",
        "e4m3fn_overflow_conventions", "e8m0_ties")


# ------------------------------------------------------------------------------------------------
# registry API
# ------------------------------------------------------------------------------------------------


def test_core_examples_are_registered() -> None:
    assert set(CORE) <= set(EXAMPLES)
    assert [e.name for e in list_examples()] == sorted(EXAMPLES)


def test_unknown_example_lists_known_names() -> None:
    with pytest.raises(ValueError, match="attention_product") as info:
        example("no_such_example")
    assert "no_such_example" in str(info.value)
    with pytest.raises(ValueError, match="fields"):
        example("kv_cache_memory").format("no_such_field")


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_every_example_is_complete_and_json(name: str) -> None:
    e = example(name)
    assert isinstance(e, Example) and e.name == name and e.title and e.source
    assert e.summary_field in e.values
    assert set(e.values) <= set(e.units)
    for key in e.values:
        assert isinstance(e.format(key), str) and e.format(key)
    d = strictjson.loads(strictjson.dumps(e.to_dict()))
    assert d["summary"] == e.format()


def test_extra_examples_are_merged() -> None:
    assert set(examples_extra.EXAMPLES) <= set(EXAMPLES)
    assert {"mx_scale_rounding", "delayed_spike"} <= set(EXAMPLES)
    assert ex.Example is Example  # one record, in its own module


def test_format_text() -> None:
    e = Example("t", "T", "test", {"a": 890.0, "b": 0.8289, "c": [0.5, 0.25, 0.0], "d": "x", "e": 8.25,
                                   "f": float("nan"), "g": True},
                {"a": "MB", "b": "GiB", "c": "", "d": "", "e": "bits", "f": "", "g": ""}, "a",
                digits={"b": 2})
    assert e.format() == "890 MB"
    assert e.format("b") == "0.83 GiB"
    assert e.format("c") == "[0.5, 0.25, 0]"
    assert e.format("e") == "8.25 bits"
    assert e.format("f") == "nan" and e.to_dict()["values"]["f"] == "nan"  # one word in prose and JSON
    assert e.format("g") == "yes"
    with pytest.raises(ValueError, match="summary"):
        Example("t", "T", "s", {"a": 1}, {"a": ""}, "b")
    with pytest.raises(ValueError, match="unit"):
        Example("t", "T", "s", {"a": 1}, {}, "a")


# ------------------------------------------------------------------------------------------------
# each example against an independent computation
# ------------------------------------------------------------------------------------------------


def test_attention_product() -> None:
    v = vals("attention_product")
    step = Fraction(1, 4)
    p = [Fraction(s) for s in ("0.6", "0.3", "0.1")]
    weights = [0, 2, 10]
    p_rounded = [round(x / step) * step for x in p]  # Fraction round: half to even
    assert v["probs_rounded"] == [float(x) for x in p_rounded] == [0.5, 0.25, 0.0]
    assert v["exact_product"] == float(sum(a * b for a, b in zip(p, weights))) == 1.6
    assert v["rounded_product"] == float(sum(a * b for a, b in zip(p_rounded, weights))) == 0.5
    assert example("attention_product").format() == "1.6 → 0.5"


def test_bf16_tie_flip() -> None:
    v = vals("bf16_tie_flip")
    bf = ml_dtypes.bfloat16
    assert v["midpoint"] == 1 + 2 ** -8 and v["upper"] == 1 + 2 ** -7
    assert v["rounded_midpoint"] == float(bf(1 + 2 ** -8)) == 1.0
    assert v["rounded_perturbed"] == float(bf(1 + 2 ** -8 + 2 ** -16)) == 1 + 2 ** -7
    assert v["odd_rounded_midpoint"] == float(bf(1 + 3 * 2 ** -8)) == 1 + 2 ** -6
    assert v["midpoint_text"] == "1 + 1/256" and v["rounded_perturbed_text"] == "1 + 1/128"


def test_fp32_absorption() -> None:
    e = example("fp32_absorption")
    v = e.values
    assert v["absorbed"] is True
    assert np.float32(1) + np.float32(1e-8) == np.float32(1)
    assert v["threshold_fp32"] == float(np.finfo(np.float32).eps) / 2 == 2.0 ** -24
    assert v["threshold_bf16"] == float(ml_dtypes.finfo(ml_dtypes.bfloat16).eps) / 2 == 2.0 ** -8
    assert v["threshold_fp16"] == float(np.finfo(np.float16).eps) / 2 == 2.0 ** -11
    # the thresholds are real: just above them the sum moves, at them it does not (tie to even 1)
    assert np.float16(1) + np.float16(2.0 ** -11) == np.float16(1)
    assert np.float16(1) + np.float16(2.0 ** -11 + 2.0 ** -21) > np.float16(1)
    assert e.format() == "1 + 1e-8 == 1 in FP32"


def test_fake_quant_scalar() -> None:
    v = vals("fake_quant_scalar")
    ref = torch.fake_quantize_per_tensor_affine(torch.tensor([0.6, 2.0], dtype=torch.float32),
                                                0.25, 0, -7, 7)
    assert [v["result1"], v["result2"]] == ref.tolist() == [0.5, 1.75]


@pytest.mark.parametrize("name, dtype", [("e4m3fn_range", ml_dtypes.float8_e4m3fn),
                                         ("e5m2_range", ml_dtypes.float8_e5m2),
                                         ("e2m1_range", ml_dtypes.float4_e2m1fn),
                                         ("e8m0_range", ml_dtypes.float8_e8m0fnu)])
def test_ranges_against_ml_dtypes(name: str, dtype: type) -> None:
    v = vals(name)
    fi = ml_dtypes.finfo(dtype)
    assert v["max"] == float(fi.max)
    assert v["smallest_normal"] == float(fi.smallest_normal)
    assert v["smallest_subnormal"] == float(fi.smallest_subnormal)
    assert v["eps"] == float(fi.eps)
    n_bits = 4 if dtype is ml_dtypes.float4_e2m1fn else 8
    values = np.arange(2 ** n_bits, dtype=np.uint8).view(dtype).astype(np.float64)
    assert v["n_codes"] == 2 ** n_bits and v["bits"] == n_bits
    assert v["n_finite"] == int(np.count_nonzero(np.isfinite(values)))
    assert v["n_distinct_finite"] == np.unique(values[np.isfinite(values)]).size
    assert v["n_nan"] == int(np.count_nonzero(np.isnan(values)))
    assert v["binades"] == pytest.approx(math.log2(float(fi.max) / float(fi.smallest_subnormal)))


def test_e4m3fn_gaps() -> None:
    v = vals("e4m3fn_gaps")
    grid = np.arange(256, dtype=np.uint8).view(ml_dtypes.float8_e4m3fn).astype(np.float64)
    pos = np.unique(grid[np.isfinite(grid) & (grid > 0)])
    i1 = int(np.searchsorted(pos, 1.0))
    assert v["gap_at_1"] == pos[i1 + 1] - 1 == 0.125
    assert v["gap_below_1"] == 1 - pos[i1 - 1] == 0.0625
    assert v["gap_at_max"] == pos[-1] - pos[-2] == 32.0
    assert v["gap_subnormal"] == pos[0] == 2.0 ** -9


def test_bits_per_element() -> None:
    assert vals("mxfp8_bits_per_element")["bits_per_element"] == float(8 + Fraction(8, 32)) == 8.25
    assert example("mxfp8_bits_per_element").format() == "8.25 bits"
    v = vals("nvfp4_bits_per_element")
    assert v["bits_per_element"] == float(4 + Fraction(8, 16)) == 4.5
    assert v["bits_per_element_with_tensor_scale"] == float(4 + Fraction(8, 16) + Fraction(32, 4096 * 4096))


def test_kv_cache_memory() -> None:
    e = example("kv_cache_memory")
    assert e.values["bytes"] == 890 * 10 ** 6
    assert e.values["megabytes"] == 890.0
    assert e.values["gibibytes"] == 890e6 / 1024 ** 3
    assert e.format("megabytes") == "890 MB"
    assert e.format("gibibytes") == "0.83 GiB"
    assert e.format("summary") == "890 MB ≈ 0.83 GiB"


def test_softmax_saturation() -> None:
    v = vals("softmax_saturation")
    for fmt in ("fp32", "bf16", "fp16"):
        assert v[f"{fmt}_p_target"] == 1.0 and v[f"{fmt}_grad_naive"] == 0.0
        z = v[f"{fmt}_logits"]
        e = [math.exp(t - max(z)) for t in z]
        assert v[f"{fmt}_grad_reference"] == pytest.approx(-math.fsum(e[1:]) / math.fsum(e), rel=1e-15)
        assert v[f"{fmt}_grad_rewritten"] < 0
    logits = torch.tensor(v["fp32_logits"], requires_grad=True)
    torch.nn.functional.cross_entropy(logits[None], torch.tensor([0])).backward()
    assert logits.grad is not None and float(logits.grad[0]) == 0.0  # torch loses it too


def test_e4m3fn_overflow_conventions() -> None:
    v = vals("e4m3fn_overflow_conventions")
    md = float(np.array([465.0], np.float32).astype(ml_dtypes.float8_e4m3fn).astype(np.float32)[0])
    th = float(torch.tensor([465.0]).to(torch.float8_e4m3fn).float()[0])
    assert math.isnan(md) and math.isnan(v["ml_dtypes"])
    assert v["torch"] == th == 448.0
    assert v["threshold"] == (448 + 480) / 2  # 480 would be the next value if E4M3FN had it
    assert example("e4m3fn_overflow_conventions").format() == "465 → nan in ml_dtypes, 448 in torch"


def test_e8m0_ties() -> None:
    v = vals("e8m0_ties")
    md = np.array([3.0, 0.75], np.float32).astype(ml_dtypes.float8_e8m0fnu).astype(np.float32)
    th = torch.tensor([3.0, 0.75]).to(torch.float8_e8m0fnu).float()
    assert [v["x1_ml_dtypes"], v["x2_ml_dtypes"]] == md.tolist() == [4.0, 1.0]
    assert [v["x1_torch"], v["x2_torch"]] == th.tolist() == [4.0, 1.0]


def test_mx_scale_rounding() -> None:
    if "mx_scale_rounding" not in EXAMPLES:
        pytest.skip("lowprec.simulations.blocks not present")
    v = vals("mx_scale_rounding")
    e4 = ml_dtypes.float8_e4m3fn
    x_floor = math.floor(math.log2(957)) - 8  # OCP: floor(log2 amax) − emax(E4M3) = 9 − 8
    x_rceil = math.ceil(math.log2(957 / 448))  # ratio to 448 rounded up to a power of two
    dec_floor = float(np.float32(min(957 / 2 ** x_floor, 448)).astype(e4)) * 2 ** x_floor
    dec_rceil = float(np.float32(957 / 2 ** x_rceil).astype(e4)) * 2 ** x_rceil
    assert (v["floor_exponent"], v["floor_decoded"]) == (x_floor, dec_floor) == (1, 896.0)
    assert (v["rceil_exponent"], v["rceil_decoded"]) == (x_rceil, dec_rceil) == (2, 960.0)


def test_delayed_spike_is_consistent() -> None:
    if "delayed_spike" not in EXAMPLES:
        pytest.skip("lowprec.simulations.scaling.delayed not present")
    v = vals("delayed_spike")
    assert v["clipped_at_spike_delayed_percent"] == pytest.approx(100 * v["clipped_at_spike_delayed"])
    # a ×50 spike against a scale sized for the previous amax: most of the tensor clips
    assert v["clipped_at_spike_delayed"] > 0.5 > v["clipped_at_spike_current"]
    # TE semantics: under `max`, the spike's amax sizes the scale for exactly history_len steps
    assert v["reduced_steps"] == v["history_len"]
    # the quoted number itself, recomputed from the same seeded tensors with the recipe written out:
    # scale at the spike = float32(448 / max(amax of the 16 steps before)); E4M3FN saturates beyond
    # 464 (448 + half its gap of 32; the tie 464 rounds to 448's even code)
    from lowprec.simulations.scaling.streams import TensorStream

    h, t = int(v["history_len"]), int(v["spike_step"])
    stream = TensorStream("spike", 4096, 1.0, t, float(v["spike"]), "tensor", 0.0, 1, 0, 1.0, 0)
    window = max(float(np.abs(stream.tensor(k)).max()) for k in range(t - h, t))
    x = stream.tensor(t)
    scaled = x * np.float32(np.float32(448.0) / np.float32(window))
    assert v["clipped_at_spike_delayed"] == np.count_nonzero(np.abs(scaled) > 464.0) / x.size
    assert v["clipped_at_spike_current"] == 0.0


def test_bf16_update_stall() -> None:
    v = vals("bf16_update_stall")
    assert v["stall_threshold"] == 2.0 ** -9
    w = ml_dtypes.bfloat16(1.0)
    for _ in range(int(v["steps"])):
        w = ml_dtypes.bfloat16(np.float32(w) - np.float32(2.0 ** -10))
    assert float(w) == 1.0 == 1.0 - v["small_change_bf16"]


# ------------------------------------------------------------------------------------------------
# the command
# ------------------------------------------------------------------------------------------------


def test_examples_command(capsys: pytest.CaptureFixture[str]) -> None:
    from lowprec.app.cli import main

    assert main(["examples", "--json"]) == 0
    data = strictjson.loads(capsys.readouterr().out)
    assert {d["name"] for d in data} == set(EXAMPLES)
    assert main(["examples", "kv_cache_memory"]) == 0
    out = capsys.readouterr().out
    assert "890 MB" in out and "0.83 GiB" in out
    assert main(["examples", "no_such_example"]) == 2
    assert "known:" in capsys.readouterr().err


def test_module_main(tmp_path) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "ex.json"
    assert ex.main(["--json", str(out)]) == 0
    assert {d["name"] for d in strictjson.loads(out.read_text())} == set(EXAMPLES)
