"""Browser tests of issue 31's lesson components, served and exported (opened from disk), in Debian's
headless Chromium, on a probe lesson written here:

- an `order` exercise: the items move with their buttons, a wrong arrangement is told how many items
  sit in the right place, the right one is "correct"; a `classify` exercise: a category per item,
  checked; both by keyboard-reachable buttons and selects;
- the Transformer Engine placement lab, hidden until its prediction is answered: a named placement,
  `use_reentrant`, the stash gate; the four predictions must be locked in before the timeline shows;
  the outcome and the timeline are the model's (`simulations.studies.te_placement.run_placement`);
- the find-the-defect lab: a case and its controls, each control's result drawn from
  `simulations.studies.defect_hunt.hunt_lab`;
- no serious or critical axe violation in the components; no request leaves the server (or the disk);
  no console or page error.

Screenshots of these pages at 1400 and 390 px go to $LOWPREC_SHOTS when it is set.
"""

from __future__ import annotations

import os
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.browser import CHROMIUM
from tests.test_exercises_ui import Lesson, _axe_problems, wait_until

pytestmark = pytest.mark.ui

ROOT = Path(__file__).resolve().parents[1]

if not Path(CHROMIUM).exists():
    pytest.skip(f"{CHROMIUM} is not installed", allow_module_level=True)

SLUG = "labs"
PLACEMENT_PRED = f'[data-prediction="{SLUG}/inner-default"]'
HUNT_PRED = f'[data-prediction="{SLUG}/bitwise-is-not-enough"]'
ORDER_EX = f'[data-exercise="{SLUG}/experiment-order"]'
CLASSIFY_EX = f'[data-exercise="{SLUG}/hybrid-products"]'

LESSON = textwrap.dedent("""\
    ---
    title: Labs probe
    order: 1
    summary: The labs and the new answer kinds.
    goal: Check the labs.
    objectives:
      - Order and classify. [experiment-order, hybrid-products]
    ---

    # Labs probe

    ::: exercise experiment-order
    kind: order
    prompt: Order the steps.
    items: run a matched short experiment against the reference | promote the versioned recipe | test the casts bit for bit against the target backend | validate the converted artifact on real serving shapes | establish a stable higher-precision reference
    answer: example:promotion_order.order
    hint: Start from the step that needs nothing.
    solution: The reference first, and the promotion last.
    :::

    ::: exercise hybrid-products
    kind: classify
    prompt: Which formats does each GEMM multiply?
    items: forward Y = X W | activation gradient dX = dY Wᵀ | weight gradient dW = Xᵀ dY
    categories: both E4M3FN | one E4M3FN, one E5M2 | both E5M2
    answer: example:hybrid_products.classes
    hint: Only one product reads no gradient.
    solution: The forward reads two E4M3FN tensors, both backward GEMMs one of each.
    :::

    ::: predict inner-default
    kind: choice
    question: How often does the scale update?
    choices: never: it stays at 1.0 | once per step | twice per step
    answer: example:te_placement_questions.inner_default_updates
    :::

    ::: lab te-placement

    ::: explain inner-default
    What you saw and why: the placement lab explanation.
    :::

    ::: predict bitwise-is-not-enough
    kind: choice
    question: What can still be wrong?
    choices: nothing: a bitwise match proves the design correct | the consumer could read a descale that did not encode its codes | the recompute could have skipped a layer
    answer: example:defect_hunt.still_wrong
    :::

    ::: lab defect-hunt

    ::: explain bitwise-is-not-enough
    What you saw and why: the hunt explanation.
    :::
    """)

SERVE = """
import sys
from pathlib import Path
import panel as pn
from lowprec.app import layout, pages
from lowprec.app.lessons import load_lessons
(lesson,) = load_lessons(Path(sys.argv[1]))
port = int(sys.argv[2])
print("serving", flush=True)
pn.serve({"lesson/labs": lambda: pages.lesson_page(lesson).serve()}, port=port, address="127.0.0.1", show=False,
         websocket_origin=[f"127.0.0.1:{port}"], resources="server", title="labs",
         static_dirs={layout.STATIC_ROUTE: str(layout.STATIC_DIR)})
"""


@pytest.fixture(scope="module")
def course(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("labs") / "lessons"
    folder.mkdir()
    (folder / "01-labs.md").write_text(LESSON, encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
def server(course: Path) -> Iterator[str]:
    """The labs lesson served alone (SERVE), through the one serve-and-wait helper."""
    from lowprec.app.serving import serve_and_wait

    with serve_and_wait([sys.executable, "-c", SERVE, str(course), "{port}"], ready_path="/lesson/labs",
                        cwd=ROOT, timeout_s=600) as app:
        yield app.url


@pytest.fixture(scope="module")
def exported(course: Path, tmp_path_factory: pytest.TempPathFactory) -> str:
    from lowprec.app import lessons
    from lowprec.app.export import export

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(lessons, "DEFAULT_ROOT", course)
        (page,) = export(tmp_path_factory.mktemp("site"), ["lesson/labs"])
    return str(page.path.as_uri())


class LabsPage(Lesson):
    def open(self) -> None:
        self.page.goto(self.url)
        self.page.locator(ORDER_EX).wait_for(timeout=120_000)
        self.page.locator(PLACEMENT_PRED).wait_for(timeout=120_000)


def _shot(page: Any, name: str) -> None:
    out = os.environ.get("LOWPREC_SHOTS")
    if not out:
        return
    Path(out).mkdir(parents=True, exist_ok=True)
    for width in (1400, 390):
        page.set_viewport_size({"width": width, "height": 1000})
        page.wait_for_timeout(400)
        page.screenshot(path=str(Path(out) / f"{name}-{width}.png"), full_page=True)
    page.set_viewport_size({"width": 1400, "height": 1000})


def walk(lesson: LabsPage, name: str) -> None:
    from lowprec.simulations.studies.te_placement import run_placement, with_placement

    page = lesson.page
    lesson.open()

    # order: the shown order is wrong; two moves make it right
    order = page.locator(ORDER_EX)
    order.get_by_role("button", name="Check").click()
    wait_until(lambda: order.get_attribute("data-result") == "incorrect")
    assert "items are in the right place" in order.get_by_role("status").inner_text()
    want = ["establish a stable higher-precision reference", "test the casts bit for bit against the target backend",
            "run a matched short experiment against the reference",
            "validate the converted artifact on real serving shapes", "promote the versioned recipe"]

    def shown() -> list[str]:
        return [str(x) for x in order.locator("li[data-item]").evaluate_all("(els) => els.map(e => e.dataset.item)")]

    for pos, item in enumerate(want):  # move each wanted item up to its place, by its Up button
        while shown().index(item) > pos:
            order.get_by_role("button", name=f"Move “{item}” up").click()
    assert shown() == want
    order.get_by_role("button", name="Check").click()
    wait_until(lambda: order.get_attribute("data-result") == "correct")

    # classify: a category per item; an unfinished one is unreadable, a wrong one incorrect
    cls = page.locator(CLASSIFY_EX)
    cls.get_by_label("forward Y = X W").select_option("both E4M3FN")
    cls.get_by_role("button", name="Check").click()
    assert cls.get_by_role("status").inner_text() == "Pick a category for every item."
    cls.get_by_label("activation gradient dX = dY Wᵀ").select_option("both E5M2")
    cls.get_by_label("weight gradient dW = Xᵀ dY").select_option("one E4M3FN, one E5M2")
    cls.get_by_role("button", name="Check").click()
    wait_until(lambda: cls.get_attribute("data-result") == "incorrect")
    assert cls.get_by_role("status").inner_text().startswith("2 of 3 items are classified right.")
    cls.get_by_label("activation gradient dX = dY Wᵀ").select_option("one E4M3FN, one E5M2")
    cls.get_by_role("button", name="Check").click()
    wait_until(lambda: cls.get_attribute("data-result") == "correct")

    # the placement lab: locked until its prediction is answered
    lab = page.locator('[data-lab="te-placement"]')
    assert not lab.is_visible()
    pred = page.locator(PLACEMENT_PRED)
    pred.get_by_label("never: it stays at 1.0").check()
    pred.get_by_role("button", name="Lock in my prediction").click()
    wait_until(lambda: lab.is_visible())
    lab.get_by_role("button", name="inner placement").click()
    lab.get_by_label("Stash gate").select_option("entry")
    lab.get_by_role("button", name="Lock in and show the timeline").click()
    assert "Predict all four first" in lab.get_by_role("status").first.inner_text()
    for question, choice in (("stash its scale", "no"), ("restore a stash", "yes"), ("raise KeyError", "yes"),
                             ("update fire per step", "never")):
        lab.locator("fieldset", has_text=question).get_by_label(choice, exact=True).check()
    lab.get_by_role("button", name="Lock in and show the timeline").click()
    expected = run_placement(with_placement("inner", use_reentrant=True, gate="entry"))
    wait_until(lambda: lab.get_attribute("data-outcome") == expected.outcome())
    assert expected.outcome() == "KeyError in the first backward"
    assert lab.locator("tr.lp-error").count() == 1
    assert "global_fp8_buffer_pos_fwd_recompute" in lab.locator("tr.lp-error").inner_text()
    assert lab.locator(".lp-verdicts li[data-tone=correct]").count() == 4
    # after the fix the same placement runs, with the scale frozen; a new arrangement asks again
    lab.get_by_label("Stash gate").select_option("live")
    assert lab.locator("table").count() == 0
    for question, choice in (("stash its scale", "yes"), ("restore a stash", "yes"), ("raise KeyError", "no"),
                             ("update fire per step", "once")):
        lab.locator("fieldset", has_text=question).get_by_label(choice, exact=True).check()
    lab.get_by_role("button", name="Lock in and show the timeline").click()
    fixed = run_placement(with_placement("inner", use_reentrant=True, gate="live"))
    wait_until(lambda: lab.get_attribute("data-outcome") == fixed.outcome())
    assert fixed.outcome() == "runs, forward scale frozen at 1.0"
    assert lab.locator(".lp-verdicts li[data-tone=incorrect]").count() == 1  # "once" was wrong
    assert lab.locator("tr.lp-update").count() == 0
    _shot(page, f"{name}-placement")

    # the hunt: case E's state transitions, case D's ownership
    from lowprec.simulations.studies.defect_hunt import hunt_lab

    data = hunt_lab()
    hpred = page.locator(HUNT_PRED)
    hpred.get_by_label("the consumer could read a descale that did not encode its codes").check()
    hpred.get_by_role("button", name="Lock in my prediction").click()
    hunt = page.locator('[data-lab="defect-hunt"]')
    wait_until(lambda: hunt.is_visible())
    hunt.get_by_label("Case").select_option("E")
    hunt.get_by_role("button", name="Count state transitions").click()
    per_layer = ", ".join(str(c) for c in data["cases"]["E"]["transitions"]["per_layer"])
    wait_until(lambda: per_layer in hunt.locator('[data-control="transitions"].lp-control-result').inner_text())
    hunt.get_by_label("Case").select_option("D")
    assert hunt.locator(".lp-control-result").count() == 0  # controls are opened per case
    hunt.get_by_role("button", name="Reverse traversal and ownership").click()
    text = hunt.locator('[data-control="traversal"].lp-control-result').inner_text()
    assert f"{data['cases']['D']['traversal']['foreign_forward']} of 80 forward calls" in text
    assert hunt.get_attribute("data-case") == "D"
    _shot(page, f"{name}-hunt")

    # the page's checker is lesson_blocks.check_response, for the new kinds too
    from lowprec.app.lesson_blocks import check_response
    from lowprec.app.lessons import ExerciseBlock, load_lessons, render_blocks

    (probe,) = load_lessons(Path(lesson.course))
    for block in [b for b in render_blocks(probe) if isinstance(b, ExerciseBlock)]:
        right = str(block.answer.value)
        responses = [right, " " + right.replace(" | ", "|") + " ", " | ".join(reversed(right.split(" | "))),
                     right + " | extra", right.split(" | ")[0], "", "both E4M3FN | both E4M3FN | both E4M3FN",
                     " | ".join(block.answer.choices)]
        in_page = page.evaluate("([answer, rs]) => rs.map((r) => window.lowprecLesson.checkResponse(answer, r))",
                                [block.answer.to_dict(), responses])
        assert in_page == [check_response(block.answer, r) for r in responses], block.id

    assert _axe_problems(page) == []
    lesson.check_clean()


def test_labs_served(server: str, browser: Any, course: Path) -> None:
    lesson = LabsPage(browser, f"{server}/lesson/{SLUG}", course)
    try:
        walk(lesson, "served")
    finally:
        lesson.close()


def test_labs_exported_opened_from_disk(exported: str, browser: Any, course: Path) -> None:
    lesson = LabsPage(browser, exported, course)
    try:
        walk(lesson, "exported")
    finally:
        lesson.close()


@pytest.fixture(scope="module")
def exported_explorer(tmp_path_factory: pytest.TempPathFactory) -> str:
    from lowprec.app.export import export

    (page,) = export(tmp_path_factory.mktemp("explorer"), ["widget/BinExplorer"])
    return str(page.path.as_uri())


def test_a_shared_bin_link_opens_the_exported_explorer_on_its_value(exported_explorer: str, browser: Any) -> None:
    """A lesson's bin link, exported (`../widget/BinExplorer.html?format=…&value=…&convention=…`): the
    offline explorer reads the address and shows the model's cast of that value."""
    from lowprec.formats import explain_cast

    url = exported_explorer + "?format=E4M3FN&value=-27&convention=torch"
    want = explain_cast("-27", "E4M3FN", "torch")
    page = LabsPage(browser, url, Path("."))
    try:
        page.page.goto(url)
        box = page.page.get_by_role("textbox").first
        wait_until(lambda: box.input_value() == "-27", timeout=120)
        hexcode = f"0x{int(want.code):02X}"
        wait_until(lambda: page.page.get_by_text(hexcode).count() > 0, timeout=120)
        # without the address's state the page shows its own default value, not this one
        page.page.goto(exported_explorer)
        page.page.wait_for_timeout(1500)
        assert page.page.get_by_role("textbox").first.input_value() != "-27"
        page.check_clean()
    finally:
        page.close()
