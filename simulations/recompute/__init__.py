"""Recompute divergence: a stateful delayed-scaling quantizer inside activation-checkpointed layers.

The public face of the simulation: its `SIMULATION` declaration (`simulations.framework.cli.Simulation`, like
every other simulation) and its `python -m lowprec.simulations.recompute` entry point. From
`SIMULATION` come both command lines (`python -m` here, `lowprec simulate recompute` through the
app's registry of simulations), the RecomputeDivergence widget's controls and URL state and the
lesson directive's parameters — all the knobs of `RecomputeConfig`. The work lives in six modules of
this package, re-exported here:

- `state` (torch-free): the delayed-scaling state (the one delayed-scaling model,
  `simulations.scaling.delayed.DelayedScaling`, over entries that name their layer), the separated API
  (begin, quantize with a snapshot, observe, commit once) and one quantizer class per design
  (`QUANTIZERS`, `VARIANTS`: fixed, consume-after-advance, recompute-mutates, shared-state,
  shared-state-snapshot, stale-centre, bf16-control, gate-asymmetry, gate-asymmetry-repaired);
- `config` (torch-free): `RecomputeConfig`, the run's parameters declared once, with
  bounds, help and `cost()`;
- `harness` (torch): the tanh MLP, real `torch.utils.checkpoint`, the training loop
  (`run_recompute`, `run_config`);
- `telemetry` (torch-free): `RecomputeResult`, its verdict, summary, JSON and CSV;
- `concurrency` (torch-free): two workers entering one state (`simulate_concurrent_entry`);
- `cli`: the command line's names under the older module (`recompute_cli` before the
  restructure of issue 27): these same names.

Importing this module does not import torch: the harness's names (`run_recompute`, `run_config`,
`make_problem`, `Problem`, `warm_up`) load it on first use (a missing torch is then a
ModuleNotFoundError naming it), so building a parser or a lesson table stays torch-free.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import TYPE_CHECKING, Any, Callable

from lowprec import strictjson

from ..framework.cli import OptionAlias, ProgressFn, Simulation, run_module
from ..framework.io import ArgumentParser, write_text
from .concurrency import ConcurrencyResult, simulate_concurrent_entry
from .config import OVERFLOW_MODES, RecomputeConfig
from .state import (AMAX_ALGOS, DETERMINISTIC_ROUNDINGS, QUANTIZERS, VARIANTS, ConcurrentStateError,
                    ConsumerScaling, DelayedScaleState, DoubleCommitError, HistoryEntry, PhaseInfo,
                    QuantizedTensor, QuantObservation, QuantSnapshot, SnapshotIdentityError, VariantQuantizer,
                    begin_logical_quantization, commit_quant_observation, dequantize_paired, make_quantizer,
                    observe_for_future_state, quantize_with_snapshot, resolve_format)
from .telemetry import LAYER_ARRAYS, RecomputeResult

if TYPE_CHECKING:
    from .harness import Problem, make_problem, run_config, run_recompute, warm_up

__all__ = [
    "AMAX_ALGOS", "DESCRIPTION", "DETERMINISTIC_ROUNDINGS", "PROG", "LAYER_ARRAYS", "OVERFLOW_MODES", "QUANTIZERS", "VARIANTS",
    "SIMULATION", "ConcurrencyResult", "ConcurrentStateError", "ConsumerScaling", "DelayedScaleState",
    "DoubleCommitError", "HistoryEntry", "PhaseInfo", "Problem", "QuantObservation", "QuantSnapshot",
    "QuantizedTensor", "RecomputeConfig", "RecomputeResult", "SnapshotIdentityError",
    "VariantQuantizer", "add_arguments", "begin_logical_quantization", "build_parser", "commit_quant_observation",
    "config_from_args", "dequantize_paired", "main", "make_problem", "make_quantizer",
    "observe_for_future_state", "quantize_with_snapshot", "resolve_format", "run_config",
    "run_from_args", "run_recompute", "simulate_concurrent_entry", "summary_wanted", "warm_up", "write_outputs",
]

#: the harness's names, loaded (with torch) on first use
_HARNESS = ("Problem", "make_problem", "run_config", "run_recompute", "warm_up")


def __getattr__(name: str) -> Any:
    if name in _HARNESS:
        harness = importlib.import_module(".harness", __name__)
        for attr in _HARNESS:
            globals().setdefault(attr, getattr(harness, attr))
        return globals()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


PROG = "python -m lowprec.simulations.recompute"
DESCRIPTION = ("Recompute divergence: a stateful delayed-scaling quantizer inside activation-"
               "checkpointed layers; forward vs recompute per layer and step.")


def _run(config: RecomputeConfig, progress: ProgressFn | None) -> RecomputeResult:
    # through this module's attribute (loading torch on first use), so a test or a notebook that
    # replaces `recompute.run_recompute` replaces what every face runs
    run: Callable[..., RecomputeResult] = getattr(sys.modules[__name__], "run_recompute")
    return run(config, progress=progress)


def _summary(result: RecomputeResult) -> list[str]:
    return result.summary().splitlines()


def _csv(result: RecomputeResult) -> str:
    return result.csv_text()


SIMULATION: Simulation[RecomputeConfig, RecomputeResult] = Simulation(
    name="recompute",
    help="forward vs recompute of a stateful quantizer under activation checkpointing",
    config=RecomputeConfig,
    run=_run,
    summary=_summary,
    csv=_csv,
    html_help="write an offline HTML page of the run: forward-vs-recompute heatmap, state commits, gradient "
              "norm and scales",
    aliases=(OptionAlias("--no-checkpoint", "checkpointing", False),
             OptionAlias("--history-len", "history"), OptionAlias("--amax-algo", "algo")),
    python_m_html=False,  # this entry point never took --html
    description=DESCRIPTION,
)

main = SIMULATION.main


# ------------------------------------------------------------------------------------------------
# the older command-line interface (formerly recompute_cli's, now also `recompute.cli`'s), generated from SIMULATION
# ------------------------------------------------------------------------------------------------


def add_arguments(parser: argparse.ArgumentParser, html: bool = False) -> None:
    """The run's options (`SIMULATION.add_arguments`); `html` adds `--html OUT`."""
    SIMULATION.add_arguments(parser, html=html)


def build_parser() -> ArgumentParser:
    """The parser of `python -m lowprec.simulations.recompute`."""
    return SIMULATION.parser()


def config_from_args(args: argparse.Namespace) -> RecomputeConfig:
    """The run's record, checked before any work (`SIMULATION.config_from` and `preflight`): a bad
    value raises `ConfigError` naming the option, an output path that cannot be written a ValueError
    naming its option, a run over the budget (without `--force`) a `BudgetError`."""
    config = SIMULATION.config_from(args)
    SIMULATION.preflight(config, args)
    return config


def run_from_args(args: argparse.Namespace, progress: ProgressFn | None = None) -> RecomputeResult:
    """Validate the options and run the simulation (this is where torch is imported)."""
    return SIMULATION.run(config_from_args(args), progress)


def write_outputs(result: RecomputeResult, json_path: str | None, csv_path: str | None) -> None:
    """The result as compact strict JSON to `json_path` and its per-cell CSV to `csv_path`, each
    only when given ("-" = stdout). A file that cannot be written is a ValueError naming it."""
    for option, path, write in (
            ("--json", json_path, lambda p: strictjson.write(result.to_dict(), p, indent=None)),
            ("--csv", csv_path, lambda p: write_text(result.csv_text(), p))):
        if not path:
            continue
        try:
            write(path)
        except OSError as exc:
            raise ValueError(f"{option}: cannot write {path!r}: {exc.strerror or exc}") from None


def summary_wanted(args: argparse.Namespace) -> bool:
    """Print the human summary: not with --quiet, not when JSON or CSV went to standard output."""
    return not args.quiet and strictjson.STDOUT not in (args.json, args.csv)

if __name__ == "__main__":
    run_module(SIMULATION)
