"""Knobs that more than one simulation has, declared once (`lowprec.config.knob`).

A config record takes one of these where it has the knob: `history: int = history_knob()`. Each
call makes a fresh dataclass field from the one declaration here (a field cannot be shared between
two dataclasses), so every record that has the knob has the same name, default, bounds or choices
and help; the delayed-scaling bounds are the model's own (`simulations.scaling.delayed`: `HISTORY_BOUNDS`,
`MARGIN_BOUNDS`, `AMAX_ALGOS`, which `DelayedScaler(margin=…)` and the recompute state check too).

- `history_knob()`, `algo_knob()`, `margin_knob()`: the delayed scaler's amax history length, its
  reduction and its margin (the spike and recompute simulations);
- `seed_knob(help)`: a seed, 0 … `SEED_MAX` (numpy's `default_rng` takes any non-negative integer;
  the bound keeps it a 32-bit signed value every face can type), entered as a number;
- `format_knob(choices, help)`: the element format, by name among `choices` (the formats the
  simulation can run; any alias `formats.get_format` knows is accepted on the command line);
- `accumulator_knob(help)`: how a product is accumulated, one of `ACCUMULATOR_CHOICES` — exact, or
  through a tensor core (what each name runs: `simulations.gemm.accumulators.ACCUMULATORS`, keyed by
  these names).
- `overflow_knob()`: what a scaled value beyond the format's range becomes (`OVERFLOW_MODES`: the
  recompute and stateful simulations).
"""

from __future__ import annotations

from typing import Any, Sequence

from lowprec.config import knob

from ..scaling.delayed import AMAX_ALGOS, HISTORY_BOUNDS, MARGIN_BOUNDS

__all__ = ["ACCUMULATOR_CHOICES", "OVERFLOW_MODES", "SEED_BOUNDS", "SEED_MAX", "accumulator_knob", "algo_knob",
           "format_knob", "history_knob", "margin_knob", "overflow_knob", "seed_knob"]

SEED_MAX = 2**31 - 1
#: what a value beyond the format's range becomes: ±max, or Inf/NaN (where the format has them)
OVERFLOW_MODES = ("saturate", "nonfinite")
SEED_BOUNDS = (0, SEED_MAX)
#: the named accumulators (their arithmetic: `simulations.gemm.accumulators.ACCUMULATORS`)
ACCUMULATOR_CHOICES = ("exact", "hopper", "hopper_promote128", "blackwell")


def history_knob() -> Any:
    """The amax history length H of a delayed scaler."""
    return knob(16, "amax history length H (steps)", bounds=HISTORY_BOUNDS)


def algo_knob() -> Any:
    """How a delayed scaler's history becomes the amax its next scale is sized for."""
    return knob("max", "how the history becomes the amax the delayed scale is sized for: its maximum or its "
                       "newest entry", choices=AMAX_ALGOS)


def margin_knob() -> Any:
    """A delayed scaler's margin, in binades of headroom."""
    return knob(0, "margin: the encode scale F / amax divided by 2**margin (binades of headroom)",
                bounds=MARGIN_BOUNDS)


def seed_knob(help: str) -> Any:
    """A seed: `help` says what it seeds."""
    return knob(0, help, bounds=SEED_BOUNDS, widget="input")


def format_knob(choices: Sequence[str], help: str, default: str = "E4M3FN") -> Any:
    """The element format, one of `choices` (format names)."""
    return knob(default, help, choices=tuple(choices))


def accumulator_knob(help: str) -> Any:
    """How a product is accumulated: exact, or through a tensor core (`ACCUMULATOR_CHOICES`)."""
    return knob("exact", help, choices=ACCUMULATOR_CHOICES)


def overflow_knob() -> Any:
    """What a scaled value beyond the format's largest finite value becomes."""
    return knob("saturate", "a value beyond the format's max: saturate to ±max, or nonfinite (Inf or NaN, as "
                            "the format has)", choices=OVERFLOW_MODES)
