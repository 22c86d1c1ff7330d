"""Sphinx configuration: the API reference from the numpydoc docstrings, the
docs/*.md pages (MyST Markdown) as its chapters. Builds offline: a built-in
theme, no intersphinx, nothing fetched.

    python -m sphinx -W --keep-going -b html docs docs/_build/html
"""
import os
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, ROOT)  # the checkout's cuatomic (built in place, or installed editable)
os.environ.setdefault("MPLBACKEND", "Agg")

project = "cuatomic"
author = "the cuatomic authors"
copyright = "the cuatomic authors, MIT license"
release = version = "0.1.0"

extensions = [
    "sphinx.ext.autodoc",
    "numpydoc",
    "myst_parser",
]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build"]

# Links between pages (`[text](other.md#anchor)`) resolve to headings: MyST makes
# anchors of headings down to ### as GitHub does, so the same links work on GitHub.
myst_heading_anchors = 3
# docs/bench/*.md are tables written by the bench commands, without a title (a
# hidden toctree in index.md includes them): never edited by hand, so no title added.
suppress_warnings = ["toc.no_title"]

autodoc_default_options = {"members": False}
autodoc_mock_imports = ["matplotlib"]  # cuatomic.plots imports it only when it draws
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False

html_theme = "alabaster"
html_theme_options = {"font_family": "sans-serif", "head_font_family": "sans-serif"}
html_static_path = []
