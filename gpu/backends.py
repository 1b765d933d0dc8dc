"""Backend adapters: real casts (ml_dtypes, torch CPU/CUDA, Triton compiled and interpreted) behind
one interface, each declaring the `formats` convention it claims to follow.

A backend turns float32 inputs (optionally held as BF16, and multiplied by a float32 encode scale
first, `y = fp32(x · encode_scale)`, as a scaled cast kernel does) into codes (uint8 for ≤ 8-bit
formats, uint16 for BF16/FP16; FP4/FP6 one code per byte), and codes back into float32 bits.
ml_dtypes casts with numpy `astype` (FP16 is numpy's own float16); torch casts 1-D tensors with
`.to(dtype)` (0-d tensors differ for BF16 NaN); Triton casts with `x.to(tl.float8e4nv / tl.float8e5)`
(compiled: PTX `cvt.rn.satfinite`). The Triton interpreter (`TRITON_INTERPRET=1`) runs in a child
process, because the variable must be set before Triton is imported; its fp8 conversions are known
to be wrong at ties, overflow and NaN, so it is a plumbing check (`oracle=False`), never an oracle.
Integer grids are left out everywhere: the backends' float→int casts truncate/wrap, which is not a
rounding cast the model claims to reproduce.

Which backend casts to which format, from which source dtypes and under which type, is not written
here: it is read from the conventions table (`formats.conventions.CONVENTION_ROWS`; a row whose
backend type casts is supported, every other row's note is the reason a format is not).
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import tempfile
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any

import numpy as np

import lowprec
from lowprec.extras import not_installed
from lowprec.formats import ALL_FORMATS, Format, get_format
from lowprec.formats.conventions import backend_dtypes, convention_row

#: the folder that holds the `lowprec` package (the checkout's root, or site-packages)
ROOT = Path(lowprec.__file__).resolve().parents[1]


def _code_dtype(fmt: Format) -> type[np.unsignedinteger[Any]]:
    return np.uint8 if fmt.bits <= 8 else np.uint16


def _supported(convention: str) -> dict[str, tuple[str, ...]]:
    """format name → source dtypes, for the formats whose cast `convention`'s backend provides."""
    return {name: row.sources for name, row in backend_dtypes(convention).items()}


def _unsupported(convention: str) -> dict[str, str]:
    """format name → why `convention`'s backend has no cast to it (the table row's note)."""
    supported = backend_dtypes(convention)
    out = {}
    for f in ALL_FORMATS:
        if f.name not in supported:
            row = convention_row(convention, f)
            out[f.name] = row.note or ("not provided" if not row.provided else "not a cast this backend provides")
    return out


def _apply_encode_scale(x: np.ndarray, encode_scale: float) -> np.ndarray:
    """fp32(x · encode_scale): one float32 multiply, rounded to nearest even (what the kernels do)."""
    x32 = np.asarray(x, np.float32)
    if encode_scale == 1.0:
        return x32
    with np.errstate(over="ignore", invalid="ignore"):
        return (x32 * np.float32(encode_scale)).astype(np.float32)


class Backend(ABC):
    """One real implementation of casts; `convention` names the `formats.policy_for` policy it claims."""

    name: str = ""
    convention: str = ""
    device: str = "cpu"
    oracle: bool = True  # False: mismatches are documented deviations, not model failures
    deviation_note: str = ""
    #: format name → source dtypes ("float32", "bfloat16") this backend casts from
    supported: dict[str, tuple[str, ...]] = {}
    #: format name → why this backend cannot cast to it (goes into the report)
    unsupported: dict[str, str] = {}
    #: float32 NaN bit pattern family its decode produces (argument of formats.decode); None: any NaN
    nan_bits: str | None = "canonical"

    def available(self) -> tuple[bool, str]:
        """(usable here, reason when not)."""
        return True, ""

    def versions(self) -> dict[str, str]:
        return {}

    def check_format(self, fmt: str | Format, source_dtype: str = "float32") -> Format:
        f = get_format(fmt)
        if f.name not in self.supported:
            why = self.unsupported.get(f.name, "not a cast this backend provides")
            raise ValueError(f"backend {self.name!r} cannot cast to {f.name} ({why}); it supports "
                             f"{', '.join(self.supported)}")
        if source_dtype not in self.supported[f.name]:
            raise ValueError(f"backend {self.name!r} casts to {f.name} from "
                             f"{', '.join(self.supported[f.name])}, not {source_dtype!r}")
        return f

    @abstractmethod
    def encode(self, x: np.ndarray, fmt: str | Format, *, source_dtype: str = "float32",
               encode_scale: float = 1.0) -> tuple[np.ndarray, float | None]:
        """(codes of fp32(x · encode_scale), amax of |x| ignoring NaN or None if not computed)."""

    @abstractmethod
    def decode(self, codes: np.ndarray, fmt: str | Format) -> np.ndarray:
        """float32 values of `codes` as the backend produces them."""


# ------------------------------------------------------------------------------------------------
# ml_dtypes (numpy for FP16)
# ------------------------------------------------------------------------------------------------

class MlDtypesBackend(Backend):
    """numpy `astype` to the ml_dtypes type named `fmt.dtype_name` (numpy's own float16)."""

    name = "ml_dtypes"
    convention = "ml_dtypes"
    nan_bits = "ml_dtypes"
    unsupported = _unsupported("ml_dtypes")
    supported = _supported("ml_dtypes")

    def versions(self) -> dict[str, str]:
        import ml_dtypes

        return {"ml_dtypes": ml_dtypes.__version__, "numpy": np.__version__}

    def _dtype(self, f: Format) -> Any:
        name = convention_row(self.convention, f).dtype
        if hasattr(np, name):  # float16: numpy's own type
            return getattr(np, name)
        import ml_dtypes

        return getattr(ml_dtypes, name)

    def encode(self, x: np.ndarray, fmt: str | Format, *, source_dtype: str = "float32",
               encode_scale: float = 1.0) -> tuple[np.ndarray, float | None]:
        f = self.check_format(fmt, source_dtype)
        y = _apply_encode_scale(x, encode_scale)
        with np.errstate(over="ignore", invalid="ignore"):
            codes = y.astype(self._dtype(f)).view(_code_dtype(f))
        return np.ascontiguousarray(codes), None

    def decode(self, codes: np.ndarray, fmt: str | Format) -> np.ndarray:
        f = self.check_format(fmt)
        c = np.ascontiguousarray(np.asarray(codes).astype(_code_dtype(f)))
        return c.view(self._dtype(f)).astype(np.float32)


# ------------------------------------------------------------------------------------------------
# torch (CPU eager, CUDA eager)
# ------------------------------------------------------------------------------------------------

class TorchBackend(Backend):
    """`.to(getattr(torch, fmt.dtype_name))` on CPU or CUDA tensors."""

    convention = "torch"
    nan_bits = "torch"
    supported = _supported("torch")
    unsupported = _unsupported("torch")

    def __init__(self, device: str = "cpu") -> None:
        self.device = device
        self.name = "torch" if device == "cpu" else f"torch-{device}"

    def available(self) -> tuple[bool, str]:
        if importlib.util.find_spec("torch") is None:
            return False, not_installed("torch")
        if self.device == "cuda":
            import torch

            if not torch.cuda.is_available():
                return False, "CUDA is not available (torch.cuda.is_available() is False)"
        return True, ""

    def versions(self) -> dict[str, str]:
        return _torch_versions(on_cuda=self.device == "cuda")

    def encode(self, x: np.ndarray, fmt: str | Format, *, source_dtype: str = "float32",
               encode_scale: float = 1.0) -> tuple[np.ndarray, float | None]:
        import torch

        f = self.check_format(fmt, source_dtype)
        y = np.ascontiguousarray(_apply_encode_scale(x, encode_scale).reshape(-1))
        t = torch.from_numpy(y).to(self.device).to(getattr(torch, convention_row("torch", f).dtype))
        view = torch.uint8 if f.bits <= 8 else torch.int16
        codes = t.view(view).cpu().numpy().view(_code_dtype(f))
        return codes.reshape(np.shape(x)).copy(), None

    def decode(self, codes: np.ndarray, fmt: str | Format) -> np.ndarray:
        import torch

        f = self.check_format(fmt)
        c = np.ascontiguousarray(np.asarray(codes).astype(_code_dtype(f)).reshape(-1))
        if f.bits <= 8:
            t = torch.from_numpy(c)
        else:
            t = torch.from_numpy(c.view(np.int16))
        vals = t.to(self.device).view(getattr(torch, convention_row("torch", f).dtype)).to(torch.float32)
        return vals.cpu().numpy().reshape(np.shape(codes))


def _torch_versions(on_cuda: bool) -> dict[str, str]:
    """torch and numpy versions, plus CUDA, device name and driver when `on_cuda`."""
    import torch

    v = {"torch": str(torch.__version__), "numpy": np.__version__}
    return {**v, **_cuda_versions()} if on_cuda else v


def _cuda_versions() -> dict[str, str]:
    import torch

    out = {"cuda": str(torch.version.cuda), "device_name": torch.cuda.get_device_name(0)}
    try:
        r = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                           capture_output=True, text=True, timeout=20, check=False)
        out["driver"] = r.stdout.strip().splitlines()[0] if r.stdout.strip() else "unknown"
    except (OSError, subprocess.SubprocessError):
        out["driver"] = "unknown"
    return out


# ------------------------------------------------------------------------------------------------
# Triton (compiled on CUDA; interpreter in a child process)
# ------------------------------------------------------------------------------------------------

#: the formats the Triton kernels cast to (the triton_nvidia rows whose PTX type casts)
TRITON_FORMATS: tuple[str, ...] = tuple(backend_dtypes("triton_nvidia"))

INTERPRETER_DEVIATION = (
    "Triton's interpreter (TRITON_INTERPRET=1, Triton 3.9) emulates fp8 conversions in numpy and "
    "gets them wrong: a mantissa carry into the next binade is lost (E4M3FN: 0x1.fffffep0 → 0x38 "
    "= 1.0 instead of 0x40 = 2.0), ties do not go to even (1.0625 → 0x39 instead of 0x38), "
    "overflow does not saturate (1000 → 0x78) and NaN gets a finite code (→ 0x7C); it also "
    "decodes E4M3FN 0x7F as 480 and E5M2 Inf/NaN codes as finite. Its mismatches are a "
    "documented deviation of the interpreter, not of the model; the interpreter is a plumbing "
    "check, never an oracle."
)


def run_interpreted(op: str, timeout_s: float = 600.0, **arrays: Any) -> dict[str, np.ndarray]:
    """Run `gpu.kernels` operation `op` under Triton's interpreter in a child process.

    Inputs and outputs travel as .npz; scalars are passed as 0-d arrays. The child gets
    TRITON_INTERPRET=1 before importing Triton, so the parent process is never switched.
    """
    if importlib.util.find_spec("triton") is None:
        raise ValueError(f"the Triton interpreter needs the 'triton' package ({not_installed('triton')})")
    with tempfile.TemporaryDirectory(prefix="lowprec-interp-") as tmp:
        src, dst = Path(tmp) / "in.npz", Path(tmp) / "out.npz"
        np.savez(src, **{k: np.asarray(v) for k, v in arrays.items()})  # type: ignore[arg-type]
        env = dict(os.environ, TRITON_INTERPRET="1")
        env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
        r = subprocess.run([sys.executable, "-m", "lowprec.gpu.kernels", op, str(src), str(dst)],
                           env=env, cwd=str(ROOT), capture_output=True, text=True,
                           timeout=timeout_s, check=False)
        if r.returncode != 0:
            raise RuntimeError(f"interpreted kernel {op!r} failed (exit {r.returncode}):\n"
                               f"{r.stderr[-4000:]}")
        with np.load(dst) as z:
            return {k: z[k] for k in z.files}


def run_interpreted_batch(jobs: dict[str, tuple[str, dict[str, Any]]],
                          timeout_s: float = 600.0) -> dict[str, dict[str, np.ndarray]]:
    """Several `run_interpreted` operations in one child process: {job: (op, arrays)} →
    {job: outputs}. Job names must not contain '/'."""
    flat: dict[str, Any] = {}
    for job, (op, arrays) in jobs.items():
        if "/" in job or "/" in op:
            raise ValueError(f"job and operation names must not contain '/': {job!r}, {op!r}")
        for name, val in arrays.items():
            flat[f"{job}/{op}/{name}"] = val
    out = run_interpreted("batch", timeout_s=timeout_s, **flat)
    result: dict[str, dict[str, np.ndarray]] = {job: {} for job in jobs}
    for key, val in out.items():
        job, name = key.split("/", 1)
        result[job][name] = val
    return result


class TritonBackend(Backend):
    """Triton scaled-cast kernel (`gpu.kernels.scaled_cast`), compiled on CUDA or interpreted."""

    convention = "triton_nvidia"
    supported = _supported("triton_nvidia")
    unsupported = _unsupported("triton_nvidia")
    nan_bits = None  # compiled fp8→fp32 gives some NaN; only NaN-ness is compared

    def __init__(self, interpret: bool = False) -> None:
        self.interpret = interpret
        self.name = "triton-interpret" if interpret else "triton"
        self.device = "cpu" if interpret else "cuda"
        self.oracle = not interpret
        self.deviation_note = INTERPRETER_DEVIATION if interpret else ""

    def available(self) -> tuple[bool, str]:
        if importlib.util.find_spec("triton") is None:
            return False, not_installed("triton")
        if not self.interpret:
            import torch

            if not torch.cuda.is_available():
                return False, "compiled Triton needs CUDA (torch.cuda.is_available() is False)"
        return True, ""

    def versions(self) -> dict[str, str]:
        import triton

        return {"triton": str(triton.__version__),
                "mode": "interpreter" if self.interpret else "compiled",
                **_torch_versions(on_cuda=not self.interpret)}

    def encode(self, x: np.ndarray, fmt: str | Format, *, source_dtype: str = "float32",
               encode_scale: float = 1.0) -> tuple[np.ndarray, float | None]:
        f = self.check_format(fmt, source_dtype)
        x32 = np.ascontiguousarray(np.asarray(x, np.float32).reshape(-1))
        if self.interpret:
            out = run_interpreted("cast", x=x32, fmt=np.array(f.name),
                                  source_dtype=np.array(source_dtype),
                                  encode_scale=np.float32(encode_scale))
            return out["codes"].reshape(np.shape(x)), float(out["amax"])
        import torch

        from . import kernels

        t = torch.from_numpy(x32).cuda()
        if source_dtype == "bfloat16":
            t = t.to(torch.bfloat16)
        codes, amax = kernels.scaled_cast(t, f.name, encode_scale)
        return codes.cpu().numpy().reshape(np.shape(x)), float(amax.item())

    def decode(self, codes: np.ndarray, fmt: str | Format) -> np.ndarray:
        f = self.check_format(fmt)
        c = np.ascontiguousarray(np.asarray(codes).astype(np.uint8).reshape(-1))
        if self.interpret:
            return run_interpreted("decode", codes=c, fmt=np.array(f.name))["values"].reshape(
                np.shape(codes))
        import torch

        from . import kernels

        return kernels.decode_fp8(torch.from_numpy(c).cuda(), f.name).cpu().numpy().reshape(
            np.shape(codes))


def backend_names() -> tuple[str, ...]:
    return ("ml_dtypes", "torch", "torch-cuda", "triton", "triton-interpret")


def get_backend(name: str) -> Backend:
    """Backend by name: ml_dtypes, torch, torch-cuda, triton, triton-interpret."""
    if not isinstance(name, str):
        raise TypeError(f"backend name must be a string, got {type(name).__name__}")
    key = name.lower()
    if key == "ml_dtypes":
        return MlDtypesBackend()
    if key == "torch":
        return TorchBackend("cpu")
    if key == "torch-cuda":
        return TorchBackend("cuda")
    if key == "triton":
        return TritonBackend(interpret=False)
    if key == "triton-interpret":
        return TritonBackend(interpret=True)
    raise ValueError(f"unknown backend {name!r}; known: {', '.join(backend_names())}")
