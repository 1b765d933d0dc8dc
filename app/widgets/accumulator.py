"""Accumulator: what a tensor core keeps of a long sum — the face of the accumulator study
(`simulations.gemm.study`; its parameters are `GemmConfig`'s). Pick an architecture and instruction
(empty: the architecture's default, FP8 where it has it), the longest K, the promotion intervals, the
inputs and C; the widget draws the error of each accumulation against K (the instruction chained
over K, the same promoted to FP32 every n elements, another architecture's instruction for the same
operands), the bit picture of one fused step of the first dot product (every product's significand
shifted to the step's largest exponent, the bits the unit keeps and the bits it truncates, what C
loses) and the per-role table of real stacks. Every number comes from the study's result; this
module turns it into columns and words (`app.plots.gemm`).
"""

from __future__ import annotations

from typing import Any

from bokeh.layouts import column
from bokeh.models import ColumnDataSource

from lowprec import numtext
from lowprec.app.plots.gemm import METRIC_TITLES, gemm_figures, gemm_sources, place_cut
from lowprec.app.widgets._sim_base import SimulationWidget, simulation_widget
from lowprec.simulations.gemm import study as gemm_study
from lowprec.simulations.gemm.study import GemmStudy


METRIC_WORDS = {"max_norm": "largest error relative to the magnitudes summed (Σ|a·b|)",
                "max_rel": "largest relative error of an output", "median_rel": "median relative error of an output"}


@simulation_widget(gemm_study.SIMULATION)
class Accumulator(SimulationWidget):
    """Tensor-core accumulation: error against K, one step bit by bit, and what real stacks set."""

    title = "Accumulator"

    def _source_data(self, result: GemmStudy) -> dict[str, dict[str, list[Any]]]:
        return gemm_sources(result)

    def _build_figures(self, sources: dict[str, ColumnDataSource]) -> Any:
        self._err, self._pic, self._table = gemm_figures(sources, str(getattr(self, "metric")))
        return column(self._err, self._pic, self._table, sizing_mode="stretch_width")

    def _after_update(self, result: GemmStudy) -> None:
        place_cut(self._pic, result.picture)
        self._err.title.text = f"error against K ({METRIC_TITLES[result.config.metric]})"
        self._table.visible = bool(result.stacks)

    def _summary_text(self, result: GemmStudy) -> str:
        cfg = result.config
        first = result.curves[0]
        k = first.k[-1]
        metric = cfg.metric
        parts = [f"**{result.instruction}** on {cfg.arch}: at K = {k} the {METRIC_WORDS[metric]} is "
                 f"{numtext.percent(first.values(metric)[-1])} with the whole K in the tensor core"]
        for c in result.curves[1:]:
            where = c.label.split(", ", 1)[1] if c.arch == cfg.arch else "on " + c.arch
            parts.append(f"{numtext.percent(c.values(metric)[-1])} {where}")
        text = ", ".join(parts) + "."
        p = result.picture
        lost = "nothing" if p.dropped_sum == 0 else f"{p.dropped_sum!r}"
        text += (f"  \nStep {p.step} of {p.steps} (products {p.k0}–{p.k1 - 1}) starts from C = {p.c_in!r}: every "
                 f"term is shifted to 2^{p.e_max} and cut {p.frac_bits} bits below it, which drops {lost}; "
                 f"the step returns D = {p.d_out!r} (its exact sum: {p.step_exact!r}).")
        return text


__all__ = ["Accumulator"]
