"""Sphinx configuration of logtool's docs. Build strictly (any warning fails) with `make docs`, or:

    python -m sphinx -W --keep-going -n -b html docs build/docs/html

Before the pages are read, tools/docs.py writes docs/_generated/ from the code: every command's --help
(from the Click objects) and the findings catalog (from logtool/findings.py, with real examples). The
`{logtool-run}` blocks run their commands during the build (docs/_ext/logtool_docs.py).
"""
from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path[:0] = [str(ROOT), str(HERE / "_ext")]

from logtool import __version__  # noqa: E402

project = "logtool"
author = "the logtool authors"
copyright = "the logtool authors, Apache-2.0"
version = release = __version__

extensions = ["myst_parser", "logtool_docs"]
source_suffix = {".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "_generated", "_ext", "man", ".gitignore"]
myst_heading_anchors = 3
myst_enable_extensions = ["deflist"]
nitpicky = True
smartquotes = False  # commands and file names in prose stay copyable

html_theme = "furo"
html_title = f"logtool {release}"
html_show_sourcelink = False
html_copy_source = False


def _generate(app, config) -> None:
    from tools.docs import generate
    generate(Path(app.srcdir) / "_generated")


def setup(app):
    app.connect("config-inited", _generate)
