"""Load a robot builder file (``models/*.py``) by path and build its model.

A model file defines ``build(**params) -> Model``; its keyword parameters, with their
defaults, are the model's parameters.  Values given as text (command line) are converted to
the type of the default.
"""
import contextlib
import difflib
import hashlib
import importlib.util
import inspect
import os
import sys
import threading
from pathlib import Path

from sim.errors import SimError, one_line
from sim.model import Model
from sim.model.builder import ASSEMBLE


class _Exit(SystemExit):
    """``os._exit`` called by a model file's code: reported like ``sys.exit``."""


def _exit_call(exc):
    """``sys.exit(0)`` or ``os._exit(0)``: the call that raised ``exc``."""
    return f"{'os._exit' if isinstance(exc, _Exit) else 'sys.exit'}({exc.code!r})"


@contextlib.contextmanager
def _no_exit():
    """Run a model file's code with ``os._exit`` raising :class:`_Exit` in this thread.

    ``os._exit`` would end the command there, exit code 0 and no word said, its output name
    still reserved; raised instead, it is the model file's error like any other.  Other
    threads (a helper's watchdog) keep the real one, as does the stop-signal machinery
    (:mod:`sim.errors` holds its own reference).
    """
    real, caller = os._exit, threading.current_thread()

    def refuse(code):
        if threading.current_thread() is not caller:
            real(code)
        raise _Exit(code)

    os._exit = refuse
    try:
        yield
    finally:
        os._exit = real


def load_module(path):
    """Import a model file as a module; SimError on a missing or broken file."""
    path = Path(path)
    if not path.is_file():
        raise SimError(f"{path}: model file not found")
    name = "sim_model_" + hashlib.sha1(str(path.resolve()).encode()).hexdigest()[:12]
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    try:
        with _no_exit():
            spec.loader.exec_module(module)
    except SyntaxError as exc:
        raise SimError(f"{path}:{exc.lineno}: malformed model file: {exc.msg}") from None
    except SystemExit as exc:
        raise SimError(f"{path}: the model file called {_exit_call(exc)} while loading") from None
    except RecursionError:
        raise SimError(f"{path}: cannot load model file: infinite recursion") from None
    except Exception as exc:  # any failure while importing user code is the user's
        raise SimError(f"{path}: cannot load model file: {_where(exc, path)}{type(exc).__name__}: "
                       f"{one_line(exc)}") from None
    if not callable(getattr(module, "build", None)):
        raise SimError(f"{path}: model file defines no `build(**params)` function")
    sys.modules.setdefault(name, module)
    return module


def _where(exc, path):
    """``line N: `` of the model file's innermost frame in ``exc``'s traceback, if any."""
    import traceback
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if Path(f.filename).resolve() == Path(path).resolve()]
    return f"line {frames[-1].lineno}: " if frames else ""


def documentation(path):
    """The model file's ``build`` docstring: ``(summary, {parameter: description})`` from its
    first paragraph and its numpydoc ``Parameters`` section (empty where it has none)."""
    doc = inspect.getdoc(load_module(path).build) or ""
    summary = doc.split("\n\n")[0].replace("\n", " ").strip()
    lines = doc.splitlines()
    is_rule = lambda i: i < len(lines) and lines[i].strip() != "" and set(lines[i].strip()) == {"-"}  # noqa: E731
    start = next((i for i in range(len(lines)) if lines[i].strip() == "Parameters" and is_rule(i + 1)), None)
    described, names = {}, []
    if start is None:
        return summary, described
    for i in range(start + 2, len(lines)):
        line = lines[i]
        if line.strip() and is_rule(i + 1):        # the next section's header
            break
        if not line.strip():
            continue
        if not line[0].isspace():                  # "name : type" or "a, b : type"
            names = [n.strip() for n in line.split(":")[0].split(",") if n.strip()]
            for n in names:
                described.setdefault(n, "")
        else:
            for n in names:
                described[n] = (described[n] + " " + line.strip()).strip()
    return summary, described


def parameters(path):
    """Parameters of a model file: ``{name: default}``."""
    build = load_module(path).build
    return {k: p.default for k, p in inspect.signature(build).parameters.items()
            if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)}


def _convert(path, key, value, default):
    if not isinstance(value, str) or isinstance(default, str):
        return value
    text = value.strip()
    try:
        if isinstance(default, bool):
            if text.lower() in ("true", "1", "yes"):
                return True
            if text.lower() in ("false", "0", "no"):
                return False
            raise ValueError(text)
        if isinstance(default, int):
            f = float(text)
            return int(f) if f == int(f) else f
        return float(text)
    except ValueError:
        kind = type(default).__name__ if default is not None else "number"
        raise SimError(f"{path}: parameter `{key}` must be a {kind}, got {value!r}") from None


def load_model(path, params=None, assemble=True):
    """Build the model of a model file.

    Parameters
    ----------
    path : str or Path
    params : dict, optional
        Parameter values (numbers, bools, strings; strings are converted to the default's type).
    assemble : bool
        False: the file's ``build()`` does not assemble the home configuration
        (:meth:`sim.model.builder.ModelBuilder.build`), for a process that compiles kernels only.

    Returns
    -------
    Model

    Raises
    ------
    SimError
        Missing or malformed file, unknown parameter, bad value, invalid model.
    """
    path = Path(path)
    module = load_module(path)
    known = parameters(path)
    params = dict(params or {})
    for key in params:
        if key not in known:
            close = difflib.get_close_matches(key, list(known), n=1)
            hint = f"; did you mean `{close[0]}`?" if close else f" (parameters: {', '.join(known) or 'none'})"
            raise SimError(f"{path}: unknown model parameter `{key}`{hint}")
    values = {k: _convert(path, k, v, known[k]) for k, v in params.items()}
    token = ASSEMBLE.set(bool(assemble))
    try:
        with _no_exit():
            model = module.build(**values)
    except SimError as exc:
        raise SimError(f"{path}: {exc}") from None
    except (ValueError, TypeError, ArithmeticError) as exc:
        given = ", ".join(f"{k} = {v!r}" for k, v in values.items())
        implausible = "not plausible" in str(exc) or "not a beam" in str(exc)
        said = f" (parameters given: {given})" if given and implausible else ""
        raise SimError(f"{path}: {_where(exc, path)}{one_line(exc)}{said}") from None
    except SystemExit as exc:
        raise SimError(f"{path}: build() called {_exit_call(exc)}") from None
    except RecursionError:
        raise SimError(f"{path}: build() recursed without end") from None
    except Exception as exc:  # a failure in user code is the user's: one line, where it happened
        raise SimError(f"{path}: build() failed: {_where(exc, path)}{type(exc).__name__}: {one_line(exc)}") from None
    finally:
        ASSEMBLE.reset(token)
    if not isinstance(model, Model):
        raise SimError(f"{path}: build() returned {type(model).__name__}, not a Model")
    return model
