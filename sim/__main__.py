"""``python -m sim``: the same as the ``sim`` console script."""

import sys

from sim.app import console

sys.exit(console())
