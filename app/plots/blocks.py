"""Plots of the block-formats simulation (`simulations.blocks.simulate_blocks`): each scheme's RMS
relative error against its bits per element (MX per element format and scale rule; NVFP4 1×16 and
16×16), and per-block errors of the schemes of one block format (the scale rules of an MX format, or
NVFP4's two layouts). `blocks_sources(result)` gives the column data; the figure builders are pure."""

from __future__ import annotations

from typing import Any

from bokeh.layouts import column
from bokeh.models import HoverTool
from bokeh.plotting import figure

from .delayed import as_source
from .style import CURRENT_COLOR, DELAYED_COLOR, HIGHLIGHT_COLOR, MANTISSA_COLOR

_RULE_COLORS = {"floor": DELAYED_COLOR, "ceil": CURRENT_COLOR, "rceil": MANTISSA_COLOR, "even": HIGHLIGHT_COLOR,
                "e4m3_scale": "black"}


def blocks_sources(study: Any) -> dict[str, dict[str, list[Any]]]:
    """{'schemes': one row per scheme, 'blocks': per-block error per MX scheme (block index = row)}."""
    es = study.entries
    schemes = {
        "scheme": [e.scheme for e in es], "block_format": [e.block_format for e in es],
        "elem_format": [e.elem_format for e in es],
        "scale_rule": [e.scale_rule for e in es], "bits_per_element": [e.bits_per_element for e in es],
        "rms_rel_error": [e.rms_rel_error for e in es], "sqnr_db": [e.sqnr_db for e in es],
        "color": [_RULE_COLORS.get(e.scale_rule, "grey") for e in es],
    }
    blocks: dict[str, list[Any]] = {"block": list(range(len(study.block_amax))), "block_amax": study.block_amax.tolist()}
    for e in es:
        blocks[e.scheme] = e.block_rms_rel_error.tolist()
    return {"schemes": schemes, "blocks": blocks}


def blocks_figure(sources: dict[str, Any], block_format: str = "MXFP8_E4M3",
                  title: str = "Block formats: error against bits per element", width: int = 760) -> Any:
    src = as_source(sources["schemes"])
    top = figure(title=title, height=340, width=width, y_axis_type="log", x_axis_label="bits per element",
                 y_axis_label="RMS relative error")
    top.scatter("bits_per_element", "rms_rel_error", source=src, size=10, color="color", alpha=0.8)
    top.add_tools(HoverTool(tooltips=[("scheme", "@scheme"), ("bits/element", "@bits_per_element{0.000}"),
                                      ("RMS rel. error", "@rms_rel_error{0.0000}"), ("SQNR", "@sqnr_db{0.0} dB")]))
    blk = as_source(sources["blocks"])
    bot = figure(title=f"per-block error, {block_format}, by scheme", height=260, width=width,
                 y_axis_type="log", x_axis_label="block (32 elements)", y_axis_label="RMS relative error")
    dashes = ("solid", "dashed")
    n_drawn = 0
    for scheme, bf, rule in zip(src.data["scheme"], src.data["block_format"], src.data["scale_rule"]):
        if bf == block_format:
            bot.line("block", scheme, source=blk, color=_RULE_COLORS.get(rule, "grey"), legend_label=scheme,
                     line_dash=dashes[n_drawn % 2] if rule == "e4m3_scale" else "solid")
            n_drawn += 1
    if bot.legend:
        bot.legend.location = "top_left"
        bot.legend.click_policy = "hide"
    return column(top, bot)
