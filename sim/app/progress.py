"""Progress bars of long runs (tqdm), for the command line and the Python API alike."""
import os
import sys

from sim.errors import check_stop


class Quiet:
    """A bar that draws nothing (stderr not interactive, or CI): tqdm's interface as the
    analyses use it, and the stop check between chunks.  tqdm itself is then not imported
    (its import looks up its installed version: a run waits for it and draws nothing)."""

    def __init__(self, total=None, desc=None):
        self.total, self.desc, self.n = total, desc, 0

    def update(self, n=1):
        check_stop()    # a stop whose exception was lost is raised here, between chunks
        self.n += n

    def close(self):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def make_progress():
    """Return ``progress(total, desc) -> tqdm``: bars on an interactive stderr, outside CI;
    else :class:`Quiet` ones."""
    if not sys.stderr.isatty() or os.environ.get("CI"):
        return Quiet

    from tqdm import tqdm

    class Bar(tqdm):
        def update(self, n=1):
            check_stop()    # a stop whose exception was lost is raised here, between chunks
            return super().update(n)

    def progress(total, desc):
        return Bar(total=total, desc=desc, file=sys.stderr, leave=False, dynamic_ncols=True)
    return progress
