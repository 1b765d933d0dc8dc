"""BlockFormats: the block-formats widget, the face of `simulations.blocks` (its parameters are
`BlocksConfig`'s). A float32 tensor (Student-t, normal or log-normal, seeded; optionally one outlier in
the shown row) is quantized with a block recipe of `simulations.block_formats` — MX (32 elements share
an E8M0 scale 2^X, X from the block amax by the named scale rule: floor (OCP), ceil, rceil, even) in
MXFP8, MXFP6 or MXFP4, or NVFP4 (E2M1 elements, an E4M3 scale per 16 and an FP32 tensor scale
`amax / (448·6)`; the scale rule does not apply) — optionally after the random Hadamard transform on
blocks of 16, against per-tensor scaling in the same element format, all under the chosen block
convention (`convention`: the OCP reading, torchao's or Transformer Engine's arithmetic; choosing a
convention that lacks the current scale rule switches the rule to the convention's own, e.g. rceil
for Transformer Engine). The widget draws the shown row's
first 32 elements (input, decoded, per-tensor, the grid the block snaps to), the RMS relative error of
every 32-element block, and with `transposed_view` the column-blocked view quantized from the source
against re-quantized from the row-blocked decoded data. Every number comes from the simulation's
result; this module turns it into columns and words.
"""

from __future__ import annotations

from typing import Any

import param
from bokeh.models import ColumnDataSource

from lowprec.app.plots.style import power_of_two_text
from lowprec.app.plots.widget_blocks import TRANSPOSE_VIEWS, block_figures
from lowprec.app.widgets._sim_base import SimulationWidget, simulation_widget
from lowprec.simulations import blocks
from lowprec.simulations.block_conventions import BLOCK_CONVENTIONS, get_block_convention
from lowprec.simulations.blocks import BlocksResult, SelectedRecipe, TransposedView

#: grid lines drawn at most; a denser grid keeps its top three binades (8-bit grids crowd near zero)
MAX_GRID_LINES = 64


@simulation_widget(blocks.SIMULATION)
class BlockFormats(SimulationWidget):
    """MX and NVFP4 block formats: one block element by element, error against per-tensor scaling."""

    title = "Block formats"

    def __init__(self, **params: Any) -> None:
        conv = params.get("convention")
        if conv in BLOCK_CONVENTIONS and "scale_rule" not in params:
            params["scale_rule"] = _rule_for(str(conv), str(type(self).param["scale_rule"].default))
        super().__init__(**params)

    def _on_param_change(self, *events: param.parameterized.Event) -> None:
        convention, scale_rule = getattr(self, "convention"), getattr(self, "scale_rule")
        if any(e.name == "convention" for e in events) and convention in BLOCK_CONVENTIONS:
            rule = _rule_for(convention, scale_rule)
            if rule != scale_rule:
                with param.parameterized.discard_events(self):
                    setattr(self, "scale_rule", rule)
        self.update()

    @staticmethod
    def _selected(result: BlocksResult) -> SelectedRecipe:
        assert result.selected is not None
        return result.selected

    def _source_data(self, result: BlocksResult) -> dict[str, dict[str, list[Any]]]:
        sel = self._selected(result)
        shown = sel.shown
        block = {
            "element": list(range(shown.input.size)),
            "input": shown.input.tolist(),
            "decoded": shown.decoded.tolist(),
            "per_tensor": shown.per_tensor.tolist(),
            "code": [f"0x{int(c):02X}" for c in shown.codes],
            "scale_text": [power_of_two_text(float(s)) for s in shown.decode_scales],
        }
        lines = shown.lattice.tolist()
        if len(lines) > MAX_GRID_LINES:
            lines = [v for v in lines if abs(v) >= shown.reach / 8]
        rec = sel.error.group_rms_rel_error.reshape(-1)
        pt = sel.error_per_tensor.group_rms_rel_error.reshape(-1)
        errors = {"block": list(range(rec.size)), "recipe": rec.tolist(), "per_tensor": pt.tolist()}
        shown_block = {"block": [sel.shown_block], "recipe": [float(rec[sel.shown_block])]}
        return {"block": block, "grid": {"value": lines}, "errors": errors, "shown": shown_block,
                "transpose": transpose_columns(sel.transposed)}

    def _build_figures(self, sources: dict[str, ColumnDataSource]) -> Any:
        layout = block_figures(sources)
        self._transpose_fig = layout.children[-1]
        return layout

    def _after_update(self, result: BlocksResult) -> None:
        self._transpose_fig.visible = self._selected(result).transposed is not None

    def _summary_text(self, result: BlocksResult) -> str:
        sel = self._selected(result)
        shown = sel.shown
        bf = sel.block_format
        if shown.tensor_scale is not None:
            scheme = (f"{bf.name} ({bf.element.name} elements, an {bf.scale.name} scale per {bf.block_size}, "
                      f"FP32 tensor scale {shown.tensor_scale:.4g}; the scale rule does not apply)")
            scale_text = (f"{bf.scale.name} block scales "
                          + " and ".join(power_of_two_text(v) for v in shown.block_scales) + " × the tensor scale")
        else:
            scheme = (f"{bf.name} ({bf.element.name} elements, an {bf.scale.name} scale per {bf.block_size}, "
                      f"rule {sel.scale_rule})")
            scale_text = f"shared scale 2^{shown.scale_exponents[0]} (E8M0 code 0x{shown.scale_codes[0]:02X})"
        conv = get_block_convention(result.config.convention)
        convention = f" Block arithmetic: **{conv.name}** ({conv.source})."
        return (self._row_summary(result, scheme, scale_text) + convention
                + self._transpose_summary(sel.transposed))

    def _row_summary(self, result: BlocksResult, scheme: str, scale_text: str) -> str:
        sel = self._selected(result)
        e, ept = sel.error.rms_rel_error, sel.error_per_tensor.rms_rel_error
        r = sel.error_ratio
        if e == ept:
            ratio = "the same"
        elif e < ept:
            ratio = f"blocks {r:.3g}× more accurate"
        else:
            ratio = f"per-tensor {1 / r:.3g}× more accurate" if ept > 0 else "per-tensor exact"
        hadamard = ", after the Hadamard transform" if result.config.hadamard else ""
        return (
            f"{scheme}: **{sel.bits_per_element:.4g} bits per element**. The shown block "
            f"(row {sel.shown.row}{hadamard}) has amax {sel.shown.amax:.4g} and {scale_text}. RMS relative "
            f"error over the tensor: {e:.3g} with blocks, {ept:.3g} with one per-tensor scale ({ratio}); "
            f"flushed to zero: {sel.error.flushed_fraction:.1%} vs {sel.error_per_tensor.flushed_fraction:.1%}."
        )

    @staticmethod
    def _transpose_summary(t: TransposedView | None) -> str:
        if t is None:
            return ""
        e_src, e_two = t.columns_from_source, t.columns_requantized
        rel = f" ({t.requantized_ratio:.3g}× the single rounding)" if e_src > 0 else ""
        return (
            f"\n\n**Transposed view** (blocks along columns): RMS relative error {e_src:.4g} quantized "
            f"from the source, {e_two:.4g} re-quantized from the row-blocked decoded data{rel}: "
            f"extra error {t.extra:+.3g}; {t.codes_differ:.1%} of the column-view codes differ "
            f"(row view: {t.rows:.4g})."
        )


def _rule_for(convention: str, scale_rule: str) -> str:
    """`scale_rule` if the convention has it, else the convention's own default rule."""
    conv = get_block_convention(convention)
    return scale_rule if scale_rule in conv.rules else conv.default_rule.value


def transpose_columns(transposed: TransposedView | None) -> dict[str, list[Any]]:
    """Bars of the transposed-view figure: one per entry of TRANSPOSE_VIEWS (row view, columns
    from the source, columns re-quantized) with its error; empty columns when the view is off."""
    if transposed is None:
        return {"view": [], "error": [], "color": []}
    errors = [transposed.rows, transposed.columns_from_source, transposed.columns_requantized]
    return {"view": [label for label, _ in TRANSPOSE_VIEWS], "error": errors,
            "color": [color for _, color in TRANSPOSE_VIEWS]}


__all__ = ["BlockFormats", "transpose_columns"]
