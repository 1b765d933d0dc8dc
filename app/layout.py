"""The frame of every page, served or exported: one HTML template around the page's Panel root.

This module owns the page chrome, written as plain HTML outside Panel's shadow DOM so that it is
crawlable, keyboard-operable and styled by one stylesheet (`static/lowprec.css`):

- a top bar (site name, "skip to content", the light/dark theme toggle);
- a persistent sidebar: the course map (lessons in order, each with a progress mark computed in
  the browser from `localStorage["lowprec-progress"]`; the lesson's exercise and prediction ids
  travel in `data-exercises` / `data-predictions`), the widget list and the glossary; at phone
  width it folds into a "Course map" disclosure above the page;
- on lesson pages a breadcrumb, the lesson's goal, and previous/next links in course order;
- the page's Panel root, whose Markdown prose (predictions, exercises and explanations included)
  is held to a reading width (`PROSE_MAX`) while widgets may use the whole column.

Links are relative, so the same pages work served (`/lesson/<slug>`) and exported
(`lesson/<slug>.html`): `href(route, depth, suffix)`. Static files (`PAGE_FILES` in `app/static/`,
linked from every page; the ES module of the lesson components there travels inside their models)
are served at `/_static/lowprec/` and copied to `_static/lowprec/` by the export. `frame(...)`
returns the layout and the template variables; `template()` is the Jinja template both `pn.serve`
(through the session document) and `panel.io.save` render.
"""

from __future__ import annotations

import html
import json
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Sequence

import panel as pn
import param
from panel.theme.native import Native, NativeDefaultTheme

from lowprec.app.exercises import LessonComponent, LockRegion, placed
from lowprec.app.theme import CSS_VARIABLES, theme_table, wrap_row

__all__ = ["NavLesson", "PAGE_COMPLETE_JS", "PAGE_READY_JS", "PROSE_MAX", "STATIC_DIR", "STATIC_ROUTE", "Chrome",
           "finish", "frame", "href", "placed", "static_files", "template"]

#: app/static/: the site's CSS and JS, and the ES modules of the lesson components
STATIC_DIR = Path(__file__).resolve().parent / "static"
#: the files under STATIC_DIR that every page links, CSS first
PAGE_FILES = ("lowprec.css", "lowprec.js")
#: where the static files live in a site (URL path when served, folder when exported)
STATIC_ROUTE = "_static/lowprec"
PROSE_MAX = "42rem"  # reading width of Markdown prose (16 px type): about 75-80 characters a line
PAGE_MAX = "1180px"  # the main column at most (widgets may use all of it)
PROGRESS_KEY = "lowprec-progress"


class _PageVariablesTheme(NativeDefaultTheme):
    """No per-component variable sheet: components inherit the page root's --panel-* variables."""

    base_css = param.Filename(default=None, allow_None=True)  # type: ignore[assignment]


class LowprecDesign(Native):
    """Panel's native design whose colour variables come from the page (both themes,
    `theme.CSS_VARIABLES`)."""

    _themes = {"default": _PageVariablesTheme, "dark": _PageVariablesTheme}


def href(route: str, depth: int, suffix: str = "") -> str:
    """Relative link to `route` ('' = home, 'glossary', 'lesson/<slug>', 'widget/<Name>', optionally
    with '#anchor') from a page `depth` folders down; `suffix` is '.html' for exported files."""
    route, _, anchor = route.strip("/").partition("#")
    frag = f"#{anchor}" if anchor else ""
    up = "../" * depth
    if route == "":
        return (f"{up}index{suffix}" if suffix else (up or "./")) + frag
    return f"{up}{route}{suffix}{frag}"


def static_files() -> list[str]:
    """The static files every page links (names under STATIC_DIR), CSS first."""
    return list(PAGE_FILES)


@dataclass(frozen=True)
class NavLesson:
    """One lesson in the course map."""

    route: str
    order: int
    title: str
    slug: str
    goal: str = ""
    exercises: tuple[str, ...] = ()
    predictions: tuple[str, ...] = ()


@dataclass
class Chrome:
    """What the frame shows around one page."""

    route: str  # this page's route ('' = home)
    title: str  # the browser tab's title
    lessons: Sequence[NavLesson]
    widgets: Sequence[tuple[str, str]]  # (name, title)
    suffix: str = ""  # '.html' when exported
    has_glossary: bool = True
    crumbs: list[tuple[str, str | None]] = field(default_factory=list)  # (text, route or None)
    mode: str = "served"  # "served" | "export"
    extra_scripts: list[str] = field(default_factory=list)  # site-relative static paths
    lazy_slots: int = 0  # widgets built when the browser asks (a served lesson; an export sets lp_lazy itself)

    @property
    def depth(self) -> int:
        return self.route.count("/")

    def link(self, route: str) -> str:
        return href(route, self.depth, self.suffix)


def _e(text: str) -> str:
    return html.escape(text, quote=True)


def _nav(c: Chrome) -> str:
    items = []
    for lesson in c.lessons:
        current = ' aria-current="page"' if lesson.route == c.route else ""
        ids = " ".join(f"{lesson.slug}/{x}" for x in lesson.exercises)
        preds = " ".join(f"{lesson.slug}/{x}" for x in lesson.predictions)
        items.append(
            f'<li data-lesson="{_e(lesson.slug)}" data-exercises="{_e(ids)}" data-predictions="{_e(preds)}">'
            f'<a href="{_e(c.link(lesson.route))}"{current}><span class="lp-num">{lesson.order}.</span> '
            f'{_e(lesson.title)}</a><span class="lp-mark" role="img" aria-label="not started"></span></li>')
    widgets = []
    for name, title in c.widgets:
        route = f"widget/{name}"
        current = ' aria-current="page"' if route == c.route else ""
        widgets.append(f'<li><a href="{_e(c.link(route))}" title="{_e(title)}"{current}>{_e(name)}</a></li>')
    glossary = ""
    if c.has_glossary:
        current = ' aria-current="page"' if c.route == "glossary" else ""
        glossary = (f'<p class="lp-nav-glossary"><a href="{_e(c.link("glossary"))}"{current}>Glossary'
                    "</a></p>")
    return (
        '<details class="lp-nav-box" open><summary>Course map</summary>'
        f'<p class="lp-nav-home"><a href="{_e(c.link(""))}"{" aria-current=page" if c.route == "" else ""}>'
        "Start page</a></p>"
        '<h2 class="lp-nav-h" id="lp-nav-lessons">Lessons</h2>'
        f'<ol class="lp-course" aria-labelledby="lp-nav-lessons">{"".join(items)}</ol>'
        f"{glossary}"
        '<h2 class="lp-nav-h" id="lp-nav-widgets">Widgets</h2>'
        f'<ul class="lp-widgets" aria-labelledby="lp-nav-widgets">{"".join(widgets)}</ul>'
        "</details>"
    )


def _crumbs(c: Chrome) -> str:
    if not c.crumbs:
        return ""
    parts = []
    for text, route in c.crumbs:
        if route is None:
            parts.append(f'<li aria-current="page">{_e(text)}</li>')
        else:
            parts.append(f'<li><a href="{_e(c.link(route))}">{_e(text)}</a></li>')
    return f'<nav class="lp-crumbs" aria-label="Breadcrumb"><ol>{"".join(parts)}</ol></nav>'


def _lesson_header(c: Chrome) -> str:
    lessons = list(c.lessons)
    i = next((k for k, x in enumerate(lessons) if x.route == c.route), None)
    if i is None:
        return ""
    lesson = lessons[i]
    goal = (f'<p class="lp-goal"><span class="lp-goal-label">Goal</span> {_e(lesson.goal)}</p>'
            if lesson.goal else "")
    return (f'<p class="lp-step">Lesson {lesson.order} of {len(lessons)}</p>{goal}')


def _pager(c: Chrome) -> str:
    lessons = list(c.lessons)
    i = next((k for k, x in enumerate(lessons) if x.route == c.route), None)
    if i is None:
        return ""
    links = []
    if i > 0:
        p = lessons[i - 1]
        links.append(f'<a class="lp-prev" rel="prev" href="{_e(c.link(p.route))}">'
                     f'<span class="lp-pager-dir">← Previous</span> {p.order}. {_e(p.title)}</a>')
    else:
        links.append(f'<a class="lp-prev" rel="prev" href="{_e(c.link(""))}">'
                     '<span class="lp-pager-dir">← Start page</span> the learning path</a>')
    if i + 1 < len(lessons):
        n = lessons[i + 1]
        links.append(f'<a class="lp-next" rel="next" href="{_e(c.link(n.route))}">'
                     f'<span class="lp-pager-dir">Next →</span> {n.order}. {_e(n.title)}</a>')
    return f'<nav class="lp-pager" aria-label="Previous and next lesson">{"".join(links)}</nav>'


def _head(c: Chrome) -> str:
    static = "../" * c.depth + STATIC_ROUTE + "/"
    links = [f'<link rel="stylesheet" href="{static}{n}">' for n in static_files() if n.endswith(".css")]
    scripts = [f'<script defer src="{static}{n}"></script>' for n in static_files() if n.endswith(".js")]
    scripts += [f'<script defer src="{"../" * c.depth}{s}"></script>' for s in c.extra_scripts]
    config = {"route": c.route, "mode": c.mode, "suffix": c.suffix, "depth": c.depth,
              "progressKey": PROGRESS_KEY, "theme": theme_table()}
    # set the theme before anything paints (no flash of the wrong theme)
    early = ("<script>window.LOWPREC=" + json.dumps(config).replace("</", "<\\/") + ";"
             "(function(){var t=null;try{t=localStorage.getItem('lowprec-theme');}catch(e){}"
             "if(t!=='dark'&&t!=='light'){t=(window.matchMedia&&matchMedia('(prefers-color-scheme: dark)')"
             ".matches)?'dark':'light';}document.documentElement.setAttribute('data-theme',t);})();</script>")
    return ('<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<style>{CSS_VARIABLES}</style>{''.join(links)}{early}{''.join(scripts)}")


def theme_toggle_html() -> str:
    """The top bar's theme button. It names the theme a click gives ("Dark theme" in the light one;
    the page's script writes "Light theme" in the dark one): a label that stays "Dark theme" in both,
    with only a pressed state to tell them apart, read as if nothing had changed."""
    return ('<button type="button" class="lp-theme-toggle" title="Switch to the dark theme">'
            '<span class="lp-theme-icon" aria-hidden="true">◐</span> <span class="lp-theme-text">Dark theme</span>'
            "</button>")


def _body_top(c: Chrome) -> str:
    home = _e(c.link(""))
    return (
        '<a class="lp-skip" href="#lp-main">Skip to content</a>'
        '<header class="lp-top">'
        f'<a class="lp-brand" href="{home}">lowprec</a>'
        '<span class="lp-tagline">low-precision number formats, bit by bit</span>'
        f"{theme_toggle_html()}</header>"
    )


_TEMPLATE = """{% from macros import embed %}
<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{{ title | e }}</title>
{{ lp_head }}
{{ bokeh_css if bokeh_css }}
{{ bokeh_js if bokeh_js }}
</head>
<body class="lp-body lp-kind-{{ lp_kind }}" data-lazy-slots="{{ lp_lazy }}">
{{ lp_top }}
<div class="lp-shell">
<nav class="lp-nav" aria-label="Course">{{ lp_nav }}</nav>
<main id="lp-main" class="lp-main" tabindex="-1">
{{ lp_crumbs }}{{ lp_lesson_header }}
<div class="lp-root">
{% for doc in docs %}
{{ embed(doc) if doc.elementid }}
{% for root in doc.roots %}
{{ embed(root) }}
{% endfor %}
{% endfor %}
</div>
{{ lp_pager }}
</main>
</div>
{{ plot_script | indent(4) }}
</body>
</html>
"""


@lru_cache(maxsize=1)
def template() -> Any:
    """The page template (a Jinja template in Panel's environment, so `macros` resolves)."""
    from panel.io.resources import _env

    return _env.from_string(_TEMPLATE)


def template_variables(c: Chrome) -> dict[str, Any]:
    """The variables `template()` renders, as safe HTML strings."""
    from markupsafe import Markup

    kind = c.route.split("/")[0] if c.route else "home"
    return {
        "lp_head": Markup(_head(c)), "lp_top": Markup(_body_top(c)), "lp_nav": Markup(_nav(c)),
        "lp_crumbs": Markup(_crumbs(c)), "lp_lesson_header": Markup(_lesson_header(c)),
        "lp_pager": Markup(_pager(c)), "lp_kind": kind, "lp_lazy": str(int(c.lazy_slots)),
    }


#: stylesheet of the page's Panel root: prose at reading width, widgets full width, no overflow
ROOT_CSS = f"""
:host {{ width: 100%; max-width: {PAGE_MAX}; min-width: 0 !important; }}
.markdown, .lp-prose {{ max-width: {PROSE_MAX}; }}
"""

#: stylesheet of every Markdown pane (a widget's too): theme colours, readable type at reading width,
#: visible focus
MARKDOWN_CSS = """
:host { color: var(--lp-text); font-size: 1rem; }
a { color: var(--lp-link); }
a:focus-visible { outline: 2px solid var(--lp-focus); outline-offset: 2px; border-radius: 2px; }
code { background: var(--lp-code-bg); color: var(--lp-text); padding: 0 3px; border-radius: 3px;
       overflow-wrap: anywhere; }
p, li { overflow-wrap: break-word; }
p, li, blockquote, h1, h2, h3, h4 { max-width: {PROSE_MAX}; }  /* text at reading width; tables may run wider */
pre, pre code { background: var(--lp-code-bg); color: var(--lp-text); }
pre { padding: 8px 10px; border-radius: 6px; overflow-x: auto; }
pre code { overflow-wrap: normal; }
table { border-collapse: collapse; display: block; overflow-x: auto; max-width: 100%; }
th, td { border: 1px solid var(--lp-border); padding: 3px 8px; }
th { background: var(--lp-surface); }
h1 { font-size: 1.9em; line-height: 1.2; margin-top: 0.2em; }
h2 { font-size: 1.4em; margin-top: 1.4em; }
h3 { font-size: 1.15em; }
p, li { line-height: 1.55; }
blockquote { border-left: 3px solid var(--lp-border); margin-left: 0; padding-left: 12px; color: var(--lp-muted); }
img { max-width: 100%; }
.lp-caption, .lp-caption p { color: var(--lp-muted); font-size: 0.92em; }
""".replace("{PROSE_MAX}", PROSE_MAX)

ROW_WRAP_CSS = """
:host { flex-wrap: wrap; max-width: 100%; min-width: 0 !important; }
"""
#: rows of layouts (controls beside plots): stacked, controls first, at phone width
ROW_STACK_CSS = """
:host { flex-wrap: wrap; max-width: 100%; min-width: 0 !important; }
@media (max-width: 760px) {
  :host { flex-direction: column !important; }
  :host > div, div { flex: 0 0 auto; max-width: 100%; }
}
"""
#: columns may shrink below the sum Panel computes from fixed-width children (phone widths)
COLUMN_CSS = """
:host { max-width: 100%; min-width: 0 !important; }
"""


#: in the browser, the page is ready: Bokeh has rendered the page's root and, on a page whose
#: widgets are built as the reader reaches them (`data-lazy-slots` on <body>: how many), every slot
#: has rendered and none in the window is still waiting for its widget (`window.lowprecLazy`,
#: app/static/exercises.js). The benchmark, the screenshots and the browser tests wait for this.
PAGE_READY_JS = """() => {
  if (!(window.Bokeh !== undefined && Bokeh.documents.length > 0 && Bokeh.index !== undefined
        && Object.keys(Bokeh.index).length > 0)) return false;
  const n = Number(document.body.dataset.lazySlots || 0);
  if (n === 0) return true;
  const lazy = window.lowprecLazy;
  return lazy !== undefined && lazy.total() >= n && lazy.waitingInView() === 0;
}"""
#: in the browser, every widget of the page is built (none is waiting in its slot)
PAGE_COMPLETE_JS = """() => {
  const n = Number(document.body.dataset.lazySlots || 0);
  if (n === 0) return true;
  const lazy = window.lowprecLazy;
  return lazy !== undefined && lazy.total() >= n && lazy.waiting() === 0;
}"""


def frame(objects: list[Any], chrome: Chrome) -> tuple[pn.Column, dict[str, Any]]:
    """The page's Panel root (its objects styled for the site) and the template variables. A
    widget (a `pn.viewable.Viewer`, also inside an `exercises.LockRegion`) is placed as its view
    (`placed`)."""
    views = []
    for obj in objects:
        if isinstance(obj, LockRegion):  # a widget or an explanation hidden until a prediction is answered
            obj.content.objects = [placed(o) for o in obj.content.objects]
        if isinstance(obj, LessonComponent) or (isinstance(obj, LockRegion) and isinstance(obj.view, pn.pane.Markdown)):
            obj.css_classes = list(obj.css_classes) + ["lp-prose"]  # questions and explanations are prose
        views.append(placed(obj))
    root = pn.Column(*views, sizing_mode="stretch_width", stylesheets=[ROOT_CSS],
                     css_classes=["lp-page"], design=LowprecDesign, margin=0)
    finish(root)
    return root, template_variables(chrome)


def finish(root: Any) -> None:
    """Site look for everything in `root`: Markdown prose styles, rows that wrap at narrow widths,
    Bokeh figures and tables restyled and sized to the column (`theme.style_bokeh`)."""
    from lowprec.app.theme import style_bokeh

    for obj in root.select(lambda o: isinstance(o, pn.viewable.Viewable) and "design" in o.param
                           and not isinstance(o, pn.pane.Bokeh)):  # a Bokeh pane copies params to its figure
        if obj.design is None:  # Panel's own sheets would set their light colours per component
            obj.design = LowprecDesign
    for md in root.select(pn.pane.Markdown):
        if MARKDOWN_CSS not in md.stylesheets:
            md.stylesheets = list(md.stylesheets) + [MARKDOWN_CSS]
    for row in root.select(pn.Row):
        css = ROW_STACK_CSS if any(isinstance(o, pn.layout.ListPanel) for o in row.objects) else ROW_WRAP_CSS
        if css not in row.stylesheets:
            row.stylesheets = list(row.stylesheets) + [css]
    for col in root.select(pn.Column):
        if col is not root and COLUMN_CSS not in col.stylesheets and col.sizing_mode not in (None, "fixed"):
            col.stylesheets = list(col.stylesheets) + [COLUMN_CSS]
    _flex_gridplots(root)
    for pane in root.select(pn.pane.Bokeh):
        if pane.object is not None:
            style_bokeh(pane.object)
        pane.sizing_mode = "stretch_width"
    for view in root.select(lambda o: getattr(o, "_lowprec_widget", None) is not None):
        widget = view._lowprec_widget
        if hasattr(widget, "restyle"):  # a widget that builds parts later styles them as the page does
            widget.restyle = finish


def _panelize(model: Any) -> Any:
    """A Bokeh layout of figures as Panel layouts that wrap: rows and grids become wrapping rows
    (`theme.wrap_row`), columns Columns; each figure gets its own pane (the same models: the widget keeps updating them)."""
    from bokeh.models import Column as BkColumn
    from bokeh.models import GridPlot
    from bokeh.models import Row as BkRow

    if isinstance(model, GridPlot):
        figures: list[Any] = [c[0] for c in sorted(model.children, key=lambda c: (c[1], c[2]))]
        for fig in figures:
            if getattr(fig, "toolbar_location", "x") is None:
                fig.toolbar_location = "right"
        return wrap_row(*[_panelize(f) for f in figures])
    if isinstance(model, BkRow):
        return wrap_row(*[_panelize(c) for c in model.children])
    if isinstance(model, BkColumn):
        return pn.Column(*[_panelize(c) for c in model.children], sizing_mode="stretch_width",
                         stylesheets=[COLUMN_CSS], margin=0)
    return pn.pane.Bokeh(model, sizing_mode="stretch_width")


def _flex_gridplots(root: Any) -> None:
    """Replace each Bokeh layout of figures (grid, row, column) by Panel layouts that wrap at narrow
    widths (a Bokeh grid or row keeps its columns at any width and overflows a phone screen)."""
    from bokeh.models import Column as BkColumn
    from bokeh.models import GridPlot
    from bokeh.models import Row as BkRow

    for parent in root.select(pn.layout.ListPanel):
        for i, obj in enumerate(list(parent.objects)):
            model = obj.object if isinstance(obj, pn.pane.Bokeh) else None
            if isinstance(model, (GridPlot, BkRow, BkColumn)):
                parent[i] = _panelize(model)


def use_in_session(variables: dict[str, Any], title: str) -> None:
    """Served pages: render the current session's document with the site template."""
    doc = pn.state.curdoc
    if doc is None:
        return
    doc.template = template()
    doc.template_variables.update(variables)
    doc.title = title
