"""Links between pages: lesson Markdown links another page by its route (`../glossary#term`,
`/widget/BinExplorer?format=E5M2`), and `site_links` rewrites them for the page's depth (and adds
`.html` in an exported site); `heading_ids` gives `### Term {#id}` headings the ids those links
name."""

from __future__ import annotations

import re
from typing import Any

import panel as pn

from lowprec.app import layout


_SITE_TARGET = (r"(?:\.\./|\./|/)*(glossary|index|lesson/[A-Za-z0-9_-]+|widget/[A-Za-z0-9_]+)(?:\.html)?"
                r"(\?[^\s)#\"']*)?(#[^\s)\"']*)?")

_MD_LINK_RE = re.compile(r"\]\(" + _SITE_TARGET + r"\)")

_HTML_LINK_RE = re.compile(r"href=\"" + _SITE_TARGET + "\"")


def site_links(text: str, depth: int, suffix: str = "") -> str:
    """Rewrite links to other pages of the site in Markdown/HTML `text` for a page `depth` folders
    down: `../glossary#x`, `/glossary#x`, `glossary#x` all become the right relative link, with
    `suffix` ('.html' when exported) after the route and a query (a widget's URL state:
    `../widget/BinExplorer?format=E4M3FN&value=3.3`) kept after it."""

    def target(match: re.Match[str]) -> str:
        route = "" if match.group(1) == "index" else match.group(1)
        link = layout.href(route + (match.group(3) or ""), depth, suffix)
        query = match.group(2) or ""  # a widget's URL state (a shareable view) goes after the file name
        if query:
            path, mark, frag = link.partition("#")
            link = path + query + mark + frag
        return link

    text = _MD_LINK_RE.sub(lambda m: f"]({target(m)})", text)
    return _HTML_LINK_RE.sub(lambda m: f'href="{target(m)}"', text)


def rewrite_site_links(objects: list[Any], depth: int, suffix: str) -> None:
    """`site_links` on every Markdown and HTML pane in `objects` (and inside their layouts)."""
    for obj in objects:
        if not hasattr(obj, "select"):
            continue
        for pane in obj.select(lambda o: isinstance(o, (pn.pane.Markdown, pn.pane.HTML))):
            text = pane.object
            if isinstance(text, str) and ("](" in text or "href=" in text):
                new = site_links(text, depth, suffix)
                if new != text:
                    pane.object = new


#: a heading's explicit anchor, `### Decode scale {#decode-scale}` (the glossary's terms)
_HEADING_ID = re.compile(r"\s*\{#([A-Za-z][A-Za-z0-9_-]*)\}\s*$")


def heading_ids(md: Any) -> None:
    """markdown-it plugin: a heading ending in `{#id}` gets that id (and loses the marker), so
    `glossary#term` links have a target (Panel's parser has no attribute syntax)."""

    def rule(state: Any) -> None:
        tokens = state.tokens
        for opening, inline in zip(tokens, tokens[1:]):
            if opening.type == "heading_open" and inline.type == "inline":
                match = _HEADING_ID.search(inline.content)
                if match:
                    opening.attrSet("id", match.group(1))
                    inline.content = inline.content[:match.start()]

    md.core.ruler.before("inline", "lowprec_heading_ids", rule)
