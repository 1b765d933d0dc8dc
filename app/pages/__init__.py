"""Pages of the app: the start page, one page per lesson, one per widget, and the glossary.

A lesson page renders `course.lessons.render_blocks(lesson)` in order (`lesson_body`): Markdown
blocks become Markdown panes and each `::: widget Name key=value` directive becomes that widget
built with those parameters (bad directive parameters show an "Invalid …" alert and do not stop the
page). Every page sits in the site frame of `app.layout` (top bar with the theme toggle, course map
with progress marks, breadcrumb and previous/next links on lessons). In a served session the
widgets' parameters are synced with the URL query (`pn.state.location.sync`), so a link reproduces
a view: a widget page uses the bare parameter names (`/widget/BinExplorer?format=E5M2&value=0x1.8p3`),
a lesson page prefixes them with the widget name (`BinExplorer.value=…`; a second widget of the same
class gets `BinExplorer2.value=…`).

Served lessons (and the glossary) build their widgets as the reader reaches them
(`LazyWidget`): the page goes out with its prose and a slot per widget, and each widget is built
when its slot nears the window, or in the background once the page is idle; a widget the URL
addresses is built with the page. A served widget page and the start page go out with a slot too,
and the server puts their widget in right after sending the page, while the browser loads its
scripts (`prebuild`), so the document the browser pulls already holds it; the widget itself is
usually a spare built before anyone asked (`Spares`: one per such page, replaced after use). An exported lesson
builds its widgets as the reader reaches them in the browser (`export.page._defer_widgets`); exported
widget pages and the start page hold theirs from the start.

Routes: `ROUTE_HOME` (""), `glossary` (when `content/glossary.md` exists), `lesson/<slug>`,
`widget/<Name>`. Links between pages are relative and written for the served site; lesson Markdown
links another page by its route relative to the lesson page (`../glossary#term`,
`../lesson/<slug>`, `../widget/<Name>`; `/glossary#term` works too) and `site_links` rewrites them
for the page's depth and, in an exported site, adds `.html`.

The package's modules, one concern each (this module re-exports their names: `lowprec.app.pages.X`
is what it always was):

- `site`: the routes, their titles, the start page's live widget (no Panel);
- `frame`: `Page`, `PlacedWidget`, the site frame's contents, `href`, `use_extensions`;
- `url_state`: widget parameters ↔ the URL query, and the bounds on query values;
- `building`: one widget built for a page (`build_widget`, `built_view`, `compact_view`);
- `spares`: the spare widgets of prebuilt pages (`Spares`, `SPARES`);
- `lazy`: placing a widget now or as a `LazyWidget`;
- `links`: links between pages (`site_links`) and heading anchors;
- `builders`: the lesson, widget, glossary and start pages, `build_page`;
- `session`: a page in a server session (`routes`, `served`, `prebuild`, the resource path).
"""

from __future__ import annotations

from lowprec.app.pages.site import (
    GLOSSARY_PATH,
    has_glossary,
    lab_lessons,
    LANDING_PARAMS,
    LANDING_WIDGET,
    lesson_route,
    page_titles,
    ROUTE_GLOSSARY,
    ROUTE_HOME,
    route_names,
    SITE_TITLE,
    TAGLINE,
    widget_route,
)
from lowprec.app.pages.frame import (
    caption,
    chrome,
    href,
    nav_lessons,
    Page,
    PlacedWidget,
    use_extensions,
)
from lowprec.app.pages.url_state import (
    _addressed,
    _drop_oversized_query_values,
    _drop_unparseable_query_values,
    _query_names,
    _session_location,
    MAX_QUERY_VALUE,
    sync_url,
    url_parameters,
)
from lowprec.app.pages.building import (
    build_widget,
    built_view,
    compact_view,
)
from lowprec.app.pages.spares import (
    prebuilt_keys,
    spare_key,
    SpareKey,
    Spares,
    SPARES,
    SPARES_ENV,
)
from lowprec.app.pages.lazy import (
    LazyWidget,
    place_widget,
)
from lowprec.app.pages.links import (
    heading_ids,
    rewrite_site_links,
    site_links,
)
from lowprec.app.pages.builders import (
    _glossary_lesson,
    build_page,
    glossary_page,
    landing_page,
    lesson_body,
    lesson_page,
    widget_page,
)
from lowprec.app.pages.session import (
    local_dist_url,
    pin_local_resources,
    prebuild,
    prebuilds,
    routes,
    served,
)
from lowprec.app.widgets import WIDGETS

__all__ = ["GLOSSARY_PATH", "LANDING_PARAMS", "LANDING_WIDGET", "LazyWidget", "MAX_QUERY_VALUE", "Page",
           "PlacedWidget", "ROUTE_GLOSSARY", "ROUTE_HOME", "SITE_TITLE", "SPARES", "SPARES_ENV", "SpareKey",
           "Spares", "TAGLINE", "WIDGETS", "build_page", "build_widget", "built_view", "caption", "chrome",
           "compact_view", "glossary_page", "has_glossary", "heading_ids", "href", "lab_lessons",
           "landing_page", "lesson_body", "lesson_page", "lesson_route", "local_dist_url", "nav_lessons",
           "page_titles", "pin_local_resources", "place_widget", "prebuild", "prebuilds", "prebuilt_keys",
           "rewrite_site_links", "route_names", "routes", "served", "site_links", "spare_key", "sync_url",
           "url_parameters", "use_extensions", "widget_page", "widget_route"]
