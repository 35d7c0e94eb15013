"""The one exception type for errors a user can cause (SPEC §3.1).

A bad scenario file, an unknown key, a wrong sign, an unreachable pose, a singular
configuration or a diverging integration raise `SimError`. Its message is a single line that
says where: the file, the key path, the time or the body. `sim.app.cli.main` prints it as
``error: <message>`` without a traceback; anything else that escapes is a bug.
"""


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
