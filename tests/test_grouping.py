"""The grouping studies' API hardening and their summary (issue 33): every argument checked before
any work, each refusal naming its parameter (`scale_choice_study(n="E4M3FN")` raised an internal
TypeError), the scale-choice work bounded, and a summary whose numbers say what they are — checked
against a per-tensor E4M3FN cast re-done here with ml_dtypes (encode scale float32(448 / amax),
product in float64, saturating cast, decoded and divided by the scale)."""

from __future__ import annotations

import time
from typing import Any, Callable

import ml_dtypes
import numpy as np
import pytest

from lowprec.simulations.studies import grouping as G


def _rms_rel(x: np.ndarray, x_hat: np.ndarray) -> float:
    return float(np.linalg.norm(x_hat - x) / np.linalg.norm(x))


def _per_tensor_e4m3(x: np.ndarray) -> np.ndarray:
    enc = float(np.float32(448.0 / np.abs(x).max()))
    q = np.clip(x.astype(np.float64) * enc, -448, 448).astype(ml_dtypes.float8_e4m3fn).astype(np.float64)
    return q / enc


BAD: list[tuple[Callable[..., Any], dict[str, Any], type, str]] = [
    (G.scale_choice_study, {"n": "E4M3FN"}, TypeError, "^n must be an integer, got 'E4M3FN'$"),
    (G.scale_choice_study, {"n": 0}, ValueError, r"^n=0 is out of range; allowed: 1 … "),
    (G.scale_choice_study, {"n": 2**62}, ValueError, "^n=4611686018427387904 is out of range"),
    (G.scale_choice_study, {"n": 4.0}, TypeError, "^n must be an integer"),
    (G.scale_choice_study, {"fmts": "E4M3FN"}, TypeError, "^fmts must be a sequence of format names"),
    (G.scale_choice_study, {"fmts": []}, TypeError, "^fmts must be a non-empty sequence"),
    (G.scale_choice_study, {"fmts": ["FP32"]}, ValueError, "^fmts=FP32 cannot hold a scaled cast"),
    (G.scale_choice_study, {"magnitudes": np.array([1.0, 2.0], dtype=object)}, TypeError, "^magnitudes must be"),
    (G.scale_choice_study, {"magnitudes": ["1", "2"]}, TypeError, "^magnitudes must be"),
    (G.scale_choice_study, {"magnitudes": [1.0, -2.0]}, ValueError, "^magnitudes must be"),
    (G.scale_choice_study, {"fixed_encode_scale": "1"}, TypeError, "^fixed_encode_scale must be a real number"),
    (G.scale_choice_study, {"fixed_encode_scale": 10**400}, ValueError, "^fixed_encode_scale must be a finite"),
    (G.scale_choice_study, {"seed": -1}, ValueError, "^seed=-1 is out of range"),
    (G.scale_choice_study, {"seed": "0"}, TypeError, "^seed must be an integer"),
    (G.outlier_study, {"fmt": "FP32"}, ValueError, "^fmt=FP32 cannot hold a scaled cast"),
    (G.outlier_study, {"seed": 1.5}, TypeError, "^seed must be an integer"),
    (G.transpose_study, {"seed": None}, TypeError, "^seed must be an integer"),
    (G.transpose_study, {"fmt": "E8M0"}, ValueError, "^fmt=E8M0 cannot hold a scaled cast"),
]


@pytest.mark.parametrize("fn, kwargs, exc, match", BAD, ids=[f"{f.__name__}-{next(iter(k))}-{i}"
                                                            for i, (f, k, _, _) in enumerate(BAD)])
def test_bad_arguments_name_the_parameter(fn: Callable[..., Any], kwargs: dict[str, Any], exc: type,
                                          match: str) -> None:
    with pytest.raises(exc, match=match):
        fn(**kwargs)


def test_scale_choice_work_is_bounded_before_it_starts() -> None:
    start = time.perf_counter()
    with pytest.raises(ValueError, match=r"^2 formats × 3 magnitudes × n=8388608 is 50331648 elements, over the "
                                         rf"{G.MAX_SCALE_CHOICE_ELEMENTS} one study casts"):
        G.scale_choice_study(("E4M3FN", "E5M2"), [1.0, 2.0, 3.0], n=2**23)
    assert time.perf_counter() - start < 5  # refused before drawing the tensor
    s = G.scale_choice_study(["e4m3fn"], [1.0], n=16)  # an alias is its canonical name
    assert s.formats == ["E4M3FN"] and s.n == 16


def test_outlier_summary_says_what_each_number_is() -> None:
    result = G.simulate_grouping(study="outlier", format="E4M3FN", rows=32, cols=64, outlier=100.0,
                                 outlier_row=3, outlier_col=5, seed=0)
    lines = G.summary_lines(result)
    x = np.random.default_rng(0).standard_normal((32, 64)).astype(np.float32)
    baseline = _rms_rel(x.astype(np.float64), _per_tensor_e4m3(x))
    x[3, 5] = 100.0
    x_hat = _per_tensor_e4m3(x)
    whole = _rms_rel(x.astype(np.float64), x_hat)
    others = np.ones(x.shape, bool)
    others[3, 5] = False
    ordinary = _rms_rel(x[others].astype(np.float64), x_hat[others])
    assert "rms rel error = ‖x̂ − x‖ / ‖x‖" in lines[0] and "outlier 100 at (3, 5)" in lines[0]
    assert lines[1] == f"  one scale per tensor, without the outlier: {baseline:.4g} (the baseline)"
    assert lines[2] == (f"  one scale per tensor, with it: {whole:.4g} over the whole tensor (the outlier is "
                        f"most of ‖x‖); its other elements {ordinary:.4g}")
    # the reading the old line invited ("lower with the outlier") is explained by the norm
    assert whole < baseline and ordinary > whole
    tensor_line = next(line for line in lines if line.strip().startswith("tensor:"))
    assert "no other group" in tensor_line and "none" not in tensor_line
