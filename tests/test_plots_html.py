"""Standalone plot files stay self-contained even after Panel has registered its extensions."""

from __future__ import annotations

import re

import panel as pn  # noqa: F401  (importing Panel is the condition under test)
from bokeh.plotting import figure

from lowprec.app.plots.html import standalone_html


def test_standalone_html_has_no_external_or_dangling_resources() -> None:
    p = figure(title="t")
    p.line([0, 1], [0, 1])
    html = standalone_html(p, "t")
    assert "BEGIN bokeh.min.js" in html or "Bokeh" in html
    assert not re.search(r'<script[^>]*\bsrc=', html)
    assert not re.search(r'<link[^>]*\bhref="(?!data:)', html)
    # (bokeh.min.js itself mentions a MathJax CDN URL it only fetches for LaTeX labels; none here)
