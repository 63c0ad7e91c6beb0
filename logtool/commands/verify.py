"""`logtool verify`: every check, reported through the finding catalog, with fsck exit codes."""
from __future__ import annotations

import sys

import click
from pathlib import Path

from logtool.checks.catalog import KINDS, Severity, lookup
from logtool.checks.run import run
from logtool.commands.options import deep_option, format_option
from logtool.render.jsonout import emit_json, emit_jsonl
from logtool.render.progress import progress
from logtool.render.text import render_kind, render_verify


def _explain(ctx: click.Context, _param, value: str | None) -> None:
    if value is None or ctx.resilient_parsing:
        return
    if value.lower() == "all":
        for k in KINDS:
            render_kind(k)
        ctx.exit(0)
    k = lookup(value)
    if k is None:
        raise click.BadParameter(f"no finding kind {value!r}; `logtool verify --explain all` lists them")
    render_kind(k)
    ctx.exit(0)


@click.command("verify")
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@deep_option
@format_option
@click.option("--fail-on", type=click.Choice(["warning", "error"]), default="warning", show_default=True,
              help="the least severity that makes the exit code 4")
@click.option("--show-info", is_flag=True, help="also list info findings in text output")
@click.option("--explain", metavar="CODE", callback=_explain, expose_value=False, is_eager=True,
              help="print the meaning and remedy of a finding code or name (or 'all') and exit")
def command(paths, deep: bool, fmt: str, fail_on: str, show_info: bool) -> int:
    """Check every CRC and invariant of log dirs, partition dirs or .log files."""
    if not paths:
        raise click.UsageError("give at least one PATH (a log dir, partition dir or .log file)")
    with progress("verify") as (set_total, advance):
        report = run(list(paths), deep, on_target=advance, targets_known=set_total)
    if fmt == "json":
        emit_json(report.to_dict())
    elif fmt == "jsonl":
        emit_jsonl(p.to_dict() for p in report.partitions)
    else:
        render_verify(report, show_info)
    for f in report.findings:
        if f.name in ("UNREADABLE", "NOT_KAFKA"):
            print(f"logtool: {f.message}", file=sys.stderr)
    return report.exit_code(Severity.ERROR if fail_on == "error" else Severity.WARNING)
