"""Plots of the grouping studies (`simulations.scaling`): the outlier study as bars of the outlier
group's error against the other groups' per granularity (with bits per element), and the scale-choice
study as RMS relative error against tensor magnitude for a fixed encode scale and the amax scale.
`*_sources(result)` give column data; the figure builders are pure."""

from __future__ import annotations

from typing import Any

from bokeh.models import FactorRange, HoverTool
from bokeh.plotting import figure

from .delayed import as_source
from .style import CURRENT_COLOR, DELAYED_COLOR, HIGHLIGHT_COLOR


def outlier_sources(study: Any) -> dict[str, dict[str, list[Any]]]:
    """{'granularities': columns}: granularity, the errors of the outlier's group (its ordinary
    elements), of the other groups (median) and of all ordinary elements, bits per element."""
    es = study.entries
    return {"granularities": {
        "granularity": [e.granularity for e in es],
        "outlier_group": [e.outlier_group_rms_rel_error for e in es],
        "other_groups": [e.other_groups_rms_rel_error for e in es],  # NaN (no other group) leaves a gap
        "ordinary": [e.ordinary_rms_rel_error for e in es],
        "bits_per_element": [e.bits_per_element for e in es],
        "groups_affected": [e.groups_affected_fraction for e in es],
    }}


def outlier_figure(sources: dict[str, Any], title: str = "One outlier, several groupings",
                   width: int = 700) -> Any:
    src = as_source(sources["granularities"])
    fig = figure(x_range=FactorRange(*src.data["granularity"]), title=title, height=400, width=width,
                 y_axis_label="RMS relative error")
    fig.vbar(x="granularity", top="ordinary", source=src, width=0.7, color=HIGHLIGHT_COLOR, alpha=0.35,
             legend_label="all ordinary elements")
    fig.scatter("granularity", "outlier_group", source=src, size=11, color=DELAYED_COLOR,
                legend_label="ordinary elements sharing the outlier's scale")
    fig.scatter("granularity", "other_groups", source=src, size=11, marker="square", color=CURRENT_COLOR,
                legend_label="other groups (median)")
    fig.add_tools(HoverTool(tooltips=[("granularity", "@granularity"), ("bits/element", "@bits_per_element{0.000}"),
                                      ("groups sized by the outlier", "@groups_affected{0.0%}")]))
    fig.add_layout(fig.legend[0], "below")  # keep the legend off the points
    return fig


def scale_choice_sources(study: Any) -> dict[str, dict[str, list[Any]]]:
    """{'curves': columns}: magnitude and, per format, fixed-scale and amax-scale errors."""
    cols: dict[str, list[Any]] = {"magnitude": study.magnitudes.tolist()}
    for name in study.formats:
        cols[f"{name}_fixed"] = study.rms_rel_error_fixed[name].tolist()
        cols[f"{name}_amax"] = study.rms_rel_error_amax[name].tolist()
    return {"curves": cols}


def scale_choice_figure(sources: dict[str, Any], formats_: list[str],
                        title: str = "Fixed encode scale vs amax scale", width: int = 700) -> Any:
    src = as_source(sources["curves"])
    fig = figure(title=title, height=320, width=width, x_axis_type="log", y_axis_type="log",
                 x_axis_label="tensor magnitude (σ)", y_axis_label="RMS relative error")
    dashes = ["solid", "dashed", "dotted", "dotdash"]
    for i, name in enumerate(formats_):
        fig.line("magnitude", f"{name}_fixed", source=src, color=DELAYED_COLOR, line_dash=dashes[i % 4],
                 legend_label=f"{name} fixed scale")
        fig.line("magnitude", f"{name}_amax", source=src, color=CURRENT_COLOR, line_dash=dashes[i % 4],
                 legend_label=f"{name} amax scale")
    fig.legend.location = "bottom_left"
    return fig
