"""The budgets benchmark finds the edge of each budget: the request it picks is allowed, one step
further is not (checked with the budget's own rule on the record's own estimate), and the command
line it builds is the record's options."""

from __future__ import annotations

import pytest

from benchmarks import budgets
from lowprec.config import APP_BUDGET, CLI_BUDGET, fields_of


@pytest.mark.parametrize("name", budgets.SIMULATIONS)
@pytest.mark.parametrize("budget", [APP_BUDGET, CLI_BUDGET], ids=["page", "cli"])
def test_largest_request_sits_at_the_budget_edge(name: str, budget: object) -> None:
    face = budgets.simulation(name)
    default = face.config()
    found = budgets.candidates(face, budget)  # type: ignore[arg-type]
    assert found, f"{name}: no knob can grow within {budget}"
    for knob, config in found:
        assert budget.allows(config.cost())  # type: ignore[attr-defined]
        if "+" in knob:
            continue
        upper = next(k.bounds[1] for k in fields_of(face.config) if k.name == knob)
        value = getattr(config, knob)
        assert value != getattr(default, knob)
        if value < upper:  # one more is over the budget (or breaks a rule of the record)
            try:
                bigger = config.replace(**{knob: value + 1})
            except (ValueError, TypeError):
                continue
            assert not budget.allows(bigger.cost()), (name, knob, value)  # type: ignore[attr-defined]


def test_argv_names_only_the_changed_knobs() -> None:
    face = budgets.simulation("attention")
    config = face.config().replace(seq=1000)
    argv = budgets._argv(face, config)
    # the documented entry point (Simulation.module), an alias module of studies.attention
    assert argv[1:] == ["-m", "lowprec.simulations.attention", "--quiet", "--force", "--seq", "1000"]  # restructure: keep
