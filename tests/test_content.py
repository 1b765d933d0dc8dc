"""The curriculum in content/lessons: every lesson renders, every directive names a known widget with
known parameters, every placeholder resolves, format names are spelled one way in prose, and widget
classes (when importable) accept the parameters the lessons give them.

A directive's parameters are the fields of the widget's config record (`WIDGET_PARAMS`, derived
from the registry); every widget is placed by some lesson.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from lowprec.course.lessons import (
    WIDGET_PARAMS,
    Lesson,
    LessonError,
    MarkdownBlock,
    WidgetDirective,
    load_lessons,
    parse_lesson,
    render_blocks,
)

ROOT = Path(__file__).resolve().parents[1]
LESSON_DIR = ROOT / "content" / "lessons"
LESSON_FILES = sorted(LESSON_DIR.glob("*.md"))

# widget name -> parameter names lessons may set (the shared app convention)

# canonical spellings of format names in prose; longest first so E4M3FNUZ wins over E4M3FN and E4M3
CANONICAL_NAMES = sorted(
    [
        "E4M3FNUZ", "E5M2FNUZ", "E4M3FN", "E4M3", "E5M2", "E2M1", "E8M0", "E3M2", "E2M3",
        "BF16", "FP16", "FP32", "FP8", "FP4", "INT8", "INT4", "MXFP8", "MXFP6", "MXFP4", "NVFP4",
    ],
    key=len,
    reverse=True,
)
# library/dtype spellings that belong in code spans only
CODE_ONLY_NAMES = ["bfloat16", "float16", "float32", "float8_e4m3fn", "float8_e5m2", "float4_e2m1fn"]

_NAME_RE = re.compile(
    r"(?<![A-Za-z0-9_])(" + "|".join(CANONICAL_NAMES + CODE_ONLY_NAMES) + r")(?![A-Za-z0-9_])",
    re.IGNORECASE,
)


def _lesson(path: Path) -> Lesson:
    return parse_lesson(path.read_text(encoding="utf-8"), slug=path.stem, path=path)


def prose_only(markdown: str) -> str:
    """The text of `markdown` outside fenced code, inline code spans, directive lines, placeholders
    and link targets, with line structure kept (removed parts become spaces)."""
    out: list[str] = []
    in_fence = False
    lines = markdown.splitlines()
    if lines and lines[0].strip() == "---" and "---" in [x.strip() for x in lines[1:]]:
        # front matter: its objectives name block ids (nvfp4-bits), not formats
        end = 1 + [x.strip() for x in lines[1:]].index("---")
        out.extend([""] * (end + 1))
        lines = lines[end + 1:]
    for line in lines:
        if re.match(r"^\s*(```|~~~)", line):
            in_fence = not in_fence
            out.append("")
            continue
        if in_fence or line.lstrip().startswith(":::"):
            out.append("")
            continue
        line = re.sub(r"`[^`]*`", " ", line)
        line = re.sub(r"\{\{.*?\}\}", " ", line)
        line = re.sub(r"\]\([^)]*\)", "] ", line)
        out.append(line)
    return "\n".join(out)


def misspelled_format_names(markdown: str) -> list[str]:
    """Every format name in prose that is not written in its canonical spelling."""
    canonical = {name.upper(): name for name in CANONICAL_NAMES}
    bad: list[str] = []
    for match in _NAME_RE.finditer(prose_only(markdown)):
        word = match.group(1)
        if word.lower() in CODE_ONLY_NAMES or canonical.get(word.upper()) != word:
            bad.append(word)
    return bad


# ------------------------------------------------------------------------------------------------


def test_lessons_in_order() -> None:
    lessons = load_lessons(LESSON_DIR)
    assert len(lessons) == len(LESSON_FILES) >= 26
    assert [lesson.order for lesson in lessons] == list(range(1, len(lessons) + 1))
    assert lessons[0].slug == "arithmetic-contract"
    assert all(lesson.title and lesson.summary and lesson.goal for lesson in lessons)
    # the file prefix NN is the file's number (unique, kept when the course is reordered, so that
    # branches editing a lesson merge), the front matter's order its place in the course
    prefixes = [p.name.split("-", 1)[0] for p in LESSON_FILES]
    assert all(re.fullmatch(r"\d{2}", x) for x in prefixes) and len(set(prefixes)) == len(prefixes)


@pytest.mark.parametrize("path", LESSON_FILES, ids=[p.stem for p in LESSON_FILES])
def test_lesson_renders_with_every_placeholder_resolved(path: Path) -> None:
    blocks = render_blocks(_lesson(path))
    markdown = "".join(b.text for b in blocks if isinstance(b, MarkdownBlock))
    assert "{{" not in markdown and "}}" not in markdown
    assert not any(line.lstrip().startswith(":::") for line in markdown.splitlines())
    # every lesson teaches with at least one widget or one live number
    source = path.read_text(encoding="utf-8")
    has_widget = any(isinstance(b, WidgetDirective) for b in blocks)
    assert has_widget or "{{ example:" in source


@pytest.mark.parametrize("path", LESSON_FILES, ids=[p.stem for p in LESSON_FILES])
def test_directives_use_the_widget_contract(path: Path) -> None:
    for block in render_blocks(_lesson(path)):
        if isinstance(block, WidgetDirective):
            assert block.name in WIDGET_PARAMS, f"{path.name}:{block.line}: {block.name}"
            unknown = set(block.params) - set(WIDGET_PARAMS[block.name])
            assert not unknown, f"{path.name}:{block.line}: {block.name} has no parameter(s) {unknown}"


@pytest.mark.parametrize("path", LESSON_FILES, ids=[p.stem for p in LESSON_FILES])
def test_format_names_are_spelled_one_way(path: Path) -> None:
    assert misspelled_format_names(path.read_text(encoding="utf-8")) == []


def test_spelling_check_can_fail() -> None:
    assert misspelled_format_names("Cast to e4m3fn, then Bf16 and fp8.") == ["e4m3fn", "Bf16", "fp8"]
    assert misspelled_format_names("Cast with bfloat16 here.") == ["bfloat16"]
    assert misspelled_format_names("E4M3FN and `float8_e4m3fn` and `e5m2`") == []
    assert misspelled_format_names("```\nx.to(torch.bfloat16)\n```\n") == []
    assert misspelled_format_names("{{ example:e4m3fn_range }} and [doc](https://x/e5m2)") == []
    assert misspelled_format_names("::: widget BinExplorer format=e5m2") == []


def test_unknown_placeholders_and_widgets_fail() -> None:
    head = "---\ntitle: t\norder: 1\nsummary: s\ngoal: g\n---\n"
    with pytest.raises(LessonError, match="no_such_example"):
        render_blocks(parse_lesson(head + "x {{ example:no_such_example }}\n", path=Path("t.md")))
    with pytest.raises(LessonError, match="no_such_field"):
        render_blocks(parse_lesson(head + "x {{ example:weight_memory.no_such_field }}\n", path=Path("t.md")))
    with pytest.raises(LessonError, match="unknown widget"):
        parse_lesson(head + "::: widget NoSuchWidget\n", path=Path("t.md"))


def _all_directives() -> list[tuple[str, WidgetDirective]]:
    out: list[tuple[str, WidgetDirective]] = []
    for path in LESSON_FILES:
        for block in render_blocks(_lesson(path)):
            if isinstance(block, WidgetDirective):
                out.append((f"{path.stem}:{block.line}", block))
    return out


@pytest.mark.parametrize("widget", sorted(WIDGET_PARAMS))
def test_widget_classes_accept_directive_params(widget: str) -> None:
    """Each directive's parameters pass the widget's own param validation, and the widget built
    with them shows no "Invalid" message (the widget's `error` text stays empty)."""
    from lowprec.app.widgets import get_widget_class

    cls: Any = get_widget_class(widget)
    for where, directive in _all_directives():
        if directive.name != widget:
            continue
        for key, value in directive.params.items():
            assert key in cls.param, f"{where}: {widget} has no param {key!r}"
            try:
                cls.param[key]._validate(value)
            except ValueError as exc:  # param raises ValueError for out-of-range / not-an-option
                pytest.fail(f"{where}: {widget}.{key}={value!r} rejected: {exc}")
        instance = cls(**directive.params)
        error = getattr(instance, "error", "")
        assert not error, f"{where}: {widget}({directive.params}) shows {error!r}"


def test_every_widget_appears_in_some_lesson() -> None:
    used = {d.name for _, d in _all_directives()}
    assert used == set(WIDGET_PARAMS)


def test_lessons_link_their_sources() -> None:
    # publications quoted in the lessons keep a link next to the claim
    text = "\n".join(p.read_text(encoding="utf-8") for p in LESSON_FILES)
    for needle in ("arxiv.org/abs/1712.05877", "pytorch.org/docs/stable/checkpoint.html", "opencompute.org",
                   "arxiv.org/abs/2412.19437", "TransformerEngine/pull/3284"):
        assert needle in text


# Every link a lesson carries was checked against the publication (issue 12 with the search tool: the
# Transformer Engine API page and pull requests, the DeepSeek-V3 report, LLM.int8()); a new link must
# be added here after checking it. A source whose address cannot be checked is not quoted.
VERIFIED_LINKS = {
    "https://arxiv.org/abs/2209.05433",  # Micikevicius et al., FP8 Formats for Deep Learning
    "https://arxiv.org/abs/1710.03740",  # Micikevicius et al., Mixed Precision Training
    "https://arxiv.org/abs/1712.05877",  # Jacob et al., integer-arithmetic-only inference
    "https://arxiv.org/abs/2208.07339",  # Dettmers et al., LLM.int8(): outlier features
    "https://arxiv.org/abs/2412.19437",  # DeepSeek-V3 technical report (§3.3.2: ~14-bit FP8 accumulation)
    "https://arxiv.org/abs/2509.25149",  # NVIDIA, Pretraining Large Language Models with NVFP4
    "https://docs.nvidia.com/deeplearning/transformer-engine/user-guide/examples/fp8_primer.html",
    "https://docs.nvidia.com/deeplearning/transformer-engine/user-guide/api/common.html",  # DelayedScaling
    "https://www.opencompute.org/documents/ocp-microscaling-formats-mx-v1-0-spec-final-pdf",
    "https://developer.nvidia.com/blog/introducing-nvfp4-for-efficient-and-accurate-low-precision-inference/",
    "https://pytorch.org/docs/stable/checkpoint.html",
    "https://pytorch.org/docs/stable/generated/torch.ao.quantization.fake_quantize.FakeQuantize.html",
    "https://github.com/NVIDIA/TransformerEngine",
    "https://github.com/NVIDIA/TransformerEngine/pull/24",  # FP8 meta stash for full activation recompute
    "https://github.com/NVIDIA/TransformerEngine/pull/3284",  # Preserve FP8 recompute state for inner autocast
    "https://arxiv.org/abs/2511.10909",  # Xie, Wang, Yang, Yang, MMA-Sim: bit-accurate tensor-core models
    "https://github.com/NVIDIA/TransformerEngine/pull/74",  # sequence-parallel amax reduction fix
    "https://github.com/NVIDIA/TransformerEngine/pull/825",  # Avoid amax roll for non-run modules
    "https://github.com/NVIDIA/TransformerEngine/issues/539",  # FP8+PP+Recompute+GA>1, loss = nan
    "https://github.com/NVIDIA/TransformerEngine/issues/1047",  # Bug in FP8 buffer update (cached weights, TE 1.7)
    "https://github.com/NVIDIA/Megatron-LM/pull/7538",  # Restore the forward's FP8 autocast state in recompute
    "https://github.com/marin-community/marin/issues/7659",  # Gradient accumulation drops the fp8 amax history
    "https://github.com/sgl-project/sglang/issues/39193",  # FP32 scales truncated to their exponent by a UE8M0 kernel
}


def test_every_link_is_a_verified_one() -> None:
    text = "\n".join(p.read_text(encoding="utf-8") for p in LESSON_FILES)
    links = set(re.findall(r"https?://[^\s)\]>\"']+", text))
    assert links, "no links found: the pattern is broken"
    assert links <= VERIFIED_LINKS, sorted(links - VERIFIED_LINKS)


def test_no_source_is_quoted_without_a_checked_link() -> None:
    text = "\n".join(p.read_text(encoding="utf-8") for p in LESSON_FILES)
    assert "not verified" not in text.lower()
    # the reports of seed 000 whose addresses could not be checked are no longer named
    for source in ("MAI-Thinking-1", "Gemma 4", "DeepSeek-V4.1", "kexue.fm"):
        assert source not in text, source
