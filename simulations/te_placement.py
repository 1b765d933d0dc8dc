"""Alias of `lowprec.simulations.studies.te_placement`, which moved in the restructure of `simulations/` (issue 27):
importing `lowprec.simulations.te_placement` gives that module itself, so the README's name keeps working.
# restructure: keep old names
"""

import sys

from .studies import te_placement as _module

sys.modules[__name__] = _module
