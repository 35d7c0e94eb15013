"""HDF5 result files: atomic writing, reading and a text summary.

`ResultFile` builds the file in memory and writes it when the run ends, to a temporary file
next to the target that then replaces the target in one step (``os.replace``): a result file
is never half-written, whatever stops the run (a full disk, a signal, a killed process).
Either the run finished, or the analyses that were cut short carry ``status = "incomplete"``
and the one-line error as ``message``; an interrupted ``--force`` run keeps the previous
complete file and writes its incomplete result under another name.  Output names are
reserved when the run starts (:func:`reserve`), so concurrent runs never share a file.  Every
dataset carries ``units`` and ``description`` attributes; every analysis group carries
``status``, ``message`` and ``wall_time_s``.
"""

import contextlib
import io
import json
import os
import socket
import stat
import time
from datetime import datetime, timezone
from collections.abc import Mapping
from pathlib import Path
from typing import NamedTuple

import h5py
import numpy as np

from sim.app import files
from sim.errors import SimError, keeping, one_line, signals_deferred, stop_in

FORMAT_VERSION = 1
STATUSES = ("complete", "incomplete")
# Keys that `read_result` uses in its tree, so they cannot name groups or datasets.
RESERVED_NAMES = ("attrs", "data")
# Group attributes every analysis group has; `describe` lists the others.
GROUP_ATTRS = ("status", "message", "wall_time_s")


def sim_version():
    """The version of ffrsim that writes the file (``sim.__version__``)."""
    from sim import __version__
    return __version__


def machine():
    """What ran the analyses, for a reader comparing run times: operating system, processor,
    logical CPUs, Python and numpy (no host name: a result file is shared)."""
    import platform

    return {"system": platform.platform(), "processor": platform.processor() or platform.machine(),
            "cpus": os.cpu_count(), "python": platform.python_version(), "numpy": np.__version__}


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
    if path.exists() and not stat.S_ISREG(path.stat().st_mode):
        raise SimError(f"{path}: not a regular file (a device, pipe or socket); use --out FILE.h5")
    held = reservation(path) if path.exists() and not force else None
    if path.exists() and not force and (held is None or held.state == "live"):
        raise SimError(describe_reservation(path, held) if held else f"{path} exists; use --force or --out")
    directory = path.parent
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise SimError(f"output directory {directory} cannot be created "
                       f"({exc.strerror})") from None
    if not os.access(directory, os.W_OK | os.X_OK):
        raise SimError(f"output directory {directory} is not writable")


RESERVATION = b"ffrsim: the result of a run in progress, pid "
# This process's reservations: absolute path -> descriptor, locked (``fcntl.flock``) for as
# long as the run lives.  The kernel drops the lock when the process ends, however it ends.
_held = {}


class Reservation(NamedTuple):
    """Who reserved a result file name (:func:`reserve`): host, process, and ``state``:
    ``"own"`` (this process), ``"stale"`` (its run is gone: nobody holds its lock) or
    ``"live"``."""

    host: str
    pid: int
    state: str


def reservation(path):
    """The :class:`Reservation` ``path`` holds, or None if it is not one.

    An empty file counts as one: a reservation being created, or one whose run could not
    write it (a full disk, a kill at that moment); nobody's lock means nobody's.
    """
    fd = files.open_unfollowed(path)
    if fd is None:
        return None
    try:
        head = os.read(fd, 256)
        if head and not head.startswith(RESERVATION):
            return None
        try:
            pid, host = head[len(RESERVATION):].decode().split()[:2]
            host, pid = host.strip("()"), int(pid)
        except (ValueError, UnicodeDecodeError):
            host, pid = "", 0
        own = _held.get(os.path.abspath(path))
        state = ("own" if own is not None and files.names(own, path)
                 else "live" if not files.lock(fd, wait=False) else "stale")
        return Reservation(host, pid, state)
    except OSError:
        return None
    finally:
        os.close(fd)


def describe_reservation(path, held):
    """One line about the reservation ``held`` of ``path``: a run in progress, or one that was
    killed."""
    state = ("a run that was killed" if held.state == "stale"
             else f"a run in progress (pid {held.pid} on {held.host})" if held.pid else "a run starting")
    return f"{path}: no result yet: the name is reserved by {state}"


def reserve(path, numbered=False, force=False):
    """Reserve the result file ``path`` for this run: a small file naming this process (``sim
    info`` explains it), locked while the process lives, replaced by the result when the run
    ends.

    Parameters
    ----------
    path : Path
    numbered : bool
        A default name: if taken, take ``<stem>-2``, ``-3``, ... (reservations of runs that
        were killed are reused) instead of refusing.
    force : bool
        An existing complete file may be replaced (it stays until the new result is written:
        nothing is reserved).

    Returns
    -------
    Path
        The reserved name.
    """
    path = Path(path)
    check_target(path, force=force or numbered)
    if force and os.path.lexists(path) and reservation(path) is None:
        return path
    files.clean_temporaries(path.parent)
    number = 1
    while True:
        name = path if number == 1 else path.with_name(f"{path.stem}-{number}{path.suffix}")
        if _claim(name):
            return name
        if not numbered:
            held = reservation(name)
            raise SimError(describe_reservation(name, held) if held else f"{name} exists; use --force or --out")
        number += 1


def _claim(name):
    """Create the reservation ``name`` (taking over one whose run is gone); False if the name
    is taken.  Each step is checked against a concurrent run doing the same: a file is ours
    only once it is locked and still bears the name."""
    while True:
        try:
            fd = os.open(name, os.O_CREAT | os.O_EXCL | os.O_WRONLY | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666)
        except FileExistsError:
            if not _take_over(name):
                return False
            continue
        except OSError as exc:
            raise SimError(f"{name}: cannot create ({exc.strerror})") from None
        files.lock(fd)
        if not files.names(fd, name):        # taken over before it was locked: try again
            os.close(fd)
            continue
        try:
            os.write(fd, RESERVATION + f"{os.getpid()} ({socket.gethostname()})\n".encode())
        except OSError as exc:
            os.unlink(name)
            os.close(fd)
            raise SimError(f"{name}: cannot create ({exc.strerror})") from None
        _held[os.path.abspath(name)] = fd
        return True


def _take_over(name):
    """Remove the reservation ``name`` if its run is gone: True if removed (or gone
    meanwhile), False if the name holds a live reservation or another file."""
    fd = files.open_unfollowed(name)
    if fd is None:
        return not os.path.lexists(name)
    try:
        head = os.read(fd, len(RESERVATION))
        if not RESERVATION.startswith(head) or not files.lock(fd, wait=False):
            return False
        if files.names(fd, name):
            os.unlink(name)
        return True
    except OSError as exc:
        raise SimError(f"{name}: cannot take over the reservation of a run that was killed "
                       f"({exc.strerror})") from None
    finally:
        os.close(fd)


def release(path):
    """Drop this process's reservation of ``path``: removed if nothing replaced it (a run that
    wrote nothing), its lock released."""
    fd = _held.pop(os.path.abspath(path), None)
    if fd is None:
        return
    if files.names(fd, path):
        Path(path).unlink(missing_ok=True)
    os.close(fd)


def write_atomic(path, data):
    """Write ``data`` (bytes) to ``path`` all or nothing (:func:`sim.app.files.replacing`),
    signals held back meanwhile.  SimError naming the path when the disk is full or the write
    fails otherwise (no temporary file is left)."""
    with signals_deferred(), files.replacing(path, "the result") as handle:
        handle.write(data)


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
        self._dims = {}
        self.finished = False
        self.attrs["status"] = "incomplete"
        self.attrs["message"] = "running"

    def put(self, name, data, units, description, dims=None):
        """Write a dataset with its units and description.

        Parameters
        ----------
        name : str
            Dataset name; ``a/b`` creates subgroup ``a`` (``joint_reactions/<joint>``).
        data : array_like
        units : str or sequence of str
            SI units (``"m"``, ``"Hz"``, ``"1"`` for fractions), or one per column.
        description : str
        dims : sequence of str, optional
            Names of the axes (``("time", "point", "component")``), for :func:`dimension_scales`;
            default: named from the group's coordinates and labels.

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
        keeping()       # the result now holds data: a stop is to keep it
        dataset = self._group.create_dataset(name, data=values)
        dataset.attrs["units"] = units if isinstance(units, str) else list(units)
        dataset.attrs["description"] = description
        if dims is not None:
            if len(dims) != values.ndim:
                raise ValueError(f"dataset `{self.name}/{name}`: {len(dims)} dims for {values.ndim} axes")
            self._dims[name] = tuple(dims)
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
        dimension_scales(self._group, self._dims)
        self.finished = True


# 1-D datasets that are the coordinates of the others' first axis, by name.
COORDINATES = ("time", "frequency_time", "frequency")
# Group attributes that name the entries of an axis: (attribute, dimension).
LABELS = (("pose_names", "coordinate"), ("actuator_names", "actuator"), ("body_names", "body"),
          ("sensor_names", "sensor"), ("parts", "part"))
# Datasets of modes: sampled at `frequency_time` rather than `time` where a group has both, and
# their later axes are modes.
MODAL = ("frequenc", "damping", "modal", "mode", "mac")
# Axes named by the writer (`GroupWriter.put`'s ``dims``) whose entries have names.
AXIS_LABELS = {"component": ("x", "y", "z"), "energy_part": ("kinetic", "gravitational", "elastic"),
               "wrench": ("fx", "fy", "fz", "mx", "my", "mz"),
               "section_force": ("N", "Vy", "Vz", "T", "My", "Mz"), "stress": ("normal", "von_mises")}


def dimension_scales(group, named=None):
    """Name every axis of every dataset of ``group`` with an HDF5 dimension scale, so that
    netCDF readers (``xarray.open_dataset(path, group=..., engine="h5netcdf")``) see named
    dimensions with coordinates.

    The first axis: the coordinate dataset of :data:`COORDINATES` of its length (``time``;
    ``frequency_time`` for the datasets of modes where a group has both).  The others: the
    labels of the group attributes of :data:`LABELS` (string coordinates: ``coordinate`` =
    ``x, y, z``, ``actuator``, ``body``), ``mode`` for the axes of the datasets of modes as
    long as ``frequencies``' last one, else an index
    ``<name>_<axis>`` (one per subgroup: ``joint_reactions_1`` for every joint's wrench).
    The label and index datasets made here carry ``role = "dimension"``.

    ``named`` (``{dataset path in the group: axis names}``) names the axes of those datasets
    as given: the 1-D dataset of that name and length in the dataset's own subgroup or in
    ``group`` (a subgroup's own ``time``, the group's ``time``), else labels of
    :data:`AXIS_LABELS` or an index of that name, made in the dataset's subgroup.
    """
    named = named or {}
    scales = {}
    for name in COORDINATES:
        if name in group and isinstance(group[name], h5py.Dataset) and group[name].ndim == 1:
            group[name].make_scale(name)
            scales[name] = group[name]
    # A grid (pose map): its axes' values are 1-D datasets named in the `axes` attribute.
    grid = [str(_value(a)) for a in np.atleast_1d(group.attrs.get("axes", []))]
    grid = [a for a in grid if a in group and isinstance(group[a], h5py.Dataset) and group[a].ndim == 1]
    for name in grid:
        group[name].make_scale(name)
    labels = []
    for attr, dim in LABELS:
        if attr in group.attrs and dim not in group:
            names = [str(_value(v)) for v in np.atleast_1d(group.attrs[attr])]
            ds = group.create_dataset(dim, data=np.array(names, dtype=object), dtype=h5py.string_dtype())
            # Names have no unit ("1" would read "coordinate = x [1]" in xarray's plots): the unit
            # their entries are measured in where they share one, else none, each entry's beside.
            ds.attrs["units"], ds.attrs["description"] = "", f"names of the {dim} entries (attribute {attr})"
            units = _entry_units(group, dim, len(names))
            if units is not None:
                ds.attrs["entry_units"] = units
                if len(set(units)) == 1:         # all lengths, say: the coordinates' unit
                    ds.attrs["units"] = units[0]
            ds.attrs["role"] = "dimension"
            ds.make_scale(dim)
            labels.append(ds)

    def index(name, n):
        """The index scale ``name`` of length ``n`` (None if that name has another length)."""
        if name in group:
            ds = group[name]
            return ds if ds.shape == (n,) and ds.is_scale else None
        ds = group.create_dataset(name, data=_numbers(name, n))
        ds.attrs["units"], ds.attrs["description"] = "", _index_description(name)
        ds.attrs["role"] = "dimension"
        ds.make_scale(name)
        return ds

    # The modes' axis: as long as the last axis of `frequencies` (modes at a pose, or along time).
    count = group["frequencies"].shape[-1] if isinstance(group.get("frequencies"), h5py.Dataset) else None

    def named_scale(ds, name, n):
        """The scale ``name`` of length ``n`` for ``ds`` (see ``named`` above)."""
        for where in (ds.parent, group):
            if name in where and isinstance(where[name], h5py.Dataset) and where[name].shape == (n,):
                if not where[name].is_scale:
                    where[name].make_scale(name)
                return where[name]
        if name in ds.parent:      # taken by another length: an index of its own
            name = f"{name}_{n}"
            if name in ds.parent:
                return ds.parent[name]
        labels = AXIS_LABELS.get(name)
        if labels is not None and len(labels) == n:
            scale = ds.parent.create_dataset(name, data=np.array(labels, dtype=object), dtype=h5py.string_dtype())
            scale.attrs["units"], scale.attrs["description"] = "", f"names of the {name} entries"
        else:
            scale = ds.parent.create_dataset(name, data=_numbers(name, n))
            scale.attrs["units"], scale.attrs["description"] = "", _index_description(name)
        scale.attrs["role"] = "dimension"
        scale.make_scale(name)
        return scale

    def attach_named(ds, names):
        for axis, (name, n) in enumerate(zip(names, ds.shape)):
            scale = named_scale(ds, name, n)
            if scale != ds:
                ds.dims[axis].attach_scale(scale)

    def attach(ds, stem):
        key = ds.name[len(group.name):].lstrip("/")
        if key in named:
            attach_named(ds, named[key])
            return
        modal = any(ds.name.rsplit("/", 1)[-1].startswith(p) for p in MODAL)
        used = []
        for axis, n in enumerate(ds.shape):
            scale = None
            if axis < len(grid) and ds.ndim > len(grid) - 1 and group[grid[axis]].shape[0] == n:
                scale = group[grid[axis]]
            if scale is None and axis == 0:
                fitting = [c for c in COORDINATES if c in scales and scales[c].shape[0] == n]
                if len(fitting) > 1 and "frequency_time" in fitting:
                    fitting = ["frequency_time" if modal else next(c for c in fitting if c != "frequency_time")]
                scale = scales[fitting[0]] if fitting else None
            if scale is None and not modal and (axis > 0 or ds.ndim == 1):
                scale = next((lab for lab in labels if lab.shape[0] == n and lab.name not in used), None)
            if scale is None and (n == count and (modal or axis == 0) if count else modal and axis == ds.ndim - 1 > 0):
                scale = index("mode", n)
            if scale is None or scale.name in used:
                scale = index(f"{stem}_{axis}", n) or index(f"{ds.name.rsplit('/', 1)[-1]}_{stem}_{axis}", n)
            used.append(scale.name)
            ds.dims[axis].attach_scale(scale)

    def visit(node, stem):
        for name, child in list(node.items()):
            if isinstance(child, h5py.Group):
                visit(child, name)
            elif not child.is_scale and child.ndim:
                attach(child, stem or name)
    visit(group, "")


# Datasets whose per-column units are those of a labelled axis' entries.
ENTRY_UNITS = {"coordinate": ("pose", "pose_rigid", "deviation"), "actuator": ("actuator_forces",)}


def _entry_units(group, dim, n):
    """The units (n,) of the entries of the labelled axis ``dim`` (``coordinate``: m, rad), from
    a dataset of ``group`` with one unit per entry; None if none says."""
    for name in ENTRY_UNITS.get(dim, ()):
        if isinstance(group.get(name), h5py.Dataset) and "units" in group[name].attrs:
            units = [str(_value(u)) for u in np.atleast_1d(group[name].attrs["units"])]
            return units * n if len(units) == 1 else units if len(units) == n else None
    return None


def _numbers(name, n):
    """The values (n,) of an index scale: modes are numbered as users name them, 1 the lowest
    (``sim animate --mode 1``, "mode 1" in every message); other indices from 0."""
    return np.arange(1, n + 1) if name == "mode" else np.arange(n)


def _index_description(name):
    return "mode number (1: the lowest)" if name == "mode" else f"index ({name})"


class ResultFile:
    """Context manager writing one result file, all or nothing.

    Parameters
    ----------
    path : str or Path
        Final file: absent, reserved by this run (:func:`reserve`), or (``force``) a previous
        result that is replaced only by a complete one.
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
    references : sequence of dict, optional
        Published values the model declares (:class:`sim.model.types.Reference` as dicts),
        stored as the JSON root attribute ``references`` for the figures.

    Attributes
    ----------
    written : Path or None
        Where the result went (after the ``with`` block).

    Notes
    -----
    The file is built in memory and written on exit (:func:`write_atomic`).  On an exception
    (including KeyboardInterrupt and the other stop signals) inside the ``with`` block: if a
    dataset was written, unfinished groups are marked incomplete with the error's one-line
    message and the file is written -- to ``path``, or, when ``path`` holds a previous result,
    to ``<stem>.incomplete.h5`` beside it; the exception gets a ``result_path`` attribute
    naming it.  Otherwise nothing is written and a reservation is released.  The exception
    propagates.

    Examples
    --------
    >>> with ResultFile("results/a.h5", scenario=text, model_file=f,
    ...                 model_parameters={}) as rf:            # doctest: +SKIP
    ...     g = rf.group("modes")
    ...     g.put("frequencies", f_hz, "Hz", "elastic natural frequencies")
    ...     g.finish()
    """

    def __init__(self, path, *, scenario, model_file, model_parameters, force=False,
                 overrides=(), kernels_load_time_s=None, references=()):
        self.path = Path(path)
        self._root_attrs = {
            "sim_version": sim_version(),
            "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "scenario": scenario,
            "model_file": str(model_file),
            "model_parameters": json.dumps(model_parameters, sort_keys=True),
            "overrides": json.dumps(list(overrides)),
            "format_version": FORMAT_VERSION,
            "machine": json.dumps(machine()),
        }
        if kernels_load_time_s is not None:
            self._root_attrs["kernels_load_time_s"] = float(kernels_load_time_s)
        if references:
            self._root_attrs["references"] = json.dumps(list(references))
        self.force = force
        self.groups = {}
        self.written = None
        self._file = None
        self._buffer = None
        self._start = None
        self._previous = False

    def __enter__(self):
        check_target(self.path, self.force)
        held = reservation(self.path)
        self._previous = self.path.exists() and not (held is not None and held.state == "own")
        self._buffer = io.BytesIO()
        self._file = h5py.File(self._buffer, "w")
        self._file.attrs.update(self._root_attrs)
        self._start = time.perf_counter()
        return self

    def add_load_time(self, seconds):
        """Add ``seconds`` of kernel loading (or waiting for a helper compiling them) to the
        root attribute ``kernels_load_time_s``."""
        attrs = self._file.attrs
        attrs["kernels_load_time_s"] = float(attrs.get("kernels_load_time_s", 0.0)) + seconds

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
            self._publish(self.path, "complete", "")
            return False
        message = "interrupted" if stop_in(exc) is not None else one_line(exc)
        # A file without any dataset would hold nothing but the failure: write no file.
        if not any(len(writer._group) for writer in self.groups.values()):
            self._file.close()
            release(self.path)
            return False
        for writer in self.groups.values():
            writer.finish("incomplete", message)
        target = self.path
        if self._previous:     # keep the previous complete result; this one goes beside it
            target = self.path.with_name(f"{self.path.stem}.incomplete{self.path.suffix}")
        self._publish(target, "incomplete", message)
        exc.result_path = target
        return False

    def _publish(self, target, status, message):
        self._file.attrs["status"] = status
        self._file.attrs["message"] = message
        self._file.attrs["wall_time_s"] = time.perf_counter() - self._start
        self._file.close()
        try:
            write_atomic(target, self._buffer.getvalue())
        except SimError:
            release(self.path)
            raise
        self.written = target


# The most elements `read_result` reads from one dataset (3 GB of doubles would exhaust the
# memory of most desktops; the largest shipped result dataset has ~2e6).  A compressed file of
# a few kilobytes can claim billions.
MAX_READ = 50_000_000


def _open(path):
    """Open a result file for reading, with one-line errors for the user's path."""
    path = Path(path)
    if not path.is_file():
        raise SimError(f"{path}: result file not found")
    held = reservation(path)
    if held is not None:
        raise SimError(describe_reservation(path, held))
    try:
        handle = h5py.File(path, "r")
    except OSError:
        raise SimError(f"{path}: not an HDF5 file") from None
    try:
        if "format_version" not in handle.attrs:
            raise SimError(f"{path}: not an ffrsim result file (no `format_version` attribute)")
        _check_links(handle, path)
    except BaseException:
        handle.close()
        raise
    return handle


def _check_links(handle, path):
    """SimError naming the first item of ``handle`` that ffrsim never writes and that reading
    would trip over: a soft link (it may loop), an external link (it opens another file), a
    group linked again below itself (the tree would never end), a named datatype."""
    seen, groups = {handle.id}, [handle]
    while groups:
        group = groups.pop()
        for name in group:
            link = group.get(name, getlink=True)
            where = f"{path}: `{group.name.rstrip('/')}/{name}`"
            if not isinstance(link, h5py.HardLink):
                kind = "an external link" if isinstance(link, h5py.ExternalLink) else "a soft link"
                raise SimError(f"{where} is {kind}, which no result holds; the file is damaged or not a result")
            child = group[name]
            if isinstance(child, h5py.Group):
                if child.id in seen:
                    raise SimError(f"{where} is a second link to a group met before (reading would loop); the file is damaged or not a result")
                seen.add(child.id)
                groups.append(child)
            elif not isinstance(child, h5py.Dataset):
                raise SimError(f"{where} is not a dataset or a group; the file is damaged or not a result")


def open_result(path):
    """Open a result file for reading, to read parts of it.

    Parameters
    ----------
    path : str or Path

    Returns
    -------
    h5py.File
        Open read-only; close it (``with open_result(path) as f: ...``).

    Raises
    ------
    SimError
        Missing file, a name reserved by a run, not HDF5, or not a result file.
    """
    return _open(path)


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


class _Dataset(Mapping):
    """``{"data": ndarray, "attrs": {...}}`` of one dataset, read on first access of ``"data"``
    (a figure reads only what it draws; the file must still be open then).

    A dataset with more than ``rows`` entries along its first axis is read every ``stride``-th
    entry, so that a time series and its time axis stay aligned; ``stride`` records it.
    """

    def __init__(self, node, path, rows):
        self._node, self._path, self._data = node, path, None
        self.attrs = {k: _value(v) for k, v in node.attrs.items()}
        shape = node.shape
        self.stride = -(-shape[0] // rows) if rows and shape and shape[0] > rows else 1
        self.name, self.shape = node.name, shape

    def __getitem__(self, key):
        if key == "attrs":
            return self.attrs
        if key != "data":
            raise KeyError(key)
        if self._data is None:
            node = self._node
            size = node.size // self.stride
            if size > MAX_READ:
                raise SimError(f"{self._path}: dataset {node.name} claims {node.size:.3g} elements "
                               f"({node.size * node.dtype.itemsize / 2**30:.3g} GiB), more than any "
                               f"result; the file is damaged or not a result")
            self._data = _value(node[::self.stride] if self.stride > 1 else node[()])
        return self._data

    def __iter__(self):
        return iter(("data", "attrs"))

    def __len__(self):
        return 2


def along(series, axis):
    """The data of the dataset ``series`` of a result tree (:func:`lazy_result`,
    :func:`read_result`), checked to have one row per entry of the dataset ``axis`` (its
    ``time``): SimError naming both, before either is read, when a damaged or crafted file has
    their lengths disagree."""
    rows, entries = _length(series), _length(axis)
    if rows != entries:
        raise SimError(f"{getattr(series, '_path', 'result')}: dataset `{getattr(series, 'name', '?')}` has "
                       f"{rows} rows for the {entries} entries of `{getattr(axis, 'name', '?')}`; "
                       f"the file is damaged or not a result")
    return series["data"]


def _length(dataset):
    """Rows of a result tree's dataset (a lazy one's without reading it)."""
    shape = dataset.shape if isinstance(dataset, _Dataset) else np.shape(dataset["data"])
    return shape[0] if shape else 0


def _tree(node, path, rows=None):
    tree = {"attrs": {k: _value(v) for k, v in node.attrs.items()}}
    for name, child in node.items():
        tree[name] = (_tree(child, path, rows) if isinstance(child, h5py.Group)
                      else _Dataset(child, path, rows))
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
        return _plain(_tree(handle, path))


def _plain(tree):
    return {k: (_plain(v) if isinstance(v, dict) else
                {"data": v["data"], "attrs": v["attrs"]} if isinstance(v, _Dataset) else v)
            for k, v in tree.items()}


@contextlib.contextmanager
def lazy_result(path, rows=None):
    """The tree of :func:`read_result` with each dataset read when its ``"data"`` is first used,
    while the context lasts: what reads a few datasets of a large file reads only those.

    Parameters
    ----------
    path : str or Path
    rows : int, optional
        Read at most about this many entries along a dataset's first axis (evenly strided;
        each dataset's ``stride`` says by how much).

    Yields
    ------
    dict
        As :func:`read_result`, with :class:`_Dataset` mappings as the datasets.
    """
    with _open(path) as handle:
        yield _tree(handle, path, rows)


def strided(tree):
    """``(name, stride, rows)`` of each dataset of a lazy tree that was read strided."""
    found = []
    for value in tree.values():
        if isinstance(value, dict):
            found += strided(value)
        elif isinstance(value, _Dataset) and value.stride > 1 and value._data is not None:
            found.append((value.name, value.stride, value.shape[0]))
    return found


def describe(path):
    """Text listing of a result file: provenance, groups, datasets, shapes, units, status.

    Reads attributes and shapes only, never a dataset's values.

    Parameters
    ----------
    path : str or Path

    Returns
    -------
    str
    """
    with _open(path) as handle:
        root = {k: _value(v) for k, v in handle.attrs.items()}
        lines = [f"{path}: ffrsim {root.get('sim_version', '?')}, format "
                 f"{root.get('format_version')}, created {root.get('created', '?')}, "
                 f"status {root.get('status', '?')}",
                 f"model: {root.get('model_file', '?')} {root.get('model_parameters', '{}')}"]
        try:
            overrides = stored_overrides(root, path)
        except SimError:       # listed as it is: `info` shows what a file holds
            overrides = [str(root.get("overrides"))]
        if overrides:
            lines.append("overrides: " + " ".join(f"--set {o}" for o in overrides))
        for name, group in handle.items():
            if not isinstance(group, h5py.Group):
                lines.append(_dataset_line(name, group, ""))
                continue
            attrs = {k: _value(v) for k, v in group.attrs.items()}
            line = f"[{name}] {attrs.get('status', '?')}"
            if isinstance(attrs.get("wall_time_s"), (int, float)):
                line += f", {attrs['wall_time_s']:.3g} s"
            if attrs.get("message"):
                line += f": {attrs['message']}"
            lines.append(line)
            lines += [f"  @{key} = {_short(value)}" for key, value in attrs.items()
                      if key not in GROUP_ATTRS]
            lines += _describe_datasets(group, "  ")
    return "\n".join(lines)


def stored_overrides(attrs, path):
    """The ``--set`` overrides of a result file, from its root attributes ``attrs``: a list of
    ``KEY=VALUE`` strings (none in a file written without them).  SimError naming the file and
    the attribute when it is not a JSON list of strings."""
    text = attrs.get("overrides", "[]") or "[]"
    try:
        overrides = json.loads(text)
    except (TypeError, ValueError, RecursionError):
        overrides = None
    if not (isinstance(overrides, list) and all(isinstance(o, str) for o in overrides)):
        raise SimError(f"{path}: root attribute `overrides` is not a JSON list of strings; "
                       f"the file is damaged or not a result")
    return overrides


def _short(value, width=60):
    """A value's text, cut to `width` characters."""
    text = " ".join(str(value.tolist() if isinstance(value, np.ndarray) else value).split())    # no np.float64(...)
    return text if len(text) <= width else text[:width - 3] + "..."


def _dataset_line(name, dataset, indent):
    units = _value(dataset.attrs.get("units", "?"))
    units = units if isinstance(units, str) else ", ".join(map(str, units))
    shape = "x".join(map(str, dataset.shape or ())) or "scalar"
    return f"{indent}{name:<24} {shape:<12} [{units}]  {_value(dataset.attrs.get('description', ''))}"


def _describe_datasets(group, indent):
    lines = []
    for name, child in group.items():
        if isinstance(child, h5py.Group):
            lines.append(f"{indent}{name}/")
            lines += _describe_datasets(child, indent + "  ")
        elif _value(child.attrs.get("role")) != "dimension":     # netCDF dimension labels: not listed
            lines.append(_dataset_line(name, child, indent))
    return lines
