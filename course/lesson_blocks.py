"""The interactive blocks of a lesson: predictions, their explanations, and exercises.

Pure Python, no Panel import: this module owns the source syntax of the three blocks, their records,
how an answer is computed (always by the model, never typed in) and how a response is checked.
`lowprec.course.lessons` finds the blocks in a lesson body; the app turns the records into controls.

Syntax (the full reference is `content/README.md`). A block opens with `::: KIND ID` on a line of
its own and closes with a line `:::`; `ID` is a slug (`[a-z0-9][a-z0-9-]*`), unique in its lesson::

    ::: predict spike-clip
    kind: choice
    question: At the spike, what fraction of the tensor does delayed scaling clip?
    choices: none | under 10% | over 90%
    answer: example:delayed_spike.clip_bucket
    :::

    ::: explain spike-clip
    Markdown shown once the prediction is answered ("what you saw and why").
    :::

    ::: exercise code-3-3
    kind: code E4M3FN
    prompt: Which E4M3FN code does 3.3 get under round-to-nearest-even? Answer in hex or bits.
    answer: example:bin_3_3.code
    hint: Which two E4M3FN values lie either side of 3.3?
    hint: Between 2 and 4 the values are 0.25 apart.
    solution: 3.3 lies in the bin (3.125, 3.375) of 3.25 = 13/8 × 2^1, whose code is 0x45.
    :::

Keys of `predict` and `exercise` bodies are `key: value` lines; a line indented by two or more
spaces continues the previous value (a new paragraph: an indented empty-looking line `  .`).
`hint` may repeat (1 or 2 in an exercise). Text values are Markdown and may hold
`{{ example:NAME.FIELD }}` placeholders. The body of `explain` is plain Markdown.

Answer kinds (`kind:`):

- `number` — `answer` is a numeric example field; `tolerance: exact | abs X | rel X` (default
  exact). A response is a decimal or hex-float number; it is right when
  `|response − answer| ≤ X` (abs), `≤ X·|answer|` (rel) or equal (exact).
- `code FORMAT` — `answer` is an integer field, a code of FORMAT; a response is hex (`0x45`) or
  the bits (`01000101`, exactly FORMAT's width, spaces allowed).
- `choice` — `choices: A | B | C` (text, typed by the author); `answer` is a field whose value picks
  the right choice: the one whose text equals the field's prose text, or whose number equals it.
  Exactly one choice must match, else the lesson fails to render.
- `order` — `items: A | B | C` (at least three, shown in this order); `answer` is a field holding the
  items in the right order (a list, or their texts joined by ` | `), which must differ from the shown
  order. A response lists every item once, joined by ` | ` (the page builds it from the arrangement).
- `classify` — `items: A | B | C` and `categories: X | Y | Z` (at least two); `answer` is a field
  holding each item's category, in the items' order. A response names one category per item, joined
  by ` | `.

`answer: example:NAME.FIELD` names a field of a worked example in `lowprec.course.examples`,
whose value the model computes; tests check every answer against an independent oracle.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any, Callable

__all__ = [
    "ANSWER_KINDS",
    "Answer",
    "BLOCK_KINDS",
    "ExerciseBlock",
    "ExplanationBlock",
    "LabBlock",
    "PredictionBlock",
    "RawBlock",
    "check_response",
    "parse_response",
    "split_parts",
]

BLOCK_KINDS = ("predict", "explain", "exercise")
ID_RE = re.compile(r"^[a-z0-9][a-z0-9-]*$")
OPEN_RE = re.compile(r"^:::\s*(predict|explain|exercise)\s+(\S+)\s*$")
CLOSE_RE = re.compile(r"^:::\s*$")
ANSWER_RE = re.compile(r"^example:([A-Za-z_]\w*)\.([A-Za-z_]\w*)$")
_KEY_RE = re.compile(r"^([a-z]+):\s?(.*)$")
_TOL_RE = re.compile(r"^(exact|abs\s+(\S+)|rel\s+(\S+))$")

#: keys allowed in each block body (value: how many times: "1" exactly once, "?" optional, "+" 1 or more)
KEYS: dict[str, dict[str, str]] = {
    "predict": {"kind": "1", "question": "1", "choices": "?", "items": "?", "categories": "?", "answer": "1",
                "tolerance": "?"},
    "exercise": {"kind": "1", "prompt": "1", "choices": "?", "items": "?", "categories": "?", "answer": "1",
                 "tolerance": "?", "hint": "+", "solution": "1"},
}
MAX_HINTS = 2
#: every answer kind (`kind:` of a block)
ANSWER_KINDS = ("number", "code", "choice", "order", "classify")
#: the separator of items, categories and the parts of an order or classify response
SEPARATOR = " | "


class BlockError(ValueError):
    """A malformed block (the lesson parser adds the file and line)."""


@dataclass(frozen=True)
class RawBlock:
    """A block as written: kind, id, the `key: value` fields (hint repeats) or the Markdown body."""

    kind: str
    id: str
    line: int
    fields: dict[str, list[str]] = field(default_factory=dict)
    body: str = ""


@dataclass(frozen=True)
class Answer:
    """A computed answer and how a response is compared with it."""

    kind: str  # "number" | "code" | "choice" | "order" | "classify"
    value: float | int | str  # number: float; code: int; choice: the right choice's text; order: the
    # items in the right order, classify: each item's category, both joined by SEPARATOR
    source: str  # "example:NAME.FIELD"
    text: str  # the answer as prose ("0x45 = 3.25", "448", "over 90%")
    format: str | None = None  # code answers: the format's name
    bits: int | None = None  # code answers: the format's width
    tolerance: tuple[str, float] = ("exact", 0.0)  # ("exact", 0) | ("abs", x) | ("rel", x)
    choices: tuple[str, ...] = ()  # choice: the choices; order and classify: the items, as shown
    categories: tuple[str, ...] = ()  # classify: the categories

    def check(self, response: str) -> bool:
        return check_response(self, response)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "value": self.value, "text": self.text, "source": self.source}
        if self.kind == "code":
            out.update(format=self.format, bits=self.bits, hex=f"0x{int(self.value):0{(int(self.bits or 8) + 3) // 4}X}")
        if self.kind == "number":
            out["tolerance"] = {"rule": self.tolerance[0], "amount": self.tolerance[1]}
        if self.kind == "choice":
            out["choices"] = list(self.choices)
        if self.kind in ("order", "classify"):
            out["items"] = list(self.choices)
            out["parts"] = split_parts(str(self.value))
        if self.kind == "classify":
            out["categories"] = list(self.categories)
        return out

    @property
    def options(self) -> int:
        """How many different answers a learner can give: the choices, the orders of the items or
        the ways to classify them; a number or a code counts as more than any of these."""
        if self.kind == "choice":
            return len(self.choices)
        if self.kind == "order":
            return math.factorial(len(self.choices))
        if self.kind == "classify":
            return len(self.categories) ** len(self.choices)
        return 10**9


@dataclass(frozen=True)
class PredictionBlock:
    """A question answered before the widget that follows it is revealed."""

    id: str
    question: str  # Markdown, placeholders resolved
    answer: Answer
    line: int = 1


@dataclass(frozen=True)
class ExplanationBlock:
    """"What you saw and why": Markdown shown once prediction `id` is answered."""

    id: str
    text: str
    line: int = 1


@dataclass(frozen=True)
class LabBlock:
    """A lab placed by `::: lab NAME key=value`: a lesson component whose data `LABS[name]`'s builder
    computes (with `params`), drawn in the browser. `locked_by` is the id of the prediction it
    answers (the lab stays hidden until it is answered), "" when none."""

    name: str
    params: dict[str, str | int | float | bool] = field(default_factory=dict)
    line: int = 1
    locked_by: str = ""


@dataclass(frozen=True)
class ExerciseBlock:
    """A question with a computed answer, hints and a worked solution."""

    id: str
    prompt: str
    answer: Answer
    hints: tuple[str, ...]
    solution: str
    line: int = 1


# ------------------------------------------------------------------------------------------------
# reading a block's lines
# ------------------------------------------------------------------------------------------------


def read_block(kind: str, block_id: str, lines: list[str], line: int) -> RawBlock:
    """The block's fields (predict/exercise) or body (explain), with the structure checked."""
    if not ID_RE.match(block_id):
        raise BlockError(f"{kind} id {block_id!r} must be a slug: lower-case letters, digits and '-'")
    if kind == "explain":
        body = "\n".join(lines).strip("\n")
        if not body.strip():
            raise BlockError(f"explain {block_id} is empty")
        return RawBlock(kind, block_id, line, body=body + "\n")
    fields: dict[str, list[str]] = {}
    last: str | None = None
    for text in lines:
        if not text.strip():
            continue
        if text.startswith("  ") and last is not None:
            more = text.strip()
            prev = fields[last][-1]
            fields[last][-1] = prev + ("\n\n" if more == "." else ("" if prev.endswith("\n") or not prev else " ") + more)
            continue
        m = _KEY_RE.match(text)
        if m is None:
            raise BlockError(f"{kind} {block_id}: line {text.strip()!r} is not 'key: value' "
                             "(indent a line by two spaces to continue the previous value)")
        key, value = m.group(1), m.group(2).strip()
        allowed = KEYS[kind]
        if key not in allowed:
            raise BlockError(f"{kind} {block_id}: unknown key {key!r}; allowed: {', '.join(allowed)}")
        if key in fields and allowed[key] != "+":
            raise BlockError(f"{kind} {block_id}: key {key!r} given twice")
        fields.setdefault(key, []).append(value)
        last = key
    for key, count in KEYS[kind].items():
        if count in "1+" and not fields.get(key):
            raise BlockError(f"{kind} {block_id}: missing {key!r}")
    if len(fields.get("hint", [])) > MAX_HINTS:
        raise BlockError(f"{kind} {block_id}: at most {MAX_HINTS} hints")
    kind_words = fields["kind"][0].split()
    answer_kind = kind_words[0] if kind_words else ""
    if answer_kind not in ANSWER_KINDS:
        raise BlockError(f"{kind} {block_id}: kind must be number, code FORMAT, choice, order or classify; "
                         f"got {fields['kind'][0]!r}")
    if answer_kind == "code" and (len(kind_words) != 2 or kind == "predict"):
        raise BlockError(f"{kind} {block_id}: write 'kind: code FORMAT' (exercises only)")
    if answer_kind != "code" and len(kind_words) != 1:
        raise BlockError(f"{kind} {block_id}: kind {answer_kind} takes no argument")
    if (answer_kind == "choice") != ("choices" in fields):
        raise BlockError(f"{kind} {block_id}: 'choices' goes with kind choice, and only with it")
    if "tolerance" in fields and answer_kind != "number":
        raise BlockError(f"{kind} {block_id}: 'tolerance' goes with kind number only")
    if not ANSWER_RE.match(fields["answer"][0]):
        raise BlockError(f"{kind} {block_id}: answer must be example:NAME.FIELD (computed, never typed in); "
                         f"got {fields['answer'][0]!r}")
    if "tolerance" in fields:
        _tolerance(fields["tolerance"][0], f"{kind} {block_id}")
    if "choices" in fields and len(_choices(fields["choices"][0])) < 2:
        raise BlockError(f"{kind} {block_id}: give at least two choices separated by ' | '")
    if (answer_kind in ("order", "classify")) != ("items" in fields):
        raise BlockError(f"{kind} {block_id}: 'items' goes with kind order or classify, and only with them")
    if (answer_kind == "classify") != ("categories" in fields):
        raise BlockError(f"{kind} {block_id}: 'categories' goes with kind classify, and only with it")
    if "items" in fields:
        items = _choices(fields["items"][0])
        least = 3 if answer_kind == "order" else 2
        if len(items) < least or len(set(items)) != len(items):
            raise BlockError(f"{kind} {block_id}: give at least {least} different items separated by ' | '")
    if "categories" in fields:
        cats = _choices(fields["categories"][0])
        if len(cats) < 2 or len(set(cats)) != len(cats):
            raise BlockError(f"{kind} {block_id}: give at least two different categories separated by ' | '")
    return RawBlock(kind, block_id, line, fields=fields)


def _choices(text: str) -> tuple[str, ...]:
    return tuple(c.strip() for c in text.split("|") if c.strip())


def split_parts(text: str) -> list[str]:
    """The parts of an order or classify answer or response: split at '|', ASCII whitespace around
    each part removed (empty parts kept, so a missing one is seen)."""
    return [part.strip(_ASCII_WS) for part in text.split("|")]


def _tolerance(text: str, where: str) -> tuple[str, float]:
    m = _TOL_RE.match(text.strip())
    if m is None:
        raise BlockError(f"{where}: tolerance must be 'exact', 'abs X' or 'rel X'; got {text!r}")
    if m.group(1) == "exact":
        return ("exact", 0.0)
    rule = "abs" if m.group(2) is not None else "rel"
    try:
        amount = float(m.group(2) or m.group(3))
    except ValueError:
        raise BlockError(f"{where}: tolerance amount must be a number; got {text!r}") from None
    if not (math.isfinite(amount) and amount > 0):
        raise BlockError(f"{where}: tolerance amount must be a positive number; got {text!r}")
    return (rule, amount)


# ------------------------------------------------------------------------------------------------
# resolving: answers from the model, placeholders in the text
# ------------------------------------------------------------------------------------------------

#: resolve(name, field) -> (raw value, prose text) of an example field
ValueResolver = Callable[[str, str], tuple[Any, str]]


def resolve_answer(raw: RawBlock, resolve: ValueResolver) -> Answer:
    where = f"{raw.kind} {raw.id}"
    m = ANSWER_RE.match(raw.fields["answer"][0])
    assert m is not None  # checked when read
    name, fld = m.group(1), m.group(2)
    source = f"example:{name}.{fld}"
    try:
        value, text = resolve(name, fld)
    except (KeyError, ValueError, TypeError) as exc:
        raise BlockError(f"{where}: cannot compute the answer {source}: {exc}") from exc
    kind_words = raw.fields["kind"][0].split()
    kind = kind_words[0]
    if kind == "number":
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise BlockError(f"{where}: answer {source} is {value!r}, not a number")
        tol = _tolerance(raw.fields.get("tolerance", ["exact"])[0], where)
        return Answer("number", float(value), source, text, tolerance=tol)
    if kind == "code":
        from lowprec.formats import get_format  # imported when a lesson with a code exercise renders

        try:
            fmt = get_format(kind_words[1])
        except ValueError as exc:
            raise BlockError(f"{where}: {exc}") from None
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < fmt.n_codes:
            raise BlockError(f"{where}: answer {source} is {value!r}, not a code of {fmt.name}")
        return Answer("code", int(value), source, text, format=fmt.name, bits=fmt.bits)
    if kind in ("order", "classify"):
        return _resolve_arrangement(raw, kind, value, source, text, where)
    choices = _choices(raw.fields["choices"][0])
    matches = [c for c in choices if _choice_matches(c, value, text)]
    if len(matches) != 1:
        raise BlockError(f"{where}: the computed answer {source} = {text!r} must match exactly one of the "
                         f"choices {' | '.join(choices)}; it matches {len(matches)}")
    return Answer("choice", matches[0], source, text, choices=choices)


def _resolve_arrangement(raw: RawBlock, kind: str, value: Any, source: str, text: str, where: str) -> Answer:
    """An order or classify answer: the field holds a list of texts (or one text joined by '|')."""
    items = _choices(raw.fields["items"][0])
    if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        parts = [v.strip() for v in value]
    elif isinstance(value, str):
        parts = split_parts(value)
    else:
        raise BlockError(f"{where}: answer {source} is {value!r}, not a list of texts")
    if kind == "order":
        if sorted(parts) != sorted(items):
            raise BlockError(f"{where}: the computed order {source} = {parts!r} is not an order of the items "
                             f"{' | '.join(items)}")
        if tuple(parts) == items:
            raise BlockError(f"{where}: the items are shown in the right order already ({source}); shuffle them")
        return Answer("order", SEPARATOR.join(parts), source, SEPARATOR.join(parts), choices=items)
    categories = _choices(raw.fields["categories"][0])
    if len(parts) != len(items) or any(p not in categories for p in parts):
        raise BlockError(f"{where}: the computed classification {source} = {parts!r} must name one of the "
                         f"categories {' | '.join(categories)} for each of the {len(items)} items")
    shown = "; ".join(f"{item}: {part}" for item, part in zip(items, parts))
    return Answer("classify", SEPARATOR.join(parts), source, shown, choices=items, categories=categories)


def _choice_matches(choice: str, value: Any, text: str) -> bool:
    if choice == text or (isinstance(value, str) and choice == value):
        return True
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    number = _number(choice)
    return number is not None and (number == value or (math.isnan(number) and math.isnan(float(value))))


# ------------------------------------------------------------------------------------------------
# checking a response (the page does the same comparison in the browser, from `Answer.to_dict()`)
# ------------------------------------------------------------------------------------------------

#: the response grammar, ASCII only (the page's checker, app/static/exercises.js, reads the same):
#: surrounding ASCII whitespace is ignored; a number is decimal, inf/infinity/nan (any case, signed)
#: or a hex float with a binary exponent; "−" (U+2212) reads as "-" and "_" is ignored
_ASCII_WS = " \t\n\r\x0b\x0c"
_DEC_RE = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_SPECIAL_RE = re.compile(r"[+-]?(?:inf|infinity|nan)", re.IGNORECASE)
_HEX_FLOAT_RE = re.compile(r"[+-]?0[xX](?:[0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)[pP][+-]?[0-9]+")


def _number(text: str) -> float | None:
    t = text.strip(_ASCII_WS).replace("\u2212", "-").replace("_", "")
    if _HEX_FLOAT_RE.fullmatch(t):
        try:
            return float.fromhex(t)
        except OverflowError:  # beyond float64 after rounding: infinite, as a decimal would be
            return -math.inf if t.startswith("-") else math.inf
    if _DEC_RE.fullmatch(t) or _SPECIAL_RE.fullmatch(t):
        return float(t)
    return None


def parse_response(answer: Answer, response: str) -> float | int | str | None:
    """A learner's response as the answer's type, or None when it cannot be read."""
    if not isinstance(response, str):
        return None
    if answer.kind == "number":
        return _number(response)
    if answer.kind == "code":
        t = response.strip(_ASCII_WS).replace(" ", "").replace("_", "")
        bits = int(answer.bits or 0)
        if re.fullmatch(r"0[xX][0-9a-fA-F]+", t):
            v = int(t, 16)
        elif re.fullmatch(r"[01]+", t) and len(t) == bits:
            v = int(t, 2)
        elif re.fullmatch(r"0[bB][01]+", t):
            v = int(t[2:], 2)
        else:
            return None
        return v if v < (1 << bits) else None
    if answer.kind == "order":
        parts = split_parts(response)
        return SEPARATOR.join(parts) if sorted(parts) == sorted(answer.choices) else None
    if answer.kind == "classify":
        parts = split_parts(response)
        if len(parts) != len(answer.choices) or any(p not in answer.categories for p in parts):
            return None
        return SEPARATOR.join(parts)
    t = response.strip(_ASCII_WS)
    return t if t in answer.choices else None


def check_response(answer: Answer, response: str) -> bool:
    """Whether `response` is right (an unreadable response is wrong)."""
    got = parse_response(answer, response)
    if got is None:
        return False
    if answer.kind == "number":
        assert isinstance(got, float) and isinstance(answer.value, float)
        rule, amount = answer.tolerance
        if math.isnan(answer.value):
            return math.isnan(got)
        if rule == "exact":
            return got == answer.value
        if rule == "abs":
            return abs(got - answer.value) <= amount
        return abs(got - answer.value) <= amount * abs(answer.value)
    return got == answer.value
