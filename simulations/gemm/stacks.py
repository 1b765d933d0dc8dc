"""What real training stacks ask of the FP8 accumulator, per GEMM role: one record per (stack,
recipe, role), with where it is set in that stack's source and how the model reproduces it.

The three GEMMs of a linear layer Y = X·W: `fprop` (Y = X·W, K = the input features), `dgrad`
(dX = dY·Wᵀ, K = the output features) and `wgrad` (dW = Xᵀ·dY, K = the tokens of the batch — the
longest contraction in training). On Hopper an FP8 GEMM either keeps its whole K in the tensor
core's accumulator (cuBLASLt `CUBLASLT_MATMUL_DESC_FAST_ACCUM` on: "fast accumulation", 13 kept
fraction bits for FP8 wgmma) or has its partial sums promoted into FP32 ("split accumulator", TE's
`use_split_accumulator=True`, torch's `use_fast_accum=False`). cuBLAS does not publish its promotion
interval; the model uses DeepGEMM's 128 (DeepSeek-V3 §3.3.2) for every "split" row, and says so
(`modelled_as`).

Sources (read at the commits named; each record's `source` names the file):
- Transformer Engine (NVIDIA/TransformerEngine, 2.x): `transformer_engine/pytorch/module/base.py`
  (`_2X_ACC_FPROP = False`, `_2X_ACC_DGRAD = True`, `_2X_ACC_WGRAD = True`: the delayed-scaling
  per-tensor recipe) and `transformer_engine/common/recipe/__init__.py` (`Float8CurrentScaling`:
  `fp8_gemm_fprop = MMParams(use_split_accumulator=False)`, dgrad and wgrad True;
  `Float8BlockScaling`: all three True, asserted in `__post_init__`: "Split accumulator required").
  The HYBRID format reads E4M3 forward and E5M2 gradients; Float8BlockScaling defaults to E4M3.
- torchao 0.18 (pytorch/ao): `torchao/float8/config.py` — `Float8LinearConfig` (the tensorwise
  recipe): `gemm_config_output = Float8GemmConfig(use_fast_accum=True)`, grad_input and grad_weight
  `Float8GemmConfig()` (use_fast_accum False), gradients E5M2; `from_recipe_name("rowwise")` keeps
  those GEMM configs and casts every operand to E4M3. (Older torchao's `all_axiswise` recipe set
  fast accumulation in all three; the test reads the installed torchao.)
- DeepGEMM (deepseek-ai/DeepGEMM): `deep_gemm/include/deep_gemm/impls/sm90_fp8_gemm_1d2d.cuh` —
  four `wgmma` of K = 32 per 128-wide K block, then "Promote with scales" into `final_accum` on the
  CUDA cores; DeepSeek-V3 (arXiv:2412.19437 §3.3.2) N_C = 128, E4M3 for every GEMM (§3.3.1).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

__all__ = ["ROLES", "STACKS", "StackRow", "stack_rows"]

ROLES = ("fprop", "dgrad", "wgrad")
_TE_BASE = "NVIDIA/TransformerEngine transformer_engine/pytorch/module/base.py (_2X_ACC_FPROP/DGRAD/WGRAD)"
_TE_RECIPE = "NVIDIA/TransformerEngine transformer_engine/common/recipe/__init__.py"
_TORCHAO = "pytorch/ao 0.18 torchao/float8/config.py (Float8LinearConfig, from_recipe_name)"
_DEEPGEMM = ("deepseek-ai/DeepGEMM deep_gemm/include/deep_gemm/impls/sm90_fp8_gemm_1d2d.cuh ('Promote with "
             "scales' every BLOCK_K = 128); DeepSeek-V3, arXiv:2412.19437 §3.3.2")
SPLIT_INTERVAL = 128  # what the model uses for a "split" accumulator whose interval is not published


@dataclass(frozen=True)
class StackRow:
    """One GEMM role of one stack's recipe: what it sets and how the model runs it."""

    stack: str  # "Transformer Engine 2.x", "torchao", "DeepGEMM"
    recipe: str  # the recipe or config
    role: str  # fprop, dgrad, wgrad
    setting: str  # what the stack sets, in its own words
    accumulation: str  # "fast" (whole K in the tensor core) or "split" (partial sums promoted to FP32)
    a_format: str  # the GEMM's operand formats (A·B as the role computes it)
    b_format: str
    promote_every: int | None  # how the model runs it: None = no promotion
    modelled_as: str  # in words
    source: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _row(stack: str, recipe: str, role: str, split: bool, setting: str, a: str, b: str, source: str,
         interval: int | None = None, published: bool = False) -> StackRow:
    every = (interval or SPLIT_INTERVAL) if split else None
    if not split:
        modelled = "the whole K chained through wgmma (FP8: 13 fraction bits), no promotion"
    elif published:
        modelled = f"promotion to FP32 every {every} elements of K (as published)"
    else:
        modelled = (f"promotion to FP32 every {every} elements of K (cuBLAS does not publish its interval; "
                    f"DeepGEMM's {SPLIT_INTERVAL} is used)")
    return StackRow(stack, recipe, role, setting, "split" if split else "fast", a, b, every, modelled, source)


def _build() -> tuple[StackRow, ...]:
    te = "Transformer Engine 2.x"
    rows = []
    # delayed and current per-tensor scaling: fast fprop, split backward (HYBRID: E4M3 X, W; E5M2 dY)
    for recipe, src in (("DelayedScaling (HYBRID)", _TE_BASE), ("Float8CurrentScaling (HYBRID)", _TE_RECIPE)):
        rows += [
            _row(te, recipe, "fprop", False, "use_split_accumulator=False", "E4M3FN", "E4M3FN", src),
            _row(te, recipe, "dgrad", True, "use_split_accumulator=True", "E5M2", "E4M3FN", src),
            _row(te, recipe, "wgrad", True, "use_split_accumulator=True", "E4M3FN", "E5M2", src),
        ]
    rows += [_row(te, "Float8BlockScaling (E4M3)", role, True, "use_split_accumulator=True (asserted)", "E4M3FN",
                  "E4M3FN", _TE_RECIPE) for role in ROLES]
    ao = "torchao 0.18"
    rows += [
        _row(ao, "tensorwise (Float8LinearConfig())", "fprop", False, "gemm_config_output: use_fast_accum=True",
             "E4M3FN", "E4M3FN", _TORCHAO),
        _row(ao, "tensorwise (Float8LinearConfig())", "dgrad", True, "gemm_config_grad_input: use_fast_accum=False",
             "E5M2", "E4M3FN", _TORCHAO),
        _row(ao, "tensorwise (Float8LinearConfig())", "wgrad", True, "gemm_config_grad_weight: use_fast_accum=False",
             "E4M3FN", "E5M2", _TORCHAO),
    ]
    rows += [
        _row(ao, "rowwise (Float8LinearRecipeName.ROWWISE)", "fprop", False, "gemm_config_output: use_fast_accum=True",
             "E4M3FN", "E4M3FN", _TORCHAO),
        _row(ao, "rowwise (Float8LinearRecipeName.ROWWISE)", "dgrad", True,
             "gemm_config_grad_input: use_fast_accum=False", "E4M3FN", "E4M3FN", _TORCHAO),
        _row(ao, "rowwise (Float8LinearRecipeName.ROWWISE)", "wgrad", True,
             "gemm_config_grad_weight: use_fast_accum=False", "E4M3FN", "E4M3FN", _TORCHAO),
    ]
    rows += [_row("DeepGEMM", "DeepSeek-V3 FP8 (1×128 / 128×128 scales)", role, True,
                  "promotion to FP32 every 128 (N_C = 128)", "E4M3FN", "E4M3FN", _DEEPGEMM, 128, True)
             for role in ROLES]
    return tuple(rows)


#: every row: Transformer Engine (three recipes), torchao (two configs), DeepGEMM
STACKS: tuple[StackRow, ...] = _build()


def stack_rows() -> list[dict[str, Any]]:
    """The rows as plain dicts (JSON, tables)."""
    return [r.to_dict() for r in STACKS]
