"""Browser tests: user text is data, never HTML (issue 16, item 1).

Crafted links and typed values carry script payloads through every URL parameter of every widget
page, the widget-prefixed parameters of a lesson page, and the text boxes a learner types in. On
each page: no dialog opens, no element the payloads would inject exists (searched through every
shadow root, since Bokeh renders in shadow DOM), the payload's text shows literally in the
message, and the page keeps working (no console or page error, no request leaves localhost).
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.test_ui import Watched, wait_until

pytestmark = pytest.mark.ui

#: the payloads of the issue; each carries the marker "lpxss" so an injected element is found
PAYLOADS = (
    "<img src=x onerror=alert('lpxss1')>",
    "<script>alert('lpxss2')</script>",
    "\"><svg onload=alert('lpxss3')>",
    "[lpxss4](javascript:alert(1))",
    "<b class=lpxss5>bold</b>",
)

#: JavaScript: elements (through every shadow root) that a payload would have injected
INJECTED = """() => {
  const found = [];
  const visit = (root) => {
    for (const el of root.querySelectorAll('*')) {
      const attrs = Array.from(el.attributes || []).map(a => a.name + '=' + a.value).join(' ');
      const tag = el.tagName.toLowerCase();
      if ((tag === 'script' && el.textContent.includes('lpxss')) || attrs.includes('lpxss')
          || (tag === 'img' && el.getAttribute('src') === 'x')
          || (tag === 'a' && (el.getAttribute('href') || '').startsWith('javascript:')))
        found.push(tag + ' ' + attrs);
      if (el.shadowRoot) visit(el.shadowRoot);
    }
  };
  visit(document);
  return found;
}"""

#: JavaScript: the text of the page (shadow roots and hidden regions included; script and style not)
ALL_TEXT = """() => {
  const parts = [];
  const visit = (root) => {
    const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
    for (let n = walker.nextNode(); n; n = walker.nextNode()) {
      const parent = n.parentNode && n.parentNode.nodeName;
      if (parent !== 'SCRIPT' && parent !== 'STYLE') parts.push(n.nodeValue);
    }
    for (const el of root.querySelectorAll('*')) if (el.shadowRoot) visit(el.shadowRoot);
  };
  visit(document);
  return parts.join('\\n');
}"""


class XssWatched(Watched):
    def __init__(self, browser: Any, server: str) -> None:
        super().__init__(browser, server)
        self.dialogs: list[str] = []

        def on_dialog(dialog: Any) -> None:
            self.dialogs.append(dialog.message)
            dialog.dismiss()

        self.page.on("dialog", on_dialog)

    def check_safe(self, *shown: str) -> None:
        """No dialog, no injected element, no error; and (when given) one of the `shown` payloads
        is on the page as text, character for character (several controls share one alert, so
        the last message wins)."""
        if shown:
            wait_until(lambda: any(text in self.page.evaluate(ALL_TEXT) for text in shown), timeout=30)
        assert self.dialogs == [], self.dialogs
        assert self.page.evaluate(INJECTED) == []
        self.check_clean()


def _widget_params(name: str) -> list[str]:
    from lowprec.app.pages import url_parameters
    from lowprec.app.widgets import get_widget_class

    return list(url_parameters(get_widget_class(name)()).values())


def _widget_names() -> list[str]:
    from lowprec.app.widgets import WIDGETS

    return list(WIDGETS)


def _query(params: list[str], prefix: str = "") -> str:
    from urllib.parse import quote

    return "&".join(f"{prefix}{p}={quote(PAYLOADS[i % len(PAYLOADS)])}" for i, p in enumerate(params))


@pytest.mark.parametrize("name", _widget_names())
def test_url_parameters_never_run_script(server: str, browser: Any, name: str) -> None:
    """Every URL parameter of the widget page at once, each a payload: refused or shown as text."""
    params = _widget_params(name)
    w = XssWatched(browser, server)
    w.open(f"{server}/widget/{name}?{_query(params)}")
    w.page.get_by_text("Invalid").first.wait_for(timeout=30000)
    w.check_safe(*PAYLOADS)
    w.page.close()


def test_lesson_url_parameters_never_run_script(server: str, browser: Any) -> None:
    """The widget-prefixed parameters of a lesson page (`BinExplorer.value=…`)."""
    w = XssWatched(browser, server)
    w.open(f"{server}/lesson/range-vs-resolution?"
           + _query(["value", "format", "convention", "rounding"], prefix="BinExplorer."))
    # the lesson's explorer may sit in a region locked until a prediction is answered: attached
    w.page.get_by_text("Invalid").first.wait_for(state="attached", timeout=30000)
    w.check_safe(*PAYLOADS)
    w.page.close()


@pytest.mark.parametrize("name, placeholder", [
    ("BinExplorer", "3.3, 1e-3, -0, inf, nan, 0x1.8p3"),
    ("BinChallenge", "0.1, -3.3, 465, 0x1.8p3"),
])
def test_typed_values_never_run_script(server: str, browser: Any, name: str, placeholder: str) -> None:
    """Each payload typed into the value box: the message shows it as text; a good value after
    it still works."""
    w = XssWatched(browser, server)
    w.open(f"{server}/widget/{name}")
    box = w.page.get_by_placeholder(placeholder)
    for payload in PAYLOADS:
        box.fill(payload)
        box.press("Enter")
        w.page.get_by_text("Invalid").first.wait_for(timeout=20000)
        w.check_safe(payload, repr(payload))  # messages quote the value as Python's repr does
    box.fill("0x1.8p3")
    box.press("Enter")
    wait_until(lambda: w.page.get_by_text("Invalid").count() == 0
               or not w.page.get_by_text("Invalid").first.is_visible(), timeout=30)
    w.check_safe()
    w.page.close()


def test_a_huge_url_value_is_refused_not_a_server_error(server: str, browser: Any) -> None:
    """`?value=` with 20,000 digits: Panel's query parser fails on such an integer (HTTP 500
    before issue 16); the page now loads, says the value was too long and keeps working."""
    import urllib.request

    url = f"{server}/widget/BinExplorer?value={'1' * 20_000}&format=E5M2"
    with urllib.request.urlopen(url, timeout=120) as resp:
        assert resp.status == 200
    w = XssWatched(browser, server)
    w.open(url)
    w.page.get_by_text("is 20000 characters long (at most 1000); ignored").first.wait_for(timeout=30000)
    wait_until(lambda: (w.source_data("format") or [None])[0] == "E5M2")
    w.check_safe()
    w.page.close()
