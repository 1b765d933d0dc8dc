"""BlockFormats: the block-formats widget, the face of `simulations.blocks` (its parameters are
`BlocksConfig`'s). A float32 tensor (Student-t, normal or log-normal, seeded; optionally one outlier in
the shown row) is quantized with a block recipe of the quant wing's registry (`simulations.quant`) —
MX (32 elements share an E8M0 scale 2^X, X from the block amax by the named scale rule: floor (OCP),
ceil, rceil, even) in MXFP8, MXFP6 or MXFP4; NVFP4 (E2M1 elements, an E4M3 scale per 16 or per
16×16 tile and an FP32 tensor scale; Transformer Engine's 4over6 and row-scaled variants); FP8
blockwise (E4M3 with an FP32, power-of-two or UE8M0 scale per 1×128 or 128×128 tile); MXINT8 —
optionally after the random Hadamard transform on blocks of 16, against per-tensor scaling in the same
element format, all under the chosen block convention (`convention`: the OCP reading, torchao,
Transformer Engine, DeepSeek's DeepGEMM or microxcaling). Choosing a convention that lacks the
current scale rule switches the rule to the convention's own (rceil for Transformer Engine); one that
lacks the recipe switches to the first recipe it has; choosing a non-MX recipe the convention lacks
switches to the recipe's own convention (an MX recipe the convention lacks is refused with the
reason). The widget draws the shown row's first 32 elements (input, decoded, per-tensor, the grid the
block snaps to), the RMS relative error of every 32-element block, and with `transposed_view` the
column-blocked view quantized from the source against re-quantized from the row-blocked decoded data.
Every number comes from the simulation's result; this module turns it into columns and words.
"""

from __future__ import annotations

from typing import Any

import param
from bokeh.models import ColumnDataSource

from lowprec.app.plots.style import power_of_two_text
from lowprec.app.plots.widget_blocks import TRANSPOSE_VIEWS, block_figures
from lowprec.app.widgets._sim_base import SimulationWidget, simulation_widget
from lowprec.simulations import blocks
from lowprec.simulations.blocks import BLOCK_RECIPES, BlocksResult, SelectedRecipe, TransposedView
from lowprec.simulations.quant import CONVENTIONS, ScaleFormat, Scheme, get_block_convention

#: grid lines drawn at most; a denser grid keeps its top three binades (8-bit grids crowd near zero)
MAX_GRID_LINES = 64


@simulation_widget(blocks.SIMULATION)
class BlockFormats(SimulationWidget):
    """MX and NVFP4 block formats: one block element by element, error against per-tensor scaling."""

    title = "Block formats"

    def __init__(self, **params: Any) -> None:
        defaults = {name: type(self).param[name].default for name in ("recipe", "convention", "scale_rule")}
        conv, recipe = params.get("convention"), params.get("recipe")
        if conv in CONVENTIONS and recipe is None:
            params["recipe"] = _recipe_for(str(conv), str(defaults["recipe"]))
        elif recipe in BLOCK_RECIPES and conv is None:
            params["convention"] = _convention_for(str(recipe), str(defaults["convention"]))
        conv = params.get("convention")
        if conv in CONVENTIONS and "scale_rule" not in params:
            params["scale_rule"] = _rule_for(str(conv), str(defaults["scale_rule"]))
        super().__init__(**params)

    def _before_update(self, names: set[str]) -> None:
        with param.parameterized.discard_events(self):
            convention, recipe = getattr(self, "convention"), getattr(self, "recipe")
            if "convention" in names and convention in CONVENTIONS:
                setattr(self, "recipe", _recipe_for(convention, recipe))
            elif "recipe" in names and recipe in BLOCK_RECIPES:
                setattr(self, "convention", _convention_for(recipe, convention))
            convention = getattr(self, "convention")
            if names & {"convention", "recipe"} and convention in CONVENTIONS:
                setattr(self, "scale_rule", _rule_for(convention, getattr(self, "scale_rule")))

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
        scheme, scale_text = recipe_words(sel)
        conv = get_block_convention(result.config.convention)
        convention = f" Block arithmetic: **{conv.name}** ({conv.source})."
        return (self._row_summary(result, scheme, scale_text) + convention
                + self._transpose_summary(sel.transposed, sel))

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
    def _transpose_summary(t: TransposedView | None, sel: SelectedRecipe | None = None) -> str:
        if t is None:
            return ""
        e_src, e_two = t.columns_from_source, t.columns_requantized
        rel = f" ({t.requantized_ratio:.3g}× the single rounding)" if e_src > 0 else ""
        text = (
            f"\n\n**Transposed view** (blocks along columns): RMS relative error {e_src:.4g} quantized "
            f"from the source, {e_two:.4g} re-quantized from the row-blocked decoded data{rel}: "
            f"extra error {t.extra:+.3g}; {t.codes_differ:.1%} of the column-view codes differ "
            f"(row view: {t.rows:.4g})."
        )
        if sel is not None and sel.recipe.scheme is Scheme.FP8_TILES and sel.recipe.block[0] == 1:
            pow2 = sel.recipe.scale_format in (ScaleFormat.POW2_FP32, ScaleFormat.E8M0)
            text += (" With power-of-two scales the re-quantized columns equal the row view's values: a power of "
                     "two leaves an E4M3 significand unchanged, so the second rounding is exact wherever the value "
                     "stays normal." if pow2 else
                     " With FP32 scales the column scale changes each significand, so the second rounding moves "
                     "values: the power-of-two recipes avoid that.")
        return text


def recipe_words(sel: SelectedRecipe) -> tuple[str, str]:
    """(the recipe in words, the shown block's scale in words) for the summary."""
    rec, shown = sel.recipe, sel.shown
    elem = rec.fmt.name + (" (×2^-6)" if rec.scheme is Scheme.MXINT else "")
    br, bc = rec.block
    per = f"{br}×{bc} tile" if br > 1 or rec.scheme is Scheme.FP8_TILES else f"{bc}"
    scale = rec.scale_format.value
    if rec.scheme is Scheme.NVFP4:
        second = "an FP32 scale per row" if rec.second_level == "row" else f"FP32 tensor scale {shown.tensor_scale:.4g}"
        variant = "; each block picks map-to-4 or map-to-6 by its error" if rec.nvfp4_variant == "4over6" else ""
        scheme = (f"{sel.name} ({elem} elements, an {scale} scale per {per}, {second}{variant}; "
                  f"the scale rule does not apply)")
        scale_text = (f"{scale} block scales " + " and ".join(power_of_two_text(v) for v in shown.block_scales)
                      + (" × the row's scale" if rec.second_level == "row" else " × the tensor scale"))
        return scheme, scale_text
    if rec.scheme is Scheme.MX:
        scheme = f"{sel.name} ({elem} elements, an E8M0 scale per {per}, rule {sel.scale_rule})"
    else:
        kind = {"FP32": "FP32", "POW2_FP32": "power-of-two FP32", "E8M0": "UE8M0"}.get(scale, scale)
        scheme = f"{sel.name} ({elem} elements, a{'n' if kind[0] in 'FU' else ''} {kind} scale per {per}; " \
                 f"the scale rule does not apply)"
    if shown.scale_exponents:
        scale_text = f"shared scale 2^{shown.scale_exponents[0]} (E8M0 code 0x{shown.scale_codes[0]:02X})"
    else:
        scale_text = f"decode scale {power_of_two_text(shown.block_scales[0])}"
    return scheme, scale_text


def _rule_for(convention: str, scale_rule: str) -> str:
    """`scale_rule` if the convention has it (or has no MX rules at all), else its own default rule."""
    conv = get_block_convention(convention)
    if not conv.mx_rules:
        return scale_rule
    return scale_rule if scale_rule in conv.rules else conv.default_rule.value


def _recipe_for(convention: str, recipe: str) -> str:
    """`recipe` if the convention has it, else the first block recipe the convention has."""
    if BLOCK_RECIPES[recipe].unsupported(convention) is None:
        return recipe
    return next((name for name, r in BLOCK_RECIPES.items() if r.unsupported(convention) is None), recipe)


def _convention_for(recipe: str, convention: str) -> str:
    """`convention` if it has the recipe, or if it has MX but not this MX format (refused with the
    reason); else the recipe's own convention."""
    rec = BLOCK_RECIPES[recipe]
    if rec.unsupported(convention) is None:
        return convention
    if rec.scheme is Scheme.MX and get_block_convention(convention).mx_elements:
        return convention  # it has MX, not this element format: refused with the reason
    return rec.convention


def transpose_columns(transposed: TransposedView | None) -> dict[str, list[Any]]:
    """Bars of the transposed-view figure: one per entry of TRANSPOSE_VIEWS (row view, columns
    from the source, columns re-quantized) with its error; empty columns when the view is off."""
    if transposed is None:
        return {"view": [], "error": [], "color": []}
    errors = [transposed.rows, transposed.columns_from_source, transposed.columns_requantized]
    return {"view": [label for label, _ in TRANSPOSE_VIEWS], "error": errors,
            "color": [color for _, color in TRANSPOSE_VIEWS]}


__all__ = ["BlockFormats", "recipe_words", "transpose_columns"]
