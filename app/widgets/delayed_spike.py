"""DelayedSpike: the delayed-scale spike widget. One tensor stream with a single spike is scaled two
ways by `simulations.delayed.simulate_stream`: delayed scaling (the encode scale at step t comes from an
amax history recorded before t, `encode_scale = F / amax_used / 2**margin`, Transformer Engine
semantics) and current scaling (the step's own amax). The plots show, per step, the tensor amax next to
the amax each scale was derived from, the clipped fraction and the RMS relative error; the spike step
is highlighted (figures: `app.plots.delayed.spike_figure`). Controls: format, history length, `max` / `most_recent`, margin, steps, spike step
and magnitude. A spike step outside the stream is reported in the widget, never raised.
"""

from __future__ import annotations

from typing import Any

import panel as pn
import param
from bokeh.models import ColumnDataSource
from bokeh.models.annotations import Span

from lowprec.app.plots.delayed import spike_figure, spike_sources
from lowprec.app.widgets._sim_base import SimulationWidget
from lowprec.simulations import delayed


class DelayedSpike(SimulationWidget):
    """Delayed vs current scaling through one spike in a tensor stream."""

    format: param.Selector = param.Selector(default="E4M3FN", objects=["E4M3FN", "E5M2"], doc="element format of the cast")
    history = param.Integer(default=16, bounds=(1, 1024), doc="amax history length H (steps)")
    algo: param.Selector = param.Selector(default="max", objects=["max", "most_recent"],
                          doc="how the history becomes the amax the scale uses")
    margin = param.Integer(default=0, bounds=(0, 8), doc="margin: encode scale divided by 2**margin")
    steps = param.Integer(default=200, bounds=(2, 2000), doc="number of steps in the stream")
    spike_step = param.Integer(default=100, bounds=(0, 1999), doc="step at which the spike occurs")
    spike = param.Number(default=50.0, bounds=(1.0, 1e6), doc="spike magnitude (multiple of the usual amax)")
    seed = param.Integer(default=0, bounds=(0, 2**31 - 1), doc="random seed of the stream")

    title = "Delayed-scale spike"
    control_widgets = {"spike": pn.widgets.FloatInput, "seed": pn.widgets.IntInput}
    watched = ("format", "history", "algo", "margin", "steps", "spike_step", "spike", "seed")

    def _compute(self) -> Any:
        return delayed.simulate_stream(**self.simulation_kwargs())

    def simulation_kwargs(self) -> dict[str, Any]:
        """The arguments this widget passes to `simulations.delayed.simulate_stream`."""
        return dict(
            fmt=self.format, history_len=self.history, algo=self.algo, margin=self.margin,
            steps=self.steps, spike_step=self.spike_step, spike=self.spike, seed=self.seed,
        )

    def _source_data(self, result: Any) -> dict[str, dict[str, list[Any]]]:
        return spike_sources(result)

    def _build_figures(self, sources: dict[str, ColumnDataSource]) -> Any:
        layout = spike_figure(sources, spike_step=self.spike_step)
        self._spans = list(layout.select({"type": Span}))  # the spike marker of each figure
        return layout

    def _after_update(self, result: Any) -> None:
        for span in self._spans:
            span.location = self.spike_step

    def _summary_text(self, result: Any) -> str:
        s = self.spike_step
        delayed_clip = float(result.delayed["clipped_fraction"][s])
        current_clip = float(result.current["clipped_fraction"][s])
        reduced = result.reduced_steps()
        return (
            f"At the spike (step {s}) delayed scaling clips {delayed_clip:.2%} of the tensor, current "
            f"scaling {current_clip:.2%}. The delayed scale was sized for more than twice the tensor's "
            f"amax on {reduced} of {result.steps} steps ({self.algo}, history {self.history})."
        )


__all__ = ["DelayedSpike"]
