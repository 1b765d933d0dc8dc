"""The bin challenge (lowprec.course.challenge and the BinChallenge widget) against oracles:

- the answer is the code torch or ml_dtypes writes for the value (an independent cast), and it is
  the only code the challenge accepts;
- every wrong finite code is "too low" exactly when its value (decoded by ml_dtypes) is below the
  answer's, "too high" when above, a lost "tie" exactly when the value sits midway between the code
  and the answer (Fraction arithmetic), "same_value" for the other zero;
- the explanation names the rounding bin whose edges are the midpoints to the answer's neighbours;
- the widget: the page data lists every verdict, a check from the page (served: `checked_code`)
  sets `result` and `feedback`, bad parameters give a clear error and keep the last challenge, and a
  lesson directive places it.
"""

from __future__ import annotations

import re

import math
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest
import torch

from lowprec.app import pages
from lowprec.course.lessons import parse_directive
from lowprec.app.widgets import WIDGETS, BinChallenge
from lowprec.config import ConfigError
from lowprec.course.challenge import ChallengeConfig, bin_challenge

ML_DTYPES = {"E4M3FN": ml_dtypes.float8_e4m3fn, "E5M2": ml_dtypes.float8_e5m2, "E2M1": ml_dtypes.float4_e2m1fn,
             "E8M0": ml_dtypes.float8_e8m0fnu}
TORCH = {"E4M3FN": torch.float8_e4m3fn, "E5M2": torch.float8_e5m2, "E8M0": torch.float8_e8m0fnu}


def decode(fmt: str, code: int) -> float:
    """Oracle decode of one code by ml_dtypes."""
    return float(np.array([code], np.uint8).view(ML_DTYPES[fmt]).astype(np.float64)[0])


def oracle_code(fmt: str, convention: str, x: float) -> int:
    """The code the backend itself writes for the float64 x."""
    if convention == "torch":
        return int(torch.tensor([x], dtype=torch.float64).to(TORCH[fmt]).view(torch.uint8)[0])
    codes = np.array([x], np.float64).astype(ML_DTYPES[fmt]).view(np.uint8)
    return int(codes[0]) & (0xF if fmt == "E2M1" else 0xFF)


CASES = [  # (format, convention, value)
    ("E4M3FN", "torch", "0.1"), ("E4M3FN", "ml_dtypes", "0.1"), ("E4M3FN", "torch", "3.3"),
    ("E4M3FN", "torch", "-3.3"), ("E4M3FN", "torch", "465"), ("E4M3FN", "ml_dtypes", "465"),
    ("E4M3FN", "torch", "0.09765625"), ("E4M3FN", "torch", "0.0009765625"), ("E4M3FN", "torch", "-0"),
    ("E4M3FN", "ml_dtypes", "1e-3"), ("E5M2", "torch", "0.1"), ("E5M2", "ml_dtypes", "70000"),
    ("E5M2", "torch", "-57344"), ("E2M1", "ml_dtypes", "2.5"), ("E2M1", "ml_dtypes", "5"),
    ("E2M1", "ml_dtypes", "-0.3"), ("E8M0", "torch", "3"), ("E8M0", "ml_dtypes", "0.75"),
    ("E8M0", "torch", "100"),
]


@pytest.mark.parametrize("fmt, convention, text", CASES, ids=["-".join(c) for c in CASES])
def test_the_answer_is_the_backends_code_and_the_only_right_one(fmt: str, convention: str, text: str) -> None:
    challenge = bin_challenge(ChallengeConfig(value=text, format=fmt, convention=convention))
    x = float(text)
    assert challenge.x == x
    code = oracle_code(fmt, convention, x)
    assert challenge.answer.code == code
    assert [v.code for v in challenge.verdicts if v.verdict == "correct"] == [code]
    assert challenge.check(code).text == f"Right: {challenge.explanation}"


@pytest.mark.parametrize("fmt, convention, text", CASES, ids=["-".join(c) for c in CASES])
def test_every_wrong_code_is_placed_against_the_answer(fmt: str, convention: str, text: str) -> None:
    challenge = bin_challenge(ChallengeConfig(value=text, format=fmt, convention=convention))
    x = challenge.x
    answer = decode(fmt, challenge.answer.code)
    for v in challenge.verdicts:
        value = decode(fmt, v.code)
        assert v.value == value or (math.isnan(v.value) and math.isnan(value)), v.hex
        assert v.text.startswith(v.hex) or v.verdict == "correct"
        if v.verdict == "correct":
            continue
        if not math.isfinite(value):
            assert v.verdict == "special", v.hex
        elif value == answer:
            assert v.verdict == "same_value", v.hex  # the other zero
        elif math.isfinite(answer) and Fraction(x) == (Fraction(value) + Fraction(answer)) / 2:
            assert v.verdict == "tie", v.hex  # x is the midpoint of this code's value and the answer's
        elif value < answer or (not math.isfinite(answer) and x > 0):
            assert v.verdict == "too_low", v.hex
        else:
            assert v.verdict == "too_high", v.hex


def test_the_explanation_names_the_rounding_bin() -> None:
    challenge = bin_challenge(ChallengeConfig(value="0.1", format="E4M3FN", convention="torch"))
    # torch writes 0x1D = 0 0011 101 = 13/8 × 2^-4; its neighbours decode to 3/2 and 7/4 × 2^-4;
    # the bin's edges are the midpoints, both ties go to the even neighbours, so both are open
    assert oracle_code("E4M3FN", "torch", 0.1) == 0x1D
    lo = (Fraction(decode("E4M3FN", 0x1C)) + Fraction(decode("E4M3FN", 0x1D))) / 2
    hi = (Fraction(decode("E4M3FN", 0x1D)) + Fraction(decode("E4M3FN", 0x1E))) / 2
    assert (lo, hi) == (Fraction(25, 256), Fraction(27, 256))
    assert challenge.explanation == (f"0.1 lies in the rounding bin ({float(lo)!r}, {float(hi)!r}) of "
                                     "0.1015625 = 13/8 × 2^-4: code 0x1D (0 0011 101).")
    assert challenge.task == "Make the code for 0.1 in E4M3FN under torch's convention."
    tie = bin_challenge(ChallengeConfig(value="0.09765625", format="E4M3FN", convention="torch"))
    assert "round-to-nearest-even gives a tie to the code whose last bit is 0" in tie.check(0x1D).text
    over = bin_challenge(ChallengeConfig(value="465", format="E4M3FN", convention="ml_dtypes"))
    # 464 = 448 + half the top gap of 32: beyond it ml_dtypes writes NaN (0x7F)
    assert over.explanation.startswith("465 is beyond the overflow threshold 464,")
    assert "the right kind of code" in over.check(0xFF).text


def test_config_refuses_what_it_cannot_show() -> None:
    with pytest.raises(ConfigError, match="^value: cannot read 'zero point one'"):
        ChallengeConfig(value="zero point one")
    with pytest.raises(ConfigError, match="^format: "):
        ChallengeConfig(format="BF16")  # 65536 codes: the challenge lists formats up to 8 bits
    challenge = bin_challenge(ChallengeConfig())
    with pytest.raises(ValueError, match=r"code 256 is not a code of E4M3FN \(0\.\.255\)"):
        challenge.check(256)


def test_widget_page_data_checks_and_errors() -> None:
    w = BinChallenge(value="0.1", format="E4M3FN", convention="torch")
    data = w._view.data
    assert data["role"] == "challenge" and data["key"] == "E4M3FN:0.1:torch"
    assert data["fields"] == ["sign"] + ["exponent"] * 4 + ["mantissa"] * 3
    assert [(r["hex"], r["verdict"], r["text"]) for r in data["verdicts"]] == [
        (v.hex, v.verdict, v.text) for v in w.challenge.verdicts]
    assert data["verdicts"][0x1D]["grouped"] == "0 0011 101"
    assert data["verdicts"][0x1D]["shown"] == "0.1015625 = 13/8 × 2^-4"
    w._view.checked_code = 0x1C  # what the page sends when the learner checks 0x1C
    assert w.result == "incorrect" and w.feedback.startswith("0x1C (0 0011 100) is 0.09375")
    w._view.checked_code = 0x1D
    assert w.result == "correct"
    w.format = "E2M1"
    w.value = "nan"  # E2M1 has no NaN and torch's policy refuses it: message, last challenge kept
    assert w.error.startswith("Invalid challenge: NaN cannot be encoded in E2M1")
    assert w.challenge.config == ChallengeConfig(value="0.1", format="E2M1", convention="torch")
    assert w._alert.visible
    w.value = "2.5"
    # 2.5 is the midpoint of 2 (0 10 0) and 3 (0 10 1): nearest-even gives 2
    assert w.error == "" and decode("E2M1", w.challenge.answer.code) == 2.0 and w.challenge.answer.code == 0b0100
    assert w._view.data["key"] == "E2M1:2.5:torch" and w.result == ""
    with pytest.raises(ValueError, match="value: cannot read"):
        BinChallenge(value="abc")


def test_a_lesson_places_it() -> None:
    assert WIDGETS["BinChallenge"].config_class() is ChallengeConfig
    d = parse_directive("::: widget BinChallenge value=0.1 format=E4M3FN convention=torch")
    assert d.params == {"value": "0.1", "format": "E4M3FN", "convention": "torch"}
    widget, view = pages.build_widget(d.name, dict(d.params))
    assert isinstance(widget, BinChallenge) and widget.challenge.answer.hex == "0x1D"
    _, alert = pages.build_widget("BinChallenge", {"format": "E4M3FN", "value": "??"})
    shown = re.sub(r"\\(.)", r"\1", alert.object)  # the alert's Markdown escapes every punctuation mark
    assert "Invalid parameters for widget BinChallenge: value: cannot read '??' as a number" in shown
