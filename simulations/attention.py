"""Alias of `lowprec.simulations.studies.attention`, which moved in the restructure of `simulations/` (issue 27):
importing `lowprec.simulations.attention` gives that module itself, so the README's name keeps working,
and `python -m lowprec.simulations.attention` runs the simulation.
# restructure: keep old names
"""

import sys

from .studies import attention as _module

if __name__ == "__main__":
    sys.exit(_module.SIMULATION.main())
sys.modules[__name__] = _module
