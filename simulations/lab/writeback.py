"""Write-back: a float checkpoint quantized by a lowprec recipe and stored in a producer's layout
(`layouts.LAYOUTS`) — one `.safetensors` file and the config entry a loader of that layout reads —
so the readers can be tested on real files and a user can hand a layout's loader a file made by a
named recipe. `lowprec quantize PATH --recipe NAME --layout LAYOUT -o OUT` runs it.

Which tensors: every float tensor the readers find (`readers.scan`) with at least two axes that the
layout and the recipe take (DeepSeek's 128×128 tiles, compressed-tensors' per-channel scales and
16×16 NVFP4 tiles: 2-D weights), unless a name matches an `exclude` pattern (shell-style, e.g.
`*lm_head*`); the others are kept as they are (BF16, FP16, FP32, FP64) and named in the config's
list of modules left unquantized. Entries that are not float tensors are left out (listed).

How: each tensor is streamed in row chunks (`runner.rows_per_chunk`, multiples of the recipe's tile
rows): a first pass measures the whole-tensor amaxes the recipe needs (`recipes.GlobalAmax`), the
second quantizes each chunk with `quant.quantize` — exactly the codes and scales the whole tensor
gets — and writes its stored parts (`layouts.stored_from_result`) at their place in the file, so
memory stays near one chunk. The file's header is laid out first (every size follows from the
shapes); tensors are named in sorted order with `__metadata__ {"format": "pt"}`.

The config entry: `config.json` `quantization_config` (DeepSeek `quant_method: fp8` with
`weight_block_size` and, for UE8M0 scales, `scale_fmt: ue8m0`; gpt-oss `quant_method: mxfp4`;
compressed-tensors `float-quantized` with the weight strategy `tensor` or `channel`), or ModelOpt's
`hf_quant_config.json` (`quant_algo: NVFP4`, `group_size: 16`) with `config.json`'s
`quant_method: modelopt`. Beside the producer's keys, a `lowprec` object records each quantized
tensor's recipe and the SHA-256 of each stored part: reading back checks them.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from lowprec import __version__ as _version

from ..quant import engine as _engine
from ..quant.recipes import Recipe, ScaleFormat, get_recipe, matrix_shape
from .layouts import LAYOUTS, Geometry, Layout, geometry, get_layout, stored_from_result, stored_shapes
from .limits import LIMITS, ReadLimits
from .readers import Inventory, RowSource, Skipped, TensorRef, array_source, iter_chunks, open_rows, scan
from .recipes import GlobalAmax

__all__ = ["LAYOUT_NAMES", "OUT_FILE", "WriteReport", "check_layout_name", "quantize_arrays", "quantize_checkpoint"]

OUT_FILE = "model.safetensors"
CHUNK_ELEMENTS = 1 << 20
_FLOAT_CODES = {"BF16": "BF16", "FP16": "F16", "FP32": "F32", "FP64": "F64"}


@dataclass
class WriteReport:
    """What `quantize_checkpoint` wrote."""

    out_dir: str
    layout: str
    recipe: str
    quantized: list[tuple[str, tuple[int, ...]]] = field(default_factory=list)
    kept: list[tuple[str, str, str]] = field(default_factory=list)  # (name, dtype, why it stays float)
    left_out: list[Skipped] = field(default_factory=list)
    files: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"out_dir": self.out_dir, "layout": self.layout, "recipe": self.recipe,
                "quantized": [{"name": n, "shape": list(s)} for n, s in self.quantized],
                "kept": [{"name": n, "dtype": d, "reason": r} for n, d, r in self.kept],
                "left_out": [s.to_dict() for s in self.left_out], "files": self.files}

    def summary_lines(self) -> list[str]:
        lines = [f"wrote {', '.join(self.files)}: {len(self.quantized)} tensor(s) in {self.layout} by {self.recipe}, "
                 f"{len(self.kept)} kept as they were, {len(self.left_out)} left out"]
        lines += [f"  kept {n} ({d}): {r}" for n, d, r in self.kept]
        lines += [f"  left out {s.name or s.path}: {s.reason}" for s in self.left_out]
        return lines


@dataclass
class _Planned:
    name: str  # the logical tensor's name
    ref: TensorRef
    source: RowSource | None  # an in-memory source (None: open the file)
    quantize: bool
    geo: Geometry | None = None
    parts: dict[str, tuple[str, str, tuple[int, ...]]] = field(default_factory=dict)  # role → (stored name, dtype, shape)


def _why_kept(ref: TensorRef, recipe: Recipe, lay: Layout, exclude: Sequence[str]) -> str | None:
    """Why a float tensor stays as it is, or None when it is quantized."""
    if any(fnmatch.fnmatchcase(ref.name, pat) for pat in exclude):
        return "its name matches --exclude"
    if len(ref.shape) < 2:
        return f"{len(ref.shape)} axis/axes: the layouts quantize weights of two or more axes"
    two_d_only = (lay.name == "deepseek_fp8" or (lay.name == "compressed_tensors_fp8" and recipe.granularity == "row")
                  or recipe.block_2d)
    if two_d_only and len(ref.shape) != 2:
        return f"{lay.name} with {recipe.name} stores 2-D weights; this one has shape {list(ref.shape)}"
    if any(s == 0 for s in ref.shape):
        return "empty tensor"
    why = recipe.check(ref.shape)
    if why is not None:
        return f"{recipe.name} does not apply: {why}"
    if lay.packed and ref.shape[-1] % 2:
        return "an odd last axis cannot be packed two E2M1 codes per byte"
    return None


def _stored_names(lay: Layout, name: str) -> dict[str, str]:
    from .layouts import part_names

    return part_names(lay, name)


def _plan(refs: Sequence[tuple[TensorRef, RowSource | None]], recipe: Recipe, lay: Layout, exclude: Sequence[str],
          report: WriteReport) -> list[_Planned]:
    out: list[_Planned] = []
    for ref, src in refs:
        why = _why_kept(ref, recipe, lay, exclude)
        name = ref.name or Path(ref.path).stem or "tensor"  # a bare .npy array is named after its file
        ref = TensorRef(ref.path, name, ref.kind, ref.shape, ref.dtype, ref.offset, ref.fortran_order, ref.index,
                        ref.layout, ref.recipe, ref.parts)
        p = _Planned(name, ref, src, why is None)
        if why is None:
            p.geo = geometry(lay, recipe, ref.shape)
            shapes = stored_shapes(lay, p.geo)
            p.parts = {role: (stored, shapes[role][0], shapes[role][1])
                       for role, stored in _stored_names(lay, ref.name).items()}
            report.quantized.append((ref.name, ref.shape))
        else:
            p.parts = {"float": (ref.name, _FLOAT_CODES[ref.dtype], ref.shape)}
            report.kept.append((ref.name, ref.dtype, why))
        out.append(p)
    names = [stored for p in out for stored, _, _ in p.parts.values()]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise ValueError(f"the stored tensor name {dup[0]!r} would be written twice (a float tensor already has the "
                         f"name a quantized tensor's part takes); rename it or --exclude one of them")
    return out


def _header(planned: list[_Planned]) -> tuple[bytes, dict[str, tuple[int, int]]]:
    """The safetensors header (padded to 8 bytes) and each stored tensor's (offset, bytes) in the data."""
    from .layouts import SAFETENSORS_ITEMSIZE

    items = sorted(((stored, dtype, shape) for p in planned for stored, dtype, shape in p.parts.values()),
                   key=lambda t: t[0])
    meta: dict[str, Any] = {"__metadata__": {"format": "pt"}}
    where: dict[str, tuple[int, int]] = {}
    pos = 0
    for stored, dtype, shape in items:
        n = math.prod(shape) * SAFETENSORS_ITEMSIZE[dtype]
        meta[stored] = {"dtype": dtype, "shape": list(shape), "data_offsets": [pos, pos + n]}
        where[stored] = (pos, n)
        pos += n
    raw = json.dumps(meta, separators=(",", ":")).encode("utf-8")
    raw += b" " * (-(8 + len(raw)) % 8)
    return len(raw).to_bytes(8, "little") + raw, where


def _chunk_rows(recipe: Recipe, cols: int, chunk_elements: int) -> int:
    m = recipe.row_multiple
    return max(m, (max(1, chunk_elements) // max(1, cols)) // m * m)


def _write_quantized(fh: Any, base: int, where: dict[str, tuple[int, int]], p: _Planned, recipe: Recipe,
                     lay: Layout, chunk_elements: int) -> dict[str, str]:
    """Stream one tensor through the recipe into its parts; the SHA-256 of each part."""
    assert p.geo is not None
    src = p.source if p.source is not None else open_rows(p.ref)
    rows, cols = matrix_shape(p.ref.shape)
    step = _chunk_rows(recipe, cols, chunk_elements)
    amax = GlobalAmax()
    if recipe.global_amax is not None:
        with np.errstate(all="ignore"):
            for lo, hi in iter_chunks(rows, step):
                amax.add(recipe, src.read(lo, hi))
    hashes = {role: hashlib.sha256() for role in p.parts}
    written = {role: 0 for role in p.parts}
    once: dict[str, np.ndarray] = {}
    with np.errstate(all="ignore"):
        for lo, hi in iter_chunks(rows, step):
            x = src.read(lo, hi)
            q = _engine.quantize(x, recipe, global_amax=amax.of(recipe) if recipe.global_amax else None)
            stored = stored_from_result(lay, q, p.geo)
            for role, arr in stored.items():
                if role == "scale_2" or (role == "scales" and lay.name == "compressed_tensors_fp8"
                                         and recipe.granularity == "tensor"):
                    prev = once.get(role)
                    if prev is not None and prev.tobytes() != arr.tobytes():
                        raise AssertionError(f"{p.name}: the {role} differs between chunks")
                    once[role] = arr
                    continue
                data = np.ascontiguousarray(arr).view(np.uint8).reshape(-1)
                stored_name = p.parts[role][0]
                off, size = where[stored_name]
                fh.seek(base + off + written[role])
                fh.write(data.tobytes())
                hashes[role].update(data.data)
                written[role] += data.size
    for role, arr in once.items():
        data = np.ascontiguousarray(arr).view(np.uint8).reshape(-1)
        off, size = where[p.parts[role][0]]
        fh.seek(base + off)
        fh.write(data.tobytes())
        hashes[role].update(data.data)
        written[role] += data.size
    for role, (stored_name, _, _) in p.parts.items():
        if written[role] != where[stored_name][1]:
            raise AssertionError(f"{p.name}: wrote {written[role]} bytes of {stored_name}, the header has "
                                 f"{where[stored_name][1]}")
    return {role: h.hexdigest() for role, h in hashes.items()}


def _write_float(fh: Any, base: int, where: dict[str, tuple[int, int]], p: _Planned, chunk_elements: int) -> None:
    src = p.source if p.source is not None else open_rows(p.ref)
    stored_name, code, _ = p.parts["float"]
    off, size = where[stored_name]
    import ml_dtypes

    np_dtype: np.dtype[Any] = {"BF16": np.dtype(ml_dtypes.bfloat16), "F16": np.dtype(np.float16),
                               "F32": np.dtype(np.float32), "F64": np.dtype(np.float64)}[code]
    rows, cols = matrix_shape(p.ref.shape)
    fh.seek(base + off)
    step = max(1, chunk_elements // max(1, cols))
    for lo, hi in iter_chunks(rows, step):
        x = src.read(lo, hi) if rows > 1 or cols <= chunk_elements else src.read_span(0, cols)
        fh.write(np.ascontiguousarray(x.astype(np_dtype)).tobytes())  # widened exactly: narrowing back is exact


def _config(lay: Layout, recipe: Recipe, kept: list[str], record: dict[str, Any], base_config: dict[str, Any] | None
            ) -> dict[str, dict[str, Any]]:
    """file name → JSON object of the config entry."""
    config = dict(base_config) if isinstance(base_config, dict) else {}
    lowprec = {"writer": f"lowprec {_version}", "layout": lay.name, "tensors": record}
    if lay.name == "deepseek_fp8":
        qc: dict[str, Any] = {"quant_method": "fp8", "fmt": "e4m3", "activation_scheme": "dynamic",
                              "weight_block_size": [128, 128]}
        if recipe.scale_format is ScaleFormat.E8M0:
            qc["scale_fmt"] = "ue8m0"
        qc["lowprec"] = lowprec
        config["quantization_config"] = qc
        return {"config.json": config}
    if lay.name == "gptoss_mxfp4":
        config["quantization_config"] = {"quant_method": "mxfp4", "modules_to_not_convert": kept, "lowprec": lowprec}
        return {"config.json": config}
    if lay.name == "compressed_tensors_fp8":
        strategy = "tensor" if recipe.granularity == "tensor" else "channel"
        config["quantization_config"] = {
            "quant_method": "compressed-tensors", "format": "float-quantized", "quantization_status": "compressed",
            "config_groups": {"group_0": {"targets": ["Linear"], "input_activations": None, "output_activations": None,
                                          "weights": {"num_bits": 8, "type": "float", "strategy": strategy,
                                                      "symmetric": True, "dynamic": False}}},
            "ignore": kept, "lowprec": lowprec}
        return {"config.json": config}
    config["quantization_config"] = {"quant_method": "modelopt", "quant_algo": "NVFP4", "group_size": 16,
                                     "exclude_modules": kept}
    hf_quant = {"producer": {"name": "modelopt", "version": f"written by lowprec {_version}"},
                "quantization": {"quant_algo": "NVFP4", "group_size": 16, "exclude_modules": kept,
                                 "kv_cache_quant_algo": None},
                "lowprec": lowprec}
    return {"config.json": config, "hf_quant_config.json": hf_quant}


def _prepare_out(out_dir: str, force: bool) -> Path:
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise ValueError(f"-o {out_dir}: exists and is not a directory")
    if out.is_dir() and any(out.iterdir()) and not force:
        raise ValueError(f"-o {out_dir}: the directory is not empty (--force writes into it, replacing "
                         f"{OUT_FILE} and the config files)")
    if not out.parent.is_dir():
        raise ValueError(f"-o {out_dir}: its folder {out.parent} does not exist")
    out.mkdir(exist_ok=True)
    return out


def _write(items: Sequence[tuple[TensorRef, RowSource | None]], recipe: str | Recipe, layout: str | Layout,
           out_dir: str, exclude: Sequence[str], chunk_elements: int, force: bool,
           base_config: dict[str, Any] | None, left_out: list[Skipped]) -> WriteReport:
    rec, lay = get_recipe(recipe), get_layout(layout)
    why = lay.accepts(rec)
    if why is not None:
        raise ValueError(why)
    if rec.rounding == "stochastic":
        raise ValueError(f"recipe {rec.name} rounds stochastically; a checkpoint is written with a deterministic recipe")
    if isinstance(chunk_elements, bool) or not isinstance(chunk_elements, int) or chunk_elements < 1:
        raise ValueError(f"chunk_elements must be a positive integer, got {chunk_elements!r}")
    report = WriteReport(str(out_dir), lay.name, rec.name, left_out=list(left_out))
    planned = _plan(items, rec, lay, tuple(exclude), report)
    if not report.quantized:
        raise ValueError(f"no tensor to quantize: none of the {len(items)} float tensor(s) is one that {lay.name} with "
                         f"{rec.name} stores (see the reasons with --json or in the summary)"
                         + (f"; first: {report.kept[0][0]}: {report.kept[0][2]}" if report.kept else ""))
    out = _prepare_out(out_dir, force)
    header, where = _header(planned)
    target = out / OUT_FILE
    record: dict[str, Any] = {}
    tmp = target.with_name(f".{OUT_FILE}.partial")
    try:
        with open(tmp, "wb") as fh:
            fh.write(header)
            fh.truncate(len(header) + sum(n for _, n in where.values()))
            for p in planned:
                if p.quantize:
                    digests = _write_quantized(fh, len(header), where, p, rec, lay, chunk_elements)
                    record[p.name] = {"recipe": rec.name, "sha256": digests}
                else:
                    _write_float(fh, len(header), where, p, chunk_elements)
        os.replace(tmp, target)
    finally:
        if tmp.exists():
            tmp.unlink()
    kept = [n for n, _, _ in report.kept]
    for fname, obj in _config(lay, rec, kept, record, base_config).items():
        with open(out / fname, "w", encoding="utf-8") as fh:
            json.dump(obj, fh, indent=2)
            fh.write("\n")
        report.files.append(str(out / fname))
    report.files.insert(0, str(target))
    return report


def _base_config(files: Sequence[str], limits: ReadLimits) -> dict[str, Any] | None:
    """The config.json of the inputs' folder (when they share one that has it), without its
    quantization_config (the one written replaces it)."""
    folders = {str(Path(f).parent) for f in files}
    if len(folders) != 1:
        return None
    path = os.path.join(folders.pop(), "config.json")
    if not os.path.isfile(path):
        return None
    from .quantized import _read_json

    data = _read_json(path, limits)
    if not isinstance(data, dict):
        return None
    data = dict(data)
    data.pop("quantization_config", None)
    return data


def quantize_checkpoint(paths: Sequence[str] | str, recipe: str | Recipe, layout: str | Layout, out_dir: str, *,
                        exclude: Sequence[str] = (), chunk_elements: int = CHUNK_ELEMENTS, force: bool = False,
                        limits: ReadLimits = LIMITS) -> WriteReport:
    """Quantize the float tensors of `paths` (files, globs, directories, a shard index) by `recipe`
    and write them in `layout` to the directory `out_dir` (see the module docstring). A quantized
    input tensor is read as its dequantized values (and re-quantized)."""
    inv: Inventory = scan(paths, limits)
    items = [(ref, None) for ref in inv.tensors if ref.numel]
    return _write(items, recipe, layout, out_dir, exclude, chunk_elements, force, _base_config(inv.files, limits),
                  inv.skipped)


def quantize_arrays(arrays: dict[str, Any], recipe: str | Recipe, layout: str | Layout, out_dir: str, *,
                    exclude: Sequence[str] = (), chunk_elements: int = CHUNK_ELEMENTS, force: bool = False,
                    config: dict[str, Any] | None = None) -> WriteReport:
    """`quantize_checkpoint` for in-memory float arrays {name: array} (samples, tests)."""
    items: list[tuple[TensorRef, RowSource | None]] = []
    left: list[Skipped] = []
    for name, arr in arrays.items():
        try:
            ref, src = array_source(arr, name)
        except ValueError as exc:
            left.append(Skipped("", name, str(exc).split(": ", 1)[-1]))
            continue
        items.append((ref, src))
    return _write(items, recipe, layout, out_dir, exclude, chunk_elements, force, config, left)


def check_layout_name(name: str) -> str:
    """The layout's canonical name (ValueError naming the known ones)."""
    return get_layout(name).name


#: the layouts `lowprec quantize --layout` writes
LAYOUT_NAMES = tuple(LAYOUTS)
