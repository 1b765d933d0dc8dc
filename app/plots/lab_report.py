"""The page `lowprec analyze --html OUT` writes: one standalone HTML file (Bokeh's JS inlined, nothing
fetched) that carries what the CLI summary and the RecipeLab page show — the files read, the
ranking over every tensor with the reason for each place, each tensor's statistics and flags, the
full table of tensor × recipe results, the skipped files and entries with their reasons, what each
column means — and two figures with their legends: the ranking (pooled error against bits per
element, the Pareto front joined) and every tensor × recipe point.

Every number comes from the lab's `LabReport`; this module only lays it out. Text from the user's
files (paths, tensor names, reasons quoting them) is escaped. The page reads at phone width: the
prose wraps, wide tables scroll sideways inside their own box, the figures follow the window. A
tensor too small for its scales to amortise (a 0-d tensor under a per-tensor FP32 scale: 40 bits
per element) no longer stretches the bits axis of the per-tensor figure: the axis spans the
ranking's bits, and the points beyond it are named under the figure.
"""

from __future__ import annotations

import html
import math
from typing import Any

from bokeh.embed import components
from bokeh.models import ColumnDataSource, HoverTool, Range1d
from bokeh.models.annotations import LabelSet
from bokeh.plotting import figure
from bokeh.resources import INLINE

from lowprec import numtext
from lowprec.simulations.lab.measure import usable_error
from lowprec.simulations.lab.runner import LabReport

from lowprec.app.theme import style_bokeh

from .html import _EXTENSION_TAG
from .lab import TENSOR_PALETTE, colored, table_data

__all__ = ["REPORT_TITLE", "bits_axis", "rank_reason", "ranking_figure", "report_html", "tensor_figure"]

REPORT_TITLE = "Recipe lab"

#: the page's own style: readable prose, tables that scroll inside their box, both colour schemes
REPORT_CSS = """
:root { color-scheme: light dark; --bg: #ffffff; --text: #1c2127; --muted: #4f5964; --border: #d5dae0;
  --surface: #f3f5f7; --link: #0a58b0; }
@media (prefers-color-scheme: dark) { :root { --bg: #15181c; --text: #e4e7eb; --muted: #aab3bd;
  --border: #3a414a; --surface: #1f242a; --link: #8cc4ff; } }
body { margin: 0; background: var(--bg); color: var(--text); font: 16px/1.5 system-ui, sans-serif; }
main { max-width: 72rem; margin: 0 auto; padding: 1rem; box-sizing: border-box; }
h1 { font-size: 1.5rem; margin: 0.5rem 0; } h2 { font-size: 1.2rem; margin: 1.6rem 0 0.5rem; }
p, li, dd { max-width: 48rem; overflow-wrap: anywhere; }
code { background: var(--surface); padding: 0 0.2em; overflow-wrap: anywhere; }
.scroll { overflow-x: auto; max-width: 100%; border: 1px solid var(--border); }
table { border-collapse: collapse; font-size: 0.9rem; }
th, td { padding: 0.25rem 0.6rem; border-bottom: 1px solid var(--border); text-align: left; vertical-align: top;
  white-space: nowrap; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
td.why { white-space: normal; min-width: 16rem; max-width: 32rem; }
thead th { background: var(--surface); position: sticky; top: 0; }
.muted { color: var(--muted); } .flag { color: #b54708; }
@media (prefers-color-scheme: dark) { .flag { color: #f0c060; } }
dt { font-weight: 600; } dd { margin: 0 0 0.5rem 1rem; }
summary { cursor: pointer; color: var(--link); margin: 0.3rem 0; }
.figure { max-width: 100%; overflow: hidden; margin: 0.5rem 0; }
@media (max-width: 40rem) {
  .scroll { overflow-x: visible; border: none; }
  table, tbody, tr, td { display: block; width: 100%; box-sizing: border-box; }
  thead { position: absolute; left: -9999px; }
  tr { border: 1px solid var(--border); margin: 0 0 0.6rem; padding: 0.3rem 0; }
  td, td.num, td.why { border: none; padding: 0.1rem 0.6rem; white-space: normal; text-align: left;
    min-width: 0; max-width: none; }
  td::before { content: attr(data-label) ": "; font-weight: 600; color: var(--muted); }
}
"""


def _e(text: Any) -> str:
    return html.escape(str(text), quote=True)


def rank_reason(row: dict[str, Any], measured: int) -> str:
    """Why a ranking row sits where it does: the lab's own note for a partial recipe, one without
    an error or one with a NaN error; for a recipe that applies to every tensor, that it is ordered
    by its pooled error among those."""
    if row["note"]:
        return str(row["note"])
    return (f"applies to all {measured} measured tensor(s); ordered by its pooled RMS relative error among the "
            f"recipes that do")


def bits_axis(report: LabReport) -> tuple[float, float]:
    """(start, end) of the bits-per-element axis: the ranking's pooled bits with a margin (a tensor
    whose scales cost more bits per element than any pooled figure is drawn off it)."""
    bits = [float(r["bits_per_element"]) for r in report.ranking if r["bits_per_element"] is not None]
    if not bits:
        return (0.0, 17.0)
    lo, hi = min(bits), max(bits)
    return (max(0.0, math.floor(lo) - 0.5), math.ceil(hi) + 0.5)


def ranking_figure(report: LabReport) -> Any:
    """The ranking over every tensor: each recipe that applies to all of them at its pooled error
    and bits per element, the Pareto front joined by a line, each point named."""
    rows = [r for r in report.ranking if r["complete"] and usable_error(r["rms_rel_err"])]
    data = {"recipe": [r["recipe"] for r in rows], "bits": [float(r["bits_per_element"]) for r in rows],
            "err": [float(r["rms_rel_err"]) for r in rows], "rank": [r["rank"] for r in rows],
            "front": ["on the Pareto front" if r["pareto"] else "" for r in rows]}
    source = ColumnDataSource(data)
    front = sorted((b, e) for b, e, f in zip(data["bits"], data["err"], data["front"]) if f)
    lo, hi = bits_axis(report)
    fig = figure(title="Ranking over every tensor: pooled RMS relative error against bits per element",
                 height=380, sizing_mode="stretch_width", y_axis_type="log", x_range=Range1d(start=lo, end=hi),
                 x_axis_label="bits per element (scales included)", y_axis_label="pooled RMS relative error",
                 tools="pan,wheel_zoom,box_zoom,reset")
    if front:
        fig.line([b for b, _ in front], [e for _, e in front], line_color=TENSOR_PALETTE[1], line_width=2,
                 legend_label="Pareto front (no recipe has fewer bits and a smaller error)")
    fig.scatter("bits", "err", source=source, size=10, color=TENSOR_PALETTE[0], legend_label="recipe (rank)")
    fig.add_layout(LabelSet(x="bits", y="err", text="recipe", source=source, x_offset=6, y_offset=4,
                            text_font_size="11px"))
    fig.add_tools(HoverTool(tooltips=[("recipe", "@recipe"), ("rank", "@rank"), ("bits / element", "@bits{0.000}"),
                                      ("pooled RMS rel. error", "@err{0.000e}"), ("", "@front")]))
    fig.legend.location = "top_right"
    return style_bokeh(fig)  # the site's look: a long title wraps, the legend goes under the data


def tensor_figure(report: LabReport) -> tuple[Any, list[str]]:
    """(figure, off-axis notes): every tensor × recipe point, coloured by tensor with a legend, on
    the ranking's bits axis; the notes name the points beyond it."""
    data = colored(table_data(report))
    lo, hi = bits_axis(report)
    off: dict[str, float] = {}
    for tensor, bits in zip(data["tensor"], data["bits_per_element"]):
        if math.isfinite(bits) and bits > hi:
            off[tensor] = max(off.get(tensor, 0.0), bits)
    source = ColumnDataSource(data)
    fig = figure(title="Every tensor × recipe: RMS relative error against bits per element", height=380,
                 sizing_mode="stretch_width", y_axis_type="log", x_range=Range1d(start=lo, end=hi),
                 x_axis_label="bits per element (scales included)", y_axis_label="RMS relative error",
                 tools="pan,wheel_zoom,box_zoom,reset")
    fig.scatter("bits_per_element", "plot_err", source=source, size=8, color="color", alpha=0.85,
                legend_field="tensor")
    fig.legend.title = "tensor"
    fig.legend.location = "top_right"
    fig.add_tools(HoverTool(tooltips=[("tensor", "@tensor"), ("recipe", "@recipe"),
                                      ("bits / element", "@bits_per_element{0.000}"),
                                      ("RMS rel. error", "@rms_rel_err{0.000e}")]))
    style_bokeh(fig)
    notes = [f"{name}: up to {bits:.4g} bits per element (its scales cost more than its elements: too few "
             f"elements to amortise them), beyond the axis" for name, bits in off.items()]
    return fig, notes


def _table(head: list[tuple[str, bool]], rows: list[list[tuple[str, str]]]) -> str:
    """An HTML table in a box that scrolls sideways: head = (title, numeric), rows of (text, css class).
    Each cell carries its column's title (`data-label`): at phone width a row is a card of
    `title: value` lines instead (REPORT_CSS)."""
    th = "".join(f'<th scope="col"{" class=num" if num else ""}>{_e(t)}</th>' for t, num in head)
    body = "".join("<tr>" + "".join(f'<td data-label="{_e(t)}"{f" class={cls}" if cls else ""}>{text}</td>'
                                    for (text, cls), (t, _) in zip(row, head)) + "</tr>" for row in rows)
    return f'<div class="scroll" tabindex="0"><table><thead><tr>{th}</tr></thead><tbody>{body}</tbody></table></div>'


def _audit_figures(audited: list[Any]) -> list[Any]:
    """The scale and code histograms of each audited (pre-quantized) tensor, in order."""
    from .audit import audit_sources, code_figure, scale_figure

    figs: list[Any] = []
    for t in audited:
        src = audit_sources(t.audit)
        for make, key in ((scale_figure, "scales"), (code_figure, "codes")):
            fig = make(ColumnDataSource(src[key]))
            fig.sizing_mode = "stretch_width"
            style_bokeh(fig)
            figs.append(fig)
    return figs


def _audit_parts(audited: list[Any], divs: Any) -> list[str]:
    """The audit section: per pre-quantized tensor its facts, the two histograms and the blocks a
    UE8M0 kernel would truncate most (`simulations.lab.audit`)."""
    if not audited:
        return []
    from .audit import audit_facts

    out = ["<h2>Audit of the pre-quantized tensors</h2>",
           f"<p>{_e(audited[0].audit.caveat)}</p>"]
    for i, t in enumerate(audited):
        a = t.audit
        facts = audit_facts(a)
        out.append(f"<h3>{_e(t.name)}: stored as {_e(a.layout)} ({_e(a.producer)})</h3>")
        out.append(_table([("audit", False), ("value", False)],
                          [[(_e(w), ""), (_e(v), "why")] for w, v in zip(facts["what"], facts["value"])]))
        out.append(f'<div class="figure">{divs[2 * i]}</div><div class="figure">{divs[2 * i + 1]}</div>')
        if a.affected:
            out.append("<p>The blocks a UE8M0 kernel, keeping only each scale's exponent, shrinks most:</p>")
            out.append(_table([("block (row, column)", False), ("stored scale", True), ("kept", True),
                               ("values × factor", True)],
                              [[(_e(f"({b['block'][0]}, {b['block'][1]})"), ""),
                                (numtext.scientific(b["scale"], 6, none=numtext.ABSENT), "num"),
                                (numtext.scientific(b["kept"], 6, none=numtext.ABSENT), "num"),
                                (numtext.fixed(b["factor"], 4, none=numtext.ABSENT), "num")]
                               for b in a.affected]))
        notes = "".join(f"<li>{_e(n)}</li>" for n in a.notes)
        if notes:
            out.append(f"<ul>{notes}</ul>")
    return out


def report_html(report: LabReport, title: str = REPORT_TITLE) -> str:
    """The whole page (see the module docstring)."""
    measured = [t for t in report.tensors if t.measured]
    parts = [f"<h1>{_e(title)}</h1>",
             f"<p>{len(report.files)} file(s), {len(report.tensors)} tensor(s) analysed, {len(report.skipped)} "
             f"skipped, {len(report.recipes)} recipe(s). Every number below is the lab's "
             f"(<code>lowprec analyze</code>); the same report as <code>--json</code> and <code>--csv</code>.</p>"]
    parts.append("<h2>Files</h2><ul>" + "".join(f"<li><code>{_e(f)}</code></li>" for f in report.files) + "</ul>")
    if report.notes:
        parts.append("<p>Notes from reading them:</p><ul>" + "".join(f"<li>{_e(n)}</li>" for n in report.notes)
                     + "</ul>")
    # ranking
    parts.append("<h2>Ranking over every tensor</h2>")
    if measured:
        best = report.best
        parts.append(f"<p>Errors are pooled over the tensors each recipe applies to (‖x̂ − x‖ / ‖x‖ over all of "
                     f"their elements). Best over every tensor: <strong>{_e(best) if best else 'none'}</strong>"
                     + ("" if best else " (no recipe applies to every tensor with a finite error below 1)")
                     + ". ★ marks the Pareto front: no other recipe has both fewer bits per element and a "
                     "smaller error.</p>")
        rows = []
        for row in report.ranking:
            r = row
            rows.append([(str(r["rank"]), "num"), (_e(r["recipe"]) + (" ★" if r["pareto"] else ""), ""),
                         (numtext.scientific(r["rms_rel_err"], 3, none=numtext.ABSENT), "num"),
                         (numtext.fixed(r["sqnr_db"], 2, none=numtext.ABSENT), "num"),
                         (numtext.general(r["bits_per_element"], 4, none=numtext.ABSENT), "num"),
                         (f"{r['tensors']} of {len(measured)}", "num"),
                         (_e(rank_reason(r, len(measured))), "why")])
        parts.append(_table([("rank", True), ("recipe", False), ("pooled RMS rel. error", True), ("SQNR (dB)", True),
                             ("bits / element", True), ("tensors", True), ("why this place", False)], rows))
        fig_rank = ranking_figure(report)
        fig_tensors, off_axis = tensor_figure(report)
    else:
        parts.append("<p>No tensor had a finite element: nothing to rank.</p>")
        fig_rank = fig_tensors = None
        off_axis = []
    figures = [f for f in (fig_rank, fig_tensors) if f is not None]
    audited = [t for t in report.tensors if t.audit is not None]
    audit_figs = _audit_figures(audited)
    script, all_divs = components(figures + audit_figs) if figures or audit_figs else ("", ())
    divs, audit_divs = all_divs[:len(figures)], all_divs[len(figures):]
    if figures:
        parts.append(f'<div class="figure">{divs[0]}</div>')
    # tensors
    parts.append("<h2>Tensors</h2>")
    rows = []
    for t in report.tensors:
        st = t.stats
        channels = "–" if st.channels is None else f"{st.outlier_channels} of {st.channels}"
        flags = "".join(f'<div class="flag">⚠ {_e(f.message)}</div>' for f in t.flags)
        rows.append([(_e(t.name), ""), (f"<code>{_e(t.file)}</code>", ""),
                     (_e("×".join(str(s) for s in t.shape) or "scalar"), ""), (_e(t.dtype), ""),
                     (_e(f"{t.layout} ({t.stored_recipe})" if t.layout else "float"), ""),
                     (str(st.numel), "num"), (numtext.general(st.amax, 4, none=numtext.ABSENT), "num"),
                     (numtext.general(st.rms, 4, none=numtext.ABSENT), "num"),
                     (numtext.general(st.kurtosis, 3, none=numtext.ABSENT), "num"), (channels, "num"),
                     (numtext.percent(st.zero_frac, decimals=3, none=numtext.ABSENT), "num"),
                     (_e(t.best or "none"), ""), (flags or '<span class="muted">–</span>', "why")])
    parts.append(_table([("tensor", False), ("file", False), ("shape", False), ("dtype", False), ("stored as", False),
                         ("elements", True),
                         ("amax", True), ("RMS", True), ("excess kurtosis", True), ("outlier channels", True),
                         ("exact zeros", True), ("best recipe", False), ("flags", False)], rows))
    if len(figures) > 1:
        parts.append(f'<div class="figure">{divs[1]}</div>')
        if off_axis:
            parts.append("<p class=muted>Off the bits axis: " + "; ".join(_e(n) for n in off_axis) + ".</p>")
    parts += _audit_parts(audited, audit_divs)
    # every result
    parts.append(f"<h2>Every tensor × recipe</h2><details><summary>{len(report.tensors)} tensor(s) × "
                 f"{len(report.recipes)} recipe(s): each result (open)</summary>")
    rows = []
    for t in report.tensors:
        ranks = {name: i + 1 for i, name in enumerate(t.ranking)}
        for res in t.results:
            note = res.skipped or ("★ Pareto front" if res.recipe in t.pareto else "")
            rows.append([(_e(t.name), ""), (_e(res.recipe), ""), (str(ranks.get(res.recipe, "–")), "num"),
                         (numtext.scientific(res.rms_rel_err, 3, none=numtext.ABSENT), "num"),
                         (numtext.fixed(res.sqnr_db, 2, none=numtext.ABSENT), "num"),
                         (numtext.scientific(res.max_abs_err, 3, none=numtext.ABSENT), "num"),
                         (numtext.percent(res.clipped_frac, decimals=3, none=numtext.ABSENT), "num"),
                         (numtext.percent(res.zero_frac, decimals=3, none=numtext.ABSENT), "num"),
                         (numtext.general(res.bits_per_element, 4, none=numtext.ABSENT), "num"), (_e(note), "why")])
    parts.append(_table([("tensor", False), ("recipe", False), ("rank", True), ("RMS rel. error", True),
                         ("SQNR (dB)", True), ("max |error|", True), ("clipped", True), ("flushed to 0", True),
                         ("bits / element", True), ("note", False)], rows) + "</details>")
    # skipped
    parts.append("<h2>Skipped</h2>")
    if report.skipped:
        parts.append("<ul>" + "".join(
            f"<li><code>{_e(s.path)}</code>{(' › ' + _e(s.name)) if s.name else ''}: {_e(s.reason)}</li>"
            for s in report.skipped) + "</ul>")
    else:
        parts.append("<p>Nothing: every file and entry held float tensors the lab analyses.</p>")
    # what the columns mean
    recipe_lines = "".join(f"<li><code>{_e(r.name)}</code>: {_e(r.description)}</li>" for r in report.recipes)
    parts.append(
        "<h2>How to read it</h2><dl>"
        "<dt>RMS rel. error</dt><dd>‖x̂ − x‖ / ‖x‖ over the tensor's finite elements (pooled: over every tensor "
        "the recipe applies to); 0 is exact, 1 is what storing zeros gives.</dd>"
        "<dt>SQNR (dB)</dt><dd>−20 log10 of the RMS relative error.</dd>"
        "<dt>max |error|</dt><dd>the largest |x̂ − x| of a finite element.</dd>"
        "<dt>clipped / flushed to 0</dt><dd>the share of elements that saturated at the format's largest value, "
        "and of non-zero elements that became 0.</dd>"
        "<dt>bits / element</dt><dd>the element's bits plus the scales' bits spread over the elements they "
        "scale.</dd>"
        "<dt>rank</dt><dd>recipes that apply to every tensor first, by pooled error; then the partial ones, "
        "whose error pools fewer tensors; then those without a usable error.</dd>"
        "<dt>★ Pareto front</dt><dd>no other recipe has both fewer bits per element and a smaller error.</dd>"
        "</dl><p>Recipes:</p><ul>" + recipe_lines + "</ul>")
    body = "\n".join(parts)
    head = INLINE.render() if figures or audit_figs else ""
    page = (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{_e(title)}</title><style>{REPORT_CSS}</style>{head}{script}</head>"
            f"<body><main>{body}</main></body></html>\n")
    return str(_EXTENSION_TAG.sub("", page))
