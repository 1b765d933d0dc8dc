"""Links from lesson text into the tools (issue 31): a Markdown link to `bin:FORMAT/VALUE` becomes the
bin explorer's page with its URL state, shareable, on a served page and on an exported one; a link to
another lesson's number follows the course order (`{{ lesson:SLUG }}`); a bad link fails the lesson."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from lowprec.course.lessons import LessonError, MarkdownBlock, bin_link, lesson_number, load_lessons, parse_lesson, \
    render_blocks
from lowprec.app.pages import site_links

HEAD = "---\ntitle: t\norder: 1\nsummary: s\ngoal: g\n---\n"


def test_bin_link_is_the_explorers_url_state() -> None:
    assert bin_link("E4M3FN/3.3") == "../widget/BinExplorer?format=E4M3FN&value=3.3"
    assert bin_link("e4m3fn/-27?convention=torch") == "../widget/BinExplorer?format=E4M3FN&value=-27&convention=torch"
    assert bin_link("BF16/0x1.8p3") == "../widget/BinExplorer?format=BF16&value=0x1.8p3"
    for bad, why in (("E4M3FN", "bin:FORMAT/VALUE"), ("NOPE/1", "NOPE"), ("E4M3FN/1?decode_scale=2", "decode_scale"),
                     ("E4M3FN/1?convention=nope", "nope"), ("/1", "bin:FORMAT/VALUE")):
        with pytest.raises(ValueError, match=why):
            bin_link(bad)


def test_a_lesson_renders_its_bin_links_and_refuses_bad_ones() -> None:
    blocks = render_blocks(parse_lesson(HEAD + "See [3.3](bin:E4M3FN/3.3?convention=torch).\n", path=Path("t.md")))
    (md,) = [b for b in blocks if isinstance(b, MarkdownBlock)]
    assert "](../widget/BinExplorer?format=E4M3FN&value=3.3&convention=torch)" in md.text
    with pytest.raises(LessonError, match="t.md:7"):
        render_blocks(parse_lesson(HEAD + "See [x](bin:E4M3FN/3.3?rounding=up).\n", path=Path("t.md")))


def test_site_links_keep_the_query_served_and_exported() -> None:
    text = "a [3.3](../widget/BinExplorer?format=E4M3FN&value=3.3) and [g](../glossary#e4m3fn)"
    served = site_links(text, 1, "")
    exported = site_links(text, 1, ".html")
    assert "](../widget/BinExplorer?format=E4M3FN&value=3.3)" in served
    assert "](../widget/BinExplorer.html?format=E4M3FN&value=3.3)" in exported
    assert "](../glossary.html#e4m3fn)" in exported
    assert "](widget/BinExplorer.html?format=E5M2&value=1#top)" in site_links(
        "[x](widget/BinExplorer?format=E5M2&value=1#top)", 0, ".html")


def test_every_bin_link_of_the_course_resolves_and_some_lessons_have_them() -> None:
    linked = []
    for lesson in load_lessons():
        for b in render_blocks(lesson):
            text = getattr(b, "text", "") or getattr(b, "solution", "") or ""
            for m in re.finditer(r"\]\(\.\./widget/BinExplorer\?([^)]*)\)", text):
                assert "format=" in m.group(1) and "value=" in m.group(1)
                linked.append(lesson.slug)
    assert len(set(linked)) >= 5, linked


def test_lesson_numbers_follow_the_order(tmp_path: Path) -> None:
    lessons = load_lessons()
    for lesson in lessons:
        assert lesson_number(lesson.slug) == lesson.order
    with pytest.raises(ValueError, match="no lesson"):
        lesson_number("no-such-lesson")
    with pytest.raises(LessonError, match="no lesson"):
        render_blocks(parse_lesson(HEAD + "See lesson {{ lesson:nope }}.\n", path=Path("01-t.md")))
    # a lesson file refers to its own course
    (tmp_path / "01-a.md").write_text(HEAD.replace("order: 1", "order: 2") + "x\n", encoding="utf-8")
    (tmp_path / "02-b.md").write_text(HEAD + "See lesson {{ lesson:a }}.\n", encoding="utf-8")
    (b,) = [x for x in load_lessons(tmp_path) if x.slug == "b"]
    (md,) = [x for x in render_blocks(b) if isinstance(x, MarkdownBlock)]
    assert "See lesson 2." in md.text
