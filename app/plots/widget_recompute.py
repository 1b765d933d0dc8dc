"""Figures of the recompute-divergence widget, over `simulations.recompute.RecomputeResult`
telemetry: a layer × step heatmap of the forward-vs-recompute difference of each checkpointed
activation (grey = bitwise identical, orange = identical but the consumer's descale was not the one
the codes were encoded with, palette = log10 of the max abs difference, white = not recomputed or
not run), the number of state commits per step against the one-per-layer rule, and the gradient-norm
trace with skipped optimizer steps marked. `recompute_columns` turns a result into the source columns;
`recompute_figures` builds the figures once over those sources.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from bokeh.layouts import column, row
from bokeh.models import ColumnDataSource, HoverTool
from bokeh.models.annotations import Span
from bokeh.palettes import Inferno256
from bokeh.plotting import figure

from .style import CURRENT_COLOR, DELAYED_COLOR, HIGHLIGHT_COLOR, gap_float
from .widget_heatmap import ZERO_COLOR, heatmap_figure

NOT_RUN_COLOR = "#ffffff"
UNPAIRED_COLOR = DELAYED_COLOR
#: mismatching cells: dark (small difference) to bright (large), skipping the palette's near-black end
MISMATCH_PALETTE = Inferno256[48:240]


def recompute_columns(result: Any) -> dict[str, dict[str, list[Any]]]:
    """Source columns: `cells` (one row per step × layer), `steps` (one row per step) and
    `skipped` (the steps whose optimizer update was skipped)."""
    n_steps, n_layers = result.recomputed.shape
    cells: dict[str, list[Any]] = {k: [] for k in (
        "x", "y", "step", "layer", "status", "max_abs_diff", "max_rel_diff", "log10_diff", "commits",
        "color")}
    mismatch_logs = [
        math.log10(d) if d > 0 else -45.0
        for d, rec, eq in zip(result.max_abs_diff.ravel(), result.recomputed.ravel(),
                              result.bitwise_equal.ravel())
        if rec and not eq and math.isfinite(d)
    ]
    lo = min(mismatch_logs) if mismatch_logs else 0.0
    hi = max(mismatch_logs) if mismatch_logs else 1.0
    n = len(MISMATCH_PALETTE)
    for t in range(n_steps):
        for layer in range(n_layers):
            rec = bool(result.recomputed[t, layer])
            d = float(result.max_abs_diff[t, layer])
            if not result.attempted[t] or (result.failure is not None and t >= result.failure["step"]
                                           and not rec):
                status, color, logd = "not run", NOT_RUN_COLOR, float("nan")
            elif not rec:
                status, color, logd = "not recomputed", NOT_RUN_COLOR, float("nan")
            elif result.bitwise_equal[t, layer]:
                logd = float("nan")
                if result.paired_forward[t, layer]:
                    status, color = "bitwise identical", ZERO_COLOR
                else:
                    status, color = "identical, consumer descale unpaired", UNPAIRED_COLOR
            else:
                logd = math.log10(d) if d > 0 else -45.0
                idx = 0 if hi == lo else int((logd - lo) / (hi - lo) * (n - 1))
                status, color = "differs", MISMATCH_PALETTE[max(0, min(n - 1, idx))]
            cells["x"].append(t)
            cells["y"].append(layer)
            cells["step"].append(t)
            cells["layer"].append(layer)
            cells["status"].append(status)
            cells["max_abs_diff"].append(gap_float(d))
            cells["max_rel_diff"].append(gap_float(float(result.max_rel_diff[t, layer])))
            cells["log10_diff"].append(logd)
            cells["commits"].append(int(result.commits[t, layer]))
            cells["color"].append(color)
    steps: dict[str, list[Any]] = {
        "step": list(range(n_steps)),
        "state_commits": [int(c) for c in result.state_commits],
        "grad_norm": [gap_float(float(g)) for g in result.grad_norm],
        "loss": [gap_float(float(v)) for v in result.loss],
        "skipped": [bool(s) for s in result.skipped],
        "ran": [bool(a) and not (result.failure is not None and t == result.failure["step"])
                for t, a in enumerate(result.attempted)],
    }
    skipped_steps = [t for t in range(n_steps) if result.skipped[t]]
    finite_norms = [g for g in steps["grad_norm"] if math.isfinite(g)]
    marker_y = max(finite_norms) if finite_norms else 1.0
    skipped: dict[str, list[Any]] = {"step": skipped_steps, "y": [marker_y] * len(skipped_steps)}
    return {"cells": cells, "steps": steps, "skipped": skipped}


def recompute_figures(
    sources: dict[str, ColumnDataSource], expected_commits: int, width: int = 640
) -> tuple[Any, Span]:
    """Heatmap over the `cells` source, commits and grad-norm over `steps` and `skipped`; returns
    (layout, expected-commits span) so the widget can move the reference line (the run's
    `expected_state_commits`: one per layer, none for the stateless control)."""
    heat = heatmap_figure(
        sources["cells"], "forward vs recompute (grey = bitwise identical; colour = log10 max difference)",
        "step", "layer",
        [("step", "@step"), ("layer", "@layer"), ("status", "@status"),
         ("max |forward - recompute|", "@max_abs_diff{0.000e}"),
         ("max relative difference", "@max_rel_diff{0.000e}"), ("state commits", "@commits")],
        width=width, height=220,
    )
    commits = figure(title="state commits per step (line: the design's rule)", width=width // 2, height=220,
                     x_axis_label="step", y_axis_label="commits", tools="pan,wheel_zoom,reset")
    commits.vbar(x="step", top="state_commits", width=0.8, source=sources["steps"], color=CURRENT_COLOR)
    expected = Span(location=expected_commits, dimension="width", line_color=HIGHLIGHT_COLOR, line_dash="dashed",
                    line_width=2)
    commits.add_layout(expected)
    commits.add_tools(HoverTool(tooltips=[("step", "@step"), ("commits", "@state_commits")]))
    grad = figure(title="gradient norm (× = skipped step)", width=width // 2, height=220, x_axis_label="step",
                  y_axis_label="‖grad‖", tools="pan,wheel_zoom,reset", x_range=commits.x_range)
    grad.line("step", "grad_norm", source=sources["steps"], color="black", line_width=2)
    grad.scatter("step", "grad_norm", source=sources["steps"], color="black", size=4)
    grad.scatter("step", "y", source=sources["skipped"], marker="x", size=12, color=DELAYED_COLOR, line_width=3)
    grad.add_tools(HoverTool(tooltips=[("step", "@step"), ("grad norm", "@grad_norm{0.0000e}"),
                                       ("loss", "@loss{0.0000e}")]))
    return column(heat, row(commits, grad), sizing_mode="stretch_width"), expected
