"""The delayed-scaling quantizer state machine of the recompute simulation, and its designs.

Torch-free (numpy, `lowprec.formats` and `simulations.scaling.delayed`): this module owns what a stateful quantizer does when
a layer body runs — encode, observe, commit — and nothing about networks or autograd
(`recompute.harness` drives it from inside `torch.utils.checkpoint`).

Scale convention: Transformer Engine's delayed scaling, as the one model of it computes it
(`simulations.scaling.delayed.DelayedScaling`, which the spike simulation uses too): `encode_scale =
float32(F · 2^-margin) / amax` in float32 with `F = fmt.max` and `amax` the maximum (`"max"`) or
newest (`"most_recent"`) entry of an amax history; `decode_scale = float32(1 / encode_scale)`; codes
are `encode(x · encode_scale)` and the GEMM consumer multiplies the decoded codes by `decode_scale`.
Scales are float32 values so numpy and torch multiply by the same number. Rounding is the run's
`CastPolicy`.

The corrected design follows the separated API of the seed write-up: begin a logical quantization
(an immutable `QuantSnapshot` with owner, layer, logical step and scales), quantize with the
snapshot, observe, commit one state transition; recompute reuses the snapshot and commits nothing.
Each design is one `VariantQuantizer` subclass (`QUANTIZERS`, keyed by the name lessons, widget and
CLI use); each defect class breaks one rule, and its docstring says which and what signature the
break leaves in the telemetry. Layers and steps are counted from 0.
"""

from __future__ import annotations

import contextlib
import inspect
import threading
from dataclasses import dataclass, field
from typing import ClassVar, Iterator

import numpy as np

from lowprec.formats import BF16, CastPolicy, FloatFormat, Rounding, decode, encode, get_format

from ..scaling.delayed import AMAX_ALGOS, DelayedScaling, check_algo

__all__ = [
    "AMAX_ALGOS",
    "DETERMINISTIC_ROUNDINGS",
    "QUANTIZERS",
    "VARIANTS",
    "BF16Control",
    "ConcurrentStateError",
    "ConsumeAfterAdvance",
    "ConsumerScaling",
    "DelayedScaleState",
    "DoubleCommitError",
    "FixedQuantizer",
    "GateAsymmetry",
    "GateAsymmetryRepaired",
    "HistoryEntry",
    "PhaseInfo",
    "QuantObservation",
    "QuantSnapshot",
    "QuantizedTensor",
    "RecomputeMutates",
    "SharedState",
    "SharedStateSnapshot",
    "SnapshotIdentityError",
    "StaleCentre",
    "VariantQuantizer",
    "activation_formats",
    "begin_logical_quantization",
    "commit_quant_observation",
    "dequantize_paired",
    "make_quantizer",
    "observe_for_future_state",
    "quantize_with_snapshot",
    "resolve_format",
]

#: the roundings a run may use: stochastic rounding is left out (replaying random bits in
#: recompute is a different hazard from the one simulated here)
DETERMINISTIC_ROUNDINGS = tuple(r.value for r in Rounding if r is not Rounding.STOCHASTIC)


class ConcurrentStateError(RuntimeError):
    """Two workers entered one delayed-scaling state at once (fail closed)."""


class SnapshotIdentityError(RuntimeError):
    """A consumer was handed a snapshot that belongs to another step, layer or owner."""


class DoubleCommitError(RuntimeError):
    """A second state transition for one (logical step, layer) was committed."""


# ------------------------------------------------------------------------------------------------
# formats
# ------------------------------------------------------------------------------------------------


def activation_formats() -> tuple[str, ...]:
    """Names of the formats a run may quantize activations to: the signed float formats."""
    from lowprec.formats import CORE_FORMATS, FloatFormat

    return tuple(f.name for f in CORE_FORMATS if isinstance(f, FloatFormat) and f.signed)


def resolve_format(fmt: str | FloatFormat) -> FloatFormat:
    """The run's format: a signed float format with a finite max (not E8M0, not an integer grid)."""
    if not isinstance(fmt, (str, FloatFormat)):
        raise TypeError(f"format must be a name or a FloatFormat, got {fmt!r}")
    f = get_format(fmt) if isinstance(fmt, str) else fmt
    if not isinstance(f, FloatFormat) or not f.signed:
        raise ValueError(f"format {getattr(f, 'name', fmt)!r} cannot hold signed activations; use a "
                         f"signed float format such as E4M3FN, E5M2, E2M1, E3M2, E2M3")
    return f


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


class DelayedScaleState(DelayedScaling[HistoryEntry]):
    """Live delayed-scaling state of one owner: the one delayed-scaling model
    (`delayed.DelayedScaling`: amax history, encode scale, TE's update rule) over `HistoryEntry`s,
    plus the layer whose amax set the scale, an optional centre and a commit counter. Use
    `exclusive(worker)` around transitions: a second worker entering while another is inside
    raises `ConcurrentStateError` instead of racing."""

    def __init__(self, owner: str, fmt_max: float, history_len: int = 16, amax_algo: str = "max",
                 margin: int = 0, centred: bool = False) -> None:
        check_algo(amax_algo, "amax_algo")
        super().__init__(fmt_max, history_len, amax_algo, margin)
        self.owner = owner
        self.centred = centred
        self.centre: np.ndarray | None = None
        self.commits = 0
        self.committed: set[tuple[int, int]] = set()
        self._lock = threading.Lock()
        self._holder: str | None = None

    def _amax_of(self, entry: HistoryEntry) -> float:
        return entry.amax

    @property
    def amax_algo(self) -> str:
        """The history's reduction (`algo` of the model): "max" or "most_recent"."""
        return self.algo

    @property
    def scale_source_layer(self) -> int:
        """The layer whose amax set the held encode scale (-1: the initial scale)."""
        return -1 if self.source is None else self.source.layer_id

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

    def scale_from_history(self) -> tuple[float, int]:
        """(encode scale, layer whose amax set it) as the history now says (`next_scale`): TE's
        `float32(F · 2^-margin) / amax` from the first maximal (or the newest) entry; the held scale
        where the rule keeps it (empty history, a zero or non-finite amax, a quotient rounding to 0);
        a quotient beyond float32 (a wide format such as BF16 with amax < 1) clamped to float32's max."""
        scale, source = self.next_scale()
        return scale, -1 if source is None else source.layer_id


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
    with np.errstate(over="ignore"):  # a float32 product beyond range is Inf, as in hardware
        scaled = (centred * np.float32(snapshot.encode_scale)).astype(np.float32)
    codes = encode(scaled, fmt, policy)
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
    state.record(HistoryEntry(observation.amax, observation.layer_id, observation.logical_step))
    if state.centred and observation.centre_estimate is not None:
        state.centre = observation.centre_estimate.copy()
    state.commits += 1
    state.committed.add(key)


def dequantize_paired(q: QuantizedTensor) -> np.ndarray:
    """What a correct consumer reads: decoded codes × the snapshot's decode scale (+ its centre)."""
    out = (q.values * np.float32(q.snapshot.decode_scale)).astype(np.float32)
    return out if q.snapshot.centre is None else (out + q.snapshot.centre).astype(np.float32)


# ------------------------------------------------------------------------------------------------
# the designs: one quantizer class per variant
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
    """The quantizer of one design for a network of `layers` layers, owning every state: `quantize`
    runs the encode and any state transitions of one body call, `consumer_scaling` says what the
    GEMM consumer reads. Every commit is logged as (step, layer, phase).

    Subclasses set `name` (the variant's public name) and override `quantize` or one of the hooks;
    the first paragraph of a subclass's docstring is its one-line description (`VARIANTS`)."""

    name: ClassVar[str] = ""
    #: one state object for all layers instead of one per layer
    shares_state: ClassVar[bool] = False
    #: states carry an additive centre (a mean-centred quantizer)
    centred: ClassVar[bool] = False
    #: the consumer asserts the snapshot's step, layer and owner (SnapshotIdentityError)
    checks_identity: ClassVar[bool] = False
    #: the layer body enters an inner autocast-like switch (the gate variants' scenario)
    inner_switch: ClassVar[bool] = False
    #: state transitions one logical step makes per layer when the design is followed
    commits_per_layer: ClassVar[int] = 1
    #: the format this design casts to whatever the run's format is (None: the run's format)
    fixed_format: ClassVar[FloatFormat | None] = None

    def __init__(self, layers: int, fmt: FloatFormat, policy: CastPolicy, history_len: int = 16,
                 amax_algo: str = "max", margin: int = 0) -> None:
        self.fmt = fmt
        self.policy = policy
        if self.shares_state:
            shared = DelayedScaleState("shared", fmt.max, history_len, amax_algo, margin)
            self.states = [shared] * layers
        else:
            self.states = [DelayedScaleState(f"layer{i}", fmt.max, history_len, amax_algo, margin,
                                             centred=self.centred) for i in range(layers)]
        self.commit_log: list[tuple[int, int, str]] = []  # (step, layer, phase) of every commit
        self.worker = "main"

    @classmethod
    def description(cls) -> str:
        """The first paragraph of the class docstring, on one line."""
        doc = inspect.cleandoc(cls.__doc__ or cls.name)
        return " ".join(doc.split("\n\n")[0].split())

    @property
    def cast_format(self) -> FloatFormat:
        """The format the layer inputs are cast to: the run's, or the design's own (`fixed_format`)."""
        return self.fixed_format if self.fixed_format is not None else self.fmt

    def expected_commits(self, layers: int) -> int:
        """State commits one logical step should make in a network of `layers` layers."""
        return self.commits_per_layer * layers

    # -- the state operations, each inside the state's exclusive section -------------------------
    def _begin(self, layer: int, step: int) -> QuantSnapshot:
        with self.states[layer].exclusive(self.worker):
            return begin_logical_quantization(self.states[layer], step, layer)

    def _commit(self, x: np.ndarray, snap: QuantSnapshot, layer: int, phase: PhaseInfo,
                allow_repeat: bool = False) -> None:
        state = self.states[layer]
        with state.exclusive(self.worker):
            commit_quant_observation(state, observe_for_future_state(x, snap),
                                     allow_repeat=allow_repeat)
        self.commit_log.append((phase.step, layer, phase.phase))

    # -- one body call ------------------------------------------------------------------------------
    def quantize(self, x: np.ndarray, layer: int, phase: PhaseInfo) -> QuantizedTensor:
        """Encode layer `layer`'s input `x` (float32, [batch, width]) for this body call."""
        raise NotImplementedError

    def consumer_scaling(self, q: QuantizedTensor, layer: int, phase: PhaseInfo) -> ConsumerScaling:
        """What the GEMM consumer of layer `layer` uses to read `q`: the snapshot's descale and
        centre (paired unless the encoder subtracted another centre). With `checks_identity`, a
        snapshot of another step, layer or owner raises `SnapshotIdentityError`."""
        snap = q.snapshot
        if self.checks_identity:
            owner = self.states[layer].owner
            if snap.logical_step != phase.step or snap.layer_id != layer or snap.owner != owner:
                raise SnapshotIdentityError(
                    f"layer {layer} at step {phase.step} (owner {owner!r}) was handed the snapshot "
                    f"of layer {snap.layer_id}, step {snap.logical_step}, owner {snap.owner!r}")
        paired = q.encoder_centre is None or snap.centre is None or bool(
            np.array_equal(q.encoder_centre, snap.centre))
        return ConsumerScaling(snap.decode_scale, snap.centre, paired)


class FixedQuantizer(VariantQuantizer):
    """per-layer state; the true forward freezes a snapshot before advancing the live state once;
    codes and consumer use the snapshot; recompute reuses it and mutates nothing

    The corrected design. Signature: forward and recompute bitwise identical in every layer and
    step, exactly one commit per layer per logical step, every consumer paired with its codes,
    every scale sized from the layer's own amax history; the gradients equal a run without
    checkpointing bit for bit.
    """

    name = "fixed"
    checks_identity = True

    def __init__(self, layers: int, fmt: FloatFormat, policy: CastPolicy, history_len: int = 16,
                 amax_algo: str = "max", margin: int = 0) -> None:
        super().__init__(layers, fmt, policy, history_len, amax_algo, margin)
        self.snapshots: dict[tuple[int, int], QuantSnapshot] = {}  # (step, layer) → the forward's

    def _encoder_centre(self, layer: int) -> np.ndarray | None:
        """The centre the encoder subtracts: the snapshot's (None here)."""
        return None

    def quantize(self, x: np.ndarray, layer: int, phase: PhaseInfo) -> QuantizedTensor:
        key = (phase.step, layer)
        if phase.phase == "recompute":  # reuse the forward's snapshot, commit nothing
            return quantize_with_snapshot(x, self.snapshots[key], self.fmt, self.policy,
                                          self._encoder_centre(layer))
        snap = self._begin(layer, phase.step)
        q = quantize_with_snapshot(x, snap, self.fmt, self.policy, self._encoder_centre(layer))
        self._commit(x, snap, layer, phase)
        self.snapshots[key] = snap
        return q


class ConsumeAfterAdvance(FixedQuantizer):
    """the GEMM consumer reads the live descale after the state was advanced for the next call:
    wrong even without checkpointing, and invisible to a forward-vs-recompute comparison
    (recompute repeats the read)

    Signature: `paired_forward` false wherever the live descale moved past the codes' scale (at
    least once per step; with a growing amax in every call); forward and recompute stay bitwise
    identical, so only a pairing check finds it.
    """

    name = "consume-after-advance"
    checks_identity = False

    def consumer_scaling(self, q: QuantizedTensor, layer: int, phase: PhaseInfo) -> ConsumerScaling:
        live = self.states[layer]
        return ConsumerScaling(live.decode_scale, None, live.decode_scale == q.snapshot.decode_scale)


class RecomputeMutates(VariantQuantizer):
    """recompute quantizes with the live state, records amax and advances the history a second
    time per step

    Signature: two commits per layer per step (the history fills twice as fast); forward and
    recompute differ from step 0 (the forward used the step's scale, the recompute the advanced
    one) by two roundings of the same value, or by clipping; healthy without checkpointing, where
    it equals the fixed design bit for bit.
    """

    name = "recompute-mutates"

    def quantize(self, x: np.ndarray, layer: int, phase: PhaseInfo) -> QuantizedTensor:
        snap = self._begin(layer, phase.step)  # the live state, whatever phase this is
        q = quantize_with_snapshot(x, snap, self.fmt, self.policy)
        self._commit(x, snap, layer, phase, allow_repeat=True)
        return q


class SharedState(VariantQuantizer):
    """one state object for all layers; recompute (in reverse layer order) reads the live shared
    state, i.e. other layers' amax values

    Signature: recompute runs layers last to first, and its scales come from another layer's
    amax (`scale_source_recompute` ≠ the layer); forward and recompute differ; with
    `overflow=nonfinite` a large-amax layer read with a small-amax layer's scale overflows to
    non-finite values and the optimizer steps are skipped.
    """

    name = "shared-state"
    shares_state = True

    def quantize(self, x: np.ndarray, layer: int, phase: PhaseInfo) -> QuantizedTensor:
        snap = self._begin(layer, phase.step)  # the live shared state
        q = quantize_with_snapshot(x, snap, self.fmt, self.policy)
        if phase.phase != "recompute":
            self._commit(x, snap, layer, phase)
        return q


class SharedStateSnapshot(FixedQuantizer):
    """shared state with a snapshot added on top: forward and recompute agree, but every snapshot
    carries the wrong owner's scale

    Signature: forward and recompute bitwise identical (a forward-vs-recompute check passes), yet
    `scale_source_forward` names another layer for every layer but the first: the snapshot
    faithfully preserves the wrong owner.
    """

    name = "shared-state-snapshot"
    shares_state = True


class StaleCentre(FixedQuantizer):
    """mean-centred quantizer with a persistent additive centre; the snapshot pairs scale and centre
    with the consumer, but the encoder reads the live centre, which recompute finds already advanced

    Signature: an additive error in every recomputed element, equal to the centre shift (comparable
    to the data's own RMS, not a rounding), `centre_shift` > 0 and `paired_recompute` false.
    """

    name = "stale-centre"
    centred = True
    checks_identity = False

    def _encoder_centre(self, layer: int) -> np.ndarray | None:
        return self.states[layer].centre  # the live centre: advanced by the time recompute runs

    def quantize(self, x: np.ndarray, layer: int, phase: PhaseInfo) -> QuantizedTensor:
        if phase.phase != "recompute" and self.states[layer].centre is None:
            self.states[layer].centre = np.zeros(x.shape[1], dtype=np.float32)  # first call
        return super().quantize(x, layer, phase)


class BF16Control(VariantQuantizer):
    """no low-precision quantization: a stateless BF16 cast, the control

    Signature: forward and recompute bitwise identical and no state commits at all; a divergence
    that shows here is generic recompute nondeterminism, not a quantizer defect.
    """

    name = "bf16-control"
    commits_per_layer = 0
    fixed_format = BF16

    def quantize(self, x: np.ndarray, layer: int, phase: PhaseInfo) -> QuantizedTensor:
        snap = QuantSnapshot("none", layer, phase.step, "input", 1.0, 1.0, -1)
        codes = encode(x, self.cast_format, CastPolicy())
        return QuantizedTensor(codes, decode(codes, self.cast_format), snap, None)


class GateAsymmetry(VariantQuantizer):
    """stash guarded by a predicate sampled at checkpoint entry, restore guarded by an inner
    autocast-like switch read at run time: the restore finds nothing

    Signature: the first backward fails (`KeyError`: no stashed snapshot for step 0, layer 0),
    reported as the run's `failure`; no optimizer step is applied. Without checkpointing the run
    is healthy.
    """

    name = "gate-asymmetry"
    checks_identity = True
    inner_switch = True

    def __init__(self, layers: int, fmt: FloatFormat, policy: CastPolicy, history_len: int = 16,
                 amax_algo: str = "max", margin: int = 0) -> None:
        super().__init__(layers, fmt, policy, history_len, amax_algo, margin)
        self.stash: dict[tuple[int, int], QuantSnapshot] = {}  # (step, layer) → for recompute

    def _stash_gate(self, phase: PhaseInfo) -> bool:
        """Whether the forward stashes its snapshot: the switch as latched at checkpoint entry."""
        return phase.in_region and phase.latched_at_entry

    def quantize(self, x: np.ndarray, layer: int, phase: PhaseInfo) -> QuantizedTensor:
        step, key = phase.step, (phase.step, layer)
        recompute = phase.phase == "recompute"
        if recompute and phase.autocast_live:  # restore gate: read at run time
            if key not in self.stash:
                raise KeyError(
                    f"no stashed quantization snapshot for logical step {step}, layer {layer}: "
                    f"the stash gate (sampled at checkpoint entry) was off, the restore gate "
                    f"(read live) is on")
            return quantize_with_snapshot(x, self.stash.pop(key), self.fmt, self.policy)
        snap = self._begin(layer, step)
        q = quantize_with_snapshot(x, snap, self.fmt, self.policy)
        if not recompute:
            self._commit(x, snap, layer, phase)
            if self._stash_gate(phase):
                self.stash[key] = snap
        return q


class GateAsymmetryRepaired(GateAsymmetry):
    """the same inner switch, but stash and restore both read the live predicate, so the snapshot
    is stashed and restored

    Signature: as the fixed design: bitwise identical forward and recompute, one commit per layer
    per step.
    """

    name = "gate-asymmetry-repaired"

    def _stash_gate(self, phase: PhaseInfo) -> bool:
        return phase.in_region and phase.autocast_live


#: every design by its public name (lessons, widget, CLI), the corrected one first
QUANTIZERS: dict[str, type[VariantQuantizer]] = {cls.name: cls for cls in (
    FixedQuantizer, ConsumeAfterAdvance, RecomputeMutates, SharedState, SharedStateSnapshot,
    StaleCentre, BF16Control, GateAsymmetry, GateAsymmetryRepaired)}
#: every design's one-line description, by name
VARIANTS: dict[str, str] = {name: cls.description() for name, cls in QUANTIZERS.items()}


def make_quantizer(variant: str, layers: int, fmt: FloatFormat, policy: CastPolicy,
                   history_len: int = 16, amax_algo: str = "max", margin: int = 0) -> VariantQuantizer:
    """The quantizer of design `variant` (a key of QUANTIZERS)."""
    if variant not in QUANTIZERS:
        raise ValueError(f"variant={variant!r} is not one of {', '.join(QUANTIZERS)}")
    return QUANTIZERS[variant](layers, fmt, policy, history_len, amax_algo, margin)
