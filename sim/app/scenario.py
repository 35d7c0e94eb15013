"""Scenario files: strict TOML schema, `--set` overrides, path resolution.

A scenario names a model file and its parameters, a rigid end-effector trajectory and the
analyses to run. The schema below is data: each key maps to a `Key` (type, constraint,
default, unit, description), each table to a nested dict. Validation walks that data, so the
same tables drive the error messages and the documentation (`schema_rst`, ``docs/reference.rst``).

Validation happens once, here, at the boundary (STYLE §8.2 rule 17): analyses read
`Scenario.data`, where every key of a present table exists (optional keys without a value
hold ``None``) and numbers are converted (TOML integers given for real numbers become floats).
Every problem raises `SimError` with one line naming the file (or the ``--set`` option) and
the key path.
"""

import copy
import difflib
import json
import math
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from sim.errors import SimError


class _Required:
    def __repr__(self):
        return "required"


REQUIRED = _Required()


class Key(NamedTuple):
    """One scenario key: how it is checked and documented."""

    type: str          # a name in TYPES
    constraint: object  # None, a name in CONSTRAINTS, or a tuple of allowed strings
    default: object    # REQUIRED, None (optional, no value) or the value used when absent
    unit: str
    description: str


# Analysis tables in the order `sim run` executes them.
ANALYSIS_TABLES = ("modes", "stiffness", "inverse_dynamics", "frequencies", "ked", "transient",
                   "sweep", "design", "frf", "state_space", "identification")

# Name of the schema entry that stands for keys chosen by the file (the `[sweep]` grid axes).
AXIS_KEY = "<axis>"

# Schema entries that stand for numbered tables (`configuration_2`, `configuration_3`, ...),
# each with the pattern of the table names it validates; group 1 is the number.
NUMBERED = {"configuration_<n>": re.compile(r"configuration_([2-9]|[1-9][0-9]+)")}

# What a pose grid maps (`[sweep] analysis`; the first is the default): the frequencies of the
# modes, or the end effector's compliance.
POSE_GRID_ANALYSES = ("modes", "stiffness")

# Analyses that follow the rigid trajectory and therefore need a [trajectory] table.
NEEDS_TRAJECTORY = ("inverse_dynamics", "frequencies", "ked", "transient")

def _configuration(use):
    """Schema of one identification configuration (default role ``use``: fit or predict)."""
    return {
        "parameters": Key("table[scalar]", None, {}, "",
                          "model-parameter overrides for this configuration (e.g. x, y, z)"),
        "pose": Key("float[]", None, None, "m, rad",
                    "end-effector pose reached by inverse kinematics (default: home)"),
        "measured_frequencies": Key("float[]", "positive_list", REQUIRED, "Hz",
                                    "measured natural frequencies: ascending at configuration_1; with tracked "
                                    "pairing, measured mode i is configuration_1's mode i (its family)"),
        "modes": Key("int[]", "positive_list", None, "",
                     "1-based computed mode numbers paired with the measured ones "
                     "(default: by sorted order)"),
        "merge_repeated": Key("bool", None, False, "",
                              "pair by order with the distinct computed frequencies "
                              "(a repeated root of a symmetric robot counts once)"),
        "shapes": Key("float[][]", None, None, "any scale",
                      "measured mode shapes, one row per output of `shape_outputs` and one column per measured "
                      "mode: pairs the measured modes with the computed ones by MAC at those outputs"),
        "shape_outputs": Key("str[]", None, None, "",
                             "where `shapes` were measured: FRF outputs, `displacement:<marker>:<x|y|z>` or "
                             "`rotation:<marker>:<x|y|z>`"),
        "excitation": Key("str[]", None, None, "",
                          "how the test excited the robot, as FRF inputs (`force:<marker>:<x|y|z>`: the hammer "
                          "point and direction): each computed mode's excitability is stored, and a paired mode "
                          "the test hardly excites is warned about"),
        "sensors": Key("str[]", None, None, "",
                       "the test's response sensors, as FRF outputs (`displacement:<marker>:<x|y|z>`): each "
                       "computed mode's visibility is stored, and a paired mode they hardly see is warned about"),
        "use": Key("str", ("fit", "predict"), use, "",
                   "fitted, or only predicted with the fitted parameters"),
        "pairing": Key("str", ("order", "tracked"), "order" if use == "fit" else "tracked", "",
                       "without `modes`: pair by sorted order, or (not configuration_1) with the modes that "
                       "continue configuration_1's paired ones along the path between them, by MAC"),
        "weight": Key("float", "positive", 1.0, "1", "weight of its residuals"),
    }


#: Per-analysis damping keys of earlier versions: ``(table, key)`` -> the ``[damping]`` key that
#: replaced it.  Damping is one model per robot, so a scenario still using one is refused.
MOVED = {(table, key): new for table in ("transient", "ked", "frf")
         for key, new in (("damping_ratio", "ratio"), ("eta", "eta"), ("rayleigh_alpha", "rayleigh_alpha"),
                          ("rayleigh_beta", "rayleigh_beta"), ("damping_modes", "modes"))}


def moved(table, key, value, fix="set [damping] {key} = {value}"):
    """The one-line reason a per-analysis damping key is refused (None if ``table.key`` is not
    one of :data:`MOVED`); ``fix`` says where its value goes now (``{key}``, ``{value}``)."""
    new = MOVED.get((table, key))
    if new is None:
        return None
    return (f"{table}.{key} is gone: damping is one model per robot, used by every analysis; "
            + fix.format(key=new, value=_show(value)))


SCHEMA = {
    "name": Key("str", "identifier", None, "",
                "run name; the default output is `results/<name>.h5` "
                "(default: the scenario file's stem)"),
    "model": {
        "file": Key("str", None, REQUIRED, "",
                    "robot builder file defining `build(**parameters) -> Model`; relative to "
                    "the scenario's directory, else to the working directory"),
        "parameters": Key("table[scalar]", None, {}, "",
                          "keyword arguments of `build` (numbers, booleans, strings)"),
    },
    "trajectory": {
        "kind": Key("str", ("circle", "cycloidal", "polynomial", "table", "point_to_point"), REQUIRED, "",
                    "rigid end-effector motion law; the keys each kind uses are listed below"),
        "center": Key("float[]", None, None, "m, rad",
                      "circle centre: a full end-effector pose in the model's order; the "
                      "circle runs on its first two coordinates"),
        "radius": Key("float", "positive", None, "m", "circle radius"),
        "omega": Key("float", None, None, "rad/s",
                     "angular rate along the circle; its sign sets the direction"),
        "duration": Key("float", "positive", None, "s", "length of the motion"),
        "ramp": Key("float", "nonnegative", None, "s",
                    "circle: time to reach the rate `omega` from rest, with continuous "
                    "acceleration (0 or absent: full speed at t = 0)"),
        "amplitude": Key("float", "positive", None, "m or rad",
                         "stroke of the cycloidal law s(τ) = A (τ − sin(2πτ)/(2π)) − A/2, "
                         "τ = t/period, applied to each of `axes` about `pose`"),
        "period": Key("float", "positive", None, "s", "duration of one cycloidal stroke"),
        "axes": Key("str[]", None, None, "",
                    "end-effector coordinates that move (names from the model's pose names)"),
        "start": Key("float[]", None, None, "m, rad", "pose at t = 0 (quintic polynomial)"),
        "end": Key("float[]", None, None, "m, rad",
                   "pose at t = duration, reached with zero velocity and acceleration"),
        "file": Key("str", None, None, "",
                    "CSV table: t [s], then the pose coordinates; relative to the scenario's "
                    "directory, else to the working directory"),
        "pose": Key("float[]", None, None, "m, rad",
                    "fixed end-effector pose the motion is defined about "
                    "(default: the model's home pose)"),
        "waypoints": Key("float[][]", None, None, "m, rad",
                         "point_to_point: poses in the model's order, one row each; the robot starts at "
                         "rest at the first and moves to each next one in a straight line"),
        "move_time": Key("float|float[]", "positive_each", None, "s",
                         "point_to_point: duration of each move before shaping (one value, or one per move)"),
        "dwell": Key("float|float[]", "nonnegative_each", None, "s",
                     "point_to_point: rest after each move, while it settles (one, or one per move; default 0)"),
        "profile": Key("str", ("quintic", "cycloidal", "trapezoidal", "jerk_limited"), "quintic", "",
                       "point_to_point: stroke law of each move (quintic: 10τ³ − 15τ⁴ + 6τ⁵; cycloidal: "
                       "τ − sin(2πτ)/(2π); trapezoidal: constant acceleration, cruise, constant deceleration; "
                       "jerk_limited: the same with the acceleration ramped; trapezoidal's acceleration jumps "
                       "need a finely sampled drive law in [transient]: about 8 times slower there)"),
        "acceleration_time": Key("float|float[]", "positive_each", None, "s",
                                 "trapezoidal, jerk_limited: time to reach the cruise speed v = stroke/(T − t_a) "
                                 "and to stop from it, in (0, move_time/2] (default move_time/3)"),
        "jerk_time": Key("float|float[]", "positive_each", None, "s",
                         "jerk_limited: time the acceleration takes to ramp to its peak a = v/(t_a − t_j), "
                         "in (0, acceleration_time/2] (default acceleration_time/2; jerk a/t_j)"),
        "shaper": Key("str", ("none", "zv", "zvd", "ei"), "none", "",
                      "point_to_point: input shaper convolved with each move (zv: 2 impulses; zvd: 3, robust "
                      "to ±14 % frequency error at 5 % residual; ei: extra insensitive, 5 % residual at its "
                      "frequency); a shaped move ends later by 1/(2f) (zv) or 1/f (zvd, ei)"),
        "shaper_frequency": Key("float|float[]", "positive_each", None, "Hz",
                                "point_to_point: frequency the shaper cancels (one, or one per move); default: "
                                "the lowest elastic mode the move excites at its end pose, actuators locked "
                                "(the run says which)"),
        "settling_tolerance": Key("float", "positive", 1e-4, "m",
                                  "point_to_point: distance to the target within which a move has settled "
                                  "(translations; on the dynamic deviation: the static sag is taught out)"),
        "max_acceleration": Key("float", "positive", None, "m/s^2",
                                "bound on the end effector's translational acceleration, above which "
                                "the motion is refused as a likely unit slip (default 50 g = 490.3 m/s^2)"),
        "max_speed": Key("float", "positive", None, "m/s",
                         "bound on the end effector's translational speed, likewise (default 20 m/s)"),
    },
    "damping": {
        "ratio": Key("float", "damping", 0.0, "1",
                     "modal damping ratio ζ: in [ked] and [transient] of the lowest `modes` modes of the "
                     "structure frozen along the path, in [frf] of every mode"),
        "eta": Key("float", "nonnegative", 0.0, "1",
                   "structural loss factor: K (1 + i eta) in [frf] and the damped modes; in [ked] and "
                   "[transient] its viscous equivalent at resonance, ζ = eta/2, on the lowest `modes` modes"),
        "rayleigh_alpha": Key("float", "nonnegative", 0.0, "1/s",
                              "Rayleigh material damping of the flexible bodies, C_ff = alpha M_ff + beta K_ff "
                              "(elastic coordinates, every mode; rigid motion undamped)"),
        "rayleigh_beta": Key("float", "nonnegative", 0.0, "s",
                             "Rayleigh material damping of the flexible bodies, C_ff = alpha M_ff + beta K_ff"),
        "modes": Key("int", "positive", 12, "",
                     "lowest modes that carry `ratio` and `eta` in [transient] and [ked] (higher ones: "
                     "Rayleigh only)"),
    },
    "modes": {
        "pose": Key("float[]", None, None, "m, rad",
                    "end-effector pose, in the model's order (default: home)"),
        "count": Key("int", "positive", 6, "", "number of elastic modes"),
        "drives": Key("str", ("locked", "servo"), "locked", "",
                      "actuators locked, or also the complex modes of the robot closed by its [servo] "
                      "(subgroup `servo`)"),
    },
    "stiffness": {
        "pose": Key("float[]", None, None, "m, rad",
                    "end-effector pose, in the model's order (default: home)"),
        "load": Key("float[]", None, None, "N, N m",
                    "end-effector wrench, one value per end-effector coordinate: force along (x, y, z) or "
                    "moment about (rx, ry, rz) the world axis at the end-effector marker; its static "
                    "deflection C @ load is reported (default: none)"),
    },
    "transient": {
        "step": Key("float", "positive", REQUIRED, "s", "time step h"),
        "method": Key("str", ("newmark", "hht", "generalized-alpha"), None, "",
                      "implicit integrator (Newmark: average acceleration γ = 1/2, β = 1/4); by default "
                      "Newmark, and where Newton fails with it the run again with generalized-alpha "
                      "(rho_inf), said in a warning"),
        "alpha": Key("float", "nonnegative", None, "1/s",
                     "Baumgarte gain α in C̈ + 2αĊ + β²C = 0 (default 4/step: under Newmark the "
                     "constraint error left by a step is a third of it, of the other sign, the next)"),
        "beta": Key("float", "nonnegative", None, "1/s",
                    "Baumgarte gain β in C̈ + 2αĊ + β²C = 0 (default 4/step)"),
        "start": Key("str", ("static", "undeformed"), "static", "",
                     "initial elastic state: the static deflection of the robot at rest at its "
                     "first pose (gravity, preloads), or undeformed"),
        "rho_inf": Key("float", "unit_interval", 0.9, "1",
                       "spectral radius at infinite frequency: generalized-alpha in [0, 1], hht in [0.5, 1]"),
        "newton_tol": Key("float", "positive", 1e-10, "m or rad",
                          "Newton stops when the configuration correction β h² |δa|, or the error "
                          "it leaves (estimated from the contraction rate), is below this; the "
                          "error is systematic, so keep it well below the deflections of interest"),
        "newton_max_iter": Key("int", "positive", 12, "", "Newton iterations per step"),
        "drive": Key("str", ("prescribed", "torque", "servo", "free"), "prescribed", "",
                     "actuators follow the rigid inverse kinematics (prescribed), apply the "
                     "rigid inverse-dynamics forces (torque, open loop plus PD), or follow their "
                     "references through the [servo] controllers with the motors' rotors (servo)"),
        "kp": Key("float", "nonnegative", 0.0, "N m/rad or N/m",
                  "PD proportional gain (drive = torque)"),
        "kd": Key("float", "nonnegative", 0.0, "N m s/rad or N s/m",
                  "PD derivative gain (drive = torque)"),
        "duration": Key("float", "positive", None, "s",
                        "simulated time (default: the trajectory's duration)"),
        "output_step": Key("float", "positive", None, "s",
                           "spacing of the written samples (default: step)"),
        "marker_sensors": Key("table", None, None, "m, m/s, m/s^2",
                              "sensors on markers, world x, y, z: {position = [\"P\"], velocity = [...], "
                              "acceleration = [...]} written as sensors/<marker>_<kind>"),
        "drive_law": Key("table", None, None, "",
                         "actuator law instead of a trajectory: {kind = \"constant_rate\" or "
                         "\"spinup\", rate = rad/s or m/s (one or per actuator), ramp = s}"),
        "initial_state": Key("table", None, None, "m, m/s",
                             "initial elastic fields per flexible body: <body>.<axial|transverse_y|"
                             "transverse_z>_<displacement|velocity> = {sine = [...], polynomial = "
                             "[...]} along the body's chord, ξ = x/L"),
    },
    "ked": {
        "intervals": Key("int", "positive", 512, "",
                         "intervals with frozen M and K along the trajectory"),
        "modes": Key("int", "positive", 4, "", "modes kept per interval"),
        "output_step": Key("float", "positive", None, "s",
                           "spacing of the written samples, between the interval ends too (default: "
                           "16 per period of the highest kept frequency, at most the interval)"),
        "start": Key("str", ("static", "undeformed"), "static", "",
                     "initial elastic state: the static deflection of the robot at rest at its "
                     "first pose (gravity, preloads), or undeformed"),
        "drives": Key("str", ("locked", "servo"), "locked", "",
                      "actuators locked, or held by their [servo] controllers (closed-loop frequencies, "
                      "tracking errors, the deviation's servo and structure shares)"),
    },
    "frequencies": {
        "count": Key("int", "positive", 6, "", "elastic modes tracked (MAC)"),
        "samples": Key("int", "positive", 200, "", "instants along the trajectory"),
        "drives": Key("str", ("locked", "servo"), "locked", "",
                      "actuators locked, or also the lowest `count` complex modes of the robot closed by "
                      "its [servo] at each instant, tracked by MAC (`servo_frequencies`, `servo_damping_ratios`)"),
    },
    "servo": {
        "kp": Key("float|float[]", "positive_each", REQUIRED, "1/s",
                  "position-loop gain, one or one per actuator"),
        "kv": Key("float|float[]", "positive_each", REQUIRED, "N m s/rad or N s/m",
                  "velocity-loop gain on the joint side, one or one per actuator"),
        "ki": Key("float|float[]", "nonnegative_each", 0.0, "1/s",
                  "velocity-loop integral gain, one or one per actuator"),
        "feedforward": Key("str|str[]", None, "velocity", "",
                           "`\"none\"`, `\"velocity\"` or `\"velocity+torque\"` (the rigid inverse dynamics), "
                           "one or one per actuator"),
        "torque_limit": Key("float|float[]", "positive_each", None, "N m or N",
                            "largest joint-side actuator force, one or one per actuator (default: none)"),
    },
    "state_space": {
        "inputs": Key("str[]", None, REQUIRED, "",
                      "`motor:<actuator>` (motor torque, motor side), `reference:<actuator>` (servo "
                      "reference), or an [frf] input"),
        "outputs": Key("str[]", None, REQUIRED, "",
                       "`motor:<actuator>` (motor angle, motor side), or an [frf] output (`pose:<name>`, ...)"),
        "pose": Key("float[]", None, None, "m, rad",
                    "end-effector pose, in the model's order (default: home)"),
        "drives": Key("str", ("open", "servo"), "open", "",
                      "motors as torque inputs (open), or closed by the [servo] controllers"),
        "modes": Key("int", "positive", None, "",
                     "keep the lowest modes only (modal truncation, static gain kept; default: all)"),
        "f_min": Key("float", "positive", 0.5, "Hz", "lowest frequency of the stored frequency response"),
        "f_max": Key("float", "positive", 500.0, "Hz", "highest frequency of the stored frequency response"),
        "points": Key("int", "positive", 400, "", "frequencies of the stored response (log-spaced)"),
    },
    "inverse_dynamics": {
        "samples": Key("int", "positive", 200, "", "instants along the trajectory"),
        "frame": Key("str", ("joint", "world"), "world", "",
                     "frame of the joint reaction forces and moments"),
    },
    "sweep": {
        "axes": Key("str[]", None, None, "",
                    "pose grid: the two end-effector coordinates spanning the grid"),
        AXIS_KEY: Key("float[]", None, None, "m or rad",
                      "pose grid, one key per coordinate named in `axes`: [min, max, number "
                      "of points]"),
        "pose": Key("float[]", None, None, "m, rad",
                    "pose grid: the other coordinates of the grid poses (default: home)"),
        "count": Key("int", "positive", None, "",
                     "pose grid: frequencies per pose (default 4)"),
        "analysis": Key("str", tuple(a for a in ANALYSIS_TABLES if a != "sweep"), None, "",
                        "parameter grid: the analysis run for each case, with the options of "
                        "its table in this scenario (else its defaults); pose grid: `\"stiffness\"` "
                        "maps the end effector's compliance (default: the frequencies)"),
        "parameters": Key("table[grid]", None, None, "model units",
                          "parameter grid: model parameter = list of values, or a scenario key "
                          "`\"<table>.<key>\"` = list of values (a motion study: `\"trajectory.move_time\"`, "
                          "`\"trajectory.shaper\"`); the cases are the Cartesian product, first parameter slowest"),
        "workers": Key("int", "positive", None, "",
                       "local processes (default: min(2, cores)); 1 runs in this process"),
        "scheduler": Key("str", None, None, "",
                         "Dask scheduler address `tcp://host:port` (or `sim run --scheduler`); "
                         "default: the local process pool"),
    },
    "design": Key("table", None, None, "", "design study options (free-form table)"),
    "frf": {
        "inputs": Key("str[]", None, REQUIRED, "",
                      "`force:<marker>:<x|y|z>`, `torque:<marker>:<x|y|z>` or `actuator:<name>`"),
        "outputs": Key("str[]", None, REQUIRED, "",
                       "`displacement:<marker>:<x|y|z>`, `rotation:<marker>:<x|y|z>`, "
                       "`pose:<name>` or `actuator:<name>`"),
        "pose": Key("float[]", None, None, "m, rad",
                    "end-effector pose, in the model's order (default: home)"),
        "f_min": Key("float", "positive", 0.5, "Hz", "lowest frequency"),
        "f_max": Key("float", "positive", 100.0, "Hz", "highest frequency"),
        "points": Key("int", "positive", 1000, "", "number of frequencies"),
        "spacing": Key("str", ("linear", "log"), "linear", "", "frequency spacing"),
        "method": Key("str", ("auto", "modal", "state", "direct"), "auto", "",
                      "modal superposition (proportional damping), complex-mode (state-space) "
                      "superposition, or one solve per frequency"),
        "count": Key("int", "positive", 10, "", "damped natural frequencies reported"),
        "drives": Key("str", ("locked", "servo"), "locked", "",
                      "actuators locked, or the robot closed by its [servo] drives (inputs and outputs of "
                      "[state_space] too; one solve per frequency)"),
    },
    "identification": {
        "parameters": Key("str[]", None, REQUIRED, "",
                          "model parameters to fit (positive: stiffnesses, masses)"),
        "initial": Key("float[]", "positive_list", None, "model units",
                       "starting values (default: the [model] parameters, else the defaults)"),
        "lower": Key("float[]", "positive_list", None, "model units",
                     "lower bounds (default: initial / 100)"),
        "upper": Key("float[]", "positive_list", None, "model units",
                     "upper bounds (default: initial * 100)"),
        "max_evaluations": Key("int", "positive", 200, "", "residual evaluations allowed, per start"),
        "prior": Key("float[]", "positive_list", None, "model units",
                     "values the fit is regularised toward (e.g. static-test stiffnesses; default: none)"),
        "prior_weight": Key("float[]", None, None, "1",
                            "weight of each prior: residual sqrt(w) ln(p / prior) beside the relative frequency "
                            "errors (default 1 each)"),
        "starts": Key("int", "positive", 1, "",
                      "least-squares starts: `initial`, then points of a Latin hypercube of the bounds (ln p); "
                      "the best is kept, the spread reported; run in a local process pool"),
        "configuration_1": _configuration("fit"),
        "configuration_<n>": _configuration("predict"),
    },
}

# Trajectory keys used by each kind: (required, optional). Others are errors.
PACE_KEYS = ("max_acceleration", "max_speed")      # bounds of every kind (sim.solvers.trajectory.check_pace)
KIND_KEYS = {
    "circle": (("center", "radius", "omega", "duration"), ("pose", "ramp") + PACE_KEYS),
    "cycloidal": (("amplitude", "period", "axes"), ("pose", "duration") + PACE_KEYS),
    "polynomial": (("start", "end", "duration"), PACE_KEYS),
    "table": (("file",), PACE_KEYS),
    "point_to_point": (("waypoints", "move_time"),
                       ("dwell", "profile", "acceleration_time", "jerk_time", "shaper", "shaper_frequency",
                        "settling_tolerance") + PACE_KEYS),
}

# Tables whose absent optional keys stay absent instead of holding None: the `[sweep]` keys
# depend on the kind of sweep (pose grid or parameter grid), and its analysis reads them so.
SPARSE_TABLES = ("sweep",)

# Tables resolved with their defaults when absent: the robot's damping model, which every
# analysis reads.
FILLED_TABLES = ("damping",)

# Keys holding paths that are resolved against the scenario's directory, then the cwd.
PATH_KEYS = (("model", "file"), ("trajectory", "file"))

# Tables and arrays nested in a scenario at most: the schema needs four levels; a value nested
# thousands deep (a dotted key of 5000 parts, `--set x=[[[...]]]`) would exhaust Python's
# recursion limit where it is copied or validated.
MAX_DEPTH = 32

_NAME_PATTERN = re.compile(r"[A-Za-z0-9_.-]+")


def _is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_finite(value):
    return _is_number(value) and math.isfinite(value)


def _is_scalar(value):
    return isinstance(value, (bool, str)) or _is_finite(value)


def _is_grid_values(value):
    """A non-empty list of finite numbers, of booleans or of strings (one parameter's values)."""
    if not (isinstance(value, list) and value):
        return False
    return (all(_is_finite(v) and not isinstance(v, bool) for v in value)
            or all(isinstance(v, bool) for v in value) or all(isinstance(v, str) for v in value))


class _Type(NamedTuple):
    phrase: str        # "must be <phrase>"
    noun: str          # used by constraint phrases: "a positive <noun>"
    check: object      # value -> bool
    convert: object    # value -> resolved value
    doc: str           # for the documentation table
    entry: object = None  # for tables: entry value -> bool, checked entry by entry


TYPES = {
    "str": _Type("a string", "string", lambda v: isinstance(v, str), str, "string"),
    "bool": _Type("a boolean", "boolean", lambda v: isinstance(v, bool), bool, "boolean"),
    "int": _Type("an integer", "integer",
                 lambda v: isinstance(v, int) and not isinstance(v, bool), int, "integer"),
    "float": _Type("a finite number", "number", _is_finite, float, "number"),
    "float[3]": _Type("a list of 3 finite numbers", "list",
                      lambda v: isinstance(v, list) and len(v) == 3
                      and all(map(_is_finite, v)),
                      lambda v: [float(x) for x in v], "3 numbers"),
    "float[]": _Type("a non-empty list of finite numbers", "list",
                     lambda v: isinstance(v, list) and bool(v) and all(map(_is_finite, v)),
                     lambda v: [float(x) for x in v], "list of numbers"),
    "float|float[]": _Type("a finite number or a non-empty list of them", "number",
                           lambda v: _is_finite(v) or (isinstance(v, list) and bool(v) and all(map(_is_finite, v))),
                           lambda v: float(v) if _is_number(v) else [float(x) for x in v], "number or list of numbers"),
    "int[]": _Type("a non-empty list of integers", "list",
                   lambda v: isinstance(v, list) and bool(v)
                   and all(isinstance(x, int) and not isinstance(x, bool) for x in v),
                   lambda v: [int(x) for x in v], "list of integers"),
    "float[][]": _Type("a non-empty list of equally long, non-empty lists of finite numbers", "list",
                       lambda v: isinstance(v, list) and bool(v) and all(isinstance(r, list) and r for r in v)
                       and len({len(r) for r in v}) == 1 and all(_is_finite(x) for r in v for x in r),
                       lambda v: [[float(x) for x in r] for r in v], "list of lists of numbers (rows)"),
    "str|str[]": _Type("a string or a non-empty list of strings", "string",
                       lambda v: isinstance(v, str) or (isinstance(v, list) and bool(v)
                                                        and all(isinstance(x, str) for x in v)),
                       lambda v: v if isinstance(v, str) else list(v), "string or list of strings"),
    "str[]": _Type("a non-empty list of strings", "list",
                   lambda v: isinstance(v, list) and bool(v)
                   and all(isinstance(x, str) for x in v),
                   list, "list of strings"),
    "table": _Type("a table", "table", lambda v: isinstance(v, dict), copy.deepcopy,
                   "table (any keys)"),
    "table[scalar]": _Type("a table", "table", lambda v: isinstance(v, dict),
                           dict, "table of numbers, booleans, strings", entry=_is_scalar),
    "table[grid]": _Type("a table", "table", lambda v: isinstance(v, dict) and bool(v),
                         copy.deepcopy, "table of lists", entry=_is_grid_values),
}

# Phrases of table entries that fail `_Type.entry`, by type name.
ENTRY_PHRASES = {
    "table[scalar]": "a finite number, a boolean or a string",
    "table[grid]": "a non-empty list of finite numbers, of booleans or of strings",
}


class _Constraint(NamedTuple):
    check: object   # value -> bool, after the type check passed
    phrase: str     # formatted with the type's noun
    doc: str        # short form for the documentation table


CONSTRAINTS = {
    "positive": _Constraint(lambda v: v > 0, "a positive {noun}", "> 0"),
    "nonnegative": _Constraint(lambda v: v >= 0, "a non-negative {noun}", "≥ 0"),
    "unit_interval": _Constraint(lambda v: 0 <= v <= 1, "a {noun} in [0, 1]", "in [0, 1]"),
    "positive_list": _Constraint(lambda v: all(x > 0 for x in v), "a {noun} of positive numbers",
                                 "all > 0"),
    "positive_each": _Constraint(lambda v: all(x > 0 for x in (v if isinstance(v, list) else [v])),
                                 "a positive {noun} or a list of them", "> 0"),
    "nonnegative_each": _Constraint(lambda v: all(x >= 0 for x in (v if isinstance(v, list) else [v])),
                                    "a non-negative {noun} or a list of them", "≥ 0"),
    "damping": _Constraint(lambda v: 0 <= v < 1, "a {noun} in [0, 1)", "in [0, 1)"),
    "identifier": _Constraint(lambda v: _NAME_PATTERN.fullmatch(v) is not None,
                              "a {noun} of letters, digits, `_`, `-` and `.`",
                              "(letters, digits, _ - .)"),
}

TABLE_DOCS = {
    "model": "the robot: a builder file and its parameters",
    "trajectory": "rigid end-effector motion followed by the trajectory analyses",
    "damping": "the robot's one damping model, applied by every analysis that damps (KED, the transient, "
               "the FRF and its damped modes); stored in each group that applies it (subgroup `damping`)",
    "modes": "natural frequencies and mode shapes at one pose, actuators locked",
    "stiffness": "Cartesian compliance and stiffness of the end effector at one pose, actuators locked "
                 "(compliant drives and lumped springs with their stiffness)",
    "transient": "full FFR transient: Newmark-β family with Baumgarte stabilisation",
    "ked": "kineto-elastodynamics: piecewise-constant modal superposition",
    "frequencies": "natural frequencies along the trajectory",
    "inverse_dynamics": "actuator forces and joint reactions of the rigid robot",
    "frf": "frequency response functions at one configuration, actuators locked",
    "servo": "the actuators' cascade position/velocity controllers (`[transient] drive = \"servo\"`, "
             "`drives = \"servo\"` of [modes], [frequencies], [state_space])",
    "state_space": "the robot linearised at a pose with its drives, A, B, C, D (python-control's "
                   "`sim.state_space`) and its frequency response",
    "identification": "fit of model parameters to measured natural frequencies",
    "identification.configuration_1": "the reference configuration: its modes are paired by order, "
                                      "`modes` or `shapes`, and tracked configurations start from them",
    "identification.configuration_<n>": "further configurations, any number, `n` = 2, 3, ... (numbered "
                                        "in the order they are tracked and reported)",
    "sweep": "a pose grid (frequency map: `axes`, one key per axis, `pose`, `count`; stiffness map: "
             "`analysis = \"stiffness\"`) or a "
             "parameter grid (`analysis`, `parameters`), run on a local process pool or a "
             "Dask cluster; failed cases are recorded",
}


@dataclass(frozen=True)
class Scenario:
    """A validated scenario.

    Attributes
    ----------
    name : str
        Run name (the ``name`` key, else the file's stem).
    path : Path
        The scenario file as given by the user.
    text : str
        The original TOML text.
    data : dict
        Validated contents: every key of each present table, defaults filled in, model and
        table paths absolute.
    model_file : Path
        Absolute path of the model builder file.
    model_parameters : dict
        Keyword arguments for the builder.
    overrides : tuple of str
        The ``KEY=VALUE`` overrides applied on top of the file.
    """

    name: str
    path: Path
    text: str
    data: dict
    model_file: Path
    model_parameters: dict
    overrides: tuple = ()

    @property
    def analyses(self):
        """Names of the analysis tables present, in execution order."""
        return tuple(name for name in ANALYSIS_TABLES if name in self.data)

    # The schema, for the layers below the app: analyses get it through the scenario they are
    # given rather than import this module.
    @staticmethod
    def keys(table):
        """The keys of table ``table``: ``{name: Key}`` (empty for an unknown table)."""
        spec = SCHEMA.get(table)
        return {k: v for k, v in spec.items() if isinstance(v, Key)} if isinstance(spec, dict) else {}

    def checked(self, table, key, value, where):
        """``value`` for ``[table] key`` checked and converted as the file's value would be
        (:class:`SimError` naming ``where`` if it is not valid)."""
        return _check(SCHEMA[table][key], value, (table, key), _Origin(where, set()))

    @staticmethod
    def defaults(table, where):
        """The resolved table ``table`` of an absent scenario table: its defaults
        (:func:`table_defaults`)."""
        return table_defaults(table, where)


def load_scenario(path, overrides=()):
    """Read, override and validate a scenario file.

    Parameters
    ----------
    path : str or Path
        The TOML file.
    overrides : sequence of str
        ``KEY=VALUE`` strings (``ked.intervals=256``); VALUE is read as a TOML value, or as a
        string when it is not one.

    Returns
    -------
    Scenario

    Raises
    ------
    SimError
        Unreadable or malformed file, unknown key, wrong type or value, missing file.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SimError(f"{path}: scenario file not found") from None
    except IsADirectoryError:
        raise SimError(f"{path}: is a directory, not a scenario file") from None
    except UnicodeDecodeError as exc:
        raise SimError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except OSError as exc:
        raise SimError(f"{path}: cannot read ({exc.strerror})") from None
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SimError(f"{path}: invalid TOML: {exc}") from None
    except RecursionError:
        raise SimError(f"{path}: invalid TOML: arrays or tables nested too deeply") from None
    check_depth(raw, path)

    overrides = tuple(overrides)
    raw = apply_overrides(raw, overrides)
    origin = _Origin(str(path), {_parse_override(text)[0] for text in overrides})
    return _scenario(raw, origin, path, text, path.parent, overrides)


def make_scenario(raw, where, resolve_model=True):
    """A scenario from its tables as a dict (the Python interface, :mod:`sim.app.api`):
    validated as a file would be, messages starting with ``where``, relative paths under the
    working directory; with ``resolve_model`` False, ``model.file`` is not looked up (a model
    built in Python)."""
    check_depth(raw, where)
    return _scenario(raw, _Origin(where, set()), Path(where), "", Path.cwd(), (), resolve_model)


def check_depth(value, where):
    """SimError naming the key path where ``value`` (parsed TOML) nests tables or arrays more
    than :data:`MAX_DEPTH` deep.  Iterative: it must not recurse itself."""
    stack = [(value, ())]
    while stack:
        node, keys = stack.pop()
        if len(keys) > MAX_DEPTH:
            path = "".join(f"[{k}]" if isinstance(k, int) else f".{k}" for k in keys[:4]).lstrip(".")
            raise SimError(f"{where}: `{path}...`: tables or arrays nested more than {MAX_DEPTH} deep")
        items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
        stack.extend((child, (*keys, key)) for key, child in items if isinstance(child, (dict, list)))


def _scenario(raw, origin, path, text, directory, overrides, resolve_model=True):
    data = _validate(raw, origin)
    if data["name"] is None:
        data["name"] = path.stem
    for keys in PATH_KEYS:
        table = data.get(keys[0])
        if table is not None and table[keys[1]] is not None and (resolve_model or keys[0] != "model"):
            table[keys[1]] = str(_resolve_file(table[keys[1]], directory, keys, origin))
    return Scenario(name=data["name"], path=path, text=text, data=data,
                    model_file=Path(data["model"]["file"]),
                    model_parameters=dict(data["model"]["parameters"]),
                    overrides=overrides)


def toml_value(value):
    """``value`` as TOML text (a value's literal: ``1e-05``, ``"a"``, ``[1, 2]``, ``{ a = 1 }``).

    Python and numpy scalars, strings, sequences, arrays and mappings; ``tomllib`` reads the
    text back to the same value (floats exactly).

    Raises
    ------
    TypeError
        A value TOML cannot hold (None, a date's Python object, an arbitrary object).
    """
    if hasattr(value, "tolist"):     # a numpy array or scalar (numpy is not imported here)
        value = value.tolist()
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else ("nan" if math.isnan(value) else ("inf" if value > 0 else "-inf"))
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)    # JSON's escapes are TOML's basic-string escapes
    if isinstance(value, Mapping):
        return "{ " + ", ".join(f"{json.dumps(str(k), ensure_ascii=False)} = {toml_value(v)}"
                                for k, v in value.items()) + " }"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    raise TypeError(f"{value!r} has no TOML value")


def override_texts(overrides):
    """The ``KEY=VALUE`` strings of ``overrides``: None, one such string, a sequence of them,
    or a mapping ``{"ked.intervals": 256}`` (values as Python objects, :func:`toml_value`).

    Raises
    ------
    SimError
        A mapping's value that TOML cannot hold, or an override that is not a string.
    """
    if overrides is None:
        return ()
    if isinstance(overrides, str):
        return (overrides,)
    if isinstance(overrides, Mapping):
        texts = []
        for key, value in overrides.items():
            try:
                texts.append(f"{key}={toml_value(value)}")
            except TypeError as exc:
                raise SimError(f"override {key}: {exc}") from None
        return tuple(texts)
    texts = tuple(overrides)
    bad = [text for text in texts if not isinstance(text, str)]
    if bad:
        raise SimError(f"overrides: expected KEY=VALUE strings or a mapping of keys to values, got {bad[0]!r}")
    return texts


def apply_overrides(data, overrides):
    """Return a copy of `data` with ``KEY=VALUE`` overrides applied.

    Parameters
    ----------
    data : dict
        Parsed TOML.
    overrides : sequence of str
        ``dotted.key=VALUE``; missing intermediate tables are created. The result is not
        validated here: `load_scenario` validates it like file contents.

    Returns
    -------
    dict

    Raises
    ------
    SimError
        Malformed override, or a key path that goes through a non-table value.
    """
    data = copy.deepcopy(data)
    for text in overrides:
        keys, value = _parse_override(text)
        table = data
        for depth, key in enumerate(keys[:-1]):
            table = table.setdefault(key, {})
            if not isinstance(table, dict):
                raise SimError(f"--set {text}: `{'.'.join(keys[:depth + 1])}` is not a table")
        table[keys[-1]] = value
    return data


def _parse_override(text):
    """Split ``a.b=VALUE`` into (("a", "b"), value)."""
    key, sep, value = text.partition("=")
    keys = tuple(part.strip() for part in key.split("."))
    if not sep or not all(keys):
        raise SimError(f"--set {text}: expected KEY=VALUE, e.g. ked.intervals=256")
    where = f"--set {key.strip()[:60]}"
    if len(keys) > MAX_DEPTH:
        raise SimError(f"{where}...: a key of {len(keys)} parts (tables nest at most {MAX_DEPTH} deep)")
    try:
        value = tomllib.loads(f"v = {value.strip()}")["v"]
    except tomllib.TOMLDecodeError:
        return keys, value.strip()
    except RecursionError:
        raise SimError(f"{where}: the value nests arrays or tables too deeply") from None
    check_depth(value, where)
    return keys, value


class _Origin(NamedTuple):
    """Where values came from: the file, except for key paths set with --set."""

    file: str
    overridden: set

    def of(self, keys):
        for n in range(len(keys), 0, -1):
            if tuple(keys[:n]) in self.overridden:
                return f"--set {'.'.join(keys[:n])}"
        return self.file


def _label(keys):
    """``[ked] intervals`` for a table key, ``name`` for a top-level key."""
    if len(keys) == 1:
        return keys[0]
    return f"[{'.'.join(keys[:-1])}] {keys[-1]}"


def _fail(origin, keys, phrase, value):
    raise SimError(f"{origin.of(keys)}: {_label(keys)} must be {phrase}, got {_show(value)}")


def _show(value):
    return repr(value) if isinstance(value, str) else _toml_repr(value)


def _toml_repr(value):
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, list):
        return "[" + ", ".join(_show(v) for v in value) + "]"
    return repr(value)


def _validate(raw, origin, schema=SCHEMA, prefix=()):
    """Check `raw` against `schema` and return the resolved table.

    Parameters
    ----------
    raw : dict
        Parsed TOML (after overrides).
    origin : _Origin
        Where the values came from, for messages.
    schema : dict
        A table of the schema.
    prefix : tuple of str
        Key path of this table.

    Returns
    -------
    dict
    """
    axes = _axis_keys(raw, schema)
    numbered = _numbered_keys(raw, schema)
    for key in raw:
        if key not in schema and key not in axes and not any(key in keys for keys in numbered.values()):
            keys = prefix + (key,)
            gone = moved(*keys, raw[key]) if len(keys) == 2 else None
            if gone:
                raise SimError(f"{origin.of(keys)}: {gone}")
            known = [k for k in schema if k != AXIS_KEY and k not in NUMBERED] + axes
            hint = difflib.get_close_matches(key, known, n=1)
            tip = f"; did you mean `{'.'.join(prefix + (hint[0],))}`?" if hint else ""
            raise SimError(f"{origin.of(keys)}: unknown key `{'.'.join(keys)}`{tip}")
    resolved = {}
    for key, spec in schema.items():
        keys = prefix + (key,)
        if key == AXIS_KEY:
            for axis in axes:
                resolved[axis] = _check(spec, raw[axis], prefix + (axis,), origin)
            continue
        if key in numbered:
            for name in numbered[key]:
                if not isinstance(raw[name], dict):
                    _fail(origin, prefix + (name,), "a table", raw[name])
                resolved[name] = _validate(raw[name], origin, spec, prefix + (name,))
            continue
        if key not in raw:
            if isinstance(spec, Key) and spec.default is REQUIRED:
                raise SimError(f"{origin.file}: missing required key `{'.'.join(keys)}`")
            if len(prefix) == 1 and prefix[0] in SPARSE_TABLES:
                continue
            if prefix == () and key == "model":
                raise SimError(f"{origin.file}: missing required table [model]")
            if prefix == () and key in FILLED_TABLES:
                resolved[key] = _validate({}, origin, spec, keys)
                continue
            if isinstance(spec, Key) and not (spec.type.startswith("table")
                                              and spec.default is None):
                resolved[key] = copy.deepcopy(spec.default)
            continue
        value = raw[key]
        if isinstance(spec, dict):
            if not isinstance(value, dict):
                _fail(origin, keys, "a table", value)
            resolved[key] = _validate(value, origin, spec, keys)
        else:
            resolved[key] = _check(spec, value, keys, origin)
    if prefix == ():
        _check_cross_tables(resolved, origin)
    elif prefix == ("trajectory",):
        _check_trajectory(raw, origin)
    elif prefix == ("sweep",):
        _check_sweep(raw, origin)
    return resolved


def _axis_keys(raw, schema):
    """Keys of `raw` that stand for the schema's `AXIS_KEY`: the names listed in ``axes``."""
    if AXIS_KEY not in schema or not isinstance(raw.get("axes"), list):
        return []
    return [a for a in raw["axes"] if isinstance(a, str) and a in raw and a not in schema]


def _numbered_keys(raw, schema):
    """For each `NUMBERED` entry of `schema`, the keys of `raw` it stands for, by number."""
    return {key: sorted((k for k in raw if pattern.fullmatch(k)), key=lambda k: int(pattern.fullmatch(k)[1]))
            for key, pattern in NUMBERED.items() if key in schema}


def _check_sweep(raw, origin):
    """A sweep is either a pose grid or a parameter grid, with the keys of its kind."""
    def where(key):
        return f"{origin.of(('sweep', key))}: [sweep]"
    if "axes" in raw and "parameters" in raw:
        raise SimError(f"{where('parameters')} has both `axes` (pose grid) and `parameters` "
                       f"(parameter grid); a sweep is one or the other")
    if "parameters" in raw:
        for key in ("pose", "count"):
            if key in raw:
                raise SimError(f"{where(key)} {key} is not used by a parameter grid (it uses: "
                               f"analysis, parameters, workers, scheduler)")
        if "analysis" not in raw:
            raise SimError(f"{where('parameters')} a parameter grid needs `analysis`, the "
                           f"analysis run for each case (e.g. analysis = \"modes\")")
        return
    if raw.get("analysis", POSE_GRID_ANALYSES[0]) not in POSE_GRID_ANALYSES:
        raise SimError(f"{where('analysis')} a pose grid maps {' or '.join(POSE_GRID_ANALYSES)}; "
                       f"analysis `{raw['analysis']}` needs `parameters` (the parameter grid)")
    if raw.get("analysis") == "stiffness" and "count" in raw:
        raise SimError(f"{where('count')} count is not used by a stiffness map")
    if "axes" not in raw:
        raise SimError(f"{origin.file}: [sweep] needs `axes` (pose grid) or `parameters` "
                       f"(parameter grid)")
    for axis in raw["axes"]:
        if axis not in raw:
            raise SimError(f"{origin.file}: missing key `sweep.{axis}` ([min, max, number of "
                           f"points] of the grid axis named in `axes`)")


def table_defaults(name, where):
    """The resolved table `name` of an absent scenario table: its defaults.

    Parameters
    ----------
    name : str
        An analysis table (``"modes"``).
    where : str
        Who needs it, for the message (``"a.toml: [sweep] analysis"``).

    Returns
    -------
    dict

    Raises
    ------
    SimError
        The table has required keys.
    """
    try:
        return _validate({}, _Origin(where, set()), SCHEMA[name], (name,))
    except SimError as exc:
        raise SimError(f"{exc} (add a [{name}] table with it)") from None


def _check(spec, value, keys, origin):
    """Validate one value against its `Key`; return it converted."""
    kind = TYPES[spec.type]
    if not kind.check(value):
        _fail(origin, keys, kind.phrase, value)
    if kind.entry is not None:
        for name, entry in value.items():
            if not kind.entry(entry):
                _fail(origin, keys + (name,), ENTRY_PHRASES[spec.type], entry)
    if isinstance(spec.constraint, tuple):
        if value not in spec.constraint:
            allowed = ", ".join(f"`{c}`" for c in spec.constraint)
            hint = difflib.get_close_matches(value, spec.constraint, n=1)
            tip = f"; did you mean `{hint[0]}`?" if hint else ""
            raise SimError(f"{origin.of(keys)}: {_label(keys)} must be one of {allowed}, "
                           f"got {_show(value)}{tip}")
    elif spec.constraint is not None:
        rule = CONSTRAINTS[spec.constraint]
        if not rule.check(value):
            _fail(origin, keys, rule.phrase.format(noun=kind.noun), value)
    return kind.convert(value)


def _check_trajectory(raw, origin):
    """Each trajectory kind uses exactly its own keys (KIND_KEYS)."""
    kind = raw["kind"]
    required, optional = KIND_KEYS[kind]
    for key in raw:
        if key != "kind" and key not in required + optional:
            keys = ("trajectory", key)
            uses = ", ".join(required + optional)
            raise SimError(f"{origin.of(keys)}: {_label(keys)} is not used by kind "
                           f"`{kind}` (it uses: {uses})")
    for key in required:
        if key not in raw:
            raise SimError(f"{origin.file}: missing key `trajectory.{key}` "
                           f"(required by kind `{kind}`)")
    if kind == "polynomial" and len(raw["start"]) != len(raw["end"]):
        raise SimError(f"{origin.of(('trajectory', 'end'))}: [trajectory] start and end must "
                       f"have the same length, got {len(raw['start'])} and {len(raw['end'])}")


def _check_cross_tables(data, origin):
    """Rules between tables: something to run, and a trajectory for trajectory analyses."""
    present = [name for name in ANALYSIS_TABLES if name in data]
    if not present:
        tables = ", ".join(f"[{name}]" for name in ANALYSIS_TABLES)
        raise SimError(f"{origin.file}: no analysis to run; add one of {tables}")
    servo = [f"[{name}] drives" for name in ("modes", "frequencies", "ked", "state_space", "frf")
             if (data.get(name) or {}).get("drives") == "servo"]
    servo += ["[transient] drive"] if (data.get("transient") or {}).get("drive") == "servo" else []
    if servo and "servo" not in data:
        raise SimError(f"{origin.file}: {servo[0]} = \"servo\" needs a [servo] table (kp, kv)")
    if "trajectory" not in data:
        for name in present:
            if name in NEEDS_TRAJECTORY and not (name == "transient"
                                                 and data[name].get("drive_law") is not None):
                raise SimError(f"{origin.file}: [{name}] needs a [trajectory] table")
    case = data.get("sweep", {}).get("analysis")
    if case is not None and case not in data:
        table_defaults(case, f"{origin.file}: [sweep] analysis = \"{case}\"")
    if case in NEEDS_TRAJECTORY and "trajectory" not in data and not (
            case == "transient" and (data.get("transient") or {}).get("drive_law") is not None):
        raise SimError(f"{origin.file}: [sweep] analysis `{case}` needs a [trajectory] table")


def _resolve_file(value, scenario_dir, keys, origin):
    """Absolute path of `value`: as given if absolute, else under the scenario's directory,
    else under the working directory."""
    given = Path(value).expanduser()
    candidates = [given] if given.is_absolute() else [scenario_dir / given, Path.cwd() / given]
    for candidate in candidates:
        if candidate.is_file():
            return candidate.resolve()
    places = " or ".join(str(c.parent.resolve()) for c in candidates)
    raise SimError(f"{origin.of(keys)}: {_label(keys)} `{value}` not found in {places}")


def _schema_rows():
    """The scenario reference's rows: ``(key, type, unit, default, description)`` per key, a
    table as ``("[table]", "table", "", "", what it is)``; then the trajectory keys by kind."""
    rows = []

    def walk(schema, prefix):
        for key, spec in schema.items():
            dotted = ".".join(prefix + (key,))
            if isinstance(spec, dict):
                rows.append((f"[{dotted}]", "table", "", "", TABLE_DOCS.get(dotted, "")))
                walk(spec, prefix + (key,))
                continue
            if key == AXIS_KEY:
                dotted = ".".join(prefix) + "." + key
            rows.append((dotted, _type_doc(spec), spec.unit, _default_doc(spec.default), spec.description))

    walk(SCHEMA, ())
    kinds = [(kind, ", ".join(required), ", ".join(optional) or "—") for kind, (required, optional) in KIND_KEYS.items()]
    return rows, kinds


def _rst(text):
    """The schema's texts as reStructuredText: `code` as ``code``, and outside it the
    characters that are markup there (``|x|`` a substitution, ``*`` emphasis) escaped."""
    parts = re.split(r"`([^`]+)`", text)
    return "".join(f"``{part}``" if k % 2 else re.sub(r"([|*\\])", r"\\\1", part) for k, part in enumerate(parts))


def schema_rst():
    """Return the scenario reference as reStructuredText: a section per table, each key with
    its type, unit, default and description, then the trajectory keys by ``kind``.

    Generated into ``docs/reference.rst`` by :func:`update_reference`; the tests check that
    the page holds the current text.

    Returns
    -------
    str
    """
    rows, kinds = _schema_rows()
    lines = ["Top level", "~~~~~~~~~", ""]
    for key, kind, unit, default, description in rows:
        if kind == "table":
            title = f"``{key}``"
            lines += ["", title, "~" * len(title), "", _rst(description), ""]
            continue
        given = {"required": "required", "—": "optional"}.get(default, f"default {_rst(default)}")
        lines += [f"``{key}`` -- {_rst(kind)}{f' [{unit}]' if unit else ''}; {given}", f"   {_rst(description)}", ""]
    lines += ["", "Trajectory keys by ``kind``", "~~~~~~~~~~~~~~~~~~~~~~~~~~~", "",
              "Any other trajectory key is an error.", "",
              ".. list-table::", "   :header-rows: 1", "",
              "   * - kind", "     - required", "     - optional"]
    for kind, required, optional in kinds:
        lines += [f"   * - ``{kind}``", f"     - {required}", f"     - {optional}"]
    return "\n".join(lines) + "\n"


def _type_doc(spec):
    doc = TYPES[spec.type].doc
    if isinstance(spec.constraint, tuple):
        return "one of " + ", ".join(f"`{c}`" for c in spec.constraint)
    if spec.constraint is not None:
        return f"{doc} {CONSTRAINTS[spec.constraint].doc}"
    return doc


def _default_doc(default):
    if default is REQUIRED:
        return "required"
    if default is None:
        return "—"
    if isinstance(default, str):
        return f'`"{default}"`'
    return "`{}`" if default == {} else f"`{_toml_repr(default)}`"


REFERENCE = Path(__file__).resolve().parents[2] / "docs" / "reference.rst"


def update_reference(path=REFERENCE):
    """Rewrite the scenario reference between the schema markers of ``docs/reference.rst``
    (``python -m sim.app.scenario``; run it after changing the schema)."""
    path = Path(path)
    text = path.read_text()
    start = text.index(".. schema:start")
    start = text.index("\n\n", start) + 2
    end = text.index(".. schema:end")
    from sim.app import files
    with files.replacing(path, "the scenario reference") as handle:
        handle.write((text[:start] + schema_rst() + "\n" + text[end:]).encode())


#: The former name, from when the reference lived in the README.
_update_readme = update_reference


if __name__ == "__main__":
    update_reference()
