"""The one widget base (`app.widgets._base.RecordWidget`, issue 27 item 5): every widget of the
registry derives from it and none runs its own copy of the update protocol; the protocol itself —
a refused request keeps the last view marked stale and the session working, a superseded run never
paints, an unexpected error is reported and re-raised — checked on a small widget of its own."""

from __future__ import annotations

import ast
import inspect
import threading
import textwrap
from typing import Any

import panel as pn
import pytest

from lowprec.app import work
from lowprec.app.params import config_widget
from lowprec.app.widgets import WIDGETS, get_widget_class
from lowprec.app.widgets._base import PROTOCOL, RecordWidget
from lowprec.config import config_record, knob
from tests.test_hardening import _fake_document

#: names the widgets used for their own copies of the protocol before the base (none may return)
OLD_COPIES = ("_update", "_on_change", "_fail", "_apply")
#: calls that belong to the protocol: a widget module making them runs its own copy of it
PROTOCOL_CALLS = ("work.submit", "work.post_generation", "work.claim_slot", "set_alert", "self.param.watch(")


@pytest.mark.parametrize("name", list(WIDGETS))
def test_every_registered_widget_derives_from_the_base_and_keeps_its_protocol(name: str) -> None:
    cls = get_widget_class(name)
    assert issubclass(cls, RecordWidget) and cls.config_class is WIDGETS[name].config_class()
    mro = cls.__mro__[:cls.__mro__.index(RecordWidget)]
    for klass in mro:
        own = set(vars(klass))
        assert not own & set(PROTOCOL), f"{klass.__name__} redefines {sorted(own & set(PROTOCOL))}"
        assert not own & set(OLD_COPIES), f"{klass.__name__} defines {sorted(own & set(OLD_COPIES))}"
        if klass.__module__.startswith("lowprec.app.widgets."):
            source = inspect.getsource(klass)
            for call in PROTOCOL_CALLS:
                assert call not in source, f"{klass.__name__} calls {call}: the protocol is RecordWidget's"
    # the record's knobs are the parameters, every one watched unless the widget says otherwise
    knobs = {k.name for k in __import__("lowprec.config", fromlist=["fields_of"]).fields_of(cls.config_class)}
    assert knobs <= set(cls.param) and set(cls.watched_names()) == knobs


def test_the_protocol_methods_are_defined_in_the_base() -> None:
    for name in PROTOCOL:
        assert name in vars(RecordWidget), name
    tree = ast.parse(textwrap.dedent(inspect.getsource(RecordWidget)))
    defined = {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
    assert set(PROTOCOL) <= defined


# ---- a small widget of the base's own: n squared, refused when negative --------------------------

@config_record
class SquareConfig:
    """A toy record: one integer."""

    n: int = knob(2, "the number squared", bounds=(-100, 100))
    seed: int = knob(0, "a seed, typed (no slider over 2^32 values)", bounds=(0, 2**32 - 1), widget="input")


@config_widget(SquareConfig)
class Square(RecordWidget):
    off_loop = True

    def _build(self) -> None:
        self.painted: list[int] = []
        self.stale_marks: list[bool] = []
        self.gates: dict[int, threading.Event] = {}
        self.shown = self._work(self._request(), None)
        self._pane = pn.pane.Markdown(str(self.shown))

    def _work(self, request: Any, generation: int | None) -> int:
        n = int(request.n)
        gate = self.gates.get(n)
        if gate is not None:
            gate.wait(30)
        if n < 0:
            raise ValueError(f"n must be at least 0, got {n} <b>")
        if n == 99:
            raise KeyError("a bug")
        return n * n

    def _paint(self, request: Any, outcome: int) -> None:
        self.painted.append(outcome)
        self.shown = outcome
        self._pane.object = str(outcome)

    def _show_stale(self, stale: bool) -> None:
        self.stale_marks.append(stale)

    def __panel__(self) -> pn.viewable.Viewable:
        return pn.Column(self.record_controls(), self._alert, self._pane)


def test_inline_a_refused_request_keeps_the_view_marked_stale_and_the_next_one_works() -> None:
    w = Square()
    assert w.shown == 4 and w.error == "" and not w.stale
    w.n = 3
    assert w.shown == 9 and w.painted == [9] and not w.stale
    w.n = -5
    assert w.error == "Invalid input: n must be at least 0, got -5 <b>"
    assert w._alert.visible and "\\<b\\>" in str(w._alert.object)  # escaped: text, not markup
    assert w.stale and w.stale_marks[-1] is True and w.shown == 9 and w.painted == [9]
    with pytest.raises(ValueError, match="must be at most 100"):
        w.n = 200  # out of the knob's bounds: the parameter itself refuses it, nothing runs
    w.n = 5  # the session still works: the view, the message and the mark follow
    assert w.shown == 25 and w.error == "" and not w._alert.visible and not w.stale and w.stale_marks[-1] is False


def test_served_a_superseded_run_never_paints_and_a_refusal_stops_the_spinner(monkeypatch: pytest.MonkeyPatch) -> None:
    w = Square()
    doc = _fake_document()
    monkeypatch.setattr(work, "served_document", lambda: doc)
    loop = threading.get_ident()
    threads: list[int] = []
    arrived: list[Any] = []  # every outcome that came back to the loop, painted or not
    real_work, real_submit = Square._work, work.submit

    def spy(self: Square, request: Any, generation: int | None) -> int:
        threads.append(threading.get_ident())
        return real_work(self, request, generation)

    def counting_submit(doc: Any, compute: Any, finish: Any) -> Any:
        def counted(outcome: work.Outcome) -> None:
            arrived.append(outcome.value)
            finish(outcome)
        return real_submit(doc, compute, counted)

    monkeypatch.setattr(Square, "_work", spy)
    monkeypatch.setattr(work, "submit", counting_submit)
    w.gates[7] = threading.Event()
    w.n = 7  # held until a newer request exists
    assert w.busy and w.painted == []
    w.n = 8
    doc.drain(until=lambda: not w.busy and arrived == [64])
    w.gates[7].set()
    doc.drain(until=lambda: len(arrived) == 2)
    # the older run finished after the newer one was shown: its 49 came back and was dropped
    assert sorted(arrived) == [49, 64] and w.painted == [64] and w.shown == 64 and not w.busy
    assert len(threads) == 2 and all(t != loop for t in threads)
    # a run in flight superseded by a request its computation refuses: the refusal shows, the
    # superseded result never paints, the spinner stops
    w.gates[9] = threading.Event()
    w.n = 9
    assert w.busy
    w.n = -1
    doc.drain(until=lambda: not w.busy)
    w.gates[9].set()
    doc.drain(until=lambda: len(arrived) == 4)
    assert w.painted == [64] and w.error.startswith("Invalid input: n must be at least 0") and w.stale
    w.n = 4
    doc.drain(until=lambda: not w.busy and w.shown == 16)
    assert w.error == "" and not w.stale and w.painted == [64, 16]


def test_served_a_request_the_record_refuses_stops_a_run_in_flight(monkeypatch: pytest.MonkeyPatch) -> None:
    @config_record
    class PairConfig:
        """Two integers; lo must not exceed hi."""

        lo: int = knob(1, "low")
        hi: int = knob(2, "high")

        def __post_init__(self) -> None:
            if self.lo > self.hi:
                raise ValueError(f"lo={self.lo} is above hi={self.hi}")

    @config_widget(PairConfig)
    class Pair(RecordWidget):
        off_loop = True

        def _build(self) -> None:
            self.painted: list[int] = []
            self.gate = threading.Event()
            self.gate.set()

        def _work(self, request: Any, generation: int | None) -> int:
            self.gate.wait(30)
            return int(request.hi - request.lo)

        def _paint(self, request: Any, outcome: int) -> None:
            self.painted.append(outcome)

    w = Pair()
    doc = _fake_document()
    monkeypatch.setattr(work, "served_document", lambda: doc)
    w.gate.clear()
    w.hi = 10
    assert w.busy
    w.lo = 50  # refused on the loop (the record): the run in flight is superseded, the spinner stops
    assert not w.busy and "lo=50 is above hi=10" in w.error and w.stale
    w.gate.set()
    with pytest.raises(AssertionError, match="did not finish"):
        doc.drain(timeout=1.0, until=lambda: bool(w.painted))
    assert w.painted == [] and w.stale  # the superseded run's result never painted


def test_served_an_unexpected_error_is_shown_and_raised_and_the_session_keeps_working(
        monkeypatch: pytest.MonkeyPatch) -> None:
    w = Square()
    doc = _fake_document()
    monkeypatch.setattr(work, "served_document", lambda: doc)
    w.n = 99
    with pytest.raises(KeyError, match="a bug"):
        doc.drain(until=lambda: not w.busy)
    assert w.error == "Invalid input: internal error (KeyError); see the server log" and w.stale and w.shown == 4
    w.n = 6
    doc.drain(until=lambda: not w.busy)
    assert w.shown == 36 and w.error == "" and not w.stale


def test_controls_are_generated_from_the_record() -> None:
    w = Square()
    controls = w.record_controls()
    assert list(controls._widgets) == ["n", "seed"] and controls._widgets["n"].name == "n"
    assert isinstance(controls._widgets["seed"], pn.widgets.IntInput)  # the record's typed-entry hint
    wide = w.record_controls(["seed"], {"seed": {"width": 123}})
    assert list(wide._widgets) == ["seed"] and isinstance(wide._widgets["seed"], pn.widgets.IntInput)
    assert wide._widgets["seed"].width == 123
