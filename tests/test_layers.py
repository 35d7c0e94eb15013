"""The packages' layers (docs/architecture.rst): kernels <- model <- solvers <- analyses <- app.
Every import inside ``sim`` (at module level or inside a function) points down or sideways,
never up, and ``sim.app``'s modules import each other without a cycle."""
import ast
from pathlib import Path

import sim

ROOT = Path(sim.__file__).parent
ORDER = ["kernels", "model", "solvers", "analyses", "app"]
# Modules of the package root that sit between the layers: what each may import.
ROOT_MODULES = {"errors": -1, "linalg": 0}      # errors: nothing of sim; linalg: the kernels


def imports(path):
    """The ``sim.*`` modules a file imports, anywhere in it."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("sim") and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("sim."))
    return found


def level(module):
    """Layer index of ``sim.<package>...`` (None for the package root itself)."""
    parts = module.split(".")
    if len(parts) < 2:
        return None
    if parts[1] in ORDER:
        return ORDER.index(parts[1])
    return ROOT_MODULES.get(parts[1])


def test_no_import_points_up():
    checked, wrong = 0, []
    for package in ORDER:
        for path in (ROOT / package).rglob("*.py"):
            here = ORDER.index(package)
            for module in imports(path):
                there = level(module)
                checked += 1
                if there is not None and there > here:
                    wrong.append(f"{path.relative_to(ROOT.parent)} imports {module}")
    for name, allowed in ROOT_MODULES.items():
        for module in imports(ROOT / f"{name}.py"):
            there = level(module)
            if there is not None and there > allowed:
                wrong.append(f"sim/{name}.py imports {module}")
    assert checked > 300
    assert not wrong, "\n".join(sorted(wrong))


def test_app_modules_import_without_a_cycle():
    graph = {}
    for path in (ROOT / "app").glob("*.py"):
        name = f"sim.app.{path.stem}"
        graph[name] = {m for m in imports(path) if m.startswith("sim.app.") and m.count(".") == 2} - {name}
    graph = {k: {m for m in v if m in graph} for k, v in graph.items()}
    state = {}

    def visit(node, trail):
        if state.get(node) == "done":
            return
        assert state.get(node) != "open", "import cycle: " + " -> ".join(trail + [node])
        state[node] = "open"
        for nxt in sorted(graph[node]):
            visit(nxt, trail + [node])
        state[node] = "done"

    for node in sorted(graph):
        visit(node, [])
