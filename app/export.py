"""Static export: a site of standalone HTML pages that open from disk with no server and no internet.

Every route of `app.pages` becomes a file (`index.html`, `glossary.html`, `lesson/<slug>.html`,
`widget/<Name>.html`) in the same frame as the served site (`app.layout`). What a page needs is
written once per site and referenced relatively: Bokeh's and Panel's JS/CSS are copied from the
installed packages into `_static/bokeh/` and `_static/panel/` (the pages name the CDN, and the links
are rewritten), the site's own CSS/JS into `_static/lowprec/`, and the bin explorer's lookup tables
into `_static/lowprec/bins/` (`app.bins_offline`).

Offline controls:

- The **bin explorer** works for every value in every format up to 8 bits, under every convention:
  the page looks the typed value up in the rounding bins `formats.partition` computed in Python (no
  rounding in the browser; `static/binexplorer.js` draws what it finds).
- Every other widget keeps one control live (`EXPORT_CONTROLS`). For each of its values the page
  carries a **compact state**: the final value of every Bokeh property that any of the values
  changes (numeric columns as binary arrays), applied in the browser with
  `Document.apply_json_patch`. States are per widget (never a cross product of widgets) and fit a
  per-page budget (`STATE_BUDGET`): the values that do not fit are left out and the note above
  the widget lists the ones that work.

Limits checked by the tests: a page file ≤ `PAGE_LIMIT`, the whole site ≤ `SITE_LIMIT`.

Safe writing (`check_target`, `SafeWriter`): a non-empty target is refused unless `force`; no file is
written through a symbolic link or outside the target; a target that is a file, or that cannot be
created or written, is a one-line `ExportError` (a ValueError) before any page is built.
"""

from __future__ import annotations

import io
import json
import math
import os
import posixpath
import re
import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

import numpy as np

from lowprec.app import layout, pages, sim_faces
from lowprec.app.exercises import LockRegion

#: per widget class: the control kept live offline (BinExplorer has its own offline engine): each
#: simulation's widget as its entry in the registry of simulations says (`app.sim_faces`), and the
#: conventions table, which is no simulation's face
EXPORT_CONTROLS: dict[str, str] = {"Conventions": "format", **sim_faces.export_controls()}
PAGE_LIMIT = 3_000_000  # bytes: no page file larger
SITE_LIMIT = 30_000_000  # bytes: the whole exported site
STATE_BUDGET = 2_000_000  # bytes of compact states per page, all widgets together
STATIC_BOKEH = "_static/bokeh"
STATIC_PANEL = "_static/panel"
_CDN_PANEL_RE = re.compile(r"https://cdn\.holoviz\.org/panel/[^/\"'\\]+/dist/([^\"'\\\s)?]+)(\?v=[^\"'\\\s)]*)?")
_CDN_BOKEH_RE = re.compile(r"https://cdn\.bokeh\.org/bokeh/(?:release|dev)/(bokeh(?:-[a-z]+)?)-([0-9][^\"'\\\s)]*?)\.min\.js")
_CSS_URL_RE = re.compile(r"url\(\s*['\"]?([^'\")]+)['\"]?\s*\)")


class ExportError(ValueError):
    """The export target cannot be used (not empty, a file, a symbolic link, not writable)."""


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


def available_routes() -> list[str]:
    """Every route of the site ('' is the start page)."""
    return pages.route_names()


# ------------------------------------------------------------------------------------------------
# safe writing
# ------------------------------------------------------------------------------------------------


def check_target(out_dir: str | Path, force: bool = False) -> Path:
    """The export folder, checked before any work: it may not be a file or a symbolic link, it must
    be creatable and writable, and it must be empty unless `force`. Raises ExportError (one line)."""
    out = Path(out_dir)
    if out.is_symlink():
        raise ExportError(f"{out} is a symbolic link; export into a real folder (no file is written "
                          f"through a link)")
    if out.exists() and not out.is_dir():
        raise ExportError(f"{out} is a file, not a folder; give a folder to export into")
    if out.is_dir():
        entries = list(out.iterdir())
        if entries and not force:
            raise ExportError(f"{out} is not empty ({len(entries)} entries); use --force to overwrite the "
                              f"files lowprec writes there")
    else:
        try:
            out.mkdir(parents=True)
        except OSError as exc:
            raise ExportError(f"cannot create {out}: {exc.strerror or exc}") from None
    probe = out / ".lowprec-write-test"
    try:
        fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o644)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise ExportError(f"cannot write into {out}: {exc.strerror or exc}") from None
    return out


class SafeWriter:
    """Writes files under one folder only: every path component below the root must be a real
    folder (never a symbolic link), the resolved target must lie inside the root, and the file is
    opened without following a link (O_NOFOLLOW)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.real_root = root.resolve()
        self.written: dict[str, int] = {}  # relative path → bytes

    def _target(self, rel: str) -> Path:
        parts = Path(rel).parts
        if not parts or Path(rel).is_absolute() or ".." in parts:
            raise ExportError(f"refusing to write {rel!r}: not a plain path inside {self.root}")
        current = self.root
        for part in parts[:-1]:
            current = current / part
            if current.is_symlink():
                raise ExportError(f"{current} is a symbolic link; refusing to write through it")
            if current.exists() and not current.is_dir():
                raise ExportError(f"{current} is a file where lowprec writes a folder")
            if not current.exists():
                try:
                    current.mkdir()
                except OSError as exc:
                    raise ExportError(f"cannot create {current}: {exc.strerror or exc}") from None
        target = current / parts[-1]
        if target.is_symlink():
            raise ExportError(f"{target} is a symbolic link; refusing to write through it")
        if target.exists() and target.is_dir():
            raise ExportError(f"{target} is a folder where lowprec writes a file")
        if not str(target.parent.resolve()).startswith(str(self.real_root)):
            raise ExportError(f"refusing to write {target}: outside {self.root}")
        return target

    def write_bytes(self, rel: str, data: bytes) -> Path:
        target = self._target(rel)
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0)
        try:
            fd = os.open(target, flags, 0o644)
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
        except OSError as exc:
            raise ExportError(f"cannot write {target}: {exc.strerror or exc}") from None
        self.written[rel] = len(data)
        return target

    def write_text(self, rel: str, text: str) -> Path:
        return self.write_bytes(rel, text.encode("utf-8"))

    def copy(self, src: Path, rel: str) -> None:
        if rel not in self.written:
            self.write_bytes(rel, src.read_bytes())


# ------------------------------------------------------------------------------------------------
# compact states
# ------------------------------------------------------------------------------------------------


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


# ------------------------------------------------------------------------------------------------
# one page
# ------------------------------------------------------------------------------------------------


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


def _localise(html: str, depth: int, writer: SafeWriter) -> str:
    """Point Bokeh's and Panel's CDN links at copies under `_static/` (relative to the page) and copy
    those files once per site."""
    from bokeh.util.paths import bokehjs_path
    from panel.io.resources import DIST_DIR

    up = "../" * depth
    panel_files: set[str] = set()

    def panel_sub(match: re.Match[str]) -> str:
        panel_files.add(match.group(1))
        return f"{up}{STATIC_PANEL}/{match.group(1)}"

    def bokeh_sub(match: re.Match[str]) -> str:
        name, version = match.group(1), match.group(2)
        src = Path(bokehjs_path()) / "js" / f"{name}.min.js"
        rel = f"{STATIC_BOKEH}/{name}-{version}.min.js"
        writer.copy(src, rel)
        return f"{up}{rel}"

    html = _CDN_BOKEH_RE.sub(bokeh_sub, html)
    html = _CDN_PANEL_RE.sub(panel_sub, html)
    _copy_panel_static(panel_files, Path(DIST_DIR), writer)
    return html


def _copy_panel_static(files: set[str], dist: Path, writer: SafeWriter) -> None:
    todo = list(files)
    seen: set[str] = set()
    while todo:
        rel = todo.pop()
        if rel in seen:
            continue
        seen.add(rel)
        src = dist / rel
        if not src.is_file():
            continue
        writer.copy(src, f"{STATIC_PANEL}/{rel}")
        if src.suffix == ".css":  # follow url(...) references to other local files
            for ref in _CSS_URL_RE.findall(src.read_text(encoding="utf-8", errors="replace")):
                if ref.startswith(("data:", "http:", "https:", "#")):
                    continue
                target = (Path(rel).parent / ref.split("?")[0]).as_posix()
                parts: list[str] = []
                for part in target.split("/"):
                    if part == "..":
                        if parts:
                            parts.pop()
                    elif part and part != ".":
                        parts.append(part)
                todo.append("/".join(parts))


def _copy_site_static(writer: SafeWriter) -> None:
    for name in layout.static_files():
        writer.copy(layout.STATIC_DIR / name, f"{layout.STATIC_ROUTE}/{name}")
    offline = layout.STATIC_DIR / "offline"
    if offline.is_dir():
        for src in sorted(offline.iterdir()):
            if src.is_file():
                writer.copy(src, f"{layout.STATIC_ROUTE}/offline/{src.name}")


# ------------------------------------------------------------------------------------------------
# the site
# ------------------------------------------------------------------------------------------------


def export(out_dir: str | Path, routes: Sequence[str] | None = None,
           progress: Callable[[int, int], None] | None = None, force: bool = False) -> list[ExportedPage]:
    """Export `routes` (default: every page) into `out_dir`; returns the pages written.
    Unknown routes raise ValueError naming the known ones, and an unusable target ExportError
    (`check_target`), before anything is written."""
    from lowprec.app.bins_offline import BinTables

    known = available_routes()
    chosen = [r.strip("/") for r in routes] if routes else known
    bad = [r for r in chosen if r not in known]
    if bad:
        raise ValueError(f"unknown page {bad[0]!r}; pages: {', '.join(repr(r) for r in known)}")
    writer = SafeWriter(check_target(out_dir, force))
    _copy_site_static(writer)
    bins = BinTables(writer)
    written: list[ExportedPage] = []
    for i, route in enumerate(chosen):
        written.append(export_page(route, writer, bins))
        if progress is not None:
            progress(i + 1, len(chosen))
    bins.write_all()
    if routes:  # some pages only: their links to pages the site does not hold would lead nowhere
        for page in written:
            rel = page_file(page.route)
            text = page.path.read_text(encoding="utf-8")
            kept = unlink_missing_pages(text, rel, writer.root)
            if kept != text:
                writer.write_text(rel, kept)
    return written


#: a link's target in an exported page: in the page itself (`href="…"`) or inside its embedded
#: document, where a Markdown pane's HTML is escaped once or twice (`href=&quot;…&quot;`,
#: `href=&amp;quot;…&amp;quot;`, `href=\"…\"`)
_LINK_RE = re.compile(r'href=(?P<q>"|\\"|&quot;|&amp;quot;)(?P<url>[^"\\&<>\s]*?)(?P=q)')


def unlink_missing_pages(html: str, page_rel: str, root: Path) -> str:
    """`html` (the page at `page_rel` in the site at `root`) with each link to another page of the
    site that is not there turned into plain text (its `href` renamed `data-unexported`, so it is no
    link): `lowprec export DIR --pages X` writes links only to pages that exist. Links within the
    page, to assets and to other sites are kept."""
    folder = PurePosixPath(page_rel).parent

    def repl(match: re.Match[str]) -> str:
        url = match.group("url")
        target = url.split("#", 1)[0]
        if not target.endswith(".html") or ":" in target or target.startswith("/"):
            return match.group(0)
        resolved = posixpath.normpath((folder / target).as_posix())
        if resolved.startswith("..") or (root / resolved).is_file():
            return match.group(0)
        q = match.group("q")
        return f"data-unexported={q}{url}{q}"

    return _LINK_RE.sub(repl, html)


def site_size(out_dir: str | Path) -> tuple[int, int, str]:
    """(total bytes, largest page bytes, largest page name) of an exported site."""
    root = Path(out_dir)
    total, largest, name = 0, 0, ""
    for path in root.rglob("*"):
        if path.is_file() and not path.is_symlink():
            size = path.stat().st_size
            total += size
            if path.suffix == ".html" and size > largest:
                largest, name = size, path.relative_to(root).as_posix()
    return total, largest, name


__all__ = ["EXPORT_CONTROLS", "ExportError", "ExportedPage", "PAGE_LIMIT", "SITE_LIMIT", "STATE_BUDGET",
           "SafeWriter", "available_routes", "check_target", "compact_data", "export", "export_page",
           "page_file", "site_size", "unlink_missing_pages"]

_ = math  # used by the estimate helpers' callers
