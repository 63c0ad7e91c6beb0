"""`logtool verify`: every check, reported through the finding catalog, with fsck exit codes."""
from __future__ import annotations

import click

from logtool.findings import KINDS, Severity, lookup
from logtool.commands.common.options import (deep_option, epilog, fail_on_option, format_option, max_read_rate_option,
                                      paths_argument, spare_page_cache_option, transaction_timeout_option)
from logtool.commands.common.checking import check_with_progress
from logtool.recovery.verdict import verified
from logtool.render.emit import emit
from logtool.render.text import render_kind
from logtool.render.verdict import render_verified
from logtool.store.pacing import read_policy


def _explain(ctx: click.Context, _param, value: str | None) -> None:
    if value is None or ctx.resilient_parsing:
        return
    if value.lower() == "all":
        for kind in KINDS:
            render_kind(kind)
        ctx.exit(0)
    k = lookup(value)
    if k is None:
        raise click.BadParameter(f"no finding kind {value!r}; `logtool verify --explain all` lists them")
    render_kind(k)
    ctx.exit(0)


@click.command("verify", short_help="Check every CRC and invariant; list what is wrong.", epilog=epilog([
    ("logtool verify /var/lib/kafka/data", "every batch's framing and CRC, every index and checkpoint of a log dir"),
    ("logtool verify --deep orders-0", "also decompress and check every record of one partition"),
    ("logtool verify --max-read-rate 50 --spare-page-cache /var/lib/kafka/data",
     "beside a running broker: at most 50 MB/s, its page cache left as found"),
    ("logtool verify --explain LT101", "what a finding means and what to do about it"),
], "4 here: a finding at or above --fail-on."))
@paths_argument
@deep_option
@format_option
@fail_on_option
@max_read_rate_option
@spare_page_cache_option(default=False)
@click.option("--show-info", is_flag=True, help="also list info findings in text output")
@transaction_timeout_option
@click.option("--explain", metavar="CODE", callback=_explain, expose_value=False, is_eager=True,
              help="print the meaning and remedy of a finding code or name (or 'all') and exit")
def command(paths, deep: bool, fmt: str, fail_on: Severity, max_read_rate: float | None, spare_page_cache: bool,
            show_info: bool, transaction_timeout_ms: int) -> int:
    """Check every CRC and invariant of log dirs, partition dirs or .log files, as Kafka's recovery and
    load-time checks would, and list what is wrong (each finding with its code; --explain CODE says what it
    means and what to do)."""
    reading = read_policy(max_read_rate, spare_page_cache)
    report = check_with_progress("verify", paths, deep, reading=reading, transaction_timeout_ms=transaction_timeout_ms)
    return emit(verified(report, reading), fmt, lambda v: render_verified(v, show_info), fail_on)
