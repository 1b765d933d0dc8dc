"""BinChallenge: build, bit by bit, the code a value gets in a format under a named convention.

"Make the code for 0.1 in E4M3FN under torch's convention": the learner toggles the bits (buttons
in the sign/exponent/mantissa colours, each showing the code's value as it changes) and checks.
Every verdict — right, too low or too high against the code's rounding bin, a tie the rounding rule
gave to the other side, the same value under another code — is computed by
`formats.challenge.bin_challenge` for every code of the format and carried into the page, which
only looks the learner's code up: the challenge checks the same way served and in an exported
file opened from disk. When served, the checked code also reaches Python (`checked_code` of the
view), and the widget's `result` and `feedback` follow it (`check`), as in a notebook.

The component is the lesson components' module (`app/static/exercises.js`, role "challenge").
The page element carries `data-challenge="<format>:<value>:<convention>"`, `data-code` (the code
shown) and, once checked, `data-result="correct"` or `"incorrect"`.
"""

from __future__ import annotations

from typing import Any

import panel as pn
import param

from lowprec.app.exercises import LessonComponent
from lowprec.app.params import config_widget
from lowprec.app.plots.bins import FIELD_COLORS
from lowprec.app.widgets._base import RecordWidget
from lowprec.formats.challenge import Challenge, ChallengeConfig, CodeVerdict, bin_challenge, grouped_bits

TINT_ALPHA = "33"  # background of a set bit: the field colour at 20 % opacity (text stays dark)


class ChallengeView(LessonComponent):
    """The bits, the current code's value, Check and the verdict (client-side, by lookup)."""

    checked_code = param.Integer(default=None, allow_None=True, doc="the code the learner last checked")


def challenge_spec(challenge: Challenge) -> dict[str, Any]:
    """The data the page carries: the task and, per code, its bits, value and verdict text."""
    cfg = challenge.config
    fields = challenge.fields
    return {
        "role": "challenge",
        "key": f"{cfg.format}:{cfg.value.strip()}:{cfg.convention}",
        "task": challenge.task,
        "fields": list(fields),
        "colors": {f: FIELD_COLORS[f] for f in set(fields)},
        "tints": {f: FIELD_COLORS[f] + TINT_ALPHA for f in set(fields)},
        "verdicts": [{"hex": v.hex, "grouped": grouped_bits(v.bits, fields),
                      "shown": v.shown, "verdict": v.verdict, "text": v.text}
                     for v in challenge.verdicts],
    }


@config_widget(ChallengeConfig)
class BinChallenge(RecordWidget):
    """Build the code of a value bit by bit; the page says why a code is right or wrong."""

    result = param.String(default="", precedence=-1, doc="'correct' / 'incorrect' of the last checked code")
    feedback = param.String(default="", precedence=-1, doc="the explanation shown for the last checked code")
    error_prefix = "Invalid challenge"

    def _build(self) -> None:
        self.challenge: Challenge = self._work(self._request(), None)  # defaults and arguments must be valid
        self._view = ChallengeView(challenge_spec(self.challenge))
        self._view.param.watch(self._on_check, "checked_code")

    def check(self, code: int) -> CodeVerdict:
        """Check `code` as the page does; `result` and `feedback` follow."""
        verdict = self.challenge.check(code)
        self.result = "correct" if verdict.verdict == "correct" else "incorrect"
        self.feedback = verdict.text
        return verdict

    def _on_check(self, event: param.parameterized.Event) -> None:
        if event.new is not None:
            self.check(int(event.new))

    # -- the protocol's steps (app.widgets._base): a value the convention refuses shows the message
    # and keeps the last challenge
    def _work(self, request: ChallengeConfig, generation: int | None) -> Challenge:
        return bin_challenge(request)

    def _paint(self, request: ChallengeConfig, outcome: Challenge) -> None:
        self.challenge = outcome
        self.result = self.feedback = ""
        self._view.spec = LessonComponent.encode(challenge_spec(outcome))

    def controls(self) -> pn.viewable.Viewable:
        """The challenge's parameters in a row under "Another challenge". (Not a collapsed
        `pn.Card`: with Panel 1.9.4 a collapsed card on a page that also holds a Bokeh DataTable
        stops the page from rendering.)"""
        widgets: dict[str, Any] = {"value": {"type": pn.widgets.TextInput, "placeholder": "0.1, -3.3, 465, 0x1.8p3"}}
        return pn.Column(pn.pane.Markdown("**Another challenge**", margin=(0, 10)),
                         self.record_controls(widgets=widgets, default_layout=pn.Row),
                         sizing_mode="stretch_width")

    def __panel__(self) -> pn.viewable.Viewable:
        return pn.Column(self._view, self._alert, self.controls(), sizing_mode="stretch_width")
