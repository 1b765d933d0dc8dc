"""The exported site: which pages (`available_routes`; unknown ones refused before anything is
written), all of them written (`export`), a partial export's links to pages it did not write
turned into text (`unlink_missing_pages`), and the site's size against `PAGE_LIMIT`/`SITE_LIMIT`."""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Sequence
from pathlib import Path, PurePosixPath

from lowprec.app import pages
from lowprec.app.export.page import ExportedPage, export_page, page_file
from lowprec.app.export.resources import _copy_site_static
from lowprec.app.export.writer import SafeWriter, check_target


PAGE_LIMIT = 3_000_000  # bytes: no page file larger

SITE_LIMIT = 30_000_000  # bytes: the whole exported site


def available_routes() -> list[str]:
    """Every route of the site ('' is the start page)."""
    return pages.route_names()


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
