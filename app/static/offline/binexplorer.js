/* lowprec bin explorer on exported pages (no server): looks typed values up, rounds nothing.

   The export (lowprec.app.bins_offline) writes, per format up to 8 bits, the cast of every float64
   as runs (formats.partition: measured on formats.encode, double rounding through float32
   included), each code's facts and each policy's rounding bins, in _static/lowprec/bins/<FORMAT>.js.
   This file finds the run that holds the typed value (binary search over float64 order), then builds
   the same source columns as app.plots.bins.bins_sources and the same formula text as the served
   widget. Number texts follow Python's format rules exactly (%g with round-half-even on the exact
   binary value, repr, and the "13/8 × 2^1" power-of-two text), using BigInt arithmetic. */
(function () {
  "use strict";

  // ------------------------------------------------------------------ exact number texts
  var F64 = new DataView(new ArrayBuffer(8));
  function decompose(x) {  // |x| = m × 2^e with m a BigInt (x finite, nonzero)
    F64.setFloat64(0, x);
    var hi = F64.getUint32(0), lo = F64.getUint32(4);
    var bexp = (hi >>> 20) & 0x7ff;
    var frac = (BigInt(hi & 0xfffff) << 32n) | BigInt(lo);
    if (bexp === 0) return {m: frac, e: -1074};
    return {m: frac | (1n << 52n), e: bexp - 1075};
  }
  function signbit(x) { return x < 0 || Object.is(x, -0); }
  function exactDigits(x) {  // exact decimal digits of |x| and the position of the decimal point
    var d = decompose(Math.abs(x));
    var digits, point;
    if (d.e >= 0) { digits = (d.m << BigInt(d.e)).toString(); point = digits.length; }
    else {
      digits = (d.m * (5n ** BigInt(-d.e))).toString();
      point = digits.length + d.e;  // value = digits × 10^e
    }
    var strip = digits.replace(/^0+/, "");
    point -= digits.length - strip.length;
    return {digits: strip.replace(/0+$/, "") || "0", point: point};
  }
  function roundDigits(digits, point, p) {  // p significant digits, ties to even (Python's %g)
    if (digits.length <= p) return {digits: digits, point: point};
    var head = digits.slice(0, p), rest = digits.slice(p);
    var up = rest[0] > "5" || (rest[0] === "5" && (/[1-9]/.test(rest.slice(1)) || (parseInt(head[p - 1], 10) % 2 === 1)));
    if (up) {
      var n = (BigInt(head) + 1n).toString();
      if (n.length > head.length) { point += 1; n = n.slice(0, p); }
      head = n;
    }
    return {digits: head.replace(/0+$/, "") || "0", point: point};
  }
  function pyG(x, p) {  // Python format(x, ".{p}g")
    if (x !== x) return "nan";
    if (x === Infinity) return "inf";
    if (x === -Infinity) return "-inf";
    var sign = signbit(x) ? "-" : "";
    if (x === 0) return sign + "0";
    p = p || 6;
    var ex = exactDigits(x);
    var r = roundDigits(ex.digits, ex.point, p);
    var X = r.point - 1;
    var ds = r.digits;
    var out;
    if (X >= -4 && X < p) {
      if (r.point <= 0) out = "0." + "0".repeat(-r.point) + ds;
      else if (r.point >= ds.length) out = ds + "0".repeat(r.point - ds.length);
      else out = ds.slice(0, r.point) + "." + ds.slice(r.point);
    } else {
      out = ds[0] + (ds.length > 1 ? "." + ds.slice(1) : "") + "e" + (X < 0 ? "-" : "+") +
        (Math.abs(X) < 10 ? "0" : "") + Math.abs(X);
    }
    return sign + out;
  }
  function pyRepr(x) {  // Python repr(float(x)) as value_text writes it
    if (x !== x) return "nan";
    if (x === Infinity) return "inf";
    if (x === -Infinity) return "-inf";
    if (x === 0) return signbit(x) ? "-0" : "0";
    var s = Math.abs(x).toExponential();  // shortest round-trip digits
    var m = s.split("e"), mant = m[0].replace(".", ""), X = parseInt(m[1], 10);
    var sign = x < 0 ? "-" : "", out;
    if (X >= -4 && X < 16) {
      var point = X + 1;
      if (point <= 0) out = "0." + "0".repeat(-point) + mant;
      else if (point >= mant.length) out = mant + "0".repeat(point - mant.length) + ".0";
      else out = mant.slice(0, point) + "." + mant.slice(point);
    } else {
      out = mant[0] + (mant.length > 1 ? "." + mant.slice(1) : "") + "e" + (X < 0 ? "-" : "+") +
        (Math.abs(X) < 10 ? "0" : "") + Math.abs(X);
    }
    return sign + out;
  }
  function potText(v) {  // formats.explain.power_of_two_text (non-finite: lowprec.numtext's words)
    if (v !== v) return "nan";
    if (v === Infinity) return "inf";
    if (v === -Infinity) return "-inf";
    if (v === 0) return signbit(v) ? "-0" : "0";
    var d = decompose(Math.abs(v)), m = d.m, e = d.e;
    while ((m & 1n) === 0n) { m >>= 1n; e += 1; }
    var bits = m.toString(2).length;
    var ex = e + bits - 1;
    var den = 1n << BigInt(bits - 1);
    var mant = den === 1n ? m.toString() : m.toString() + "/" + den.toString();
    return (v < 0 ? "-" : "") + mant + " × 2^" + ex;
  }
  function esc(text) {
    return String(text).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;")
      .replace(/"/g, "&quot;").replace(/'/g, "&#x27;");
  }
  function num(v) {  // strictjson numbers: non-finite values are strings
    if (typeof v === "number") return v;
    if (v === "inf") return Infinity;
    if (v === "-inf") return -Infinity;
    return NaN;
  }

  // ------------------------------------------------------------------ parsing (formats.parse_value)
  var ACCEPTED = "a decimal (3.3, 1e-3, -0), inf, -inf, nan, or a hex float (0x1.8p3)";
  function parseHex(s) {  // exact C99 hex float; refuses what float64 cannot hold exactly
    var m = /^([+-]?)0x([0-9a-f]*)(?:\.([0-9a-f]*))?(?:p([+-]?\d+))?$/i.exec(s);
    if (!m || (m[2] + (m[3] || "")).length === 0) return null;
    var digits = m[2] + (m[3] || ""), exp = parseInt(m[4] || "0", 10) - 4 * (m[3] || "").length;
    var n = BigInt("0x" + digits);
    var sign = m[1] === "-" ? -1 : 1;
    if (n === 0n) return sign < 0 ? -0 : 0;
    while ((n & 1n) === 0n) { n >>= 1n; exp += 1; }
    var bits = n.toString(2).length;
    var top = exp + bits - 1;
    if (bits > 53 || top > 1023 || exp < -1074) {
      throw new Error("offline page: " + s + " needs rounding to reach float64; type it as a decimal, or run lowprec serve");
    }
    var x = Number(n);  // exact: at most 53 bits
    var k = exp;
    while (k > 0) { var step = Math.min(k, 1000); x *= Math.pow(2, step); k -= step; }
    while (k < 0) { var st = Math.max(k, -1000); x *= Math.pow(2, st); k -= st; }  // exact: no bits lost
    return sign * x;
  }
  function parseValue(text) {
    var s = String(text).trim().replace(/_/g, "").replace(/\u2212/g, "-");
    if (!s) throw new Error("empty value; expected " + ACCEPTED);
    var low = s.toLowerCase();
    var neg = low[0] === "-";
    var body = low.replace(/^[+-]+/, "");
    if (body === "inf" || body === "infinity" || body === "∞") return {x: neg ? -Infinity : Infinity, neg: neg};
    if (body === "nan") return {x: NaN, neg: neg};
    var x;
    if (body.slice(0, 2) === "0x") {
      x = parseHex(low);
      if (x === null) throw new Error("cannot read '" + text + "' as a number; expected " + ACCEPTED);
    } else {
      if (!/^[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/.test(low)) {
        throw new Error("cannot read '" + text + "' as a number; expected " + ACCEPTED);
      }
      x = Number(low);
    }
    if (!isFinite(x)) throw new Error("'" + text + "' is beyond float64's range (max ≈ 1.8e308); type a smaller number or inf");
    return {x: x, neg: signbit(x)};
  }

  // ------------------------------------------------------------------ tables
  var base = null;
  function staticBase() {
    if (base !== null) return base;
    var s = document.querySelector('script[src*="offline/binexplorer.js"]');
    base = s ? s.getAttribute("src").replace(/offline\/binexplorer\.js.*$/, "") : "";
    return base;
  }
  var loading = {};
  function load(fmt) {
    window.LOWPREC_BINS = window.LOWPREC_BINS || {};
    if (window.LOWPREC_BINS[fmt]) return Promise.resolve(window.LOWPREC_BINS[fmt]);
    if (!loading[fmt]) {
      loading[fmt] = new Promise(function (resolve, reject) {
        var el = document.createElement("script");
        el.src = staticBase() + "bins/" + fmt + ".js";
        el.onload = function () { resolve(window.LOWPREC_BINS[fmt]); };
        el.onerror = function () { reject(new Error("the offline tables of " + fmt + " are missing")); };
        document.head.appendChild(el);
      });
    }
    return loading[fmt];
  }
  function before(a, b) {  // float64 total order, -0 before +0 (no NaN)
    return a < b || (a === 0 && b === 0 && signbit(a) && !signbit(b));
  }
  function lookup(pol, x) {  // index of the run holding x: the last start not after x
    var starts = pol._starts || (pol._starts = pol.starts.map(num));
    var lo = 0, hi = starts.length - 1;
    while (lo < hi) {
      var mid = (lo + hi + 1) >> 1;
      if (before(x, starts[mid])) hi = mid - 1; else lo = mid;
    }
    return pol.codes[lo];
  }
  function searchLeft(arr, v) { var lo = 0, hi = arr.length; while (lo < hi) { var m = (lo + hi) >> 1; if (arr[m] < v) lo = m + 1; else hi = m; } return lo; }

  // ------------------------------------------------------------------ explanation (formats.explain)
  function relError(x, value) {  // formats.explain.relative_error's rules, the same in the page
    if (x !== x || value !== value) return [NaN, NaN, NaN];  // NaN on either side: no distance
    if (!isFinite(x) || !isFinite(value)) {
      if (x === value) return [0, 0, 0];  // the same infinity: kept exactly
      var e = isFinite(value) !== isFinite(x) ? value - x : (value > 0 ? Infinity : -Infinity);
      return [e, Infinity, Infinity];  // infinitely wrong
    }
    var err = value - x;
    if (x === 0) return [err, Math.abs(err), value === 0 ? 0 : Infinity];
    return [err, Math.abs(err), Math.abs(err) / Math.abs(x)];
  }
  function codeBin(F, pol, code, scale) {
    var b = pol.code_bins[code];
    if (!b) return null;
    return {lo: num(b[0]) * scale, hi: num(b[1]) * scale, lo_closed: b[2], hi_closed: b[3]};
  }
  function cast(F, pol, text, parsed, scale, forcedCode) {
    var x = parsed.x, xs = x / scale;
    if (isFinite(x) && x !== 0 && !isFinite(xs)) throw new Error(text + " / decode_scale overflows float64");
    var code;
    if (x !== x) code = pol.nan[parsed.neg ? 1 : 0];
    else code = lookup(pol, xs);
    if (code < 0) {
      throw new Error(text + " has no code in " + F.name + " under the " + pol.name + " policy (it refuses this value)");
    }
    if (forcedCode !== undefined && forcedCode !== null) code = forcedCode;
    var c = F.codes[code];
    var vf = num(c.value);
    var value = isFinite(vf) ? vf * scale : vf;
    var er = relError(x, value);
    return {input: text, x: x, format: F.name, code: code, hex: c.hex, bits: c.bits, fields: F.fields,
            value: value, vf: vf, exact: c.exact, cls: c.cls, error: er[0], abs_error: er[1], rel_error: er[2],
            formula: c.formula, policy: pol, bin: isFinite(vf) ? codeBin(F, pol, code, scale) : null};
  }

  // ------------------------------------------------------------------ the page's explorers
  var FILL_SELECTED = null, FILL = null, SHADES = null;
  function Explorer(cfg, doc) {
    this.cfg = cfg; this.doc = doc;
    this.models = {};
    this.flipped = null;
    this.busy = false;
    this.current = {format: cfg.settings.format, convention: cfg.settings.convention, value: cfg.settings.value};
  }
  Explorer.prototype.m = function (id) { return id ? this.doc.get_model_by_id(id) : null; };
  Explorer.prototype.start = function () {
    var self = this, ids = this.cfg.ids;
    var watch = function (id, prop, fn) {
      var m = self.m(id);
      if (m) m.property(prop).change.connect(function () { if (!self.busy) fn(m); });
    };
    watch(ids.value, "value", function (m) { self.flipped = null; self.current.value = m.value; self.update(); });
    watch(ids.format, "value", function (m) { self.current.format = m.value; self.update(true); });
    watch(ids.convention, "value", function (m) { self.current.convention = m.value; self.update(); });
    ids.toggles.forEach(function (id, i) { watch(id, "active", function () { self.flip(i); }); });
  };
  Explorer.prototype.flip = function (i) {
    var v = this.view;
    if (!v) { this.alert("Offline page: flipping bits works once the format is one up to 8 bits."); return; }
    var bits = v.main.bits.split("");
    bits[i] = bits[i] === "0" ? "1" : "0";
    var code = parseInt(bits.join(""), 2);
    var F = window.LOWPREC_BINS[v.main.format];
    var vf = num(F.codes[code].value);
    var scaled = isFinite(vf) ? vf * this.scale() : vf;
    this.flipped = code;
    var text = pyRepr(scaled);
    this.current.value = text;
    this.busy = true;
    try { var box = this.m(this.cfg.ids.value); if (box) box.value = text; } finally { this.busy = false; }
    this.update();
  };
  Explorer.prototype.scale = function () { return num(this.cfg.settings.decode_scale); };
  Explorer.prototype.tables = function () {  // the formats whose bins the current view needs
    var need = [this.current.format];
    var cmp = this.cfg.compare;
    if (cmp && cmp.offline) need.push(cmp.format);
    return Promise.all(need.map(load));
  };
  Explorer.prototype.prime = function () {
    // the view the page already shows (Python drew it), in JS terms, without drawing it again:
    // redrawing every source while Bokeh still lays the page out made it lay out twice
    var self = this;
    return this.tables().then(function () {
      try {
        var v = self.explain();
        self.view = v;
        self.lastSources = self.sources(v);
      } catch (e) { /* the page shows Python's message; the next edit explains in JS */ }
    }, function () { /* the next edit reports the missing tables */ });
  };
  Explorer.prototype.update = function () {
    var self = this, fmt = this.current.format;
    if (this.cfg.formats.indexOf(fmt) < 0) {
      this.alert("Offline page: the bins of " + fmt + " are not in this page (formats over 8 bits and most of the P3109 family are left out; run lowprec serve).");
      return Promise.resolve(false);
    }
    return this.tables().then(function () {
      try {
        var view = self.explain();
        self.draw(view);
        self.alert(null);
        return true;
      } catch (e) {
        self.alert("Invalid input: " + e.message);
        return false;
      }
    }, function (e) { self.alert(String(e.message || e)); return false; });
  };
  Explorer.prototype.policyOf = function (fmt, conv, keys) {
    var key = (keys || this.cfg.keys[fmt] || {})[conv];
    if (!key) throw new Error("offline page: " + fmt + " under " + conv + " with this page's rounding needs lowprec serve");
    return window.LOWPREC_BINS[fmt].policies[key];
  };
  Explorer.prototype.explain = function () {
    var s = this.cfg.settings, fmt = this.current.format, conv = this.current.convention, text = this.current.value;
    var F = window.LOWPREC_BINS[fmt];
    var pol = this.policyOf(fmt, conv);
    var scale = this.scale();
    var parsed = parseValue(text);
    var forced = null;
    if (this.flipped !== null) {
      var fv = num(F.codes[this.flipped].value);
      if (fv * scale === (isFinite(fv) ? parsed.x : fv) || (fv !== fv && parsed.x !== parsed.x)) forced = this.flipped;
      this.flipped = null;
    }
    var main = cast(F, pol, text, parsed, scale, forced);
    var compare = null, C = null;
    var cmp = this.cfg.compare;
    if (cmp && cmp.offline) {
      C = window.LOWPREC_BINS[cmp.format];
      try { compare = cast(C, this.policyOf(cmp.format, conv, cmp.keys), text, parsed, scale, null); }
      catch (e) { compare = null; }
    }
    var values = F.grid.values.map(num);
    var xs = parsed.x / scale;
    var notes = [];
    var centre;
    if (isFinite(main.vf)) centre = searchLeft(values, main.vf);
    else if (!(xs !== xs)) centre = xs < 0 ? 0 : values.length - 1;
    else centre = searchLeft(values, 0);
    if (!isFinite(main.vf)) notes.push(text + " encodes to " + main.cls.toUpperCase() + " in " + F.name + ": no rounding bin");
    var W = s.window, first = Math.max(0, centre - W), last = Math.min(values.length - 1, centre + W);
    var bins = {code: [], value: [], lo: [], hi: [], lo_closed: [], hi_closed: []};
    for (var i = first; i <= last; i++) {
      bins.code.push(F.grid.codes[i]);
      bins.value.push(values[i] * scale);
      bins.lo.push(num(pol.bins.lo[i]) * scale);
      bins.hi.push(num(pol.bins.hi[i]) * scale);
      bins.lo_closed.push(pol.bins.lo_closed[i]);
      bins.hi_closed.push(pol.bins.hi_closed[i]);
    }
    var loW = Math.min.apply(null, bins.value), hiW = Math.max.apply(null, bins.value);
    var compareValues = [];
    if (C) C.grid.values.forEach(function (v) { var w = num(v) * scale; if (w >= loW && w <= hiW) compareValues.push(w); });
    var gaps = (this.cfg.gaps && this.cfg.gaps[fmt]) || F.gaps;
    var cgaps = null;
    if (C) cgaps = (this.cfg.gaps && this.cfg.gaps[C.name]) || C.gaps;
    return {input_text: text, x: parsed.x, scale: scale, main: main, compare: compare, bins: bins,
            compare_values: compareValues, gaps: gaps, compare_gaps: cgaps, F: F, note: notes.join("; ")};
  };
  Explorer.prototype.sources = function (v) {  // app.plots.bins.bins_sources
    var s = this.cfg.settings, scale = v.scale, sfx = scale === 1 ? "" : " × " + s.scale_text;
    var b = v.bins, values = b.value;
    var span = values.length > 1 ? Math.max.apply(null, values) - Math.min.apply(null, values) : 1.0;
    var pad = span / Math.max(values.length, 1);
    var left = Math.min.apply(null, values) - pad, right = Math.max.apply(null, values) + pad;
    var lo = b.lo.map(function (x) { return isFinite(x) ? x : left; });
    var hi = b.hi.map(function (x) { return isFinite(x) ? x : right; });
    var shade = values.map(function (_, i) { return SHADES[i % 2]; });
    var fill = values.map(function (x) { return x === v.main.value ? FILL_SELECTED : FILL; });
    var tieX = [], tieA = [];
    for (var i = 0; i < values.length; i++) {
      if (isFinite(b.lo[i]) && b.lo_closed[i]) { tieX.push(b.lo[i]); tieA.push(-Math.PI / 2); }
      if (isFinite(b.hi[i]) && b.hi_closed[i]) { tieX.push(b.hi[i]); tieA.push(Math.PI / 2); }
    }
    var hex2 = b.code.map(function (c) { var h = c.toString(16).toUpperCase(); return "0x" + (h.length < 2 ? "0" + h : h); });
    var exact = values.map(function (x) { return potText(x / scale) + sfx; });
    var interval = b.lo.map(function (l, k) {
      return (b.lo_closed[k] ? "[" : "(") + pyG(l, 6) + ", " + pyG(b.hi[k], 6) + (b.hi_closed[k] ? "]" : ")");
    });
    var x = v.x;
    var xPlot = x === x ? Math.min(Math.max(x, left), right) : (left + right) / 2;
    var casts = [v.main].concat(v.compare ? [v.compare] : []);
    var summary = {
      format: casts.map(function (c) { return c.format; }), code: casts.map(function (c) { return c.hex; }),
      bits: casts.map(function (c) { return c.bits; }), value: casts.map(function (c) { return pyG(c.value, 8); }),
      exact: casts.map(function (c) { return c.exact + sfx; }), cls: casts.map(function (c) { return c.cls; }),
      error: casts.map(function (c) { return pyG(c.error, 8); }), rel_error: casts.map(function (c) { return pyG(c.rel_error, 3); })
    };
    var fields = v.main.fields, nb = fields.length;
    var colours = this.cfg.field_colors;
    var bits = {x: [], bit: v.main.bits.split(""), field: fields.slice(), color: fields.map(function (f) { return colours[f]; }), weight: []};
    for (var k = 0; k < nb; k++) { bits.x.push(k); bits.weight.push("bit " + (nb - 1 - k)); }
    var gmx = [], gmy = [];
    if (isFinite(v.main.value) && v.main.value > 0) {
      var lv = Math.log2(v.main.value), gx = v.gaps.log2_value.map(num);
      if (gx.length) {
        var j = 0, best = Infinity;
        for (var q = 0; q < gx.length; q++) { var dd = Math.abs(gx[q] - lv); if (dd < best) { best = dd; j = q; } }
        gmx = [gx[j]]; gmy = [num(v.gaps.log2_gap[j])];
      }
    }
    var F = v.F;
    var table = {code: [], hex: [], bits: [], cls: [], value: [], exact: [], gap: []};
    if (F.bits <= s.table_max_bits) {
      F.rows.forEach(function (c) {
        var r = F.codes[c], fv = num(r.value), g = num(r.gap);
        table.code.push(c); table.hex.push(r.hex); table.bits.push(r.bits); table.cls.push(r.cls);
        table.value.push(isFinite(fv) ? pyG(fv * scale, 8) : potText(fv));
        table.exact.push(potText(fv));
        table.gap.push(isFinite(g) ? pyG(g * scale, 6) : "—");
      });
    }
    var gapsCols = function (g) { return g ? {log2_value: g.log2_value.map(num), log2_gap: g.log2_gap.map(num), value: g.value.map(num), gap: g.gap.map(num)} : {log2_value: [], log2_gap: [], value: [], gap: []}; };
    return {
      bits: bits, summary: summary,
      bins: {left: lo, right: hi, value: values, code: hex2, fill: shade, exact: exact, interval: interval},
      points: {x: values, y: values.map(function () { return 0.5; }), code: hex2, exact: exact, interval: interval, color: fill},
      ties: {x: tieX, y: tieX.map(function () { return 0.12; }), angle: tieA},
      marker: {x0: [xPlot], x1: [xPlot], y0: [-0.05], y1: [1.05], label: ["x = " + v.input_text],
               align: [xPlot > (left + right) / 2 ? "right" : "left"], dx: [xPlot > (left + right) / 2 ? -4 : 4]},
      compare_points: {x: v.compare_values, y: v.compare_values.map(function () { return -0.3; }),
                       exact: v.compare_values.map(function (c) { return potText(c / scale) + sfx; })},
      gaps: gapsCols(v.gaps), compare_gaps: gapsCols(v.compare_gaps), gap_marker: {x: gmx, y: gmy}, table: table
    };
  };
  Explorer.prototype.formula = function (v) {  // BinExplorer._show's formula text
    var main = v.main, s = this.cfg.settings, colours = this.cfg.field_colors;
    var own = main.bin, interval = "";
    if (own) interval = (own.lo_closed ? "[" : "(") + pyG(own.lo, 8) + ", " + pyG(own.hi, 8) + (own.hi_closed ? "]" : ")");
    var seen = [];
    main.fields.forEach(function (f) { if (seen.indexOf(f) < 0) seen.push(f); });
    var legend = seen.map(function (f) {
      return "<span style='display:inline-block;width:0.8em;height:0.8em;vertical-align:-0.05em;background:" +
        colours[f] + "'></span> " + f;
    }).join(" ");
    var tie = this.cfg.ties[main.format + "|" + this.current.convention] || this.cfg.ties[main.format] || "";
    return "<div><b>" + main.format + "</b> code <b>" + main.hex + "</b> (" + main.bits + ") · " + legend + "<br>" +
      main.formula + " = <b>" + main.exact + "</b>" + (v.scale !== 1 ? " × " + s.scale_text : "") + " = " + pyG(main.value, 8) +
      "<br>error " + pyG(main.error, 6) + " (relative " + pyG(main.rel_error, 3) + ")" +
      (interval ? " · rounding bin " + interval : "") +
      "<br><small>policy: " + main.policy.name + " · rounding " + main.policy.rounding + " · overflow " +
      main.policy.overflow + " · " + tie + "</small></div>";
  };
  Explorer.prototype.draw = function (v) {
    this.lastView = v;
    var self = this, ids = this.cfg.ids;
    var cols = this.sources(v);
    this.view = v;
    this.lastSources = cols;
    this.busy = true;
    try {
      Object.keys(cols).forEach(function (k) {
        var src = self.m(ids.sources[k]);
        if (src) src.data = cols[k];
      });
      var f = this.m(ids.formula); if (f) f.text = esc(this.formula(v));
      var note = this.m(ids.note); if (note) note.text = v.note ? esc("<p>" + esc(v.note) + "</p>") : "";
      var fields = v.main.fields, bits = v.main.bits;
      ids.toggles.forEach(function (id, i) {
        var t = self.m(id);
        if (!t) return;
        var on = i < bits.length;
        var changes = {visible: on};
        if (on) {
          changes.label = self.cfg.bit_labels[v.main.format][i];  // 0/1 is drawn from `active`
          changes.active = bits[i] === "1";
          changes.stylesheets = [self.cfg.toggle_css[fields[i]]];
        }
        t.setv(changes);
      });
      var cmpName = v.compare ? v.compare.format : null;
      var legend = function (itemIds, labels) {
        itemIds.forEach(function (id, i) {
          var item = self.m(id);
          if (!item || i >= labels.length) return;
          item.setv({visible: labels[i] !== null, label: {value: labels[i] === null ? "" : labels[i]}});
        });
      };
      legend(ids.gap_legend, [v.main.format, cmpName]);
      legend(ids.line_legend, [cmpName]);
      var showTable = v.F.bits <= this.cfg.settings.table_max_bits;
      var tp = this.m(ids.table_pane); if (tp) tp.visible = showTable;
      var tn = this.m(ids.table_note);
      if (tn) tn.text = showTable ? "" : esc("<p>The full code table is listed for formats up to 8 bits; " + v.main.format + " has " + bits.length + ".</p>");
    } finally {
      this.busy = false;
    }
    if (window.lowprecRefresh) window.lowprecRefresh();
  };
  Explorer.prototype.alert = function (message) {
    var a = this.m(this.cfg.ids.alert);
    if (!a) return;
    this.error = message || "";
    a.setv({text: message ? esc("<p>" + esc(message) + "</p>") : "", visible: !!message});
    // as served: over a stale view, say that it is the last valid value's (and clear it after)
    var stale = this.cfg.ids.stale ? this.m(this.cfg.ids.stale) : null;
    if (stale) {
      var last = this.lastView ? this.lastView.input_text : this.cfg.settings.value;
      stale.setv({text: message ? esc("<p><b>Not updated:</b> the bits, numbers and plots below still show the "
        + "last valid value, <code>" + esc(String(last)) + "</code>.</p>") : "", visible: !!message});
    }
  };

  // ------------------------------------------------------------------ the address
  function fromAddress(e, bare) {
    var q;
    try { q = new URLSearchParams(window.location.search); } catch (err) { return; }
    var get = function (name) {
      var v = bare !== null ? q.get(name) : null;
      return v !== null ? v : q.get("BinExplorer." + name);
    };
    var set = function (id, v) { var m = e.m(id); if (m && v !== null && v !== undefined) m.value = v; };
    var fmt = get("format"), conv = get("convention"), value = get("value");
    if (fmt === null && conv === null && value === null) return;
    if (conv !== null) set(e.cfg.ids.convention, conv);
    if (fmt !== null) set(e.cfg.ids.format, fmt);
    if (value !== null) set(e.cfg.ids.value, value);
  }

  // ------------------------------------------------------------------ start
  var explorers = [];
  function start() {
    var cfg = window.lowprecOffline ? window.lowprecOffline.config() : {};
    var list = cfg.binexplorers || [];
    if (!list.length) return;
    var timer = setInterval(function () {
      if (!(window.Bokeh && Bokeh.documents.length && Bokeh.index && Object.keys(Bokeh.index).length)) return;
      clearInterval(timer);
      var doc = Bokeh.documents[0];
      list.forEach(function (c, i) {
        if (SHADES === null) { SHADES = c.shades; FILL = c.fill; FILL_SELECTED = c.fill_selected; }
        var e = new Explorer(c, doc);
        e.start();
        explorers.push(e);
        var primed = c.formats.indexOf(c.settings.format) >= 0 ? e.prime() : Promise.resolve();
        // a shared link's URL state (the served page's names: format, value, convention, or on a
        // lesson page BinExplorer.value …): set the controls, whose watchers redraw
        if (i === 0) primed.then(function () { fromAddress(e, list.length === 1 ? "" : null); });
      });
      window.lowprecBinExplorers = explorers;
    }, 100);
  }
  window.lowprecBins = {pyG: pyG, pyRepr: pyRepr, potText: potText, parseValue: parseValue, load: load,
                        lookup: lookup, explorers: function () { return explorers; }};
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
