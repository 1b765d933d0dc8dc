"""Running the recipe lab: `lowprec analyze` on files this test writes — the strict-JSON shape the issue
fixes, CSV and HTML outputs, skipped entries, one-line errors naming the bad file or option — and
the same report, byte for byte, from a serial run, a 2-process pool (`--workers 2`) and a Dask
`LocalCluster` (`--scheduler`), whatever the chunk size."""

from __future__ import annotations

import csv
import io
import json
import math
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from lowprec import strictjson
from lowprec.app.cli import main
from lowprec.simulations.lab import analyze, open_executor
from lowprec.simulations.lab.recipes import DEFAULT_RECIPES
from lowprec.simulations.lab.samples import activation, gradient, weight

safetensors_numpy = pytest.importorskip("safetensors.numpy")

RESULT_KEYS = {"recipe", "rms_rel_err", "sqnr_db", "max_abs_err", "clipped_frac", "zero_frac", "bits_per_element"}


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two shards: a BF16 weight (outlier channels), an FP32 activation with an Inf and a NaN, an
    integer tensor (skipped), a 1-D FP16 gradient of 48 elements (MX recipes do not apply)."""
    folder = tmp_path_factory.mktemp("ckpt")
    act = activation()[:64].copy()
    act[3, 5], act[9, 0] = np.inf, np.nan
    safetensors_numpy.save_file({"w": weight()[:128].astype(np.float32), "act": act,
                                 "ids": np.arange(10, dtype=np.int64)}, str(folder / "m-1.safetensors"))
    safetensors_numpy.save_file({"g": gradient()[0, :48].astype(np.float16)}, str(folder / "m-2.safetensors"))
    return folder


def report_json(paths: list[str], **kw: Any) -> str:
    return strictjson.dumps(analyze(paths, **kw).to_dict())


def test_json_shape_and_csv(checkpoint: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out_json, out_csv = tmp_path / "r.json", tmp_path / "r.csv"
    rc = main(["analyze", str(checkpoint / "m-*.safetensors"), "--json", str(out_json), "--csv", str(out_csv)])
    assert rc == 0
    summary = capsys.readouterr().out
    assert "2 file(s): 3 tensor(s) analysed, 1 skipped" in summary and "skipped ids: dtype INT64" in summary
    text = out_json.read_text()
    data = strictjson.loads(text)  # the strict parser: no NaN / Infinity tokens
    json.loads(text, parse_constant=lambda c: pytest.fail(f"non-standard JSON constant {c}"))
    assert {"files", "recipes", "tensors"} <= set(data)
    assert [r["name"] for r in data["recipes"]] == list(DEFAULT_RECIPES)
    assert [t["name"] for t in data["tensors"]] == ["act", "w", "g"]  # file order, sorted by name in a file
    for t in data["tensors"]:
        assert {"name", "file", "shape", "dtype", "stats", "results"} <= set(t)
        assert [r["recipe"] for r in t["results"]] == list(DEFAULT_RECIPES)
        for r in t["results"]:
            assert RESULT_KEYS <= set(r)
    act = data["tensors"][0]
    assert act["dtype"] == "FP32" and act["shape"] == [64, 256] and act["stats"]["nonfinite"] == 2
    g = data["tensors"][2]
    mx = next(r for r in g["results"] if r["recipe"] == "mxfp4")
    assert mx["skipped"] == "blocks of 32 do not divide the last axis (48)" and mx["rms_rel_err"] is None
    assert data["skipped"] == [{"file": str(checkpoint / "m-1.safetensors"), "name": "ids", "shape": [10],
                                "dtype": "INT64", "reason": "dtype INT64 (the lab analyses BF16, FP16, FP32, FP64)"}]
    rows = list(csv.DictReader(io.StringIO(out_csv.read_text())))
    assert len(rows) == 3 * len(DEFAULT_RECIPES)
    first = rows[0]
    want = next(r for r in act["results"] if r["recipe"] == first["recipe"])
    assert float(first["rms_rel_err"]) == want["rms_rel_err"] and first["tensor"] == "act"


def test_html_page_is_standalone(checkpoint: Path, tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    assert main(["analyze", str(checkpoint), "--recipes", "bf16,nvfp4", "--html", str(out), "--quiet"]) == 0
    html = out.read_text()
    assert "<title>Recipe lab</title>" in html and "nvfp4" in html
    assert not re.search(r'<(script|link)[^>]*\b(src|href)=["\']?https?:', html)  # everything inline


@pytest.mark.parametrize("argv, message", [
    (["--recipes", "fp7"], "unknown recipe 'fp7'"),
    (["--workers", "0"], "workers must be a positive integer, got 0"),
    (["--chunk-elements", "0"], "--chunk-elements must be ≥ 1, got 0"),
    (["--json", "/no/such/folder/r.json"], "--json /no/such/folder/r.json: the folder /no/such/folder does not exist"),
], ids=["recipe", "workers", "chunk", "output"])
def test_bad_options_are_one_line(checkpoint: Path, capsys: pytest.CaptureFixture[str], argv: list[str],
                                  message: str) -> None:
    assert main(["analyze", str(checkpoint), "--quiet", *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1, err


def test_unreadable_file_is_one_line_naming_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "broken.npy"
    bad.write_bytes(b"\x93NUMPY garbage")
    assert main(["analyze", str(bad), "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("lowprec: error: ") and f"{bad}: not a .npy array or corrupt" in err
    assert len(err.splitlines()) == 1


def test_list_recipes(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["analyze", "--list-recipes"]) == 0
    out = capsys.readouterr().out
    assert "nvfp4_16x16" in out and "mxfp4_rht" in out and "(default)" in out


def test_chunks_workers_and_dask_give_the_serial_report(checkpoint: Path) -> None:
    paths = [str(checkpoint)]
    serial = report_json(paths, recipes="all")
    assert report_json(paths, recipes="all", chunk_elements=16 * 256) == serial  # 16-row chunks
    with open_executor(workers=2) as pool:
        assert pool is not None
        assert report_json(paths, recipes="all", executor=pool) == serial
    distributed = pytest.importorskip("distributed")  # the test extra installs it
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None) as lc:
        with open_executor(scheduler=lc.scheduler_address) as client_executor:
            assert report_json(paths, recipes="all", executor=client_executor) == serial


def test_unreachable_scheduler_is_a_value_error() -> None:
    pytest.importorskip("distributed")
    with pytest.raises(ValueError, match="cannot reach the Dask scheduler at tcp://127.0.0.1:9"):
        with open_executor(scheduler="tcp://127.0.0.1:9", timeout_s=2):
            pass


def test_progress_reaches_every_tensor(checkpoint: Path) -> None:
    seen: list[tuple[int, int]] = []
    analyze([str(checkpoint)], "bf16", progress=lambda done, total: seen.append((done, total)))
    assert seen == [(0, 3), (1, 3), (2, 3), (3, 3)]


def test_ranking_over_the_file_pools_every_tensor(checkpoint: Path) -> None:
    report = analyze([str(checkpoint / "m-1.safetensors")], "bf16,e4m3_row,nvfp4")
    rows = report.ranking
    assert [r["rank"] for r in rows] == [1, 2, 3]
    # the activation holds an Inf and a NaN: its errors are over the finite elements only
    for row in rows:
        rs = [t.result(row["recipe"]) for t in report.tensors]
        want = math.sqrt(math.fsum(r.error for r in rs) / math.fsum(r.signal for r in rs))
        assert row["rms_rel_err"] == pytest.approx(want, rel=1e-15, nan_ok=True)
    # NVFP4's tensor scale from an amax of Inf is NaN (every convention): its error is NaN, ranked last
    assert [r["recipe"] for r in rows] == ["bf16", "e4m3_row", "nvfp4"] and math.isnan(rows[2]["rms_rel_err"])
    assert rows[0]["rms_rel_err"] < rows[1]["rms_rel_err"]


def test_scheduler_without_dask_names_the_extra(checkpoint: Path) -> None:
    import subprocess
    import sys

    code = ("import sys\nsys.modules['distributed'] = None\nfrom lowprec.app.cli import main\n"
            f"sys.exit(main(['analyze', {str(checkpoint)!r}, '--scheduler', 'tcp://127.0.0.1:9', '--quiet']))\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 2, r.stderr
    from lowprec.extras import install_command  # the command that works for this install

    assert f"needs distributed, which is not installed: {install_command('cluster')}" in r.stderr.strip(), r.stderr


def test_benchmark_checkpoint_writer_is_read_back_bit_for_bit(tmp_path: Path) -> None:
    """`lowprec bench analyze` writes its checkpoint with its own safetensors writer; the lab (which
    validates through the `safetensors` package) reads back exactly what was written."""
    import ml_dtypes

    from lowprec.app.commands.bench_cmd import BENCHMARKS
    from lowprec.benchmarks.analyze import write_safetensors
    from lowprec.simulations.lab.readers import open_rows, scan

    assert BENCHMARKS["analyze"] == "lowprec.benchmarks.analyze"
    a = np.random.default_rng(0).standard_normal((5, 16)).astype(np.float32)
    b = a[:3].astype(ml_dtypes.bfloat16)
    write_safetensors(tmp_path / "x.safetensors", {"a": a, "b": b})
    ra, rb = scan([str(tmp_path / "x.safetensors")]).tensors
    assert (ra.dtype, rb.dtype, rb.shape) == ("FP32", "BF16", (3, 16))
    np.testing.assert_array_equal(open_rows(ra).read(0, 5).view(np.uint32), a.view(np.uint32))
    np.testing.assert_array_equal(open_rows(rb).read(0, 3).view(np.uint32),
                                  b.view(np.uint16).astype(np.uint32) << 16)


@pytest.mark.slow
def test_cli_on_a_multiprocess_dask_cluster_gives_the_serial_json(checkpoint: Path, tmp_path: Path) -> None:
    """`lowprec analyze --scheduler` against a LocalCluster of two worker processes (slow: starting
    them takes tens of seconds on a busy machine; the default run covers an in-process cluster)."""
    distributed = pytest.importorskip("distributed")
    serial, remote = tmp_path / "serial.json", tmp_path / "dask.json"
    assert main(["analyze", str(checkpoint), "--recipes", "all", "--json", str(serial), "--quiet"]) == 0
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as lc:
        assert main(["analyze", str(checkpoint), "--recipes", "all", "--json", str(remote), "--quiet",
                     "--scheduler", lc.scheduler_address]) == 0
    assert remote.read_bytes() == serial.read_bytes()
