"""The `lowprec` command itself: lazy subcommands (what a light command imports, checked in a fresh
process through sys.modules), --version, defaults in every option's help, one-line errors, and the
message when an optional dependency is missing (torch hidden from a child process)."""

from __future__ import annotations

import argparse
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Iterator

import pytest

from lowprec.app import cli
from lowprec.extras import EXTRAS, install_command

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("torch", "panel", "bokeh", "triton", "param")


def _child(code: str, *, hide: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    """Run `code` in a fresh interpreter; modules in `hide` are made unimportable first
    (`sys.modules[name] = None` makes `import name` raise ModuleNotFoundError, as when not installed)."""
    prelude = "import sys\n" + "".join(f"sys.modules[{m!r}] = None\n" for m in hide)
    return subprocess.run([sys.executable, "-c", prelude + code], capture_output=True, text=True,
                          timeout=120, cwd=ROOT, check=False)


@pytest.mark.parametrize("argv", [
    ["cast", "E4M3FN", "3.3"], ["cast", "E5M2", "--json", "--", "-70000"], ["formats"],
    ["formats", "--json"], ["formats", "table", "E4M3FN"], ["examples"], ["examples", "--json"],
    ["--help"], ["cast", "--help"], ["--version"],
], ids=" ".join)
def test_light_commands_import_neither_torch_nor_panel(argv: list[str]) -> None:
    r = _child(
        "import contextlib, io\n"
        "from lowprec.app.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    try:\n"
        f"        rc = main({argv!r})\n"
        "    except SystemExit as exc:\n"
        "        rc = exc.code\n"
        f"print(rc, sorted(m for m in {HEAVY!r} if m in sys.modules))\n")
    assert r.returncode == 0, r.stderr
    assert r.stdout.split("\n")[-2] == "0 []", r.stdout  # exit 0, none of the heavy modules


def test_formats_import_needs_no_torch() -> None:
    r = _child("import lowprec.formats\nassert 'torch' not in sys.modules, 'torch imported'\n"
               "assert 'lowprec.app' not in sys.modules\nprint('ok')")
    assert r.stdout.strip() == "ok", r.stderr


def test_cast_works_without_torch_and_torch_commands_name_the_extra() -> None:
    r = _child("from lowprec.app.cli import main\nsys.exit(main(['cast', 'E4M3FN', '465', "
               "'--convention', 'torch']))", hide=("torch",))
    assert r.returncode == 0 and "0x7E" in r.stdout, r.stderr  # torch's convention saturates: 448
    r = _child("from lowprec.app.cli import main\nsys.exit(main(['bench', 'gpu']))", hide=("torch",))
    assert r.returncode == 2
    # the install hint is the command that works for this install (here: a checkout or its editable install)
    assert r.stderr.strip() == ("lowprec bench: error: this command needs torch, which is not "
                                f"installed: {install_command('torch')}")
    r = _child("from lowprec.app.cli import main\nsys.exit(main(['crosscheck', '--backend', 'torch', "
               "'--formats', 'E4M3FN']))", hide=("torch",))
    assert r.returncode == 2 and f"torch is not installed: {install_command('torch')}" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_extras_table_matches_pyproject() -> None:
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    for module, extra in EXTRAS.items():
        assert any(req.startswith(module) for req in extras[extra]), (module, extra)
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    assert not any(req.startswith(tuple(EXTRAS)) for req in deps)  # optional means optional


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    import lowprec

    with pytest.raises(SystemExit, match="^0$") as exc:
        cli.main(["--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out == f"lowprec {lowprec.__version__}\n"


def test_top_level_help_lists_every_command_from_the_table(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit, match="^0$"):
        cli.main(["--help"])
    out = capsys.readouterr().out
    for entry in cli.COMMANDS:
        assert entry.name in out
        assert entry.help.split()[0] in out


def _walk(parser: argparse.ArgumentParser) -> Iterator[argparse.ArgumentParser]:
    yield parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in dict.fromkeys(action.choices.values()):
                yield from _walk(sub)


def _all_parsers() -> list[argparse.ArgumentParser]:
    return [p for entry in cli.COMMANDS for p in _walk(cli.command_parser(entry.name))]


def test_every_option_help_shows_its_default() -> None:
    missing = []
    for parser in _all_parsers():
        formatter = parser._get_formatter()
        for action in parser._actions:
            if not action.option_strings or action.help is argparse.SUPPRESS:
                continue
            if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)):
                continue
            text = formatter._get_help_string(action)  # type: ignore[attr-defined]
            if "default" not in text.lower() and "required" not in text.lower():
                missing.append(f"{parser.prog} {action.option_strings[0]}")
    assert not missing, missing


def test_every_subcommand_has_a_description() -> None:
    for entry in cli.COMMANDS:
        assert cli.command_parser(entry.name).description


@pytest.mark.parametrize("argv, words", [
    (["cast", "E4M3FN", "1", "--seed", "x"], "argument --seed: invalid int value: 'x'"),
    (["serve", "--port", "x"], "argument --port: invalid int value: 'x'"),
    (["formats", "--jsn"], "unrecognized arguments: --jsn"),
    (["castt", "E4M3FN", "1"], "invalid choice: 'castt'"),
])
def test_bad_option_is_one_line_naming_it(argv: list[str], words: str,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit, match="^2$") as exc:
        cli.main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "usage:" not in err and words in err, err


def test_bad_value_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["cast", "E4M3FN", "abc"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("lowprec: error: cannot read 'abc'") and err.count("\n") == 1
    # cast's options are the bin explorer's record: checked by it, named as typed
    assert cli.main(["cast", "E4M3FN", "1", "--rounding", "sideways"]) == 2
    err = capsys.readouterr().err
    assert err == ("lowprec: error: --rounding: must be one of '', nearest_even, nearest_away, toward_zero, up, "
                   "down, stochastic, to_odd; got 'sideways'\n")


def test_command_parser_refuses_unknown_names() -> None:
    with pytest.raises(ValueError, match="unknown command 'nope'.*cast"):
        cli.command_parser("nope")


def test_serve_list_names_every_lesson(capsys: pytest.CaptureFixture[str]) -> None:
    from lowprec.course.lessons import load_lessons

    assert cli.main(["serve", "--list"]) == 0
    out = capsys.readouterr().out
    for lesson in load_lessons():
        assert f"/lesson/{lesson.slug}\t{lesson.title}" in out
