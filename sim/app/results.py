"""HDF5 result files (SPEC §3.3): atomic writing, reading and a text summary.

`ResultFile` writes ``<path>.partial`` and renames it to ``<path>`` when the run ends, so a
result file is never half-written: either the run finished, or the analyses that were cut
short carry ``status = "incomplete"`` and the one-line error as ``message``. Every dataset
carries ``units`` and ``description`` attributes; every analysis group carries ``status``,
``message`` and ``wall_time_s``.
"""

import json
import os
import time
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path

import h5py
import numpy as np

from sim.errors import SimError, one_line

FORMAT_VERSION = 1
STATUSES = ("complete", "incomplete")
# Keys that `read_result` uses in its tree, so they cannot name groups or datasets.
RESERVED_NAMES = ("attrs", "data")
# Group attributes every analysis group has; `describe` lists the others.
GROUP_ATTRS = ("status", "message", "wall_time_s")


def sim_version():
    """Installed version of ffrsim, or ``"unknown"`` when run from a source tree."""
    try:
        return metadata.version("ffrsim")
    except metadata.PackageNotFoundError:
        return "unknown"


def check_target(path, force=False):
    """Raise `SimError` unless `path` may be written.

    Parameters
    ----------
    path : str or Path
        Final result file.
    force : bool
        Allow replacing an existing file.

    Raises
    ------
    SimError
        The file exists (and not `force`), is a directory, or its directory cannot be created
        or written.
    """
    path = Path(path)
    if path.is_dir():
        raise SimError(f"{path}: is a directory; use --out FILE.h5")
    if path.exists() and not force:
        raise SimError(f"{path} exists; use --force or --out")
    directory = path.parent
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise SimError(f"output directory {directory} cannot be created "
                       f"({exc.strerror})") from None
    if not os.access(directory, os.W_OK | os.X_OK):
        raise SimError(f"output directory {directory} is not writable")


class GroupWriter:
    """Writes one analysis group. Obtain it from `ResultFile.group`.

    Attributes
    ----------
    name : str
    attrs : h5py AttributeManager
        Group attributes (``attrs["body_names"] = [...]``).
    """

    def __init__(self, group):
        self._group = group
        self.name = group.name.lstrip("/")
        self.attrs = group.attrs
        self._start = time.perf_counter()
        self._status = None
        self.finished = False
        self.attrs["status"] = "incomplete"
        self.attrs["message"] = "running"

    def put(self, name, data, units, description):
        """Write a dataset with its units and description.

        Parameters
        ----------
        name : str
            Dataset name; ``a/b`` creates subgroup ``a`` (``joint_reactions/<joint>``).
        data : array_like
        units : str or sequence of str
            SI units (``"m"``, ``"Hz"``, ``"1"`` for fractions), or one per column.
        description : str

        Returns
        -------
        h5py.Dataset

        Raises
        ------
        ValueError
            Missing units or description, or a reserved name (programming errors).
        """
        if not units or (not isinstance(units, str) and not all(units)):
            raise ValueError(f"dataset `{self.name}/{name}`: `units` is required")
        if not description:
            raise ValueError(f"dataset `{self.name}/{name}`: `description` is required")
        if any(part in RESERVED_NAMES for part in name.split("/")):
            raise ValueError(f"dataset `{self.name}/{name}`: the name is reserved")
        values = np.asarray(data)
        if values.dtype.kind == "U":
            values = values.astype(h5py.string_dtype())
        dataset = self._group.create_dataset(name, data=values)
        dataset.attrs["units"] = units if isinstance(units, str) else list(units)
        dataset.attrs["description"] = description
        return dataset

    def set_status(self, status, message=""):
        """Record the analysis outcome (kept when the file is closed).

        Parameters
        ----------
        status : {"complete", "incomplete"}
        message : str
            One line: why the analysis is incomplete, or a note.
        """
        if status not in STATUSES:
            raise ValueError(f"`status` must be one of {STATUSES}, got {status!r}")
        self._status = (status, one_line(message) if message else "")

    def finish(self, status=None, message=""):
        """Write ``status``, ``message`` and ``wall_time_s``; later calls do nothing.

        An explicit `set_status` takes precedence over `status`, which defaults to complete.
        """
        if self.finished:
            return
        status, message = self._status or (status or "complete", message)
        self.attrs["status"] = status
        self.attrs["message"] = message
        self.attrs["wall_time_s"] = time.perf_counter() - self._start
        self.finished = True


class ResultFile:
    """Context manager writing one result file atomically.

    Parameters
    ----------
    path : str or Path
        Final file. Data goes to ``<path>.partial`` first and is renamed on exit.
    scenario : str
        The scenario's TOML text.
    model_file : str or Path
    model_parameters : dict
        Stored as JSON.
    force : bool
        Replace an existing file.
    overrides : sequence of str
        ``--set`` overrides, stored as JSON.
    kernels_load_time_s : float, optional
        Time spent loading the analyses' compiled kernels before they ran [s].

    Notes
    -----
    On an exception (including KeyboardInterrupt) inside the ``with`` block: if a dataset was
    written, unfinished groups are marked incomplete with the error's one-line message and
    the file is kept; otherwise the partial file is removed. The exception propagates.

    Examples
    --------
    >>> with ResultFile("results/a.h5", scenario=text, model_file=f,
    ...                 model_parameters={}) as rf:            # doctest: +SKIP
    ...     g = rf.group("modes")
    ...     g.put("frequencies", f_hz, "Hz", "elastic natural frequencies")
    ...     g.finish()
    """

    def __init__(self, path, *, scenario, model_file, model_parameters, force=False,
                 overrides=(), kernels_load_time_s=None):
        self.path = Path(path)
        self.partial = self.path.with_name(self.path.name + ".partial")
        self._root_attrs = {
            "sim_version": sim_version(),
            "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "scenario": scenario,
            "model_file": str(model_file),
            "model_parameters": json.dumps(model_parameters, sort_keys=True),
            "overrides": json.dumps(list(overrides)),
            "format_version": FORMAT_VERSION,
        }
        if kernels_load_time_s is not None:
            self._root_attrs["kernels_load_time_s"] = float(kernels_load_time_s)
        self.force = force
        self.groups = {}
        self._file = None
        self._start = None

    def __enter__(self):
        check_target(self.path, self.force)
        try:
            self._file = h5py.File(self.partial, "w")
        except OSError as exc:
            raise SimError(f"{self.partial}: cannot create ({one_line(exc)})") from None
        self._file.attrs.update(self._root_attrs)
        self._start = time.perf_counter()
        return self

    def group(self, name):
        """Create the group of analysis `name` and return its writer."""
        if name in self.groups or name in RESERVED_NAMES:
            raise ValueError(f"group `{name}` already exists or is reserved")
        self.groups[name] = GroupWriter(self._file.create_group(name))
        return self.groups[name]

    def __exit__(self, exc_type, exc, tb):
        if exc is None:
            for writer in self.groups.values():
                writer.finish()
            self._close("complete", "")
            os.replace(self.partial, self.path)
            return False
        message = "interrupted" if isinstance(exc, KeyboardInterrupt) else one_line(exc)
        # A file without any dataset would hold nothing but the failure: leave no file.
        if not any(len(writer._group) for writer in self.groups.values()):
            self._file.close()
            self.partial.unlink(missing_ok=True)
            return False
        for writer in self.groups.values():
            writer.finish("incomplete", message)
        self._close("incomplete", message)
        os.replace(self.partial, self.path)
        return False

    def _close(self, status, message):
        self._file.attrs["status"] = status
        self._file.attrs["message"] = message
        self._file.attrs["wall_time_s"] = time.perf_counter() - self._start
        self._file.close()


def _open(path):
    """Open a result file for reading, with one-line errors for the user's path."""
    path = Path(path)
    if not path.is_file():
        raise SimError(f"{path}: result file not found")
    try:
        handle = h5py.File(path, "r")
    except OSError:
        raise SimError(f"{path}: not an HDF5 file") from None
    if "format_version" not in handle.attrs:
        handle.close()
        raise SimError(f"{path}: not an ffrsim result file (no `format_version` attribute)")
    return handle


def _value(value):
    """Attribute or dataset value as plain Python / numpy (bytes decoded)."""
    if isinstance(value, bytes):
        return value.decode()
    if isinstance(value, np.ndarray):
        if value.dtype.kind in "OS":
            return [v.decode() if isinstance(v, bytes) else v for v in value.tolist()]
        return value
    if isinstance(value, np.generic):
        return value.item()
    return value


def _tree(node):
    tree = {"attrs": {k: _value(v) for k, v in node.attrs.items()}}
    for name, child in node.items():
        if isinstance(child, h5py.Group):
            tree[name] = _tree(child)
        else:
            tree[name] = {"data": _value(child[()]),
                          "attrs": {k: _value(v) for k, v in child.attrs.items()}}
    return tree


def read_result(path):
    """Read a whole result file into nested dicts.

    Parameters
    ----------
    path : str or Path

    Returns
    -------
    dict
        ``{"attrs": {...}, "<group>": {"attrs": {...}, "<dataset>": {"data": ndarray,
        "attrs": {"units": ..., "description": ...}}, ...}, ...}``.

    Raises
    ------
    SimError
        Missing file, not HDF5, or not a result file.
    """
    with _open(path) as handle:
        return _tree(handle)


def describe(path):
    """Text listing of a result file: provenance, groups, datasets, shapes, units, status.

    Parameters
    ----------
    path : str or Path

    Returns
    -------
    str
    """
    tree = read_result(path)
    root = tree["attrs"]
    lines = [f"{path}: ffrsim {root.get('sim_version', '?')}, format "
             f"{root.get('format_version')}, created {root.get('created', '?')}, "
             f"status {root.get('status', '?')}",
             f"model: {root.get('model_file', '?')} {root.get('model_parameters', '{}')}"]
    overrides = json.loads(root.get("overrides", "[]"))
    if overrides:
        lines.append("overrides: " + " ".join(f"--set {o}" for o in overrides))
    for name, group in tree.items():
        if name == "attrs":
            continue
        attrs = group["attrs"]
        line = f"[{name}] {attrs.get('status', '?')}"
        if "wall_time_s" in attrs:
            line += f", {attrs['wall_time_s']:.3g} s"
        if attrs.get("message"):
            line += f": {attrs['message']}"
        lines.append(line)
        lines += [f"  @{key} = {_short(value)}" for key, value in attrs.items()
                  if key not in GROUP_ATTRS]
        lines += _describe_datasets(group, "  ")
    return "\n".join(lines)


def _short(value, width=60):
    """A value's text, cut to `width` characters."""
    text = " ".join(str(list(value) if isinstance(value, np.ndarray) else value).split())
    return text if len(text) <= width else text[:width - 3] + "..."


def _describe_datasets(group, indent):
    lines = []
    for name, child in group.items():
        if name == "attrs":
            continue
        if "data" not in child:
            lines.append(f"{indent}{name}/")
            lines += _describe_datasets(child, indent + "  ")
            continue
        units = child["attrs"].get("units", "?")
        units = units if isinstance(units, str) else ", ".join(units)
        shape = "x".join(map(str, np.shape(child["data"]))) or "scalar"
        lines.append(f"{indent}{name:<24} {shape:<12} [{units}]  "
                     f"{child['attrs'].get('description', '')}")
    return lines
