"""The torch harness of the recompute simulation: network, real activation checkpointing, training.

A small tanh MLP whose layer inputs are quantized by a `recompute.state` quantizer, trained with
real PyTorch autograd and `torch.utils.checkpoint` (non-reentrant, CPU), so backward really
re-enters each layer body. The recompute phase is marked through checkpoint's public `context_fn`
hook (its second context manager is entered only while a checkpointed region is re-run). The
quantizer's rounding is a straight-through estimator in backward. Each body call is recorded, and
the training loop fills a `recompute.telemetry.RecomputeResult` per step and layer. Torch runs on
one intra-op thread (the matrices are tiny; one thread also makes the floats independent of the
machine's core count).
"""

from __future__ import annotations

import contextlib
import functools
import math
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterator, ParamSpec, TypeVar

import numpy as np
import torch
from torch.utils.checkpoint import CheckpointError, checkpoint, set_checkpoint_early_stop

from lowprec.config import from_mapping, iter_values
from lowprec.formats import CastPolicy, FloatFormat, Overflow, Rounding

from .config import RecomputeConfig
from .state import (ConcurrentStateError, DoubleCommitError, PhaseInfo, SnapshotIdentityError, VariantQuantizer,
                    make_quantizer, resolve_format)
from .telemetry import RecomputeResult, activation_diffs, tensor_hash

__all__ = ["Problem", "make_problem", "run_config", "run_recompute", "warm_up"]


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

    def activations(self) -> dict[str, np.ndarray]:
        out = {"input": self.input, "dequant": self.dequant, "output": self.output}
        if self.encoder_centre is not None:
            out["encoder_centre"] = self.encoder_centre
        if self.snapshot_centre is not None:
            out["snapshot_centre"] = self.snapshot_centre
        return out


class _Run:
    """The network of one run: weights, the quantizer, the phase the body is in, call records."""

    def __init__(self, quantizer: VariantQuantizer, problem: Problem, checkpointing: bool) -> None:
        self.q = quantizer
        self.phase = PhaseInfo()
        self.checkpointing = checkpointing
        self.weights = [torch.from_numpy(w.copy()).requires_grad_(True) for w in problem.weights]
        self.biases = [torch.from_numpy(b.copy()).requires_grad_(True) for b in problem.biases]
        self.records: dict[tuple[int, int, str], _CallRecord] = {}
        self.recompute_order: list[int] = []

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
        with self.inner_autocast() if self.q.inner_switch else contextlib.nullcontext():
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


def run_recompute(config: RecomputeConfig | str | None = None, *, fmt: str | FloatFormat | None = None,
                  keep_activations: bool = False, progress: Callable[[int, int], None] | None = None,
                  **params: Any) -> RecomputeResult:
    """Run the simulation for `config` (a `RecomputeConfig`), or for the record made of a variant
    name (`config` as text) and `params` (other fields of `RecomputeConfig` by name; `fmt` is the
    `format` field, a name or a FloatFormat). Raises `ConfigError` (a ValueError, or a TypeError
    for a wrong type) naming the bad parameter. See `run_config`."""
    if isinstance(config, RecomputeConfig):
        if params or fmt is not None:
            raise TypeError("run_recompute takes a RecomputeConfig or parameters, not both")
        record = config
    else:
        values = dict(params)
        if config is not None:
            values["variant"] = config
        if fmt is not None:
            if not isinstance(fmt, (str, FloatFormat)):
                raise TypeError(f"format must be a name or a FloatFormat, got {fmt!r}")
            values["format"] = resolve_format(fmt).name
        record = from_mapping(RecomputeConfig, values)
    return run_config(record, keep_activations=keep_activations, progress=progress)


@_one_torch_thread
def run_config(config: RecomputeConfig, *, keep_activations: bool = False,
               progress: Callable[[int, int], None] | None = None) -> RecomputeResult:
    """Train the network for `config.steps` SGD steps with the quantizer `config.variant` and
    return forward-vs-recompute telemetry per step and layer. Deterministic for a seed.

    `rounding`/`overflow` make the `CastPolicy`. A non-finite loss or gradient skips the update.
    A step that raises (the gate-asymmetry KeyError, a checkpoint error, a concurrency or identity
    error) ends the run and is reported in `failure`. `keep_activations` keeps every recorded
    tensor (memory grows with steps × layers × batch × width: for tests and notebooks)."""
    c = config
    f = resolve_format(c.format)
    policy = CastPolicy(rounding=Rounding(c.rounding), overflow=Overflow(c.overflow))
    steps, layers = c.steps, c.layers

    t0 = time.perf_counter()
    problem = make_problem(c.seed, layers, c.width, c.batch, steps)
    quantizer = make_quantizer(c.variant, layers, f, policy, c.history, c.algo, c.margin)
    run = _Run(quantizer, problem, c.checkpointing)
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
                        p -= c.lr * p.grad
            applied[t] = True
        for (step, layer, _phase) in quantizer.commit_log[n_log:]:
            commits[step, layer] += 1
        state_commits[t] = len(quantizer.commit_log) - n_log
        recompute_order.append(run.recompute_order)
        fwd_phase = "forward" if c.checkpointing else "plain"
        for i in range(layers):
            history_len_arr[t, i] = len(quantizer.states[i].history)
            fr = run.records.pop((t, i, fwd_phase))
            fl["encode_scale_forward"][t, i] = fr.encode_scale
            fl["consumer_decode_scale_forward"][t, i] = fr.consumer_decode_scale
            fl["amax_forward"][t, i] = fr.amax
            fl["input_rms"][t, i] = float(np.sqrt(np.mean(fr.input.astype(np.float64) ** 2)))
            bo["paired_forward"][t, i] = fr.paired
            it["scale_source_forward"][t, i] = fr.scale_source_layer
            hashes["forward_hash"][t, i] = tensor_hash(fr.output)
            if keep_activations:
                activations[(t, i, "forward")] = fr.activations()
            rr = run.records.pop((t, i, "recompute"), None)
            if rr is None:
                continue
            if keep_activations:
                activations[(t, i, "recompute")] = rr.activations()
            bo["recomputed"][t, i] = True
            d_out, rel_out, eq_out, fin_out = activation_diffs(fr.output, rr.output)
            d_deq, rel_deq, eq_deq, fin_deq = activation_diffs(fr.dequant, rr.dequant)
            fl["output_max_abs_diff"][t, i] = d_out
            fl["dequant_max_abs_diff"][t, i] = d_deq
            fl["max_abs_diff"][t, i] = np.fmax(d_out, d_deq)  # NaN only if both are NaN
            fl["max_rel_diff"][t, i] = np.fmax(rel_out, rel_deq)
            bo["bitwise_equal"][t, i] = eq_out and eq_deq
            bo["finite_masks_equal"][t, i] = fin_out and fin_deq
            bo["input_bitwise_equal"][t, i] = activation_diffs(fr.input, rr.input)[2]
            fl["encode_scale_recompute"][t, i] = rr.encode_scale
            fl["consumer_decode_scale_recompute"][t, i] = rr.consumer_decode_scale
            fl["amax_recompute"][t, i] = rr.amax
            bo["paired_recompute"][t, i] = rr.paired
            it["scale_source_recompute"][t, i] = rr.scale_source_layer
            hashes["recompute_hash"][t, i] = tensor_hash(rr.output)
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
    parameters: dict[str, Any] = {**{k.name: v for k, v in iter_values(c)}, "format": f.name, "lr": float(c.lr),
                                  "policy": policy.to_dict(), "torch": torch.__version__}
    return RecomputeResult(
        parameters=parameters, loss=loss_arr, grad_norm=grad_norm, nonfinite=nonfinite,
        attempted=attempted, applied=applied, skipped=skipped, state_commits=state_commits,
        recompute_order=recompute_order, failure=failure, commits=commits,
        history_len=history_len_arr, elapsed_s=time.perf_counter() - t0,
        expected_state_commits=quantizer.expected_commits(layers), centred=quantizer.centred,
        cast_format=quantizer.cast_format.name,
        final_weights=[w.detach().numpy().copy() for w in run.weights],
        activations=activations, **fl, **bo, **it, **hashes)
