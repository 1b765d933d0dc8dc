"""Alias of `lowprec.simulations.quant.conventions`, which moved into the quant wing (block-format conventions as data).
Importing this module gives that module itself, so existing imports keep working."""

import sys

from .quant import conventions as _module

sys.modules[__name__] = _module
