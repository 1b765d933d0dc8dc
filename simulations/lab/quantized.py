"""Reading pre-quantized tensors (`layouts.LAYOUTS`) out of `.safetensors` checkpoints: which entries of a
file form one quantized tensor (its codes, its scales, a second level), the checks that refuse a
file that does not follow its layout, and the tensor's rows on demand, dequantized by its
producer's own arithmetic — so the runner streams a quantized checkpoint exactly as a float one.

The layout of a file comes from the caller (`--layout`), else from the checkpoint's `config.json` /
`hf_quant_config.json` in the file's folder (`layouts.layout_from_config`), else from the names and
dtypes of its tensors (`layouts.recognise`). A tensor the declared layout should hold but whose parts
are missing, of the wrong dtype or shape (a transposed grid is named as such), or whose bytes run
past the end of the file is refused with one line naming the file, the tensor and the problem
(`LabReadError`); an FP8 tensor with no scale in a file that declares no layout is listed as
skipped with the reason (never dequantized with a guessed scale). What lowprec wrote carries a
digest of every part in its config entry: a part that no longer matches is refused, and a nibble
swap or a transposed scale grid is named.

`QuantizedRows(ref)` reads rows lo..hi: the codes of those rows (one byte per E4M3 element, half a
byte per E2M1 element), the stored scale rows they use and the second level, dequantized to float32
— memory is one chunk plus its scales. Reading the rows in order from the first verifies the codes'
digest on the way (the runner's first pass does); `read_stored(ref)` gives the whole tensor's codes
and scales (`StoredTensor`, for tests, the audit of small tensors and the product).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from lowprec import formats

from ..quant.recipes import get_recipe, matrix_shape
from .layouts import (
    LAYOUTS,
    SAFETENSORS_ITEMSIZE,
    Geometry,
    LayoutError,
    diagnose_scales,
    digest,
    dequantize_window,
    geometry,
    get_layout,
    gptoss_base,
    gptoss_scales_name,
    layout_from_config,
    recognise,
    scale_values,
    swap_nibbles,
    ue8m0_codes,
)
from .limits import LIMITS, ReadLimits
from .tensors import LabReadError, dtype_label, Skipped, StoredPart, TensorRef, open_regular, reason_of

__all__ = ["CheckpointConfig", "QuantizedRows", "StoredTensor", "folder_config", "group_quantized", "read_stored"]

#: names of per-layer activation and cache scales that sit beside quantized weights (not weights)
_ACTIVATION_SCALES = ("input_scale", "output_scale", "k_scale", "v_scale", "q_scale", "input_global_scale")


@dataclass(frozen=True)
class CheckpointConfig:
    """What a checkpoint's folder declares: the layout and where it says so, DeepSeek's tile and
    scale format, and lowprec's own record of the recipes and digests it wrote."""

    layout: str | None
    why: str
    block: tuple[int, int] = (128, 128)
    ue8m0: bool = False
    record: dict[str, Any] | None = None  # {"tensors": {name: {"recipe": …, "sha256": {role: hex}}}}


def _read_json(path: str, limits: ReadLimits) -> Any:
    with open_regular(path) as fh:
        size = os.fstat(fh.fileno()).st_size
        if size > limits.max_json_bytes:
            raise LabReadError(f"{path}: {size} bytes is too large for a checkpoint config (at most "
                               f"{limits.max_json_bytes})")
        raw = fh.read(limits.max_json_bytes + 1)
    try:
        return json.loads(raw.decode("utf-8"))
    except (ValueError, RecursionError) as exc:
        raise LabReadError(f"{path}: not JSON ({reason_of(exc)})") from None


def folder_config(folder: str, layout: str | None = None, limits: ReadLimits = LIMITS) -> CheckpointConfig:
    """The quantization a checkpoint folder declares (`config.json`, `hf_quant_config.json`), or
    `layout` when given (it wins over the files; the lowprec record is still read)."""
    cfg_path, hq_path = os.path.join(folder, "config.json"), os.path.join(folder, "hf_quant_config.json")
    config = _read_json(cfg_path, limits) if os.path.isfile(cfg_path) else None
    hf_quant = _read_json(hq_path, limits) if os.path.isfile(hq_path) else None
    try:
        declared, why = layout_from_config(config, hf_quant)
    except ValueError as exc:
        if layout is None:
            raise LabReadError(f"{folder}: {exc}") from None
        declared, why = None, ""
    if layout is not None:
        declared, why = get_layout(layout).name, "--layout"
    qc = config.get("quantization_config") if isinstance(config, dict) else None
    qc = qc if isinstance(qc, dict) else {}
    block = (128, 128)
    if declared == "deepseek_fp8" and "weight_block_size" in qc:
        wbs = qc["weight_block_size"]
        if (not isinstance(wbs, list) or len(wbs) != 2
                or not all(isinstance(b, int) and not isinstance(b, bool) for b in wbs)):
            raise LabReadError(f"{cfg_path}: weight_block_size must be two integers, got {wbs!r:.60}")
        block = (wbs[0], wbs[1])
        if block != (128, 128):
            raise LabReadError(f"{cfg_path}: weight_block_size {list(block)}; the lab reads DeepSeek FP8 with "
                               f"128×128 tiles")
    ue8m0 = str(qc.get("scale_fmt", "")).lower() == "ue8m0"
    record = None
    for src in (hf_quant, qc):
        if isinstance(src, dict) and isinstance(src.get("lowprec"), dict):
            record = src["lowprec"]
    if record is not None and not isinstance(record.get("tensors", {}), dict):
        raise LabReadError(f"{folder}: the lowprec record's 'tensors' must be an object")
    return CheckpointConfig(declared, why, block, ue8m0, record)


# ------------------------------------------------------------------------------------------------
# grouping the entries of one safetensors file
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Entry:
    name: str
    dtype: str
    shape: tuple[int, ...]
    offset: int  # absolute
    nbytes: int


def _shape_text(shape: tuple[int, ...]) -> str:
    return "(" + ", ".join(str(s) for s in shape) + ")"


def _check_shape(what: str, got: tuple[int, ...], want: tuple[int, ...], how: str) -> None:
    """LayoutError unless `got == want`, naming a transposed grid as such."""
    if got == want:
        return
    if len(got) >= 2 and got[:-2] + (got[-1], got[-2]) == want and got != want:
        raise LayoutError(f"{what} has shape {_shape_text(got)}, the transpose of the expected {_shape_text(want)} "
                          f"({how}): its grid is transposed")
    raise LayoutError(f"{what} has shape {_shape_text(got)}; expected {_shape_text(want)} ({how})")


def _need(entries: dict[str, _Entry], name: str, owner: str, what: str) -> _Entry:
    e = entries.get(name)
    if e is None:
        raise LayoutError(f"tensor {owner!r} has no {what} {name!r} (missing scale tensor)")
    return e


def _dtype_is(e: _Entry, allowed: tuple[str, ...], layout: str, what: str) -> None:
    """LayoutError unless the entry's safetensors dtype is one of `allowed` (named in the lab's one
    spelling of dtypes, `tensors.dtype_label`: F32 is FP32, U8 UINT8, F8_E4M3 E4M3FN)."""
    if e.dtype not in allowed:
        raise LayoutError(f"{what} {e.name!r} has dtype {dtype_label(e.dtype)}; {layout} stores it as "
                          f"{' or '.join(dtype_label(a) for a in allowed)}")


def _part(role: str, e: _Entry, digests: dict[str, str]) -> StoredPart:
    return StoredPart(role, e.name, e.dtype, e.shape, e.offset, e.nbytes, str(digests.get(role, "")))


def _group_one(layout: str, name: str, entries: dict[str, _Entry], cfg: CheckpointConfig
               ) -> tuple[str, tuple[int, ...], dict[str, _Entry], str]:
    """(logical name, logical shape, role → entry, recipe) of the quantized tensor whose codes are
    `name` in `layout`; LayoutError for anything that does not follow the layout."""
    codes = entries[name]
    if layout == "deepseek_fp8":
        _dtype_is(codes, ("F8_E4M3",), layout, "weight")
        if len(codes.shape) != 2:
            raise LayoutError(f"weight {name!r} has {len(codes.shape)} axes; DeepSeek's 128×128 tiles are of 2-D "
                              f"weights")
        sc = _need(entries, name + "_scale_inv", name, "scale tensor")
        _dtype_is(sc, ("F32",), layout, "scale tensor")
        rows, cols = codes.shape
        br, bc = cfg.block
        _check_shape(f"scale tensor {sc.name!r}", sc.shape, (-(-rows // br), -(-cols // bc)),
                     f"one per {br}×{bc} tile of the {rows}×{cols} weight")
        recipe = "fp8_128x128_ue8m0" if cfg.ue8m0 else "fp8_128x128@deepseek"
        return name, codes.shape, {"codes": codes, "scales": sc}, recipe
    if layout == "gptoss_mxfp4":
        base = gptoss_base(name)
        _dtype_is(codes, ("U8",), layout, "blocks tensor")
        if len(codes.shape) < 2 or codes.shape[-1] != 16:
            raise LayoutError(f"blocks tensor {name!r} has shape {_shape_text(codes.shape)}; gpt-oss stores "
                              f"(…, rows, cols / 32, 16): 16 bytes (32 E2M1 codes) per block")
        sc = _need(entries, gptoss_scales_name(name), base, "scales tensor")
        _dtype_is(sc, ("U8", "F8_E8M0"), layout, "scales tensor")
        _check_shape(f"scales tensor {sc.name!r}", sc.shape, codes.shape[:-1], "one E8M0 exponent per block of 32")
        shape = codes.shape[:-2] + (codes.shape[-2] * 32,)
        return base, shape, {"codes": codes, "scales": sc}, "mxfp4"
    if layout == "modelopt_nvfp4":
        _dtype_is(codes, ("U8",), layout, "weight")
        if not codes.shape:
            raise LayoutError(f"weight {name!r} is a scalar; ModelOpt packs E2M1 codes along the last axis")
        shape = codes.shape[:-1] + (codes.shape[-1] * 2,)
        sc = _need(entries, name + "_scale", name, "scale tensor")
        if sc.dtype == "U8" and len(sc.shape) == 1:
            raise LayoutError(f"scale tensor {sc.name!r} is a 1-D UINT8 array: TensorRT-LLM's swizzled scale layout, "
                              f"not ModelOpt's E4M3FN scales per 16 elements")
        _dtype_is(sc, ("F8_E4M3",), layout, "scale tensor")
        s2 = _need(entries, name + "_scale_2", name, "second-level scale")
        _dtype_is(s2, ("F32",), layout, "second-level scale")
        if math.prod(s2.shape) != 1:
            raise LayoutError(f"second-level scale {s2.name!r} has shape {_shape_text(s2.shape)}; ModelOpt stores one "
                              f"FP32 value per tensor")
        rows, cols = matrix_shape(shape)
        if cols % 16:
            raise LayoutError(f"weight {name!r} holds {cols} codes per row, not a multiple of NVFP4's 16")
        per_row = shape[:-1] + (cols // 16,)
        compact = (-(-rows // 16), cols // 16)
        if sc.shape == per_row:
            recipe = "nvfp4"
        elif len(shape) == 2 and sc.shape == compact:
            recipe = "nvfp4_16x16"
        else:
            _check_shape(f"scale tensor {sc.name!r}", sc.shape, per_row, "one E4M3 scale per 16 elements")
            recipe = "nvfp4"
        return name, shape, {"codes": codes, "scales": sc, "scale_2": s2}, recipe
    if layout == "compressed_tensors_fp8":
        _dtype_is(codes, ("F8_E4M3",), layout, "weight")
        sc = _need(entries, name + "_scale", name, "scale tensor")
        _dtype_is(sc, ("F32", "BF16", "F16"), layout, "scale tensor")
        rows, cols = matrix_shape(codes.shape)
        if math.prod(sc.shape) == 1 and len(sc.shape) <= 2 and not (rows == 1 and len(codes.shape) == 2
                                                                    and sc.shape == (1, 1)):
            recipe = "e4m3_tensor"
        elif len(codes.shape) == 2 and sc.shape in ((rows, 1), (rows,)):
            recipe = "e4m3_row"
        else:
            _check_shape(f"scale tensor {sc.name!r}", sc.shape, (rows, 1),
                         "one per tensor, or one per output channel")
            recipe = "e4m3_row"
        return name, codes.shape, {"codes": codes, "scales": sc}, recipe
    raise ValueError(f"unknown layout {layout!r}")


def _record_recipe(cfg: CheckpointConfig, logical: str, layout: str, structural: str) -> tuple[str, dict[str, str]]:
    """The recipe and digests lowprec recorded for `logical`, checked against what the layout
    stores; (structural recipe, {}) without a record."""
    rec = (cfg.record or {}).get("tensors", {}).get(logical) if cfg.record else None
    if not isinstance(rec, dict):
        return structural, {}
    name = rec.get("recipe")
    where = f"tensor {logical!r}: the lowprec record in the checkpoint's config"
    try:
        recipe = get_recipe(str(name))
    except (ValueError, TypeError) as exc:
        raise LayoutError(f"{where} names recipe {name!r:.60}: {exc}") from None
    why = LAYOUTS[layout].accepts(recipe)
    if why is not None:
        raise LayoutError(f"{where} names recipe {recipe.name}, but {why}")
    if get_recipe(structural).block != recipe.block and not (layout == "modelopt_nvfp4"):
        raise LayoutError(f"{where} names recipe {recipe.name}, but the stored scales are those of {structural}")
    digests = rec.get("sha256", {})
    if not isinstance(digests, dict) or not all(isinstance(v, str) for v in digests.values()):
        raise LayoutError(f"{where}: its sha256 must map each part to a hex digest")
    return recipe.name, {str(k): str(v) for k, v in digests.items()}


def group_quantized(path: str, listing: list[tuple[str, str, tuple[int, ...], int, int]], cfg: CheckpointConfig
                    ) -> tuple[dict[str, TensorRef], set[str], list[Skipped]]:
    """The quantized tensors of one safetensors file (`listing`: name, dtype code, shape, absolute
    offset and bytes of each entry): ({name of its codes entry: TensorRef with its layout}, every
    name they consume, the activation scales beside them as skipped). The other entries are the
    float reader's. LabReadError (one line naming the file and the tensor) for a tensor that does
    not follow its layout."""
    entries = {n: _Entry(n, d, s, o, b) for n, d, s, o, b in listing}
    dtypes = {n: e.dtype for n, e in entries.items()}
    consumed: set[str] = set()
    declared = cfg.layout
    refs: dict[str, TensorRef] = {}
    skipped: list[Skipped] = []
    try:
        for n, e in entries.items():
            if n in consumed:
                continue
            layout = recognise(n, e.dtype, dtypes)
            if layout is None and declared is not None and _looks_like_codes(declared, e):
                layout = declared
            if layout is None:
                continue
            if declared is not None and layout != declared:
                raise LayoutError(f"tensor {n!r} is stored as {layout} (by its partner tensors' names and dtypes) "
                                  f"but the checkpoint declares {declared} ({cfg.why})")
            logical, shape, parts, structural = _group_one(layout, n, entries, cfg)
            recipe, digests = _record_recipe(cfg, logical, layout, structural)
            consumed.update(p.name for p in parts.values())
            sp = tuple(_part(role, p, digests) for role, p in parts.items())
            refs[n] = TensorRef(path, logical, "safetensors", tuple(shape), "FP32", sp[0].offset,
                                layout=layout, recipe=recipe, parts=sp)
        _orphans(entries, consumed, declared)
    except LayoutError as exc:
        raise LabReadError(f"{path}: {exc}") from None
    if refs or declared is not None:
        for n, e in entries.items():
            if n not in consumed and n.rsplit(".", 1)[-1] in _ACTIVATION_SCALES:
                consumed.add(n)
                skipped.append(Skipped(path, n, "an activation or KV-cache scale stored beside the quantized weights "
                                                "(not a weight)", e.shape, e.dtype))
    return refs, consumed, skipped


def _looks_like_codes(declared: str, e: _Entry) -> bool:
    """Whether entry `e` would be codes of the declared layout (its element dtype) while no partner
    tensor names it so: such a tensor lacks its scales."""
    if declared in ("deepseek_fp8", "compressed_tensors_fp8"):
        return e.dtype in ("F8_E4M3", "F8_E5M2")
    if declared == "modelopt_nvfp4":
        return e.dtype == "U8" and not e.name.endswith(("_scale", "_scale_2"))
    return False


def _orphans(entries: dict[str, _Entry], consumed: set[str], declared: str | None) -> None:
    """LayoutError for scale tensors whose codes are missing, and FP8 tensors with no scale at all
    in a checkpoint that declares a layout."""
    for n, e in entries.items():
        if n in consumed:
            continue
        for suffix, codes_of in (("_scale_inv", n[: -len("_scale_inv")]), ("_scales", n[: -len("_scales")] + "_blocks"),
                                 (".scales", n[: -len(".scales")] + ".blocks"), ("_scale_2", n[: -len("_scale_2")])):
            if n.endswith(suffix) and e.dtype != "F64" and codes_of not in entries:
                raise LayoutError(f"scale tensor {n!r} has no codes tensor {codes_of!r} (missing codes)")
        if e.dtype in ("F8_E4M3", "F8_E5M2") and declared is not None:
            raise LayoutError(f"tensor {n!r} is FP8 ({dtype_label(e.dtype)}) with no scale tensor beside it (missing scale "
                              f"tensor), though the checkpoint declares {declared}")


def fp8_skip_reason(dtype: str) -> str:
    return (f"dtype {dtype} with no scale tensor beside it (NAME_scale_inv, NAME_scale) and no declared layout: "
            f"not read (give --layout or the checkpoint's config.json to read it as a quantized layout)")


# ------------------------------------------------------------------------------------------------
# reading: the stored parts, rows on demand
# ------------------------------------------------------------------------------------------------


def _read_bytes(fh: Any, path: str, part: StoredPart, start: int, count: int, label: str) -> np.ndarray:
    """`count` bytes of `part` from byte `start` of its data."""
    buf = np.empty(count, np.uint8)
    fh.seek(part.offset + start)
    got = fh.readinto(buf.data)
    if got != count:
        raise LabReadError(f"{path}: truncated: tensor {label!r} ({part.name}) ends past the end of the file")
    return buf


def _view(raw: np.ndarray, dtype: str) -> np.ndarray:
    import ml_dtypes

    kind = {"F32": np.float32, "BF16": ml_dtypes.bfloat16, "F16": np.float16, "F64": np.float64}.get(dtype, np.uint8)
    return raw.view(kind)


def _geometry_of(ref: TensorRef) -> Geometry:
    sc = ref.part("scales")
    rows, cols = matrix_shape(ref.shape)
    compact = ref.layout == "modelopt_nvfp4" and len(ref.shape) == 2 and sc.shape == (-(-rows // 16), cols // 16) \
        and get_recipe(ref.recipe).block == (16, 16) and rows > 1 and sc.shape[0] != rows
    return geometry(ref.layout, ref.recipe, ref.shape, compact_tiles=compact)


class QuantizedRows:
    """Rows of a pre-quantized tensor's matrix view, dequantized on demand (see the module
    docstring); memory: the chunk's codes and values and the scale rows they use."""

    def __init__(self, ref: TensorRef) -> None:
        if not ref.layout:
            raise ValueError(f"tensor {ref.label!r} is not a pre-quantized tensor")
        self.ref = ref
        self.rows, self.cols = matrix_shape(ref.shape)
        self.geo = _geometry_of(ref)
        self.layout = get_layout(ref.layout)
        self._codes = ref.part("codes")
        self._scales = ref.part("scales")
        self._row_bytes = self.cols // 2 if self.layout.packed else self.cols
        self._scale_row_bytes = (self._scales.nbytes // self.geo.stored_grid_rows) if self.geo.stored_grid_rows else 0
        self.scale_2: float | None = None
        with open_regular(ref.path) as fh:
            if ref.layout == "modelopt_nvfp4":
                raw = _read_bytes(fh, ref.path, ref.part("scale_2"), 0, 4, ref.label)
                self._check_digest(ref.part("scale_2"), raw)
                self.scale_2 = float(raw.view(np.float32)[0])
            self._verify_scales(fh)
        self._hash: Any = hashlib.sha256() if self._codes.digest else None
        self._hashed = 0  # bytes of the codes hashed, in order from the first
        self._swapped: Any = hashlib.sha256() if self._codes.digest and self.layout.packed else None

    # ---- digests ---------------------------------------------------------------------------------
    def _where(self) -> str:
        return f"{self.ref.path}: tensor {self.ref.label!r}"

    def _check_digest(self, part: StoredPart, raw: np.ndarray) -> None:
        if part.digest and digest(raw) != part.digest:
            raise LabReadError(f"{self._where()}: its {part.role} {part.name!r} differ from what lowprec wrote "
                               f"(the SHA-256 in the checkpoint's config does not match)")

    def _verify_scales(self, fh: Any) -> None:
        part = self._scales
        if not part.digest:
            return
        h = hashlib.sha256()
        step = 1 << 20
        for start in range(0, part.nbytes, step):
            h.update(_read_bytes(fh, self.ref.path, part, start, min(step, part.nbytes - start), self.ref.label).data)
        if h.hexdigest() != part.digest:
            raw = _read_bytes(fh, self.ref.path, part, 0, part.nbytes, self.ref.label)
            why = diagnose_scales(_view(raw, part.dtype), part.shape, part.digest)
            raise LabReadError(f"{self._where()}: {why} (scale tensor {part.name!r}; the SHA-256 lowprec recorded does "
                               f"not match)")

    def _hash_codes(self, start: int, raw: np.ndarray) -> None:
        if self._hash is None or start != self._hashed:
            return
        self._hash.update(raw.data)
        if self._swapped is not None:
            self._swapped.update(swap_nibbles(raw).data)
        self._hashed += raw.size
        if self._hashed == self._codes.nbytes:
            ok = self._hash.hexdigest() == self._codes.digest
            swapped = self._swapped is not None and self._swapped.hexdigest() == self._codes.digest
            self._hash = None
            if not ok:
                why = ("its nibbles are swapped: the first element of each pair is in the high nibble, where "
                       f"{self.layout.producer} puts it in the low one" if swapped
                       else "its codes differ from what lowprec wrote (changed after writing)")
                raise LabReadError(f"{self._where()}: {why} (codes tensor {self._codes.name!r}; the SHA-256 lowprec "
                                   f"recorded does not match)")

    # ---- reading ---------------------------------------------------------------------------------
    def _stored_window(self, fh: Any, lo: int, hi: int, byte_lo: int, byte_hi: int) -> tuple[np.ndarray, np.ndarray]:
        """(element codes of bytes byte_lo..byte_hi of the codes, the stored scale rows rows lo..hi use)."""
        raw = _read_bytes(fh, self.ref.path, self._codes, byte_lo, byte_hi - byte_lo, self.ref.label)
        self._hash_codes(byte_lo, raw)
        codes = formats.unpack_fp4(raw) if self.layout.packed else raw
        g0, g1 = self.geo.grid_rows_of(lo, hi)
        sraw = _read_bytes(fh, self.ref.path, self._scales, g0 * self._scale_row_bytes,
                           (g1 - g0) * self._scale_row_bytes, self.ref.label)
        return codes, _view(sraw, self._scales.dtype).reshape(g1 - g0, -1)

    def read(self, lo: int, hi: int) -> np.ndarray:
        with open_regular(self.ref.path) as fh:
            codes, scales = self._stored_window(fh, lo, hi, lo * self._row_bytes, hi * self._row_bytes)
        per_element = self.geo.expand(scales, lo, hi)
        out = dequantize_window(self.layout, codes.reshape(hi - lo, self.cols), per_element, self.scale_2,
                                self._scales.dtype)
        return np.ascontiguousarray(out, dtype=np.float32)

    def read_span(self, lo: int, hi: int) -> np.ndarray:
        """Elements lo..hi of a one-row tensor (lo, hi even for packed codes: the runner's segments are)."""
        per = 2 if self.layout.packed else 1
        if lo % per or (hi % per and hi != self.cols):
            raise ValueError(f"a span of packed E2M1 codes must start on a byte, got {lo}..{hi}")
        with open_regular(self.ref.path) as fh:
            codes, scales = self._stored_window(fh, 0, 1, lo // per, -(-hi // per))
        per_element = self.geo.expand(scales, 0, 1, lo, hi)
        out = dequantize_window(self.layout, codes.reshape(1, -1)[:, : hi - lo], per_element, self.scale_2,
                                self._scales.dtype)
        return np.ascontiguousarray(out, dtype=np.float32)

    def stored_rows(self, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray]:
        """(element codes (hi − lo, cols) uint8, the stored scale rows they use, as stored) of rows lo..hi."""
        with open_regular(self.ref.path) as fh:
            codes, scales = self._stored_window(fh, lo, hi, lo * self._row_bytes, hi * self._row_bytes)
        return codes.reshape(hi - lo, self.cols), scales


@dataclass
class StoredTensor:
    """A whole pre-quantized tensor as its file stores it, in the terms of its lowprec recipe."""

    name: str
    layout: str
    recipe: str
    shape: tuple[int, ...]
    codes: np.ndarray  # element codes, one per element, the tensor's shape (uint8)
    scales: np.ndarray  # decode scales, float64, in the recipe's block-grid layout (`QuantResult.scales`)
    scale_codes: np.ndarray | None  # E8M0 / E4M3 codes of the scales (UE8M0 codes of power-of-two FP32 scales)
    tensor_scale: float | None  # ModelOpt's FP32 scale_2
    stored_scales: np.ndarray  # the scales exactly as stored (float32 / bf16 / f16 values or uint8 codes)
    scale_dtype: str  # their safetensors dtype
    geometry: Geometry
    values: np.ndarray  # dequantized by the producer's arithmetic (float32)


def read_stored(ref: TensorRef) -> StoredTensor:
    """The whole tensor's codes and scales (a small tensor, or one the caller can hold)."""
    src = QuantizedRows(ref)
    codes, stored = src.stored_rows(0, src.rows)
    values = src.read(0, src.rows).reshape(ref.shape)
    geo = src.geo
    scales, scodes = scale_values(ref.layout, stored, src._scales.dtype)
    if ref.layout == "modelopt_nvfp4" and geo.expand_rows:
        scales, scodes = scales[:: geo.tile[0]], None if scodes is None else scodes[:: geo.tile[0]]
    if ref.layout == "deepseek_fp8" and get_recipe(ref.recipe).scale_format.value == "E8M0":
        scodes = ue8m0_codes(stored)
    grid = _recipe_grid(ref, geo)
    scales = scales.reshape(grid)
    scodes = None if scodes is None else scodes.reshape(grid)
    return StoredTensor(ref.label, ref.layout, ref.recipe, ref.shape, codes.reshape(ref.shape), scales, scodes,
                        src.scale_2, stored.reshape(src._scales.shape), src._scales.dtype, geo, values)


def _recipe_grid(ref: TensorRef, geo: Geometry) -> tuple[int, ...]:
    """The shape `quant.quantize` gives this recipe's scales for the tensor."""
    if ref.layout == "compressed_tensors_fp8":
        return () if get_recipe(ref.recipe).granularity == "tensor" else (geo.rows,)
    br, _ = geo.tile
    if br == 1 and ref.layout != "deepseek_fp8":
        return tuple(ref.shape[:-1]) + (geo.grid[1],)
    return geo.grid


def scan_with_layouts(path: str, listing: list[tuple[str, str, tuple[int, ...], int, int]], layout: str | None,
                      limits: ReadLimits) -> tuple[dict[str, TensorRef], set[str], list[Skipped]]:
    """The quantized tensors of a safetensors file (see `group_quantized`), with its folder's config."""
    cfg = folder_config(str(Path(path).parent), layout, limits)
    return group_quantized(path, listing, cfg)


def itemsize(dtype: str) -> int:
    return SAFETENSORS_ITEMSIZE.get(dtype, 0)
