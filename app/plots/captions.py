"""What to look at in each figure: one short caption per simulation's figures, shown under the
widget's plots and written into the `--html` page of the matching `lowprec simulate` run, so both
say the same thing.

The caption functions here (`spike`, `attention`, `recompute`, `grouping`, `hadamard`, `blocks`:
result → Markdown) are named by the registry of simulations (`app.sim_faces`: each simulation's
caption, HTML page, widget and exported control in one entry; `sim_faces.widget_caption(widget,
result)` is a widget's caption by its name). `OTHER_WIDGETS` holds the captions of the widgets that
are no simulation's face (BinExplorer, Conventions). Words only: every number quoted comes from the
result.
"""

from __future__ import annotations

from typing import Any, Callable

__all__ = ["OTHER_WIDGETS", "attention", "blocks", "gemm", "grouping", "hadamard", "recompute", "spike", "stateful"]


def _get(result: Any, key: str, default: Any = None) -> Any:
    config = getattr(result, "config", None)
    if config is None:
        return default
    if isinstance(config, dict):
        return config.get(key, config.get("parameters", {}).get(key, default))
    return getattr(config, key, default)


def spike(result: Any) -> str:
    fmt = _get(result, "format", "the format")
    return ("**What to look at:** where the orange line (the amax the delayed scale was sized for) sits "
            "below the black tensor amax, the cast saturates — the middle plot shows the share clipped. "
            "After the spike a `max` history keeps the scale sized for the spike for `history` steps, so "
            "small values lose resolution (bottom plot). Step 0 has no history yet: the delayed scaler "
            f"starts from its initial encode scale 1, sized for an amax of {fmt}'s largest value, which is "
            "the jump at the first step, not a measurement.")


def attention(result: Any) -> str:
    rounding = _get(result, "rounding", "")
    text = ("**What to look at:** top left, each probability P against its rounded P̃ — the staircase is "
            "the format's grid; top right, the exact change of the output ΔO against the first-order "
            "estimate ΔP·V + P·ΔV (on the dashed line when the estimate holds). ")
    if rounding == "stochastic":
        text += ("Bottom: the Monte-Carlo variance of ΔO against Σ V²·Var(e), and the mean error per output "
                 "element — trial means inside the grey band (expected ± 3 standard errors) are unbiased, "
                 "while nearest rounding's error (ink) is a fixed bias.")
    else:
        text += ("Nearest rounding is deterministic: every trial gives the same P̃, so there is no variance "
                 "to draw and the mean error is nearest rounding's own error.")
    out = getattr(result, "out_exact", None)
    probs = getattr(result, "probs", None)
    if out is not None and probs is not None:
        from .widget_attention import drawn_every

        k_out, k_p = drawn_every(out.size), drawn_every(probs.size)
        if k_out > 1 or k_p > 1:
            text += (f" For legibility the scatters draw every {k_p}th of the {probs.size} probabilities and every "
                     f"{k_out}th of the {out.size} output elements (row-major).")
    return text


def recompute(result: Any) -> str:
    return ("**What to look at:** the heatmap compares each checkpointed activation in the forward pass with "
            "its recomputation in backward — grey cells are bitwise identical, orange cells are identical "
            "codes read back with the wrong scale, coloured cells differ (brighter = larger difference). "
            "Below, the state commits per step against the one-per-layer rule, and the gradient norm "
            "with skipped optimizer steps marked.")


def grouping(result: Any) -> str:
    study = getattr(result, "study", None)
    name = getattr(study, "study", None) or _get(result, "study", "outlier")
    if name == "scale_choice":
        text = ("**What to look at:** one line per format and scale as the tensor's magnitude σ sweeps many "
                "decades. The amax scale follows the tensor, so its error stays flat; the fixed scale is "
                "good only in a band: below it values flush to zero or land on the subnormals' coarse "
                "grid, above it they saturate.")
        if study is not None and hasattr(study, "usable_range"):
            tolerance, bands = 0.1, []
            for fmt in getattr(study, "formats", ()):
                band = study.usable_range(fmt, tolerance)
                bands.append(f"{fmt} from σ = {band[0]:g} to {band[1]:g}" if band is not None
                             else f"{fmt} nowhere")
            if bands:
                text += (f" With the fixed scale the RMS relative error stays under {tolerance:.0%} for "
                         + " and for ".join(bands) + ".")
        return text
    if name == "transpose":
        text = ("**What to look at:** the backward pass needs the tensor blocked along columns. Made from "
                "the source, the column view rounds each value once, like the row view; made by "
                "re-quantizing the row-blocked data, already rounded, it rounds twice.")
        row = getattr(study, "rms_rel_error_row", None)
        src = getattr(study, "rms_rel_error_col_from_source", None)
        rows = getattr(study, "rms_rel_error_col_from_rows", None)
        differ = getattr(study, "codes_differ_fraction", None)
        if None not in (row, src, rows, differ):
            text += (f" RMS relative error here: {row:.3g} for the row view, {src:.3g} for the columns from "
                     f"the source, {rows:.3g} for the columns re-quantized; {differ:.1%} of the column "
                     "codes differ between the two routes.")
        return text
    if name == "hadamard":
        return hadamard(study)
    return ("**What to look at:** the left map shows the scale each element shares, the right map its "
            "relative error after the cast; the outlined cell is the outlier. Its group's scale is sized "
            "for it, so its neighbours land on a coarse grid or flush to zero — compare the granularities "
            "in the bar chart: the smaller the group, the fewer elements pay for one outlier.")


def hadamard(study: Any) -> str:
    """The random Hadamard transform study (`lowprec simulate hadamard`, or grouping's hadamard study)."""
    text = ("**What to look at:** the error of the ordinary elements in NVFP4 and MXFP4, without and "
            "with the random Hadamard transform (random signs on each block's inputs, then the "
            "Sylvester mix). One outlier sizes its block's scale and crushes its neighbours; the "
            "transform spreads it over the block, so the block's amax comes closer to its typical "
            "value. Transformer Engine applies it to the weight-gradient operands only, never to "
            "weights.")
    fields = ("block_crest_before", "block_crest_after", "nvfp4_rms_rel_error_before",
              "nvfp4_rms_rel_error_after", "mxfp4_rms_rel_error_before", "mxfp4_rms_rel_error_after")
    v = [getattr(study, f, None) for f in fields]
    if None not in v:
        text += (f" Here the outliers' blocks' amax / RMS goes from {v[0]:.3g} to {v[1]:.3g}, and the "
                 f"RMS relative error from {v[2]:.3g} to {v[3]:.3g} in NVFP4 and from {v[4]:.3g} to "
                 f"{v[5]:.3g} in MXFP4.")
    return text


def blocks(result: Any) -> str:
    return ("**What to look at:** in one 32-element block, grey bars are the inputs, dots what the block "
            "recipe decodes under its shared scale, crosses what one per-tensor scale gives; faint lines "
            "are the values the block can represent. Below, the error of every block: the recipe stays "
            "flat where per-tensor scaling suffers from blocks far smaller than the tensor's amax.")


def gemm(study: Any) -> str:
    """The accumulator study (`lowprec simulate gemm`, the Accumulator widget)."""
    text = ("**What to look at:** each line is the error of one way to accumulate the same products, "
            "against the number of products K (both axes logarithmic); dashed lines promote the tensor "
            "core's partial sum to FP32 every n elements. Below, one step of one dot product: every term "
            "shifted to the step's largest exponent, the purple bits kept, the orange bits cut off by the "
            "truncation (a term marked … has more cut bits than drawn). The longer the running sum C, the "
            "further right the new products land and the more of them is cut. An error of exactly 0 has "
            "no place on a logarithmic axis: its point is left out.")
    curves = getattr(study, "curves", None)
    if curves:
        k = curves[0].k[-1]
        worst = max(curves, key=lambda c: c.median_rel[-1] if c.median_rel[-1] == c.median_rel[-1] else -1.0)
        text += (f" Here, at K = {k}, the largest median relative error of an output is "
                 f"{100 * worst.median_rel[-1]:.3g} % ({worst.label}).")
    return text


def _bins(result: Any) -> str:
    return ("**What to look at:** on the number line each shaded band is a rounding bin — every real "
            "number in it becomes the code of the dot inside; a triangle at an edge points into the bin "
            "that owns the tie. The dark line is your value. In the gap plot the distance to the next "
            "value is flat over the subnormals and doubles at each binade.")


def _conventions(result: Any) -> str:
    return ("**What to look at:** each row is one backend's measured rule for the same input; the cells "
            "that differ between rows are where a model trained with one backend and served with another "
            "gets different codes.")


#: captions of the widgets that are no simulation's face, by widget name (a simulation's caption is
#: its entry's in `app.sim_faces`)
OTHER_WIDGETS: dict[str, Callable[[Any], str]] = {"BinExplorer": _bins, "Conventions": _conventions}


def stateful(result: Any) -> str:
    text = ("**What to look at:** top, the amax each microbatch observed (dots) against the amax the scale it "
            "was cast with was sized for (orange steps): a dot above the steps was clipped (×). Middle, the "
            "history insertions per step against the count the corrected rule makes (a gap is an owner that "
            "advanced when it should not, or did not when it should), and per step the clipped share, the "
            "unpaired reads and the recomputed operands that differ from the forward. Bottom, who decodes "
            "whose shard: the factor by which each rank's layer-0 output rows of each shard are scaled "
            "(grey = paired), and the gradient norm.")
    design = getattr(result, "design", None)
    if design is not None:
        text += f" This design's signature: {design.signature()}"
    return text
