"""The bin challenge: find the code a value gets in a format under a named convention.

`ChallengeConfig` (value, format, convention) is the record of the BinChallenge widget and of the
lesson directive `::: widget BinChallenge value=0.1 format=E4M3FN convention=torch`.
`bin_challenge(config)` computes the answer with `explain_cast` (the code the convention's cast
gives, with its rounding bin) and, for **every** code of the format, the verdict a page shows when
the learner submits that code: right, too low, too high, a tie lost to the even neighbour, the same
value under another code, or a special code. The page only looks the verdict up, so it checks the
same way with a server and in an exported file opened from disk.

Rules, stated once:

- Formats up to 8 bits (`CHALLENGE_FORMATS`): every code is listed, 256 at most.
- A code is right when it is the code the cast gives, bit for bit (+0 and -0 are different codes;
  so are two NaN codes).
- A wrong finite code is *too high* when `x` lies below its rounding bin and *too low* when above
  it; when `x` is an open edge of its bin, `x` is a tie that the rounding rule gave to the answer.
  Bins are `formats.rounding_bin`'s under the convention's policy.
- When the answer is NaN or ±Inf (an overflow under a non-saturating convention, or a NaN/Inf
  input) there is no bin; the texts say which threshold `x` passed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from lowprec import numtext
from lowprec.config import ConfigError, config_record, fields_of, knob

from .conventions import CONVENTIONS
from .explain import CastExplanation, code_value, explain_cast, power_of_two_text
from .parse import parse_value
from .policy import Rounding
from .specs import CORE_FORMATS, get_format
from .tables import RoundingBin, code_table

__all__ = ["CHALLENGE_FORMATS", "Challenge", "ChallengeConfig", "CodeVerdict", "bin_challenge",
           "grouped_bits", "interval_text", "shown_text"]

#: formats the challenge covers: every format up to 8 bits (its whole code table goes into the page)
CHALLENGE_FORMATS: tuple[str, ...] = tuple(f.name for f in CORE_FORMATS if f.bits <= 8)


@config_record
class ChallengeConfig:
    """The bin challenge's parameters: make the code of `value` in `format` under `convention`."""

    value: str = knob("0.1", "the value whose code the learner builds: 0.1, -3.3, 465, inf, 0x1.8p3")
    format: str = knob("E4M3FN", "format of the code (formats up to 8 bits)", choices=CHALLENGE_FORMATS)
    convention: str = knob("torch", "backend whose cast policy gives the answer", choices=tuple(CONVENTIONS))

    def __post_init__(self) -> None:
        try:
            parse_value(self.value)
        except (ValueError, TypeError) as exc:
            raise ConfigError("value", str(exc)) from None


VERDICTS = ("correct", "too_low", "too_high", "tie", "same_value", "special")


@dataclass(frozen=True)
class CodeVerdict:
    """What the page says when the learner submits `code`."""

    code: int
    hex: str
    bits: str
    value: float  # the code's value (NaN/±Inf for special codes)
    exact: str  # power-of-two text of the value ('13/8 × 2^-4', 'nan')
    shown: str  # the value as the page shows it (`shown_text`): '0.1015625 = 13/8 × 2^-4', '-0', 'nan'
    verdict: str  # one of VERDICTS
    text: str  # the explanation shown

    def to_dict(self) -> dict[str, Any]:
        return {"code": self.code, "hex": self.hex, "bits": self.bits, "value": self.value,
                "exact": self.exact, "shown": self.shown, "verdict": self.verdict, "text": self.text}


@dataclass(frozen=True)
class Challenge:
    """The challenge, its answer and the verdict for every code (row i is code i)."""

    config: ChallengeConfig
    x: float  # the value, parsed
    answer: CastExplanation  # the cast under the convention's policy
    task: str  # "Make the code for 0.1 in E4M3FN under torch's convention."
    explanation: str  # why the answer is the answer (the rounding bin)
    fields: tuple[str, ...]  # 'sign' / 'exponent' / 'mantissa' per bit, most significant first
    verdicts: tuple[CodeVerdict, ...] = field(default_factory=tuple)

    def check(self, code: int) -> CodeVerdict:
        """The verdict for `code` (ValueError for a code outside the format)."""
        if isinstance(code, bool) or not isinstance(code, int) or not 0 <= code < len(self.verdicts):
            raise ValueError(f"code {code!r} is not a code of {self.config.format} "
                             f"(0..{len(self.verdicts) - 1})")
        return self.verdicts[code]

    def to_dict(self) -> dict[str, Any]:
        config = {k.name: getattr(self.config, k.name) for k in fields_of(self.config)}
        return {"config": config, "x": self.x, "task": self.task,
                "answer": {"code": self.answer.code, "hex": self.answer.hex, "bits": self.answer.bits,
                           "value": self.answer.value, "exact": self.answer.exact,
                           "policy": self.answer.policy.name},
                "explanation": self.explanation, "fields": list(self.fields),
                "verdicts": [v.to_dict() for v in self.verdicts]}


def grouped_bits(bits: str, fields: tuple[str, ...]) -> str:
    """The bits with a space between fields: '00011101' of E4M3FN → '0 0011 101'."""
    out = ""
    for i, (bit, name) in enumerate(zip(bits, fields)):
        out += (" " if i and name != fields[i - 1] else "") + bit
    return out


def interval_text(b: RoundingBin) -> str:
    """'(0.09765625, 0.10546875)', '[0.5, 0.625]': brackets say which edges belong to the bin."""
    return (f"{'[' if b.lo_closed else '('}{numtext.shortest(b.lo)}, {numtext.shortest(b.hi)}"
            f"{']' if b.hi_closed else ')'}")


def shown_text(v: float) -> str:
    """A value as the page shows it: its shortest decimal, then its exact power-of-two text when that
    says more ('0.1015625 = 13/8 × 2^-4', '-0', '448 = 7/4 × 2^8', 'nan')."""
    text, exact = numtext.shortest(v), power_of_two_text(v)
    return text if exact == text else f"{text} = {exact}"


def _tie_rule(rounding: Rounding) -> str:
    return {Rounding.NEAREST_EVEN: "round-to-nearest-even gives a tie to the code whose last bit is 0",
            Rounding.NEAREST_AWAY: "round-to-nearest-away gives a tie to the value farther from zero"}.get(
        rounding, f"{rounding.value} rounding decides which side an edge belongs to")


def bin_challenge(config: ChallengeConfig) -> Challenge:
    """The challenge for `config`, with every code's verdict (see the module docstring).

    Raises ValueError when the convention's policy refuses the value (NaN into E2M1, 0 into E8M0
    under ml_dtypes …), naming it."""
    fmt = get_format(config.format)
    conv = config.convention
    answer = explain_cast(config.value, fmt, conv)
    x = answer.x
    x_text = config.value.strip()
    policy = answer.policy
    table = code_table(fmt)
    width = (fmt.bits + 3) // 4
    task = f"Make the code for {x_text} in {fmt.name} under {conv}'s convention."
    ans_value = code_value(fmt, answer.code)  # unscaled: the challenge has no decode_scale
    ans_text = f"code {answer.hex} ({grouped_bits(answer.bits, answer.fields)})"
    ans_bin = answer.rounding_bin
    if math.isnan(x):
        explanation = f"NaN has no rounding bin; {conv}'s cast to {fmt.name} gives {answer.exact}: {ans_text}."
    elif x == 0 and ans_value == 0:
        keeps_sign = ", and the sign bit keeps the sign of zero" if getattr(fmt, "has_negative_zero", False) else ""
        explanation = f"{x_text} is exactly zero{keeps_sign}: {ans_text}."
    elif ans_bin is not None and math.isfinite(x) and ans_bin.contains(x):
        explanation = (f"{x_text} lies in the rounding bin {interval_text(ans_bin)} of "
                       f"{shown_text(ans_value)}: {ans_text}.")
    else:
        edge = _overflow_edge(fmt.name, policy, x)
        beyond = f"beyond the overflow threshold {numtext.shortest(edge)}" if edge is not None else "infinite"
        explanation = (f"{x_text} is {beyond}, outside every finite bin; {conv}'s overflow rule "
                       f"({policy.overflow.value}) gives {shown_text(ans_value)}: {ans_text}.")
    verdicts = []
    for code in range(fmt.n_codes):
        v = float(table.value[code])
        exact = power_of_two_text(v)
        hex_ = f"0x{code:0{width}X}"
        bits = format(code, f"0{fmt.bits}b")
        head = f"{hex_} ({grouped_bits(bits, answer.fields)}) is {shown_text(v)}"
        if code == answer.code:
            verdict, text = "correct", f"Right: {explanation}"
        elif not math.isfinite(v):
            verdict = "special"
            if (math.isnan(v) and math.isnan(ans_value)) or v == ans_value:
                text = f"{head}: the right kind of code, but {conv}'s cast gives {ans_text}; compare the bits."
            else:
                text = f"{head}, a special code: {x_text} does not become {exact} under {conv}."
        elif math.isnan(x):
            verdict, text = "special", f"{head}, a number; NaN has no rounding bin and {conv} gives {ans_text}."
        elif v == ans_value:
            verdict, text = "same_value", (f"{head}, the same value as the answer but another code: "
                                           f"{conv}'s cast gives {ans_text}.")
        else:
            verdict, text = _place(fmt.name, code, policy, x, x_text, head, ans_text)
        verdicts.append(CodeVerdict(code, hex_, bits, v, exact, shown_text(v), verdict, text))
    return Challenge(config, x, answer, task, explanation, answer.fields, tuple(verdicts))


def _place(fmt: str, code: int, policy: Any, x: float, x_text: str, head: str,
           ans_text: str) -> tuple[str, str]:
    """Verdict for a wrong finite code: where x lies against its rounding bin."""
    from .tables import rounding_bin

    b = rounding_bin(fmt, code, policy)
    if x == b.lo or x == b.hi:  # x is an edge that this code does not own: a lost tie
        return "tie", (f"{head}; {x_text} is an edge of its bin {interval_text(b)} — a tie, and "
                       f"{_tie_rule(policy.rounding)}: {ans_text}.")
    if x < b.lo:
        return "too_high", f"{head}, too high: its rounding bin {interval_text(b)} lies above {x_text}."
    return "too_low", f"{head}, too low: its rounding bin {interval_text(b)} lies below {x_text}."


def _overflow_edge(fmt: str, policy: Any, x: float) -> float | None:
    """Where the largest finite value's bin ends on x's side (None when x is ±Inf)."""
    from .tables import rounding_bin

    if math.isinf(x):
        return None
    table = code_table(fmt)
    finite = [(float(table.value[c]), c) for c in range(table.codes.size) if math.isfinite(table.value[c])]
    value, code = max(finite) if x > 0 else min(finite)
    b = rounding_bin(fmt, code, policy)
    return b.hi if x > 0 else b.lo
