"""The CLI's rough edges of issue 33 and `lowprec cast` generated from the bin explorer's record
(issue 27.4), each with the test that would have caught it. Oracles: ml_dtypes' finfo and casts,
torch's cast, the spike simulation's own result arrays (the summary must quote them as percentages)."""

from __future__ import annotations

import argparse
import json
import math
import re
import subprocess
import sys
import time
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
import torch

from lowprec import strictjson
from lowprec.app import cli
from lowprec.config import fields_of
from lowprec.extras import install_command
from lowprec.formats.explain import DEFAULT_CONVENTION, ExplainConfig, cast_text, explain_cast

ROOT = Path(__file__).resolve().parents[1]


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    try:
        rc = cli.main(argv)
    except SystemExit as exc:
        rc = int(exc.code or 0)
    out = capsys.readouterr()
    return rc, out.out, out.err


# ---- formats NAME -------------------------------------------------------------------------------


def test_formats_name_shows_that_format(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = _run(["formats", "E4M3FN"], capsys)  # was "argument action: invalid choice"
    assert rc == 0, err
    fields = dict(re.split(r"\s{2,}", line, maxsplit=1) for line in out.splitlines())
    fi = ml_dtypes.finfo(ml_dtypes.float8_e4m3fn)
    assert fields["name"] == "E4M3FN" and fields["bits"] == "8"
    assert float(fields["max"]) == float(fi.max) == 448.0
    assert float(fields["smallest_normal"].split(" = ")[0]) == float(fi.smallest_normal)
    assert float(fields["smallest_subnormal"].split(" = ")[0]) == float(fi.smallest_subnormal)
    assert fields["eps"] == f"{float(fi.eps)} = 1 × 2^-3"
    rc, out, _ = _run(["formats", "float8_e4m3fn", "--json"], capsys)  # an alias, one JSON object
    rc_all, all_out, _ = _run(["formats", "--json"], capsys)
    assert rc == rc_all == 0
    assert strictjson.loads(out) == next(d for d in strictjson.loads(all_out) if d["name"] == "E4M3FN")
    rc, out, _ = _run(["formats", "E4M3FN", "bf16"], capsys)
    assert rc == 0 and out.count("\nname ") == 1 and "BF16" in out
    rc, out, _ = _run(["formats", "table", "E4M3FN"], capsys)  # kept
    assert rc == 0 and len(out.splitlines()) == 257
    rc, _, err = _run(["formats", "E9M9"], capsys)
    assert rc == 2 and err.startswith("lowprec: error: unknown format 'E9M9'") and err.count("\n") == 1


# ---- cast: infinite errors, the text form, the record ---------------------------------------------


def test_cast_reports_an_infinite_error_as_inf(capsys: pytest.CaptureFixture[str]) -> None:
    # torch saturates +Inf to 448 in E4M3FN: a finite answer for an infinite input is infinitely wrong
    assert float(torch.tensor([math.inf]).to(torch.float8_e4m3fn).float()[0]) == 448.0
    rc, out, _ = _run(["cast", "E4M3FN", "inf", "--convention", "torch"], capsys)
    assert rc == 0 and "value 448.0" in out and "abs err inf  rel err inf" in out and "nan" not in out
    # ml_dtypes overflows -70000 to -Inf in E5M2
    assert float(np.float32(-70000).astype(ml_dtypes.float8_e5m2)) == -math.inf
    rc, out, _ = _run(["cast", "E5M2", "--", "-70000"], capsys)
    assert rc == 0 and "value -inf" in out and "abs err inf  rel err inf" in out
    rc, out, _ = _run(["cast", "E5M2", "--json", "--", "-70000", "inf"], capsys)
    rows = strictjson.loads(out)
    assert [(r["error"], r["abs_error"], r["rel_error"]) for r in rows] == [("-inf", "inf", "inf"), (0.0, 0.0, 0.0)]


def test_explain_cast_has_the_text_form_cast_prints(capsys: pytest.CaptureFixture[str]) -> None:
    e = explain_cast("465", "E4M3FN", "torch")
    assert str(e) == e.text() == (
        "E4M3FN: policy torch (rounding nearest_even, overflow saturate)\n"
        "465 → 01111110 0x7E  value 448.0 = 7/4 × 2^8  abs err 17  rel err 0.0366  bin [432, inf)")
    rc, out, _ = _run(["cast", "E4M3FN", "465", "--convention", "torch"], capsys)
    assert rc == 0 and out == e.text() + "\n"
    values = ["464", "0x1.8p3", "-0"]
    rc, out, _ = _run(["cast", "E4M3FN", *values, "--convention", "torch"], capsys)
    assert out == cast_text([explain_cast(v, "E4M3FN", "torch") for v in values]) + "\n"
    lines = out.splitlines()
    assert len(lines) == 4 and len({line.index("→") for line in lines[1:]}) == 1  # inputs aligned


def test_cast_is_generated_from_the_bin_explorers_record() -> None:
    from lowprec.app.widgets import BinExplorer

    parser = cli.command_parser("cast")
    options = {a.dest: a for a in parser._actions if a.option_strings and a.dest != "help"}
    knobs = {k.name: k for k in fields_of(ExplainConfig)}
    generated = set(knobs) - {"format", "value", "compare_format"}
    assert set(options) == generated | {"seed", "json"}
    for name in generated:
        assert options[name].default == knobs[name].default, name
        assert options[name].help == knobs[name].describe(), name
    # one default convention on both faces, stated in the help and the README
    assert knobs["convention"].default == DEFAULT_CONVENTION == BinExplorer().convention == "ml_dtypes"
    assert f"(default: {DEFAULT_CONVENTION})" in options["convention"].help
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert f"one default convention, `{DEFAULT_CONVENTION}`" in " ".join(readme.split())
    # the default convention is what an unqualified cast uses, with the convention's own rounding:
    # ml_dtypes turns 465 into NaN in E4M3FN and rounds the E8M0 tie 3 up to 4 (nearest-even: 2)
    assert explain_cast("465", "E4M3FN").code == 0x7F == int(
        np.float32(465).astype(ml_dtypes.float8_e4m3fn).view(np.uint8))
    e8m0_3 = int(np.float32(3).astype(ml_dtypes.float8_e8m0fnu).view(np.uint8))
    assert explain_cast("3", "E8M0").code == e8m0_3 == 0x81
    assert cli.main(["cast", "E8M0", "3", "--json"]) == 0


def test_cast_defaults_are_the_conventions_own(capsys: pytest.CaptureFixture[str]) -> None:
    """No option given: the ml_dtypes convention with its own rounding and overflow, named so."""
    rc, out, _ = _run(["cast", "E8M0", "3", "0.75", "--json"], capsys)
    rows = strictjson.loads(out)
    want = np.float32([3, 0.75]).astype(ml_dtypes.float8_e8m0fnu).view(np.uint8).tolist()
    assert rc == 0 and [r["code"] for r in rows] == want == [0x81, 0x7F]
    assert rows[0]["policy"]["name"] == "ml_dtypes" and rows[0]["policy"]["rounding"] == "nearest_away"


# ---- help ---------------------------------------------------------------------------------------


def _parsers() -> list[argparse.ArgumentParser]:
    out = []
    for entry in cli.COMMANDS:
        stack = [cli.command_parser(entry.name)]
        while stack:
            p = stack.pop()
            out.append(p)
            for a in p._actions:
                if isinstance(a, argparse._SubParsersAction):
                    stack.extend(dict.fromkeys(a.choices.values()))
    return out


def test_help_lists_each_choice_once_and_no_default_for_a_required_argument() -> None:
    twice, defaulted = [], []
    for parser in _parsers():
        for action in parser._actions:
            shown = cli.help_with_default(action)
            metavar = action.metavar if isinstance(action.metavar, str) else ""
            if "one of" in shown and "{" in metavar:  # the choices in the placeholder and the help
                twice.append(f"{parser.prog} {action.dest}")
            if (not action.option_strings or "required" in (action.help or "")) and "(default: none)" in shown:
                defaulted.append(f"{parser.prog} {action.dest}")
    assert not twice, twice
    assert not defaulted, defaulted
    # the cases of the issue: `formats`' FORMAT, `analyze`'s PATH, `export`'s DIR, `crosscheck --backend`
    for name, dest in (("formats", "words"), ("analyze", "paths"), ("export", "dir"), ("crosscheck", "backend")):
        action = next(a for a in cli.command_parser(name)._actions if a.dest == dest)
        assert "default" not in cli.help_with_default(action), (name, dest)
    usage = cli.command_parser("cast").format_usage()
    assert "{" not in usage and "--convention CONVENTION" in usage


# ---- install hints ------------------------------------------------------------------------------


def test_install_hint_follows_how_lowprec_was_installed(tmp_path: Path) -> None:
    assert install_command("torch", direct_url=None, installed=True) == "pip install 'lowprec[torch]'"  # an index
    assert install_command("torch", direct_url={"url": "file:///src/lowprec", "dir_info": {"editable": True}},
                           installed=True) == "pip install -e '/src/lowprec[torch]'"
    assert install_command("gpu", direct_url={"url": "file:///src/lowprec", "dir_info": {}},
                           installed=True) == "pip install '/src/lowprec[gpu]'"
    assert install_command("torch", direct_url={"url": "file:///d/lowprec-0.1.0-py3-none-any.whl",
                                                "archive_info": {}}, installed=True) == (
        "pip install '/d/lowprec-0.1.0-py3-none-any.whl[torch]'")
    assert install_command("torch", direct_url={"url": "https://example.org/lowprec.git",
                                                "vcs_info": {"vcs": "git", "requested_revision": "v1"}},
                           installed=True) == "pip install 'lowprec[torch] @ git+https://example.org/lowprec.git@v1'"
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'lowprec'\n")
    assert install_command("torch", installed=False, checkout=tmp_path) == f"pip install -e '{tmp_path}[torch]'"
    # here: this checkout (run through PYTHONPATH, or its own editable install) gets its own path
    assert install_command("torch").endswith(f"'{ROOT}[torch]'")


def test_crosscheck_n_random_is_bounded_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    start = time.perf_counter()
    for text in ("1e10", "10000000000", "-1", "1.5", "x"):
        rc, _, err = _run(["crosscheck", "--backend", "ml_dtypes", "--n-random", text], capsys)
        assert rc == 2 and err.count("\n") == 1 and "Traceback" not in err, err
        assert "argument --n-random: must be an integer 0 … 10000000" in err
    assert time.perf_counter() - start < 10  # refused before any vectors are made
    rc, out, err = _run(["crosscheck", "--backend", "ml_dtypes", "--formats", "E2M1", "--n-random", "1e2",
                         "--quiet", "--json", "-"], capsys)
    assert rc == 0, err
    assert {c["vectors"]["n_random"] for c in strictjson.loads(out)["checks"] if c["kind"] == "encode"} == {100}


def test_crosscheck_without_torch_names_the_install_command() -> None:
    code = ("import sys\nsys.modules['torch'] = None\nfrom lowprec.app.cli import main\n"
            "sys.exit(main(['crosscheck', '--backend', 'torch', '--formats', 'E4M3FN']))\n")
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 2
    assert r.stderr == (f"lowprec: error: backend 'torch' is not available here: torch is not installed: "
                        f"{install_command('torch')}\n")


# ---- summaries ----------------------------------------------------------------------------------


def test_spike_summary_gives_percentages_like_the_lessons() -> None:
    from lowprec.simulations.studies import spike

    result = spike.simulate_spike(spike.SpikeConfig(steps=60, spike_step=30, size=256))
    (line,) = spike.summary_lines(result)
    cols = result.columns()
    delayed, current = cols["delayed_clipped_fraction"][30], cols["current_clipped_fraction"][30]
    assert spike.percent(0.53125) == "53.12 %" and spike.percent(1) == "100.00 %"  # a percentage, two decimals
    assert f"delayed clipped {100 * delayed:.2f} %" in line
    assert f"current clipped {100 * current:.2f} %" in line
    assert re.search(r"clipped \d\.\d+(?!\d)(?! %)", line) is None  # no bare fraction left
    lessons = " ".join(p.read_text(encoding="utf-8") for p in (ROOT / "content" / "lessons").glob("*.md"))
    assert "over 90%" in lessons  # the words the learner reads
    json.dumps(line)
