"""The documentation (issues 18, 46): the pages build without a warning, the API reference
documents the analyses and the library functions beneath them, the scenario reference is the
schema's current text, and the guide's code blocks are the lines of the example file the
tests run (``tests/test_api.py``)."""
import re
import subprocess
import sys
from pathlib import Path

from sim.app.scenario import REFERENCE, schema_rst

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"


def test_documentation_builds_without_warnings(tmp_path):
    result = subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-E", "-q", "-b", "html",
                             str(DOCS), str(tmp_path / "html")], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    api = (tmp_path / "html" / "api.html").read_text()
    for name in ("sim.modes", "sim.transient", "sim.ked", "sim.run", "sim.open_results", "sim.Section.tube",
                 "sim.ModelBuilder.add_beam_body", "sim.simulate", "sim.Drive", "sim.natural_modes",
                 "sim.ModalResult", "sim.Evaluator", "sim.Evaluator.evaluate", "sim.solve_pose", "sim.rigid_motion"):
        assert f'id="{name}"' in api, name
    pages = {path.stem for path in (tmp_path / "html").glob("*.html")}
    assert {"tour", "theory", "reference", "validation", "architecture", "running", "trust"} <= pages, pages
    reference = (tmp_path / "html" / "reference.html").read_text()
    assert "transient.newton_tol" in reference and "deviation_dynamic" in reference


def test_scenario_reference_is_the_schema():
    """``docs/reference.rst`` holds the scenario keys as the schema generates them: regenerate
    with ``python -m sim.app.scenario`` after changing a ``Key``."""
    assert REFERENCE == DOCS / "reference.rst"
    assert schema_rst() in REFERENCE.read_text(), \
        "docs/reference.rst is stale: regenerate it with `python -m sim.app.scenario`"


def test_every_library_name_is_exported_once():
    """``sim``'s table of names holds each name once and each resolves (``load_model`` was
    listed twice, the second entry silently winning)."""
    import ast
    import sim

    tree = ast.parse((DOCS.parent / "sim" / "__init__.py").read_text())
    table = next(node.value for node in tree.body if isinstance(node, ast.Assign)
                 and getattr(node.targets[0], "id", None) == "_LAZY")
    keys = [key.value for key in table.keys if key is not None]
    keys += [elt.value for key, value in zip(table.keys, table.values) if key is None
             for elt in value.generators[0].iter.elts]
    assert len(keys) == len(set(keys)), sorted(k for k in keys if keys.count(k) > 1)
    for name in ("simulate", "Drive", "natural_modes", "ModalResult", "Evaluator"):
        assert name in sim.__all__ and getattr(sim, name) is not None, name


def test_guide_quotes_every_part_of_its_example():
    """Every ``# [part]`` of the example is included by the guide, and every include names a
    part that exists (a renamed marker would silently drop code from the guide)."""
    example = (DOCS / "examples" / "five_bar.py").read_text()
    guide = (DOCS / "guide.rst").read_text()
    parts = set(re.findall(r"# \[(\w+)\]", example))
    quoted = set(re.findall(r":start-after: # \[(\w+)\]", guide))
    assert parts == quoted and len(parts) >= 9
    for part in parts:
        assert f"# [/{part}]" in example, part


def _written_datasets():
    """The dataset names the analyses write (``group.put(NAME, ...)`` in ``sim/analyses``), as
    regular expressions: an f-string's fields match a ``<placeholder>`` or a name."""
    import ast

    names = set()
    for path in (DOCS.parent / "sim" / "analyses").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "put"
                    and node.args):
                continue
            name = node.args[0]
            if isinstance(name, ast.Constant) and isinstance(name.value, str):
                names.add(re.escape(name.value))
            elif isinstance(name, ast.JoinedStr):
                names.add("".join(re.escape(part.value) if isinstance(part, ast.Constant) else r"(<[^>`]+>|[\w.]+)"
                                  for part in name.values))
    return names


def test_result_layout_names_every_dataset():
    """Every dataset an analysis writes is named (as ``name``) in the HDF5 layout of
    ``docs/reference.rst``: a new dataset without its documentation fails here."""
    layout = REFERENCE.read_text().split(".. _hdf5-layout:")[1]
    names = _written_datasets()
    assert len(names) > 80, len(names)
    missing = sorted(name for name in names if not re.search(f"``{name}``", layout))
    assert not missing, f"datasets written but not in docs/reference.rst's layout: {missing}"


#: Files the documentation names before they exist: the module issue 46 fences numba's
#: internals into (docs/architecture.rst).  Remove an entry once its file has landed.
PENDING = set()


def test_files_and_tests_the_pages_name_exist():
    """Every repository file a page names (``sim/...py``, ``tests/...``, ``models/...``,
    ``benchmarks/...``, ``scenarios/...``) exists, and every test it cites
    (``tests/FILE.py::test_name``) is defined there: the validation page stays exact as tests
    are renamed and modules move."""
    root = DOCS.parent
    checked = 0
    for page in sorted(DOCS.glob("*.rst")):
        text = page.read_text()
        for path in set(re.findall(r"\b((?:sim|tests|models|benchmarks|scenarios)/[a-z0-9_/]+\.(?:py|toml|csv))", text)):
            assert (root / path).is_file() or path in PENDING, f"{page.name}: {path} does not exist"
            checked += 1
        for path, name in set(re.findall(r"(tests/\w+\.py)::(\w+)", text)):
            assert f"def {name}(" in (root / path).read_text(), f"{page.name}: {path}::{name} is no test"
            checked += 1
        for name in set(re.findall(r"``(test_\w+)``", text)):         # a test named alone: in some test file
            assert any(f"def {name}(" in t.read_text() for t in (root / "tests").glob("test_*.py")), \
                f"{page.name}: {name} is no test"
    assert checked > 60, checked
