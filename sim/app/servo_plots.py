"""Panels of ``sim plot`` for servo drives (:mod:`sim.solvers.closed_loop`): the Bode plot of a
``state_space`` group, the closed-loop frequencies along the path beside the locked ones, and
the transient's dynamic deviation split into the servo's and the structure's shares."""
import numpy as np

from sim.app.units import readable


def _units(group, name):
    units = group[name]["attrs"].get("units", "")
    return units


def draw_bode(ax, group, phase=False):
    """Magnitude (log-log) or phase [deg] of every output/input pair of a ``state_space`` group."""
    f = np.asarray(group["frequency"]["data"])
    H = np.asarray(group["phase" if phase else "magnitude"]["data"])
    ins, outs = list(group["attrs"].get("inputs", [])), list(group["attrs"].get("outputs", []))
    units = _units(group, "magnitude")
    units = [units] * (H.shape[1] * H.shape[2]) if isinstance(units, str) else list(units)
    for i in range(H.shape[1]):
        for j in range(H.shape[2]):
            label = f"{outs[i] if i < len(outs) else i} / {ins[j] if j < len(ins) else j}"
            # One legend for the pair of panels, beside the phase (the magnitude's units in it).
            if phase:
                ax.plot(f, np.degrees(H[:, i, j]), label=f"{label} [{units[i * H.shape[2] + j]}]")
            else:
                ax.loglog(f, H[:, i, j])
    ax.set_xscale("log")
    ax.set_xlabel("frequency [Hz]")
    ax.set_ylabel("phase [deg]" if phase else "|H|")
    ax.grid(True, which="both", alpha=0.3)
    if phase:
        ax.legend(loc="best", fontsize="small", title="output / input [|H| unit]", title_fontsize="small")
    return ax


def draw_servo_frequencies(ax, group):
    """The closed-loop (servo) frequencies along the path, beside the locked robot's (grey)."""
    t = np.asarray(group["frequency_time"]["data"])
    locked = np.asarray(group["frequencies_sorted" if "frequencies_sorted" in group else "frequencies"]["data"])
    servo = np.asarray(group["servo_frequencies"]["data"])
    for k in range(locked.shape[1]):
        ax.plot(t, locked[:, k], color="0.6", lw=1, label="actuators locked" if k == 0 else None)
    for k in range(servo.shape[1]):
        ax.plot(t, servo[:, k], lw=1.5, label=f"servo drives, mode {k + 1}")
    ax.set_xlabel("time [s]")
    ax.set_ylabel("natural frequency [Hz]")
    ax.grid(True, alpha=0.3)
    ax.legend(loc="best", fontsize="small")
    return ax


def draw_split(ax, group):
    """Norm of the translational dynamic deviation (in µm or mm, :func:`sim.app.units.readable`)
    over time: the whole (``deviation_dynamic``), the servos' share and the structure's, each
    less its static part (``deviation_static_servo``, the servos' lag under the static load,
    and the rest of ``deviation_static``): a static sag would otherwise hide the vibration."""
    t = np.asarray(group["time"]["data"])
    units = _units(group, "deviation")
    d = np.shape(group["deviation"]["data"])[1]
    units = [units] * d if isinstance(units, str) else list(units)
    cols = [j for j, u in enumerate(units) if u == "m"] or list(range(d))
    data = {name: np.asarray(group[name]["data"])[:, cols] for name in
            ("deviation", "deviation_static", "deviation_servo", "deviation_structure", "deviation_static_servo")
            if name in group}
    static = data.get("deviation_static", 0.0)
    servo = data.get("deviation_static_servo", 0.0)     # files before it: the shares whole
    parts = {"flexible - rigid - static": data["deviation"] - static,
             "servo": data["deviation_servo"] - servo,
             "structure": data["deviation_structure"] - (static - servo)}
    norms = {name: np.linalg.norm(x, axis=1) for name, x in parts.items()}
    factor, unit = readable(norms["flexible - rigid - static"], "m")
    for (name, x), style in zip(norms.items(), ("-", "--", ":")):
        ax.plot(t, x / factor, style, label=name)
    ax.set_xlabel("time [s]")
    ax.set_ylabel(f"dynamic deviation (translation norm) [{unit}]")
    ax.grid(True, alpha=0.3)
    ax.legend(loc="best", fontsize="small")
    return ax
