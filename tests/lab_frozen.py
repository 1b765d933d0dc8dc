"""The recipe lab's report frozen before its speed work (issue 30 item 6): a varied set of tensors and
the cases run on them, whose output the code of 981d4dc (the lab before the fused metric kernels)
wrote to `tests/lab_frozen.json.gz`. `tests/test_lab_frozen.py` runs the same cases with today's
code and compares every figure, bit for bit (the strict-JSON text, whose floats are `repr`s).

Regenerate only to record an *intended* change of the report, from the code that makes it:
`.venv/bin/python -m tests.lab_frozen --write` (and say why in the commit).

The tensors: every float dtype the lab reads (FP32, BF16, FP16, FP64); 1-D (short, and long enough
to be read in segments), 2-D, 3-D and 4-D; non-finite elements, an all-NaN tensor, zeros, a constant,
exact zeros among values, FP32 subnormals, values near FP32's largest, FP64 beyond FP32's range and far
below it (1e±300, whose squares leave float64), outlier channels, a tensor every cast reproduces
exactly, shapes that some recipes do not apply to, a row longer than a chunk, and one tensor of
2 M elements (several default chunks). The recipes: every registered recipe and every other
convention of each (`VARIANTS`).
"""

from __future__ import annotations

import gzip
import io
import json
import os
import sys
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any, Callable

import ml_dtypes
import numpy as np

FROZEN = Path(__file__).with_name("lab_frozen.json.gz")

#: every non-default convention of each recipe that has one
VARIANTS = ("bf16@ml_dtypes", "fp16@ml_dtypes", "mxfp8_e4m3@torchao", "mxfp8_e4m3@transformer_engine",
            "mxfp8_e5m2@torchao", "mxfp8_e5m2@transformer_engine", "mxfp6_e3m2@torchao", "mxfp6_e2m3@torchao",
            "mxfp4@torchao", "mxfp4_rht@torchao", "nvfp4@torchao", "nvfp4@transformer_engine",
            "nvfp4_16x16@transformer_engine", "nvfp4_rht@torchao", "nvfp4_rht@transformer_engine",
            "fp8_1x128@deepseek", "fp8_128x128@deepseek", "mxint8@microxcaling")
RECIPES = ["all", *VARIANTS]


def tensors() -> dict[str, np.ndarray]:
    """The varied tensors (see the module docstring), the same every call."""
    rng = np.random.default_rng(20240530)
    out: dict[str, np.ndarray] = {}
    w = (rng.standard_t(4, size=(256, 512)) * 0.02).astype(np.float32)
    w[:, ::37] *= np.float32(20.0)
    out["w.studentt.fp32"] = w
    out["w.bf16"] = (rng.standard_normal((384, 256)) * 0.05).astype(ml_dtypes.bfloat16)
    a = (rng.standard_normal((4, 64, 128)) * 3.0).astype(np.float16)
    a.reshape(-1)[rng.choice(a.size, 20, replace=False)] = np.float16(60000.0)
    out["act.fp16.3d"] = a
    out["big.fp32"] = rng.laplace(size=(1024, 2048)).astype(np.float32)
    out["fp64.plain"] = rng.standard_normal((96, 160))
    out["fp64.huge"] = rng.standard_normal((64, 128)) * 1e300
    out["fp64.tiny"] = rng.standard_normal((64, 128)) * 1e-300
    out["fp64.beyond_fp32"] = rng.uniform(1e39, 1e40, (32, 64)) * rng.choice([-1.0, 1.0], (32, 64))
    nf = rng.standard_normal((128, 256)).astype(np.float32)
    flat = nf.reshape(-1)
    idx = rng.choice(flat.size, 60, replace=False)
    flat[idx[:20]] = np.nan
    flat[idx[20:35]] = np.inf
    flat[idx[35:50]] = -np.inf
    flat[idx[50:]] = 0.0
    out["nonfinite.fp32"] = nf
    out["all_nan.fp32"] = np.full((16, 32), np.nan, np.float32)
    out["zeros.fp32"] = np.zeros((32, 64), np.float32)
    out["constant.fp32"] = np.full((32, 64), 0.5, np.float32)
    sp = rng.standard_normal((128, 128)).astype(np.float32)
    sp[rng.random((128, 128)) < 0.9] = 0.0
    out["sparse.fp32"] = sp
    out["line.fp32"] = rng.standard_normal(2 * 65536 + 4096 + 16).astype(np.float32)
    out["line.bf16"] = (rng.standard_normal(3 * 65536 + 256) * 1e-3).astype(ml_dtypes.bfloat16)
    out["short.1d.fp32"] = rng.standard_normal(1000).astype(np.float32)
    out["odd.cols.fp32"] = rng.standard_normal((50, 48)).astype(np.float32)
    out["conv.4d.fp32"] = rng.standard_normal((32, 16, 3, 3)).astype(np.float32)
    sub = (rng.standard_normal((32, 128)) * 1e-39).astype(np.float32)
    sub[0, :4] = np.float32(1e-30)
    out["subnormal.fp32"] = sub
    out["near_max.fp32"] = (rng.uniform(-1.0, 1.0, (32, 64)) * 3.0e38).astype(np.float32)
    out["rows_not16.fp32"] = rng.standard_normal((100, 256)).astype(np.float32)
    out["long_row.fp32"] = rng.standard_normal((2, 70000)).astype(np.float32)
    ex = rng.standard_normal((64, 64)).astype(ml_dtypes.bfloat16).astype(np.float32)
    out["bf16_exact.fp32"] = ex
    out["negative.fp16"] = -np.abs(rng.standard_normal((64, 64))).astype(np.float16)
    out["scalar.fp32"] = np.array(3.0, np.float32)
    return out


#: the tensors of the small-chunk case (every one but the 2 M-element one) and the chunk size
SMALL_CHUNK = 3000
#: the tensors drawn in detail (histograms and error maps) under every recipe
DETAIL_TENSORS = ("w.studentt.fp32", "act.fp16.3d", "nonfinite.fp32", "line.fp32", "fp64.huge", "rows_not16.fp32",
                  "long_row.fp32", "sparse.fp32")


def _dumps(obj: Any) -> str:
    from lowprec import strictjson

    return strictjson.dumps(obj)


def _report(arrays: dict[str, np.ndarray], chunk: int) -> dict[str, Any]:
    from lowprec.simulations.lab import analyze_arrays

    rep = analyze_arrays(arrays, RECIPES, chunk_elements=chunk, label="frozen")
    return {"json": _dumps(rep.to_dict()), "csv": rep.to_csv(), "summary": "\n".join(rep.summary_lines())}


def case_report() -> dict[str, Any]:
    """Every tensor under every recipe, default chunks."""
    return _report(tensors(), 1 << 20)


def case_report_small_chunks() -> dict[str, Any]:
    """Every tensor but the largest under every recipe, chunks of SMALL_CHUNK elements."""
    arrays = {k: v for k, v in tensors().items() if k != "big.fp32"}
    return _report(arrays, SMALL_CHUNK)


def recipe_names() -> list[str]:
    from lowprec.simulations.lab.recipes import parse_recipes

    return [r.name for r in parse_recipes(RECIPES)]


def case_details(chunk: int = SMALL_CHUNK) -> dict[str, Any]:
    """Each DETAIL_TENSORS tensor under each recipe that applies to it, with its drawing data."""
    from lowprec.simulations.lab import analyze_arrays

    arrays = tensors()
    out: dict[str, Any] = {}
    for name in DETAIL_TENSORS:
        for recipe in recipe_names():
            rep = analyze_arrays({name: arrays[name]}, [recipe], detail=None, chunk_elements=chunk)
            if rep.tensors[0].results[0].skipped is not None:
                continue
            rep = analyze_arrays({name: arrays[name]}, [recipe], detail=(name, recipe), chunk_elements=chunk)
            detail = rep.tensors[0].detail
            assert detail is not None
            out[f"{name}|{recipe}"] = _dumps(detail.to_dict())
    return out


def case_cli(folder: Path) -> dict[str, Any]:
    """`lowprec analyze` (default recipes) on a .safetensors and a .npy file written here, run from
    `folder` with relative paths: the --json and --csv text."""
    from safetensors.numpy import save_file

    from lowprec.app.cli import main

    arrays = tensors()
    save_file({k: np.ascontiguousarray(arrays[k]) for k in ("w.studentt.fp32", "w.bf16", "nonfinite.fp32",
                                                             "line.bf16", "odd.cols.fp32")},
              str(folder / "model.safetensors"))
    np.save(folder / "act.npy", arrays["act.fp16.3d"])
    here = os.getcwd()
    os.chdir(folder)
    try:
        with redirect_stdout(io.StringIO()):
            rc = main(["analyze", "model.safetensors", "act.npy", "--json", "out.json", "--csv", "out.csv", "--quiet"])
        assert rc == 0
        return {"json": (folder / "out.json").read_text(), "csv": (folder / "out.csv").read_text()}
    finally:
        os.chdir(here)


CASES: dict[str, Callable[..., dict[str, Any]]] = {
    "report": case_report,
    "report_small_chunks": case_report_small_chunks,
    "details": case_details,
}


def frozen() -> dict[str, Any]:
    """The frozen output, by case."""
    with gzip.open(FROZEN, "rt", encoding="utf-8") as fh:
        data: dict[str, Any] = json.load(fh)
    return data


def _write() -> None:
    import tempfile

    data: dict[str, Any] = {name: fn() for name, fn in CASES.items()}
    with tempfile.TemporaryDirectory() as tmp:
        data["cli"] = case_cli(Path(tmp))
    with gzip.open(FROZEN, "wt", encoding="utf-8", compresslevel=9) as fh:
        json.dump(data, fh, sort_keys=True)
    print(f"wrote {FROZEN} ({FROZEN.stat().st_size} bytes)")


if __name__ == "__main__":
    if "--write" not in sys.argv:
        sys.exit("usage: python -m tests.lab_frozen --write (regenerates the frozen report; see the docstring)")
    _write()
