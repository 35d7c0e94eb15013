"""Figures of result files: deviation, frequencies vs time, frequency maps, mode frequencies,
driving forces and joint forces of inverse dynamics.

Each ``plot_*`` function draws on a given Axes and returns it, so panels can be combined;
`plot_result` builds one figure with a panel for everything it recognises in a file.
"""

import contextlib
import textwrap
import warnings
from pathlib import Path

import matplotlib

# Files only: the CLI must work on machines without a display.
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from sim.app import files, servo_plots  # noqa: E402
from sim.errors import SimError  # noqa: E402
from sim.app.animate import auto_scale, draw_robot, limits, motion_view, plane_view, setup_axes  # noqa: E402
from sim.app.results import along, lazy_result, stored_overrides, strided  # noqa: E402
from sim.app.selfcheck import at_roundoff  # noqa: E402
from sim.app.units import readable  # noqa: E402


def _units_text(units):
    """``"m"`` or ``"m, rad"`` from a unit string or a per-column list."""
    if isinstance(units, str):
        return units
    return ", ".join(dict.fromkeys(units))


def plot_deviation(ax, time, deviation, names, units=None):
    """End-effector deviation (flexible − rigid) vs time, one line per coordinate, in readable
    units (:func:`readable`: µm, mm, µrad, mrad from the data); rotations on a second y axis
    (dashed) when translations are drawn too.

    Parameters
    ----------
    ax : matplotlib.axes.Axes
    time : ndarray, shape (n,)
        s
    deviation : ndarray, shape (n, d)
        m for translations, rad for rotations.
    names : sequence of str, length d
    units : str or sequence of str, optional
        SI units per coordinate (``"m"``, ``"rad"``).

    Returns
    -------
    matplotlib.axes.Axes
        ``ax`` (the rotations' axis, if any, is ``ax.right``).
    """
    deviation = np.asarray(deviation).reshape(len(time), -1)
    unit_list = [units] * deviation.shape[1] if isinstance(units, str) or units is None else list(units)
    kinds = list(dict.fromkeys(unit_list))
    axes = {kinds[0]: ax}
    if len(kinds) > 1:
        ax.right = axes[kinds[1]] = ax.twinx()
    lines = []
    for kind, target in axes.items():
        columns = [i for i, u in enumerate(unit_list) if u == kind]
        factor, shown = readable(deviation[:, columns], kind) if kind else (1.0, "")
        for i in columns:
            label = f"{names[i]} [{shown}]" if shown else names[i]
            if dense(deviation[:, i]):
                t, low, high = envelope(time, deviation[:, i] / factor)
                lines.append(target.fill_between(t, low, high, color=f"C{i}", alpha=0.35, lw=0,
                                                 label=label + " (envelope)"))
            else:
                lines += target.plot(time, deviation[:, i] / factor, linestyle="-" if target is ax else "--",
                                     color=f"C{i}", label=label)
        target.set_ylabel(f"deviation [{shown}]" if shown else "deviation")
    ax.set_xlabel("time [s]")
    ax.legend(lines, [line.get_label() for line in lines], loc="best", fontsize="small")
    ax.grid(True, alpha=0.3)
    return ax


def plot_frequencies(ax, time, freqs):
    """Natural frequencies vs time, one line per tracked mode.

    Parameters
    ----------
    ax : matplotlib.axes.Axes
    time : ndarray, shape (m,)
        s
    freqs : ndarray, shape (m, k)
        Hz

    Returns
    -------
    matplotlib.axes.Axes
    """
    freqs = np.asarray(freqs).reshape(len(time), -1)
    for index, column in enumerate(freqs.T, start=1):
        ax.plot(time, column, label=f"mode {index}")
    ax.set_xlabel("time [s]")
    ax.set_ylabel("frequency [Hz]")
    ax.legend(loc="best", fontsize="small")
    ax.grid(True, alpha=0.3)
    return ax


def plot_frequency_map(ax, x, y, f, xlabel="x [m]", ylabel="y [m]", path=None, equal=True, label="frequency [Hz]"):
    """Colour map of a frequency (or another quantity: ``label``) over a 2-D grid, with labelled
    contours.

    Parameters
    ----------
    ax : matplotlib.axes.Axes
    x : ndarray, shape (n_x,)
    y : ndarray, shape (n_y,)
    f : ndarray, shape (n_x, n_y)
        Hz, ``f[i, j]`` at ``(x[i], y[j])``.
    xlabel, ylabel : str
        Axis labels with units.
    path : ndarray, shape (m, 2), optional
        A trajectory drawn over the map (the end effector's, in the grid's coordinates).
    equal : bool
        Draw to scale (the same length per unit on both axes: two coordinates in metres).
    label : str
        The colour bar's label: the quantity ``f`` and its unit.

    Returns
    -------
    matplotlib.axes.Axes
    """
    from matplotlib.ticker import MaxNLocator

    f = np.asarray(f, dtype=float).T
    mesh = ax.pcolormesh(x, y, f, shading="auto")
    # The colour bar beside the axes' own box: taken from the panel (colorbar(ax=...)), it
    # would stay at the panel's edge while a map drawn to scale shrinks away from it.
    ax.figure.colorbar(mesh, cax=ax.inset_axes([1.04, 0.0, 0.04, 1.0]), label=label)
    for axis in (ax.xaxis, ax.yaxis):
        axis.set_major_locator(MaxNLocator(4))      # labels such as -0.025 do not run together
    if np.isfinite(f).sum() > 3 and np.nanmax(f) > np.nanmin(f):
        lines = ax.contour(x, y, f, levels=8, colors="k", linewidths=0.6)
        ax.clabel(lines, fontsize="x-small", fmt="%.4g")
    if path is not None and len(path):
        ax.plot(path[:, 0], path[:, 1], "w-", lw=2.0)
        ax.plot(path[:, 0], path[:, 1], "r-", lw=1.0, label="trajectory")
        ax.legend(loc="upper right", fontsize="small")
    if equal:
        ax.set_aspect("equal", adjustable="box")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    return ax


def plot_mode_frequencies(ax, f, reference=None):
    """Bar chart of natural frequencies by mode number, with published values over it.

    Parameters
    ----------
    ax : matplotlib.axes.Axes
    f : ndarray, shape (k,)
        Hz
    reference : (modes, values, label), optional
        Published frequencies [Hz] of the computed modes numbered ``modes`` (1-based), drawn
        as markers, and their legend.

    Returns
    -------
    matplotlib.axes.Axes
    """
    f = np.asarray(f).ravel()
    modes = np.arange(1, f.size + 1)
    bars = ax.bar(modes, f, label="computed")
    ax.bar_label(bars, fmt="%.4g", fontsize="small")
    ax.set_ylim(0, 1.12 * f.max(initial=0) if f.size and f.max() > 0 else None)     # room for the labels
    if reference is not None:
        at, values = np.asarray(reference[0], dtype=int), np.asarray(reference[1], dtype=float)
        shown = at <= f.size
        ax.plot(at[shown], values[shown], "_", color="C3", markersize=30, markeredgewidth=2.5,
                label=reference[2])
        ax.set_ylim(0, 1.3 * max(f.max(initial=0), values.max(initial=0)))
        ax.legend(loc="upper left", fontsize="small", markerscale=0.5)
    ax.set_xticks(modes)
    ax.set_xlabel("mode")
    ax.set_ylabel("frequency [Hz]")
    return ax


def _nice(x):
    """The largest of 1, 2, 5 x 10^n not above ``x`` (a readable magnification)."""
    e = 10.0 ** np.floor(np.log10(x))
    return max(m * e for m in (1, 2, 5) if m * e <= x)


def plot_path(ax, pose_rigid, pose, names, units=("m", "m")):
    """End-effector path of the rigid and of the flexible robot in its first two coordinates,
    the deviation magnified to about 5 % of the path's size.

    Parameters
    ----------
    ax : matplotlib.axes.Axes
    pose_rigid, pose : ndarray, shape (n, d)
        m (and rad); only the first two columns are drawn.
    names : sequence of str
    units : str or sequence of str
        Units of the coordinates (of the first two at least): drawn to scale where they agree
        (two lengths, or two angles such as a tilting head's ``rx``, ``ry``).

    Returns
    -------
    matplotlib.axes.Axes
    """
    rigid, flexible = np.asarray(pose_rigid)[:, :2], np.asarray(pose)[:, :2]
    deviation = flexible - rigid
    size = np.ptp(rigid, axis=0).max()
    peak = np.abs(deviation).max()
    scale = _nice(0.05 * size / peak) if peak > 0 and size > 0 else 1.0
    ax.plot(rigid[:, 0], rigid[:, 1], "k-", lw=1.0, label="rigid")
    ax.plot(*(rigid + scale * deviation).T, lw=1.0, label=f"flexible (deviation x{scale:g})")
    units = [units] * 2 if isinstance(units, str) else list(units)
    ax.set_xlabel(f"{names[0]} [{units[0]}]")
    ax.set_ylabel(f"{names[1]} [{units[1]}]")
    if units[0] == units[1]:
        ax.set_aspect("equal", adjustable="datalim")
    ax.legend(fontsize=8)
    ax.grid(True, alpha=0.3)
    return ax


def plot_mode_shape(ax, points, segments, displacement, scale=None):
    """A mode shape drawn on the robot: undeformed (grey) and displaced, magnified ``scale``.

    On 3D axes (``projection="3d"``), seen along the world axis it moves least along
    (:func:`sim.app.animate.motion_view`); on 2D axes, projected on the plane of the robot's two
    largest world extents, or on the plane of its largest extent and of the motion when the
    mode moves mostly out of that plane.

    Parameters
    ----------
    ax : matplotlib.axes.Axes or mpl_toolkits.mplot3d.axes3d.Axes3D
    points : ndarray, shape (n_p, 3)
        [m]
    segments : ndarray of int, shape (n_s, 2)
    displacement : ndarray, shape (n_p, 3)
        Point displacements in the mode (any scale).
    scale : float, optional
        Magnification (default :func:`sim.app.animate.auto_scale`: the largest displacement
        drawn at a tenth of the robot's size).

    Returns
    -------
    matplotlib.axes.Axes
    """
    points, displacement = np.asarray(points), np.asarray(displacement)
    segments = np.asarray(segments, dtype=int).reshape(-1, 2)
    scale = auto_scale(points, displacement) if scale is None else scale
    moved = points + scale * displacement
    label = "mode shape"
    if ax.name == "3d":
        setup_axes(ax, *limits(points, moved), view=motion_view(displacement))
        draw_robot(ax, points, moved, segments, label=label, rigid_label="undeformed")
        # No legend over the drawing (the panel's title says grey is the undeformed robot);
        # the box drawn larger in its panel (a 3D box leaves a wide margin).
        ax.set_box_aspect(None, zoom=1.2)
        return ax
    extent = np.ptp(points, axis=0)
    i, j = np.sort(np.argsort(extent)[-2:])
    motion = np.sqrt(np.sum(displacement**2, axis=0))          # per world axis
    if motion[[i, j]].sum() < 0.3 * motion.sum():
        # The mode moves out of the robot's main plane: show that motion instead.
        i, j = np.sort([int(np.argmax(extent)), int(np.argmax(motion))])
    for n, (a, b) in enumerate(segments):
        ax.plot(points[[a, b], i], points[[a, b], j], color="0.75", lw=1.0, label=None if n else "undeformed")
        ax.plot(moved[[a, b], i], moved[[a, b], j], color="C0", lw=1.5, label=None if n else label)
    axis = "xyz"
    ax.set_xlabel(f"{axis[i]} [m]")
    ax.set_ylabel(f"{axis[j]} [m]")
    ax.set_aspect("equal", adjustable="datalim")
    ax.legend(fontsize=7)
    ax.grid(True, alpha=0.3)
    return ax


def plot_sensor(ax, time, values, name, units, reference=None):
    """A model's sensor (e.g. a rod's mid-span deflection) vs time, in readable units (mm, µm,
    mrad from the data), with published values over it.

    Parameters
    ----------
    ax : matplotlib.axes.Axes
    time : ndarray, shape (n,)
        s
    values : ndarray, shape (n,)
    name, units : str
    reference : (times, values, label), optional
        Published values [units] at times [s], drawn as markers, and their legend.

    Returns
    -------
    matplotlib.axes.Axes
    """
    factor, shown = readable(values, units)
    if dense(values):
        ax.fill_between(*envelope(time, np.asarray(values) / factor), color="C0", alpha=0.35, lw=0,
                        label="computed (envelope)")
    else:
        ax.plot(time, np.asarray(values) / factor, lw=1.2, label="computed")
    if reference is not None:
        ax.plot(reference[0], np.asarray(reference[1]) / factor, "x", color="C3", markersize=9,
                markeredgewidth=2, label=reference[2])
        ax.legend(loc="best", fontsize="small")
    ax.set_xlabel("time [s]")
    ax.set_ylabel(f"{name.replace('_', ' ')} [{shown}]" if shown else name.replace("_", " "))
    ax.grid(True, alpha=0.3)
    return ax


def plot_actuator_forces(ax, time, forces, names, units=None):
    """Driving moments (or forces) vs time, one line per actuator (paper 003 Figs. 12-14).

    Parameters
    ----------
    ax : matplotlib.axes.Axes
    time : ndarray, shape (n,)
        s
    forces : ndarray, shape (n, n_a)
        N m for revolute drives, N for sliding drives.
    names : sequence of str, length n_a
    units : str or sequence of str, optional
        Units per actuator.

    Returns
    -------
    matplotlib.axes.Axes
    """
    forces = np.asarray(forces).reshape(len(time), -1)
    unit_list = [units] * forces.shape[1] if isinstance(units, str) or units is None else list(units)
    for column, name, unit in zip(forces.T, names, unit_list):
        ax.plot(time, column, label=f"{name} [{unit}]" if unit else name)
    ax.set_xlabel("time [s]")
    ax.set_ylabel(f"driving force [{_units_text(units)}]" if units else "driving force")
    ax.legend(loc="best", fontsize="small")
    ax.grid(True, alpha=0.3)
    return ax


def plot_joint_forces(ax, time, reactions, names):
    """Resultant joint reaction forces |F| vs time, one line per joint (paper 003 Figs. 15-17).

    Parameters
    ----------
    ax : matplotlib.axes.Axes
    time : ndarray, shape (n,)
        s
    reactions : sequence of ndarray, each shape (n, 6)
        Force [N] then moment [N m] of each joint.
    names : sequence of str
        Joint names, one per entry of `reactions`.

    Returns
    -------
    matplotlib.axes.Axes
    """
    # Joints named <joint>_<leg> (A_1, B_1, ..., A_2, ...): one colour per joint, one line style
    # per leg, a legend of the joints and one of the legs; other names: a colour each.
    parts = [name.rsplit("_", 1) for name in names]
    legged = all(len(p) == 2 and p[1].isdigit() for p in parts) and len({p[1] for p in parts}) > 1
    joints = list(dict.fromkeys(p[0] for p in parts)) if legged else list(names)
    legs = sorted({int(p[1]) for p in parts}) if legged else []
    styles = ("-", "--", ":", "-.")
    for index, (wrench, name) in enumerate(zip(reactions, names)):
        joint = parts[index][0] if legged else name
        style = styles[legs.index(int(parts[index][1])) % 4] if legged else styles[(index // 10) % 3]
        ax.plot(time, np.linalg.norm(np.asarray(wrench)[:, :3], axis=1), color=f"C{joints.index(joint) % 10}",
                linestyle=style, label=None if legged else name)
    ax.set_xlabel("time [s]")
    ax.set_ylabel("resultant joint force [N]")
    ax.grid(True, alpha=0.3)
    # Legends beside the axes: over the curves they hide them.
    if legged:
        from matplotlib.lines import Line2D
        first = ax.legend([Line2D([], [], color=f"C{k % 10}") for k in range(len(joints))], joints,
                          title="joint", loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="x-small",
                          title_fontsize="x-small")
        ax.add_artist(first)
        ax.legend([Line2D([], [], color="0.3", linestyle=styles[k % 4]) for k in range(len(legs))],
                  [f"leg {leg}" for leg in legs], loc="lower left", bbox_to_anchor=(1.01, 0.0),
                  fontsize="x-small")
    else:
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="x-small",
                  ncol=max(1, len(names) // 12))
    return ax


def plot_frf(ax, frequency, H, labels, damped=None, phase_ax=None):
    """Bode-style plot: |H| (log scale) on ``ax``, phase on ``phase_ax`` if given.

    Parameters
    ----------
    ax : matplotlib.axes.Axes
    frequency : ndarray, shape (n_f,)
        Hz
    H : ndarray, complex, shape (n_f, n_out, n_in)
    labels : list of list of str
        ``labels[i][j]``: name of the output/input pair (with units).
    damped : ndarray, optional
        Damped natural frequencies [Hz], drawn as vertical lines.
    phase_ax : matplotlib.axes.Axes, optional

    Returns
    -------
    matplotlib.axes.Axes
    """
    H = np.asarray(H)
    zero = frf_roundoff(H)
    for i in range(H.shape[1]):
        for j in range(H.shape[2]):
            if zero[i, j]:
                continue
            ax.semilogy(frequency, np.abs(H[:, i, j]), label=labels[i][j])
            if phase_ax is not None:
                phase_ax.plot(frequency, np.degrees(np.angle(H[:, i, j])), label=labels[i][j])
    if zero.any():
        names = "; ".join(f"{labels[i][j]} (peak {np.abs(H[:, i, j]).max():.1e})" for i, j in zip(*np.nonzero(zero)))
        ax.text(0.01, 0.98, textwrap.fill(f"zero to round-off, not drawn: {names}", 120), transform=ax.transAxes,
                va="top", fontsize="x-small", color="0.3")
    for target in [ax] + ([phase_ax] if phase_ax is not None else []):
        for f in () if damped is None else np.asarray(damped).ravel():
            if frequency[0] <= f <= frequency[-1]:
                target.axvline(f, color="0.6", lw=0.6, ls=":")
        target.set_xlabel("frequency [Hz]")
        target.grid(True, alpha=0.3)
        target.legend(loc="best", fontsize="small")
    ax.set_ylabel("|H|")
    if phase_ax is not None:
        phase_ax.set_ylabel("phase [deg]")
    return ax


def frf_roundoff(H):
    """Which pairs of a receptance ``H`` (n_f, n_out, n_in) vanish to round-off (a symmetric
    robot's cross terms, 1e-19 beside 1e-7): peak |H| below :data:`sim.app.selfcheck.ROUNDOFF_RTOL` of the
    largest pair's.  Pairs in m/N, rad/N, m/(N m) and rad/(N m) are compared as they are, a
    rotation as the motion it gives one metre away: a robot's size (0.1 to 10 m) does not
    matter against that threshold.

    Returns
    -------
    ndarray of bool, shape (n_out, n_in)
    """
    peak = np.abs(np.asarray(H)).max(axis=0, initial=0.0)
    return at_roundoff(peak, peak.max(initial=0.0))


def _frf_parts(group):
    """Frequency, complex H and pair labels of an `frf` group."""
    H = np.asarray(group["H_real"]["data"]) + 1j * np.asarray(group["H_imag"]["data"])
    units = group["H_real"]["attrs"].get("units")
    ins, outs = group["attrs"].get("inputs", []), group["attrs"].get("outputs", [])
    flat = [units] * H.shape[1] * H.shape[2] if isinstance(units, str) else list(units)
    labels = [[f"{_channel(outs[i])} per {_channel(ins[j])} [{flat[i * H.shape[2] + j]}]"
               for j in range(H.shape[2])] for i in range(H.shape[1])]
    return group["frequency"]["data"], H, labels


def _channel(spec):
    """An FRF input or output in words: ``force:E:z`` as ``z force at E``, ``pose:rz`` as
    ``end-effector rz``, ``actuator:a1`` as ``actuator a1``."""
    parts = str(spec).split(":")
    if len(parts) == 3:
        return f"{parts[2]} {parts[0]} at {parts[1]}"
    if len(parts) == 2 and parts[0] in ("pose", "actuator"):
        return f"end-effector {parts[1]}" if parts[0] == "pose" else f"actuator {parts[1]}"
    return str(spec)


def _draw_frf(ax, group, phase=False):
    """Magnitude (or, with ``phase``, phase) panel of an `frf` group."""
    f, H, labels = _frf_parts(group)
    damped = group["damped_frequencies"]["data"] if "damped_frequencies" in group else None
    if f.size > 2 and f[0] > 0 and np.allclose(np.diff(np.log(f)), np.log(f[1] / f[0]), rtol=1e-6):
        ax.set_xscale("log")        # frequencies spaced evenly on a log scale (spacing = "log")
    if phase:
        zero = frf_roundoff(H)      # the phase of round-off is noise
        for i, j in zip(*np.nonzero(~zero)):
            ax.plot(f, np.degrees(np.angle(H[:, i, j])), label=labels[i][j])
        ax.set_xlabel("frequency [Hz]")
        ax.set_ylabel("phase [deg]")
        ax.grid(True, alpha=0.3)
        ax.legend(loc="best", fontsize="small")
        return ax
    plot_frf(ax, f, H, labels, damped)
    # files written before the [damping] table kept eta as a group attribute
    eta = float(group["damping"]["eta"]["data"]) if "damping" in group else group["attrs"].get("eta")
    if eta:
        ax.text(0.01, 0.02, f"structural damping eta = {eta:g}; dotted: damped natural frequencies",
                transform=ax.transAxes, fontsize="small")
    return ax


def plot_identification(ax, group):
    """Measured versus computed frequencies of every configuration of an `identification` group."""
    names = [k for k in group if k.startswith("configuration_") and "measured_frequencies" in group[k]]
    width = 0.8 / max(2 * len(names), 1)
    k = 0
    for name in sorted(names):
        c = group[name]
        meas, comp = np.asarray(c["measured_frequencies"]["data"]), np.asarray(c["frequencies"]["data"])
        modes = np.arange(1, meas.size + 1)
        tag = c["frequencies"]["attrs"].get("description", "")
        role = "predicted" if "predicted" in tag else "fitted"
        ax.bar(modes + (k - len(names) + 0.5) * width, meas, width, label=f"{name} measured", alpha=0.6)
        bars = ax.bar(modes + (k + 1 - len(names) + 0.5) * width, comp, width, label=f"{name} {role}")
        errors = 100 * (comp - meas) / meas
        paired = np.asarray(c["modes"]["data"]) if "modes" in c else modes
        # The computed mode each measured one is paired with, and for tracked pairs (or pairs
        # with measured shapes) their MAC.
        macs = np.asarray(c["mac"]["data"]) if "mac" in c else None
        # A tracked family that split from a repeated root: the members it chose among.
        families = np.asarray(c["families"]["data"]) if "families" in c else None

        def among(i):
            members = [] if families is None else [m for m in families[i] if m > 0]
            return f" of {', '.join(map(str, members))}" if len(members) > 1 else ""
        labels = [f"{e:+.1f}%\nmode {m}{among(i)}" + (f"\nMAC {macs[i]:.2f}" if macs is not None else "")
                  for i, (e, m) in enumerate(zip(errors, paired))]
        ax.bar_label(bars, labels=labels, fontsize="xx-small")
        k += 2
    ax.margins(y=0.2)
    ax.set_xlabel("measured mode")
    ax.set_ylabel("frequency [Hz]")
    ax.legend(loc="best", fontsize="small")
    return ax


def _path_shows(group):
    """Whether the path panel says something: a deviation small against the path, which the
    panel magnifies tenfold or more (:func:`plot_path`) to show how the path is distorted.  A
    larger one reads better against time: a spinning 10 m beam whose tip lags by 0.4 m draws
    two indistinguishable circles."""
    rigid = np.asarray(group["pose_rigid"]["data"])[:, :2]
    deviation = np.asarray(group["pose"]["data"])[:, :2] - rigid
    size = np.ptp(rigid, axis=0).max() if len(rigid) else 0.0
    return size > 0 and np.abs(deviation).max() < 0.005 * size


def references(tree):
    """The published values the run's model declares (:class:`sim.model.types.Reference` as
    dicts), from the result's root attribute ``references``."""
    import json
    try:
        found = json.loads(tree["attrs"].get("references", "[]"))
    except (TypeError, ValueError, RecursionError):
        return []
    return [r for r in found if isinstance(r, dict) and {"quantity", "values", "at", "source"} <= set(r)]


def _label(r):
    return r["source"] + (f", {r['condition']}" if r.get("condition") else "")


def _mode_reference(tree, group):
    """``(modes, values, label)`` of a frequency reference declared at this group's pose, or None."""
    pose = np.asarray(group["pose"]["data"], dtype=float).ravel() if "pose" in group else None
    for r in references(tree):
        if r["quantity"] == "modes.frequencies" and (
                not r["at"] or (pose is not None and pose.shape == (len(r["at"]),)
                                and np.allclose(pose, r["at"], rtol=0, atol=1e-9))):
            return r.get("modes") or range(1, len(r["values"]) + 1), r["values"], _label(r)
    return None


def _sensor_reference(tree, sensor, time):
    """``(times, values, label)`` of a sensor's reference at times this run covers, or None."""
    time = np.asarray(time, dtype=float)
    for r in references(tree):
        if r["quantity"] == f"sensors.{sensor}" and time.size:
            at, values = np.asarray(r["at"], dtype=float), np.asarray(r["values"], dtype=float)
            inside = (at >= time[0] - 1e-12) & (at <= time[-1] + 1e-12)
            if inside.any():
                return at[inside], values[inside], _label(r)
    return None


def _panels(tree):
    """(title, draw) pairs for everything plottable in a result tree; the panels of an
    incomplete analysis say so in their title."""
    panels = []
    both = all(g in tree and "deviation" in tree[g] and "time" in tree[g] for g in ("transient", "ked"))
    # The end-effector path once: the transient's where it shows something, else KED's.
    path_group = next((g for g in ("transient", "ked") if g in tree and "pose" in tree[g] and "pose_rigid" in tree[g]
                       and np.ndim(tree[g]["pose"]["data"]) == 2 and np.shape(tree[g]["pose"]["data"])[1] >= 2
                       and _path_shows(tree[g])), None)
    for name, group in tree.items():
        if name == "attrs":
            continue
        start = len(panels)
        if "deviation" in group and "time" in group and name == "transient" and both:
            # One panel per coordinate with the two analyses over each other: how far KED's
            # frozen modes follow the full model is what a reader looks for.
            names = group["attrs"].get("pose_names") or [f"q{i + 1}" for i in range(_deviation(group).shape[1])]
            for i, coordinate in enumerate(names):
                panels.append((f"end-effector deviation {coordinate}: transient and KED",
                               lambda ax, i=i, c=coordinate: _draw_runs_deviation(ax, [tree], [""], i, c)))
            panels.append(("deviation: transient − KED (what KED's frozen modes miss)",
                           lambda ax: _draw_difference(ax, tree)))
        elif "deviation" in group and "time" in group and not (name == "ked" and both):
            panels.append((f"{name}: end-effector deviation (flexible − rigid)",
                           lambda ax, g=group: _draw_deviation(ax, g)))
        if "deviation" in group and "time" in group and (name == "transient" or not both):
            window = worst_window(group)
            if window is not None:
                i, coordinate = _worst_coordinate(group)
                panels.append((f"the worst second of {coordinate}: {window[0]:.2f} to {window[1]:.2f} s"
                               + (", transient and KED" if both else f" ({name})"),
                               lambda ax, i=i, c=coordinate, w=window, g=name:
                               _draw_runs_deviation(ax, [tree if both else {g: tree[g]}], [""], i, c, window=w)))
        if "settle_time" in group and "time" in group and not (name == "ked" and "settle_time" in tree.get("transient", {})):
            panels.append(("settling: dynamic deviation, the largest still to come in each dwell (bold), tolerance, "
                           "settle instants (dots)",
                           lambda ax: plot_settling(ax, [tree], [""])))
        if name == path_group:
            panels.append((f"{name}: end-effector path, rigid and flexible", lambda ax, g=group:
                           plot_path(ax, g["pose_rigid"]["data"], g["pose"]["data"],
                                     g["attrs"].get("pose_names", ("x", "y")),
                                     g["pose_rigid"]["attrs"].get("units", "m"))))
        if name == "modes" and "skeleton" in group:
            skeleton = group["skeleton"]
            points, shapes = skeleton["points"]["data"], skeleton["mode_displacements"]["data"]
            for k in range(min(4, shapes.shape[0])):
                scale = auto_scale(points, shapes[k])

                def draw(ax, points=points, segments=skeleton["segments"]["data"], shape=shapes[k], scale=scale):
                    return plot_mode_shape(ax, points, segments, shape, scale)
                draw.projection = mode_projection(points, shapes[k])
                panels.append((f"modes: mode {k + 1}, {group['frequencies']['data'][k]:.2f} Hz: "
                               f"{_drawn_motion(group, points, scale * np.asarray(shapes[k]))} "
                               f"(grey: undeformed)", draw))
        if "sensors" in group and "time" in group:
            for sensor, data in group["sensors"].items():
                if sensor == "attrs" or data["attrs"].get("role") == "dimension":
                    continue
                if np.ndim(data["data"]) == 2:
                    marker, _, kind = sensor.rpartition("_")
                    panels.append((f"{name}: motion of marker {marker}, {kind}",
                                   lambda ax, g=group, d=data, s=sensor:
                                   plot_components(ax, g["time"]["data"], along(d, g["time"]), s.rsplit("_", 1)[-1],
                                                   ["x", "y", "z"], d["attrs"].get("units", ""))))
                elif np.ndim(data["data"]) == 1:
                    ref = _sensor_reference(tree, sensor, group["time"]["data"])
                    panels.append((f"{name}: sensor {sensor}", lambda ax, g=group, d=data, s=sensor, r=ref:
                                   plot_sensor(ax, g["time"]["data"], along(d, g["time"]), s,
                                               d["attrs"].get("units", ""), r)))
        # One frequency panel along the motion: the tracked modes of [frequencies] where the run
        # has them (KED's frozen structures list theirs in ascending order, another numbering).
        tracked = "frequencies" in tree and "frequency_time" in tree["frequencies"]
        if "frequencies" in group and "frequency_time" in group and (name == "frequencies" or not tracked):
            panels.append((f"{name}: natural frequencies" + (" (tracked by MAC)" if name == "frequencies" else ""),
                           lambda ax, g=group:
                           plot_frequencies(ax, g["frequency_time"]["data"],
                                            along(g["frequencies"], g["frequency_time"]))))
        elif name == "sweep" and "frequencies" in group \
                and np.ndim(group["frequencies"]["data"]) in (2, 3):
            panels.append(("sweep: lowest natural frequency over the workspace", lambda ax, g=group:
                           _draw_map(ax, g, tree)))
        elif name == "sweep" and "largest_translational_compliance" in group:
            panels.append(("sweep: largest translational compliance",
                           lambda ax, g=group: _draw_map(ax, g, tree, "largest_translational_compliance")))
        if name == "sweep" and group["attrs"].get("kind") == "parameters":
            panels.append((f"sweep: {group['attrs'].get('analysis')} per case",
                           lambda ax, g=group: _draw_parameter_sweep(ax, g)))
        elif name == "modes" and "frequencies" in group:
            panels.append(("modes: natural frequencies", lambda ax, g=group:
                           plot_mode_frequencies(ax, g["frequencies"]["data"], _mode_reference(tree, g))))
        if "stress" in group and "peak" in group["stress"] and not (
                name == "ked" and "stress" in tree.get("transient", {})):      # the transient's once
            if len(group["stress"]["time"]["data"]) > 1:
                panels.append((f"{name}: peak von Mises stress per flexible body",
                               lambda ax, g=group: plot_peak_stress(ax, g)))
            panels.append((f"{name}: {_most_loaded(group)[0]} (most loaded), section loads at its worst instant",
                           lambda ax, g=group: plot_moment_diagram(ax, g)))
        if name == "frf" and "H_real" in group and "frequency" in group:
            panels.append(("frf: receptance magnitude", lambda ax, g=group: _draw_frf(ax, g)))
            panels.append(("frf: phase", lambda ax, g=group: _draw_frf(ax, g, phase=True)))
        if name == "state_space" and "magnitude" in group and "frequency" in group:
            panels.append(("state_space: frequency response (Bode)", lambda ax, g=group: servo_plots.draw_bode(ax, g)))
            panels.append(("state_space: phase", lambda ax, g=group: servo_plots.draw_bode(ax, g, phase=True)))
        if name == "frequencies" and "servo_frequencies" in group:
            panels.append(("frequencies: servo drives beside locked", lambda ax, g=group:
                           servo_plots.draw_servo_frequencies(ax, g)))
        if name in ("transient", "ked") and "deviation_servo" in group and not (
                name == "ked" and "deviation_servo" in tree.get("transient", {})):     # the transient's once
            panels.append((f"{name}: dynamic deviation, servo and structure shares", lambda ax, g=group:
                           servo_plots.draw_split(ax, g)))
        if name == "identification" and "parameters" in group:
            panels.append(("identification: measured vs computed frequencies", lambda ax, g=group:
                           plot_identification(ax, g)))
        if name == "design" and "energy_ratios_kinetic" in group:
            panels.append(("design: energy ratios per substructure (kinetic | elastic)",
                           lambda ax, g=group: _draw_energy_ratios(ax, g)))
            if "sensitivities" in group:
                panels.append(("design: frequency sensitivities", lambda ax, g=group:
                               _draw_sensitivities(ax, g)))
        if name == "transient" and "velocity" in group and "acceleration" in group:
            names = group["attrs"].get("pose_names") or [f"q{i + 1}" for i in range(np.shape(group["velocity"]["data"])[1])]
            for key in ("velocity", "acceleration"):
                panels.append((f"transient: motion of the end effector, {key}", lambda ax, g=group, k=key, n=names:
                               plot_components(ax, g["time"]["data"], along(g[k], g["time"]), k, n,
                                               g[k]["attrs"].get("units", ""))))
        if name == "transient" and "actuator_forces" in group:
            panels.append(("transient: driving forces of the flexible robot" + (
                           " (dashed: the rigid robot's, inverse dynamics)" if "actuator_forces" in
                           tree.get("inverse_dynamics", {}) else ""), lambda ax, g=group: _draw_actuators(ax, g, tree)))
        if name == "inverse_dynamics" and "actuator_forces" in group \
                and "actuator_forces" not in tree.get("transient", {}):     # else dashed in the transient's
            panels.append(("inverse_dynamics: driving forces", lambda ax, g=group:
                           _draw_actuators(ax, g)))
            if "joint_reactions" in group:
                panels.append(("inverse_dynamics: resultant joint forces", lambda ax, g=group:
                               _draw_joint_forces(ax, g)))
        if group["attrs"].get("status") == "incomplete":
            mark = f" — INCOMPLETE ({group['attrs'].get('message', '')})"
            panels[start:] = [(title + mark, draw) for title, draw in panels[start:]]
    return panels


# Spans of an envelope view: each holds a period or more of the vibration that makes a series
# dense (:data:`DENSE_SPANS`), so the envelope's edges are smooth.
ENVELOPE_BINS = 100
# A series going back and forth within each of this many spans fills its panel as a solid band
# when drawn as a line (a period in 2-3 pixels, with the line's width).
DENSE_SPANS = 120
# Runs longer than this [s] get a panel zoomed on their worst second.
ZOOM_AFTER = 2.0


def dense(values, bins=DENSE_SPANS, share=0.05):
    """Whether ``values`` (n,), drawn as a line ``bins`` pixels wide, would be a solid band: in
    half the pixel columns or more the line goes back and forth over ``share`` of the whole
    range (a 65 Hz vibration over 5 s: a period per column), beyond the climb or fall of the
    column (a steep but smooth curve is no band)."""
    values = np.asarray(values, dtype=float)
    if values.size < 4 * bins or not np.isfinite(values).all():
        return False
    spread = values.max() - values.min()
    chunks = np.array_split(values, bins)
    back_and_forth = np.array([np.ptp(c) - abs(c[-1] - c[0]) for c in chunks])
    return bool(spread > 0 and np.median(back_and_forth) > share * spread)


def envelope(time, values, bins=ENVELOPE_BINS):
    """The lowest and highest of ``values`` (n,) in each of ``bins`` equal spans of ``time`` (n,):
    ``(t, low, high)``, each (bins,), ``t`` the spans' middles (NaN where a span holds no sample
    or a NaN)."""
    time, values = np.asarray(time, dtype=float), np.asarray(values, dtype=float)
    edges = np.linspace(time[0], time[-1], bins + 1)
    index = np.clip(np.searchsorted(edges, time, side="right") - 1, 0, bins - 1)
    low, high = np.full(bins, np.inf), np.full(bins, -np.inf)
    np.minimum.at(low, index, values)
    np.maximum.at(high, index, values)
    empty = ~np.isfinite(low) | ~np.isfinite(high)
    low[empty] = high[empty] = np.nan
    return 0.5 * (edges[:-1] + edges[1:]), low, high


def _worst_coordinate(group):
    """``(index, name)`` of the coordinate with the largest deviation relative to the largest of
    its unit (a translation before a rotation of the same share)."""
    deviation = _deviation(group)
    names = group["attrs"].get("pose_names") or [f"q{i + 1}" for i in range(deviation.shape[1])]
    peaks = np.nan_to_num(np.nanmax(np.abs(deviation), axis=0)) if deviation.size else np.zeros(1)
    return int(np.argmax(peaks)), names[int(np.argmax(peaks))]


def worst_window(group, width=1.0):
    """``(start, end)`` [s] of the ``width``-second span around the largest deviation of
    ``group`` (of its worst coordinate, :func:`_worst_coordinate`), within the run; None for a
    run shorter than :data:`ZOOM_AFTER`."""
    time = np.asarray(group["time"]["data"], dtype=float)
    if time.size < 2 or time[-1] - time[0] <= ZOOM_AFTER:
        return None
    column = np.abs(_deviation(group)[:, _worst_coordinate(group)[0]])
    if not np.isfinite(column).any():
        return None
    at = time[int(np.nanargmax(column))]
    start = float(np.clip(at - width / 2, time[0], time[-1] - width))
    return start, start + width


def _draw_difference(ax, tree):
    """Transient minus KED per coordinate, KED's samples interpolated at the transient's."""
    transient, ked = tree["transient"], tree["ked"]
    time = np.asarray(transient["time"]["data"], dtype=float)
    mine, theirs = _deviation(transient), _deviation(ked)
    other = np.asarray(ked["time"]["data"], dtype=float)
    inside = (time >= other[0]) & (time <= other[-1])
    difference = np.column_stack([np.interp(time[inside], other, theirs[:, j]) for j in range(theirs.shape[1])])
    names = transient["attrs"].get("pose_names") or [f"q{i + 1}" for i in range(mine.shape[1])]
    return plot_deviation(ax, time[inside], mine[inside] - difference, names,
                          transient["deviation"]["attrs"].get("units"))


def _drawn_motion(group, points, drawn):
    """What a mode-shape drawing shows in physical units: ``"end effector moves 12 mm in this
    drawing"``, or the largest motion where the end effector stays still in the mode."""
    moves = np.linalg.norm(np.asarray(drawn), axis=1)
    ee = group["attrs"].get("skeleton_end_effector_point")
    largest = float(moves.max()) if moves.size else 0.0
    if ee is not None and 0 <= int(ee) < moves.size and moves[int(ee)] >= 0.1 * largest:
        what, value = "end effector moves", float(moves[int(ee)])
    else:
        what, value = "largest point motion", largest
    factor, unit = readable(value, "m")
    return f"{what} {value / factor:.3g} {unit} in this drawing"



def plot_settling(ax, trees, labels):
    """The end effector's dynamic deviation (norm of the translations, log scale, faint) of
    the point-to-point runs in ``trees``; over each dwell its largest value from each instant
    to the dwell's end (bold: the move has settled where it enters the tolerance band); the
    settle instants marked (dots on the band's edge); a single run's moves shaded.  The
    transient solid, KED dashed, one colour per run.

    Parameters
    ----------
    ax : matplotlib.axes.Axes
    trees : sequence of dict
        Result trees (:func:`sim.app.results.lazy_result`) with ``settle_time`` in their
        ``transient`` or ``ked`` group.
    labels : sequence of str
        One per tree (``""`` for a single run).

    Returns
    -------
    matplotlib.axes.Axes
    """
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    tolerance, peak = None, 0.0
    for t, label, color in zip(trees, labels, colors * len(trees)):
        for g in ("transient", "ked"):
            group = t.get(g, {})
            if "settle_time" not in group:
                continue
            time = np.asarray(group["time"]["data"])
            units = group["deviation_dynamic"]["attrs"].get("units", "m")
            units = [units] * np.shape(group["deviation_dynamic"]["data"])[1] if isinstance(units, str) else list(units)
            translation = [j for j, u in enumerate(units) if u == "m"]
            dev = np.linalg.norm(np.asarray(group["deviation_dynamic"]["data"])[:, translation], axis=1) * 1e6
            start, end = np.asarray(group["move_start"]["data"]), np.asarray(group["move_end"]["data"])
            window = np.asarray(group["attrs"]["dwell_end"], dtype=float).ravel()
            settle = np.asarray(group["settle_time"]["data"])
            tolerance = float(group["attrs"]["settling_tolerance"]) * 1e6
            if len(trees) == 1:
                color = "C0" if g == "transient" else "C3"
            style = "-" if g == "transient" else "--"
            ax.plot(time, np.maximum(dev, 1e-3 * tolerance), color=color, linestyle=style, lw=0.6, alpha=0.35)
            name = f"{label} ({g})" if label else g
            for k in np.flatnonzero(window > end):
                dwell = (time >= end[k]) & (time <= window[k])
                if dwell.sum() > 1:
                    ahead = np.maximum.accumulate(dev[dwell][::-1])[::-1]   # the largest still to come
                    ax.plot(time[dwell], ahead, color=color, linestyle=style, lw=1.6, label=name)
                    name = None
            done = np.isfinite(settle)
            ax.plot((start + settle)[done], np.full(done.sum(), tolerance), "o", color=color, ms=5)
            if len(trees) == 1 and g == "transient" or (len(trees) == 1 and "transient" not in t):
                for a, b in zip(start, end):
                    ax.axvspan(a, b, color="0.85", alpha=0.5, lw=0)
            peak = max(peak, float(np.nanmax(dev)) if dev.size else 0.0)
    if tolerance is not None:
        ax.axhspan(1e-3 * tolerance, tolerance, color="C2", alpha=0.15, label=f"tolerance {tolerance:.3g} µm")
        ax.set_yscale("log")
        ax.set_ylim(tolerance / 30, max(peak, tolerance) * 3)
    ax.set_xlabel("time [s]" + (" (grey: the moves)" if len(trees) == 1 else ""))
    ax.set_ylabel("|dynamic deviation| [µm]")
    ax.grid(True, alpha=0.3, which="both")
    ax.legend(loc="upper right", fontsize="x-small", ncol=2)
    return ax


def _draw_deviation(ax, group):
    """Deviation panel; coordinate names from the group's `pose_names` attribute if set."""
    deviation = _deviation(group)
    names = group["attrs"].get("pose_names") or [f"q{i + 1}" for i in range(deviation.shape[1])]
    return plot_deviation(ax, group["time"]["data"], deviation, names, group["deviation"]["attrs"].get("units"))


def _deviation(group):
    """The ``deviation`` of a time-domain ``group`` of a lazy tree, one row per time."""
    return np.asarray(along(group["deviation"], group["time"])).reshape(len(group["time"]["data"]), -1)


def _draw_actuators(ax, group, tree=None):
    """Driving-force panel; actuator names from the group's `actuator_names` attribute; with
    ``tree``, the rigid robot's (its ``inverse_dynamics``) dashed over them."""
    time = group["time"]["data"]
    forces = np.asarray(along(group["actuator_forces"], group["time"])).reshape(len(time), -1)
    names = group["attrs"].get("actuator_names") or [f"actuator {i + 1}" for i in range(forces.shape[1])]
    plot_actuator_forces(ax, time, forces, names, group["actuator_forces"]["attrs"].get("units"))
    rigid = (tree or {}).get("inverse_dynamics", {})
    if "actuator_forces" in rigid and rigid is not group:
        values = np.asarray(along(rigid["actuator_forces"], rigid["time"])).reshape(len(rigid["time"]["data"]), -1)
        for i in range(min(values.shape[1], forces.shape[1])):
            ax.plot(rigid["time"]["data"], values[:, i], color=f"C{i}", linestyle="--", lw=1.0,
                    label=f"{names[i]} (rigid)")
        ax.legend(fontsize="small")
    return ax


def plot_components(ax, time, values, quantity, names, units):
    """A vector over time, one line per component (a marker's velocity x, y, z; the end
    effector's acceleration per coordinate), lengths in readable units (mm, µm).

    Parameters
    ----------
    ax : matplotlib.axes.Axes
    time : ndarray, shape (n,)
        s
    values : ndarray, shape (n, k)
    quantity : str
        What is drawn (``"velocity"``).
    names : sequence of str, length k
    units : str or sequence of str
        SI units, one or one per component.

    Returns
    -------
    matplotlib.axes.Axes
    """
    values = np.asarray(values, dtype=float).reshape(len(time), -1)
    units = [units] * values.shape[1] if isinstance(units, str) else [str(u) for u in units]
    shown = {}
    for unit in dict.fromkeys(units):
        columns = [j for j, u in enumerate(units) if u == unit]
        shown[unit] = readable(values[:, columns], unit)
    for j, (name, unit) in enumerate(zip(names, units)):
        factor, text = shown[unit]
        ax.plot(time, values[:, j] / factor, color=f"C{j}", lw=1.0, label=f"{name} [{text}]")
    ax.set_xlabel("time [s]")
    ax.set_ylabel(f"{quantity} [{', '.join(dict.fromkeys(t for _, t in shown.values()))}]")
    ax.legend(fontsize="small")
    ax.grid(True, alpha=0.3)
    return ax


def _draw_joint_forces(ax, group):
    """Resultant-force panel over the joints, in the model's order (`joint_names` attribute)."""
    reactions = group["joint_reactions"]
    names = [n for n in group["attrs"].get("joint_names") or sorted(reactions) if n in reactions and n != "attrs"]
    return plot_joint_forces(ax, group["time"]["data"], [along(reactions[n], group["time"]) for n in names], names)


def _draw_energy_ratios(ax, group):
    """Stacked bars per mode: kinetic (left bar) and elastic (right bar) shares of each substructure."""
    kin = np.atleast_2d(group["energy_ratios_kinetic"]["data"])
    ela = np.atleast_2d(group["energy_ratios_elastic"]["data"])
    names = group["attrs"].get("substructures") or [f"part {i + 1}" for i in range(kin.shape[1])]
    modes = np.arange(1, kin.shape[0] + 1)
    for offset, ratios, hatch in ((-0.2, kin, None), (0.2, ela, "//")):
        bottom = np.zeros(len(modes))
        for j, name in enumerate(names):
            ax.bar(modes + offset, ratios[:, j], 0.38, bottom=bottom, color=f"C{j}", hatch=hatch,
                   label=name if hatch is None else None)
            bottom += ratios[:, j]
    ax.set_xticks(modes)
    ax.set_xlabel("mode")
    ax.set_ylabel("energy ratio")
    ax.legend(loc="best", fontsize="small")
    return ax


def _draw_sensitivities(ax, group):
    """Grouped bars per mode, one colour per parameter: the frequency change for a 10 %
    increase of the parameter, ``0.1 p d f / d p`` [Hz] (comparable across parameters of any
    unit); ``d f / d p`` itself where the parameter values are not stored."""
    S = np.atleast_2d(group["sensitivities"]["data"])
    names = group["attrs"].get("parameters") or [f"p{j + 1}" for j in range(S.shape[1])]
    values = group["attrs"].get("parameter_values")
    relative = values is not None and len(values) == S.shape[1]
    if relative:
        S = 0.1 * S * np.asarray(values, dtype=float)
    modes = np.arange(1, S.shape[0] + 1)
    width = 0.8 / S.shape[1]
    for j, name in enumerate(names):
        label = str(name).replace("_", " ") + (f" (= {float(values[j]):.4g})" if relative else "")
        ax.bar(modes - 0.4 + (j + 0.5) * width, S[:, j], width, label=label)
    ax.set_xticks(modes)
    ax.set_xlabel("mode")
    ax.set_ylabel("frequency change [Hz]\nfor +10 % of the parameter" if relative
                  else f"d f / d p [{_units_text(group['sensitivities']['attrs'].get('units', ''))}]")
    ax.legend(loc="best", fontsize="small")
    ax.grid(True, alpha=0.3)
    return ax


LINE_STYLES = ("-", "--", ":", "-.")
MARKERS = ("o", "s", "^", "v", "D", "P")


def plot_parameter_sweep(ax, x, y, xlabel, ylabel, labels=None, failed=None, series=None, series_labels=None):
    """Result columns of a parameter sweep against one parameter, failed cases marked.

    Parameters
    ----------
    ax : matplotlib.axes.Axes
    x : ndarray, shape (n,)
        The swept parameter of each case.
    y : ndarray, shape (n,) or (n, k)
        Result of each case (NaN where it failed), one line per column.
    xlabel, ylabel : str
        Axis labels with units.
    labels : sequence of str, optional
        One per column of `y`.
    failed : ndarray of bool, shape (n,), optional
        Cases drawn as red crosses on the x axis.
    series : ndarray of int, shape (n,), optional
        The cases' series (the values of the other parameters of a grid): each drawn
        separately, the columns in the same colours, the series told apart by line style
        and marker.
    series_labels : sequence of str, optional
        One per series.

    Returns
    -------
    matplotlib.axes.Axes
    """
    x = np.asarray(x)
    y = np.asarray(y, dtype=float).reshape(x.size, -1)
    series = np.zeros(x.size, dtype=int) if series is None else np.asarray(series, dtype=int)
    count = int(series.max()) + 1 if series.size else 0
    for s in range(count):
        cases = np.flatnonzero(series == s)
        cases = cases[np.argsort(x[cases], kind="stable")]
        style = dict(linestyle=LINE_STYLES[s % len(LINE_STYLES)], marker=MARKERS[s % len(MARKERS)], ms=3)
        for j in range(y.shape[1]):
            ax.plot(x[cases], y[cases, j], color=f"C{j % 10}", **style,
                    label=labels[j] if labels is not None and s == 0 else None)
        if count > 1 and series_labels is not None:
            ax.plot([], [], color="0.35", **style, label=series_labels[s])
    if failed is not None and np.any(failed):
        ax.plot(x[np.asarray(failed)], np.zeros(int(np.sum(failed))), "rx", label="failed")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if labels is not None or (failed is not None and np.any(failed)) or (count > 1 and series_labels is not None):
        ax.legend(loc="best", fontsize="small", ncol=2 if count > 1 else 1)
    ax.grid(True, alpha=0.3)
    return ax


def _draw_parameter_sweep(ax, group):
    """First numeric result of a parameter sweep against its first parameter; on a grid of
    several parameters, one series per combination of the others' values."""
    from sim.analyses.parameter_sweep import headline

    attrs = group["attrs"]
    parameter, others = attrs["parameters"][0], list(attrs["parameters"][1:])
    x = group[parameter]["data"]
    numeric = [k for k in attrs.get("results", [])
               if k in group and np.asarray(group[k]["data"]).dtype.kind == "f"]
    key = headline(numeric)
    failed = ~np.asarray(group["ok"]["data"], dtype=bool)
    series = series_labels = None
    if others:
        values = list(zip(*(np.asarray(group[o]["data"]).tolist() for o in others)))
        combos = list(dict.fromkeys(values))       # in the order of the cases
        number = {combo: k for k, combo in enumerate(combos)}
        series = np.array([number[v] for v in values])
        series_labels = [", ".join(f"{o.replace('_', ' ')} = " + (f"{v:.4g}" if isinstance(v, float) else f"{v}")
                                   for o, v in zip(others, combo)) for combo in combos]
    if key is None:
        return plot_parameter_sweep(ax, x, np.zeros(np.size(x)), parameter, "case ran",
                                    failed=failed, series=series, series_labels=series_labels)
    y = np.asarray(group[key]["data"], dtype=float).reshape(np.size(x), -1)
    analysis, _, quantity = key.partition(".")
    quantity = quantity.replace("_", " ")
    labels = [f"mode {j + 1}" for j in range(y.shape[1])] if y.shape[1] > 1 else [quantity]
    units = _units_text(group[key]["attrs"].get("units", ""))
    x_units = _units_text(group[parameter]["attrs"].get("units", ""))
    x_label = parameter.replace("_", " ") + (f" [{x_units}]" if x_units and x_units != "model units" else "")
    return plot_parameter_sweep(ax, x, y, x_label, f"{quantity} ({analysis}) [{units}]", labels, failed,
                                series, series_labels)


#: Colour-bar label of the mapped quantities other than the frequencies (dataset: (label, SI unit)).
MAP_QUANTITIES = {"largest_translational_compliance": ("largest translational compliance", "m/N")}


def _prefixed(values, unit):
    """Scale and unit text with the SI prefix (none, m, µ, n) that brings the largest finite
    ``values`` to 1 or more (a map of compliances of some nm/N reads as such)."""
    top = np.nanmax(np.abs(values)) if np.isfinite(values).any() else 1.0
    for scale, prefix in ((1.0, ""), (1e3, "m"), (1e6, "µ"), (1e9, "n")):
        if top * scale >= 1.0:
            break
    return scale, prefix + unit


def plot_peak_stress(ax, group):
    """The largest von Mises stress over each flexible body's nodes vs time (subgroup ``stress``
    of a time-domain group, :mod:`sim.analyses.sections`), in MPa."""
    stress = group["stress"]
    peaks = np.asarray(stress["peak_von_mises"]["data"], dtype=float)
    for k, body in enumerate(group["attrs"].get("stress_bodies", [])):
        ax.plot(stress["time"]["data"], peaks[:, k] / 1e6, lw=1.2, label=str(body))
    ax.set_xlabel("time [s]")
    ax.set_ylabel("peak von Mises stress [MPa]")
    ax.legend(loc="best", fontsize="small")
    return ax


def _most_loaded(group):
    """The flexible body with the largest von Mises stress of the run and that instant [s]."""
    stress = group["stress"]
    w = int(np.argmax(np.asarray(stress["peak"]["data"])))
    return str(group["attrs"]["stress_bodies"][w]), float(np.asarray(stress["peak_time"]["data"])[w])


def plot_moment_diagram(ax, group):
    """Bending moments My, Mz and torque T along the most loaded flexible body (distance of its
    nodes from its first node) at the instant of its largest stress (the nearest stored one);
    its axial force where the moments are round-off (a strut between spherical joints)."""
    body, when = _most_loaded(group)
    forces = group["section_forces"]
    time = np.asarray(forces["time"]["data"])
    k = int(np.argmin(np.abs(time - when)))
    F = np.asarray(forces[body]["data"][k])
    nodes = np.asarray(forces[f"{body}_nodes"]["data"])
    s = np.linalg.norm(nodes - nodes[0], axis=1)
    order = np.argsort(s)
    at = f" at t = {time[k]:.4g} s" if len(time) > 1 else ""      # a static result has one instant
    if np.abs(F[:, 3:]).max() <= 1e-9 * np.abs(F[:, 0]).max() * max(s.max(), 1e-3):
        # A two-force member (a strut between spherical joints): its moments are round-off.
        ax.plot(s[order], F[order, 0], "-o", ms=3, lw=1.2, label="N (moments vanish: axial load only)")
        ax.set_ylabel(f"axial force{at} [N]")
    else:
        for c, label, style in ((4, "My", "-o"), (5, "Mz", "-s"), (3, "T (torque)", "--")):
            ax.plot(s[order], F[order, c], style, ms=3, lw=1.2, label=label)
        ax.set_ylabel(f"moment{at} [N m]")
    ax.axhline(0.0, color="k", lw=0.5)
    ax.set_xlabel(f"distance along {body} from its first node [m]")
    ax.legend(loc="best", fontsize="small")
    return ax


def _draw_map(ax, group, tree=None, key="frequencies"):
    """Map of the lowest frequency (or the dataset ``key`` of :data:`MAP_QUANTITIES`) of a sweep
    grid over its two axes (attribute ``axes``, else datasets ``x``, ``y``), to scale when both
    are lengths, with the trajectory of the run's time-domain groups (their ``pose_rigid`` in
    the same coordinates) drawn on it."""
    f = np.asarray(group[key]["data"], dtype=float)
    f = f[..., 0] if f.ndim == 3 else f
    quantity, unit = MAP_QUANTITIES.get(key, ("frequency", "Hz"))
    scale, unit = _prefixed(f, unit) if key in MAP_QUANTITIES else (1.0, unit)
    f, label = scale * f, f"{quantity} [{unit}]"
    names = [str(a) for a in group["attrs"].get("axes", ("x", "y"))][:2]
    axes, units = [], []
    for key, size in zip(names, f.shape):
        if key in group:
            unit = _units_text(group[key]["attrs"].get("units", ""))
            axes.append((group[key]["data"], f"{key} [{unit}]"))
            units.append(unit)
        else:
            axes.append((np.arange(size), f"{key} index"))
            units.append(None)
    path = None
    pose_names = list(group["attrs"].get("pose_names", []))
    for other in (tree or {}).values():
        if isinstance(other, dict) and "pose_rigid" in other and all(n in pose_names for n in names):
            p = np.asarray(other["pose_rigid"]["data"])
            if p.ndim == 2 and p.shape[1] == len(pose_names):
                path = p[:, [pose_names.index(n) for n in names]]
                break
    return plot_frequency_map(ax, axes[0][0], axes[1][0], f, axes[0][1], axes[1][1], path=path,
                              equal=units[0] == units[1] == "m", label=label)


# The questions a result answers, in the order of the figures: (key, title).  Each panel of
# :func:`_panels` belongs to one (:func:`question`); `sim plot` draws a figure per question.
QUESTIONS = (("deviation", "How far does the end effector stray from the rigid robot's path?"),
             ("frequencies", "Which natural frequencies along the motion, or over the workspace?"),
             ("stiffness", "How stiff is the end effector over the workspace?"),
             ("modes", "Which modes, at which frequencies?"),
             ("motion", "How fast do the end effector and the markers move and accelerate?"),
             ("forces", "Which forces and stresses do the actuators, joints and bodies carry?"),
             ("frf", "How does the robot respond to a harmonic force or motor torque?"),
             ("identification", "How well do the fitted parameters reproduce the measured frequencies?"),
             ("sweep", "How does the answer change with the parameters?"))


def question(title):
    """The key of :data:`QUESTIONS` a panel of :func:`_panels` answers, from its title."""
    group, _, what = title.partition(":")
    if group in ("frf", "identification"):
        return group
    if group == "state_space":      # the plant's response to a motor torque or a servo reference
        return "frf"
    if group == "frequencies":      # along the motion, locked and with the servo drives
        return "frequencies"
    if group in ("modes", "design"):
        return "modes"
    if group == "sweep":
        return "frequencies" if "frequency" in what else "stiffness" if "compliance" in what else "sweep"
    if "motion of" in what:
        return "motion"
    if "force" in what or "stress" in what or "section loads" in what:
        return "forces"
    if "frequencies" in what:
        return "frequencies"
    return "deviation"


def figures(tree):
    """``[(key, title, panels)]``: the panels of :func:`_panels` gathered by the question they
    answer, in the order of :data:`QUESTIONS`."""
    panels = _panels(tree)
    return [(key, text, [p for p in panels if question(p[0]) == key]) for key, text in QUESTIONS
            if any(question(p[0]) == key for p in panels)]


def figure_paths(out, keys):
    """The image of each question: ``out`` for the first, ``<stem>-<key><suffix>`` beside it for
    the others."""
    out = Path(out)
    return [out if n == 0 else out.with_name(f"{out.stem}-{key}{out.suffix}") for n, key in enumerate(keys)]


def plot_result(path, out):
    """Draw the figures of a result file, one per question it answers (:data:`QUESTIONS`):
    ``out`` the first, ``<stem>-<question><suffix>`` beside it the others.

    Parameters
    ----------
    path : str or Path
        Result file.
    out : str or Path
        Image file of the first figure.

    Returns
    -------
    list of (str, Path)
        Each question's key and image, in order.

    Raises
    ------
    SimError
        Unreadable file, or nothing to plot in it.
    """
    _check_format(out)
    with lazy_result(path, rows=PLOT_ROWS) as tree, nan_quiet():
        questions = figures(tree)
        if not questions:
            raise SimError(f"{path}: nothing to plot (no deviation, frequencies or modes)")
        written = []
        for (key, text, panels), target in zip(questions, figure_paths(out, [q[0] for q in questions])):
            fig = figure(tree, panels, text)
            try:
                save(fig, target)
            finally:
                plt.close(fig)
            written.append((key, target))
        return written


def save(fig, out):
    """Write ``fig`` to the image ``out`` (its format from the suffix), all or nothing
    (:func:`sim.app.files.replacing`)."""
    with files.replacing(out, "the figure") as handle:
        fig.savefig(handle, format=Path(out).suffix.lower().lstrip("."), dpi=DPI)


# A panel's size [inches] at the figures' 100 dots per inch: three to a row fit a 1600-pixel screen.
PANEL = (5.0, 3.3)
DPI = 100


def figure(tree, panels, title=None):
    """The figure of the ``panels`` (:func:`_panels`) of the result ``tree``: a grid of equal
    panels (:func:`_layout`), each legend outside its data, on the panel's right; the caller
    closes it."""
    rows = _layout(panels)
    columns = max(len(row) for row in rows)
    fig = plt.figure(figsize=(PANEL[0] * columns + (0.6 if columns == 1 else 0), PANEL[1] * len(rows) + 0.5),
                     dpi=DPI)
    grid = fig.add_gridspec(len(rows), columns)
    try:
        for r, row in enumerate(rows):
            for c, (text, draw) in enumerate(row):
                ax = fig.add_subplot(grid[r, c], projection=getattr(draw, "projection", None))
                draw(ax)
                ax.set_title(textwrap.fill(text, 62), fontsize="small",
                             color="C3" if "INCOMPLETE" in text else "black")
                _legend_outside(ax)
        heading = title or ""
        if tree["attrs"].get("status") == "incomplete":
            heading = f"INCOMPLETE RUN: {tree['attrs'].get('message', '')}" + (f"\n{heading}" if heading else "")
        if heading:
            fig.suptitle(heading, color="C3" if heading.startswith("INCOMPLETE") else "black", fontsize="medium")
        _note_strides(fig, tree)
        fig.tight_layout()
        for ax in fig.axes:
            if ax.name == "3d":
                # tight_layout fits a 3D box, not the tick labels and axis labels that stand out
                # of it, on its right mostly (over the neighbouring panel, past the figure's
                # edge): room for them.
                box = ax.get_position()
                ax.set_position(box.shrunk(0.8, 0.9).anchored("W", box))
                spread_ticks(ax)
    except BaseException:
        plt.close(fig)
        raise
    return fig


def _legend_outside(ax):
    """Move the legend of the 2D axes ``ax`` (if any) out of the data: beside the panel, on its
    right, in small type (below it where a frequency map keeps its colour bar on the right, or
    where the labels are long: `sim compare`'s runs)."""
    legend = ax.get_legend()
    if legend is None or ax.name == "3d":
        return
    anchor = legend.get_bbox_to_anchor().transformed(ax.transAxes.inverted())
    if anchor.x0 >= 1.0 or anchor.y1 <= 0.0:      # placed outside already (the joints' and legs' legends)
        return
    handles, labels = legend.legend_handles, [t.get_text() for t in legend.get_texts()]
    legend.remove()
    if ax.child_axes or max(map(len, labels), default=0) > 40:    # a colour bar on the right, long labels
        ax.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, -0.3), fontsize="x-small",
                  ncol=1 if max(map(len, labels), default=0) > 40 else min(3, len(labels)), frameon=False)
    else:
        # past the tick labels of a second y axis on the right (rotations beside translations)
        right = 1.3 if getattr(ax, "right", None) is not None else 1.01
        ax.legend(handles, labels, loc="upper left", bbox_to_anchor=(right, 1.0), fontsize="x-small",
                  frameon=False, borderaxespad=0.0)


def spread_ticks(ax, gap=3.0):
    """Fewer tick labels on each axis of the 3D axes ``ax`` whose labels run into each other
    (a long axis in a small panel: "-0.080.000.080.16"), down to two; ``gap`` [pixels] the
    least free space between neighbouring labels.  Draws the axes (a 3D axis places its
    labels when drawn)."""
    from matplotlib.ticker import MaxNLocator

    renderer = ax.figure.canvas.get_renderer()
    ax.draw(renderer)
    for axis in (ax.xaxis, ax.yaxis, ax.zaxis):
        bins = None
        while bins is None or bins > 1:
            # The labels as drawn, those of the locator's ticks in view (the axis keeps spare
            # Tick objects; get_ticklabels() would move the labels back to 2D tick places).
            low, high = sorted(axis.get_view_interval())
            locs = axis.get_majorticklocs()
            boxes = [t.label1.get_window_extent(renderer).padded(gap / 2)
                     for t, loc in zip(axis.majorTicks, locs)
                     if low <= loc <= high and t.label1.get_visible() and t.label1.get_text()]
            if len(boxes) <= 2 or not any(a.overlaps(b) for a, b in zip(boxes, boxes[1:])):
                break
            bins = min(len(boxes), bins or len(boxes)) - 1    # at most bins + 1 labels
            axis.set_major_locator(MaxNLocator(bins))
            ax.draw(renderer)
    return ax


def mode_projection(points, displacement):
    """How a mode shape is drawn: ``None`` (2D axes) when the robot lies in a world coordinate
    plane (or along a line) and the mode moves in such a plane (99 % of its motion), else
    ``"3d"`` (:func:`sim.app.animate.plane_view`).  A planar robot seen in 3D fills a thin
    band of its panel."""
    return "3d" if plane_view(points, displacement) == "iso" else None


def _layout(panels):
    """Rows of the figure's grid: one panel alone, two to four two to a row, more three to a row."""
    columns = 1 if len(panels) == 1 else 2 if len(panels) <= 4 else 3
    return [list(panels[k:k + columns]) for k in range(0, len(panels), columns)]


# Entries drawn per series at most: a figure is ~1000 pixels wide, and a million-sample
# transient is read every k-th sample rather than whole (the figure says so).
PLOT_ROWS = 100_000


def _note_strides(fig, *trees):
    """Say on the figure which series were drawn every k-th sample."""
    found = sorted({(stride, rows) for tree in trees for _, stride, rows in strided(tree)})
    if found:
        fig.text(0.01, 0.002, "; ".join(f"every {k}th of {n} samples drawn" for k, n in found),
                 fontsize="x-small", color="0.4", va="bottom")


# --- comparing runs ---------------------------------------------------------------------------

def run_labels(trees, paths):
    """One label per run: the ``--set`` overrides that differ between the runs (``as written``:
    none), else the file names."""
    sets = [set(stored_overrides(t["attrs"], p)) for t, p in zip(trees, paths)]
    common = set.intersection(*sets) if sets else set()
    labels = [" ".join(sorted(s - common)) or "as written" for s in sets]
    if len(set(labels)) == len(labels):
        return labels
    names = [Path(p).name for p in paths]
    return names if len(set(names)) == len(names) else [str(p) for p in paths]


def plot_compare(paths, out):
    """Overlay the end-effector deviations (one panel per coordinate, ``transient`` solid and
    ``ked`` dashed) and the natural frequencies along the motion of several result files.

    Parameters
    ----------
    paths : sequence of str or Path
        Result files (``sim run``).
    out : str or Path
        Image file.

    Returns
    -------
    list of str
        The runs' labels (:func:`run_labels`), as in the legends.

    Raises
    ------
    SimError
        Fewer than two files, a file that cannot be read, or nothing to compare.
    """
    if len(paths) < 2:
        raise SimError("sim compare needs at least two result files")
    _check_format(out)
    with contextlib.ExitStack() as stack, nan_quiet():
        trees = [stack.enter_context(lazy_result(p, rows=PLOT_ROWS)) for p in paths]
        return _compare(trees, paths, out)


@contextlib.contextmanager
def nan_quiet():
    """Draw NaN values (a diverged series, a damaged file) as the gaps they are, without
    numpy's warnings about them ("All-NaN slice encountered", "invalid value")."""
    with warnings.catch_warnings(), np.errstate(invalid="ignore", divide="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        yield


def _compare(trees, paths, out):
    labels = run_labels(trees, paths)
    names = next((list(t[g]["attrs"]["pose_names"]) for t in trees for g in ("transient", "ked")
                  if g in t and "deviation" in t[g] and "pose_names" in t[g]["attrs"]), None)
    has_freq = any("frequencies" in t.get(g, {}) and "frequency_time" in t.get(g, {})
                   for t in trees for g in ("frequencies", "ked"))
    if names is None and not has_freq:
        raise SimError(f"{paths[0]}: nothing to compare (no deviation or frequencies along a motion)")
    settles = any("settle_time" in t.get(g, {}) for t in trees for g in ("transient", "ked"))
    rows = (len(names) if names else 0) + (1 if has_freq else 0) + (1 if settles else 0)
    fig, axes = plt.subplots(rows, 1, figsize=(8, 2.6 * rows), squeeze=False, sharex=True)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    try:
        for i, name in enumerate(names or ()):
            _draw_runs_deviation(axes[i, 0], trees, labels, i, name, legend=i == 0)
        if settles:
            plot_settling(axes[len(names or ()), 0], trees, labels)
        if has_freq:
            ax = axes[-1, 0]
            for t, label, color in zip(trees, labels, colors * len(trees)):
                g = "frequencies" if "frequencies" in t and "frequency_time" in t["frequencies"] else "ked"
                if g in t and "frequencies" in t[g]:
                    f = np.asarray(along(t[g]["frequencies"], t[g]["frequency_time"]))
                    for k in range(f.shape[1]):
                        ax.plot(t[g]["frequency_time"]["data"], f[:, k], color=color,
                                label=label if k == 0 else None)
            ax.set_ylabel("frequency [Hz]")
            ax.grid(True, alpha=0.3)
            ax.legend(loc="best", fontsize="small")
        axes[-1, 0].set_xlabel("time [s]")
        for ax in axes[:, 0]:
            _legend_outside(ax)
        fig.suptitle("comparison of " + ", ".join(labels), fontsize="medium")
        _note_strides(fig, *trees)
        fig.tight_layout()
        save(fig, out)
    finally:
        plt.close(fig)
    return labels


def _draw_runs_deviation(ax, trees, labels, i, name, legend=True, window=None):
    """Coordinate ``i`` (``name``) of the deviation of every run in ``trees``, one colour per
    run, the transient solid and KED dashed, in units readable for all of them; a series too
    dense for its panel (:func:`dense`) as its envelope (transient filled, KED outlined);
    ``window`` ``(start, end)`` [s]: only that span, as lines."""
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    series = [(np.asarray(t[g]["time"]["data"]), _deviation(t[g])[:, i], g, c)
              for t, c in zip(trees, colors * len(trees)) for g in ("transient", "ked")
              if g in t and "deviation" in t[g] and "time" in t[g]]
    if window is not None:
        series = [(time[(time >= window[0]) & (time <= window[1])], values[(time >= window[0]) & (time <= window[1])],
                   g, c) for time, values, g, c in series]
    unit = _column_unit(trees, i)
    values = np.concatenate([s[1] for s in series]) if series else np.zeros(0)
    peak = float(np.nanmax(np.abs(values))) if values.size else 0.0
    # A coordinate far below the largest deviation in its unit (an in-plane robot's
    # out-of-plane z, say) is round-off, drawn as the zero it is, not magnified.
    largest = _largest_deviation(trees, unit)
    roundoff = bool(at_roundoff(peak, largest))
    factor, shown = readable([largest] if roundoff else values, unit)
    if roundoff:
        ax.set_ylim(-1.0, 1.0)
        ax.text(0.5, 0.85, f"zero to round-off: peak {peak:.1e} {unit}, {peak / largest:.0e} of the largest",
                transform=ax.transAxes, ha="center", fontsize="small", color="0.3")
    for (time, values, g, color), label in zip(series, _series_labels(trees, labels)):
        if len(trees) == 1:         # one run: tell the analyses apart by colour too
            color = "C0" if g == "transient" else "C3"
        if window is None and not roundoff and time.size and dense(values):
            t, low, high = envelope(time, values / factor)
            if g == "transient":
                ax.fill_between(t, low, high, color=color, alpha=0.35, lw=0, label=f"{label} (envelope)")
            else:
                ax.fill_between(t, low, high, facecolor="none", edgecolor=color, lw=1.0, linestyle="--",
                                label=f"{label} (envelope)")
            continue
        ax.plot(time, values / factor, color=color, linestyle="-" if g == "transient" else "--",
                lw=1.0 if g == "transient" else 1.4, label=label)
    ax.set_ylabel(f"{name} [{shown}]")
    ax.set_xlabel("time [s]")
    ax.grid(True, alpha=0.3)
    if legend and ax.get_legend_handles_labels()[0]:
        ax.legend(loc="best", fontsize="small")
    return ax


def _largest_deviation(trees, unit):
    """The largest |deviation| of any coordinate in ``unit``, over the runs' transient and KED."""
    peaks = [0.0]
    for t in trees:
        for g in ("transient", "ked"):
            if g in t and "deviation" in t[g] and "time" in t[g]:
                d = _deviation(t[g])
                cols = [j for j in range(d.shape[1]) if _column_unit(trees, j) == unit]
                if cols and d.size:
                    peaks.append(float(np.nanmax(np.abs(d[:, cols]))))
    return max(peaks)


def _column_unit(trees, i):
    for t in trees:
        for g in ("transient", "ked"):
            if g in t and "deviation" in t[g]:
                units = t[g]["deviation"]["attrs"].get("units")
                return units if isinstance(units, str) else list(units)[i]
    return ""


def _series_labels(trees, labels):
    """Legend entries in the order of the plotted series: the run, and the analysis where a
    run has both a transient and a KED."""
    out = []
    for t, label in zip(trees, labels):
        groups = [g for g in ("transient", "ked") if g in t and "deviation" in t[g] and "time" in t[g]]
        out += [(f"{label} ({g})" if label else g) if len(groups) > 1 else label for g in groups]
    return out


def _check_format(out):
    kinds = plt.figure().canvas.get_supported_filetypes()
    plt.close("all")
    suffix = Path(out).suffix.lower().lstrip(".")
    if suffix not in kinds:
        raise SimError(f"{out}: cannot draw a .{suffix or '(no suffix)'} image; use one of "
                       f"{', '.join('.' + k for k in sorted(kinds))}")
