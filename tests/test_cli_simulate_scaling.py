"""`lowprec simulate spike|grouping|blocks` and `python -m lowprec.simulations.<name>` for the scaling
simulations: files written, JSON shape (strict: parsed with `lowprec.strictjson.loads`), offline
HTML, clear errors naming the option as typed, quiet progress."""

from __future__ import annotations

import csv
import io
import subprocess
import sys
from pathlib import Path

import pytest

from lowprec import strictjson
from lowprec.app.cli import main
from tests.conftest import ROOT


def test_spike_json_csv_html(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out_j, out_c, out_h = tmp_path / "s.json", tmp_path / "s.csv", tmp_path / "s.html"
    rc = main(["simulate", "spike", "--format", "E4M3FN", "--history", "16", "--algo", "max", "--margin", "0",
               "--steps", "60", "--spike-step", "30", "--spike", "50", "--seed", "0", "--size", "512",
               "--json", str(out_j), "--csv", str(out_c), "--html", str(out_h)])
    assert rc == 0
    d = strictjson.loads(out_j.read_text())
    assert d["parameters"]["format"] == "E4M3FN" and d["parameters"]["spike_step"] == 30
    assert len(d["steps"]) == 60
    for scaler in ("delayed", "current"):
        for key in ("encode_scale", "clipped_fraction", "rms_rel_error"):
            assert key in d["steps"][30][scaler]
    assert "amax" in d["steps"][30]
    assert d["steps"][30]["delayed"]["clipped_fraction"] > d["steps"][30]["current"]["clipped_fraction"]
    rows = list(csv.DictReader(out_c.read_text().splitlines()))
    assert len(rows) == 60 and float(rows[30]["amax"]) == d["steps"][30]["amax"]
    html = out_h.read_text()
    assert "<script src=" not in html and "Bokeh" in html  # inline resources: opens offline
    assert "\r" not in capsys.readouterr().err  # not a terminal: no progress bar


def test_grouping_and_blocks(tmp_path: Path) -> None:
    g = tmp_path / "g.json"
    assert main(["simulate", "grouping", "--study", "outlier", "--rows", "32", "--cols", "64", "--json", str(g),
                 "--html", str(tmp_path / "g.html"), "--quiet"]) == 0
    d = strictjson.loads(g.read_text())
    assert [e["granularity"] for e in d["entries"]] == ["tensor", "row", "column", "block32", "block16x16"]
    assert d["config"]["rows"] == 32 and d["outlier_index"] == [3, 5]
    b = tmp_path / "b.json"
    assert main(["simulate", "blocks", "--rows", "16", "--cols", "64", "--json", str(b), "--quiet",
                 "--html", str(tmp_path / "b.html")]) == 0
    assert "<script src=" not in (tmp_path / "b.html").read_text()
    schemes = {e["scheme"]: e for e in strictjson.loads(b.read_text())["entries"]}
    assert schemes["MXFP8_E4M3 floor"]["bits_per_element"] == 8.25
    t = tmp_path / "t.json"
    assert main(["simulate", "grouping", "--study", "transpose", "--rows", "64", "--cols", "64",
                 "--json", str(t), "--quiet"]) == 0
    assert strictjson.loads(t.read_text())["study"] == "transpose"


@pytest.mark.parametrize("argv, words", [
    (["simulate", "spike", "--history", "-1", "--quiet"], "--history: must be ≥ 1, got -1"),
    (["simulate", "spike", "--history", "0", "--quiet"], "--history: must be ≥ 1, got 0"),
    (["simulate", "spike", "--steps", "50", "--spike-step", "80", "--quiet"],
     "--spike-step: 80 is outside the stream of 50 steps; allowed 0..49"),
    (["simulate", "spike", "--margin", "-1", "--quiet"], "--margin: must be ≥ 0, got -1"),
    (["simulate", "spike", "--format", "E9M9", "--quiet"], "--format: must be one of E4M3FN, "),
    (["simulate", "spike", "--format", "E8M0", "--quiet"], "got 'E8M0'"),
    (["simulate", "spike", "--algo", "mean"], "--algo: must be one of max, most_recent; got 'mean'"),
    (["simulate", "grouping", "--granularities", "tensor,block7", "--quiet"], "--granularities: block size 7"),
    (["simulate", "grouping", "--study", "diagonal"], "--study: must be one of outlier, scale_choice, transpose"),
    (["simulate", "grouping", "--outlier-row", "40", "--quiet"], "--outlier-row: must be < rows (32), got 40"),
    (["simulate", "blocks", "--rows", "10", "--quiet"], "--rows: must be ≥ 16, got 10"),
    (["simulate", "blocks", "--rows", "24", "--quiet"], "--rows: must be a multiple of 16"),
    (["simulate", "blocks", "--distribution", "cauchy"], "--distribution: must be one of normal, student_t"),
    (["simulate", "grouping", "--study", "transpose", "--block", "7", "--quiet"], "--block: block size 7 must divide"),
    (["simulate", "attention", "--seq", "0", "--quiet"], "--seq: must be ≥ 1, got 0"),
])
def test_bad_values_are_one_line_naming_the_option(argv: list[str], words: str,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("lowprec: error: --") and words in err and err.count("\n") == 1


@pytest.mark.parametrize("argv, words", [
    (["simulate", "spike", "--steps", "abc"], "argument --steps: invalid int value: 'abc'"),
    (["simulate", "blocks", "--outlier", "big"], "argument --outlier: invalid float value: 'big'"),
])
def test_bad_option_is_one_line(argv: list[str], words: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit, match="^2$") as exc:
        main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "usage:" not in err  # one line, no usage dump
    assert err.startswith(f"lowprec simulate {argv[1]}: error:") and words in err


@pytest.mark.parametrize("name", ["spike", "grouping", "blocks", "attention", "hadamard"])
def test_python_m_bad_value_and_html(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    import importlib

    module = importlib.import_module(f"lowprec.simulations.{name}")
    assert module.main(["--seed", "-1", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err == f"python -m lowprec.simulations.{name}: error: --seed: must be ≥ 0, got -1\n"
    assert module.main(["--html", "x.html", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "--html: plots are drawn by the app" in err and f"lowprec simulate {name}" in err


def test_json_to_stdout(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "spike", "--steps", "4", "--spike-step", "2", "--size", "64", "--json", "-"]) == 0
    d = strictjson.loads(capsys.readouterr().out)  # stdout is the JSON alone: no summary line mixed in
    assert len(d["steps"]) == 4


def test_python_m_simulations(tmp_path: Path) -> None:
    out = tmp_path / "d.json"
    res = subprocess.run([sys.executable, "-m", "lowprec.simulations.studies.spike", "--steps", "12", "--spike-step", "6",
                          "--size", "128", "--json", str(out), "--csv", str(tmp_path / "d.csv")],
                         cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert len(strictjson.loads(out.read_text())["steps"]) == 12
    assert res.stdout.startswith("steps: 12; at step 6: delayed clipped ")  # the summary, as `lowprec simulate`
    from lowprec.simulations import blocks
    from lowprec.simulations.studies import grouping

    assert blocks.main(["--rows", "16", "--cols", "32", "--json", str(tmp_path / "b.json")]) == 0
    assert grouping.main(["--study", "transpose", "--rows", "32", "--cols", "32", "--json", str(tmp_path / "t.json")]) == 0
    assert strictjson.loads((tmp_path / "b.json").read_text())["study"] == "blocks"
    from lowprec.simulations.studies import hadamard

    assert hadamard.main(["--rows", "4", "--cols", "32", "--json", str(tmp_path / "h.json")]) == 0
    assert strictjson.loads((tmp_path / "h.json").read_text())["study"] == "hadamard"
    assert blocks.main(["--rows", "15", "--json", str(tmp_path / "x.json")]) == 2  # one error line
    assert not (tmp_path / "x.json").exists()


class _FakeTTY(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize("quiet", [False, True])
def test_progress_bar_is_driven(quiet: bool) -> None:
    from lowprec.app.commands.progress import ProgressBar
    from lowprec.simulations.studies.spike import simulate_stream

    stream = _FakeTTY()
    bar = ProgressBar("spike", quiet=quiet, stream=stream, delay_s=0.0)
    simulate_stream(steps=5, spike_step=2, size=64, progress=bar)
    bar.close()
    assert ("5/5" in stream.getvalue()) is (not quiet)


@pytest.mark.parametrize("study", ["outlier", "scale_choice", "transpose", "hadamard"])
def test_grouping_html_for_every_study(study: str, tmp_path: Path) -> None:
    out, data = tmp_path / f"{study}.html", tmp_path / f"{study}.json"
    assert main(["simulate", "grouping", "--study", study, "--html", str(out), "--json", str(data), "--quiet"]) == 0
    html = out.read_text()
    assert "<script src=" not in html and "Bokeh" in html
    assert strictjson.loads(data.read_text())["config"]["study"] == study


def test_spike_summary_speaks_in_percent_like_the_widget(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The clipped shares are percentages in the summary, as in the widget's words and the lessons
    (before, the command line printed the bare fraction 0.5312 where the page said 53.12%)."""
    from lowprec.app.widgets.delayed_spike import DelayedSpike

    args = {"steps": 60, "spike_step": 30, "size": 512, "seed": 1}
    out = tmp_path / "s.json"
    assert main(["simulate", "spike", *[f"--{k.replace('_', '-')}={v}" for k, v in args.items()],
                 "--json", str(out)]) == 0
    summary = capsys.readouterr().out
    step = strictjson.loads(out.read_text())["steps"][30]
    delayed, current = step["delayed"]["clipped_fraction"], step["current"]["clipped_fraction"]
    assert 0 < delayed < 1 and current == 0.0
    said = f"delayed clipped {100 * delayed:.2f} %, current clipped 0.00 %"
    assert said in summary, summary
    widget = DelayedSpike(**args)
    assert f"clips {100 * delayed:.2f} % of the tensor, current scaling 0.00 %" in widget.summary
