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

The package's modules, one concern each (this module re-exports their public names):

- `writer`: safe writing (`check_target`, `SafeWriter`, `ExportError`);
- `states`: the compact states of the controls kept live offline (`EXPORT_CONTROLS`, `compact_data`);
- `notes`: the note above each widget of an offline page;
- `resources`: CDN links pointed at local copies, and the static files copied once per site;
- `page`: one page built and written (`export_page`, `page_file`, `ExportedPage`);
- `site`: the whole site (`export`, `available_routes`, `unlink_missing_pages`, `site_size`, the limits).
"""

from __future__ import annotations

from lowprec.app.export.writer import ExportError, SafeWriter, check_target
from lowprec.app.export.states import EXPORT_CONTROLS, STATE_BUDGET, compact_data
from lowprec.app.export.page import ExportedPage, export_page, page_file
from lowprec.app.export.site import PAGE_LIMIT, SITE_LIMIT, available_routes, export, site_size, unlink_missing_pages

__all__ = ["EXPORT_CONTROLS", "ExportError", "ExportedPage", "PAGE_LIMIT", "SITE_LIMIT", "STATE_BUDGET",
           "SafeWriter", "available_routes", "check_target", "compact_data", "export", "export_page",
           "page_file", "site_size", "unlink_missing_pages"]
