"""`python -m lowprec.simulations.recompute`."""

import sys

from lowprec.simulations.recompute import main

sys.exit(main())
