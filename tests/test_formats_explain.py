"""`formats.explain`: the explanation of one value, and its two faces (`lowprec cast` and the
BinExplorer widget) showing the same thing.

Oracles: ml_dtypes/torch casts (codes as unsigned integers), Fraction arithmetic for the errors,
the decoding formula evaluated as arithmetic, and the stated rules (relative error at zero, the
policy's name after an override) written out case by case.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
import torch

from lowprec import formats as F
from lowprec import strictjson
from lowprec.app.cli import main as cli_main
from lowprec.formats.explain import explain_cast, relative_error, resolve_policy
from tests.backends import ml_dtypes_encode, torch_encode


def _arith(text: str) -> Fraction:
    """Evaluate a formula / exact text such as '(-1)^1 × 2^(8 - 7) × (1 + 5/8)' or '7/4 × 2^8'
    exactly (Fractions; ^ is a power, × a product)."""
    import ast

    expr = text.split("[")[0].replace("×", "*").replace("^", "**").strip()

    def ev(node: ast.AST) -> Fraction:
        if isinstance(node, ast.Expression):
            return ev(node.body)
        if isinstance(node, ast.Constant):
            return Fraction(node.value)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -ev(node.operand)
        if isinstance(node, ast.BinOp):
            a, b = ev(node.left), ev(node.right)
            ops = {ast.Add: a + b, ast.Sub: a - b, ast.Mult: a * b}
            if isinstance(node.op, ast.Div):
                return a / b
            if isinstance(node.op, ast.Pow):
                return a ** int(b)
            return ops[type(node.op)]
        raise ValueError(f"unexpected {ast.dump(node)}")

    return ev(ast.parse(expr, mode="eval"))


VALUES = ["3.3", "-0.001", "465", "-70000", "0x1.8p3", "1e-9", "0", "-0", "0.0009765625", "57344", "inf", "-inf"]


@pytest.mark.parametrize("name", ["E4M3FN", "E5M2", "E3M2", "E2M3", "BF16", "FP16", "E4M3FNUZ"])
@pytest.mark.parametrize("text", VALUES)
def test_code_matches_ml_dtypes_and_errors_are_exact(name: str, text: str) -> None:
    e = explain_cast(text, name, "ml_dtypes")
    x = F.parse_value(text)
    assert e.code == int(ml_dtypes_encode(np.array([x], np.float32), name)[0])
    assert e.hex == f"0x{e.code:0{(F.get_format(name).bits + 3) // 4}X}" and int(e.bits, 2) == e.code
    assert len(e.fields) == len(e.bits) == F.get_format(name).bits
    if math.isfinite(e.value) and math.isfinite(x):
        assert e.error == float(Fraction(e.value) - Fraction(x))  # one correctly rounded subtraction
        assert _arith(e.formula) == Fraction(e.value) == _arith(e.exact)
        assert e.rounding_bin is not None
        if x != 0:  # a bin is a set of reals: which zero -0 encodes to is a sign rule, not an interval
            assert e.rounding_bin.contains(float(np.float32(x)))
    else:
        assert (e.rounding_bin is None) == (not math.isfinite(e.value))
        if math.isnan(x) or math.isnan(e.value):  # no distance at all
            assert math.isnan(e.error) and math.isnan(e.abs_error) and math.isnan(e.rel_error)
        elif x == e.value:  # ±Inf kept as the same infinity: exact
            assert (e.error, e.abs_error, e.rel_error) == (0.0, 0.0, 0.0)
        else:  # an overflow to ±Inf or a saturated ±Inf: infinitely wrong, signed as value - x
            assert e.error == (math.inf if e.value > x else -math.inf) and e.abs_error == e.rel_error == math.inf


@pytest.mark.parametrize("text", ["465", "-1e6", "3.3", "1e-3", "-0"])
def test_torch_convention_matches_torch(text: str) -> None:
    x = np.array([F.parse_value(text)], np.float32)
    for name in ("E4M3FN", "E5M2", "E8M0", "BF16"):
        if name == "E8M0" and text == "-0":
            continue
        assert explain_cast(text, name, "torch").code == int(torch_encode(x, name)[0]), name


def test_relative_error_at_zero() -> None:
    # a zero answer for zero is exact; torch writes 2^-127 (code 0x00) for 0 in E8M0: infinitely wrong
    assert explain_cast("0", "E4M3FN").rel_error == 0.0
    assert explain_cast("-0", "E5M2", "torch").rel_error == 0.0
    e8 = explain_cast("0", "E8M0", "torch")
    t0 = int(torch.tensor([0.0]).to(torch.float8_e8m0fnu).view(torch.uint8)[0])
    assert e8.code == t0 == 0x00 and e8.value == 2.0**-127
    assert e8.rel_error == math.inf and e8.abs_error == 2.0**-127 == e8.error
    # NaN on either side: no distance; the same infinity: exact; any other infinity: infinitely wrong
    assert all(math.isnan(v) for v in relative_error(1.0, math.nan))
    assert all(math.isnan(v) for v in relative_error(math.nan, math.nan))
    assert relative_error(math.inf, math.inf) == relative_error(-math.inf, -math.inf) == (0.0, 0.0, 0.0)
    assert relative_error(math.inf, 448.0) == (-math.inf, math.inf, math.inf)  # a saturating cast of +Inf
    assert relative_error(-70000.0, -math.inf) == (-math.inf, math.inf, math.inf)  # an overflow
    assert relative_error(-math.inf, math.inf) == (math.inf, math.inf, math.inf)
    assert relative_error(4.0, 3.0) == (-1.0, 1.0, 0.25)


def test_policy_name_rule() -> None:
    assert resolve_policy("E4M3FN", "torch").name == "torch"
    assert resolve_policy("E4M3FN", "torch", rounding="nearest_even").name == "torch"  # its own mode
    assert resolve_policy("E4M3FN", "torch", overflow="saturate").name == "torch"
    p = resolve_policy("E4M3FN", "torch", rounding="up")
    assert p.name == "torch+custom" and p.rounding.value == "up" and p.overflow.value == "saturate"
    assert resolve_policy("E4M3FN", "torch", overflow="nonfinite").name == "torch+custom"
    assert resolve_policy("E4M3FN").name == "default"
    assert resolve_policy("E4M3FN", None, rounding="down").name == "default+custom"
    assert resolve_policy("E4M3FN", "").name == "default"
    with pytest.raises(ValueError, match="unknown convention 'numpy'.*ml_dtypes"):
        resolve_policy("E4M3FN", "numpy")
    with pytest.raises(ValueError, match="unknown rounding 'sideways'"):
        resolve_policy("E4M3FN", "torch", rounding="sideways")


def test_stochastic_rounding_is_per_value_and_seeded() -> None:
    # 3.3 lies between 3.25 and 3.5 in E4M3FN; each value gets its own generator seeded with `seed`
    a = [explain_cast("3.3", "E4M3FN", None, "stochastic", seed=s).value for s in range(40)]
    assert set(a) == {3.25, 3.5}
    assert explain_cast("3.3", "E4M3FN", None, "stochastic", seed=7).rounding_bin is None
    assert [e.code for e in _cast_many(["3.3", "3.3"], seed=7)] == [
        explain_cast("3.3", "E4M3FN", None, "stochastic", seed=7).code] * 2


def _cast_many(texts: list[str], seed: int) -> list[F.CastExplanation]:
    from lowprec.app.commands.cast_cmd import cast_values

    return cast_values("E4M3FN", texts, None, "stochastic", None, seed)


def test_refusals_name_the_value() -> None:
    with pytest.raises(ValueError, match="NaN"):
        explain_cast("nan", "E2M1", "torch")
    with pytest.raises(ValueError, match="cannot read 'x'"):
        explain_cast("x", "E4M3FN")
    with pytest.raises(ValueError, match="decode_scale"):
        explain_cast("1", "E4M3FN", decode_scale=-1.0)


def test_fp32_is_explained_without_a_bin() -> None:
    e = explain_cast("0.1", "FP32")
    assert e.code == int(np.array([0.1], np.float32).view(np.uint32)[0])
    assert e.rounding_bin is None and e.cls == "normal" and e.value == float(np.float32(0.1))


# ------------------------------------------------------------------------------------------------
# the two faces agree
# ------------------------------------------------------------------------------------------------

FACES = [
    ("E4M3FN", "torch", "", "", ["465", "3.3", "-0", "nan", "-inf"]),
    ("E4M3FN", "torch", "up", "", ["3.3", "-3.3"]),
    ("E5M2", "ml_dtypes", "", "", ["-70000", "1e-9", "57344", "61440"]),
    ("E8M0", "torch", "", "", ["0", "3", "-1"]),
    ("E8M0", "ml_dtypes", "nearest_even", "", ["3", "0.75"]),
    ("E2M1", "ocp", "toward_zero", "saturate", ["5.9", "-0.2"]),
    ("BF16", "triton_nvidia", "", "", ["3.3", "1e38"]),
]


@pytest.mark.parametrize("fmt,convention,rounding,overflow,values", FACES,
                         ids=[f"{f}-{c}-{r or 'own'}" for f, c, r, _, _ in FACES])
def test_cast_command_and_bin_explorer_show_the_same(fmt: str, convention: str, rounding: str,
                                                     overflow: str, values: list[str],
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    from lowprec.app.widgets import BinExplorer

    argv = ["cast", fmt, "--convention", convention, "--json"]
    argv += ["--rounding", rounding] if rounding else []
    argv += ["--overflow", overflow] if overflow else []
    assert cli_main([*argv, "--", *values]) == 0
    rows = strictjson.loads(capsys.readouterr().out)
    widget = BinExplorer(format=fmt, convention=convention, rounding=rounding, overflow=overflow,
                         compare_format="", value=values[0])
    for text, row in zip(values, rows):
        widget.value = text
        assert widget.error == "", widget.error
        shown = strictjson.loads(strictjson.dumps(widget.view.main))
        assert shown == row, text
    if rounding:  # an override that changes the convention's own mode is named so on both faces
        assert rows[0]["policy"]["name"] == f"{convention}+custom"
