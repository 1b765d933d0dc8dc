"""Lesson files: parse `content/lessons/NN-slug.md` into front matter, Markdown and widget directives.

This module owns the lesson source format and nothing that draws (pure Python, no Panel import).
A lesson file starts with front matter between two `---` lines (`title`, `order` — an integer —,
`summary` and `goal` — one sentence: what the learner can do after the lesson —, each
`key: value`), followed by Markdown. A line of the form
`::: widget Name key=value ...` (outside fenced code) places a widget; `Name` must be one of
`WIDGET_PARAMS` and every key one of that widget's parameters. Directive values parse as int,
float, `true`/`false`, else text; a value quoted with `"..."` is always text, and a parameter whose
default is text always receives the value exactly as written (so `value=3.30` reaches BinExplorer as
`"3.30"`); an integer given for a float parameter becomes a float. A placeholder
`{{ example:NAME }}` or `{{ example:NAME.FIELD }}` anywhere in the Markdown (code included) is
replaced by `course.examples.example(NAME).format(FIELD)` at render time, so the prose cannot
disagree with the code; `{{ lesson:SLUG }}` is replaced by that lesson's number in the course (its
`order`), so a reference survives a reordering. Blocks `::: predict ID` / `::: explain ID` / `::: exercise ID` … `:::`
(syntax and records in `lowprec.course.lesson_blocks`, reference in `content/README.md`) ask the
learner: a prediction before the widget that follows it (answered, it reveals the widget and its
explanation), exercises with computed answers. A line `::: lab NAME key=value ...` places a lab
(`course.lesson_labs.LABS`: a lesson component whose data a simulation computes, drawn in the browser,
the same served and exported); a lab counts as the widget a prediction unlocks. The optional front
matter key `objectives` lists, one per line (`  - text [id, id]`), what the goal asks of the learner
and the exercises (and predictions) that check each part. A Markdown link whose target is
`bin:FORMAT/VALUE` (optionally `?convention=torch&decode_scale=...`, any parameter of the bin
explorer) becomes a link to the bin explorer showing that value (`bin_link`). Every problem raises
`LessonError` (a `ValueError`) naming the file and line.
"""

from __future__ import annotations

import contextvars
import functools
import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Union
from urllib.parse import parse_qsl, quote, urlencode

from lowprec.config import fields_of
from lowprec.course.placeable import WIDGET_RECORDS, widget_record

from lowprec.course.lesson_files import DEFAULT_ROOT, LessonFolderError, check_lesson_folder, lesson_paths, slug_of
from lowprec.course.lesson_labs import LABS
from lowprec.course.lesson_blocks import (
    CLOSE_RE,
    LabBlock,
    OPEN_RE,
    BlockError,
    ExerciseBlock,
    ExplanationBlock,
    PredictionBlock,
    RawBlock,
    ValueResolver,
    read_block,
    resolve_answer,
)

__all__ = [
    "Block",
    "DEFAULT_ROOT",
    "LabBlock",
    "Objective",
    "ExerciseBlock",
    "ExplanationBlock",
    "PredictionBlock",
    "WIDGET_PARAMS",
    "Lesson",
    "LessonError",
    "MarkdownBlock",
    "WidgetDirective",
    "bin_link",
    "check_lesson_folder",
    "interactive_blocks",
    "lesson_number",
    "load_lessons",
    "parse_directive",
    "parse_lesson",
    "placeholders",
    "render_blocks",
]


ParamValue = Union[str, int, float, bool]

def _widget_params() -> dict[str, dict[str, ParamValue]]:
    return {name: {k.name: k.default for k in fields_of(widget_record(name))} for name in WIDGET_RECORDS}


class _WidgetParams(Mapping[str, dict[str, ParamValue]]):
    """`_widget_params()`, computed on first use: the config records behind it import numpy,
    ml_dtypes and the simulations, which the outline of `lowprec lessons` does not need
    (`outline_only`)."""

    def __init__(self) -> None:
        self._data: dict[str, dict[str, ParamValue]] | None = None

    def _load(self) -> dict[str, dict[str, ParamValue]]:
        if self._data is None:
            self._data = _widget_params()
        return self._data

    def __getitem__(self, name: str) -> dict[str, ParamValue]:
        return self._load()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._load())

    def __len__(self) -> int:
        return len(self._load())


# Widgets a lesson may place, with their parameters and default values (the default's type is the
# parameter's type), derived from their config records (`course.placeable.WIDGET_RECORDS`).
WIDGET_PARAMS: Mapping[str, dict[str, ParamValue]] = _WidgetParams()

#: whether a directive's parameters are checked against WIDGET_PARAMS as it is parsed (`outline_only`)
_CHECK_PARAMS: contextvars.ContextVar[bool] = contextvars.ContextVar("lowprec_check_directive_params",
                                                                     default=True)


@contextmanager
def outline_only() -> Iterator[None]:
    """Parse lessons for their outline only: a directive's widget name is checked against the
    widget registry (light) and its parameters are read but not checked against the widgets'
    config records, so nothing imports numpy or the simulations (`lowprec lessons` lists a cold
    course in a fraction of the time; issue 33). Lessons parsed so are cached apart."""
    token = _CHECK_PARAMS.set(False)
    try:
        yield
    finally:
        _CHECK_PARAMS.reset(token)

FRONT_MATTER_KEYS = ("title", "order", "summary", "goal")
#: optional front matter keys whose value is a list (`key:` then lines `  - item`)
FRONT_MATTER_LISTS = ("objectives",)

_DIRECTIVE_RE = re.compile(r"^:::\s*widget\s+([A-Za-z_]\w*)\s*(.*?)\s*$")
_LAB_RE = re.compile(r"^:::\s*lab\s+([a-z][a-z0-9-]*)\s*(.*?)\s*$")
_OBJECTIVE_RE = re.compile(r"^(.*\S)\s*\[([a-z0-9][a-z0-9-]*(?:\s*,\s*[a-z0-9][a-z0-9-]*)*)\]\s*$")
_BIN_LINK_RE = re.compile(r"\]\(bin:([^)\s]*)\)")
#: where a bin link points (a lesson lives at /lesson/<slug>: `../widget/...` is the widget page)
BIN_EXPLORER_ROUTE = "../widget/BinExplorer"
_PARAM_RE = re.compile(r'\s*([A-Za-z_]\w*)=(?:"([^"]*)"|([^\s"]+))')
_PLACEHOLDER_RE = re.compile(r"\{\{(.*?)\}\}")
_PLACEHOLDER_BODY_RE = re.compile(r"^\s*example:([A-Za-z_]\w*)(?:\.([A-Za-z_]\w*))?\s*$")
_LESSON_REF_RE = re.compile(r"^\s*lesson:([a-z0-9][a-z0-9-]*)\s*$")
_INT_RE = re.compile(r"^[+-]?\d+$")
_FLOAT_RE = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$")
_FENCE_RE = re.compile(r"^\s*(```|~~~)")


class LessonError(ValueError):
    """A malformed lesson: bad front matter, unknown widget or parameter, unresolvable placeholder."""


@dataclass(frozen=True)
class Lesson:
    """One lesson file. `text` is the Markdown body after the front matter; `body_line` is the
    1-based line number of the body's first line in the file (for error messages)."""

    slug: str  # file name without the order prefix and extension: "arithmetic-contract"
    title: str
    order: int  # position in the course; lessons sort by it
    summary: str  # one sentence for the landing page
    path: Path | None  # the file it came from, None when parsed from a string
    text: str  # Markdown body with directives and unresolved placeholders
    body_line: int = 1
    goal: str = ""  # one sentence: what the learner can do after the lesson
    predictions: tuple[str, ...] = ()  # ids of its predictions, in order
    exercises: tuple[str, ...] = ()  # ids of its exercises, in order
    objectives: tuple["Objective", ...] = ()  # the parts of the goal and what checks each


@dataclass(frozen=True)
class Objective:
    """One part of a lesson's goal and the ids of the blocks (exercises, predictions) that check it."""

    text: str
    checked_by: tuple[str, ...]


@dataclass(frozen=True)
class MarkdownBlock:
    """A run of Markdown with its placeholders already replaced by computed values."""

    text: str
    line: int = 1  # file line of the block's first line


@dataclass(frozen=True)
class WidgetDirective:
    """A widget to place: class name and keyword parameters (typed, checked against WIDGET_PARAMS)."""

    name: str
    params: dict[str, ParamValue] = field(default_factory=dict)
    line: int = 1  # file line of the directive


Resolver = Callable[[str, Union[str, None]], str]


def _where(path: Path | None, line: int) -> str:
    return f"{path if path is not None else '<lesson>'}:{line}"


def parse_lesson(text: str, slug: str = "", path: Path | None = None) -> Lesson:
    """Split front matter from body and check the front matter; directives are checked here too,
    placeholders only at render time (they need `course.examples`)."""
    if not isinstance(text, str):
        raise TypeError(f"lesson text must be str, got {type(text).__name__}")
    lines = text.removeprefix("\ufeff").splitlines()
    if not lines or lines[0].strip() != "---":
        raise LessonError(f"{_where(path, 1)}: a lesson must start with a '---' front matter line")
    meta: dict[str, str] = {}
    lists: dict[str, list[tuple[int, str]]] = {}
    open_list: str | None = None
    end = None
    for i, line in enumerate(lines[1:], start=2):
        if line.strip() == "---":
            end = i
            break
        if not line.strip():
            continue
        if open_list is not None and line[:1].isspace():
            stripped = line.strip()
            if stripped.startswith("- "):
                lists[open_list].append((i, stripped[2:].strip()))
            elif lists[open_list]:  # a continuation of the item above
                at, text = lists[open_list][-1]
                lists[open_list][-1] = (at, f"{text} {stripped}")
            else:
                raise LessonError(f"{_where(path, i)}: {open_list} lists items as lines '  - text [id]'")
            continue
        open_list = None
        key, sep, value = line.partition(":")
        key = key.strip()
        if not sep or not key:
            raise LessonError(f"{_where(path, i)}: front matter line {line!r} is not 'key: value'")
        if key in FRONT_MATTER_LISTS:
            if key in lists or value.strip():
                raise LessonError(f"{_where(path, i)}: {key} is given once, as a list of lines '  - text [id]'")
            lists[key] = []
            open_list = key
            continue
        if key not in FRONT_MATTER_KEYS:
            raise LessonError(
                f"{_where(path, i)}: unknown front matter key {key!r}; allowed: "
                f"{', '.join(FRONT_MATTER_KEYS + FRONT_MATTER_LISTS)}"
            )
        if key in meta:
            raise LessonError(f"{_where(path, i)}: front matter key {key!r} given twice")
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            value = value[1:-1]
        meta[key] = value
    if end is None:
        raise LessonError(f"{_where(path, 1)}: front matter is not closed by a '---' line")
    missing = [k for k in FRONT_MATTER_KEYS if not meta.get(k)]
    if missing:
        raise LessonError(f"{_where(path, 1)}: front matter lacks {', '.join(missing)}")
    try:
        order = int(meta["order"])
    except ValueError:
        raise LessonError(f"{_where(path, 1)}: order must be an integer, got {meta['order']!r}") from None
    objectives = []
    for at, entry in lists.get("objectives", []):
        m = _OBJECTIVE_RE.match(entry)
        if m is None:
            raise LessonError(f"{_where(path, at)}: an objective is 'text [id, id]' (the blocks that check it); "
                              f"got {entry!r}")
        objectives.append((at, Objective(m.group(1).strip(), tuple(x.strip() for x in m.group(2).split(",")))))
    body_lines = lines[end:]
    lesson = Lesson(
        slug=slug,
        title=meta["title"],
        order=order,
        summary=meta["summary"],
        path=path,
        text="\n".join(body_lines) + ("\n" if body_lines else ""),
        body_line=end + 1,
        goal=meta["goal"],
    )
    # check directives and blocks now so a bad lesson fails on load, not on first view
    predictions: list[str] = []
    exercises: list[str] = []
    open_predictions: dict[str, bool] = {}  # prediction id -> a widget followed it
    seen: dict[str, int] = {}
    for item in _scan(lesson):
        if isinstance(item, (WidgetDirective, LabBlock)):
            for pid in open_predictions:
                open_predictions[pid] = True
            continue
        if not isinstance(item, RawBlock):
            continue
        where = _where(path, item.line)
        if item.kind == "explain":
            if item.id not in open_predictions:
                raise LessonError(f"{where}: explain {item.id} follows no prediction {item.id!r}")
            if not open_predictions.pop(item.id):
                raise LessonError(f"{where}: prediction {item.id} has no widget between it and its explanation")
            continue
        if item.id in seen:
            raise LessonError(f"{where}: id {item.id!r} already used on line {seen[item.id]}")
        seen[item.id] = item.line
        if item.kind == "predict":
            open_predictions[item.id] = False
            predictions.append(item.id)
        else:
            exercises.append(item.id)
    if open_predictions:
        unexplained = ", ".join(open_predictions)
        raise LessonError(f"{_where(path, 1)}: prediction {unexplained} has no '::: explain' block after its widget")
    for at, objective in objectives:
        unknown = [x for x in objective.checked_by if x not in seen]
        if unknown:
            raise LessonError(f"{_where(path, at)}: objective {objective.text!r} names {', '.join(unknown)}, "
                              f"which is no prediction or exercise of this lesson")
    return replace(lesson, predictions=tuple(predictions), exercises=tuple(exercises),
                   objectives=tuple(o for _, o in objectives))


def _scan(lesson: Lesson) -> list[tuple[int, str] | WidgetDirective | LabBlock | RawBlock]:
    """The body as (line number, Markdown line) pairs, widget directives, labs and raw blocks, in order."""
    items: list[tuple[int, str] | WidgetDirective | LabBlock | RawBlock] = []
    rows = _body_lines(lesson)
    i = 0
    while i < len(rows):
        line_no, line, in_fence = rows[i]
        i += 1
        if in_fence or not line.lstrip().startswith(":::"):
            items.append((line_no, line))
            continue
        opened = OPEN_RE.match(line.strip())
        if opened is None:
            if _LAB_RE.match(line.strip()):
                items.append(parse_lab(line, path=lesson.path, line=line_no))
            else:
                items.append(parse_directive(line, path=lesson.path, line=line_no))
            continue
        body: list[str] = []
        while i < len(rows) and not CLOSE_RE.match(rows[i][1].strip()):
            body.append(rows[i][1])
            i += 1
        if i == len(rows):
            raise LessonError(f"{_where(lesson.path, line_no)}: {opened.group(1)} {opened.group(2)} is not closed "
                              "by a ':::' line")
        i += 1  # the closing line
        try:
            items.append(read_block(opened.group(1), opened.group(2), body, line_no))
        except BlockError as exc:
            raise LessonError(f"{_where(lesson.path, line_no)}: {exc}") from None
    return items


def _body_lines(lesson: Lesson) -> list[tuple[int, str, bool]]:
    """(file line number, line, inside fenced code) for every body line."""
    out: list[tuple[int, str, bool]] = []
    in_fence = False
    for offset, line in enumerate(lesson.text.splitlines()):
        is_fence = bool(_FENCE_RE.match(line))
        out.append((lesson.body_line + offset, line, in_fence or is_fence))
        if is_fence:
            in_fence = not in_fence
    return out


def _parse_value(raw: str, quoted: bool) -> ParamValue:
    if quoted:
        return raw
    if raw in ("true", "True"):
        return True
    if raw in ("false", "False"):
        return False
    if _INT_RE.match(raw):
        return int(raw)
    if _FLOAT_RE.match(raw):
        return float(raw)
    return raw


def _coerce(widget: str, key: str, raw: str, value: ParamValue, where: str) -> ParamValue:
    default = WIDGET_PARAMS[widget][key]
    if isinstance(default, str):
        return raw
    if isinstance(default, bool):
        if isinstance(value, bool):
            return value
        raise LessonError(f"{where}: {widget} parameter {key}={raw!r} must be true or false")
    if isinstance(default, int):
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        raise LessonError(f"{where}: {widget} parameter {key}={raw!r} must be an integer")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    raise LessonError(f"{where}: {widget} parameter {key}={raw!r} must be a number")


def parse_directive(text: str, path: Path | None = None, line: int = 1) -> WidgetDirective:
    """Parse one `::: widget Name key=value ...` line; unknown widget or parameter, a malformed
    token, a repeated key or a value of the wrong type raises LessonError naming file and line."""
    where = _where(path, line)
    match = _DIRECTIVE_RE.match(text.strip())
    if match is None:
        raise LessonError(f"{where}: malformed directive {text.strip()!r}; expected '::: widget Name key=value ...'")
    name, rest = match.group(1), match.group(2)
    check = _CHECK_PARAMS.get()
    if check:
        known: Any = WIDGET_PARAMS
    else:
        known = WIDGET_RECORDS  # the registry's names: no config record imported
    if name not in known:
        raise LessonError(f"{where}: unknown widget {name!r}; known: {', '.join(sorted(known))}")
    params: dict[str, ParamValue] = {}
    pos = 0
    while pos < len(rest):
        token = _PARAM_RE.match(rest, pos)
        if token is None or (token.end() < len(rest) and not rest[token.end()].isspace()):
            raise LessonError(
                f"{where}: malformed parameter near {rest[pos:].strip()!r}; expected key=value or key=\"text\""
            )
        key, quoted_text, bare = token.group(1), token.group(2), token.group(3)
        if check and key not in WIDGET_PARAMS[name]:
            raise LessonError(
                f"{where}: {name} has no parameter {key!r}; allowed: {', '.join(WIDGET_PARAMS[name])}"
            )
        if key in params:
            raise LessonError(f"{where}: parameter {key!r} given twice")
        raw = quoted_text if quoted_text is not None else bare
        value = _parse_value(raw, quoted_text is not None)
        params[key] = _coerce(name, key, raw, value, where) if check else value
        pos = token.end()
        while pos < len(rest) and rest[pos].isspace():
            pos += 1
    return WidgetDirective(name=name, params=params, line=line)


def parse_lab(text: str, path: Path | None = None, line: int = 1) -> LabBlock:
    """Parse one `::: lab NAME key=value ...` line against `LABS` (the lab's parameters and their
    defaults' types), as `parse_directive` parses a widget's."""
    where = _where(path, line)
    match = _LAB_RE.match(text.strip())
    if match is None:
        raise LessonError(f"{where}: malformed lab {text.strip()!r}; expected '::: lab name key=value ...'")
    name, rest = match.group(1), match.group(2)
    if name not in LABS:
        raise LessonError(f"{where}: unknown lab {name!r}; known: {', '.join(sorted(LABS))}")
    defaults = LABS[name].params
    params: dict[str, ParamValue] = {}
    for token in rest.split():
        key, sep, raw = token.partition("=")
        if not sep or key not in defaults:
            raise LessonError(f"{where}: lab {name} takes {', '.join(defaults) or 'no parameters'}; got {token!r}")
        value = _parse_value(raw, False)
        if type(value) is not type(defaults[key]):
            raise LessonError(f"{where}: lab {name} parameter {key}={raw!r} must be a {type(defaults[key]).__name__}")
        params[key] = value
    return LabBlock(name, params, line)


#: what a bin link may set besides the format and the value: the explorer's controls that stay live
#: on an exported page too (`app/static/offline/binexplorer.js` reads them from the address)
BIN_LINK_PARAMS = ("convention",)


def bin_link(target: str) -> str:
    """The bin explorer's address for a `bin:FORMAT/VALUE[?convention=NAME]` link target: the widget
    page with its URL state (`format`, `value`, `convention`), so the link is shareable and works
    served and exported. Raises ValueError for an unknown format, convention or parameter."""
    from lowprec.formats import get_format

    spec, _, query = target.partition("?")
    fmt, sep, value = spec.partition("/")
    if not sep or not fmt or not value:
        raise ValueError(f"a bin link is bin:FORMAT/VALUE, got bin:{target}")
    name = get_format(fmt).name  # ValueError for an unknown format
    params = {"format": name, "value": value}
    for key, val in parse_qsl(query, keep_blank_values=True):
        if key not in BIN_LINK_PARAMS or key in params:
            raise ValueError(f"bin link parameter {key!r} is not one of {', '.join(BIN_LINK_PARAMS)}")
        if key == "convention":
            from lowprec.formats.conventions import CONVENTIONS

            if val not in CONVENTIONS:
                raise ValueError(f"bin link convention {val!r} is not one of {', '.join(CONVENTIONS)}")
        params[key] = val
    return f"{BIN_EXPLORER_ROUTE}?{urlencode(params, quote_via=quote, safe='')}"


def _bin_links(text: str, where: str) -> str:
    if "](bin:" not in text:
        return text

    def sub(m: re.Match[str]) -> str:
        try:
            return f"]({bin_link(m.group(1))})"
        except ValueError as exc:
            raise LessonError(f"{where}: {exc}") from None

    return _BIN_LINK_RE.sub(sub, text)


def placeholders(text: str) -> list[tuple[str, str | None]]:
    """Every (example name, field or None) that `text` refers to, in order; malformed ones raise."""
    out: list[tuple[str, str | None]] = []
    for match in _PLACEHOLDER_RE.finditer(text):
        if _LESSON_REF_RE.match(match.group(1)):
            continue
        body = _PLACEHOLDER_BODY_RE.match(match.group(1))
        if body is None:
            raise LessonError(f"malformed placeholder {match.group(0)!r}; expected {{{{ example:NAME[.FIELD] }}}}")
        out.append((body.group(1), body.group(2)))
    return out


def _default_resolver() -> Resolver:
    from lowprec.course.examples import example  # imported on first use: lessons parse without numpy work

    def resolve(name: str, field_name: str | None) -> str:
        return example(name).format(field_name)

    return resolve


@functools.lru_cache(maxsize=8)
def _course_numbers(folder: Path, stamps: tuple[tuple[str, int, int], ...]) -> dict[str, int]:
    return {lesson.slug: lesson.order for lesson in _load_lessons_cached(folder, stamps)}


def lesson_number(slug: str, folder: Path | None = None) -> int:
    """The number (order) of lesson `slug` in the course of `folder` (default: the installed one); a
    slug that a draft folder lacks is looked up in the installed course (a lesson drafted alone
    still refers to the others)."""
    roots = [Path(folder)] if folder is not None else []
    roots.append(DEFAULT_ROOT)
    numbers: dict[str, int] = {}
    for root in roots:
        paths = lesson_paths(root, installed=root == DEFAULT_ROOT)
        stamps = tuple((str(p), st.st_mtime_ns, st.st_size) for p in paths for st in (p.stat(),))
        numbers = _course_numbers(root, stamps)
        if slug in numbers:
            return numbers[slug]
    raise ValueError(f"no lesson {slug!r} in the course; lessons: {', '.join(numbers)}")


def _resolve_line(text: str, resolve: Resolver, where: str, folder: Path | None = None) -> str:
    def substitute(match: re.Match[str]) -> str:
        ref = _LESSON_REF_RE.match(match.group(1))
        if ref is not None:
            try:
                return str(lesson_number(ref.group(1), folder))
            except (ValueError, LessonFolderError) as exc:
                raise LessonError(f"{where}: {exc}") from None
        body = _PLACEHOLDER_BODY_RE.match(match.group(1))
        if body is None:
            raise LessonError(
                f"{where}: malformed placeholder {match.group(0)!r}; expected {{{{ example:NAME[.FIELD] }}}}"
            )
        name, field_name = body.group(1), body.group(2)
        try:
            return str(resolve(name, field_name))
        except LessonError:
            raise
        except (KeyError, ValueError, TypeError, AttributeError) as exc:
            what = f"{name}.{field_name}" if field_name else name
            raise LessonError(f"{where}: cannot resolve placeholder example:{what}: {exc}") from exc

    return _PLACEHOLDER_RE.sub(substitute, text)


Block = Union[MarkdownBlock, WidgetDirective, LabBlock, PredictionBlock, ExplanationBlock, ExerciseBlock]


def _default_value_resolver() -> ValueResolver:
    from lowprec.course.examples import example

    def resolve(name: str, field_name: str) -> tuple[Any, str]:
        ex = example(name)
        text = ex.format(field_name)  # raises ValueError naming the fields for an unknown one
        return ex.values[field_name], text

    return resolve


def interactive_blocks(lesson: Lesson) -> list[WidgetDirective | LabBlock | RawBlock]:
    """The lesson's widget directives and its predict/explain/exercise blocks as written, in order:
    nothing is computed (no placeholder, no answer), so listing a course costs only its parsing."""
    return [item for item in _scan(lesson) if not isinstance(item, tuple)]


def render_blocks(
    lesson: Lesson, *, resolve: Resolver | None = None, resolve_value: ValueResolver | None = None,
    markdown: bool = True,
) -> list[Block]:
    """The lesson body as Markdown blocks (placeholders replaced), widget directives and the
    interactive blocks (answers computed), in order.

    `resolve(name, field)` turns a placeholder into text; by default
    `course.examples.example(name).format(field)`. `resolve_value(name, field)` gives an
    answer's (value, text); by default the example's raw value and its text. Blank Markdown between
    directives is dropped. `markdown=False` leaves out the Markdown and the explanations (and does
    not compute their placeholders): the directives, predictions and exercises alone, what a
    listing of the course's questions and answers needs.
    """
    resolver = resolve
    blocks: list[Block] = []
    pending: list[str] = []
    pending_line = lesson.body_line

    def flush() -> None:
        if any(part.strip() for part in pending):
            blocks.append(MarkdownBlock(text="\n".join(pending).strip("\n") + "\n", line=pending_line))
        pending.clear()

    def text_of(value: str, line_no: int) -> str:
        nonlocal resolver
        value = _bin_links(value, _where(lesson.path, line_no))
        if "{{" not in value and "}}" not in value:
            return value
        if _PLACEHOLDER_RE.search(value) is None:
            raise LessonError(f"{_where(lesson.path, line_no)}: unbalanced placeholder braces in {value.strip()!r}")
        if resolver is None:
            resolver = _default_resolver()
        # a lesson file (NN-slug.md) refers to its own course; anything else to the installed one
        folder = (lesson.path.parent if lesson.path is not None and re.match(r"^\d+-", lesson.path.name)
                  and lesson.path.is_file() else None)
        return _resolve_line(value, resolver, _where(lesson.path, line_no), folder)

    open_prediction = ""  # the prediction a lab that follows it answers
    for item in _scan(lesson):
        if isinstance(item, WidgetDirective):
            flush()
            blocks.append(item)
            pending_line = item.line + 1
            open_prediction = ""
            continue
        if isinstance(item, LabBlock):
            flush()
            blocks.append(replace(item, locked_by=open_prediction))
            pending_line = item.line + 1
            open_prediction = ""
            continue
        if isinstance(item, RawBlock):
            if item.kind == "predict":
                open_prediction = item.id
            flush()
            if markdown or item.kind != "explain":
                blocks.append(_render_block(item, lesson, text_of, resolve_value))
            pending_line = item.line + 1
            continue
        if not markdown:
            continue
        line_no, line = item
        line = text_of(line, line_no)
        if not pending:
            pending_line = line_no
        pending.append(line)
    flush()
    return blocks


def _render_block(raw: RawBlock, lesson: Lesson, text_of: Callable[[str, int], str],
                  resolve_value: ValueResolver | None) -> PredictionBlock | ExplanationBlock | ExerciseBlock:
    if raw.kind == "explain":
        return ExplanationBlock(raw.id, "\n".join(text_of(x, raw.line) for x in raw.body.split("\n")), raw.line)
    try:
        answer = resolve_answer(raw, resolve_value or _default_value_resolver())
    except BlockError as exc:
        raise LessonError(f"{_where(lesson.path, raw.line)}: {exc}") from None
    f = raw.fields
    if raw.kind == "predict":
        return PredictionBlock(raw.id, text_of(f["question"][0], raw.line), answer, raw.line)
    return ExerciseBlock(raw.id, text_of(f["prompt"][0], raw.line), answer,
                         tuple(text_of(h, raw.line) for h in f["hint"]), text_of(f["solution"][0], raw.line),
                         raw.line)


def load_lessons(root: Path | None = None) -> list[Lesson]:
    """Every `*.md` lesson under `root` (default `content/lessons`), sorted by `order`.

    The slug is the file name without its `NN-` prefix and extension. Two lessons with the same
    order or slug raise LessonError.
    """
    folder = Path(root) if root is not None else DEFAULT_ROOT
    try:
        paths = lesson_paths(folder, installed=root is None)
    except LessonFolderError as exc:
        raise LessonError(str(exc)) from None
    stamps = tuple((str(p), st.st_mtime_ns, st.st_size) for p in paths for st in (p.stat(),))
    # every served page asks for the lessons (course map, routes): parse them again only when a
    # file changed (Lesson is frozen, so the cached ones are shared safely; the list is a copy)
    return list(_load_lessons_cached(folder, stamps, _CHECK_PARAMS.get()))


@functools.lru_cache(maxsize=8)
def _load_lessons_cached(folder: Path, stamps: tuple[tuple[str, int, int], ...],
                         checked: bool = True) -> tuple[Lesson, ...]:
    """The lessons of `folder` as parsed from the files `stamps` names (path, mtime, size);
    `checked`: whether directive parameters were checked (`outline_only` parses apart)."""
    lessons: list[Lesson] = []
    for name, _, _ in stamps:
        path = Path(name)
        slug = slug_of(path)
        lessons.append(parse_lesson(path.read_text(encoding="utf-8"), slug=slug, path=path))
    seen_order: dict[int, Path | None] = {}
    seen_slug: dict[str, Path | None] = {}
    for lesson in lessons:
        if lesson.order in seen_order:
            raise LessonError(f"{_where(lesson.path, 1)}: order {lesson.order} also used by {seen_order[lesson.order]}")
        if lesson.slug in seen_slug:
            raise LessonError(f"{_where(lesson.path, 1)}: slug {lesson.slug!r} also used by {seen_slug[lesson.slug]}")
        seen_order[lesson.order] = lesson.path
        seen_slug[lesson.slug] = lesson.path
    return tuple(sorted(lessons, key=lambda lesson: lesson.order))
