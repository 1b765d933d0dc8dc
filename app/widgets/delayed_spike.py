"""DelayedSpike: the delayed-scale spike widget, the face of `simulations.studies.spike` (its parameters are
`SpikeConfig`'s). One tensor stream is scaled two ways: delayed scaling (the encode scale at step t
comes from an amax history recorded before t, `encode_scale = F / amax_used / 2**margin`, Transformer
Engine semantics) and current scaling (the step's own amax). The plots show, per step, the tensor amax
next to the amax each scale was derived from, the clipped fraction and the RMS relative error; the
spike step is highlighted (figures: `app.plots.delayed.spike_figure`). A spike step outside the
stream is reported in the widget, never raised.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from bokeh.models import ColumnDataSource
from bokeh.models.annotations import Span

from lowprec.app.plots.delayed import spike_figure, spike_sources
from lowprec.app.widgets._sim_base import SimulationWidget, simulation_widget
from lowprec.simulations.studies import spike
from lowprec.simulations.studies.spike import StreamResult


@simulation_widget(spike.SIMULATION)
class DelayedSpike(SimulationWidget):
    """Delayed vs current scaling through one spike in a tensor stream."""

    title = "Delayed-scale spike"

    def _source_data(self, result: StreamResult) -> dict[str, dict[str, list[Any]]]:
        return spike_sources(result)

    def _build_figures(self, sources: dict[str, ColumnDataSource]) -> Any:
        layout = spike_figure(sources, spike_step=self.spike_step)  # type: ignore[attr-defined]
        self._spans = list(layout.select({"type": Span}))  # the spike marker of each figure
        return layout

    def _after_update(self, result: StreamResult) -> None:
        for span in self._spans:
            span.location = result.config.spike_step
            span.visible = result.config.stream == "spike"

    def _summary_text(self, result: StreamResult) -> str:
        cfg = result.config
        reduced = result.reduced_steps()
        tail = (f"The delayed scale was sized for more than twice the tensor's amax on {reduced} of "
                f"{result.steps} steps ({cfg.algo}, history {cfg.history}).")
        if cfg.stream == "spike":
            s, where = cfg.spike_step, f"At the spike (step {cfg.spike_step})"
        else:
            s = int(np.argmax(result.amax))
            where = f"At the largest amax (step {s}, {cfg.stream} stream)"
        delayed_clip = float(result.delayed["clipped_fraction"][s])
        current_clip = float(result.current["clipped_fraction"][s])
        return (f"{where} delayed scaling clips {spike.percent(delayed_clip)} of the tensor, current scaling "
                f"{spike.percent(current_clip)}. {tail}")


__all__ = ["DelayedSpike"]
