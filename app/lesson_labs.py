"""The labs a lesson can place (`::: lab NAME key=value`): one registry, pure Python.

A lab is a lesson component, not a widget: a simulation computes all of its data when the page is
built (`LabEntry.builder`, a "module:function" in `lowprec.simulations` returning strict-JSON-ready
data), and the browser only draws it and lets the learner move through it (`app/static/exercises.js`,
roles named by `LabEntry.role`). So a lab works the same on a served page and on an exported one,
with every control live, and needs no server round trip. `app.exercises.lab_view` builds the
component; `app.lessons.parse_lab` checks a directive against `params` (the defaults' types are the
parameters' types).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any, Callable, Union

__all__ = ["LABS", "LabEntry", "lab_data"]

ParamValue = Union[str, int, float, bool]


@dataclass(frozen=True)
class LabEntry:
    """One lab: its name in directives, the component role that draws it, its title, the function
    that computes its data and the parameters a directive may set (with their defaults)."""

    name: str
    role: str  # the renderer of app/static/exercises.js
    title: str
    builder: str  # "module:function"; called with the directive's parameters
    params: dict[str, ParamValue] = field(default_factory=dict)

    def build(self, **params: Any) -> dict[str, Any]:
        module_name, _, attr = self.builder.partition(":")
        fn: Callable[..., dict[str, Any]] = getattr(importlib.import_module(module_name), attr)
        return fn(**{**self.params, **params})


_ENTRIES = (
    LabEntry("te-placement", "placement", "Where te.autocast and te.checkpoint sit",
             "lowprec.simulations.studies.te_placement:placement_lab", {"steps": 3, "start": "outer"}),
    LabEntry("defect-hunt", "hunt", "Find the defect", "lowprec.simulations.studies.defect_hunt:hunt_lab", {}),
)

LABS: dict[str, LabEntry] = {e.name: e for e in _ENTRIES}


def lab_data(name: str, params: dict[str, ParamValue] | None = None) -> dict[str, Any]:
    """The data of lab `name` with `params` (ValueError for an unknown lab)."""
    if name not in LABS:
        raise ValueError(f"unknown lab {name!r}; known: {', '.join(LABS)}")
    return LABS[name].build(**(params or {}))
