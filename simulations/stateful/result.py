"""Telemetry of a stateful-scaling run: the result record, its verdict, summary, JSON and CSV.

Arrays are indexed by step t, microbatch k, rank r and role i (`ROLES`: the layer-0 input `x0`,
the layer-0 weight `w0`, the layer-1 input `h1`, the layer-1 weight `w1`). A cell that no cast
filled (a cached weight, an idle expert) holds NaN; `to_dict()` and `csv_text()` write it as absent
(`null`, an empty cell), so a NaN that reaches the JSON writer (`lowprec.strictjson`: "nan") is a
value the run computed. Shares are printed as percentages (`simulations.studies.spike.percent`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from lowprec.formats import FloatFormat, get_format

from ..framework.cli import config_values
from ..studies.spike import percent
from .config import StatefulConfig
from .designs import Design

__all__ = ["ROLES", "ROLE_NAMES", "STEP_COLUMNS", "StatefulResult"]

#: the operands every microbatch casts, each with one owner per rank
ROLES = ("x0", "w0", "h1", "w1")
ROLE_NAMES = {"x0": "layer-0 input (gathered)", "w0": "layer-0 weight", "h1": "layer-1 input", "w1": "layer-1 weight"}
#: the per-step columns of the CSV (then clipped_<role> and insertions_<role> per role)
STEP_COLUMNS = ("step", "loss", "grad_norm", "grad_mismatch", "nonfinite", "attempted", "applied", "skipped",
                "expert_ran", "history_insertions", "scale_advances", "scale_changes", "expected_insertions",
                "reads", "unpaired_reads", "recompute_operands", "recompute_mismatches", "gemm_error",
                "output_error", "scale_spread")


def _nan(*shape: int) -> np.ndarray:
    return np.full(shape, np.nan)


def _value(v: Any) -> Any:
    return v.item() if isinstance(v, np.generic) else v


@dataclass
class StatefulResult:
    """One run's telemetry (module docstring for the indexing and the absent cells)."""

    config: StatefulConfig
    design: type[Design]
    cast_format: str
    # per step [T]
    loss: np.ndarray
    grad_norm: np.ndarray  # L2 norm of the gradient the design applies (both layers)
    grad_mismatch: np.ndarray  # ‖g − g_forward‖ / ‖g_forward‖: g_forward from the forward's own operands
    nonfinite: np.ndarray  # bool: the loss or a gradient is not finite
    attempted: np.ndarray  # bool
    applied: np.ndarray  # bool
    expert_ran: np.ndarray  # bool: the layer-1 module ran (always, outside the skipped-module designs)
    reads: np.ndarray  # int: consumer reads of cast operands
    unpaired: np.ndarray  # int: reads whose decode scale is not the pair of the codes' encode scale
    recompute_operands: np.ndarray  # int: operands the recompute rebuilt
    recompute_mismatches: np.ndarray  # int: of those, not bitwise equal to the forward's
    gemm_error: np.ndarray  # max |H − H_paired| / max |H_paired| of the layer-0 output (mis-scaling)
    output_error: np.ndarray  # max |H − X·W0| / max |X·W0| (quantization and mis-scaling)
    expected_insertions: np.ndarray  # int: the insertions the corrected rule makes for this schedule
    # per step and role [T, 4]
    unpaired_by_role: np.ndarray
    clipped_count: np.ndarray
    cast_count: np.ndarray
    # per step, role and rank [T, 4, R]
    insertions: np.ndarray
    advances: np.ndarray
    changes: np.ndarray  # advances that moved the encode scale
    inserted: np.ndarray  # the (last) amax inserted in the step; NaN: none
    scale_held: np.ndarray  # the encode scale each owner holds once the step's windows closed
    # per step, microbatch, rank and role [T, M, R, 4]; NaN: not cast
    scale_used: np.ndarray  # encode scale of the forward's cast
    amax_seen: np.ndarray  # amax of the cast tensor
    clipped: np.ndarray  # clipped fraction of the cast tensor
    final_history: dict[str, list[float]] = field(default_factory=dict)  # rank 0's histories at the end
    #: with `run_stateful(keep_outputs=True)`: (step, microbatch) → x, w0, w1, layer0 (H), y
    outputs: dict[tuple[int, int], dict[str, np.ndarray]] = field(default_factory=dict)
    elapsed_s: float = 0.0

    @classmethod
    def empty(cls, c: StatefulConfig, design: type[Design], fmt: FloatFormat) -> "StatefulResult":
        T, M, R, n = c.steps, c.microbatches, c.ranks, len(ROLES)
        zi = lambda *shape: np.zeros(shape, dtype=np.int64)  # noqa: E731
        zb = lambda: np.zeros(T, dtype=bool)  # noqa: E731
        return cls(c, design, fmt.name, _nan(T), _nan(T), _nan(T), zb(), zb(), zb(), zb(), zi(T), zi(T), zi(T),
                   zi(T), np.zeros(T), np.zeros(T), zi(T), zi(T, n), zi(T, n), zi(T, n), zi(T, n, R), zi(T, n, R),
                   zi(T, n, R), _nan(T, n, R), _nan(T, n, R), _nan(T, M, R, n), _nan(T, M, R, n), _nan(T, M, R, n))

    # -- derived ------------------------------------------------------------------------------------
    @property
    def steps(self) -> int:
        return int(self.loss.size)

    @property
    def skipped(self) -> np.ndarray:
        """[T] bool: attempted but not applied (a non-finite loss or gradient)."""
        return self.attempted & ~self.applied

    @property
    def parameters(self) -> dict[str, Any]:
        return config_values(self.config)

    def role_index(self, role: str) -> int:
        if role not in ROLES:
            raise ValueError(f"role={role!r} is not one of {', '.join(ROLES)}")
        return ROLES.index(role)

    def clipped_fraction(self, role: str) -> np.ndarray:
        """[T] the share of the role's cast elements in each step that were clipped (NaN: none cast)."""
        i = self.role_index(role)
        n = self.cast_count[:, i].astype(np.float64)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(n > 0, self.clipped_count[:, i] / np.where(n > 0, n, 1), np.nan)

    def history_insertions(self) -> np.ndarray:
        """[T] insertions into every owner's history in each step."""
        return self.insertions.sum(axis=(1, 2))

    def scale_advances(self) -> np.ndarray:
        return self.advances.sum(axis=(1, 2))

    def scale_changes(self) -> np.ndarray:
        return self.changes.sum(axis=(1, 2))

    def scale_spread(self, role: str = "x0") -> np.ndarray:
        """[T] max over microbatches of (largest / smallest) encode scale the ranks used for `role`
        (1: every rank cast with one scale)."""
        s = self.scale_used[:, :, :, self.role_index(role)]
        with np.errstate(invalid="ignore", divide="ignore"):
            ratio = np.nanmax(s, axis=2) / np.nanmin(s, axis=2)
        out = np.nanmax(np.where(np.isfinite(ratio), ratio, np.nan), axis=1) if ratio.size else np.ones(self.steps)
        return np.where(np.isfinite(out), out, 1.0)

    def sized_for(self, role: str, rank: int = 0) -> np.ndarray:
        """[T] the amax the scale an owner holds after each step is sized for: F / E / 2^margin."""
        e = self.scale_held[:, self.role_index(role), rank]
        return self.fmt_max / e / 2.0 ** self.config.margin

    @property
    def fmt_max(self) -> float:
        """The largest finite value F of the cast format."""
        return float(get_format(self.cast_format).max)

    def idle_changes(self) -> int:
        """Scale changes of the layer-1 owners in steps where the layer-1 module did not run."""
        idle = ~self.expert_ran
        return int(self.changes[idle][:, [ROLES.index("h1"), ROLES.index("w1")]].sum())

    def window_table(self, role: str) -> dict[str, list[Any]]:
        """One row per (step, microbatch) for `role`: `x` = step + microbatch / M, the largest amax
        any rank observed, the amax the scale of that rank's cast was sized for (F / E / 2^margin),
        the share of the role's elements clipped in that microbatch (all ranks), None where nothing
        was cast (a cached weight, an idle module)."""
        i = self.role_index(role)
        T, M = self.scale_used.shape[:2]
        out: dict[str, list[Any]] = {k: [] for k in ("x", "step", "microbatch", "observed", "sized_for", "clipped")}
        scale_of = self.fmt_max / 2.0 ** self.config.margin
        for t in range(T):
            for k in range(M):
                seen = self.amax_seen[t, k, :, i]
                cast = np.isfinite(self.scale_used[t, k, :, i])
                out["x"].append(t + k / M)
                out["step"].append(t)
                out["microbatch"].append(k)
                if not cast.any():
                    out["observed"].append(None)
                    out["sized_for"].append(None)
                    out["clipped"].append(None)
                    continue
                r = int(np.nanargmax(np.where(cast, seen, -np.inf)))
                out["observed"].append(float(seen[r]))
                out["sized_for"].append(scale_of / float(self.scale_used[t, k, r, i]))
                out["clipped"].append(float(np.nanmean(self.clipped[t, k, :, i][cast])))
        return out

    def check_table(self) -> dict[str, list[Any]]:
        """One row per step, as percentages: the focus role's clipped share, the share of reads
        unpaired, the share of recomputed operands that differ from the forward's; and the history
        insertions against the rule's count."""
        frac = self.clipped_fraction(self.design.focus)
        with np.errstate(invalid="ignore", divide="ignore"):
            unpaired = np.where(self.reads > 0, 100.0 * self.unpaired / np.maximum(self.reads, 1), 0.0)
            mismatch = np.where(self.recompute_operands > 0,
                                100.0 * self.recompute_mismatches / np.maximum(self.recompute_operands, 1), 0.0)
        return {"step": list(range(self.steps)),
                "clipped_pct": [None if math.isnan(v) else 100.0 * float(v) for v in frac],
                "unpaired_pct": [float(v) for v in unpaired],
                "mismatch_pct": [float(v) for v in mismatch],
                "insertions": [int(v) for v in self.history_insertions()],
                "expected": [int(v) for v in self.expected_insertions],
                "changes": [int(v) for v in self.scale_changes()],
                "grad_norm": [float(v) for v in self.grad_norm],
                "grad_mismatch": [float(v) for v in self.grad_mismatch],
                "skipped": [bool(v) for v in self.skipped],
                "expert_ran": [bool(v) for v in self.expert_ran]}

    def worst_window(self) -> tuple[int, int]:
        """(step, microbatch) where the ranks' encode scales for the gathered input differ most
        ((0, 0) when they never differ)."""
        s = self.scale_used[:, :, :, 0]
        with np.errstate(invalid="ignore", divide="ignore"):
            ratio = np.nanmax(s, axis=2) / np.nanmin(s, axis=2)
        ratio = np.where(np.isfinite(ratio), ratio, 1.0)
        t, k = np.unravel_index(int(np.argmax(ratio)), ratio.shape)
        return int(t), int(k)

    def read_matrix(self, step: int | None = None, microbatch: int | None = None) -> dict[str, list[Any]]:
        """Who decodes whose shard with what: one row per (shard s, consumer rank c) of the gathered
        layer input at (step, microbatch) (default: `worst_window`), with the factor E_s · D_c by
        which rank c's layer-0 output rows of shard s are scaled (1 exactly: paired)."""
        t, k = self.worst_window() if step is None else (step, 0 if microbatch is None else microbatch)
        enc = self.scale_used[t, k, :, 0]
        R = enc.size
        out: dict[str, list[Any]] = {k_: [] for k_ in ("shard", "consumer", "factor", "log2_factor", "paired")}
        for s in range(R):
            for c in range(R):
                factor = float(enc[s]) * float(np.float32(1.0 / enc[c]))
                out["shard"].append(s)
                out["consumer"].append(c)
                out["factor"].append(factor)
                out["log2_factor"].append(math.log2(factor) if factor > 0 else float("nan"))
                out["paired"].append(bool(np.float32(1.0 / enc[c]) == np.float32(1.0 / enc[s])))
        return out

    def skipped_updates(self) -> int:
        return int(self.skipped.sum())

    def findings(self) -> list[str]:
        """What the telemetry shows against the design rule, one phrase each ([] when nothing)."""
        out = []
        ins, exp = int(self.history_insertions().sum()), int(self.expected_insertions.sum())
        if ins != exp:
            out.append(f"{ins} history insertions where the rule makes {exp}")
        reads, unpaired = int(self.reads.sum()), int(self.unpaired.sum())
        if unpaired:
            out.append(f"{unpaired} of {reads} reads unpaired")
        ops, bad = int(self.recompute_operands.sum()), int(self.recompute_mismatches.sum())
        if bad:
            out.append(f"recompute differs from the forward in {bad} of {ops} operands")
        moved = self.idle_changes()
        if moved:
            out.append(f"the idle module's scales moved {moved} times in steps it did not run")
        spread = float(np.max(self.scale_spread()))
        if spread > 1.0:
            out.append(f"ranks disagree on the gathered input's scale (up to ×{spread:.4g})")
        inserted = self.inserted[:, 0, 0]
        window_max = np.nanmax(self.amax_seen[:, :, :, 0], axis=(1, 2))
        low = int(np.sum(np.isfinite(inserted) & (inserted < window_max)))
        if low and self.design.accumulate != "each":
            out.append(f"the inserted amax is below the step's maximum in {low} steps")
        skipped = self.skipped_updates()
        if skipped:
            out.append(f"{skipped} of {int(self.attempted.sum())} optimizer steps skipped")
        return out

    def verdict(self) -> str:
        """One line: the signatures found, or that the state machine followed its rule."""
        found = self.findings()
        if found:
            return "; ".join(found)
        return (f"state advanced by the rule ({int(self.history_insertions().sum())} insertions), every read "
                f"paired, the recompute replayed the forward")

    def summary_lines(self) -> list[str]:
        c, d = self.config, self.design
        kind = "defect" if d.defective else "corrected"
        lines = [f"stateful: {d.name} ({d.scenario}, {kind}); {self.cast_format}; {c.steps} steps × "
                 f"{c.microbatches} microbatches × {c.ranks} ranks; history {c.history} ({c.algo})"]
        lines.append(f"state: {int(self.history_insertions().sum())} history insertions, "
                     f"{int(self.scale_advances().sum())} scale advances ({int(self.scale_changes().sum())} moved the "
                     f"scale); the rule makes {int(self.expected_insertions.sum())} insertions")
        focus = d.focus
        frac = self.clipped_fraction(focus)
        hit = [t for t in range(self.steps) if np.isfinite(frac[t]) and frac[t] > 0]
        worst = float(np.nanmax(frac)) if np.isfinite(frac).any() else 0.0
        lines.append(f"clipped ({ROLE_NAMES[focus]}): {len(hit)} of {self.steps} steps"
                     + (f", at {', '.join(map(str, hit[:8]))}{' …' if len(hit) > 8 else ''}; worst {percent(worst)}"
                        if hit else ""))
        lines.append(f"reads: {int(self.unpaired.sum())} of {int(self.reads.sum())} unpaired; recompute: "
                     f"{int(self.recompute_mismatches.sum())} of {int(self.recompute_operands.sum())} operands differ "
                     f"from the forward; gradient off the forward's by up to {float(np.nanmax(self.grad_mismatch)):.3g}")
        lines.append(f"gathered input: scales differ across ranks by up to ×{float(np.max(self.scale_spread())):.4g}; "
                     f"layer-0 output mis-scaled by up to {float(np.max(self.gemm_error)):.3g} (relative)")
        lines.append(f"optimizer: {int(self.attempted.sum())} steps attempted, {int(self.applied.sum())} applied, "
                     f"{self.skipped_updates()} skipped; last gradient norm {float(self.grad_norm[-1]):.4g}")
        lines.append(f"verdict: {self.verdict()}")
        return lines

    def summary(self) -> str:
        return "\n".join(self.summary_lines())

    # -- outputs ------------------------------------------------------------------------------------
    def step_row(self, t: int) -> dict[str, Any]:
        """Step t's telemetry as JSON values (the CSV's row)."""
        return {
            "step": t,
            "loss": float(self.loss[t]),
            "grad_norm": float(self.grad_norm[t]),
            "grad_mismatch": float(self.grad_mismatch[t]),
            "nonfinite": bool(self.nonfinite[t]),
            "attempted": bool(self.attempted[t]),
            "applied": bool(self.applied[t]),
            "skipped": bool(self.skipped[t]),
            "expert_ran": bool(self.expert_ran[t]),
            "history_insertions": int(self.history_insertions()[t]),
            "scale_advances": int(self.scale_advances()[t]),
            "scale_changes": int(self.scale_changes()[t]),
            "expected_insertions": int(self.expected_insertions[t]),
            "reads": int(self.reads[t]),
            "unpaired_reads": int(self.unpaired[t]),
            "recompute_operands": int(self.recompute_operands[t]),
            "recompute_mismatches": int(self.recompute_mismatches[t]),
            "gemm_error": float(self.gemm_error[t]),
            "output_error": float(self.output_error[t]),
            "scale_spread": float(self.scale_spread()[t]),
        }

    def _cells(self, array: np.ndarray, i: int) -> list[list[list[Any]]]:
        cast = np.isfinite(self.scale_used[:, :, :, i])
        values = array[:, :, :, i]
        return [[[(_value(v) if m else None) for v, m in zip(row, mrow)] for row, mrow in zip(step, mstep)]
                for step, mstep in zip(values, cast)]

    def to_dict(self) -> dict[str, Any]:
        d = self.design
        steps = []
        for t in range(self.steps):
            row = self.step_row(t)
            frac = {role: self.clipped_fraction(role)[t] for role in ROLES}
            row["clipped_fraction"] = {role: (None if math.isnan(v) else float(v)) for role, v in frac.items()}
            row["inserted_amax"] = {role: [None if math.isnan(v) else float(v) for v in self.inserted[t, i]]
                                    for i, role in enumerate(ROLES)}
            steps.append(row)
        return {
            "simulation": "stateful",
            "parameters": self.parameters,
            "design": {"name": d.name, "scenario": d.scenario, "defective": d.defective,
                       "description": d.description(), "source": d.source(), "signature": d.signature(),
                       "rules": d.rules(), "focus": d.focus},
            "cast_format": self.cast_format,
            "verdict": self.verdict(),
            "elapsed_s": self.elapsed_s,
            "totals": {
                "optimizer_steps_attempted": int(self.attempted.sum()),
                "optimizer_steps_applied": int(self.applied.sum()),
                "optimizer_steps_skipped": self.skipped_updates(),
                "history_insertions": int(self.history_insertions().sum()),
                "scale_advances": int(self.scale_advances().sum()),
                "scale_changes": int(self.scale_changes().sum()),
                "expected_insertions": int(self.expected_insertions.sum()),
                "reads": int(self.reads.sum()),
                "unpaired_reads": int(self.unpaired.sum()),
                "unpaired_reads_by_role": {role: int(self.unpaired_by_role[:, i].sum()) for i, role in enumerate(ROLES)},
                "recompute_operands": int(self.recompute_operands.sum()),
                "recompute_mismatches": int(self.recompute_mismatches.sum()),
            },
            "steps": steps,
            "owners": {role: {"insertions": self.insertions[:, i].tolist(), "advances": self.advances[:, i].tolist(),
                              "changes": self.changes[:, i].tolist()} for i, role in enumerate(ROLES)},
            "cells": {role: {"encode_scale": self._cells(self.scale_used, i), "amax": self._cells(self.amax_seen, i),
                             "clipped_fraction": self._cells(self.clipped, i)} for i, role in enumerate(ROLES)},
            "final_history": {role: list(v) for role, v in self.final_history.items()},
        }

    def csv_text(self) -> str:
        """One row per step: STEP_COLUMNS, then clipped_<role> and insertions_<role>; absent cells empty."""
        header = list(STEP_COLUMNS) + [f"clipped_{r}" for r in ROLES] + [f"insertions_{r}" for r in ROLES]
        lines = [",".join(header)]
        for t in range(self.steps):
            row = self.step_row(t)
            cells = [str(row[k]) for k in STEP_COLUMNS]
            for role in ROLES:
                v = float(self.clipped_fraction(role)[t])
                cells.append("" if math.isnan(v) else repr(v))
            cells += [str(int(self.insertions[t, i].sum())) for i in range(len(ROLES))]
            lines.append(",".join(cells))
        return "\n".join(lines) + "\n"
