"""The recipe lab as the RecipeLab widget uses it: its parameters declared once (`LabConfig`), the
tensors it works on (`LabInput`: a generated sample, or a file the user uploaded), and one run
(`run_lab` → `LabView`: the table's report for every tensor × recipe, plus one tensor under one
recipe in detail — its log-magnitude histogram, the format's grid, the flush and clip edges and the
per-block error map). The widget draws a `LabView` and computes nothing itself.

An upload arrives as bytes with the browser's file name. `upload_input` refuses anything over
`UPLOAD_LIMIT_BYTES` (200 MB, the limit the page shows); its kind comes from the name's suffix, or,
for a name without a suffix the readers know (a browser's download named `model`, `weights.data`),
from its first bytes (`content_suffix`: the `.npy` magic, a zip archive of `.npy` members or of a
PyTorch checkpoint, a safetensors header, a pickle) — never from a MIME type, which browsers leave
empty for these files. It writes the bytes to a private temporary folder under the name's suffix only (the user's name is
never a path here), reads it with `readers.scan` (so the same checks apply as to `lowprec analyze`:
no pickle executed, torch files through `torch.load(weights_only=True)`), loads every float tensor
into memory (at most `UPLOAD_LIMIT_ELEMENTS` elements in all) and deletes the folder. Errors are
`ValueError`s whose text names the file by its base name.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import Any, Callable

import numpy as np

from lowprec.config import ConfigError, config_record, knob

from .measure import RecipeDetail
from .readers import SUFFIXES, LabReadError, Skipped, open_rows, scan
from .recipes import ALL, DEFAULT, RECIPES, parse_recipes
from .runner import LabReport, TensorReport, analyze_arrays
from .samples import LAYOUT_SAMPLES, SAMPLES, sample, write_layout_sample

__all__ = ["LabConfig", "LabInput", "LabView", "UPLOAD_LIMIT_BYTES", "UPLOAD_LIMIT_ELEMENTS", "run_lab",
           "sample_input", "upload_input"]

#: the largest upload the widget accepts (the page states it above the drop area)
UPLOAD_LIMIT_BYTES = 200 * 1000 * 1000
#: float tensors of an upload are held in memory as float32: at most this many elements in all
UPLOAD_LIMIT_ELEMENTS = 100 * 1000 * 1000
RECIPE_SETS = (DEFAULT, ALL)


@config_record
class LabConfig:
    """The RecipeLab widget's parameters (see the module docstring)."""

    sample: str = knob("layer", "bundled sample analysed when no file is uploaded: an LLM-like weight with outlier "
                       "channels, an activation with outlier features, a heavy-tailed gradient, all three, or the "
                       "weight stored pre-quantized in one of the layouts (DeepSeek FP8, gpt-oss MXFP4, ModelOpt "
                       "NVFP4, compressed-tensors FP8)", choices=tuple(SAMPLES) + tuple(LAYOUT_SAMPLES))
    recipes: str = knob(DEFAULT, "recipes in the table: the default set (one of each kind) or every recipe",
                        choices=RECIPE_SETS)
    tensor: str = knob("", "tensor drawn in detail (empty: the first)")
    recipe: str = knob("nvfp4", "recipe drawn in detail: histogram with its grid, clip and flush edges, error map",
                       choices=tuple(RECIPES))


@dataclass
class LabInput:
    """The tensors the lab works on: a sample or an uploaded file's float tensors (in memory; a
    pre-quantized tensor as its producer's dequantized values, with its layout and its audit)."""

    label: str  # "sample layer" or the uploaded file's base name
    arrays: dict[str, np.ndarray]
    skipped: list[Skipped] = field(default_factory=list)
    stored: dict[str, tuple[str, str]] = field(default_factory=dict)  # name → (layout, recipe) of pre-quantized ones
    audits: dict[str, Any] = field(default_factory=dict)  # name → `audit.TensorAudit`


@dataclass
class LabView:
    """What the widget shows for one input and one config."""

    input_label: str
    report: LabReport  # every tensor × the chosen recipes
    tensor: str  # the tensor drawn in detail
    detail: RecipeDetail | None  # None when the detail recipe does not apply to it
    detail_report: TensorReport | None  # that tensor under the detail recipe alone
    note: str  # why there is no detail, or ""


def sample_input(name: str) -> LabInput:
    """A bundled sample (`samples.SAMPLES`, or a pre-quantized one of `samples.LAYOUT_SAMPLES`, written to a
    temporary folder and read back as an upload is) as the lab's input."""
    if name in LAYOUT_SAMPLES:
        return _layout_sample(name)
    return LabInput(f"sample {name}", sample(name))


_LAYOUT_CACHE: dict[str, LabInput] = {}


def _layout_sample(name: str) -> LabInput:
    if name not in _LAYOUT_CACHE:  # deterministic: written and read once per process
        with tempfile.TemporaryDirectory(prefix="lowprec-sample-") as folder:
            path = write_layout_sample(name, os.path.join(folder, "ckpt"))
            _LAYOUT_CACHE[name] = _read_file(path, f"sample {name}", UPLOAD_LIMIT_ELEMENTS)
    return _LAYOUT_CACHE[name]


def _read_file(path: str, label: str, limit_elements: int) -> LabInput:
    """Every float or pre-quantized tensor of one file, in memory (pre-quantized ones audited)."""
    from .audit import audit_tensor

    inv = scan([path])
    total = sum(ref.numel for ref in inv.tensors)
    if total > limit_elements:
        raise ValueError(f"{label}: {total} float elements is over the {limit_elements} the page analyses; "
                         f"run `lowprec analyze {label}` on your machine instead")
    inp = LabInput(label, {}, [Skipped(label, s.name, s.reason, s.shape, s.dtype) for s in inv.skipped])
    for ref in inv.tensors:
        src = open_rows(ref)
        name = ref.name or label
        inp.arrays[name] = src.read(0, src.rows).reshape(ref.shape)
        if ref.layout:
            inp.stored[name] = (ref.layout, ref.recipe)
            inp.audits[name] = audit_tensor(ref)
    return inp


def content_suffix(head: bytes) -> str | None:
    """The suffix of the reader that the file starting with `head` (its first 4 KiB or more) needs,
    from its magic bytes: `.npy` (the NumPy magic), `.npz` (a zip archive whose first member is a
    `.npy`), `.pt` (any other zip archive: PyTorch's format; or a pickle, its legacy one) and
    `.safetensors` (an 8-byte little-endian header length, then a JSON object); None when none fits.
    The reader of that suffix then checks the whole file."""
    head = bytes(head[:4096])
    if head.startswith(b"\x93NUMPY"):
        return ".npy"
    if head.startswith(b"PK\x03\x04") and len(head) >= 30:
        name_len = int.from_bytes(head[26:28], "little")
        first = head[30:30 + name_len]
        return ".npz" if first.endswith(b".npy") else ".pt"
    if len(head) >= 2 and head[0] == 0x80 and 2 <= head[1] <= 5:
        return ".pt"
    if len(head) >= 9:
        size = int.from_bytes(head[:8], "little")
        if 2 <= size <= 100 * 1000 * 1000 and head[8:9] == b"{":
            return ".safetensors"
    return None


def upload_kind(filename: str, head: bytes) -> tuple[str, str]:
    """(base name, reader suffix) of an upload: the name's suffix when the lab reads it, else the
    one its content names (`content_suffix`); ValueError naming the file when neither does."""
    base = PurePath(filename.replace("\\", "/")).name or "upload"
    suffix = PurePath(base).suffix.lower()
    if suffix in SUFFIXES:
        return base, suffix
    sniffed = content_suffix(head)
    if sniffed is None:
        raise ValueError(f"{base}: unsupported file type {suffix or '(no suffix)'!r} and no tensor file by its content; "
                         f"the lab reads {', '.join(sorted(SUFFIXES))}")
    return base, sniffed


def upload_input(filename: str, data: bytes, limit_bytes: int = UPLOAD_LIMIT_BYTES,
                 limit_elements: int = UPLOAD_LIMIT_ELEMENTS) -> LabInput:
    """The float tensors of an uploaded file (see the module docstring)."""
    if not isinstance(filename, str):
        raise TypeError(f"the file name must be text, got {type(filename).__name__}")
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"{filename}: the file's content must be bytes, got {type(data).__name__}")
    base, suffix = upload_kind(filename, bytes(memoryview(data)[:4096]))
    size = len(data)
    if size > limit_bytes:
        raise ValueError(f"{base}: {size / 1e6:.1f} MB is over the {limit_bytes / 1e6:.0f} MB upload limit; "
                         f"run `lowprec analyze {base}` on your machine instead")
    with tempfile.TemporaryDirectory(prefix="lowprec-lab-") as folder:
        path = os.path.join(folder, f"upload{suffix}")
        with open(path, "wb") as fh:
            fh.write(data)
        try:
            return _read_file(path, base, limit_elements)
        except LabReadError as exc:
            raise ValueError(str(exc).replace(path, base)) from None


def run_lab(inp: LabInput, config: LabConfig, progress: Callable[[int, int], None] | None = None,
            report: LabReport | None = None) -> LabView:
    """The table for every tensor of `inp` under `config.recipes`, and `config.tensor` (the first
    when empty) under `config.recipe` in detail. ValueError for a tensor name the input lacks.
    `progress(done, total)` is called after each tensor of the table (it may raise to stop the run);
    `report`, the table of an earlier view of the same input and recipes, is reused instead of
    recomputed (a change of the tensor or recipe drawn in detail)."""
    if not isinstance(config, LabConfig):
        raise TypeError(f"config must be a LabConfig, got {type(config).__name__}")
    recipes = parse_recipes(config.recipes)
    if report is None or [r.name for r in report.recipes] != [r.name for r in recipes]:
        report = analyze_arrays(inp.arrays, recipes, label=inp.label, progress=progress)
        report.skipped[:0] = inp.skipped
        for t in report.tensors:
            _stored_facts(inp, t)
    names = [t.name for t in report.tensors]
    if not names:
        return LabView(inp.label, report, "", None, None, f"{inp.label} holds no float tensor the lab analyses")
    tensor = config.tensor or names[0]
    if tensor not in names:
        raise ConfigError("tensor", f"{inp.label} has no tensor {tensor!r}; tensors: {', '.join(names)}")
    recipe = RECIPES[config.recipe]
    why = recipe.check(inp.arrays[tensor].shape)
    if why is not None:
        return LabView(inp.label, report, tensor, None, None, f"{recipe.name} does not apply to {tensor}: {why}")
    one = analyze_arrays({tensor: inp.arrays[tensor]}, [recipe], detail=(tensor, recipe.name), label=inp.label)
    detail_report = one.tensors[0]
    _stored_facts(inp, detail_report)
    return LabView(inp.label, report, tensor, detail_report.detail, detail_report, "")


def _stored_facts(inp: LabInput, t: TensorReport) -> None:
    """A pre-quantized tensor's layout, recipe and audit on its report."""
    if t.name in inp.stored:
        t.layout, t.stored_recipe = inp.stored[t.name]
        t.audit = inp.audits.get(t.name)


def tensor_names(view: LabView) -> list[str]:
    """The tensors of a view, in order (the widget's choices for `tensor`)."""
    return [t.name for t in view.report.tensors]


def describe(view: LabView) -> dict[str, Any]:
    """Plain facts the widget prints under the table: counts and the file-wide winner."""
    ranking = view.report.ranking
    winner = view.report.best  # None when no recipe applies to every tensor with a usable error
    best = next((r for r in ranking if r["recipe"] == winner), None)
    return {"input": view.input_label, "tensors": len(view.report.tensors), "skipped": len(view.report.skipped),
            "quantized": sum(1 for t in view.report.tensors if t.layout),
            "recipes": len(view.report.recipes), "best": None if best is None else best["recipe"],
            "best_rms_rel_err": None if best is None else best["rms_rel_err"],
            "best_bits": None if best is None else best["bits_per_element"]}
