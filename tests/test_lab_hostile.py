"""Hostile and odd checkpoints through the recipe lab (issue 33): each case ends in a one-line
`ValueError` naming the file (and the tensor or member) or in a correct answer, within bounded time
and memory, through the API (`scan`, `analyze`, `analyze_arrays`) and the CLI (`lowprec analyze`).

The files are crafted small on disk. Bounds are asserted as properties — what a reader visits,
opens or reads before it refuses, the largest read of a chunked pass, a coarse tracemalloc ceiling —
never as wall-clock times. Oracles: numpy's own header reader for valid headers, ml_dtypes casts for
clipping, numpy norms (scaled by a non-power-of-two) for the errors of huge and tiny FP64 tensors,
the in-memory analysis of the same arrays for streamed and segmented reads, the formula for the
error map's tile."""

from __future__ import annotations

import io
import json
import math
import os
import re
import signal
import sys
import tracemalloc
import zipfile
from pathlib import Path
from typing import Any, Iterator

import ml_dtypes
import numpy as np
import pytest

from lowprec import strictjson
from lowprec.app.cli import main
from lowprec.simulations.lab import analyze, analyze_arrays, readers, runner
from lowprec.simulations.lab.limits import LIMITS, LINE_SEGMENT, ReadLimits
from lowprec.simulations.lab.measure import FLAGS, map_tile
from lowprec.simulations.lab.readers import LabReadError, open_rows, read_npy_header, scan
from lowprec.simulations.lab.recipes import RECIPES, parse_recipes, quantize_chunk
from lowprec.simulations.lab.runner import analyze_rows, check_scheduler_address, open_executor, worker_count
from lowprec.simulations.lab.tensors import ArrayRows, TensorRef

torch = pytest.importorskip("torch")
safetensors_numpy = pytest.importorskip("safetensors.numpy")

F32 = np.float32


# ------------------------------------------------------------------------------------------------
# helpers
# ------------------------------------------------------------------------------------------------


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    rc = main(["analyze", *argv])
    out, err = capsys.readouterr()
    return rc, out, err.strip()


def assert_one_line_error(capsys: pytest.CaptureFixture[str], path: Path, expect: str, *extra: str) -> None:
    """`lowprec analyze PATH` exits 2 with one line naming the file and containing `expect`."""
    rc, _, err = cli(capsys, str(path), "--quiet", *extra)
    assert rc == 2, err
    assert len(err.splitlines()) == 1 and err.startswith(f"lowprec: error: {path}"), err
    assert expect in err, err
    assert "Traceback" not in err


def refused(path: Path, expect: str, limits: ReadLimits = LIMITS) -> str:
    """scan([path]) raises one line naming the file and containing `expect`; the message."""
    with pytest.raises(LabReadError, match=re.escape(expect)) as info:
        scan([str(path)], limits)
    message = str(info.value)
    assert isinstance(info.value, ValueError)
    assert message.startswith(str(path)) and "\n" not in message, message
    assert expect in message, message
    return message


def npy_file(path: Path, header: str, payload: bytes = b"\0" * 64, version: tuple[int, int] = (1, 0)) -> None:
    """A .npy file with the header text given (padded as numpy pads it)."""
    text = (header.ljust(118) + "\n").encode("latin1")
    width = 2 if version == (1, 0) else 4
    path.write_bytes(b"\x93NUMPY" + bytes(version) + len(text).to_bytes(width, "little") + text + payload)


@pytest.fixture
def no_hang() -> Iterator[None]:
    """Fail (instead of hanging the run) when a read blocks: SIGALRM after 30 s."""

    def fire(signum: int, frame: Any) -> None:
        raise TimeoutError("the lab blocked on a read")

    old = signal.signal(signal.SIGALRM, fire)
    signal.alarm(30)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def good_npy(path: Path, seed: int = 0, shape: tuple[int, ...] = (16, 64)) -> np.ndarray:
    x = np.random.default_rng(seed).standard_normal(shape).astype(F32)
    np.save(path, x)
    return x


# ------------------------------------------------------------------------------------------------
# 1. PyTorch structures: entries, depth, expansion, cycles, colliding names
# ------------------------------------------------------------------------------------------------


def _dag(levels: int, leaf: Any) -> list[Any]:
    y: list[Any] = [leaf]
    for _ in range(levels):
        y = [y, y]
    return y


def test_shared_reference_bomb_pt_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The issue's 1.7 KB file: y = [ones(1)], then y = [y, y] twenty times (2^20 leaves once
    expanded); forty levels (2^40) is refused by depth before anything is expanded."""
    path = tmp_path / "dag20.pt"
    torch.save(_dag(20, torch.ones(1)), path)
    assert path.stat().st_size < 4096
    refused(path, f"holds more than {LIMITS.max_entries} entries once its nested containers are expanded")
    assert_one_line_error(capsys, path, "a container referenced from several places counts once per place")
    deep = tmp_path / "dag40.pt"
    torch.save(_dag(40, torch.ones(1)), deep)
    refused(deep, f"nested deeper than {LIMITS.max_depth} levels")
    assert_one_line_error(capsys, deep, "nested deeper than")


class CountingList(list):  # type: ignore[type-arg]
    """A list that counts the items the flattening takes from it."""

    taken = 0

    def __iter__(self) -> Iterator[Any]:
        for item in super().__iter__():
            CountingList.taken += 1
            yield item


def test_flattening_visits_a_bounded_number_of_entries() -> None:
    """Refused after at most 4 × max_entries visits whatever the structure expands to: 2^30 leaves,
    or 2^17 empty containers (no leaf at all, so only the visit budget stops it)."""
    from lowprec.simulations.lab.torch_reader import flatten

    limits = ReadLimits(max_entries=50)
    for leaf_level, levels in ((CountingList([1.0]), 30), (CountingList(), 16)):
        y = leaf_level
        for _ in range(levels):
            y = CountingList([y, y])
        CountingList.taken = 0
        with pytest.raises(LabReadError, match=r"x\.pt: (holds more than 50 entries|its nested containers expand to "
                                               r"more than 200 entries)"):
            flatten(y, "x.pt", limits)
        assert CountingList.taken <= 4 * limits.max_entries + 1


def test_depth_and_entry_limits_are_inclusive() -> None:
    from lowprec.simulations.lab.torch_reader import flatten

    nested: Any = [1.0]
    for _ in range(3):
        nested = [nested]  # four containers, the root included
    assert flatten(nested, "x.pt", ReadLimits(max_depth=4))[0] == [("0.0.0.0", 1.0)]
    with pytest.raises(LabReadError, match=r"x\.pt: nested deeper than 3 levels \(at '0\.0\.0'\)"):
        flatten(nested, "x.pt", ReadLimits(max_depth=3))
    five = {f"t{i}": float(i) for i in range(5)}
    assert len(flatten(five, "x.pt", ReadLimits(max_entries=5))[0]) == 5
    with pytest.raises(LabReadError, match="holds more than 4 entries"):
        flatten(five, "x.pt", ReadLimits(max_entries=4))
    with pytest.raises(LabReadError, match=r"has a name of 12 characters \(at most 11\)"):
        flatten({"abcdef": {"ghijk": 1.0}}, "x.pt", ReadLimits(max_name_chars=11))


@pytest.mark.parametrize("kind", ["list", "dict", "deep"])
def test_self_referential_and_deep_pt_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                    kind: str) -> None:
    obj: Any
    if kind == "list":
        obj = [torch.ones(2)]
        obj.append(obj)
        expect = "self-referential structure: entry '1' refers back to a container that encloses it"
    elif kind == "dict":
        obj = {"w": torch.ones(2), "inner": {}}
        obj["inner"]["up"] = obj
        expect = "self-referential structure: entry 'inner.up' refers back to a container that encloses it"
    else:
        obj = torch.ones(2)
        for _ in range(3000):  # Python's recursion limit is 1000: a recursive walk would fail
            obj = [obj]
        expect = f"nested deeper than {LIMITS.max_depth} levels"
    path = tmp_path / f"{kind}.pt"
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(20_000)  # torch.save recurses; torch.load and the lab do not
    try:
        torch.save(obj, path)
    finally:
        sys.setrecursionlimit(limit)
    refused(path, expect)
    assert_one_line_error(capsys, path, expect)


def test_colliding_names_keep_both_tensors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """{"a.b": t1, "a": {"b": t2}} flattens both to a.b: both are analysed, the later as a.b#2."""
    t1, t2 = torch.tensor([1.0, 2.0]), torch.tensor([3.0, 4.0, 5.0])
    path = tmp_path / "coll.pt"
    torch.save({"a.b": t1, "a": {"b": t2}}, path)
    inv = scan([str(path)])
    assert [(t.name, t.shape) for t in inv.tensors] == [("a.b", (2,)), ("a.b#2", (3,))]
    assert inv.notes == [f"{path}: two entries flatten to the name 'a.b'; the later is reported as 'a.b#2'"]
    for ref, want in zip(inv.tensors, (t1, t2)):
        np.testing.assert_array_equal(open_rows(ref).read(0, 1).reshape(-1).view(np.uint32),
                                      want.numpy().view(np.uint32))
    out = tmp_path / "r.json"
    rc, text, _ = cli(capsys, str(path), "--recipes", "bf16", "--json", str(out))
    assert rc == 0 and "note: " in text
    data = strictjson.loads(out.read_text())
    assert [t["name"] for t in data["tensors"]] == ["a.b", "a.b#2"] and len(data["notes"]) == 1


def test_expanded_views_are_skipped_and_plain_views_read(tmp_path: Path) -> None:
    path = tmp_path / "views.pt"
    base = torch.arange(10, dtype=torch.float32)
    torch.save({"expanded": torch.zeros(1).expand(10 ** 6), "slice": base[2:5], "t": base.reshape(2, 5).t()}, path)
    inv = scan([str(path)])
    assert [(s.name, s.reason) for s in inv.skipped] == [
        ("expanded", "an expanded view: 1000000 elements over a storage of 1 (strides that repeat elements)")]
    refs = {t.name: t for t in inv.tensors}
    np.testing.assert_array_equal(open_rows(refs["slice"]).read(0, 1), [[2.0, 3.0, 4.0]])
    np.testing.assert_array_equal(open_rows(refs["t"]).read(0, 5), base.reshape(2, 5).t().numpy())


def test_pt_zip_directory_is_checked_before_loading(tmp_path: Path) -> None:
    path = tmp_path / "w.pt"
    torch.save({f"w{i}": torch.ones(2) for i in range(3)}, path)
    refused(path, "its pickle", ReadLimits(max_pickle_bytes=50))
    refused(path, "members in the PyTorch file; the lab reads at most 2 entries", ReadLimits(max_entries=2))


# ------------------------------------------------------------------------------------------------
# 2. .npy headers
# ------------------------------------------------------------------------------------------------

_SHAPES = [
    ("(100000000000000000000000,)", "truncated: the header promises 400000000000000000000000 bytes of data"),
    ("(4294967297, 4294967295)", "truncated: the header promises 73786976294838206460 bytes of data"),
    # 2^32 × 2^32 wraps to 0 in int64: not an empty tensor
    ("(4294967296, 4294967296)", "truncated: the header promises 73786976294838206464 bytes of data"),
    ("((((4,)", "not a .npy array or corrupt (the header is not numpy's header dictionary)"),
    ("(10**23,)", "not a .npy array or corrupt (the header is not numpy's header dictionary)"),
    ("(True, 2)", "the header's shape is not a tuple of integers"),
    ("(-3, 4)", "corrupt .npy header: negative dimension in shape (-3, 4)"),
    ("(" + "1, " * 65 + ")", "corrupt .npy header: 65 dimensions (at most 64)"),
]


@pytest.mark.parametrize("shape, expect", _SHAPES, ids=["1e23", "wrap-1", "wrap-0", "unbalanced", "expression",
                                                        "bool", "negative", "65-dims"])
def test_hostile_npy_shapes_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str], shape: str,
                                         expect: str) -> None:
    path = tmp_path / "x.npy"
    npy_file(path, f"{{'descr': '<f4', 'fortran_order': False, 'shape': {shape}, }}")
    refused(path, expect)
    assert_one_line_error(capsys, path, expect)


@pytest.mark.parametrize("header, expect", [
    ("{'descr': 'zz', 'fortran_order': False, 'shape': (4,), }", "the header's descr is not a numpy dtype"),
    ("{'descr': '<f4', 'shape': (4,), }", "does not hold exactly the keys descr, fortran_order and shape"),
    ("{'descr': '<f4', 'fortran_order': 0, 'shape': (4,), }", "its fortran_order not a bool"),
    ("[1, 2, 3]", "does not hold exactly the keys"),
], ids=["descr", "keys", "order", "list"])
def test_bad_npy_dictionaries(tmp_path: Path, header: str, expect: str) -> None:
    path = tmp_path / "x.npy"
    npy_file(path, header)
    refused(path, expect)


def test_npy_header_length_and_version_are_checked_first(tmp_path: Path) -> None:
    long = tmp_path / "long.npy"
    text = ("{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }".ljust(20_000) + "\n").encode()
    long.write_bytes(b"\x93NUMPY\x02\x00" + len(text).to_bytes(4, "little") + text + b"\0" * 16)
    refused(long, f"a header of {len(text)} bytes; the lab reads headers of at most {LIMITS.max_npy_header}")
    for version, expect in (((9, 9), "unknown .npy format version 9.9"), ((1, 0), "the header is cut short")):
        path = tmp_path / f"v{version[0]}.npy"
        data = b"\x93NUMPY" + bytes(version) + (500).to_bytes(2, "little") + b"{'descr'"
        path.write_bytes(data)
        refused(path, expect)


@pytest.mark.parametrize("version", [(1, 0), (2, 0), (3, 0)])
def test_valid_npy_headers_match_numpy(tmp_path: Path, version: tuple[int, int]) -> None:
    """Our validated header equals numpy's own reading of what numpy wrote (the oracle)."""
    fmt = np.lib.format
    arrays = {"c": np.ones((3, 5), F32), "f": np.asfortranarray(np.ones((4, 6), np.float64)),
              "scalar": np.array(2.5, np.float16), "empty": np.zeros((0, 7), F32),
              "struct": np.zeros(3, dtype=[("a", "<i4"), ("b", "<f8")])}
    for name, arr in arrays.items():
        buf = io.BytesIO()
        fmt.write_array(buf, arr, version=version)
        buf.seek(0)
        ours = read_npy_header(buf, name)
        buf.seek(0)
        assert fmt.read_magic(buf) == version
        reader = fmt.read_array_header_1_0 if version == (1, 0) else fmt.read_array_header_2_0
        shape, fortran, dtype = reader(buf)
        assert (ours.shape, ours.fortran_order, ours.dtype, ours.data_offset) == (shape, fortran, dtype, buf.tell())
    py2 = tmp_path / "py2.npy"  # numpy of Python 2 wrote long integers with an L
    npy_file(py2, "{'descr': '<f4', 'fortran_order': False, 'shape': (3L, 4L), }", b"\0" * 48)
    assert scan([str(py2)]).tensors[0].shape == (3, 4)


def test_errors_never_quote_the_file_bytes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    secret = b"s3cr3t:x:0:0:s3cr3t:/home:/bin/bash\n" * 4
    for suffix, expect in ((".npy", "not a .npy array or corrupt"), (".npz", "not a .npz archive or corrupt"),
                           (".safetensors", "not a safetensors file or corrupt"),
                           (".pt", "is not a PyTorch checkpoint or is corrupt (neither torch's zip format nor a "
                                   "pickle)")):
        path = tmp_path / f"passwd{suffix}"
        path.write_bytes(secret)
        message = refused(path, expect)
        assert "s3cr3t" not in message and "b'" not in message, message
        rc, _, err = cli(capsys, str(path), "--quiet")
        assert rc == 2 and "s3cr3t" not in err and len(err.splitlines()) == 1, err


# ------------------------------------------------------------------------------------------------
# 3. .npz: read once, budgets, streamed members
# ------------------------------------------------------------------------------------------------


def _results(report: runner.LabReport) -> list[Any]:
    return [[r.to_dict() for r in t.results] + [t.stats.to_dict()] for t in report.tensors]


def test_npz_is_opened_once_and_each_member_read_in_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The directory is read once for the scan and once for the analysis (not once per member),
    and the report is the one of the same arrays in memory."""
    arrays = {f"t{i:03d}": np.random.default_rng(i).standard_normal(32).astype(F32) for i in range(300)}
    path = tmp_path / "many.npz"
    np.savez_compressed(path, **arrays)
    opened = {"zip": 0, "member": 0}
    real_zip, real_open = zipfile.ZipFile.__init__, zipfile.ZipFile.open

    def counting_zip(self: zipfile.ZipFile, *a: Any, **k: Any) -> None:
        opened["zip"] += 1
        real_zip(self, *a, **k)

    def counting_open(self: zipfile.ZipFile, *a: Any, **k: Any) -> Any:
        opened["member"] += 1
        return real_open(self, *a, **k)

    monkeypatch.setattr(zipfile.ZipFile, "__init__", counting_zip)
    monkeypatch.setattr(zipfile.ZipFile, "open", counting_open)
    monkeypatch.setattr(readers._ZIPS, "entry", None, raising=False)
    report = analyze([str(path)], "bf16,nvfp4")
    assert opened["zip"] <= 2, opened
    assert opened["member"] <= 3 * len(arrays), opened  # the scan's header read, then one per pass
    assert _results(report) == _results(analyze_arrays(arrays, "bf16,nvfp4"))


def _zip_member(path: Path, name: str, header: str, data_bytes: int, method: int = zipfile.ZIP_DEFLATED) -> None:
    text = (header.ljust(118) + "\n").encode()
    with zipfile.ZipFile(path, "a", method) as zf:
        with zf.open(name, "w", force_zip64=True) as m:
            m.write(b"\x93NUMPY\x01\x00" + len(text).to_bytes(2, "little") + text)
            left = data_bytes
            while left:
                step = min(left, 1 << 20)
                m.write(bytes(step))
                left -= step


def test_zip_bomb_is_refused_before_inflating(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "bomb.npz"
    n = 2 << 20  # 8 MiB of float32 zeros deflate to ~8 KB (the issue's 389 KB bomb held 100 M)
    _zip_member(path, "x.npy", f"{{'descr': '<f4', 'fortran_order': False, 'shape': ({n},), }}", 4 * n)
    assert path.stat().st_size < 64 << 10
    inflated = {"bytes": 0}
    real_read = zipfile.ZipExtFile.read

    def counting_read(self: zipfile.ZipExtFile, size: int = -1) -> bytes:
        data = real_read(self, size)
        inflated["bytes"] += len(data)
        return data

    monkeypatch.setattr(zipfile.ZipExtFile, "read", counting_read)
    refused(path, "member 'x.npy' would inflate")
    assert inflated["bytes"] == 0
    assert_one_line_error(capsys, path, "a zip bomb? Save the arrays uncompressed (np.savez).")
    # a small compressed member of zeros (under inflate_floor) is an ordinary all-zero tensor
    small = tmp_path / "zeros.npz"
    np.savez_compressed(small, z=np.zeros(1 << 16, F32))
    (t,) = analyze([str(small)], "bf16").tensors
    assert t.result("bf16").rms_rel_err == 0.0 and t.stats.zero_frac == 1.0


def test_npz_member_count_and_size_budgets(tmp_path: Path) -> None:
    path = tmp_path / "n.npz"
    np.savez(path, **{f"m{i}": np.ones(4, F32) for i in range(4)})
    assert len(scan([str(path)], ReadLimits(max_entries=4)).tensors) == 4
    refused(path, "4 members in the archive; the lab reads at most 3 entries", ReadLimits(max_entries=3))
    refused(path, "its members inflate to", ReadLimits(max_npz_bytes=4 * 140))


def test_npz_members_are_streamed_chunk_by_chunk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A 1-D member of 5 segments and a matrix: no read holds more than one chunk, and the report is
    the in-memory one of the same arrays (bit for bit)."""
    rng = np.random.default_rng(7)
    arrays = {"line": rng.standard_normal(5 * LINE_SEGMENT + 32).astype(F32),
              "mat": rng.standard_normal((300, 256)).astype(F32)}
    path = tmp_path / "s.npz"
    np.savez_compressed(path, **arrays)
    largest = {"n": 0}
    real = readers.NpzRows._elements

    def spy(self: readers.NpzRows, first: int, count: int) -> np.ndarray:
        largest["n"] = max(largest["n"], count)
        return real(self, first, count)

    monkeypatch.setattr(readers.NpzRows, "_elements", spy)
    chunk = LINE_SEGMENT
    report = analyze([str(path)], "bf16,e4m3_row,mxfp4", chunk_elements=chunk)
    assert 0 < largest["n"] <= chunk
    assert _results(report) == _results(analyze_arrays(arrays, "bf16,e4m3_row,mxfp4", chunk_elements=chunk))


def test_streamed_member_memory_stays_near_one_chunk(tmp_path: Path) -> None:
    """A coarse ceiling (tracemalloc sees numpy's buffers): 4 M float32 elements (16 MB stored, a
    whole-tensor pass would hold several hundred MB of float64 temporaries) analysed in chunks of
    2^16 elements stay under 64 MB."""
    path = tmp_path / "big.npz"
    np.savez(path, x=np.random.default_rng(1).standard_normal(1 << 22).astype(F32))
    tracemalloc.start()
    try:
        (t,) = analyze([str(path)], "bf16", chunk_elements=1 << 16).tensors
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert t.stats.numel == 1 << 22 and peak < 64 << 20, peak


def test_npz_repeated_names_fortran_members_and_bad_crc(tmp_path: Path) -> None:
    path = tmp_path / "dup.npz"
    a, b = np.arange(4, dtype=F32), np.arange(6, dtype=F32).reshape(2, 3)
    with zipfile.ZipFile(path, "w") as zf, pytest.warns(UserWarning, match="Duplicate name"):
        for arr in (a, b):
            buf = io.BytesIO()
            np.lib.format.write_array(buf, np.asfortranarray(arr))
            zf.writestr("x.npy", buf.getvalue())
    inv = scan([str(path)])
    assert [t.name for t in inv.tensors] == ["x", "x#2"] and len(inv.notes) == 1
    np.testing.assert_array_equal(open_rows(inv.tensors[0]).read(0, 1), [a])
    np.testing.assert_array_equal(open_rows(inv.tensors[1]).read(0, 2), b)  # Fortran order, read whole
    bad = tmp_path / "crc.npz"
    data = np.arange(1 << 14, dtype=F32)
    np.savez(bad, x=data)
    raw = bytearray(bad.read_bytes())
    at = raw.find(data.tobytes())
    raw[at + data.nbytes - 8] ^= 0xFF  # a data byte near the end: the stored member's CRC no longer matches
    bad.write_bytes(bytes(raw))
    (ref,) = scan([str(bad)]).tensors
    with pytest.raises(LabReadError, match=r"crc\.npz\[x\]: corrupt member \(Bad CRC-32"):
        open_rows(ref).read(0, 1)  # the scan read the header only; the CRC is checked at the member's end


# ------------------------------------------------------------------------------------------------
# 4. regular files only; links
# ------------------------------------------------------------------------------------------------


def test_fifos_are_refused_without_blocking(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                            no_hang: None) -> None:
    fifo = tmp_path / "x.npy"
    os.mkfifo(fifo)
    refused(fifo, "not a regular file (a named pipe (FIFO)); the lab reads regular files only")
    assert_one_line_error(capsys, fifo, "a named pipe (FIFO)")
    with pytest.raises(LabReadError, match="a named pipe"):
        readers.open_regular(str(fifo))
    # a FIFO shard of a sharded checkpoint
    shards = tmp_path / "ckpt"
    shards.mkdir()
    os.mkfifo(shards / "m-1.safetensors")
    (shards / "m.index.json").write_text(json.dumps({"weight_map": {"w": "m-1.safetensors"}}))
    with pytest.raises(LabReadError, match=r"m-1\.safetensors: not a regular file \(a named pipe"):
        scan([str(shards / "m.index.json")])
    # a FIFO in a folder is listed as skipped and the rest is analysed
    good_npy(shards / "good.npy")
    rc, out, err = cli(capsys, str(shards), "--recipes", "bf16")
    assert rc == 0, err
    assert "skipped " + str(shards / "m-1.safetensors") + ": not a regular file (a named pipe (FIFO))" in out
    assert "good.npy [16, 64] FP32: best bf16" in out


def test_device_files_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str], no_hang: None) -> None:
    link = tmp_path / "rand.npz"
    os.symlink("/dev/urandom", link)
    refused(link, "not a regular file (a character device)")
    assert_one_line_error(capsys, link, "a character device")
    inv = scan([str(tmp_path)])  # in a folder: skipped
    assert [(s.path, s.reason.split(";")[0]) for s in inv.skipped] == [(str(link), "not a regular file (a character "
                                                                                 "device)")]


def test_links_out_of_an_index_folder_are_refused(tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    safetensors_numpy.save_file({"w": np.ones((2, 16), F32)}, str(outside / "secret.safetensors"))
    folder = tmp_path / "ckpt"
    folder.mkdir()
    os.symlink(outside / "secret.safetensors", folder / "m-1.safetensors")
    (folder / "m.index.json").write_text(json.dumps({"weight_map": {"w": "m-1.safetensors"}}))
    refused(folder / "m.index.json", "shard 'm-1.safetensors' is a link that leads out of the index's folder")
    # a link to a file of the same folder is fine
    os.remove(folder / "m-1.safetensors")
    safetensors_numpy.save_file({"w": np.ones((2, 16), F32)}, str(folder / "real.safetensors"))
    os.symlink("real.safetensors", folder / "m-1.safetensors")
    assert [t.name for t in scan([str(folder / "m.index.json")]).tensors] == ["w"]


def test_a_linked_copy_in_a_folder_counts_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good_npy(tmp_path / "a.npy")
    os.symlink("a.npy", tmp_path / "b.npy")
    os.link(tmp_path / "a.npy", tmp_path / "c.npy")
    inv = scan(str(tmp_path))  # one path given as text, not as a list
    assert inv.files == [str(tmp_path / "a.npy")] and len(inv.tensors) == 1
    assert inv.notes == [f"{tmp_path / n} is the same file as {tmp_path / 'a.npy'} (a link): read once"
                         for n in ("b.npy", "c.npy")]
    rc, out, _ = cli(capsys, str(tmp_path), "--recipes", "bf16")
    assert rc == 0 and "1 file(s): 1 tensor(s) analysed" in out


def test_a_corrupt_file_in_a_folder_is_skipped(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good_npy(tmp_path / "good.npy")
    (tmp_path / "bad.npy").write_bytes(b"\x93NUMPY garbage")
    torch.save([_dag(3, torch.ones(1))], tmp_path / "ok.pt")
    rc, out, err = cli(capsys, str(tmp_path), "--recipes", "bf16")
    assert rc == 0, err
    assert f"skipped {tmp_path / 'bad.npy'}: not a .npy array or corrupt" in out
    assert "2 file(s): 9 tensor(s) analysed, 1 skipped" in out
    rc, _, _ = cli(capsys, str(tmp_path / "*.npy"), "--recipes", "bf16", "--quiet")  # a glob: the same
    assert rc == 0
    assert_one_line_error(capsys, tmp_path / "bad.npy", "not a .npy array or corrupt")  # named: an error


# ------------------------------------------------------------------------------------------------
# 5. flags instead of silent wrong answers
# ------------------------------------------------------------------------------------------------


def test_all_nan_and_all_inf_tensors_are_flagged_not_exact(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    np.save(tmp_path / "a_nan.npy", np.full((4, 64), np.nan, F32))
    np.save(tmp_path / "b_inf.npy", np.full((4, 64), -np.inf, F32))
    good_npy(tmp_path / "c_good.npy")
    report = analyze([str(tmp_path)], "bf16,e4m3_tensor")
    nan_t, inf_t, good = report.tensors
    for t in (nan_t, inf_t):
        assert [f.code for f in t.flags] == ["no_finite"] and not t.measured
        assert all(r.rms_rel_err is None and r.skipped == "every element is NaN or ±Inf: there is no error to measure"
                   for r in t.results)
        assert t.ranking == [] and t.best is None
    assert [r["complete"] for r in report.ranking] == [True, True]  # over the measured tensor only
    assert report.best == good.best == "bf16"
    out = tmp_path / "r.json"
    rc, text, _ = cli(capsys, str(tmp_path), "--recipes", "bf16,e4m3_tensor", "--json", str(out), "--csv",
                      str(tmp_path / "r.csv"))
    assert rc == 0 and "! every one of its 256 elements is NaN or ±Inf" in text
    data = strictjson.loads(out.read_text())
    assert data["tensors"][0]["flags"][0]["code"] == "no_finite" and data["best"] == "bf16"
    assert data["tensors"][0]["results"][0]["sqnr_db"] is None  # not "inf": nothing was measured
    assert "no_finite" in (tmp_path / "r.csv").read_text()
    # in memory (what the RecipeLab page runs)
    mem = analyze_arrays({"nan": np.full((2, 32), np.nan, F32)}, "bf16")
    assert mem.tensors[0].flags[0].code == "no_finite" and mem.best is None and mem.ranking[0]["rms_rel_err"] is None


def _oracle_rel(x: np.ndarray, x_hat: np.ndarray) -> float:
    """‖x̂ − x‖ / ‖x‖ with both divided by a non-power-of-two near their size first."""
    s = float(np.max(np.abs(x))) * 3.0
    with np.errstate(over="ignore", invalid="ignore"):
        return float(np.linalg.norm((x_hat - x) / s) / np.linalg.norm(x / s))


def test_fp64_beyond_and_below_fp32_get_true_errors_and_no_best(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    rng = np.random.default_rng(3)
    recipes = parse_recipes("bf16,e4m3_tensor,int8_row,mxfp8_e4m3,nvfp4")
    for scale, flag in ((1e300, "beyond_fp32"), (1e-300, "below_fp32")):
        x = (1.0 + rng.random((4, 64))) * scale
        path = tmp_path / f"x{scale:.0e}.npy"
        np.save(path, x)
        (t,) = analyze([str(path)], recipes).tensors
        for r in recipes:
            got = t.result(r.name).rms_rel_err
            assert got is not None and not math.isnan(got), (r.name, got)  # before: NaN (1e300) or 0 (1e-300)
            want = _oracle_rel(x, quantize_chunk(r, x).x_hat)
            assert got == pytest.approx(want, rel=1e-12), r.name
        if scale > 1:
            assert t.result("bf16").rms_rel_err == math.inf  # every element overflows BF16
        else:
            assert t.result("bf16").rms_rel_err == 1.0  # every element flushes to 0
        assert [f.code for f in t.flags] == [flag, "no_usable_recipe"] and t.best is None
        assert t.stats.rms == pytest.approx(float(np.sqrt(np.mean((x / scale) ** 2))) * scale, rel=1e-12)
        rc, out, _ = cli(capsys, str(path), "--recipes", "bf16,e4m3_tensor")
        assert rc == 0 and "best over every tensor: none" in out and ": best none;" in out


def test_sums_are_the_bits_of_the_plain_sums_for_an_ordinary_tensor() -> None:
    """The power-of-two rescaling changes no bit: Σx² and Σ(x̂ − x)² as the lab reports them equal
    per-row float64 sums accumulated with fsum (the plain formula), exactly."""
    x = (np.random.default_rng(0).standard_normal((64, 96)) * 37.0).astype(F32)
    x[0, 0] = 1e-40  # a subnormal
    (t,) = analyze_arrays({"x": x}, "e4m3_row,nvfp4").tensors
    x64 = x.astype(np.float64)
    for name in ("e4m3_row", "nvfp4"):
        d = quantize_chunk(RECIPES[name], x).x_hat - x64
        r = t.result(name)
        assert r.signal == math.fsum((x64 * x64).sum(axis=1).tolist())
        assert r.error == math.fsum((d * d).sum(axis=1).tolist())
        assert r.rms_rel_err == math.sqrt(r.error / r.signal)
    assert t.stats.rms == math.sqrt(math.fsum((x64 * x64).sum(axis=1).tolist()) / x.size)


def test_flag_codes_are_declared_once() -> None:
    from lowprec.simulations.lab.measure import Flag

    assert set(FLAGS) == {"nonfinite", "no_finite", "beyond_fp32", "below_fp32", "no_usable_recipe"}
    with pytest.raises(ValueError, match="unknown flag 'nope'"):
        Flag("nope", "x")


# ------------------------------------------------------------------------------------------------
# 6. the command: outputs, workers, scheduler, ranking notes
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("option, target, expect", [
    ("--json", "DIR", "is a directory"), ("--csv", "DIR", "is a directory"), ("--html", "DIR", "is a directory"),
    ("--csv", "/proc/x", "is not writable"), ("--html", "/proc/self/r.html", "is not writable"),
])
def test_output_paths_are_checked_before_any_work(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                  monkeypatch: pytest.MonkeyPatch, option: str, target: str,
                                                  expect: str) -> None:
    from lowprec.app.commands import analyze_cmd

    def no_work(*a: Any, **k: Any) -> Any:
        raise AssertionError("the analysis started before the output path was checked")

    monkeypatch.setattr(analyze_cmd, "analyze", no_work)
    good_npy(tmp_path / "g.npy")
    out = str(tmp_path) if target == "DIR" else target
    rc, _, err = cli(capsys, str(tmp_path / "g.npy"), option, out)
    assert rc == 2 and option in err and expect in err and len(err.splitlines()) == 1, err


def test_workers_are_capped_at_the_cpus(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    import contextlib

    from lowprec.app.commands import analyze_cmd

    monkeypatch.setattr(runner, "available_cpus", lambda: 3)
    monkeypatch.setattr(analyze_cmd, "available_cpus", lambda: 3)
    assert (worker_count(10_000), worker_count(2), worker_count(3)) == (3, 2, 3)
    asked: list[int] = []

    @contextlib.contextmanager
    def fake_executor(workers: int, scheduler: str | None = None) -> Iterator[None]:
        asked.append(workers)
        yield None

    monkeypatch.setattr(analyze_cmd, "open_executor", fake_executor)
    good_npy(tmp_path / "g.npy")
    rc, _, err = cli(capsys, str(tmp_path / "g.npy"), "--recipes", "bf16", "--workers", "10000")
    assert rc == 0 and asked == [3]
    assert err == "lowprec analyze: --workers 10000 is capped at 3, the CPUs this process may use (3)"
    with open_executor(workers=10_000) as pool:  # the API caps too (a pool spawns nothing until used)
        assert pool is not None and pool._max_workers == 3  # type: ignore[attr-defined]


@pytest.mark.parametrize("address", ["notaurl", "tcp://", "foo://bar:1", "tcp://256.1.1.1:8786", "tcp://host:0",
                                     "tcp://host:99999", "tcp://bad_host!:8786", "inproc://", " "])
def test_scheduler_address_is_checked_first(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                            address: str) -> None:
    with pytest.raises(ValueError, match="scheduler address"):
        check_scheduler_address(address)
    good_npy(tmp_path / "g.npy")
    rc, _, err = cli(capsys, str(tmp_path / "g.npy"), "--scheduler", address, "--quiet")
    assert rc == 2 and len(err.splitlines()) == 1 and "scheduler address" in err, err


def test_well_formed_scheduler_addresses_pass() -> None:
    for address in ("tcp://127.0.0.1:8786", "localhost:8786", "tls://sched.example.org:8786", "tcp://[::1]:8786",
                    "inproc://10.0.0.1/123/1", "ws://h-1:80"):
        assert check_scheduler_address(address) == address


def test_partial_recipes_are_explained_and_the_footnote_needs_a_front() -> None:
    x = np.random.default_rng(0).standard_normal((64, 64)).astype(F32)
    g = np.random.default_rng(1).standard_normal(48).astype(F32)
    report = analyze_arrays({"x": x, "g": g}, "mxfp4,e4m3_tensor")
    rows = {r["recipe"]: r for r in report.ranking}
    assert rows["e4m3_tensor"]["note"] == "" and rows["e4m3_tensor"]["rank"] == 1
    note = rows["mxfp4"]["note"]
    assert note.startswith("applies to 1 of 2 tensors, so it ranks after every recipe that applies to all of them")
    assert note.endswith("not to g (blocks of 32 do not divide the last axis (48))")
    lines = report.summary_lines()
    assert f"      {note}" in lines and any(line.startswith("  (* on the Pareto front") for line in lines)
    # every complete recipe NaN (NVFP4's tensor scale from an Inf amax): no '*' row, so no footnote
    a = x.copy()
    a[0, 0] = np.inf
    lines = analyze_arrays({"a": a}, "nvfp4").summary_lines()
    assert not any("*" in line for line in lines), lines
    assert "best over every tensor: none (no recipe applies to every tensor with a finite error below 1)" in lines


# ------------------------------------------------------------------------------------------------
# 7. the measure mutants' oracles: clipping of ±Inf, the error map's tile
# ------------------------------------------------------------------------------------------------


def test_infinite_inputs_are_not_counted_as_clipped() -> None:
    """Clipped = finite inputs the cast saturated (or overflowed to Inf): ±Inf and NaN inputs are
    none of them. Oracle: ml_dtypes' BF16 cast and numpy's FP16 cast of the finite inputs."""
    x = np.array([[np.inf, -np.inf, np.nan, 1.0, 3.3e38, -3.3e38, 7e4, 2.0]], F32)
    (t,) = analyze_arrays({"x": x}, "bf16,fp16").tensors
    fin = x[np.isfinite(x)]
    with np.errstate(over="ignore"):
        bf16_over = int(np.count_nonzero(np.isinf(fin.astype(ml_dtypes.bfloat16).astype(F32))))
        fp16_over = int(np.count_nonzero(np.isinf(fin.astype(np.float16))))
    assert (t.result("bf16").clipped, t.result("fp16").clipped) == (bf16_over, fp16_over) == (0, 3)
    assert t.result("bf16").clipped_frac == 0.0 and t.result("fp16").clipped_frac == 3 / 8


@pytest.mark.parametrize("rows, cols", [(100, 64), (65, 48), (1000, 2048), (129, 4096), (3, 7), (4096, 32)])
def test_error_map_tiles_give_at_most_64_cells(rows: int, cols: int) -> None:
    """The tile is the smallest whole number of scale blocks that keeps the map within 64 cells
    along each axis (oracle: the ceiling formula, written out)."""
    for name in ("nvfp4", "mxfp4", "bf16", "e4m3_tensor", "int4_g32"):
        r = RECIPES[name]
        br, bc = r.block
        if br == 0 or (br, bc) == (1, 1):
            br, bc = 1, min(32, cols)
        th, tw = map_tile(r, rows, cols)
        assert th == br * max(1, math.ceil(rows / (br * 64))) and tw == bc * max(1, math.ceil(cols / (bc * 64)))
        assert math.ceil(rows / th) <= 64 and math.ceil(cols / tw) <= 64
    d = analyze_arrays({"x": np.ones((100, 64), F32)}, "nvfp4", detail=("x", "nvfp4")).tensors[0].detail
    assert d is not None and d.tile == (2, 16) and (d.map_rows, d.map_cols) == (50, 4)


# ------------------------------------------------------------------------------------------------
# 1-D tensors in segments; out of memory
# ------------------------------------------------------------------------------------------------


def test_a_long_1d_tensor_is_read_in_segments(monkeypatch: pytest.MonkeyPatch) -> None:
    """No read holds more than a chunk; the figures are those of the same values as one (1, n) row
    analysed whole (to the last bits of a sum), and the same for every chunk size."""
    rng = np.random.default_rng(3)
    v = (rng.standard_t(4, 3 * LINE_SEGMENT + 192) * 0.02).astype(F32)
    v[100] = 40.0
    largest = {"n": 0}
    real_span = ArrayRows.read_span

    def spy(self: ArrayRows, lo: int, hi: int) -> np.ndarray:
        largest["n"] = max(largest["n"], hi - lo)
        return real_span(self, lo, hi)

    monkeypatch.setattr(ArrayRows, "read_span", spy)
    recipes = [r for r in parse_recipes("all") if r.name not in ("e4m3_column", "nvfp4_16x16")]
    seg = analyze_arrays({"v": v}, recipes, chunk_elements=LINE_SEGMENT, detail=("v", "nvfp4")).tensors[0]
    assert largest["n"] == LINE_SEGMENT
    default = analyze_arrays({"v": v}, recipes, detail=("v", "nvfp4")).tensors[0]
    assert [r.to_dict() for r in seg.results] == [r.to_dict() for r in default.results]
    whole = analyze_arrays({"v": v.reshape(1, -1)}, recipes, detail=("v", "nvfp4")).tensors[0]
    for a, b in zip(seg.results, whole.results):
        assert (a.skipped, a.clipped, a.zeroed, a.max_abs_err) == (b.skipped, b.clipped, b.zeroed, b.max_abs_err)
        if a.skipped is None:
            assert a.rms_rel_err == pytest.approx(b.rms_rel_err, rel=1e-13), a.recipe
    assert seg.detail is not None and whole.detail is not None
    assert seg.detail.counts_input == whole.detail.counts_input and seg.detail.tile == whole.detail.tile
    np.testing.assert_allclose(seg.detail.map_rel_err, whole.detail.map_rel_err, rtol=1e-12)


def test_out_of_memory_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                   monkeypatch: pytest.MonkeyPatch) -> None:
    class Starved:
        rows, cols = 4, 1 << 30

        def read(self, lo: int, hi: int) -> np.ndarray:
            raise MemoryError

        def read_span(self, lo: int, hi: int) -> np.ndarray:
            raise MemoryError

    ref = TensorRef("w.npy", "", "npy", (4, 1 << 30), "FP32")
    with pytest.raises(ValueError, match=r"^w\.npy \(4×1073741824\): out of memory for chunks of 1048576 elements; "
                                         r"lower --chunk-elements"):
        analyze_rows(ref, Starved(), parse_recipes("bf16"))
    good_npy(tmp_path / "g.npy")
    monkeypatch.setattr(readers.FileRows, "read", lambda self, lo, hi: Starved().read(lo, hi))
    assert_one_line_error(capsys, tmp_path / "g.npy", "out of memory", "--recipes", "bf16")
