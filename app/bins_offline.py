"""The bin explorer on exported pages: lookup tables computed in Python, drawn by the browser.

An exported page has no Python behind it, yet its bin explorer must give the exact code of any
typed value in every format up to 8 bits. The page never rounds: it finds the value in the runs of
`formats.partition.cast_partition` (the cast of every float64, measured on `formats.encode`, so
conventions that round float64 to float32 first are exact too) and shows the code's precomputed
facts. `static/offline/binexplorer.js` then builds the same source columns that
`app.plots.bins.bins_sources` builds in a served session (the browser tests compare the two).

`BinTables` collects what the pages of one export need and writes, per format, one file
`_static/lowprec/bins/<FORMAT>.js` holding the format's codes (hex, bits, value, exact text,
class, formula, gap to the next value), its sorted distinct values, log2 gaps, and per policy the
runs, the NaN codes and the rounding bins of every value. `register(widget, root_ref)` describes one
explorer of a page: the Bokeh ids of its controls and panes, its fixed settings (rounding and
overflow overrides, compare format, decode scale) and which policy key each (format, convention)
uses. Numbers are written with `lowprec.strictjson` (non-finite as "inf"/"-inf"/"nan").
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from lowprec import strictjson
from lowprec.strictjson import json_float
from lowprec.app.plots.bins import (BIN_SHADES, FIELD_COLORS, POINT_FILL, POINT_FILL_SELECTED, bit_toggle_labels,
                                    toggle_css)
from lowprec.formats import code_table, get_format
from lowprec.formats.specs import P3109_LISTED
from lowprec.formats.conventions import CONVENTIONS
from lowprec.formats.explain import (
    BIN_VIEW_FORMATS,
    TABLE_MAX_BITS,
    WINDOW,
    _gaps,
    _grid,
    _scaled_bin,
    bit_fields,
    code_value,
    formula_text,
    power_of_two_text,
    resolve_policy,
    window_bins,
)
from lowprec.formats.partition import cast_partition, nan_codes
from lowprec.formats.policy import CastPolicy, Rounding

__all__ = ["BinTables", "OFFLINE_FORMATS", "format_tables", "policy_key", "policy_tables"]

#: formats an exported page's explorer answers for: every format up to 8 bits but the P3109 family
#: beyond gfloat's own list of it (`formats.specs.P3109_LISTED`; the site stays within its size)
OFFLINE_FORMATS: tuple[str, ...] = tuple(
    n for n in BIN_VIEW_FORMATS if get_format(n).bits <= TABLE_MAX_BITS
    and (get_format(n).family != "p3109" or get_format(n) in P3109_LISTED))
BINS_ROUTE = "bins"  # under the site's static folder


def policy_key(policy: CastPolicy) -> str:
    """A short stable name for a policy's decisions (its name included: the page shows it)."""
    text = json.dumps(policy.to_dict(), sort_keys=True)
    return hashlib.sha1(text.encode("utf-8")).hexdigest()[:12]


def format_tables(name: str, decode_scale: float = 1.0) -> dict[str, Any]:
    """Everything about format `name` that does not depend on the policy."""
    f = get_format(name)
    table = code_table(f)
    grid = _grid(f.name)
    codes = []
    for c in range(f.n_codes):
        v = code_value(f, c)
        codes.append({
            "hex": f"0x{c:0{(f.bits + 3) // 4}X}", "bits": format(c, f"0{f.bits}b"), "value": json_float(v),
            "exact": power_of_two_text(v), "cls": str(table.cls[c]), "formula": formula_text(f, c),
            "gap": json_float(float(table.gap_next[c])),
        })
    rows = [{"code": int(r["code"]), "cls": r["class"]} for r in table.rows()]
    return {
        "name": f.name, "bits": f.bits, "fields": list(bit_fields(f)), "codes": codes,
        "rows": [r["code"] for r in rows],
        "grid": {"values": [json_float(v) for v in grid.values], "codes": [int(c) for c in grid.codes]},
        "gaps": {k: [json_float(v) for v in vals] for k, vals in _gaps(f, decode_scale).items()},
    }


def policy_tables(name: str, policy: CastPolicy) -> dict[str, Any]:
    """The runs, NaN codes and rounding bins of format `name` under `policy`."""
    f = get_format(name)
    part = cast_partition(f, policy)
    grid = _grid(f.name)
    bins = window_bins(f, policy, 0, half_width=grid.values.size)
    code_bins: list[Any] = []
    for c in range(f.n_codes):
        b = _scaled_bin(f, c, policy, 1.0)
        code_bins.append(None if b is None else [json_float(b.lo), json_float(b.hi), bool(b.lo_closed), bool(b.hi_closed)])
    return {
        "name": policy.name, "rounding": policy.rounding.value, "overflow": policy.overflow.value,
        "starts": [json_float(v) for v in part.starts], "codes": [int(c) for c in part.codes],
        "nan": list(nan_codes(f, policy)),
        "bins": {"lo": [json_float(v) for v in bins["lo"]], "hi": [json_float(v) for v in bins["hi"]],
                 "lo_closed": [bool(b) for b in bins["lo_closed"]],
                 "hi_closed": [bool(b) for b in bins["hi_closed"]]},
        "code_bins": code_bins,
    }


class BinTables:
    """The bin data an export needs, written once per format at the end (`write_all`)."""

    def __init__(self, writer: Any) -> None:
        self.writer = writer
        self.policies: dict[str, dict[str, CastPolicy]] = {}  # format → key → policy

    def _policy(self, fmt: str, convention: str, rounding: str, overflow: str) -> str | None:
        try:
            pol = resolve_policy(fmt, convention, rounding or None, overflow or None)
        except ValueError:
            return None
        if pol.rounding is Rounding.STOCHASTIC:
            return None
        key = policy_key(pol)
        self.policies.setdefault(fmt, {})[key] = pol
        return key

    def register(self, widget: Any, root_ref: str) -> dict[str, Any]:
        """The page's description of one bin explorer (ids, fixed settings, policy keys)."""
        from lowprec.app.widgets.bin_explorer import tie_rule_text

        cfg = widget.config()

        def model_id(obj: Any) -> str | None:
            entry = obj._models.get(root_ref)
            return entry[0].ref["id"] if entry else None

        panes = widget.panes()
        keys: dict[str, dict[str, str | None]] = {}
        ties: dict[str, str] = {}
        for fmt in OFFLINE_FORMATS:
            keys[fmt] = {conv: self._policy(fmt, conv, cfg.rounding, cfg.overflow) for conv in CONVENTIONS}
            pol = resolve_policy(fmt, "ml_dtypes", cfg.rounding or None, cfg.overflow or None)
            ties[fmt] = tie_rule_text(pol.rounding.value, fmt)
        for fmt in OFFLINE_FORMATS:
            for conv in CONVENTIONS:
                try:
                    pol = resolve_policy(fmt, conv, cfg.rounding or None, cfg.overflow or None)
                    ties[f"{fmt}|{conv}"] = tie_rule_text(pol.rounding.value, fmt)
                except ValueError:
                    pass
        compare = cfg.compare_format or None
        if compare is not None and compare not in OFFLINE_FORMATS:
            compare_info: dict[str, Any] | None = {"format": compare, "offline": False}
        elif compare is not None:
            compare_info = {"format": compare, "offline": True,
                            "keys": {conv: self._policy(compare, conv, cfg.rounding, cfg.overflow)
                                     for conv in CONVENTIONS}}
        else:
            compare_info = None
        scale = float(cfg.decode_scale)
        gaps = None
        if scale != 1.0:
            gaps = {fmt: {k: [json_float(v) for v in vals] for k, vals in _gaps(get_format(fmt), scale).items()}
                    for fmt in OFFLINE_FORMATS}
        sources = {k: src.ref["id"] for k, src in widget.sources.items()}
        number_line = panes["number_line"].object
        gap = panes["gap"].object
        return {
            "ids": {
                "value": model_id(widget.control("value")), "format": model_id(widget.control("format")),
                "convention": model_id(widget.control("convention")),
                "toggles": [model_id(t) for t in widget._toggle_pool],
                "formula": model_id(panes["formula"]), "note": model_id(panes["note"]),
                "table_note": model_id(panes["table_note"]), "alert": model_id(panes["alert"]),
                "stale": model_id(panes["stale"]),
                "table": panes["table"].object.ref["id"], "table_pane": model_id(panes["table"]),
                "summary": panes["summary"].object.ref["id"],
                "gap_legend": [item.ref["id"] for item in (gap.legend[0].items if gap.legend else [])],
                "line_legend": [item.ref["id"] for item in (number_line.legend[0].items if number_line.legend else [])],
                "sources": sources,
            },
            "settings": {"format": cfg.format, "value": cfg.value, "convention": cfg.convention,
                         "rounding": cfg.rounding, "overflow": cfg.overflow, "decode_scale": json_float(scale),
                         "scale_text": f"{scale:g}", "window": WINDOW, "table_max_bits": TABLE_MAX_BITS},
            "formats": list(OFFLINE_FORMATS), "keys": keys, "ties": ties, "compare": compare_info,
            "gaps": gaps,
            "field_colors": dict(FIELD_COLORS),
            "toggle_css": {f: toggle_css(f) for f in ("sign", "exponent", "mantissa")},
            "bit_labels": {fmt: bit_toggle_labels(bit_fields(fmt)) for fmt in OFFLINE_FORMATS},
            "shades": list(BIN_SHADES), "fill": POINT_FILL, "fill_selected": POINT_FILL_SELECTED,
        }

    def write_all(self) -> None:
        """One `bins/<FORMAT>.js` per format used, each with every policy the pages asked for."""
        from lowprec.app.layout import STATIC_ROUTE

        for fmt, pols in sorted(self.policies.items()):
            data = format_tables(fmt)
            data["policies"] = {key: policy_tables(fmt, pol) for key, pol in sorted(pols.items())}
            text = strictjson.dumps(data, indent=None)
            js = ("/* lowprec: bin explorer tables for " + fmt + " (generated by lowprec export) */\n"
                  "(window.LOWPREC_BINS = window.LOWPREC_BINS || {})[" + json.dumps(fmt) + "] = " + text + ";\n")
            self.writer.write_text(f"{STATIC_ROUTE}/{BINS_ROUTE}/{fmt}.js", js)


