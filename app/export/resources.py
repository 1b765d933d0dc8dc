"""Offline resources: Bokeh's and Panel's CDN links in a page pointed at copies under `_static/`
(relative to the page), those files and the CSS files they reference copied once per site, and the
site's own static files."""

from __future__ import annotations

import re
from pathlib import Path

from lowprec.app import layout
from lowprec.app.export.writer import SafeWriter


STATIC_BOKEH = "_static/bokeh"

STATIC_PANEL = "_static/panel"

_CDN_PANEL_RE = re.compile(r"https://cdn\.holoviz\.org/panel/[^/\"'\\]+/dist/([^\"'\\\s)?]+)(\?v=[^\"'\\\s)]*)?")

_CDN_BOKEH_RE = re.compile(r"https://cdn\.bokeh\.org/bokeh/(?:release|dev)/(bokeh(?:-[a-z]+)?)-([0-9][^\"'\\\s)]*?)\.min\.js")

_CSS_URL_RE = re.compile(r"url\(\s*['\"]?([^'\")]+)['\"]?\s*\)")


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
