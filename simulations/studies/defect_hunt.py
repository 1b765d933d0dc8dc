"""Find the defect: six hidden designs of the recompute simulation and the controls of a debugging
write-up, each applied to each design.

The cases A–F are the corrected design and the five defects of `recompute.state` (`CASES`: which
is which is the answer of the lab's exercise; the page shows only the letters). Each case runs
`recompute.run_recompute` with the simulation's defaults (4 tanh layers of width 64, batch 16, 20
SGD steps, seed 0, E4M3FN, a `max` history of 16, real non-reentrant `torch.utils.checkpoint`);
what a control reports is read from that run's telemetry:

- *low precision off*: the same network with the quantizer replaced by a stateless BF16 cast (the
  `bf16-control` design): whether recompute still differs from the forward;
- *matched points*: per layer, over all steps, how often the recomputed quantizer input and the
  recomputed GEMM output differ from the forward's, and by how much;
- *state transitions*: commits per layer in one logical step, against the rule of one;
- *reverse traversal*: the recompute order and whose amax sized each layer's scale (forward and
  recompute, at step 1), and whether a one-layer network of the same design diverges at all;
- *pairing*: how many consumers read a descale that is not the one their codes were encoded with;
- *training telemetry*: the same case with a non-saturating cast (`overflow=nonfinite`, NaN
  beyond E4M3's range): optimizer steps attempted, applied and skipped, and the gradient norm.

Torch is needed (the runs use `torch.utils.checkpoint`); the results are cached per process.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
from lowprec.strictjson import json_float

__all__ = ["CASES", "CONTROLS", "hunt_lab", "hunt_runs"]

#: the hidden design of each case (the lab's answer)
CASES: dict[str, str] = {"A": "stale-centre", "B": "fixed", "C": "consume-after-advance",
                         "D": "shared-state-snapshot", "E": "recompute-mutates", "F": "shared-state"}
#: the controls, in the order the lab offers them
CONTROLS: dict[str, str] = {
    "low_precision_off": "Disable low precision",
    "matched_points": "Compare matched points",
    "transitions": "Count state transitions",
    "traversal": "Reverse traversal and ownership",
    "pairing": "Check codes against their descale",
    "telemetry": "Training telemetry (non-saturating cast)",
}


@functools.lru_cache(maxsize=1)
def hunt_runs() -> dict[str, dict[str, Any]]:
    """{variant: {"run", "nonfinite", "one_layer"}} for every design of CASES, and "bf16-control"."""
    from ..recompute import run_recompute

    out: dict[str, dict[str, Any]] = {}
    for variant in (*CASES.values(), "bf16-control"):
        out[variant] = {"run": run_recompute(variant)}
        if variant != "bf16-control":
            out[variant]["nonfinite"] = run_recompute(variant, overflow="nonfinite")
            out[variant]["one_layer"] = run_recompute(variant, layers=1)
    return out


def _case(variant: str, runs: dict[str, dict[str, Any]]) -> dict[str, Any]:
    r = runs[variant]["run"]
    steps, layers = r.recomputed.shape
    rec = r.recomputed
    differ = rec & ~r.bitwise_equal
    input_differ = rec & ~r.input_bitwise_equal
    control = runs["bf16-control"]["run"]
    one = runs[variant]["one_layer"]
    nf = runs[variant]["nonfinite"]
    step = 1  # the step whose scales the traversal shows (step 0 casts with the initial scale)
    return {
        "differ": int(differ.sum()), "recomputed": int(rec.sum()), "steps": steps, "layers": layers,
        "low_precision_off": {
            "differ": int((control.recomputed & ~control.bitwise_equal).sum()),
            "recomputed": int(control.recomputed.sum()),
            "commits": int(control.state_commits.sum())},
        "matched_points": [
            {"layer": i, "input_differs": int(input_differ[:, i].sum()), "output_differs": int(differ[:, i].sum()),
             "max_diff": json_float(np.nanmax(np.where(rec[:, i], r.max_abs_diff[:, i], 0.0)))}
            for i in range(layers)],
        "transitions": {"per_layer": [int(c) for c in r.commits[0]], "rule": 1,
                        "total": int(r.state_commits.sum()), "expected": int(r.expected_state_commits * steps)},
        "traversal": {"forward_order": list(range(layers)), "recompute_order": list(r.recompute_order[step]),
                      "step": step,
                      "source_forward": [int(s) for s in r.scale_source_forward[step]],
                      "source_recompute": [int(s) for s in r.scale_source_recompute[step]],
                      "foreign_forward": int(r.contaminated("forward").sum()),
                      "foreign_recompute": int((r.contaminated("recompute") & rec).sum()),
                      "calls": steps * layers,
                      "one_layer_differ": int((one.recomputed & ~one.bitwise_equal).sum()),
                      "one_layer_recomputed": int(one.recomputed.sum())},
        "pairing": {"unpaired_forward": int((~r.paired_forward).sum()),
                    "unpaired_recompute": int((rec & ~r.paired_recompute).sum()), "calls": steps * layers},
        "telemetry": {"attempted": int(nf.attempted.sum()), "applied": int(nf.applied.sum()),
                      "skipped": int(nf.skipped.sum()),
                      "grad_norm": [json_float(g) for g in nf.grad_norm]},
    }


def hunt_lab() -> dict[str, Any]:
    """The lab's data: for each case letter, what every control shows (strict-JSON ready). The
    designs behind the letters are not in it."""
    runs = hunt_runs()
    return {"controls": CONTROLS, "cases": {letter: _case(variant, runs) for letter, variant in CASES.items()},
            "setup": "4 checkpointed tanh layers of width 64, batch 16, 20 SGD steps, seed 0, E4M3FN inputs, "
                     "a max amax history of 16, real torch.utils.checkpoint (non-reentrant)"}
