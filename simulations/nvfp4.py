"""Alias of `lowprec.simulations.quant.nvfp4`, which moved into the quant wing (NVFP4 block quantization; the NVFP4 recipes run it: `quant.quantize(x, "nvfp4")`).
Importing this module gives that module itself, so existing imports keep working."""

import sys

from .quant import nvfp4 as _module

sys.modules[__name__] = _module
