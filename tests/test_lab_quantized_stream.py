"""A pre-quantized checkpoint streams like a float one: row chunks of any size, a 2-process pool and a
Dask cluster give the serial report byte for byte (statistics, every recipe, the audit, the
product), and a chunk's read touches only that chunk's codes and the scale rows it uses."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from lowprec.simulations.lab import product, quantized, readers
from lowprec.simulations.lab.runner import analyze, open_executor
from lowprec.simulations.lab.writeback import quantize_arrays

LAYOUTS = (("deepseek_fp8", "fp8_128x128_ue8m0", (320, 256)), ("gptoss_mxfp4", "mxfp4", (2, 96, 128)),
           ("modelopt_nvfp4", "nvfp4", (160, 128)), ("compressed_tensors_fp8", "e4m3_row", (144, 128)))


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    base = tmp_path_factory.mktemp("quantized")
    rng = np.random.default_rng(5)
    files = []
    for layout, recipe, shape in LAYOUTS:
        w = (rng.standard_t(4, size=shape) * 0.03).astype(np.float32)
        quantize_arrays({f"{layout}.weight": w}, recipe, layout, str(base / layout))
        files.append(str(base / layout / "model.safetensors"))
    return files


def report_json(paths: list[str], **kw: Any) -> str:
    cfg = product.ProductConfig(None, ("none", "e4m3_row"), tokens=6)
    return json.dumps(analyze(paths, "bf16,e4m3_row,mxfp4,nvfp4_16x16", product=cfg, **kw).to_dict(), sort_keys=True)


def test_chunks_workers_and_dask_give_the_serial_report(checkpoints: list[str]) -> None:
    serial = report_json(checkpoints)
    data = json.loads(serial)
    assert [t["layout"] for t in data["tensors"]] == [lay for lay, _, _ in LAYOUTS]
    assert all(t["audit"] is not None for t in data["tensors"])
    assert [t["product"] is not None for t in data["tensors"]] == [True, False, True, True]  # 2-D weights only
    assert report_json(checkpoints, chunk_elements=16 * 128) == serial  # 16-row chunks
    assert report_json(checkpoints, chunk_elements=3 * 128 * 128 + 5) == serial
    with open_executor(workers=2) as pool:
        assert pool is not None
        assert report_json(checkpoints, executor=pool) == serial
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None) as lc:
        with open_executor(scheduler=lc.scheduler_address) as client_executor:
            assert report_json(checkpoints, executor=client_executor) == serial


@pytest.mark.parametrize("index", range(len(LAYOUTS)))
def test_a_chunk_reads_its_codes_and_its_scale_rows_only(index: int, checkpoints: list[str],
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    ref = readers.scan(checkpoints[index]).tensors[0]
    src = quantized.QuantizedRows(ref)
    reads: list[tuple[str, int]] = []
    real = quantized._read_bytes

    def spy(fh: Any, path: str, part: Any, start: int, count: int, label: str) -> np.ndarray:
        reads.append((part.role, count))
        out: np.ndarray = real(fh, path, part, start, count, label)
        return out

    monkeypatch.setattr(quantized, "_read_bytes", spy)
    rows = 16
    row_bytes = src.cols // 2 if src.layout.packed else src.cols
    tile_rows = 1 if src.geo.expand_rows else src.geo.tile[0]
    scale_row_bytes = src._scale_row_bytes
    for lo in range(0, src.rows, rows):
        reads.clear()
        hi = min(src.rows, lo + rows)
        src.read(lo, hi)
        codes = sum(n for role, n in reads if role == "codes")
        scales = sum(n for role, n in reads if role == "scales")
        assert codes == (hi - lo) * row_bytes
        # the scale rows these rows use: one per row, or the tile rows they fall in
        g0, g1 = lo // tile_rows, -(-hi // tile_rows)
        assert scales == ((g1 - g0) if src.geo.tile[0] < src.rows or src.geo.expand_rows else 1) * scale_row_bytes
