"""`lowprec simulate spike`: delayed vs current scaling over a tensor stream (`simulations.spike`; the
options are `SpikeConfig`'s), as JSON/CSV, with optional standalone HTML plots (`app.plots.delayed`)."""

from __future__ import annotations

from typing import Any

from lowprec.simulations.spike import SIMULATION, StreamResult

from .sim_common import register_simulation


def write_html(result: StreamResult, path: str) -> None:
    from lowprec.app.plots.captions import caption
    from lowprec.app.plots.delayed import spike_figure, spike_sources
    from lowprec.app.plots.html import save_standalone
    from lowprec.simulations._cli import config_values

    c = result.config
    save_standalone(spike_figure(spike_sources(result), c.spike_step if c.stream == "spike" else None),
                    path, f"Delayed scaling: {c.format}, history {c.history}, {c.algo}",
                    parameters=config_values(c), caption=caption("DelayedSpike", result))


def register(sims: Any) -> None:
    register_simulation(sims, SIMULATION, write_html)
