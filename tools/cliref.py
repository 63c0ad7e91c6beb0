"""The command line as the Click objects define it: every command, and its `--help` as a terminal of a given
width prints it. The docs' command reference, each command page and the man pages are made from this, so
none of them can say something the code does not.
"""
from __future__ import annotations

import click

from logtool.cli import cli

WIDTH = 80  # what the docs and the man pages show: the width of the terminal on call


def commands(group: click.Group = cli, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], click.Command]]:
    """Every command and group under `group`, in the order `logtool --help` lists them, groups first."""
    found = []
    ctx = click.Context(group, info_name="logtool")
    for name in group.list_commands(ctx):
        cmd = group.get_command(ctx, name)
        assert cmd is not None
        found.append(((*path, name), cmd))
        if isinstance(cmd, click.Group):
            found += commands(cmd, (*path, name))
    return found


def context(path: tuple[str, ...], width: int = WIDTH) -> click.Context:
    """The Click context `logtool PATH` runs in, for a terminal `width` columns wide."""
    ctx = click.Context(cli, info_name="logtool", terminal_width=width, max_content_width=width,
                        **cli.context_settings)
    cmd: click.Command = cli
    for name in path:
        assert isinstance(cmd, click.Group)
        sub = cmd.get_command(ctx, name)
        assert sub is not None, f"no command {' '.join(path)}"
        cmd = sub
        ctx = click.Context(cmd, info_name=name, parent=ctx, terminal_width=width, max_content_width=width)
    return ctx


def command(path: tuple[str, ...]) -> click.Command:
    return context(path).command


def help_text(path: tuple[str, ...], width: int = WIDTH) -> str:
    """`logtool PATH --help` as a terminal `width` columns wide prints it."""
    ctx = context(path, width)
    return ctx.command.get_help(ctx)


def title(path: tuple[str, ...]) -> str:
    return " ".join(("logtool", *path))


def slug(path: tuple[str, ...]) -> str:
    """The name of a command's page and man page: logtool, logtool-verify, logtool-index-rebuild."""
    return "-".join(("logtool", *path))
