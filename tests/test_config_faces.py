"""Each simulation's parameters are declared once, and each simulation has all its faces.

For every simulation of the app's registry of simulations (`lowprec.app.sim_faces.FACES`), the
options of `lowprec simulate NAME` and of `python -m lowprec.simulations.NAME`, the widget's
parameters and the parameters a lesson directive may set are exactly the fields of its config
record (plus the older option spellings the declaration lists), with the same names, defaults,
bounds and choices; every option's help shows its default. The registry is complete: every
`Simulation` declared anywhere in `lowprec.simulations` (found by walking the package, not read from
a list) has an entry with every face — its `lowprec simulate` subcommand, an `--html` page, a
caption, its widget (or a stated reason for having none) and its exported control — and the
command line, the export and the captions enumerate the registry. Knobs that several simulations
have (the delayed scaler's history, algo and margin; seeds) have one declaration and one set of
bounds (`lowprec.simulations.framework.knobs`).
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
from typing import Any

import param
import pytest

import lowprec.simulations
from lowprec.app.cli import command_parser
from lowprec.app.lessons import WIDGET_PARAMS
from lowprec.app.sim_faces import FACES, SimulationFaces, faces, faces_of_widget
from lowprec.app.widgets import WIDGETS, get_widget_class
from lowprec.config import Knob, config_record, fields_of
from lowprec.extras import missing_dependency
from lowprec.simulations.scaling import delayed
from lowprec.simulations.framework import knobs
from lowprec.simulations.framework.cli import OUTPUT_OPTIONS, Simulation

NAMES = list(FACES)
WITH_WIDGET = [n for n, e in FACES.items() if e.widget is not None]


def simulation(name: str) -> Simulation[Any, Any]:
    sim = faces(name).load()
    assert sim.name == name
    return sim


def declared_simulations() -> dict[str, tuple[Simulation[Any, Any], str]]:
    """Every `Simulation` instance held by a module of `lowprec.simulations` (walked, imported):
    name → (the declaration, the module that holds it)."""
    found: dict[str, tuple[Simulation[Any, Any], str]] = {}
    for info in pkgutil.walk_packages(lowprec.simulations.__path__, "lowprec.simulations."):
        try:
            module = importlib.import_module(info.name)
        except ModuleNotFoundError as exc:  # a module of an extra that is not installed
            if missing_dependency(exc) is None:
                raise
            continue
        for value in vars(module).values():
            if isinstance(value, Simulation):
                previous = found.setdefault(value.name, (value, info.name))
                assert previous[0] is value, f"two simulations named {value.name!r}: {previous[1]}, {info.name}"
    return found


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


def parsers(name: str) -> dict[str, argparse.ArgumentParser]:
    return {"python -m": simulation(name).parser(), "lowprec simulate": cli_parser(name)}


# ------------------------------------------------------------------------------------------------
# the registry is complete, and everything enumerates it
# ------------------------------------------------------------------------------------------------


def test_every_declared_simulation_has_every_face() -> None:
    """A `Simulation` declared in lowprec.simulations without an entry (or an entry with a face
    missing) fails here, instead of being silently absent from the CLI, the export or the pages."""
    declared = declared_simulations()
    assert set(declared) == set(FACES), "simulations without an entry in app.sim_faces, or entries without a simulation"
    for name, (sim, module) in declared.items():
        entry = FACES[name]
        assert isinstance(entry, SimulationFaces) and entry.name == name
        assert entry.load() is sim, (name, module)
        assert sim.module == module or importlib.import_module(sim.module).SIMULATION is sim, name
        assert callable(entry.html) and callable(entry.caption), name
        if entry.widget is None:
            assert entry.export_control is None and entry.widget_note.strip(), f"{name}: say why it has no widget"
        else:
            assert entry.widget in WIDGETS, name
            cls = get_widget_class(entry.widget)
            assert getattr(cls, "simulation") is sim, name
            assert entry.export_control in {k.name for k in fields_of(sim.config)}, name
            assert faces_of_widget(entry.widget) is entry


def test_cli_export_and_captions_enumerate_the_registry() -> None:
    from lowprec.app.export import EXPORT_CONTROLS

    simulate = command_parser("simulate")
    subcommands = next(a for a in simulate._actions if isinstance(a, argparse._SubParsersAction)).choices
    assert list(subcommands) == NAMES  # `lowprec simulate hadamard` included
    for name, entry in FACES.items():
        if entry.widget is not None:
            assert EXPORT_CONTROLS[entry.widget] == entry.export_control
    # the only exported controls that are no simulation's: the conventions table's
    assert set(EXPORT_CONTROLS) - {e.widget for e in FACES.values()} == {"Conventions"}
    with pytest.raises(ValueError, match="unknown simulation 'nope'; known simulations: spike, "):
        faces("nope")


# ------------------------------------------------------------------------------------------------
# one record, every face
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", NAMES)
def test_command_line_options_are_the_config_fields(name: str) -> None:
    sim = simulation(name)
    knob_opts = knob_options(sim)
    aliases = {a.option: a for a in sim.aliases}
    for face, parser in parsers(name).items():
        html = face == "lowprec simulate" or sim.python_m_html
        outputs = ({"--json", "--quiet"} | ({"--html"} if html else set())
                   | ({"--csv"} if sim.csv is not None else set())
                   | ({"--force"} if hasattr(sim.config, "cost") else set()))
        assert outputs <= set(OUTPUT_OPTIONS)
        actions = option_actions(parser)
        assert set(actions) == set(knob_opts) | outputs | set(aliases), parser.prog
        for opt, k in knob_opts.items():
            assert actions[opt].dest == k.name and actions[opt].default == k.default, opt
            assert actions[opt].help is not None and f"(default: {k.default})" in actions[opt].help, opt
        for opt, alias in aliases.items():  # an older spelling sets the same field
            assert actions[opt].dest == alias.field and "the older spelling of" in str(actions[opt].help), opt
        for opt in outputs:
            assert "(default:" in str(actions[opt].help), opt
        assert parser.parse_args([]).__dict__.keys() >= {k.name for k in fields_of(sim.config)}


@pytest.mark.parametrize("name", WITH_WIDGET)
def test_widget_and_directive_parameters_are_the_config_fields(name: str) -> None:
    sim = simulation(name)
    widget = FACES[name].widget
    assert widget is not None
    cls = get_widget_class(widget)
    knob_map = {k.name: k for k in fields_of(sim.config)}
    assert WIDGETS[widget].config_class() is sim.config
    assert getattr(cls, "simulation") is sim
    assert set(cls.param) - {"name"} == set(knob_map)  # type: ignore[attr-defined]
    assert tuple(getattr(cls, "watched")) == tuple(knob_map)
    for k in knob_map.values():
        p = cls.param[k.name]  # type: ignore[attr-defined]
        assert p.default == k.default, k.name
        if k.choices is not None:
            assert isinstance(p, param.Selector) and list(p.objects) == list(k.choices), k.name
        elif k.bounds is not None:
            assert p.bounds == k.bounds, k.name
    assert WIDGET_PARAMS[widget] == {k.name: k.default for k in knob_map.values()}


@pytest.mark.parametrize("name", NAMES)
def test_one_bad_value_one_message_on_every_face(name: str) -> None:
    """The same out-of-range seed is refused by the record on every face, naming it as that face
    spells it."""
    sim = simulation(name)
    from lowprec.config import ConfigError, from_mapping, from_namespace

    with pytest.raises(ConfigError, match=r"^seed: must be ≥ 0, got -1$"):
        from_mapping(sim.config, {"seed": -1})
    for parser in parsers(name).values():
        with pytest.raises(ConfigError, match=r"^--seed: must be ≥ 0, got -1$"):
            from_namespace(sim.config, parser.parse_args(["--seed", "-1"]))
    widget = FACES[name].widget
    if widget is not None:
        with pytest.raises(ValueError, match="seed"):
            get_widget_class(widget)(seed=-1)


# ------------------------------------------------------------------------------------------------
# shared knobs: one declaration, one set of bounds
# ------------------------------------------------------------------------------------------------


@config_record
class _Shared:
    """The shared declarations, as a record reads them (name, type, default, help, bounds)."""

    history: int = knobs.history_knob()
    algo: str = knobs.algo_knob()
    margin: int = knobs.margin_knob()


SHARED = {k.name: k for k in fields_of(_Shared)}


@pytest.mark.parametrize("name", NAMES)
def test_shared_knobs_are_the_one_declaration(name: str) -> None:
    for k in fields_of(simulation(name).config):
        if k.name in SHARED:
            assert k == SHARED[k.name], (name, k.name)
        if k.name == "seed":
            lo, hi = k.bounds or (None, None)
            assert lo == knobs.SEED_BOUNDS[0] and hi is not None and hi <= knobs.SEED_BOUNDS[1], name
    # the spike and recompute simulations both take every delayed-scaling knob
    for sim in ("spike", "recompute"):
        assert SHARED.keys() <= {k.name for k in fields_of(simulation(sim).config)}


def test_the_delayed_model_checks_the_knobs_bounds() -> None:
    """The bounds the records declare are the model's: its constructors refuse what the knob refuses,
    naming the parameter and the bounds (`DelayedScaler(margin=32767)` was an OverflowError)."""
    from lowprec.simulations.recompute.state import DelayedScaleState

    assert SHARED["margin"].bounds == delayed.MARGIN_BOUNDS == (0, 64)
    assert SHARED["history"].bounds == delayed.HISTORY_BOUNDS
    assert SHARED["algo"].choices == delayed.AMAX_ALGOS == delayed.ALGOS
    from lowprec.simulations.recompute.state import AMAX_ALGOS

    assert AMAX_ALGOS is delayed.AMAX_ALGOS  # one list of the reductions
    lo, hi = delayed.MARGIN_BOUNDS
    for make in (lambda m: delayed.DelayedScaler("E4M3FN", margin=m), lambda m: delayed.CurrentScaler("E4M3FN", m),
                 lambda m: DelayedScaleState("layer0", 448.0, margin=m)):
        make(lo), make(hi)
        for bad in (hi + 1, 32767, lo - 1):
            with pytest.raises(ValueError, match=rf"^margin={bad} is outside the allowed 0 … 64 \(binades\)$"):
                make(bad)
        with pytest.raises(TypeError, match="margin must be an integer"):
            make(1.5)
    with pytest.raises(ValueError, match="history_len=1025 is outside the allowed 1 … 1024"):
        delayed.DelayedScaler("E4M3FN", history_len=1025)
    with pytest.raises(ValueError, match="amax_algo='mean' is not one of 'max', 'most_recent'"):
        DelayedScaleState("layer0", 448.0, amax_algo="mean")
    with pytest.raises(ValueError, match="margin=32767 is outside"):
        delayed.scale_from_amax(1.0, 448.0, 32767, 1.0)


def test_an_alias_must_name_a_knob_and_sets_it() -> None:
    from lowprec.simulations.framework.cli import OptionAlias
    from lowprec.simulations.recompute import SIMULATION

    with pytest.raises(ValueError, match="alias --old names no knob of RecomputeConfig"):
        Simulation(name="x", help="x", config=SIMULATION.config, run=SIMULATION.run, summary=SIMULATION.summary,
                   aliases=(OptionAlias("--old", "no_such_knob"),))
    p = SIMULATION.parser()
    a = p.parse_args(["--no-checkpoint", "--history-len", "3", "--amax-algo", "most_recent"])
    assert (a.checkpointing, a.history, a.algo) == (False, 3, "most_recent")
    assert "--html" not in option_actions(p)  # the python -m entry point never had it
    assert "--html" in option_actions(cli_parser("recompute"))
