"""``sim report RESULTS.h5``: one self-contained HTML page of a run, to read and to send.

The page holds the scenario and the model, every analysis' summary (what ``sim run`` printed)
and status, the warnings, the figures of ``sim plot`` (one per question, PNG embedded as
base64), the animation (a GIF beside the result file that ``sim animate`` made after the run,
else a short one made here) and the provenance (version, times, machine).  It loads nothing
from the network: it can be mailed, archived or opened offline.

Each section has an ``id`` (``scenario``, ``analyses``, ``analysis-<name>``, ``warnings``,
``figures``, ``figure-<question>``, ``animation``, ``provenance``) for links and for tests.
"""
import base64
import html
import io
import json
import os
import tempfile
from pathlib import Path

from sim.errors import SimError

# Frames of the animation made for the page when the result file has none beside it: a few
# seconds at the animations' rate, a few hundred kilobytes.
FRAMES = 40

STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 0 auto; max-width: 1560px;
       padding: 1em 2em; color: #222; }
h1 { font-size: 1.5em; margin-bottom: 0.2em; } h2 { border-bottom: 1px solid #ccc; margin-top: 1.6em; }
table { border-collapse: collapse; margin: 0.5em 0; } td, th { border: 1px solid #ddd; padding: 0.25em 0.6em;
text-align: left; vertical-align: top; } th { background: #f4f4f4; }
td.value { font-family: ui-monospace, monospace; }
.status-complete { color: #1a7f37; } .status-incomplete { color: #c62828; font-weight: bold; }
.warning { background: #fff4e5; border-left: 4px solid #f0a000; padding: 0.4em 0.8em; margin: 0.4em 0; }
img { max-width: 100%; height: auto; border: 1px solid #eee; }
pre { background: #f7f7f7; padding: 0.8em; overflow-x: auto; font-size: 0.85em; }
nav a { margin-right: 1em; }
.cards { display: flex; flex-wrap: wrap; gap: 0 2em; align-items: flex-start; }
.cards h3 { font-size: 1em; }
"""


def default_output(path):
    """``RESULTS.html`` beside the result file."""
    return Path(path).with_suffix(".html")


def report(path, out=None, animation=True):
    """Write the report page of a result file.

    Parameters
    ----------
    path : str or Path
        Result file (``sim run``).
    out : str or Path, optional
        HTML file; default ``RESULTS.html`` beside ``path``.
    animation : bool
        Embed an animation (an existing GIF beside the file, else one of :data:`FRAMES` frames
        made here, where the file holds a skeleton).

    Returns
    -------
    Path
        The page written (all or nothing: :func:`sim.app.files.replacing`).

    Raises
    ------
    SimError
        A missing or unreadable result file, an output that is not ``.html``.
    """
    path = Path(path)
    out = default_output(path) if out is None else Path(out)
    if out.suffix.lower() not in (".html", ".htm"):
        raise SimError(f"{out}: a report is an .html page")
    facts = read_facts(path)
    figures = draw_figures(path)
    gif, gif_note = make_animation(path) if animation else (None, "not asked for (--no-animation)")
    page = render(path, facts, figures, gif, gif_note)
    from sim.app import files

    with files.replacing(out, "the report") as handle:
        handle.write(page.encode("utf-8"))
    return out


def read_facts(path):
    """Provenance, scenario and per-analysis status, summary and warnings of a result file, as
    plain Python values."""
    from sim.app.results import _open, _value

    with _open(path) as handle:      # the one-line errors of `sim info`
        root = {key: _value(value) for key, value in handle.attrs.items()}
        analyses = {}
        for name, group in handle.items():
            if name.startswith("_") or not hasattr(group, "attrs"):
                continue
            attrs = {key: _value(value) for key, value in group.attrs.items()}
            analyses[name] = {"status": attrs.get("status", "complete"), "message": attrs.get("message", ""),
                              "wall_time_s": attrs.get("wall_time_s"),
                              "summary": _json(attrs.get("summary"), None)}
        warnings = _json(root.get("warnings"), None)
        if warnings is None:         # a file of an older version: the self-check again
            try:
                from sim.app import selfcheck
                warnings = selfcheck.warnings({name: handle[name] for name in analyses})
            except Exception as exc:  # noqa: BLE001 -- a page with the rest beats no page
                warnings = [f"(the self-check could not be run on this file: {exc})"]
    return {"root": root, "analyses": analyses, "warnings": list(warnings)}


def _json(text, default):
    try:
        return json.loads(text) if isinstance(text, str) else default
    except ValueError:
        return default


def draw_figures(path):
    """``[(key, title, PNG bytes)]``: the figures of ``sim plot``, one per question."""
    import matplotlib.pyplot as plt

    from sim.app.plots import PLOT_ROWS, figure, figures, nan_quiet
    from sim.app.results import lazy_result

    drawn = []
    with lazy_result(path, rows=PLOT_ROWS) as tree, nan_quiet():
        for key, text, panels in figures(tree):
            fig = figure(tree, panels, text)
            try:
                buffer = io.BytesIO()
                fig.savefig(buffer, format="png", dpi=fig.dpi)
            finally:
                plt.close(fig)
            drawn.append((key, text, buffer.getvalue()))
    return drawn


def make_animation(path):
    """``(GIF bytes or None, note)``: the newest GIF ``sim animate`` wrote beside the result
    file after it, else one of :data:`FRAMES` frames made now (None where the file holds no
    skeleton to animate: the note says why)."""
    from sim.app.animate import load_motion, render

    path = Path(path)
    mtime = path.stat().st_mtime
    beside = sorted((p for p in path.parent.glob(f"{path.stem}_*.gif") if p.stat().st_mtime >= mtime),
                    key=lambda p: p.stat().st_mtime)
    if beside:
        return beside[-1].read_bytes(), f"{beside[-1].name} (sim animate)"
    try:
        motion = load_motion(path, frames=FRAMES)
    except SimError as exc:
        return None, f"none: {str(exc).removeprefix(f'{path}: ')}"
    with tempfile.TemporaryDirectory(prefix="ffrsim-report-") as directory:
        gif = Path(directory) / "animation.gif"
        scale = render(motion, gif)
        data = gif.read_bytes()
    return data, f"group {motion.group}, {len(motion)} frames, deformation x {scale:g} (made for this page)"


def _e(value):
    return html.escape(str(value))


def _table(rows, header=None):
    head = "<tr>" + "".join(f"<th>{_e(h)}</th>" for h in header) + "</tr>" if header else ""
    body = "".join("<tr>" + "".join(f'<td{" class=value" if k else ""}>{_e(c)}</td>' for k, c in enumerate(row))
                   + "</tr>" for row in rows)
    return f"<table>{head}{body}</table>"


def _seconds(value):
    try:
        value = float(value)
    except (TypeError, ValueError):
        return "?"
    return f"{value * 1e3:.0f} ms" if value < 1 else f"{value:.1f} s"


def render(path, facts, figures, gif, gif_note):
    """The page's HTML text."""
    root, analyses = facts["root"], facts["analyses"]
    scenario = root.get("scenario", "")
    name = next((line.split("=", 1)[1].strip().strip('"') for line in str(scenario).splitlines()
                 if line.strip().startswith("name") and "=" in line), Path(path).stem)
    status = root.get("status", "?")
    parameters = _json(root.get("model_parameters"), {}) or {}
    overrides = _json(root.get("overrides"), []) or []
    machine = _json(root.get("machine"), None)
    parts = [f"<!DOCTYPE html><html lang=en><head><meta charset=utf-8><title>{_e(name)}: ffrsim report</title>"
             f"<style>{STYLE}</style></head><body>",
             f"<h1>{_e(name)}</h1><p>{_e(Path(path).name)}: run of {_e(root.get('created', '?'))}, "
             f"<span class=status-{_e(status)}>{_e(status)}</span>"
             + (f": {_e(root.get('message'))}" if root.get("message") else "") + "</p>",
             "<nav>" + "".join(f'<a href="#{k}">{t}</a>' for k, t in (
                 ("scenario", "scenario and model"), ("analyses", "analyses"), ("warnings", "warnings"),
                 ("figures", "figures"), ("animation", "animation"), ("provenance", "provenance"))) + "</nav>"]
    # scenario and model
    rows = [("model file", root.get("model_file", "?"))]
    rows += [(f"parameter {k}", v) for k, v in sorted(parameters.items())] or [("parameters", "(defaults)")]
    rows += [("overrides (--set)", ", ".join(overrides) or "none")]
    rows += [("analyses", ", ".join(analyses) or "none")]
    parts.append(f'<section id=scenario><h2>Scenario and model</h2>{_table(rows)}'
                 f"<details><summary>scenario file as run</summary><pre>{_e(scenario)}</pre></details></section>")
    # analyses
    parts.append("<section id=analyses><h2>Analyses</h2><div class=cards>")
    for group, info in analyses.items():
        head = (f'<h3>{_e(group)} <span class=status-{_e(info["status"])}>({_e(info["status"])}'
                + (f': {_e(info["message"])}' if info["message"] else "") + f")</span>, {_seconds(info['wall_time_s'])}</h3>")
        summary = info["summary"]
        if summary is None:
            table = "<p>(no summary stored: a file of an older version; <code>sim info</code> lists its datasets)</p>"
        elif not summary:
            table = "<p>(nothing to summarise)</p>"
        else:
            table = _table(list(summary.items()), ("quantity", "value"))
        parts.append(f'<div id="analysis-{_e(group)}">{head}{table}</div>')
    parts.append("</div></section>")
    # warnings
    warnings = facts["warnings"]
    parts.append("<section id=warnings><h2>Warnings</h2>"
                 + ("".join(f"<div class=warning>{_e(w)}</div>" for w in warnings) if warnings
                    else "<p>None: the self-checks passed.</p>") + "</section>")
    # figures
    parts.append("<section id=figures><h2>Figures</h2>")
    for key, title, png in figures:
        data = base64.b64encode(png).decode("ascii")
        parts.append(f'<figure id="figure-{_e(key)}"><img alt="{_e(title)}" src="data:image/png;base64,{data}">'
                     f"<figcaption>{_e(title)}</figcaption></figure>")
    if not figures:
        parts.append("<p>Nothing to draw in this file.</p>")
    parts.append("</section>")
    # animation
    parts.append("<section id=animation><h2>Animation</h2>")
    if gif is not None:
        data = base64.b64encode(gif).decode("ascii")
        parts.append(f'<img alt="animation" src="data:image/gif;base64,{data}"><p>{_e(gif_note)}</p>')
    else:
        parts.append(f"<p>{_e(gif_note)}</p>")
    parts.append("</section>")
    # provenance
    rows = [("ffrsim version", root.get("sim_version", "?")), ("result format", root.get("format_version", "?")),
            ("created (UTC)", root.get("created", "?")), ("run time", _seconds(root.get("wall_time_s"))),
            ("kernel loading", _seconds(root.get("kernels_load_time_s")))]
    rows += [(f"machine: {k}", v) for k, v in machine.items()] if isinstance(machine, dict) else \
        [("machine", "not stored (a file of an older version)")]
    rows += [("result file", os.path.abspath(path))]
    parts.append(f"<section id=provenance><h2>Provenance</h2>{_table(rows)}</section>")
    parts.append("</body></html>")
    return "\n".join(parts)
