"""Regression tests of issue 16 ("Hardening"): every failure it lists, checked against an oracle or
a stated rule. Escaping (app.text), strict API inputs (formats, simulations), the parse_value
grammar, bounded work (config.check_budget: CLI with --force, pages), output paths checked before
any work, and the off-loop update protocol of the simulation widgets (app.work)."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import panel as pn
import pytest

from lowprec import formats
from lowprec.app.cli import main as cli_main
from lowprec.config import APP_BUDGET, CLI_BUDGET, Budget, BudgetError, Cost, check_budget, option_name
from lowprec.simulations.studies import attention, spike
from lowprec.simulations.scaling import delayed
from lowprec.simulations import mx, nvfp4
from lowprec.simulations.framework.io import check_output_path

# ------------------------------------------------------------------------------------------------
# escaping: user text is data, never HTML
# ------------------------------------------------------------------------------------------------

PAYLOADS = ["<img src=x onerror=alert(1)>", "<script>alert(1)</script>", "\"><svg onload=alert(1)>",
            "[x](javascript:alert(1))", "<b class=x>bold</b>", "**bold** _i_ $x$ `c` &lt; &amp;",
            # Markdown that needs no <, [ or *: a heading, a list, a backslash that would escape
            # the escape of the * after it, a table row, strike-through
            "# not a heading", "- not a list", "1. not a list either", "\\*not emphasis\\*",
            "| a | b |", "~~not struck~~"]


def _rendered(markdown: str) -> str:
    """What Panel's Markdown pane sends to the browser for `markdown` (markdown-it, as served)."""
    import html

    import panel as pn

    return html.unescape(pn.pane.Markdown(markdown)._transform_object(markdown)["object"])


@pytest.mark.parametrize("payload", PAYLOADS)
def test_as_text_renders_user_text_literally(payload: str) -> None:
    from lowprec.app.text import as_text

    out = _rendered(as_text(payload))
    # the rendered HTML is one paragraph whose text, unescaped once, is the payload itself
    import html
    import re

    inner = re.fullmatch(r"<p>(.*)</p>\s*", out, re.S)
    assert inner is not None, out
    assert html.unescape(inner.group(1)) == payload
    assert "<img" not in inner.group(1) and "<script" not in inner.group(1) and "<a " not in inner.group(1)


def test_as_text_clips_long_text() -> None:
    from lowprec.app.text import MAX_SHOWN, as_text

    out = as_text("1" * 20_000)
    assert "20000 characters" in out and len(out) < MAX_SHOWN + 60


def test_as_text_clips_the_text_not_its_escapes() -> None:
    """The limit counts the user's characters: MAX_SHOWN of them are shown, whatever they are, and
    the count is the length of what was typed; text of exactly MAX_SHOWN characters is not clipped."""
    import html
    import re

    from lowprec.app.text import MAX_SHOWN, as_text

    for text in ("<" * 1000, "a" * (MAX_SHOWN - 1) + "<&" * 10):
        inner = re.fullmatch(r"<p>(.*)</p>\s*", _rendered(as_text(text)), re.S)
        assert inner is not None
        assert html.unescape(inner.group(1)) == f"{text[:MAX_SHOWN]}… ({len(text)} characters)"
    exact = "$" * MAX_SHOWN
    assert html.unescape(_rendered(as_text(exact))) == f"<p>{exact}</p>\n"


@pytest.mark.parametrize("payload", PAYLOADS[:3])
def test_bin_explorer_alert_escapes_the_typed_value(payload: str) -> None:
    from lowprec.app.widgets import BinExplorer

    w = BinExplorer()
    w.value = payload
    assert w.error.startswith("Invalid input")
    rendered = _rendered(w._alert.object)
    assert "<img" not in rendered and "<script" not in rendered and "<svg" not in rendered
    w.value = "0x1.8p3"  # the session keeps working
    assert w.error == "" and not w._alert.visible


def test_url_parameter_alert_escapes_the_query() -> None:
    """`sync_url`'s refusal message ("Invalid URL parameters: …") through a stand-in Location."""
    from lowprec.app.pages import PlacedWidget, sync_url
    from lowprec.app.widgets import Conventions

    class Location:
        search = "?format=%3Cimg%20src%3Dx%20onerror%3Dalert(1)%3E"

        def sync(self, widget: Any, mapping: dict[str, str], on_error: Any) -> None:
            on_error({"format": "<img src=x onerror=alert(1)>"})

    w = Conventions()
    assert sync_url([PlacedWidget("Conventions", w, "")], Location())
    assert w._alert.visible and "Invalid URL parameters" in w._alert.object
    assert "<img" not in _rendered(w._alert.object)


# ------------------------------------------------------------------------------------------------
# strict inputs in the API
# ------------------------------------------------------------------------------------------------


def _round_int(i: int, bits: int = 24) -> float:
    """Oracle: an integer rounded once to a `bits`-bit significand (nearest, ties to even), in
    integer arithmetic (no overflow below 2**64 for FP32 and BF16)."""
    if i == 0:
        return 0.0
    m = abs(i)
    shift = max(0, m.bit_length() - bits)
    q, r = divmod(m, 1 << shift)
    half = (1 << shift) >> 1
    if shift and (r > half or (r == half and q & 1)):
        q += 1
    return float(q << shift) * (1 if i > 0 else -1)


def test_int64_above_2_53_rounds_once() -> None:
    """2**62 + 2**38 + 1 is just above the midpoint 2**62 + 2**38 of two FP32 neighbours: once
    rounded it is 2**62 + 2**39; through float64 first it lands on the midpoint and ties to 2**62."""
    x = np.array([2**62 + 2**38 + 1, -(2**62 + 2**38 + 1)], dtype=np.int64)
    got = formats.decode(formats.encode(x, "FP32"), "FP32").astype(np.float64)
    assert got.tolist() == [2.0**62 + 2.0**39, -(2.0**62 + 2.0**39)]


@pytest.mark.parametrize("dtype", [np.int64, np.uint64])
@pytest.mark.parametrize("fmt, bits", [("FP32", 24), ("BF16", 8)])
def test_64_bit_integers_round_like_the_integer_oracle(dtype: Any, fmt: str, bits: int) -> None:
    rng = np.random.default_rng(16)
    info = np.iinfo(dtype)
    edges = [info.min, info.max, 2**53 - 1, 2**53, 2**53 + 1, 2**54 + 3, 0, 1]
    if dtype == np.int64:
        edges += [-(2**53 + 1), -1, info.min + 1]
    x = np.concatenate([rng.integers(info.min, info.max, 3000, dtype=dtype, endpoint=True),
                        np.array(edges, dtype=dtype)])
    want = np.array([_round_int(int(i), bits) for i in x])
    got = formats.decode(formats.encode(x, fmt), fmt).astype(np.float64)
    assert np.array_equal(got, want)


@pytest.mark.parametrize("bad, kind", [
    (np.array([1 + 2j]), "complex"), (np.array([1.0], dtype=object), "object"),
    (np.array(["1.5"]), "<U3"), (np.array([1], dtype="timedelta64[s]"), "timedelta64"),
    (np.array(["2020-01-01"], dtype="datetime64[D]"), "datetime64"),
])
def test_non_real_input_is_a_type_error_naming_the_dtype(bad: np.ndarray, kind: str) -> None:
    with pytest.raises(TypeError, match=kind):
        formats.encode(bad, "E4M3FN")
    with pytest.raises(TypeError, match=kind):
        delayed.DelayedScaler("E4M3FN").quantize(bad)
    with pytest.raises(TypeError, match=kind):
        delayed.CurrentScaler("E4M3FN").quantize(bad)


@pytest.mark.parametrize("scale", [1e39, 1e-50, 0.0, -1.0, float("inf"), float("nan")])
def test_delayed_scaler_refuses_an_initial_scale_float32_cannot_hold(scale: float) -> None:
    with pytest.raises(ValueError, match=r"initial_encode_scale must be a positive number that float32 holds"):
        delayed.DelayedScaler("E4M3FN", initial_encode_scale=scale)


def test_delayed_scaler_refuses_a_complex_initial_scale() -> None:
    with pytest.raises(TypeError, match="initial_encode_scale must be a real number"):
        delayed.DelayedScaler("E4M3FN", initial_encode_scale=1 + 1j)  # type: ignore[arg-type]


@pytest.mark.parametrize("rng", [5, "0", np.random.RandomState(0)])
def test_rng_must_be_a_generator(rng: Any) -> None:
    with pytest.raises(TypeError, match="rng must be a numpy.random.Generator"):
        mx.quantize_mx(np.ones(32), "E4M3FN", rng=rng,
                       policy=formats.CastPolicy(rounding=formats.Rounding.STOCHASTIC))
    with pytest.raises(TypeError, match="numpy.random.Generator"):
        attention.round_probs(np.full((2, 2), 0.5), "E4M3FN", "stochastic", rng=rng)


@pytest.mark.parametrize("flag", ["no", "False", 0, None])
def test_booleans_are_booleans(flag: Any) -> None:
    with pytest.raises(TypeError, match="block_2d must be True or False"):
        nvfp4.quantize_nvfp4(np.ones((16, 16)), block_2d=flag)


def test_axis_must_be_an_integer() -> None:
    with pytest.raises(TypeError, match="axis must be an integer, got '1'"):
        mx.quantize_mx(np.ones((2, 32)), "E4M3FN", axis="1")  # type: ignore[arg-type]


def test_rounding_bin_code_must_be_an_integer() -> None:
    with pytest.raises(TypeError, match=r"code must be an integer, got 1.5"):
        formats.rounding_bin("E4M3FN", code=1.5)  # type: ignore[arg-type]
    assert formats.rounding_bin("E4M3FN", code=np.uint8(56)).lo_closed in (True, False)


def test_round_probs_needs_rows_of_keys() -> None:
    with pytest.raises(ValueError, match=r"probs must be a 2-D array \(rows × keys\), got shape \(2,\)"):
        attention.round_probs(np.array([0.5, 0.5]), "E4M3FN")


def test_run_attention_names_its_input_type() -> None:
    with pytest.raises(TypeError, match="inputs must be AttentionInputs.*got NoneType"):
        attention.run_attention(None)  # type: ignore[arg-type]


def test_e8m0_is_no_element_format() -> None:
    with pytest.raises(ValueError, match="element format E8M0 is not allowed here; allowed: E4M3FN"):
        mx.quantize_mx(np.ones(32), "E8M0")


# ------------------------------------------------------------------------------------------------
# the parse_value grammar
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("text, value", [
    ("3.3", 3.3), ("-0", -0.0), ("+inf", float("inf")), ("-Infinity", float("-inf")), ("−2", -2.0),
    ("1_000", 1000.0), (".5", 0.5), ("7.", 7.0), ("0x1.8p3", 12.0), ("0X.8", 0.5), ("-∞", float("-inf")),
    (" 0x1p-1074 ", 2.0**-1074), ("1e308", 1e308),
])
def test_parse_value_reads_the_grammar(text: str, value: float) -> None:
    got = formats.parse_value(text)
    assert np.float64(got).view(np.uint64) == np.float64(value).view(np.uint64)


def test_parse_value_nan_keeps_its_sign() -> None:
    assert np.signbit(formats.parse_value("-nan")) and not np.signbit(formats.parse_value("nan"))


@pytest.mark.parametrize("text", ["--inf", "+-nan", "-+1", "++1", "1e", "0x", "1.2.3", "abc", "0x1.8q3", "1e5e5",
                                  "inf1", "nan(1)", "1 2"])
def test_parse_value_refuses_what_the_grammar_does_not_hold(text: str) -> None:
    with pytest.raises(ValueError, match=r"cannot read .* as a number; expected a decimal"):
        formats.parse_value(text)


@pytest.mark.parametrize("text", ["0x1p2000", "-0x1p1024", "1e400"])
def test_parse_value_out_of_range_is_a_value_error(text: str) -> None:
    with pytest.raises(ValueError, match=r"is beyond float64's range"):
        formats.parse_value(text)


def test_parse_value_refuses_a_huge_text_quickly() -> None:
    with pytest.raises(ValueError, match=r"value is 20000 characters long \(at most 1000\)"):
        formats.parse_value("1" * 20_000)


# ------------------------------------------------------------------------------------------------
# bounded work
# ------------------------------------------------------------------------------------------------


def test_budget_error_names_the_parameter_and_the_limit() -> None:
    cfg = attention.AttentionConfig(seq=2048, trials=100_000, rounding="stochastic")
    with pytest.raises(BudgetError, match=r"^--trials: 100000 makes this run need .* over the command line's budget "
                                          r"of 4 GiB and 120 s: lower --trials; give --force"):
        check_budget(cfg, CLI_BUDGET, label=option_name)
    with pytest.raises(BudgetError, match=r"^trials: 5000 makes this run need .* over a page's budget of "
                                          r"512 MiB and 2 s: lower trials$"):
        check_budget(attention.AttentionConfig(seq=512, trials=5000, rounding="stochastic"), APP_BUDGET)


def test_budget_allows_what_fits_and_ignores_records_without_cost() -> None:
    from lowprec.formats.explain import ExplainConfig

    assert isinstance(check_budget(attention.AttentionConfig(), APP_BUDGET), Cost)
    assert check_budget(ExplainConfig(), Budget(bytes=1, seconds=1e-9, where="x")) is None


def test_every_widget_default_and_lesson_directive_fits_the_page_budget() -> None:
    from lowprec.app.lessons import WidgetDirective, load_lessons, render_blocks
    from lowprec.app.widgets import WIDGETS, get_widget_class
    from lowprec.config import from_mapping

    checked = 0
    for name in WIDGETS:
        record = getattr(get_widget_class(name), "config_class", None)
        if record is not None and hasattr(record, "cost"):
            check_budget(record(), APP_BUDGET)
            checked += 1
    for lesson in load_lessons():
        for block in render_blocks(lesson):
            if isinstance(block, WidgetDirective):
                record = getattr(get_widget_class(block.name), "config_class", None)
                if record is not None and hasattr(record, "cost"):
                    check_budget(from_mapping(record, dict(block.params)), APP_BUDGET)
                    checked += 1
    assert checked >= 10


def test_widget_refuses_an_update_over_the_page_budget_and_keeps_its_view() -> None:
    from lowprec.app.widgets import AttentionRounding

    w = AttentionRounding()
    before = w.source_data
    w.param.update(seq=512, trials=5000, rounding="stochastic")
    assert w.error.startswith("Invalid input: ") and "over a page's budget" in w.error
    assert w.source_data is before and w._alert.visible
    w.param.update(seq=64, trials=10)
    assert w.error == "" and w.result.config["queries"] == 64


def _cli(argv: list[str], capsys: Any) -> tuple[int, str]:
    rc = cli_main(argv)
    err = capsys.readouterr().err
    return rc, err


@pytest.mark.parametrize("argv, message", [
    (["simulate", "attention", "--seq", "2048", "--trials", "100000", "--rounding", "stochastic"],
     r"lowprec: error: --trials: 100000 makes this run need .*give --force"),
    (["simulate", "spike", "--steps", "100000", "--size", "16777216"], r"lowprec: error: --size: 16777216 makes"),
    (["simulate", "recompute", "--margin", "5000"], r"lowprec: error: --margin: must be ≤ 64, got 5000"),
    (["simulate", "grouping", "--format", "E8M0"], r"lowprec: error: --format: must be one of .*got 'E8M0'"),
])
def test_cli_refuses_unbounded_work_in_one_line(argv: list[str], message: str, capsys: Any) -> None:
    start = time.perf_counter()
    rc, err = _cli(argv, capsys)
    assert rc == 2 and err.count("\n") == 1
    assert __import__("re").match(message, err), err
    assert time.perf_counter() - start < 10  # refused before any work


def test_force_lifts_the_cli_budget(monkeypatch: Any, capsys: Any) -> None:
    """With a tiny budget the default run is refused; --force runs it."""
    import lowprec.simulations.framework.cli as sim_cli

    monkeypatch.setattr(sim_cli, "CLI_BUDGET", Budget(bytes=1.0, seconds=1e-9, where="the command line"))
    rc, err = _cli(["simulate", "attention", "--seq", "8", "--quiet"], capsys)
    assert rc == 2 and "over the command line's budget" in err
    rc, err = _cli(["simulate", "attention", "--seq", "8", "--quiet", "--force"], capsys)
    assert rc == 0 and err == ""


@pytest.mark.parametrize("make_path, message", [
    (lambda tmp: str(tmp / "missing" / "out.json"), r"the folder of .* does not exist"),
    (lambda tmp: str(tmp), r"is a directory; give a file path inside it"),
    (lambda tmp: "/proc/lowprec-out.json", r"is not writable"),
])
@pytest.mark.parametrize("command, option", [
    (["simulate", "spike", "--steps", "100000", "--size", "65536", "--force"], "--json"),
    (["simulate", "blocks", "--rows", "4096", "--cols", "4096", "--force"], "--csv"),
    (["simulate", "attention", "--seq", "2048", "--trials", "100000", "--rounding", "stochastic", "--force"],
     "--html"),
    (["simulate", "recompute", "--force"], "--csv"),
])
def test_output_paths_are_checked_before_any_work(command: list[str], option: str, make_path: Any, message: str,
                                                   tmp_path: Path, capsys: Any) -> None:
    """Each command would run for minutes: the bad path must be refused at once."""
    if option == "--csv" and command[1] == "blocks":
        option = "--json"  # blocks has no table
    path = make_path(tmp_path)
    start = time.perf_counter()
    rc, err = _cli(command + [option, path], capsys)
    assert rc == 2 and err.startswith(f"lowprec: error: {option}: "), err
    assert __import__("re").search(message, err), err
    assert time.perf_counter() - start < 10


def test_check_output_path_accepts_stdout_and_a_new_file(tmp_path: Path) -> None:
    check_output_path(None, "--json")
    check_output_path("-", "--json")
    check_output_path(str(tmp_path / "new.json"), "--json")
    assert list(tmp_path.iterdir()) == []  # the probe leaves nothing behind
    with pytest.raises(ValueError, match=r"--csv: expected a file path or - for stdout, got ''"):
        check_output_path("", "--csv")


# ------------------------------------------------------------------------------------------------
# sessions that don't block each other: the off-loop protocol
# ------------------------------------------------------------------------------------------------


def _fake_document(loaded: bool = True) -> Any:
    """A Bokeh document that says it is served (`session_context`) and whose thread-safe
    `add_next_tick_callback` queues the callback for `drain()` on the test's thread (the loop);
    `loaded`: the browser has already reported the page rendered (Panel's document_ready)."""
    from bokeh.document import Document

    class FakeDocument(Document):
        session_context = object()  # type: ignore[assignment]

        def __init__(self) -> None:
            super().__init__()
            self.queued: list[Any] = []
            self.queue_lock = threading.Lock()

        def add_next_tick_callback(self, callback: Any) -> Any:  # type: ignore[override]
            with self.queue_lock:
                self.queued.append(callback)

        def drain(self, timeout: float = 60.0, until: Any = None) -> None:
            end = time.monotonic() + timeout
            while time.monotonic() < end:
                with self.queue_lock:
                    pending, self.queued = self.queued, []
                for cb in pending:
                    cb()
                if until is not None and until():
                    return
                time.sleep(0.01)
            raise AssertionError("the off-loop run did not finish")

    doc = FakeDocument()
    if loaded:
        pn.state._on_load(doc)  # what Panel does on the browser's document_ready event
    return doc


def test_a_result_that_arrives_before_the_page_loaded_waits_for_it() -> None:
    """Panel drops model changes made under hold() until the browser reports the page rendered,
    so a run that finishes earlier (a URL parameter's) is applied at load, not lost."""
    from lowprec.app import work

    doc = _fake_document(loaded=False)
    finished: list[Any] = []
    work.submit(doc, lambda: 42, finished.append)
    with pytest.raises(AssertionError, match="did not finish"):
        doc.drain(timeout=1.0, until=lambda: bool(finished))
    assert finished == []  # computed, but held back: the page has not loaded
    pn.state._on_load(doc)
    assert [o.value for o in finished] == [42]


def test_served_update_runs_off_the_loop_shows_busy_and_superseded_runs_are_dropped(monkeypatch: Any) -> None:
    """A served update goes to a pool thread, which hands the simulation to a worker process; a
    newer request stops the older run there (at its next progress report) and only the newest
    result reaches the view."""
    from lowprec.app import work
    from lowprec.app.widgets import AttentionRounding

    w = AttentionRounding()
    doc = _fake_document()
    monkeypatch.setattr(work, "served_document", lambda: doc)
    loop_thread = threading.get_ident()
    calls: list[tuple[int, int | None, int]] = []
    outcomes: list[str] = []
    real_run_simulation = work.run_simulation
    release = threading.Event()

    def gated(simulation: Any, config: Any, slot: int | None = None, generation: int = 0) -> Any:
        calls.append((threading.get_ident(), slot, generation))
        if config.seq == 32:  # the first request starts only once a newer one exists
            release.wait(30)
        try:
            result = real_run_simulation(simulation, config, slot, generation)
        except work.Superseded:
            outcomes.append(f"seq={config.seq} superseded")
            raise
        outcomes.append(f"seq={config.seq} finished")
        return result

    monkeypatch.setattr(work, "run_simulation", gated)
    w.seq = 32
    assert w.busy and w.result.config["queries"] == 128  # submitted, not computed inline
    w.seq = 48
    release.set()
    doc.drain(until=lambda: not w.busy and len(outcomes) == 2)
    assert calls and all(t != loop_thread for t, _, _ in calls)
    assert {slot for _, slot, _ in calls} == {w._slot} and w._slot is not None
    assert sorted(outcomes) == ["seq=32 superseded", "seq=48 finished"]
    assert w.result.config["queries"] == 48 and w.error == ""
    # a bad value in a served session: the alert, the last view stays, the spinner stops
    w.param.update(seq=512, trials=5000, rounding="stochastic")
    assert not w.busy and "over a page's budget" in w.error and w.result.config["queries"] == 48


def test_worker_process_gives_the_inline_result_bit_for_bit() -> None:
    from lowprec.app import work
    from lowprec.config import from_mapping
    from lowprec.simulations.studies import attention

    config = from_mapping(attention.AttentionConfig, {"seq": 32, "trials": 40, "rounding": "stochastic"})
    remote = work.run_simulation(attention.SIMULATION, config)
    local = attention.SIMULATION.run(config, None)
    for name in ("probs_rounded", "out_rounded", "out_exact"):
        a, b = np.asarray(getattr(remote, name)), np.asarray(getattr(local, name))
        assert a.dtype == b.dtype and a.shape == b.shape
        assert np.array_equal(a.view(np.uint8), b.view(np.uint8)), name


def test_worker_processes_are_other_processes_at_lower_priority() -> None:
    from lowprec.app import work
    from tests import worker_sims

    pid, nice = work.run_simulation(worker_sims.SIMULATION, "pid")
    assert pid != os.getpid()
    assert nice >= os.getpriority(os.PRIO_PROCESS, 0) + work.WORKER_NICENESS or nice == 19


def test_worker_process_supersede_errors_and_a_dead_worker() -> None:
    from lowprec.app import work
    from tests import worker_sims

    class Owner:
        pass

    owner = Owner()
    slot = work.claim_slot(owner)
    assert slot is not None
    work.post_generation(slot, 1)
    threading.Timer(0.3, work.post_generation, (slot, 2)).start()
    start = time.monotonic()
    with pytest.raises(work.Superseded, match="superseded by a newer request"):
        work.run_simulation(worker_sims.SIMULATION, "wait", slot, 1)
    assert time.monotonic() - start < 20
    with pytest.raises(ValueError, match="config must be one of"):
        work.run_simulation(worker_sims.SIMULATION, "bad")
    with pytest.raises(RuntimeError, match="worker process running worker-test died"):
        work.run_simulation(worker_sims.SIMULATION, "die")
    pid, _ = work.run_simulation(worker_sims.SIMULATION, "pid")  # a new pool took over
    assert pid != os.getpid()
    # a slot goes back to the free list when its owner is collected
    assert slot not in work._free_slots
    del owner
    import gc

    gc.collect()
    assert slot in work._free_slots


def test_worker_threads_run_at_lower_priority() -> None:
    from lowprec.app import work

    if not hasattr(os, "getpriority"):
        pytest.skip("no per-thread priorities here")
    nice = work.pool().submit(lambda: os.getpriority(os.PRIO_PROCESS, threading.get_native_id())).result(30)
    assert nice >= os.getpriority(os.PRIO_PROCESS, 0)


def test_batched_holds_only_once_the_page_has_loaded() -> None:
    """Before document_ready Panel drops changes made under hold(), so `work.batched` leaves them
    unheld (sent one by one); after it, it holds them (one patch)."""
    from panel.io.state import set_curdoc

    from lowprec.app import work

    doc = _fake_document(loaded=False)
    with set_curdoc(doc):
        with work.batched():
            assert doc.callbacks.hold_value is None
        pn.state._on_load(doc)
        with work.batched():
            assert doc.callbacks.hold_value == "combine"


def test_binary_columns_turn_float_and_int32_columns_into_arrays_bit_for_bit() -> None:
    from lowprec.app.widgets._sim_base import binary_columns

    floats = [0.1, -0.0, float("nan"), float("inf"), 5e-324, np.float64(2.5)]
    ints = [0, -1, 2**31 - 1, -2**31, np.int64(7)]
    data = {"s": {"f": floats, "i": ints, "big": [1, 2**31], "t": ["a", "b"], "m": [1.5, "x"], "mi": [1, 2.0],
                  "e": [], "b": [True, False], "ib": [1, True]}}
    out = binary_columns(data)["s"]
    assert isinstance(out["f"], np.ndarray) and out["f"].dtype == np.float64
    expected = np.array([float(v) for v in floats], dtype=np.float64)
    assert np.array_equal(out["f"].view(np.uint64), expected.view(np.uint64))
    assert isinstance(out["i"], np.ndarray) and out["i"].dtype == np.int32
    assert out["i"].tolist() == [int(v) for v in ints]
    for key in ("big", "t", "m", "mi", "e", "b", "ib"):  # beyond int32, text, mixed, empty, booleans
        assert out[key] is data["s"][key], key


def test_attention_rounding_marks_follow_the_rounding_mode() -> None:
    from lowprec.app.plots.widget_attention import NEAREST_ONLY, STOCHASTIC_ONLY
    from lowprec.app.widgets import AttentionRounding

    w = AttentionRounding(rounding="nearest_even")
    stochastic_only = list(w._plots.select({"name": STOCHASTIC_ONLY}))
    nearest_only = list(w._plots.select({"name": NEAREST_ONLY}))
    assert stochastic_only and nearest_only
    assert not any(m.visible for m in stochastic_only) and all(m.visible for m in nearest_only)
    w.rounding = "stochastic"
    assert all(m.visible for m in stochastic_only) and not any(m.visible for m in nearest_only)
    w.rounding = "nearest_even"
    assert not any(m.visible for m in stochastic_only) and all(m.visible for m in nearest_only)


def test_server_preloads_the_simulations_its_widgets_run_in_workers_and_no_torch() -> None:
    """The simulation widgets that compute nothing of their own (the Accumulator's gemm study and
    WhoseAmax among them) run in worker processes; the recompute lab (torch, its own _compute) stays
    on a thread, so workers never import torch."""
    import subprocess
    import sys

    from lowprec.app.server import worker_modules

    modules = worker_modules()
    assert modules == tuple(f"lowprec.simulations.{n}" for n in ("attention", "blocks", "gemm", "grouping", "spike",
                                                                  "stateful"))
    code = (f"import importlib, sys\nfor m in {list(modules)!r}: importlib.import_module(m)\n"
            "print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "False", out.stderr


def test_busy_indicator_changes_only_its_text() -> None:
    """The busy indicator says "Computing…" (an ARIA status) while a run is in progress and is an
    empty box of the same height otherwise; it never changes `visible` or its CSS classes, which
    made BokehJS lay out and repaint the whole page (about 0.3 s per change on an attention page)."""
    import html

    from bokeh.document import Document

    from lowprec.app import work

    busy = work.busy_indicator()
    pane = busy.__panel__()
    model = pane.get_root(Document())
    before = {k: getattr(model, k) for k in ("visible", "css_classes", "height", "sizing_mode")}
    assert model.text == "" and not busy.value
    busy.value = True
    shown = html.unescape(model.text)  # Panel's wire form of an HTML pane's text is escaped
    assert "Computing…" in shown and 'role="status"' in shown
    assert {k: getattr(model, k) for k in before} == before
    busy.value = False
    assert model.text == "" and {k: getattr(model, k) for k in before} == before
