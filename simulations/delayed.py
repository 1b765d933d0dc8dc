"""Alias of `lowprec.simulations.scaling.delayed`, which moved in the restructure of `simulations/` (issue 27):
importing `lowprec.simulations.delayed` gives that module itself, so the README's name keeps working.
# restructure: keep old names
"""

import sys

from .scaling import delayed as _module

sys.modules[__name__] = _module
