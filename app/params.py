"""Widget controls generated from config records (`lowprec.config`): the app's face of "declare once".

`@config_widget(Record)` adds one `param` parameter per knob of `Record` to a widget class — same
name, default, bounds or choices and doc — so the widget's controls, its URL state and the lesson
directives that place it all use the record's names. `widget.config()` builds the record from the
widget's current values (raising the record's own `ConfigError`, a ValueError, for a bad
combination), which is what the widget passes to its simulation. `control_widgets(Record)` maps the
knobs whose hint is `widget="input"` to typed-entry widgets (wide ranges where a slider is useless).
"""

from __future__ import annotations

from typing import Any, Callable, TypeVar

import panel as pn
import param

from lowprec.config import Knob, fields_of, from_mapping

__all__ = ["config_widget", "control_widgets", "knob_parameter", "widget_config"]

W = TypeVar("W", bound=type)


def knob_parameter(k: Knob) -> param.Parameter:
    """The `param` parameter for one knob."""
    label = k.label or k.name.replace("_", " ")
    common: dict[str, Any] = {"default": k.default, "doc": k.help, "label": label}
    if k.choices is not None:
        if k.choice_labels is not None:
            return param.Selector(objects=dict(zip(k.choice_labels, k.choices)), **common)
        return param.Selector(objects=list(k.choices), **common)
    if k.type is bool:
        return param.Boolean(**common)
    if k.type is int:
        return param.Integer(bounds=k.bounds, **common)  # type: ignore[arg-type]
    if k.type is float:
        return param.Number(bounds=k.bounds, **common)
    return param.String(**common)


def config_widget(record: type) -> Callable[[W], W]:
    """Class decorator: one parameter per knob of `record`, and `config()` returning the record."""

    def decorate(cls: W) -> W:
        for k in fields_of(record):
            cls.param.add_parameter(k.name, knob_parameter(k))  # type: ignore[attr-defined]
        setattr(cls, "config_class", record)
        return cls

    return decorate


def widget_config(widget: Any) -> Any:
    """The widget's current values as its config record (validated by the record)."""
    record = getattr(type(widget), "config_class")
    return from_mapping(record, {k.name: getattr(widget, k.name) for k in fields_of(record)})


def control_widgets(record: type) -> dict[str, Any]:
    """Panel widget types for knobs whose hint asks for typed entry instead of a slider."""
    out: dict[str, Any] = {}
    for k in fields_of(record):
        if k.widget == "input":
            out[k.name] = pn.widgets.IntInput if k.type is int else pn.widgets.FloatInput
    return out
