"""The docs: README.md, the site in docs/ and the man pages say what the code does, and stay short enough to
be read on call.

- the site builds strictly (Sphinx -W -n: a warning, a broken reference, a missing page or a runbook command
  whose exit code changed fails), and every command its pages show ran during that build;
- the command reference, the command pages' --help and the findings catalog are the code's own words
  (generated at build time) with one stable anchor per finding code; every bench/results/*.md is included;
- the man pages in docs/man are what tools/man.py makes from the code now, and render at 80 columns;
- README.md's examples are what the commands print now; it stays under ~200 lines of at most 80 columns and
  its links resolve.
"""
from __future__ import annotations

import html
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT

from logtool.findings import KINDS
from tools import cliref, docs, man, readme

DOCS = ROOT / "docs"
README = ROOT / "README.md"
RUN_BLOCK = re.compile(r"```\{logtool-run\}\n(.*?)```", re.S)


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """The site, built as `make docs` builds it; the build's failure is this fixture's."""
    import importlib.util
    assert importlib.util.find_spec("sphinx") and importlib.util.find_spec("myst_parser"), (
        "the docs extra is not installed: pip install -e '.[docs]' (make test does)")
    out = tmp_path_factory.mktemp("site")
    proc = subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-n", "-q", "-b", "html",
                           "-d", str(out / "doctrees"), str(DOCS), str(out / "html")],
                          capture_output=True, text=True, cwd=ROOT, timeout=900)
    assert proc.returncode == 0, f"the strict docs build failed:\n{proc.stderr[-8000:]}"
    return out / "html"


def _text(page: Path) -> str:
    """A built page's text, tags dropped."""
    return html.unescape(re.sub(r"<[^>]+>", "", page.read_text()))


def _sources() -> list[Path]:
    return sorted(p for p in DOCS.rglob("*.md") if "_generated" not in p.parts and "_build" not in p.parts)


# ---------------------------------------------------------------------------------------------------------
# The site


def test_the_site_has_every_page(site):
    for name in ["index", "findings", "reference", "output", "man", "repairs", "fleet", "performance",
                 "hostile-input", "architecture"]:
        assert (site / f"{name}.html").is_file(), name
    runbooks = ["broker-will-not-start", "records-missing", "disk-full", "corrupt-index", "audit-the-fleet",
                "undo-a-repair"]
    for name in runbooks:
        assert (site / "runbooks" / f"{name}.html").is_file(), name
    top = [p for p, _ in cliref.commands() if len(p) == 1]
    missing = [p[0] for p in top if not (site / "commands" / f"{p[0]}.html").is_file()]
    assert not missing, f"commands without a page of their own: {missing}"


def test_every_runbook_is_numbered_commands_with_their_output(site):
    for source in sorted((DOCS / "runbooks").glob("*.md")):
        text = source.read_text()
        steps = re.findall(r"^## (\d+)\. ", text, re.M)
        assert steps and steps == [str(i) for i in range(1, len(steps) + 1)], f"{source.name}: steps {steps}"
        assert "{logtool-session}" in text, f"{source.name} names no scenario"
        assert len(RUN_BLOCK.findall(text)) >= 2, f"{source.name} runs fewer than two commands"


def test_every_command_shown_ran_in_the_build(site):
    """Each line of a `{logtool-run}` block is on its built page, followed by what it printed (the build
    itself fails when one exits with another code than the page says)."""
    for source in _sources():
        lines = [line.strip() for block in RUN_BLOCK.findall(source.read_text()) for line in block.splitlines()
                 if line.strip()]
        if not lines:
            continue
        page = site / source.relative_to(DOCS).with_suffix(".html")
        text = _text(page)
        for line in lines:
            assert f"$ {line}" in text, f"{source.relative_to(ROOT)}: `{line}` is not on {page.name}"
        assert not re.search(r"/tmp/logtool-(?!incident)[\w]{8}", text), f"{page.name} shows a scratch path"


def test_the_reference_is_every_help_of_the_code(site):
    generated = (DOCS / "_generated" / "reference.md").read_text()
    assert generated == docs.reference_page(), "the reference the build wrote is not the code's --help"
    text = _text(site / "reference.html")
    for path in [(), *(p for p, _ in cliref.commands())]:
        for line in cliref.help_text(path).splitlines():
            assert line.strip() in text, f"{cliref.title(path)} --help: {line!r} not on reference.html"
    built = (site / "reference.html").read_text()
    for path in [(), *(p for p, _ in cliref.commands())]:
        assert f'id="{cliref.slug(path)}-help"' in built, cliref.slug(path)


def test_each_command_page_shows_its_help(site):
    for path, _ in cliref.commands():
        page = site / "commands" / f"{path[0]}.html"
        text = _text(page)
        first = cliref.help_text(path).splitlines()[0]
        assert first in text, f"{page.name} lacks `{cliref.title(path)} --help`"


def test_the_findings_catalog_has_one_anchor_per_code_in_order(site):
    built = (site / "findings.html").read_text()
    ids = re.findall(r'id="(lt\d{3})"', built)
    assert ids == [k.code.lower() for k in KINDS], "anchors differ from the catalog's codes"
    text = _text(site / "findings.html")
    for kind in KINDS:
        assert f"{kind.code} {kind.name}" in text
        for words in (kind.meaning, kind.remedy, docs.kafka_does(kind)):
            assert " ".join(words.replace("`", "").split()) in " ".join(text.split()), f"{kind.code}: {words[:60]!r}"
    examples = len(re.findall(r"Example \(", text))
    assert examples >= 30, f"only {examples} kinds have an example from a real run"


def test_performance_includes_every_bench_result(site):
    source = (DOCS / "performance.md").read_text()
    for result in sorted((ROOT / "bench" / "results").glob("*.md")):
        assert f"../bench/results/{result.name}" in source, f"{result.name} is not included"
    text = _text(site / "performance.html")
    for result in sorted((ROOT / "bench" / "results").glob("*.md")):
        title = result.read_text().splitlines()[0].lstrip("# ").strip()
        assert title in text, f"{result.name} is not on performance.html"


def test_no_page_links_to_design_notes_outside_the_checkout():
    for source in [README, *_sources()]:
        assert "DESIGN.md" not in source.read_text(), f"{source.relative_to(ROOT)} names DESIGN.md"


def test_the_docs_name_every_finding_and_every_command():
    pages = "\n".join(p.read_text() for p in _sources())
    for path, _ in cliref.commands():
        assert re.search(re.escape(cliref.title(path)) + r"\b", pages), f"no page names {cliref.title(path)}"


# ---------------------------------------------------------------------------------------------------------
# Man pages


def test_man_pages_are_current():
    want = man.pages()
    have = {p.relative_to(man.MAN).as_posix(): p.read_text() for p in man.MAN.glob("man[17]/*.[17]")}
    stale = sorted(n for n in set(want) | set(have) if want.get(n) != have.get(n))
    assert not stale, f"docs/man differs from the code: {stale}; run `python -m tools.man`"


def test_man_page_examples_paste_as_the_command_they_show():
    """An example longer than the page is broken where a shell reads it as one command (a trailing
    backslash), never where man would break it."""
    for _, cmd in cliref.commands():
        for command, _ in man._epilog(cmd.epilog)[0]:
            lines = man.shell_lines(command)
            assert all(len(line) <= man.EXAMPLE_WIDTH for line in lines if " " in line.strip()), lines
            assert [line.endswith(" \\") for line in lines] == [True] * (len(lines) - 1) + [False]
            assert " ".join(line.removesuffix(" \\").strip() for line in lines) == " ".join(command.split()), lines


def test_there_is_a_man_page_for_every_command_and_the_catalog():
    names = set(man.pages())
    assert "man1/logtool.1" in names and "man7/logtool-findings.7" in names
    for path, _ in cliref.commands():
        assert f"man1/{cliref.slug(path)}.1" in names


@pytest.mark.skipif(shutil.which("man") is None, reason="man is not installed")
@pytest.mark.parametrize("page", ["man1/logtool.1", "man1/logtool-truncate.1", "man7/logtool-findings.7"])
def test_man_pages_render_at_80_columns(page):
    proc = subprocess.run(["man", "--warnings", "-l", str(man.MAN / page)], capture_output=True, text=True,
                          env={**os.environ, "MANWIDTH": "80", "MANPAGER": "cat", "PAGER": "cat"}, timeout=60)
    assert proc.returncode == 0 and not proc.stderr.strip(), proc.stderr
    wide = [line for line in proc.stdout.splitlines() if len(line) > 80]
    assert not wide, wide
    assert "EXIT STATUS" in proc.stdout or "LT101 CRC_MISMATCH" in proc.stdout


# ---------------------------------------------------------------------------------------------------------
# README.md


@pytest.mark.slow
def test_readme_examples_are_what_the_commands_print():
    text = README.read_text()
    assert readme.BLOCK.search(text), "README.md has no example run blocks"
    assert readme.normalized(readme.regenerated(text)) == readme.normalized(text), (
        "README.md's examples are stale: run `make readme`")


def test_readme_is_short_and_narrow():
    lines = README.read_text().splitlines()
    assert len(lines) <= 205, f"README.md has {len(lines)} lines; the rest belongs on the docs site"
    wide = [f"{i}: {line}" for i, line in enumerate(lines, 1) if len(line) > 80]
    assert not wide, "README.md lines over 80 columns:\n" + "\n".join(wide)


def test_readme_quick_start_and_links():
    text = README.read_text()
    assert "make demo" in text and "make test" in text
    for target in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", text):
        if "://" in target:
            continue
        assert (ROOT / target).exists(), f"README.md links to {target}, which does not exist"
    for code in ("0", "1", "4", "8", "16"):
        assert re.search(rf"^\| {code} \|", text, re.M), f"exit code {code} is not in README.md's table"


# ---------------------------------------------------------------------------------------------------------
# The way from the terminal to the catalog


def test_explain_says_where_the_catalog_is():
    from conftest import run_logtool
    res = run_logtool("verify", "--explain", "LT101")
    assert "logtool-findings" in res.stdout, res.stdout
