"""Recipe-lab throughput (`lowprec bench analyze`): `lowprec analyze` over a generated sharded
safetensors checkpoint (1 GiB; 64 MiB with --quick) under the default recipes, serial against
`--workers 2`, in elements per second and MB/s of checkpoint, with the peak resident memory.

The checkpoint is written here, shard by shard (at most one shard in memory), by a plain writer of the
safetensors layout (8-byte little-endian header length, the JSON header, the data), so the lab's
reader (which validates through the `safetensors` package) reads a file it did not write. Half of
the bytes are FP32 tensors, half BF16, 4096 columns wide: Student-t (4 dof) values of standard
deviation 0.02 with every 97th column ×20 (outlier channels). Each configuration runs as a fresh
process (`python -m lowprec.app.cli analyze … --quiet --json OUT`), serial and `--workers 2`
interleaved (A, B, A, B) so machine load hits both alike; the figure is the median wall time; peak
RSS is `os.wait4`'s ru_maxrss of the run, taken by a small launcher process (see `_LAUNCHER`). The two reports must
be identical (checked). The memory bound of the issue — at most 3 × the largest tensor over the
baseline — is reported as met or not. The baseline is a run on a one-tensor file of 2 × 32768
float32 (256 KiB): big enough (≥ `codec.FAST_MIN` elements) that it loads what every real run loads,
the compiled kernels with numba and LLVM (about 110 MiB); a 16-element file takes the numpy path
and would leave that out of the baseline and count it against the tensors.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np

GIB = 1 << 30
COLS = 4096
ROWS = 2048  # rows per tensor: 32 MiB as FP32, 16 MiB as BF16
SHARD_BYTES = 256 << 20


def write_safetensors(path: Path, tensors: dict[str, np.ndarray]) -> None:
    """The safetensors layout, written directly (F32, BF16)."""
    codes = {np.dtype(np.float32): "F32", np.dtype(ml_dtypes.bfloat16): "BF16"}
    header: dict[str, Any] = {}
    offset = 0
    for name, arr in tensors.items():
        n = arr.nbytes
        header[name] = {"dtype": codes[arr.dtype], "shape": list(arr.shape), "data_offsets": [offset, offset + n]}
        offset += n
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as fh:
        fh.write(len(text).to_bytes(8, "little"))
        fh.write(text)
        for arr in tensors.values():
            fh.write(np.ascontiguousarray(arr).tobytes())


def make_checkpoint(folder: Path, total_bytes: int, seed: int = 0) -> dict[str, Any]:
    """Shards `model-XXXXX.safetensors` of about SHARD_BYTES holding `total_bytes` of tensors."""
    rng = np.random.default_rng(seed)
    written = elements = largest = 0
    shard: dict[str, np.ndarray] = {}
    shard_bytes = n_shards = i = 0

    def flush() -> None:
        nonlocal shard, shard_bytes, n_shards
        if shard:
            n_shards += 1
            write_safetensors(folder / f"model-{n_shards:05d}.safetensors", shard)
            shard, shard_bytes = {}, 0

    while written < total_bytes:
        x = rng.standard_t(4, size=(ROWS, COLS)).astype(np.float32) * np.float32(0.02 / np.sqrt(2.0))
        x[:, ::97] *= np.float32(20.0)
        arr = x if i % 3 == 0 else x.astype(ml_dtypes.bfloat16)  # byte-wise: half FP32, half BF16
        name = f"layers.{i}.{'mlp.up_proj' if arr.dtype == np.float32 else 'self_attn.o_proj'}.weight"
        shard[name] = arr
        shard_bytes += arr.nbytes
        written += arr.nbytes
        elements += arr.size
        largest = max(largest, arr.nbytes)
        i += 1
        if shard_bytes >= SHARD_BYTES:
            flush()
    flush()
    return {"bytes": written, "elements": elements, "tensors": i, "shards": n_shards, "largest_tensor_bytes": largest}


#: starts a command and prints its peak RSS (KiB). Through this small launcher, because a child's
#: ru_maxrss starts at the RSS of the process that forked it (Linux keeps the high-water mark across
#: exec): forked from this benchmark, which holds the generated tensors, every child would report
#: at least the benchmark's own size.
_LAUNCHER = ("import os, subprocess, sys\n"
             "p = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL)\n"
             "_, status, usage = os.wait4(p.pid, 0)\n"
             "print(usage.ru_maxrss)\n"
             "sys.exit(os.waitstatus_to_exitcode(status))\n")


def _run_once(argv: list[str]) -> tuple[float, float]:
    """(wall seconds, peak RSS in MiB) of one run of `argv`; RuntimeError if it fails."""
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", _LAUNCHER, *argv], capture_output=True, text=True,
                          cwd=tempfile.gettempdir(), check=False)
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed (exit {proc.returncode}): {proc.stderr[-500:]}")
    return seconds, int(proc.stdout.split()[-1]) / 1024


def _analyze(paths: list[str], out: Path, workers: int) -> list[str]:
    return [sys.executable, "-m", "lowprec.app.cli", "analyze", *paths, "--quiet", "--json", str(out),
            "--workers", str(workers)]


def run(quick: bool = False, total_bytes: int | None = None, repeats: int | None = None) -> dict[str, Any]:
    """Figures of the serial and 2-worker runs over a generated checkpoint (see the module docstring)."""
    size = total_bytes if total_bytes is not None else (64 << 20 if quick else GIB)
    reps = repeats if repeats is not None else (2 if quick else 1)
    with tempfile.TemporaryDirectory(prefix="lowprec-bench-analyze-") as tmp:
        folder = Path(tmp)
        ckpt = folder / "ckpt"
        ckpt.mkdir()
        start = time.perf_counter()
        info = make_checkpoint(ckpt, size)
        made_s = time.perf_counter() - start
        tiny = folder / "tiny.safetensors"
        write_safetensors(tiny, {"x": np.ones((2, 1 << 15), np.float32)})  # compiled path: see the docstring
        base_s, base_mib = _run_once(_analyze([str(tiny)], folder / "tiny.json", 1))
        paths = [str(ckpt / "model-*.safetensors")]
        times: dict[int, list[float]] = {1: [], 2: []}
        rss: dict[int, list[float]] = {1: [], 2: []}
        for _ in range(reps):
            for workers in (1, 2):
                s, m = _run_once(_analyze(paths, folder / f"w{workers}.json", workers))
                times[workers].append(s)
                rss[workers].append(m)
        same = (folder / "w1.json").read_bytes() == (folder / "w2.json").read_bytes()
        recipes = len(json.loads((folder / "w1.json").read_text())["recipes"])
    serial, pool = statistics.median(times[1]), statistics.median(times[2])
    largest_mib = info["largest_tensor_bytes"] / (1 << 20)
    bound = base_mib + 3 * largest_mib
    peak_serial, peak_pool = max(rss[1]), max(rss[2])
    return {
        "checkpoint_mib": round(info["bytes"] / (1 << 20), 1),
        "elements": info["elements"],
        "tensors": info["tensors"],
        "shards": info["shards"],
        "recipes": recipes,
        "generate_s": round(made_s, 1),
        "runs_each": reps,
        "serial_s": round(serial, 2),
        "workers2_s": round(pool, 2),
        "serial_elements_per_s": round(info["elements"] / serial),
        "workers2_elements_per_s": round(info["elements"] / pool),
        "serial_mb_per_s": round(info["bytes"] / 1e6 / serial, 2),
        "workers2_mb_per_s": round(info["bytes"] / 1e6 / pool, 2),
        "speedup_workers2": round(serial / pool, 2),
        "reports_identical": "yes" if same else "NO",
        "baseline_s": round(base_s, 2),
        "baseline_peak_rss_mib": round(base_mib, 1),
        "serial_peak_rss_mib": round(peak_serial, 1),
        "workers2_peak_rss_mib": round(peak_pool, 1),
        "largest_tensor_mib": round(largest_mib, 1),
        "memory_bound_mib": round(bound, 1),
        "within_memory_bound": "yes" if max(peak_serial, peak_pool) <= bound else "NO",
        "load_average_1min": round(os.getloadavg()[0], 2),
        "cpu_count": os.cpu_count(),
    }


if __name__ == "__main__":
    for key, value in run(quick="--quick" in sys.argv).items():
        print(f"{key}: {value}")
