"""Lesson components (lowprec.app.exercises and app/static/exercises.js), without a browser:

- the data each component carries: answers as `Answer.to_dict()`, the answer text, decode tables
  checked code by code against ml_dtypes, the keys the page and the progress store use;
- `lesson_body`: blocks become components, the widget after a prediction sits in a lock region
  (built, hidden), explanations are locked too;
- the page's checker (`checkResponse` / `parseResponse` of exercises.js, run in Node) agrees with
  `lesson_blocks.check_response` / `parse_response` on thousands of responses, numbers compared bit
  for bit, and its feedback reads the decode table as the oracle says.
"""

from __future__ import annotations

import json
import math
import random
import shutil
import struct
import subprocess
from fractions import Fraction
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
import panel as pn
import pytest

from lowprec import strictjson
from lowprec.app import exercises, pages
from lowprec.app.lesson_blocks import Answer, ExerciseBlock, PredictionBlock, check_response, parse_response
from lowprec.app.lessons import ExplanationBlock, load_lessons
from tests.lesson_fixture import write_lesson_folder

ROOT = Path(__file__).resolve().parents[1]
ESM = ROOT / "app" / "static" / "exercises.js"

def e4m3fn_value(code: int) -> float:
    """Oracle: ml_dtypes' decode of one E4M3FN code."""
    return float(np.array([code], np.uint8).view(ml_dtypes.float8_e4m3fn).astype(np.float64)[0])


def fraction_text(v: float) -> str:
    """Oracle text '13/8 × 2^1' of a nonzero finite value, by Fraction arithmetic."""
    frac, e = Fraction(abs(v)), 0
    while frac >= 2:
        frac, e = frac / 2, e + 1
    while frac < 1:
        frac, e = frac * 2, e - 1
    m = str(frac.numerator) if frac.denominator == 1 else f"{frac.numerator}/{frac.denominator}"
    return f"{'-' if v < 0 else ''}{m} × 2^{e}"


def _answer(kind: str, value: Any, **kw: Any) -> Answer:
    """An answer with the prose text a lesson would print ('448' for 448.0)."""
    text = format(value, "g") if isinstance(value, float) else str(value)
    return Answer(kind, value, "example:x.y", text, **kw)


def _exercise(answer: Answer, block_id: str = "e") -> ExerciseBlock:
    return ExerciseBlock(block_id, "prompt", answer, ("hint one", "hint two"), "solution")


# ------------------------------------------------------------------------------------------------
# the data the components carry
# ------------------------------------------------------------------------------------------------


def test_decode_table_of_an_8_bit_format_is_every_code_as_ml_dtypes_decodes_it() -> None:
    table = exercises.decode_table("E4M3FN", 0x45)
    assert sorted(map(int, table)) == list(range(256))
    for code in range(256):
        want = e4m3fn_value(code)
        got = table[str(code)]
        if math.isnan(want):
            assert math.isnan(got["value"]) and got["text"] == "nan", code
            continue
        assert struct.pack("<d", got["value"]) == struct.pack("<d", want), code  # -0 kept
        if want == 0:
            assert got["text"] == ("-0" if math.copysign(1, want) < 0 else "0")
            continue
        decimal, _, exact = got["text"].partition(" = ")
        assert float(decimal) == want, code  # the decimal text is exact
        assert (exact or decimal) in (fraction_text(want), decimal), code


def test_decode_table_is_the_callers_own() -> None:
    """The table is computed once per (format, answer) for every session; a caller that changes
    what it got changes nothing for the next one."""
    table = exercises.decode_table("E2M1", 0x5)
    want = {code: dict(entry) for code, entry in table.items()}
    table["5"]["text"] = "changed"
    del table["6"]
    assert exercises.decode_table("E2M1", 0x5) == want


def test_decode_table_of_a_wide_format_is_a_window_around_the_answer_and_its_sign_twin() -> None:
    answer = 0x3F80  # BF16 1.0
    table = exercises.decode_table("BF16", answer)
    w = exercises.DECODE_WINDOW
    expected = set(range(answer - w, answer + w + 1)) | set(range(0xBF80 - w, 0xBF80 + w + 1))
    assert set(map(int, table)) == expected
    for key, row in table.items():
        want = float(np.array([int(key)], np.uint16).view(ml_dtypes.bfloat16).astype(np.float64)[0])
        assert row["value"] == want, key


def test_exercise_spec_carries_the_answer_and_how_to_answer() -> None:
    code = int(np.array([3.3], np.float32).astype(ml_dtypes.float8_e4m3fn).view(np.uint8)[0])
    block = _exercise(_answer("code", code, format="E4M3FN", bits=8), "code-3-3")
    spec = exercises.exercise_spec(block, "bins")
    assert spec["role"] == "exercise" and spec["key"] == "bins/code-3-3"
    assert spec["answer"] == block.answer.to_dict()
    # 3.3 → 0x45 = 0 1000 101 = 13/8 × 2^1 = 3.25 (ml_dtypes)
    assert code == 0x45 and e4m3fn_value(code) == 3.25
    assert spec["answer_text"] == f"0x45 (0 1000 101) = 3.25 = {fraction_text(3.25)}"
    assert "hex like 0x45" in spec["how"] and "8 bits" in spec["unreadable"]
    assert len(spec["decode"]) == 256
    number = exercises.exercise_spec(_exercise(_answer("number", 448.0, tolerance=("rel", 0.01))), "s")
    assert "within 1 % of the answer" in number["how"] and "decode" not in number
    # the spec travels as strict JSON and reads back equal (NaN answers spelled "nan")
    nan_block = _exercise(_answer("number", math.nan))
    component = exercises.block_view(nan_block, "s")
    assert '"value":"nan"' in component.spec.replace(" ", "")
    assert math.isnan(float(strictjson.loads(component.spec)["answer"]["value"]))


def test_block_views_and_their_children() -> None:
    answer = _answer("choice", "over 90%", choices=("none", "over 90%"))
    pred = exercises.block_view(PredictionBlock("clip", "How much is **clipped**?", answer), "spike")
    assert isinstance(pred, exercises.PredictionView)
    assert pred.data["key"] == "spike/clip" and pred.data["answer_text"] == "over 90%"
    assert pred.question.object == "How much is **clipped**?"
    ex = exercises.block_view(_exercise(_answer("number", 1.0)), "spike")
    assert isinstance(ex, exercises.ExerciseView)
    assert [h.object for h in ex.hints] == ["hint one", "hint two"] and ex.solution.object == "solution"
    expl = exercises.block_view(ExplanationBlock("clip", "What you saw and why: because."), "spike")
    assert isinstance(expl, exercises.LockRegion) and expl.lock == "spike/clip"
    # the lesson's lead is the one heading (bold), not repeated by a label over it
    assert expl.view.object == "**What you saw and why:** because." and expl.content.visible is False
    marker = expl.objects[0]
    assert isinstance(marker, exercises.LockMarker)
    assert marker.data == {"role": "lock", "lock": "spike/clip", "note": "", "explains": True}
    assert exercises.block_view(ExplanationBlock("clip", "Because."), "spike").view.object == "Because."
    with pytest.raises(TypeError, match="got str"):
        exercises.block_view("text", "spike")  # type: ignore[arg-type]


def test_lesson_body_locks_the_first_widget_after_a_prediction(tmp_path: Path) -> None:
    (lesson,) = load_lessons(write_lesson_folder(tmp_path / "lessons"))
    objects, placed = pages.lesson_body(lesson)
    kinds = [type(o).__name__ for o in objects]
    assert kinds == ["Markdown", "PredictionView", "LockRegion", "LockRegion", "BinChallenge",
                     "ExerciseView", "ExerciseView"]
    region = objects[2]
    # refused URL values of the locked widget are reported in the region, outside its hidden part
    assert region.alert is placed[0].url_alert and region.alert.visible is False and placed[1].url_alert is None
    assert region.objects[1] is region.alert and "lp-unlocked" in region.alert.css_classes
    assert region.lock == "probe/overflow-torch" and region.content.visible is False
    assert region.view is placed[0].widget and placed[0].name == "Conventions"  # built, URL-synced
    assert region.objects[0].data["note"].startswith("Answer the prediction above")
    assert objects[3].view.object.startswith("torch saturates") and objects[3].objects[0].data["explains"]
    assert objects[4] is placed[1].widget  # the second widget is not locked
    assert [o.data["key"] for o in objects[5:]] == ["probe/smallest-normal-code", "probe/max-value"]
    # 2^-6 = 0 0001 000 in E4M3FN (ml_dtypes decodes 0x08 to 2^-6)
    assert e4m3fn_value(0x08) == 2.0**-6
    assert objects[5].data["answer_text"] == "0x08 (0 0001 000) = 0.015625 = 1 × 2^-6"
    page = pages.lesson_page(lesson, sync=False)
    assert not [a for a in page.render()[0].select(pn.pane.Alert) if a.visible and a.object]


# ------------------------------------------------------------------------------------------------
# the page's checker, run in Node, against check_response
# ------------------------------------------------------------------------------------------------

NODE = shutil.which("node")
needs_node = pytest.mark.skipif(NODE is None, reason="node is not installed (the JS checker runs in it)")

RUNNER = """
import * as lesson from "./exercises.mjs"
let input = ""
process.stdin.on("data", (d) => { input += d })
process.stdin.on("end", () => {
  const {checks, feedbacks} = JSON.parse(input)
  const bits = (x) => {
    const dv = new DataView(new ArrayBuffer(8)); dv.setFloat64(0, x)
    return dv.getBigUint64(0).toString(16).padStart(16, "0")
  }
  const out = {checks: [], feedbacks: []}
  for (const [answer, responses] of checks) {
    out.checks.push(responses.map((r) => {
      const got = lesson.parseResponse(answer, r)
      const parsed = got === null ? null : typeof got === "number" && answer.kind === "number"
        ? (Number.isNaN(got) ? "nan" : bits(got)) : got
      return [lesson.checkResponse(answer, r), parsed]
    }))
  }
  for (const [spec, response, tries] of feedbacks) out.feedbacks.push(lesson.feedback(spec, response, tries))
  process.stdout.write(JSON.stringify(out))
})
"""


def run_node(tmp_path: Path, payload: dict[str, Any]) -> Any:
    assert NODE is not None
    shutil.copyfile(ESM, tmp_path / "exercises.mjs")
    (tmp_path / "runner.mjs").write_text(RUNNER, encoding="utf-8")
    proc = subprocess.run([NODE, "runner.mjs"], input=json.dumps(payload), capture_output=True, text=True,
                          cwd=tmp_path, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


ANSWERS = [
    _answer("number", 448.0), _answer("number", 0.1), _answer("number", 448.0, tolerance=("abs", 0.5)),
    _answer("number", 0.1, tolerance=("rel", 1e-3)), _answer("number", math.nan), _answer("number", math.inf),
    _answer("number", -0.0), _answer("number", 5e-324, tolerance=("rel", 0.5)),
    _answer("number", -1.5, tolerance=("abs", 1e-300)),
    _answer("code", 0x45, format="E4M3FN", bits=8), _answer("code", 0x3, format="E2M1", bits=4),
    _answer("code", 0x3F80, format="BF16", bits=16),
    _answer("choice", "over 90%", choices=("none", "under 10%", "over 90%")),
    _answer("choice", "NaN", choices=("448", "NaN", "480")),
]

CURATED = [
    "448", " 448 ", "448.0", "4.48e2", "4.48E+2", "+448", "\u2212448", "-448", "4_48", "448.", ".5", "5.",
    "0x1.cp8", "0x1.CP+8", "0X1P-3", "0x.8p1", "0x1p", "0x1", "0x.p1", "0xp1", "1e", "e5", ".", "-", "+-1",
    "inf", "-Infinity", "INF", "+inFinity", "nan", "-nan", "NaN", "∞", "", "   ", "\t448\n", "\u00a0448",
    "\u0661\u0662", "448\u2009", "1,5", "1.5.5", "0b101", "0x45", "0100 0101", "01000101", "0b01000101",
    "0x1ff", "0x00000045", "0100_0101", " 0x45 ", "0 1000 101", "0011", "0x3", "0b11", "11", "0x3F80",
    "0011111110000000", "0x13F80", "0x1.fffffffffffff8p1023", "0x1.fffffffffffff7p1023", "0x1p1024",
    "-0x1p1024", "0x1p-1074", "0x1p-1075", "0x1.0000000000001p-1075", "0x3p-1076", "0x1.8p-1074",
    "0x1.0000000000000800p0", "0x1.0000000000000801p0", "0x1.0000000000001800p0", "0x0.0000000000001p-1022",
    "0x0p99999999999999999999", "0x1p-99999999999999999999", "0x1p99999999999999999999", "-0x0p0", "-0",
    "1e-400", "1e400", "-1e400", "0.1000000000000000055511151231257827", "2.4703282292062327e-324",
    "2.4703282292062328e-324", "9007199254740993", "0.1", "0.1001", "0.0999", "0.09990001", "-1.5",
    "-1.5000000000000002", "5e-324", "1e-323", "over 90%", " over 90% ", "Over 90%", "none", "448 ", "480",
    "0x1.99999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999p-4",
]

TOKENS = list("0123456789.eExXpP+-_ ") + ["\u2212", "\t", "a", "f", "F", "inf", "nan", "0x", "1", "0b", "01"]


def fuzz(seed: int, count: int) -> list[str]:
    rng = random.Random(seed)
    out = [''.join(rng.choice(TOKENS) for _ in range(rng.randint(1, 10))) for _ in range(count)]
    for _ in range(count // 2):  # hex floats with long mantissas, over the whole exponent range
        digits = "".join(rng.choice("0123456789abcdef") for _ in range(rng.randint(1, 22)))
        cut = rng.randint(0, len(digits))
        out.append(f"{rng.choice(['', '-', '+'])}0x{digits[:cut]}.{digits[cut:]}p{rng.randint(-1200, 1100)}")
    for _ in range(count // 2):  # decimals near doubles, with extra digits
        x = rng.choice([rng.uniform(-1000, 1000), rng.uniform(0, 1e-300), float(f"1e{rng.randint(-330, 310)}")])
        out.append(repr(x) + rng.choice(["", "1", "49", "5", "51", "0000001"]))
    for _ in range(count // 4):  # codes: hex and bit strings of every width nearby
        out.append(rng.choice([f"0x{rng.randint(0, 0x1FFFF):X}", format(rng.randint(0, 0xFFFF), "b").zfill(
            rng.choice([4, 8, 16, 12])), f"0b{rng.randint(0, 300):b}"]))
    return out


def _python_parsed(answer: Answer, response: str) -> Any:
    got = parse_response(answer, response)
    if got is None or answer.kind != "number":
        return got
    assert isinstance(got, float)
    return "nan" if math.isnan(got) else struct.pack(">d", got).hex()


@needs_node
def test_the_page_checker_agrees_with_check_response(tmp_path: Path) -> None:
    responses = CURATED + fuzz(0, 3000)
    checks = [[a.to_dict(), responses] for a in ANSWERS]
    out = run_node(tmp_path, {"checks": strictjson.to_jsonable(checks), "feedbacks": []})
    disagreements = []
    for answer, results in zip(ANSWERS, out["checks"]):
        for response, (ok, parsed) in zip(responses, results):
            want = (check_response(answer, response), _python_parsed(answer, response))
            if (ok, parsed) != want:
                disagreements.append((answer.kind, answer.value, response, (ok, parsed), want))
    assert disagreements == []
    # the table exercises every outcome
    assert sum(ok for results in out["checks"] for ok, _ in results) > 50
    assert sum(p is None for results in out["checks"] for _, p in results) > 1000


@needs_node
def test_the_page_feedback_reads_the_decode_table(tmp_path: Path) -> None:
    code_spec = exercises.exercise_spec(_exercise(_answer("code", 0x45, format="E4M3FN", bits=8)), "s")
    zero_spec = exercises.exercise_spec(_exercise(_answer("code", 0x00, format="E4M3FN", bits=8)), "s")
    number_spec = exercises.exercise_spec(_exercise(_answer("number", 448.0)), "s")
    choice_spec = exercises.exercise_spec(_exercise(_answer("choice", "b", choices=("a", "b"))), "s")
    cases = [(code_spec, "0x44", 0), (code_spec, "0x44", 1), (code_spec, "0100 0110", 0), (code_spec, "0x7F", 0),
             (code_spec, "0x45", 3), (code_spec, "0x145", 0), (zero_spec, "0x80", 0), (number_spec, "449", 0),
             (number_spec, "447", 1), (number_spec, "0x1.cp8", 0), (number_spec, "many", 0), (choice_spec, "a", 0)]
    out = run_node(tmp_path, {"checks": [], "feedbacks": strictjson.to_jsonable(cases)})["feedbacks"]
    # the oracle: ml_dtypes decodes 0x44 to 3 and 0x46 to 3.5, either side of the answer 3.25
    assert e4m3fn_value(0x44) == 3.0 and e4m3fn_value(0x46) == 3.5 and math.isnan(e4m3fn_value(0x7F))
    answer = f"0x45 (0 1000 101) = 3.25 = {fraction_text(3.25)}"
    assert out == [
        {"result": "incorrect", "message": f"0x44 decodes to 3 = {fraction_text(3.0)}, too low. Try again, or open a hint."},
        {"result": "incorrect", "message": f"0x44 decodes to 3 = {fraction_text(3.0)}, too low. The answer: {answer}."},
        {"result": "incorrect", "message": f"0x46 decodes to 3.5 = {fraction_text(3.5)}, too high. Try again, or open a hint."},
        {"result": "incorrect", "message": "0x7F is a NaN code of E4M3FN. Try again, or open a hint."},
        {"result": "correct", "message": f"Right: {answer}."},
        {"result": "unreadable", "message": code_spec["unreadable"]},
        {"result": "incorrect", "message": "0x80 decodes to -0, the answer's value, but it is another code "
                                           "(look at the sign bit, or which NaN). Try again, or open a hint."},
        {"result": "incorrect", "message": "449 is too high. Try again, or open a hint."},
        {"result": "incorrect", "message": "447 is too low. The answer: 448."},
        {"result": "correct", "message": "Right: 448."},
        {"result": "unreadable", "message": number_spec["unreadable"]},
        {"result": "incorrect", "message": "Not “a”. Try again, or open a hint."},
    ]


PROGRESS_RUNNER = """
const store = new Map()
let refuse = false
const events = []
globalThis.window = {
  localStorage: {
    getItem: (k) => { if (refuse) throw new Error("SecurityError"); return store.has(k) ? store.get(k) : null },
    setItem: (k, v) => { if (refuse) throw new Error("SecurityError"); store.set(k, String(v)) },
  },
  dispatchEvent: (e) => { events.push([e.type, e.detail]) },
}
const lesson = await import("./exercises.mjs")
const out = {}
out.empty = lesson.readProgress()
lesson.writeProgress("a/x", "incorrect")
lesson.writeProgress("a/x", "correct")
lesson.writeProgress("a/p", "answered")
out.stored = JSON.parse(store.get("lowprec-progress"))
out.events = events.slice()
store.set("lowprec-progress", "[1, 2")
out.broken = lesson.readProgress()
store.set("lowprec-progress", "[1, 2]")
out.array = lesson.readProgress()
refuse = true
lesson.writeProgress("b/y", "correct")
out.refused = lesson.readProgress()
process.stdout.write(JSON.stringify(out))
"""


@needs_node
def test_the_progress_store(tmp_path: Path) -> None:
    """localStorage 'lowprec-progress' holds the last result per '<slug>/<id>', every write
    dispatches 'lowprec-progress' with {key, result}; a broken or non-object value reads as empty;
    refused storage falls back to a store shared on window for the page's life."""
    assert NODE is not None
    shutil.copyfile(ESM, tmp_path / "exercises.mjs")
    (tmp_path / "progress.mjs").write_text(PROGRESS_RUNNER, encoding="utf-8")
    proc = subprocess.run([NODE, "progress.mjs"], capture_output=True, text=True, cwd=tmp_path, timeout=120,
                          check=False)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["empty"] == {}
    assert out["stored"] == {"a/x": "correct", "a/p": "answered"}
    assert out["events"] == [["lowprec-progress", {"key": "a/x", "result": "incorrect"}],
                             ["lowprec-progress", {"key": "a/x", "result": "correct"}],
                             ["lowprec-progress", {"key": "a/p", "result": "answered"}]]
    assert out["broken"] == {} and out["array"] == {}
    assert out["refused"] == {"a/x": "correct", "a/p": "answered", "b/y": "correct"}


def test_components_ship_their_module_inline_as_a_bundle() -> None:
    """Every lesson component carries the module's text under its SHA-256 as `bundle`: the browser
    neither runs Panel's TypeScript transform on it per component nor fetches it from a component
    route (served or exported alike)."""
    import hashlib

    from bokeh.document import Document

    from lowprec.app.exercises import ESM_PATH, LockMarker

    text = ESM_PATH.read_text(encoding="utf-8")
    model = LockMarker().get_root(Document())
    assert model.bundle == hashlib.sha256(text.encode("utf-8")).hexdigest()
    assert model.esm == text
