"""The old names of the modules that moved into `simulations/`' subpackages (issue 27 item 7) and the
README gives keep working: importing one gives the moved module itself, and `python -m
lowprec.simulations.NAME` of every simulation the README lists runs (`Simulation.module`, the `prog`
of their parsers, is still that name). The map of every move is tools/restructure_simulations.py.
# restructure: keep old names
"""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import pytest

from lowprec import strictjson

ROOT = Path(__file__).resolve().parents[1]
ALIASES = {
    "attention": "studies.attention",
    "grouping": "studies.grouping",
    "hadamard": "studies.hadamard",
    "spike": "studies.spike",
    "delayed": "scaling.delayed",
    "te_placement": "studies.te_placement",
    "defect_hunt": "studies.defect_hunt",
    "mx": "quant.mx",
    "nvfp4": "quant.nvfp4",
    "block_conventions": "quant.conventions",
}


@pytest.mark.parametrize("old, new", sorted(ALIASES.items()))
def test_old_name_is_the_moved_module(old: str, new: str) -> None:
    a = importlib.import_module(f"lowprec.simulations.{old}")
    b = importlib.import_module(f"lowprec.simulations.{new}")
    assert a is b
    assert getattr(importlib.import_module("lowprec.simulations"), old) is b


def test_readme_names_resolve() -> None:
    """`simulations.delayed.DelayedScaling` (README) is the class of the moved module."""
    from lowprec.simulations.delayed import DelayedScaling
    from lowprec.simulations.scaling.delayed import DelayedScaling as moved

    assert DelayedScaling is moved


@pytest.mark.parametrize("name", ["attention", "recompute", "grouping", "blocks", "hadamard", "spike"])
def test_python_m_of_each_simulation(name: str, tmp_path: Path) -> None:
    r = subprocess.run([sys.executable, "-m", f"lowprec.simulations.{name}", "--help"], capture_output=True,
                       text=True, timeout=120, check=False, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith(f"usage: python -m lowprec.simulations.{name}")


def test_python_m_of_an_alias_runs_the_simulation(tmp_path: Path) -> None:
    """A real run through the old path (not only --help): strict JSON on stdout."""
    r = subprocess.run([sys.executable, "-m", "lowprec.simulations.hadamard", "--json", "-", "--quiet"],
                       capture_output=True, text=True, timeout=300, check=False, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert isinstance(strictjson.loads(r.stdout), dict)


def test_python_m_bad_value_is_one_line(tmp_path: Path) -> None:
    r = subprocess.run([sys.executable, "-m", "lowprec.simulations.spike", "--seed", "-1"], capture_output=True,
                       text=True, timeout=120, check=False, cwd=tmp_path)
    assert r.returncode == 2
    assert r.stderr == "python -m lowprec.simulations.spike: error: --seed: must be ≥ 0, got -1\n"
