"""`python -m lowprec.simulations.recompute`."""

import sys

from lowprec.simulations.recompute import main

if __name__ == "__main__":
    sys.exit(main())
