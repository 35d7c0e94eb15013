"""Per-move settling datasets of the time-domain groups (``ked``, ``transient``) of a
point-to-point trajectory (:mod:`sim.solvers.moves`)."""
import numpy as np

from sim.analyses import Quantity


def write(group, model, moves, time, pose_rigid, deviation_dynamic):
    """Write ``move_start``, ``move_end``, ``settle_time``, ``residual_amplitude`` (each (m,),
    dimension ``move``), ``shaper_frequency`` and the attributes of the moves; return the
    summary entries (µm and ms, as ``sim run`` prints them).

    Parameters
    ----------
    group : GroupWriter
    model : Model
    moves : sim.solvers.moves.Moves or None
        Nothing is written without moves (another trajectory kind).
    time : ndarray, shape (n,)
    pose_rigid, deviation_dynamic : ndarray, shape (n, d)

    Returns
    -------
    dict
    """
    if moves is None:
        return {}
    from sim.solvers.moves import settling

    out = settling(time, pose_rigid, deviation_dynamic, model.pose_units, moves)
    dims = ("move",)
    group.put("move_start", moves.start, "s", "start of each move", dims=dims)
    group.put("move_end", moves.end, "s", "end of each move's rigid motion (its shaper's length included)", dims=dims)
    group.put("settle_time", out.settle_time, "s",
              f"from each move's start until the end effector stays within settling_tolerance = "
              f"{moves.tolerance:g} m of its target (rigid pose plus dynamic deviation, translations) for the rest "
              f"of its dwell, and that for at least a period of the lowest mode at the target; inf if it never "
              f"does, NaN for a move without dwell or one whose dwell the run does not reach", dims=dims)
    group.put("residual_amplitude", out.residual_amplitude, "m",
              "peak of the dynamic deviation's norm (translations) from the end of each move's rigid motion to "
              "the end of its dwell; NaN where settle_time is NaN", dims=dims)
    group.put("final_amplitude", out.final_amplitude, "m",
              "norm of the dynamic deviation (translations) at the end of each move's dwell", dims=dims)
    group.put("shaper_frequency", moves.shaper_frequency, "Hz",
              "frequency each move's shaper cancels" + (f" ({moves.shaper})" if moves.shaper != "none" else
                                                         ": NaN, the moves are not shaped"), dims=dims)
    group.attrs["settling_tolerance"] = moves.tolerance
    group.attrs["shaper"] = moves.shaper
    group.attrs["dwell_end"] = moves.window
    waited = moves.window > moves.end
    # The cycle time if every dwell lasted just until its move settled (moves without dwell: their span).
    cycle = float(np.where(waited, out.settle_time, moves.end - moves.start).sum())
    group.attrs["cycle_settle_time"] = cycle
    summary = {"settle_time": Quantity(np.round(1e3 * out.settle_time[waited], 1), "ms"),
               "residual_amplitude": Quantity(np.round(1e6 * out.residual_amplitude[waited], 2), "µm"),
               "cycle_settle_time": Quantity(cycle, "s")}
    if moves.shaper != "none":
        group.attrs["shaper_tuning"] = list(moves.tuning)
        tuned = ", ".join(f"{f:.4g} Hz" + (f" ({how.split(',')[0]})" if how != "given" else "")
                          for f, how in zip(moves.shaper_frequency, moves.tuning))
        auto = moves.tuning[0] != "given"
        summary["shaper"] = (f"{moves.shaper} per move: {tuned}" +
                             (" (the lowest mode each move excites at its end pose, actuators locked)" if auto else ""))
    return summary
