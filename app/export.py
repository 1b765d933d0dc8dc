"""Static export: standalone HTML pages that open from disk with no server and no internet.

Each page (`app.pages` routes: `index.html`, `lesson/<slug>.html`, `widget/<Name>.html`) is saved
with Panel's `save(embed=True, resources=INLINE)`: Bokeh's and Panel's JS are inlined, and the
states of one discrete control per widget (`EXPORT_STATES`, e.g. BinExplorer's format) are
precomputed and embedded, so that control still works offline; every other control is disabled
and the page says so. Panel's save still points some stylesheets at its CDN
(`https://cdn.holoviz.org/panel/<version>/dist/...`); those files are copied from the installed
Panel into `DIR/_static/panel/` and the links rewritten to relative paths, so the pages make no
request to any host. Cost per page: the cross product of the embedded states (capped at
`MAX_STATES`, largest option lists trimmed first).
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import panel as pn
from bokeh.resources import INLINE

from lowprec.app import pages
from lowprec.app.lessons import load_lessons

#: per widget class: the control kept live offline and the values embedded (None = its options)
EXPORT_STATES: dict[str, tuple[str, tuple[Any, ...] | None]] = {
    "BinExplorer": ("format", ("E4M3FN", "E5M2", "E2M1", "E3M2", "E2M3", "E8M0", "BF16", "FP16", "INT8")),
    "Conventions": ("format", None),
    "DelayedSpike": ("algo", None),
    "AttentionRounding": ("rounding", None),
    "RecomputeDivergence": ("variant", None),
    "ScaleGrouping": ("format", None),
    "BlockFormats": ("recipe", None),
}
MAX_STATES = 400  # states embedded per page, all widgets together
STATIC_DIR = "_static/panel"
_CDN_RE = re.compile(r"https://cdn\.holoviz\.org/panel/[^/\"'\\]+/dist/([^\"'\\\s)?]+)(\?v=[^\"'\\\s)]*)?")
_CSS_URL_RE = re.compile(r"url\(\s*['\"]?([^'\")]+)['\"]?\s*\)")


@dataclass
class ExportedPage:
    route: str
    path: Path
    states: dict[str, list[Any]] = field(default_factory=dict)  # "Widget.param" → embedded values
    seconds: float = 0.0


def page_file(route: str) -> str:
    """File name of a route inside the export folder."""
    route = route.strip("/")
    return "index.html" if not route else f"{route}.html"


def available_routes() -> list[str]:
    """Every route of the app ('' is the landing page)."""
    return [r.strip("/") for r in pages.routes()]


def _build(route: str) -> tuple[pn.Column, list[tuple[pages.PlacedWidget, pn.viewable.Viewable]]]:
    """The page layout and, per placed widget, the Panel view of it that sits in the layout."""
    route = route.strip("/")
    if route == "":
        return pages.landing_page(suffix=".html"), []
    kind, _, name = route.partition("/")
    objects: list[Any]
    if kind == "widget" and name in pages.WIDGETS:
        widget, view = pages.build_widget(name)
        placed = [pages.PlacedWidget(name, widget, "")]
        intro = pn.pane.Markdown(f"# {pages.WIDGETS[name].title}", sizing_mode="stretch_width")
        objects, title = [intro, view], name
    elif kind == "lesson":
        lesson = next((x for x in load_lessons() if x.slug == name), None)
        if lesson is None:
            raise ValueError(f"unknown lesson {name!r}")
        objects, placed = pages.lesson_body(lesson)
        title = lesson.title
    else:
        raise ValueError(f"unknown page {route!r}; pages: {', '.join(repr(r) for r in available_routes())}")
    views: list[tuple[pages.PlacedWidget, pn.viewable.Viewable]] = []
    for item in placed:
        if item.widget is None:
            continue
        panel_view: Any = pn.panel(item.widget)
        _swap_view(objects, item.widget, panel_view)
        views.append((item, panel_view))
    return pages.page(title, objects, current=title, suffix=".html"), views


def _swap_view(objects: list[Any], widget: Any, panel_view: Any) -> None:
    """Put `panel_view` where `widget` sits in `objects`: directly, or inside the `LockRegion` that
    hides it until a prediction is answered."""
    from lowprec.app.exercises import LockRegion

    for k, obj in enumerate(objects):
        if obj is widget:
            objects[k] = panel_view
            return
        if isinstance(obj, LockRegion) and obj.view is widget:
            obj.view = panel_view
            obj.content.objects = [panel_view]
            return
    raise ValueError(f"widget {type(widget).__name__} is not on the page it was placed on")


def _control_widget(view: pn.viewable.Viewable, param_name: str) -> Any:
    """The Panel widget that pn.Param generated for `param_name` inside a widget's layout."""
    for p in view.select(pn.Param):
        widgets = getattr(p, "_widgets", {})
        if param_name in widgets:
            return widgets[param_name]
    return None


def _plan_states(placed: list[tuple[pages.PlacedWidget, Any, list[Any]]]) -> list[list[Any]]:
    lists = [list(values) for _, _, values in placed]
    total = 1
    for v in lists:
        total *= max(len(v), 1)
    while total > MAX_STATES:
        i = max(range(len(lists)), key=lambda k: len(lists[k]))
        if len(lists[i]) <= 2:
            break
        total = total // len(lists[i]) * (len(lists[i]) - 1)
        lists[i].pop()
    return lists


def _note(control: str, values: list[Any]) -> pn.pane.Alert:
    shown = ", ".join(str(v) for v in values)
    return pn.pane.Alert(
        f"Offline page: only **{control}** works here, over its precomputed states ({shown}); the "
        f"other controls are fixed at this page's settings. Run `lowprec serve` for every control.",
        alert_type="info", sizing_mode="stretch_width")


def export_page(route: str, out_dir: Path) -> ExportedPage:
    """Write one route's standalone HTML under `out_dir`; returns what was written."""
    import time

    start = time.perf_counter()
    layout, placed = _build(route)
    keep: list[tuple[pages.PlacedWidget, Any, list[Any]]] = []
    for item, view in placed:
        if item.name not in EXPORT_STATES:
            continue
        pname, values = EXPORT_STATES[item.name]
        if pname not in item.widget.param:
            continue
        current = getattr(item.widget, pname)
        options = list(values) if values is not None else list(item.widget.param[pname].objects or [])
        options = [current] + [v for v in options if v != current]
        control = _control_widget(view, pname)
        if control is not None:
            keep.append((item, control, options))
    plans = _plan_states(keep)
    live = {id(control) for _, control, _ in keep}
    for w in layout.select(pn.widgets.Widget):
        if id(w) not in live:
            w.disabled = True
    states: dict[Any, list[Any]] = {}
    report: dict[str, list[Any]] = {}
    for (kept_item, control, _), plan in zip(keep, plans):
        states[control] = plan
        report[f"{kept_item.prefix or kept_item.name + '.'}{EXPORT_STATES[kept_item.name][0]}"] = plan
    views = {id(view): item for item, view in placed}
    kept = {id(k_item.widget): plan for (k_item, _, _), plan in zip(keep, plans)}
    for obj in list(layout.objects):
        found = views.get(id(obj))
        if found is None:
            continue
        i = layout.objects.index(obj)
        if id(found.widget) in kept:
            note = _note(EXPORT_STATES[found.name][0], kept[id(found.widget)])
        else:
            note = pn.pane.Alert("Offline page: this widget's controls are fixed at this page's "
                                 "settings; run `lowprec serve` to change them.", alert_type="info")
        layout.insert(i, note)
    target = out_dir / page_file(route)
    target.parent.mkdir(parents=True, exist_ok=True)
    layout.save(str(target), embed=True, resources=INLINE, embed_states=states,
                max_states=MAX_STATES + 1, progress=False,
                title=pages.page_titles().get(route.strip("/") or "/", "lowprec"))
    _localise(target, out_dir)
    return ExportedPage(route, target, report, time.perf_counter() - start)


def _localise(html_path: Path, out_dir: Path) -> None:
    """Rewrite Panel CDN links to copies under out_dir/_static/panel (relative to the page)."""
    from panel.io.resources import DIST_DIR

    text = html_path.read_text(encoding="utf-8")
    depth = len(html_path.relative_to(out_dir).parts) - 1
    prefix = "../" * depth + STATIC_DIR + "/"
    needed: set[str] = set()

    def sub(match: re.Match[str]) -> str:
        needed.add(match.group(1))
        return prefix + match.group(1)

    text = _CDN_RE.sub(sub, text)
    html_path.write_text(text, encoding="utf-8")
    _copy_static(needed, Path(DIST_DIR), out_dir / STATIC_DIR)


def _copy_static(files: set[str], dist: Path, dest: Path) -> None:
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
        out = dest / rel
        out.parent.mkdir(parents=True, exist_ok=True)
        if not out.exists():
            shutil.copyfile(src, out)
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


def export(out_dir: str | Path, routes: Sequence[str] | None = None,
           progress: Callable[[int, int], None] | None = None) -> list[ExportedPage]:
    """Export `routes` (default: every page) into `out_dir`; returns the pages written.
    Unknown routes raise ValueError naming the known ones before anything is written."""
    out = Path(out_dir)
    known = available_routes()
    chosen = [r.strip("/") for r in routes] if routes else known
    bad = [r for r in chosen if r not in known]
    if bad:
        raise ValueError(f"unknown page {bad[0]!r}; pages: {', '.join(repr(r) for r in known)}")
    out.mkdir(parents=True, exist_ok=True)
    written: list[ExportedPage] = []
    for i, route in enumerate(chosen):
        written.append(export_page(route, out))
        if progress is not None:
            progress(i + 1, len(chosen))
    return written
