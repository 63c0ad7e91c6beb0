"""`logtool index verify|rebuild`: check every index against its log; rebuild them as Kafka's recovery would."""
from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import click

from logtool.checks.catalog import Severity
from logtool.checks.expected_index import DEFAULT_INDEX_INTERVAL_BYTES
from logtool.checks.run import Report, plan as plan_targets
from logtool.commands.options import format_option
from logtool.recovery import index_rebuild
from logtool.recovery.lock import held_by_broker
from logtool.recovery.quarantine import QuarantineError, Run
from logtool.commands.report import checked, emit
from logtool.render.jsonout import emit_json
from logtool.render.text import console, render_verify
from logtool.store.partition import Partition

# What `index verify` reports: the index kinds of the catalog, plus what stops it from reading at all.
INDEX_FINDINGS = {"INDEX_MISSING", "TIMEINDEX_MISSING", "INDEX_CORRUPT", "INDEX_NOT_INCREASING",
                  "INDEX_WRONG_POSITION", "INDEX_BEYOND_LOG", "INDEX_PREALLOCATED", "INDEX_PREALLOCATED_CLOSED",
                  "TIMEINDEX_CORRUPT", "TIMEINDEX_WRONG_ENTRY", "TXNINDEX_CORRUPT", "TXNINDEX_MISMATCH",
                  "ORPHAN_INDEX", "UNREADABLE", "NOT_KAFKA"}


@click.group("index")
def group() -> None:
    """Check indexes against their logs, and rebuild them."""


def _only_index_findings(report: Report) -> Report:
    keep = lambda fs: [f for f in fs if f.name in INDEX_FINDINGS]  # noqa: E731
    parts = [replace(p, findings=keep(p.findings), segments=[replace(s, findings=keep(s.findings)) for s in p.segments])
             for p in report.partitions]
    dirs = [replace(d, findings=keep(d.findings)) for d in report.log_dirs]
    return replace(report, partitions=parts, log_dirs=dirs, findings=keep(report.findings))


@group.command("verify")
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@format_option
@click.option("--fail-on", type=click.Choice(["warning", "error"]), default="warning", show_default=True)
@click.option("--show-info", is_flag=True, help="also list info findings in text output")
def verify_command(paths, fmt: str, fail_on: str, show_info: bool) -> int:
    """Every .index, .timeindex and .txnindex against its log: Kafka's sanity checks and entry by entry."""
    report = _only_index_findings(checked("index verify", paths, deep=False))
    emit(report, fmt, lambda r: render_verify(r, show_info))
    return report.exit_code(Severity.ERROR if fail_on == "error" else Severity.WARNING)


@group.command("rebuild")
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option("--apply", "do_apply", is_flag=True, help="write the rebuilt indexes (old files go to the quarantine)")
@click.option("--quarantine", "--backup-dir", "quarantine", type=click.Path(path_type=Path),
              help="where replaced index files are kept (outside the log dir); required with --apply")
@click.option("--index-interval-bytes", type=click.IntRange(min=1), default=DEFAULT_INDEX_INTERVAL_BYTES,
              show_default=True, help="the topic's index.interval.bytes")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
def rebuild_command(paths, do_apply: bool, quarantine: Path | None, index_interval_bytes: int, fmt: str) -> int:
    """Compute the indexes Kafka's recovery would build from each log's valid prefix; show the differences
    from the files on disk, or with --apply replace them.

    Exit 0: nothing differs; 4: differences found (dry run); 1: indexes rewritten; 8: operational error."""
    if not paths:
        raise click.UsageError("give at least one PATH (a log dir, partition dir or .log file)")
    if do_apply and quarantine is None:
        raise click.UsageError("--apply needs --quarantine DIR (outside the log dir): replaced files are kept there")
    report = Report()
    targets = plan_targets(list(paths), report)
    for f in report.findings:
        print(f"logtool: {f.message}", file=sys.stderr)
    plans = []
    for t in targets:
        try:
            part = Partition.from_segment_file(t.path) if t.single_file else Partition.from_dir(t.path)
            plans.append(index_rebuild.plan(part, index_interval_bytes))
        except OSError as e:
            print(f"logtool: {t.path}: {e.strerror or e}", file=sys.stderr)
            report.operational_error = True
    written = 0
    if do_apply and any(p.pending for p in plans):
        written = _apply(plans, quarantine, paths)
        if written is None:
            return 8
    if fmt == "json":
        emit_json({"partitions": [p.to_dict() for p in plans], "applied": do_apply, "files_written": written})
    else:
        _render(plans, do_apply)
    if report.operational_error:
        return 8
    if do_apply:
        return 1 if written else 0
    return 4 if any(p.pending for p in plans) else 0


def _apply(plans, quarantine: Path, paths) -> int | None:
    log_dirs = sorted({p.partition.resolve().parent for p in plans} | {p.partition.resolve() for p in plans})
    for d in log_dirs:
        if held_by_broker(d):
            print(f"logtool: {d}: a broker holds its .lock; stop the broker before rebuilding indexes", file=sys.stderr)
            return None
    try:
        run_ = Run.start(quarantine, "index-rebuild", "logtool index rebuild --apply " + " ".join(map(str, paths)), log_dirs)
    except QuarantineError as e:
        print(f"logtool: {e}", file=sys.stderr)
        return None
    written = sum(index_rebuild.apply(p, run_) for p in plans)
    print(f"logtool: replaced files kept in {run_.path} (undo with `logtool restore {run_.path}`)", file=sys.stderr)
    return written


def _render(plans, applied: bool) -> None:
    out = console()
    for p in plans:
        pending = p.pending
        if pending:
            out.print(f"[bold]{p.partition}[/]: {'rewrote' if applied else 'would rewrite'} {len(pending)} of "
                      f"{len(p.changes)} index files")
        else:
            out.print(f"[bold]{p.partition}[/]: all {len(p.changes)} index files match the log")
        for c in pending:
            d = c.to_dict()
            old = "missing" if d["old_entries"] is None else f"{d['old_entries']} entries ({d['old_size']} bytes)"
            out.print(f"  {Path(d['file']).name}: {old} -> {d['new_entries']} entries ({d['new_size']} bytes)")
        for name in p.valid_prefix_short:
            out.print(f"  [yellow]{name}[/]: indexed up to the end of its valid prefix; the damaged tail is not indexed")
