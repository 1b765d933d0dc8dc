"""`lowprec simulate hadamard`: the random Hadamard transform study as a subcommand of its own
(issue 27.3: it existed only as `python -m lowprec.simulations.hadamard` and as the grouping
simulation's hadamard study). Its options are `HadamardConfig`'s; it writes the same strict JSON as
`python -m` and as the function called directly, prints the study's summary, and `--html` writes an
offline page whose caption quotes the run's own numbers."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from lowprec import strictjson
from lowprec.app.cli import main
from lowprec.simulations.studies import hadamard
from tests.conftest import ROOT

ARGS = ["--rows", "8", "--cols", "64", "--outlier", "50", "--seed", "2"]


def test_simulate_hadamard_json_html_and_summary(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    j, h = tmp_path / "h.json", tmp_path / "h.html"
    assert main(["simulate", "hadamard", *ARGS, "--json", str(j), "--html", str(h)]) == 0
    study = hadamard.simulate_hadamard(rows=8, cols=64, outlier=50.0, seed=2)
    # the same data as the study computed directly, through the one strict writer
    assert strictjson.loads(j.read_text()) == strictjson.loads(strictjson.dumps(study.to_dict()))
    out = capsys.readouterr().out
    assert out.splitlines() == hadamard.summary_lines(study)
    page = h.read_text()
    assert "<script src=" not in page and "cdn.bokeh.org" not in page and "Bokeh" in page  # offline
    # the caption the pages show (the registry's), quoting this run's numbers (inside the page's
    # embedded document, so compared as phrases free of markup and quotes)
    from lowprec.app.plots.captions import hadamard as hadamard_caption

    said = hadamard_caption(study)
    assert said.startswith("**What to look at:** the error of the ordinary elements") and "What to look at:" in page
    phrase = f"amax / RMS goes from {study.block_crest_before:.3g} to {study.block_crest_after:.3g}"
    assert phrase in said and phrase in page


def test_simulate_hadamard_equals_python_m(tmp_path: Path) -> None:
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    assert main(["simulate", "hadamard", *ARGS, "--json", str(a), "--quiet"]) == 0
    res = subprocess.run([sys.executable, "-m", "lowprec.simulations.studies.hadamard", *ARGS, "--json", str(b), "--quiet"],
                         cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert a.read_text() == b.read_text()


@pytest.mark.parametrize("argv, message", [
    (["--cols", "40"], "--cols: must be a multiple of 32 (MXFP4 blocks), got 40"),
    (["--rows", "0"], "--rows: must be ≥ 1, got 0"),
    (["--seed", "-1"], "--seed: must be ≥ 0, got -1"),
])
def test_simulate_hadamard_bad_values_are_one_line(argv: list[str], message: str,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "hadamard", *argv, "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"lowprec: error: {message}")


def test_simulate_lists_hadamard(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit, match="^0$"):
        main(["simulate", "--help"])
    assert "hadamard" in capsys.readouterr().out
