"""`lowprec simulate attention`: attention-probability rounding (`simulations.attention`; the options
are `AttentionConfig`'s) as JSON, with optional standalone HTML plots (`app.plots.attention`)."""

from __future__ import annotations

from typing import Any

from lowprec.simulations.attention import SIMULATION, AttentionResult

from .sim_common import register_simulation


def write_html(result: AttentionResult, path: str) -> None:
    from lowprec.app.plots.attention import attention_layout
    from lowprec.app.plots.captions import caption
    from lowprec.app.plots.html import save_standalone

    save_standalone(attention_layout(result), path,
                    f"Attention rounding: {result.config['format']}, {result.config['rounding']}",
                    parameters=result.config["parameters"], caption=caption("AttentionRounding", result))


def register(sims: Any) -> None:
    register_simulation(sims, SIMULATION, write_html)
