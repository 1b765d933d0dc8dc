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
from lowprec.app.lessons import WidgetDirective, load_lessons, render_blocks


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
    root, _ = pages.lesson_page(lesson, sync=False).render()
    problems = [a for a in _alerts(root) if "not available" in a or a.startswith("Invalid")]
    assert problems == []
    assert _reactive_html(root) == []


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


@pytest.mark.parametrize("text", ["3.3", "-0", "1e-3", "448", "nan", "-inf"])
def test_url_text_values_arrive_as_typed(text: str) -> None:
    from urllib.parse import quote

    from lowprec.app.widgets import BinExplorer

    w = BinExplorer()
    loc = Location(search=f"?value={quote(text)}")
    pages.sync_url([pages.PlacedWidget("BinExplorer", w, "")], location=loc)
    assert w.value == text and w.error == "" and not w._alert.visible
