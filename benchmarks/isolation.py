"""Session isolation (issue 16): while three sessions run the heaviest request a page allows, how
fast does a fourth session's BinExplorer answer, and how fast does a new visitor's page load?

A `lowprec serve` on a free port; headless Chromium (Debian's, through Playwright, as the browser
tests) opens three AttentionRounding pages at the page budget's edge (`HEAVY`: stochastic rounding,
estimated just under `config.APP_BUDGET`) and, every `RELOAD_S`, gives each a new seed through its
seed control (a new heavy run in the same session, as a user changing a control would), so the
workers never idle; meanwhile a fourth page types values into BinExplorer (each in another
binade, so every reply changes the plot) and times each reply (from Enter to the new plot data in
the page), and fresh BinExplorer pages are loaded and timed until ready as `layout.PAGE_READY_JS`
says (as the page bench: rendered, and no widget in the window still waiting to be built). The
browser runs on the same cores as the server (it renders the heavy pages' plots too). Figures: p50/p95/max of the update, the page loads, the
machine's load average and cores. `baseline=True` serves with `LOWPREC_APP_INLINE=1` (every run on
the event loop, as before) for comparison. Targets: update p95 ≤ 0.5 s, page load ≤ 3 s.

`lowprec bench isolation` runs `run`; `python -m lowprec.benchmarks.isolation [--quick] [--baseline]`
prints its figures as JSON, and with `--upload [--mb=N]` those of `run_upload`. It drives the app, so
it is one of the benchmarks that may import `lowprec.app` (`APP_BENCHMARKS` in
tests/test_import_graph.py); `python -m lowprec.app.bench_isolation` is an alias.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from typing import Any

from lowprec.app.layout import PAGE_READY_JS
from lowprec.app.work import INLINE_ENV
from lowprec.config import APP_BUDGET

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
#: the heaviest request class a page accepts: stochastic attention just under APP_BUDGET's 2 s
HEAVY = {"seq": 256, "trials": 600, "rounding": "stochastic"}
RELOAD_S = 2.0
UPDATE_TARGET_S = 0.5
PAGE_TARGET_S = 3.0

_X_DATA = """() => { for (const doc of Bokeh.documents) for (const m of doc.all_models) {
  const d = m.data; if (!d || typeof d !== 'object') continue;
  const get = (k) => d instanceof Map ? d.get(k) : d[k];
  if (get('x') !== undefined && get('interval') !== undefined) return JSON.stringify(Array.from(get('x')));
} return null; }"""
#: sets the AttentionRounding page's seed control (the Bokeh model titled "seed") to `seed`
_SET_SEED = """(seed) => { for (const doc of Bokeh.documents) for (const m of doc.all_models) {
  if (typeof m.title === 'string' && m.title.trim().toLowerCase() === 'seed' && 'value' in m) { m.value = seed; return true; }
} return false; }"""


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def run(quick: bool = False, baseline: bool = False) -> dict[str, float | str]:
    import playwright.sync_api as pw

    from lowprec.config import from_mapping
    from lowprec.simulations.studies.attention import AttentionConfig

    heavy_cost = from_mapping(AttentionConfig, HEAVY).cost()
    assert APP_BUDGET.allows(heavy_cost), "HEAVY must be inside the page budget"
    env = dict(os.environ, **({INLINE_ENV: "1"} if baseline else {}))
    from lowprec.app.serving import serve_and_wait

    server = serve_and_wait(env=env, timeout_s=90)
    url = server.url
    updates: list[float] = []
    loads: list[float] = []
    n_updates = 10 if quick else 30
    n_loads = 3 if quick else 6
    try:
        with pw.sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            context = browser.new_context()
            context.set_default_timeout(180_000)  # a loaded machine: report slow, do not crash
            context.set_default_navigation_timeout(180_000)
            light = context.new_page()
            light.goto(url + "/widget/BinExplorer")
            light.wait_for_function(PAGE_READY_JS, timeout=120_000)
            heavy = [context.new_page() for _ in range(3)]
            query = "&".join(f"{k}={v}" for k, v in HEAVY.items())
            for page in heavy:
                page.goto(f"{url}/widget/AttentionRounding?{query}")
            for page in heavy:
                page.wait_for_function(PAGE_READY_JS, timeout=120_000)
            seed = 0

            def reload_heavy() -> None:
                nonlocal seed
                for page in heavy:
                    seed += 1
                    if not page.evaluate(_SET_SEED, seed):
                        raise RuntimeError("no seed control on the AttentionRounding page")

            reload_heavy()
            time.sleep(RELOAD_S)  # the heavy runs are under way
            last_reload = time.monotonic()
            box = light.get_by_placeholder("3.3, 1e-3, -0, inf, nan, 0x1.8p3")
            load_avg_start = os.getloadavg()[0]
            for i in range(n_updates):
                if time.monotonic() - last_reload > RELOAD_S:
                    reload_heavy()
                    last_reload = time.monotonic()
                before = light.evaluate(_X_DATA)
                box.fill(repr(1.37 * 2.0 ** (i % 12 - 6)))  # consecutive values: different binades
                t0 = time.perf_counter()
                box.press("Enter")
                light.wait_for_function(f"() => ({_X_DATA})() !== {before!r}", timeout=120_000, polling=10)
                updates.append(time.perf_counter() - t0)
                if i % max(1, n_updates // n_loads) == 0 and len(loads) < n_loads:
                    fresh = context.new_page()
                    t0 = time.perf_counter()
                    fresh.goto(url + "/widget/BinExplorer")
                    fresh.wait_for_function(PAGE_READY_JS, timeout=120_000, polling=10)
                    loads.append(time.perf_counter() - t0)
                    fresh.close()
            load_avg_end = os.getloadavg()[0]
            browser.close()
    finally:
        server.close()
    return {
        "mode": "inline (baseline)" if baseline else "worker processes",
        "heavy_request": ", ".join(f"{k}={v}" for k, v in HEAVY.items()) + f" (estimate {heavy_cost.describe()})",
        "update_p50_s": round(statistics.median(updates), 3),
        "update_p95_s": round(_percentile(updates, 0.95), 3),
        "update_max_s": round(max(updates), 3),
        "updates": len(updates),
        "page_load_median_s": round(statistics.median(loads), 3),
        "page_load_max_s": round(max(loads), 3),
        "page_loads": len(loads),
        "update_within_target": "yes" if _percentile(updates, 0.95) <= UPDATE_TARGET_S else "NO",
        "page_load_within_target": "yes" if max(loads) <= PAGE_TARGET_S else "NO",
        "load_average_1min": f"{load_avg_start:.1f} → {load_avg_end:.1f}",
        "cores": str(os.cpu_count()),
    }


#: the upload scenario (issue 33): one session uploads a large checkpoint to the RecipeLab
UPLOAD_MB = 200


def run_upload(size_mb: float = UPLOAD_MB, quick: bool = False) -> dict[str, float | str]:
    """While one session's RecipeLab analyses an uploaded `.npy` of `size_mb` MB (float32, 4096
    columns), another session's BinExplorer replies are timed (from Enter to the new plot data), as
    `run` times them next to heavy simulations. Before issue 33 the upload was read and analysed
    on the event loop and every other session waited for it. Figures: the upload's size, the time
    from choosing the file to its arrival on the server (its copy in the lab's upload folder) and to
    its table on screen, p50/p95/max of the other tab's replies in each phase — while the browser
    sends the file (the sending tab, the server receiving it and the timed tab share the cores) and
    while the server analyses it, which the target is about — and the load."""
    import tempfile

    import numpy as np
    import playwright.sync_api as pw

    from lowprec.app.serving import serve_and_wait

    import glob
    import threading

    rows = max(1, int(size_mb * 1e6 / 4 / 4096))
    updates: list[tuple[float, float]] = []  # (sent at, seconds after the upload began; reply time)
    arrived: list[float] = []  # when the upload's copy appeared in the lab's upload folder
    from lowprec.app.widgets.recipe_lab import UPLOAD_FOLDER_PREFIX

    pattern = os.path.join(tempfile.gettempdir(), UPLOAD_FOLDER_PREFIX + "*", "upload-*")
    before_upload = set(glob.glob(pattern))
    watching = threading.Event()
    with tempfile.TemporaryDirectory() as tmp, serve_and_wait(timeout_s=120) as server:
        path = os.path.join(tmp, "bench-upload.npy")
        np.save(path, np.random.default_rng(0).standard_normal((rows, 4096), dtype=np.float32))
        size = os.path.getsize(path)
        with pw.sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            context = browser.new_context()
            context.set_default_timeout(600_000)
            lab = context.new_page()
            lab.goto(server.url + "/widget/RecipeLab")
            lab.wait_for_function(PAGE_READY_JS, timeout=180_000)
            light = context.new_page()
            light.goto(server.url + "/widget/BinExplorer")
            light.wait_for_function(PAGE_READY_JS, timeout=180_000)
            box = light.get_by_placeholder("3.3, 1e-3, -0, inf, nan, 0x1.8p3")
            load_avg_start = os.getloadavg()[0]
            t_upload = time.perf_counter()

            def watch() -> None:  # the server moves a complete upload into the lab's upload folder
                while not watching.is_set() and not arrived:
                    if set(glob.glob(pattern)) - before_upload:
                        arrived.append(time.perf_counter() - t_upload)
                    time.sleep(0.05)

            threading.Thread(target=watch, daemon=True).start()
            lab.locator("input[type=file]").first.set_input_files(path)
            done = "() => document.body.innerText.includes('bench-upload.npy') && " \
                   "!document.body.innerText.includes('Computing')"
            i = 0
            while True:
                if lab.evaluate("() => { const walk = (r) => { for (const el of r.querySelectorAll('*')) {"
                                " if (el.textContent && el.textContent.includes('bench-upload.npy') &&"
                                " el.classList && el.classList.contains('slick-cell')) return true;"
                                " if (el.shadowRoot && walk(el.shadowRoot)) return true; } return false; };"
                                " return walk(document); }"):
                    break
                if time.perf_counter() - t_upload > 900:
                    raise RuntimeError("the upload's table did not appear within 15 minutes")
                before = light.evaluate(_X_DATA)
                box.fill(repr(1.37 * 2.0 ** (i % 12 - 6)))
                t0 = time.perf_counter()
                box.press("Enter")
                light.wait_for_function(f"() => ({_X_DATA})() !== {before!r}", timeout=120_000, polling=10)
                updates.append((t0 - t_upload, time.perf_counter() - t0))
                i += 1
                if quick and i >= 10:
                    lab.wait_for_function(done, timeout=900_000, polling=200)
                    break
            analysed = time.perf_counter() - t_upload
            watching.set()
            load_avg_end = os.getloadavg()[0]
            browser.close()
    out: dict[str, float | str] = {
        "upload_mb": round(size / 1e6, 1), "upload_to_table_s": round(analysed, 1), "other_tab_updates": len(updates),
        "load_average_1min": f"{load_avg_start:.1f} → {load_avg_end:.1f}", "cores": str(os.cpu_count())}
    if arrived:
        out["upload_arrived_s"] = round(arrived[0], 1)
    cut = arrived[0] if arrived else 0.0  # unseen arrival: every reply counts as "while analysed"
    phases = {"during_transfer": [r for t, r in updates if t < cut], "while_analysed": [r for t, r in updates if t >= cut]}
    for phase, replies in phases.items():
        if replies:
            out.update({f"other_tab_{phase}_p50_s": round(statistics.median(replies), 3),
                        f"other_tab_{phase}_p95_s": round(_percentile(replies, 0.95), 3),
                        f"other_tab_{phase}_max_s": round(max(replies), 3)})
    analysed_replies = phases["while_analysed"]
    if analysed_replies:
        out["other_tab_within_target"] = "yes" if max(analysed_replies) <= UPDATE_TARGET_S else "NO"
    return out


def main(argv: list[str] | None = None) -> int:
    """The command line: `--upload [--mb=N]` for `run_upload`, else `run`; `--quick`, `--baseline`."""
    import json

    args = sys.argv[1:] if argv is None else argv
    if "--upload" in args:
        mb = next((float(a.split("=", 1)[1]) for a in args if a.startswith("--mb=")), UPLOAD_MB)
        print(json.dumps(run_upload(mb, quick="--quick" in args), indent=1))
    else:
        print(json.dumps(run(quick="--quick" in args, baseline="--baseline" in args), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
