"""AttentionRounding: the attention-rounding widget, the face of `simulations.studies.attention` (its
parameters are `AttentionConfig`'s). Softmax probabilities P (stable, max-subtracted) are rounded in a
chosen format by round-to-nearest-even or stochastic rounding, optionally with a per-row decode scale
`row_amax / F`, O = P·V accumulated exactly; the widget shows P̃ against P, exact ΔO against the
first-order estimate ΔP·V + P·ΔV, the Monte-Carlo variance against the analytic Σ_j V_j² Var(e_j) and
the per-element bias, with renormalisation of the rounded rows as an option. Preset "random": random
scores (seq × seq, head dim head_dim, scores z / temperature). Preset "three_probs": one query whose
softmax is [0.6, 0.3, 0.1] over V = [0, 2, 10] (seq, temperature, head_dim, the V outliers and the
mask do not apply), next to the worked example `attention_product_example` (on a grid of step 0.25,
1.6 becomes 0.5).
"""

from __future__ import annotations

from typing import Any

from bokeh.models import ColumnDataSource

from lowprec.app.plots.widget_attention import (attention_widget_columns, attention_widget_figures, rounding_marks,
                                                show_rounding)
from lowprec.app.widgets._sim_base import SimulationWidget, simulation_widget
from lowprec.simulations.studies import attention
from lowprec.simulations.studies.attention import AttentionResult


@simulation_widget(attention.SIMULATION)
class AttentionRounding(SimulationWidget):
    """Rounding softmax probabilities: P̃ vs P, ΔO vs first order, bias and variance."""

    title = "Attention rounding"

    def _source_data(self, result: AttentionResult) -> dict[str, dict[str, list[Any]]]:
        return attention_widget_columns(result)

    def _build_figures(self, sources: dict[str, ColumnDataSource]) -> Any:
        layout = attention_widget_figures(sources)
        self._marks = rounding_marks(layout)  # found once: a walk of the figures is slow
        return layout

    def _after_update(self, result: AttentionResult) -> None:
        show_rounding(self._marks, result.config["parameters"]["rounding"] == "stochastic")

    def _summary_text(self, result: AttentionResult) -> str:
        s = result.summary()
        p = result.config["parameters"]
        fmt = result.config["format"]
        head = (f"{fmt}, {p['rounding'].replace('_', ' ')}" + (", row-scaled" if p["scale"] == "row" else "")
                + f": relative error of O {s['rel_error']:.3g}, rows sum to 1 within "
                  f"{s['max_abs_row_mass_error']:.2g}, and the first-order estimate ΔP·V + P·ΔV "
                  + ("matches ΔO exactly." if s["first_order_residual"] == 0 else
                     f"misses ΔO by at most {s['first_order_residual']:.2g}."))
        if p["rounding"] == "stochastic":
            head += (f" Over {p['trials']} trials the RMS bias is {s['rms_bias']:.3g} (nearest rounding's error: "
                     f"{s['rms_nearest_error']:.3g}); Monte-Carlo / analytic variance = {s['mc_to_analytic_variance']:.3f}.")
        if "rms_bias_renorm" in s:
            head += f" Renormalising the rows gives an RMS bias of {s['rms_bias_renorm']:.3g}."
        if p["preset"] == "three_probs":
            ex = attention.attention_product_example()
            out = float(result.out_exact[0, 0])
            head += (f"  \nP = [0.6, 0.3, 0.1] becomes {[float(f'{v:.4g}') for v in result.probs_rounded[0]]} in "
                     f"{fmt}, so P·V = {out:.4g} becomes {float(result.out_rounded[0, 0]):.4g}. On a grid of step "
                     f"{ex.grid_step} it becomes {ex.probs_rounded} and the product {float(ex.exact_product):g} → "
                     f"{float(ex.rounded_product):g}: exact accumulation cannot recover what rounding P lost. "
                     f"(seq, temperature, head_dim, the V outliers and the mask do not apply to this preset.)")
        return head


__all__ = ["AttentionRounding"]
