"""`logtool scan`: inventory of log dirs, partitions and segments, from batch headers only."""
from __future__ import annotations

import sys

import click
from pathlib import Path

from logtool.checks.run import run
from logtool.commands.options import format_option
from logtool.render.jsonout import emit_json, emit_jsonl
from logtool.render.progress import progress
from logtool.render.text import render_inventory


@click.command("scan")
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@format_option
def command(paths, fmt: str) -> int:
    """Inventory: partitions, segments, offsets, timestamps, formats, indexes and log-dir files."""
    if not paths:
        raise click.UsageError("give at least one PATH (a log dir, partition dir or .log file)")
    with progress("scan") as (set_total, advance):
        report = run(list(paths), deep=False, on_target=advance, targets_known=set_total)
    if fmt == "json":
        emit_json(report.to_dict())
    elif fmt == "jsonl":
        emit_jsonl(p.to_dict() for p in report.partitions)
    else:
        render_inventory(report)
    for f in report.findings:
        if f.name in ("UNREADABLE", "NOT_KAFKA"):
            print(f"logtool: {f.message}", file=sys.stderr)
    return 8 if report.operational_error else 0
