"""The notes an offline page shows above each widget: which control works there and over which
values, the bin explorer's offline engine, or that the controls are fixed (`_insert_before` places
a note above its widget, inside a locked region when the widget is in one)."""

from __future__ import annotations

from typing import Any

from lowprec.app.exercises import LockRegion


def _note_text(control: str, values: list[Any], total: int) -> str:
    shown = ", ".join(str(v) for v in values)
    more = "" if len(values) == total else f" ({len(values)} of its {total} values fit in this page)"
    return (f"Offline page: only **{control}** works here, over its precomputed values: {shown}{more}. The "
            f"other controls are fixed at this page's settings; run `lowprec serve` for every control.")


def _note(control: str, values: list[Any], total: int) -> Any:
    import panel as pn

    return pn.pane.Alert(_note_text(control, values, total), alert_type="info", sizing_mode="stretch_width")


def _bin_note() -> Any:
    import panel as pn

    return pn.pane.Alert(
        "Offline page: type any value and pick any format up to 8 bits and any convention — the page "
        "looks the value up in rounding bins computed in Python. Rounding, overflow, the compare format "
        "and the decode scale are fixed at this page's settings, and 16-bit formats need "
        "`lowprec serve`.", alert_type="info", sizing_mode="stretch_width")


def _fixed_note() -> Any:
    import panel as pn

    return pn.pane.Alert("Offline page: this widget's controls are fixed at this page's settings; run "
                         "`lowprec serve` to change them.", alert_type="info", sizing_mode="stretch_width")


def _shows(obj: Any, widget: Any) -> bool:
    """`obj` is `widget` or a view of it (the start page's compact explorer)."""
    return obj is widget or getattr(obj, "_lowprec_widget", None) is widget


def _insert_before(objects: list[Any], widget: Any, note: Any) -> list[Any]:
    """`objects` with `note` placed just above `widget`'s view; a widget hidden in an
    `exercises.LockRegion` gets the note inside the region's content (shown with it)."""
    for k, obj in enumerate(objects):
        if _shows(obj, widget):
            return objects[:k] + [note] + objects[k:]
        if isinstance(obj, LockRegion) and any(_shows(o, widget) for o in obj.content.objects):
            obj.content.objects = _insert_before(list(obj.content.objects), widget, note)
            return objects
    return objects
