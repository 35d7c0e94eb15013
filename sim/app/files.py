"""Writing a user's file all or nothing, never through a link planted beside it.

Every file ``sim`` writes (a result, a figure, an animation) goes first to a temporary file
created exclusively (``O_CREAT | O_EXCL | O_NOFOLLOW``, by :func:`tempfile.mkstemp`) under an
unpredictable name in the target's directory, is written through that descriptor only, and
is then renamed over the target (:func:`replacing`).  The rename is the only step that touches
the final name, and a rename replaces a link there instead of following it.  In a directory
other users may write, nobody can make a run write into another file by planting a link at
a name it is about to open.

A temporary file is locked (``fcntl.flock``) by the process writing it, so one left by a
killed process is recognised -- nobody holds its lock -- and removed (:func:`clean_temporaries`).
"""
import contextlib
import fcntl
import os
import stat
import tempfile
import time
from pathlib import Path

from sim.errors import SimError, one_line, signals_deferred

SUFFIX = ".tmp"     # temporary files are ``.<target name>.<random>.tmp``
# s after which a temporary file nobody has locked is a dead process's: one just created is
# not locked yet.
SETTLED = 10.0


def umask():
    """The process's file mode creation mask (read by setting it, then restoring it)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def lock(fd, wait=True):
    """Lock ``fd`` exclusively (``fcntl.flock``); without ``wait``, return False if another
    open file description holds the lock -- a process alive, whoever and wherever it is."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
    except BlockingIOError:
        return False
    return True


def names(fd, path):
    """True if ``path`` (not followed if a link) is the file open as ``fd``."""
    try:
        there = os.lstat(path)
    except OSError:
        return False
    here = os.fstat(fd)
    return (there.st_dev, there.st_ino) == (here.st_dev, here.st_ino)


def open_unfollowed(path):
    """``path`` opened read-only without following a link, or None (absent, a link, a
    directory, not readable by this user)."""
    try:
        return os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None


def clean_temporaries(directory):
    """Remove this user's temporary files in ``directory`` that nobody is writing: those of
    processes that were killed while writing.  Others' files are left alone."""
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return
    for entry in entries:
        if not (entry.name.startswith(".") and entry.name.endswith(SUFFIX)):
            continue
        fd = open_unfollowed(entry.path)
        if fd is None:
            continue
        try:
            info = os.fstat(fd)
            if (stat.S_ISREG(info.st_mode) and info.st_uid == os.geteuid() and time.time() - info.st_mtime > SETTLED
                    and lock(fd, wait=False) and names(fd, entry.path)):
                os.unlink(entry.path)
        except OSError:
            pass
        finally:
            os.close(fd)


@contextlib.contextmanager
def replacing(path, what):
    """Write ``path`` all or nothing: yield a binary file open on a new temporary file beside
    it, then flush it to disk and rename it over ``path``.

    Parameters
    ----------
    path : str or Path
        The final file.
    what : str
        What is written, for the error line (``"the figure"``).

    Yields
    ------
    file
        Binary, writable, seekable; written through its descriptor only.

    Raises
    ------
    SimError
        Naming ``path`` when it is not a regular file (a directory, a device such as
        /dev/stdout: nothing to replace), when the temporary file cannot be created or written
        (a full disk, no permission) or the rename fails.  On any exception (a stop signal included) the
        temporary file is removed and ``path`` is left as it was.

    Notes
    -----
    The file gets the mode a plain ``open`` would give it (0666 less the umask), not
    :func:`tempfile.mkstemp`'s 0600.  Stop signals are held back during the rename.
    """
    path = Path(path)
    if path.exists() and not path.is_file():     # followed: a link to one is refused too
        raise SimError(f"{path}: not a regular file (a directory, device, pipe or socket); "
                       f"name a file to write {what} to")
    clean_temporaries(path.parent)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=SUFFIX, dir=path.parent)
    except OSError as exc:
        raise SimError(f"{path}: cannot write {what} ({exc.strerror or one_line(exc)})") from None
    renamed = False
    try:
        lock(fd)
        os.fchmod(fd, 0o666 & ~umask())
        with os.fdopen(fd, "wb", closefd=False) as handle:
            yield handle
            handle.flush()
            os.fsync(fd)
        with signals_deferred():
            os.replace(tmp, path)
            renamed = True
    except OSError as exc:
        raise SimError(f"{path}: cannot write {what} ({exc.strerror or one_line(exc)})") from None
    finally:
        os.close(fd)
        if not renamed:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
