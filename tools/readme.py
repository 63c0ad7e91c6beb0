"""The parts of README.md that are generated, so that they cannot drift from the code: the command
reference (every command's --help, as a terminal 100 columns wide shows it) and the findings table (the
catalog). `make readme` rewrites them in place; tests/test_house.py fails when README.md is not current.

Each part lives between `<!-- generated: NAME -->` and `<!-- end generated: NAME -->`.
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

import click

from logtool.cli import cli
from logtool.findings import KINDS, Kind

README = Path(__file__).resolve().parents[1] / "README.md"
WIDTH = 100


def commands(group: click.Group = cli, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], click.Command]]:
    """Every command and group under `group`, in the order `logtool --help` lists them, groups first."""
    found = []
    ctx = click.Context(group, info_name="logtool")
    for name in group.list_commands(ctx):
        cmd = group.get_command(ctx, name)
        found.append(((*path, name), cmd))
        if isinstance(cmd, click.Group):
            found += commands(cmd, (*path, name))
    return found


def help_text(path: tuple[str, ...]) -> str:
    """`logtool PATH --help` as a terminal WIDTH columns wide prints it."""
    ctx = click.Context(cli, info_name="logtool", terminal_width=WIDTH, max_content_width=WIDTH, **cli.context_settings)
    cmd: click.Command = cli
    for name in path:
        assert isinstance(cmd, click.Group)
        cmd = cmd.get_command(ctx, name)
        ctx = click.Context(cmd, info_name=name, parent=ctx, terminal_width=WIDTH, max_content_width=WIDTH)
    return cmd.get_help(ctx)


def command_reference() -> str:
    parts = []
    for path in [(), *(p for p, _ in commands())]:
        title = " ".join(("logtool", *path))
        parts.append(f"### `{title}`\n\n```\n{help_text(path)}\n```\n")
    return "\n".join(parts)


def findings_table(kinds: tuple[Kind, ...] = KINDS) -> str:
    lines = ["| code | name | severity | meaning |", "|---|---|---|---|"]
    for k in kinds:
        meaning = k.meaning.replace("|", "\\|")
        lines.append(f"| {k.code} | {k.name} | {k.severity} | {meaning} |")
    return "\n".join(lines) + "\n"


PARTS = {"command-reference": command_reference, "findings": findings_table}


def regenerated(text: str) -> str:
    """`text` with every generated part made current. Raises ValueError when a part's markers are missing."""
    for name, make in PARTS.items():
        pattern = re.compile(rf"(<!-- generated: {name} -->\n)(.*?)(<!-- end generated: {name} -->)", re.S)
        if not pattern.search(text):
            raise ValueError(f"README.md has no '<!-- generated: {name} -->' ... '<!-- end generated: {name} -->'")
        text = pattern.sub(lambda m: m.group(1) + make() + m.group(3), text)
    return text


def main() -> int:
    text = README.read_text()
    new = regenerated(text)
    if new != text:
        README.write_text(new)
        print(f"rewrote the generated parts of {README}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
