"""The course's new models and answer kinds (issue 31):

- `simulations.studies.te_placement`: every finding of the seed-001 pull request about Transformer Engine's
  placements, asserted as stated there (the oracle), per arrangement; bad input is refused;
- `simulations.studies.defect_hunt`: every hidden case is diagnosed by the write-up's ladder read
  independently from the controls' data, and the data is strict JSON;
- the `order` and `classify` answer kinds: parsing, checking, and the refusals that keep a question
  honest (an order shown in the right order, a category that does not exist).
"""

from __future__ import annotations

import json

import pytest

from lowprec import strictjson
from lowprec.app.lesson_blocks import BlockError, read_block, resolve_answer
from lowprec.simulations.studies.te_placement import (OUTSIDE, PlacementCase, placement_lab, run_placement,
                                                      with_placement)
from tests.transfer_oracles import diagnose

# ------------------------------------------------------------------------------------------------
# the placement model against the pull request's statements
# ------------------------------------------------------------------------------------------------

FINDINGS = [
    # (placement, changes, outcome, updates per step) — as the pull request states them
    ("outer", {"use_reentrant": True, "gate": "entry"}, "runs, forward scale updates", None),  # "always worked"
    ("outer", {"use_reentrant": False, "gate": "live"}, "runs, forward scale updates", None),
    ("inner", {"use_reentrant": True, "gate": "entry"}, "KeyError in the first backward", None),  # both values
    ("inner", {"use_reentrant": False, "gate": "entry"}, "KeyError in the first backward", None),
    ("mixed", {"use_reentrant": True, "gate": "entry"}, "KeyError in the first backward", None),
    ("inner", {"use_reentrant": True, "gate": "live"}, "runs, forward scale frozen at 1.0", 0),  # the gap
    ("inner", {"use_reentrant": False, "gate": "live"}, "runs, forward scale updates", 1),  # updates normally
    ("inner", {"use_reentrant": True, "gate": "live", "outside": OUTSIDE[1]}, "runs, forward scale frozen at 1.0", 0),
    ("inner", {"use_reentrant": False, "gate": "live", "outside": OUTSIDE[1]}, "runs, forward scale frozen at 1.0", 0),
    ("inner", {"use_reentrant": True, "gate": "live", "module_outside": True}, "runs, forward scale updates", None),
    ("inner", {"use_reentrant": False, "gate": "live", "a_in_eval": True}, "KeyError in the first backward", None),
]


@pytest.mark.parametrize("placement, changes, outcome, per_step", FINDINGS,
                         ids=[f"{p}-{'-'.join(f'{k}={v}' for k, v in c.items())}" for p, c, _, _ in FINDINGS])
def test_placements_do_what_the_pull_request_states(placement: str, changes: dict, outcome: str,  # type: ignore[type-arg]
                                                     per_step: int | None) -> None:
    run = run_placement(with_placement(placement, **changes))
    assert run.outcome() == outcome
    if per_step is not None:
        assert set(run.updates_per_step) == {per_step}
    if outcome.startswith("KeyError"):
        assert run.error == "KeyError: 'global_fp8_buffer_pos_fwd_recompute'" and run.error_step == 0
    else:
        assert run.recompute_matches  # a correct restore: the recompute casts with the forward's scale


def test_the_fix_makes_the_inner_first_forward_ask_for_a_columnwise_copy() -> None:
    # the pull request's flagged behaviour change: the predicate now feeds columnwise_usage in phase 1
    assert run_placement(with_placement("inner", use_reentrant=True, gate="live")).columnwise_phase1
    assert not run_placement(with_placement("inner", use_reentrant=True, gate="entry")).columnwise_phase1
    assert not run_placement(with_placement("inner", use_reentrant=False, gate="live")).columnwise_phase1


def test_a_stash_is_restored_exactly_once_per_step() -> None:
    run = run_placement(with_placement("inner", use_reentrant=False, gate="live", steps=4))
    assert run.stashes == run.restores == 4
    frozen = run_placement(with_placement("inner", use_reentrant=True, gate="live", steps=4))
    assert frozen.a_scale_forward == [1.0] * 4


def test_the_lab_data_covers_every_arrangement_as_strict_json() -> None:
    data = placement_lab(steps=2)
    assert len(data["cases"]) == 3 * 3 * 2 * 2 * 2 * 2
    text = strictjson.dumps(data, indent=None)
    assert json.loads(text)["cases"] and len(text) < 400_000
    for entry in data["cases"].values():
        assert all(0 <= row[3] < len(data["texts"]) for row in entry["events"])


def test_bad_arrangements_are_refused() -> None:
    with pytest.raises(ValueError, match="outside"):
        PlacementCase(outside="around")
    with pytest.raises(ValueError, match="steps"):
        PlacementCase(steps=0)
    with pytest.raises(ValueError, match="placement"):
        with_placement("sideways")
    with pytest.raises(ValueError, match="start"):
        placement_lab(steps=1, start="sideways")
    with pytest.raises(TypeError, match="PlacementCase"):
        run_placement("outer")  # type: ignore[arg-type]


# ------------------------------------------------------------------------------------------------
# find the defect
# ------------------------------------------------------------------------------------------------


def test_every_hidden_case_is_diagnosed_by_the_ladder() -> None:
    from lowprec.simulations.studies.defect_hunt import CASES, hunt_lab

    data = hunt_lab()
    names = {"fixed": "the corrected design"}
    got = {k: diagnose(c) for k, c in data["cases"].items()}
    assert got == {k: names.get(v, v) for k, v in CASES.items()}
    assert len(set(got.values())) == 6
    strictjson.loads(strictjson.dumps(data, indent=None))
    for c in data["cases"].values():
        t = c["telemetry"]
        assert t["attempted"] == 20 and t["applied"] + t["skipped"] == 20
    assert "fixed" not in json.dumps(data)  # the designs are hidden from the page


def test_the_hunts_telemetry_is_the_non_saturating_run() -> None:
    """Case C's telemetry recounted from an independent run with NaN beyond E4M3's range: a step is
    applied exactly when its loss and gradient norm are finite."""
    import numpy as np

    from lowprec.simulations.studies.defect_hunt import CASES, hunt_lab
    from lowprec.simulations.recompute import run_recompute

    letter = next(k for k, v in CASES.items() if v == "consume-after-advance")
    r = run_recompute("consume-after-advance", overflow="nonfinite")
    applied = int((np.isfinite(r.loss) & np.isfinite(r.grad_norm)).sum())
    assert hunt_lab()["cases"][letter]["telemetry"]["applied"] == applied < 10


# ------------------------------------------------------------------------------------------------
# the order and classify answer kinds
# ------------------------------------------------------------------------------------------------


def _answer(kind: str, lines: list[str], value: object) -> object:
    raw = read_block("exercise", "q", [f"kind: {kind}", *lines, "answer: example:x.y", "hint: h", "solution: s"], 1)
    return resolve_answer(raw, lambda name, field: (value, str(value)))


def test_order_answers_check_arrangements() -> None:
    a = _answer("order", ["prompt: p", "items: b | c | a"], ["a", "b", "c"])
    assert a.value == "a | b | c" and a.options == 6  # type: ignore[attr-defined]
    assert a.check(" a|b |c ") and not a.check("b | c | a") and not a.check("a | b")  # type: ignore[attr-defined]
    with pytest.raises(BlockError, match="right order already"):
        _answer("order", ["prompt: p", "items: a | b | c"], ["a", "b", "c"])
    with pytest.raises(BlockError, match="not an order"):
        _answer("order", ["prompt: p", "items: b | c | a"], ["a", "b", "d"])
    with pytest.raises(BlockError, match="at least 3"):
        read_block("exercise", "q", ["kind: order", "prompt: p", "items: a | b", "answer: example:x.y", "hint: h",
                                     "solution: s"], 1)


def test_classify_answers_check_every_item() -> None:
    a = _answer("classify", ["prompt: p", "items: x | y | z", "categories: A | B"], ["A", "B", "A"])
    assert a.options == 8 and a.check("A|B|A") and not a.check("A | A | A")  # type: ignore[attr-defined]
    from lowprec.app.lesson_blocks import parse_response

    assert parse_response(a, "A | C | A") is None  # type: ignore[arg-type]
    assert parse_response(a, "A | B") is None  # type: ignore[arg-type]
    with pytest.raises(BlockError, match="categories"):
        _answer("classify", ["prompt: p", "items: x | y", "categories: A | B"], ["A", "C"])
    with pytest.raises(BlockError, match="'categories' goes with kind classify"):
        read_block("exercise", "q", ["kind: order", "prompt: p", "items: a | b | c", "categories: A | B",
                                     "answer: example:x.y", "hint: h", "solution: s"], 1)


def test_torch_saturates_a_bf16_softmax_where_the_rounded_once_model_says() -> None:
    """Lesson 3's prose: torch 2.13's CPU softmax of a BF16 tensor saturates [d, 0, 0] from the d at
    which the exact softmax rounded once to BF16 reaches 1 (measured here on torch)."""
    import torch

    from lowprec.simulations.examples import example

    d_torch = next(d for d in range(1, 40)
                   if float(torch.softmax(torch.tensor([float(d), 0.0, 0.0], dtype=torch.bfloat16), 0)[0]) == 1.0)
    assert example("softmax_more").values["bf16_once_d"] == d_torch
    assert example("softmax_threshold").values["bf16_d"] != d_torch  # the op-by-op model differs
