"""`python -m tools.mutants` (= `./dev mutants`): apply each catalogued mutant to a scratch copy
of the tree, run its tests, report caught / survived (text, and strict JSON with --json)."""

from __future__ import annotations

import argparse
import os
import queue
import re
import shutil
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


def scratch_copy(dest: Path) -> Path:
    """A copy of the repository (symlinks of lowprec/ kept relative, so they point into the copy)."""
    shutil.copytree(ROOT, dest, symlinks=True, ignore=IGNORE)
    return dest


def pytest_command(args: tuple[str, ...], keyword: str, stop_first: bool = True) -> list[str]:
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "addopts=", "-rfE",
           "-m", MARKS, "--no-header", "-W", "ignore::pytest.PytestUnknownMarkWarning"]
    if stop_first:
        cmd.append("-x")
    if keyword:
        cmd += ["-k", keyword]
    return cmd + list(args)


def run_tests(tree: Path, args: tuple[str, ...], keyword: str, timeout: float) -> tuple[str, str, float]:
    """(outcome, detail, seconds): outcome 'passed', 'failed' (detail: first failing test),
    'timeout' or 'no-tests'."""
    env = dict(os.environ, PYTHONPATH=str(tree), PYTHONDONTWRITEBYTECODE="1", LOWPREC_CODEC_THREADS="1")
    t0 = time.perf_counter()
    try:
        p = subprocess.run(pytest_command(args, keyword), cwd=tree, env=env, capture_output=True,
                           text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return "timeout", f"no result within {timeout:.0f} s", time.perf_counter() - t0
    dt = time.perf_counter() - t0
    if p.returncode == 0:
        return "passed", "", dt
    if p.returncode == 5:
        return "no-tests", "the selection collected no tests", dt
    m = _FIRST_FAIL.search(p.stdout)
    return "failed", (m.group(2) if m else (p.stdout + p.stderr).strip().splitlines()[-1][:200]), dt


def run_mutant(tree: Path, m: Mutant, timeout: float) -> dict[str, Any]:
    path = tree / m.path
    st = path.stat()
    original_text = apply_mutant(tree, m)
    try:
        outcome, detail, dt = run_tests(tree, m.tests, m.keyword, timeout)
    finally:
        path.write_text(original_text, encoding="utf-8")
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))  # caches of the original stay valid
    status = {"failed": "caught", "timeout": "caught", "passed": "survived"}.get(outcome, "broken")
    return {"name": m.name, "path": m.path, "description": m.description, "status": status,
            "outcome": outcome, "first_failure": detail, "seconds": round(dt, 1),
            "tests": list(m.tests), "keyword": m.keyword}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="./dev mutants", description=__doc__)
    ap.add_argument("names", nargs="*", help="run only these mutants (names or substrings)")
    ap.add_argument("-j", "--jobs", type=int, default=1, help="mutants run in parallel (one scratch copy each)")
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds per mutant before it counts as a hang")
    ap.add_argument("--json", default=None, help="write the report as strict JSON to this path ('-': stdout)")
    ap.add_argument("--no-baseline", action="store_true",
                    help="skip the unmutated run of every selection (it must pass for the results to mean anything)")
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
        baseline: dict[str, Any] = {"ran": False}
        if not ns.no_baseline:
            files = tuple(sorted({a.split("::")[0] for m in mutants for a in m.tests}))
            outcome, detail, dt = run_tests(trees[0], files, "", 3 * ns.timeout)
            baseline = {"ran": True, "outcome": outcome, "detail": detail, "seconds": round(dt, 1),
                        "files": list(files)}
            print(f"baseline (unmutated, {len(files)} test files): {outcome} in {dt:.0f} s {detail}", flush=True)
            if outcome != "passed":
                print("the unmutated tree fails its tests: fix that first", file=sys.stderr)
                return 2
        todo: queue.Queue[Mutant] = queue.Queue()
        for m in mutants:
            todo.put(m)
        results: dict[str, dict[str, Any]] = {}
        lock = threading.Lock()

        def worker(tree: Path) -> None:
            while True:
                try:
                    m = todo.get_nowait()
                except queue.Empty:
                    return
                r = run_mutant(tree, m, ns.timeout)
                with lock:
                    results[m.name] = r
                    mark = {"caught": "CAUGHT  ", "survived": "SURVIVED", "broken": "BROKEN  "}[r["status"]]
                    print(f"[{len(results):3d}/{len(mutants)}] {mark} {m.name:34s} {r['seconds']:6.1f} s  "
                          f"{r['first_failure']}", flush=True)

        threads = [threading.Thread(target=worker, args=(t,)) for t in trees]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    total_s = time.perf_counter() - t_start
    ordered = [results[m.name] for m in mutants]
    caught = sum(r["status"] == "caught" for r in ordered)
    pct = 100.0 * caught / len(ordered)
    report = {"mutants": len(ordered), "caught": caught, "caught_percent": round(pct, 1),
              "survived": [r["name"] for r in ordered if r["status"] == "survived"],
              "broken": [r["name"] for r in ordered if r["status"] == "broken"],
              "seconds": round(total_s, 1), "jobs": jobs, "cpu_count": os.cpu_count(),
              "load_average_start": [round(v, 2) for v in load0],
              "load_average_end": [round(v, 2) for v in os.getloadavg()],
              "baseline": baseline, "results": ordered}
    print(f"\n{caught}/{len(ordered)} caught ({pct:.1f}%) in {total_s / 60:.1f} min, {jobs} job(s); "
          f"load average {load0[0]:.2f} at start, {os.getloadavg()[0]:.2f} at end")
    for r in ordered:
        if r["status"] != "caught":
            print(f"  {r['status']}: {r['name']} ({r['path']}): {r['description']}")
    if ns.json:
        strictjson.write(report, ns.json)
    return 0 if pct >= ns.min_caught else 1


if __name__ == "__main__":
    sys.exit(main())
