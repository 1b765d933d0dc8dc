"""Recipe-lab throughput (`lowprec bench analyze`): `lowprec analyze` over a generated sharded
safetensors checkpoint (1 GiB; 64 MiB with --quick) under the default recipes, serial against
`--workers 2`, in elements per second and MB/s of checkpoint, with the peak resident memory and the
CPU time — and, side by side in the same run, the lab as it was before its compiled kernels (issue
30 item 6), whose report must be the same bytes.

The checkpoint is written here, shard by shard (at most one shard in memory), by a plain writer of the
safetensors layout (8-byte little-endian header length, the JSON header, the data), so the lab's
reader (which validates through the `safetensors` package) reads a file it did not write. Half of
the bytes are FP32 tensors, half BF16, 4096 columns wide: Student-t (4 dof) values of standard
deviation 0.02 with every 97th column ×20 (outlier channels). Each configuration runs as a fresh
process (`python -m lowprec.app.cli analyze … --quiet --json OUT`), serial, `--workers 2` and the
reference interleaved (A, B, C, A, B, C …) so machine load hits them alike; the figure is the median
wall time; peak RSS is `os.wait4`'s ru_maxrss of the run and CPU time its user + system time, taken
by a small launcher process (see `_LAUNCHER`). The reports must be identical (checked: serial,
2 workers and the reference). The memory bound of the issue — at most 3 × the largest tensor over the
baseline — is reported as met or not. The baseline is a run on a one-tensor file of 2 × 32768
float32 (256 KiB): big enough (≥ `codec.FAST_MIN` elements) that it loads what every real run loads,
the compiled kernels with numba and LLVM (about 110 MiB); a 16-element file takes the numpy path
and would leave that out of the baseline and count it against the tensors.

The reference (`LOWPREC_BENCH_REFERENCE`, default `REFERENCE`, the commit before the compiled
metrics; "none" skips it, and --quick skips it unless the variable names one) is another lowprec
source tree: a folder holding one (its `lowprec/` package is put first on PYTHONPATH) or a git
revision of this checkout, exported with `git archive` into a temporary folder. Where neither can be
had (an installed package, no git) the reference figures say why they are missing. Its figures:
`reference_s`, `speedup_vs_reference` (reference wall time / serial wall time, medians of the same
run), `cpu_speedup_vs_reference` (the same for CPU time, which machine load disturbs less).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any, Iterator

import ml_dtypes
import numpy as np

GIB = 1 << 30
COLS = 4096
ROWS = 2048  # rows per tensor: 32 MiB as FP32, 16 MiB as BF16
SHARD_BYTES = 256 << 20
#: the lab before its compiled metric kernels (issue 30 item 6): the default reference
REFERENCE = "981d4dc7e073b7ed113b569d4bde404c475d52e4"
REFERENCE_ENV = "LOWPREC_BENCH_REFERENCE"


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


#: starts a command and prints its peak RSS (KiB) and CPU seconds. Through this small launcher, because
#: a child's ru_maxrss starts at the RSS of the process that forked it (Linux keeps the high-water
#: mark across exec): forked from this benchmark, which holds the generated tensors, every child
#: would report at least the benchmark's own size.
_LAUNCHER = ("import os, subprocess, sys\n"
             "p = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL)\n"
             "_, status, usage = os.wait4(p.pid, 0)\n"
             "print(usage.ru_maxrss, usage.ru_utime + usage.ru_stime)\n"
             "sys.exit(os.waitstatus_to_exitcode(status))\n")


def _run_measured(argv: list[str], env: dict[str, str] | None = None) -> tuple[float, float, float]:
    """(wall seconds, peak RSS in MiB, CPU seconds) of one run of `argv`; RuntimeError if it fails."""
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", _LAUNCHER, *argv], capture_output=True, text=True,
                          cwd=tempfile.gettempdir(), check=False, env=env)
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed (exit {proc.returncode}): {proc.stderr[-500:]}")
    rss, cpu = proc.stdout.split()[-2:]
    return seconds, int(rss) / 1024, float(cpu)


def _run_once(argv: list[str]) -> tuple[float, float]:
    """(wall seconds, peak RSS in MiB) of one run of `argv`; RuntimeError if it fails."""
    seconds, mib, _ = _run_measured(argv)
    return seconds, mib


def _analyze(paths: list[str], out: Path, workers: int) -> list[str]:
    return [sys.executable, "-m", "lowprec.app.cli", "analyze", *paths, "--quiet", "--json", str(out),
            "--workers", str(workers)]


def _checkout_root() -> Path | None:
    """The root of the git checkout this lowprec runs from, or None."""
    here = Path(__file__).resolve().parent.parent
    try:
        out = subprocess.run(["git", "-C", str(here), "rev-parse", "--show-toplevel"], capture_output=True,
                             text=True, check=False, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    return Path(out.stdout.strip()) if out.returncode == 0 and out.stdout.strip() else None


@contextlib.contextmanager
def reference_tree(ref: str) -> Iterator[Path | str]:
    """A lowprec source tree for `ref` (a folder holding one, or a git revision of this checkout,
    exported to a temporary folder), or the reason there is none (a str)."""
    folder = Path(ref)
    if folder.is_dir():
        yield folder if (folder / "lowprec" / "__init__.py").is_file() else f"{ref} holds no lowprec/ package"
        return
    root = _checkout_root()
    if root is None:
        yield "not a git checkout (set LOWPREC_BENCH_REFERENCE to a lowprec source folder)"
        return
    tmp = Path(tempfile.mkdtemp(prefix="lowprec-bench-reference-"))
    try:
        archive = tmp / "tree.tar"
        with open(archive, "wb") as fh:
            done = subprocess.run(["git", "-C", str(root), "archive", "--format=tar", ref], stdout=fh,
                                  stderr=subprocess.PIPE, check=False, timeout=300)
        if done.returncode != 0:
            yield f"git archive {ref} failed: {done.stderr.decode(errors='replace').strip()[:200]}"
            return
        tree = tmp / "tree"
        with tarfile.open(archive) as tf:
            tf.extractall(tree, filter="tar")
        yield tree
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _reference_env(tree: Path) -> dict[str, str]:
    """The environment that makes `import lowprec` find the reference tree first."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(tree), *filter(None, [env.get("PYTHONPATH", "")])])
    return env


def run(quick: bool = False, total_bytes: int | None = None, repeats: int | None = None,
        reference: str | None = None) -> dict[str, Any]:
    """Figures of the serial and 2-worker runs over a generated checkpoint, and of the reference
    (see the module docstring; `reference` overrides LOWPREC_BENCH_REFERENCE)."""
    load_start = os.getloadavg()[0]
    size = total_bytes if total_bytes is not None else (64 << 20 if quick else GIB)
    reps = repeats if repeats is not None else (2 if quick else 1)
    ref = reference if reference is not None else os.environ.get(REFERENCE_ENV, "none" if quick else REFERENCE)
    with tempfile.TemporaryDirectory(prefix="lowprec-bench-analyze-") as tmp, \
            (reference_tree(ref) if ref.lower() != "none" else contextlib.nullcontext("not asked")) as tree:
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
        configs: dict[str, tuple[list[str], dict[str, str] | None]] = {
            "serial": (_analyze(paths, folder / "serial.json", 1), None),
            "workers2": (_analyze(paths, folder / "workers2.json", 2), None)}
        if isinstance(tree, Path):
            configs["reference"] = (_analyze(paths, folder / "reference.json", 1), _reference_env(tree))
        runs: dict[str, list[tuple[float, float, float]]] = {name: [] for name in configs}
        for _ in range(reps):
            for name, (argv, env) in configs.items():
                runs[name].append(_run_measured(argv, env))
        serial_bytes = (folder / "serial.json").read_bytes()
        same = serial_bytes == (folder / "workers2.json").read_bytes()
        same_ref = (serial_bytes == (folder / "reference.json").read_bytes()) if "reference" in configs else None
        recipes = len(json.loads(serial_bytes)["recipes"])
    wall = {name: statistics.median(r[0] for r in rs) for name, rs in runs.items()}
    cpu = {name: statistics.median(r[2] for r in rs) for name, rs in runs.items()}
    peak = {name: max(r[1] for r in rs) for name, rs in runs.items()}
    serial, pool = wall["serial"], wall["workers2"]
    largest_mib = info["largest_tensor_bytes"] / (1 << 20)
    bound = base_mib + 3 * largest_mib
    out: dict[str, Any] = {
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
        "serial_cpu_s": round(cpu["serial"], 2),
        "workers2_cpu_s": round(cpu["workers2"], 2),
        "reports_identical": "yes" if same else "NO",
        "baseline_s": round(base_s, 2),
        "baseline_peak_rss_mib": round(base_mib, 1),
        "serial_peak_rss_mib": round(peak["serial"], 1),
        "workers2_peak_rss_mib": round(peak["workers2"], 1),
        "largest_tensor_mib": round(largest_mib, 1),
        "memory_bound_mib": round(bound, 1),
        "within_memory_bound": "yes" if max(peak["serial"], peak["workers2"]) <= bound else "NO",
    }
    if "reference" in wall:
        out.update({
            "reference": ref,
            "reference_s": round(wall["reference"], 2),
            "reference_elements_per_s": round(info["elements"] / wall["reference"]),
            "reference_mb_per_s": round(info["bytes"] / 1e6 / wall["reference"], 2),
            "reference_cpu_s": round(cpu["reference"], 2),
            "reference_peak_rss_mib": round(peak["reference"], 1),
            "speedup_vs_reference": round(wall["reference"] / serial, 2),
            "cpu_speedup_vs_reference": round(cpu["reference"] / cpu["serial"], 2),
            "report_identical_to_reference": "yes" if same_ref else "NO",
        })
    else:
        out["reference"] = f"n/a ({tree})"
    out.update({"load_average_1min_start": round(load_start, 2), "load_average_1min": round(os.getloadavg()[0], 2),
                "cpu_count": os.cpu_count()})
    return out


if __name__ == "__main__":
    for key, value in run(quick="--quick" in sys.argv).items():
        print(f"{key}: {value}")
