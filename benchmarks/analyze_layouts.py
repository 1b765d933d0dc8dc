"""Recipe-lab throughput on pre-quantized checkpoints (`lowprec bench analyze_layouts`, issue 30
item 6): the float checkpoint of `benchmarks.analyze` (1 GiB; 64 MiB with --quick) written by
`lowprec quantize` in each layout, then `lowprec analyze` (default recipes) over each written
checkpoint and over the float source, serial and with `--workers 2` (not with --quick),
interleaved (float, layout 1, layout 2 … repeated) so machine load hits them alike. Figures per layout: the write-back's wall time, the stored size, the median
analysis time, its ratio to the float source's median in the same run (the reader's dequantization
and the audit cost on top of the same recipes over the same shapes), elements per second, CPU time
and peak RSS (`benchmarks.analyze`'s launcher). Each analysis of a written checkpoint must find every
weight stored in its layout (checked: the JSON report's `layout` of each tensor)."""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from lowprec.benchmarks.analyze import GIB, _analyze, _run_measured, make_checkpoint

#: (layout, the recipe written into it): one per layout, the one its producer ships
LAYOUTS: tuple[tuple[str, str], ...] = (
    ("deepseek_fp8", "fp8_128x128_ue8m0"),
    ("gptoss_mxfp4", "mxfp4"),
    ("modelopt_nvfp4", "nvfp4"),
    ("compressed_tensors_fp8", "e4m3_row"),
)


def _quantize(paths: list[str], layout: str, recipe: str, out: Path) -> list[str]:
    return [sys.executable, "-m", "lowprec.app.cli", "quantize", *paths, "--recipe", recipe, "--layout", layout,
            "-o", str(out), "--quiet"]


def _dir_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.glob("*.safetensors"))


def run(quick: bool = False, total_bytes: int | None = None, repeats: int | None = None,
        workers2: bool | None = None) -> dict[str, Any]:
    """Figures per layout (see the module docstring)."""
    load_start = os.getloadavg()[0]
    size = total_bytes if total_bytes is not None else (64 << 20 if quick else GIB)
    reps = repeats if repeats is not None else (1 if quick else 3)
    pool = (not quick) if workers2 is None else workers2
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="lowprec-bench-layouts-") as tmp:
        folder = Path(tmp)
        ckpt = folder / "float"
        ckpt.mkdir()
        info = make_checkpoint(ckpt, size)
        src = [str(ckpt / "model-*.safetensors")]
        out.update({"float_mib": round(info["bytes"] / (1 << 20), 1), "elements": info["elements"],
                    "tensors": info["tensors"], "runs_each": reps})
        configs: dict[str, list[str]] = {"float": _analyze(src, folder / "float.json", 1)}
        for layout, recipe in LAYOUTS:
            dest = folder / layout
            start = time.perf_counter()
            _, q_mib, q_cpu = _run_measured(_quantize(src, layout, recipe, dest))
            q_s = time.perf_counter() - start
            out.update({f"{layout}_recipe": recipe, f"{layout}_quantize_s": round(q_s, 2),
                        f"{layout}_quantize_mb_per_s": round(info["bytes"] / 1e6 / q_s, 1),
                        f"{layout}_quantize_peak_rss_mib": round(q_mib, 1),
                        f"{layout}_stored_mib": round(_dir_bytes(dest) / (1 << 20), 1)})
            configs[layout] = _analyze([str(dest)], folder / f"{layout}.json", 1)
            if pool:
                configs[f"{layout}_workers2"] = _analyze([str(dest)], folder / f"{layout}_workers2.json", 2)
        runs: dict[str, list[tuple[float, float, float]]] = {name: [] for name in configs}
        for _ in range(reps):
            for name, argv in configs.items():
                runs[name].append(_run_measured(argv))
        for layout, _recipe in LAYOUTS:
            rep = json.loads((folder / f"{layout}.json").read_text(encoding="utf-8"))
            stored = [t.get("layout") for t in rep["tensors"]]
            out[f"{layout}_all_read_in_layout"] = "yes" if stored and all(s == layout for s in stored) else "NO"
            if pool:
                same = (folder / f"{layout}.json").read_bytes() == (folder / f"{layout}_workers2.json").read_bytes()
                out[f"{layout}_workers2_report_identical"] = "yes" if same else "NO"
    wall = {name: statistics.median(r[0] for r in rs) for name, rs in runs.items()}
    cpu = {name: statistics.median(r[2] for r in rs) for name, rs in runs.items()}
    peak = {name: max(r[1] for r in rs) for name, rs in runs.items()}
    out.update({"float_analyze_s": round(wall["float"], 2), "float_cpu_s": round(cpu["float"], 2),
                "float_elements_per_s": round(info["elements"] / wall["float"]),
                "float_peak_rss_mib": round(peak["float"], 1)})
    for layout, _recipe in LAYOUTS:
        out.update({f"{layout}_analyze_s": round(wall[layout], 2), f"{layout}_cpu_s": round(cpu[layout], 2),
                    f"{layout}_elements_per_s": round(info["elements"] / wall[layout]),
                    f"{layout}_vs_float": round(wall[layout] / wall["float"], 2),
                    f"{layout}_cpu_vs_float": round(cpu[layout] / cpu["float"], 2),
                    f"{layout}_peak_rss_mib": round(peak[layout], 1)})
        if pool:
            w2 = f"{layout}_workers2"
            out.update({f"{w2}_analyze_s": round(wall[w2], 2), f"{w2}_elements_per_s": round(info["elements"] / wall[w2]),
                        f"{w2}_speedup": round(wall[layout] / wall[w2], 2), f"{w2}_peak_rss_mib": round(peak[w2], 1)})
    out.update({"load_average_1min_start": round(load_start, 2), "load_average_1min": round(os.getloadavg()[0], 2),
                "cpu_count": os.cpu_count()})
    return out


if __name__ == "__main__":
    for key, value in run(quick="--quick" in sys.argv).items():
        print(f"{key}: {value}")
