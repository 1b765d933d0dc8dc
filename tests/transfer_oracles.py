"""Independent oracles for the course's transfer questions (issue 31), used by
tests/test_exercise_answers.py: each recomputes an answer without the worked-example code — casts
through ml_dtypes, numpy's IEEE float16 or torch, exact `Fraction` arithmetic, recipes re-implemented
here from their published rules (Transformer Engine's tile scales, DeepGEMM's UE8M0, OCP MXINT8 and
MXFP8), real `torch.utils.checkpoint` instrumented here — or states the property a source document
gives (the seed-001 pull request's findings on Transformer Engine's placements; a data-flow order
written out here). An order or classification oracle returns the list of texts.
"""

from __future__ import annotations

import math
import threading
from fractions import Fraction
from typing import Any, Callable

import ml_dtypes
import numpy as np

F32 = np.float32
BF16 = ml_dtypes.bfloat16
E4M3 = ml_dtypes.float8_e4m3fn
E2M1 = ml_dtypes.float4_e2m1fn


def sat(x: Any, dtype: Any, fmax: float) -> np.ndarray:
    return np.clip(np.asarray(x, dtype=np.float64), -fmax, fmax).astype(dtype).astype(np.float64)


def cast1(x: float, dtype: Any) -> float:
    return float(np.array(x, dtype=np.float64).astype(dtype).astype(np.float64))


def te_scale(amax: float, previous: float, fmax: float = 448.0) -> float:
    if not (math.isfinite(amax) and amax > 0):
        return previous
    return float(F32(F32(fmax) / F32(amax)))


def topological(needs: dict[str, tuple[str, ...]]) -> list[str]:
    order: list[str] = []
    while len(order) < len(needs):
        ready = [k for k, v in needs.items() if k not in order and all(n in order for n in v)]
        assert len(ready) == 1, ready
        order.append(ready[0])
    return order


def frac_text(v: float) -> str:
    q = Fraction(v)
    whole = math.floor(q)
    rest = q - whole
    return f"{whole} + {rest.numerator}/{rest.denominator}" if rest else str(whole)


# ------------------------------------------------------------------------------------------------
# 1–6: contract, formats, absorption, scales, grouping, MX
# ------------------------------------------------------------------------------------------------


def precision_label() -> list[str]:
    # W4A8: weights stored in 4 bits, read at the activations' 8; FP32 sums; FP8 cache
    return ["4 bits", "8 bits", "8 bits", "32 bits", "8 bits"]


def decode_traffic() -> float:
    before = Fraction(14) + 2
    after = Fraction(7 * 10**9) * (4 + Fraction(8, 16)) / 8 / 10**9 + 2
    return float(before / after)


def e3m2(field: str) -> float:
    fi = ml_dtypes.finfo(ml_dtypes.float6_e3m2fn)
    return float(fi.max if field == "max" else fi.smallest_subnormal)


def fp16_threshold_at_4() -> float:
    t = 2.0**-9  # half of FP16's gap 2^-8 in [4, 8)
    assert float(np.float16(4.0 + t)) == 4.0 and float(np.float16(4.0 + t + 2.0**-30)) > 4.0
    return t


def fp16_softmax_four() -> int:
    h = np.float16
    for d in range(1, 60):
        e = h(math.exp(-d))
        total = h(1.0)
        for _ in range(3):
            total = h(total + e)
        if h(h(1.0) / total) == h(1.0):
            return d
    raise AssertionError


def zero_amax_sequence() -> float:
    s = 64.0
    for amax in (0.0, math.nan, 1.75):
        s = te_scale(amax, s)
    return s


def scale_one_zeroed() -> float:
    x = (np.random.default_rng(0).standard_normal(2**16) * 0.001).astype(F32).astype(np.float64)
    return 100.0 * float(np.mean(sat(x, E4M3, 448.0) == 0))


def outlier_column_best() -> str:
    x = np.random.default_rng(0).standard_normal((32, 64)).astype(F32)
    x[:, 5] *= F32(100.0)
    keep = np.ones(x.shape, bool)
    keep[:, 5] = False
    a = np.abs(x.astype(np.float64))

    def amax(g: str) -> np.ndarray:
        if g == "tensor":
            return np.full_like(a, a.max())
        if g == "row":
            return np.repeat(a.max(1, keepdims=True), 64, 1)
        if g == "column":
            return np.repeat(a.max(0, keepdims=True), 32, 0)
        if g == "block32":
            return np.repeat(a.reshape(32, 2, 32).max(2), 32, 1)
        t = a.reshape(2, 16, 4, 16).max((1, 3))
        return np.repeat(np.repeat(t, 16, 0), 16, 1)

    errs = {}
    for g in ("tensor", "row", "column", "block32", "tile"):
        enc = (F32(6.0) / amax(g).astype(F32)).astype(np.float64)
        xh = sat(x.astype(np.float64) * enc, E2M1, 6.0) / enc
        errs[g] = np.linalg.norm((xh - x)[keep]) / np.linalg.norm(x[keep])
    names = {"tensor": "one per tensor", "row": "one per row", "column": "one per column",
             "block32": "one per 1×32 block", "tile": "one per 16×16 tile"}
    return names[min(errs, key=lambda k: errs[k])]


def contraction_axis() -> list[str]:
    """Y = X W: a scale depending only on i (token) or j (output channel) factors out of Σ_k; one
    depending on k does not (checked numerically with Fractions)."""
    rng = np.random.default_rng(7)
    x = [[Fraction(int(v)) for v in row] for row in rng.integers(1, 9, (2, 3))]
    w = [[Fraction(int(v)) for v in row] for row in rng.integers(1, 9, (3, 2))]
    s = [Fraction(1), Fraction(2), Fraction(4)]

    def y(xs: Any, ws: Any) -> list[list[Fraction]]:
        return [[sum((xs[i][k] * ws[k][j] for k in range(3)), Fraction(0)) for j in range(2)] for i in range(2)]

    exact = y(x, w)
    out = []
    for where in ("token", "feature", "out", "in"):
        if where == "token":
            xs = [[x[i][k] / s[i] for k in range(3)] for i in range(2)]
            ok = all(y(xs, w)[i][j] * s[i] == exact[i][j] for i in range(2) for j in range(2))
        elif where == "out":
            ws = [[w[k][j] / s[j] for j in range(2)] for k in range(3)]
            ok = all(y(x, ws)[i][j] * s[j] == exact[i][j] for i in range(2) for j in range(2))
        else:
            if where == "feature":
                part = y([[x[i][k] / s[k] for k in range(3)] for i in range(2)], w)
            else:
                part = y(x, [[w[k][j] / s[k] for j in range(2)] for k in range(3)])
            r = [[exact[i][j] / part[i][j] for j in range(2)] for i in range(2)]
            ok = r[0][0] * r[1][1] == r[0][1] * r[1][0]  # rank one: an outer product of factors
        out.append("apply after the GEMM" if ok else "must be applied before the sum")
    return out


def mxfp4(field: str) -> float:
    if field == "rceil_exponent":
        return math.ceil(math.log2(100.0 / 6.0))
    x_exp = math.floor(math.log2(100.0)) - 2
    return float(sat(100.0 / 2.0**x_exp, E2M1, 6.0)[()]) * 2.0**x_exp


# ------------------------------------------------------------------------------------------------
# FP8 tiles, MXINT8 (the blockwise lesson)
# ------------------------------------------------------------------------------------------------


def te_tile_decode(amax: float, pow2: bool) -> float:
    s = F32(448.0) / F32(amax) if amax > 0 else F32(1.0)
    if pow2 and amax > 0:
        s = F32(2.0 ** (math.frexp(float(s))[1] - 1))
    return float(F32(1.0) / s)


def ue8m0_exponent(amax: float) -> int:
    d = float(F32(max(amax, float(F32(1e-4)))) / F32(448.0))
    return math.ceil(math.log2(d))


def _tiles_1x128(x: np.ndarray, pow2: bool) -> np.ndarray:
    """Rows of 128: TE's encode scale per tile, E4M3 saturating cast (ml_dtypes), decoded."""
    r, c = x.shape
    t = x.reshape(r, c // 128, 128).astype(np.float64)
    amax = np.abs(t).max(axis=2)
    enc = np.array([[1.0 / te_tile_decode(float(a), pow2) for a in row] for row in amax])
    codes = sat(t.astype(F32) * enc[..., None].astype(F32), E4M3, 448.0)
    return (codes / enc[..., None]).reshape(r, c)


def fp8_transpose(field: str) -> Any:
    x = np.random.default_rng(0).standard_normal((256, 256)).astype(F32)
    x64 = x.astype(np.float64)

    def err(a: np.ndarray, ref: np.ndarray) -> float:
        return float(np.linalg.norm(a - ref) / np.linalg.norm(ref))

    if field == "fp32":
        rows = _tiles_1x128(x, False).astype(F32)
        src = _tiles_1x128(x.T.copy(), False)
        two = _tiles_1x128(rows.T.copy(), False)
        ratio = err(two, x64.T) / err(src, x64.T)
        return min({"about the same": 1.0, "about 1.4 times as large": 1.4, "about 3 times as large": 3.0}.items(),
                   key=lambda kv: abs(math.log(ratio / kv[1])))[0]
    if field == "wide":
        from lowprec.simulations.blocks import sample_tensor

        x = np.asarray(sample_tensor("lognormal", (256, 256), 0), dtype=F32)
    rows = _tiles_1x128(x, True).astype(F32)
    again = _tiles_1x128(rows.T.copy(), True)
    changed = float(np.mean(again != rows.T.astype(np.float64)))
    return "none" if changed == 0 else "about 1 %" if changed < 0.05 else "about 30 %" if changed < 0.6 else "almost all"


def mx_blocks(x: np.ndarray, kind: str) -> np.ndarray:
    """OCP MX along rows of 32, floor rule: MXFP8 (E4M3, emax 8) and MXINT8 (INT8 × 2^-6, emax 0)."""
    b = x.astype(np.float64).reshape(-1, 32)
    amax = np.abs(b).max(axis=1)
    xe = np.floor(np.log2(amax)) - (8 if kind == "fp8" else 0)
    s = 2.0 ** xe[:, None]
    if kind == "fp8":
        q = sat(b / s, E4M3, 448.0) * s
    else:
        code = np.clip(np.round(b / s * 64.0), -128, 127)  # numpy rounds half to even
        q = code / 64.0 * s
    return q.reshape(x.shape)


def int_or_fp() -> list[str]:
    rng = np.random.default_rng(0)
    normal = rng.standard_normal((64, 256)).astype(F32)
    heavy = rng.standard_t(2, (64, 256)).astype(F32)
    planted = rng.standard_normal((64, 256))
    mask = np.zeros(planted.shape, bool)
    mask[:, ::32] = True
    planted[mask] *= 100.0
    out = []
    for t, keep in ((normal, np.ones(normal.shape, bool)), (heavy, np.ones(heavy.shape, bool)),
                    (planted.astype(F32), ~mask)):
        ref = t.astype(np.float64)
        e = {k: np.linalg.norm((mx_blocks(t, k) - ref)[keep]) / np.linalg.norm(ref[keep]) for k in ("int", "fp8")}
        out.append("MXINT8 is lower" if e["int"] < e["fp8"] else "MXFP8 (E4M3) is lower")
    return out


# ------------------------------------------------------------------------------------------------
# 7–12: spikes, products, paths, loss scaling, resume
# ------------------------------------------------------------------------------------------------


def spike_x4_clipped() -> float:
    from lowprec.simulations.studies.spike import SpikeConfig

    src = SpikeConfig(format="E4M3FN", history=16, algo="max", steps=140, spike_step=100, spike=4.0,
                      seed=0).tensor_stream()
    enc = 1.0
    hist: list[float] = []
    for t in range(100):
        hist = (hist + [float(np.max(np.abs(src.tensor(t))))])[-16:]
        enc = te_scale(max(hist), enc)
    x = src.tensor(100).astype(np.float64)
    return 100.0 * float(np.mean(np.abs(x * enc) > 464.0))


def spike_window() -> int:
    amax = [1.0] * 140
    amax[100:103] = [50.0] * 3
    enc, hist, n = 1.0, [], 0
    for t in range(140):
        n += enc == te_scale(50.0, 1.0)
        hist = (hist + [amax[t]])[-8:]
        enc = te_scale(max(hist), enc)
    return n


def hybrid_products() -> list[str]:
    fmt = {"X": "E4M3FN", "W": "E4M3FN", "dY": "E5M2"}
    names = {frozenset({"E4M3FN"}): "both E4M3FN", frozenset({"E5M2"}): "both E5M2",
             frozenset({"E4M3FN", "E5M2"}): "one E4M3FN, one E5M2"}
    return [names[frozenset({fmt[a], fmt[b]})] for a, b in (("X", "W"), ("dY", "W"), ("X", "dY"))]


def eighth_grid() -> float:
    probs = [Fraction(6, 10), Fraction(3, 10), Fraction(1, 10)]
    rounded = [Fraction(round(p * 8), 8) for p in probs]
    return float(sum((p * v for p, v in zip(rounded, (0, 2, 10))), Fraction(0)))


def path_sensitivity() -> list[str]:
    rng = np.random.default_rng(0)

    def bf(v: Any) -> np.ndarray:
        return np.asarray(v, dtype=np.float64).astype(BF16).astype(np.float64)

    xa, wa = rng.standard_normal((16, 4096)), rng.standard_normal((4096, 16)) / 64
    y = bf(xa).astype(F32) @ bf(wa).astype(F32)
    errs = [float(np.linalg.norm(y - xa @ wa) / np.linalg.norm(xa @ wa))]
    errs.append(0.0 if int(np.argmax([3.0, 3.005])) == int(np.argmax(bf([3.0, 3.005]))) else 1.0)
    x = 100.0 + 0.1 * rng.standard_normal(1024)
    xb = bf(x).astype(F32)
    m1 = F32(np.float32(np.sum(xb, dtype=F32)) / F32(1024))
    m2 = F32(np.float32(np.sum(xb * xb, dtype=F32)) / F32(1024))
    var = float(F32(m2 - F32(m1 * m1)))
    exact = float(np.mean(x * x) - np.mean(x) ** 2)
    errs.append(abs(var - exact) / exact)
    h = 256.0
    for _ in range(64):
        h = cast1(h + 0.5, BF16)
    errs.append(abs(h - 288.0) / 288.0)
    return ["protect it (error of 1 % or more)" if e >= 0.01 else "low precision is fine (error under 1 %)"
            for e in errs]


def loss_vs_tensor() -> list[str]:
    a = np.geomspace(1e-10, 1e-6, 64)
    b = np.geomspace(1e-3, 8.0, 64)

    def verdict(x: np.ndarray, scale: float) -> str:
        with np.errstate(over="ignore"):
            y = (x * scale).astype(np.float16)
        if not np.all(np.isfinite(y)):
            return "some values overflow"
        return "some values round to zero" if np.any(y == 0) else "every value stays finite and nonzero"

    fmax = float(np.finfo(np.float16).max)
    return [verdict(a, 2.0**8), verdict(b, 2.0**8), verdict(a, 2.0**16), verdict(b, 2.0**16),
            verdict(a, float(F32(fmax / a.max()))), verdict(b, float(F32(fmax / b.max())))]


def resume_at(step: int) -> int:
    amax = [1.0] * 140
    amax[95] = 50.0

    def run(start: int) -> list[float]:
        enc, hist, used = 1.0, [], []
        for t in range(start, 140):
            used.append(enc)
            hist = (hist + [amax[t]])[-16:]
            enc = te_scale(max(hist), enc)
        return used

    whole = run(0)
    resumed = whole[:step] + run(step)
    return sum(a != b for a, b in zip(whole, resumed))


# ------------------------------------------------------------------------------------------------
# 13–18: attention, ties, checkpointing, recompute
# ------------------------------------------------------------------------------------------------


def attention_stages() -> list[str]:
    qkv, s, e, p, pv, o = ("the casts of Q, K and V", "the score product Q Kᵀ", "the softmax's exponentials and "
                           "their sum", "the stored probabilities P", "the product P V", "the final cast of O")
    return topological({qkv: (), s: (qkv,), e: (s,), p: (e,), pv: (p, qkv), o: (pv,)})


def bias_population() -> str:
    grid = np.arange(8) / 8 + 1.0
    pops = {"the eight midpoints between neighbouring E4M3FN values in [1, 2)": grid + 1 / 16,
            "every E4M3FN value in [1, 2) plus 0.01": grid + 0.01,
            "every E4M3FN value in [1, 2) once plus 0.01 and once minus 0.01":
                np.concatenate([grid + 0.01, grid - 0.01])}
    nonzero = [k for k, x in pops.items()
               if abs(sum(Fraction(cast1(v, E4M3)) - Fraction(float(v)) for v in x)) > Fraction(1, 10**12)]
    assert len(nonzero) == 1
    return nonzero[0]


def checkpoint_probe(what: str) -> Any:
    """Real torch.utils.checkpoint, instrumented here."""
    import warnings

    import torch
    from torch.utils.checkpoint import checkpoint

    if what == "count":
        n = [0]

        def body(h: torch.Tensor) -> torch.Tensor:
            n[0] += int(torch.is_grad_enabled())
            return h * 2

        h = torch.ones(3, requires_grad=True)
        for _ in range(3):
            h = checkpoint(body, h, use_reentrant=True)
        h.sum().backward()
        return n[0]
    if what == "order":
        log: list[str] = []
        phase = ["forward"]

        def body2(h: torch.Tensor, i: int) -> torch.Tensor:
            log.append(f"layer {i} {phase[0]}")
            return h.sin()

        h = torch.ones(3, requires_grad=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for i in range(3):
                h = checkpoint(body2, h, i, use_reentrant=True)
        phase[0] = "recompute"
        h.sum().backward()
        return log
    seen: list[tuple[float, bool, int, int]] = []
    box = {"n": 0}
    mod = torch.nn.Linear(1, 1)
    mod.mark = 0  # type: ignore[assignment]

    def body3(h: torch.Tensor) -> torch.Tensor:
        seen.append((float(torch.rand(())), torch.is_autocast_enabled("cpu"), box["n"], int(mod.mark)))  # type: ignore[arg-type]
        box["n"] += 1
        mod.mark += 1  # type: ignore[assignment, operator]
        return h.cos()

    x = torch.ones(2, requires_grad=True)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        y = checkpoint(body3, x, use_reentrant=False, preserve_rng_state=True)
    y.float().sum().backward()
    f, r = seen
    return ["restored to what the forward saw" if f[k] == r[k] else "seen as the forward left it" for k in range(4)]


def lab_fix_order() -> list[str]:
    own, store, when, snap, ro = ("identify who owns the state", "give every independent owner its own storage",
                                  "define when the state may advance", "snapshot the state a logical operation uses",
                                  "make re-entry read-only")
    return topological({own: (), store: (own,), when: (store,), snap: (when,), ro: (snap,)})


def diagnose(case: dict[str, Any]) -> str:
    """The write-up's ladder on one case's controls."""
    if max(case["transitions"]["per_layer"]) > 1:
        return "recompute-mutates"
    if case["differ"] and case["pairing"]["unpaired_recompute"]:
        return "stale-centre"
    if case["traversal"]["foreign_forward"]:
        return "shared-state" if case["differ"] else "shared-state-snapshot"
    if case["pairing"]["unpaired_forward"]:
        return "consume-after-advance"
    assert case["differ"] == 0 and case["low_precision_off"]["differ"] == 0
    return "the corrected design"


def hunt(field: str) -> Any:
    from lowprec.simulations.studies.defect_hunt import hunt_lab

    cases = hunt_lab()["cases"]
    if field == "classes":
        return [diagnose(c) for c in cases.values()]
    if field == "still_wrong":
        hidden = [c for c in cases.values() if c["differ"] == 0 and c["pairing"]["unpaired_forward"]]
        return ("the consumer could read a descale that did not encode its codes" if hidden
                else "nothing: a bitwise match proves the design correct")
    mutates = next(c for c in cases.values() if diagnose(c) == "recompute-mutates")
    m = mutates["matched_points"]
    if all(p["input_differs"] == 0 for p in m) and any(p["output_differs"] for p in m):
        return "the quantization metadata it consumed (the scale)"
    return "its input"


# ------------------------------------------------------------------------------------------------
# 19–26: the isfinite lesson, the TE placement lab, the API lesson, recipes, promotion
# ------------------------------------------------------------------------------------------------


def stateful_recipes() -> list[str]:
    """Delayed scaling sizes B's scale from A's amax (TE's rule); the others size each scale from B's
    own elements (current per tensor, MX blocks, 1×128 tiles, NVFP4 blocks), so B's cast cannot depend
    on A: the stated property of their recipes."""
    rng = np.random.default_rng(0)
    a = (rng.standard_normal((4, 128)) * 4.0).astype(F32)
    b = rng.standard_normal((4, 128)).astype(F32)
    fresh, after = te_scale(0.0, 1.0), te_scale(float(np.abs(a).max()), 1.0)
    delayed = "carries state from one call to the next" if fresh != after else "sizes its scales from the tensor it casts"
    assert float(np.abs(b).max()) > 0
    return [delayed] + ["sizes its scales from the tensor it casts"] * 4


def te_placement(field: str) -> Any:
    """The seed-001 pull request's findings on Transformer Engine, as stated there: the outer
    placement always worked; before the fix an inner (or mixed) autocast with nothing enabled around
    te.checkpoint raised KeyError for both use_reentrant values; after it, use_reentrant=True never
    updates the forward scale (no_grad in phase 1, the disabled wrapper holding the depth at 1 in the
    recompute) while use_reentrant=False updates normally; a module left in .eval() still raises
    (the stash is gated on self.training, the restore is not); a disabled autocast outside pins the
    depth, so the scale stays at 1.0 and stash and no-stash are numerically identical; one FP8 module
    outside the region flushes the update for all of them."""
    if field == "inner_default":
        return "never: it stays at 1.0"
    if field == "classes":
        return ["runs, forward scale updates", "KeyError in the first backward", "runs, forward scale frozen at 1.0",
                "runs, forward scale updates", "runs, forward scale frozen at 1.0", "KeyError in the first backward"]
    if field == "blind":
        return "the forward scale never updates, so the stash and the live scale are both 1.0"
    return te_scale(2.0, 1.0)  # A's amax at step 0 is the model's input 2: the flush sizes A's scale from it


def quantizer_api(field: str) -> Any:
    from lowprec.formats import get_format
    from lowprec.formats.policy import CastPolicy
    from lowprec.simulations.recompute.state import (ConcurrentStateError, DelayedScaleState, DoubleCommitError,
                                                     FixedQuantizer, PhaseInfo, QuantizedTensor, QuantObservation,
                                                     QuantSnapshot, SnapshotIdentityError,
                                                     commit_quant_observation)

    if field == "stale":
        q = FixedQuantizer(4, get_format("E4M3FN"), CastPolicy())
        codes = np.zeros((1, 1), np.uint8)

        def consume(step: int) -> str:
            snap = QuantSnapshot("layer2", 2, step, "input", 1.0, 1.0, -1)
            try:
                q.consumer_scaling(QuantizedTensor(codes, codes.astype(np.float32), snap, None), 2,
                                   PhaseInfo(phase="forward", step=7))
            except SnapshotIdentityError:
                return "SnapshotIdentityError is raised"
            return "it reads the snapshot's descale"

        assert consume(7) == "it reads the snapshot's descale"  # the check is not vacuous
        return consume(6)
    if field == "double":
        state = DelayedScaleState("layer1", 448.0)
        obs = QuantObservation("layer1", 1, 3, 2.0, None)
        commit_quant_observation(state, obs)
        assert len(state.history) == 1
        try:
            commit_quant_observation(state, obs)
        except DoubleCommitError:
            return "DoubleCommitError is raised"
        return "the history gets a second entry"
    # two real threads: A holds the state while B tries to enter
    out = []
    for per_worker in (False, True):
        states = {"A": DelayedScaleState("s", 448.0)}
        states["B"] = DelayedScaleState("s2", 448.0) if per_worker else states["A"]
        inside, release = threading.Event(), threading.Event()
        result: dict[str, str] = {}

        def worker(name: str, hold: bool) -> None:
            try:
                with states[name].exclusive(name):
                    if hold:
                        inside.set()
                        release.wait(5)
                result[name] = "commits its transition"
            except ConcurrentStateError:
                result[name] = "is refused (ConcurrentStateError)"

        ta = threading.Thread(target=worker, args=("A", True))
        ta.start()
        inside.wait(5)
        worker("B", False)
        release.set()
        ta.join(5)
        out.extend([result["A"], result["B"]])
    return [out[0], out[1], out[2], out[3]]


def telemetry(field: str) -> float:
    """Applied steps recounted from each run's recorded per-step loss and gradient norm: a step is
    applied exactly when both are finite (the telemetry's stated rule)."""
    from lowprec.simulations.recompute import RecomputeConfig, run_recompute

    def applied(variant: str) -> int:
        r = run_recompute(RecomputeConfig(variant=variant, overflow="nonfinite"))
        ok = np.isfinite(r.loss) & np.isfinite(r.grad_norm)
        return int(ok[: int(r.attempted.sum())].sum())

    if field == "share":
        return applied("consume-after-advance") / 20
    return 20 - applied("fixed")


def lab_norm_share() -> float:
    from lowprec.simulations.lab.samples import weight

    w = np.asarray(weight(), dtype=np.float64)
    col = np.sqrt((w * w).mean(axis=0))
    big = col > 6 * np.median(col)
    return float((w[:, big] ** 2).sum() / (w * w).sum())


def calibration(df: int, fmt: str) -> str:
    x = (np.random.default_rng(1).standard_t(df, size=8192) * 1e-3).astype(F32).astype(np.float64)
    ax = np.abs(x)
    ranges = {"the maximum": ax.max(), "the 99.9th percentile": np.quantile(ax, 0.999),
              "the 99th percentile": np.quantile(ax, 0.99)}
    errs = {}
    for name, amax in ranges.items():
        if fmt == "E2M1":
            enc = float(F32(6.0) / F32(amax))
            xh = sat(x * enc, E2M1, 6.0) / enc
        else:
            enc = float(F32(7.0) / F32(amax))
            xh = np.clip(np.rint(x * enc), -8, 7) / enc
        errs[name] = np.linalg.norm(xh - x) / np.linalg.norm(x)
    return min(errs, key=lambda k: errs[k])


def promotion_order() -> list[str]:
    ref, casts, short, art, promote = ("establish a stable higher-precision reference",
                                       "test the casts bit for bit against the target backend",
                                       "run a matched short experiment against the reference",
                                       "validate the converted artifact on real serving shapes",
                                       "promote the versioned recipe")
    return topological({ref: (), casts: (ref,), short: (ref, casts), art: (short,), promote: (art,)})


def e5m2_first_inf() -> float:
    import torch

    mid = float(F32(61440.0))
    below = float(np.nextafter(F32(mid), F32(0)))
    got = [float(torch.tensor([v], dtype=torch.float32).to(torch.float8_e5m2).float()[0]) for v in (below, mid)]
    assert math.isfinite(got[0]) and math.isinf(got[1])
    return mid


def hadamard_amax() -> float:
    """One value 8 through diag(d) · S / 4 with ±1 signs: each output is ±8 / 4 (Sylvester entries ±1)."""
    s = np.array([[1.0]])
    while s.shape[0] < 16:
        s = np.block([[s, s], [s, -s]])
    d = np.where(np.random.default_rng(3).random(16) < 0.5, -1.0, 1.0)  # any signs give the same amax
    x = np.zeros(16)
    x[5] = 8.0
    return float(np.max(np.abs(x @ (d[:, None] * s) / 4)))


def renormalized() -> float:
    rounded = [Fraction(cast1(p, E4M3)) for p in (0.6, 0.3, 0.1)]
    return float(sum((p * v for p, v in zip(rounded, (0, 2, 10))), Fraction(0)) / sum(rounded, Fraction(0)))


TRANSFER_ORACLES: dict[str, Callable[[], Any]] = {
    "example:hadamard_spread.amax_after": hadamard_amax,
    "example:renormalized_output.renormalized": renormalized,
    "example:isolate_casts.with_floor": lambda: float(Fraction(1, 10**7) / max(Fraction(5, 10**7), Fraction(1, 10**6))),
    "example:shared_scale_binades.binades": lambda: round(math.log2(te_scale(3.0, 1.0) / te_scale(96.0, 1.0))),
    "example:precision_label.classes": precision_label,
    "example:decode_traffic.traffic_ratio": decode_traffic,
    "example:e3m2_facts.max": lambda: e3m2("max"),
    "example:e3m2_facts.smallest_subnormal": lambda: e3m2("smallest"),
    "example:code_minus_27.code": lambda: int(np.array(-27.0).astype(E4M3).view(np.uint8)),
    "example:fp16_at_4.threshold": fp16_threshold_at_4,
    "example:softmax_more.fp16_four_d": fp16_softmax_four,
    "example:zero_amax_sequence.final": zero_amax_sequence,
    "example:scale_one_zeroed.zeroed_pct": scale_one_zeroed,
    "example:outlier_column.best": outlier_column_best,
    "example:tile_metadata.tile_128x128_bits": lambda: float(Fraction(32, 128 * 128)),
    "example:contraction_axis.classes": contraction_axis,
    "example:mxfp4_rules.rceil_exponent": lambda: mxfp4("rceil_exponent"),
    "example:mxfp4_rules.floor_decoded": lambda: mxfp4("floor_decoded"),
    "example:fp8_tiles.te_pow2_decode_3": lambda: te_tile_decode(3.0, True),
    "example:fp8_tiles.ue8m0_zero_exponent": lambda: ue8m0_exponent(0.0),
    "example:fp8_tiles.fp32_ratio_bucket": lambda: fp8_transpose("fp32"),
    "example:fp8_tiles.wide_change_bucket": lambda: fp8_transpose("wide"),
    "example:fp8_tiles.int_fp_classes": int_or_fp,
    "example:spike_questions_more.clipped_x4_pct": spike_x4_clipped,
    "example:spike_questions_more.window_steps": spike_window,
    "example:hybrid_products.classes": hybrid_products,
    "example:eighth_grid.output": eighth_grid,
    "example:path_sensitivity.classes": path_sensitivity,
    "example:loss_vs_tensor.classes": loss_vs_tensor,
    "example:resume_at_105.steps_differ": lambda: resume_at(105),
    "example:attention_stages.order": attention_stages,
    "example:bf16_tie_flip.rounded_perturbed_text": lambda: frac_text(cast1(1.0 + 2.0**-8 + 2.0**-16, BF16)),
    "example:bias_populations.nonzero": bias_population,
    "example:checkpoint_probes.reentrant_count": lambda: checkpoint_probe("count"),
    "example:checkpoint_probes.run_order": lambda: checkpoint_probe("order"),
    "example:checkpoint_probes.state_classes": lambda: checkpoint_probe("state"),
    "example:defect_hunt.case_classes": lambda: hunt("classes"),
    "example:defect_hunt.still_wrong": lambda: hunt("still_wrong"),
    "example:defect_hunt.matched_reason": lambda: hunt("matched"),
    "example:defect_hunt.fix_order": lab_fix_order,
    "example:stateful_recipes.classes": stateful_recipes,
    "example:te_placement_questions.inner_default_updates": lambda: te_placement("inner_default"),
    "example:te_placement_questions.placement_classes": lambda: te_placement("classes"),
    "example:te_placement_questions.numeric_blind_reason": lambda: te_placement("blind"),
    "example:te_placement_questions.flush_scale_step1": lambda: te_placement("flush"),
    "example:quantizer_api.stale_outcome": lambda: quantizer_api("stale"),
    "example:quantizer_api.double_outcome": lambda: quantizer_api("double"),
    "example:quantizer_api.worker_classes": lambda: quantizer_api("workers"),
    "example:telemetry_effective.effective_share": lambda: telemetry("share"),
    "example:telemetry_effective.fixed_skipped": lambda: telemetry("fixed"),
    "example:lab_norm_share.share": lab_norm_share,
    "example:calibration_more.int4_t10_best": lambda: calibration(10, "INT4"),
    "example:calibration_more.e2m1_t3_best": lambda: calibration(3, "E2M1"),
    "example:cache_layouts.mxfp4_bits": lambda: float(4 + Fraction(8, 32)),
    "example:cache_layouts.per_token_kib": lambda: float(Fraction(2 * 80 * 8 * 128) * Fraction(9, 2) / 8 / 1024),
    "example:promotion_order.order": promotion_order,
    "example:e5m2_first_inf.first_inf": e5m2_first_inf,
}
