"""Each simulation's parameters are declared once: for every simulation, the options of `lowprec
simulate NAME` and of `python -m lowprec.simulations.NAME`, the widget's parameters and the
parameters a lesson directive may set are exactly the fields of its config record, with the same
names, defaults, bounds and choices; every option's help shows its default."""

from __future__ import annotations

import argparse
import importlib
from typing import Any

import param
import pytest

from lowprec.app.cli import command_parser
from lowprec.app.lessons import WIDGET_PARAMS
from lowprec.app.widgets import WIDGETS, get_widget_class
from lowprec.config import Knob, fields_of
from lowprec.simulations._cli import OUTPUT_OPTIONS, Simulation

# simulation name → the widget that is its face (None: a command-line study only)
FACES: dict[str, str | None] = {
    "spike": "DelayedSpike",
    "grouping": "ScaleGrouping",
    "blocks": "BlockFormats",
    "attention": "AttentionRounding",
    "hadamard": None,
}


def simulation(name: str) -> Simulation[Any, Any]:
    sim: Simulation[Any, Any] = importlib.import_module(f"lowprec.simulations.{name}").SIMULATION
    assert sim.name == name
    return sim


def _subparser(parser: argparse.ArgumentParser, name: str) -> argparse.ArgumentParser:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action.choices[name]  # type: ignore[no-any-return]
    raise AssertionError(f"no sub-command {name}")


def cli_parser(name: str) -> argparse.ArgumentParser:
    return _subparser(command_parser("simulate"), name)


def option_actions(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    return {opt: a for a in parser._actions for opt in a.option_strings if opt.startswith("--") and opt != "--help"}


def knob_options(sim: Simulation[Any, Any]) -> dict[str, Knob]:
    out: dict[str, Knob] = {}
    for k in fields_of(sim.config):
        out[k.option] = k
        if k.type is bool:
            out["--no-" + k.option[2:]] = k  # BooleanOptionalAction
    return out


def parsers(name: str) -> list[argparse.ArgumentParser]:
    parsers = [simulation(name).parser()]
    if name != "hadamard":  # the hadamard study runs as `lowprec simulate grouping --study hadamard`
        parsers.append(cli_parser(name))
    return parsers


@pytest.mark.parametrize("name", list(FACES))
def test_command_line_options_are_the_config_fields(name: str) -> None:
    sim = simulation(name)
    knobs = knob_options(sim)
    outputs = ({"--json", "--html", "--quiet"} | ({"--csv"} if sim.csv is not None else set())
               | ({"--force"} if hasattr(sim.config, "cost") else set()))
    assert outputs <= set(OUTPUT_OPTIONS)
    for parser in parsers(name):
        actions = option_actions(parser)
        assert set(actions) == set(knobs) | outputs, parser.prog
        for opt, k in knobs.items():
            assert actions[opt].dest == k.name and actions[opt].default == k.default, opt
            assert actions[opt].help is not None and f"(default: {k.default})" in actions[opt].help, opt
        for opt in outputs:
            assert "(default:" in str(actions[opt].help), opt
        assert parser.parse_args([]).__dict__.keys() >= {k.name for k in fields_of(sim.config)}


@pytest.mark.parametrize("name", [n for n, w in FACES.items() if w is not None])
def test_widget_and_directive_parameters_are_the_config_fields(name: str) -> None:
    sim = simulation(name)
    widget = FACES[name]
    assert widget is not None
    cls = get_widget_class(widget)
    knobs = {k.name: k for k in fields_of(sim.config)}
    assert WIDGETS[widget].config_class() is sim.config
    assert getattr(cls, "simulation") is sim
    assert set(cls.param) - {"name"} == set(knobs)  # type: ignore[attr-defined]
    assert tuple(getattr(cls, "watched")) == tuple(knobs)
    for k in knobs.values():
        p = cls.param[k.name]  # type: ignore[attr-defined]
        assert p.default == k.default, k.name
        if k.choices is not None:
            assert isinstance(p, param.Selector) and list(p.objects) == list(k.choices), k.name
        elif k.bounds is not None:
            assert p.bounds == k.bounds, k.name
    assert WIDGET_PARAMS[widget] == {k.name: k.default for k in knobs.values()}


@pytest.mark.parametrize("name", [n for n, w in FACES.items() if w is not None])
def test_one_bad_value_one_message_on_every_face(name: str) -> None:
    """The same out-of-range seed is refused by the record on every face, naming it as that face
    spells it."""
    sim = simulation(name)
    from lowprec.config import ConfigError, from_mapping, from_namespace

    with pytest.raises(ConfigError, match=r"^seed: must be ≥ 0, got -1$"):
        from_mapping(sim.config, {"seed": -1})
    for parser in parsers(name):
        with pytest.raises(ConfigError, match=r"^--seed: must be ≥ 0, got -1$"):
            from_namespace(sim.config, parser.parse_args(["--seed", "-1"]))
    widget = get_widget_class(FACES[name] or "")
    with pytest.raises(ValueError, match="seed"):
        widget(seed=-1)
