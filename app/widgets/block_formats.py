"""BlockFormats: the block-formats widget. A float32 tensor of SHAPE (standard normal or Student-t
with 3 degrees of freedom, seeded; optionally one outlier at OUTLIER_COL of the shown row) is
quantized with a block recipe from `simulations.blocks`: MX (`quantize_mx`: 32 elements share an
E8M0 scale 2^X, X from the block amax by the named scale rule — floor (OCP), ceil, rceil, even) in
MXFP8 (E4M3FN or E5M2), MXFP6 (E2M3 or E3M2) or MXFP4 (E2M1), or NVFP4 (`quantize_nvfp4`: E2M1
elements, an E4M3 scale per 16 and an FP32 tensor scale `amax / (448·6)`; the scale rule does not
apply). With `hadamard` on, every run of 16 elements along a row is first multiplied by the random
Hadamard matrix of `simulations.hadamard` and the decoded tensor is transformed back, so errors are
always measured against the original tensor. The comparison is per-tensor scaling
(`simulations.scaling.quantize_scaled`, FP32 `encode_scale = F / amax`) of the same input in the same
element format. Errors: RMS relative error ‖x̂ − x‖₂ / ‖x‖₂ overall and per 32-element block along rows.
With `transposed_view` on, the widget also compares the two ways of making the column-blocked view
(blocks along axis 0, as the weight-gradient product needs) of the tensor that enters the cast:
quantized from the source (one rounding) and re-quantized from the row-blocked decoded data (two
roundings), both with the same recipe (`quantize_mx`/`quantize_nvfp4` with `axis=0`; no helper in
`simulations` does this for block formats). SHAPE has 32 rows so that both 1×32 row blocks and 32×1
column blocks tile it. Those errors are measured against the tensor entering the cast; with the
Hadamard transform on that is the transformed tensor, and the tensor-wide RMS relative error of the
row view is the same in either basis (the blockwise transform is orthogonal).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import panel as pn
import param
from bokeh.models import ColumnDataSource

from lowprec import formats
from lowprec.app.plots.style import power_of_two_text
from lowprec.app.plots.widget_blocks import TRANSPOSE_VIEWS, block_figures
from lowprec.app.widgets._sim_base import SimulationWidget
from lowprec.simulations import blocks, hadamard, scaling

#: rows × columns of the tensor; blocks run along rows (32 for MX, 16 for NVFP4)
SHAPE = (32, 128)
SHOWN = 32  # elements shown: one MX block, two NVFP4 blocks
OUTLIER_COL = 5
#: recipe name → element format
RECIPES = {"MXFP8": "E4M3FN", "MXFP8-E5M2": "E5M2", "MXFP6": "E2M3", "MXFP6-E3M2": "E3M2", "MXFP4": "E2M1",
           "NVFP4": "E2M1"}


def block_tensor(distribution: str, seed: int, outlier: float, row: int) -> np.ndarray:
    """The widget's input: float32 of SHAPE, standard normal or Student-t (3 dof) from
    `default_rng(seed)`, with x[row, OUTLIER_COL] = outlier unless outlier is 0."""
    rng = np.random.default_rng(seed)
    if distribution == "normal":
        x = rng.standard_normal(SHAPE)
    elif distribution == "student_t":
        x = rng.standard_t(3, size=SHAPE)
    else:
        raise ValueError(f"distribution {distribution!r} is not one of normal, student_t")
    x = x.astype(np.float32)
    if outlier != 0:
        x[row, OUTLIER_COL] = np.float32(outlier)
    return x


class BlockFormats(SimulationWidget):
    """MX and NVFP4 block formats: one block element by element, error against per-tensor scaling."""

    recipe: param.Selector = param.Selector(default="MXFP8", objects=list(RECIPES),
                            doc="block recipe: MX element format (E8M0 scale per 32) or NVFP4")
    scale_rule: param.Selector = param.Selector(default="floor", objects=[r.value for r in blocks.ScaleRule],
                                doc="how an MX block's shared exponent follows from its amax (not NVFP4)")
    hadamard = param.Boolean(default=False, doc="random Hadamard transform on blocks of 16 before the cast")
    distribution: param.Selector = param.Selector(default="student_t", objects=["student_t", "normal"],
                                  doc="distribution of the tensor (Student-t: heavy tails)")
    outlier = param.Number(default=0.0, bounds=(-1e4, 1e4), doc="outlier placed in the shown block (0: none)")
    row = param.Integer(default=0, bounds=(0, SHAPE[0] - 1), doc="row whose first 32 elements are shown")
    seed = param.Integer(default=0, bounds=(0, 2**31 - 1), doc="seed of the tensor and of the Hadamard signs")
    transposed_view = param.Boolean(default=False, doc=(
        "also show the column-blocked (transposed) view: its error quantized from the source vs "
        "re-quantized from the row-blocked decoded data, and the extra error of rounding twice"))

    title = "Block formats"
    control_widgets = {"outlier": pn.widgets.FloatInput, "seed": pn.widgets.IntInput}
    watched = ("recipe", "scale_rule", "hadamard", "distribution", "outlier", "row", "seed", "transposed_view")

    @property
    def element_format(self) -> str:
        return RECIPES[self.recipe]

    def _quantize(self, x: np.ndarray, axis: int) -> Any:
        """The current recipe applied to `x` in blocks along `axis`."""
        if self.recipe == "NVFP4":
            return blocks.quantize_nvfp4(x, axis=axis)
        return blocks.quantize_mx(x, self.element_format, 32, self.scale_rule, axis=axis)

    def _compute(self) -> Any:
        x = block_tensor(self.distribution, self.seed, self.outlier, self.row)
        h = hadamard.random_hadamard(hadamard.RHT_BLOCK, self.seed) if self.hadamard else None
        x_in = x if h is None else hadamard.apply_blockwise(x, h, axis=1).astype(np.float32)
        q = self._quantize(x_in, -1)
        per_tensor = scaling.quantize_scaled(x_in, self.element_format, "tensor")
        decoded_in = q.dequantize().astype(np.float64)  # in the basis that was quantized
        per_tensor_in = per_tensor.dequantize().astype(np.float64)
        if h is None:
            decoded, per_tensor_out = decoded_in, per_tensor_in
        else:
            decoded = hadamard.apply_blockwise(decoded_in, h.T, axis=1)
            per_tensor_out = hadamard.apply_blockwise(per_tensor_in, h.T, axis=1)
        err = scaling.error_metrics(x, decoded, groups="block32")
        err_pt = scaling.error_metrics(x, per_tensor_out, groups="block32")
        out = {"x": x, "x_in": x_in, "q": q, "per_tensor": per_tensor, "decoded_in": decoded_in,
               "per_tensor_in": per_tensor_in, "error": err, "error_per_tensor": err_pt}
        if self.transposed_view:
            out["transposed"] = self._transposed(x_in, q)
        return out

    def _transposed(self, x_in: np.ndarray, rows: Any) -> dict[str, float]:
        """Column-blocked view of `x_in` from the source and from the row-blocked decoded data
        `rows`: tensor-wide RMS relative errors against `x_in` and the fraction of differing codes."""
        cols_src = self._quantize(x_in, 0)
        cols_two = self._quantize(rows.dequantize(), 0)
        e_rows = scaling.error_metrics(x_in, rows.dequantize()).rms_rel_error
        e_src = scaling.error_metrics(x_in, cols_src.dequantize()).rms_rel_error
        e_two = scaling.error_metrics(x_in, cols_two.dequantize()).rms_rel_error
        return {"rows": e_rows, "columns_from_source": e_src, "columns_requantized": e_two,
                "extra": e_two - e_src, "codes_differ": float(np.mean(cols_src.codes != cols_two.codes))}

    def _shown_scales(self, q: Any) -> list[float]:
        """Decode scale of each of the SHOWN elements of the shown row."""
        if isinstance(q, blocks.NVFP4Tensor):
            per_block = q.block_scales[self.row].astype(np.float64) * q.tensor_scale
            return [float(per_block[j // blocks.NVFP4_BLOCK]) for j in range(SHOWN)]
        exps = q.scale_exponents[self.row]
        return [float(2.0 ** int(exps[j // 32])) if exps[j // 32] <= 127 else float("nan") for j in range(SHOWN)]

    def _source_data(self, result: Any) -> dict[str, dict[str, list[Any]]]:
        q = result["q"]
        r = self.row
        codes = q.codes[r, :SHOWN]
        scales = self._shown_scales(q)
        block = {
            "element": list(range(SHOWN)),
            "input": result["x_in"][r, :SHOWN].astype(np.float64).tolist(),
            "decoded": result["decoded_in"][r, :SHOWN].tolist(),
            "per_tensor": result["per_tensor_in"][r, :SHOWN].tolist(),
            "code": [f"0x{int(c):02X}" for c in codes],
            "scale_text": [power_of_two_text(s) for s in scales],
        }
        # the lattice the first shown block snaps to: every finite value of the element format × its scale
        table = formats.code_table(formats.get_format(self.element_format))
        lattice = np.unique(table.value[np.isfinite(table.value)].astype(np.float64)) * scales[0]
        reach = 1.05 * max(float(np.max(np.abs(block["input"]))), float(np.max(np.abs(block["decoded"]))), 1e-300)
        lines = [float(v) for v in lattice if abs(v) <= reach]
        if len(lines) > 64:  # 8-bit grids crowd near zero: keep the top three binades
            lines = [v for v in lines if abs(v) >= reach / 8]
        grid = {"value": lines}
        rec = result["error"].group_rms_rel_error.reshape(-1)
        pt = result["error_per_tensor"].group_rms_rel_error.reshape(-1)
        errors = {"block": list(range(rec.size)), "recipe": rec.tolist(), "per_tensor": pt.tolist()}
        shown_block = r * (SHAPE[1] // 32)
        shown = {"block": [shown_block], "recipe": [float(rec[shown_block])]}
        return {"block": block, "grid": grid, "errors": errors, "shown": shown,
                "transpose": transpose_columns(result.get("transposed"))}

    def _build_figures(self, sources: dict[str, ColumnDataSource]) -> Any:
        layout = block_figures(sources)
        self._transpose_fig = layout.children[-1]
        return layout

    def _after_update(self, result: Any) -> None:
        self._transpose_fig.visible = "transposed" in result

    def _summary_text(self, result: Any) -> str:
        q = result["q"]
        r = self.row
        f = formats.get_format(self.element_format)
        amax = float(np.max(np.abs(result["x_in"][r, :SHOWN])))
        if isinstance(q, blocks.NVFP4Tensor):
            sc = q.block_scales[r, :2].astype(np.float64)
            scheme = (f"NVFP4 (E2M1 elements, an E4M3 scale per 16, FP32 tensor scale "
                      f"{q.tensor_scale:.4g}; the scale rule does not apply)")
            scale_text = (f"E4M3 block scales {power_of_two_text(float(sc[0]))} and "
                          f"{power_of_two_text(float(sc[1]))} × the tensor scale")
        else:
            x_exp = int(q.scale_exponents[r, 0])
            scheme = f"{self.recipe} ({f.name} elements, an E8M0 scale per 32, rule {self.scale_rule})"
            scale_text = f"shared scale 2^{x_exp} (E8M0 code 0x{int(q.scale_codes[r, 0]):02X})"
        return self._row_summary(result, scheme, scale_text, amax, q) + self._transpose_summary(result)

    def _row_summary(self, result: Any, scheme: str, scale_text: str, amax: float, q: Any) -> str:
        r = self.row
        e, ept = result["error"].rms_rel_error, result["error_per_tensor"].rms_rel_error
        if e == ept:
            ratio = "the same"
        elif e < ept:
            ratio = f"blocks {ept / e:.3g}× more accurate"
        else:
            ratio = f"per-tensor {e / ept:.3g}× more accurate" if ept > 0 else "per-tensor exact"
        return (
            f"{scheme}: **{q.bits_per_element:.4g} bits per element**. The shown block "
            f"(row {r}{', after the Hadamard transform' if self.hadamard else ''}) has amax {amax:.4g} and "
            f"{scale_text}. RMS relative error over the tensor: {e:.3g} with blocks, {ept:.3g} with one "
            f"per-tensor scale ({ratio}); flushed to zero: {result['error'].flushed_fraction:.1%} vs "
            f"{result['error_per_tensor'].flushed_fraction:.1%}."
        )

    def _transpose_summary(self, result: Any) -> str:
        t = result.get("transposed")
        if t is None:
            return ""
        e_src, e_two = t["columns_from_source"], t["columns_requantized"]
        rel = f" ({e_two / e_src:.3g}× the single rounding)" if e_src > 0 else ""
        return (
            f"\n\n**Transposed view** (blocks along columns): RMS relative error {e_src:.4g} quantized "
            f"from the source, {e_two:.4g} re-quantized from the row-blocked decoded data{rel}: "
            f"extra error {t['extra']:+.3g}; {t['codes_differ']:.1%} of the column-view codes differ "
            f"(row view: {t['rows']:.4g})."
        )


def transpose_columns(transposed: dict[str, float] | None) -> dict[str, list[Any]]:
    """Bars of the transposed-view figure: one per entry of TRANSPOSE_VIEWS (row view, columns
    from the source, columns re-quantized) with its error; empty columns when the view is off."""
    if transposed is None:
        return {"view": [], "error": [], "color": []}
    keys = ("rows", "columns_from_source", "columns_requantized")
    return {"view": [label for label, _ in TRANSPOSE_VIEWS], "error": [float(transposed[k]) for k in keys],
            "color": [color for _, color in TRANSPOSE_VIEWS]}


__all__ = ["BlockFormats", "RECIPES", "SHAPE", "block_tensor", "transpose_columns"]
