"""`logtool txn`: each transactional producer's transactions per partition, from the files."""
from __future__ import annotations

import sys
from typing import Any

import click

from logtool import exitcodes
from logtool.checks.engine import Report, open_target, plan_targets, unreadable
from logtool.checks.partition import PartitionReport
from logtool.commands.options import PATH, epilog, format_option, transaction_timeout_option
from logtool.reads.transactions import read_transactions
from logtool.render.jsonout import emit_json, emit_jsonl
from logtool.render.txn import render_txn


@click.command("txn", short_help="Transactions per producer: committed, aborted, open, hanging.", epilog=epilog([
    ("logtool txn /var/lib/kafka/data/payments-0", "every transactional producer of one partition"),
    ("logtool txn /var/lib/kafka/data --format jsonl | jq 'select(.hanging)'",
     "the hanging transactions of a whole log dir, for a script"),
], "4 here: a transaction is hanging (open longer than --transaction-timeout)."))
@click.argument("paths", nargs=-1, type=PATH)
@transaction_timeout_option
@format_option
def command(paths, transaction_timeout_ms: int, fmt: str) -> int:
    """Tabulate the transactions of log dirs, partition dirs or .log files, per producer: how many were
    committed and aborted, their records, bytes and durations (first batch to marker), and the one still open
    with the offset it opened at; one open longer than --transaction-timeout before the partition's last
    record is hanging (read_committed consumers are stuck at its first offset)."""
    if not paths:
        raise click.UsageError("give at least one PATH (a log dir, partition dir or .log file)")
    report = Report()
    parts: list[dict[str, Any]] = []
    for target in plan_targets(list(paths), report):
        part = open_target(target)
        if isinstance(part, PartitionReport):
            report.findings += part.findings
            continue
        try:
            table, notes = read_transactions(part)
        except OSError as e:
            report.findings.append(unreadable(target, e))
            continue
        finally:
            part.close()
        producers = []
        for p in sorted(table.producers.values(), key=lambda p: p.producer_id):
            row = p.to_dict()
            age = (table.last_timestamp - p.open.first_timestamp) if p.open and table.last_timestamp is not None \
                else None
            row["open_age_ms"] = age
            row["hanging"] = age is not None and age > transaction_timeout_ms
            producers.append(row)
        parts.append({"path": str(target.path), "topic": part.topic, "partition": part.number,
                      "last_timestamp": table.last_timestamp, "producers": producers, "notes": notes})
    hanging = sum(1 for p in parts for r in p["producers"] if r["hanging"])
    rc = exitcodes.OPERATIONAL if report.findings else exitcodes.PROBLEMS if hanging else exitcodes.CLEAN
    summary = {"partitions": len(parts), "producers": sum(len(p["producers"]) for p in parts),
               "committed": sum(r["committed"] for p in parts for r in p["producers"]),
               "aborted": sum(r["aborted"] for p in parts for r in p["producers"]),
               "open": sum(1 for p in parts for r in p["producers"] if r["open_since_offset"] is not None),
               "hanging": hanging}
    if fmt == "json":
        emit_json({"partitions": parts, "summary": summary, "exit_code": rc})
    elif fmt == "jsonl":
        emit_jsonl([*({"type": "producer", "path": p["path"], "topic": p["topic"], "partition": p["partition"], **r}
                      for p in parts for r in p["producers"]),
                    {"type": "summary", **summary, "exit_code": rc}])
    else:
        render_txn(parts, summary, transaction_timeout_ms)
    for f in report.findings:
        print(f"logtool: {f.file}: {f.message}", file=sys.stderr)
    return rc
