"""`lowprec simulate grouping`: the grouping studies of `simulations.grouping` (outlier across
granularities, fixed vs amax scale, transposed re-quantization, Hadamard transform; the options are
`GroupingConfig`'s) as JSON, with optional standalone HTML plots (`app.plots.grouping`)."""

from __future__ import annotations

from typing import Any

from lowprec.simulations.grouping import SIMULATION, GroupingResult

from .sim_common import register_simulation


def write_html(result: GroupingResult, path: str) -> None:
    from lowprec.app.plots.captions import caption
    from lowprec.app.plots.grouping import study_figure
    from lowprec.app.plots.html import save_standalone
    from lowprec.simulations._cli import config_values

    save_standalone(study_figure(result.study), path, f"Grouping study: {result.config.study}",
                    parameters=config_values(result.config), caption=caption("ScaleGrouping", result))


def register(sims: Any) -> None:
    register_simulation(sims, SIMULATION, write_html)
