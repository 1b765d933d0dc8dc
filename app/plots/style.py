"""The one visual vocabulary: fixed colours for sign / exponent / mantissa bits and for the
series every plot shares, used by every view (bits, formula, tables, tooltips). The three bit
colours are reserved for bits: series (current/delayed scaling, errors, highlights) use colours of
their own, so a blue mark always means "exponent". `power_of_two_text` (the exact `7/4 × 2^8`
texts) is `formats.explain`'s, re-exported for the figure builders; `gap_float` is how a number
enters a data column (NaN, drawn as a gap, for an absent or non-finite value)."""

from __future__ import annotations

import math
from typing import Any

from lowprec.app.theme import INK
from lowprec.formats.explain import power_of_two_text  # exact texts are computed in formats

__all__ = ["CURRENT_COLOR", "DELAYED_COLOR", "ERROR_COLOR", "EXPONENT_COLOR", "HIGHLIGHT_COLOR", "INK",
           "MANTISSA_COLOR", "SERIES_PALETTE", "SIGN_COLOR", "gap_float", "power_of_two_text"]

SIGN_COLOR = "#d62728"  # red
EXPONENT_COLOR = "#1f77b4"  # blue
MANTISSA_COLOR = "#2ca02c"  # green
# Series colours: the Okabe–Ito palette (distinguishable under the common colour-vision
# deficiencies) without its blue, green and vermillion, which would read as bit colours; readable on
# the light and the dark theme. Black marks use INK, which the dark theme turns light.
DELAYED_COLOR = "#E69F00"  # delayed scaling / defect variant (orange)
CURRENT_COLOR = "#CC79A7"  # current scaling / reference (reddish purple)
HIGHLIGHT_COLOR = "#8C8C8C"  # reference lines, bands, a highlighted step (grey)
ERROR_COLOR = INK  # the value being cast / an error mark (ink: not the sign red)
# one colour per series (layers, variants) that avoids the three bit colours; series beyond the
# fourth also differ by dash or marker where a figure draws many
SERIES_PALETTE = ("#E69F00", "#CC79A7", INK, "#8C8C8C", "#56B4E9", "#F0E442", "#8C564B",
                  "#B07AA1", "#FFBE7D", "#5F5F5F")


def gap_float(v: Any) -> float:
    """A number for a Bokeh data column: the float, or NaN, which Bokeh draws as a gap in a line and
    leaves out of a scatter, when the value is absent (None) or non-finite (a plot of ±Inf has no
    place to put it; the tooltips and tables say the value in words)."""
    return math.nan if v is None or not math.isfinite(float(v)) else float(v)
