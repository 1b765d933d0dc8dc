"""The site's two colour themes (light and dark) and the one look every figure and table shares.

This module owns the colour roles of the page and of Bokeh figures, in both themes, and the pass
that gives any figure, layout or table the site's look (`style_bokeh`): sizes that follow the
column (plots resize to the width, tables scroll inside themselves), legends outside the data,
readable log ticks, titles that wrap instead of being cut, the light-theme colours of every
canvas part. The page's CSS (`CSS_VARIABLES`, written into every page) and the theme switch in
`static/lowprec.js` read the same tables: the switch maps each light value of `BOKEH_ROLES` to
its dark value on every Bokeh model of the page (served or exported), so the figures' own colours
change, not only the page around them.

Panel components take their colours from CSS custom properties; `app.layout.LowprecDesign` is
Panel's native design without its per-component variable sheet, so those properties inherit from
the page root, where `CSS_VARIABLES` sets them per theme. No Panel import here (the `--html` writers
of `lowprec simulate` use `style_bokeh` too).
"""

from __future__ import annotations

import textwrap
from typing import Any, Iterator

__all__ = ["BOKEH_ROLES", "CSS_VARIABLES", "INK", "PAGE", "style_bokeh", "theme_table", "wrap_title"]

#: page colours per theme (CSS custom properties --lp-<role>)
PAGE: dict[str, dict[str, str]] = {
    "light": {
        "bg": "#ffffff", "surface": "#f3f5f7", "text": "#1c2127", "muted": "#4f5964",
        "border": "#d5dae0", "link": "#0a58b0", "focus": "#1a66d6", "accent": "#0a58b0",
        "code-bg": "#eef1f4", "mark-done": "#1b7a3a", "mark-part": "#8a5a00",
    },
    "dark": {
        "bg": "#15181c", "surface": "#1f242a", "text": "#e4e7eb", "muted": "#aab3bd",
        "border": "#3a414a", "link": "#8cc4ff", "focus": "#8ab4f8", "accent": "#8cc4ff",
        "code-bg": "#262c33", "mark-done": "#6fd08c", "mark-part": "#f0c060",
    },
}

#: the glyph colour for marks that are "ink" (the value being cast, outlines, reference lines):
#: dark grey on light, light grey on dark
INK = "#222222"

#: Bokeh canvas colours: role → (light value, dark value). Figures are built with the light values;
#: the theme switch replaces each light value with the dark one (and back), property by property.
BOKEH_ROLES: dict[str, tuple[str, str]] = {
    "plot_bg": ("#ffffff", "#1c2026"),
    "border_fill": ("#fefefe", "#15181c"),  # the page background (kept distinct from plot_bg)
    "outline": ("#d5dae0", "#3a414a"),
    "grid": ("#e6e9ed", "#2d333a"),
    "axis": ("#5f6a75", "#9aa4ae"),
    "text": ("#1c2127", "#e4e7eb"),
    "muted_text": ("#4f5964", "#b3bcc5"),
    "ink": (INK, "#e6e6e6"),
    "ink_black": ("black", "#e6e6e6"),
    "legend_bg": ("#fdfdfd", "#1c2026"),
}

# Panel's variables (the names of its default/dark theme sheets) in terms of the page roles
_PANEL_VARS = {
    "--panel-primary-color": "accent", "--panel-background-color": "bg",
    "--panel-on-background-color": "text", "--panel-surface-color": "surface",
    "--panel-on-surface-color": "text", "--panel-border-color": "border",
    "--design-background-color": "bg", "--design-background-text-color": "text",
    "--design-surface-color": "surface", "--design-surface-text-color": "text",
    "--design-primary-color": "accent",
}
# alert boxes (Panel's Alert pane) per theme: (background, text, border)
_ALERTS = {
    "light": {"info": ("#e7f3fb", "#0b4a6e", "#9fd0ee"), "danger": ("#fbe9eb", "#8a1c28", "#efb1b8"),
              "warning": ("#fff6df", "#6b4c00", "#f0d48a"), "success": ("#e6f4ea", "#145a2c", "#a7d7b5"),
              "primary": ("#e6efff", "#0b3d91", "#a9c4f5"), "secondary": ("#f0f1f3", "#3a4047", "#c9cdd2"),
              "light": ("#fafafa", "#3a4047", "#e3e5e8"), "dark": ("#e3e5e8", "#1c2127", "#b9bec4")},
    "dark": {"info": ("#0f2d3d", "#a9dcf7", "#1f5572"), "danger": ("#3a1419", "#f4b4bc", "#6e2630"),
             "warning": ("#33290b", "#f3d98c", "#66531a"), "success": ("#12301d", "#a6e0b8", "#25593a"),
             "primary": ("#132744", "#b4ccf7", "#2a4a80"), "secondary": ("#24282d", "#d4d9de", "#3e454d"),
             "light": ("#24282d", "#e4e7eb", "#3e454d"), "dark": ("#101316", "#e4e7eb", "#3e454d")},
}


def _vars(theme: str) -> str:
    roles = PAGE[theme]
    lines = [f"  --lp-{k}: {v};" for k, v in roles.items()]
    lines += [f"  {name}: {roles[role]};" for name, role in _PANEL_VARS.items()]
    for kind, (bg, fg, border) in _ALERTS[theme].items():
        lines += [f"  --{kind}-bg-subtle: {bg};", f"  --{kind}-text-color: {fg};",
                  f"  --{kind}-border-subtle: {border};"]
    lines.append(f"  color-scheme: {theme};")
    return "\n".join(lines)


#: the CSS custom properties of both themes: light by default, dark under [data-theme="dark"]
CSS_VARIABLES = (":root {\n" + _vars("light") + "\n}\n:root[data-theme=\"dark\"] {\n" + _vars("dark")
                 + "\n}\n")


def theme_table() -> dict[str, Any]:
    """What the theme switch in the page needs: light → dark value per Bokeh colour role."""
    return {"roles": {k: list(v) for k, v in BOKEH_ROLES.items()}}


# ------------------------------------------------------------------------------------------------
# figures and tables
# ------------------------------------------------------------------------------------------------

TITLE_CHARS = 44  # a title longer than this wraps (a plot at phone width holds about this many)

#: stylesheet given to every DataTable: theme colours, readable rows, a visible keyboard focus
TABLE_CSS = """
.slick-header-columns, .slick-header-column { background: var(--lp-surface) !important;
  color: var(--lp-text) !important; border-color: var(--lp-border) !important; }
.slick-row, .slick-row.odd, .slick-row.even, .slick-cell { background: var(--lp-bg) !important;
  color: var(--lp-text) !important; border-color: var(--lp-border) !important; }
.slick-row.odd .slick-cell { background: var(--lp-surface) !important; }
.slick-cell.active, .slick-cell:focus { outline: 2px solid var(--lp-focus) !important; }
.slick-viewport { background: var(--lp-bg) !important; }
:host { max-width: 100%; overflow: hidden; }
"""
#: stylesheet given to every figure: nothing drawn outside its box (a phone-width page never
#: scrolls sideways because of a legend or a glyph's overlay)
FIGURE_CSS = ":host { max-width: 100%; overflow: hidden; }"


def refresh_on_data_change(table: Any) -> Any:
    """Make `table` (a Bokeh DataTable) redraw whenever its source's data is replaced.

    BokehJS (3.9) redraws a DataTable only when its CDSView's row indices change, so new data with
    the same number of rows leaves the old rows on screen (the bin explorer's comparison table kept
    E4M3FN/E5M2 rows for 3.3 after a switch to E2M1 and 5.1). A change signal of the table model
    rerenders it, so a small browser-side callback on the source's `data` emits one. It runs in the
    browser, so it works in served sessions, notebooks and exported pages alike. Returns the table."""
    from bokeh.models import CustomJS

    if any(isinstance(t, dict) and "lowprec_refresh" in t for t in table.tags):
        return table
    table.tags = list(table.tags) + [{"lowprec_refresh": True}]
    table.source.js_on_change("data", CustomJS(args={"table": table}, code="table.view.change.emit()"))
    return table


def wrap_title(text: str, width: int = TITLE_CHARS) -> str:
    """A figure title broken into lines of at most `width` characters (Bokeh draws each line)."""
    if "\n" in text or len(text) <= width:
        return text
    return "\n".join(textwrap.wrap(text, width=width, break_long_words=False)) or text


# Tick positions on a log axis, computed in the browser for the range shown (zooming included):
# decades over a wide range, 1-3-10 or 1-2-5 over two or three decades, 1…9 within one, so the
# axis always carries at least two readable labels and never a crowd of them.
_LOG_MAJOR_JS = """
const lo = Math.min(cb_data.start, cb_data.end), hi = Math.max(cb_data.start, cb_data.end);
if (!(lo > 0) || !(hi > lo) || !isFinite(hi)) return [];
const decades = Math.log10(hi / lo);
const a = Math.floor(Math.log10(lo)), b = Math.ceil(Math.log10(hi));
const every = decades > 9 ? Math.ceil(decades / 6) : 1;
const pick = (mant) => {
  const out = [];
  for (let e = a; e <= b; e++) {
    if ((e - a) % every) continue;
    for (const m of mant) { const v = m * Math.pow(10, e); if (v >= lo * (1 - 1e-12) && v <= hi * (1 + 1e-12)) out.push(v); }
  }
  return out;
};
let ticks = pick(decades > 3.5 ? [1] : decades > 1.8 ? [1, 3] : decades > 0.6 ? [1, 2, 5] : [1, 2, 3, 4, 5, 6, 7, 8, 9]);
if (ticks.length < 2) ticks = pick([1, 1.5, 2, 2.5, 3, 4, 5, 6, 7, 8, 9]);
if (ticks.length < 2) {
  const span = hi - lo, raw = span / 4, mag = Math.pow(10, Math.floor(Math.log10(raw)));
  const step = [1, 2, 5, 10].map(k => k * mag).find(s => span / s <= 5);
  ticks = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi; v += step) ticks.push(v);
}
return ticks;
"""
_LOG_MINOR_JS = """
const lo = Math.min(cb_data.start, cb_data.end), hi = Math.max(cb_data.start, cb_data.end);
if (!(lo > 0) || !(hi > lo) || !isFinite(hi) || Math.log10(hi / lo) > 6) return [];
const out = [];
for (let e = Math.floor(Math.log10(lo)); e <= Math.ceil(Math.log10(hi)); e++)
  for (let m = 2; m <= 9; m++) { const v = m * Math.pow(10, e); if (v > lo && v < hi) out.push(v); }
return out;
"""


def log_ticker() -> Any:
    """A ticker for log axes that always labels at least two readable positions (see above)."""
    from bokeh.models import CustomJSTicker

    return CustomJSTicker(major_code=_LOG_MAJOR_JS, minor_code=_LOG_MINOR_JS)


def _is_log(axis_scale: Any) -> bool:
    return type(axis_scale).__name__ == "LogScale"


def _style_figure(fig: Any) -> None:
    from bokeh.models import BasicTickFormatter

    light = {k: v[0] for k, v in BOKEH_ROLES.items()}
    fig.background_fill_color = light["plot_bg"]
    fig.border_fill_color = light["border_fill"]
    fig.outline_line_color = light["outline"]
    if fig.title is not None:
        fig.title.text = wrap_title(str(fig.title.text or ""))
        fig.title.text_color = light["text"]
        fig.title.text_font_size = "13px"
    for axis in list(fig.xaxis) + list(fig.yaxis):
        axis.axis_line_color = light["axis"]
        axis.major_tick_line_color = light["axis"]
        axis.minor_tick_line_color = light["axis"]
        axis.major_label_text_color = light["muted_text"]
        axis.axis_label_text_color = light["text"]
        axis.axis_label_text_font_style = "normal"
        axis.axis_label_text_font_size = "12px"
        axis.major_label_text_font_size = "11px"
    for grid in fig.grid:
        grid.grid_line_color = light["grid"]
    for dim, scale in (("x", fig.x_scale), ("y", fig.y_scale)):
        if _is_log(scale):
            for axis in (fig.xaxis if dim == "x" else fig.yaxis):
                axis.ticker = log_ticker()
                axis.formatter = BasicTickFormatter(precision="auto", power_limit_low=-3,
                                                    power_limit_high=4)
    from bokeh.models.annotations import ColorBar

    for bar in fig.select({"type": ColorBar}):  # its text in the theme's roles (dark-on-dark otherwise)
        bar.major_label_text_color = light["muted_text"]
        bar.title_text_color = light["text"]
        bar.background_fill_color = light["border_fill"]
    for legend in list(fig.legend):
        legend.title_text_color = light["text"]
        legend.background_fill_color = light["legend_bg"]
        legend.background_fill_alpha = 0.9
        legend.border_line_color = light["outline"]
        legend.label_text_color = light["text"]
        legend.label_text_font_size = "11px"
        legend.glyph_height = 14
        legend.glyph_width = 18
        legend.label_height = 14
        legend.spacing = 2
        legend.padding = 4
        legend.margin = 4
        if legend in fig.center:  # inside the data area: move it below the plot
            fig.center.remove(legend)
            # an item labelled by a data column (legend_field) is one entry per value: many
            n = sum(3 if _field_label(item) else 1 for item in legend.items)
            legend.location = "top_left"
            legend.orientation = "horizontal" if n <= 2 else "vertical"
            fig.add_layout(legend, "below")
        elif legend in fig.below and legend.ncols not in (None, 1, "auto"):
            legend.ncols = 1  # one column: a narrow plot keeps its legend inside the page
    fig.toolbar.autohide = True
    fig.min_border_left = max(int(fig.min_border_left or 0), 40)
    _alt_text(fig)


def _field_label(item: Any) -> bool:
    """Whether a legend item's label is a data column (one entry per distinct value)."""
    label = getattr(item, "label", None)
    return bool(isinstance(label, dict) and "field" in label or getattr(label, "field", None))


def _alt_text(fig: Any) -> None:
    """A text alternative for the canvas (the page sets it as the plot's aria-label): the title,
    what each axis shows and the series drawn."""
    if any(isinstance(t, dict) and "alt" in t for t in fig.tags):
        return
    title = str(fig.title.text or "").replace("\n", " ") if fig.title is not None else ""
    parts = [f"Plot: {title}" if title else "Plot"]
    xl = " / ".join(str(a.axis_label) for a in fig.xaxis if a.axis_label)
    yl = " / ".join(str(a.axis_label) for a in fig.yaxis if a.axis_label)
    if xl or yl:
        parts.append(f"{yl or 'value'} against {xl or 'position'}")
    labels = []
    for legend in fig.legend:
        for item in legend.items:
            label = item.label
            text = label.get("value") if isinstance(label, dict) else getattr(label, "value", None)
            if text:
                labels.append(str(text))
    if labels:
        parts.append("series: " + ", ".join(labels))
    parts.append("exact values in the hover tooltips and the text around the plot")
    fig.tags = list(fig.tags) + [{"alt": "; ".join(parts) + "."}]


def _stretch(model: Any) -> None:
    """Follow the width of the column (at most the width the builder chose)."""
    width = getattr(model, "width", None)
    if getattr(model, "sizing_mode", None) in (None, "fixed"):
        model.sizing_mode = "stretch_width"
        if width:
            model.max_width = int(width)
        model.min_width = min(int(width or 240), 240)


def _layout_tree(model: Any) -> Iterator[Any]:
    """`model` and the layout models under it (a layout's children, a grid's cells, a tab's child),
    depth first: the figures and tables a page shows, without visiting their glyphs, sources and
    tools (`Model.references()` walks every model and every property, ~0.05–0.2 s per page)."""
    yield model
    for attr in ("children", "tabs", "child"):
        value = getattr(model, attr, None) if attr in getattr(model, "properties", lambda: ())() else None
        if value is None:
            continue
        for item in value if isinstance(value, (list, tuple)) else [value]:
            child = item[0] if isinstance(item, tuple) else item
            if child is not None and hasattr(child, "properties"):
                yield from _layout_tree(child)


def style_bokeh(model: Any) -> Any:
    """Give `model` (a figure, a layout of figures, a DataTable, or anything holding them) the
    site's look in the light theme and sizes that follow the page; returns the model."""
    from bokeh.models import GridPlot, Plot
    from bokeh.models.widgets.tables import DataTable
    from bokeh.models.layouts import LayoutDOM

    seen: set[str] = set()
    for m in _layout_tree(model):
        if m.id in seen:
            continue
        seen.add(m.id)
        if isinstance(m, Plot):
            _style_figure(m)
            _stretch(m)
            if FIGURE_CSS not in m.stylesheets:
                m.stylesheets = list(m.stylesheets) + [FIGURE_CSS]
        elif isinstance(m, DataTable):
            if TABLE_CSS not in m.stylesheets:
                m.stylesheets = list(m.stylesheets) + [TABLE_CSS]
            refresh_on_data_change(m)
            m.reorderable = False  # column drag needs jquery-ui, which Bokeh does not ship
            _stretch(m)
        elif isinstance(m, GridPlot):
            m.sizing_mode = "stretch_width"
            m.toolbar.autohide = True
        elif isinstance(m, LayoutDOM) and type(m).__name__ in ("Column", "Row"):
            m.sizing_mode = "stretch_width"
    return model


#: a row whose items sit side by side while each gets at least 340 px and wrap under each other
#: below that (phone widths); the items share the width
WRAP_ROW_CSS = """
:host { flex-wrap: wrap; max-width: 100%; min-width: 0 !important; }
:host > div, :host > * { flex: 1 1 340px !important; min-width: 0 !important; }
"""


def wrap_row(*objects: Any, **params: Any) -> Any:
    """A `pn.Row` of `objects` that wraps at narrow widths (`WRAP_ROW_CSS`).

    Not `pn.FlexBox`: Panel renders a FlexBox as a ReactiveHTML model, and Bokeh figures placed in
    one never report "finished" (their canvas panels stay pending), so the browser never sends
    `document_ready`; Panel then treats the session as not yet connected and drops every model
    change made under `hold()` (a widget's new plot data), expecting a full document sync that
    never comes."""
    import panel as pn

    params.setdefault("sizing_mode", "stretch_width")
    params["stylesheets"] = list(params.get("stylesheets", [])) + [WRAP_ROW_CSS]
    return pn.Row(*objects, **params)
