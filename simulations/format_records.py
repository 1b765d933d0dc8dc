"""The config records of the views that face the formats layer directly (issue 27 item 7: widget
records out of `formats/`, which keeps the format math they call):

- `ExplainConfig`: the bin explorer's parameters — its controls, its URL state, its lesson-directive
  parameters — and the options of `lowprec cast`, which is generated from it. The view itself is
  `formats.explain.explain_value` / `explain_cast`.
- `ConventionsConfig`: the conventions view's parameter, the float format whose edge cases
  `formats.conventions_view.conventions_table` tabulates.

(The bin challenge's record, `ChallengeConfig`, is learner-facing and lives with the challenge in
`lowprec.course.challenge`.)
"""

from __future__ import annotations

from lowprec.config import config_record, knob
from lowprec.formats.conventions import CONVENTIONS
from lowprec.formats.explain import BIN_VIEW_FORMATS, DEFAULT_CONVENTION
from lowprec.formats.policy import Overflow, Rounding
from lowprec.formats.specs import FLOAT_FORMATS

__all__ = ["ConventionsConfig", "ExplainConfig"]


@config_record
class ExplainConfig:
    """The bin explorer's parameters (its controls and lesson-directive parameters): one typed
    value in one format, under a named convention with optional rounding/overflow overrides."""

    format: str = knob("E4M3FN", "format to cast to (every format up to 16 bits)", choices=BIN_VIEW_FORMATS)
    value: str = knob("3.3", "value to cast: 3.3, 1e-3, -0, inf, nan or a hex float 0x1.8p3")
    convention: str = knob(DEFAULT_CONVENTION, "backend whose measured cast policy is used (they differ at "
                           "the edges: overflow, NaN, E8M0)", choices=tuple(CONVENTIONS))
    rounding: str = knob("", "rounding mode ('' keeps the convention's own)",
                         choices=("",) + tuple(r.value for r in Rounding),
                         choice_labels=("(convention's)",) + tuple(r.value for r in Rounding))
    overflow: str = knob("", "overflow rule ('' keeps the convention's own: saturate or Inf/NaN)",
                         choices=("",) + tuple(o.value for o in Overflow),
                         choice_labels=("(convention's)",) + tuple(o.value for o in Overflow))
    compare_format: str = knob("E5M2", "second format shown side by side ('' for none)",
                               choices=("",) + BIN_VIEW_FORMATS, choice_labels=("(none)",) + BIN_VIEW_FORMATS)
    decode_scale: float = knob(1.0, "grid = format values × decode_scale (= amax / F); x is encoded as "
                               "x / decode_scale", bounds=(2.0**-126, 2.0**126))


@config_record
class ConventionsConfig:
    """The conventions view's parameters: which float format's edge cases to tabulate."""

    format: str = knob("E4M3FN", "float format whose edge cases are tabulated",
                       choices=tuple(f.name for f in FLOAT_FORMATS))
