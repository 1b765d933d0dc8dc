"""The app's widgets: one registry, one `pn.viewable.Viewer` per module, imported lazily by name.

`WIDGETS` maps a widget's class name (as lesson directives write it) to its `WidgetEntry`: where
the class lives, its title, and the config record (`lowprec.config`) whose knobs are the widget's
parameters — which is also what a lesson directive may set (`lowprec.app.lessons.WIDGET_PARAMS` is
derived from it). `get_widget_class(name)` imports the class on first use, and
`from lowprec.app.widgets import BinExplorer` works through the module `__getattr__`, so importing
this package imports neither Panel nor Bokeh.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class WidgetEntry:
    """One widget: its class ("module:Class"), the title pages show, its parameters' record
    ("module:Record", a `lowprec.config` record), and the Panel extensions whose scripts its view
    needs beyond what every page loads (`page_scripts`: Panel loads an extension's scripts only for
    the components a page holds when it is sent, so a served page whose lazily built widget needs
    one — RecipeLab's FileDropper brings filepond — asks for it by name: `app.pages.Page.serve`)."""

    name: str
    target: str
    title: str
    config: str
    page_scripts: tuple[str, ...] = ()

    def load(self) -> type:
        return _load(self.target)

    def config_class(self) -> type:
        return _load(self.config)


def _load(target: str) -> type:
    module_name, _, attr = target.partition(":")
    obj: type = getattr(importlib.import_module(module_name), attr)
    return obj


_ENTRIES = (
    WidgetEntry("BinExplorer", "lowprec.app.widgets.bin_explorer:BinExplorer",
                "Bin explorer: bits, code, error and rounding bin of any value",
                config="lowprec.formats.explain:ExplainConfig"),
    WidgetEntry("BinChallenge", "lowprec.app.widgets.bin_challenge:BinChallenge",
                "Bin challenge: build the code of a value bit by bit, checked by the model",
                config="lowprec.formats.challenge:ChallengeConfig"),
    WidgetEntry("Conventions", "lowprec.app.widgets.conventions:Conventions",
                "Backend conventions at the edges (overflow, Inf, NaN, E8M0)",
                config="lowprec.formats.conventions:ConventionsConfig"),
    WidgetEntry("DelayedSpike", "lowprec.app.widgets.delayed_spike:DelayedSpike",
                "Delayed scaling against an amax spike", config="lowprec.simulations.studies.spike:SpikeConfig"),
    WidgetEntry("AttentionRounding", "lowprec.app.widgets.attention_rounding:AttentionRounding",
                "Rounding attention probabilities", config="lowprec.simulations.studies.attention:AttentionConfig"),
    WidgetEntry("RecomputeDivergence", "lowprec.app.widgets.recompute_divergence:RecomputeDivergence",
                "A stateful quantizer under activation recompute",
                config="lowprec.simulations.recompute.config:RecomputeConfig"),
    WidgetEntry("ScaleGrouping", "lowprec.app.widgets.scale_grouping:ScaleGrouping",
                "Scale granularity and an outlier", config="lowprec.simulations.studies.grouping:GroupingConfig"),
    WidgetEntry("BlockFormats", "lowprec.app.widgets.block_formats:BlockFormats",
                "Block formats: MX, NVFP4, FP8 tiles, MXINT8", config="lowprec.simulations.blocks:BlocksConfig"),
    WidgetEntry("RecipeLab", "lowprec.app.widgets.recipe_lab:RecipeLab",
                "Recipe lab: your own tensors through every recipe",
                config="lowprec.simulations.lab.workbench:LabConfig", page_scripts=("filedropper",)),
    WidgetEntry("Accumulator", "lowprec.app.widgets.accumulator:Accumulator",
                "Accumulator: what the tensor core keeps of a long sum",
                config="lowprec.simulations.gemm.study:GemmConfig"),
    WidgetEntry("WhoseAmax", "lowprec.app.widgets.whose_amax:WhoseAmax",
                "Whose amax? Delayed-scaling state under accumulation, idle modules, ranks, cached weights",
                config="lowprec.simulations.stateful.config:StatefulConfig"),
)

WIDGETS: dict[str, WidgetEntry] = {e.name: e for e in _ENTRIES}

__all__ = [  # the widget names are the keys of WIDGETS, resolved by __getattr__
    "WIDGETS",
    "WidgetEntry",
    "AttentionRounding",
    "BinChallenge",
    "BinExplorer",
    "BlockFormats",
    "Conventions",
    "DelayedSpike",
    "RecipeLab",
    "RecomputeDivergence",
    "ScaleGrouping",
    "Accumulator",
    "WhoseAmax",
    "get_widget_class",
]


def get_widget_class(name: str) -> type:
    """The widget class called `name` (a key of WIDGETS). Raises ValueError for an unknown name."""
    if not isinstance(name, str) or name not in WIDGETS:
        raise ValueError(f"unknown widget {name!r}; known widgets: {', '.join(WIDGETS)}")
    return WIDGETS[name].load()


def __getattr__(name: str) -> Any:
    if name in WIDGETS:
        return get_widget_class(name)
    raise AttributeError(f"module 'lowprec.app.widgets' has no attribute {name!r}")
