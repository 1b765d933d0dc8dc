"""One exported page: the route's page built with its notes, its live controls' states and its
bin explorers' tables (`_build_document`), an exported lesson's widgets deferred to slots
(`_defer_widgets`), and the standalone HTML file written (`export_page`)."""

from __future__ import annotations

import io
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lowprec.app import layout, pages
from lowprec.app.export.notes import _bin_note, _fixed_note, _insert_before, _note, _note_text
from lowprec.app.export.resources import _localise
from lowprec.app.export.states import _control_widget, _fit, _plan, _record_states, _state_key, compact_data
from lowprec.app.export.writer import SafeWriter


@dataclass
class ExportedPage:
    route: str
    path: Path
    states: dict[str, list[Any]] = field(default_factory=dict)  # "Widget.param" → values live offline
    seconds: float = 0.0
    size: int = 0  # bytes of the page file


def page_file(route: str) -> str:
    """File name of a route inside the export folder."""
    route = route.strip("/")
    return "index.html" if not route else f"{route}.html"


def _build_document(route: str, bins: Any) -> tuple[Any, dict[str, Any], str, dict[str, list[Any]], Any]:
    """(document, template variables, title, live values, offline config) of one exported page."""
    import panel as pn
    from bokeh.document import Document
    from panel.io.model import add_to_doc
    from pyviz_comms import Comm

    page = pages.build_page(route, suffix=".html", sync=False)
    for item in page.placed:  # a widget with parts that need the server says so instead (RecipeLab's upload)
        if item.widget is not None and hasattr(item.widget, "for_export"):
            item.widget.for_export()
    plans = _plan(page.placed)
    planned = {id(p.item.widget): p for p in plans}
    # notes above each widget, and which controls stay live
    objects = list(page.objects)
    for item in page.placed:
        if item.widget is None:
            continue
        if item.name == "BinExplorer":
            note = _bin_note()
        elif id(item.widget) in planned:
            p = planned[id(item.widget)]
            note = p.note = _note(p.pname, p.values, len(p.values))
        else:
            note = _fixed_note()
        objects = _insert_before(objects, item.widget, note)
    page.objects = objects
    root, variables = page.render()
    live: set[int] = set()
    for p in plans:
        view = next((o for o in root.select(lambda o: getattr(o, "_lowprec_widget", None) is p.item.widget)), None)
        p.control = _control_widget(view if view is not None else root, p.pname)
        if p.control is not None:
            live.add(id(p.control))
    bin_widgets = [item for item in page.placed if item.widget is not None and item.name == "BinExplorer"]
    bin_controls = {id(c) for item in bin_widgets for c in item.widget.offline_controls()}
    for w in root.select(pn.widgets.Widget):
        if id(w) not in live and id(w) not in bin_controls:
            w.disabled = True
    doc = Document()
    pages.use_extensions(page.extensions, doc)  # applies while `doc` is current (`export_page`)
    comm = Comm()
    with pn.config.set(embed=True):
        model = root.get_root(doc, comm)
    add_to_doc(model, doc, True)
    ref = model.ref["id"]
    model.tags = list(model.tags) + ["embedded"]  # Panel keeps model changes in the document (no push)
    states = _record_states(doc, ref, plans)
    _fit(states, plans)
    for entry in states.values():  # the note and the menu list the values the page carries
        plan = entry.pop("plan")
        kept = [v for v in plan.values if _state_key(v) in entry["states"]]
        if plan.note is not None:
            plan.note.object = _note_text(plan.pname, kept, len(plan.values))
        if len(kept) < len(plan.values) and hasattr(plan.control, "options"):
            plan.control.options = kept
        plan.values = kept
    doc.callbacks._held_events = []
    from bokeh.models import ColumnDataSource

    for cds in [m for m in doc.models if isinstance(m, ColumnDataSource)]:
        cds.data = compact_data(dict(cds.data))
    from bokeh.models import CustomJS

    for control_id in states:
        m = doc.get_model_by_id(control_id)  # type: ignore[arg-type]  # an ID is a str
        if m is not None:
            m.js_on_change("value", CustomJS(code="window.lowprecOffline && lowprecOffline.apply(cb_obj)"))
    offline_bins = [bins.register(item.widget, ref) for item in bin_widgets]
    report = {f"{p.item.prefix or p.item.name + '.'}{p.pname}": p.values for p in plans
              if p.control is not None}
    _ = planned
    for item in bin_widgets:
        report[f"{item.prefix or 'BinExplorer.'}value"] = ["any value"]
    config = {"states": states, "binexplorers": offline_bins}
    if route.strip("/").startswith("lesson/") or route.strip("/") == pages.ROUTE_GLOSSARY:
        variables["lp_lazy"] = str(_defer_widgets(doc, root, model, comm, page.placed))
    return doc, variables, page.title, report, config


def _defer_widgets(doc: Any, root: Any, model: Any, comm: Any, placed: list[pages.PlacedWidget]) -> int:
    """An exported lesson draws each widget as the reader reaches it, as a served one does: the
    widget's Bokeh models stay in the document (its offline states and the bin explorer's engine
    address them by id), held in the `tags` of an
    `exercises.LazySlot` that takes the widget's place among its parent's children; the page's
    script swaps the widget back in when the slot nears the view, or in the background, one at a
    time (app/static/exercises.js). Returns how many widgets wait in slots."""
    import panel as pn

    from lowprec.app.exercises import LazySlot, lazy_spec

    ref = model.ref["id"]
    count = 0
    for item in placed:
        if item.widget is None:
            continue
        view = next((o for o in root.select(lambda o: getattr(o, "_lowprec_widget", None) is item.widget)), None)
        parent = next((p for p in root.select(pn.layout.ListPanel) if any(o is view for o in p.objects)), None)
        if view is None or parent is None or ref not in view._models or ref not in parent._models:
            continue
        view_model, parent_model = view._models[ref][0], parent._models[ref][0]
        slot = LazySlot(lazy_spec(item.name, pages.WIDGETS[item.name].title, offline=True))
        slot_model = slot._get_model(doc, model, parent_model, comm)
        slot_model.tags = [view_model]
        parent_model.children = [slot_model if c is view_model else c for c in parent_model.children]
        count += 1
    return count


def export_page(route: str, writer: SafeWriter, bins: Any) -> ExportedPage:
    """Write one route's page under the writer's folder; returns what was written."""
    import panel as pn
    from bokeh.resources import CDN
    from panel.io.state import set_curdoc

    start = time.perf_counter()
    doc, variables, title, report, config = _build_document(route, bins)
    depth = route.strip("/").count("/")
    if config["states"] or config["binexplorers"]:
        data = json.dumps(config, separators=(",", ":"), allow_nan=False).replace("</", "<\\/")
        variables["lp_head"] = variables["lp_head"] + _markup(
            f'<script type="application/json" id="lp-offline">{data}</script>')
    if config["binexplorers"]:
        variables["lp_head"] = variables["lp_head"] + _markup(
            f'<script defer src="{"../" * depth}{layout.STATIC_ROUTE}/offline/binexplorer.js"></script>')
    buf = io.StringIO()
    # with `doc` current, Panel lists the scripts of exactly the extensions the page declared
    # (`pages.use_extensions`), not of every extension the exporting process has imported
    with set_curdoc(doc):
        pn.io.save.save(doc, buf, title=title, resources=CDN, template=layout.template(),
                        template_variables=variables)
    html = _localise(buf.getvalue(), depth, writer)
    rel = page_file(route)
    path = writer.write_text(rel, html)
    return ExportedPage(route.strip("/"), path, report, time.perf_counter() - start, len(html.encode("utf-8")))


def _markup(text: str) -> Any:
    from markupsafe import Markup

    return Markup(text)
