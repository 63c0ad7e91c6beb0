"""Options shared by several subcommands."""
from __future__ import annotations

import re

from datetime import UTC, datetime
from pathlib import Path

import click

from logtool.findings import Severity

# A path argument or option. Not `readable`: click would refuse a path it may not read as a usage error (16);
# the command tries it and reports what it cannot read as any other unreadable file, an operational error (8).
PATH = click.Path(path_type=Path, readable=False)


def _some(_ctx: click.Context, _param: click.Parameter, paths: tuple[Path, ...]) -> tuple[Path, ...]:
    if not paths:
        raise click.UsageError("give at least one PATH (a log dir, partition dir or .log file)")
    return paths


# The PATHs a command works on: one or more. Not click's `required`, whose error names no kind of path; and
# checked after the eager options, so that `verify --explain CODE` needs none.
paths_argument = click.argument("paths", nargs=-1, type=PATH, callback=_some, metavar="PATHS...")


def format_choice(*formats: str, what: str = "text for people, json for machines (one document)"):
    """--format with these formats, the first the default."""
    return click.option("--format", "fmt", type=click.Choice(list(formats)), default=formats[0], show_default=True,
                        help=what)


format_option = format_choice("text", "json", "jsonl", what="text for people; json (one document) or jsonl (JSON "
                                                             "Lines, ending with a summary row) for machines")


EXIT_CODES = ("0 nothing wrong; 1 problems repaired; 4 problems found; 8 could not do the job (a path "
              "missing, unreadable, locked by a running broker, or not Kafka's); 16 usage error. In the "
              "JSON formats the same code is in the output's exit_code.")


def epilog(examples: list[tuple[str, str]], exit_note: str = "") -> str:
    """The end of a command's --help: real examples, each with what it does, and the exit codes (the same
    rule for every command, with what this one means by them)."""
    lines = ["\b", "Examples:"]
    for command, what in examples:
        lines += [f"  {command}", f"      {what}"]
    return "\n".join(lines) + f"\n\nExit codes: {EXIT_CODES}" + (f" {exit_note}" if exit_note else "")
deep_option = click.option("--deep", is_flag=True, help="also decompress and check every record")
fail_on_option = click.option("--fail-on", type=click.Choice(["warning", "error"]), default="warning",
                              show_default=True, callback=lambda _ctx, _param, value: Severity[value.upper()],
                              help="the least severity that makes the exit code 4")
max_read_rate_option = click.option(
    "--max-read-rate", type=click.FloatRange(min=0, min_open=True), metavar="MB/s",
    help="read segments at most this fast (MB = 10^6 bytes), to share the disk with a live broker")


def spare_page_cache_option(default: bool):
    return click.option(
        "--spare-page-cache/--no-spare-page-cache", default=default, show_default=True,
        help="give the pages this run brings into the page cache back once read, and leave the pages that "
             "were cached before (a live broker's) where they are")


def parse_time(text: str) -> int:
    """Epoch milliseconds, or ISO-8601 (a time without a zone is UTC, whatever TZ says)."""
    text = text.strip()
    if text.lstrip("-").isdigit():
        return int(text)
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise click.BadParameter(f"{text!r} is neither epoch milliseconds nor an ISO-8601 time") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return int(moment.timestamp() * 1000)


TIME_FORMS = "epoch ms or ISO-8601; a time without a zone is UTC, whatever TZ says"

_UNITS_MS = {"ms": 1, "s": 1000, "m": 60_000, "min": 60_000, "h": 3_600_000, "d": 86_400_000}


def parse_duration_ms(text: str) -> int:
    """A duration as milliseconds: `900000` (ms), `900s`, `15m`, `1h`, `2d`."""
    m = re.fullmatch(r"\s*(\d+)\s*(ms|s|m|min|h|d)?\s*", text)
    if m is None:
        raise click.BadParameter(f"{text!r} is not a duration (milliseconds, or a number with ms, s, m, h or d)")
    return int(m.group(1)) * _UNITS_MS[m.group(2) or "ms"]


def transaction_timeout_option(f):
    return click.option(
        "--transaction-timeout", "transaction_timeout_ms", default="15m", show_default=True, metavar="DURATION",
        callback=lambda _ctx, _param, value: parse_duration_ms(value),
        help="a transaction open longer than this before the partition's last record is reported as hanging "
             "(TRANSACTION_HANGING); Kafka's transaction.max.timeout.ms caps every producer's at 15m by default")(f)
