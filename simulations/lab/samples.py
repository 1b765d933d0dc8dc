"""Generated sample tensors for the recipe lab: small, seeded, with the features real tensors bring
(outlier channels, outlier features, heavy tails), so the widget and the lesson have something real
to look at without shipping binary files. Each is made from `numpy.random.default_rng(seed)`:

- `weight` — an LLM-like linear weight (out 256 × in 512) stored as BF16: Student-t values with 5
  degrees of freedom scaled to a standard deviation of 0.02 (the usual initialisation width), and
  four input channels (columns 17, 101, 300, 451) multiplied by 16, the few large channels that
  trained LLM weights show next to outlier activation features.
- `activation` — an activation entering a linear layer (512 tokens × 256 features), FP32: standard
  normal values, each token (row) scaled by a log-normal factor (σ 0.3), and three outlier features
  (columns 7, 64, 200) carrying values around ±60 (the systematic outlier features of LLM.int8(),
  Dettmers et al. 2022, which appear in every token).
- `gradient` — a weight gradient (256 × 512), FP32: Student-t values with 2 degrees of freedom
  (infinite variance: a heavy tail) scaled by 1e-5, so most values are tiny and a few are large, as
  in late training.

`SAMPLES` maps each name to a function returning {tensor name: array}; `layer` holds all three, as
one file of a checkpoint would.
"""

from __future__ import annotations

from typing import Callable

import ml_dtypes
import numpy as np

__all__ = ["LAYOUT_SAMPLES", "SAMPLES", "SAMPLES_DOC", "SAMPLE_SEED", "activation_like", "sample", "write_layout_sample"]

SAMPLE_SEED = 2025
WEIGHT_OUTLIER_COLUMNS = (17, 101, 300, 451)
ACTIVATION_OUTLIER_FEATURES = (7, 64, 200)


def weight(seed: int = SAMPLE_SEED) -> np.ndarray:
    rng = np.random.default_rng(seed)
    t = rng.standard_t(5, size=(256, 512))
    w = t / np.sqrt(5 / 3) * 0.02  # Student-t(5) has variance 5/3
    w[:, list(WEIGHT_OUTLIER_COLUMNS)] *= 16
    return w.astype(np.float32).astype(ml_dtypes.bfloat16)


def activation(seed: int = SAMPLE_SEED + 1) -> np.ndarray:
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((512, 256)) * rng.lognormal(0.0, 0.3, size=(512, 1))
    for c in ACTIVATION_OUTLIER_FEATURES:
        a[:, c] = rng.choice([-1.0, 1.0]) * rng.normal(60.0, 5.0, size=512)
    return a.astype(np.float32)


def gradient(seed: int = SAMPLE_SEED + 2) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return (rng.standard_t(2, size=(256, 512)) * 1e-5).astype(np.float32)


#: how each sample was made, in one paragraph for pages (the module docstring has the detail)
SAMPLES_DOC = (
    "Samples (generated, seeded): **weight** — 256 × 512 BF16, Student-t (5 dof) values of standard "
    "deviation 0.02 with four input channels ×16 (outlier channels); **activation** — 512 tokens × 256 "
    "features FP32, normal values scaled per token by a log-normal factor, three features near ±60 "
    "(outlier features, as LLM.int8() reports); **gradient** — 256 × 512 FP32, Student-t with 2 dof × 1e-5 "
    "(heavy tails); **layer** — all three. Pre-quantized: the weight written by `lowprec quantize` as a "
    "**deepseek_fp8** checkpoint (DeepSeek-V3: E4M3, FP32 scales per 128×128 tile), **gptoss_mxfp4** (gpt-oss: "
    "packed E2M1, E8M0 scales per 32), **modelopt_nvfp4** (ModelOpt: packed E2M1, E4M3 scales per 16, FP32 "
    "scale_2) and **compressed_tensors_fp8** (llm-compressor: E4M3, an FP32 scale per output channel)."
)

SAMPLES: dict[str, Callable[[], dict[str, np.ndarray]]] = {
    "layer": lambda: {"mlp.up_proj.weight": weight(), "mlp.up_proj.input": activation(),
                      "mlp.up_proj.weight.grad": gradient()},
    "weight": lambda: {"mlp.up_proj.weight": weight()},
    "activation": lambda: {"mlp.up_proj.input": activation()},
    "gradient": lambda: {"mlp.up_proj.weight.grad": gradient()},
}


#: the bundled pre-quantized samples: name → (layout, recipe) with which `write_layout_sample` stores
#: the `weight` sample (as `lowprec quantize` does); the name is the layout's
LAYOUT_SAMPLES: dict[str, tuple[str, str]] = {
    "deepseek_fp8": ("deepseek_fp8", "fp8_128x128@deepseek"),
    "gptoss_mxfp4": ("gptoss_mxfp4", "mxfp4"),
    "modelopt_nvfp4": ("modelopt_nvfp4", "nvfp4"),
    "compressed_tensors_fp8": ("compressed_tensors_fp8", "e4m3_row"),
}


def write_layout_sample(name: str, folder: str) -> str:
    """Write the pre-quantized sample `name` (a key of LAYOUT_SAMPLES: the `weight` sample as
    `mlp.up_proj.weight`) into the empty `folder`; the path of its `.safetensors` file."""
    if name not in LAYOUT_SAMPLES:
        raise ValueError(f"unknown pre-quantized sample {name!r}; samples: {', '.join(LAYOUT_SAMPLES)}")
    from .writeback import quantize_arrays

    layout, recipe = LAYOUT_SAMPLES[name]
    report = quantize_arrays({"mlp.up_proj.weight": weight()}, recipe, layout, folder, force=True)
    return report.files[0]


def sample(name: str) -> dict[str, np.ndarray]:
    """The sample called `name` (a key of SAMPLES): {tensor name: array}."""
    if name not in SAMPLES:
        raise ValueError(f"unknown sample {name!r}; samples: {', '.join(SAMPLES)}")
    return SAMPLES[name]()


def activation_like(features: int, tokens: int = 32, seed: int = SAMPLE_SEED + 3) -> np.ndarray:
    """An activation of `tokens` rows entering a linear layer of `features` inputs (FP32), made as
    `activation` is: standard normal values, each token scaled by a log-normal factor (σ 0.3), and
    three outlier features near ±60 at the same relative places (7, 64 and 200 of every 256). What
    the product and the audit multiply a weight by when the user gives no activation."""
    if isinstance(features, bool) or not isinstance(features, (int, np.integer)) or features < 1:
        raise ValueError(f"features must be a positive integer, got {features!r}")
    if isinstance(tokens, bool) or not isinstance(tokens, (int, np.integer)) or tokens < 1:
        raise ValueError(f"tokens must be a positive integer, got {tokens!r}")
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((int(tokens), int(features))) * rng.lognormal(0.0, 0.3, size=(int(tokens), 1))
    for c in sorted({int(f) * int(features) // 256 for f in ACTIVATION_OUTLIER_FEATURES}):
        a[:, c] = rng.choice([-1.0, 1.0]) * rng.normal(60.0, 5.0, size=int(tokens))
    return a.astype(np.float32)
