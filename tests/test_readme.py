"""The README (issue 46): short, its set-up commands the ones CI runs, its command table
complete, its links alive.  The scenario reference it used to hold is ``docs/reference.rst``
(``tests/test_docs.py`` checks that page against the schema)."""
import re
from pathlib import Path

from sim.app.cli import build_parser

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()


def test_readme_is_short():
    assert len(README.splitlines()) <= 300, "the README holds the set-up, a tour, the commands and links; move the rest to docs/"


def test_set_up_commands_are_the_ones_ci_runs():
    """``.ci/run`` installs and tests exactly as the README's second set-up command says; the
    first installs the package and runs the default scenario, which exists."""
    blocks = re.findall(r"```bash\n(.*?)\n```", README.split("## Five-minute tour")[0], re.S)
    assert len(blocks) == 2, blocks
    ci = (ROOT / ".ci" / "run").read_text()
    for step in blocks[1].split(" && ")[1:]:
        assert f"\n{step}\n" in ci, f"README's `{step}` is not what .ci/run runs"
    assert "pip install -e ." in blocks[0] and (ROOT / blocks[0].split("sim run ")[1]).is_file()


def test_command_table_names_every_command():
    """Each ``sim`` subcommand has a row in the README's command table, and each row a command."""
    commands = set(next(a for a in build_parser()._actions if a.dest == "command").choices)
    rows = set(re.findall(r"^\| `sim (\w+)", README, re.M)) - {"--version"}
    assert rows == commands, (sorted(rows), sorted(commands))


def _relative_links(path):
    """The relative link targets of a Markdown (``[text](target)``, ``![alt](target)``) or
    reStructuredText (``figure::``, ``image::``, ``literalinclude::``, ``:download:``) file."""
    text = path.read_text()
    targets = re.findall(r"\]\(([^)\s]+)\)", text)
    targets += re.findall(r"^\s*\.\. (?:figure|image|literalinclude|include)::\s*(\S+)", text, re.M)
    targets += re.findall(r":download:`[^`<]*<([^>]+)>`", text)
    return [t.split("#")[0] for t in targets if not re.match(r"[a-z]+:", t) and not t.startswith("#")]


def test_every_relative_link_points_to_a_file():
    """README.md and every page of docs/: each relative link (a page, a figure, an included
    example) names a file that exists, so a moved page or figure breaks the tests, not the
    reader's link."""
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.rst"))]
    checked = 0
    for page in pages:
        for target in _relative_links(page):
            assert (page.parent / target).exists(), f"{page.relative_to(ROOT)}: link to {target} names no file"
            checked += 1
    assert checked >= 20, checked


def test_code_fences_are_closed():
    """A block cut in two by an edit swallows the rest of the page on GitHub."""
    assert README.count("```") % 2 == 0
