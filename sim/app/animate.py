"""Animations of result files: the robot's skeleton in 3D, its deformation magnified (``sim animate``).

A :class:`Motion` holds what is drawn: the skeleton's segments, the rigid robot and the elastic
deflection (flexible minus rigid, unscaled) at each frame, and a label per frame.
:func:`load_motion` reads one from a result file -- the ``skeleton`` subgroup of ``transient``
or ``ked`` (the stored output instants, up to :data:`TIME_FRAMES` of them picked evenly), or of
``modes`` (one period of a mode, ``points + sin(phase) mode_displacements``).  Each frame draws
the rigid robot in light grey and the deformed one ``rigid + scale * deflection``
(:func:`frame_points`) over it; :func:`auto_scale` chooses the magnification so that the
largest drawn deflection is :data:`DEFLECTION_SHARE` of the robot's size.  :func:`render`
writes a GIF (Pillow) or an MP4 (ffmpeg), all or nothing.

The drawing uses a bare :class:`matplotlib.figure.Figure` (no pyplot): it changes no backend
and leaves no figure open.
"""
from dataclasses import dataclass
from pathlib import Path
import shutil
import tempfile

import numpy as np

from sim.app import files
from sim.errors import SimError

GROUPS = ("transient", "ked", "modes")
TIME_FRAMES = 100          # frames of a time-domain animation (at most; evenly picked samples)
MODE_FRAMES = 24           # frames of one period of a mode
MODE_MIN_FRAMES = 12       # fewest frames of a mode's period (fewer would not read as an oscillation)
MAX_FRAMES = 400           # frames of an animation at most (the GIF writer holds them all in memory)
DEFLECTION_SHARE = 0.1     # largest drawn deflection / the robot's size, for the automatic scale
FPS = 20                   # frames per second of the written file
DPI = 100
FIGSIZE = (6.4, 5.6)       # inches: 640 x 560 pixels at DPI
TICKS = 5                  # most tick labels per axis
# Elevation and azimuth [deg] of the view presets: iso, from +z (x right, y up), from -y (x right,
# z up), from +x (y right, z up).
VIEWS = {"iso": (25.0, -60.0), "top": (90.0, -90.0), "front": (0.0, -90.0), "side": (0.0, 0.0)}
AUTO = "auto"          # the view chosen from the motion (plane_view)
FLAT_RTOL = 1e-6       # a robot whose extent along a world axis is below this share of its largest is planar
IN_PLANE = 0.99        # share of a deformation's motion that keeps it in the robot's plane
# The preset looking along each world axis: x, y, z.
ALONG = ("side", "front", "top")
FORMATS = (".gif", ".mp4")
RIGID_COLOR = "0.78"
DEFORMED_COLOR = "C0"


@dataclass(frozen=True)
class Motion:
    """The frames of an animation.

    Attributes
    ----------
    segments : ndarray of int, shape (n_s, 2)
        Pairs of point indices joined by a line.
    rigid : ndarray, shape (n_f, n_p, 3)
        The rigid robot's points at each frame [m].
    deflection : ndarray, shape (n_f, n_p, 3)
        Deformed minus rigid points at each frame, unscaled [m; m kg^-1/2 for a mass-normalised
        mode].
    labels : tuple of str, length n_f
        What each frame shows (``"t = 0.125 s"``; a mode's number, frequency and phase).
    title : str
    end_effector : int
        Index of the end-effector's point (-1: not drawn).
    group : str
        The result group drawn (``transient``, ``ked``, ``modes``).
    mode : int or None
        The mode drawn (1-based), for group ``modes``.
    time : ndarray, shape (n_f,) or None
        The instants of the frames [s] (a time history's).
    """

    segments: np.ndarray
    rigid: np.ndarray
    deflection: np.ndarray
    labels: tuple
    title: str
    end_effector: int = -1
    group: str = ""
    mode: int | None = None
    time: np.ndarray | None = None

    def __len__(self):
        return self.rigid.shape[0]


def frame_indices(n, frames):
    """``frames`` indices (k,) picked evenly from ``n`` samples, first and last included (all
    ``n`` when ``frames >= n``)."""
    if frames >= n:
        return np.arange(n)
    return np.unique(np.rint(np.linspace(0, n - 1, frames)).astype(int))


def _time_labels(t):
    """``"t = 0.125 s"`` for each instant, with the decimals that show the spacing to 10 %."""
    step = np.min(np.diff(t)) if len(t) > 1 else 1.0
    decimals = next((d for d in range(10) if abs(round(step, d) - step) <= 0.1 * step), 9)
    return tuple(f"t = {x:.{decimals}f} s" for x in t)


def load_motion(path, group=None, mode=None, frames=None):
    """Read the frames of an animation from a result file.

    Parameters
    ----------
    path : str or Path
        Result file.
    group : {"transient", "ked", "modes"}, optional
        Default: ``modes`` if ``mode`` is given, else the first of :data:`GROUPS` with skeleton
        data.
    mode : int, optional
        1-based mode number (group ``modes``; default 1).
    frames : int, optional
        Frames: of one period for a mode (default :data:`MODE_FRAMES`, at least
        :data:`MODE_MIN_FRAMES`), else at most that many samples picked evenly (default
        :data:`TIME_FRAMES`).

    Returns
    -------
    Motion

    Raises
    ------
    SimError
        Not a result file, no such group, a group without skeleton data or samples, a mode
        number out of range, too few frames for a mode.
    """
    import h5py

    from sim.app.results import _value, open_result

    path = Path(path)
    if group is None and mode is not None:
        group = "modes"
    if group is not None and group not in GROUPS:
        raise SimError(f"group `{group}`: expected one of {', '.join(GROUPS)}")
    if mode is not None and group != "modes":
        raise SimError(f"a mode number applies to group `modes`, not `{group}`")
    with open_result(path) as handle:
        if group is None:
            found = [g for g in GROUPS if g in handle and "skeleton" in handle[g]]
            if not found:
                raise SimError(f"{path}: nothing to animate: no {', '.join(GROUPS)} group with skeleton data")
            group = found[0]
        if group not in handle or not isinstance(handle[group], h5py.Group):
            held = [g for g in handle if isinstance(handle[g], h5py.Group)]
            raise SimError(f"{path}: no `{group}` group (the file has: {', '.join(held) or 'none'})")
        node = handle[group]
        if "skeleton" not in node:
            raise SimError(f"{path}: group `{group}` has no skeleton data to draw (a file written before "
                           f"`sim animate` existed: run the scenario again)")
        skeleton = node["skeleton"]
        attrs = {k: _value(v) for k, v in node.attrs.items()}
        title = f"{path.name}: {group}"
        if attrs.get("status") == "incomplete":
            title += f" (INCOMPLETE: {attrs.get('message', '')})"
        end_effector = int(attrs.get("skeleton_end_effector_point", -1))
        segments = np.asarray(skeleton["segments"][()], dtype=int).reshape(-1, 2)
        if group == "modes":
            return _mode_motion(path, node, skeleton, segments, title, end_effector,
                                1 if mode is None else mode, MODE_FRAMES if frames is None else frames)
        # Only the drawn instants are read (a long run's skeleton can hold 2e7 values).
        time = skeleton["time"] if "time" in skeleton else node["time"]
        points, rigid = skeleton["points"], skeleton["points_rigid"]
        n = time.shape[0] if time.ndim == 1 else 0
        if n == 0:
            raise SimError(f"{path}: group `{group}` holds no samples to draw")
        if points.shape[0] != n or rigid.shape != points.shape:
            raise SimError(f"{path}: group `{group}`: skeleton of {points.shape[0]} instants for {n} times; "
                           f"the file is damaged")
        picked = frame_indices(n, TIME_FRAMES if frames is None else frames)
        flexible, rigid, time = _finite(path, points, picked), _finite(path, rigid, picked), time[picked]
    return Motion(segments=segments, rigid=rigid, deflection=flexible - rigid, labels=_time_labels(time),
                  title=title, end_effector=end_effector, group=group, time=np.asarray(time, dtype=float))


def _mode_motion(path, node, skeleton, segments, title, end_effector, mode, frames):
    """:class:`Motion` of one period of mode ``mode`` (1-based) in ``frames`` frames."""
    shapes = skeleton["mode_displacements"]
    count = shapes.shape[0]
    if not 1 <= mode <= count:
        raise SimError(f"{path}: mode {mode} is out of range: the file holds modes 1 to {count}")
    if frames < MODE_MIN_FRAMES:
        raise SimError(f"{frames} frames cannot show a mode's oscillation: give at least {MODE_MIN_FRAMES}")
    shape = _finite(path, shapes, mode - 1)
    points = _finite(path, skeleton["points"], ())
    frequency = float(node["frequencies"][mode - 1])
    phase = 2 * np.pi * np.arange(frames) / frames
    labels = tuple(f"mode {mode}: {frequency:.2f} Hz, phase {np.degrees(p):3.0f}°" for p in phase)
    return Motion(segments=segments, rigid=np.broadcast_to(points, (frames,) + points.shape),
                  deflection=np.sin(phase)[:, None, None] * shape, labels=labels, title=title,
                  end_effector=end_effector, group="modes", mode=mode)


def _finite(path, dataset, index):
    """``dataset[index]``, SimError naming the dataset unless every value is finite (NaN has
    no place to be drawn: the axis limits would be NaN)."""
    values = np.asarray(dataset[index], dtype=float)
    if not np.all(np.isfinite(values)):
        raise SimError(f"{path}: dataset `{dataset.name}` holds NaN or infinite coordinates where it is to be "
                       f"drawn; the file is damaged or not a result")
    return values


def nice_scale(x):
    """``x`` rounded to two significant digits (a magnification that prints exactly)."""
    return float(f"{x:.2g}")


def scale_text(scale):
    """``"2300"``, ``"45"``, ``"0.052"``: the magnification as printed."""
    return f"{scale:.0f}" if scale >= 10 else f"{scale:.2g}"


def auto_scale(rigid, deflection, share=DEFLECTION_SHARE):
    """Magnification making the largest deflection ``share`` of the robot's size.

    Parameters
    ----------
    rigid : ndarray, shape (..., n_p, 3)
        Rigid robot [m] (any frames).
    deflection : ndarray, shape (..., n_p, 3)
        Its deflections (any scale).
    share : float
        Largest drawn deflection / the robot's size (largest extent of ``rigid`` along x, y, z).

    Returns
    -------
    float
        Rounded by :func:`nice_scale`; 1 when nothing deflects.
    """
    rigid = np.asarray(rigid).reshape(-1, 3)
    size = float(np.ptp(rigid, axis=0).max()) if rigid.size else 0.0
    peak = float(np.sqrt(np.sum(np.asarray(deflection) ** 2, axis=-1)).max()) if np.size(deflection) else 0.0
    if not (peak > 0 and size > 0):
        return 1.0
    return nice_scale(share * size / peak)


def frame_points(motion, k, scale):
    """The points drawn at frame ``k``.

    Parameters
    ----------
    motion : Motion
    k : int
    scale : float
        Magnification of the deflection.

    Returns
    -------
    rigid : ndarray, shape (n_p, 3)
        The rigid (ghosted) robot [m].
    deformed : ndarray, shape (n_p, 3)
        ``rigid + scale * deflection`` [m].
    """
    rigid = np.asarray(motion.rigid[k], dtype=float)
    return rigid, rigid + scale * np.asarray(motion.deflection[k], dtype=float)


def polyline(points, segments):
    """x, y, z (each (3 n_s,)) of the segments as one line broken by NaNs."""
    points = np.asarray(points, dtype=float)
    out = np.full((len(segments), 3, 3), np.nan)
    out[:, 0] = points[segments[:, 0]]
    out[:, 1] = points[segments[:, 1]]
    return out.reshape(-1, 3).T


def limits(rigid, deformed):
    """Axis limits ``(low, high)`` (each (3,)) holding the points ``rigid`` and ``deformed``
    (each (..., 3), e.g. every frame), padded; each axis at least a fifth of the largest (a
    planar robot keeps a visible depth)."""
    rigid, deformed = np.asarray(rigid).reshape(-1, 3), np.asarray(deformed).reshape(-1, 3)
    low = np.minimum(rigid.min(axis=0), deformed.min(axis=0))
    high = np.maximum(rigid.max(axis=0), deformed.max(axis=0))
    span = high - low
    half = np.maximum(span, 0.2 * span.max() if span.max() > 0 else 1.0) * 0.55
    centre = (low + high) / 2
    return centre - half, centre + half


def motion_view(displacement):
    """Elevation and azimuth [deg] looking along the world axis the points move least along
    (tilted by 20 to 30 deg, so that the robot keeps its depth): the view showing the most of a
    displacement field (n_p, 3)."""
    motion = np.sqrt(np.sum(np.asarray(displacement, dtype=float) ** 2, axis=0))
    return {0: (20.0, -10.0), 1: (20.0, -80.0), 2: (60.0, -75.0)}[int(np.argmin(motion))]


def setup_axes(ax, low, high, view="iso"):
    """Equal-scaled 3D axes with the limits ``low``, ``high`` (3,), labelled in m, seen from
    ``view`` (a name of :data:`VIEWS`, or ``(elevation, azimuth)`` in degrees), orthographic."""
    from matplotlib.ticker import MaxNLocator

    ax.set_xlim(low[0], high[0])
    ax.set_ylim(low[1], high[1])
    ax.set_zlim(low[2], high[2])
    ax.set_box_aspect(high - low)
    ax.set_proj_type("ortho")
    ax.view_init(*(VIEWS[view] if isinstance(view, str) else view))
    extent = np.asarray(high, dtype=float) - np.asarray(low, dtype=float)
    for axis, name, length in zip((ax.xaxis, ax.yaxis, ax.zaxis), "xyz", extent):
        axis.set_label_text(f"{name} [m]", fontsize=8)
        axis.set_tick_params(labelsize=7)
        # few labels (they are most of a frame's drawing time), fewer on a short axis
        axis.set_major_locator(MaxNLocator(TICKS if length > 0.3 * extent.max() else 2))
    # An axis looked along (within 35 deg) shows no length: its ticks and label would pile up.
    # So does an axis along which the robot is flat (a planar robot's normal).
    elevation, azimuth = np.radians(VIEWS[view] if isinstance(view, str) else view)
    sight = np.abs([np.cos(elevation) * np.cos(azimuth), np.cos(elevation) * np.sin(azimuth), np.sin(elevation)])
    flat = extent < 0.05 * extent.max()
    for axis in np.flatnonzero((sight > np.cos(np.radians(35.0))) | flat):
        hidden = (ax.xaxis, ax.yaxis, ax.zaxis)[axis]
        hidden.set_ticks([])
        hidden.set_label_text("")
    return ax


def draw_robot(ax, points, deformed, segments, end_effector=-1, label=None, rigid_label="rigid"):
    """The rigid robot in light grey and the deformed one over it, on 3D axes.

    Parameters
    ----------
    ax : mpl_toolkits.mplot3d.axes3d.Axes3D
    points, deformed : ndarray, shape (n_p, 3)
        Rigid and deformed (scaled) robot [m].
    segments : ndarray of int, shape (n_s, 2)
    end_effector : int
        Point marked with a dot (-1: none).
    label : str, optional
        Legend label of the deformed robot.
    rigid_label : str
        Legend label of the rigid robot.

    Returns
    -------
    dict
        The artists: ``rigid``, ``deformed`` (Line3D, one line per robot with NaN breaks)
        and ``end_effector`` (Line3D or None).
    """
    artists = {"rigid": ax.plot(*polyline(points, segments), color=RIGID_COLOR, lw=2.0, label=rigid_label)[0],
               "deformed": ax.plot(*polyline(deformed, segments), color=DEFORMED_COLOR, lw=1.6,
                                   marker="o", markersize=2.0, label=label)[0], "end_effector": None}
    if end_effector >= 0:
        artists["end_effector"] = ax.plot(*deformed[end_effector, :, None], "o", color="C3", markersize=5,
                                          label="end effector")[0]
    return artists


def frame_figure(motion, scale, view="iso", k=0):
    """A figure drawing frame ``k`` of ``motion``, and ``update(k)`` redrawing another frame.

    Parameters
    ----------
    motion : Motion
    scale : float
        Magnification of the deflection (printed on the frame).
    view : {"iso", "top", "front", "side"}
    k : int

    Returns
    -------
    fig : matplotlib.figure.Figure
    update : callable
        ``update(k)`` sets the artists to frame ``k`` and returns them.
    artists : dict
        As :func:`draw_robot`, plus ``label`` (the frame's text).
    """
    from matplotlib.figure import Figure

    fig = Figure(figsize=FIGSIZE, dpi=DPI)
    ax = fig.add_subplot(projection="3d")
    fig.subplots_adjust(left=0.0, right=0.94, bottom=0.02, top=0.9)
    setup_axes(ax, *limits(motion.rigid, np.asarray(motion.rigid) + scale * np.asarray(motion.deflection)), view=view)
    rigid, deformed = frame_points(motion, k, scale)
    artists = draw_robot(ax, rigid, deformed, motion.segments, motion.end_effector,
                         label=f"{'mode shape' if motion.mode else 'deformed'} (x {scale_text(scale)})",
                         rigid_label="undeformed" if motion.mode else "rigid")
    if motion.end_effector >= 0 and len(motion) > 1 and np.ptp(motion.rigid[:, motion.end_effector], axis=0).max() > 0:
        ax.plot(*np.asarray(motion.rigid[:, motion.end_effector]).T, color=RIGID_COLOR, lw=0.8, ls="--",
                label="end-effector path (rigid)")
    ax.legend(loc="upper left", fontsize=7, frameon=False)
    fig.suptitle(motion.title, fontsize=10)
    fig.text(0.98, 0.93, f"deformation x {scale_text(scale)}", ha="right", va="bottom", fontsize=10,
             color=DEFORMED_COLOR, fontweight="bold")
    artists["label"] = fig.text(0.02, 0.93, motion.labels[k], ha="left", va="bottom", fontsize=10,
                                family="monospace")

    def update(k):
        rigid, deformed = frame_points(motion, k, scale)
        artists["rigid"].set_data_3d(*polyline(rigid, motion.segments))
        artists["deformed"].set_data_3d(*polyline(deformed, motion.segments))
        if artists["end_effector"] is not None:
            artists["end_effector"].set_data_3d(*deformed[motion.end_effector, :, None])
        artists["label"].set_text(motion.labels[k])
        return list(a for a in artists.values() if a is not None)
    return fig, update, artists


def check_output(out):
    """Raise SimError unless ``out`` names a GIF or an MP4 that can be written here."""
    out = Path(out)
    suffix = out.suffix.lower()
    if suffix not in FORMATS:
        raise SimError(f"{out}: cannot write a {suffix or '(no suffix)'} animation; use .gif or .mp4")
    if suffix == ".mp4" and not mp4_available():
        raise SimError(f"{out}: MP4 needs ffmpeg, which is not installed (install ffmpeg or "
                       f"`pip install imageio-ffmpeg`); or write a GIF: --out {out.with_suffix('.gif')}")
    if not out.parent.is_dir():
        raise SimError(f"{out.parent}: output directory not found")
    if out.is_dir():
        raise SimError(f"{out}: is a directory")


def _ffmpeg_path():
    """The ffmpeg executable: matplotlib's (``animation.ffmpeg_path``, on the PATH), else
    imageio-ffmpeg's; None when there is none."""
    import matplotlib
    from matplotlib import animation
    if animation.writers.is_available("ffmpeg"):
        return matplotlib.rcParams["animation.ffmpeg_path"]
    try:
        import imageio_ffmpeg
        return imageio_ffmpeg.get_ffmpeg_exe()
    except (ImportError, RuntimeError, OSError):
        return None


def mp4_available():
    """Whether an ffmpeg encoder is at hand for MP4 files."""
    return _ffmpeg_path() is not None


def plane_view(points, displacement):
    """The view preset looking along the world axis a planar robot is flat along (``top`` for
    a robot in the x-y plane), where its deformation stays in that plane (:data:`IN_PLANE` of
    its motion); ``iso`` otherwise (a spatial robot, an out-of-plane deformation).

    Parameters
    ----------
    points : ndarray, shape (..., n_p, 3)
        The rigid robot (at every frame) [m].
    displacement : ndarray, shape (..., n_p, 3)
        Its deformation (any scale).
    """
    points = np.asarray(points, dtype=float).reshape(-1, 3)
    extent = np.ptp(points, axis=0) if len(points) else np.zeros(3)
    if extent.max() == 0:
        return "iso"
    motion = np.sqrt(np.sum(np.asarray(displacement, dtype=float).reshape(-1, 3) ** 2, axis=0))
    for axis in np.flatnonzero(extent <= FLAT_RTOL * extent.max()):
        if motion[axis] <= (1.0 - IN_PLANE) * motion.sum():
            return ALONG[axis]
    return "iso"


def render(motion, out, scale=None, view=AUTO, fps=FPS):
    """Write ``motion`` as an animated GIF (Pillow) or MP4 (ffmpeg), all or nothing.

    The frames go to a private temporary directory, then to ``out`` through
    :func:`sim.app.files.replacing`; on any failure (or a stop signal) ``out`` is left as it
    was.

    Parameters
    ----------
    motion : Motion
    out : str or Path
        ``.gif`` or ``.mp4``.
    scale : float, optional
        Magnification of the deflection (default :func:`auto_scale`).
    view : {"auto", "iso", "top", "front", "side"}
        ``auto``: :func:`plane_view` of the motion.
    fps : float
        Frames per second.

    Returns
    -------
    float
        The magnification used.

    Raises
    ------
    SimError
        An unsupported format, no ffmpeg for an MP4, or a write that fails.
    """
    import matplotlib
    from matplotlib import animation

    out = Path(out)
    check_output(out)
    if view != AUTO and view not in VIEWS:
        raise SimError(f"view `{view}`: expected one of {AUTO}, {', '.join(VIEWS)}")
    if view == AUTO:
        view = plane_view(motion.rigid, motion.deflection)
    scale = auto_scale(motion.rigid, motion.deflection) if scale is None else float(scale)
    fig, update, _ = frame_figure(motion, scale, view)
    # The writers (Pillow, an ffmpeg process) open a file by name: they write into a private
    # directory of the system's temporary area, which nobody else can put a link in, and the
    # result is then copied in one step over ``out``.
    with tempfile.TemporaryDirectory(prefix="ffrsim-") as scratch:
        frames = Path(scratch) / f"animation{out.suffix.lower()}"
        try:
            if out.suffix.lower() == ".mp4":
                with matplotlib.rc_context({"animation.ffmpeg_path": _ffmpeg_path()}):
                    _save(fig, update, len(motion), frames, animation.FFMpegWriter(fps=fps))
            else:
                _save(fig, update, len(motion), frames, animation.PillowWriter(fps=fps))
        except OSError as exc:
            raise SimError(f"{out}: cannot write the animation ({exc.strerror or exc})") from None
        with files.replacing(out, "the animation") as handle, open(frames, "rb") as source:
            shutil.copyfileobj(source, handle)
    return scale


def _save(fig, update, n, path, writer):
    """Draw the ``n`` frames through ``update`` into ``path`` with ``writer``."""
    with writer.saving(fig, str(path), dpi=DPI):
        for k in range(n):
            update(k)
            writer.grab_frame()


def default_output(path, motion):
    """``<results stem>_<group>[_mode<N>].gif`` next to the result file ``path``."""
    path = Path(path)
    suffix = f"_mode{motion.mode}" if motion.mode is not None else ""
    return path.with_name(f"{path.stem}_{motion.group}{suffix}.gif")
