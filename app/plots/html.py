"""Standalone HTML files that open offline: Bokeh's JS and CSS are inlined, nothing is fetched."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from bokeh.embed import file_html
from bokeh.resources import INLINE

# Once Panel is imported in the process it registers extension bundles that Bokeh's resources then
# reference by relative URL (e.g. static/extensions/panel/.../es-module-shims.min.js). Plain Bokeh
# figures never need them, and next to a standalone file they would be dangling requests.
_EXTENSION_TAG = re.compile(
    r'<script[^>]*\bsrc="static/extensions/[^"]*"[^>]*>\s*</script>\s*'
    r'|<link[^>]*\bhref="static/extensions/[^"]*"[^>]*>\s*'
)


def standalone_html(obj: Any, title: str) -> str:
    """A Bokeh model (figure or layout) as one self-contained HTML document."""
    return _EXTENSION_TAG.sub("", file_html(obj, resources=INLINE, title=title))


def save_standalone(obj: Any, path: str | Path, title: str) -> Path:
    """Write `standalone_html(obj, title)` to `path`; returns the path."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(standalone_html(obj, title), encoding="utf-8")
    return out
