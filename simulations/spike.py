"""Alias of `lowprec.simulations.studies.spike`, which moved in the restructure of `simulations/` (issue 27):
importing `lowprec.simulations.spike` gives that module itself, so the README's name keeps working,
and `python -m lowprec.simulations.spike` runs the simulation.
# restructure: keep old names
"""

import sys

from .studies import spike as _module

if __name__ == "__main__":
    sys.exit(_module.SIMULATION.main())
sys.modules[__name__] = _module
