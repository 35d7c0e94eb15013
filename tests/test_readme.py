"""The README's scenario reference is generated from the schema: keep them in sync."""
from pathlib import Path

from sim.app.scenario import schema_markdown


def test_readme_holds_current_schema():
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    assert schema_markdown() in readme, "README scenario reference is stale: regenerate it from schema_markdown()"
