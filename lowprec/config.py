"""Parameters declared once: frozen, typed config records and the faces generated from them.

A simulation (or any widget's model) declares its knobs as one frozen dataclass whose fields are
made with `knob(...)`: type (from the annotation: int, float, str or bool), default, bounds or
choices, and a one-line help. Everything else is generated from that record, with the same names:

- `add_arguments(parser, Config)` — argparse options `--spike-step` for a field `spike_step`, the
  help text ending in the default, bounds or choices; booleans as `--flag / --no-flag`;
- `from_namespace(Config, args)` — the record from parsed arguments; a bad value raises
  `ConfigError` naming the option as typed (`--history: must be ≥ 1, got 0`);
- `Config(...)` itself validates (type, bounds, choices) in `__post_init__`, raising `ConfigError`
  (a `ValueError`, or a `TypeError` for a wrong type) that names the parameter;
- `fields_of(Config)` — the `Knob`s, which `lowprec.app` turns into `param` parameters (widget
  controls) and `lowprec.app.lessons` into the parameters a lesson directive may set.

A record may define `cost(self) -> Cost` (memory and time estimated from its values) so every face
can refuse a request over a budget before running it: `check_budget(config, budget)` raises
`BudgetError` (a ConfigError) naming the parameter that pushes the run over, the estimate and the
budget; `CLI_BUDGET` is the command line's (lifted by `--force`), `APP_BUDGET` a served page's.

This module is a leaf: it imports nothing of lowprec (so `formats`, `simulations` and `app` can all
use it) and nothing beyond the standard library.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import numbers
import typing
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Mapping, Sequence, TypeVar

from lowprec import numtext

__all__ = [
    "APP_BUDGET",
    "Budget",
    "BudgetError",
    "CLI_BUDGET",
    "ConfigError",
    "Cost",
    "check_budget",
    "Knob",
    "add_arguments",
    "config_record",
    "fields_of",
    "from_mapping",
    "from_namespace",
    "knob",
    "option_name",
]

T = TypeVar("T")
Number = typing.Union[int, float]
_META = "lowprec.knob"
_TYPES: tuple[type, ...] = (bool, int, float, str)


class ConfigError(ValueError):
    """A parameter value outside what its record allows. `name` is the field's name; `str(exc)`
    names it as the caller wrote it (the field name in Python, `--option` on the command line)."""

    def __init__(self, name: str, message: str, *, label: str | None = None) -> None:
        self.name = name
        self.message = message
        self.label = label if label is not None else name
        super().__init__(f"{self.label}: {message}")

    def relabel(self, label: str) -> "ConfigError":
        return type(self)(self.name, self.message, label=label)


class ConfigTypeError(ConfigError, TypeError):
    """A parameter of the wrong type (a string where a number belongs, a float for an integer)."""


@dataclass(frozen=True)
class Knob:
    """One declared parameter: what `knob()` stores in the dataclass field's metadata, plus the
    field's name, type and default once the record is built."""

    help: str
    bounds: tuple[Number | None, Number | None] | None = None  # inclusive; None = open
    choices: tuple[Any, ...] | None = None
    #: a control hint for the app: "slider" (default for bounded numbers), "input" (typed entry)
    widget: str | None = None
    #: a short label for controls; the name with spaces when None
    label: str | None = None
    #: display names of the choices in controls (same order as `choices`), e.g. "(convention's)" for ""
    choice_labels: tuple[str, ...] | None = None
    name: str = ""
    type: type = object
    default: Any = None

    @property
    def option(self) -> str:
        """The command-line spelling: `--spike-step` for `spike_step`."""
        return option_name(self.name)

    def describe(self) -> str:
        """Help text with what is allowed and the default: the choices once (the empty text as
        ''), bounds as `lo … hi` (a long float in 6 significant digits)."""
        parts = [self.help.rstrip(".")]
        if self.choices is not None:
            parts.append("one of " + ", ".join(_value_text(c) for c in self.choices))
        elif self.bounds is not None:
            lo, hi = self.bounds
            if lo is not None and hi is not None:
                parts.append(f"{_value_text(lo)} … {_value_text(hi)}")
            elif lo is not None:
                parts.append(f"≥ {_value_text(lo)}")
            elif hi is not None:
                parts.append(f"≤ {_value_text(hi)}")
        text = "; ".join(parts)
        return f"{text} (default: {_value_text(self.default)})"

    def check(self, value: Any, label: str | None = None) -> Any:
        """`value` converted to this knob's type and checked; raises ConfigError naming `label`."""
        label = label or self.name
        if self.type is bool:
            if not isinstance(value, bool):
                raise ConfigTypeError(self.name, f"must be true or false, got {value!r}", label=label)
        elif self.type is int:
            if isinstance(value, float) and value.is_integer():
                value = int(value)  # 8.0 → 8 loses nothing
            if isinstance(value, bool) or not isinstance(value, numbers.Integral):
                raise ConfigTypeError(self.name, f"must be an integer, got {value!r}", label=label)
            value = int(value)
        elif self.type is float:
            if isinstance(value, bool) or not isinstance(value, numbers.Real):
                raise ConfigTypeError(self.name, f"must be a number, got {value!r}", label=label)
            try:
                value = float(value)
            except OverflowError:  # an int too large for a float
                raise ConfigError(self.name, f"must be a finite number, got {value!r}", label=label) from None
            if not math.isfinite(value):
                raise ConfigError(self.name, f"must be a finite number, got {value!r}", label=label)
        elif self.type is str:
            if not isinstance(value, str):
                raise ConfigTypeError(self.name, f"must be text, got {value!r}", label=label)
        if self.choices is not None and value not in self.choices:
            allowed = ", ".join(_value_text(c) for c in self.choices)
            raise ConfigError(self.name, f"must be one of {allowed}; got {value!r}", label=label)
        if self.bounds is not None:
            lo, hi = self.bounds
            if lo is not None and value < lo:
                raise ConfigError(self.name, f"must be ≥ {lo}, got {value!r}", label=label)
            if hi is not None and value > hi:
                raise ConfigError(self.name, f"must be ≤ {hi}, got {value!r}", label=label)
        return value


def _value_text(value: Any) -> str:
    """A knob value in help text: '' for the empty text, a float in at most 6 significant digits
    when its repr is long (1.17549e-38), anything else as str()."""
    if isinstance(value, str):
        return value if value else "''"
    if isinstance(value, float):
        text = numtext.roundtrip(value)
        return text if len(text) <= 10 else numtext.general(value, 6)
    return str(value)


def knob(default: Any, help: str, *, bounds: tuple[Number | None, Number | None] | None = None,
         choices: Sequence[Any] | None = None, widget: str | None = None,
         label: str | None = None, choice_labels: Sequence[str] | None = None) -> Any:
    """A config field: `history: int = knob(16, "amax history length", bounds=(1, 1024))`."""
    if bounds is not None and choices is not None:
        raise ValueError("a knob has bounds or choices, not both")
    if choice_labels is not None and (choices is None or len(choice_labels) != len(choices)):
        raise ValueError("choice_labels needs choices, one label each")
    meta = Knob(help=help, bounds=tuple(bounds) if bounds is not None else None,  # type: ignore[arg-type]
                choices=tuple(choices) if choices is not None else None, widget=widget, label=label,
                choice_labels=tuple(choice_labels) if choice_labels is not None else None)
    return dataclasses.field(default=default, metadata={_META: meta})


@dataclass(frozen=True)
class Cost:
    """What a run will take, estimated from its parameters before it starts."""

    bytes: float  # peak extra memory
    seconds: float  # wall time on one core of a laptop-class CPU
    note: str = ""  # what dominates, in words

    def describe(self) -> str:
        return f"≈ {_bytes_text(self.bytes)} and ≈ {_seconds_text(self.seconds)}" + (f" ({self.note})" if self.note else "")


def _bytes_text(n: float) -> str:
    return f"{n / 2**30:.3g} GiB" if n >= 2**30 else f"{n / 2**20:.3g} MiB"


def _seconds_text(s: float) -> str:
    return f"{s / 3600:.3g} h" if s >= 3600 else f"{s:.3g} s"


@dataclass(frozen=True)
class Budget:
    """The most one run may take on a face: estimated peak memory and wall time (`Cost`)."""

    bytes: float
    seconds: float
    where: str  # whose budget, in words: "the command line", "a page"
    lift: str = ""  # how to go past it, in words ("give --force on a machine that has the memory"), or ""

    def describe(self) -> str:
        return f"{_bytes_text(self.bytes)} and {_seconds_text(self.seconds)}"

    def allows(self, cost: Cost) -> bool:
        return cost.bytes <= self.bytes and cost.seconds <= self.seconds

    def overage(self, cost: Cost) -> float:
        """How far over: the larger of the two ratios estimate / budget (≤ 1 within budget)."""
        return max(cost.bytes / self.bytes, cost.seconds / self.seconds)


#: what `lowprec simulate` and `python -m lowprec.simulations.NAME` run without `--force`
CLI_BUDGET = Budget(bytes=4 * 2**30, seconds=120.0, where="the command line",
                    lift="give --force to run it anyway on a machine that has the memory and time")
#: what a served page (a widget, its URL state, a lesson directive) runs for one update: every
#: session shares the server, so one request stays small
APP_BUDGET = Budget(bytes=512 * 2**20, seconds=2.0, where="a page")


class BudgetError(ConfigError):
    """A run whose estimated cost is over a face's budget; `name` is the parameter that pushes it over."""


def check_budget(config: Any, budget: Budget, *, label: Callable[[str], str] | None = None) -> Cost | None:
    """The record's `cost()` if it is within `budget` (None for a record without one); else
    BudgetError naming the parameter whose value, set back to its default, brings the estimate
    down the most (as `label(name)` spells it: `--seq` on the command line)."""
    cost_of = getattr(config, "cost", None)
    if cost_of is None:
        return None
    cost: Cost = cost_of()
    if budget.allows(cost):
        return cost
    best: tuple[bool, float, str] | None = None  # (not a number?, overage after the reset, name)
    for k in _knobs(type(config)):
        value = getattr(config, k.name)
        if value == k.default:
            continue
        try:
            lower = budget.overage(config.replace(**{k.name: k.default}).cost())
        except (ValueError, TypeError):  # the default breaks a cross-parameter rule: not the culprit
            continue
        candidate = (k.type not in (int, float), lower, k.name)
        if best is None or candidate < best:
            best = candidate
    name = best[2] if best is not None else _knobs(type(config))[0].name
    numeric = best is not None and not best[0]
    shown = label(name) if label else name
    lift = f"; {budget.lift}" if budget.lift else ""
    raise BudgetError(name, f"{getattr(config, name)!r} makes this run need {cost.describe()}, over "
                            f"{budget.where}'s budget of {budget.describe()}: "
                            f"{'lower' if numeric else 'change'} {shown}{lift}", label=shown)


def _resolve_type(cls: type, f: dataclasses.Field[Any]) -> type:
    hints = typing.get_type_hints(cls)
    t = hints.get(f.name, f.type)
    if t not in _TYPES:
        raise TypeError(f"{cls.__name__}.{f.name}: knob type must be one of bool, int, float, str; got {t!r}")
    return t  # type: ignore[return-value]


def _knobs(cls: type) -> tuple[Knob, ...]:
    cached = cls.__dict__.get("__knobs__")
    if cached is not None:
        return cached  # type: ignore[no-any-return]
    out = []
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        meta = f.metadata.get(_META)
        if meta is None:
            raise TypeError(f"{cls.__name__}.{f.name}: every field of a config record is made with knob()")
        t = _resolve_type(cls, f)
        out.append(dataclasses.replace(meta, name=f.name, type=t, default=f.default))
    knobs = tuple(out)
    setattr(cls, "__knobs__", knobs)
    for k in knobs:  # the declared defaults must themselves be valid
        k.check(k.default)
    return knobs


def fields_of(cls_or_obj: Any) -> tuple[Knob, ...]:
    """The knobs of a config record (class or instance), in declaration order."""
    cls = cls_or_obj if isinstance(cls_or_obj, type) else type(cls_or_obj)
    return _knobs(cls)


def config_record(cls: type[T]) -> type[T]:
    """Class decorator: a frozen dataclass whose fields are knobs, validated on construction,
    with `to_dict()`, `replace(**changes)` and `knobs()`."""
    original_post_init: Callable[[Any], None] | None = cls.__dict__.get("__post_init__")

    def __post_init__(self: Any) -> None:
        for k in _knobs(type(self)):
            value = k.check(getattr(self, k.name))
            object.__setattr__(self, k.name, value)
        if original_post_init is not None:
            original_post_init(self)

    def to_dict(self: Any) -> dict[str, Any]:
        return {k.name: getattr(self, k.name) for k in _knobs(type(self))}

    def replace(self: Any, **changes: Any) -> Any:
        unknown = set(changes) - {k.name for k in _knobs(type(self))}
        if unknown:
            allowed = ", ".join(k.name for k in _knobs(type(self)))
            raise ConfigError(sorted(unknown)[0], f"unknown parameter; allowed: {allowed}")
        return dataclasses.replace(self, **changes)

    setattr(cls, "__post_init__", __post_init__)  # before dataclass(), which wires it into __init__
    dc = dataclass(frozen=True)(cls)
    setattr(dc, "to_dict", to_dict)
    setattr(dc, "replace", replace)
    setattr(dc, "knobs", classmethod(lambda c: _knobs(c)))
    _knobs(dc)  # fail at import time on a badly declared record
    return dc


def option_name(name: str) -> str:
    return "--" + name.replace("_", "-")


# ------------------------------------------------------------------------------------------------
# command line
# ------------------------------------------------------------------------------------------------


def _parse_bool_text(text: str) -> bool:
    low = text.strip().lower()
    if low in ("true", "yes", "1", "on"):
        return True
    if low in ("false", "no", "0", "off"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")


def add_arguments(parser: argparse.ArgumentParser, cls: type, *, skip: Sequence[str] = ()) -> None:
    """One option per knob of `cls` (except `skip`), named `--name-with-dashes`, help from the knob.

    Values are parsed by type only (int, float, text); bounds and choices are checked when the
    record is built (`from_namespace`), so every face reports them the same way. The value's
    placeholder is the name in capitals (`--format FORMAT`): the help (`Knob.describe`) lists the
    choices once, so the usage line does not repeat them."""
    for k in _knobs(cls):
        if k.name in skip:
            continue
        kwargs: dict[str, Any] = {"dest": k.name, "default": k.default, "help": k.describe()}
        if k.type is bool:
            kwargs["action"] = argparse.BooleanOptionalAction
        else:
            kwargs["type"] = k.type
            kwargs["metavar"] = k.name.upper()
        parser.add_argument(k.option, **kwargs)


def from_namespace(cls: type[T], args: argparse.Namespace, *, skip: Sequence[str] = (),
                   **overrides: Any) -> T:
    """The record from parsed arguments; errors name the option as typed (`--spike-step`)."""
    values: dict[str, Any] = {}
    for k in _knobs(cls):
        if k.name in skip:
            continue
        values[k.name] = overrides.get(k.name, getattr(args, k.name, k.default))
    try:
        return cls(**values)
    except ConfigError as exc:
        raise exc.relabel(option_name(exc.name)) from None


def from_mapping(cls: type[T], values: Mapping[str, Any], *, label: Callable[[str], str] | None = None) -> T:
    """The record from a mapping of (some of) its fields; unknown keys raise ConfigError listing the
    known ones. `label` names a parameter in messages (e.g. a URL query key)."""
    knobs = {k.name: k for k in _knobs(cls)}
    unknown = [key for key in values if key not in knobs]
    if unknown:
        name = unknown[0]
        raise ConfigError(name, f"unknown parameter; allowed: {', '.join(knobs)}",
                          label=label(name) if label else name)
    try:
        return cls(**dict(values))
    except ConfigError as exc:
        raise (exc.relabel(label(exc.name)) if label else exc) from None


def iter_values(obj: Any) -> Iterator[tuple[Knob, Any]]:
    """(knob, value) pairs of a record instance."""
    for k in _knobs(type(obj)):
        yield k, getattr(obj, k.name)
