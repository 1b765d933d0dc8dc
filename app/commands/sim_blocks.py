"""`lowprec simulate blocks`: MX (each element format × scale rule) and NVFP4 on one tensor, one recipe
in detail (`simulations.blocks`; the options are `BlocksConfig`'s), as JSON, with optional standalone
HTML plots (`app.plots.blocks`)."""

from __future__ import annotations

from typing import Any

from lowprec.simulations.blocks import SIMULATION, BlocksResult

from .sim_common import register_simulation


def write_html(result: BlocksResult, path: str) -> None:
    from lowprec.app.plots.blocks import blocks_figure, blocks_sources
    from lowprec.app.plots.captions import caption
    from lowprec.app.plots.html import save_standalone
    from lowprec.simulations._cli import config_values

    save_standalone(blocks_figure(blocks_sources(result), result.config.recipe), path,
                    f"Block formats: {result.config.recipe}", parameters=config_values(result.config),
                    caption=caption("BlockFormats", result))


def register(sims: Any) -> None:
    register_simulation(sims, SIMULATION, write_html)
