"""The one exception type for errors a user can cause.

A bad scenario file, an unknown key, a wrong sign, an unreachable pose, a singular
configuration or a diverging integration raise `SimError`. Its message is a single line that
says where: the file, the key path, the time or the body. `sim.app.cli.main` prints it as
``error: <message>`` without a traceback; anything else that escapes is a bug.
"""
import contextlib
import os
import signal
import sys
import threading


class SimError(Exception):
    """An error caused by the user's input, with a one-line message naming file/key/time/body.

    Parameters
    ----------
    message : str
        What went wrong and where. Line breaks are folded so that ``str(error)`` is one line.
    """

    def __init__(self, message):
        super().__init__(_fold(str(message)))


def one_line(exc):
    """Return the message of `exc` folded onto one line (the type name if it has none).

    Parameters
    ----------
    exc : BaseException

    Returns
    -------
    str
    """
    text = _fold(str(exc))
    return text if text else type(exc).__name__


def _fold(text):
    """Join the non-blank lines of `text`: after a colon with a space, otherwise with '; '."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    folded = lines[0] if lines else ""
    for line in lines[1:]:
        folded += (" " if folded.endswith(":") else "; ") + line
    return folded


class Interrupted(KeyboardInterrupt):
    """The run was stopped by a signal: Ctrl-C (SIGINT), SIGTERM (batch schedulers, ``timeout``,
    container stops) or SIGHUP (a closed terminal).  A KeyboardInterrupt, so that every
    clean-up written for Ctrl-C runs for the others too.

    Parameters
    ----------
    signum : int
    """

    def __init__(self, signum):
        self.signum = int(signum)
        super().__init__(signal.Signals(self.signum).name)

    @property
    def exit_code(self):
        """``128 + signum``: 130 for SIGINT, 143 for SIGTERM, 129 for SIGHUP."""
        return 128 + self.signum


def stop_in(exc):
    """The KeyboardInterrupt (a stop signal) ``exc`` is or was raised from, else None.

    Python runs signal handlers wherever the main thread is, and a few places wrap what they
    raise: in Python 3.11 a class body's ``__set_name__`` (met while a module is imported)
    turns it into a RuntimeError.  Such a wrapper is still the user's stop.
    """
    seen = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, KeyboardInterrupt):
            return exc
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return None


STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
# The stop signal being handled, in a program that called `install_stop_handlers` (the command
# line): any further one ends the process at once.  Library use never fills it.
_stopping = []
_installed = []     # while installed: the previous sys.unraisablehook
AGAIN_DELAY = 0.01  # s after which a stop lost in a callback is raised again


# Bound here: a model file's code runs with `os._exit` replaced (sim.model.loader), and a
# second stop signal while it runs must still end the process.
_exit = os._exit


def _stop_now():
    os.write(2, b"error: interrupted again; stopping now\n")
    _exit(128 + _stopping[0])


def stop_line(signum, kept=""):
    """The error line of a stop by ``signum``: ``error: interrupted`` (Ctrl-C), with the
    signal's name for the others, and ``kept`` (where the incomplete result went)."""
    name = "" if signum == signal.SIGINT else f" ({signal.Signals(signum).name})"
    return f"error: interrupted{name}{kept}"


# While a command has computed nothing it could keep (a run loading or compiling its kernels,
# `sim modes`): {"undo": what to undo before ending at once on a stop} -- see `nothing_to_keep`.
_quick = {}


@contextlib.contextmanager
def nothing_to_keep(undo=lambda: None):
    """While inside, until :func:`keeping` is called, in the command line: a stop that would
    wait for a compilation (held back by :func:`signals_deferred`, or landing in numba's
    compiler on a cold cache, often longer than a container's stop grace period) ends the
    process at once, after ``undo()`` (a run's reservation released): nothing computed is
    lost.  Compilations write their cache files whole or not at all; a compile helper ends
    once its parent is gone.  Also a decorator."""
    _quick["undo"] = undo
    try:
        yield
    finally:
        _quick.clear()


def keeping():
    """The command holds something to keep from here on (a result's first dataset): a stop is
    delivered where what was computed can be written."""
    _quick.clear()


def _end_now(signum):
    try:
        _quick["undo"]()
    except Exception:       # ending anyway: what could not be undone stays
        pass
    os.write(2, (stop_line(signum) + "\n").encode())
    _exit(128 + signum)


# Modules inside which a stop is not raised but delivered again a moment later: an exception
# thrown into numba's compiler or llvmlite's object disposal (a `__del__` run by the garbage
# collector at any time) is lost there, prints "Exception ignored", or leaves an LLVM object
# disposed twice (a "double free" abort at exit).
_INTERNALS = ("numba.", "llvmlite.")


def _in_internals(frame):
    while frame is not None:
        if frame.f_globals.get("__name__", "").startswith(_INTERNALS):
            return True
        frame = frame.f_back
    return False


def _again(signum):
    """Deliver the stop ``signum`` again a moment later, by an alarm: any signal sent from
    here (or waited for here) would be handled where this one was."""
    previous = signal.getsignal(signal.SIGALRM)

    def again(_, frame):
        signal.signal(signal.SIGALRM, previous)
        _on_stop(signum, frame)

    signal.signal(signal.SIGALRM, again)
    signal.setitimer(signal.ITIMER_REAL, AGAIN_DELAY)


def _on_stop(signum, frame):
    if _stopping:
        _stop_now()
    if _in_internals(frame):
        if _quick:
            _end_now(signum)
        _again(signum)
        return
    _stopping.append(signum)
    raise Interrupted(signum)


def _unraisable(unraisable):
    """``sys.unraisablehook`` while the stop handlers are installed.  A stop raised where
    Python cannot propagate it (the handler ran inside a weakref callback or a ``__del__``)
    would be lost and the run would go on to its end: the signal is delivered again, to be
    raised as the first stop in the code that follows."""
    if isinstance(unraisable.exc_value, Interrupted) and _installed:
        _stopping.clear()
        _again(unraisable.exc_value.signum)
        return
    _installed[0](unraisable)


def check_stop():
    """Raise again, as :class:`Interrupted`, a stop signal whose exception was lost.

    A handler raises where the main thread is, and a few places in Python and its extension
    modules clear the exception they meet (a C function that looks up a dictionary or an
    attribute and treats any failure as "absent"): the run then goes on to its end and exits
    0.  The stop is recorded before it is raised, so the next check raises it again; the
    command line's progress bars check at each update (each chunk of steps or samples).
    Does nothing in library use (no handlers installed) and outside the main thread.
    """
    if _stopping and threading.current_thread() is threading.main_thread():
        raise Interrupted(_stopping[0])


def install_stop_handlers():
    """Make SIGTERM and SIGHUP stop the program as Ctrl-C does (raising :class:`Interrupted`
    where it is), and any stop signal after the first end it at once (main thread only).
    Returns the previous handlers, for :func:`restore_handlers`."""
    _stopping.clear()
    _installed[:] = [sys.unraisablehook]
    sys.unraisablehook = _unraisable
    return {sig: signal.signal(sig, _on_stop) for sig in STOP_SIGNALS}


def restore_handlers(previous):
    """Undo :func:`install_stop_handlers`."""
    if _installed:
        sys.unraisablehook = _installed[0]
    _installed.clear()
    for sig, handler in previous.items():
        signal.signal(sig, handler)


@contextlib.contextmanager
def signals_deferred():
    """Hold back the stop signals (SIGINT, SIGTERM, SIGHUP) for the duration and raise the
    first one afterwards, as :class:`Interrupted`.

    Python runs signal handlers in the main thread between bytecodes, wherever it is -- inside
    llvmlite's compiler callbacks, where a KeyboardInterrupt is lost and leaves numba broken,
    or between writing a result file and renaming it.  The handlers are swapped for one that
    records the signal (in the command line, a second one still ends the process at once).
    Outside the main thread (where handlers cannot be set) it does nothing.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received = []
    handling = bool(_installed)

    def record(signum, frame):
        if _stopping:
            _stop_now()
        if handling and _quick:
            _end_now(signum)
        received.append(signum)
        if handling:
            _stopping.append(signum)

    previous = {sig: signal.signal(sig, record) for sig in STOP_SIGNALS}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    if received:
        raise Interrupted(received[0])
