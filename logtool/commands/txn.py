"""`logtool txn`: each transactional producer's transactions per partition, from the files."""
from __future__ import annotations

import click

from logtool.commands.common.options import epilog, format_option, paths_argument, transaction_timeout_option
from logtool.reads.transactions import transactions_of
from logtool.render.emit import emit
from logtool.render.txn import render_txn


@click.command("txn", short_help="Transactions per producer: committed, aborted, open, hanging.", epilog=epilog([
    ("logtool txn /var/lib/kafka/data/payments-0", "every transactional producer of one partition"),
    ("logtool txn /var/lib/kafka/data --format jsonl | jq 'select(.hanging)'",
     "the hanging transactions of a whole log dir, for a script"),
], "4 here: a transaction is hanging (open longer than --transaction-timeout)."))
@paths_argument
@transaction_timeout_option
@format_option
def command(paths, transaction_timeout_ms: int, fmt: str) -> int:
    """Tabulate the transactions of log dirs, partition dirs or .log files, per producer: how many were
    committed and aborted, their records, bytes and durations (first batch to marker), and the one still open
    with the offset it opened at; one open longer than --transaction-timeout before the partition's last
    record is hanging (read_committed consumers are stuck at its first offset)."""
    return emit(transactions_of(list(paths), transaction_timeout_ms), fmt,
                lambda t: render_txn(t.partitions, t.summary(), transaction_timeout_ms))
