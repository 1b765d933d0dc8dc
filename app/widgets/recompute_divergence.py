"""RecomputeDivergence: the recompute-divergence widget. It runs
`simulations.recompute.run_recompute` — a small tanh MLP trained with real PyTorch autograd and
`torch.utils.checkpoint`, its layer inputs quantized by a delayed-scaling quantizer (Transformer
Engine convention `encode_scale = F / amax / 2**margin`, round-to-nearest-even, saturating) — for the
chosen quantizer design (`fixed` or one of the defect variants), and shows a layer × step heatmap of
the forward-vs-recompute difference, the state commits per step, the gradient-norm trace with
skipped steps and the encode scale of forward vs recompute (`app.plots.recompute`), under the simulation's own plain-language verdict line. A run that fails (the
gate-asymmetry stash/restore) is a verdict, not an exception. The run uses one torch thread (its
matrices are too small to gain from more).
"""

from __future__ import annotations

from typing import Any

import panel as pn
import param
import torch
from bokeh.layouts import column
from bokeh.models import ColumnDataSource

from lowprec.app.plots.recompute import recompute_sources, scale_figure
from lowprec.app.plots.widget_recompute import recompute_figures
from lowprec.app.widgets._sim_base import SimulationWidget
from lowprec.simulations import recompute


class RecomputeDivergence(SimulationWidget):
    """Forward vs recompute of a stateful quantizer inside activation-checkpointed layers."""

    variant: param.Selector = param.Selector(default="fixed", objects=list(recompute.VARIANTS),
                             doc="quantizer design: the corrected one ('fixed') or a defect variant")
    layers = param.Integer(default=4, bounds=(1, 12), doc="number of checkpointed layers")
    steps = param.Integer(default=20, bounds=(1, 100), doc="training steps")
    format: param.Selector = param.Selector(default="E4M3FN", objects=["E4M3FN", "E5M2", "E3M2", "E2M3", "E2M1"],
                            doc="format of the quantized layer inputs")
    checkpointing = param.Boolean(default=True, doc="activation checkpointing on (recompute in backward)")
    seed = param.Integer(default=0, bounds=(0, 2**31 - 1), doc="seed of weights and data")

    title = "Recompute divergence"
    control_widgets = {"seed": pn.widgets.IntInput}
    watched = ("variant", "layers", "steps", "format", "checkpointing", "seed")

    def simulation_kwargs(self) -> dict[str, Any]:
        """The arguments this widget passes to `simulations.recompute.run_recompute`."""
        return dict(variant=self.variant, layers=self.layers, steps=self.steps, fmt=self.format,
                    checkpointing=self.checkpointing, seed=self.seed)

    def _compute(self) -> Any:
        # The layers are tiny (width 64, batch 16): torch's intra-op threads only add overhead, and
        # on a busy machine 2 threads made a run 10-25× slower than 1. Results do not depend on it.
        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            return recompute.run_recompute(**self.simulation_kwargs())
        finally:
            torch.set_num_threads(threads)

    def _source_data(self, result: Any) -> dict[str, dict[str, list[Any]]]:
        return recompute_sources(result)

    def _build_figures(self, sources: dict[str, ColumnDataSource]) -> Any:
        layout, self._expected_commits = recompute_figures(sources, self.layers)
        return column(layout, scale_figure(sources["scales"]), sizing_mode="stretch_width")

    def _after_update(self, result: Any) -> None:
        # the one-commit-per-layer rule; the BF16 control has no state, so it expects none
        self._expected_commits.location = 0 if self.variant == "bf16-control" else self.layers

    def _summary_text(self, result: Any) -> str:
        return f"**Verdict:** {result.verdict()}  \n*{self.variant}*: {recompute.VARIANTS[self.variant]}."


__all__ = ["RecomputeDivergence"]
