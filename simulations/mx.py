"""Alias of `lowprec.simulations.quant.mx`, which moved into the quant wing (MX block quantization; the MX recipes run it: `quant.quantize(x, "mxfp8_e4m3")`).
Importing this module gives that module itself, so existing imports keep working."""

import sys

from .quant import mx as _module

sys.modules[__name__] = _module
