"""Pages: every lesson renders with its widgets built from the directives, the landing page links
every page, URL query parameters reach the widgets (and bad ones show a message), and the serve
command's options. No browser here (tests/test_ui.py drives the served pages)."""

from __future__ import annotations

import argparse
from typing import Any

import panel as pn
import pytest
from panel.io.location import Location

import lowprec.app.widgets as widgets_pkg
from lowprec.app import pages
from lowprec.app.cli import build_parser
from lowprec.course.lessons import WidgetDirective, load_lessons, render_blocks


def _alerts(layout: Any) -> list[str]:
    return [str(a.object) for a in layout.select(pn.pane.Alert) if a.object and a.visible]


def test_widget_registry_classes_exist() -> None:
    for name in pages.WIDGETS:
        cls = widgets_pkg.get_widget_class(name)
        assert cls.__name__ == name
        assert issubclass(cls, pn.viewable.Viewer)
    assert widgets_pkg.BinExplorer is widgets_pkg.get_widget_class("BinExplorer")
    with pytest.raises(ValueError, match="unknown widget 'Nope'"):
        widgets_pkg.get_widget_class("Nope")


@pytest.mark.parametrize("lesson", load_lessons(), ids=lambda lesson: lesson.slug)
def test_every_lesson_renders_with_its_widgets(lesson) -> None:  # type: ignore[no-untyped-def]
    _, placed = pages.lesson_body(lesson)
    directives = [b for b in render_blocks(lesson) if isinstance(b, WidgetDirective)]
    assert [p.name for p in placed] == [d.name for d in directives]
    for item, directive in zip(placed, directives):
        assert item.widget is not None, f"{lesson.slug}: {directive.name} not built"
        for key, value in directive.params.items():
            assert getattr(item.widget, key) == value, (lesson.slug, directive.name, key)
    page = pages.lesson_page(lesson, sync=False)
    root, _ = page.render()
    problems = [a for a in _alerts(root) if "not available" in a or a.startswith("Invalid")]
    assert problems == []
    assert _reactive_html(root) == []
    # every widget, locked behind a prediction or not, sits as a view that knows its widget (the
    # export finds a widget's note position and live control by it)
    views = root.select(lambda o: getattr(o, "_lowprec_widget", None) is not None)
    assert [v._lowprec_widget for v in views] == [p.widget for p in page.placed]


def _reactive_html(root: Any) -> list[str]:
    """ReactiveHTML layouts (pn.FlexBox) in a page: Bokeh figures inside one never finish rendering,
    the browser never sends document_ready, and Panel then drops every held plot update (the
    recompute lab's variant control did not replot). `theme.wrap_row` is the layout to use."""
    from panel.reactive import ReactiveHTML

    return [type(o).__name__ for o in root.select(ReactiveHTML)]


@pytest.mark.parametrize("name", list(pages.WIDGETS))
def test_widget_pages_hold_no_reactive_html_layouts(name: str) -> None:
    root, _ = pages.widget_page(name, sync=False).render()
    assert _reactive_html(root) == []


def test_repeated_widget_gets_numbered_url_prefix() -> None:
    lesson = next(x for x in load_lessons() if sum(
        isinstance(b, WidgetDirective) and b.name == "AttentionRounding" for b in render_blocks(x)) >= 2)
    _, placed = pages.lesson_body(lesson)
    prefixes = [p.prefix for p in placed if p.name == "AttentionRounding"]
    assert prefixes[:2] == ["AttentionRounding.", "AttentionRounding2."]


def test_landing_page_links_every_page() -> None:
    text = "\n".join(str(m.object) for m in pages.landing_page(sync=False).render()[0].select(pn.pane.Markdown))
    for lesson in load_lessons():
        assert f"(lesson/{lesson.slug})" in text and lesson.title in text
    for name in pages.WIDGETS:
        assert f"(widget/{name})" in text
    exported = "\n".join(str(m.object) for m in
                         pages.landing_page(suffix=".html", sync=False).render()[0].select(pn.pane.Markdown))
    assert "(widget/BinExplorer.html)" in exported


def test_routes_cover_lessons_and_widgets() -> None:
    routes = pages.routes()
    assert "/" in routes
    assert {f"lesson/{x.slug}" for x in load_lessons()} <= set(routes)
    assert {f"widget/{n}" for n in pages.WIDGETS} <= set(routes)
    assert set(pages.page_titles()) == set(routes)


def test_widget_page_mentions_lessons_using_it() -> None:
    root, _ = pages.widget_page("Conventions", sync=False).render()
    text = "\n".join(str(m.object) for m in root.select(pn.pane.Markdown))
    users = [x for x in load_lessons() if "::: widget Conventions" in x.text]
    assert users and all(f"(../lesson/{x.slug})" in text for x in users)


def test_bad_widget_parameters_show_invalid() -> None:
    widget, view = pages.build_widget("BinExplorer", {"format": "E9M9"})
    assert widget is None
    assert str(getattr(view, "object", "")).startswith("Invalid parameters for widget BinExplorer")


def test_url_query_sets_widget_params_and_follows_changes() -> None:
    from lowprec.app.widgets import BinExplorer

    w = BinExplorer()
    loc = Location(search="?format=E5M2&value=0x1.8p3&decode_scale=2.0")
    assert pages.sync_url([pages.PlacedWidget("BinExplorer", w, "")], location=loc)
    assert (w.format, w.value, w.decode_scale) == ("E5M2", "0x1.8p3", 2.0)
    # 0x1.8p3 / 2 = 6 = 1.5 × 2^2 in E5M2: exponent 2 + 15 = 17, mantissa .10 → 0b0_10001_10 = 0x46
    assert w.view.main.code == 0x46 and w.view.main.value == 12.0
    w.value = "7"
    assert "value=7" in loc.search


def test_url_query_with_prefix_and_bad_value() -> None:
    from lowprec.app.widgets import BinExplorer, Conventions

    a, b = BinExplorer(), Conventions()
    loc = Location(search="?BinExplorer.value=abc&Conventions.format=NOPE")
    pages.sync_url([pages.PlacedWidget("BinExplorer", a, "BinExplorer."),
                    pages.PlacedWidget("Conventions", b, "Conventions.")], location=loc)
    assert a.error.startswith("Invalid") and "abc" in a.error  # the text box takes any text
    assert b.format == "E4M3FN"  # NOPE is not an option: refused, message shown
    assert b._alert.visible and "Invalid URL parameters" in str(b._alert.object)
    assert a.view.main.format == "E4M3FN"  # the other widget keeps working


def test_serve_command_options() -> None:
    parser = build_parser("serve")  # registers only the serve command
    args = parser.parse_args(["serve"])
    assert (args.port, args.address, args.show) == (5006, "127.0.0.1", True)
    args = parser.parse_args(["serve", "--no-show", "--port", "6123", "--address", "0.0.0.0"])
    assert (args.port, args.address, args.show) == (6123, "0.0.0.0", False)
    assert isinstance(args, argparse.Namespace)


def test_serve_rejects_bad_port() -> None:
    from lowprec.app.server import serve

    with pytest.raises(ValueError, match="port"):
        serve(port=70000, show=False, start=False)


@pytest.mark.parametrize("prefix", ["", "BinExplorer.", "BinExplorer2."])
@pytest.mark.parametrize("text", ["3.3", "-0", "1e-3", "448", "nan", "-inf"])
def test_url_text_values_arrive_as_typed(text: str, prefix: str) -> None:
    """A lesson page prefixes the names (`BinExplorer.value=-0`); the raw text is looked up under
    the prefixed name, so -0 keeps its sign there too (issue 33: the retry looked the bare name
    up, and -0 arrived as 0)."""
    from urllib.parse import quote

    from lowprec.app.widgets import BinExplorer

    w = BinExplorer()
    loc = Location(search=f"?{prefix}value={quote(text)}")
    pages.sync_url([pages.PlacedWidget("BinExplorer", w, prefix)], location=loc)
    assert w.value == text and w.error == "" and not w._alert.visible
    if text == "-0":
        assert w.view.main.bits[0] == "1" and w.view.main.value == 0  # the sign bit of -0


@pytest.mark.parametrize("query, shown", [
    ("?value=[1", "Invalid input: cannot read '[1' as a number"),
    ("?value={", "Invalid input: cannot read '{' as a number"),
    ("?format=[E5M2]", "Invalid URL parameters: format='[E5M2]'"),
    ("?format=[&value=7", "Invalid URL parameters: format='['"),
])
def test_a_url_value_panel_cannot_parse_gets_a_message(query: str, shown: str) -> None:
    """Issue 33: Panel reads a value starting with `[` or `{` as JSON and, when that fails, ignores
    the parameter with a log line only; the page now hands the text to the widget, which says what
    is wrong with it, and the other parameters still apply."""
    import re

    from lowprec.app.widgets import BinExplorer

    w = BinExplorer()
    pages.sync_url([pages.PlacedWidget("BinExplorer", w, "")], location=Location(search=query))
    assert w._alert.visible
    assert re.sub(r"\\(.)", r"\1", str(w._alert.object)).startswith(shown)
    if "value=7" in query:
        assert w.value == "7" and w.format == "E4M3FN"


def test_query_values_up_to_the_limit_are_read_and_the_rest_stay_escaped() -> None:
    """Issue 33: a value of exactly MAX_QUERY_VALUE characters is within the limit ("at most"), one
    more is dropped; dropping it rebuilds the query escaped, so an `&` inside another value stays in
    that value and injects no parameter."""
    from urllib.parse import parse_qs, quote

    limit = pages.MAX_QUERY_VALUE
    at = "0." + "0" * (limit - 3) + "1"
    assert len(at) == limit
    loc = Location(search=f"?value={at}&format=E5M2")
    assert pages._drop_oversized_query_values(loc) == {}
    over = at + "5"
    other = "E5M2&convention=torch"
    loc = Location(search=f"?value={over}&compare_format={quote(other)}&format=E5M2")
    assert pages._drop_oversized_query_values(loc) == {"value": limit + 1}
    assert parse_qs(str(loc.search).lstrip("?")) == {"compare_format": [other], "format": ["E5M2"]}
    from lowprec.app.widgets import BinExplorer

    w = BinExplorer()
    pages.sync_url([pages.PlacedWidget("BinExplorer", w, "")], location=Location(search=f"?value={at}"))
    assert w.value == at and "characters long" not in str(w._alert.object)


# ------------------------------------------------------------------------------------------------
# served lessons build their widgets as the reader reaches them (pages.LazyWidget)
# ------------------------------------------------------------------------------------------------


def _lesson(slug: str) -> Any:
    return next(x for x in load_lessons() if x.slug == slug)


def test_a_lazy_lesson_goes_out_with_slots_and_no_widget_models() -> None:
    """The served form of a lesson: one slot per widget directive, nothing of any widget in the
    page's models (no figure, no table), and the count in <body data-lazy-slots> for the page's
    readiness check."""
    from bokeh.models import DataTable, Plot

    from lowprec.app.exercises import LazySlot
    from lowprec.app.layout import template

    lesson = _lesson("stateful-quantizers-under-recompute")
    directives = [b for b in render_blocks(lesson) if isinstance(b, WidgetDirective)]
    page = pages.lesson_page(lesson, sync=False, lazy=True)
    assert [p.name for p in page.placed] == [d.name for d in directives]
    assert all(p.lazy and p.widget is None for p in page.placed)
    root, variables = page.render()
    assert len(root.select(pages.LazyWidget)) == len(directives) == 6
    assert len(root.select(LazySlot)) == 6
    from bokeh.document import Document

    model = root.get_root(Document())
    kinds = {type(m) for m in model.references()}
    assert not any(issubclass(k, (Plot, DataTable)) for k in kinds), kinds
    assert variables["lp_lazy"] == "6"
    from bokeh.core.templates import MACROS

    assert 'data-lazy-slots="6"' in template().render(docs=[], plot_script="", title="t", macros=MACROS,
                                                       **variables)
    eager = pages.lesson_page(lesson, sync=False)
    assert eager.lazy_slots == 0 and all(p.widget is not None for p in eager.placed)


def test_a_lazy_widget_once_built_is_the_widget_the_page_would_have_built() -> None:
    """`build()` swaps the slot for the widget built from the directive's parameters, placed and
    styled as `layout.frame` places and styles a page (the same stylesheets on its Markdown and
    rows), with the same numbers as the widget built with the page; a second call does nothing."""
    from lowprec.app.layout import MARKDOWN_CSS, ROW_STACK_CSS

    lesson = _lesson("range-vs-resolution")
    lazy_page = pages.lesson_page(lesson, sync=False, lazy=True)
    eager_page = pages.lesson_page(lesson, sync=False)
    lazy_root, _ = lazy_page.render()
    eager_root, _ = eager_page.render()
    slots = lazy_root.select(pages.LazyWidget)
    assert [s.item.name for s in slots] == ["BinChallenge", "Conventions", "BinExplorer"]
    explorer = slots[2]
    explorer.build()
    assert explorer.built and explorer.item.widget is lazy_page.placed[2].widget
    (view,) = explorer.objects
    widget = view._lowprec_widget
    assert type(widget).__name__ == "BinExplorer" and widget is explorer.item.widget
    reference = eager_page.placed[2].widget
    for key in ("format", "value", "overflow", "compare_format"):
        assert getattr(widget, key) == getattr(reference, key), key
    assert widget.view.main.code == reference.view.main.code
    assert all(MARKDOWN_CSS in md.stylesheets for md in explorer.select(pn.pane.Markdown))
    assert any(ROW_STACK_CSS in row.stylesheets for row in explorer.select(pn.Row))
    explorer.build()
    assert explorer.objects == [view]  # built once
    # the other slots are still waiting
    assert [s.built for s in slots] == [False, False, True]


def test_a_widget_the_url_addresses_is_built_with_the_page() -> None:
    """A link that sets a widget's parameters gets that widget at once (a refused value is then
    reported at once); the lesson's other widgets still wait for the reader."""
    lesson = _lesson("range-vs-resolution")
    objects, placed = pages.lesson_body(lesson, lazy=True, query=frozenset({"BinExplorer.value"}))
    assert [(p.name, p.lazy, p.widget is not None) for p in placed] == [
        ("BinChallenge", True, False), ("Conventions", True, False), ("BinExplorer", False, True)]


def test_a_lazy_slot_asking_for_its_widget_builds_it() -> None:
    """The page's request (the slot's `requested`, set by the browser) is what builds the widget."""
    lesson = _lesson("moving-the-grid")
    root, _ = pages.lesson_page(lesson, sync=False, lazy=True).render()
    slot = root.select(pages.LazyWidget)[0]
    assert not slot.built
    slot.slot.requested = True
    assert slot.built and slot.item.widget is not None
    assert type(slot.objects[0]._lowprec_widget).__name__ == "BinExplorer"


def test_a_lazy_widget_that_fails_to_build_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    """An internal error while building a widget replaces the slot with a message naming the widget
    (the page keeps working; the error still reaches the server log), instead of a slot that waits
    for ever; bad directive parameters keep their own "Invalid parameters" alert."""
    lesson = _lesson("moving-the-grid")
    root, _ = pages.lesson_page(lesson, sync=False, lazy=True).render()
    first, second = root.select(pages.LazyWidget)[:2]

    def broken(name: str, params: Any = None) -> Any:
        raise RuntimeError("boom")

    monkeypatch.setattr(pages.building, "build_widget", broken)  # where `built_view` looks it up
    with pytest.raises(RuntimeError, match="boom"):
        first.build()
    assert _alerts(first) == ["The BinExplorer widget could not be built (internal error: RuntimeError); "
                              "see the server log."]
    monkeypatch.undo()
    item = pages.PlacedWidget("BinExplorer", None, "BinExplorer2.", lazy=True)
    bad = pages.LazyWidget(item, {"format": "NOPE"}, sync=False)
    bad.build()
    assert item.widget is None and _alerts(bad)[0].startswith("Invalid parameters for widget BinExplorer")
    assert not second.built


@pytest.mark.parametrize("name", list(pages.WIDGETS))
def test_a_widget_that_needs_page_scripts_says_so(name: str) -> None:
    """A served page loads the scripts of the components it holds when it is sent; a widget built
    later (a lazy widget) can only use components whose scripts every page has — the lesson
    components' own (es-module-shims, for ReactiveESM) — or those of the Panel extensions its entry
    names in `page_scripts` (FileDropper's filepond: "filedropper"), which the page then loads."""
    import importlib

    from bokeh.document import Document
    from bokeh.model import Model

    from lowprec.app.exercises import LazySlot

    doc = Document()
    slot_scripts = {s for m in LazySlot().get_root(doc).references() for s in getattr(type(m), "__javascript__", None) or []}
    widget = widgets_pkg.get_widget_class(name)()
    needed = {s for m in pn.panel(widget).get_root(Document()).references()
              for s in getattr(type(m), "__javascript__", None) or []}
    named: set[str] = set()
    for extension in pages.WIDGETS[name].page_scripts:
        module = importlib.import_module(pn.extension._imports[extension])
        named |= {s for m in vars(module).values() if isinstance(m, type) and issubclass(m, Model)
                  for s in getattr(m, "__javascript__", None) or []}
    missing = needed - slot_scripts
    assert missing <= named, sorted(missing - named)
    assert bool(pages.WIDGETS[name].page_scripts) == bool(missing), sorted(missing)


def test_a_lazy_lesson_keeps_a_widget_that_needs_page_scripts_lazy() -> None:
    """The page's session asks Panel for the scripts (`Page.serve`; the served page's HTML is
    checked in tests/test_ui.py), so the widget need not be built with the page."""
    lesson = _lesson("reading-published-recipes")
    _, placed = pages.lesson_body(lesson, lazy=True)
    assert [(p.name, p.lazy, p.widget is not None) for p in placed] == [
        ("BlockFormats", True, False), ("RecipeLab", True, False)]


# -- spare widgets (`pages.Spares`) --------------------------------------------------------------


def test_a_spare_is_handed_out_once_and_is_a_fresh_widget_at_the_page_defaults() -> None:
    """A spare is built ahead with the parameters its page would build it with, goes to one page
    only, and is then gone until it is built again."""
    spares = pages.Spares()
    key = pages.spare_key("BinExplorer", {})
    assert spares.take(key) is None
    assert spares.fill(key) is True
    assert spares.fill(key) is False  # one per key
    spare = spares.take(key)
    assert spare is not None and spares.take(key) is None
    widget, holder = spare
    fresh, _ = pages.build_widget("BinExplorer", {})
    assert type(widget) is type(fresh) and widget is not fresh
    assert widget.config() == fresh.config()
    assert widget.error == "" and not _alerts(holder)
    assert holder.select(lambda o: getattr(o, "_lowprec_widget", None) is widget), "placed as a page places it"
    assert (spares.built, spares.taken) == (1, 1)


def test_the_start_pages_spare_is_its_compact_explorer() -> None:
    spares = pages.Spares()
    key = pages.spare_key(pages.LANDING_WIDGET, dict(pages.LANDING_PARAMS), pages.compact_view)
    assert spares.fill(key)
    widget, holder = spares.take(key)  # type: ignore[misc]
    assert widget.compare_format == ""
    assert holder.select(lambda o: getattr(o, "_lowprec_widget", None) is widget)
    assert not any(o is widget._table for o in holder.select())  # the compact view has no code table


def test_the_spare_keys_are_those_of_the_pages_served_prebuilds() -> None:
    """`prebuilt_keys` names what each prebuilt page's slot asks for (the start page and every
    widget page), so every such page finds its spare."""
    asked = []
    for route in pages.route_names():
        page = pages.build_page(route, sync=False, lazy=True)
        builders = [p.builder for p in page.placed if p.builder is not None]
        if pages.prebuilds(route):
            asked.append(builders[0].spare_key)
    assert len(asked) == len(pages.WIDGETS) + 1
    assert pages.prebuilt_keys() == asked


def test_spares_are_built_on_the_event_loop_after_the_first_page_and_can_be_turned_off(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import asyncio

    spares = pages.Spares()
    spares.START_DELAY_S = 0.0
    keys = [pages.spare_key("BinChallenge", {}), pages.spare_key("Conventions", {})]
    monkeypatch.setattr(pages.spares, "prebuilt_keys", lambda: keys)  # where `Spares.start` looks it up
    spares.start()  # no event loop in this thread: nothing scheduled, nothing built
    assert spares.built == 0

    async def first_page() -> None:
        spares.clear()
        spares.start()
        spares.start()  # once per process
        for _ in range(400):
            if spares.built == len(keys):
                break
            await asyncio.sleep(0.05)

    asyncio.run(first_page())
    assert spares.built == len(keys)
    assert all(spares.take(k) is not None for k in keys)

    monkeypatch.setenv(pages.SPARES_ENV, "0")
    spares.clear()
    asyncio.run(first_page())
    assert spares.built == len(keys)  # nothing more was built


def test_a_spare_is_built_outside_any_session(monkeypatch: pytest.MonkeyPatch) -> None:
    """Spares are built by the server with no session's document current, even when the refill
    is scheduled from inside a session (asyncio copies the context into its callbacks)."""
    import asyncio

    from bokeh.document import Document
    from panel.io.state import set_curdoc

    seen = []
    real = pages.built_view

    def spy(*args: Any, **kwargs: Any) -> Any:
        seen.append(pn.state.curdoc)
        return real(*args, **kwargs)

    monkeypatch.setattr(pages.spares, "built_view", spy)  # where `Spares.fill` looks it up
    spares = pages.Spares()
    spares.REFILL_DELAY_S = 0.0

    async def in_session() -> None:
        with set_curdoc(Document()):
            spares.refill(pages.spare_key("BinChallenge", {}))
        for _ in range(200):
            if spares.built:
                break
            await asyncio.sleep(0.05)

    asyncio.run(in_session())
    assert spares.built == 1 and seen == [None]


def test_the_start_page_explorer_gives_away_no_prediction() -> None:
    """Issue 33: the start page's explorer opened on 3.3 → 0x45 = 3.25, the answer to lesson 1's
    first prediction. The value it opens on is none a prediction names in its question or sets in
    the widget that reveals its answer, and it is a value the format must round."""
    import re

    from lowprec import formats
    from lowprec.course.lessons import PredictionBlock

    value = pages.LANDING_PARAMS["value"]
    page = pages.landing_page(sync=False)
    explorer = page.placed[0].widget
    assert explorer.value == value and explorer.view.main.value != float(value)  # it rounds: something to see
    assert float(formats.quantize(float(value), explorer.format)) == explorer.view.main.value
    asked: set[float] = set()
    for lesson in load_lessons():
        blocks = render_blocks(lesson)
        for i, block in enumerate(blocks):
            if not isinstance(block, PredictionBlock):
                continue
            asked |= {float(x) for x in re.findall(r"(?<![\w.])-?\d+(?:\.\d+)?(?:e-?\d+)?", block.question)}
            after = next((b for b in blocks[i + 1:] if isinstance(b, WidgetDirective)), None)
            if after is not None and "value" in after.params:
                try:
                    asked.add(float(after.params["value"]))
                except ValueError:
                    pass
    assert 3.3 in asked  # the check sees lesson 1's prediction
    assert float(value) not in asked
