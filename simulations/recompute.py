"""Recompute divergence: a stateful delayed-scaling quantizer inside activation-checkpointed layers.

The public face of the simulation and its `python -m lowprec.simulations.recompute` entry point.
The work lives in six modules, re-exported here:

- `recompute_state` (torch-free): the delayed-scaling state, the separated API (begin, quantize
  with a snapshot, observe, commit once) and one quantizer class per design (`QUANTIZERS`,
  `VARIANTS`: fixed, consume-after-advance, recompute-mutates, shared-state,
  shared-state-snapshot, stale-centre, bf16-control, gate-asymmetry, gate-asymmetry-repaired);
- `recompute_config` (torch-free): `RecomputeConfig`, the run's parameters declared once, with
  bounds, help and `cost()`;
- `recompute_harness` (torch): the tanh MLP, real `torch.utils.checkpoint`, the training loop
  (`run_recompute`, `run_config`);
- `recompute_telemetry` (torch-free): `RecomputeResult`, its verdict, summary, JSON and CSV;
- `recompute_concurrency` (torch-free): two workers entering one state (`simulate_concurrent_entry`);
- `recompute_cli` (torch-free until a run): the options generated from the config, and `main`.
"""

from __future__ import annotations

import sys

from .recompute_cli import add_arguments, config_from_args, main, run_from_args, write_outputs
from .recompute_concurrency import ConcurrencyResult, simulate_concurrent_entry
from .recompute_config import OVERFLOW_MODES, RecomputeConfig
from .recompute_harness import Problem, make_problem, run_config, run_recompute, warm_up
from .recompute_state import (
    AMAX_ALGOS,
    DETERMINISTIC_ROUNDINGS,
    QUANTIZERS,
    VARIANTS,
    ConcurrentStateError,
    ConsumerScaling,
    DelayedScaleState,
    DoubleCommitError,
    HistoryEntry,
    PhaseInfo,
    QuantizedTensor,
    QuantObservation,
    QuantSnapshot,
    SnapshotIdentityError,
    VariantQuantizer,
    begin_logical_quantization,
    commit_quant_observation,
    dequantize_paired,
    make_quantizer,
    observe_for_future_state,
    quantize_with_snapshot,
    resolve_format,
)
from .recompute_telemetry import LAYER_ARRAYS, RecomputeResult

__all__ = [
    "AMAX_ALGOS", "DETERMINISTIC_ROUNDINGS", "LAYER_ARRAYS", "OVERFLOW_MODES", "QUANTIZERS", "VARIANTS",
    "ConcurrencyResult", "ConcurrentStateError", "ConsumerScaling", "DelayedScaleState",
    "DoubleCommitError", "HistoryEntry", "PhaseInfo", "Problem", "QuantObservation", "QuantSnapshot",
    "QuantizedTensor", "RecomputeConfig", "RecomputeResult", "SnapshotIdentityError",
    "VariantQuantizer", "add_arguments", "begin_logical_quantization", "commit_quant_observation",
    "config_from_args", "dequantize_paired", "main", "make_problem", "make_quantizer",
    "observe_for_future_state", "quantize_with_snapshot", "resolve_format", "run_config",
    "run_from_args", "run_recompute", "simulate_concurrent_entry", "warm_up", "write_outputs",
]

if __name__ == "__main__":
    sys.exit(main())
