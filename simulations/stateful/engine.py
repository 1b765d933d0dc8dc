"""The machine every stateful-scaling design runs: owners of delayed-scaling state, update windows,
ranks, a cached weight and the recompute, over a small two-layer network trained by SGD.

The network, per microbatch (numpy, float64 products of the decoded operands — the exact product an
FP8 GEMM with FP32 scales computes before its output cast):

- layer 0, column-parallel on a sequence-parallel input: rank r casts its row shard X_r of the
  input X [rows, width] (role `x0`), the shards are gathered in FP8 and every rank c decodes all of
  them with its own decode scale D_c, then computes H[:, cols_c] = X̂_(c) · Ŵ0[:, cols_c] with its
  column shard of W0 (role `w0`);
- layer 1, row-parallel: rank r casts its columns H[:, cols_r] (role `h1`), which it alone consumes,
  and its row shard of W1 (role `w1`); the partial products are summed across ranks (in float64):
  Y = Σ_r Ĥ_r · Ŵ1[cols_r, :]. In the skipped-module designs layer 1 (the expert) runs only on
  steps t with t % run_every == 0; otherwise Y = H and W1 gets no gradient;
- loss ½·mean((Y − T)²) against a teacher T = X · A; the backward differentiates the checkpointed
  layers with the operands their recompute rebuilt (straight through the casts), and the gradients
  are averaged over microbatches; a step with a non-finite loss or gradient is skipped.

State: one `delayed.DelayedScaling` per owner (role, layer, rank) — the one model of Transformer
Engine's rule; a cast uses the owner's held encode scale and stages its amax; at the end of an
update window (a microbatch or the optimizer step, `designs.ACCUMULATE`) the staged amaxes of each
reduction group are reduced (max) and inserted, unless the design's idle rule says otherwise
(`designs.IDLE`). Every insertion is one scale advance (TE recomputes the scale at every roll);
`changes` counts the advances that moved the scale.

Telemetry (seed 000's): per step the history insertions and scale advances of every owner against
the count the design's rule expects, clipped fraction per role, unpaired reads (a decode scale that
is not the pair of the codes' encode scale), forward-vs-recompute operand mismatches, the gradient
norm and its distance from the gradient of the function the forward computed, steps attempted /
applied / skipped, finite / non-finite; per (step, microbatch, rank) and role the encode scale used,
the amax observed and the clipped fraction.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from lowprec import formats
from lowprec.formats import BF16, CastPolicy, FloatFormat, Overflow

from ..scaling.delayed import DelayedScaling, tensor_amax
from ..scaling.metrics import clips
from ..recompute.state import resolve_format
from .config import StatefulConfig
from .designs import Design, get_design
from .result import ROLES, StatefulResult

__all__ = ["initial_weights", "layer_input", "run_stateful"]

ProgressFn = Callable[[int, int], None]
_F32 = np.float32


@dataclass
class Owner:
    """One owner of delayed-scaling state: a (role, rank) of the network and its model."""

    role: str
    rank: int
    state: DelayedScaling[float]
    staged: list[float] = field(default_factory=list)  # amaxes of this window's casts
    slot: float = 0.0  # the staging slot as the "stale" idle rule leaves it (never cleared)


@dataclass
class Operand:
    """One cast operand as a consumer reads it: the decoded codes (in scaled units) and the decode
    scale the consumer multiplies them by, with the encode scale the codes were made with."""

    raw: np.ndarray  # decode(codes), float64
    encode_scale: float
    decode_scale: float

    @property
    def values(self) -> np.ndarray:
        """What the GEMM consumes: raw × decode scale (exact in float64: two float32 factors)."""
        return self.raw * self.decode_scale

    def read_with(self, decode_scale: float) -> "Operand":
        return Operand(self.raw, self.encode_scale, decode_scale)


@dataclass
class Pass:
    """The operands one pass (the forward, or the recompute) gave every consumer of a microbatch."""

    x: list[np.ndarray]  # per consumer rank c: the gathered layer input as c decodes it [rows, width]
    w0: list[np.ndarray]  # per rank: its column shard of W0
    h: list[np.ndarray]  # per rank: its columns of the layer-1 input (empty when the expert idles)
    w1: list[np.ndarray]  # per rank: its row shard of W1 (empty when the expert idles)


def initial_weights(config: StatefulConfig) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(teacher A float64, W0 float32, W1 float32), each N(0, 1/width), from `default_rng([seed, 0])`."""
    d = config.width
    rng = np.random.default_rng([config.seed, 0])
    teacher = rng.standard_normal((d, d)) / math.sqrt(d)
    w0 = (rng.standard_normal((d, d)) / math.sqrt(d)).astype(_F32)
    w1 = (rng.standard_normal((d, d)) / math.sqrt(d)).astype(_F32)
    return teacher, w0, w1


def layer_input(config: StatefulConfig, step: int, microbatch: int) -> np.ndarray:
    """The layer input X [rows, width] (float32) of one microbatch: N(0, 1) from
    `default_rng([seed, 1, step, microbatch])`, the spike rank's row shard × spike where
    `config.spike_at(step, microbatch)` (the shards are `numpy.array_split` of the rows)."""
    x = np.random.default_rng([config.seed, 1, step, microbatch]).standard_normal((config.rows, config.width))
    x = x.astype(_F32)
    if config.spike_at(step, microbatch):
        rows = np.array_split(np.arange(config.rows), config.ranks)[config.spike_rank]
        x[rows] *= _F32(config.spike)
    return x


def _decode_of(encode_scale: float) -> float:
    """TE's scale_inv: float32(1 / encode_scale)."""
    return float(_F32(1.0 / encode_scale))


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    """Bitwise equality of two float64 arrays (NaN equals NaN of the same bits; 0 and -0 differ)."""
    return a.shape == b.shape and bool(np.array_equal(np.ascontiguousarray(a).view(np.uint64),
                                                      np.ascontiguousarray(b).view(np.uint64)))


class _Machine:
    def __init__(self, c: StatefulConfig, design: type[Design], keep: bool = False) -> None:
        self.c = c
        self.keep = keep
        self.d = design
        self.fmt: FloatFormat = resolve_format(c.format)
        self.policy = CastPolicy(overflow=Overflow(c.overflow))
        self.R, self.M, self.T = c.ranks, c.microbatches, c.steps
        self.rows = np.array_split(np.arange(c.rows), self.R)
        self.cols = np.array_split(np.arange(c.width), self.R)
        self.owners = {(role, r): Owner(role, r, DelayedScaling(self.fmt.max, c.history, c.algo, c.margin))
                       for role in ROLES for r in range(self.R)}
        ranks = list(range(self.R))
        if design.reduce == "owner":
            x_groups = [ranks]
        elif design.reduce == "subgroup":
            x_groups = [ranks[i:i + c.group] for i in range(0, self.R, c.group)]
        else:
            x_groups = [[r] for r in ranks]
        #: the reduction groups of every role: the gathered input's as the design says, every other
        #: role's operand is consumed by the rank that cast it (its own owner)
        self.groups = {role: (x_groups if role == "x0" else [[r] for r in ranks]) for role in ROLES}
        self.res = StatefulResult.empty(c, design, self.fmt)
        self.cache: dict[tuple[str, int], Operand] = {}  # (weight role, rank) → the cached FP8 weight

    # -- casts --------------------------------------------------------------------------------------
    def _encode(self, x: np.ndarray, encode_scale: float) -> tuple[np.ndarray, int]:
        """(decode(codes) as float64, clipped count) of the cast of x · encode_scale."""
        with np.errstate(over="ignore", invalid="ignore"):
            scaled = (x * _F32(encode_scale)).astype(_F32)
        codes = formats.encode(scaled, self.fmt, self.policy)
        clipped = int(np.count_nonzero(clips(np.abs(scaled), self.fmt)))
        return formats.decode(codes, self.fmt).astype(np.float64), clipped

    def cast(self, role: str, r: int, x: np.ndarray, t: int, k: int) -> Operand:
        """The forward's cast of x by owner (role, r): its held scale, its amax staged, telemetry."""
        owner = self.owners[(role, r)]
        enc = owner.state.encode_scale
        raw, clipped = self._encode(x, enc)
        amax = tensor_amax(x)
        owner.staged.append(amax)
        i = ROLES.index(role)
        self.res.scale_used[t, k, r, i] = enc
        self.res.amax_seen[t, k, r, i] = amax
        self.res.clipped[t, k, r, i] = clipped / max(x.size, 1)
        self.res.clipped_count[t, i] += clipped
        self.res.cast_count[t, i] += x.size
        return Operand(raw, enc, _decode_of(enc))

    def recast(self, role: str, r: int, x: np.ndarray) -> np.ndarray:
        """A recompute's cast with owner (role, r)'s live scale: nothing staged, no telemetry."""
        enc = self.owners[(role, r)].state.encode_scale
        return self._encode(x, enc)[0] * _decode_of(enc)

    @staticmethod
    def bf16(x: np.ndarray) -> np.ndarray:
        """A BF16 cast (round to nearest even): the recompute outside the FP8 autocast."""
        codes = formats.encode(np.asarray(x, dtype=_F32), BF16, CastPolicy())
        return formats.decode(codes, BF16).astype(np.float64)

    def read(self, t: int, role: str, encode_scale: float, decode_scale: float) -> None:
        """Count one consumer read of `role`; unpaired when its decode scale is not float32(1 /
        encode scale)."""
        self.res.reads[t] += 1
        if decode_scale != _decode_of(encode_scale):
            self.res.unpaired[t] += 1
            self.res.unpaired_by_role[t, ROLES.index(role)] += 1

    def weights(self, role: str, shards: list[np.ndarray], t: int, k: int) -> tuple[list[Operand], list[Operand]]:
        """Every rank's weight operand for microbatch k as its consumer reads it, and as its pair
        reads: cast, or the cached FP8 weight (after the first microbatch, with `cache_weights`)
        read with its own or the live decode scale."""
        read, paired = [], []
        for r, w in enumerate(shards):
            cached = self.cache.get((role, r)) if self.d.cache_weights and k > 0 else None
            if cached is not None:
                op = (cached.read_with(self.owners[(role, r)].state.decode_scale)
                      if self.d.weight_read == "live" else cached)
                pair = cached
            else:
                op = pair = self.cast(role, r, w, t, k)
                if self.d.cache_weights:
                    self.cache[(role, r)] = op
            self.read(t, role, op.encode_scale, op.decode_scale)
            read.append(op)
            paired.append(pair)
        return read, paired

    # -- update windows -----------------------------------------------------------------------------
    def end_window(self, t: int, k_last: int) -> None:
        """Close an update window whose last microbatch is k_last: per reduction group, reduce the
        members' staged amaxes (max) and insert the result into each member, as the design's
        accumulate and idle rules say."""
        res = self.res
        for i, role in enumerate(ROLES):
            for group in self.groups[role]:
                members = [self.owners[(role, r)] for r in group]
                staged = []
                for o in members:
                    if self.d.accumulate == "last":  # the last microbatch overwrote the earlier ones
                        seen = float(res.amax_seen[t, k_last, o.rank, i])
                        value = seen if np.isfinite(res.scale_used[t, k_last, o.rank, i]) else 0.0
                    else:
                        value = max(o.staged) if o.staged else 0.0
                    if self.d.idle == "stale":  # the slot is never cleared: it keeps its running maximum
                        value = max(value, o.slot) if value == value else value
                        o.slot = value
                    staged.append(value)
                if any(o.staged for o in members):
                    res.expected_insertions[t] += len(members)
                reduced = float(np.max(staged))  # a NaN propagates, as TE's reduction does
                roll = reduced != 0.0 or self.d.idle != "hold"
                for o in members:
                    if roll:
                        before = o.state.encode_scale
                        o.state.record(reduced)
                        res.insertions[t, i, o.rank] += 1
                        res.advances[t, i, o.rank] += 1
                        res.inserted[t, i, o.rank] = reduced
                        if o.state.encode_scale != before:
                            res.changes[t, i, o.rank] += 1
                    o.staged = []

    # -- the passes ---------------------------------------------------------------------------------
    def forward(self, X: np.ndarray, W0: np.ndarray, W1: np.ndarray, t: int, k: int,
                expert: bool) -> tuple[Pass, np.ndarray, np.ndarray]:
        """The forward of microbatch k: its operands, the output Y and the layer-0 output H."""
        res, R = self.res, self.R
        w0, w0_pair = self.weights("w0", [W0[:, cols] for cols in self.cols], t, k)
        xs = [self.cast("x0", r, X[self.rows[r]], t, k) for r in range(R)]
        H = np.empty((X.shape[0], W0.shape[1]))
        consistent = np.empty_like(H)
        x_read = []
        for c, cols in enumerate(self.cols):
            dc = xs[c].decode_scale  # rank c decodes every gathered shard with its own scale
            for op in xs:
                self.read(t, "x0", op.encode_scale, dc)
            xc = np.concatenate([op.raw * dc for op in xs])
            x_read.append(xc)
            H[:, cols] = xc @ w0[c].values
            consistent[:, cols] = np.concatenate([op.values for op in xs]) @ w0_pair[c].values
        with np.errstate(invalid="ignore", over="ignore"):
            top = float(np.max(np.abs(consistent)))
            res.gemm_error[t] = max(res.gemm_error[t], float(np.max(np.abs(H - consistent))) / top if top > 0 else 0.0)
            exact = X.astype(np.float64) @ W0.astype(np.float64)
            top = float(np.max(np.abs(exact)))
            res.output_error[t] = max(res.output_error[t],
                                      float(np.max(np.abs(H - exact))) / top if top > 0 else 0.0)
        if not expert:
            return Pass(x_read, [op.values for op in w0], [], []), H, H
        w1, _ = self.weights("w1", [W1[cols, :] for cols in self.cols], t, k)
        hs = [self.cast("h1", r, H[:, cols].astype(_F32), t, k) for r, cols in enumerate(self.cols)]
        for op in hs:
            self.read(t, "h1", op.encode_scale, op.decode_scale)
        Y = sum((hs[r].values @ w1[r].values for r in range(R)), np.zeros((X.shape[0], W1.shape[1])))
        return Pass(x_read, [op.values for op in w0], [op.values for op in hs], [op.values for op in w1]), Y, H

    def recompute(self, fwd: Pass, fwd_h: list[float], X: np.ndarray, W0: np.ndarray, W1: np.ndarray,
                  expert: bool) -> Pass:
        """What the backward's recompute of microbatch k rebuilds, as the design's recompute rule says."""
        how = self.d.recompute
        if how == "replay":
            return fwd
        if how == "bf16":
            xb = self.bf16(X)
            w0 = [self.bf16(W0[:, cols]) for cols in self.cols]
            x_read = [xb for _ in self.cols]
        else:  # recast-weight: the activations replayed, the weights cast again with the live scales
            w0 = [self.recast("w0", r, W0[:, cols]) for r, cols in enumerate(self.cols)]
            x_read = fwd.x
        if not expert:
            return Pass(x_read, w0, [], [])
        H = np.empty((X.shape[0], W0.shape[1]))
        for c, cols in enumerate(self.cols):
            H[:, cols] = x_read[c] @ w0[c]
        if how == "bf16":
            h = [self.bf16(H[:, cols]) for cols in self.cols]
            w1 = [self.bf16(W1[cols, :]) for cols in self.cols]
        else:  # the layer-1 input with the forward's own scale (its snapshot), the weight recast
            h = [self._encode(H[:, cols].astype(_F32), fwd_h[r])[0] * _decode_of(fwd_h[r])
                 for r, cols in enumerate(self.cols)]
            w1 = [self.recast("w1", r, W1[cols, :]) for r, cols in enumerate(self.cols)]
        return Pass(x_read, w0, h, w1)

    def backward(self, p: Pass, dY: np.ndarray, width: int) -> tuple[np.ndarray, np.ndarray | None]:
        """The weight gradients (dW0, dW1 or None) from a pass's operands, straight through the casts."""
        if p.h:
            g1 = np.zeros((width, dY.shape[1]))
            dH = np.empty((dY.shape[0], width))
            for r, cols in enumerate(self.cols):
                g1[cols, :] = p.h[r].T @ dY
                dH[:, cols] = dY @ p.w1[r].T
        else:
            g1, dH = None, dY
        g0 = np.zeros((width, width))
        for c, cols in enumerate(self.cols):
            g0[:, cols] = p.x[c].T @ dH[:, cols]
        return g0, g1

    def compare(self, t: int, fwd: Pass, rec: Pass) -> None:
        """Forward vs recompute, operand by operand (bitwise, as float64)."""
        for a_list, b_list in ((fwd.x, rec.x), (fwd.w0, rec.w0), (fwd.h, rec.h), (fwd.w1, rec.w1)):
            for a, b in zip(a_list, b_list):
                self.res.recompute_operands[t] += 1
                if not _same(a, b):
                    self.res.recompute_mismatches[t] += 1

    # -- the run ------------------------------------------------------------------------------------
    def run(self, progress: ProgressFn | None) -> StatefulResult:
        c, res, d = self.c, self.res, self.c.width
        teacher, W0, W1 = initial_weights(c)
        for t in range(self.T):
            expert = (not self.d.expert) or t % c.run_every == 0
            res.expert_ran[t] = expert
            g0, g1 = np.zeros((d, d)), np.zeros((d, d))
            r0, r1 = np.zeros((d, d)), np.zeros((d, d))
            losses = []
            for k in range(self.M):
                X = layer_input(c, t, k)
                target = X.astype(np.float64) @ teacher
                fwd, Y, H = self.forward(X, W0, W1, t, k, expert)
                if self.keep:
                    res.outputs[(t, k)] = {"x": X, "w0": W0.copy(), "w1": W1.copy(), "layer0": H, "y": Y}
                fwd_h = [float(res.scale_used[t, k, r, ROLES.index("h1")]) for r in range(self.R)]
                with np.errstate(over="ignore", invalid="ignore"):
                    diff = Y - target
                    losses.append(0.5 * float(np.mean(diff * diff)))
                    dY = diff / diff.size
                if self.d.accumulate == "each":  # TE: the update runs when the microbatch's autocast exits
                    self.end_window(t, k)
                rec = self.recompute(fwd, fwd_h, X, W0, W1, expert)
                self.compare(t, fwd, rec)
                with np.errstate(over="ignore", invalid="ignore"):
                    a0, a1 = self.backward(rec, dY, d)
                    b0, b1 = self.backward(fwd, dY, d)
                    g0 += a0
                    r0 += b0
                    if a1 is not None and b1 is not None:
                        g1 += a1
                        r1 += b1
            if self.d.accumulate != "each":
                self.end_window(t, self.M - 1)
            for (role, r), owner in self.owners.items():
                res.scale_held[t, ROLES.index(role), r] = owner.state.encode_scale
            with np.errstate(over="ignore", invalid="ignore"):
                g0 /= self.M
                g1 /= self.M
                r0 /= self.M
                r1 /= self.M
                norm = math.sqrt(float(np.sum(g0 * g0) + np.sum(g1 * g1)))
                ref = math.sqrt(float(np.sum(r0 * r0) + np.sum(r1 * r1)))
                gap = math.sqrt(float(np.sum((g0 - r0) ** 2) + np.sum((g1 - r1) ** 2)))
            res.loss[t] = float(np.mean(losses))
            res.grad_norm[t] = norm
            res.grad_mismatch[t] = gap / ref if ref > 0 else (0.0 if gap == 0 else math.inf)
            finite = math.isfinite(res.loss[t]) and math.isfinite(norm)
            res.nonfinite[t] = not finite
            res.attempted[t] = True
            res.applied[t] = finite
            if finite:
                W0 = (W0 - c.lr * g0).astype(_F32)
                W1 = (W1 - c.lr * g1).astype(_F32)
            if progress is not None:
                progress(t + 1, self.T)
        for role in ROLES:  # the histories at the end, rank 0's (a snapshot for the JSON)
            res.final_history[role] = [float(a) for a in self.owners[(role, 0)].state.history]
        return res


def run_stateful(config: StatefulConfig, progress: ProgressFn | None = None, *,
                 keep_outputs: bool = False) -> StatefulResult:
    """Run the design `config.variant` over the configured training run (module docstring).
    `keep_outputs`: keep every microbatch's input, weights, layer-0 output and output in
    `result.outputs` (for tests and notebooks; not written to JSON)."""
    if not isinstance(config, StatefulConfig):
        raise TypeError(f"config must be a StatefulConfig, got {type(config).__name__}")
    start = time.perf_counter()
    result = _Machine(config, get_design(config.variant), keep_outputs).run(progress)
    result.elapsed_s = time.perf_counter() - start
    return result
