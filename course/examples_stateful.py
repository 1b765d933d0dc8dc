"""Worked examples of lesson 26 ("Whose amax?"): every number the lesson quotes and every answer it
checks, computed by the stateful-scaling simulation (`simulations.stateful`) at the parameters the
lesson's widgets show, or by its closed forms (`stateful.closed_forms`) for the exercises' new cases.
A field that answers a `choice` question holds the text of the right choice, derived from a number
of the run (the nearest label, or the one check that flags). Registered in `course.examples`.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from lowprec.course.example_record import Example, Value, example as _ex
from lowprec.simulations.stateful import ROLES, reduced_encode_scale, simulate_stateful, spike_clipped_share

__all__ = ["EXAMPLES", "RECOMPUTE_CHECKS", "SCALE_RATIO_LABELS", "CACHE_OUTCOMES", "SPIKE_OUTCOMES", "H1_GROUPS"]

X0, W0, H1 = ROLES.index("x0"), ROLES.index("w0"), ROLES.index("h1")

#: the prediction of the accumulation section: at how many recurrences is the spiked shard clipped
SPIKE_OUTCOMES = ("none of them", "only the first one", "every one of them")
#: the distributed section: rank 1's encode scale over rank 0's after rank 0's spike
SCALE_RATIO_LABELS = {"1 (equal)": 1.0, "about 4": 4.0, "about 16": 16.0, "about 256": 256.0}
#: the cached-weight section: what happens to microbatch 1's layer-0 output at step 0
CACHE_OUTCOMES = ("unchanged", "off by under 1 %", "off by about 100 % (it nearly vanishes)", "overflows to Inf")
#: the autocast section: the checks, in the order the lesson offers them
RECOMPUTE_CHECKS = ("history insertions against the rule's count", "unpaired reads",
                    "the forward-vs-recompute operand comparison")
#: exercise: over which ranks the layer-1 input's amax must be reduced
H1_GROUPS = ("none: each rank owns the scale of the columns it casts and alone consumes",
             "the tensor-parallel group", "the data-parallel group", "every rank of the job")



def _nearest(value: float, labels: dict[str, float]) -> str:
    return min(labels, key=lambda k: abs(math.log(value / labels[k])))


def whose_amax_accumulation() -> Example:
    last = simulate_stateful(variant="accum-last-microbatch")
    window = simulate_stateful(variant="accum-window-max")
    c = last.config
    spikes = [t for t in range(c.steps) if c.spike_at(t, c.spike_microbatch)]
    k, s = c.spike_microbatch, c.spike_rank
    clipped_last = [t for t in spikes if last.clipped[t, k, s, X0] > 0]
    clipped_window = [t for t in spikes if window.clipped[t, k, s, X0] > 0]
    outcome = (SPIKE_OUTCOMES[2] if len(clipped_last) == len(spikes) else
               SPIKE_OUTCOMES[1] if clipped_last == spikes[:1] else SPIKE_OUTCOMES[0] if not clipped_last else
               f"{len(clipped_last)} of {len(spikes)}")
    t0 = spikes[0]
    values: dict[str, Value] = {
        "outcome": outcome,
        "spikes": len(spikes),
        "spike_steps": ", ".join(map(str, spikes[:-1])) + f" and {spikes[-1]}",
        "last_clipped": len(clipped_last),
        "window_clipped": len(clipped_window),
        "inserted_last": float(last.inserted[t0, X0, 0]),
        "window_max": float(last.amax_seen[t0, :, :, X0].max()),
        "shard_clipped_pct": 100.0 * float(last.clipped[spikes[-1], k, s, X0]),
        "step_clipped_pct": 100.0 * float(last.clipped_fraction("x0")[spikes[-1]]),
        "insertions_per_step": int(last.history_insertions()[0]),
        "per_microbatch_insertions_per_step": int(
            simulate_stateful(variant="accum-per-microbatch").history_insertions()[0]),
    }
    return _ex("whose_amax_accumulation", "Gradient accumulation: the last microbatch's amax vs the window's max",
               "simulations.stateful at the WhoseAmax defaults (16 steps × 4 microbatches × 4 ranks, E4M3FN, "
               "history 16 max; rank 0's shard of microbatch 0 × 16 at steps 4, 8, 12), designs "
               "accum-last-microbatch, accum-window-max, accum-per-microbatch",
               values, "outcome", units={"shard_clipped_pct": "%", "step_clipped_pct": "%"},
               digits={"inserted_last": 3, "window_max": 3, "shard_clipped_pct": 1, "step_clipped_pct": 2})


def whose_amax_idle() -> Example:
    zero = simulate_stateful(variant="skip-rolls-zero", history=4)
    holds = simulate_stateful(variant="skip-holds", history=4)
    stale = simulate_stateful(variant="skip-rolls-stale", history=4)
    peak = float(np.nanmax(stale.amax_seen[:, :, 0, H1]))
    values: dict[str, Value] = {
        "zero_insertions": int(zero.insertions[:, H1, 0].sum()),
        "hold_insertions": int(holds.insertions[:, H1, 0].sum()),
        "idle_steps": int((~zero.expert_ran).sum()),
        "zero_idle_changes": zero.idle_changes(),
        "hold_idle_changes": holds.idle_changes(),
        "stale_final_sized_for": float(stale.sized_for("h1")[-1]),
        "stale_peak": peak,
        "hold_final_sized_for": float(holds.sized_for("h1")[-1]),
    }
    return _ex("whose_amax_idle", "A module that did not run: roll a zero, roll a stale amax, or hold",
               "simulations.stateful, WhoseAmax defaults with history 4: the layer-1 module runs on even steps; "
               "counts for rank 0's layer-1 input owner (zero_insertions, hold_insertions) and for every idle "
               "owner (idle changes)", values, "zero_insertions",
               digits={"stale_final_sized_for": 3, "stale_peak": 3, "hold_final_sized_for": 3})


def whose_amax_ranks() -> Example:
    local = simulate_stateful(variant="dist-local-amax")
    owner = simulate_stateful(variant="dist-owner-group")
    t = local.config.spike_step + 1
    ratio = float(local.scale_used[t, 0, 1, X0] / local.scale_used[t, 0, 0, X0])
    hot_local = simulate_stateful(variant="dist-local-amax", overflow="nonfinite", margin=1)
    hot_owner = simulate_stateful(variant="dist-owner-group", overflow="nonfinite", margin=1)
    values: dict[str, Value] = {
        "ratio_label": _nearest(ratio, SCALE_RATIO_LABELS),
        "ratio": ratio,
        "step": t,
        "unpaired": int(local.unpaired.sum()),
        "reads": int(local.reads.sum()),
        "unpaired_h1": int(local.unpaired_by_role[:, H1].sum()),
        "gemm_error": float(local.gemm_error.max()),
        "owner_unpaired": int(owner.unpaired.sum()),
        "skipped_local": hot_local.skipped_updates(),
        "skipped_owner": hot_owner.skipped_updates(),
        "steps": local.config.steps,
    }
    return _ex("whose_amax_ranks", "Distributed amax: local scales of one gathered tensor vs a reduction",
               "simulations.stateful at the WhoseAmax defaults, designs dist-local-amax and dist-owner-group "
               "(ratio: rank 1's encode scale over rank 0's at microbatch 0 of the step after the first spike); "
               "skipped steps with overflow=nonfinite and margin 1", values, "ratio_label",
               digits={"ratio": 2, "gemm_error": 3})


def whose_amax_cache() -> Example:
    live = simulate_stateful(variant="cache-live-scale")
    paired = simulate_stateful(variant="cache-paired")
    err = float(live.gemm_error[0])
    outcome = (CACHE_OUTCOMES[3] if not math.isfinite(err) else CACHE_OUTCOMES[0] if err == 0 else
               CACHE_OUTCOMES[1] if err < 0.01 else CACHE_OUTCOMES[2])
    values: dict[str, Value] = {
        "outcome": outcome,
        "error_pct": 100.0 * err,
        "unpaired_step0": int(live.unpaired[0]),
        "unpaired": int(live.unpaired.sum()),
        "paired_unpaired": int(paired.unpaired.sum()),
        "weight_insertions_per_step": int(live.insertions[0, W0, 0]),
        "initial_scale": float(live.scale_used[0, 0, 0, W0]),
        "scale_after_microbatch0": float(live.scale_held[0, W0, 0]),
    }
    return _ex("whose_amax_cache", "A cached FP8 weight read with the live scale (TE 1.7, #1047)",
               "simulations.stateful at the WhoseAmax defaults, designs cache-live-scale and cache-paired; "
               "error = max |H − H_paired| / max |H_paired| of the layer-0 output at step 0", values, "outcome",
               units={"error_pct": "%"}, digits={"error_pct": 1, "scale_after_microbatch0": 1})


def whose_amax_recompute() -> Example:
    bf16 = simulate_stateful(variant="recompute-bf16")
    flags = {RECOMPUTE_CHECKS[0]: bool(np.any(bf16.history_insertions() != bf16.expected_insertions)),
             RECOMPUTE_CHECKS[1]: bool(bf16.unpaired.sum() > 0),
             RECOMPUTE_CHECKS[2]: bool(bf16.recompute_mismatches.sum() > 0)}
    flagged = [k for k, v in flags.items() if v]
    values: dict[str, Value] = {
        "check": flagged[0] if len(flagged) == 1 else "; ".join(flagged),
        "mismatches": int(bf16.recompute_mismatches.sum()),
        "operands": int(bf16.recompute_operands.sum()),
        "grad_mismatch_max_pct": 100.0 * float(np.max(bf16.grad_mismatch)),
        "grad_mismatch_median_pct": 100.0 * float(np.median(bf16.grad_mismatch)),
    }
    return _ex("whose_amax_recompute", "A BF16 recompute of an FP8 forward (Megatron-LM #7538)",
               "simulations.stateful at the WhoseAmax defaults, design recompute-bf16: which check reports it",
               values, "check", units={"grad_mismatch_max_pct": "%", "grad_mismatch_median_pct": "%"},
               digits={"grad_mismatch_max_pct": 0, "grad_mismatch_median_pct": 1})


#: the exercises' new cases, as inputs
EX_MICROBATCHES, EX_SPIKE, EX_HISTORY_AMAX = 8, 10.0, 4.0
EX_SHARD_AMAXES = (2.5, 3.0, 40.0, 2.8)
EX_IDLE: dict[str, Any] = {"variant": "skip-rolls-zero", "steps": 12, "run_every": 3, "microbatches": 2,
                           "ranks": 1, "spike_step": 0, "spike_every": 0}


def whose_amax_exercises() -> Example:
    scale = reduced_encode_scale([EX_HISTORY_AMAX], "E4M3FN")
    share = spike_clipped_share(EX_SPIKE, scale, "E4M3FN", EX_MICROBATCHES)
    local = [reduced_encode_scale([a], "E4M3FN") for a in EX_SHARD_AMAXES]
    factor = local[2] * float(np.float32(1.0 / local[0]))
    dist = simulate_stateful(variant="dist-local-amax")
    h1_owner = H1_GROUPS[0] if int(dist.unpaired_by_role[:, H1].sum()) == 0 else H1_GROUPS[1]
    idle = simulate_stateful(None, **EX_IDLE)
    not_run = ~idle.expert_ran
    zeros = int(idle.insertions[not_run, H1, 0].sum())
    assert (idle.inserted[not_run, H1, 0] == 0).all()
    values: dict[str, Value] = {
        "spike_scale": scale,
        "spike_share_pct": 100.0 * share,
        "shard_factor": factor,
        "shard_scale_0": local[0],
        "shard_scale_2": local[2],
        "reduced_scale": reduced_encode_scale(list(EX_SHARD_AMAXES), "E4M3FN"),
        "h1_owner": h1_owner,
        "zero_insertions": zeros,
        "idle_steps": int(not_run.sum()),
    }
    return _ex("whose_amax_exercises", "Lesson 26's exercises: new cases of the same rules",
               f"closed forms (simulations.stateful.closed_forms): a spike × {EX_SPIKE:g} in one of "
               f"{EX_MICROBATCHES} microbatches cast with the scale for amax {EX_HISTORY_AMAX:g}; shard history "
               f"maxima {list(EX_SHARD_AMAXES)} under TE's rule; the simulation for the layer-1 input's owner "
               f"and for an expert idle on 2 of every 3 steps (12 steps, 2 microbatches, per-microbatch updates)",
               values, "spike_share_pct", units={"spike_share_pct": "%"},
               digits={"spike_share_pct": 2, "shard_factor": 4, "reduced_scale": 2, "shard_scale_0": 1,
                       "shard_scale_2": 1})


EXAMPLES: dict[str, Callable[[], Example]] = {
    "whose_amax_accumulation": whose_amax_accumulation,
    "whose_amax_idle": whose_amax_idle,
    "whose_amax_ranks": whose_amax_ranks,
    "whose_amax_cache": whose_amax_cache,
    "whose_amax_recompute": whose_amax_recompute,
    "whose_amax_exercises": whose_amax_exercises,
}
