"""Running the checks and printing their report: shared by `scan`, `verify` and `index verify`."""
from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import click

from logtool.checks.engine import Report, run_checks
from logtool.render.jsonout import emit_json, emit_jsonl
from logtool.render.progress import progress


def checked(label: str, paths: tuple[Path, ...], deep: bool, **run_options) -> Report:
    """Every check over PATHs, with a progress bar on a terminal; `run_options` go to `checks.engine.run_checks`."""
    if not paths:
        raise click.UsageError("give at least one PATH (a log dir, partition dir or .log file)")
    with progress(label) as (set_total, advance):
        return run_checks(list(paths), deep, on_target=advance, targets_known=set_total, **run_options)


def emit(report: Report, fmt: str, text: Callable[[Report], None]) -> None:
    """The report as one JSON document, JSON Lines (a partition per line) or text; path problems on stderr."""
    if fmt == "json":
        emit_json(report.to_dict())
    elif fmt == "jsonl":
        emit_jsonl(p.to_dict() for p in report.partitions)
    else:
        text(report)
    for f in report.findings:  # what stopped a PATH from being read at all: one line each
        print(f"logtool: {f.file}: {f.message}", file=sys.stderr)
