"""Unit tests of the lesson parser (course/lessons.py): front matter, directives, placeholders, loading.

Placeholders are resolved here through a recording fake resolver, so these tests exercise the parser
alone; tests/test_content.py renders the real lessons against course.examples.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from lowprec.course.lessons import (
    WIDGET_PARAMS,
    Lesson,
    LessonError,
    MarkdownBlock,
    WidgetDirective,
    load_lessons,
    parse_directive,
    parse_lesson,
    placeholders,
    render_blocks,
)

FRONT = "---\ntitle: A title\norder: 4\nsummary: One line.\ngoal: Do one thing.\n---\n"


def fake(name: str, field: str | None) -> str:
    return f"<{name}:{field}>"


def test_front_matter_fields_and_body() -> None:
    lesson = parse_lesson(FRONT + "Body line\n", slug="s", path=Path("x.md"))
    assert (lesson.title, lesson.order, lesson.summary, lesson.slug) == ("A title", 4, "One line.", "s")
    assert lesson.text == "Body line\n"
    assert lesson.body_line == 7  # six front matter lines precede the body
    assert lesson.path == Path("x.md")


def test_front_matter_quoted_values_are_unquoted() -> None:
    lesson = parse_lesson('---\ntitle: "Range: vs resolution"\norder: 2\nsummary: \'s\'\ngoal: g\n---\n')
    assert lesson.title == "Range: vs resolution"
    assert lesson.summary == "s"


@pytest.mark.parametrize(
    "text, needle",
    [
        ("no front matter\n", "must start"),
        ("---\ntitle: t\norder: 1\nsummary: s\n", "not closed"),
        ("---\ntitle: t\norder: one\nsummary: s\ngoal: g\n---\n", "order must be an integer"),
        ("---\ntitle: t\nsummary: s\ngoal: g\n---\n", "lacks order"),
        ("---\ntitle: t\norder: 1\nsummary: s\ngoal: g\nauthor: me\n---\n", "unknown front matter key 'author'"),
        ("---\ntitle: t\ntitle: u\norder: 1\nsummary: s\ngoal: g\n---\n", "given twice"),
        ("---\ntitle t\norder: 1\nsummary: s\ngoal: g\n---\n", "not 'key: value'"),
    ],
)
def test_bad_front_matter_names_file_and_line(text: str, needle: str) -> None:
    with pytest.raises(LessonError, match=needle) as info:
        parse_lesson(text, path=Path("bad.md"))
    assert "bad.md:" in str(info.value)


def test_directive_values_are_typed_from_the_widget_defaults() -> None:
    d = parse_directive(
        '::: widget BinExplorer format=E5M2 value=3.30 decode_scale=2 overflow=""', path=None, line=7
    )
    # text parameters keep the spelling (3.30, not 3.3); an integer for a float parameter becomes float
    assert d == WidgetDirective("BinExplorer", {"format": "E5M2", "value": "3.30", "decode_scale": 2.0, "overflow": ""}, 7)
    assert type(d.params["decode_scale"]) is float
    d = parse_directive("::: widget AttentionRounding seq=64 renormalize=true temperature=0.5")
    assert d.params == {"seq": 64, "renormalize": True, "temperature": 0.5}
    assert type(d.params["seq"]) is int and d.params["renormalize"] is True
    d = parse_directive('::: widget BinExplorer value="1e-8" format=BF16')
    assert d.params == {"value": "1e-8", "format": "BF16"}
    d = parse_directive("::: widget BinExplorer value=0x1.8p3")
    assert d.params == {"value": "0x1.8p3"}
    d = parse_directive("::: widget BlockFormats recipe=NVFP4 transposed_view=true")
    assert d.params == {"recipe": "NVFP4", "transposed_view": True}


@pytest.mark.parametrize(
    "line, needle",
    [
        ("::: widget NoSuchWidget", "unknown widget 'NoSuchWidget'"),
        ("::: widget BinExplorer colour=red", "no parameter 'colour'"),
        ("::: widget BinExplorer format=E5M2 format=E4M3FN", "given twice"),
        ("::: widget DelayedSpike history=1.5", "must be an integer"),
        ("::: widget DelayedSpike spike=big", "must be a number"),
        ("::: widget BlockFormats hadamard=1", "must be true or false"),
        ("::: widget BlockFormats transposed_view=yes", "must be true or false"),
        ("::: widget BinExplorer format", "malformed parameter"),
        ('::: widget BinExplorer value="open', "malformed parameter"),
        ("::: gadget BinExplorer", "malformed directive"),
        (":::widget", "malformed directive"),
    ],
)
def test_bad_directives_raise(line: str, needle: str) -> None:
    with pytest.raises(LessonError, match=needle) as info:
        parse_directive(line, path=Path("l.md"), line=12)
    assert "l.md:12" in str(info.value)


def test_bad_directive_fails_at_parse_time_with_file_line() -> None:
    text = FRONT + "intro\n\n::: widget Nope\n"
    with pytest.raises(LessonError, match=r"les\.md:9: unknown widget"):
        parse_lesson(text, path=Path("les.md"))


def test_render_splits_markdown_and_directives_in_order() -> None:
    text = FRONT + "First {{ example:alpha }} and {{example:beta.gamma}}.\n\n::: widget Conventions format=E5M2\n\nAfter.\n"
    blocks = render_blocks(parse_lesson(text), resolve=fake)
    assert blocks == [
        MarkdownBlock("First <alpha:None> and <beta:gamma>.\n", 7),
        WidgetDirective("Conventions", {"format": "E5M2"}, 9),
        MarkdownBlock("After.\n", 10),
    ]


def test_directives_inside_fenced_code_stay_text() -> None:
    text = FRONT + "```\n::: widget Nope\n```\n"
    blocks = render_blocks(parse_lesson(text), resolve=fake)
    assert blocks == [MarkdownBlock("```\n::: widget Nope\n```\n", 7)]


def test_placeholder_errors_name_file_and_line() -> None:
    def refuse(name: str, field: str | None) -> str:
        raise KeyError(f"no example {name!r}")

    lesson = parse_lesson(FRONT + "ok\n{{ example:missing }}\n", path=Path("p.md"))
    with pytest.raises(LessonError, match=r"p\.md:8: cannot resolve placeholder example:missing"):
        render_blocks(lesson, resolve=refuse)
    for bad in ("{{ missing }}", "{{ example: }}", "{{ example:a.b.c }}", "{{ example:a"):
        with pytest.raises(LessonError, match=r"p\.md:7"):
            render_blocks(parse_lesson(FRONT + bad + "\n", path=Path("p.md")), resolve=fake)


def test_placeholders_lists_references() -> None:
    assert placeholders("a {{ example:x }} b {{example:y.z}}") == [("x", None), ("y", "z")]
    with pytest.raises(LessonError, match=r"malformed placeholder '\{\{ nope \}\}'"):
        placeholders("{{ nope }}")


def test_load_lessons_sorts_by_order_and_strips_prefix(tmp_path: Path) -> None:
    (tmp_path / "02-second.md").write_text("---\ntitle: B\norder: 2\nsummary: s\ngoal: g\n---\nb\n")
    (tmp_path / "10-first.md").write_text("---\ntitle: A\norder: 1\nsummary: s\ngoal: g\n---\na\n")
    (tmp_path / "notes.txt").write_text("ignored")
    lessons = load_lessons(tmp_path)
    assert [(l.slug, l.order) for l in lessons] == [("first", 1), ("second", 2)]
    assert all(isinstance(l, Lesson) and l.path is not None for l in lessons)


def test_load_lessons_reads_a_changed_file_again(tmp_path: Path) -> None:
    """The parsed lessons are kept between calls (every served page asks for them) but never
    outlive their files: an edited, added or removed lesson shows at the next call, and the
    caller's list is its own."""
    import os

    first = tmp_path / "01-a.md"
    first.write_text("---\ntitle: A\norder: 1\nsummary: s\ngoal: g\n---\na\n")
    lessons = load_lessons(tmp_path)
    assert [l.title for l in lessons] == ["A"]
    lessons.clear()  # the caller's copy
    assert [l.title for l in load_lessons(tmp_path)] == ["A"]
    first.write_text("---\ntitle: Changed\norder: 1\nsummary: s\ngoal: g\n---\na\n")
    stat = first.stat()
    os.utime(first, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))  # a later mtime, whatever the clock
    assert [l.title for l in load_lessons(tmp_path)] == ["Changed"]
    (tmp_path / "02-b.md").write_text("---\ntitle: B\norder: 2\nsummary: s\ngoal: g\n---\nb\n")
    assert [l.title for l in load_lessons(tmp_path)] == ["Changed", "B"]
    first.unlink()
    assert [l.title for l in load_lessons(tmp_path)] == ["B"]


def test_load_lessons_rejects_duplicate_order(tmp_path: Path) -> None:
    (tmp_path / "01-a.md").write_text("---\ntitle: A\norder: 1\nsummary: s\ngoal: g\n---\n")
    (tmp_path / "02-b.md").write_text("---\ntitle: B\norder: 1\nsummary: s\ngoal: g\n---\n")
    with pytest.raises(LessonError, match="order 1 also used"):
        load_lessons(tmp_path)


def test_load_lessons_missing_folder(tmp_path: Path) -> None:
    with pytest.raises(LessonError, match="does not exist"):
        load_lessons(tmp_path / "nothing")


def test_widget_table_matches_the_shared_contract() -> None:
    # the widget names every lesson directive may use (the list agreed with the app helpers)
    assert set(WIDGET_PARAMS) == {
        "BinExplorer", "BinChallenge", "Conventions", "DelayedSpike", "AttentionRounding",
        "RecomputeDivergence", "ScaleGrouping", "BlockFormats", "RecipeLab", "Accumulator", "WhoseAmax",
    }


def test_the_app_draws_exactly_the_widgets_a_lesson_may_place() -> None:
    """The widget registry's two halves (issue 27.7): the course's `WIDGET_RECORDS` (what a directive
    may place, with its record; the parser needs no app import) and the app's `WIDGETS` (how each
    is drawn), keyed by the same names; the app's record of a widget is the course's."""
    from lowprec.app.widgets import WIDGETS
    from lowprec.config import fields_of
    from lowprec.course.placeable import WIDGET_RECORDS, widget_record

    assert list(WIDGETS) == list(WIDGET_RECORDS) == list(WIDGET_PARAMS)
    for name, entry in WIDGETS.items():
        assert entry.config == WIDGET_RECORDS[name] and entry.config_class() is widget_record(name)
        assert WIDGET_PARAMS[name] == {k.name: k.default for k in fields_of(widget_record(name))}
    with pytest.raises(ValueError, match="unknown widget 'Nope'; known widgets: BinExplorer, "):
        widget_record("Nope")


def test_the_app_refuses_to_import_when_the_halves_disagree() -> None:
    import subprocess
    import sys

    code = ("from lowprec.course import placeable\n"
            "placeable.WIDGET_RECORDS['Extra'] = 'lowprec.simulations.studies.spike:SpikeConfig'\n"
            "import lowprec.app.widgets\n")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert run.returncode != 0
    assert "ImportError: lowprec.app.widgets draws BinExplorer" in run.stderr
    assert "lists BinExplorer, " in run.stderr and "WhoseAmax, Extra" in run.stderr


def test_byte_order_mark_and_crlf_are_accepted() -> None:
    lesson = parse_lesson("\ufeff" + FRONT.replace("\n", "\r\n") + "Body\r\n")
    assert lesson.title == "A title" and lesson.text == "Body\n"
