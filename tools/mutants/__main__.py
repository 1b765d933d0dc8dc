"""`python -m tools.mutants` (= `./dev mutants`): apply each catalogued mutant to a scratch copy
of the tree, run its tests, report caught / survived (text, and strict JSON with --json)."""

from __future__ import annotations

import argparse
import os
import queue
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from lowprec import strictjson

from . import Mutant, apply_mutant, snippet_count
from .catalogue import MUTANTS

ROOT = Path(__file__).resolve().parents[2]
#: what the scratch copy leaves out (the venv is used in place; caches are per copy)
IGNORE = shutil.ignore_patterns(".git", ".venv", ".mypy_cache", ".pytest_cache", ".hypothesis", "out",
                                "build", "dist", "*.egg-info")
MARKS = "not ui and not slow and not packaging and not gpu"
_FIRST_FAIL = re.compile(r"^(FAILED|ERROR) (\S+)", re.M)
_RUNNING: set[subprocess.Popen[bytes]] = set()  # test processes in flight (killed on Ctrl-C / SIGTERM)
_STOP = threading.Event()


def _stop(signum: int, frame: Any) -> None:
    _STOP.set()
    for proc in list(_RUNNING):
        proc.kill()


def scratch_copy(dest: Path) -> Path:
    """A copy of the repository; its tests import the copy's `lowprec` (PYTHONPATH), whose layers are
    the copy's top-level folders (lowprec/__init__.py puts the copy's root on its `__path__`)."""
    shutil.copytree(ROOT, dest, symlinks=True, ignore=IGNORE)
    return dest


def pytest_command(args: tuple[str, ...], keyword: str, stop_first: bool = True, slow: bool = False) -> list[str]:
    """The test command of one selection; `slow`: tests marked slow are selected too (a mutant whose
    catching tests are slow ones, e.g. the Triton-interpreter checks)."""
    marks = MARKS.replace(" and not slow", "") if slow else MARKS
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "addopts=", "-rfE",
           "-m", marks, "--no-header", "-W", "ignore::pytest.PytestUnknownMarkWarning"]
    if slow:
        cmd.append("--slow")
    if stop_first:
        cmd.append("-x")
    if keyword:
        cmd += ["-k", keyword]
    return cmd + list(args)


def run_tests(tree: Path, args: tuple[str, ...], keyword: str, timeout: float,
              extra_env: tuple[tuple[str, str], ...] = (), slow: bool = False) -> tuple[str, str, float, float]:
    """(outcome, detail, wall seconds, CPU seconds of the test process): outcome 'passed',
    'failed' (detail: the first failing test), 'timeout' or 'no-tests'. CPU seconds do not depend
    on how loaded the machine is; wall seconds do."""
    env = dict(os.environ, PYTHONPATH=str(tree), PYTHONDONTWRITEBYTECODE="1", LOWPREC_CODEC_THREADS="1")
    env.update(dict(extra_env))
    t0 = time.perf_counter()
    with tempfile.TemporaryFile("w+", encoding="utf-8") as out:
        proc = subprocess.Popen(pytest_command(args, keyword, slow=slow), cwd=tree, env=env, stdout=out,
                                stderr=subprocess.STDOUT)
        _RUNNING.add(proc)
        timer = threading.Timer(timeout, proc.kill)
        timer.start()
        _, status, usage = os.wait4(proc.pid, 0)
        timer.cancel()
        _RUNNING.discard(proc)
        proc.returncode = rc = os.waitstatus_to_exitcode(status)
        out.seek(0)
        text = out.read()
    dt = time.perf_counter() - t0
    cpu = usage.ru_utime + usage.ru_stime
    if rc == -9 and dt >= timeout:
        return "timeout", f"no result within {timeout:.0f} s", dt, cpu
    if rc == 0:
        return "passed", "", dt, cpu
    if rc == 5:
        return "no-tests", "the selection collected no tests", dt, cpu
    m = _FIRST_FAIL.search(text)
    return "failed", (m.group(2) if m else (text.strip().splitlines() or ["?"])[-1][:200]), dt, cpu


def run_mutant(tree: Path, m: Mutant, timeout: float) -> dict[str, Any]:
    path = tree / m.path
    st = path.stat()
    original_text = apply_mutant(tree, m)
    try:
        outcome, detail, dt, cpu = run_tests(tree, m.tests, m.keyword, timeout, m.env, m.slow)
    finally:
        path.write_text(original_text, encoding="utf-8")
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))  # caches of the original stay valid
    # a timeout counts as caught (the mutant hangs the code) but is listed apart: on a loaded machine
    # it can also mean the selection was too slow, so raise --timeout and rerun that mutant
    status = {"failed": "caught", "timeout": "caught", "passed": "survived"}.get(outcome, "broken")
    return {"name": m.name, "path": m.path, "description": m.description, "status": status,
            "outcome": outcome, "first_failure": detail, "seconds": round(dt, 1), "cpu_seconds": round(cpu, 1),
            "tests": list(m.tests), "keyword": m.keyword}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="./dev mutants", description=__doc__)
    ap.add_argument("names", nargs="*", help="run only these mutants (names or substrings)")
    ap.add_argument("-j", "--jobs", type=int, default=1, help="mutants run in parallel (one scratch copy each)")
    ap.add_argument("--timeout", type=float, default=900.0, help="seconds per mutant before it counts as a hang")
    ap.add_argument("--json", default=None, help="write the report as strict JSON to this path ('-': stdout)")
    ap.add_argument("--baseline", action="store_true",
                    help="first run every selected test file unmutated (the default suite must pass for "
                         "the results to mean anything; this checks it for the selection)")
    ap.add_argument("--min-caught", type=float, default=95.0, help="exit status 1 below this caught percentage")
    ap.add_argument("--list", action="store_true", help="list the catalogue and exit")
    ns = ap.parse_args(argv)
    mutants = [m for m in MUTANTS if not ns.names or any(s in m.name for s in ns.names)]
    if ns.list:
        for m in mutants:
            print(f"{m.name:34s} {m.path:36s} {m.description}")
        return 0
    if not mutants:
        ap.error(f"no mutant matches {ns.names}")
    bad = [m.name for m in mutants if snippet_count(ROOT, m) != 1]
    if bad:
        ap.error(f"snippets not found exactly once (update the catalogue): {', '.join(bad)}")
    jobs = max(1, ns.jobs)
    load0 = os.getloadavg()
    t_start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="lowprec-mutants-") as tmp:
        trees = [scratch_copy(Path(tmp) / f"tree{i}") for i in range(jobs)]
        signal.signal(signal.SIGINT, _stop)
        signal.signal(signal.SIGTERM, _stop)
        baseline: dict[str, Any] = {"ran": False}
        if ns.baseline:
            # every distinct selection (tests, -k, environment) once, unmutated: each must pass
            groups = sorted({(m.tests, m.keyword, m.env, m.slow) for m in mutants})
            failures = []
            t0 = time.perf_counter()
            for tests, keyword, env, slow in groups:
                if _STOP.is_set():
                    return 130
                outcome, detail, dt, cpu = run_tests(trees[0], tests, keyword, 3 * ns.timeout, env, slow)
                print(f"baseline {outcome:7s} {dt:6.1f} s ({cpu:5.1f} s CPU) {' '.join(tests)[:90]} "
                      f"{'-k ...' if keyword else ''} {dict(env) or ''} {detail}", flush=True)
                if outcome != "passed":
                    failures.append({"tests": list(tests), "keyword": keyword, "env": dict(env),
                                     "outcome": outcome, "detail": detail})
            baseline = {"ran": True, "selections": len(groups), "failures": failures,
                        "seconds": round(time.perf_counter() - t0, 1)}
            if failures:
                print("the unmutated tree fails some selections: fix them first", file=sys.stderr)
                return 2
        todo: queue.Queue[Mutant] = queue.Queue()
        for m in mutants:
            todo.put(m)
        results: dict[str, dict[str, Any]] = {}
        lock = threading.Lock()

        def worker(tree: Path) -> None:
            while not _STOP.is_set():
                try:
                    m = todo.get_nowait()
                except queue.Empty:
                    return
                r = run_mutant(tree, m, ns.timeout)
                if _STOP.is_set():
                    return
                with lock:
                    results[m.name] = r
                    mark = {"caught": "CAUGHT  ", "survived": "SURVIVED", "broken": "BROKEN  "}[r["status"]]
                    print(f"[{len(results):3d}/{len(mutants)}] {mark} {m.name:32s} {r['seconds']:6.1f} s "
                          f"({r['cpu_seconds']:5.1f} s CPU)  "
                          f"{r['first_failure']}", flush=True)

        threads = [threading.Thread(target=worker, args=(t,)) for t in trees]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if _STOP.is_set():
            print("stopped: no report", file=sys.stderr)
            return 130
    total_s = time.perf_counter() - t_start
    ordered = [results[m.name] for m in mutants]
    caught = sum(r["status"] == "caught" for r in ordered)
    pct = 100.0 * caught / len(ordered)
    report = {"mutants": len(ordered), "caught": caught, "caught_percent": round(pct, 1),
              "survived": [r["name"] for r in ordered if r["status"] == "survived"],
              "broken": [r["name"] for r in ordered if r["status"] == "broken"],
              "timed_out": [r["name"] for r in ordered if r["outcome"] == "timeout"],
              "seconds": round(total_s, 1), "cpu_seconds": round(sum(r["cpu_seconds"] for r in ordered), 1),
              "jobs": jobs, "cpu_count": os.cpu_count(),
              "load_average_start": [round(v, 2) for v in load0],
              "load_average_end": [round(v, 2) for v in os.getloadavg()],
              "baseline": baseline, "results": ordered}
    print(f"\n{caught}/{len(ordered)} caught ({pct:.1f}%) in {total_s / 60:.1f} min "
          f"({report['cpu_seconds'] / 60:.1f} CPU min), {jobs} job(s); "
          f"load average {load0[0]:.2f} at start, {os.getloadavg()[0]:.2f} at end")
    for r in ordered:
        if r["status"] != "caught" or r["outcome"] == "timeout":
            print(f"  {r['outcome'] if r['outcome'] == 'timeout' else r['status']}: {r['name']} ({r['path']}): "
                  f"{r['description']}")
    if ns.json:
        strictjson.write(report, ns.json)
    return 0 if pct >= ns.min_caught else 1


if __name__ == "__main__":
    sys.exit(main())
