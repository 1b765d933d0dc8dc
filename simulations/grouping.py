"""Alias of `lowprec.simulations.studies.grouping`, which moved in the restructure of `simulations/` (issue 27):
importing `lowprec.simulations.grouping` gives that module itself, so the README's name keeps working,
and `python -m lowprec.simulations.grouping` runs the simulation.
# restructure: keep old names
"""

import sys

from .studies import grouping as _module

if __name__ == "__main__":
    sys.exit(_module.SIMULATION.main())
sys.modules[__name__] = _module
