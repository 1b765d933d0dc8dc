"""Cross-checks against CPU backends: ml_dtypes and torch must match the conventions they claim with
zero mismatches on the full test vectors (1 000 000 random values per format plus every code,
midpoint ± one float32 step, threshold and special); the machinery must be able to say "disagrees".
"""

from __future__ import annotations

import importlib.util
import json
from typing import Any

import ml_dtypes
import numpy as np
import pytest
import torch

from lowprec.app.cli import main as cli_main
from lowprec.gpu import crosscheck, vectors
from lowprec.gpu.backends import Backend, MlDtypesBackend, TorchBackend, backend_names, get_backend

FULL_N_RANDOM = 1_000_000

ML_DTYPES_FORMATS = tuple(MlDtypesBackend.supported)
TORCH_FORMATS = tuple(TorchBackend.supported)


@pytest.mark.parametrize("backend, fmt", [("ml_dtypes", f) for f in ML_DTYPES_FORMATS]
                         + [("torch", f) for f in TORCH_FORMATS], ids=lambda v: str(v))
def test_backend_matches_its_convention_on_full_vectors(backend: str, fmt: str) -> None:
    check = crosscheck.encode_check(get_backend(backend), fmt, n_random=FULL_N_RANDOM,
                                    store_codes=False)
    assert check["tried"] > FULL_N_RANDOM
    assert check["mismatches"] == 0, check["examples"][:5]


@pytest.mark.parametrize("backend", ["ml_dtypes", "torch"])
def test_decode_of_every_code_matches(backend: str) -> None:
    be = get_backend(backend)
    for fmt in be.supported:
        check = crosscheck.decode_check(be, fmt, store_values=False)
        assert check["mismatches"] == 0, (fmt, check["examples"][:5])


def test_backend_codes_are_the_library_casts() -> None:
    # the adapters themselves, against direct calls written here
    x = np.array([1.0, 1.0625, 465.0, -0.0, np.inf, np.nan], np.float32)
    codes, amax = get_backend("ml_dtypes").encode(x, "E4M3FN")
    assert amax is None
    np.testing.assert_array_equal(codes, x.astype(ml_dtypes.float8_e4m3fn).view(np.uint8))
    codes, _ = get_backend("torch").encode(x, "E4M3FN")
    np.testing.assert_array_equal(codes, torch.from_numpy(x).to(torch.float8_e4m3fn)
                                  .view(torch.uint8).numpy())
    # 1.0625 is the midpoint of 1 (0x38) and 1.125 (0x39); even is 0x38. 465 > 464 = midpoint of
    # 448 and the next binade's 480: ml_dtypes overflows to NaN (0x7F), torch saturates (0x7E).
    assert codes[1] == 0x38 and codes[2] == 0x7E
    codes16, _ = get_backend("torch").encode(x, "BF16")
    assert codes16.dtype == np.uint16
    np.testing.assert_array_equal(codes16, torch.from_numpy(x).to(torch.bfloat16)
                                  .view(torch.int16).numpy().view(np.uint16))
    fp16, _ = get_backend("ml_dtypes").encode(x, "FP16")
    np.testing.assert_array_equal(fp16, x.astype(np.float16).view(np.uint16))


def test_encode_scale_is_one_float32_multiply() -> None:
    x = np.array([1.0, 3.0, 300.0], np.float32)
    s = float(np.float32(448 / 300))
    codes, _ = get_backend("ml_dtypes").encode(x, "E4M3FN", encode_scale=s)
    want = (x * np.float32(s)).astype(ml_dtypes.float8_e4m3fn).view(np.uint8)
    np.testing.assert_array_equal(codes, want)


def test_encode_scale_multiplies_in_float32_at_fp16_ties() -> None:
    """fp32(x · encode_scale), not x divided by the decode scale: inputs whose product lands within
    a float32 step of an FP16 tie, where the two roundings of the product give different FP16
    codes. Oracle: numpy's float32 multiply and float16 cast."""
    s = float(np.float32(448 / 300))
    fp16 = np.arange(0x3C00, 0x5800, dtype=np.uint16).view(np.float16).astype(np.float64)
    x0 = ((fp16[:-1] + fp16[1:]) / 2 / s).astype(np.float32)  # ties of [1, 128) over the scale
    x = np.concatenate([x0, np.nextafter(x0, np.float32(np.inf)), np.nextafter(x0, np.float32(-np.inf))])
    codes, _ = get_backend("ml_dtypes").encode(x, "FP16", encode_scale=s)
    want = (x * np.float32(s)).astype(np.float16).view(np.uint16)
    np.testing.assert_array_equal(codes, want)


class _LyingBackend(Backend):
    """torch's casts, claiming ml_dtypes' convention: must be caught."""

    name = "torch"
    convention = "ml_dtypes"
    nan_bits = "torch"
    supported = {"E4M3FN": ("float32",)}

    def encode(self, x: np.ndarray, fmt: Any, *, source_dtype: str = "float32",
               encode_scale: float = 1.0) -> tuple[np.ndarray, float | None]:
        return TorchBackend().encode(x, fmt, encode_scale=encode_scale)

    def decode(self, codes: np.ndarray, fmt: Any) -> np.ndarray:
        return TorchBackend().decode(codes, fmt)


def test_disagreement_is_reported_and_fails_the_command(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(crosscheck, "get_backend", lambda name: _LyingBackend())
    report = crosscheck.run_crosscheck("torch", ["E4M3FN"], n_random=1000)
    enc = [c for c in report["checks"] if c["kind"] == "encode"][0]
    assert not report["ok"] and enc["mismatches"] > 0
    # ml_dtypes turns overflow into NaN (0x7F/0xFF), torch saturates to ±448 (0x7E/0xFE)
    pairs = {(e["backend_code"] & 0x7F, e["model_code"] & 0x7F) for e in enc["examples"]}
    assert (0x7E, 0x7F) in pairs
    assert len(enc["examples"]) == min(enc["mismatches"], crosscheck.MAX_EXAMPLES)
    out = tmp_path / "lying.json"
    status = cli_main(["crosscheck", "--backend", "torch", "--formats", "E4M3FN", "--n-random",
                       "100", "--json", str(out), "--quiet"])
    assert status == 1
    assert json.loads(out.read_text())["ok"] is False
    assert "DISAGREES" in capsys.readouterr().out


def test_command_succeeds_and_writes_a_valid_report(tmp_path: Any,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "r.json"
    status = cli_main(["crosscheck", "--backend", "ml_dtypes", "--formats", "e2m1", "E8M0",
                       "--n-random", "500", "--json", str(out), "--quiet"])
    assert status == 0
    report = crosscheck.load_report(out)
    assert {c["format"] for c in report["checks"]} == {"E2M1", "E8M0"}
    assert "0 mismatches" in capsys.readouterr().out


def test_command_rejects_bad_input(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main(["crosscheck", "--backend", "torch", "--formats", "E2M1"]) == 2
    assert "FP4" in capsys.readouterr().err
    assert cli_main(["crosscheck", "--backend", "ml_dtypes", "--formats", "E9M9"]) == 2
    assert cli_main(["crosscheck"]) == 2
    assert "--backend is required" in capsys.readouterr().err
    with pytest.raises(SystemExit, match="^2$"):  # refused while parsing, in one line
        cli_main(["crosscheck", "--backend", "ml_dtypes", "--n-random", "-1"])
    assert "argument --n-random: must be an integer 0 … 10000000, got '-1'" in capsys.readouterr().err
    with pytest.raises(ValueError, match="^n_random must be 0 … 10000000, got 10000000001$"):  # the API's bound
        crosscheck.run_crosscheck("ml_dtypes", ["E2M1"], n_random=10**10 + 1)


def test_command_rejects_bad_paths(tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    # each one line on stderr naming the path, exit 2, no traceback
    cases = [(["--replay", str(tmp_path / "missing.json")], "cannot read report"),
             (["--replay", __file__], "not a JSON cross-check report"),
             (["--backend", "ml_dtypes", "--json", str(tmp_path)], "is a directory")]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"schema": crosscheck.SCHEMA}))
    cases.append((["--replay", str(bad)], "not a valid cross-check report: report: missing key"))
    for args, message in cases:
        assert cli_main(["crosscheck", *args, "--quiet"]) == 2, args
        err = capsys.readouterr().err
        assert message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_get_backend_errors() -> None:
    with pytest.raises(ValueError, match="unknown backend 'cuda'.*ml_dtypes"):
        get_backend("cuda")
    with pytest.raises(TypeError, match="backend name must be a string, got int"):
        get_backend(3)  # type: ignore[arg-type]
    assert set(backend_names()) == {"ml_dtypes", "torch", "torch-cuda", "triton",
                                    "triton-interpret"}
    with pytest.raises(ValueError, match="E3M2.*FP6"):
        get_backend("torch").encode(np.zeros(2, np.float32), "E3M2")
    with pytest.raises(ValueError, match="bfloat16"):
        get_backend("ml_dtypes").encode(np.zeros(2, np.float32), "E4M3FN", source_dtype="bfloat16")


def test_unavailable_backends_say_why() -> None:
    if torch.cuda.is_available():
        pytest.skip("CUDA is present; the GPU tests cover these backends")
    has_triton = importlib.util.find_spec("triton") is not None
    for name in ("torch-cuda", "triton"):
        ok, why = get_backend(name).available()
        # without the gpu extra the triton backend names the missing package, else the missing CUDA
        assert not ok and ("CUDA" in why if name == "torch-cuda" or has_triton else why == "triton is not installed")
        with pytest.raises(ValueError, match="not available"):
            crosscheck.run_crosscheck(name)


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.uint32])
def test_pack_codes_round_trip(dtype: Any) -> None:
    rng = np.random.default_rng(1)
    codes = rng.integers(0, np.iinfo(dtype).max, 10_001, dtype=np.uint64, endpoint=True).astype(dtype)
    packed = crosscheck.pack_codes(codes)
    json.dumps(packed)
    back = crosscheck.unpack_codes(packed)
    assert back.dtype == dtype
    np.testing.assert_array_equal(back, codes)
    np.testing.assert_array_equal(crosscheck.unpack_codes(crosscheck.pack_codes(codes[:0])),
                                  codes[:0])


def test_pack_codes_rejects_bad_input() -> None:
    with pytest.raises(TypeError, match="float32"):
        crosscheck.pack_codes(np.zeros(3, np.float32))
    packed = crosscheck.pack_codes(np.arange(10, dtype=np.uint8))
    with pytest.raises(ValueError, match="encoding"):
        crosscheck.unpack_codes({**packed, "encoding": "raw"})
    with pytest.raises(ValueError, match="bytes"):
        crosscheck.unpack_codes({**packed, "count": 11})


def test_inputs_sha256_is_of_the_float32_bits() -> None:
    import hashlib

    x = np.array([1.0, -0.0, np.nan], np.float32)
    assert crosscheck.inputs_sha256(x) == hashlib.sha256(
        np.array([0x3F800000, 0x80000000, 0x7FC00000], "<u4").tobytes()).hexdigest()
    assert crosscheck.inputs_sha256(x) != crosscheck.inputs_sha256(np.abs(x))


def test_structured_vectors_cover_every_value_midpoint_and_edge() -> None:
    x = vectors.structured_inputs("E4M3FN")
    assert x.dtype == np.float32
    have = set(x.view(np.uint32).tolist())

    def bits(v: float | np.floating[Any]) -> int:
        return int(np.float32(v).view(np.uint32))

    values = np.arange(256, dtype=np.uint8).view(ml_dtypes.float8_e4m3fn).astype(np.float64)
    finite = np.unique(values[np.isfinite(values)])
    assert all(bits(v) in have for v in finite)
    mids = (finite[:-1] + finite[1:]) / 2
    for m in mids:
        m32 = np.float32(m)
        assert float(m32) == m  # midpoints of an 8-bit format are exact in float32
        assert {bits(m32), int(np.nextafter(m32, np.float32(np.inf)).view(np.uint32)),
                int(np.nextafter(m32, np.float32(-np.inf)).view(np.uint32))} <= have
    # overflow thresholds: max, midpoint above it (464), one step of 32 above (480)
    for v in (448.0, 464.0, 480.0, -464.0, 2.0**-10, 2.0**-9, 2.0**-6):
        assert bits(v) in have, v
    assert np.isnan(x).sum() >= 5 and np.isposinf(x).any() and np.isneginf(x).any()
    assert bits(-0.0) in have and bits(0.0) in have
    sub32 = (x != 0) & (np.abs(x) < np.finfo(np.float32).smallest_normal)
    assert sub32.sum() > 100


def test_random_vectors_are_seeded_and_bf16_subset_is_exact() -> None:
    a = vectors.random_inputs("E5M2", 1000, seed=3)
    np.testing.assert_array_equal(a.view(np.uint32), vectors.random_inputs("E5M2", 1000, 3)
                                  .view(np.uint32))
    assert not np.array_equal(a, vectors.random_inputs("E5M2", 1000, 4))
    b = vectors.bf16_inputs("E4M3FN", 1000)
    with np.errstate(invalid="ignore"):
        back = b.astype(ml_dtypes.bfloat16).astype(np.float32)
    np.testing.assert_array_equal(back.view(np.uint32)[~np.isnan(b)], b.view(np.uint32)[~np.isnan(b)])
    # every midpoint of E4M3FN needs 4 significant bits, so it is a BF16 value (8 bits); the BF16
    # vectors hold it and the BF16 values one step (2^-7 relative at 1.0) either side
    have = set(b.view(np.uint32).tolist())
    vals = np.unique(np.arange(256, dtype=np.uint8).view(ml_dtypes.float8_e4m3fn)
                     .astype(np.float64))
    vals = vals[np.isfinite(vals)]
    for m in (vals[:-1] + vals[1:]) / 2:
        m16 = np.float32(m).astype(ml_dtypes.bfloat16)
        assert float(m16) == m
        step = np.array([-1, 0, 1], np.int64)
        near = (int(np.float32(m).view(np.uint32)) + (step << 16)).astype(np.uint32)
        assert set(near.tolist()) <= have, m
    assert np.isnan(b).any() and np.isposinf(b).any() and np.isneginf(b).any()
    assert b.size > 3 * vectors.structured_inputs("E4M3FN").size  # random values kept, truncated


class _PartlyBrokenBackend(MlDtypesBackend):
    """ml_dtypes, except that its E5M2 cast raises as a missing device kernel would."""

    def encode(self, x: np.ndarray, fmt: Any, *, source_dtype: str = "float32",
               encode_scale: float = 1.0) -> tuple[np.ndarray, float | None]:
        if str(fmt).upper() == "E5M2":
            raise RuntimeError("no kernel for float8_e5m2 on this device")
        return super().encode(x, fmt, source_dtype=source_dtype, encode_scale=encode_scale)


def test_a_format_the_backend_cannot_run_is_skipped_with_its_error(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(crosscheck, "get_backend", lambda name: _PartlyBrokenBackend())
    report = crosscheck.run_crosscheck("ml_dtypes", ["E5M2", "E2M1"], n_random=100)
    assert report["ok"]
    assert "no kernel for float8_e5m2" in report["skipped"]["E5M2 encode from float32"]
    assert "E5M2 decode" not in report["skipped"]  # its decode still ran
    assert {(c["format"], c["kind"]) for c in report["checks"]} == {
        ("E2M1", "encode"), ("E2M1", "decode"), ("E5M2", "decode")}


class _WrongAmaxBackend(MlDtypesBackend):
    """ml_dtypes casts, with an amax that misses the largest magnitude (as a kernel with a bad
    reduction would)."""

    def encode(self, x: np.ndarray, fmt: Any, *, source_dtype: str = "float32",
               encode_scale: float = 1.0) -> tuple[np.ndarray, float | None]:
        codes, _ = super().encode(x, fmt, source_dtype=source_dtype, encode_scale=encode_scale)
        return codes, float(np.abs(x[:10]).max())


def test_a_wrong_amax_fails_the_report(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(crosscheck, "get_backend", lambda name: _WrongAmaxBackend())
    report = crosscheck.run_crosscheck("ml_dtypes", ["E4M3FN"], n_random=100)
    enc = next(c for c in report["checks"] if c["kind"] == "encode")
    assert enc["mismatches"] == 0 and enc["amax"]["match"] is False
    # the vectors hold ±Inf, so the true amax is Inf
    assert enc["amax"]["model"] == "inf" and not report["ok"]
    assert "amax differs" in "\n".join(crosscheck.summary_lines(report))


@pytest.mark.parametrize("fmt", ["E4M3FN", "E5M2", "E2M1", "BF16"])
@pytest.mark.parametrize("kept", [0.0, -0.0])
def test_vectors_do_not_depend_on_which_zero_the_sort_keeps(monkeypatch: pytest.MonkeyPatch, fmt: str,
                                                            kept: float) -> None:
    """np.unique merges -0 and +0 and keeps whichever its sort puts first: x86-simd-sort (AVX-512)
    and the generic sort disagree for some sizes, which changed the structured vectors' sha256 on
    another CPU and failed every committed report's replay. Forcing either zero gives the same bits."""
    reference = vectors.structured_inputs(fmt).view(np.uint32).copy()
    unique = np.unique

    def unique_keeping(values: Any, *args: Any, **kwargs: Any) -> Any:
        out = unique(values, *args, **kwargs)
        if isinstance(out, np.ndarray) and out.dtype.kind == "f":
            out = np.where(out == 0, kept, out)
        return out

    monkeypatch.setattr(np, "unique", unique_keeping)
    np.testing.assert_array_equal(vectors.structured_inputs(fmt).view(np.uint32), reference)
