"""Alias of `lowprec.simulations.quant._mx_kernels`, which moved into the quant wing (the compiled MX block quantizer).
Importing this module gives that module itself, so existing imports keep working."""

import sys

from .quant import _mx_kernels as _module

sys.modules[__name__] = _module
