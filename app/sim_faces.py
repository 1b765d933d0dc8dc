"""The app's one registry of simulations: every face the app gives a simulation, in one entry.

A simulation is declared once in `lowprec.simulations` (its `Simulation`: name, config record, run,
summary, CSV). What the app adds lives here, one `SimulationFaces` per simulation, keyed by its
name:

- `html`: the page `lowprec simulate NAME --html OUT` writes: the simulation's figures
  (`app.plots`), its parameters and its caption in one standalone file (`write_html`);
- `caption`: what to look at in those figures (`app.plots.captions`), shown under the widget's plots
  and in the `--html` page;
- `widget`: the widget (a key of `app.widgets.WIDGETS`) that is the simulation's face in pages, or
  None where the simulation has none of its own (`widget_note` then says where it is shown);
- `export_control`: the widget's knob kept live in an exported offline page (`app.export`).

Everything that enumerates simulations reads this registry: the `lowprec simulate` subcommands
(`app.commands.simulate_cmd`), the exported controls (`app.export.EXPORT_CONTROLS`), the widgets'
captions (`widget_caption`) and the tests, which also check that every `Simulation` declared in
`lowprec.simulations` has an entry with every face (tests/test_config_faces.py): a simulation added
without its faces fails a test instead of being silently missing. Importing this module imports
neither Panel nor Bokeh nor torch (the plotting modules load when a page is written; simulations
are named as "module:attribute").
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

from lowprec.app.plots import captions

if TYPE_CHECKING:
    from lowprec.simulations.framework.cli import Simulation

__all__ = ["FACES", "SimulationFaces", "export_controls", "faces", "faces_of_widget", "widget_caption"]


def _load(target: str) -> Any:
    module_name, _, attr = target.partition(":")
    return getattr(importlib.import_module(module_name), attr)


@dataclass(frozen=True)
class SimulationFaces:
    """The app's faces of one simulation (see the module docstring)."""

    name: str  # the simulation's name: `lowprec simulate NAME`
    simulation: str  # "module:attribute" of its `Simulation` declaration
    html: Callable[[Any, str, str], None]  # (result, path, caption) → the standalone page
    caption: Callable[[Any], str]  # result → the caption's Markdown
    widget: str | None  # the widget that is its face (a key of app.widgets.WIDGETS), or None
    export_control: str | None  # the widget's knob kept live offline (None without a widget)
    widget_note: str = ""  # without a widget of its own: where the simulation is shown

    def load(self) -> "Simulation[Any, Any]":
        """The simulation's declaration."""
        sim: Simulation[Any, Any] = _load(self.simulation)
        return sim

    def write_html(self, result: Any, path: str) -> None:
        """`--html`: the result's figures with its parameters and caption, one offline file."""
        self.html(result, path, self.caption(result))


# -- the --html pages (each imports its plotting modules when called) -------------------------------


def _save(figure: Any, path: str, title: str, parameters: dict[str, Any], caption: str) -> None:
    from lowprec.app.plots.html import save_standalone

    save_standalone(figure, path, title, parameters=parameters, caption=caption)


def _values(config: Any) -> dict[str, Any]:
    from lowprec.simulations.framework.cli import config_values

    return config_values(config)


def _spike_html(result: Any, path: str, caption: str) -> None:
    from lowprec.app.plots.delayed import spike_figure, spike_sources

    c = result.config
    _save(spike_figure(spike_sources(result), c.spike_step if c.stream == "spike" else None), path,
          f"Delayed scaling: {c.format}, history {c.history}, {c.algo}", _values(c), caption)


def _grouping_html(result: Any, path: str, caption: str) -> None:
    from lowprec.app.plots.grouping import study_figure

    _save(study_figure(result.study), path, f"Grouping study: {result.config.study}", _values(result.config), caption)


def _hadamard_html(result: Any, path: str, caption: str) -> None:
    from lowprec.app.plots.grouping import study_figure

    parameters = {"rows": result.shape[0], "cols": result.shape[1], "outlier": result.outlier, "seed": result.seed}
    _save(study_figure(result), path, "Random Hadamard transform: outliers and FP4 error", parameters, caption)


def _blocks_html(result: Any, path: str, caption: str) -> None:
    from lowprec.app.plots.blocks import blocks_figure, blocks_sources

    _save(blocks_figure(blocks_sources(result), result.config.recipe), path, f"Block formats: {result.config.recipe}",
          _values(result.config), caption)


def _attention_html(result: Any, path: str, caption: str) -> None:
    from lowprec.app.plots.attention import attention_layout

    _save(attention_layout(result), path, f"Attention rounding: {result.config['format']}, {result.config['rounding']}",
          result.config["parameters"], caption)


def _recompute_html(result: Any, path: str, caption: str) -> None:
    from lowprec.app.plots.recompute import recompute_figure
    from lowprec.config import fields_of
    from lowprec.simulations.recompute.config import RecomputeConfig

    parameters = {k.name: result.parameters[k.name] for k in fields_of(RecomputeConfig)}
    _save(recompute_figure(result), path, f"Recompute divergence: {parameters['variant']}", parameters, caption)


def _gemm_html(result: Any, path: str, caption: str) -> None:
    from lowprec.app.plots.gemm import gemm_layout

    _save(gemm_layout(result), path, f"Tensor-core accumulation: {result.instruction} on {result.config.arch}",
          _values(result.config), caption)


def _stateful_html(result: Any, path: str, caption: str) -> None:
    from lowprec.app.plots.stateful import stateful_figure

    _save(stateful_figure(result), path, f"Whose amax? {result.design.name}", _values(result.config), caption)


_ENTRIES = (
    SimulationFaces("spike", "lowprec.simulations.studies.spike:SIMULATION", _spike_html, captions.spike,
                    widget="DelayedSpike", export_control="algo"),
    SimulationFaces("grouping", "lowprec.simulations.studies.grouping:SIMULATION", _grouping_html, captions.grouping,
                    widget="ScaleGrouping", export_control="format"),
    SimulationFaces("blocks", "lowprec.simulations.blocks:SIMULATION", _blocks_html, captions.blocks,
                    widget="BlockFormats", export_control="recipe"),
    SimulationFaces("attention", "lowprec.simulations.studies.attention:SIMULATION", _attention_html, captions.attention,
                    widget="AttentionRounding", export_control="rounding"),
    SimulationFaces("recompute", "lowprec.simulations.recompute:SIMULATION", _recompute_html, captions.recompute,
                    widget="RecomputeDivergence", export_control="variant"),
    SimulationFaces("hadamard", "lowprec.simulations.studies.hadamard:SIMULATION", _hadamard_html, captions.hadamard,
                    widget=None, export_control=None,
                    widget_note="no widget of its own: pages show the same study in ScaleGrouping (study=hadamard)"),
    SimulationFaces("gemm", "lowprec.simulations.gemm.study:SIMULATION", _gemm_html, captions.gemm,
                    widget="Accumulator", export_control="distribution"),
    SimulationFaces("stateful", "lowprec.simulations.stateful:SIMULATION", _stateful_html, captions.stateful,
                    widget="WhoseAmax", export_control="variant"),
)

#: every simulation's faces, by simulation name (the order of `lowprec simulate --help`)
FACES: dict[str, SimulationFaces] = {e.name: e for e in _ENTRIES}


def faces(name: str) -> SimulationFaces:
    """The faces of simulation `name`; ValueError naming the known ones otherwise."""
    if not isinstance(name, str) or name not in FACES:
        raise ValueError(f"unknown simulation {name!r}; known simulations: {', '.join(FACES)}")
    return FACES[name]


def faces_of_widget(widget: str) -> SimulationFaces | None:
    """The entry whose widget is `widget` (a widget class name), or None (a widget that is no
    simulation's face: BinExplorer, Conventions, …)."""
    for entry in FACES.values():
        if entry.widget == widget:
            return entry
    return None


def export_controls() -> dict[str, str]:
    """Widget name → the knob an exported page keeps live, for every simulation with a widget."""
    return {e.widget: e.export_control for e in FACES.values() if e.widget is not None and e.export_control}


def widget_caption(widget: str, result: Any = None) -> str:
    """The caption (Markdown) a widget shows under its plots: its simulation's (this registry), or
    that of a widget which is no simulation's face (`captions.OTHER_WIDGETS`); '' for none."""
    entry = faces_of_widget(widget)
    if entry is not None:
        return entry.caption(result)
    other = captions.OTHER_WIDGETS.get(widget)
    return other(result) if other is not None else ""
