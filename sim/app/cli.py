"""Command line: ``sim run | validate | modes | model | plot | report | compare | animate | export | info``.

Every error the user can cause ends as one line ``error: <message>`` on stderr with exit
code 2 and no traceback.  Ctrl-C, SIGTERM and SIGHUP stop a run the same way (what was
computed is kept, marked incomplete; exit 130, 143, 129); a second signal ends the process at
once.  Engine modules are imported by the commands that need them, so ``sim --help``,
``sim info`` and ``sim plot`` do not load the physics.
"""

import argparse
import atexit
import contextlib
import json
import os
import re
import signal
import sys
import threading
from pathlib import Path

from sim.errors import (STOP_SIGNALS, Interrupted, SimError, install_stop_handlers, nothing_to_keep,
                        one_line, restore_handlers, stop_in, stop_line)

EXIT_USER_ERROR = 2
EXIT_INTERRUPTED = 130
STOPPED = {128 + sig for sig in STOP_SIGNALS}   # the exit codes of a run stopped by a signal
EXIT_BROKEN_PIPE = 141          # 128 + SIGPIPE, what a shell reports for a killed writer
DEFAULT_MODE_COUNT = 6


def parse_value(text):
    """``"3"`` -> 3, ``"0.5"`` -> 0.5, ``"true"`` -> True, anything else -> the string."""
    lowered = text.strip().lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def parse_params(items):
    """``["a=1", "b=x"]`` -> ``{"a": 1, "b": "x"}`` for ``--param``."""
    params = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise SimError(f"--param {item}: expected NAME=VALUE")
        params[name.strip()] = parse_value(value)
    return params


def _existing_file(path, what):
    """`path` as a Path; SimError naming it if it is not an existing file."""
    path = Path(path)
    if not path.is_file():
        raise SimError(f"{path}: {what} not found")
    return path


def _load(args):
    """Scenario, available analyses checked."""
    from sim.app.api import available
    from sim.app.scenario import load_scenario

    return available(load_scenario(args.scenario, args.set))


def cmd_run(args):
    """Run every analysis of a scenario into one HDF5 file."""
    from sim.app.api import execute

    scenario = _load(args)
    if args.scheduler:
        if not re.fullmatch(r"([a-z]+://)?[A-Za-z0-9._\-]+:\d{1,5}", args.scheduler):
            raise SimError(f"--scheduler {args.scheduler!r}: expected a Dask scheduler address "
                           f"such as tcp://host:8786")
        if "sweep" not in scenario.data:
            raise SimError(f"--scheduler: {scenario.path} has no [sweep] table to distribute")
        scenario = _with_scheduler(scenario, args.scheduler)
    from sim.app.units import summary_text

    out, summaries, notes = execute(scenario, args.out, args.force, args.yes)
    for name, summary in summaries.items():
        items = ", ".join(f"{key} = {summary_text(value)}" for key, value in summary.items())
        print(f"{name}: {items}" if items else name)
    for line in notes:
        print(f"warning: {line}", file=sys.stderr)
    print(f"wrote {out}")
    return 0


def _with_scheduler(scenario, address):
    """The scenario with ``[sweep] scheduler = address``, recorded as an override."""
    from dataclasses import replace

    data = dict(scenario.data, sweep=dict(scenario.data["sweep"], scheduler=address))
    return replace(scenario, data=data,
                   overrides=scenario.overrides + (f"sweep.scheduler={address}",))


def cmd_validate(args):
    """Check a scenario and build its model."""
    from sim.app.api import load_model

    scenario = _load(args)
    load_model(scenario.model_file, **scenario.model_parameters)
    print(f"ok: {scenario.name}")
    return 0


@nothing_to_keep()      # a stop while the kernels compile ends at once
def cmd_modes(args):
    """Print the lowest elastic natural frequencies of a model at a pose."""
    if args.count < 1:
        raise SimError(f"--count must be a positive integer, got {args.count}")
    path = _existing_file(args.model, "model file")
    from sim.model.assembly import configuration
    from sim.app.api import load_model
    from sim.solvers.modal import modes

    from sim.model.mobility import NOT_FIXED, free_motions

    model = load_model(path, **parse_params(args.param))
    pose, q = configuration(model, args.pose, "--pose")
    result = modes(model, q, count=args.count)
    frequencies = [float(f) for f in result.frequencies_hz]
    mobility = free_motions(model, q).lines
    for line in model.warnings:
        print(f"warning: {line}", file=sys.stderr)
    if args.json:
        print(json.dumps({"frequencies_hz": frequencies,
                          "rigid_modes": int(result.rigid_count),
                          "free_motions": list(mobility),
                          "pose": [float(p) for p in pose],
                          "pose_names": list(model.pose_names)}))
        return 0
    at = " ".join(f"{n}={p:.6g}" for n, p in zip(model.pose_names, pose))
    print(f"{path.name} at {at}: the lowest {len(frequencies)} elastic modes (--count), "
          f"{int(result.rigid_count)} rigid-body modes")
    for line in mobility:
        print(f"  {line}")
    if free_motions(model, q).moving.shape[1] and not model.free_motions_declared:
        print(f"warning: {NOT_FIXED}", file=sys.stderr)
    print(f"{'mode':>4}  {'frequency [Hz]':>14}  dominant body (kinetic energy)")
    energy = result.body_energy
    for index, f in enumerate(frequencies):
        body = int(energy[index].argmax())
        print(f"{index + 1:>4}  {f:>14.4f}  {model.body_names[body]} "
              f"({100 * energy[index, body]:.0f} %)")
    return 0


def cmd_model(args):
    """Describe a model file: parameters, bodies, markers, joints, actuators, springs, sensors
    and end-effector coordinates."""
    from sim.app.api import load_model
    from sim.model.loader import documentation, parameters
    from sim.model.mobility import NOT_FIXED

    path = _existing_file(args.model, "model file")
    model = load_model(path, **parse_params(args.param))
    summary, described = documentation(path)
    given = parse_params(args.param)
    lines = [f"{path}: model `{model.name}`" + (f" -- {summary}" if summary else ""), "", "parameters:"]
    for name, default in parameters(path).items():
        value = given.get(name, default)
        note = described.get(name, "")
        lines.append(f"  {name} = {value!r}" + ("" if name not in given else f" (default {default!r})")
                     + (f"  {note}" if note else ""))
    lines += ["", f"bodies ({len(model.bodies)}; {model.n_v} velocity coordinates):"]
    for body in model.bodies:
        kind = f"flexible, {body.n_f} elastic coordinates" if body.n_f else "rigid"
        lines.append(f"  {body.name:<16} {body.mass:10.4g} kg  {kind}")
    body_name = lambda b: "ground" if b < 0 else model.bodies[b].name    # noqa: E731
    lines += ["", f"markers ({len(model.markers)}):"]
    lines += [f"  {m.name:<16} on {body_name(m.body)}" for m in model.markers]
    lines += ["", f"joints ({len(model.joints)}):"]
    lines += [f"  {j.name:<16} {j.kind:<12} {model.markers[j.marker_i].name if j.marker_i >= 0 else 'ground'} -> "
              f"{model.markers[j.marker_j].name if j.marker_j >= 0 else 'ground'}" for j in model.joints]
    lines += ["", f"actuators ({len(model.actuators)}):"]
    for a in model.actuators:
        unit = "rad" if a.kind == "angle" else "m"
        compliance = (f", compliant: {a.stiffness:g} N{' m' if unit == 'rad' else ''}/{unit}" if a.stiffness is not None
                      else ", rigid")
        motor = (f", rotor {a.rotor_inertia:g} kg m^2 through gear {a.gear_ratio:g}" if a.rotor_inertia
                 else "")
        lines.append(f"  {a.name:<16} {a.kind} [{unit}] of joint {model.joints[a.joint].name}{compliance}{motor}")
    if model.springs:
        lines += ["", f"springs ({len(model.springs)}):"]
        lines += [f"  {sp.name:<16} {model.markers[sp.marker_i].name} -> {model.markers[sp.marker_j].name}"
                  for sp in model.springs]
    lines += ["", f"sensors ({len(model.sensors)}):"]
    lines += [f"  {s.name:<16} {s.kind} [{s.units}] {s.description}".rstrip() for s in model.sensors]
    lines += ["", f"end effector: marker {model.markers[model.ee_marker].name}, coordinates "
              + ", ".join(f"{n} [{u}]" for n, u in zip(model.pose_names, model.pose_units))
              + ", home " + " ".join(f"{x:.6g}" for x in model.pose_home)]
    mobility = model.mobility
    lines += ["", f"free motions with the actuators locked, at home: {mobility.count}"]
    lines += [f"  {line}" for line in mobility.lines]
    if model.free_motions_declared:
        lines.append(f"  declared by the model: {model.free_motions_declared} ({model.free_motions_why})")
    elif mobility.moving.shape[1]:
        lines.append(f"  {NOT_FIXED}")
    for line in model.warnings:
        print(f"warning: {line}", file=sys.stderr)
    print("\n".join(lines))
    return 0


def cmd_plot(args):
    """Draw a result file's figures, one image per question (deviation, frequencies, modes,
    forces, ...)."""
    from sim.app.plots import plot_result

    path = _existing_file(args.results, "result file")
    out = Path(args.out) if args.out else path.with_suffix(".png")
    for key, target in plot_result(path, out):
        print(f"wrote {target} ({key})")
    _warn_newer(path)
    return 0


def _warn_newer(path):
    """Warn on stderr when a later run of the same scenario was written beside ``path``."""
    newer = newer_runs(path)
    if newer:
        print(f"warning: {path} is not the latest run of its scenario: {', '.join(map(str, newer))} "
              f"{'is' if len(newer) == 1 else 'are'} newer (sim run writes <name>-2.h5, ... beside an existing "
              f"result)", file=sys.stderr)


def newer_runs(path):
    """The result files a later ``sim run`` of the same scenario wrote beside ``path``
    (``<name>-2.h5``, ``<name>-3.h5``, ...: :func:`sim.app.results.reserve`), newer than it."""
    path = Path(path)
    base = re.sub(r"-\d+$", "", path.stem)
    siblings = [p for p in path.parent.glob(f"{base}-*{path.suffix}") if re.fullmatch(rf"{re.escape(base)}-\d+", p.stem)]
    siblings += [path.with_name(base + path.suffix)] if base != path.stem else []
    mtime = path.stat().st_mtime
    return sorted(p for p in siblings if p != path and p.is_file() and p.stat().st_mtime > mtime)


def cmd_export(args):
    """Write a result's skeleton over time as a VTK time series (ParaView)."""
    from sim.app.export import export

    path = _existing_file(args.results, "result file")
    out, frames = export(path, args.group, args.out, args.format)
    print(f"wrote {out} ({frames} frames)")
    return 0


def cmd_compare(args):
    """Overlay the deviations and frequencies of several result files in one figure."""
    from sim.app.plots import plot_compare

    paths = [_existing_file(p, "result file") for p in args.results]
    out = Path(args.out) if args.out else Path("comparison.png")
    labels = plot_compare(paths, out)
    print(f"wrote {out} ({'; '.join(labels)})")
    return 0


def cmd_animate(args):
    """Animate the robot of a result file (its deformation magnified) into a GIF or an MP4."""
    import math

    from sim.app.animate import AUTO, GROUPS, MAX_FRAMES, VIEWS, check_output, default_output, load_motion, render

    path = _existing_file(args.results, "result file")
    if args.group is not None and args.group not in GROUPS:
        raise SimError(f"--group {args.group}: expected one of {', '.join(GROUPS)}")
    if args.mode is not None and args.mode < 1:
        raise SimError(f"--mode must be a positive integer (1 is the lowest mode), got {args.mode}")
    if args.mode is not None and args.group not in (None, "modes"):
        raise SimError(f"--mode applies to --group modes, not --group {args.group}")
    if args.scale is not None and not (math.isfinite(args.scale) and args.scale > 0):
        raise SimError(f"--scale must be a positive number, got {args.scale}")
    if args.frames is not None and not 2 <= args.frames <= MAX_FRAMES:
        raise SimError(f"--frames must be between 2 and {MAX_FRAMES}, got {args.frames}")
    if args.view != AUTO and args.view not in VIEWS:
        raise SimError(f"--view {args.view}: expected one of {AUTO}, {', '.join(VIEWS)}")
    if args.out:
        check_output(args.out)       # before reading the file: a wrong name fails at once
    motion = load_motion(path, args.group, args.mode, args.frames)
    out = Path(args.out) if args.out else default_output(path, motion)
    scale = render(motion, out, scale=args.scale, view=args.view)
    print(f"wrote {out} ({len(motion)} frames, deformation x {scale:g})")
    return 0


def cmd_report(args):
    """Write one self-contained HTML page of a result file."""
    from sim.app.report import report

    path = _existing_file(args.results, "result file")
    out = report(path, args.out, animation=not args.no_animation)
    print(f"wrote {out}")
    _warn_newer(path)
    return 0


def cmd_info(args):
    """List what a result file holds."""
    from sim.app.results import describe

    print(describe(_existing_file(args.results, "result file")))
    return 0


class _Version(argparse.Action):
    """``--version``: ``sim.__version__``."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS, help=None):
        super().__init__(option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        from sim import __version__
        print(f"ffrsim {__version__}")
        parser.exit()


EXAMPLES = {
    "run": "examples:\n  sim run scenarios/navaro_modes.toml\n"
           "  sim run scenarios/rrru3_circle.toml --set trajectory.omega=12 --out results/fast.h5\n"
           "  sim run my_robot.toml --force --yes",
    "validate": "examples:\n  sim validate scenarios/rrru3_circle.toml\n"
                "  sim validate my_robot.toml --set model.parameters.elements=8",
    "modes": "examples:\n  sim modes models/navaro.py\n  sim modes models/navaro.py --pose 0.05 0 0 --count 8\n"
             "  sim modes models/rrru3.py --param elements_per_link=8 --json",
    "plot": "examples:\n  sim plot results/rrru3_circle.h5\n  sim plot results/rrru3_circle.h5 --out figure.pdf",
    "info": "examples:\n  sim info results/navaro_modes.h5",
    "report": "examples:\n  sim report results/rrru3_circle.h5\n  sim report results/navaro_modes.h5 --out navaro.html",
    "export": "examples:\n  sim export results/rrru3_circle.h5 --format vtk\n"
              "  sim export results/rrru3_circle.h5 --format vtk --group ked --out paraview/rrru3.vtu.series",
    "animate": "examples:\n  sim animate results/rrru3_circle.h5\n"
               "  sim animate results/rrru3_circle.h5 --group ked --view top --frames 60\n"
               "  sim animate results/navaro_modes.h5 --mode 3 --scale 0.2 --out mode3.gif",
}


def build_parser():
    """The argparse parser of ``sim``."""
    parser = argparse.ArgumentParser(
        prog="sim", description="Rigid-flexible multibody dynamics of parallel robots.")
    parser.add_argument("--version", action=_Version, help="show the installed version and exit")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def scenario_command(name, help_text, func, examples):
        command = commands.add_parser(name, help=help_text, description=help_text, epilog=examples,
                                      formatter_class=argparse.RawDescriptionHelpFormatter)
        command.add_argument("scenario", metavar="SCENARIO.toml")
        command.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                             help="override a scenario key, e.g. ked.intervals=256")
        command.set_defaults(func=func)
        return command

    run = scenario_command("run", "run every analysis a scenario names", cmd_run, EXAMPLES["run"])
    run.add_argument("--out", metavar="PATH",
                     help="result file (default: results/<scenario name>.h5)")
    run.add_argument("--force", action="store_true", help="replace an existing result file")
    run.add_argument("--yes", action="store_true",
                     help="run even when the estimated time exceeds an hour (memory limits stay)")
    run.add_argument("--scheduler", metavar="ADDRESS",
                     help="run the [sweep] cases on this Dask scheduler (tcp://host:port)")
    scenario_command("validate", "check a scenario and build its model", cmd_validate, EXAMPLES["validate"])

    modes = commands.add_parser("modes", help="natural frequencies of a model at a pose",
                                description="natural frequencies of a model at a pose", epilog=EXAMPLES["modes"],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    modes.add_argument("model", metavar="MODEL.py")
    modes.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                       help="builder parameter (int, float, true/false or string)")
    modes.add_argument("--pose", nargs="+", type=float, metavar="V",
                       help="end-effector coordinates in the model's order (default: home)")
    modes.add_argument("--count", type=int, default=DEFAULT_MODE_COUNT,
                       help=f"number of elastic modes (default {DEFAULT_MODE_COUNT})")
    modes.add_argument("--json", action="store_true", help="print one JSON object")
    modes.set_defaults(func=cmd_modes)

    model = commands.add_parser(
        "model", help="describe a model file: parameters, bodies, joints, actuators, sensors",
        description="List a model file's parameters (defaults, documentation), bodies, markers, joints, "
                    "actuators, springs, sensors and end-effector coordinates.  Example: "
                    "sim model models/navaro.py --param elements_per_link=2")
    model.add_argument("model", metavar="MODEL.py")
    model.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                       help="builder parameter (int, float, true/false or string)")
    model.set_defaults(func=cmd_model)

    plot = commands.add_parser("plot", help="draw a result file's figures", description="draw a result file's figures",
                               epilog=EXAMPLES["plot"], formatter_class=argparse.RawDescriptionHelpFormatter)
    plot.add_argument("results", metavar="RESULTS.h5")
    plot.add_argument("--out", metavar="FILE.png", help="image of the first figure (default: RESULTS.png); the others beside it, FILE-<question>.png")
    plot.set_defaults(func=cmd_plot)

    report = commands.add_parser("report", help="write one self-contained HTML page of a run",
                                 description="Write one self-contained HTML page of a result file: scenario and "
                                             "model, each analysis' summary and warnings, the figures, the "
                                             "animation and the provenance (no network needed to view it).",
                                 epilog=EXAMPLES["report"], formatter_class=argparse.RawDescriptionHelpFormatter)
    report.add_argument("results", metavar="RESULTS.h5")
    report.add_argument("--out", metavar="FILE.html", help="page (default: RESULTS.html)")
    report.add_argument("--no-animation", action="store_true", help="leave the animation out (faster)")
    report.set_defaults(func=cmd_report)

    compare = commands.add_parser(
        "compare", help="overlay the deviations and frequencies of several runs",
        description="Overlay the end-effector deviations (transient solid, KED dashed) and the natural "
                    "frequencies along the motion of several result files, labelled by the --set "
                    "overrides that differ between them (else by file name).  Example: "
                    "sim compare results/a.h5 results/a-2.h5 --out speeds.png")
    compare.add_argument("results", nargs="+", metavar="RESULTS.h5")
    compare.add_argument("--out", metavar="FILE.png", help="image (default: comparison.png)")
    compare.set_defaults(func=cmd_compare)

    animate = commands.add_parser(
        "animate", help="animate the robot of a result, its deformation magnified (GIF or MP4)",
        description="Draw the robot's skeleton in 3D, the rigid robot in grey under the deformed one,\n"
                    "the deformation magnified (automatically: the largest deflection drawn at a tenth\n"
                    "of the robot's size), frame by frame: the stored samples of a transient or KED\n"
                    "(up to 100, evenly picked), or one period of a mode.",
        epilog=EXAMPLES["animate"], formatter_class=argparse.RawDescriptionHelpFormatter)
    animate.add_argument("results", metavar="RESULTS.h5")
    animate.add_argument("--group", metavar="GROUP",
                         help="transient, ked or modes (default: the first the file has; modes with --mode)")
    animate.add_argument("--mode", type=int, metavar="N", help="mode number, 1 = lowest (group modes; default 1)")
    animate.add_argument("--scale", type=float, metavar="S",
                         help="magnification of the deformation (default: automatic, printed on the frames)")
    animate.add_argument("--view", default="auto", metavar="VIEW",
                         help="auto (default: top, front or side for a planar robot that deforms in its plane, "
                              "else iso), iso, top, front or side")
    animate.add_argument("--frames", type=int, metavar="N",
                         help="frames (default: 24 for a mode's period, up to 100 samples of a time history)")
    animate.add_argument("--out", metavar="FILE.gif",
                         help="animation, .gif or .mp4 (default: RESULTS_<group>[_mode<N>].gif)")
    animate.set_defaults(func=cmd_animate)

    export = commands.add_parser(
        "export", help="write a result's skeleton over time as a VTK time series (ParaView)",
        description="Write the robot's skeleton over time (flexible-body nodes and rigid-body markers joined by\n"
                    "lines) as one .vtu file per stored instant and a .vtu.series index ParaView opens as a time\n"
                    "series, with the deviation, section forces and stresses as point data.",
        epilog=EXAMPLES["export"], formatter_class=argparse.RawDescriptionHelpFormatter)
    export.add_argument("results", metavar="RESULTS.h5")
    export.add_argument("--format", default="vtk", metavar="FORMAT", help="vtk (the only one)")
    export.add_argument("--group", metavar="GROUP", help="transient or ked (default: the first the file has)")
    export.add_argument("--out", metavar="PATH",
                        help="series index, *.vtu.series (default: RESULTS_<group>.vtu.series)")
    export.set_defaults(func=cmd_export)

    info = commands.add_parser("info", help="list what a result file holds", description="list what a result file "
                               "holds: groups, status, datasets with shapes, units and descriptions",
                               epilog=EXAMPLES["info"], formatter_class=argparse.RawDescriptionHelpFormatter)
    info.add_argument("results", metavar="RESULTS.h5")
    info.set_defaults(func=cmd_info)
    return parser


def console():
    """Entry point of the ``sim`` console script and of ``python -m sim``: :func:`main` with the
    stop signals handled for the whole process, and ignored once it is done (a signal during
    the interpreter's shutdown must not turn a clean exit into a kill).  Does not return: the
    process ends with the command's exit code once the exit handlers have run and the streams
    are flushed, without the interpreter's teardown."""
    install_stop_handlers()
    code = _main(None)
    for sig in STOP_SIGNALS:
        signal.signal(sig, signal.SIG_IGN)
    if code in STOPPED or _threads_left():
        # Stopped by a signal: what was computed is written and closed, the line printed.  The
        # interpreter's teardown is skipped, as the signal's default action would: after a
        # stop that landed in numba's or llvmlite's machinery it can crash (an LLVM object
        # disposed twice), turning exit 130 into a segfault.  Skipped too when a model file
        # left a thread running: the interpreter would wait for it at exit, for ever, deaf
        # to the signals (ignored by now), though the command is done.
        _flush()
        os._exit(code)
    # The command is done and what it wrote is closed.  The interpreter's teardown would free,
    # module by module, every object numba's compiler, LLVM and scipy have built (its final
    # collection alone was a third of a plain `sim modes`; the rest 20-30 ms of a small run):
    # the exit handlers run and the streams are flushed here, and the process ends.
    atexit._run_exitfuncs()
    _flush()
    os._exit(code)


def _threads_left():
    """True if a thread other than the main one would keep the interpreter from exiting."""
    return any(not thread.daemon and thread.is_alive() for thread in threading.enumerate()
               if thread is not threading.main_thread())


def _flush():
    """Flush stdout and stderr before an ``os._exit``; an error there (a full disk, a closed
    pipe) cannot be reported any more."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass


def main(argv=None):
    """Run ``sim`` with ``argv`` in this process (stop signals handled for the call).

    Parameters
    ----------
    argv : list of str, optional
        Arguments without the program name (default: ``sys.argv[1:]``).

    Returns
    -------
    int
        0 on success, 2 for a user error, 128 + the signal number when stopped by a signal
        (130 Ctrl-C, 143 SIGTERM, 129 SIGHUP).
    """
    previous = install_stop_handlers()
    try:
        return _main(argv)
    finally:
        restore_handlers(previous)


def _main(argv):
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:
        # argparse has already printed its usage message.
        return exc.code if isinstance(exc.code, int) else EXIT_USER_ERROR
    except KeyboardInterrupt as exc:
        return _interrupted(exc)
    try:
        with _checked_stdout():
            code = args.func(args)
            sys.stdout.flush()      # here, where a failure can still be reported
        return code
    except KeyboardInterrupt as exc:
        return _interrupted(exc)
    except SimError as exc:
        stop = stop_in(exc)
        if stop is not None:
            # Raised while a stop signal was on its way: Python turns a KeyboardInterrupt met in
            # some C calls into a SystemError (numba's unpickling of a cached kernel while a
            # model file builds), which the model loader reports as the file's failure.
            if hasattr(exc, "result_path"):
                stop.result_path = exc.result_path
            return _interrupted(stop)
        message = one_line(exc) + _kept(exc)
    except BrokenPipeError:
        # The reader went away (`sim modes ... | head`): stop quietly, as Unix tools do, and
        # keep the interpreter's final flush from failing again.
        _drop_stdout()
        return EXIT_BROKEN_PIPE
    except FileNotFoundError as exc:
        message = f"{exc.filename}: not found" if exc.filename else one_line(exc)
    except OSError as exc:
        message = (f"{exc.filename}: {exc.strerror}" if exc.filename and exc.strerror
                   else one_line(exc))
    except MemoryError:
        message = "out of memory (reduce the sizes the scenario or model asks for)"
    except Exception as exc:
        stop = stop_in(exc)
        if stop is None:
            raise
        if hasattr(exc, "result_path"):
            stop.result_path = exc.result_path
        return _interrupted(stop)
    print(f"error: {message}", file=sys.stderr)
    return EXIT_USER_ERROR


class _Stdout:
    """Standard output whose write errors (a full disk, /dev/full as stdout) are a SimError
    naming it, what it holds dropped (the interpreter's final flush would fail again); a
    closed pipe stays a BrokenPipeError, handled quietly."""

    def __init__(self, stream):
        self._stream = stream

    def __getattr__(self, name):
        return getattr(self._stream, name)

    def write(self, text):
        return self._checked(self._stream.write, text)

    def flush(self):
        return self._checked(self._stream.flush)

    @staticmethod
    def _checked(method, *args):
        try:
            return method(*args)
        except BrokenPipeError:
            raise
        except OSError as exc:
            _drop_stdout()
            raise SimError(f"standard output: cannot write ({exc.strerror or one_line(exc)})") from None


@contextlib.contextmanager
def _checked_stdout():
    """``sys.stdout`` as a :class:`_Stdout` for the duration."""
    stream, sys.stdout = sys.stdout, _Stdout(sys.stdout)
    try:
        yield
    finally:
        sys.stdout = stream


def _drop_stdout():
    """Send standard output to /dev/null from here on (a stream without a descriptor, as
    under a test's capture, is left alone)."""
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (OSError, ValueError):
        pass


def _kept(exc):
    """``; incomplete result in PATH`` when a failed run wrote what it had computed."""
    path = getattr(exc, "result_path", None)
    return f"; incomplete result in {path}" if path else ""


def _interrupted(exc):
    """One line and the exit code of a stop signal (130 for a plain KeyboardInterrupt)."""
    print(stop_line(exc.signum if isinstance(exc, Interrupted) else signal.SIGINT, _kept(exc)), file=sys.stderr)
    return exc.exit_code if isinstance(exc, Interrupted) else EXIT_INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
