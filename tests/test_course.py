"""The course as a course (issue 12): every lesson has one goal, predictions placed before a widget and
explained after it, two to four exercises with hints and a worked solution; every BinExplorer comes
with a question; every glossary term is defined in content/glossary.md and linked on its first use
in the course; the recompute lab walks every defect variant; no reader-facing text says a link was
not verified or quotes a percentage with false precision.

The first-use check scans the lessons in course order, body only (front matter is not prose), with
fenced code, inline code, directive lines, placeholders, link targets and headings left out; the
first occurrence of a term (whole word, plural allowed; case-sensitive for names with digits or
capitals inside, like E4M3FN or KV cache) must lie in the text of a link to `../glossary#<anchor>`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from lowprec.app.exercises import EXPLAIN_LEAD
from lowprec.app.lessons import (
    ExerciseBlock,
    ExplanationBlock,
    LabBlock,
    Lesson,
    MarkdownBlock,
    PredictionBlock,
    WidgetDirective,
    load_lessons,
    render_blocks,
)

ROOT = Path(__file__).resolve().parents[1]
LESSON_DIR = ROOT / "content" / "lessons"
GLOSSARY = ROOT / "content" / "glossary.md"
LESSONS = load_lessons(LESSON_DIR)
IDS = [lesson.slug for lesson in LESSONS]

#: every slug of the fifteen lessons before issue 12: each survives (other pages and tests link them)
SLUGS_BEFORE_ISSUE_12 = (
    "arithmetic-contract", "range-vs-resolution", "absorption-before-underflow", "moving-the-grid",
    "scale-grouping", "mxfp8-and-nvfp4", "when-the-scale-is-measured", "three-products",
    "sensitive-paths", "small-updates-and-state", "error-through-attention",
    "stateful-quantizers-under-recompute", "ptq-qat-fake-quant", "reading-published-recipes",
    "promoting-a-precision-change",
)
#: the recompute lab's steps, in order (lowprec.simulations.recompute.state.QUANTIZERS names)
LAB_STEPS = ("consume-after-advance", "recompute-mutates", "shared-state", "shared-state-snapshot",
             "stale-centre", "gate-asymmetry")


def _blocks(lesson: Lesson) -> list:  # type: ignore[type-arg]
    return render_blocks(lesson)


# ------------------------------------------------------------------------------------------------
# structure of every lesson
# ------------------------------------------------------------------------------------------------


def test_old_slugs_survive_and_orders_are_consecutive() -> None:
    slugs = [lesson.slug for lesson in LESSONS]
    assert set(SLUGS_BEFORE_ISSUE_12) <= set(slugs)
    orders = [lesson.order for lesson in LESSONS]
    # new lessons take their file number as order: numbers of lessons still being written may be
    # missing until the course's final order is settled (issue 31)
    assert orders[:22] == list(range(1, 23)) and orders == sorted(set(orders))
    # the primer comes before the lab, the seed-001 lesson after it
    assert slugs.index("activation-checkpointing") < slugs.index("stateful-quantizers-under-recompute")
    assert slugs.index("stateful-quantizers-under-recompute") < slugs.index("isfinite-is-not-a-test")


@pytest.mark.parametrize("lesson", LESSONS, ids=IDS)
def test_title_is_plain_text(lesson: Lesson) -> None:
    # page titles and listings print the title as written: no quotes, no HTML-special characters
    assert not re.search(r"[\"'<>&]", lesson.title), lesson.title


@pytest.mark.parametrize("lesson", LESSONS, ids=IDS)
def test_one_goal_sentence(lesson: Lesson) -> None:
    goal = lesson.goal.strip()
    assert goal.endswith("."), goal
    # one sentence: no sentence break inside
    assert not re.search(r"[.!?]\s+[A-Z]", goal[:-1]), goal
    assert len(goal.split()) <= 40, goal


@pytest.mark.parametrize("lesson", LESSONS, ids=IDS)
def test_predictions_come_before_a_widget_and_are_explained(lesson: Lesson) -> None:
    blocks = _blocks(lesson)
    predictions = [b for b in blocks if isinstance(b, PredictionBlock)]
    assert predictions, f"{lesson.slug} asks for no prediction"
    for p in predictions:
        start = blocks.index(p)
        explain = next(i for i, b in enumerate(blocks) if isinstance(b, ExplanationBlock) and b.id == p.id)
        between = blocks[start + 1:explain]
        assert any(isinstance(b, (WidgetDirective, LabBlock)) for b in between), (lesson.slug, p.id)
        assert not any(isinstance(b, (PredictionBlock, ExerciseBlock)) for b in between), (lesson.slug, p.id)
        assert blocks[explain].text.startswith(EXPLAIN_LEAD + ":"), (lesson.slug, p.id)


@pytest.mark.parametrize("lesson", LESSONS, ids=IDS)
def test_two_to_four_exercises_with_hints_and_solution(lesson: Lesson) -> None:
    exercises = [b for b in _blocks(lesson) if isinstance(b, ExerciseBlock)]
    assert 2 <= len(exercises) <= 4, (lesson.slug, len(exercises))
    for e in exercises:
        assert 1 <= len(e.hints) <= 2, (lesson.slug, e.id)
        assert all(h.strip() for h in e.hints)
        assert len(e.solution.split()) >= 5, (lesson.slug, e.id, e.solution)
        assert e.answer.source.startswith("example:")


@pytest.mark.parametrize("lesson", LESSONS, ids=IDS)
def test_an_exact_number_answer_is_shown_exactly(lesson: Lesson) -> None:
    """A learner who types the answer as the solution prints it must be right: an answer checked
    exactly has a text that parses back to the same number (units after a space are left out)."""
    for b in _blocks(lesson):
        if isinstance(b, (PredictionBlock, ExerciseBlock)) and b.answer.kind == "number":
            if b.answer.tolerance[0] == "exact":
                assert b.answer.check(b.answer.text.split()[0]), (lesson.slug, b.id, b.answer.text)


def _prediction_spans(blocks: list) -> list[tuple[int, int]]:  # type: ignore[type-arg]
    spans = []
    for i, b in enumerate(blocks):
        if isinstance(b, PredictionBlock):
            j = next(k for k, c in enumerate(blocks) if isinstance(c, ExplanationBlock) and c.id == b.id)
            spans.append((i, j))
    return spans


@pytest.mark.parametrize("lesson", LESSONS, ids=IDS)
def test_every_bin_explorer_comes_with_a_question(lesson: Lesson) -> None:
    blocks = _blocks(lesson)
    spans = _prediction_spans(blocks)
    for i, b in enumerate(blocks):
        if isinstance(b, WidgetDirective) and b.name == "BinExplorer":
            assert any(lo < i < hi for lo, hi in spans), f"{lesson.slug}:{b.line}: BinExplorer without a prediction"


def test_every_lesson_is_counted_in_the_course_totals() -> None:
    # a floor the course must not fall below (the counts are listed in the README's report)
    n_pred = sum(sum(isinstance(b, PredictionBlock) for b in _blocks(lesson)) for lesson in LESSONS)
    n_ex = sum(sum(isinstance(b, ExerciseBlock) for b in _blocks(lesson)) for lesson in LESSONS)
    assert n_pred >= len(LESSONS) and n_ex >= 2 * len(LESSONS)


# ------------------------------------------------------------------------------------------------
# the recompute lab and the seed-001 lesson
# ------------------------------------------------------------------------------------------------


def _lesson(slug: str) -> Lesson:
    return next(lesson for lesson in LESSONS if lesson.slug == slug)


def test_lab_walks_every_defect_variant_with_a_prediction_each() -> None:
    from lowprec.simulations.recompute.state import QUANTIZERS

    assert set(LAB_STEPS) <= set(QUANTIZERS)
    blocks = _blocks(_lesson("stateful-quantizers-under-recompute"))
    widgets = [b for b in blocks if isinstance(b, WidgetDirective) and b.name == "RecomputeDivergence"]
    assert [w.params.get("variant") for w in widgets] == list(LAB_STEPS)
    spans = _prediction_spans(blocks)
    for w in widgets:
        i = blocks.index(w)
        assert any(lo < i < hi for lo, hi in spans), w.params
    # each step's explanation names the fix
    explains = [b.text for b in blocks if isinstance(b, ExplanationBlock)]
    assert len(explains) == len(LAB_STEPS) and all("**Fix:**" in text for text in explains)
    text = _lesson("stateful-quantizers-under-recompute").text
    assert "never existed in the forward" in text  # why the gradient goes wrong
    for te_name in ("copy_forward_fp8_meta_tensors_for_recompute", "get_old_fp8_meta_tensors_for_recompute",
                    "restore_fp8_meta_tensors"):
        assert te_name in text


def test_lab_checklist_says_the_comparison_cannot_see_consume_after_advance() -> None:
    text = re.sub(r"\s+", " ", _lesson("stateful-quantizers-under-recompute").text)
    checklist = text[text.index("## Testing checklist"):]
    assert "cannot see consume-after-advance" in checklist


def test_seed_lesson_reproduces_the_table_and_computes_the_assertion() -> None:
    lesson = _lesson("isfinite-is-not-a-test")
    for label in ("1", "0_03", "0_02", "0_005"):
        for column in ("err_one_pct", "err_amax_pct", "ratio"):
            assert f"example:scale_one_table.{column}_{label}" in lesson.text
    assert "example:scale_one_table.n_text" in lesson.text and "‖x̂ − x‖ / ‖x‖" in lesson.text
    sources = {b.answer.source for b in _blocks(lesson) if isinstance(b, ExerciseBlock)}
    assert {"example:silent_scale.wrong_restore_caught_by", "example:silent_scale.silent_scale_caught_by",
            "example:stateful_recipes.classes"} <= sources
    assert "use_reentrant=True" in lesson.text
    # the wrong-restore question states the gradient magnitude its answer depends on (issue 31)
    wrong = next(b for b in _blocks(lesson) if isinstance(b, ExerciseBlock) and b.id == "wrong-restore")
    assert "standard deviation" in wrong.prompt and "0.0675" in wrong.prompt


def test_placement_lab_lesson_places_the_lab_after_a_prediction() -> None:
    blocks = _blocks(_lesson("te-placement-lab"))
    labs = [b for b in blocks if isinstance(b, LabBlock)]
    assert [b.name for b in labs] == ["te-placement"] and labs[0].locked_by == "inner-default"
    text = _lesson("te-placement-lab").text
    for needed in ("use_reentrant", "reduce_and_update_fp8_tensors", "process-wide buffer", "enabled=False",
                   "nullcontext", "columnwise", "collective", "self.training"):
        assert needed in text, needed
    hunt = [b for b in _blocks(_lesson("find-the-defect")) if isinstance(b, LabBlock)]
    assert [b.name for b in hunt] == ["defect-hunt"] and hunt[0].locked_by


# ------------------------------------------------------------------------------------------------
# reader-facing text
# ------------------------------------------------------------------------------------------------


def _rendered_text(lesson: Lesson) -> str:
    parts = []
    for b in _blocks(lesson):
        if isinstance(b, (MarkdownBlock, ExplanationBlock)):
            parts.append(b.text)
        elif isinstance(b, PredictionBlock):
            parts.append(b.question)
        elif isinstance(b, ExerciseBlock):
            parts.extend([b.prompt, *b.hints, b.solution])
    return "\n".join(parts)


@pytest.mark.parametrize("lesson", LESSONS, ids=IDS)
def test_no_unverified_links_and_no_false_precision(lesson: Lesson) -> None:
    text = _rendered_text(lesson)
    assert "not verified" not in text.lower()
    # a percentage quoted with three or more decimals claims more than any of our samples supports
    assert not re.search(r"\d\.\d{3,}\s?%", text), re.findall(r"\d\.\d{3,}\s?%", text)


def test_glossary_has_no_unverified_links() -> None:
    assert "not verified" not in GLOSSARY.read_text(encoding="utf-8").lower()


def test_precision_check_can_fail() -> None:
    assert re.search(r"\d\.\d{3,}\s?%", "clips 93.604 % of the values")
    assert not re.search(r"\d\.\d{3,}\s?%", "clips 94 % of the values")


# ------------------------------------------------------------------------------------------------
# the glossary: every term defined, linked on its first use
# ------------------------------------------------------------------------------------------------

_TERM_RE = re.compile(r"^###\s+(.+?)\s+\{#([a-z0-9-]+)\}\s*$")
_LINK_RE = re.compile(r"\[([^\]]+)\]\(([^)\s]+)\)")


@dataclass(frozen=True)
class Term:
    name: str
    anchor: str

    def pattern(self) -> re.Pattern[str]:
        exact = bool(re.search(r"\d", self.name)) or sum(c.isupper() for c in self.name) > 1
        words = r"\s+".join(re.escape(w) for w in self.name.split())
        return re.compile(r"(?<![\w-])" + words + r"(?:s|es)?(?![\w-])", 0 if exact else re.IGNORECASE)


def glossary_terms(text: str) -> list[Term]:
    terms = []
    for line in text.splitlines():
        m = _TERM_RE.match(line)
        if m:
            terms.append(Term(m.group(1), m.group(2)))
    return terms


TERMS = glossary_terms(GLOSSARY.read_text(encoding="utf-8"))


def test_glossary_format_and_anchors() -> None:
    text = GLOSSARY.read_text(encoding="utf-8")
    assert text.startswith("# Glossary\n")
    assert len(TERMS) >= 30
    anchors = [t.anchor for t in TERMS]
    assert len(anchors) == len(set(anchors))
    headings = [line for line in text.splitlines() if line.startswith("###")]
    assert len(headings) == len(TERMS), [h for h in headings if not _TERM_RE.match(h)]


def test_glossary_placeholders_resolve() -> None:
    from lowprec.app.lessons import parse_lesson

    text = GLOSSARY.read_text(encoding="utf-8")
    front = "---\ntitle: Glossary\norder: 1\nsummary: s\ngoal: g\n---\n"
    rendered = "".join(b.text for b in render_blocks(parse_lesson(front + text, slug="glossary"))
                       if isinstance(b, MarkdownBlock))
    assert "{{" not in rendered and "}}" not in rendered


def prose_with_spans(markdown: str) -> tuple[str, list[tuple[int, int, str]]]:
    """The prose of `markdown` with the same offsets (removed parts blanked): fenced code, inline
    code, directive lines, headings, placeholders and link targets blanked; and the (start, end,
    target) of every link's text."""
    out_lines = []
    in_fence = False
    for line in markdown.split("\n"):
        if re.match(r"^\s*(```|~~~)", line):
            in_fence = not in_fence
            out_lines.append(" " * len(line))
            continue
        if in_fence or line.lstrip().startswith(":::") or line.lstrip().startswith("#"):
            out_lines.append(" " * len(line))
            continue
        out_lines.append(line)
    text = "\n".join(out_lines)

    def blank(m: re.Match[str]) -> str:
        return " " * len(m.group(0))

    text = re.sub(r"`[^`\n]*`", blank, text)
    text = re.sub(r"\{\{.*?\}\}", blank, text)
    spans = []
    for m in _LINK_RE.finditer(text):
        spans.append((m.start(1), m.end(1), m.group(2)))
    # blank the link targets (and the brackets) but keep the link text in place
    text = _LINK_RE.sub(lambda m: " " + m.group(1) + " " * (len(m.group(0)) - len(m.group(1)) - 1), text)
    return text, spans


def first_use_problems(lessons: list[tuple[str, str]], terms: list[Term]) -> list[str]:
    """For each term: where its first use in the course is not a link to its glossary entry, or it
    is never used. `lessons` are (name, Markdown body) in course order."""
    scanned = [(name, *prose_with_spans(body)) for name, body in lessons]
    problems = []
    for term in terms:
        pat = term.pattern()
        for name, text, spans in scanned:
            m = pat.search(text)
            if m is None:
                continue
            link = next((s for s in spans if s[0] <= m.start() and m.end() <= s[1]), None)
            if link is None or link[2] != f"../glossary#{term.anchor}":
                line = text.count("\n", 0, m.start()) + 1
                problems.append(f"{name}: body line {line}: first use of {term.name!r} "
                                f"({m.group(0)!r}) is not linked to ../glossary#{term.anchor}")
            break
        else:
            problems.append(f"{term.name!r} is never used in the course")
    return problems


def test_every_glossary_term_is_linked_on_first_use() -> None:
    assert first_use_problems([(lesson.slug, lesson.text) for lesson in LESSONS], TERMS) == []


def test_every_glossary_link_names_an_entry() -> None:
    anchors = {t.anchor for t in TERMS}
    for lesson in LESSONS:
        for target in re.findall(r"\]\((\.\./glossary[^)]*)\)", lesson.text):
            assert re.fullmatch(r"\.\./glossary#[a-z0-9-]+", target), (lesson.slug, target)
            assert target.split("#")[1] in anchors, (lesson.slug, target)


def test_first_use_check_can_fail() -> None:
    terms = [Term("E4M3FN", "e4m3fn"), Term("Subnormal", "subnormal"), Term("NaN", "nan")]
    ok = [("a", "Use [E4M3FN](../glossary#e4m3fn) and [subnormals](../glossary#subnormal), then NaN."),
          ("b", "E4M3FN again, subnormal again.")]
    problems = first_use_problems(ok, terms)
    assert len(problems) == 1 and "first use of 'NaN'" in problems[0]
    # used first in the second lesson without a link
    bad = [("a", "Nothing here."), ("b", "An E4M3FN value.")]
    assert "b: body line 1: first use of 'E4M3FN'" in first_use_problems(bad, terms[:1])[0]
    # a link to the wrong entry, code spans and headings do not count, E4M3FNUZ is not E4M3FN
    tricky = [("a", "# E4M3FN\n`E4M3FN` and E4M3FNUZ and [E4M3FN](../glossary#e5m2)")]
    assert "not linked" in first_use_problems(tricky, terms[:1])[0]
    assert first_use_problems([("a", "no use")], terms[:1]) == ["'E4M3FN' is never used in the course"]
