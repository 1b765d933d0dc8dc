"""Standalone HTML files that open offline: Bokeh's JS and CSS are inlined, nothing is fetched.

`standalone_html(obj, title, parameters, caption)` is what every `lowprec simulate … --html` writes:
a heading with the title, the run's parameters as a table, the figures in the site's look
(`app.theme.style_bokeh`: sized to the window, legends outside the data, readable log ticks) and the
caption the matching widget shows under the same figures (`app.plots.captions`). User-facing text
is escaped; the caption's `**bold**` and `` `code` `` are the only Markdown it renders.
"""

from __future__ import annotations

import html
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from bokeh.embed import file_html
from bokeh.resources import INLINE

from lowprec import numtext

# Once Panel is imported in the process it registers extension bundles that Bokeh's resources then
# reference by relative URL (e.g. static/extensions/panel/.../es-module-shims.min.js). Plain Bokeh
# figures never need them, and next to a standalone file they would be dangling requests.
_EXTENSION_TAG = re.compile(
    r'<script[^>]*\bsrc="static/extensions/[^"]*"[^>]*>\s*</script>\s*'
    r'|<link[^>]*\bhref="static/extensions/[^"]*"[^>]*>\s*'
)
_BOLD = re.compile(r"\*\*(.+?)\*\*")
_CODE = re.compile(r"`([^`]+)`")


def caption_html(text: str) -> str:
    """A caption's Markdown subset (bold, code) as HTML, everything else escaped."""
    out = html.escape(text, quote=False)
    out = _BOLD.sub(r"<strong>\1</strong>", out)
    return _CODE.sub(r"<code>\1</code>", out)


def _value_text(value: Any) -> str:
    if isinstance(value, float):
        return numtext.roundtrip(value)
    if isinstance(value, (list, tuple)):
        return ", ".join(_value_text(v) for v in value)
    return str(value)


def header_html(title: str, parameters: Mapping[str, Any] | None = None, caption: str = "") -> str:
    """The heading, the parameter table and the caption above the figures."""
    parts = [f'<h1 style="font-size:1.4em;margin:0 0 6px">{html.escape(title)}</h1>']
    if parameters:
        rows = "".join(f"<tr><th style='text-align:left;padding:1px 10px 1px 0'>{html.escape(str(k))}</th>"
                       f"<td><code>{html.escape(_value_text(v))}</code></td></tr>"
                       for k, v in parameters.items() if not isinstance(v, Mapping))
        parts.append(f'<details open><summary>Parameters</summary><table style="font-size:0.9em">{rows}'
                     "</table></details>")
    if caption:
        parts.append(f'<p style="max-width:60em;line-height:1.45">{caption_html(caption)}</p>')
    return "".join(parts)


def standalone_html(obj: Any, title: str, parameters: Mapping[str, Any] | None = None,
                    caption: str = "") -> str:
    """A Bokeh model (figure or layout) as one self-contained HTML document, with a heading, the
    parameters and the caption when given."""
    from bokeh.layouts import column
    from bokeh.models.widgets.markups import Div

    from lowprec.app.theme import style_bokeh

    style_bokeh(obj)
    page = column(Div(text=header_html(title, parameters, caption), sizing_mode="stretch_width"), obj,
                  sizing_mode="stretch_width")
    return _EXTENSION_TAG.sub("", file_html(page, resources=INLINE, title=title))


def save_standalone(obj: Any, path: str | Path, title: str, parameters: Mapping[str, Any] | None = None,
                    caption: str = "") -> Path:
    """Write `standalone_html(obj, title, parameters, caption)` to `path`; returns the path."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(standalone_html(obj, title, parameters, caption), encoding="utf-8")
    return out
