"""BinExplorer: type a value, see its bits, its code, its error and its rounding bin in any format.

The widget owns its controls and views (the update protocol is `app.widgets._base.RecordWidget`'s);
every number comes from
`formats.explain_value` (the same explanation `lowprec cast` prints: a cast under a named
convention with rounding/overflow overrides, on the grid scaled by `decode_scale = amax / F`) and
the figures from the pure builders in `app.plots.bins`. Figures and `ColumnDataSource`s are built once; a parameter change pushes
new columns. Each bit is a toggle button in the sign/exponent/mantissa colour, pressed when the bit
is 1 (its stylesheet draws the 0/1; its label, for screen readers, names the bit and changes only
with the format): clicking it flips the bit and the value box shows the new code's value. Bad input (unparseable text, a value the
policy refuses, a decode_scale out of range) shows an "Invalid …" alert next to the controls and
keeps the last good view.
"""

from __future__ import annotations

import html
import math
from typing import Any

import panel as pn
from bokeh.models import ColumnDataSource

from lowprec import formats, numtext
from lowprec.app.plots.bins import (
    bins_sources,
    bit_toggle_labels,
    code_table_figure,
    gap_figure,
    label_legends,
    number_line_figure,
    summary_table,
    swatch,
    toggle_css,
)
from lowprec.formats import BinView, explain_value
from lowprec.app.params import config_widget
from lowprec.app.widgets._base import RecordWidget
from lowprec.config import fields_of
from lowprec.formats.explain import TABLE_MAX_BITS, ExplainConfig, code_value
from lowprec.app.text import as_text



def value_text(v: float) -> str:
    """Shortest text that parses back to exactly `v` (keeps -0; nan, inf, -inf as `lowprec.numtext`)."""
    if v == 0:
        return "-0" if math.copysign(1.0, v) < 0 else "0"
    return numtext.roundtrip(float(v))


#: the "not updated" line over a stale view: the alert's colours, so it reads as part of the message
STALE_CSS = """
p { margin: 0 0 4px 0; padding: 6px 10px; border-left: 4px solid var(--lp-border, #d5dae0);
  background: var(--lp-surface, #f3f5f7); color: var(--lp-text, #1c2127); font-size: 14px; }
"""

POOL_BITS = TABLE_MAX_BITS  # toggles built up front: the widest format an exported page answers offline


def tie_rule_text(rounding: str, format_name: str) -> str:
    """One line on how the number line shows the rounding rule."""
    if rounding == "nearest_even":
        owner = ("the larger value (no mantissa bits: the even significand is the carry)"
                 if format_name == "E8M0" else "the even code (last bit 0)")
        return f"a midpoint goes to {owner}; ▶/◀ at an edge points into the bin that owns it"
    if rounding == "nearest_away":
        return "a midpoint goes to the value farther from zero; ▶/◀ points into the bin that owns it"
    if rounding == "stochastic":
        return "stochastic: a value between two codes goes to either, with odds set by the distances"
    if rounding == "to_odd":
        return ("round to odd: a value between two codes goes to the one whose code is odd; an even code "
                "holds only itself")
    direction = {"toward_zero": "toward zero", "up": "up (toward +Inf)", "down": "down (toward -Inf)"}
    return f"directed rounding: everything between two codes goes {direction.get(rounding, rounding)}"


@config_widget(ExplainConfig)
class BinExplorer(RecordWidget):
    """Where a value lands in a low-precision format: bits, code, error, rounding bin and gaps."""

    controls_order = tuple(k.name for k in fields_of(ExplainConfig))

    def _build(self) -> None:
        self._flipped_code: int | None = None
        self._updating_bits = False
        self.view: BinView = self._work(self._request(), None)[0]  # defaults and constructor arguments must be valid
        self.source_data = bins_sources(self.view)
        self.sources = {k: ColumnDataSource(data=v) for k, v in self.source_data.items()}
        # over the bits while the input is invalid: the view below is the last valid value's
        self._stale = pn.pane.HTML("", visible=False, sizing_mode="stretch_width", css_classes=["lp-stale"],
                                   stylesheets=[STALE_CSS])
        self._formula = pn.pane.HTML("", sizing_mode="stretch_width")
        self._note = pn.pane.Markdown("", sizing_mode="stretch_width")
        # a pool of toggles, as many as the widest format shown so far has bits (at least 8); a
        # format shows the first `bits` of them, so a page exported offline can switch between the
        # formats it answers (up to 8 bits) without creating models; a served page adds toggles
        # when a wider format (BF16, FP16) first shows
        self._toggle_pool = [self._make_toggle(i) for i in range(POOL_BITS)]
        self._n_bits = 0
        self._bits = pn.Row(*self._toggle_pool, sizing_mode="stretch_width", css_classes=["lp-bits"])
        self._table_note = pn.pane.Markdown("", sizing_mode="stretch_width")
        s = self.sources
        self._number_line = pn.pane.Bokeh(number_line_figure(s["bins"], s["points"], s["ties"],
                                                             s["marker"], s["compare_points"]))
        self._gap = pn.pane.Bokeh(gap_figure(s["gaps"], s["compare_gaps"], s["gap_marker"]))
        self._summary = pn.pane.Bokeh(summary_table(s["summary"]))
        self._table = pn.pane.Bokeh(code_table_figure(s["table"]))
        self._show(self.view)
        self._controls_pane = self._make_controls()

    # -- computation (the protocol's steps: app.widgets._base) -------------------------------------
    def _request(self) -> tuple[ExplainConfig, int | None]:
        """The record and the code a bit flip asked for (consumed by this request, valid or not)."""
        code, self._flipped_code = self._flipped_code, None
        cfg: ExplainConfig = self.config()
        return cfg, code

    def _work(self, request: tuple[ExplainConfig, int | None], generation: int | None
              ) -> tuple[BinView, dict[str, dict[str, list[Any]]]]:
        c, code = request
        view = explain_value(c.value, c.format, c.convention, c.rounding, c.overflow,
                             c.compare_format or None, c.decode_scale, code=code)
        return view, bins_sources(view)

    def _paint(self, request: Any, outcome: tuple[BinView, dict[str, dict[str, list[Any]]]]) -> None:
        view, data = outcome
        rebuild_bits = view.main.format != self.view.main.format or not self._bit_toggles
        self.view = view
        self.source_data = data
        for k, v in data.items():
            self.sources[k].data = v
        self._show(view, rebuild_bits)

    def _show_stale(self, stale: bool) -> None:
        """While the input is invalid, say over the bits that the view is the last valid value's and
        dim it (the bits, formula and plots used to look current); clear both once it is valid."""
        if stale:
            self._stale.object = (f"<p><b>Not updated:</b> the bits, numbers and plots below still show the last "
                                  f"valid value, <code>{html.escape(self.view.input_text)}</code> "
                                  f"in {html.escape(self.view.main.format)}.</p>")
        self._stale.visible = stale
        dim = {"opacity": "0.45"} if stale else {}
        for pane in (self._bits, self._formula, self._summary, self._number_line, self._gap, self._table):
            if pane.styles != dim:
                pane.styles = dim

    @property
    def _bit_toggles(self) -> list[pn.widgets.Toggle]:
        """The toggles of the shown format's bits, most significant first."""
        return self._toggle_pool[:self._n_bits]

    def _show(self, view: BinView, rebuild_bits: bool = True) -> None:
        main = view.main
        self._updating_bits = True
        try:
            if rebuild_bits or self._n_bits != len(main.bits):
                self._n_bits = len(main.bits)
                if len(self._toggle_pool) < self._n_bits:
                    self._toggle_pool += [self._make_toggle(i) for i in range(len(self._toggle_pool), self._n_bits)]
                    self._bits.objects = list(self._toggle_pool)
                labels = bit_toggle_labels(main.fields)
                for i, t in enumerate(self._toggle_pool):
                    t.visible = i < self._n_bits
                    if i < self._n_bits:
                        t.stylesheets = [toggle_css(main.fields[i])]
                        t.label = labels[i]
            for t, b in zip(self._bit_toggles, main.bits):
                t.value = b == "1"  # drawn as 0/1 by the toggle's stylesheet; the label stays
        finally:
            self._updating_bits = False
        own = main.rounding_bin
        interval = ""
        if own is not None:
            interval = (f"{'[' if own.lo_closed else '('}{own.lo:.8g}, {own.hi:.8g}"
                        f"{']' if own.hi_closed else ')'}")
        colours = " ".join(swatch(f) for f in dict.fromkeys(main.fields))
        self._formula.object = (
            f"<div><b>{main.format}</b> code <b>{main.hex}</b> ({main.bits}) · {colours}<br>"
            f"{main.formula} = <b>{main.exact}</b>"
            + (f" × {view.decode_scale:g}" if view.decode_scale != 1 else "")
            + f" = {main.value:.8g}<br>error {main.error:.6g} (relative {main.rel_error:.3g})"
            + (f" · rounding bin {interval}" if interval else "")
            + f"<br><small>policy: {main.policy.name} · rounding {main.policy.rounding.value}"
            f" · overflow {main.policy.overflow.value} · "
            f"{tie_rule_text(main.policy.rounding.value, main.format)}"
            "</small></div>"
        )
        self._note.object = as_text(view.note)
        compare_name = view.compare.format if view.compare is not None else None
        label_legends(self._gap.object, [main.format, compare_name])
        label_legends(self._number_line.object, [compare_name])
        if view.table:
            self._table_note.object = ""
            self._table.visible = True
        else:
            self._table_note.object = f"The full code table is listed for formats up to 8 bits; {main.format} has {len(main.bits)}."
            self._table.visible = False

    def _make_toggle(self, index: int) -> pn.widgets.Toggle:
        t = pn.widgets.Toggle(label=f"bit {index}: ", value=False, width=28, height=34, margin=(2, 1), visible=False)
        t.param.watch(lambda event, i=index: self._on_bit(i, event.new), "value")
        return t

    def _on_bit(self, index: int, new: bool) -> None:
        if self._updating_bits:
            return
        self.flip_bit(index)

    def flip_bit(self, index: int) -> None:
        """Flip bit `index` (0 = most significant) of the shown code; the value box follows."""
        bits = list(self.view.main.bits)
        bits[index] = "1" if bits[index] == "0" else "0"
        code = int("".join(bits), 2)
        v = code_value(self.view.main.format, code)
        scaled = v * self.config().decode_scale if math.isfinite(v) else v
        self._flipped_code = code
        text = value_text(scaled)
        if text == self.config().value:
            self.update()
        else:
            self.value = text

    # -- layout -----------------------------------------------------------------------------------
    def controls(self) -> pn.viewable.Viewable:
        """The controls (one pn.Param, built once per widget)."""
        return self._controls_pane

    def _make_controls(self) -> pn.Param:
        widgets: dict[str, Any] = {name: {"width": 240} for name in self.controls_order}
        widgets["value"] = {"type": pn.widgets.TextInput, "width": 240,
                            "placeholder": "3.3, 1e-3, -0, inf, nan, 0x1.8p3"}
        widgets["decode_scale"] = {"type": pn.widgets.FloatInput, "width": 240}
        return self.record_controls(list(self.controls_order), widgets, width=250)

    def control(self, name: str) -> Any:
        """The Panel widget of parameter `name` (value, format, convention, …)."""
        return self._controls_pane._widgets[name]

    def offline_controls(self) -> list[Any]:
        """Controls an exported page keeps live (its bin engine answers them): the value box, the
        format and convention menus, and the bit toggles."""
        return [self.control("value"), self.control("format"), self.control("convention"), *self._toggle_pool]

    def panes(self) -> dict[str, Any]:
        """The panes an exported page's bin engine redraws, by role."""
        return {"formula": self._formula, "note": self._note, "table_note": self._table_note,
                "summary": self._summary, "table": self._table, "number_line": self._number_line,
                "gap": self._gap, "alert": self._alert, "stale": self._stale}

    def compact_view(self) -> pn.viewable.Viewable:
        """A small explorer for the start page: value and format, the bits, the formula and the
        number line (the same models as the full view; use one of the two on a page)."""
        view: Any = pn.Column(
            pn.Row(self.control("value"), self.control("format"), self.control("convention"),
                   sizing_mode="stretch_width"),
            self._alert, self._stale, self._bits, self._formula, self._number_line, sizing_mode="stretch_width")
        view._lowprec_widget = self
        return view

    def __panel__(self) -> pn.viewable.Viewable:
        # the message sits right under the value box it is about (below all seven controls it was
        # out of sight on a phone and below the fold on a laptop)
        rest = [self.control(name) for name in self.controls_order if name != "value"]
        left = pn.Column("### Bin explorer", self.control("value"), self._alert, *rest, width=290)
        right = pn.Column(
            self._stale, self._bits, self._formula, self._note, self._summary, self._number_line,
            pn.Row(self._gap), self._table_note, self._table, sizing_mode="stretch_width",
        )
        return pn.Row(left, right, sizing_mode="stretch_width")
