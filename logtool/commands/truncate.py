"""`logtool truncate`: repair a damaged log dir the way Kafka's recovery would, previewed, reversible."""
from __future__ import annotations

from pathlib import Path

import click

from logtool.commands.common.repairing import command_line, finish_unfinished, writing
from logtool.commands.common.options import PATH, epilog, format_choice, paths_argument
from logtool.recovery import truncate
from logtool.recovery.truncate import Truncated
from logtool.recovery.truncate_plan import RepairPlan, plan_repair
from logtool.render.emit import emit
from logtool.render.progress import progress
from logtool.render.repair import render_repair
from logtool.rules.expected_index import DEFAULT_INDEX_INTERVAL_BYTES

DEFAULT_QUARANTINE = Path("logtool-quarantine")


@click.command("truncate", short_help="Cut corrupt tails as Kafka's recovery would, reversibly.", epilog=epilog([
    ("logtool truncate /var/lib/kafka/data", "the plan for every damaged partition of a log dir; nothing is written"),
    ("logtool truncate --apply --quarantine /var/tmp/q /var/lib/kafka/data/orders-0",
     "carry it out (broker stopped); removed bytes kept under /var/tmp/q"),
    ("logtool truncate --excise orders-0", "the plan that keeps every valid batch after the damage"),
], "4 here: repairs are planned (a dry run); 1: the repair was made."))
@paths_argument
@click.option("--apply", "do_apply", is_flag=True, help="carry the plan out (without it, only print the plan)")
@click.option("--quarantine", type=PATH, default=DEFAULT_QUARANTINE, show_default=True,
              help="where every removed byte is kept (outside the log dir); `logtool restore RUN` undoes the repair")
@click.option("--strict", is_flag=True,
              help="also cut at damage Kafka's recovery does not notice (offsets going backwards)")
@click.option("--excise", is_flag=True,
              help="beyond Kafka: cut out only the damaged bytes and keep every valid batch after them (as new "
                   "segments, leaving an offset gap) instead of dropping every later segment")
@click.option("--index-interval-bytes", type=click.IntRange(min=1), default=DEFAULT_INDEX_INTERVAL_BYTES,
              show_default=True, help="the topic's index.interval.bytes, for the rebuilt indexes")
@format_choice("text", "json", what="text for people, json for machines (the plan, and what was done)")
def command(paths, do_apply: bool, quarantine: Path, strict: bool, excise: bool, index_interval_bytes: int,
            fmt: str) -> int:
    """Cut corrupt tails the way Kafka's recovery would (every segment recovered), safely.

    The first damaged segment is cut at its valid prefix, every later segment of the partition leaves
    the log (as Kafka deletes them; here they go to the quarantine), the cut segment's indexes are rebuilt,
    leader-epoch entries and producer snapshots past the new log end go, and .deleted/.cleaned leftovers
    are cleared. Nothing is deleted: every removed byte is kept under --quarantine, and
    `logtool restore RUN` puts the directory back byte for byte.

    Which to choose: Kafka's rule (the default) is right for a replicated topic, whose followers re-fetch
    what the cut drops; --excise keeps far more of a single-replica topic (or the last copy of a partition),
    and the plan shows both choices' record counts.

    Without --apply it prints the plan and changes nothing. Refuses while a broker holds a log dir's
    .lock. If a run was interrupted, --apply again finishes it from its journal."""
    done = Truncated(RepairPlan(), resumed=finish_unfinished(quarantine, list(paths)) if do_apply else [])
    with progress("planning the repair") as meter:
        done.plan = plan_repair(list(paths), strict, index_interval_bytes, excise, meter.reading(None), meter.sizing)
    if do_apply and done.plan.has_changes:
        options = ["--strict"] * strict + ["--excise"] * excise + ["--index-interval-bytes", index_interval_bytes]
        again = command_line("truncate", "--apply", "--quarantine", quarantine, *options, *paths)
        with writing():
            done.applied = truncate.apply_plan(done.plan, quarantine, again)
    return emit(done, fmt, render_repair)
