"""`lowprec lessons [--answers] [--json] [--root DIR] [--no-cache]`: strict JSON listing every lesson's
goal, predictions and exercises with computed answers (checked here against independent oracles),
a text outline that computes nothing, clear errors, no Panel/Bokeh/torch import, and the record
cache (a hit imports neither the lesson parser nor numpy; any change to a lesson or a source is a
miss)."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
import torch

from lowprec import strictjson
from lowprec.course.lessons import load_lessons
from tests.lesson_fixture import write_lesson_folder

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("torch", "panel", "bokeh", "param", "triton")


def lowprec(*argv: str, cache: Path | None = None) -> subprocess.CompletedProcess[str]:
    """`lowprec ARGV` in a child; the record cache off unless `cache` names its folder."""
    env = {**os.environ, "LOWPREC_CACHE_DIR": str(cache) if cache is not None else ""}
    return subprocess.run([sys.executable, "-m", "lowprec.app.cli", *argv], capture_output=True, text=True,
                          cwd=ROOT, timeout=300, check=False, env=env)


def test_json_lists_goal_predictions_and_exercises_with_computed_answers(tmp_path: Path) -> None:
    folder = write_lesson_folder(tmp_path / "lessons")
    r = lowprec("lessons", "--json", "--root", str(folder))
    assert r.returncode == 0, r.stderr
    (lesson,) = strictjson.loads(r.stdout)  # strict RFC 8259
    assert {k: lesson[k] for k in ("slug", "title", "order", "goal")} == {
        "slug": "probe", "title": "Probe lesson", "order": 1, "goal": "Check the components."}
    (pred,) = lesson["predictions"]
    # torch 2.13 saturates E4M3FN: 465 → 448 (an independent cast)
    torch_465 = float(torch.tensor([465.0]).to(torch.float8_e4m3fn).float()[0])
    assert torch_465 == 448.0
    assert pred == {"id": "overflow-torch", "question": "What does 465 become in E4M3FN under torch?",
                    "kind": "choice", "unlocks": "Conventions", "options": 3,
                    "context": "Intro text.\n\nWhat does 465 become in E4M3FN under torch?\n",
                    "answer": {"kind": "choice", "value": "448", "text": "448", "choices": ["448", "NaN", "480"],
                               "source": "example:e4m3fn_overflow_conventions.torch"}}
    code, number = lesson["exercises"]
    assert [code["id"], number["id"]] == ["smallest-normal-code", "max-value"]
    # the code whose value ml_dtypes decodes to 2^-6 (the smallest normal)
    assert float(np.array([code["answer"]["value"]], np.uint8).view(ml_dtypes.float8_e4m3fn)[0]) == 2.0**-6
    assert code["kind"] == "code" and code["answer"]["hex"] == "0x08" and code["answer"]["format"] == "E4M3FN"
    assert len(code["hints"]) == 2 and code["solution"].endswith("= 0x08.")
    assert number["answer"]["value"] == float(ml_dtypes.finfo(ml_dtypes.float8_e4m3fn).max) == 448.0
    assert number["answer"]["tolerance"] == {"rule": "abs", "amount": 0.5}


def test_every_installed_lesson_is_listed() -> None:
    r = lowprec("lessons", "--json")
    assert r.returncode == 0, r.stderr
    listed = strictjson.loads(r.stdout)
    lessons = load_lessons()
    assert [x["slug"] for x in listed] == [x.slug for x in lessons]
    assert all(x["goal"] for x in listed)
    for record, lesson in zip(listed, lessons):
        assert [p["id"] for p in record["predictions"]] == list(lesson.predictions)
        assert [e["id"] for e in record["exercises"]] == list(lesson.exercises)


def test_text_form_and_errors(tmp_path: Path) -> None:
    folder = write_lesson_folder(tmp_path / "lessons")
    r = lowprec("lessons", "probe", "--root", str(folder), "--answers")
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == [
        "  1  probe  Probe lesson — 1 prediction, 2 exercises",
        "     goal: Check the components.",
        "     predict overflow-torch (choice): 448 → unlocks Conventions",
        "     exercise smallest-normal-code (code): 0x08",
        "     exercise max-value (number): 448",
    ]
    r = lowprec("lessons", "probe", "--root", str(folder))  # the outline: the same lines, no answers
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == [
        "  1  probe  Probe lesson — 1 prediction, 2 exercises",
        "     goal: Check the components.",
        "     predict overflow-torch (choice) → unlocks Conventions",
        "     exercise smallest-normal-code (code)",
        "     exercise max-value (number)",
    ]
    r = lowprec("lessons", "nope", "--root", str(folder))
    assert r.returncode == 2 and r.stderr == "lowprec: error: unknown lesson 'nope'; lessons: probe\n"
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "01-bad.md").write_text((folder / "01-probe.md").read_text().replace(
        "example:e4m3fn_range.max", "example:e4m3fn_range.nope"), encoding="utf-8")
    r = lowprec("lessons", "--root", str(bad), "--answers")
    assert r.returncode == 2 and r.stderr.startswith(f"lowprec: error: {bad / '01-bad.md'}:")
    assert "cannot compute the answer example:e4m3fn_range.nope" in r.stderr and "Traceback" not in r.stderr


def test_lessons_imports_neither_panel_nor_torch(tmp_path: Path) -> None:
    folder = write_lesson_folder(tmp_path / "lessons")
    code = ("import contextlib, io, sys\nfrom lowprec.app.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            f"    rc = main(['lessons', '--json', '--root', {str(folder)!r}])\n"
            f"print(rc, sorted(m for m in {HEAVY!r} if m in sys.modules))\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300,
                       check=False)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "0 []"


def test_root_that_is_missing_a_file_or_empty_says_which(tmp_path: Path) -> None:
    """Each case its own message (they were swapped), none blaming the install for a user's folder."""
    missing, a_file, empty = tmp_path / "nope", tmp_path / "lesson.md", tmp_path / "empty"
    a_file.write_text("---\n", encoding="utf-8")
    empty.mkdir()
    for folder, words in ((missing, "lesson folder does not exist"), (a_file, "is not a folder"),
                          (empty, "no lessons (*.md) in the lesson folder")):
        for extra in ((), ("--json",)):
            r = lowprec("lessons", "--root", str(folder), *extra)
            assert r.returncode == 2 and r.stderr == f"lowprec: error: {folder}: {words}" + (
                "; give the folder that holds the lesson files (*.md)" if folder == a_file else "") + "\n", r.stderr


def _imports_after(argv: list[str], cache: Path | None) -> tuple[int, str, list[str]]:
    """(exit status, output, which of the watched modules) of `lowprec ARGV` in a child."""
    watched = HEAVY + ("numpy", "ml_dtypes", "lowprec.course.lessons", "lowprec.course.examples")
    code = ("import contextlib, io, sys\nfrom lowprec.app.cli import main\nout = io.StringIO()\n"
            "with contextlib.redirect_stdout(out):\n"
            f"    rc = main({argv!r})\n"
            f"print(rc, sorted(m for m in {watched!r} if m in sys.modules))\nprint(out.getvalue(), end='')\n")
    env = {**os.environ, "LOWPREC_CACHE_DIR": str(cache) if cache is not None else ""}
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300,
                       check=False, env=env)
    assert r.returncode == 0, r.stderr
    head, _, out = r.stdout.partition("\n")
    rc, _, mods = head.partition(" ")
    return int(rc), out, eval(mods)  # noqa: S307 - a list of names printed by our own child


def test_the_outline_computes_nothing_and_a_cached_list_parses_nothing(tmp_path: Path) -> None:
    """The plain list of a course without records (a copy of the installed lessons: the shipped
    records serve only the installed course) parses the lessons but computes no answer: no worked
    example, no torch; listed again from the cache, it does not even import the parser or numpy."""
    from lowprec.course.lesson_files import DEFAULT_ROOT

    folder = tmp_path / "lessons"
    folder.mkdir()
    for path in DEFAULT_ROOT.glob("*.md"):
        (folder / path.name).write_bytes(path.read_bytes())
    cache = tmp_path / "cache"
    rc, cold, mods = _imports_after(["lessons", "--root", str(folder)], cache)
    assert rc == 0 and "lowprec.course.lessons" in mods
    assert not {"lowprec.course.examples", "torch", "panel", "bokeh", "triton"} & set(mods), mods
    rc, warm, mods = _imports_after(["lessons", "--root", str(folder)], cache)
    assert rc == 0 and warm == cold and mods == [], mods
    assert [line.split()[1] for line in cold.splitlines() if not line.startswith(" " * 5)] == [
        lesson.slug for lesson in load_lessons()]
    # the installed course, cold (no cache): listed from its shipped records, nothing parsed
    rc, shipped, mods = _imports_after(["lessons"], None)
    assert rc == 0 and shipped == cold and mods == [], mods


def test_the_shipped_records_are_current() -> None:
    """Every installed lesson has a shipped record (content/lesson-records.json) whose inputs are
    the lesson files and module sources as they are now (the dependencies' versions are the
    installer's to match: not checked here). Fails after a change to a lesson or to a module the
    course's answers import until `./dev records` writes them again."""
    from lowprec.app.commands import lessons_cmd
    from lowprec.course.lesson_files import DEFAULT_ROOT, lesson_paths, slug_of

    shipped = lessons_cmd.ShippedRecords(lessons_cmd.SHIPPED_RECORDS)
    paths = lesson_paths(DEFAULT_ROOT)
    course = lessons_cmd.course_key(paths)
    stale = [slug_of(p) for p in paths
             if not shipped.entry_is_current(shipped.entries().get(slug_of(p)), p, p.read_bytes(), course,
                                             versions=False)]
    assert not stale, f"shipped lesson records out of date: {', '.join(stale)}; run ./dev records"
    assert sorted(shipped.entries()) == sorted(slug_of(p) for p in paths)
    for entry in shipped.entries().values():  # what each computation read: the codec, its own lesson machinery
        assert {"formats/codec.py", "course/lessons.py", "./strictjson.py"} <= set(entry["modules"])
        assert "numpy" in entry["dependencies"] and "panel" not in entry["dependencies"]


def test_the_generator_reproduces_a_shipped_entry() -> None:
    """`./dev records`' per-lesson step, run again in a fresh process for one quick lesson, gives the
    shipped entry exactly: the same modules (found in the checkout's layout), versions, key, record."""
    from lowprec.app.commands import lessons_cmd
    from lowprec.course.lesson_files import DEFAULT_ROOT

    (path,) = DEFAULT_ROOT.glob("*-loss-scaling.md")
    again = lessons_cmd.shipped_entry_in_fresh_process(path)
    shipped = lessons_cmd.ShippedRecords(lessons_cmd.SHIPPED_RECORDS).entries()["loss-scaling"]
    assert again["modules"] == shipped["modules"] and "simulations/scaling/delayed.py" in again["modules"]
    assert again == shipped


def test_a_cold_listing_of_the_installed_course_reads_the_shipped_records(monkeypatch: pytest.MonkeyPatch,
                                                                          tmp_path: Path) -> None:
    """The first `lowprec lessons --json` after a bare install (an empty cache) computes nothing:
    nothing parsed, no numpy; it prints the shipped records, and `lowprec serve` has nothing to warm."""
    from lowprec.app.commands import lessons_cmd

    cache = tmp_path / "cache"
    rc, out, mods = _imports_after(["lessons", "--json"], cache)
    assert rc == 0 and mods == [], mods
    entries = lessons_cmd.ShippedRecords(lessons_cmd.SHIPPED_RECORDS).entries()
    assert strictjson.loads(out) == sorted((e["record"] for e in entries.values()), key=lambda r: r["order"])
    monkeypatch.setenv("LOWPREC_CACHE_DIR", str(cache))
    assert lessons_cmd.missing_records() == 0
    assert not (cache / "lessons").exists()  # nothing computed, nothing cached


def test_a_shipped_record_whose_inputs_changed_is_never_served(tmp_path: Path) -> None:
    """A shipped record is served only when its lesson file, every module file it names and every
    dependency version it names are the same here: each change alone is a miss, as are a missing
    module file, another record layout and a damaged file."""
    import json

    from lowprec.app.commands import lessons_cmd

    lesson = tmp_path / "lessons" / "07-probe.md"
    lesson.parent.mkdir()
    lesson.write_bytes(b"---\ntitle: Probe\norder: 7\n---\nText.\n")
    layer = tmp_path / "formats"
    layer.mkdir()
    (layer / "codec.py").write_text("X = 1\n", encoding="utf-8")
    course = lessons_cmd.course_key([lesson])
    record = {"slug": "probe", "order": 7}

    def entry(modules: list[str], deps: dict[str, str | None]) -> dict[str, object]:
        digests = [(m, hashlib.sha256((layer / m.split("/", 1)[1]).read_bytes()).hexdigest()) for m in modules]
        return {"key": lessons_cmd.shipped_key(lesson.name, lesson.read_bytes(), course, digests),
                "modules": modules, "dependencies": deps, "record": record}

    def served(data: object) -> object:
        path = tmp_path / "records.json"
        path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
        shipped = lessons_cmd.ShippedRecords(path)
        shipped._roots = {"": tmp_path / "own", "formats": layer}
        return shipped.get(lesson, lesson.read_bytes(), course)

    numpy_version = lessons_cmd.installed_version("numpy")
    good = entry(["formats/codec.py"], {"numpy": numpy_version})
    version = lessons_cmd.RECORD_VERSION
    assert served({"version": version, "records": {"probe": good}}) == record
    assert served({"version": version + 1, "records": {"probe": good}}) is None
    assert served({"version": version, "records": {"probe": {**good, "dependencies": {"numpy": "0.0.1"}}}}) is None
    assert served({"version": version, "records": {"probe": {**good, "modules": ["formats/gone.py"]}}}) is None
    assert served("{NaN") is None and served("[]") is None
    # an optional dependency (torch) that is not installed here: its record is that version's answer,
    # served; another installed version is a miss
    with_torch = {**good, "dependencies": {"numpy": numpy_version, "torch": "2.13.0+cpu"}}
    for torch_here, expected in ((None, record), ("2.13.0+cpu", record), ("2.12.0", None)):
        path = tmp_path / "records.json"
        path.write_text(json.dumps({"version": version, "records": {"probe": with_torch}}), encoding="utf-8")
        shipped = lessons_cmd.ShippedRecords(path)
        shipped._roots = {"": tmp_path / "own", "formats": layer}
        shipped._versions["torch"] = torch_here
        assert shipped.get(lesson, lesson.read_bytes(), course) == expected, torch_here
    shipped._versions["torch"] = None
    assert shipped.get(lesson, lesson.read_bytes(), course) == record
    shipped._versions["numpy"] = None  # a required one missing (a broken install): a miss
    assert shipped.get(lesson, lesson.read_bytes(), course) is None
    (layer / "codec.py").write_text("X = 2\n", encoding="utf-8")  # the module changed
    assert served({"version": version, "records": {"probe": good}}) is None
    (layer / "codec.py").write_text("X = 1\n", encoding="utf-8")
    assert served({"version": version, "records": {"probe": good}}) == record
    lesson.write_bytes(lesson.read_bytes() + b"More.\n")  # the lesson changed
    assert served({"version": version, "records": {"probe": good}}) is None


def test_cached_records_are_the_computed_ones_and_any_change_is_a_miss(tmp_path: Path) -> None:
    folder = write_lesson_folder(tmp_path / "lessons")
    cache = tmp_path / "cache"
    fresh = lowprec("lessons", "--json", "--root", str(folder))  # no cache
    outline = lowprec("lessons", "--root", str(folder), cache=cache)  # an outline is cached first …
    assert outline.returncode == 0 and "(code)\n" in outline.stdout
    first = lowprec("lessons", "--json", "--root", str(folder), cache=cache)  # … and never serves --json
    assert fresh.returncode == first.returncode == 0 and first.stdout == fresh.stdout
    (entry,) = (cache / "lessons").iterdir()
    rc, again, mods = _imports_after(["lessons", "--json", "--root", str(folder)], cache)
    assert rc == 0 and again == fresh.stdout and mods == []  # a hit: nothing parsed, nothing computed
    # an outline request is served by a record with answers; a --json request never by an outline
    rc, outline, mods = _imports_after(["lessons", "--root", str(folder)], cache)
    assert rc == 0 and "predict overflow-torch (choice) → unlocks" in outline and mods == []
    # the lesson changes: recomputed (and the cached record replaced, not added to)
    lesson = folder / "01-probe.md"
    lesson.write_text(lesson.read_text(encoding="utf-8").replace("Check the components.", "Check again."),
                      encoding="utf-8")
    r = lowprec("lessons", "--json", "--root", str(folder), cache=cache)
    assert r.returncode == 0 and strictjson.loads(r.stdout)[0]["goal"] == "Check again."
    assert [p.name for p in (cache / "lessons").iterdir()] == [entry.name]
    # a damaged cache file is a miss, never an error
    entry.write_text("{NaN", encoding="utf-8")
    r = lowprec("lessons", "--json", "--root", str(folder), cache=cache)
    assert r.returncode == 0 and strictjson.loads(r.stdout)[0]["goal"] == "Check again."
    # --no-cache reads and writes nothing
    other = tmp_path / "other"
    r = lowprec("lessons", "--root", str(folder), "--no-cache", cache=other)
    assert r.returncode == 0 and not other.exists()


def test_the_key_covers_every_source_and_the_dependencies(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from lowprec.app.commands import lessons_cmd

    sources = lessons_cmd._package_sources()
    import lowprec.formats.codec as codec
    import lowprec.course.examples as examples

    assert {Path(codec.__file__).resolve(), Path(examples.__file__).resolve()} <= {p.resolve() for p in sources}
    copies = []
    for p in sources[:3]:
        c = tmp_path / p.name
        c.write_bytes(p.read_bytes())
        copies.append(c)
    monkeypatch.setattr(lessons_cmd, "_package_sources", lambda: copies)
    before = lessons_cmd.source_key()
    copies[1].write_bytes(copies[1].read_bytes() + b"\n# one more line\n")
    assert lessons_cmd.source_key() != before
    monkeypatch.setattr(lessons_cmd, "DEPENDENCIES", ("numpy", "no_such_module_here"))
    assert lessons_cmd.source_key() != before


def test_a_server_fills_the_record_cache_in_the_background(monkeypatch: pytest.MonkeyPatch,
                                                           tmp_path: Path) -> None:
    """`lowprec serve`'s start-up computes the records a later `lowprec lessons --json` reads (issue
    33: the listing ≤ 2 s after a server ran), once per cache, and leaves nothing running."""
    from lowprec.app import server
    from lowprec.app.commands import lessons_cmd

    folder = write_lesson_folder(tmp_path / "lessons")
    monkeypatch.setenv("LOWPREC_CACHE_DIR", "")
    server._warm_up_lesson_records(str(folder))  # the cache off: nothing to do, no error
    assert lessons_cmd.missing_records(folder) == 0
    monkeypatch.setenv("LOWPREC_CACHE_DIR", str(tmp_path / "cache"))
    assert lessons_cmd.missing_records(folder) == 1
    marker = tmp_path / "cache" / "lessons" / "lessons.warming"
    marker.parent.mkdir(parents=True)
    marker.touch()  # another server is computing them: this one leaves it
    server._warm_up_lesson_records(str(folder))
    assert lessons_cmd.missing_records(folder) == 1
    old = marker.stat().st_mtime - server.LESSON_WARM_LOCK_S - 1
    os.utime(marker, (old, old))  # a marker left by a killed server is taken over
    server._warm_up_lesson_records(str(folder))
    assert lessons_cmd.missing_records(folder) == 0 and not marker.exists()
    # the record is what `lessons --json` prints, read from the cache
    cached = lowprec("lessons", "--json", "--root", str(folder), cache=tmp_path / "cache")
    fresh = lowprec("lessons", "--json", "--root", str(folder))
    assert cached.returncode == fresh.returncode == 0 and cached.stdout == fresh.stdout


def test_the_lessons_benchmark_measures_a_fresh_install(monkeypatch: pytest.MonkeyPatch) -> None:
    """`lowprec bench lessons --quick` (issue 33 item 4's figures) runs both listings against the
    numpy import with an empty cache each time, and reports memory the listings stay under (a
    memory figure, not a timing: the times are the benchmark's to report)."""
    from lowprec.benchmarks import BENCHMARKS
    from lowprec.benchmarks import lessons as bench

    assert BENCHMARKS["lessons"] == "lowprec.benchmarks.lessons"
    monkeypatch.setattr(bench, "RUNS", (2, 15))  # the figures' shape, not their precision
    figures = bench.run(quick=True)
    assert figures["runs_each"] == 2 and "json_computed_once_s" not in figures
    assert figures["within_targets"] in ("yes", "NO")
    for name in ("outline", "json", "numpy_ml_dtypes"):
        assert figures[f"{name}_median_s"] > 0 and figures[f"{name}_peak_rss_mib"] > 5
    # the listings import neither numpy nor the parser: less memory than importing numpy alone
    assert figures["json_peak_rss_mib"] < figures["numpy_ml_dtypes_peak_rss_mib"] <= 150
    assert figures["outline_peak_rss_mib"] <= bench.TARGETS["outline_mib"]
