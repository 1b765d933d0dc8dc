"""A page's URL state: each placed widget's parameters synced with the query of a served session
(`sync_url`), the query names (`url_parameters`: a lesson page prefixes them with the widget's
name), and the bounds on what a query may carry: values longer than `MAX_QUERY_VALUE` and values
Panel cannot parse are dropped and reported in the widget, never a server error or silence."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import parse_qs, parse_qsl, urlencode

import panel as pn
import param

from lowprec.app.pages.frame import PlacedWidget
from lowprec.app.text import set_alert


def url_parameters(widget: param.Parameterized, prefix: str = "") -> dict[str, str]:
    """Mapping parameter → query name for every control of `widget` (all settable params but `name`)."""
    out: dict[str, str] = {}
    for p in widget.param:
        spec = widget.param[p]
        if p == "name" or spec.constant or spec.readonly or (spec.precedence is not None and spec.precedence < 0):
            continue
        out[p] = f"{prefix}{p}"
    return out


def sync_url(placed: list[PlacedWidget], location: Any = None) -> bool:
    """Sync each placed widget's parameters with the URL query (served sessions only; pass a
    `panel.io.location.Location` to sync with another one). Query values a widget refuses show
    as an "Invalid URL parameters" alert in that widget (or in its `url_alert`)."""
    oversized: dict[str, int] = {}
    if location is None:
        location, oversized = _session_location()
    if location is None:
        return False
    oversized.update(_drop_oversized_query_values(location))
    unparsed = _drop_unparseable_query_values(location)
    for item in placed:
        if item.widget is None:
            continue
        widget = item.widget

        def on_error(values: dict[str, Any], widget: Any = widget, prefix: str = item.prefix,
                     url_alert: Any = item.url_alert, raw: dict[str, str] | None = None) -> None:
            # Panel reads query values as JSON first, so a text parameter can arrive as a number
            # (value=3.3 → 3.3, and -0 → 0, losing the sign): retry text parameters with the raw
            # query text, one parameter at a time, and report only what is still refused.
            if raw is None:
                raw = {k: v[-1] for k, v in parse_qs(str(location.search).lstrip("?"),
                                                     keep_blank_values=True).items()}
            refused: dict[str, Any] = {}
            for name, value in values.items():
                if isinstance(widget.param[name], param.String):
                    value = raw.get(f"{prefix}{name}", str(value))
                try:
                    widget.param.update(**{name: value})
                except (ValueError, TypeError):
                    refused[name] = value
            alert = url_alert if url_alert is not None else getattr(widget, "_alert", None)
            if refused and alert is not None:
                text = ", ".join(f"{prefix}{k}={v!r}" for k, v in refused.items())
                set_alert(alert, f"Invalid URL parameters: {text}")

        location.sync(widget, url_parameters(widget, item.prefix), on_error=on_error)
        # values Panel would have ignored with only a log line (`[1`, `{`): the widget gets the text,
        # as it gets any other, and says what is wrong with it
        mine = {k[len(item.prefix):]: v for k, v in unparsed.items()
                if k.startswith(item.prefix) and k[len(item.prefix):] in url_parameters(widget)}
        if mine:
            on_error(mine, raw={f"{item.prefix}{k}": v for k, v in mine.items()})
        dropped = [k for k in oversized if k.startswith(item.prefix) and k[len(item.prefix):] in widget.param]
        if dropped and getattr(widget, "_alert", None) is not None:
            set_alert(widget._alert, "Invalid URL parameters: " + ", ".join(
                f"{k} is {oversized[k]} characters long (at most {MAX_QUERY_VALUE}); ignored" for k in dropped))
    return True


#: the longest URL query value a page reads (Panel's own query parser fails on integers of more
#: than 4300 digits, with an HTTP 500; no parameter needs more than a few dozen characters)
MAX_QUERY_VALUE = 1000


def _session_location() -> tuple[Any, dict[str, int]]:
    """`pn.state.location`, or — when Panel's own parser fails on the query (an integer of
    thousands of digits: HTTP 500 otherwise) — a Location built from the request with the
    oversized values removed, and {name: length} of those."""
    try:
        return pn.state.location, {}
    except ValueError:
        from panel.io.location import Location, _get_location_params
        from panel.util import edit_readonly

        doc: Any = pn.state.curdoc
        request = doc.session_context.request
        params = _get_location_params(request.protocol, request.host, request.uri)
        pairs = parse_qsl(str(params.get("search", "")).lstrip("?"), keep_blank_values=True)
        oversized = {k: len(v) for k, v in pairs if len(v) > MAX_QUERY_VALUE}
        kept = [(k, v) for k, v in pairs if len(v) <= MAX_QUERY_VALUE]
        params["search"] = ("?" + urlencode(kept)) if kept else ""
        location = Location()
        with edit_readonly(location):
            location.param.update(params)
        pn.state._locations[doc] = location
        return location, oversized


def _drop_unparseable_query_values(location: Any) -> dict[str, str]:
    """Remove from `location.search` the values Panel would read as JSON and fail on (a value that
    starts with `[` or `{` but is no JSON: Panel logs a warning and ignores the parameter, and the
    page said nothing); returns {name: raw text} of what was removed."""
    search = str(getattr(location, "search", "") or "")
    pairs = parse_qsl(search.lstrip("?"), keep_blank_values=True)
    bad: dict[str, str] = {}
    for name, value in pairs:
        if value.lstrip().startswith(("[", "{")):
            try:
                json.loads(value)
            except ValueError:
                bad[name] = value
    if bad:
        kept = [(k, v) for k, v in pairs if k not in bad]
        location.search = ("?" + urlencode(kept)) if kept else ""
    return bad


def _drop_oversized_query_values(location: Any) -> dict[str, int]:
    """Remove query values longer than MAX_QUERY_VALUE from `location.search` before Panel parses
    it; returns {name: length} of what was removed."""
    search = str(getattr(location, "search", "") or "")
    pairs = parse_qsl(search.lstrip("?"), keep_blank_values=True)
    oversized = {k: len(v) for k, v in pairs if len(v) > MAX_QUERY_VALUE}
    if oversized:
        kept = [(k, v) for k, v in pairs if len(v) <= MAX_QUERY_VALUE]
        location.search = ("?" + urlencode(kept)) if kept else ""
    return oversized


def _addressed(prefix: str, query: frozenset[str]) -> bool:
    """Whether the URL query names a parameter of the widget with this prefix."""
    return any(q.startswith(prefix) for q in query)


def _query_names() -> frozenset[str]:
    """The parameter names of the current session's URL query (empty outside a server)."""
    try:
        return frozenset(str(k) for k in (pn.state.session_args or {}))
    except Exception:  # noqa: BLE001 — no session: nothing addressed
        return frozenset()
