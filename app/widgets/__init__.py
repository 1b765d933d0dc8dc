"""The app's widgets: one `pn.viewable.Viewer` per module, imported lazily by name.

`WIDGETS` maps a widget's class name (as lesson directives write it) to "module:Class";
`get_widget_class(name)` imports it on first use, and `from app.widgets import BinExplorer` works
through the module `__getattr__`, so importing this package stays cheap and a widget whose module
is missing fails only when it is asked for.
"""

from __future__ import annotations

import importlib
from typing import Any

WIDGETS: dict[str, str] = {
    "BinExplorer": "lowprec.app.widgets.bin_explorer:BinExplorer",
    "Conventions": "lowprec.app.widgets.conventions:Conventions",
    "DelayedSpike": "lowprec.app.widgets.delayed_spike:DelayedSpike",
    "AttentionRounding": "lowprec.app.widgets.attention_rounding:AttentionRounding",
    "RecomputeDivergence": "lowprec.app.widgets.recompute_divergence:RecomputeDivergence",
    "ScaleGrouping": "lowprec.app.widgets.scale_grouping:ScaleGrouping",
    "BlockFormats": "lowprec.app.widgets.block_formats:BlockFormats",
}

__all__ = [  # the widget names are the keys of WIDGETS, resolved by __getattr__
    "WIDGETS",
    "AttentionRounding",
    "BinExplorer",
    "BlockFormats",
    "Conventions",
    "DelayedSpike",
    "RecomputeDivergence",
    "ScaleGrouping",
    "get_widget_class",
]


def get_widget_class(name: str) -> type:
    """The widget class called `name` (a key of WIDGETS). Raises ValueError for an unknown name
    and ImportError when its module is not available."""
    if not isinstance(name, str) or name not in WIDGETS:
        raise ValueError(f"unknown widget {name!r}; known widgets: {', '.join(WIDGETS)}")
    module_name, _, class_name = WIDGETS[name].partition(":")
    module = importlib.import_module(module_name)
    cls: type = getattr(module, class_name)
    return cls


def __getattr__(name: str) -> Any:
    if name in WIDGETS:
        return get_widget_class(name)
    raise AttributeError(f"module 'lowprec.app.widgets' has no attribute {name!r}")
