"""Sphinx configuration of the documentation (``docs/``): the tour, the guide, the reference,
the theory, validation, architecture and the API.

Build: ``python -m sphinx -W -b html docs docs/_build`` (the tests build it warning-free).
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

project = "ffrsim"
author = "the ffrsim developers"
copyright = "the ffrsim developers"
extensions = ["sphinx.ext.autodoc", "numpydoc", "sphinx.ext.mathjax"]
exclude_patterns = ["_build"]
html_theme = "alabaster"
autodoc_member_order = "bysource"
numpydoc_show_class_members = False
numpydoc_validation_checks = set()
html_theme_options = {"page_width": "1200px", "sidebar_width": "230px"}
html_static_path = ["_static"]      # custom.css: long literals wrap inside table cells
