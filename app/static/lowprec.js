/* lowprec site behaviour, on every page (served and exported; no server needed):
   - the light/dark theme toggle (remembered in localStorage "lowprec-theme"; default follows
     prefers-color-scheme) and the recolouring of every Bokeh model of the page: each colour that
     equals a light value of window.LOWPREC.theme.roles becomes its dark value (and back);
   - progress marks in the course map from localStorage[LOWPREC.progressKey] ("<slug>/<id>" →
     "correct" | "incorrect" | "answered"), refreshed on the `storage` event (other tabs) and on the
     `lowprec-progress` event that the exercise components dispatch;
   - links to #anchors that live inside Panel's shadow DOM (headings, the landing page's sections);
   - a text alternative (role="img", aria-label) on every Bokeh plot, taken from the figure's tags. */
(function () {
  "use strict";
  var CFG = window.LOWPREC || {};
  var THEME_KEY = "lowprec-theme";

  // ---------------------------------------------------------------- theme
  function currentTheme() {
    return document.documentElement.getAttribute("data-theme") === "dark" ? "dark" : "light";
  }
  var lightToDark = {};
  (function () {
    var roles = (CFG.theme && CFG.theme.roles) || {};
    Object.keys(roles).forEach(function (k) { lightToDark[String(roles[k][0]).toLowerCase()] = roles[k][1]; });
  })();
  var originals = new WeakMap();  // model → {prop: light value}

  function colourOf(v) {
    if (typeof v === "string") return v;
    if (v && typeof v === "object" && typeof v.value === "string") return v.value;
    return null;
  }
  function withColour(v, c) {
    return (v && typeof v === "object" && "value" in v) ? Object.assign({}, v, {value: c}) : c;
  }
  function recolourModel(m, theme) {
    var props = m.properties;
    if (!props) return;
    var saved = originals.get(m);
    var changes = null;
    Object.keys(props).forEach(function (p) {
      if (!/_color$/.test(p)) return;
      var v;
      try { v = m[p]; } catch (e) { return; }
      var c = colourOf(v);
      var base = saved && saved[p];
      if (base === undefined) {
        if (c === null || !(c.toLowerCase() in lightToDark)) return;
        if (!saved) { saved = {}; originals.set(m, saved); }
        saved[p] = base = c;
      }
      var want = theme === "dark" ? lightToDark[base.toLowerCase()] : base;
      if (c !== want) { (changes = changes || {})[p] = withColour(v, want); }
    });
    // {sync: false}: a theme is a view of the page, never sent back to a server session
    if (changes) { try { m.setv(changes, {sync: false}); } catch (e) { /* a read-only property: leave it */ } }
  }
  function eachModel(fn) {
    if (!window.Bokeh || !Bokeh.documents) return;
    Bokeh.documents.forEach(function (doc) { doc.all_models.forEach(fn); });
  }
  function recolourAll() {
    var theme = currentTheme();
    eachModel(function (m) { recolourModel(m, theme); });
  }
  function updateToggle() {
    var dark = currentTheme() === "dark";
    document.querySelectorAll(".lp-theme-toggle").forEach(function (b) {
      // the button names the theme a click gives (issue 33: it always read "Dark theme")
      var t = b.querySelector(".lp-theme-text");
      if (t) t.textContent = dark ? "Light theme" : "Dark theme";
      b.title = dark ? "Switch to the light theme" : "Switch to the dark theme";
    });
  }
  function setTheme(theme) {
    document.documentElement.setAttribute("data-theme", theme);
    try { localStorage.setItem(THEME_KEY, theme); } catch (e) { /* private mode: not remembered */ }
    updateToggle();
    recolourAll();
    window.dispatchEvent(new CustomEvent("lowprec-theme", {detail: {theme: theme}}));
  }
  window.lowprecSetTheme = setTheme;

  // ---------------------------------------------------------------- progress marks
  function readProgress() {
    try { return JSON.parse(localStorage.getItem(CFG.progressKey || "lowprec-progress") || "{}") || {}; }
    catch (e) { return {}; }
  }
  function ids(el, attr) { return (el.getAttribute(attr) || "").split(/\s+/).filter(Boolean); }
  function updateMarks() {
    var progress = readProgress();
    document.querySelectorAll(".lp-course li[data-lesson]").forEach(function (li) {
      var ex = ids(li, "data-exercises"), pr = ids(li, "data-predictions");
      var correct = ex.filter(function (k) { return progress[k] === "correct"; }).length;
      var answered = ex.concat(pr).filter(function (k) { return progress[k] !== undefined; }).length;
      var mark = li.querySelector(".lp-mark");
      if (!mark) return;
      var state = "", label = "not started", text = "";
      if (ex.length > 0 && correct === ex.length) {
        state = "done"; text = "✓"; label = "all " + ex.length + " exercises correct";
      } else if (answered > 0) {
        state = "part"; text = "◐";
        label = answered + " of " + (ex.length + pr.length) + " questions answered, " + correct + " of " +
          ex.length + " exercises correct";
      }
      mark.textContent = text;
      mark.setAttribute("data-mark", state);
      mark.setAttribute("aria-label", label);
      mark.title = label;
    });
  }
  window.addEventListener("storage", function (e) {
    if (e.key === null || e.key === (CFG.progressKey || "lowprec-progress")) updateMarks();
    if (e.key === THEME_KEY && (e.newValue === "dark" || e.newValue === "light")) {
      document.documentElement.setAttribute("data-theme", e.newValue); updateToggle(); recolourAll();
    }
  });
  window.addEventListener("lowprec-progress", updateMarks);
  document.addEventListener("lowprec-progress", updateMarks);

  // ---------------------------------------------------------------- anchors inside shadow DOM
  function findDeep(id, root) {
    root = root || document;
    var hit = root.getElementById ? root.getElementById(id) : root.querySelector("#" + CSS.escape(id));
    if (hit) return hit;
    var all = root.querySelectorAll("*");
    for (var i = 0; i < all.length; i++) {
      if (all[i].shadowRoot) {
        var found = findDeep(id, all[i].shadowRoot);
        if (found) return found;
      }
    }
    return null;
  }
  function jump(id, focus) {
    var target = findDeep(id);
    if (!target) return false;
    target.scrollIntoView({block: "start"});
    window.scrollBy(0, -56);  // below the sticky top bar
    if (focus) {
      if (!target.hasAttribute("tabindex")) target.setAttribute("tabindex", "-1");
      try { target.focus({preventScroll: true}); } catch (e) { /* not focusable */ }
    }
    return true;
  }
  window.lowprecJump = jump;
  document.addEventListener("click", function (e) {
    var path = e.composedPath ? e.composedPath() : [e.target];
    for (var i = 0; i < path.length; i++) {
      var a = path[i];
      if (a && a.tagName === "A" && a.getAttribute) {
        var h = a.getAttribute("href") || "";
        var url;
        try { url = new URL(a.href, location.href); } catch (err) { return; }
        if (!url.hash || url.pathname !== location.pathname || url.search !== location.search) return;
        var id = decodeURIComponent(url.hash.slice(1));
        if (id === "lp-main") return;  // the skip link: native behaviour
        if (jump(id, true)) {
          e.preventDefault();
          history.replaceState(null, "", url.hash);
        }
        return h && false;
      }
    }
  }, true);
  window.addEventListener("hashchange", function () {
    if (location.hash.length > 1) jump(decodeURIComponent(location.hash.slice(1)), true);
  });

  // ---------------------------------------------------------------- plot text alternatives
  function walkViews(view, fn, depth) {
    if (!view || depth > 40) return;
    fn(view);
    var kids = [];
    try { kids = view.child_views || []; } catch (e) { kids = []; }
    for (var i = 0; i < kids.length; i++) walkViews(kids[i], fn, depth + 1);
  }
  function labelPlots() {
    if (!window.Bokeh || !Bokeh.index) return;
    Object.keys(Bokeh.index).forEach(function (k) {
      walkViews(Bokeh.index[k], function (v) {
        var m = v.model;
        if (!m || !v.el || !m.tags) return;
        var alt = null;
        m.tags.forEach(function (t) { if (t && typeof t === "object" && typeof t.alt === "string") alt = t.alt; });
        if (alt && v.el.getAttribute("aria-label") !== alt) {
          v.el.setAttribute("role", "img");
          v.el.setAttribute("aria-label", alt);
        }
      }, 0);
    });
  }

  // ---------------------------------------------------------------- names for unnamed controls
  // Bokeh's slider handles and number spinners come without accessible names; give them the
  // widget's own label ("history", "Increase seed").
  function eachShadowRoot(fn) {
    var walk = function (root) {
      var all = root.querySelectorAll("*");
      for (var i = 0; i < all.length; i++) {
        if (all[i].shadowRoot) { fn(all[i].shadowRoot); walk(all[i].shadowRoot); }
      }
    };
    walk(document);
  }
  function titleIn(root) {
    var t = root.querySelector(".bk-slider-title, label");
    var text = t ? (t.textContent || "").trim() : "";
    return text.replace(/:\s*[^:]*$/, "").replace(/\s+/g, " ") || "value";
  }
  function labelControls() {
    eachShadowRoot(function (root) {
      root.querySelectorAll('[role="slider"]:not([aria-label])').forEach(function (el) {
        el.setAttribute("aria-label", titleIn(root));
      });
      root.querySelectorAll('input[type="checkbox"]:not([aria-label]), input[type="radio"]:not([aria-label])').forEach(function (el) {
        var text = ((el.parentElement && el.parentElement.textContent) || "").trim() || titleIn(root);
        el.setAttribute("aria-label", text);
      });
      var name = null;
      root.querySelectorAll(".bk-spin-btn-up:not([aria-label]), .bk-spin-btn-down:not([aria-label])").forEach(function (el) {
        name = name || titleIn(root);
        el.setAttribute("aria-label", (el.classList.contains("bk-spin-btn-up") ? "Increase " : "Decrease ") + name);
        el.setAttribute("title", el.getAttribute("aria-label"));
      });
    });
  }

  // ---------------------------------------------------------------- keep keyboard focus
  // A Bokeh button redraws itself when its label changes (a bit toggle flipped with the space bar),
  // and the focus would fall back to the page: put it back on the redrawn button.
  // (Focus events do not reach the document while focus moves inside shadow trees, so the focused
  // element is sampled.)
  var focusHost = null, focusAt = 0;
  function deepActive() {
    var a = document.activeElement;
    while (a && a.shadowRoot && a.shadowRoot.activeElement) a = a.shadowRoot.activeElement;
    return a;
  }
  function watchFocus() {
    var a = deepActive();
    if (a && a.tagName === "BUTTON") {
      var root = a.getRootNode && a.getRootNode();
      var host = root && root.host;
      if (host && host.classList && (host.classList.contains("bk-Toggle") || host.classList.contains("bk-Button"))) {
        focusHost = host; focusAt = Date.now(); return;
      }
    }
    if (a && a !== document.body && a !== document.documentElement) { focusHost = null; return; }
    restoreFocus();
  }
  setInterval(watchFocus, 150);
  window.lowprecFocusState = function () {
    return {host: !!focusHost, connected: !!(focusHost && focusHost.isConnected), age: Date.now() - focusAt};
  };
  function restoreFocus() {
    if (!focusHost || !focusHost.isConnected || Date.now() - focusAt > 4000) return;
    var button = focusHost.shadowRoot && focusHost.shadowRoot.querySelector("button");
    if (button) { try { button.focus({preventScroll: true}); } catch (e) { /* gone */ } }
  }

  // ---------------------------------------------------------------- exported pages: compact states
  // The export writes, per live control, the final value of every Bokeh property its values change
  // (a JSON patch per value, in <script id="lp-offline">); choosing a value applies its patch.
  var offline = null;
  function offlineConfig() {
    if (offline === null) {
      var el = document.getElementById("lp-offline");
      try { offline = el ? JSON.parse(el.textContent) : {}; } catch (e) { offline = {}; }
    }
    return offline;
  }
  window.lowprecOffline = {
    config: offlineConfig,
    apply: function (control) {
      var entry = (offlineConfig().states || {})[control.id];
      if (!entry) return false;
      var value = control.value;
      var key = typeof value === "string" ? value : JSON.stringify(value);
      var patch = entry.states[key];
      if (!patch) return false;
      var doc = control.document || (window.Bokeh && Bokeh.documents[0]);
      doc.apply_json_patch(patch);
      schedule();
      return true;
    }
  };

  // ---------------------------------------------------------------- start
  var pending = null;
  function refresh() {
    pending = null;
    recolourAll();
    labelPlots();
    labelControls();
  }
  function schedule() { if (!pending) pending = setTimeout(refresh, 60); }
  window.lowprecRefresh = schedule;
  var watched = new WeakSet();
  function watchDocs() {
    if (!window.Bokeh || !Bokeh.documents) return false;
    Bokeh.documents.forEach(function (doc) {
      if (watched.has(doc)) return;
      watched.add(doc);
      try { doc.on_change(function () { schedule(); }); } catch (e) { /* older BokehJS */ }
    });
    return Bokeh.documents.length > 0;
  }
  function start() {
    document.querySelectorAll(".lp-theme-toggle").forEach(function (b) {
      b.addEventListener("click", function () { setTheme(currentTheme() === "dark" ? "light" : "dark"); });
    });
    updateToggle();
    updateMarks();
    var box = document.querySelector(".lp-nav-box");
    if (box && window.matchMedia && matchMedia("(max-width: 960px)").matches) box.open = false;
    var tries = 0;
    var timer = setInterval(function () {
      tries += 1;
      var ready = watchDocs() && Bokeh.index && Object.keys(Bokeh.index).length > 0;
      if (ready) {
        refresh();
        if (location.hash.length > 1 && tries < 200) jump(decodeURIComponent(location.hash.slice(1)), false);
      }
      if ((ready && tries > 20) || tries > 600) clearInterval(timer);
    }, 100);
    if (window.matchMedia) {
      var mq = matchMedia("(prefers-color-scheme: dark)");
      var follow = function (e) {
        var saved = null;
        try { saved = localStorage.getItem(THEME_KEY); } catch (err) { saved = null; }
        if (saved !== "dark" && saved !== "light") {
          document.documentElement.setAttribute("data-theme", e.matches ? "dark" : "light");
          updateToggle(); recolourAll();
        }
      };
      if (mq.addEventListener) mq.addEventListener("change", follow);
    }
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
