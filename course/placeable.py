"""What a lesson may place with `::: widget NAME key=value`: each widget's name and the config record
(`lowprec.config`, "module:Record") whose knobs are the parameters a directive may set.

This is the course's half of the widget registry: the lesson parser (`lowprec.course.lessons`)
checks a directive against it without importing the app. The app's half,
`lowprec.app.widgets.WIDGETS`, says how each of these widgets is drawn (its class, title and page
scripts), is keyed by the same names and refuses to import unless it draws exactly these; its
`WidgetEntry.config` reads the record from here. Adding a widget is one line here and one there.
Nothing here imports a record until it is asked for (`widget_record`), so listing the names costs
nothing.
"""

from __future__ import annotations

import importlib

__all__ = ["WIDGET_RECORDS", "widget_record"]

#: widget name (as a directive writes it) → its config record, "module:Record"
WIDGET_RECORDS: dict[str, str] = {
    "BinExplorer": "lowprec.simulations.format_records:ExplainConfig",
    "BinChallenge": "lowprec.course.challenge:ChallengeConfig",
    "Conventions": "lowprec.simulations.format_records:ConventionsConfig",
    "DelayedSpike": "lowprec.simulations.studies.spike:SpikeConfig",
    "AttentionRounding": "lowprec.simulations.studies.attention:AttentionConfig",
    "RecomputeDivergence": "lowprec.simulations.recompute.config:RecomputeConfig",
    "ScaleGrouping": "lowprec.simulations.studies.grouping:GroupingConfig",
    "BlockFormats": "lowprec.simulations.blocks:BlocksConfig",
    "RecipeLab": "lowprec.simulations.lab.workbench:LabConfig",
    "Accumulator": "lowprec.simulations.gemm.study:GemmConfig",
    "WhoseAmax": "lowprec.simulations.stateful.config:StatefulConfig",
}


def widget_record(name: str) -> type:
    """The config record of widget `name` (imported on first use); ValueError for an unknown name."""
    if not isinstance(name, str) or name not in WIDGET_RECORDS:
        raise ValueError(f"unknown widget {name!r}; known widgets: {', '.join(WIDGET_RECORDS)}")
    module_name, _, attr = WIDGET_RECORDS[name].partition(":")
    record: type = getattr(importlib.import_module(module_name), attr)
    return record
