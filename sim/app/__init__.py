"""The application: command line, scenario files, HDF5 results and figures."""


def console():
    """Entry point of the ``sim`` console script and of ``python -m sim``.

    The command line's modules are imported here, under a guard: a Ctrl-C during those first
    tens of milliseconds ends with the same one line and exit code 130 as one during a run
    (:func:`sim.app.cli.console` installs the stop handlers once they are loaded).
    """
    import sys
    try:
        from sim.app.cli import console as run
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130
    return run()
