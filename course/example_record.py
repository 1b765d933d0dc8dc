"""The `Example` record: one worked example — named values with units, where they come from, and the
prose text of each value — as lessons quote it (`{{ example:NAME.FIELD }}`).

This module holds only the record and its number formatting; the registry of examples is
`course.examples` (core) with `course.examples_extra` (lesson-specific), both of which build
`Example`s. Non-finite values print as nan / inf / -inf (`lowprec.numtext`'s words) in prose, as
`lowprec.strictjson` writes them to JSON.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from lowprec import numtext, strictjson

__all__ = ["Example", "Value", "as_number", "format_number"]

Value = float | int | str | list[Any] | bool


def format_number(v: float | int, digits: int | None) -> str:
    """Prose text of a number: `digits` decimals (or significant digits when tiny/huge), else the
    shortest exact form; nan, inf, -inf; booleans as yes/no."""
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, int):
        return str(v)
    word = numtext.nonfinite_text(v)
    if word is not None:
        return word
    if digits is not None:
        text = (numtext.general(v, digits) if abs(v) < 1e-4 or abs(v) >= 1e16
                else numtext.fixed(v, digits).rstrip("0").rstrip("."))
        return "0" if text in ("-0", "") else text
    if v == int(v) and abs(v) < 1e16:
        return str(int(v))
    text = numtext.roundtrip(float(v))
    return text if len(text) <= 12 else numtext.general(v, 6)


def as_number(v: Any) -> float:
    """A numeric field as float (fields are typed as any Value)."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise TypeError(f"expected a number, got {v!r}")
    return float(v)


@dataclass(frozen=True)
class Example:
    """One worked example: named values with units, and where they come from."""

    name: str
    title: str
    source: str  # where the fact comes from / how it is computed
    values: dict[str, Value]  # named fields
    units: dict[str, str]  # unit per field ("" if none)
    summary_field: str  # the field `{{ example:NAME }}` prints
    digits: dict[str, int] = field(default_factory=dict)  # decimals to print, per field (optional)

    def __post_init__(self) -> None:
        if self.summary_field not in self.values:
            raise ValueError(f"example {self.name}: summary field {self.summary_field!r} is not a value")
        missing = [k for k in self.values if k not in self.units]
        if missing:
            raise ValueError(f"example {self.name}: no unit given for {', '.join(missing)}")

    def format(self, field: str | None = None) -> str:
        """Prose text for a field (default: the summary field), e.g. '0.5', '890 MB', '8.25 bits'."""
        key = self.summary_field if field is None else field
        if key not in self.values:
            raise ValueError(f"example {self.name!r} has no field {key!r}; fields: "
                             f"{', '.join(self.values)}")
        v = self.values[key]
        digits = self.digits.get(key)
        if isinstance(v, list):
            text = "[" + ", ".join(str(x) if isinstance(x, str) else format_number(x, digits)
                                   for x in v) + "]"
        elif isinstance(v, str):
            text = v
        else:
            text = format_number(v, digits)
        unit = self.units.get(key, "")
        return f"{text} {unit}" if unit else text

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "title": self.title,
            "source": self.source,
            "values": strictjson.to_jsonable(self.values),
            "units": dict(self.units),
            "summary_field": self.summary_field,
            "summary": self.format(),
            "text": {k: self.format(k) for k in self.values},
        }


def example(name: str, title: str, source: str, values: dict[str, Value], summary: str,
            units: dict[str, str] | None = None, digits: dict[str, int] | None = None) -> Example:
    """An Example whose fields have no unit unless `units` names one (the worked-example modules'
    one constructor)."""
    u = {k: "" for k in values}
    u.update(units or {})
    return Example(name=name, title=title, source=source, values=values, units=u, summary_field=summary,
                   digits=dict(digits or {}))
