"""The README runs as written: its Python snippet executes (and computes what its comments say),
its `lowprec …` example commands run and succeed — the long ones (serve, export, crosscheck, bench)
with `--help` appended, which still checks that every option they show exists — and the notebook
line imports what it names."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from lowprec import strictjson

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
BIN = Path(sys.executable).parent  # the README's `.venv/bin/` is this interpreter's bin folder
LONG = ("serve", "export", "crosscheck", "bench")


def _blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", README, flags=re.DOTALL)


def _commands() -> list[str]:
    """Every `.venv/bin/lowprec …` line of the bash blocks, without its comment; lines that are
    patterns (`a|b|c ...`) are not commands."""
    out = []
    for block in _blocks("bash"):
        for line in block.splitlines():
            line = line.split("  #")[0].strip()
            if line.startswith(".venv/bin/lowprec") and "|" not in line and "..." not in line:
                out.append(line)
    return out


COMMANDS = _commands()


def test_readme_lists_the_commands() -> None:
    words = {shlex.split(c)[1] for c in COMMANDS if len(shlex.split(c)) > 1}
    assert {"formats", "cast", "simulate", "examples", "serve", "export", "crosscheck", "bench",
            "--version"} <= words


def test_python_snippet_runs_as_written() -> None:
    (snippet,) = _blocks("python")
    namespace: dict[str, object] = {}
    exec(compile(snippet, "README.md", "exec"), namespace)  # noqa: S102 - our own README
    codes = np.asarray(namespace["codes"])
    assert codes.tolist() == [0x7E, 0x7F, 0x45]  # as the comment says (ml_dtypes: 465 → NaN)


@pytest.mark.parametrize("command", COMMANDS)
def test_command_runs_as_written(command: str, tmp_path: Path) -> None:
    words = shlex.split(command)
    long = words[1] in LONG
    if (BIN / "lowprec").exists():
        argv = [str(BIN / "lowprec"), *words[1:]]
    else:  # no console script next to this interpreter: the same entry point through -m
        argv = [sys.executable, "-m", "lowprec.app.cli", *words[1:]]
    if long:
        argv.append("--help")
    r = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False)
    assert r.returncode == 0, f"{command}\n{r.stderr[-2000:]}"
    assert "Traceback" not in r.stderr
    if "--json" in argv and not long and argv[argv.index("--json") + 1:][:1] in ([], ["--"]):
        strictjson.loads(r.stdout)  # JSON on stdout: strict
    for i, word in enumerate(argv[:-1]):
        if word in ("--json", "--html") and not long and not argv[i + 1].startswith("-"):
            assert (tmp_path / argv[i + 1]).stat().st_size > 0, argv[i + 1]


def test_notebook_line_imports() -> None:
    line = next(x for x in README.splitlines() if "from lowprec.app.widgets import" in x)
    names = re.search(r"from lowprec\.app\.widgets import (\w+)", line)
    assert names is not None
    r = subprocess.run([sys.executable, "-c", f"from lowprec.app.widgets import {names.group(1)}"],
                       cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)
    assert r.returncode == 0, r.stderr
