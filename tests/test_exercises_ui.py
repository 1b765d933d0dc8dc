"""Browser tests of the lesson components (app/exercises.py, app/static/exercises.js) on the probe
lesson (tests/lesson_fixture.py), served and exported, in Debian's headless Chromium:

- the widget after a prediction and the prediction's explanation are hidden until it is answered
  (the widget is there, built, once revealed);
- a wrong exercise answer gives data-result="incorrect" with the decoded reason, a right one
  "correct"; hints open one at a time, the solution on request; everything works by keyboard;
- progress is written to localStorage "lowprec-progress" with a "lowprec-progress" window event,
  and a reload restores every mark and the open lock;
- the bin challenge: toggling bits and checking gives the model's verdict;
- no serious or critical axe violation in the components; no request leaves the server (or, for
  the exported page, the disk); no console or page error.

The exported page is written by `app/export/` itself, with the probe lesson as the course
(`export_for_test`).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pytest

from tests.browser import CHROMIUM, WatchedPage
from tests.lesson_fixture import write_lesson_folder

pytestmark = pytest.mark.ui

ROOT = Path(__file__).resolve().parents[1]

if not Path(CHROMIUM).exists():
    pytest.skip(f"{CHROMIUM} is not installed", allow_module_level=True)

KEY = "lowprec-progress"
CODE_EX = '[data-exercise="probe/smallest-normal-code"]'
NUMBER_EX = '[data-exercise="probe/max-value"]'
PREDICTION = '[data-prediction="probe/overflow-torch"]'
LOCKS = '[data-locked-by="probe/overflow-torch"]'

SERVE = """
import sys
from pathlib import Path
import panel as pn
from lowprec.app import layout, pages
from lowprec.course.lessons import load_lessons
(lesson,) = load_lessons(Path(sys.argv[1]))
port = int(sys.argv[2])
print("serving", flush=True)
pn.serve({"lesson/probe": lambda: pages.lesson_page(lesson).serve()}, port=port, address="127.0.0.1", show=False,
         websocket_origin=[f"127.0.0.1:{port}"], resources="server", title="probe",
         static_dirs={layout.STATIC_ROUTE: str(layout.STATIC_DIR)})  # the site's CSS/JS, as lowprec serve
"""


def wait_until(condition: Any, timeout: float = 30.0, interval: float = 0.1) -> Any:
    end = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > end:
            raise AssertionError(f"condition not met within {timeout} s")
        time.sleep(interval)


@pytest.fixture(scope="module")
def course(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_lesson_folder(tmp_path_factory.mktemp("course") / "lessons")


@pytest.fixture(scope="module")
def server(course: Path) -> Iterator[str]:
    """The probe lesson served alone (SERVE), through the one serve-and-wait helper."""
    from lowprec.app.serving import serve_and_wait

    with serve_and_wait([sys.executable, "-c", SERVE, str(course), "{port}"], ready_path="/lesson/probe",
                        cwd=ROOT) as app:
        yield app.url


def export_for_test(course: Path, out: Path) -> Path:
    """The probe lesson's page written by `lowprec export` (app/export/) with the probe lesson as
    the whole course: assets once under _static/, the document embedded, widgets without a live
    offline control disabled; the lesson components stay live."""
    from lowprec.course import lessons
    from lowprec.app.export import export

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(lessons, "DEFAULT_ROOT", course)
        (page,) = export(out, ["lesson/probe"])
    return page.path


@pytest.fixture(scope="module")
def exported(course: Path, tmp_path_factory: pytest.TempPathFactory) -> str:
    return export_for_test(course, tmp_path_factory.mktemp("site")).as_uri()


class Lesson(WatchedPage):
    """The probe lesson in a fresh page (its own context, so its own localStorage); requests may go only to
    `host` (served) or to files (exported), besides blob:/data: URLs."""

    def __init__(self, browser: Any, url: str, course: Path) -> None:
        self.url = url
        self.course = course
        host = urlparse(url).netloc
        served = url.startswith("http")

        def allow(u: str) -> bool:
            parsed = urlparse(u)
            if parsed.scheme in ("data", "blob"):
                return True
            return parsed.netloc == host if served else parsed.scheme == "file"

        super().__init__(browser, allow, timeout_ms=90_000)  # a page in its own context: own storage

    def open(self) -> None:
        self.page.goto(self.url)
        self.page.locator(PREDICTION).wait_for(timeout=90_000)
        self.page.locator(NUMBER_EX).wait_for(timeout=90_000)

    def attr(self, selector: str, name: str) -> Any:
        return self.page.locator(selector).first.get_attribute(name)

    def states(self) -> list[str]:
        return [str(self.page.locator(LOCKS).nth(i).get_attribute("data-state")) for i in range(2)]

    def progress(self) -> Any:
        import json

        raw = self.page.evaluate(f"() => window.localStorage.getItem({KEY!r})")
        return None if raw is None else json.loads(raw)

    def check_clean(self) -> None:
        assert self.outside == [], f"requests outside: {self.outside}"
        assert self.console_errors == [], self.console_errors
        assert self.page_errors == [], self.page_errors

    def close(self) -> None:
        self.page.close()


def _axe_problems(page: Any) -> list[str]:
    from axe_playwright_python.sync_playwright import Axe

    # preload off: axe would fetch every stylesheet for its CSSOM rules (file:// refuses the fetch)
    results = Axe().run(page, options={"resultTypes": ["violations"], "preload": False})
    problems = []
    for v in results.response["violations"]:
        if v["impact"] not in ("serious", "critical"):
            continue
        for node in v["nodes"]:
            if "lp-" in node["html"] or any("lp-" in str(t) for t in node["target"]):
                problems.append(f"{v['id']} ({v['impact']}): {node['html'][:120]}")
    return problems


def walk_the_lesson(lesson: Lesson) -> None:
    """The whole learner path on one page (served or exported)."""
    page = lesson.page
    lesson.open()
    page.evaluate("() => { window.__progress = []; window.addEventListener('lowprec-progress',"
                  " (e) => window.__progress.push(e.detail)) }")
    # locked: the widget after the prediction and the explanation are built but hidden
    wait_until(lambda: lesson.states() == ["locked", "locked"])
    assert page.get_by_text("Answer the prediction above to unlock this widget.").is_visible()
    assert page.get_by_text("torch saturates").count() == 1 and not page.get_by_text("torch saturates").is_visible()
    conventions_table = page.get_by_text("triton_nvidia").first
    assert not conventions_table.is_visible()

    # a wrong code: incorrect with the decoded reason; then right, typed as bits
    code = page.locator(CODE_EX)
    code.get_by_label("Your answer").fill("0x09")
    code.get_by_role("button", name="Check").click()
    wait_until(lambda: lesson.attr(CODE_EX, "data-result") == "incorrect")
    # 0x09 = 0 0001 001 = 9/8 × 2^-6 = 0.017578125, above the answer 2^-6
    assert code.get_by_role("status").inner_text() == (
        "0x09 decodes to 0.017578125 = 9/8 × 2^-6, too high. Try again, or open a hint.")
    assert lesson.progress() == {"probe/smallest-normal-code": "incorrect"}
    code.get_by_label("Your answer").fill("0000 1000")
    code.get_by_role("button", name="Check").click()
    wait_until(lambda: lesson.attr(CODE_EX, "data-result") == "correct")
    assert code.get_by_role("status").inner_text() == "Right: 0x08 (0 0001 000) = 0.015625 = 1 × 2^-6."

    # hints one at a time, the solution on request
    assert not code.get_by_text("The exponent field of the smallest normal is 1.").is_visible()
    code.get_by_role("button", name="Show hint 1 of 2").click()
    assert code.get_by_text("The exponent field of the smallest normal is 1.").is_visible()
    assert not code.get_by_text("The bias is 7").is_visible()
    code.get_by_role("button", name="Show hint 2 of 2").click()
    assert code.get_by_text("The bias is 7").is_visible()
    assert code.get_by_role("button", name="All hints shown").is_disabled()
    solution = code.get_by_role("button", name="Show the worked solution")
    assert solution.get_attribute("aria-expanded") == "false"
    solution.click()
    assert code.get_by_text("Sign 0, exponent 0001").is_visible()
    assert code.get_by_role("button", name="Hide the worked solution").get_attribute("aria-expanded") == "true"

    # by keyboard: type a number and press Enter (the form submits); a wrong one first
    number = page.locator(NUMBER_EX)
    box = number.get_by_label("Your answer")
    box.focus()
    page.keyboard.type("449.5")
    page.keyboard.press("Enter")
    wait_until(lambda: lesson.attr(NUMBER_EX, "data-result") == "incorrect")
    assert number.get_by_role("status").inner_text() == "449.5 is too high. Try again, or open a hint."
    box.fill("")
    box.focus()
    page.keyboard.type("0x1.c1p8")  # (1 + 193/256) × 2^8 = 449: wrong again, so the answer is told
    page.keyboard.press("Enter")
    wait_until(lambda: "The answer: 448." in number.get_by_role("status").inner_text())
    box.fill("448.25")
    page.keyboard.press("Enter")
    wait_until(lambda: lesson.attr(NUMBER_EX, "data-result") == "correct")

    # the prediction, by keyboard: pick NaN with the arrow keys, Tab to the button, Enter
    pred = page.locator(PREDICTION)
    pred.get_by_label("448").focus()
    page.keyboard.press("ArrowDown")
    assert pred.get_by_label("NaN").is_checked()
    page.keyboard.press("Tab")
    focused = page.evaluate("() => { let a = document.activeElement; while (a && a.shadowRoot && "
                            "a.shadowRoot.activeElement) a = a.shadowRoot.activeElement; const s = "
                            "getComputedStyle(a); return [a.textContent, s.outlineStyle, s.outlineWidth] }")
    assert focused == ["Lock in my prediction", "solid", "3px"]  # visible focus
    page.keyboard.press("Enter")
    wait_until(lambda: lesson.attr(PREDICTION, "data-result") == "answered")
    assert pred.get_by_role("status").inner_text().startswith(
        "You predicted “NaN”. The model gives 448, not what you predicted.")
    assert pred.get_by_role("button", name="Lock in my prediction").is_disabled()
    wait_until(lambda: lesson.states() == ["open", "open"])
    wait_until(lambda: conventions_table.is_visible())  # the widget, built server side, now shows
    assert page.get_by_text("torch saturates").is_visible()
    assert not page.get_by_text("Answer the prediction above to unlock this widget.").is_visible()
    expected = {"probe/smallest-normal-code": "correct", "probe/max-value": "correct",
                "probe/overflow-torch": "answered"}
    assert lesson.progress() == expected
    events = page.evaluate("() => window.__progress")
    assert events[-1] == {"key": "probe/overflow-torch", "result": "answered"} and len(events) == 6

    # the bin challenge: 0x1C first (too low), then 0x1D = 0 0011 101 (right)
    from lowprec.course.challenge import ChallengeConfig, bin_challenge

    challenge = bin_challenge(ChallengeConfig(value="0.1", format="E4M3FN", convention="torch"))
    box_ = page.locator('[data-challenge="E4M3FN:0.1:torch"]')
    for bit in ("bit 4 (exponent)", "bit 3 (exponent)", "bit 2 (mantissa)"):
        box_.get_by_role("button", name=bit, exact=True).click()
    assert box_.get_attribute("data-code") == "0x1C"
    box_.get_by_role("button", name="Check this code").click()
    wait_until(lambda: box_.get_attribute("data-result") == "incorrect")
    assert box_.get_by_role("status").inner_text() == challenge.check(0x1C).text
    box_.get_by_role("button", name="bit 0 (mantissa)", exact=True).focus()
    page.keyboard.press("Space")
    assert box_.get_attribute("data-code") == "0x1D" and box_.get_attribute("data-result") is None
    assert box_.get_by_role("button", name="bit 0 (mantissa)", exact=True).get_attribute("aria-pressed") == "true"
    box_.get_by_role("button", name="Check this code").click()
    wait_until(lambda: box_.get_attribute("data-result") == "correct")
    assert box_.get_by_role("status").inner_text() == challenge.check(0x1D).text

    assert _axe_problems(page) == []

    # the checker the page runs is the one tested against check_response (tests/test_exercises.py)
    from lowprec.course.lesson_blocks import check_response
    from lowprec.course.lessons import ExerciseBlock, load_lessons, render_blocks

    (probe,) = load_lessons(Path(lesson.course))
    blocks = [b for b in render_blocks(probe) if isinstance(b, ExerciseBlock)]
    for block in blocks:
        responses = ["0x08", "0000 1000", "0x09", "448", "448.6", "0x1.cp8", "nan", " 447.5 ", "x"]
        in_page = page.evaluate("([answer, rs]) => rs.map((r) => window.lowprecLesson.checkResponse(answer, r))",
                                [block.answer.to_dict(), responses])
        assert in_page == [check_response(block.answer, r) for r in responses]

    # a reload keeps every mark and the open lock
    page.reload()
    lesson.open()
    wait_until(lambda: lesson.attr(CODE_EX, "data-result") == "correct")
    assert lesson.attr(NUMBER_EX, "data-result") == "correct"
    assert lesson.attr(PREDICTION, "data-result") == "answered"
    wait_until(lambda: lesson.states() == ["open", "open"])
    assert page.get_by_text("torch saturates").is_visible()
    assert lesson.progress() == expected
    lesson.check_clean()


def test_served_lesson(server: str, browser: Any, course: Path) -> None:
    lesson = Lesson(browser, f"{server}/lesson/probe", course)
    try:
        walk_the_lesson(lesson)
    finally:
        lesson.close()


def test_exported_lesson_opened_from_disk(exported: str, browser: Any, course: Path) -> None:
    lesson = Lesson(browser, exported, course)
    try:
        walk_the_lesson(lesson)
    finally:
        lesson.close()


def test_a_broken_progress_store_is_read_as_empty(exported: str, browser: Any, course: Path) -> None:
    lesson = Lesson(browser, exported, course)
    try:
        lesson.page.goto(exported)
        lesson.page.evaluate(f"() => window.localStorage.setItem({KEY!r}, '[1, 2')")
        lesson.open()
        wait_until(lambda: lesson.states() == ["locked", "locked"])
        assert lesson.attr(CODE_EX, "data-result") is None
        code = lesson.page.locator(CODE_EX)
        code.get_by_label("Your answer").fill("0x08")
        code.get_by_role("button", name="Check").click()
        wait_until(lambda: lesson.progress() == {"probe/smallest-normal-code": "correct"})
        lesson.check_clean()
    finally:
        lesson.close()
