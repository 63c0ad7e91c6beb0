"""Sphinx directives that put real output on the pages.

```{logtool-session} SCENARIO
```
starts a page's scratch copy of the bundled sample (tools/docs.py SCENARIOS; a page without one gets
`sample`), and

```{logtool-run}
logtool verify data          # exit 4
```
runs each line in it, in order, on a terminal 80 columns wide, and shows the command and what it printed.
A line ends in `# exit N` when it exits N (none: 0); any other exit code fails the build. A line `cd DIR`
moves the session (the session's directory is written /tmp/logtool-incident).
"""
from __future__ import annotations

from docutils import nodes
from docutils.parsers.rst import directives
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective

from tools import docs

_SESSIONS: dict[str, docs.Session] = {}


def _close(docname: str) -> None:
    s = _SESSIONS.pop(docname, None)
    if s is not None:
        s.close()


class SessionDirective(SphinxDirective):
    required_arguments = 1
    has_content = False
    option_spec = {"quiet": directives.flag}

    def run(self) -> list[nodes.Node]:
        scenario = self.arguments[0]
        if scenario not in docs.SCENARIOS:
            raise self.error(f"no scenario {scenario!r}; there are {', '.join(docs.SCENARIOS)}")
        _close(self.env.docname)
        _SESSIONS[self.env.docname] = docs.Session(scenario)
        if "quiet" in self.options:
            return []
        note = nodes.note()
        para = nodes.paragraph()
        para += nodes.Text("The output on this page is real: these commands ran when the docs were built, in ")
        para += nodes.literal(text=docs.DISPLAY)
        para += nodes.Text(", on a copy of the bundled sample log dir (")
        para += nodes.literal(text="fixtures/sample-logdir")
        para += nodes.Text(f") as data: {docs.SCENARIOS[scenario][0]}.")
        note += para
        return [note]


class RunDirective(SphinxDirective):
    has_content = True

    def run(self) -> list[nodes.Node]:
        session = _SESSIONS.get(self.env.docname)
        if session is None:
            session = _SESSIONS[self.env.docname] = docs.Session("sample")
        shown = []
        for line in self.content:
            line = line.strip()
            if not line:
                continue
            if line.startswith("$ "):
                line = line[2:]
            try:
                shown.append(session.run(line).shown())
            except docs.CommandFailed as e:
                raise self.error(str(e)) from None
        text = "\n".join(shown)
        block = nodes.literal_block(text, text)
        block["language"] = "console"
        return [block]


def _doc_read(app: Sphinx, doctree: nodes.document) -> None:
    _close(app.env.docname)


def _finished(app: Sphinx, exception: BaseException | None) -> None:
    for name in list(_SESSIONS):
        _close(name)


def setup(app: Sphinx) -> dict:
    app.add_directive("logtool-session", SessionDirective)
    app.add_directive("logtool-run", RunDirective)
    app.connect("doctree-read", _doc_read)
    app.connect("build-finished", _finished)
    return {"parallel_read_safe": False, "parallel_write_safe": True}
