"""Compact states: for each widget that keeps one control live offline (`EXPORT_CONTROLS`), the
final value of every Bokeh property any of the control's values changes, recorded per value as a
Bokeh JSON patch (`_record_states`) and cut to the page's share of `STATE_BUDGET` (`_fit`);
numeric columns go as binary arrays (`compact_data`)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import numpy as np

from lowprec.app import pages, sim_faces


#: per widget class: the control kept live offline (BinExplorer has its own offline engine): each
#: simulation's widget as its entry in the registry of simulations says (`app.sim_faces`), and the
#: conventions table, which is no simulation's face
EXPORT_CONTROLS: dict[str, str] = {"Conventions": "format", **sim_faces.export_controls()}

STATE_BUDGET = 2_000_000  # bytes of compact states per page, all widgets together


def _compact_column(values: Any) -> Any:
    """A numeric list as a numpy array (sent as binary), anything else unchanged."""
    if isinstance(values, np.ndarray) or not isinstance(values, (list, tuple)) or len(values) < 16:
        return values
    if all(isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)) for v in values):
        arr = np.asarray(values, dtype=np.int64)
        if arr.size and np.abs(arr).max() < 2**31:
            return arr.astype(np.int32)
        return values
    if all(isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_))
           for v in values):
        return np.asarray(values, dtype=np.float64)
    return values


def compact_data(data: dict[str, Any]) -> dict[str, Any]:
    """Column dict with numeric columns as numpy arrays (binary in the page: about half the size)."""
    return {k: _compact_column(v) for k, v in data.items()}


def _control_widget(view: Any, param_name: str) -> Any:
    """The Panel widget that pn.Param generated for `param_name` inside a widget's layout."""
    import panel as pn

    for p in view.select(pn.Param):
        widgets = getattr(p, "_widgets", {})
        if param_name in widgets:
            return widgets[param_name]
    return None


def _options(widget: Any, pname: str) -> list[Any]:
    current = getattr(widget, pname)
    spec = widget.param[pname]
    objects = list(spec.objects) if getattr(spec, "objects", None) else []
    return [current] + [v for v in objects if v != current]


@dataclass
class _Plan:
    item: pages.PlacedWidget
    pname: str
    values: list[Any]  # the page's own value first
    control: Any = None  # the Panel widget
    note: Any = None  # the Alert above the widget


def _plan(placed: list[pages.PlacedWidget]) -> list[_Plan]:
    """The widgets of a page that keep a live control offline, with every value of it."""
    plans = []
    for item in placed:
        if item.widget is None or item.name not in EXPORT_CONTROLS:
            continue
        pname = EXPORT_CONTROLS[item.name]
        if pname in item.widget.param and len(_options(item.widget, pname)) > 1:
            plans.append(_Plan(item, pname, _options(item.widget, pname)))
    return plans


def _fit(states: dict[str, dict[str, Any]], plans: list[_Plan]) -> None:
    """Keep, per widget, the page's own value and as many more as fit its share of STATE_BUDGET
    (measured on the serialized states); the control then offers only the values kept."""
    if not states:
        return
    share = STATE_BUDGET / len(states)
    for entry in states.values():
        kept: dict[str, Any] = {}
        used = 0
        for key, patch in entry["states"].items():
            size = len(json.dumps(patch, separators=(",", ":")))
            if kept and used + size > share:
                break
            kept[key] = patch
            used += size
        entry["states"] = kept


def _record_states(doc: Any, root_ref: str, plans: list[_Plan]) -> dict[str, dict[str, Any]]:
    """For each planned widget: the Bokeh id of its control and, per value, the final value of
    every (model, property) that any of its values changes, as a Bokeh JSON patch."""
    from bokeh.core.serialization import Serializer
    from bokeh.document.events import ColumnDataChangedEvent, ModelChangedEvent

    out: dict[str, dict[str, Any]] = {}
    for plan in plans:
        control = plan.control
        if control is None:
            continue
        model = control._models.get(root_ref, (None,))[0]
        if model is None:
            continue
        widget, pname = plan.item.widget, plan.pname
        touched: dict[tuple[str, str], Any] = {}

        def collect() -> None:
            # the document holds its change events (Panel's export mode): read and clear them
            for event in doc.callbacks._held_events:
                if isinstance(event, (ModelChangedEvent, ColumnDataChangedEvent)):
                    touched[(event.model.id, event.attr)] = event.model
            doc.callbacks._held_events = []

        doc.callbacks._held_events = []
        snapshots: list[dict[tuple[str, str], Any]] = []
        for value in plan.values[1:] + plan.values[:1]:  # ends on the page's own value
            widget.param.update(**{pname: value})
            collect()
        for value in plan.values:
            widget.param.update(**{pname: value})
            collect()
            snapshots.append({key: getattr(m, key[1]) for key, m in touched.items()})
        widget.param.update(**{pname: plan.values[0]})
        doc.callbacks._held_events = []
        skip = {model.id}
        # columns that no value changes stay as the page has them: send only the others
        varying: dict[tuple[str, str], list[str] | None] = {}
        for key in touched:
            if key[1] != "data" or not isinstance(snapshots[0].get(key), dict):
                continue
            first = snapshots[0][key]
            lengths = {len(v) for snap in snapshots for v in snap[key].values()}
            if len(lengths) > 1 or any(set(snap[key]) != set(first) for snap in snapshots):
                varying[key] = None  # the rows change: send every column
                continue
            varying[key] = [c for c in first if any(not _same_column(snap[key][c], first[c]) for snap in snapshots)]
        states: dict[str, Any] = {}
        for value, snap in zip(plan.values, snapshots):
            serializer = Serializer(references=set(doc.models), deferred=False)
            events = []
            for (mid, attr), new in snap.items():
                if mid in skip:
                    continue
                cols = varying.get((mid, attr))
                if attr == "data" and isinstance(new, dict) and cols is not None:
                    if not cols:
                        continue
                    events.append({"kind": "ColumnDataChanged", "model": {"id": mid}, "attr": attr,
                                   "data": serializer.encode(compact_data({c: new[c] for c in cols})),
                                   "cols": cols})
                    continue
                if attr == "data" and isinstance(new, dict):
                    new = compact_data(new)
                events.append({"kind": "ModelChanged", "model": {"id": mid}, "attr": attr,
                               "new": serializer.encode(new)})
            states[_state_key(value)] = {"events": events}
        out[model.id] = {"widget": plan.item.prefix or plan.item.name, "param": pname, "states": states,
                         "plan": plan}
    return out


def _same_column(a: Any, b: Any) -> bool:
    if a is b:
        return True
    try:
        x, y = np.asarray(a), np.asarray(b)
        if x.shape != y.shape:
            return False
        if x.dtype.kind == "f" and y.dtype.kind == "f":
            return bool(np.array_equal(x, y, equal_nan=True))
        return bool(np.array_equal(x, y))
    except (TypeError, ValueError):
        return bool(a == b)


def _state_key(value: Any) -> str:
    return json.dumps(value) if not isinstance(value, str) else value
