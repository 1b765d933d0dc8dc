"""lowprec.config: records declared once, validated, and the command line generated from them."""

from __future__ import annotations

import argparse

import pytest

from lowprec.config import (
    ConfigError,
    add_arguments,
    config_record,
    fields_of,
    from_mapping,
    from_namespace,
    knob,
)


@config_record
class Demo:
    format: str = knob("E4M3FN", "element format", choices=("E4M3FN", "E5M2"))
    history: int = knob(16, "amax history length", bounds=(1, 1024))
    spike_step: int = knob(100, "step of the spike", bounds=(0, None))
    spike: float = knob(50.0, "spike magnitude", bounds=(1.0, 1e6))
    hadamard: bool = knob(False, "random Hadamard transform")
    note: str = knob("", "free text")


def test_defaults_and_dict() -> None:
    d = Demo()
    assert d.to_dict() == {"format": "E4M3FN", "history": 16, "spike_step": 100, "spike": 50.0,
                           "hadamard": False, "note": ""}
    assert [k.name for k in fields_of(Demo)] == list(d.to_dict())
    assert [k.type for k in fields_of(d)] == [str, int, int, float, bool, str]


@pytest.mark.parametrize("kwargs, match", [
    ({"history": 0}, r"^history: must be ≥ 1, got 0$"),
    ({"history": 2000}, r"^history: must be ≤ 1024, got 2000$"),
    ({"format": "E2M1"}, r"^format: must be one of E4M3FN, E5M2; got 'E2M1'$"),
    ({"spike": float("nan")}, r"^spike: must be a finite number"),
    ({"spike_step": -1}, r"^spike_step: must be ≥ 0"),
])
def test_bad_values_name_the_parameter(kwargs: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        Demo(**kwargs)


@pytest.mark.parametrize("kwargs, match", [
    ({"history": "3"}, r"^history: must be an integer, got '3'$"),
    ({"history": 2.5}, r"^history: must be an integer, got 2.5$"),
    ({"hadamard": "no"}, r"^hadamard: must be true or false, got 'no'$"),
    ({"spike": "big"}, r"^spike: must be a number"),
    ({"spike": True}, r"^spike: must be a number"),
])
def test_bad_types_are_type_errors(kwargs: dict, match: str) -> None:
    with pytest.raises(TypeError, match=match):
        Demo(**kwargs)


def test_conversions_that_lose_nothing() -> None:
    d = Demo(history=8.0, spike=3)  # type: ignore[arg-type]
    assert d.history == 8 and type(d.history) is int
    assert d.spike == 3.0 and type(d.spike) is float


def test_replace_and_unknown() -> None:
    assert Demo().replace(history=4).history == 4
    with pytest.raises(ConfigError, match=r"^histroy: unknown parameter; allowed: format, history"):
        Demo().replace(histroy=4)
    with pytest.raises(ConfigError, match=r"^\?histroy: unknown parameter"):
        from_mapping(Demo, {"histroy": 4}, label=lambda n: "?" + n)


def test_command_line_is_generated() -> None:
    p = argparse.ArgumentParser()
    add_arguments(p, Demo)
    args = p.parse_args(["--history", "8", "--spike-step", "3", "--hadamard", "--format", "E5M2"])
    d = from_namespace(Demo, args)
    assert (d.history, d.spike_step, d.hadamard, d.format) == (8, 3, True, "E5M2")
    assert from_namespace(Demo, p.parse_args(["--no-hadamard"])).hadamard is False
    helps = {a.dest: a.help for a in p._actions if a.dest != "help"}
    assert helps["history"] == "amax history length; 1 … 1024 (default: 16)"
    assert helps["format"].endswith("one of E4M3FN, E5M2 (default: E4M3FN)")
    assert helps["spike_step"] == "step of the spike; ≥ 0 (default: 100)"


def test_command_line_errors_name_the_option_as_typed() -> None:
    p = argparse.ArgumentParser()
    add_arguments(p, Demo)
    with pytest.raises(ConfigError, match=r"^--spike-step: must be ≥ 0, got -1$"):
        from_namespace(Demo, p.parse_args(["--spike-step", "-1"]))


def test_declaration_errors() -> None:
    with pytest.raises(TypeError, match="knob type must be one of"):
        @config_record
        class Bad:
            x: bytes = knob(b"", "no bytes")
    with pytest.raises(ValueError, match="must be ≥ 1"):
        @config_record
        class BadDefault:
            n: int = knob(0, "n", bounds=(1, 3))
