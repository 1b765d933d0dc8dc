"""`lowprec cast FORMAT VALUE... [--convention NAME] [--rounding MODE] [--overflow MODE]
[--decode-scale S] [--seed N] [--json]`.

The command is generated from the bin explorer's record, `simulations.format_records.ExplainConfig`: its
options (`--convention`, `--rounding`, `--overflow`, `--decode-scale`), their help, choices,
bounds and defaults are the record's knobs, checked by the record (a bad value is one line naming
the option), so the command line and the explorer cannot drift apart — in particular both
default to one convention, `DEFAULT_CONVENTION` (ml_dtypes). FORMAT is the record's `format`
knob, widened to every registered format and alias (FP32 included: `explain_cast` casts to it, only
the explorer's bin view is limited to 16 bits); VALUE is its `value` knob, given one or more times;
`--seed` (stochastic rounding: each value gets its own generator) is the one option of the command
alone (the explorer draws one value at a time).

For each value: `formats.explain_cast`'s explanation (the same one the bin explorer shows), printed
as its text form (`formats.explain.cast_text`: a policy line, then per value the code in binary and
hex, the decoded value and its exact power-of-two text, the errors and the rounding bin). `--json`
prints the explanations as strict JSON (`lowprec.strictjson`).
"""

from __future__ import annotations

import argparse
from typing import Any

from lowprec import strictjson
from lowprec.config import add_arguments, fields_of, from_namespace
from lowprec.formats.explain import CastExplanation, cast_text, explain_cast
from lowprec.simulations.format_records import ExplainConfig

#: knobs of ExplainConfig that are not options: `format` and `value` are the positional arguments,
#: `compare_format` is the explorer's second panel (the command prints one format)
POSITIONAL = ("format", "value")
NOT_HERE = ("compare_format",)


def register(sub: Any) -> None:
    knobs = {k.name: k for k in fields_of(ExplainConfig)}
    p = sub.add_parser("cast")
    p.add_argument("format", metavar="FORMAT",
                   help=f"{knobs['format'].help.split(' (')[0]}: any format or alias (E4M3FN, float8_e4m3fn, "
                        "bf16, fp4, FP32 …)")
    p.add_argument("values", nargs="+", metavar="VALUE",
                   help=f"{knobs['value'].help}; several may follow (a negative one after `--`: -- -70000)")
    add_arguments(p, ExplainConfig, skip=POSITIONAL + NOT_HERE)
    p.add_argument("--seed", type=int, default=0,
                   help="seed for stochastic rounding (each value gets its own generator)")
    p.add_argument("--json", action="store_true", help="print the explanations as strict JSON")
    p.set_defaults(func=run)


def options_record(args: argparse.Namespace) -> ExplainConfig:
    """The record of the parsed options (checked: a ConfigError names the option as typed)."""
    return from_namespace(ExplainConfig, args, skip=POSITIONAL + NOT_HERE)


def cast_values(fmt_name: str, texts: list[str], convention: str | None = None,
                rounding: str | None = None, overflow: str | None = None,
                seed: int = 0, decode_scale: float = 1.0) -> list[CastExplanation]:
    """`explain_cast` of each text; the first refused value raises ValueError naming it."""
    return [explain_cast(t, fmt_name, convention, rounding, overflow, seed=seed, decode_scale=decode_scale)
            for t in texts]


def run(args: argparse.Namespace) -> int:
    cfg = options_record(args)
    rows = cast_values(args.format, args.values, cfg.convention, cfg.rounding or None, cfg.overflow or None,
                       args.seed, cfg.decode_scale)
    if args.json:
        strictjson.write(rows, None)
        return 0
    print(cast_text(rows))
    return 0
