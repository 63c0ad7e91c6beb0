"""The man pages, written from the same Click objects as `--help` and from the findings catalog:
logtool(1), one page per command (logtool-verify(1), logtool-index-rebuild(1), ...) and logtool-findings(7).

    python -m tools.man [DIR]      # writes DIR/man1/*.1 and DIR/man7/*.7 (default docs/man)

The pages are kept in the repository (docs/man/) because pip installs them from there, with the package,
into the environment's share/man (pyproject.toml's data-files), where `man logtool` finds them;
tests/house/test_docs.py fails when they and the code differ. Nothing here depends on more than Click, so the
pages can be made without the docs' own dependencies.
"""
from __future__ import annotations

import inspect
import re
import sys
from pathlib import Path

import click

from logtool import __version__
from logtool.findings import KINDS
from tools import cliref
from tools.docs import FIX_WORDS, GROUP_TITLES, kafka_does, write_changed

ROOT = Path(__file__).resolve().parents[1]
MAN = ROOT / "docs" / "man"
SOURCE = f"logtool {__version__}"
MANUAL = "logtool manual"


def esc(text: str) -> str:
    """Text for roff: backslashes and hyphens escaped, a line never starting with a control character."""
    text = text.replace("\\", "\\e").replace("-", "\\-")
    return "\n".join("\\&" + line if line.startswith((".", "'")) else line for line in text.split("\n"))


def _plain(text: str) -> str:
    """Markdown-ish backquotes from the help texts, dropped: man shows the words."""
    return text.replace("`", "")


def _paragraphs(text: str) -> list[str]:
    out = []
    for para in re.split(r"\n\s*\n", inspect.cleandoc(text or "")):
        if para.strip():
            out.append(para)
    return out


def _prose(text: str) -> list[str]:
    """Help paragraphs as roff: re-flowed by man, except Click's \\b (no-rewrap) blocks."""
    lines = []
    for para in _paragraphs(text):
        if para.startswith("\b"):
            lines += [".PP", ".nf", esc(_plain(para.lstrip("\b").strip("\n"))), ".fi"]
        else:
            lines += [".PP", esc(_plain(" ".join(line.strip() for line in para.splitlines())))]
    return lines


# The columns an example command may take in the page: man's margin and the examples' indent take the rest of 80.
EXAMPLE_WIDTH = 66


def shell_lines(command: str, width: int = EXAMPLE_WIDTH) -> list[str]:
    """`command` as lines of at most `width` columns where it can be (a word longer stays whole), continued
    with a backslash as a shell reads them: man would otherwise break it where a pasted copy breaks too."""
    words, word, quote = [], "", ""
    for ch in command:  # split at spaces outside quotes: a jq filter stays one word
        if ch == " " and not quote:
            if word:
                words.append(word)
            word = ""
            continue
        if ch in "'\"" and quote in ("", ch):
            quote = "" if quote == ch else ch
        word += ch
    words.append(word)
    lines = [words[0]]
    for w in words[1:]:
        if len(lines[-1]) + 1 + len(w) + 2 <= width:
            lines[-1] += " " + w
        else:
            lines[-1] += " \\"
            lines.append("    " + w)
    return lines


def _epilog(epilog: str | None) -> tuple[list[tuple[str, str]], str]:
    """(examples as (command, what it does), the exit-code paragraph) of a command's epilog."""
    examples: list[tuple[str, str]] = []
    exit_text = ""
    for para in _paragraphs(epilog or ""):
        para = para.lstrip("\b").strip("\n")
        if para.startswith("Examples:"):
            for line in para.splitlines()[1:]:
                if line.startswith("      ") and examples:
                    cmd, what = examples[-1]
                    examples[-1] = (cmd, f"{what} {line.strip()}".strip())
                elif line.strip():
                    examples.append((line.strip(), ""))
        elif para.startswith("Exit codes:"):
            exit_text = " ".join(line.strip() for line in para.splitlines())[len("Exit codes:"):].strip()
    return examples, exit_text


def _header(name: str, section: int, summary: str) -> list[str]:
    return [f'.TH "{name.upper()}" "{section}" "" "{SOURCE}" "{MANUAL}"', ".ad l", ".nh", ".SH NAME",
            f"{esc(name)} \\- {esc(_plain(summary.rstrip('.')))}"]


def command_page(path: tuple[str, ...]) -> str:
    ctx = cliref.context(path)
    cmd = ctx.command
    summary = cmd.short_help or "forensics and repair for Apache Kafka log directories, offline"
    lines = _header(cliref.slug(path), 1, summary)
    pieces = cmd.collect_usage_pieces(ctx)
    lines += [".SH SYNOPSIS", f".B {esc(cliref.title(path))}", esc(" ".join(pieces))]
    lines += [".SH DESCRIPTION", *_prose(cmd.help or "")]
    if isinstance(cmd, click.Group):
        lines += [".SH COMMANDS"]
        for name in cmd.list_commands(ctx):
            sub = cmd.get_command(ctx, name)
            assert sub is not None
            lines += [".TP", f".B {esc(name)}", esc(_plain(sub.get_short_help_str(200))) + " See",
                      f".BR {esc(cliref.slug((*path, name)))} (1)."]
    options = [p.get_help_record(ctx) for p in cmd.get_params(ctx) if isinstance(p, click.Option)]
    if any(options):
        lines += [".SH OPTIONS"]
        for record in options:
            if record is None:
                continue
            names, text = record
            lines += [".TP", f".B {esc(names)}", esc(_plain(text))]
    examples, exit_text = _epilog(cmd.epilog)
    if examples:
        lines += [".SH EXAMPLES"]
        for command, what in examples:
            lines += [".PP", ".RS 4", ".nf", *map(esc, shell_lines(command)), ".fi", ".RE", ".RS 8", esc(_plain(what)),
                      ".RE"]
    if exit_text:
        lines += [".SH \"EXIT STATUS\"", ".PP", esc(_plain(exit_text))]
    see = ["logtool (1)"] if path else []
    see += [f"{cliref.slug(p)} (1)" for p, _ in cliref.commands() if p[:-1] == path and p != path]
    see += ["logtool\\-findings (7)"]
    lines += [".SH \"SEE ALSO\"", ",\n".join(f".BR {s}" if "\\-" in s else f".BR {esc(s)}" for s in see)]
    lines += [".PP", "The docs site (docs/ in the source, built with make docs) has a runbook for each common "
              "incident and a page per command."]
    return "\n".join(lines) + "\n"


def findings_page() -> str:
    lines = _header("logtool-findings", 7, "the findings logtool reports: meaning, what Kafka does, remedy")
    lines += [".SH DESCRIPTION", ".PP", esc(
        "Every problem logtool reports is one kind of this catalog, with a stable code that never changes "
        "meaning and a name: LT1xx segment framing, LT2xx records, LT3xx indexes, LT4xx the partition "
        "directory, LT5xx paths and log dirs, LT6xx producers, transactions and consumer offsets, LT7xx the "
        "log dir held against the KRaft metadata. "
        "Severities: error (data is damaged or would be dropped), warning (the broker copes, but something "
        "is wrong), info (a normal state worth knowing). JSON output, text, the audit's tables and "
        "logtool verify --explain CODE use the same codes and words. To find a code here, search for it "
        "(/LT101 in man's pager).")]
    group = None
    for kind in KINDS:
        if kind.group is not group:
            group = kind.group
            lines += [f'.SH "{esc(GROUP_TITLES[group].upper())}"']
        lines += [f'.SS "{kind.code} {esc(kind.name)} ({kind.severity})"', ".TP 4", "Meaning.",
                  esc(kind.meaning), ".TP", "What Kafka does.", esc(kafka_does(kind))]
        remedy = kind.remedy + (f" logtool's repair: {_plain(FIX_WORDS[kind.fix])}." if kind.fix else "")
        lines += [".TP", "Remedy.", esc(_plain(remedy))]
    lines += [".SH \"SEE ALSO\"", ".BR logtool (1),", ".BR logtool\\-verify (1)"]
    return "\n".join(lines) + "\n"


def pages() -> dict[str, str]:
    """Relative file name -> roff, for every page."""
    out = {f"man1/{cliref.slug(p)}.1": command_page(p) for p in [(), *(p for p, _ in cliref.commands())]}
    out["man7/logtool-findings.7"] = findings_page()
    return out


def write(target: Path = MAN) -> list[Path]:
    """Write every page into `target`, removing pages of commands that no longer exist."""
    written = []
    want = pages()
    for old in list(target.glob("man[17]/*.[17]")):
        if old.relative_to(target).as_posix() not in want:
            old.unlink()
            written.append(old)
    return written + write_changed(target, want)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    for file in write(Path(args[0]) if args else MAN):
        print(f"wrote {file}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
