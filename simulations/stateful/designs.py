"""The designs of the stateful-scaling simulation: who owns a delayed-scaling state, when it may
advance and what each consumer reads, as data.

Every design runs the same machine (`engine`): the one delayed-scaling model
(`simulations.scaling.delayed.DelayedScaling`, Transformer Engine's rule) per owner, an owner being one
(tensor role, layer, rank) of a two-layer network trained with gradient accumulation over
microbatches and sharded over ranks. A design differs from the corrected baseline in the few rules
below, each a class attribute whose values are named in one tuple and explained where it is declared:

- `accumulate` (ACCUMULATE): what one update window stages and when the owner advances;
- `idle` (IDLE): what an owner whose tensor was not cast in a window records;
- `reduce` (REDUCE): over which ranks the staged amax of the gathered input is reduced;
- `cache_weights`, `weight_read` (WEIGHT_READS): FP8 weights cast once per optimizer step
  (`is_first_microbatch`) and the decode scale a consumer of the cached codes reads;
- `recompute` (RECOMPUTES): what the activation-checkpointing recompute in the backward casts with.

One class per design (`DESIGNS`, keyed by the name the CLI, widget and lesson use); its docstring's
first paragraph is its one-line description, a paragraph starting "Source:" names the issue or pull
request and what Transformer Engine does (checked against TE's source and documentation), and a
paragraph starting "Signature:" says what the telemetry shows. Designs come in families
(`SCENARIOS`): the defective forms of a family and the corrected form that removes their signature.
"""

from __future__ import annotations

import inspect
from typing import ClassVar

__all__ = ["ACCUMULATE", "DESIGNS", "IDLE", "RECOMPUTES", "REDUCE", "SCENARIOS", "WEIGHT_READS", "Design",
           "contract", "designs_of", "get_design"]

#: the families of designs, in the order the widget and the lesson walk them
SCENARIOS = ("accumulation", "skipped-module", "distributed", "cached-weight", "autocast-recompute")

#: what one update window stages for an owner, and how often the owner advances:
#: "each" — every microbatch is a window: its amax is inserted and the scale advances after it
#: (Transformer Engine's PyTorch modules, one `autocast` per microbatch: the history counts microbatches);
#: "max" — the optimizer step is the window: one insertion of max_k amax_k over its microbatches,
#: one advance (Levanter after marin #8360, Flax's `fp32_max_grad`);
#: "last" — the optimizer step is the window, but the insertion holds the last microbatch's amax
#: only (a gradient-carried state overwritten by each microbatch: marin #7659)
ACCUMULATE = ("each", "max", "last")
#: what an owner whose tensor no rank of its group cast in a window records:
#: "hold" — nothing: the history does not roll and the scale stays (TE since #825: the bulk
#: update kernel rolls only where the staged amax is non-zero);
#: "zero" — the history rolls and records 0 (TE between #575 and #825);
#: "stale" — the history rolls and records the staging slot, never cleared: the previous window's amax
IDLE = ("hold", "zero", "stale")
#: over which ranks the staged amax of the layer-0 input — cast shard by shard and all-gathered in
#: FP8, so every rank decodes every shard — is reduced (MAX) before it is inserted:
#: "owner" — all ranks, the owner of that one scale; every other role is consumed by the rank that
#: cast it and keeps its local amax (TE: `reduce_amax=True` with `amax_reduction_group` the
#: ranks the tensor is sharded over);
#: "none" — no reduction (`reduce_amax=False`): each rank sizes its shard's scale from its own amax;
#: "subgroup" — consecutive groups of `group` ranks (a reduction group smaller than the owner)
REDUCE = ("owner", "none", "subgroup")
#: what a consumer of cached FP8 weight codes multiplies them by:
#: "pair" — the decode scale stored with the codes when they were cast (TE 2.x: the cached weight
#: is a quantized tensor holding its own `scale_inv`);
#: "live" — the owner's current decode scale, which may have advanced since the cast (TE 1.7, #1047)
WEIGHT_READS = ("pair", "live")
#: what the backward's recompute of a checkpointed layer casts with:
#: "replay" — the forward's codes and decode scales, state untouched (TE's stash and restore);
#: "recast-weight" — the activations replayed, but the weight cast again from the master copy
#: with the owner's live scale (a recompute under another cache state: TE #539);
#: "bf16" — every operand cast to BF16, no scale, no state (the recompute ran outside the FP8
#: autocast: Megatron-LM #7538)
RECOMPUTES = ("replay", "recast-weight", "bf16")


class Design:
    """The corrected baseline: every rule as the owner of the state needs it (never registered
    itself: each registered design names its family and overrides the rules it breaks)."""

    name: ClassVar[str] = ""
    scenario: ClassVar[str] = ""
    defective: ClassVar[bool] = False
    accumulate: ClassVar[str] = "each"
    idle: ClassVar[str] = "hold"
    reduce: ClassVar[str] = "owner"
    cache_weights: ClassVar[bool] = False
    weight_read: ClassVar[str] = "pair"
    recompute: ClassVar[str] = "replay"
    #: the tensor the widget and the summary follow: "x0" (layer-0 input), "h1" (layer-1 input),
    #: "w0" (layer-0 weight)
    focus: ClassVar[str] = "x0"
    #: the layer-1 module (the expert) runs only on steps t with t % run_every == 0
    expert: ClassVar[bool] = False

    @classmethod
    def _paragraphs(cls) -> list[str]:
        return [" ".join(p.split()) for p in inspect.cleandoc(cls.__doc__ or cls.name).split("\n\n")]

    @classmethod
    def description(cls) -> str:
        """The first paragraph of the docstring, on one line."""
        return cls._paragraphs()[0]

    @classmethod
    def source(cls) -> str:
        """The paragraph starting "Source:" (without the lead)."""
        return cls._lead("Source:")

    @classmethod
    def signature(cls) -> str:
        """The paragraph starting "Signature:" (without the lead)."""
        return cls._lead("Signature:")

    @classmethod
    def _lead(cls, lead: str) -> str:
        for p in cls._paragraphs():
            if p.startswith(lead):
                return p[len(lead):].strip()
        return ""

    @classmethod
    def rules(cls) -> dict[str, object]:
        """The design's rules by name (what the JSON's `design` holds)."""
        return {"accumulate": cls.accumulate, "idle": cls.idle, "reduce": cls.reduce,
                "cache_weights": cls.cache_weights, "weight_read": cls.weight_read,
                "recompute": cls.recompute, "expert": cls.expert}


# ------------------------------------------------------------------------------------------------
# gradient accumulation: what the history records per optimizer step
# ------------------------------------------------------------------------------------------------


class AccumLastMicrobatch(Design):
    """gradient accumulation keeps only the last microbatch's amax: one history insertion per
    optimizer step, holding the last microbatch's amax instead of the window's maximum

    Source: marin-community/marin #7659 ("Gradient accumulation drops the fp8 amax history to the
    last microbatch"), fixed by #8360: Levanter carries the FP8 amax history and scale as
    gradient-carried leaves, and the accumulation over microbatches replaced them with the last
    microbatch's. Transformer Engine's PyTorch modules do not do this: each microbatch's autocast
    inserts its own amax (design `accum-per-microbatch`).

    Signature: the amax inserted at each step equals the last microbatch's, below the maximum over
    the window whenever an earlier microbatch spiked; a spike that recurs in an earlier microbatch is
    clipped at every occurrence, never only at the first; one insertion and one scale advance per
    owner per step.
    """

    name = "accum-last-microbatch"
    scenario = "accumulation"
    defective = True
    accumulate = "last"


class AccumWindowMax(Design):
    """gradient accumulation reduces the microbatches' amaxes with max: one history insertion per
    optimizer step holding the maximum over the window, one scale advance

    Source: marin-community/marin #8360 (fixes #7659): FP8 state is accumulated with a
    type-defined reduction, the maximum of the microbatches' amax histories, and kept out of
    gradient averaging; NVIDIA JAX-Toolbox documents the same for Flax (`fp32_max_grad`: "perform the
    max operation for gradient accumulation"). The scale is held for the whole window.

    Signature: every inserted amax equals the maximum over the step's microbatches; a recurring
    spike is clipped at its first occurrence only (a delayed scale cannot see a spike before it has
    recorded one); one insertion and one advance per owner per step.
    """

    name = "accum-window-max"
    scenario = "accumulation"
    accumulate = "max"


class AccumPerMicrobatch(Design):
    """every microbatch is its own window: one insertion and one scale advance per microbatch, so
    the history counts microbatches, not optimizer steps

    Source: Transformer Engine (PyTorch): the amax of each quantized tensor is staged in position 0
    of the module's `amax_history` and the update (reduction, roll, new scale) runs when the
    outermost `te.autocast` exits; Megatron-LM enters one per microbatch. An `amax_history_len` of H
    then spans H microbatches (H / M optimizer steps with M microbatches), as the discussion of
    NVIDIA/TransformerEngine #825 notes ("if the amax history length didn't match the number of grad
    accumulation steps").

    Signature: M insertions and M advances per owner per step; no amax lost; the scale may change
    between the microbatches of one step (which the cached-weight designs depend on).
    """

    name = "accum-per-microbatch"
    scenario = "accumulation"
    accumulate = "each"


# ------------------------------------------------------------------------------------------------
# a module that did not run (an expert without tokens, a pipeline bubble)
# ------------------------------------------------------------------------------------------------


class SkipRollsZero(Design):
    """a module that did not run still rolls its history, recording 0: the window counts steps,
    not observations, and the scale can change in a step where the module cast nothing

    Source: NVIDIA/TransformerEngine #825 ("Avoid amax roll for non-run modules", fixes #814): after
    the amax-reduction rework of #575 every registered module's history rolled at each update; a
    module that had not run rolled a zero in. #814 saw it as two identical models, trained one after
    the other in one script, ending with different amax histories (the first model's modules, no
    longer run, were still rolled); the review of #786 as an FP8 scale that could change in a step
    where the FP8 data does not change.

    Signature: one insertion per owner per window whether or not the module ran, zeros in the history;
    the scale changes on idle steps when a real entry leaves the window; after H idle windows the
    history holds no observation at all.
    """

    name = "skip-rolls-zero"
    scenario = "skipped-module"
    defective = True
    idle = "zero"
    expert = True
    focus = "h1"


class SkipRollsStale(Design):
    """a module that did not run rolls its history with the stale amax left in the staging slot:
    the last observation is recorded again at every idle window

    Source: the staging-slot contract of Transformer Engine's delayed scaling (position 0 of
    `amax_history` holds the current amax and is zeroed after the update; "Fix bug in historical
    window quantization", Azure/MS-AMP #17: "the amax should be reset to 0 before the next
    iteration"). A staging slot that is not cleared turns a window without a cast into a copy of
    the previous one.

    Signature: insertions on idle windows that repeat the last real amax; a spike observed before an
    idle stretch stays in the history for H windows after the stretch ends, so the scale stays
    reduced long after the data came back down.
    """

    name = "skip-rolls-stale"
    scenario = "skipped-module"
    defective = True
    idle = "stale"
    expert = True
    focus = "h1"


class SkipHolds(Design):
    """a module that did not run leaves its state alone: no insertion, no advance, the scale held

    Source: NVIDIA/TransformerEngine #825 and TE's delayed-scaling documentation: "if no rank executes
    a module, its history is not rotated and scale remains unchanged" (the bulk update kernel rolls
    the history only where the reduced staged amax is non-zero); the autocast must still be entered
    and exited on every rank, because the update is a collective.

    Signature: insertions only in windows where the module ran, none on idle steps; the scale
    changes only after a window that cast the tensor; the history holds H real observations.
    """

    name = "skip-holds"
    scenario = "skipped-module"
    expert = True
    focus = "h1"


# ------------------------------------------------------------------------------------------------
# distributed amax: ranks holding shards of one tensor
# ------------------------------------------------------------------------------------------------


class DistLocalAmax(Design):
    """no amax reduction: each rank sizes the scale of its shard of the gathered layer input from
    its own amax history, and every rank decodes all gathered shards with its own scale

    Source: Transformer Engine's `DelayedScaling(reduce_amax=False)`; its documentation states the
    reduction is required for sequence and context parallelism, and NVIDIA/TransformerEngine #74
    explains why: the input is gathered in FP8 after the cast, so the ranks must share one scale
    (#335: `scale_inv` not synchronised in the tensor-parallel group, a diverging loss with SP).

    Signature: the ranks' scales for one logical tensor differ by the ratio of their shard amaxes
    (A_b / A_a for ranks a, b); in the gathered GEMM, the rows of shard s computed on rank c are
    scaled by E_s / E_c; a spike one rank sees is clipped only in its own shard.
    """

    name = "dist-local-amax"
    scenario = "distributed"
    defective = True
    reduce = "none"


class DistSubgroup(Design):
    """the amax is reduced over a group smaller than the scale's owner: ranks agree within each
    reduction group and disagree across groups

    Source: Transformer Engine's `amax_reduction_group` (formerly `fp8_group`) left at a subgroup,
    such as the tensor-parallel group while the sequence is also split over context-parallel ranks
    (TE's option of a TP-only reduction, #431, made that a setting). TE's documentation recommends
    "reducing amax across all GPUs where the tensor is sharded"; seed 002: "if ranks share a scale,
    reduce the required maxima over the intended group".

    Signature: equal scales within each group of `group` ranks, scales that differ by the ratio of
    the groups' amaxes across groups; the gathered GEMM's rows of another group's shards mis-scaled.
    """

    name = "dist-subgroup"
    scenario = "distributed"
    defective = True
    reduce = "subgroup"


class DistOwnerGroup(Design):
    """the gathered input's amax is reduced over every rank that holds a shard (the owner of its
    one scale); tensors a rank casts and consumes alone keep their local amax

    Source: Transformer Engine: `DelayedScaling(reduce_amax=True)` with `amax_reduction_group` the
    ranks the tensor is sharded over (NVIDIA/TransformerEngine #74 made the reduction over the
    tensor-parallel group compulsory under sequence parallelism); the bulk update kernel takes the
    reduced amax, so every rank
    inserts max_r A_r and computes the same scale. (TE reduces every tensor of the autocast in that
    group; a tensor consumed only by the rank that cast it does not need it, which the layer-1 input
    shows.)

    Signature: one scale for the gathered tensor on every rank, float32(F · 2^-margin / max over
    ranks and history); every decode paired with its encode; the GEMM output free of mis-scaling.
    """

    name = "dist-owner-group"
    scenario = "distributed"


# ------------------------------------------------------------------------------------------------
# cached FP8 weights across microbatches (is_first_microbatch)
# ------------------------------------------------------------------------------------------------


class CacheLiveScale(Design):
    """FP8 weights cast once per optimizer step and cached; the consumer of the cached codes reads
    the owner's live decode scale, which advanced after the first microbatch

    Source: NVIDIA/TransformerEngine #1047 (TE 1.7): with `is_first_microbatch` caching, the weight
    scale was updated in every microbatch (after #575), so microbatches 1 … M-1 read a new
    `scale_inv` with codes cast under the old scale; the first step, whose initial scale is 1, gives
    the largest error. TE 2.x keeps the scale with the cached codes (`cache-paired`).

    Signature: unpaired weight reads on microbatches ≥ 1 of every step whose weight scale moved
    after microbatch 0 (at least step 0); the layer-0 output off by the ratio of the two scales.
    """

    name = "cache-live-scale"
    scenario = "cached-weight"
    defective = True
    cache_weights = True
    weight_read = "live"
    focus = "w0"


class CacheRecomputeRecast(Design):
    """FP8 weights cached across microbatches, but the checkpointed recompute casts the weight
    again from the master copy with the live scale: the backward uses another weight than the forward

    Source: NVIDIA/TransformerEngine #539 ("FP8+PP+Recompute+GA>1, loss = nan": the cached FP8 weight
    was written in one phase and read in another) and #646, which moved the weight cast into the
    first forward and made it in place; AMD-AGI/Primus #983 drops its caches at the step boundary
    because nothing else tells them a weight moved. A recompute must read the pair the forward read.

    Signature: the recomputed weight operand differs from the forward's whenever the weight scale
    advanced between the forward and the backward (microbatch 0 of step 0 at least); the gradient
    differs from the gradient of the function the forward computed; state counts unchanged.
    """

    name = "cache-recompute-recast"
    scenario = "cached-weight"
    defective = True
    cache_weights = True
    recompute = "recast-weight"
    focus = "w0"


class CachePaired(Design):
    """FP8 weights cached across microbatches with their decode scale: every consumer, the
    recompute included, reads the cached pair; the cache is refreshed on the first microbatch only

    Source: Transformer Engine 2.x `quantize_weight(update_workspace=is_first_microbatch)`: the cached
    workspace is a quantized tensor that carries its own `scale_inv`, updated in place only on the
    first microbatch; TE #646 casts it in the first forward so the recompute reuses it.

    Signature: every weight read paired; forward and recompute operands bitwise equal; the weight's
    history records one insertion per step (the microbatches that reuse the cache cast nothing).
    """

    name = "cache-paired"
    scenario = "cached-weight"
    cache_weights = True
    focus = "w0"


# ------------------------------------------------------------------------------------------------
# recompute under a different autocast state
# ------------------------------------------------------------------------------------------------


class RecomputeBF16(Design):
    """the recompute runs outside the FP8 autocast: the forward cast its operands to FP8 with the
    delayed scales, the recompute casts them to BF16, so the backward differentiates another function

    Source: NVIDIA/Megatron-LM #7538 ("Restore the forward's FP8 autocast state in
    tensor_parallel.checkpoint recompute"): `CheckpointFunction.backward()` re-ran the function
    outside `fp8_autocast`; with BF16 parameters the recompute silently ran in BF16. The same gap was
    closed inside TE by #24 (recompute under an internal FP8 context, the forward's scales restored).

    Signature: every recomputed operand differs from the forward's (a BF16 grid, not the FP8 one);
    the state counts and every pairing check are clean, so only a forward-vs-recompute comparison
    or a gradient check finds it.
    """

    name = "recompute-bf16"
    scenario = "autocast-recompute"
    defective = True
    recompute = "bf16"


class RecomputeRecordedAutocast(Design):
    """the forward records whether FP8 was on and its recipe; the recompute re-enters the same
    autocast with the forward's stashed scales, so it replays the forward bit for bit

    Source: NVIDIA/Megatron-LM #7538's fix (record `FP8GlobalStateManager.is_fp8_enabled()` and the
    recipe in forward, re-enter `fp8_autocast` with them in backward, in the recompute phase) and
    TE's own `te.checkpoint`, whose recompute restores the stashed forward scales.

    Signature: forward and recompute operands bitwise identical; the gradient equals the gradient of
    the forward's function exactly.
    """

    name = "recompute-recorded-autocast"
    scenario = "autocast-recompute"


#: every design by name, in scenario order, each family's defects before its corrected form
DESIGNS: dict[str, type[Design]] = {cls.name: cls for cls in (
    AccumLastMicrobatch, AccumWindowMax, AccumPerMicrobatch,
    SkipRollsZero, SkipRollsStale, SkipHolds,
    DistLocalAmax, DistSubgroup, DistOwnerGroup,
    CacheLiveScale, CacheRecomputeRecast, CachePaired,
    RecomputeBF16, RecomputeRecordedAutocast)}


def get_design(name: str) -> type[Design]:
    """The design called `name`; ValueError naming the known ones otherwise."""
    if not isinstance(name, str) or name not in DESIGNS:
        raise ValueError(f"variant={name!r} is not one of {', '.join(DESIGNS)}")
    return DESIGNS[name]


def designs_of(scenario: str) -> list[type[Design]]:
    """The designs of one family, in registry order."""
    if scenario not in SCENARIOS:
        raise ValueError(f"scenario={scenario!r} is not one of {', '.join(SCENARIOS)}")
    return [d for d in DESIGNS.values() if d.scenario == scenario]


def contract(design: type[Design], ranks: int, group: int, microbatches: int) -> list[tuple[str, str]]:
    """The design's answers to seed 000's checklist questions, in words, for a run of `ranks` ranks,
    reduction groups of `group` and `microbatches` microbatches: who owns the state, when it may
    advance, what each consumer reads, what the recompute does."""
    if design.reduce == "owner":
        owner = f"all {ranks} ranks together (the amax is reduced over every rank that holds a shard)"
    elif design.reduce == "subgroup":
        owner = (f"each group of {min(group, ranks)} ranks (reduced within the group, while all {ranks} ranks "
                 f"decode every shard)")
    else:
        owner = f"each rank alone (no reduction, while all {ranks} ranks decode every shard)"
    window = {"each": f"after every microbatch ({microbatches} insertions per optimizer step)",
              "max": "once per optimizer step, with the maximum over its microbatches",
              "last": "once per optimizer step, with the last microbatch's amax only"}[design.accumulate]
    idle = {"hold": "nothing: no insertion, the scale held",
            "zero": "an insertion of 0 (the history rolls)",
            "stale": "an insertion of the uncleared staging slot (its running maximum)"}[design.idle]
    if design.cache_weights:
        weight = ("cast on the first microbatch and cached; later microbatches read the cached codes with "
                  + ("the owner's live decode scale" if design.weight_read == "live" else "their own decode scale"))
    else:
        weight = "cast on every microbatch with the owner's held scale, read with its own decode scale"
    recompute = {"replay": "replays the forward's codes and decode scales; commits nothing",
                 "recast-weight": "replays the activations but casts the weights again with the live scales",
                 "bf16": "casts every operand to BF16 (outside the FP8 autocast); commits nothing"}[design.recompute]
    staged = {"each": "its own window: inserted after that microbatch",
              "max": "the optimizer step's window: the maximum over its microbatches is inserted",
              "last": "the optimizer step's window, but only the last microbatch's amax survives"}[design.accumulate]
    return [("Who owns the gathered layer input's scale?", owner),
            ("Who owns a microbatch's amax?", staged),
            ("Who owns every other operand's scale?", "the rank that casts and consumes it (per role, layer, rank)"),
            ("When may a state advance?", window),
            ("What does a window without a cast record?", idle),
            ("What do the weights' consumers read?", weight),
            ("What does the recompute do?", recompute)]
