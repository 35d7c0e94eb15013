"""``python -m sim``: the same as the ``sim`` console script."""

import sys

from sim.cli import main

sys.exit(main())
