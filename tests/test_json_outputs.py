"""Every command that takes `--json` writes strict RFC 8259 JSON (`lowprec.strictjson.loads`: no
NaN/Infinity tokens), with non-finite numbers spelled "nan" / "inf" / "-inf".

The commands are discovered from the parser (every subcommand and sub-subcommand with a --json
option), so a new one is covered the moment it exists: it fails here until it has a small, cheap
argument list in CASES.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, Iterator

import pytest

from lowprec import strictjson
from lowprec.app import cli

def _lab_file() -> str:
    """A tiny .npy for `lowprec analyze`: values BF16 holds exactly (SQNR +inf, written "inf")."""
    import tempfile

    import numpy as np

    path = Path(tempfile.mkdtemp(prefix="lowprec-json-")) / "exact.npy"
    np.save(path, np.tile(np.array([1.0, 2.0, 0.5, -0.25], np.float32), (2, 8)))
    return str(path)


#: command path → cheap arguments (without --json), chosen to exercise non-finite values
CASES: dict[str, list[str]] = {
    "analyze": [_lab_file(), "--recipes", "bf16,mxfp4", "--quiet"],
    "formats": [],
    "cast": ["E5M2", "--", "-70000", "nan", "inf", "0", "3.3"],
    "examples": [],
    "lessons": [],
    "crosscheck": ["--backend", "ml_dtypes", "--formats", "E2M1", "--n-random", "100", "--quiet"],
    "bench": ["gpu"],  # without CUDA: {"gpu": {"skipped": …}}, the writer is what is checked
    "simulate spike": ["--steps", "4", "--spike-step", "2", "--size", "64", "--quiet"],
    "simulate grouping": ["--rows", "16", "--cols", "32", "--quiet"],
    "simulate blocks": ["--rows", "16", "--cols", "32", "--quiet"],
    "simulate attention": ["--seq", "8", "--head-dim", "4", "--trials", "4", "--quiet"],
    "simulate recompute": ["--layers", "2", "--steps", "2", "--width", "8", "--batch", "4", "--quiet"],
    "simulate hadamard": ["--rows", "4", "--cols", "32", "--quiet"],
    "simulate gemm": ["--k-max", "64", "--rows", "2", "--cols", "2", "--no-table", "--quiet"],
    "simulate stateful": ["--variant", "dist-local-amax", "--steps", "3", "--microbatches", "2", "--ranks", "2",
                          "--rows", "8", "--width", "4", "--spike-step", "1", "--overflow", "nonfinite", "--quiet"],
    "quantize": [_lab_file(), "--recipe", "e4m3_row", "--layout", "compressed_tensors_fp8", "-o",
                 str(Path(__import__("tempfile").mkdtemp(prefix="lowprec-json-")) / "out"), "--quiet"],
}
#: commands whose --json takes no file (a flag: the JSON goes to stdout)
EXTRA_RUNS: dict[str, list[str]] = {"formats table": ["formats", "table", "E5M2", "--json"]}


def _json_commands(parser: argparse.ArgumentParser, path: str) -> Iterator[tuple[str, argparse.Action]]:
    for action in parser._actions:
        if "--json" in action.option_strings:
            yield path, action
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _json_commands(sub, f"{path} {name}")


def discovered() -> dict[str, argparse.Action]:
    found: dict[str, argparse.Action] = {}
    for entry in cli.COMMANDS:
        for path, action in _json_commands(cli.command_parser(entry.name), entry.name):
            found[path] = action
    return found


DISCOVERED = discovered()


def test_every_json_command_has_a_case() -> None:
    assert set(DISCOVERED) == set(CASES), "add cheap arguments for new --json commands to CASES"


def _nonfinite_strings(obj: Any) -> set[str]:
    if isinstance(obj, dict):
        return set().union(*(_nonfinite_strings(v) for v in obj.values())) if obj else set()
    if isinstance(obj, list):
        return set().union(*(_nonfinite_strings(v) for v in obj)) if obj else set()
    return {obj} if obj in ("nan", "inf", "-inf") else set()


@pytest.mark.parametrize("path", sorted(CASES))
def test_json_output_is_strict(path: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    words = path.split()
    args = CASES[path]
    action = DISCOVERED[path]
    out = tmp_path / "out.json"
    if action.nargs == 0:  # a flag: JSON on stdout
        if "--" in args:
            i = args.index("--")
            argv = [*words, *args[:i], "--json", *args[i:]]
        else:
            argv = [*words, *args, "--json"]
    else:
        argv = [*words, *args, "--json", str(out)]
    status = cli.main(argv)
    assert status == 0, capsys.readouterr().err
    text = capsys.readouterr().out if action.nargs == 0 else out.read_text(encoding="utf-8")
    data = strictjson.loads(text)  # raises on NaN / Infinity tokens
    assert data
    if path == "cast":
        # -70000 overflows E5M2 to -Inf (infinitely wrong); NaN stays NaN (no distance); x = inf
        # stays +Inf (exact); non-finite numbers are written as the strings "inf", "-inf", "nan"
        assert [r["value"] for r in data[:3]] == ["-inf", "nan", "inf"]
        assert [r["error"] for r in data[:3]] == ["-inf", "nan", 0.0]
        assert data[0]["rel_error"] == "inf" and data[1]["rel_error"] == "nan" and data[3]["rel_error"] == 0.0
    if path == "analyze":
        assert data["tensors"][0]["results"][0]["sqnr_db"] == "inf"  # the exact BF16 cast
    if path == "simulate stateful":  # the spike overflows to NaN: a non-finite loss, a skipped step
        assert data["steps"][1]["loss"] == "nan" and data["totals"]["optimizer_steps_skipped"] >= 1
    if path == "formats":
        from lowprec.formats import format_names

        assert [p["name"] for p in data] == format_names()


@pytest.mark.parametrize("name", sorted(EXTRA_RUNS))
def test_flag_json_variants_are_strict(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(EXTRA_RUNS[name]) == 0
    data = strictjson.loads(capsys.readouterr().out)
    rows = data["rows"]
    assert {"nan", "inf", "-inf"} <= _nonfinite_strings(rows)  # E5M2 has ±Inf and NaN codes


def test_json_to_stdout_is_json_alone(capsys: pytest.CaptureFixture[str]) -> None:
    """Where --json takes a path, "-" is standard output and nothing else is printed there."""
    assert cli.main(["crosscheck", *CASES["crosscheck"], "--json", "-"]) == 0
    report = strictjson.loads(capsys.readouterr().out)
    assert report["backend"] == "ml_dtypes" and report["ok"] is True
