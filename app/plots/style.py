"""The one visual vocabulary: fixed colours for sign / exponent / mantissa bits and for the
series every plot shares, used by every view (bits, formula, tables, tooltips). The three bit
colours are reserved for bits: series (current/delayed scaling, errors, highlights) use colours of
their own, so a blue mark always means "exponent". `power_of_two_text` (the exact `7/4 × 2^8`
texts) is `formats.explain`'s, re-exported for the figure builders."""

from __future__ import annotations

from lowprec.formats.explain import power_of_two_text  # exact texts are computed in formats

__all__ = ["CURRENT_COLOR", "DELAYED_COLOR", "ERROR_COLOR", "EXPONENT_COLOR", "HIGHLIGHT_COLOR",
           "MANTISSA_COLOR", "SERIES_PALETTE", "SIGN_COLOR", "power_of_two_text"]

SIGN_COLOR = "#d62728"  # red
EXPONENT_COLOR = "#1f77b4"  # blue
MANTISSA_COLOR = "#2ca02c"  # green
DELAYED_COLOR = "#ff7f0e"  # delayed scaling / defect variant
CURRENT_COLOR = "#8c564b"  # current scaling / reference (brown: not a bit colour)
HIGHLIGHT_COLOR = "#9467bd"  # a highlighted step or element
ERROR_COLOR = "#222222"  # the value being cast / an error mark (not the sign red)
# one colour per series (layers, variants) that avoids the three bit colours
SERIES_PALETTE = ("#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf",
                  "#222222", "#aec7e8", "#ffbb78")
