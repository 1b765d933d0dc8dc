"""Alias of `lowprec.simulations.studies.defect_hunt`, which moved in the restructure of `simulations/` (issue 27):
importing `lowprec.simulations.defect_hunt` gives that module itself, so the README's name keeps working.
# restructure: keep old names
"""

import sys

from .studies import defect_hunt as _module

sys.modules[__name__] = _module
