"""Telemetry of a recompute-divergence run: the result record, its verdict, summary, JSON and CSV.

Torch-free (numpy only): `recompute.harness` fills a `RecomputeResult` while it trains; this module
owns what the numbers mean and how they are written. Per-(step, layer) arrays use fill values for
cells that were not computed (NaN for floats, False, -1, ""); `to_dict()` and `csv_text()` write
those cells as absent (`null` / an empty CSV cell), so a NaN that reaches the JSON writer
(`lowprec.strictjson`: "nan") is a value the run really computed (a non-finite loss, say).
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["LAYER_ARRAYS", "RecomputeResult", "activation_diffs", "nanmax", "tensor_hash"]

#: every [steps, layers] array of a result, and which cells of it hold a computed value:
#: "forward" (steps that ran to the end), "recompute" (cells that were recomputed), "centre"
#: (recomputed cells of a centred quantizer) or "all" (non-float arrays: their fill is a value)
LAYER_ARRAYS: dict[str, str] = {
    "recomputed": "all",
    "max_abs_diff": "recompute",
    "max_rel_diff": "recompute",
    "output_max_abs_diff": "recompute",
    "dequant_max_abs_diff": "recompute",
    "bitwise_equal": "all",
    "input_bitwise_equal": "all",
    "finite_masks_equal": "all",
    "encode_scale_forward": "forward",
    "encode_scale_recompute": "recompute",
    "consumer_decode_scale_forward": "forward",
    "consumer_decode_scale_recompute": "recompute",
    "paired_forward": "all",
    "paired_recompute": "all",
    "amax_forward": "forward",
    "amax_recompute": "recompute",
    "scale_source_forward": "all",
    "scale_source_recompute": "all",
    "centre_shift": "centre",
    "input_rms": "forward",
    "commits": "all",
    "history_len": "all",
    "forward_hash": "all",
    "recompute_hash": "all",
}


def tensor_hash(a: np.ndarray) -> str:
    """blake2b (8 bytes, hex) of an array's bytes: equal hashes ⇔ (almost surely) equal bits."""
    return hashlib.blake2b(np.ascontiguousarray(a).tobytes(), digest_size=8).hexdigest()


def nanmax(values: np.ndarray) -> float:
    """The largest value, NaN cells ignored; NaN when every cell is NaN (or there is none)."""
    values = np.asarray(values, dtype=np.float64)
    values = values[~np.isnan(values)]
    return float(values.max()) if values.size else math.nan


def activation_diffs(f: np.ndarray, r: np.ndarray) -> tuple[float, float, bool, bool]:
    """Forward `f` vs recompute `r` (float32): max |f - r|, max |f - r| / max(|f|, |r|) (0 where
    both are 0; NaN cells ignored, NaN when all are), bitwise equal (as uint32), finite masks
    equal. Empty arrays: 0, 0."""
    with np.errstate(invalid="ignore", over="ignore"):
        d = np.abs(f.astype(np.float64) - r.astype(np.float64))
        den = np.maximum(np.abs(f), np.abs(r)).astype(np.float64)
        rel = np.where(den > 0, d / np.where(den > 0, den, 1.0), 0.0)
    finite = bool(np.array_equal(np.isfinite(f), np.isfinite(r)))
    bitwise = bool(np.array_equal(f.view(np.uint32), r.view(np.uint32)))
    if not d.size:
        return 0.0, 0.0, bitwise, finite
    return nanmax(d), nanmax(rel), bitwise, finite


@dataclass
class RecomputeResult:
    """Telemetry of one run. Arrays named in `LAYER_ARRAYS` have shape [steps, layers]; cells of
    steps that did not run (after a failure) or were not recomputed hold NaN / False / -1 / "".

    `max_abs_diff` is the larger of the forward-vs-recompute differences of the layer's
    dequantized GEMM input (`dequant_max_abs_diff`) and its output (`output_max_abs_diff`), a NaN
    one (both tensors NaN everywhere) ignored;
    `max_rel_diff` is max |f - r| / max(|f|, |r|) over both (0 where both are 0);
    `bitwise_equal` compares both as uint32 bit patterns. `paired_*` says whether the consumer's
    descale (and centre) is the one the codes were encoded with. `scale_source_*` is the layer
    whose amax set the scale used (-1: the initial scale 1). `commits` counts state transitions
    made by the layer's calls in that step; `history_len` is its state's history length after it.
    """

    parameters: dict[str, Any]
    loss: np.ndarray  # [steps]
    grad_norm: np.ndarray  # [steps] float64 L2 norm of all parameter gradients
    nonfinite: np.ndarray  # [steps] bool: loss or a gradient not finite
    attempted: np.ndarray  # [steps] bool: an optimizer step was attempted
    applied: np.ndarray  # [steps] bool
    skipped: np.ndarray  # [steps] bool: attempted but not applied (non-finite)
    state_commits: np.ndarray  # [steps] int: commits into any state during the step
    recompute_order: list[list[int]]  # per step, the layers in the order recompute re-ran them
    failure: dict[str, Any] | None  # {"step", "type", "message"} when a step raised
    recomputed: np.ndarray
    max_abs_diff: np.ndarray
    max_rel_diff: np.ndarray
    output_max_abs_diff: np.ndarray
    dequant_max_abs_diff: np.ndarray
    bitwise_equal: np.ndarray
    input_bitwise_equal: np.ndarray
    finite_masks_equal: np.ndarray
    encode_scale_forward: np.ndarray
    encode_scale_recompute: np.ndarray
    consumer_decode_scale_forward: np.ndarray
    consumer_decode_scale_recompute: np.ndarray
    paired_forward: np.ndarray
    paired_recompute: np.ndarray
    amax_forward: np.ndarray
    amax_recompute: np.ndarray
    scale_source_forward: np.ndarray
    scale_source_recompute: np.ndarray
    centre_shift: np.ndarray  # max |encoder centre - snapshot centre| in recompute
    input_rms: np.ndarray  # RMS of the layer input in the forward
    commits: np.ndarray
    history_len: np.ndarray
    forward_hash: np.ndarray  # str: blake2b of the output's bytes
    recompute_hash: np.ndarray
    elapsed_s: float
    #: state commits one logical step makes when the design's rule is followed (one per layer;
    #: 0 for the stateless BF16 control)
    expected_state_commits: int = 0
    centred: bool = False  # the quantizer subtracts a centre (centre_shift is defined)
    #: the format the layer inputs were cast to: the run's `format`, or the design's own (the
    #: bf16-control variant casts to BF16 whatever `format` says); "" where not recorded
    cast_format: str = ""
    final_weights: list[np.ndarray] = field(default_factory=list)
    # with keep_activations: (step, layer, "forward"|"recompute"|"plain") → input, dequant (the
    # GEMM input), output, and for a centred quantizer encoder_centre / snapshot_centre
    activations: dict[tuple[int, int, str], dict[str, np.ndarray]] = field(default_factory=dict)

    @property
    def steps_run(self) -> int:
        return int(np.sum(self.attempted))

    @property
    def completed(self) -> np.ndarray:
        """[steps] bool: steps whose forward and backward ran to the end (not the failing one)."""
        done = np.asarray(self.attempted, dtype=bool).copy()
        if self.failure is not None:
            done[self.failure["step"]] = False
        return done

    def contaminated(self, which: str = "forward") -> np.ndarray:
        """[steps, layers] bool: the scale came from another layer's amax."""
        src = self.scale_source_forward if which == "forward" else self.scale_source_recompute
        layer_ids = np.arange(src.shape[1])[None, :]
        return (src >= 0) & (src != layer_ids)

    def first_mismatch(self) -> tuple[int, int] | None:
        """(step, layer) of the first recomputed activation that is not bitwise equal."""
        bad = self.recomputed & ~self.bitwise_equal
        if not bad.any():
            return None
        step, layer = (int(i) for i in np.argwhere(bad)[0])
        return step, layer

    def verdict(self) -> str:
        """One line: failure, first forward/recompute mismatch, unpaired consumers, or agreement."""
        if self.failure is not None:
            return (f"failed at step {self.failure['step']}: {self.failure['type']}: "
                    f"{self.failure['message']}")
        n_rec = int(self.recomputed.sum())
        unpaired = int(np.sum(~self.paired_forward[: self.steps_run]))
        calls = self.steps_run * self.recomputed.shape[1]
        foreign = int(np.sum(self.contaminated("forward")[: self.steps_run]))
        tail = (f"; consumer descale not paired with the codes in {unpaired} of {calls} forward calls"
                if unpaired else "")
        tail += (f"; scale sized from another layer's amax in {foreign} of {calls} forward calls"
                 if foreign else "")
        if n_rec == 0:
            return "no recompute (checkpointing off)" + tail
        first = self.first_mismatch()
        if first is not None:
            bad = int((self.recomputed & ~self.bitwise_equal).sum())
            return (f"first mismatch: layer {first[1]}, step {first[0]} "
                    f"({bad} of {n_rec} activations differ)" + tail)
        return f"bitwise identical in all {n_rec} activations" + tail

    def summary(self) -> str:
        """A few human lines: what ran, whether and where forward and recompute diverged, the
        state commits against the design's rule, the verdict."""
        p = self.parameters
        n_steps, n_layers = self.recomputed.shape
        cast = self.cast_format or p.get("format")
        fmt = (cast if cast == p.get("format") else
               f"{cast} (the variant's own stateless cast; the format parameter {p.get('format')} is not used)")
        lines = [f"recompute: variant {p.get('variant')}, {fmt}, {n_layers} layers × width "
                 f"{p.get('width')}, batch {p.get('batch')}; {int(self.completed.sum())} of {n_steps} "
                 f"steps ran; checkpointing {'on' if p.get('checkpointing') else 'off'}"]
        n_rec = int(self.recomputed.sum())
        first = self.first_mismatch()
        if n_rec == 0:
            lines.append("forward vs recompute: nothing recomputed")
        elif first is None:
            lines.append(f"forward vs recompute: bitwise identical in all {n_rec} recomputed activations")
        else:
            bad = int((self.recomputed & ~self.bitwise_equal).sum())
            lines.append(f"forward vs recompute: diverged in {bad} of {n_rec} recomputed activations, "
                         f"first at step {first[0]}, layer {first[1]} (max |forward - recompute| "
                         f"{nanmax(self.max_abs_diff[self.recomputed]):.3g})")
        steps_done = int(self.completed.sum())
        lines.append(f"state commits: {int(self.state_commits.sum())} (design rule: "
                     f"{self.expected_state_commits} per step, {self.expected_state_commits * steps_done} "
                     f"over {steps_done} steps)")
        if int(self.skipped.sum()):
            lines.append(f"optimizer steps skipped (non-finite loss or gradient): {int(self.skipped.sum())}")
        lines.append(f"verdict: {self.verdict()}")
        return "\n".join(lines)

    def computed_mask(self, name: str) -> np.ndarray:
        """[steps, layers] bool: the cells of array `name` that hold a computed value."""
        kind = LAYER_ARRAYS[name]
        shape = self.recomputed.shape
        if kind == "forward":
            return np.broadcast_to(self.completed[:, None], shape)
        if kind == "recompute":
            return np.asarray(self.recomputed, dtype=bool)
        if kind == "centre":
            return np.asarray(self.recomputed, dtype=bool) & self.centred
        return np.ones(shape, dtype=bool)

    def layer_array(self, name: str) -> list[list[Any]]:
        """Array `name` as nested lists, its cells that were not computed as None."""
        values = getattr(self, name)
        mask = self.computed_mask(name)
        return [[(v.item() if isinstance(v, np.generic) else v) if m else None
                 for v, m in zip(row, mrow)] for row, mrow in zip(values, mask)]

    def to_dict(self) -> dict[str, Any]:
        """The result as JSON values, for `lowprec.strictjson` (which spells a computed NaN "nan";
        `None` is a value that was not computed)."""
        completed = self.completed
        steps = []
        for t in range(self.loss.shape[0]):
            rec = self.recomputed[t]
            steps.append({
                "step": t,
                "ran": bool(self.attempted[t]),
                "loss": float(self.loss[t]) if completed[t] else None,
                "grad_norm": float(self.grad_norm[t]) if completed[t] else None,
                "nonfinite": bool(self.nonfinite[t]),
                "attempted": bool(self.attempted[t]),
                "applied": bool(self.applied[t]),
                "skipped": bool(self.skipped[t]),
                "state_commits": int(self.state_commits[t]),
                "forward_recompute_max_abs_diff": nanmax(self.max_abs_diff[t][rec]) if rec.any() else None,
                "forward_recompute_max_rel_diff": nanmax(self.max_rel_diff[t][rec]) if rec.any() else None,
                "forward_recompute_bitwise_equal":
                    bool(np.all(self.bitwise_equal[t][rec])) if rec.any() else None,
                "consumer_paired": bool(np.all(self.paired_forward[t])) if self.attempted[t] else None,
                "recompute_order": self.recompute_order[t],
            })
        return {
            "simulation": "recompute",
            "parameters": dict(self.parameters),
            "verdict": self.verdict(),
            "cast_format": self.cast_format or self.parameters.get("format"),
            "failure": self.failure,
            "elapsed_s": self.elapsed_s,
            "totals": {
                "optimizer_steps_attempted": int(self.attempted.sum()),
                "optimizer_steps_applied": int(self.applied.sum()),
                "optimizer_steps_skipped": int(self.skipped.sum()),
                "state_commits": int(self.state_commits.sum()),
                "expected_state_commits_per_step": self.expected_state_commits,
                "activations_recomputed": int(self.recomputed.sum()),
                "activations_bitwise_equal": int((self.recomputed & self.bitwise_equal).sum()),
                "consumer_calls_unpaired": int((~self.paired_forward[: self.steps_run]).sum()),
            },
            "steps": steps,
            "per_layer": {name: self.layer_array(name) for name in LAYER_ARRAYS},
        }

    def csv_text(self) -> str:
        """One row per (step, layer) with every per-layer array; cells not computed are empty,
        non-finite values are written nan / inf / -inf."""
        names = list(LAYER_ARRAYS)
        columns = [self.layer_array(n) for n in names]
        lines = [",".join(["step", "layer", *names])]
        n_steps, n_layers = self.recomputed.shape
        for t in range(n_steps):
            for i in range(n_layers):
                cells = ["" if col[t][i] is None else str(col[t][i]) for col in columns]
                lines.append(",".join([str(t), str(i), *cells]))
        return "\n".join(lines) + "\n"
