"""Lesson blocks on a page: predictions, exercises, and what a prediction locks (widgets, explanations).

Every block is a `pn.custom.JSComponent` driven by one ES module, `app/static/exercises.js`, so it
behaves the same on a served page and on an exported page opened from disk: the answer and
everything the learner is told are computed in the course layer (`Answer.to_dict()`,
`lowprec.course.feedback`: the decode table, the answer's text, how to type a response) and travel as one strict-JSON string parameter, `spec`, inside the page's Bokeh document; the
browser only parses a response and compares (the rules of `lesson_blocks.check_response`). The
Markdown of a block (question, prompt, hints, solution, explanation) is passed as Panel Markdown
children, rendered like the rest of the lesson. The module's text is embedded in the document
(Panel turns it into a `blob:` module in the browser): nothing is fetched.

Page contract (what tests and the site's navigation rely on):

- an exercise element carries `data-exercise="<lesson-slug>/<id>"` and, once checked,
  `data-result="correct"` or `"incorrect"`; a prediction carries `data-prediction="<slug>/<id>"`
  and, once answered, `data-result="answered"`;
- a locked region (the widget after a prediction, the prediction's explanation: a `LockRegion`,
  i.e. a Column of a `LockMarker` and the content) carries `data-locked-by="<slug>/<prediction
  id>"` (an explanation also `data-explains`) and `data-state="locked"` / `"open"`; its content is
  built server side, starts invisible and is shown (its Bokeh model's `visible`) once the
  prediction is answered;
- a lazy slot (`LazySlot`, where a lesson's widget will be drawn) carries `data-lazy="<Widget>"`
  and `data-state="waiting"` / `"loading"`; `window.lowprecLazy` has `total()`, `waiting()` and
  `waitingInView()` (the page-ready check, `layout.PAGE_READY_JS`);
- progress is the localStorage key `lowprec-progress` (`PROGRESS_KEY`): a JSON object mapping
  `"<slug>/<id>"` to `"correct"` | `"incorrect"` (the last check of an exercise) or `"answered"`
  (a prediction); every write dispatches the window event `lowprec-progress` (`PROGRESS_EVENT`,
  detail `{key, result}`), and every component restores its state from the key on load.

Feedback on a wrong answer: for a code, what the learner's code decodes to (a lookup in the
format's decode table, `course.feedback.decode_table`) and whether it is too low or too high; for a number, too
low or too high; from the second wrong try on, the right answer too. Hints open one at a time;
the worked solution on request.

What a static export must keep for these to work offline: the Bokeh document embedded
(`save(embed=True)`) with Panel's JS inlined (`resources=INLINE`: es-module-shims comes with it,
and the module is imported from a `blob:` URL, which a Content-Security-Policy must allow); the
components themselves (they are not Panel widgets, so disabling the page's widgets leaves them
live; they need no embedded states); and a placed widget may sit inside a `LockRegion`
(`region.view` is the widget, `region.content` the Column that holds it). `window.lowprecLesson`
(checkResponse, readProgress, …) is there once a component has loaded.
"""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path
from typing import Any, Union

import panel as pn
import param
from panel.custom import Child, Children

from lowprec import strictjson
from lowprec.course.feedback import answer_text, decode_table, how_text, unreadable_text
from lowprec.course.lesson_blocks import ExerciseBlock, ExplanationBlock, LabBlock, PredictionBlock
from lowprec.course.lesson_labs import LABS, lab_data

__all__ = [
    "ESM_PATH",
    "ExerciseView",
    "LabView",
    "LazySlot",
    "LessonComponent",
    "LockMarker",
    "LockRegion",
    "PROGRESS_EVENT",
    "PROGRESS_KEY",
    "PredictionView",
    "block_key",
    "block_view",
    "exercise_spec",
    "lab_spec",
    "lazy_spec",
    "lock_spec",
    "locked",
    "placed",
    "prediction_spec",
]

ESM_PATH = Path(__file__).resolve().parent / "static" / "exercises.js"
PROGRESS_KEY = "lowprec-progress"
PROGRESS_EVENT = "lowprec-progress"
Block = Union[PredictionBlock, ExplanationBlock, ExerciseBlock, LabBlock]


def block_key(lesson_slug: str, block_id: str) -> str:
    """The block's address in the page and in the progress store: '<lesson-slug>/<id>'."""
    return f"{lesson_slug}/{block_id}"


# ------------------------------------------------------------------------------------------------
# the data each component carries
# ------------------------------------------------------------------------------------------------


def exercise_spec(block: ExerciseBlock, lesson_slug: str) -> dict[str, Any]:
    """The data an exercise component carries (the Markdown goes as children)."""
    spec: dict[str, Any] = {"role": "exercise", "key": block_key(lesson_slug, block.id), "id": block.id,
                            "answer": block.answer.to_dict(), "answer_text": answer_text(block.answer),
                            "how": how_text(block.answer),
                            "unreadable": unreadable_text(block.answer)}
    if block.answer.kind == "code":
        spec["decode"] = decode_table(str(block.answer.format), int(block.answer.value))
    return spec


def prediction_spec(block: PredictionBlock, lesson_slug: str) -> dict[str, Any]:
    """The data a prediction component carries."""
    return {"role": "prediction", "key": block_key(lesson_slug, block.id), "id": block.id,
            "answer": block.answer.to_dict(), "answer_text": answer_text(block.answer),
                            "how": how_text(block.answer),
            "unreadable": unreadable_text(block.answer),
            "after": "The widget below is unlocked: try it, then read why."}


def lab_spec(name: str, params: dict[str, Any], lesson_slug: str) -> dict[str, Any]:
    """The data a lab component carries: the lab's role (its renderer), title and the data its
    simulation computed (`course.lesson_labs`)."""
    entry = LABS[name]
    return {"role": entry.role, "key": block_key(lesson_slug, f"lab-{name}"), "title": entry.title,
            "data": lab_data(name, params)}


def lock_spec(key: str, *, note: str = "", explains: bool = False) -> dict[str, Any]:
    """The data of a locked element: opens when progress has `key` (a prediction is answered)."""
    return {"role": "lock", "lock": key, "note": note, "explains": explains}


# ------------------------------------------------------------------------------------------------
# components
# ------------------------------------------------------------------------------------------------


@functools.cache
def _esm_bundle() -> tuple[str, str, None]:
    """(bundle key, module text, css bundle) of `ESM_PATH` for the browser: the key is the text's
    SHA-256, so an edited module never meets a stale copy in the page's module cache."""
    text = ESM_PATH.read_text(encoding="utf-8")
    return hashlib.sha256(text.encode("utf-8")).hexdigest(), text, None


class LessonComponent(pn.custom.JSComponent):
    """A lesson component: `spec` (strict JSON) says which one and carries its data."""

    spec = param.String(default='{"role": "none"}', doc="the component's data, strict JSON")

    _esm = ESM_PATH
    # The module is plain JavaScript (no TypeScript, no JSX). Declaring it as its own bundle makes
    # Panel hand it to the browser as is: without this, every component on a page ran it through
    # Panel's in-browser TypeScript transform (sucrase) again, about 0.35 s on a lesson page.
    _bundle = ESM_PATH

    def __init__(self, data: dict[str, Any] | None = None, **params: Any) -> None:
        if data is not None:
            params["spec"] = self.encode(data)
        params.setdefault("sizing_mode", "stretch_width")
        super().__init__(**params)

    def _get_properties(self, doc: Any) -> dict[str, Any]:
        """Panel's properties, with the module always inlined under its content hash: in a served
        session Panel would otherwise point the browser at a component route (a relative URL that
        does not resolve from /lesson/<slug>), and the hash keeps one compiled module per page."""
        props: dict[str, Any] = super()._get_properties(doc)
        props["bundle"], props["esm"], props["css_bundle"] = _esm_bundle()
        return props

    @staticmethod
    def encode(data: dict[str, Any]) -> str:
        """`data` as the `spec` string: strict JSON (non-finite numbers as "nan"/"inf"/"-inf")."""
        return strictjson.dumps(data, indent=None)

    @property
    def data(self) -> Any:
        """`spec` read back (strictly)."""
        return strictjson.loads(self.spec)


class PredictionView(LessonComponent):
    """A prediction: the question, a choice or a number, 'Lock in my prediction'."""

    question = Child(doc="the question (Markdown)")


class ExerciseView(LessonComponent):
    """An exercise: prompt, answer box or choices, Check, hints one at a time, worked solution."""

    prompt = Child(doc="the prompt (Markdown)")
    hints = Children(doc="the hints (Markdown), shown one at a time")
    solution = Child(doc="the worked solution (Markdown), shown on request")


class LabView(LessonComponent):
    """A lab (`::: lab NAME`): drawn in the browser from the data its simulation computed."""


class LockMarker(LessonComponent):
    """First child of a `LockRegion`: shows a note while locked, opens the region when the
    prediction is answered."""


class LazySlot(LessonComponent):
    """Where a widget will be on a lesson page until the browser draws it: the page's script asks
    when the slot comes near the view (or in the background, one slot at a time, once nothing else
    is loading). Served, it sets `requested` and `pages.LazyWidget` builds the widget and swaps it
    in; exported, the widget's models wait in the slot's `tags` and the page swaps them in
    (`export.page._defer_widgets`). `spec`: `lazy_spec`."""

    requested = param.Boolean(default=False, doc="set by the page when the widget should be built")


def lazy_spec(name: str, title: str, sweep_ms: int = 1000, offline: bool = False) -> dict[str, Any]:
    """The data of a lazy slot: the widget's class name and title, the note it shows while it
    waits, how long after the page renders the background loading starts, and whether the
    widget's models are already in the page (`offline`: an exported page, where the slot's
    `tags` hold the widget's view and the page swaps it in) or come from the server."""
    return {"role": "lazy", "name": name, "title": title, "sweep_ms": sweep_ms, "offline": offline,
            "note": "The widget is loading; it is built when you scroll to it."}


def placed(obj: Any) -> Any:
    """`obj` as it sits on a page: a widget (a `pn.viewable.Viewer`) as its view, which remembers
    the widget in `_lowprec_widget` (the export finds a widget's controls through it, also inside
    a `LockRegion`); anything else as it is. (`layout.placed`: the same function.)"""
    if isinstance(obj, pn.viewable.Viewer):
        view: Any = pn.panel(obj)
        view._lowprec_widget = obj
        return view
    return obj


class LockRegion(pn.Column):
    """A `LockMarker` and, hidden until prediction `lock` is answered, `view` (a widget's view or an
    explanation). The region's element carries `data-locked-by`; `view` is built either way.
    An exporter that swaps a widget for its own view of it replaces `region.content.objects`."""

    def __init__(self, view: Any, lock: str, *, note: str = "", explains: bool = False) -> None:
        self.view = view
        self.lock = lock
        # a widget as its view that remembers the widget (the export finds a locked widget by it)
        self.content = pn.Column(placed(view), visible=False, sizing_mode="stretch_width", margin=0)
        # outside the hidden part: a refused URL value for the locked widget shows here at once
        self.alert = pn.pane.Alert("", alert_type="danger", visible=False, sizing_mode="stretch_width",
                                   css_classes=["lp-unlocked"])
        marker = LockMarker(lock_spec(lock, note=note, explains=explains))
        super().__init__(marker, self.alert, self.content, sizing_mode="stretch_width", margin=0)


#: how every explanation begins (content/README.md "What every lesson has"; tests/test_course.py)
EXPLAIN_LEAD = "What you saw and why"


def _markdown(text: str) -> pn.pane.Markdown:
    return pn.pane.Markdown(text, sizing_mode="stretch_width", margin=(0, 0))


def locked(view: Any, key: str, *, note: str | None = None) -> LockRegion:
    """`view` hidden until the prediction `key` ('<slug>/<id>') is answered."""
    text = "Answer the prediction above to unlock this widget." if note is None else note
    return LockRegion(view, key, note=text)


def block_view(block: Block, lesson_slug: str) -> pn.viewable.Viewable:
    """The Panel component of a prediction, explanation or exercise of lesson `lesson_slug`."""
    if isinstance(block, PredictionBlock):
        return PredictionView(prediction_spec(block, lesson_slug), question=_markdown(block.question))
    if isinstance(block, ExerciseBlock):
        return ExerciseView(exercise_spec(block, lesson_slug), prompt=_markdown(block.prompt),
                            hints=[_markdown(h) for h in block.hints], solution=_markdown(block.solution))
    if isinstance(block, LabBlock):
        view = LabView(lab_spec(block.name, dict(block.params), lesson_slug))
        if block.locked_by:
            return locked(view, block_key(lesson_slug, block.locked_by),
                          note="Answer the prediction above to open this lab.")
        return view
    if isinstance(block, ExplanationBlock):
        # the lesson's own lead ("What you saw and why: …", required by the course rules) is the
        # explanation's one heading, set in bold; the lock adds no second one
        text = block.text
        if text.startswith(EXPLAIN_LEAD + ":"):
            text = f"**{EXPLAIN_LEAD}:**" + text[len(EXPLAIN_LEAD) + 1:]
        return LockRegion(_markdown(text), block_key(lesson_slug, block.id), explains=True)
    raise TypeError(f"block_view takes a PredictionBlock, ExplanationBlock, ExerciseBlock or LabBlock; "
                    f"got {type(block).__name__}")
