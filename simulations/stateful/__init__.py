"""Stateful scaling beyond recompute: who owns a delayed-scaling state, when it may advance and
what each consumer reads, under gradient accumulation, a module that did not run, ranks sharing one
tensor, cached FP8 weights and a recompute under another autocast state.

The public face of the simulation: its `SIMULATION` declaration (`simulations.framework.cli.Simulation`) and
the `python -m lowprec.simulations.stateful` entry point; `lowprec simulate stateful` and the
WhoseAmax widget are generated from the same config record. The work lives in four modules:

- `designs`: the designs as data (`DESIGNS`: one class per defect or corrected form, its rules,
  source and signature; `SCENARIOS`, the families);
- `config`: `StatefulConfig`, the run's parameters declared once, with bounds, help and `cost()`;
- `engine`: the machine every design runs (`run_stateful`), over the one delayed-scaling model
  (`simulations.scaling.delayed.DelayedScaling`, Transformer Engine's rule) — no second scaler;
- `result`: `StatefulResult`, its verdict, summary, JSON and CSV;
- `closed_forms`: what the run must equal where a closed form exists (the clipped share of a spike
  one microbatch or one rank sees, the scale a correct reduction gives).

numpy only (no torch).
"""

from __future__ import annotations

from typing import Any

from ..framework.cli import ProgressFn, Simulation, config_or_knobs, run_module
from .closed_forms import reduced_encode_scale, spike_clip_threshold, spike_clipped_share
from .config import StatefulConfig
from .designs import (ACCUMULATE, DESIGNS, IDLE, RECOMPUTES, REDUCE, SCENARIOS, WEIGHT_READS, Design, contract,
                      designs_of, get_design)
from .engine import initial_weights, layer_input, run_stateful
from .result import ROLE_NAMES, ROLES, STEP_COLUMNS, StatefulResult

__all__ = ["ACCUMULATE", "DESIGNS", "IDLE", "RECOMPUTES", "REDUCE", "ROLES", "ROLE_NAMES", "SCENARIOS", "SIMULATION",
           "STEP_COLUMNS", "WEIGHT_READS", "Design", "StatefulConfig", "StatefulResult", "contract", "designs_of",
           "get_design", "initial_weights", "layer_input", "main", "reduced_encode_scale", "run_stateful", "simulate_stateful", "spike_clip_threshold",
           "spike_clipped_share"]


def simulate_stateful(config: StatefulConfig | None = None, *, progress: ProgressFn | None = None,
                      **knobs: Any) -> StatefulResult:
    """`run_stateful` for a StatefulConfig, or for one made of keyword parameters named as its fields
    (`simulate_stateful(variant="dist-local-amax", steps=8)`)."""
    return run_stateful(config_or_knobs(StatefulConfig, config, knobs), progress)


SIMULATION: Simulation[StatefulConfig, StatefulResult] = Simulation(
    name="stateful",
    help="whose amax? delayed-scaling state under accumulation, idle modules, ranks, cached weights, recompute",
    config=StatefulConfig,
    run=lambda cfg, progress: run_stateful(cfg, progress),
    summary=lambda result: result.summary_lines(),
    csv=lambda result: result.csv_text(),
    html_help="write an offline HTML page of the run: amax observed vs the scale's amax, state transitions per "
              "step, clipped share and reads, the ranks' scales",
)

main = SIMULATION.main

if __name__ == "__main__":
    run_module(SIMULATION)
