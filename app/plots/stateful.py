"""Figures of a stateful-scaling run (`simulations.stateful.StatefulResult`), for the WhoseAmax widget
and `lowprec simulate stateful --html`: every number drawn comes from the result's own tables
(`window_table`, `check_table`, `read_matrix`); this module only lays them out.

- amax: per (step, microbatch) window of the design's focus tensor, the largest amax a rank observed
  (ink dots) against the amax the scale of that cast was sized for (orange steps); a window that
  clipped is marked with an orange cross;
- state transitions: history insertions per step (bars) against the count the corrected rule makes
  for this schedule (grey dashes);
- checks: per step, the focus tensor's clipped share, the share of reads whose decode scale is not
  the pair of the codes', and the share of recomputed operands that differ from the forward's (%);
- whose scale reads which shard: the layer-0 output factor E_s · D_c for each shard s of the gathered
  input and each consumer rank c, at the window where the ranks' scales differ most (grey: paired);
- gradient norm per step, skipped optimizer steps marked.
"""

from __future__ import annotations

import html
import math
from typing import Any

from bokeh.layouts import column, row
from bokeh.models import ColumnDataSource, DataRange1d, HoverTool
from bokeh.models import Div  # type: ignore[attr-defined]
from bokeh.palettes import PuOr11
from bokeh.plotting import figure

from lowprec.simulations.stateful import ROLE_NAMES

from .style import CURRENT_COLOR, DELAYED_COLOR, ERROR_COLOR, HIGHLIGHT_COLOR, SERIES_PALETTE, gap_float
from .widget_heatmap import ZERO_COLOR

__all__ = ["amax_title", "stateful_figure", "stateful_figures", "stateful_sources"]

#: log2 of a mis-scaling factor, clamped to ±5 binades, onto a diverging palette (paired: grey)
_FACTOR_PALETTE = PuOr11
_FACTOR_SPAN = 5.0


def _factor_color(log2_factor: float, paired: bool) -> str:
    if paired or not math.isfinite(log2_factor):
        return ZERO_COLOR
    n = len(_FACTOR_PALETTE)
    u = (max(-_FACTOR_SPAN, min(_FACTOR_SPAN, log2_factor)) + _FACTOR_SPAN) / (2 * _FACTOR_SPAN)
    return _FACTOR_PALETTE[max(0, min(n - 1, int(round(u * (n - 1)))))]


def stateful_sources(result: Any) -> dict[str, dict[str, list[Any]]]:
    """Column dicts: `windows` (the focus tensor per step and microbatch), `clips` (its windows
    that clipped), `steps` (the per-step checks), `skipped`, `reads` (the read matrix)."""
    w = result.window_table(result.design.focus)
    windows = {"x": w["x"], "step": w["step"], "microbatch": w["microbatch"],
               "observed": [gap_float(v) for v in w["observed"]], "sized_for": [gap_float(v) for v in w["sized_for"]],
               "clipped_pct": [100.0 * gap_float(v) for v in w["clipped"]]}
    clipped = [i for i, v in enumerate(w["clipped"]) if v is not None and v > 0]
    clips = {k: [windows[k][i] for i in clipped] for k in ("x", "step", "microbatch", "observed", "clipped_pct")}
    checks = result.check_table()
    steps = {"step": checks["step"], "insertions": checks["insertions"], "expected": checks["expected"],
             "changes": checks["changes"], "clipped_pct": [gap_float(v) for v in checks["clipped_pct"]],
             "unpaired_pct": checks["unpaired_pct"], "mismatch_pct": checks["mismatch_pct"],
             "grad_norm": [gap_float(v) for v in checks["grad_norm"]],
             "grad_mismatch": [gap_float(v) for v in checks["grad_mismatch"]],
             "expert": ["ran" if v else "did not run" for v in checks["expert_ran"]]}
    finite = [g for g in steps["grad_norm"] if math.isfinite(g)]
    top = max(finite) if finite else 1.0
    skipped_steps = [t for t, s in enumerate(checks["skipped"]) if s]
    m = result.read_matrix()
    reads = {"x": m["consumer"], "y": m["shard"], "shard": m["shard"], "consumer": m["consumer"],
             "factor": m["factor"], "color": [_factor_color(f, p) for f, p in zip(m["log2_factor"], m["paired"])],
             "label": [f"{f:.3g}" for f in m["factor"]]}
    return {"windows": windows, "clips": clips, "steps": steps,
            "skipped": {"step": skipped_steps, "y": [top] * len(skipped_steps)}, "reads": reads}


def amax_title(focus_name: str) -> str:
    """The amax figure's title for a focus tensor."""
    return f"{focus_name}: amax observed (dots) vs the amax its scale was sized for (orange)"


def stateful_figures(sources: dict[str, ColumnDataSource], focus_name: str = "focus tensor",
                     width: int = 640) -> tuple[Any, Any]:
    """The five figures over the sources, built once (the widget replaces their columns); returns
    (layout, the amax figure, whose title names the focus tensor)."""
    tools = "pan,wheel_zoom,reset"
    amax = figure(title=amax_title(focus_name),
                  width=width, height=240, x_axis_label="step (microbatches between)", y_axis_label="amax",
                  y_axis_type="log", tools=tools)
    amax.step("x", "sized_for", source=sources["windows"], mode="after", color=DELAYED_COLOR, line_width=2,
              legend_label="sized for")
    # a window whose neighbours cast nothing (a cached weight, an idle module) has no step to draw
    amax.scatter("x", "sized_for", source=sources["windows"], marker="dash", size=10, line_width=3,
                 color=DELAYED_COLOR, legend_label="sized for")
    amax.scatter("x", "observed", source=sources["windows"], color=ERROR_COLOR, size=5, legend_label="observed")
    amax.scatter("x", "observed", source=sources["clips"], marker="x", color=DELAYED_COLOR, size=12, line_width=3,
                 legend_label="clipped")
    amax.add_tools(HoverTool(tooltips=[("step, microbatch", "@step, @microbatch"), ("observed", "@observed{0.000e}"),
                                       ("sized for", "@sized_for{0.000e}"), ("clipped", "@clipped_pct{0.00}%")]))
    amax.legend.location = "top_left"
    amax.legend.orientation = "horizontal"

    trans = figure(title="history insertions per step (dashes: the rule's count)", width=width // 2, height=220,
                   x_axis_label="step", y_axis_label="insertions", tools=tools, x_range=DataRange1d())
    trans.vbar(x="step", top="insertions", width=0.8, source=sources["steps"], color=CURRENT_COLOR)
    trans.scatter("step", "expected", source=sources["steps"], marker="dash", size=22, line_width=3,
                  color=HIGHLIGHT_COLOR)
    trans.add_tools(HoverTool(tooltips=[("step", "@step"), ("insertions", "@insertions"),
                                        ("the rule's count", "@expected"), ("scale changes", "@changes"),
                                        ("layer-1 module", "@expert")]))

    checks = figure(title="checks per step: clipped, unpaired reads, recompute ≠ forward (%)", width=width // 2,
                    height=220, x_axis_label="step", y_axis_label="%", tools=tools, x_range=trans.x_range)
    for col, color, label in (("clipped_pct", DELAYED_COLOR, "clipped"), ("unpaired_pct", CURRENT_COLOR, "unpaired"),
                              ("mismatch_pct", SERIES_PALETTE[4], "recompute ≠ forward")):
        checks.line("step", col, source=sources["steps"], color=color, line_width=2, legend_label=label)
        checks.scatter("step", col, source=sources["steps"], color=color, size=4)
    checks.add_tools(HoverTool(tooltips=[("step", "@step"), ("clipped", "@clipped_pct{0.00}%"),
                                         ("unpaired reads", "@unpaired_pct{0.0}%"),
                                         ("recompute ≠ forward", "@mismatch_pct{0.0}%")]))
    checks.legend.location = "top_left"

    reads = figure(title="layer-0 output factor E_s · D_c (grey: paired)", width=width // 2, height=240,
                   x_axis_label="consumer rank c", y_axis_label="shard s (rank that cast it)", tools=tools,
                   y_range=DataRange1d(flipped=True))
    reads.rect("x", "y", width=0.95, height=0.95, source=sources["reads"], fill_color="color", line_color=None)
    reads.text("x", "y", text="label", source=sources["reads"], text_align="center", text_baseline="middle",
               text_font_size="9pt", color=ERROR_COLOR)
    reads.grid.visible = False
    reads.add_tools(HoverTool(tooltips=[("shard, consumer", "@shard, @consumer"), ("factor", "@factor{0.0000}")]))

    grad = figure(title="gradient norm (× = skipped step)", width=width // 2, height=240, x_axis_label="step",
                  y_axis_label="‖grad‖", tools=tools, x_range=trans.x_range)
    grad.line("step", "grad_norm", source=sources["steps"], color=ERROR_COLOR, line_width=2)
    grad.scatter("step", "grad_norm", source=sources["steps"], color=ERROR_COLOR, size=4)
    grad.scatter("step", "y", source=sources["skipped"], marker="x", size=12, color=DELAYED_COLOR, line_width=3)
    grad.add_tools(HoverTool(tooltips=[("step", "@step"), ("gradient norm", "@grad_norm{0.0000e}"),
                                       ("off the forward's gradient by", "@grad_mismatch{0.000e}")]))
    layout = column(amax, row(trans, checks, sizing_mode="stretch_width"),
                    row(reads, grad, sizing_mode="stretch_width"), sizing_mode="stretch_width")
    return layout, amax


def stateful_figure(result: Any, width: int = 640) -> Any:
    """The `--html` page's layout: the design and verdict, then the five figures."""
    sources = {name: ColumnDataSource(data=cols) for name, cols in stateful_sources(result).items()}
    d = result.design
    head = Div(text=(f"<b>{html.escape(d.name)}</b> ({html.escape(d.scenario)}, "
                     f"{'defect' if d.defective else 'corrected'}): {html.escape(d.description())}<br>"
                     f"<b>Source:</b> {html.escape(d.source())}<br><b>Verdict:</b> {html.escape(result.verdict())}"),
               width=width)
    return column(head, stateful_figures(sources, ROLE_NAMES[d.focus], width=width)[0])
