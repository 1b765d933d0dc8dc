"""Where `te.autocast` and `te.checkpoint` sit: a model of Transformer Engine's delayed-scaling
bookkeeping under activation recompute, step by step.

Torch-free and deterministic: this module replays the control flow of Transformer Engine's PyTorch
side as read from its source (NVIDIA/TransformerEngine at commit d0067d0, August 2026, and the
parent of 731f242, the pull request *Preserve FP8 recompute state for inner autocast*), not its
arithmetic. What it models, with the names of the source:

- `te.autocast(enabled)` (`quantization.autocast`): on entry it saves the FP8 state, sets
  `fp8_enabled = enabled` and increments `autocast_depth`; on exit it restores the state,
  decrements the depth and, if *this* autocast was enabled, the depth is back to 0 and
  `torch.is_grad_enabled()`, calls `reduce_and_update_fp8_tensors(forward=True)`
  (`FP8GlobalStateManager.autocast_exit`).
- `reduce_and_update_fp8_tensors` walks the **process-wide buffer** (`global_amax_buffer`): every
  delayed-scaling module that ever ran in FP8 registered there once
  (`add_fp8_tensors_to_global_buffer`), and every one of them gets its amax history rolled and its
  scale recomputed, whichever autocast's exit triggered the call.
- An FP8 module's forward (`TransformerEngineBaseModule.prepare_forward`/`end_forward`): in the
  recompute phase, if it runs in FP8, it swaps the stashed amax history and scale in
  (`get_old_fp8_meta_tensors_for_recompute`; no stash ever made: `KeyError:
  'global_fp8_buffer_pos_fwd_recompute'`) and puts the updated ones back after the cast
  (`restore_fp8_meta_tensors`); otherwise it registers in the buffer and, if `self.training` and
  `is_fp8_activation_recompute_enabled()`, stashes a copy (`copy_forward_fp8_meta_tensors_for_recompute`).
  It asks for a columnwise (transposed) copy of its weight when grad is enabled or, since the fix,
  when `is_fp8_activation_recompute_enabled()` outside the recompute phase (`module/linear.py`).
- `is_fp8_activation_recompute_enabled()`: before the fix, a flag latched when the checkpoint
  region was entered (`activation_recompute and is_fp8_enabled()` at `__enter__`); after the fix,
  "inside a checkpoint region and FP8 enabled now" (`_IN_ACTIVATION_RECOMPUTE_REGION and
  is_fp8_enabled()`). `gate="entry"` / `gate="live"`.
- `te.checkpoint(fn, use_reentrant=True)` (the default: `kwargs.pop("use_reentrant", True)`):
  `_CheckpointFunction.forward` runs `fn` under `torch.no_grad()` inside
  `activation_recompute_forward(recompute_phase=False)` and then records `ctx.fp8 =
  is_fp8_enabled()`, read after `fn` returned (an inner autocast has exited by then); its backward
  reruns `fn` under `torch.enable_grad()`, `activation_recompute_forward(recompute_phase=True)` and
  `autocast(enabled=ctx.fp8)`. With `use_reentrant=False` the forward runs `fn` with the caller's
  grad mode (on while training) and the recompute under `autocast(enabled=fp8)` with `fp8` read at
  the call.

The amax history is TE's: a row of `history_len` entries whose entry 0 collects the current amax
(the cast writes the largest it sees there); an update takes the amax of the whole row (`max`),
rolls it (entry 0 moves to the end, the oldest drops, entry 0 becomes 0) and sets the encode scale
to `448 / amax`, keeping the previous scale for an amax of 0 or a non-finite one
(`_default_sf_compute`). Amaxes are inputs (`AMAX`), not measurements. Backward scales are not
modelled: they update through a separate path (`is_first_fp8_module`) that the placement does not
change. One training step is: the forward (the checkpoint region, then the optional FP8 module
outside it), then the backward, which recomputes the region.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from itertools import product
from typing import Any

__all__ = [
    "GATES",
    "INSIDE",
    "OUTSIDE",
    "PLACEMENTS",
    "PlacementCase",
    "PlacementRun",
    "placement_lab",
    "case_dict",
    "run_placement",
    "with_placement",
]

#: what wraps the `te.checkpoint` call
OUTSIDE = ("te.autocast(enabled=True)", "te.autocast(enabled=False)", "nothing")
#: what the checkpointed function opens around its FP8 module(s)
INSIDE = ("nothing", "te.autocast(True) around A and B", "te.autocast(True) around A only")
#: the stash gate: latched at checkpoint entry (before the fix) or read live (after it)
GATES = ("entry", "live")
#: the three named placements as (outside, inside)
PLACEMENTS: dict[str, tuple[str, str]] = {
    "outer": (OUTSIDE[0], INSIDE[0]),
    "inner": (OUTSIDE[2], INSIDE[1]),
    "mixed": (OUTSIDE[2], INSIDE[2]),
}
FP8_MAX = 448.0  # E4M3's largest value: the encode scale is FP8_MAX / amax
#: the amax each module's input has at step t (inputs of the model, not measurements): A grows
AMAX = {"A": (2.0, 0.5), "B": (1.0, 0.0), "C": (8.0, 0.0)}
KEY_ERROR = "KeyError: 'global_fp8_buffer_pos_fwd_recompute'"


@dataclass(frozen=True)
class PlacementCase:
    """One arrangement: what wraps `te.checkpoint`, what the checkpointed function opens inside,
    `use_reentrant`, the stash gate (before or after the fix), whether an FP8 module C runs outside
    the region under its own autocast, whether module A is in `.eval()` mode, and the steps run."""

    outside: str = OUTSIDE[0]
    inside: str = INSIDE[0]
    use_reentrant: bool = True
    gate: str = "live"
    module_outside: bool = False
    a_in_eval: bool = False
    steps: int = 3
    history_len: int = 16

    def __post_init__(self) -> None:
        for name, value, allowed in (("outside", self.outside, OUTSIDE), ("inside", self.inside, INSIDE),
                                     ("gate", self.gate, GATES)):
            if value not in allowed:
                raise ValueError(f"{name}={value!r} is not one of {', '.join(map(repr, allowed))}")
        if not isinstance(self.steps, int) or not 1 <= self.steps <= 20:
            raise ValueError(f"steps must be an integer from 1 to 20, got {self.steps!r}")
        if not isinstance(self.history_len, int) or not 1 <= self.history_len <= 1024:
            raise ValueError(f"history_len must be an integer from 1 to 1024, got {self.history_len!r}")

    @property
    def placement(self) -> str:
        """"outer", "inner" or "mixed" when the arrangement is one of those, else "other"."""
        return next((k for k, v in PLACEMENTS.items() if v == (self.outside, self.inside)), "other")


@dataclass
class _Module:
    name: str
    training: bool = True
    history: list[float] = field(default_factory=list)
    scale: float = 1.0
    registered: bool = False
    position_key: bool = False  # fp8_meta["global_fp8_buffer_pos_fwd_recompute"] exists
    stash: list[tuple[list[float], float]] = field(default_factory=list)
    updated: tuple[list[float], float] | None = None


@dataclass
class Event:
    """One thing that happened, with the state right after it."""

    step: int
    phase: str  # "forward" | "backward"
    kind: str  # enter | exit | update | register | stash | restore | cast | columnwise | error | put-back
    text: str
    depth: int
    grad: bool
    fp8: bool
    module: str = ""


@dataclass
class PlacementRun:
    """What one arrangement did over its steps."""

    case: PlacementCase
    events: list[Event]
    stashes: int  # stash copies made by module A
    restores: int  # restores module A attempted in the recompute (a KeyError counts)
    error: str  # "" or the exception that ended the run (type: message)
    error_step: int  # -1 when none
    updates_per_step: list[int]  # forward scale updates (reduce_and_update_fp8_tensors calls) per step
    a_scale_forward: list[float]  # module A's encode scale in its forward cast, per step (NaN: not FP8)
    a_scale_recompute: list[float]  # … in its recomputed cast (NaN: not FP8 or not reached)
    columnwise_phase1: bool  # A's weight quantizer asked for a columnwise copy in the first forward
    a_in_fp8: bool  # module A ran in FP8 at all

    @property
    def key_error(self) -> bool:
        return self.error.startswith("KeyError")

    @property
    def scale_updates(self) -> bool:
        """Whether A's forward scale ever moved from its initial 1.0 (over the steps run)."""
        return any(s == s and s != 1.0 for s in self.a_scale_forward[1:])

    @property
    def recompute_matches(self) -> bool:
        """Whether every recomputed cast of A used the scale of its forward cast."""
        pairs = [(f, r) for f, r in zip(self.a_scale_forward, self.a_scale_recompute) if f == f and r == r]
        return all(f == r for f, r in pairs)

    def outcome(self) -> str:
        """One of the lab's outcome classes."""
        if self.error:
            return "KeyError in the first backward" if self.key_error else f"fails: {self.error}"
        if not self.a_in_fp8:
            return "no FP8 at all"
        if not self.scale_updates:
            return "runs, forward scale frozen at 1.0"
        return "runs, forward scale updates"

    def summary(self) -> dict[str, Any]:
        return {"stash": self.stashes > 0, "restore": self.restores > 0, "key_error": self.key_error,
                "scale_updates": self.scale_updates, "updates_per_step": self.updates_per_step,
                "error": self.error, "error_step": self.error_step, "outcome": self.outcome(),
                "a_scale_forward": self.a_scale_forward, "a_scale_recompute": self.a_scale_recompute,
                "recompute_matches": self.recompute_matches, "columnwise_phase1": self.columnwise_phase1,
                "a_in_fp8": self.a_in_fp8, "placement": self.case.placement}


class _RecomputeError(Exception):
    pass


class _Engine:
    """The global state of TE's FP8 manager and the modules, driven by the phases of a step."""

    def __init__(self, case: PlacementCase) -> None:
        self.case = case
        self.fp8 = False
        self.depth = 0
        self.grad = True
        self.in_region = False  # after the fix: _IN_ACTIVATION_RECOMPUTE_REGION
        self.latched = False  # before the fix: _FP8_ACTIVATION_RECOMPUTE_ENABLED
        self.recompute_phase = False
        self.buffer: list[_Module] = []  # the process-wide buffer, in registration order
        self.modules = {n: _Module(n, history=[0.0] * case.history_len) for n in ("A", "B", "C")}
        self.modules["A"].training = not case.a_in_eval
        self.events: list[Event] = []
        self.step = 0
        self.phase = "forward"
        self.updates = 0
        self.stashes = 0
        self.restores = 0
        self.a_forward_scale = float("nan")
        self.a_recompute_scale = float("nan")
        self.columnwise_phase1 = False
        self.a_in_fp8 = False

    def log(self, kind: str, text: str, module: str = "") -> None:
        self.events.append(Event(self.step, self.phase, kind, text, self.depth, self.grad, self.fp8, module))

    # -- te.autocast -----------------------------------------------------------------------------
    def autocast_enter(self, enabled: bool) -> bool:
        saved = self.fp8
        self.fp8 = enabled
        self.depth += 1
        self.log("enter", f"enter te.autocast(enabled={enabled})")
        return saved

    def autocast_exit(self, enabled: bool, saved: bool) -> None:
        self.fp8 = saved
        self.depth -= 1
        fires = enabled and self.depth == 0 and self.grad
        why = ("depth 0, grad on: reduce_and_update_fp8_tensors fires" if fires else
               "not enabled: no update" if not enabled else
               f"depth {self.depth}: no update" if self.depth else "grad off: no update")
        self.log("exit", f"exit te.autocast(enabled={enabled}) — {why}")
        if fires:
            self.reduce_and_update()

    def reduce_and_update(self) -> None:
        self.updates += 1
        names = [m.name for m in self.buffer]
        for m in self.buffer:
            amax = max(m.history)
            m.history = m.history[1:] + [m.history[0]]  # roll: entry 0 to the end, the oldest drops
            m.history[0] = 0.0
            if amax > 0 and amax == amax and amax != float("inf"):
                m.scale = FP8_MAX / amax
        scales = ", ".join(f"{m.name} {m.scale:.4g}" for m in self.buffer)
        self.log("update", f"reduce_and_update_fp8_tensors over the process-wide buffer "
                           f"[{', '.join(names) or 'empty'}]: encode scales {scales or '—'}")

    # -- the recompute-region flags (activation_recompute_forward) ----------------------------------
    def region_enter(self, recompute_phase: bool) -> None:
        self.in_region = True
        self.recompute_phase = recompute_phase
        self.latched = self.fp8  # the flag before the fix, sampled now
        gate = (f"stash gate latched {'on' if self.latched else 'off'} (FP8 {'on' if self.fp8 else 'off'} at entry)"
                if self.case.gate == "entry" else "stash gate reads FP8 live")
        self.log("enter", f"enter the checkpoint region ({'recompute' if recompute_phase else 'first forward'}); "
                          + gate)

    def region_exit(self) -> None:
        self.in_region = False
        self.recompute_phase = False
        self.latched = False
        self.log("exit", "leave the checkpoint region")

    def recompute_enabled(self) -> bool:
        return self.latched if self.case.gate == "entry" else (self.in_region and self.fp8)

    # -- an FP8 module's forward --------------------------------------------------------------------
    def run_module(self, name: str) -> None:
        m = self.modules[name]
        amax = AMAX[name][0] + AMAX[name][1] * self.step
        in_fp8 = self.fp8
        if name == "A" and in_fp8:
            self.a_in_fp8 = True
        if in_fp8 and self.recompute_phase:
            self.restores += name == "A"
            if not m.position_key:
                self.log("error", f"module {name} restores its stash: {KEY_ERROR} (nothing was stashed)", name)
                raise _RecomputeError(KEY_ERROR)
            if not m.stash:
                self.log("error", f"module {name} restores its stash: IndexError: pop from an empty deque", name)
                raise _RecomputeError("IndexError: pop from an empty deque")
            m.updated = (list(m.history), m.scale)
            m.history, m.scale = m.stash.pop(0)
            self.log("restore", f"module {name} swaps its stashed scale {m.scale:.4g} in for the recompute", name)
        elif in_fp8:
            if not m.registered:
                m.registered = True
                self.buffer.append(m)
                self.log("register", f"module {name} joins the process-wide buffer", name)
            if m.training and self.recompute_enabled():
                m.stash.append((list(m.history), m.scale))
                m.position_key = True
                self.stashes += name == "A"
                self.log("stash", f"module {name} stashes its scale {m.scale:.4g} and amax history", name)
            elif self.in_region:
                why = "module in .eval()" if not m.training else "stash gate off"
                self.log("stash", f"module {name} does not stash ({why})", name)
            columnwise = self.grad or (self.recompute_enabled() and not self.recompute_phase)
            if name == "A" and not self.recompute_phase and self.in_region and columnwise and not self.grad:
                self.columnwise_phase1 = True
                self.log("columnwise", "module A's weight quantizer is asked for a columnwise copy "
                                       "(grad is off: only because the stash gate is on)", name)
        if in_fp8:
            m.history[0] = max(m.history[0], amax)
            if name == "A":
                if self.recompute_phase:
                    self.a_recompute_scale = m.scale
                else:
                    self.a_forward_scale = m.scale
            self.log("cast", f"module {name} casts to FP8 with encode scale {m.scale:.4g} (amax {amax:g})", name)
        else:
            self.log("cast", f"module {name} runs in BF16 (FP8 off)", name)
        if in_fp8 and self.recompute_phase and m.updated is not None:
            m.history, m.scale = m.updated
            m.updated = None
            self.log("put-back", f"module {name} puts its updated scale {m.scale:.4g} back", name)

    # -- the checkpointed function and the checkpoint ----------------------------------------------
    def body(self) -> None:
        inside = self.case.inside
        if inside == INSIDE[0]:
            self.run_module("A")
            self.run_module("B")
            return
        saved = self.autocast_enter(True)
        try:
            self.run_module("A")
            if inside == INSIDE[1]:
                self.run_module("B")
        finally:
            self.autocast_exit(True, saved)
        if inside == INSIDE[2]:
            self.run_module("B")

    def checkpoint_forward(self) -> bool:
        """The checkpoint's first forward; returns the FP8 flag the recompute will re-enter."""
        if self.case.use_reentrant:
            grad = self.grad
            self.grad = False
            self.log("enter", "te.checkpoint (use_reentrant=True): run the function under torch.no_grad()")
            self.region_enter(False)
            try:
                self.body()
            finally:
                self.region_exit()
                self.grad = grad
            ctx_fp8 = self.fp8
            self.log("exit", f"te.checkpoint records ctx.fp8 = {ctx_fp8} (read after the function returned)")
            return ctx_fp8
        fp8 = self.fp8
        self.log("enter", f"te.checkpoint (use_reentrant=False): fp8 = {fp8} read at the call; run the "
                          "function with grad on")
        self.region_enter(False)
        try:
            self.body()
        finally:
            self.region_exit()
        return fp8

    def checkpoint_backward(self, ctx_fp8: bool) -> None:
        grad = self.grad
        self.grad = True
        self.log("enter", "backward reaches the checkpoint: recompute under torch.enable_grad()")
        self.region_enter(True)
        saved = self.autocast_enter(ctx_fp8)
        try:
            self.body()
        finally:
            self.autocast_exit(ctx_fp8, saved)
            self.region_exit()
            self.grad = grad

    # -- a training step ----------------------------------------------------------------------------
    def run_step(self) -> None:
        self.phase = "forward"
        self.a_forward_scale = self.a_recompute_scale = float("nan")
        outside = self.case.outside
        if outside == OUTSIDE[2]:
            ctx_fp8 = self.checkpoint_forward()
        else:
            enabled = outside == OUTSIDE[0]
            saved = self.autocast_enter(enabled)
            try:
                ctx_fp8 = self.checkpoint_forward()
            finally:
                self.autocast_exit(enabled, saved)
        if self.case.module_outside:
            saved = self.autocast_enter(True)
            try:
                self.run_module("C")
            finally:
                self.autocast_exit(True, saved)
        self.phase = "backward"
        self.checkpoint_backward(ctx_fp8)


def run_placement(case: PlacementCase) -> PlacementRun:
    """Run `case.steps` training steps of the arrangement; a failure ends the run where it happens."""
    if not isinstance(case, PlacementCase):
        raise TypeError(f"case must be a PlacementCase, got {type(case).__name__}")
    eng = _Engine(case)
    updates: list[int] = []
    fwd: list[float] = []
    rec: list[float] = []
    error, error_step = "", -1
    for step in range(case.steps):
        eng.step = step
        before = eng.updates
        try:
            eng.run_step()
        except _RecomputeError as exc:
            error, error_step = str(exc), step
        updates.append(eng.updates - before)
        fwd.append(eng.a_forward_scale)
        rec.append(eng.a_recompute_scale)
        if error:
            break
    return PlacementRun(case, eng.events, eng.stashes, eng.restores, error, error_step, updates, fwd, rec,
                        eng.columnwise_phase1, eng.a_in_fp8)


def _case_key(case: PlacementCase) -> str:
    return "|".join([str(OUTSIDE.index(case.outside)), str(INSIDE.index(case.inside)), str(int(case.use_reentrant)),
                     case.gate, str(int(case.module_outside)), str(int(case.a_in_eval))])


def placement_lab(steps: int = 3, start: str = "outer") -> dict[str, Any]:
    """Every arrangement of the lab (outside × inside × use_reentrant × gate × module outside ×
    A in eval), run for `steps` steps: the summary of each and its timeline as compact rows
    `[step, phase, kind, text index, depth, grad, fp8]` over one table of texts; `start` is the named
    placement the lab opens with. Strict-JSON ready."""
    if start not in PLACEMENTS:
        raise ValueError(f"start={start!r} is not one of {', '.join(PLACEMENTS)}")
    texts: list[str] = []
    index: dict[str, int] = {}
    cases: dict[str, Any] = {}
    for outside, inside, reentrant, gate, module_outside, a_eval in product(
            OUTSIDE, INSIDE, (True, False), GATES, (False, True), (False, True)):
        case = PlacementCase(outside, inside, reentrant, gate, module_outside, a_eval, steps)
        run = run_placement(case)
        rows = []
        for e in run.events:
            if e.text not in index:
                index[e.text] = len(texts)
                texts.append(e.text)
            rows.append([e.step, e.phase, e.kind, index[e.text], e.depth, int(e.grad), int(e.fp8)])
        summary = run.summary()
        summary["a_scale_forward"] = [None if s != s else s for s in run.a_scale_forward]
        summary["a_scale_recompute"] = [None if s != s else s for s in run.a_scale_recompute]
        cases[_case_key(case)] = {"summary": summary, "events": rows}
    return {"outside": list(OUTSIDE), "inside": list(INSIDE), "gates": list(GATES),
            "placements": {k: [OUTSIDE.index(v[0]), INSIDE.index(v[1])] for k, v in PLACEMENTS.items()},
            "start": start,
            "steps": steps, "texts": texts, "cases": cases,
            "source": "Transformer Engine's PyTorch control flow as read from its source (commit d0067d0; "
                      "the stash gate before the fix: the parent of 731f242)"}


def case_dict(case: PlacementCase) -> dict[str, Any]:
    return asdict(case)


def with_placement(name: str, **changes: Any) -> PlacementCase:
    """The named placement ("outer", "inner", "mixed") with other fields changed."""
    if name not in PLACEMENTS:
        raise ValueError(f"placement {name!r} is not one of {', '.join(PLACEMENTS)}")
    outside, inside = PLACEMENTS[name]
    return replace(PlacementCase(outside=outside, inside=inside), **changes)
