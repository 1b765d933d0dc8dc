"""Recompute divergence: a stateful delayed-scaling quantizer inside activation-checkpointed layers.

This module owns the recompute simulation: a small tanh MLP whose layer inputs are quantized by a
delayed-scaling quantizer, trained with real PyTorch autograd and `torch.utils.checkpoint`
(non-reentrant, CPU), so backward really re-enters each layer body. The recompute phase is marked
through checkpoint's public `context_fn` hook (its second context manager is entered only while a
checkpointed region is re-run). Scale convention (Transformer Engine's delayed scaling, "FP8
Delayed Scaling" docs): `encode_scale = (F / amax) / 2^margin` with `F = fmt.max` and `amax` the
maximum (`"max"`) or newest (`"most_recent"`) entry of an amax history; `decode_scale = 1 /
encode_scale`; codes are `encode(x · encode_scale)` and the GEMM consumer multiplies the decoded
codes by `decode_scale`. Scales are kept float32-representable so numpy and torch multiply by the
same number. Rounding is the run's `CastPolicy` (default round-to-nearest-even with saturation, as
`cvt.rn.satfinite`). The corrected design follows the separated API of the seed write-up: begin a
logical quantization (an immutable `QuantSnapshot` with owner, layer, logical step and scales),
quantize with the snapshot, observe, commit one state transition; recompute reuses the snapshot and
commits nothing. The defect variants (`VARIANTS`) each break one rule. Layers and steps are counted
from 0. The delayed scaler here is deliberately minimal and private to this module.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import hashlib
import math
import sys
import threading
import time
from collections import deque
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterator, ParamSpec, Sequence, TypeVar

import numpy as np
import torch
from torch.utils.checkpoint import CheckpointError, checkpoint, set_checkpoint_early_stop

from lowprec.formats import BF16, CastPolicy, FloatFormat, Overflow, Rounding, decode, encode, get_format

from ._io import ArgumentParser, error_exit, write_json, write_text

VARIANTS: dict[str, str] = {
    "fixed": "per-layer state; the true forward freezes a snapshot before advancing the live state "
             "once; codes and consumer use the snapshot; recompute reuses it and mutates nothing",
    "consume-after-advance": "the GEMM consumer reads the live descale after the state was advanced "
                             "for the next call: wrong even without checkpointing, and invisible "
                             "to a forward-vs-recompute comparison (recompute repeats the read)",
    "recompute-mutates": "recompute quantizes with the live state, records amax and advances the "
                         "history a second time per step",
    "shared-state": "one state object for all layers; recompute (in reverse layer order) reads the "
                    "live shared state, i.e. other layers' amax values",
    "shared-state-snapshot": "shared state with a snapshot added on top: forward and recompute agree, "
                             "but every snapshot carries the wrong owner's scale",
    "stale-centre": "mean-centred quantizer with a persistent additive centre; the snapshot pairs "
                    "scale and centre with the consumer, but the encoder reads the live centre, "
                    "which recompute finds already advanced",
    "bf16-control": "no low-precision quantization: a stateless BF16 cast, the control",
    "gate-asymmetry": "stash guarded by a predicate sampled at checkpoint entry, restore guarded by "
                      "an inner autocast-like switch read at run time: the restore finds nothing",
    "gate-asymmetry-repaired": "the same inner switch, but stash and restore both read the live "
                               "predicate, so the snapshot is stashed and restored",
}

AMAX_ALGOS = ("max", "most_recent")
_DETERMINISTIC_ROUNDINGS = tuple(r.value for r in Rounding if r is not Rounding.STOCHASTIC)


class ConcurrentStateError(RuntimeError):
    """Two workers entered one delayed-scaling state at once (fail closed)."""


class SnapshotIdentityError(RuntimeError):
    """A consumer was handed a snapshot that belongs to another step, layer or owner."""


class DoubleCommitError(RuntimeError):
    """A second state transition for one (logical step, layer) was committed."""


# ------------------------------------------------------------------------------------------------
# the delayed-scaling state and the separated API
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class HistoryEntry:
    """One amax observation: its value, the layer that observed it and the logical step."""

    amax: float
    layer_id: int
    logical_step: int


@dataclass(frozen=True)
class QuantSnapshot:
    """The metadata one logical quantization uses, frozen before the live state moves."""

    owner: str  # which state object produced it ("layer2", "shared", "none")
    layer_id: int  # layer that began the logical quantization
    logical_step: int  # training step it belongs to
    role: str  # tensor role, e.g. "input"
    encode_scale: float  # codes = encode(x · encode_scale)
    decode_scale: float  # x ≈ decode(codes) · decode_scale (+ centre)
    scale_source_layer: int  # layer whose amax set encode_scale (-1: the initial scale)
    centre: np.ndarray | None = field(default=None, compare=False)  # additive centre (centred only)


@dataclass(frozen=True)
class QuantObservation:
    """What a forward call saw, to be committed once into the live state."""

    owner: str
    layer_id: int
    logical_step: int
    amax: float  # max |x - centre| of the quantized tensor
    centre_estimate: np.ndarray | None  # mean over the batch axis (centred quantizer only)


@dataclass(frozen=True)
class QuantizedTensor:
    """Codes paired permanently with the snapshot that encoded them."""

    codes: np.ndarray  # unsigned integer codes of the format
    values: np.ndarray  # decode(codes): float32, in scaled units
    snapshot: QuantSnapshot
    encoder_centre: np.ndarray | None  # centre the encoder actually subtracted


def _f32(v: float) -> float:
    return float(np.float32(v))


class DelayedScaleState:
    """Live delayed-scaling state of one owner: amax history, current encode scale, optional
    centre, commit counter. Use `exclusive(worker)` around transitions: a second worker entering
    while another is inside raises `ConcurrentStateError` instead of racing."""

    def __init__(self, owner: str, fmt_max: float, history_len: int = 16, amax_algo: str = "max",
                 margin: int = 0, centred: bool = False) -> None:
        if history_len < 1:
            raise ValueError(f"history_len={history_len!r} must be at least 1")
        if amax_algo not in AMAX_ALGOS:
            raise ValueError(f"amax_algo={amax_algo!r} is not one of {', '.join(AMAX_ALGOS)}")
        self.owner = owner
        self.fmt_max = float(fmt_max)
        self.history_len = int(history_len)
        self.amax_algo = amax_algo
        self.margin = int(margin)
        self.centred = centred
        self.history: deque[HistoryEntry] = deque(maxlen=self.history_len)
        self.encode_scale = 1.0
        self.scale_source_layer = -1
        self.centre: np.ndarray | None = None
        self.commits = 0
        self.committed: list[tuple[int, int]] = []
        self._lock = threading.Lock()
        self._holder: str | None = None

    @property
    def decode_scale(self) -> float:
        return _f32(1.0 / self.encode_scale)

    @contextlib.contextmanager
    def exclusive(self, worker: str) -> Iterator[None]:
        """Enter the state as `worker`; fail closed if another worker is inside."""
        if not self._lock.acquire(blocking=False):
            raise ConcurrentStateError(
                f"delayed-scaling state {self.owner!r} is already entered by worker "
                f"{self._holder!r}; worker {worker!r} refused (shared delayed state fails closed: "
                f"give each worker its own state or serialise the transition)"
            )
        self._holder = worker
        try:
            yield
        finally:
            self._holder = None
            self._lock.release()

    def _scale_from_history(self) -> tuple[float, int]:
        if not self.history:
            return self.encode_scale, self.scale_source_layer
        if self.amax_algo == "max":
            entry = max(self.history, key=lambda e: e.amax)  # first maximal entry
        else:
            entry = self.history[-1]
        if not (math.isfinite(entry.amax) and entry.amax > 0):
            return self.encode_scale, self.scale_source_layer  # keep the previous scale
        return _f32(self.fmt_max / entry.amax / 2.0 ** self.margin), entry.layer_id


def begin_logical_quantization(state: DelayedScaleState, logical_step: int, layer_id: int,
                               role: str = "input") -> QuantSnapshot:
    """Freeze what this logical quantization will use; the live state is not touched."""
    centre = None if state.centre is None else state.centre.copy()
    return QuantSnapshot(owner=state.owner, layer_id=layer_id, logical_step=logical_step, role=role,
                         encode_scale=state.encode_scale, decode_scale=state.decode_scale,
                         scale_source_layer=state.scale_source_layer, centre=centre)


def quantize_with_snapshot(x: np.ndarray, snapshot: QuantSnapshot, fmt: FloatFormat,
                           policy: CastPolicy, encoder_centre: np.ndarray | None = None
                           ) -> QuantizedTensor:
    """codes = encode((x - centre) · encode_scale). `encoder_centre` overrides the centre the
    encoder subtracts (default: the snapshot's); only the stale-centre defect passes another."""
    centre = snapshot.centre if encoder_centre is None else encoder_centre
    centred = x if centre is None else (x - centre).astype(np.float32)
    codes = encode((centred * np.float32(snapshot.encode_scale)).astype(np.float32), fmt, policy)
    return QuantizedTensor(codes=codes, values=decode(codes, fmt), snapshot=snapshot,
                           encoder_centre=centre)


def observe_for_future_state(x: np.ndarray, snapshot: QuantSnapshot) -> QuantObservation:
    """amax of the tensor as quantized (centred by the snapshot's centre) and, for a centred
    quantizer, the batch mean that will become the next centre."""
    centred = x if snapshot.centre is None else x - snapshot.centre
    amax = float(np.max(np.abs(centred))) if centred.size else 0.0
    centre_estimate = None if snapshot.centre is None else x.mean(axis=0).astype(np.float32)
    return QuantObservation(owner=snapshot.owner, layer_id=snapshot.layer_id,
                            logical_step=snapshot.logical_step, amax=amax,
                            centre_estimate=centre_estimate)


def commit_quant_observation(state: DelayedScaleState, observation: QuantObservation, *,
                             allow_repeat: bool = False) -> None:
    """One state transition: append the amax to the history, derive the next encode scale (and
    the next centre). A second commit for the same (logical step, layer) raises
    `DoubleCommitError` unless `allow_repeat` (which only the recompute-mutates defect passes)."""
    if observation.owner != state.owner:
        raise SnapshotIdentityError(
            f"observation of owner {observation.owner!r} committed into state {state.owner!r}")
    key = (observation.logical_step, observation.layer_id)
    if key in state.committed and not allow_repeat:
        raise DoubleCommitError(
            f"state {state.owner!r} already committed logical step {key[0]} for layer {key[1]}; "
            f"recompute must not advance delayed state")
    state.history.append(HistoryEntry(observation.amax, observation.layer_id,
                                      observation.logical_step))
    state.encode_scale, state.scale_source_layer = state._scale_from_history()
    if state.centred and observation.centre_estimate is not None:
        state.centre = observation.centre_estimate.copy()
    state.commits += 1
    state.committed.append(key)


def dequantize_paired(q: QuantizedTensor) -> np.ndarray:
    """What a correct consumer reads: decoded codes × the snapshot's decode scale (+ its centre)."""
    out = (q.values * np.float32(q.snapshot.decode_scale)).astype(np.float32)
    return out if q.snapshot.centre is None else (out + q.snapshot.centre).astype(np.float32)


# ------------------------------------------------------------------------------------------------
# variant quantizers: one object per run, owning every state
# ------------------------------------------------------------------------------------------------


@dataclass
class PhaseInfo:
    """Where the body is running: "plain" (no checkpointing), "forward" or "recompute"."""

    phase: str = "plain"
    step: int = 0
    in_region: bool = False  # inside a checkpointed region
    latched_at_entry: bool = False  # the low-precision switch, sampled when checkpoint was entered
    autocast_live: bool = False  # the low-precision switch, read now


@dataclass
class ConsumerScaling:
    """What the GEMM consumer multiplies and adds, and whether it is the pair of the codes."""

    decode_scale: float
    centre: np.ndarray | None
    paired: bool


class VariantQuantizer:
    """The quantizer of one design in VARIANTS for a network of `layers` layers: `quantize` runs
    the encode and any state transitions for one body call, `consumer_scaling` says what the
    consumer reads. Counts commits per (step, layer)."""

    def __init__(self, variant: str, layers: int, fmt: FloatFormat, policy: CastPolicy,
                 history_len: int = 16, amax_algo: str = "max", margin: int = 0) -> None:
        if variant not in VARIANTS:
            raise ValueError(f"variant={variant!r} is not one of {', '.join(VARIANTS)}")
        self.variant = variant
        self.fmt = fmt
        self.policy = policy
        centred = variant == "stale-centre"
        if variant in ("shared-state", "shared-state-snapshot"):
            shared = DelayedScaleState("shared", fmt.max, history_len, amax_algo, margin)
            self.states = [shared] * layers
        else:
            self.states = [DelayedScaleState(f"layer{i}", fmt.max, history_len, amax_algo, margin,
                                             centred=centred) for i in range(layers)]
        self.snapshots: dict[tuple[int, int], QuantSnapshot] = {}  # fixed design's pairing store
        self.stash: dict[tuple[int, int], QuantSnapshot] = {}  # gate variants' recompute stash
        self.commit_log: list[tuple[int, int, str]] = []  # (step, layer, phase) of every commit
        self.worker = "main"

    def _commit(self, x: np.ndarray, snap: QuantSnapshot, layer: int, phase: PhaseInfo,
                allow_repeat: bool = False) -> None:
        state = self.states[layer]
        with state.exclusive(self.worker):
            commit_quant_observation(state, observe_for_future_state(x, snap),
                                     allow_repeat=allow_repeat)
        self.commit_log.append((phase.step, layer, phase.phase))

    def _begin(self, layer: int, step: int) -> QuantSnapshot:
        with self.states[layer].exclusive(self.worker):
            return begin_logical_quantization(self.states[layer], step, layer)

    def quantize(self, x: np.ndarray, layer: int, phase: PhaseInfo) -> QuantizedTensor:
        """Encode layer `layer`'s input `x` (float32, [batch, width]) for this body call."""
        v, step, key = self.variant, phase.step, (phase.step, layer)
        recompute = phase.phase == "recompute"
        if v == "bf16-control":
            snap = QuantSnapshot("none", layer, step, "input", 1.0, 1.0, -1)
            codes = encode(x, BF16, CastPolicy())
            return QuantizedTensor(codes, decode(codes, BF16), snap, None)
        if v == "recompute-mutates" or (v == "shared-state" and not recompute):
            snap = self._begin(layer, step)  # the live state, whatever phase this is
            q = quantize_with_snapshot(x, snap, self.fmt, self.policy)
            self._commit(x, snap, layer, phase, allow_repeat=True)
            return q
        if v == "shared-state":  # recompute: read the live shared state, commit nothing
            return quantize_with_snapshot(x, self._begin(layer, step), self.fmt, self.policy)
        if v in ("gate-asymmetry", "gate-asymmetry-repaired"):
            if recompute and phase.autocast_live:  # restore gate: read at run time
                if key not in self.stash:
                    raise KeyError(
                        f"no stashed quantization snapshot for logical step {step}, layer {layer}: "
                        f"the stash gate (sampled at checkpoint entry) was off, the restore gate "
                        f"(read live) is on")
                snap = self.stash.pop(key)
                return quantize_with_snapshot(x, snap, self.fmt, self.policy)
            snap = self._begin(layer, step)
            q = quantize_with_snapshot(x, snap, self.fmt, self.policy)
            if not recompute:
                self._commit(x, snap, layer, phase)
                if v == "gate-asymmetry":
                    stash_gate = phase.in_region and phase.latched_at_entry
                else:
                    stash_gate = phase.in_region and phase.autocast_live
                if stash_gate:
                    self.stash[key] = snap
            return q
        # fixed, consume-after-advance, shared-state-snapshot, stale-centre: snapshot design
        if recompute:
            snap = self.snapshots[key]
            encoder_centre = self.states[layer].centre if v == "stale-centre" else None
            return quantize_with_snapshot(x, snap, self.fmt, self.policy, encoder_centre)
        if v == "stale-centre" and self.states[layer].centre is None:
            self.states[layer].centre = np.zeros(x.shape[1], dtype=np.float32)  # first call
        snap = self._begin(layer, step)
        encoder_centre = self.states[layer].centre if v == "stale-centre" else None
        q = quantize_with_snapshot(x, snap, self.fmt, self.policy, encoder_centre)
        self._commit(x, snap, layer, phase)
        self.snapshots[key] = snap
        return q

    def consumer_scaling(self, q: QuantizedTensor, layer: int, phase: PhaseInfo) -> ConsumerScaling:
        """What the GEMM consumer of layer `layer` uses to read `q`. The fixed design asserts that
        the snapshot belongs to this step, layer and owner."""
        snap = q.snapshot
        if self.variant == "consume-after-advance":
            live = self.states[layer]
            return ConsumerScaling(live.decode_scale, None, live.decode_scale == snap.decode_scale)
        if self.variant in ("fixed", "gate-asymmetry", "gate-asymmetry-repaired",
                            "shared-state-snapshot"):
            owner = self.states[layer].owner
            if snap.logical_step != phase.step or snap.layer_id != layer or snap.owner != owner:
                raise SnapshotIdentityError(
                    f"layer {layer} at step {phase.step} (owner {owner!r}) was handed the snapshot "
                    f"of layer {snap.layer_id}, step {snap.logical_step}, owner {snap.owner!r}")
        paired = q.encoder_centre is None or snap.centre is None or bool(
            np.array_equal(q.encoder_centre, snap.centre))
        return ConsumerScaling(snap.decode_scale, snap.centre, paired)


# ------------------------------------------------------------------------------------------------
# the network and the training loop
# ------------------------------------------------------------------------------------------------


class _StraightThrough(torch.autograd.Function):
    """Forward: the decoded codes (computed in numpy by `formats`). Backward: d values / dx =
    encode_scale (straight-through estimator of the rounding)."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, values: torch.Tensor, encode_scale: float) -> torch.Tensor:
        ctx.encode_scale = encode_scale
        return values.clone()

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, None, None]:
        return grad * ctx.encode_scale, None, None


@dataclass(frozen=True)
class Problem:
    """The data and initial weights of one run (a function of the seed only)."""

    inputs: np.ndarray  # [steps, batch, width] float32: N(offset_j, 1), offsets N(0, 1) per feature
    targets: np.ndarray  # [steps, batch, width] float32: tanh of a random linear teacher
    weights: list[np.ndarray]  # per layer [width, width] float32, N(0, 1/width)
    biases: list[np.ndarray]  # per layer [width] float32 zeros


def make_problem(seed: int, layers: int, width: int, batch: int, steps: int) -> Problem:
    """Generate the run's data from `numpy.random.default_rng(seed)`."""
    rng = np.random.default_rng(seed)
    offsets = rng.standard_normal(width)
    teacher = rng.standard_normal((width, width)) / math.sqrt(width)
    inputs = (rng.standard_normal((steps, batch, width)) + offsets).astype(np.float32)
    targets = np.tanh(inputs.astype(np.float64) @ teacher / 2.0).astype(np.float32)
    weights = [(rng.standard_normal((width, width)) / math.sqrt(width)).astype(np.float32)
               for _ in range(layers)]
    biases = [np.zeros(width, dtype=np.float32) for _ in range(layers)]
    return Problem(inputs, targets, weights, biases)


class _PhaseContext:
    """Sets the run's phase while a checkpointed region runs (forward) or is re-run (recompute)."""

    def __init__(self, run: "_Run", phase: str, latched: bool) -> None:
        self.run, self.phase, self.latched = run, phase, latched
        self.saved: tuple[str, bool, bool] | None = None

    def __enter__(self) -> None:
        r = self.run
        self.saved = (r.phase.phase, r.phase.in_region, r.phase.latched_at_entry)
        r.phase.phase, r.phase.in_region, r.phase.latched_at_entry = self.phase, True, self.latched

    def __exit__(self, *exc: object) -> None:
        assert self.saved is not None
        r = self.run
        r.phase.phase, r.phase.in_region, r.phase.latched_at_entry = self.saved


def _tensor_hash(a: np.ndarray) -> str:
    return hashlib.blake2b(np.ascontiguousarray(a).tobytes(), digest_size=8).hexdigest()


@dataclass
class _CallRecord:
    input: np.ndarray
    dequant: np.ndarray
    output: np.ndarray
    encode_scale: float
    consumer_decode_scale: float
    paired: bool
    amax: float
    scale_source_layer: int
    encoder_centre: np.ndarray | None
    snapshot_centre: np.ndarray | None


class _Run:
    def __init__(self, quantizer: VariantQuantizer, problem: Problem, checkpointing: bool) -> None:
        self.q = quantizer
        self.phase = PhaseInfo()
        self.checkpointing = checkpointing
        self.weights = [torch.from_numpy(w.copy()).requires_grad_(True) for w in problem.weights]
        self.biases = [torch.from_numpy(b.copy()).requires_grad_(True) for b in problem.biases]
        self.records: dict[tuple[int, int, str], _CallRecord] = {}
        self.recompute_order: list[int] = []
        self.inner_switch = quantizer.variant.startswith("gate-asymmetry")

    def context_fn(self) -> tuple[_PhaseContext, _PhaseContext]:
        latched = self.phase.autocast_live  # sampled when checkpoint is entered
        return _PhaseContext(self, "forward", latched), _PhaseContext(self, "recompute", latched)

    @contextlib.contextmanager
    def inner_autocast(self) -> Iterator[None]:
        old = self.phase.autocast_live
        self.phase.autocast_live = True
        try:
            yield
        finally:
            self.phase.autocast_live = old

    def body(self, h: torch.Tensor, layer: int) -> torch.Tensor:
        with self.inner_autocast() if self.inner_switch else contextlib.nullcontext():
            ph = self.phase
            if ph.phase == "recompute":
                self.recompute_order.append(layer)
            x = h.detach().numpy()
            q = self.q.quantize(x, layer, ph)
            cs = self.q.consumer_scaling(q, layer, ph)
            values = _StraightThrough.apply(h, torch.from_numpy(q.values), q.snapshot.encode_scale)
            x_hat = values * cs.decode_scale
            if cs.centre is not None:
                x_hat = x_hat + torch.from_numpy(cs.centre)
            out = torch.tanh(torch.nn.functional.linear(x_hat, self.weights[layer], self.biases[layer]))
            centred = x if q.encoder_centre is None else x - q.encoder_centre
            self.records[(ph.step, layer, ph.phase)] = _CallRecord(
                input=x.copy(), dequant=x_hat.detach().numpy().copy(),
                output=out.detach().numpy().copy(), encode_scale=q.snapshot.encode_scale,
                consumer_decode_scale=cs.decode_scale, paired=cs.paired,
                amax=float(np.max(np.abs(centred))), scale_source_layer=q.snapshot.scale_source_layer,
                encoder_centre=None if q.encoder_centre is None else q.encoder_centre.copy(),
                snapshot_centre=None if q.snapshot.centre is None else q.snapshot.centre.copy())
            return out

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x
        for layer in range(len(self.weights)):
            if self.checkpointing:
                h = checkpoint(self.body, h, layer, use_reentrant=False, context_fn=self.context_fn)
            else:
                h = self.body(h, layer)
        return h

    def params(self) -> list[torch.Tensor]:
        return [*self.weights, *self.biases]


# ------------------------------------------------------------------------------------------------
# results
# ------------------------------------------------------------------------------------------------

_LAYER_ARRAYS = (
    "recomputed", "max_abs_diff", "max_rel_diff", "output_max_abs_diff", "dequant_max_abs_diff",
    "bitwise_equal", "input_bitwise_equal", "finite_masks_equal", "encode_scale_forward",
    "encode_scale_recompute", "consumer_decode_scale_forward", "consumer_decode_scale_recompute",
    "paired_forward", "paired_recompute", "amax_forward", "amax_recompute", "scale_source_forward",
    "scale_source_recompute", "centre_shift", "input_rms", "commits", "history_len",
    "forward_hash", "recompute_hash",
)


@dataclass
class RecomputeResult:
    """Telemetry of one run. Arrays named in `_LAYER_ARRAYS` have shape [steps, layers]; cells of
    steps that did not run (after a failure) or were not recomputed hold NaN / False / -1 / "".

    `max_abs_diff` is the larger of the forward-vs-recompute differences of the layer's
    dequantized GEMM input (`dequant_max_abs_diff`) and its output (`output_max_abs_diff`);
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
    final_weights: list[np.ndarray] = field(default_factory=list)
    # with keep_activations: (step, layer, "forward"|"recompute"|"plain") → input, dequant (the
    # GEMM input), output, and for a centred quantizer encoder_centre / snapshot_centre
    activations: dict[tuple[int, int, str], dict[str, np.ndarray]] = field(default_factory=dict)

    @property
    def steps_run(self) -> int:
        return int(np.sum(self.attempted))

    def contaminated(self, which: str = "forward") -> np.ndarray:
        """[steps, layers] bool: the scale came from another layer's amax."""
        src = self.scale_source_forward if which == "forward" else self.scale_source_recompute
        layer_ids = np.arange(src.shape[1])[None, :]
        return (src >= 0) & (src != layer_ids)

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
        bad = self.recomputed & ~self.bitwise_equal
        if bad.any():
            step, layer = (int(i) for i in np.argwhere(bad)[0])
            return (f"first mismatch: layer {layer}, step {step} "
                    f"({int(bad.sum())} of {n_rec} activations differ)" + tail)
        return f"bitwise identical in all {n_rec} activations" + tail

    def to_dict(self) -> dict[str, Any]:
        steps = []
        for t in range(self.loss.shape[0]):
            rec = self.recomputed[t]
            steps.append({
                "step": t,
                "ran": bool(self.attempted[t]),
                "loss": _num(self.loss[t]),
                "grad_norm": _num(self.grad_norm[t]),
                "nonfinite": bool(self.nonfinite[t]),
                "attempted": bool(self.attempted[t]),
                "applied": bool(self.applied[t]),
                "skipped": bool(self.skipped[t]),
                "state_commits": int(self.state_commits[t]),
                "forward_recompute_max_abs_diff":
                    _num(np.max(self.max_abs_diff[t][rec])) if rec.any() else None,
                "forward_recompute_max_rel_diff":
                    _num(np.max(self.max_rel_diff[t][rec])) if rec.any() else None,
                "forward_recompute_bitwise_equal":
                    bool(np.all(self.bitwise_equal[t][rec])) if rec.any() else None,
                "consumer_paired": bool(np.all(self.paired_forward[t])) if self.attempted[t] else None,
                "recompute_order": self.recompute_order[t],
            })
        return {
            "simulation": "recompute",
            "parameters": dict(self.parameters),
            "verdict": self.verdict(),
            "failure": self.failure,
            "elapsed_s": self.elapsed_s,
            "totals": {
                "optimizer_steps_attempted": int(self.attempted.sum()),
                "optimizer_steps_applied": int(self.applied.sum()),
                "optimizer_steps_skipped": int(self.skipped.sum()),
                "state_commits": int(self.state_commits.sum()),
                "activations_recomputed": int(self.recomputed.sum()),
                "activations_bitwise_equal": int((self.recomputed & self.bitwise_equal).sum()),
                "consumer_calls_unpaired": int((~self.paired_forward[: self.steps_run]).sum()),
            },
            "steps": steps,
            "per_layer": {name: _jsonable(getattr(self, name)) for name in _LAYER_ARRAYS},
        }


def _num(v: Any) -> float | None:
    f = float(v)
    return f if math.isfinite(f) else None


def _jsonable(a: np.ndarray) -> list[Any]:
    if a.dtype.kind == "f":
        return [[_num(v) for v in row] for row in a]
    return a.tolist()  # type: ignore[no-any-return]


def _activation_dict(rec: _CallRecord) -> dict[str, np.ndarray]:
    out = {"input": rec.input, "dequant": rec.dequant, "output": rec.output}
    if rec.encoder_centre is not None:
        out["encoder_centre"] = rec.encoder_centre
    if rec.snapshot_centre is not None:
        out["snapshot_centre"] = rec.snapshot_centre
    return out


def _diffs(f: np.ndarray, r: np.ndarray) -> tuple[float, float, bool, bool]:
    """max |f - r|, max |f - r| / max(|f|, |r|), bitwise equal (uint32), finite masks equal."""
    with np.errstate(invalid="ignore", over="ignore"):
        d = np.abs(f.astype(np.float64) - r.astype(np.float64))
        den = np.maximum(np.abs(f), np.abs(r)).astype(np.float64)
        rel = np.where(den > 0, d / np.where(den > 0, den, 1.0), 0.0)
    finite = bool(np.array_equal(np.isfinite(f), np.isfinite(r)))
    bitwise = bool(np.array_equal(f.view(np.uint32), r.view(np.uint32)))
    def nanmax(a: np.ndarray) -> float:
        a = a[~np.isnan(a)]
        return float(a.max()) if a.size else (math.nan if d.size else 0.0)

    return nanmax(d), nanmax(rel), bitwise, finite


# ------------------------------------------------------------------------------------------------
# the simulation
# ------------------------------------------------------------------------------------------------


def _check_int(name: str, value: Any, lo: int, hi: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an integer, got {value!r}")
    if not lo <= int(value) <= hi:
        raise ValueError(f"{name}={value!r} must be between {lo} and {hi}")
    return int(value)


def resolve_format(fmt: str | FloatFormat) -> FloatFormat:
    """The run's format: a signed float format with a finite max (not E8M0, not an integer grid)."""
    if not isinstance(fmt, (str, FloatFormat)):
        raise TypeError(f"format must be a name or a FloatFormat, got {fmt!r}")
    f = get_format(fmt) if isinstance(fmt, str) else fmt
    if not isinstance(f, FloatFormat) or not f.signed:
        raise ValueError(f"format {getattr(f, 'name', fmt)!r} cannot hold signed activations; use a "
                         f"signed float format such as E4M3FN, E5M2, E2M1, E3M2, E2M3")
    return f


P = ParamSpec("P")
R = TypeVar("R")


def _one_torch_thread(fn: Callable[P, R]) -> Callable[P, R]:
    """Run `fn` with torch's intra-op thread pool set to one thread, restored afterwards. The
    networks are tiny (width 64): with more threads the pool's hand-offs cost 10-25x under load,
    and one thread also makes the float results independent of the machine's core count."""

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        previous = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            return fn(*args, **kwargs)
        finally:
            torch.set_num_threads(previous)

    return wrapper


def warm_up() -> None:
    """Load what the first `torch.utils.checkpoint` call would load lazily (torch._dynamo, about
    1-1.5 s here), so a long-lived process (the app server) can pay it before a user waits."""
    import torch._dynamo  # noqa: F401


@_one_torch_thread
def run_recompute(variant: str = "fixed", layers: int = 4, width: int = 64, steps: int = 20,
                  seed: int = 0, fmt: str | FloatFormat = "E4M3FN", *, batch: int = 16,
                  checkpointing: bool = True, history_len: int = 16, amax_algo: str = "max",
                  margin: int = 0, lr: float = 0.1, rounding: str = "nearest_even",
                  overflow: str = "saturate", keep_activations: bool = False,
                  progress: Callable[[int, int], None] | None = None) -> RecomputeResult:
    """Train the network for `steps` SGD steps with the quantizer `variant` (see VARIANTS) and
    return forward-vs-recompute telemetry per step and layer. Deterministic for a seed.

    `rounding`/`overflow` make the `CastPolicy` (stochastic rounding is refused: replaying random
    bits in recompute is a different hazard). A non-finite loss or gradient skips the update. A
    step that raises (the gate-asymmetry KeyError, a checkpoint error, a concurrency or identity
    error) ends the run and is reported in `failure`.
    """
    if variant not in VARIANTS:
        raise ValueError(f"variant={variant!r} is not one of {', '.join(VARIANTS)}")
    layers = _check_int("layers", layers, 1, 64)
    width = _check_int("width", width, 1, 4096)
    steps = _check_int("steps", steps, 1, 10_000)
    batch = _check_int("batch", batch, 1, 4096)
    history_len = _check_int("history_len", history_len, 1, 100_000)
    margin = _check_int("margin", margin, -64, 64)
    seed = _check_int("seed", seed, 0, 2**63 - 1)
    if not isinstance(lr, (int, float)) or isinstance(lr, bool) or not math.isfinite(lr) or lr < 0:
        raise ValueError(f"lr={lr!r} must be a finite number >= 0")
    if amax_algo not in AMAX_ALGOS:
        raise ValueError(f"amax_algo={amax_algo!r} is not one of {', '.join(AMAX_ALGOS)}")
    if rounding not in _DETERMINISTIC_ROUNDINGS:
        raise ValueError(f"rounding={rounding!r} is not one of {', '.join(_DETERMINISTIC_ROUNDINGS)}")
    f = resolve_format(fmt)
    if overflow not in ("saturate", "nonfinite"):
        raise ValueError(f"overflow={overflow!r} is not one of 'saturate', 'nonfinite'")
    if overflow == "nonfinite" and not (f.has_inf or f.has_nan):
        raise ValueError(f"overflow='nonfinite' needs a format with Inf or NaN; {f.name} has neither")
    policy = CastPolicy(rounding=Rounding(rounding), overflow=Overflow(overflow))

    t0 = time.perf_counter()
    problem = make_problem(seed, layers, width, batch, steps)
    quantizer = VariantQuantizer(variant, layers, f, policy, history_len, amax_algo, margin)
    run = _Run(quantizer, problem, checkpointing)
    shape = (steps, layers)
    fl = {n: np.full(shape, np.nan) for n in (
        "max_abs_diff", "max_rel_diff", "output_max_abs_diff", "dequant_max_abs_diff",
        "encode_scale_forward", "encode_scale_recompute", "consumer_decode_scale_forward",
        "consumer_decode_scale_recompute", "amax_forward", "amax_recompute", "centre_shift",
        "input_rms")}
    bo = {n: np.zeros(shape, dtype=bool) for n in (
        "recomputed", "bitwise_equal", "input_bitwise_equal", "finite_masks_equal",
        "paired_forward", "paired_recompute")}
    it = {n: np.full(shape, -1, dtype=np.int64) for n in (
        "scale_source_forward", "scale_source_recompute")}
    commits = np.zeros(shape, dtype=np.int64)
    history_len_arr = np.zeros(shape, dtype=np.int64)
    hashes = {n: np.full(shape, "", dtype=object) for n in ("forward_hash", "recompute_hash")}
    loss_arr = np.full(steps, np.nan)
    grad_norm = np.full(steps, np.nan)
    nonfinite = np.zeros(steps, dtype=bool)
    attempted = np.zeros(steps, dtype=bool)
    applied = np.zeros(steps, dtype=bool)
    skipped = np.zeros(steps, dtype=bool)
    state_commits = np.zeros(steps, dtype=np.int64)
    recompute_order: list[list[int]] = []
    failure: dict[str, Any] | None = None
    activations: dict[tuple[int, int, str], dict[str, np.ndarray]] = {}

    for t in range(steps):
        run.phase.step = t
        run.recompute_order = []
        n_log = len(quantizer.commit_log)
        attempted[t] = True
        x = torch.from_numpy(problem.inputs[t])
        y = torch.from_numpy(problem.targets[t])
        for p in run.params():
            p.grad = None
        try:
            # early stop is latched when a checkpoint is created: off, so recompute runs the
            # whole body (and its telemetry) rather than stopping at the last saved tensor
            with set_checkpoint_early_stop(False):
                out = run.forward(x)
            loss = torch.mean((out - y) ** 2)
            loss.backward()
        except (KeyError, CheckpointError, ConcurrentStateError, SnapshotIdentityError,
                DoubleCommitError) as exc:
            failure = {"step": t, "type": type(exc).__name__,
                       "message": str(exc.args[0]) if exc.args else str(exc)}
            recompute_order.append(run.recompute_order)
            break
        finally:
            run.phase.phase = "plain"
        loss_arr[t] = float(loss.detach())
        sq = sum(float(torch.sum(p.grad.double() ** 2)) for p in run.params() if p.grad is not None)
        grad_norm[t] = math.sqrt(sq) if math.isfinite(sq) else math.inf
        nonfinite[t] = not (math.isfinite(loss_arr[t]) and math.isfinite(sq))
        if nonfinite[t]:
            skipped[t] = True
        else:
            with torch.no_grad():
                for p in run.params():
                    if p.grad is not None:
                        p -= lr * p.grad
            applied[t] = True
        for (step, layer, _phase) in quantizer.commit_log[n_log:]:
            commits[step, layer] += 1
        state_commits[t] = len(quantizer.commit_log) - n_log
        recompute_order.append(run.recompute_order)
        fwd_phase = "forward" if checkpointing else "plain"
        for i in range(layers):
            history_len_arr[t, i] = len(quantizer.states[i].history)
            fr = run.records.pop((t, i, fwd_phase))
            fl["encode_scale_forward"][t, i] = fr.encode_scale
            fl["consumer_decode_scale_forward"][t, i] = fr.consumer_decode_scale
            fl["amax_forward"][t, i] = fr.amax
            fl["input_rms"][t, i] = float(np.sqrt(np.mean(fr.input.astype(np.float64) ** 2)))
            bo["paired_forward"][t, i] = fr.paired
            it["scale_source_forward"][t, i] = fr.scale_source_layer
            hashes["forward_hash"][t, i] = _tensor_hash(fr.output)
            if keep_activations:
                activations[(t, i, "forward")] = _activation_dict(fr)
            rr = run.records.pop((t, i, "recompute"), None)
            if rr is None:
                continue
            if keep_activations:
                activations[(t, i, "recompute")] = _activation_dict(rr)
            bo["recomputed"][t, i] = True
            d_out, rel_out, eq_out, fin_out = _diffs(fr.output, rr.output)
            d_deq, rel_deq, eq_deq, fin_deq = _diffs(fr.dequant, rr.dequant)
            fl["output_max_abs_diff"][t, i] = d_out
            fl["dequant_max_abs_diff"][t, i] = d_deq
            fl["max_abs_diff"][t, i] = max(d_out, d_deq)
            fl["max_rel_diff"][t, i] = max(rel_out, rel_deq)
            bo["bitwise_equal"][t, i] = eq_out and eq_deq
            bo["finite_masks_equal"][t, i] = fin_out and fin_deq
            bo["input_bitwise_equal"][t, i] = _diffs(fr.input, rr.input)[2]
            fl["encode_scale_recompute"][t, i] = rr.encode_scale
            fl["consumer_decode_scale_recompute"][t, i] = rr.consumer_decode_scale
            fl["amax_recompute"][t, i] = rr.amax
            bo["paired_recompute"][t, i] = rr.paired
            it["scale_source_recompute"][t, i] = rr.scale_source_layer
            hashes["recompute_hash"][t, i] = _tensor_hash(rr.output)
            if rr.encoder_centre is not None and rr.snapshot_centre is not None:
                fl["centre_shift"][t, i] = float(np.max(np.abs(rr.encoder_centre - rr.snapshot_centre)))
        run.records.clear()
        if progress is not None:
            progress(t + 1, steps)

    if failure is not None:
        for (step, layer, _phase) in quantizer.commit_log:
            if step == failure["step"]:
                commits[step, layer] += 1
        state_commits[failure["step"]] = sum(1 for s, _, _ in quantizer.commit_log
                                             if s == failure["step"])
    while len(recompute_order) < steps:
        recompute_order.append([])
    parameters = {
        "variant": variant, "layers": layers, "width": width, "steps": steps, "seed": seed,
        "format": f.name, "batch": batch, "checkpointing": checkpointing,
        "history_len": history_len, "amax_algo": amax_algo, "margin": margin, "lr": float(lr),
        "policy": policy.to_dict(), "torch": torch.__version__,
    }
    return RecomputeResult(
        parameters=parameters, loss=loss_arr, grad_norm=grad_norm, nonfinite=nonfinite,
        attempted=attempted, applied=applied, skipped=skipped, state_commits=state_commits,
        recompute_order=recompute_order, failure=failure, commits=commits,
        history_len=history_len_arr, elapsed_s=time.perf_counter() - t0,
        final_weights=[w.detach().numpy().copy() for w in run.weights],
        activations=activations, **fl, **bo, **it, **hashes)


# ------------------------------------------------------------------------------------------------
# concurrency: two workers, one state
# ------------------------------------------------------------------------------------------------


@dataclass
class ConcurrencyResult:
    """Outcome of two workers quantizing with shared or per-worker delayed state."""

    per_worker_state: bool
    outcomes: dict[str, str]  # worker → "ok" or "ConcurrentStateError: ..."
    commits: dict[str, int]  # state owner → commits

    @property
    def failed_closed(self) -> bool:
        return any(v != "ok" for v in self.outcomes.values())

    def to_dict(self) -> dict[str, Any]:
        return {"per_worker_state": self.per_worker_state, "outcomes": dict(self.outcomes),
                "commits": dict(self.commits), "failed_closed": self.failed_closed}


def simulate_concurrent_entry(per_worker_state: bool = False, fmt: str | FloatFormat = "E4M3FN",
                              seed: int = 0) -> ConcurrencyResult:
    """Worker A enters its state and holds it mid-transition; worker B then enters. With one
    shared state B is refused (`ConcurrentStateError`, recorded as data) and A finishes; with
    per-worker states both commit. The overlap is forced with events, so it is deterministic."""
    f = resolve_format(fmt)
    x = np.random.default_rng(seed).standard_normal((8, 16)).astype(np.float32)
    shared = DelayedScaleState("shared", f.max)
    states = ({"A": DelayedScaleState("workerA", f.max), "B": DelayedScaleState("workerB", f.max)}
              if per_worker_state else {"A": shared, "B": shared})
    inside, release = threading.Event(), threading.Event()
    outcomes: dict[str, str] = {}

    def transition(worker: str, hold: bool) -> None:
        state = states[worker]
        try:
            with state.exclusive(worker):
                if hold:
                    inside.set()
                    release.wait(timeout=10.0)
                snap = begin_logical_quantization(state, 0, 0)
                commit_quant_observation(state, replace(observe_for_future_state(x, snap),
                                                        layer_id=0 if worker == "A" else 1))
            outcomes[worker] = "ok"
        except ConcurrentStateError as exc:
            outcomes[worker] = f"{type(exc).__name__}: {exc}"
        finally:
            if not hold:
                release.set()

    a = threading.Thread(target=transition, args=("A", True))
    a.start()
    inside.wait(timeout=10.0)
    transition("B", False)
    a.join(timeout=10.0)
    owners = {s.owner: s.commits for s in states.values()}
    return ConcurrencyResult(per_worker_state, {k: outcomes[k] for k in sorted(outcomes)}, owners)


# ------------------------------------------------------------------------------------------------
# command line: python -m lowprec.simulations.recompute
# ------------------------------------------------------------------------------------------------


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The run's parameters as options (shared with `lowprec simulate recompute`)."""
    p.add_argument("--variant", default="fixed", choices=list(VARIANTS), help="quantizer design")
    p.add_argument("--layers", type=int, default=4, help="number of checkpointed layers")
    p.add_argument("--width", type=int, default=64, help="layer width")
    p.add_argument("--batch", type=int, default=16, help="batch size")
    p.add_argument("--steps", type=int, default=20, help="training steps")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--format", default="E4M3FN", help="activation format (signed float format)")
    p.add_argument("--history-len", type=int, default=16, help="amax history length")
    p.add_argument("--amax-algo", default="max", choices=list(AMAX_ALGOS))
    p.add_argument("--margin", type=int, default=0, help="scale margin: encode_scale /= 2^margin")
    p.add_argument("--lr", type=float, default=0.1, help="SGD learning rate")
    p.add_argument("--rounding", default="nearest_even", choices=list(_DETERMINISTIC_ROUNDINGS))
    p.add_argument("--overflow", default="saturate", choices=["saturate", "nonfinite"])
    p.add_argument("--no-checkpoint", action="store_true", help="run without activation checkpointing")
    p.add_argument("--json", metavar="OUT", help="write the result as JSON (default: stdout)")
    p.add_argument("--csv", metavar="OUT", help="write one row per (step, layer) as CSV")


def run_from_args(args: argparse.Namespace,
                  progress: Callable[[int, int], None] | None = None) -> RecomputeResult:
    return run_recompute(args.variant, args.layers, args.width, args.steps, args.seed, args.format,
                         batch=args.batch, checkpointing=not args.no_checkpoint,
                         history_len=args.history_len, amax_algo=args.amax_algo,
                         margin=args.margin, lr=args.lr, rounding=args.rounding,
                         overflow=args.overflow, progress=progress)


def write_outputs(result: RecomputeResult, json_path: str | None, csv_path: str | None) -> None:
    """JSON to `json_path` (stdout when None and no CSV is asked) and the per-cell CSV."""
    if json_path or not csv_path:
        write_json(result.to_dict(), json_path)
    if csv_path:
        cols = [n for n in _LAYER_ARRAYS]
        lines = [",".join(["step", "layer", *cols])]
        for t in range(result.loss.shape[0]):
            for i in range(result.recomputed.shape[1]):
                cells = []
                for n in cols:
                    v = getattr(result, n)[t, i]
                    cells.append("" if isinstance(v, float) and not math.isfinite(v) else str(v))
                lines.append(",".join([str(t), str(i), *cells]))
        write_text("\n".join(lines) + "\n", csv_path)


def main(argv: Sequence[str] | None = None) -> int:
    p = ArgumentParser(prog="python -m lowprec.simulations.recompute",
                                description="Recompute divergence under activation checkpointing.")
    add_arguments(p)
    args = p.parse_args(argv)
    try:
        result = run_from_args(args)
    except (ValueError, TypeError) as exc:
        return error_exit(p.prog, exc)
    write_outputs(result, args.json, args.csv)
    print(result.verdict(), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
