"""Running the checks and printing their report: shared by `scan`, `verify` and `index verify`."""
from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import click

from logtool.checks.engine import Report, run_checks
from logtool.render.jsonout import emit_json, emit_jsonl, undecoded_escaped
from logtool.recovery.verdict import Verdict
from logtool.render.progress import progress
from logtool.render.verdict import render_verdicts


def check_with_progress(label: str, paths: tuple[Path, ...], deep: bool, **run_options) -> Report:
    """Every check over PATHs, with a progress bar on a terminal; `run_options` go to `checks.engine.run_checks`."""
    if not paths:
        raise click.UsageError("give at least one PATH (a log dir, partition dir or .log file)")
    with progress(label) as meter:
        reading = meter.reading(run_options.pop("reading", None))
        return run_checks(list(paths), deep, bytes_known=meter.sizing, reading=reading, **run_options)


def emit(report: Report, fmt: str, text: Callable[[Report], None], exit_code: int,
         judged: Sequence[Verdict] = ()) -> int:
    """The report as one JSON document, JSON Lines or text; path problems also on stderr. Both JSON forms
    carry every finding and the exit code: JSON Lines has a row per log dir, per path that could not be
    read (an error row) and per partition, each with its `type`, then a row per verdict (verify's), then a
    closing summary row."""
    if fmt == "json":
        emit_json({**report.to_dict(), **({"verdict": [v.to_dict() for v in judged]} if judged else {}),
                   "exit_code": exit_code})
    elif fmt == "jsonl":
        emit_jsonl([
            *({"type": "log_dir", **d.to_dict()} for d in report.log_dirs),
            *({"type": "error", "error": "operational", "message": f"{f.file}: {f.message}", "finding": f.to_dict()}
              for f in report.findings),
            *({"type": "partition", **p.to_dict()} for p in report.partitions),
            *({"type": "verdict", **v.to_dict()} for v in judged),
            {"type": "summary", **report.summary(), "exit_code": exit_code},
        ])
    else:
        text(report)
        if judged:
            render_verdicts([v.to_dict() for v in judged])
    for f in report.findings:  # what stopped a PATH from being read at all: one line each
        print(undecoded_escaped(f"logtool: {f.file}: {f.message}"), file=sys.stderr)
    return exit_code
