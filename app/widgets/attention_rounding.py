"""AttentionRounding: the attention-rounding widget. It runs `simulations.attention` — softmax
probabilities P (stable, max-subtracted) rounded in a chosen format by round-to-nearest-even or
stochastic rounding, optionally with a per-row decode scale `row_amax / F`, O = P·V accumulated
exactly — and shows P̃ against P, exact ΔO against the first-order estimate ΔP·V + P·ΔV, the
Monte-Carlo variance against the analytic Σ_j V_j² Var(e_j) and the per-element bias, with
renormalisation of the rounded rows as an option. Preset "random": `simulate_attention` on random
scores (seq × seq, head dim HEAD_DIM, scores z / temperature). Preset "three_probs": one query whose
softmax is [0.6, 0.3, 0.1] over V = [0, 2, 10] (seq and temperature do not apply), next to the worked
example `attention_product_example` (on a grid of step 0.25, 1.6 becomes 0.5).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import panel as pn
import param
from bokeh.models import ColumnDataSource

from lowprec.app.plots.widget_attention import attention_widget_columns, attention_widget_figures
from lowprec.app.widgets._sim_base import SimulationWidget
from lowprec.simulations import attention

HEAD_DIM = 64
THREE_PROBS = (0.6, 0.3, 0.1)
THREE_VALUES = (0.0, 2.0, 10.0)


def three_probs_inputs() -> Any:
    """One query over three keys with softmax [0.6, 0.3, 0.1] (scores = log P) and V = [0, 2, 10]."""
    scores = np.log(np.array([THREE_PROBS], dtype=np.float64))
    values = np.array(THREE_VALUES, dtype=np.float64).reshape(3, 1)
    return attention.AttentionInputs(scores, values, None, {"preset": "three_probs"})


class AttentionRounding(SimulationWidget):
    """Rounding softmax probabilities: P̃ vs P, ΔO vs first order, bias and variance."""

    format: param.Selector = param.Selector(default="E4M3FN", objects=["E4M3FN", "E5M2", "E2M1", "E3M2", "E2M3", "BF16", "FP16"],
                            doc="format P is rounded to")
    rounding: param.Selector = param.Selector(default="nearest_even", objects=list(attention.ROUNDINGS),
                              doc="round to nearest (ties to even) or stochastic rounding")
    scale: param.Selector = param.Selector(default="none", objects=list(attention.SCALES),
                           doc="'row': divide each row by decode_scale = row_amax / F before rounding")
    seq = param.Integer(default=128, bounds=(2, 512), doc="sequence length (queries = keys)")
    temperature = param.Number(default=1.0, bounds=(0.05, 20.0),
                               doc="softmax temperature: lower concentrates each row on fewer keys")
    trials = param.Integer(default=200, bounds=(1, 5000), doc="Monte-Carlo trials of stochastic rounding")
    renormalize = param.Boolean(default=False, doc="renormalise each rounded row to sum 1 (shows its bias)")
    preset: param.Selector = param.Selector(default="random", objects=["random", "three_probs"],
                            doc="'random' scores, or the [0.6, 0.3, 0.1] example with V = [0, 2, 10]")
    seed = param.Integer(default=0, bounds=(0, 2**31 - 1), doc="seed of inputs (and seed + 1 of rounding)")

    title = "Attention rounding"
    control_widgets = {"seed": pn.widgets.IntInput, "trials": pn.widgets.IntInput}
    watched = ("format", "rounding", "scale", "seq", "temperature", "trials", "renormalize", "preset", "seed")

    def _compute(self) -> Any:
        if self.preset == "three_probs":
            return attention.run_attention(three_probs_inputs(), self.format, self.rounding, scale=self.scale,
                                           trials=self.trials, renormalize=self.renormalize, seed=self.seed + 1)
        return attention.simulate_attention(self.seq, HEAD_DIM, self.format, self.rounding, scale=self.scale,
                                            trials=self.trials, temperature=self.temperature,
                                            renormalize=self.renormalize, seed=self.seed)

    def _source_data(self, result: Any) -> dict[str, dict[str, list[Any]]]:
        return attention_widget_columns(result)

    def _build_figures(self, sources: dict[str, ColumnDataSource]) -> Any:
        return attention_widget_figures(sources)

    def _summary_text(self, result: Any) -> str:
        s = result.summary()
        fmt = result.config["format"]
        head = (f"{fmt}, {self.rounding.replace('_', ' ')}" + (", row-scaled" if self.scale == "row" else "")
                + f": relative error of O {s['rel_error']:.3g}, rows sum to 1 within "
                  f"{s['max_abs_row_mass_error']:.2g}, and the first-order estimate ΔP·V + P·ΔV "
                  + ("matches ΔO exactly." if s["first_order_residual"] == 0 else
                     f"misses ΔO by at most {s['first_order_residual']:.2g}."))
        if self.rounding == "stochastic":
            ratio = s["mean_mc_variance"] / s["mean_analytic_variance"] if s["mean_analytic_variance"] > 0 else math.nan
            head += (f" Over {self.trials} trials the RMS bias is {s['rms_bias']:.3g} (nearest rounding's error: "
                     f"{s['rms_nearest_error']:.3g}); Monte-Carlo / analytic variance = {ratio:.3f}.")
        if "rms_bias_renorm" in s:
            head += f" Renormalising the rows gives an RMS bias of {s['rms_bias_renorm']:.3g}."
        if self.preset == "three_probs":
            ex = attention.attention_product_example()
            out = float(result.out_exact[0, 0])
            head += (f"  \nP = [0.6, 0.3, 0.1] becomes {[float(f'{v:.4g}') for v in result.probs_rounded[0]]} in "
                     f"{fmt}, so P·V = {out:.4g} becomes {float(result.out_rounded[0, 0]):.4g}. On a grid of step "
                     f"{ex.grid_step} it becomes {ex.probs_rounded} and the product {float(ex.exact_product):g} → "
                     f"{float(ex.rounded_product):g}: exact accumulation cannot recover what rounding P lost. "
                     f"(seq and temperature do not apply to this preset.)")
        return head


__all__ = ["AttentionRounding", "HEAD_DIM", "three_probs_inputs"]
