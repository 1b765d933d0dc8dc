"""Plots of the grouping studies (`simulations.studies.grouping`), one figure per study, each a pure builder
over column data:

- outlier: per granularity, the error of the ordinary elements sharing the outlier's scale against
  the median of the other groups and the error of every ordinary element (bits per element in the
  tooltip);
- scale_choice: RMS relative error against tensor magnitude for a fixed encode scale and the amax
  scale, per format;
- transpose: tensor-wide RMS relative error of the row-blocked view and of the column-blocked view
  quantized from the source or re-quantized from the row-blocked data (the bars of
  `widget_blocks.transpose_figure`);
- hadamard: RMS relative error of NVFP4 and MXFP4 without and with the random Hadamard transform.

`study_columns(study)` gives every source's columns for any study (empty columns for the other
studies' sources, so a widget can keep one set of sources); `study_figure(study)` draws one study.
"""

from __future__ import annotations

from typing import Any

from bokeh.models import ColumnDataSource, DataRange1d, FactorRange, HoverTool
from bokeh.plotting import figure

from lowprec.simulations.studies.grouping import STUDIES, OutlierStudy, ScaleChoiceStudy, TransposeStudy
from lowprec.simulations.studies.hadamard import HadamardStudy

from .delayed import as_source
from .style import CURRENT_COLOR, DELAYED_COLOR, HIGHLIGHT_COLOR
from .widget_blocks import TRANSPOSE_VIEWS, transpose_figure

#: formats of the scale-choice study (its curves are named `<format>_fixed`, `<format>_amax`)
SCALE_CHOICE_FORMATS = ("E4M3FN", "E5M2")
#: bars of the hadamard figure, in order: (label, colour)
HADAMARD_BARS: tuple[tuple[str, str], ...] = (
    ("NVFP4", DELAYED_COLOR), ("NVFP4 + RHT", CURRENT_COLOR), ("MXFP4", DELAYED_COLOR), ("MXFP4 + RHT", CURRENT_COLOR),
)


def outlier_sources(study: OutlierStudy | None) -> dict[str, dict[str, list[Any]]]:
    """{'granularities': columns}: granularity, the errors of the outlier's group (its ordinary
    elements), of the other groups (median) and of all ordinary elements, bits per element."""
    es = study.entries if study is not None else []
    return {"granularities": {
        "granularity": [e.granularity for e in es],
        "outlier_group": [e.outlier_group_rms_rel_error for e in es],
        "other_groups": [e.other_groups_rms_rel_error for e in es],  # NaN (no other group) leaves a gap
        "ordinary": [e.ordinary_rms_rel_error for e in es],
        "bits_per_element": [e.bits_per_element for e in es],
        "groups_affected": [e.groups_affected_fraction for e in es],
    }}


def outlier_figure(sources: dict[str, Any], title: str = "One outlier, several groupings",
                   width: int = 700, height: int = 400) -> Any:
    src = as_source(sources["granularities"])
    fig = figure(x_range=FactorRange(*src.data["granularity"]), title=title, height=height, width=width,
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


def scale_choice_sources(study: ScaleChoiceStudy | None) -> dict[str, dict[str, list[Any]]]:
    """{'curves': columns}: magnitude and, per format, fixed-scale and amax-scale errors."""
    cols: dict[str, list[Any]] = {"magnitude": [] if study is None else study.magnitudes.tolist()}
    for name in SCALE_CHOICE_FORMATS:
        cols[f"{name}_fixed"] = [] if study is None else study.rms_rel_error_fixed[name].tolist()
        cols[f"{name}_amax"] = [] if study is None else study.rms_rel_error_amax[name].tolist()
    return {"curves": cols}


def scale_choice_figure(sources: dict[str, Any], formats_: tuple[str, ...] = SCALE_CHOICE_FORMATS,
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


def transpose_sources(study: TransposeStudy | None) -> dict[str, dict[str, list[Any]]]:
    """{'transpose': bars}: one per TRANSPOSE_VIEWS entry with its tensor-wide error."""
    if study is None:
        return {"transpose": {"view": [], "error": [], "color": []}}
    errors = [study.rms_rel_error_row, study.rms_rel_error_col_from_source, study.rms_rel_error_col_from_rows]
    return {"transpose": {"view": [label for label, _ in TRANSPOSE_VIEWS], "error": errors,
                          "color": [color for _, color in TRANSPOSE_VIEWS]}}


def hadamard_sources(study: HadamardStudy | None) -> dict[str, dict[str, list[Any]]]:
    """{'hadamard': bars}: one per HADAMARD_BARS entry with its RMS relative error."""
    if study is None:
        return {"hadamard": {"scheme": [], "error": [], "color": []}}
    errors = [study.nvfp4_rms_rel_error_before, study.nvfp4_rms_rel_error_after,
              study.mxfp4_rms_rel_error_before, study.mxfp4_rms_rel_error_after]
    return {"hadamard": {"scheme": [label for label, _ in HADAMARD_BARS], "error": errors,
                         "color": [color for _, color in HADAMARD_BARS]}}


def hadamard_figure(sources: dict[str, Any], width: int = 700) -> Any:
    """Bars over `hadamard` (`scheme`, `error`, `color`)."""
    src = as_source(sources["hadamard"])
    fig = figure(title="FP4 casts without and with the random Hadamard transform (ordinary elements)",
                 x_range=FactorRange(factors=[label for label, _ in HADAMARD_BARS]), y_range=DataRange1d(start=0),
                 width=width, height=260, y_axis_label="RMS rel. error", tools="reset")
    fig.vbar(x="scheme", top="error", width=0.6, source=src, fill_color="color", line_color=None)
    fig.add_tools(HoverTool(tooltips=[("scheme", "@scheme"), ("RMS rel. error", "@error{0.0000e}")]))
    return fig


def study_columns(study: Any) -> dict[str, dict[str, list[Any]]]:
    """The columns of every study's sources: the given study's data, empty columns for the others."""
    return {
        **outlier_sources(study if isinstance(study, OutlierStudy) else None),
        **scale_choice_sources(study if isinstance(study, ScaleChoiceStudy) else None),
        **transpose_sources(study if isinstance(study, TransposeStudy) else None),
        **hadamard_sources(study if isinstance(study, HadamardStudy) else None),
    }


def study_figure_of(name: str, sources: dict[str, Any], width: int = 700) -> Any:
    """The figure of study `name`, built over `sources` (named as in `study_columns`)."""
    if name == "outlier":
        return outlier_figure(sources, width=width, height=300)
    if name == "scale_choice":
        return scale_choice_figure(sources, width=width)
    if name == "transpose":
        return transpose_figure(as_source(sources["transpose"]), width=width)
    if name == "hadamard":
        return hadamard_figure(sources, width=width)
    raise ValueError(f"unknown study {name!r}; studies: {', '.join(STUDIES)}")


def study_figures(sources: dict[str, Any], width: int = 700) -> dict[str, Any]:
    """One figure per study name, built over `sources` (named as in `study_columns`)."""
    return {name: study_figure_of(name, sources, width) for name in STUDIES}


def study_figure(study: Any) -> Any:
    """The figure of one study (for standalone HTML)."""
    sources = {name: ColumnDataSource(cols) for name, cols in study_columns(study).items()}
    return study_figures(sources)[study.study]
