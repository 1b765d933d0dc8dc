"""User text on a page: the one escaping helper.

Anything a person can type or put in a link (a URL query value, a value box, a lesson directive's
parameter) may reach a page inside a message ("Invalid input: …"). Panel's `Markdown` and `Alert`
panes render Markdown *and* raw HTML, so such text is passed through `as_text` first: every ASCII
punctuation character is backslash-escaped, which CommonMark defines as "this character, literally"
— `<img onerror=…>` shows as those characters, `[x](javascript:…)` is no link, `*` is no emphasis
and `$` starts no formula. `set_alert` shows such a message in the "Invalid …" alert every widget has.
"""

from __future__ import annotations

import string

__all__ = ["MAX_SHOWN", "as_text", "clip", "set_alert"]

#: the longest piece of user text a message repeats (a 20,000-digit value is shown clipped)
MAX_SHOWN = 300

_ESCAPES = {ord(c): "\\" + c for c in string.punctuation}


def clip(text: str, limit: int = MAX_SHOWN) -> str:
    """`text`, cut to `limit` characters with "… (N characters)" when longer."""
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text)} characters)"


def as_text(text: object) -> str:
    """Markdown that shows `text` literally (no HTML, no links, no emphasis), clipped to a readable
    length. Line breaks are kept."""
    return clip(str(text)).translate(_ESCAPES)


def set_alert(alert: object, message: str) -> None:
    """Show `message` (plain text, escaped here) in a Panel `Alert`, or hide it when empty."""
    setattr(alert, "object", as_text(message) if message else "")
    setattr(alert, "visible", bool(message))
