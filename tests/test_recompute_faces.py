"""The recompute simulation's faces, all generated from one record (`RecomputeConfig`).

`python -m lowprec.simulations.recompute`, `lowprec simulate recompute`, the RecomputeDivergence
widget and the lesson directive expose exactly the record's fields, with its defaults, bounds and
choices; the option names the command line had before the record are all still accepted; both
entry points treat --json/--csv/--quiet the same and write strict JSON; errors are one line that
names the option as typed; the quantizer-state module, the config and the CLI import no torch.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from lowprec import strictjson
from lowprec.config import ConfigError, fields_of
from lowprec.formats import BF16, E4M3FN
from lowprec.simulations.recompute import cli as recompute_cli, state as recompute_state
from lowprec.simulations.recompute.config import RecomputeConfig

ROOT = Path(__file__).resolve().parents[1]
FIELDS = [k.name for k in fields_of(RecomputeConfig)]
SMALL = ["--layers", "2", "--width", "8", "--batch", "4", "--steps", "2"]
#: every option `lowprec simulate recompute` accepted before the record existed (a public interface)
OPTIONS_BEFORE = {"--variant", "--layers", "--width", "--batch", "--steps", "--seed", "--format",
                  "--history-len", "--amax-algo", "--margin", "--lr", "--rounding", "--overflow",
                  "--no-checkpoint", "--json", "--csv", "--html", "--quiet"}


def simulate_parser() -> argparse.ArgumentParser:
    """The parser of `lowprec simulate recompute`, as the CLI registers it."""
    from lowprec.app.commands import sim_recompute

    root = argparse.ArgumentParser(prog="lowprec simulate")
    sub = root.add_subparsers()
    sim_recompute.register(sub)
    parser: argparse.ArgumentParser = sub.choices["recompute"]
    return parser


def options(parser: argparse.ArgumentParser) -> dict[str, set[str]]:
    """dest → the option strings that set it (help left out)."""
    out: dict[str, set[str]] = {}
    for action in parser._actions:
        if action.dest != "help":
            out.setdefault(action.dest, set()).update(action.option_strings)
    return out


FACES = {"python -m": (recompute_cli.build_parser, {"json", "csv", "quiet", "force"}),
         "lowprec simulate": (simulate_parser, {"json", "csv", "quiet", "html", "force"})}


# ------------------------------------------------------------------------------------------------
# one record, every face
# ------------------------------------------------------------------------------------------------
#: older option spellings still accepted, by field
OLDER_SPELLINGS = {"checkpointing": {"--no-checkpoint"}, "history": {"--history-len"}, "algo": {"--amax-algo"}}


@pytest.mark.parametrize("face", FACES)
def test_cli_options_are_the_config_fields(face: str) -> None:
    make, outputs = FACES[face]
    parser = make()
    dests = options(parser)
    assert set(dests) == set(FIELDS) | outputs
    for k in fields_of(RecomputeConfig):
        expected = {k.option, "--no-" + k.option[2:]} if k.type is bool else {k.option}
        expected |= OLDER_SPELLINGS.get(k.name, set())
        assert dests[k.name] == expected, k.name
    defaults = parser.parse_args([])
    assert {name: getattr(defaults, name) for name in FIELDS} == RecomputeConfig().to_dict()  # type: ignore[attr-defined]


def test_the_options_accepted_before_the_record_still_are() -> None:
    spelled = set().union(*options(simulate_parser()).values())
    assert OPTIONS_BEFORE <= spelled
    assert OPTIONS_BEFORE - {"--html"} <= set().union(*options(recompute_cli.build_parser()).values())


@pytest.mark.parametrize("face", FACES)
def test_every_option_help_shows_its_default(face: str) -> None:
    parser = FACES[face][0]()
    for action in parser._actions:
        if action.dest != "help":
            assert action.help and "(default: " in action.help, action.option_strings


def test_older_spellings_of_history_and_algo() -> None:
    p = recompute_cli.build_parser()
    a = p.parse_args(["--history-len", "3", "--amax-algo", "most_recent"])
    assert (a.history, a.algo) == (3, "most_recent")
    assert (p.parse_args([]).history, p.parse_args([]).algo) == (16, "max")


def test_no_checkpoint_is_the_same_as_no_checkpointing() -> None:
    p = recompute_cli.build_parser()
    assert p.parse_args(["--no-checkpoint"]).checkpointing is False
    assert p.parse_args(["--no-checkpointing"]).checkpointing is False
    assert p.parse_args(["--checkpointing"]).checkpointing is True


def test_widget_params_are_the_config_fields() -> None:
    import param

    from lowprec.app.widgets import WIDGETS
    from lowprec.app.widgets.recompute_divergence import RecomputeDivergence

    assert WIDGETS["RecomputeDivergence"].config_class() is RecomputeConfig
    names = [n for n in RecomputeDivergence.param if n != "name"]
    assert sorted(names) == sorted(FIELDS)
    assert list(RecomputeDivergence.watched) == FIELDS  # every knob's control is shown and live
    for k in fields_of(RecomputeConfig):
        p = RecomputeDivergence.param[k.name]
        assert p.default == k.default, k.name
        if k.choices is not None:
            assert isinstance(p, param.Selector) and tuple(p.objects) == k.choices, k.name
        elif k.type in (int, float):
            assert tuple(p.bounds) == k.bounds, k.name


def test_directive_params_are_the_config_fields() -> None:
    from lowprec.app.lessons import WIDGET_PARAMS, LessonError, parse_directive

    assert WIDGET_PARAMS["RecomputeDivergence"] == RecomputeConfig().to_dict()  # type: ignore[attr-defined]
    d = parse_directive("::: widget RecomputeDivergence variant=stale-centre history=4 "
                        "checkpointing=false lr=1 format=E5M2")
    assert d.params == {"variant": "stale-centre", "history": 4, "checkpointing": False,
                        "lr": 1.0, "format": "E5M2"}
    with pytest.raises(LessonError, match="RecomputeDivergence has no parameter 'history_len'"):
        parse_directive("::: widget RecomputeDivergence history_len=4")


# ------------------------------------------------------------------------------------------------
# the record itself
# ------------------------------------------------------------------------------------------------


def test_every_knob_has_help_and_a_bound_or_choices() -> None:
    for k in fields_of(RecomputeConfig):
        assert k.help, k.name
        if k.type in (int, float):
            assert k.bounds is not None and None not in k.bounds, k.name
        elif k.type is str:
            assert k.choices, k.name


def test_variant_choices_are_the_designs_one_class_each() -> None:
    assert fields_of(RecomputeConfig)[0].choices == tuple(recompute_state.QUANTIZERS)
    classes = list(recompute_state.QUANTIZERS.values())
    assert len(set(classes)) == len(classes)
    for name, cls in recompute_state.QUANTIZERS.items():
        assert cls.name == name
        assert cls.__doc__ and "Signature:" in cls.__doc__, name
        assert recompute_state.VARIANTS[name] and "Signature" not in recompute_state.VARIANTS[name]


def test_cross_field_error_names_the_option() -> None:
    with pytest.raises(ConfigError, match=r"^overflow: 'nonfinite' needs a format with Inf or NaN; "
                                          r"E3M2 has neither"):
        RecomputeConfig(format="E3M2", overflow="nonfinite")
    RecomputeConfig(format="E5M2", overflow="nonfinite")  # has Inf: allowed
    RecomputeConfig(format="E4M3FN", overflow="nonfinite")  # has NaN: allowed


def test_cost_grows_with_each_size_knob_and_stays_small_at_the_bounds() -> None:
    base = RecomputeConfig()
    c0 = base.cost()  # type: ignore[attr-defined]
    for name in ("layers", "width", "batch", "steps"):
        bigger = base.replace(**{name: getattr(base, name) * 2}).cost()  # type: ignore[attr-defined]
        assert bigger.bytes > c0.bytes and bigger.seconds > c0.seconds, name
    top = RecomputeConfig(layers=16, width=256, batch=256, steps=100).cost()  # type: ignore[attr-defined]
    # the data alone: inputs and targets, float32
    assert top.bytes >= 2 * 100 * 256 * 256 * 4
    assert top.bytes < 1 * 2**30 and top.seconds < 60


def test_a_wide_format_clamps_the_scale_to_float32_max() -> None:
    """BF16's max / amax overflows float32 for amax < 1: the scale is clamped, not Inf."""
    state = recompute_state.DelayedScaleState("layer0", BF16.max)
    snap = recompute_state.begin_logical_quantization(state, 0, 0)
    obs = recompute_state.QuantObservation("layer0", 0, 0, amax=0.5, centre_estimate=None)
    recompute_state.commit_quant_observation(state, obs)
    assert state.encode_scale == float(np.finfo(np.float32).max)
    assert snap.encode_scale == 1.0
    e4 = recompute_state.DelayedScaleState("layer0", E4M3FN.max, margin=1)
    recompute_state.commit_quant_observation(e4, obs)
    assert e4.encode_scale == 448.0 / 0.5 / 2  # TE: F / amax / 2^margin, exact here


# ------------------------------------------------------------------------------------------------
# the two entry points behave the same
# ------------------------------------------------------------------------------------------------


def run_python_m(args: list[str]) -> int:
    return recompute_cli.main(args)


def run_simulate(args: list[str]) -> int:
    from lowprec.app.cli import main

    return main(["simulate", "recompute", *args])


ENTRY_POINTS = {"python -m": run_python_m, "lowprec simulate": run_simulate}


@pytest.mark.parametrize("entry", ENTRY_POINTS)
def test_summary_unless_quiet_or_json_on_stdout(entry: str, capsys: pytest.CaptureFixture[str]) -> None:
    run = ENTRY_POINTS[entry]
    assert run(["--variant", "recompute-mutates", *SMALL]) == 0
    out = capsys.readouterr().out
    assert out.startswith("recompute: variant recompute-mutates, E4M3FN, 2 layers × width 8, batch 4")
    assert "forward vs recompute: diverged in" in out and "first at step 0, layer 0" in out
    assert "state commits: 8 (design rule: 2 per step, 4 over 2 steps)" in out
    assert "verdict: first mismatch: layer 0, step 0" in out
    assert run([*SMALL, "--quiet"]) == 0
    assert capsys.readouterr().out == ""
    assert run([*SMALL, "--json", "-"]) == 0
    d = strictjson.loads(capsys.readouterr().out)  # stdout is exactly the JSON
    assert d["simulation"] == "recompute" and d["parameters"]["layers"] == 2


def test_both_entry_points_write_the_same_json_and_csv(tmp_path: Path) -> None:
    results = {}
    for entry, run in ENTRY_POINTS.items():
        j, c = tmp_path / f"{entry}.json", tmp_path / f"{entry}.csv"
        assert run(["--variant", "stale-centre", *SMALL, "--json", str(j), "--csv", str(c), "--quiet"]) == 0
        d = strictjson.loads(j.read_text())
        d.pop("elapsed_s")
        results[entry] = (d, c.read_text())
    assert results["python -m"] == results["lowprec simulate"]
    d, csv = results["python -m"]
    assert len(csv.splitlines()) == 1 + 2 * 2
    assert d["parameters"]["variant"] == "stale-centre"


@pytest.mark.parametrize("entry, prog", [("python -m", "python -m lowprec.simulations.recompute"),
                                         ("lowprec simulate", "lowprec")])
@pytest.mark.parametrize("args, message", [
    (["--layers", "100"], "--layers: must be ≤ 16, got 100"),
    (["--history", "0"], "--history: must be ≥ 1, got 0"),
    (["--history-len", "0"], "--history: must be ≥ 1, got 0"),
    (["--format", "E8M0"], "--format: must be one of E4M3FN, "),
    (["--rounding", "stochastic"], "--rounding: must be one of nearest_even, "),
    (["--format", "E2M1", "--overflow", "nonfinite"], "--overflow: 'nonfinite' needs a format"),
])
def test_bad_values_are_one_line_naming_the_option(entry: str, prog: str, args: list[str], message: str,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    assert ENTRY_POINTS[entry](args) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.count("\n") == 1 and captured.err.startswith(f"{prog}: error: {message}")


@pytest.mark.parametrize("entry", ENTRY_POINTS)
def test_unparsable_values_are_one_line_exit_2(entry: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit, match="^2$") as exc:
        ENTRY_POINTS[entry](["--layers", "four"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "argument --layers: invalid int value: 'four'" in err


def test_unwritable_output_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run_python_m([*SMALL, "--json", str(tmp_path / "no" / "such" / "dir.json")]) == 2
    # checked before the run (issue 16): the folder is named, nothing is computed
    assert "error: --json: the folder of" in capsys.readouterr().err


def test_json_spells_computed_nan_and_leaves_absent_cells_null() -> None:
    """A run whose loss overflows (shared state read with another layer's small amax, overflow to
    NaN): the NaN loss is written "nan", cells that were not computed are null."""
    from lowprec.simulations.recompute import run_recompute

    r = run_recompute("shared-state", layers=4, width=32, batch=8, steps=3, algo="most_recent",
                      overflow="nonfinite")
    assert np.isnan(r.loss[1])
    text = strictjson.dumps(r.to_dict())
    d = strictjson.loads(text)  # strict: no NaN / Infinity tokens
    assert d["steps"][1]["loss"] == "nan" and d["steps"][0]["loss"] == float(r.loss[0])
    assert d["per_layer"]["centre_shift"] == [[None] * 4] * 3  # not a centred quantizer
    plain = run_recompute("fixed", layers=2, width=8, batch=4, steps=2, checkpointing=False)
    p = strictjson.loads(strictjson.dumps(plain.to_dict()))
    assert p["per_layer"]["max_abs_diff"] == [[None, None], [None, None]]  # nothing recomputed
    assert p["steps"][0]["forward_recompute_max_abs_diff"] is None


def test_python_m_module_path_runs(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "lowprec.simulations.recompute", "--variant", "gate-asymmetry", *SMALL,
         "--json", "-"], capture_output=True, text=True, timeout=300, cwd=tmp_path,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr
    d = strictjson.loads(proc.stdout)
    assert d["failure"]["type"] == "KeyError" and d["verdict"].startswith("failed at step 0")


# ------------------------------------------------------------------------------------------------
# torch only where autograd is the point
# ------------------------------------------------------------------------------------------------


def test_state_config_telemetry_cli_and_parser_import_no_torch() -> None:
    code = (
        "import sys, argparse\n"
        "import lowprec.simulations.recompute.state as S\n"
        "import lowprec.simulations.recompute.config, lowprec.simulations.recompute.telemetry\n"
        "import lowprec.simulations.recompute.concurrency, lowprec.simulations.recompute.cli as C\n"
        "from lowprec.app.commands import sim_recompute\n"
        "sim_recompute.register(argparse.ArgumentParser().add_subparsers())\n"
        "C.build_parser().parse_args(['--layers', '3'])\n"
        "from lowprec.app.lessons import WIDGET_PARAMS\n"
        "assert 'RecomputeDivergence' in WIDGET_PARAMS\n"
        "assert len(S.QUANTIZERS) == 9\n"
        "assert 'torch' not in sys.modules, sorted(m for m in sys.modules if m.startswith('torch'))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr


def test_the_concurrency_experiment_runs_without_torch() -> None:
    code = ("import sys\n"
            "from lowprec.simulations.recompute.concurrency import simulate_concurrent_entry\n"
            "r = simulate_concurrent_entry(per_worker_state=False)\n"
            "assert r.failed_closed and r.commits == {'shared': 1}\n"
            "assert 'torch' not in sys.modules\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize("entry", ENTRY_POINTS)
def test_the_bf16_control_summary_names_the_format_it_casts_to(entry: str, tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    """The control casts to BF16 whatever --format says: the summary and the JSON say BF16 (the
    summary used to print the unused format parameter, E4M3FN); the other variants name the run's."""
    out = tmp_path / "c.json"
    assert ENTRY_POINTS[entry](["--variant", "bf16-control", *SMALL, "--json", str(out)]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first.startswith("recompute: variant bf16-control, BF16 (the variant's own stateless cast; "
                            "the format parameter E4M3FN is not used), 2 layers × width 8"), first
    d = strictjson.loads(out.read_text())
    assert d["cast_format"] == "BF16" and d["parameters"]["format"] == "E4M3FN"
    assert ENTRY_POINTS[entry](["--variant", "fixed", "--format", "E5M2", *SMALL, "--json", str(out)]) == 0
    assert capsys.readouterr().out.startswith("recompute: variant fixed, E5M2, 2 layers")
    assert strictjson.loads(out.read_text())["cast_format"] == "E5M2"
