"""The documentation (issue 18): the model-building guide and the API reference build without
a warning, and the guide's code blocks are the lines of the example file the tests run
(``tests/test_api.py``)."""
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"


def test_documentation_builds_without_warnings(tmp_path):
    result = subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-E", "-q", "-b", "html",
                             str(DOCS), str(tmp_path / "html")], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    api = (tmp_path / "html" / "api.html").read_text()
    for name in ("sim.modes", "sim.transient", "sim.ked", "sim.run", "sim.open_results", "sim.Section.tube",
                 "sim.ModelBuilder.add_beam_body"):
        assert f'id="{name}"' in api, name


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
