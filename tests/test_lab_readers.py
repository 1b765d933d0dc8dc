"""The recipe lab's readers on files this test writes: .npy (C and Fortran order, FP16, object and
bfloat16-as-void arrays), .npz, .safetensors (a sharded pair with its index, a glob, a BF16 tensor),
PyTorch state dicts (nested, a non-tensor entry, a BF16 tensor, an integer tensor, a pickled object),
truncated and corrupt files (one-line errors naming the file), and unsupported paths. Values read
back are compared with what was written as unsigned-integer views (bit for bit)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
import pytest

from lowprec.simulations.lab.readers import (
    LabReadError,
    Inventory,
    TensorRef,
    expand_paths,
    matrix_shape,
    open_rows,
    scan,
)

torch = pytest.importorskip("torch")
safetensors_numpy = pytest.importorskip("safetensors.numpy")
safetensors_torch = pytest.importorskip("safetensors.torch")


def read_all(ref: TensorRef, chunk_rows: int = 3) -> np.ndarray:
    """Every row of `ref`, read in chunks of `chunk_rows` rows, reshaped to the tensor's shape."""
    src = open_rows(ref)
    parts = [src.read(lo, min(src.rows, lo + chunk_rows)) for lo in range(0, src.rows, chunk_rows)]
    return np.concatenate(parts, axis=0).reshape(ref.shape)


def bits(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a)
    return a.view({2: np.uint16, 4: np.uint32, 8: np.uint64}[a.dtype.itemsize])


def by_name(inv: Inventory) -> dict[str, TensorRef]:
    return {t.name: t for t in inv.tensors}


def test_matrix_view() -> None:
    assert matrix_shape((4, 3, 8)) == (12, 8)
    assert matrix_shape((7,)) == (1, 7)
    assert matrix_shape(()) == (1, 1)


def test_npy_c_order_fortran_and_fp16(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((10, 6)).astype(np.float32)
    x[0, 0] = -0.0
    x[1, 1] = np.nan
    np.save(tmp_path / "c.npy", x)
    np.save(tmp_path / "f.npy", np.asfortranarray(x))
    h = rng.standard_normal((5, 4, 3)).astype(np.float16)
    np.save(tmp_path / "h.npy", h)
    inv = scan([str(tmp_path / "c.npy"), str(tmp_path / "f.npy"), str(tmp_path / "h.npy")])
    c, f, hh = inv.tensors
    assert (c.dtype, c.shape, c.fortran_order, c.label) == ("FP32", (10, 6), False, "c.npy")
    assert f.fortran_order
    np.testing.assert_array_equal(bits(read_all(c)), bits(x))  # -0 and the NaN's bits survive
    np.testing.assert_array_equal(bits(read_all(f)), bits(x))
    got = read_all(hh)
    assert got.dtype == np.float32  # FP16 widened exactly
    np.testing.assert_array_equal(bits(got), bits(h.astype(np.float32)))


def test_npy_skips_with_reasons(tmp_path: Path) -> None:
    np.save(tmp_path / "ints.npy", np.arange(6, dtype=np.int64))
    np.save(tmp_path / "obj.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
    np.save(tmp_path / "bf16.npy", np.ones(4, np.float32).astype(ml_dtypes.bfloat16))  # written as |V2
    inv = scan([str(tmp_path / n) for n in ("ints.npy", "obj.npy", "bf16.npy")])
    assert inv.tensors == []
    reasons = [s.reason for s in inv.skipped]
    assert reasons[0] == "dtype INT64 (the lab analyses BF16, FP16, FP32, FP64)"  # one spelling (issue 33)
    assert reasons[1].startswith("object array (pickled Python objects are never loaded)")
    assert reasons[2].startswith("raw 2-byte void dtype '|V2'")


def test_npz_members_and_skips(tmp_path: Path) -> None:
    x = np.linspace(-3, 3, 24, dtype=np.float64).reshape(4, 6)
    np.savez_compressed(tmp_path / "a.npz", weight=x, step=np.int32(7), mask=np.ones(3, bool))
    inv = scan([str(tmp_path / "a.npz")])
    refs = by_name(inv)
    assert set(refs) == {"weight"} and refs["weight"].dtype == "FP64"
    np.testing.assert_array_equal(bits(read_all(refs["weight"])), bits(x))
    assert {s.name: s.reason.split(" (")[0] for s in inv.skipped} == {"step": "dtype INT32", "mask": "dtype BOOL"}


def _shard(path: Path, tensors: dict[str, Any]) -> None:
    safetensors_torch.save_file(tensors, str(path))


def test_sharded_safetensors_pair_index_and_glob(tmp_path: Path) -> None:
    g = torch.Generator().manual_seed(0)
    a = torch.randn(6, 8, generator=g)
    b = torch.randn(3, 16, generator=g).to(torch.bfloat16)
    c = torch.randn(5, generator=g).to(torch.float16)
    _shard(tmp_path / "model-00001-of-00002.safetensors", {"layers.0.w": a, "layers.0.ids": torch.arange(4)})
    _shard(tmp_path / "model-00002-of-00002.safetensors", {"layers.1.w": b, "norm": c})
    index = {"metadata": {}, "weight_map": {"layers.0.w": "model-00001-of-00002.safetensors",
                                            "layers.0.ids": "model-00001-of-00002.safetensors",
                                            "layers.1.w": "model-00002-of-00002.safetensors",
                                            "norm": "model-00002-of-00002.safetensors"}}
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps(index))
    for paths in ([str(tmp_path / "model.safetensors.index.json")], [str(tmp_path / "model-*.safetensors")],
                  [str(tmp_path)]):
        inv = scan(paths)
        assert [Path(f).name for f in inv.files] == ["model-00001-of-00002.safetensors",
                                                     "model-00002-of-00002.safetensors"], paths
        refs = by_name(inv)
        assert set(refs) == {"layers.0.w", "layers.1.w", "norm"}
        assert [(s.name, s.reason) for s in inv.skipped] == [
            ("layers.0.ids", "dtype INT64 (the lab analyses BF16, FP16, FP32, FP64)")]
    assert refs["layers.1.w"].dtype == "BF16" and refs["norm"].dtype == "FP16"
    np.testing.assert_array_equal(bits(read_all(refs["layers.0.w"])), bits(a.numpy()))
    # BF16 widened exactly: the float32 bits are the bfloat16 bits followed by 16 zeros
    got = read_all(refs["layers.1.w"], chunk_rows=2)
    want = b.view(torch.int16).numpy().view(np.uint16).astype(np.uint32) << 16
    np.testing.assert_array_equal(bits(got), want)
    np.testing.assert_array_equal(bits(read_all(refs["norm"])), bits(c.float().numpy()))


def test_safetensors_written_by_numpy(tmp_path: Path) -> None:
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    safetensors_numpy.save_file({"x": x}, str(tmp_path / "n.safetensors"))
    (ref,) = scan([str(tmp_path / "n.safetensors")]).tensors
    np.testing.assert_array_equal(read_all(ref), x)


def test_state_dict_nested_non_tensor_and_bf16(tmp_path: Path) -> None:
    g = torch.Generator().manual_seed(1)
    w = torch.randn(4, 8, generator=g).to(torch.bfloat16)
    sd = {"model": {"layer.weight": w, "layer.bias": torch.randn(8, generator=g)},
          "step": 12, "name": "run-1", "lr": [0.1, torch.tensor([2.0, 3.0])],
          "counts": torch.arange(3), "fp8": torch.zeros(4).to(torch.float8_e4m3fn)}
    torch.save(sd, tmp_path / "ckpt.pt")
    inv = scan([str(tmp_path / "ckpt.pt")])
    refs = by_name(inv)
    assert set(refs) == {"model.layer.weight", "model.layer.bias", "lr.1"}
    assert refs["model.layer.weight"].dtype == "BF16" and refs["model.layer.weight"].shape == (4, 8)
    skipped = {s.name: s.reason for s in inv.skipped}
    assert skipped == {"step": "not a tensor (int)", "name": "not a tensor (str)", "lr.0": "not a tensor (float)",
                       "counts": "dtype INT64 (the lab analyses BF16, FP16, FP32, FP64)",
                       "fp8": "dtype E4M3FN (the lab analyses BF16, FP16, FP32, FP64)"}
    got = read_all(refs["model.layer.weight"])
    np.testing.assert_array_equal(bits(got), w.view(torch.int16).numpy().view(np.uint16).astype(np.uint32) << 16)
    np.testing.assert_array_equal(read_all(refs["lr.1"]), [2.0, 3.0])


def test_bare_tensor_file(tmp_path: Path) -> None:
    torch.save(torch.ones(2, 3), tmp_path / "t.pth")
    (ref,) = scan([str(tmp_path / "t.pth")]).tensors
    assert ref.name == "tensor" and ref.shape == (2, 3)


class Evil:
    def __reduce__(self) -> Any:
        return (print, ("this must never run",))


def test_state_dict_with_an_object_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    torch.save({"x": Evil()}, tmp_path / "evil.pt")
    with pytest.raises(LabReadError, match=r"evil\.pt: holds Python objects other than tensors") as info:
        scan([str(tmp_path / "evil.pt")])
    assert "\n" not in str(info.value)
    assert "never run" not in capsys.readouterr().out


def _truncate(path: Path, keep: float) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: int(len(data) * keep)])


@pytest.mark.parametrize("kind", ["npy", "npz", "safetensors", "pt"])
def test_truncated_file_is_one_line_naming_it(tmp_path: Path, kind: str) -> None:
    x = np.random.default_rng(2).standard_normal((64, 64)).astype(np.float32)
    path = tmp_path / f"cut.{kind}"
    if kind == "npy":
        np.save(path, x)
    elif kind == "npz":
        np.savez(path, x=x)
    elif kind == "safetensors":
        safetensors_numpy.save_file({"x": x}, str(path))
    else:
        torch.save({"x": torch.from_numpy(x)}, path)
    _truncate(path, 0.6)
    with pytest.raises(LabReadError, match=r"truncated|corrupt|not a") as info:
        inv = scan([str(path)])
        for ref in inv.tensors:  # a reader that defers reading fails on the first chunk
            read_all(ref)
    message = str(info.value)
    assert message.startswith(str(path)) and "\n" not in message, message
    assert any(w in message for w in ("truncated", "corrupt", "not a")), message


def test_garbage_and_unsupported_paths(tmp_path: Path) -> None:
    (tmp_path / "junk.safetensors").write_bytes(b"\x05\x00\x00\x00\x00\x00\x00\x00{abc}")
    with pytest.raises(LabReadError, match=r"junk\.safetensors: not a safetensors file or corrupt"):
        scan([str(tmp_path / "junk.safetensors")])
    (tmp_path / "notes.txt").write_text("hello")
    with pytest.raises(LabReadError, match=r"notes\.txt: unsupported file type '\.txt'"):
        scan([str(tmp_path / "notes.txt")])
    with pytest.raises(LabReadError, match=r"missing\.npy: no such file"):
        scan([str(tmp_path / "missing.npy")])
    with pytest.raises(LabReadError, match=r"nothing-\*\.npy: no file matches this pattern"):
        expand_paths([str(tmp_path / "nothing-*.npy")])
    (tmp_path / "bad.index.json").write_text("[1, 2]")
    with pytest.raises(LabReadError, match=r"bad\.index\.json: not a sharded-checkpoint index"):
        scan([str(tmp_path / "bad.index.json")])


def test_state_dict_without_torch_names_the_extra(tmp_path: Path) -> None:
    import subprocess
    import sys

    torch.save({"w": torch.ones(2)}, tmp_path / "w.pt")
    code = (
        "import sys, builtins\n"
        "real = builtins.__import__\n"
        "def fake(name, *a, **k):\n"
        "    if name == 'torch' or name.startswith('torch.'):\n"
        "        raise ModuleNotFoundError(\"No module named 'torch'\", name='torch')\n"
        "    return real(name, *a, **k)\n"
        "builtins.__import__ = fake\n"
        "from lowprec.app.cli import main\n"
        f"sys.exit(main(['analyze', {str(tmp_path / 'w.pt')!r}, '--quiet']))\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 2, r.stderr
    line = r.stderr.strip()
    from lowprec.extras import install_command  # the command that works for this install

    assert line == (f"lowprec: error: reading the PyTorch file {tmp_path / 'w.pt'} needs torch, which is not "
                    f"installed: {install_command('torch')}"), line


# ------------------------------------------------------------------------------------------------
# hostile files: sizes a header promises are checked before anything is allocated, nothing is
# ever unpickled, and each refusal is one line naming the file
# ------------------------------------------------------------------------------------------------


def _npy_with_header(path: Path, header: str, payload: bytes) -> None:
    text = (header.ljust(118) + "\n").encode("latin1")
    path.write_bytes(b"\x93NUMPY\x01\x00" + len(text).to_bytes(2, "little") + text + payload)


def test_npy_header_promising_more_than_the_file(tmp_path: Path) -> None:
    path = tmp_path / "huge.npy"
    _npy_with_header(path, "{'descr': '<f4', 'fortran_order': False, 'shape': (1000000, 1000000), }", b"\0" * 64)
    with pytest.raises(LabReadError, match=r"huge\.npy: truncated: the header promises 4000000000000 bytes of data, "
                                           r"the file holds 64"):
        scan([str(path)])
    neg = tmp_path / "neg.npy"
    _npy_with_header(neg, "{'descr': '<f4', 'fortran_order': False, 'shape': (-5, 4), }", b"\0" * 80)
    with pytest.raises(LabReadError, match=r"neg\.npy: corrupt \.npy header: negative dimension in shape \(-5, 4\)"):
        scan([str(neg)])


def test_npz_member_header_lying_about_its_size(tmp_path: Path) -> None:
    import zipfile

    member = tmp_path / "x.npy"  # a 4-element array whose header claims 999999999 elements
    _npy_with_header(member, "{'descr': '<f4', 'fortran_order': False, 'shape': (999999999,), }", b"\0" * 16)
    with zipfile.ZipFile(tmp_path / "lie.npz", "w", zipfile.ZIP_DEFLATED) as zf:
        zf.write(member, "x.npy")
    with pytest.raises(LabReadError, match=r"lie\.npz\[x\]: corrupt member: the header promises 3999999996 bytes "
                                           r"of data, the archive holds 16"):
        scan([str(tmp_path / "lie.npz")])


class EvilArray:
    def __reduce__(self) -> Any:
        return (print, ("this must never run either",))


def test_pickled_objects_in_npy_and_npz_are_never_loaded(tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    evil = np.array([EvilArray()], dtype=object)
    np.save(tmp_path / "evil.npy", evil, allow_pickle=True)
    np.savez(tmp_path / "evil.npz", bad=evil, good=np.ones(3, np.float32))
    inv = scan([str(tmp_path / "evil.npy"), str(tmp_path / "evil.npz")])
    assert [t.name for t in inv.tensors] == ["good"]
    assert [(s.name, s.reason.split(" (")[0]) for s in inv.skipped] == [("", "object array"), ("bad", "object array")]
    read_all(inv.tensors[0])
    assert "never run" not in capsys.readouterr().out


def test_safetensors_with_lying_or_huge_header(tmp_path: Path) -> None:
    big = tmp_path / "big.safetensors"
    big.write_bytes((1 << 60).to_bytes(8, "little") + b"{}")
    with pytest.raises(LabReadError, match=r"big\.safetensors: not a safetensors file or corrupt \(.*header too large"):
        scan([str(big)])
    header = json.dumps({"x": {"dtype": "F32", "shape": [1000, 1000], "data_offsets": [0, 4000000]}}).encode()
    lie = tmp_path / "lie.safetensors"
    lie.write_bytes(len(header).to_bytes(8, "little") + header + b"\0" * 16)
    with pytest.raises(LabReadError, match=r"lie\.safetensors: not a safetensors file or corrupt"):
        scan([str(lie)])


def test_legacy_torch_file_is_refused_with_the_fix(tmp_path: Path) -> None:
    torch.save({"w": torch.ones(3)}, tmp_path / "old.pt", _use_new_zipfile_serialization=False)
    with pytest.raises(LabReadError, match=r"old\.pt: is in torch's legacy \(non-zip\) format, which cannot be "
                                           r"memory-mapped; re-save it with torch.save$"):
        scan([str(tmp_path / "old.pt")])


def test_index_cannot_point_outside_its_folder(tmp_path: Path) -> None:
    for name in ("../secret.safetensors", "/etc/passwd", "sub\\x.safetensors", ".."):
        (tmp_path / "m.index.json").write_text(json.dumps({"weight_map": {"w": name}}))
        with pytest.raises(LabReadError, match=r"m\.index\.json: shard name .* is not a file name in the index's "
                                               r"folder"):
            scan([str(tmp_path / "m.index.json")])
