"""`logtool index verify|rebuild`: check every index against its log; rebuild them as Kafka's recovery would."""
from __future__ import annotations

from pathlib import Path

import click

from logtool.findings import Severity
from logtool.rules.expected_index import DEFAULT_INDEX_INTERVAL_BYTES
from logtool.commands.common.repairing import command_line, finish_unfinished, writing
from logtool.commands.common.options import PATH, epilog, fail_on_option, format_choice, format_option, paths_argument
from logtool.recovery import index_rebuild
from logtool.commands.common.checking import check_with_progress
from logtool.render.emit import emit
from logtool.render.progress import progress
from logtool.render.repair import render_index_rebuild
from logtool.render.text import render_verify

@click.group("index", short_help="Check indexes against their logs; rebuild wrong ones.", epilog=epilog([
    ("logtool index verify /var/lib/kafka/data", "every index of a log dir against its log"),
    ("logtool index rebuild --apply --quarantine /var/tmp/q orders-0", "rewrite the wrong ones (broker stopped)"),
]))
def group() -> None:
    """Check indexes against their logs (index verify), and rebuild the wrong ones as Kafka's recovery
    would (index rebuild)."""


@group.command("verify", short_help="Check every index against its log.", epilog=epilog([
    ("logtool index verify /var/lib/kafka/data", "every index of a log dir against its log"),
    ("logtool index verify --fail-on error orders-0", "exit 4 only for indexes the broker would not heal itself"),
], "4 here: an index finding at or above --fail-on."))
@paths_argument
@format_option
@fail_on_option
@click.option("--show-info", is_flag=True, help="also list info findings in text output")
def verify_command(paths, fmt: str, fail_on: Severity, show_info: bool) -> int:
    """Every .index, .timeindex and .txnindex against its log: Kafka's load-time sanity checks, then
    entry by entry."""
    report = check_with_progress("index verify", paths, deep=False).only(lambda f: f.kind.index_scope)
    return emit(report, fmt, lambda r: render_verify(r, show_info), fail_on)


@group.command("rebuild", short_help="Rewrite wrong indexes as Kafka's recovery builds them.", epilog=epilog([
    ("logtool index rebuild /var/lib/kafka/data", "which index files are wrong, and what they would become"),
    ("logtool index rebuild --apply --quarantine /var/tmp/q orders-0",
     "rewrite them (broker stopped); the old files kept under /var/tmp/q"),
    ("logtool index rebuild --force --apply --quarantine /var/tmp/q orders-0",
     "rewrite every index that differs from recovery's, wrong or not"),
], "4 here: files are to be rewritten (a dry run); 1: they were."))
@paths_argument
@click.option("--apply", "do_apply", is_flag=True, help="write the rebuilt indexes (old files go to the quarantine)")
@click.option("--quarantine", "--backup-dir", "quarantine", type=PATH,
              help="where replaced index files are kept (outside the log dir); required with --apply")
@click.option("--index-interval-bytes", type=click.IntRange(min=1), default=DEFAULT_INDEX_INTERVAL_BYTES,
              show_default=True, help="the topic's index.interval.bytes")
@click.option("--force", is_flag=True, help="rewrite every index that differs from what recovery builds, even where "
              "no check finds it wrong (an index built while appending can differ and still be right)")
@format_choice("text", "json")
def rebuild_command(paths, do_apply: bool, quarantine: Path | None, index_interval_bytes: int, force: bool,
                    fmt: str) -> int:
    """Compute the indexes Kafka's recovery would build from each log's valid prefix, and show how the files
    a check finds wrong (or missing) differ from them; with --apply, replace those."""
    if do_apply and quarantine is None:
        raise click.UsageError("--apply needs --quarantine DIR (outside the log dir): replaced files are kept there")
    keep_in = quarantine if do_apply else None  # (--apply comes with --quarantine: checked above)
    resumed = finish_unfinished(keep_in, list(paths)) if keep_in is not None else []
    with progress("index rebuild") as meter:
        outcome = index_rebuild.plan_paths(list(paths), index_interval_bytes, force, meter.reading(None),
                                           meter.sizing)
    outcome.applied, outcome.resumed = do_apply, len(resumed)
    if keep_in is not None and outcome.pending:
        again = command_line("index", "rebuild", "--apply", "--quarantine", keep_in, "--index-interval-bytes",
                             index_interval_bytes, *["--force"] * force, *paths)
        with writing():
            outcome.run, outcome.written = index_rebuild.rebuild(outcome.plans, keep_in, again)
    return emit(outcome, fmt, render_index_rebuild)
