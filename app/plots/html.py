"""Standalone HTML files that open offline: Bokeh's JS and CSS are inlined, nothing is fetched."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bokeh.embed import file_html
from bokeh.resources import INLINE


def save_standalone(obj: Any, path: str | Path, title: str) -> Path:
    """Write a Bokeh model (figure or layout) as a self-contained HTML file; returns the path."""
    html = file_html(obj, resources=INLINE, title=title)
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(html, encoding="utf-8")
    return out
