"""Progress bars of long runs (tqdm), for the command line and the Python API alike."""
import os
import sys

from sim.errors import check_stop


def make_progress():
    """Return ``progress(total, desc) -> tqdm``: bars on an interactive stderr, outside CI."""
    from tqdm import tqdm

    disable = not sys.stderr.isatty() or bool(os.environ.get("CI"))

    class Bar(tqdm):
        def update(self, n=1):
            check_stop()    # a stop whose exception was lost is raised here, between chunks
            return super().update(n)

    def progress(total, desc):
        return Bar(total=total, desc=desc, disable=disable, file=sys.stderr,
                   leave=False, dynamic_ncols=True)
    return progress
