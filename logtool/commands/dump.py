"""`logtool dump`: the records of an offset or time range, as kafka-dump-log prints them or as JSON."""
from __future__ import annotations

import io
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

import click

from logtool.reads import decoders, file_dump, internal_topics
from logtool.commands.common.failure import Failure
from logtool.store.discover import Target, TargetKind, discover
from logtool.commands.common.options import TIME_FORMS, epilog, format_option, parse_time, paths_argument
from logtool.render.jsonout import emit_jsonl
from logtool.render.progress import progress
from logtool.render import dump_json, dump_text
from logtool.reads.dumped import RecordsDumped
from logtool.reads.ranges import Stats, plan_range, read_range
from logtool import exitcodes


def _decoder(name: str) -> decoders.Decoder:
    try:
        return decoders.get(name)
    except decoders.DecoderError as e:
        raise click.UsageError(str(e)) from None


def _time(text: str | None) -> int | None:
    return None if text is None else parse_time(text)


@click.command("dump", short_help="Print records of an offset or time range.", epilog=epilog([
    ("logtool dump /var/lib/kafka/data/orders-0 --from-offset 1000 --max-records 20 --print-data",
     "twenty records with keys and values, as kafka-dump-log --print-data-log prints them"),
    ("logtool dump orders-0 --from-time 2024-05-01T09:00Z --to-time 2024-05-01T09:05Z --format jsonl",
     "five minutes of records as JSON Lines"),
    ("logtool dump orders-0/00000000000000000000.timeindex", "a time index's entries, as kafka-dump-log prints them"),
    ("logtool dump orders-0 --salvage --format jsonl > rescued.jsonl",
     "every record that can still be read, past the damage (unverified ones marked)"),
], "4 here: damage was met in the range."))
@paths_argument
@click.option("--from-offset", type=click.IntRange(min=0), help="first offset (inclusive)")
@click.option("--to-offset", type=click.IntRange(min=0), help="last offset (inclusive)")
@click.option("--from-time", help=f"start at the first record at or after this time ({TIME_FORMS})")
@click.option("--to-time", help=f"end before the first record after this time ({TIME_FORMS})")
@click.option("--max-records", type=click.IntRange(min=1),
              help="stop after this many records (batches with --batches-only)")
@click.option("--batches-only", is_flag=True, help="one line or object per batch; records are not decoded")
@click.option("--print-data", is_flag=True, help="text: print keys and payloads (kafka-dump-log's --print-data-log)")
@click.option("--key-decoder", metavar="NAME",
              help="how keys are shown: string (text's default: Kafka's, bad UTF-8 as U+FFFD), utf8 (JSON's "
                   "default: bad bytes escaped as \\xNN), hex, base64, json, none, or a plugin")
@click.option("--value-decoder", metavar="NAME", help="how values and header values are shown (same names)")
@click.option("--decoder", "record_decoder",
              type=click.Choice(["auto", "offsets", "transaction-log", "cluster-metadata", "plain"]),
              help="decode an internal topic's keys and values as Kafka's schemas define them: offsets "
                   "(__consumer_offsets), transaction-log (__transaction_state), cluster-metadata "
                   "(__cluster_metadata and KRaft snapshots), auto (by the topic's name); plain: the key and value "
                   "decoders. Text: kafka-dump-log's --offsets-decoder, --transaction-log-decoder, "
                   "--cluster-metadata-decoder lines. [default: auto in JSON, plain in text]")
@click.option("--salvage", is_flag=True,
              help="after damage, read on: a batch whose CRC fails is shown as its bytes read, marked unverified; "
                   "bytes no batch starts in are skipped, marked")
@click.option("--index-sanity-check", "sanity", is_flag=True,
              help="for .index and .timeindex files: only Kafka's load-time sanity check (as kafka-dump-log's flag)")
@click.option("--verify-index-only", "verify_only", is_flag=True,
              help="for .index and .timeindex files: walk the entries against the log without listing them")
@format_option
def command(paths: tuple[Path, ...], from_offset: int | None, to_offset: int | None, from_time: str | None,
            to_time: str | None, max_records: int | None, batches_only: bool, print_data: bool,
            key_decoder: str | None, value_decoder: str | None, record_decoder: str | None, salvage: bool, sanity: bool,
            verify_only: bool, fmt: str) -> int:
    """Print the records of partition dirs, log dirs or .log files, from any offset or time range.

    Offsets are inclusive. A time range becomes an offset range as Kafka's ListOffsets answers it: from the
    first record at or after --from-time, up to the last record before the first one after --to-time.
    Damaged segments are read up to where their valid prefix ends, which one line says; --salvage reads on
    past the damage. Text follows kafka-dump-log.sh --deep-iteration (--print-data-log with --print-data).

    An .index, .timeindex, .txnindex or producer .snapshot file gives its entries, as kafka-dump-log prints
    them (it stops where that tool stops; unlike it, logtool never trims an index it reads). A KRaft
    snapshot (<offset>-<epoch>.checkpoint, bootstrap.checkpoint) is read as that tool reads it: as batches.
    """
    if fmt == "json" and len(paths) > 1:
        raise click.UsageError("--format json writes one document for one PATH; give one, or use jsonl or text")
    # Text is kafka-dump-log's, bad UTF-8 included (U+FFFD); JSON keeps every byte visible (\\xNN).
    default = "string" if fmt == "text" else "utf8"
    key, value = _decoder(key_decoder or default), _decoder(value_decoder or default)
    if record_decoder not in (None, "plain") and (key_decoder or value_decoder):
        raise click.UsageError(f"--decoder {record_decoder} decodes keys and values itself: give it or "
                               f"--key-decoder/--value-decoder, not both")
    if record_decoder is None:
        record_decoder = "plain" if fmt == "text" or key_decoder or value_decoder else "auto"
    start_ms, end_ms = _time(from_time), _time(to_time)
    if (from_offset is not None and to_offset is not None and to_offset < from_offset) or \
            (start_ms is not None and end_ms is not None and end_ms < start_ms):
        raise click.UsageError("the range ends before it starts")
    ranged = [o for o, v in (("--from-offset", from_offset), ("--to-offset", to_offset), ("--from-time", from_time),
                             ("--to-time", to_time), ("--salvage", salvage)) if v]
    found = discover(list(paths), entry_files=True)
    if (refused := found.refusal()) is not None:
        raise Failure(refused)
    targets = found.targets
    side = [t for t in targets if t.kind is TargetKind.ENTRY_FILE]
    if ranged and side:
        raise click.UsageError(f"{', '.join(ranged)} applies to .log files and partition dirs, not to "
                               f"{side[0].path.name}")
    ask = _Ask(from_offset, to_offset, start_ms, end_ms, max_records, batches_only,
               print_data or key_decoder is not None or value_decoder is not None or record_decoder != "plain",
               key, value, record_decoder, salvage, fmt)
    index_mode = "sanity" if sanity else "verify" if verify_only else "dump"
    out = _stdout()
    codes, open_line = [], False
    for t in targets:
        if open_line:  # the text before ended inside a line, where Kafka's tool throws: this starts its own
            out.write("\n")
        if t.kind is TargetKind.ENTRY_FILE:
            codes.append(_dump_file(t.path, fmt, index_mode, out))
        else:
            rc, open_line = _dump_records(t, ask, out)
            codes.append(rc)
    rc = max(codes, default=exitcodes.CLEAN)
    if fmt == "jsonl" and len(targets) > 1:
        emit_jsonl([{"type": "summary", "paths": len(targets), "exit_code": rc}])
    return rc


@dataclass(frozen=True, slots=True)
class _Ask:
    """What the command line asks of each PATH's records."""
    from_offset: int | None
    to_offset: int | None
    start_ms: int | None
    end_ms: int | None
    max_records: int | None
    batches_only: bool
    show_data: bool  # text: keys and payloads too (as kafka-dump-log's --print-data-log, or a decoder named)
    key: decoders.Decoder
    value: decoders.Decoder
    record_decoder: str  # a name of internal_topics.BY_NAME, "auto" (by topic name) or "plain" (key and value's)
    salvage: bool
    fmt: str


def _whole(path: Path, ask: _Ask) -> internal_topics.RecordDecoder | None:
    """The decoder of whole records the command line asks for this PATH, None for the key and value's."""
    if ask.record_decoder == "auto":
        return internal_topics.for_path(path)
    found = internal_topics.BY_NAME.get(ask.record_decoder)
    return found() if found else None


def _stdout() -> TextIO:
    """Where the records go, taken before any progress display starts (none may stand in for it)."""
    out = sys.stdout
    if isinstance(out, io.TextIOWrapper):  # what the terminal's encoding lacks is escaped, not fatal
        out.reconfigure(errors="backslashreplace")
    return out


def _dump_records(target: Target, ask: _Ask, out: TextIO) -> tuple[int, bool]:
    """The records of one partition dir, .log or KRaft snapshot, in the asked range and format; the exit code,
    and whether the text ends inside a line (dump_text.render)."""
    fmt, key, value, batches_only = ask.fmt, ask.key, ask.value, ask.batches_only
    path = target.path
    whole = _whole(path, ask)
    try:
        # A KRaft snapshot is batches as a segment is, from offset 0 (kafka-dump-log reads it so too).
        part = target.partition()
    except OSError as e:
        raise Failure(f"{path}: {e.strerror or e}") from None
    stats = Stats()
    open_line = False
    try:
        # Progress only where it does not mix with the records: stdout goes to a file or a pipe, stderr is seen.
        with progress("dump", shown=sys.stderr.isatty() and not sys.stdout.isatty()) as meter:
            part.read_under(meter.reading(None))  # before the first segment is opened
            p = plan_range(part, ask.from_offset, ask.to_offset, ask.start_ms, ask.end_ms)
            done = RecordsDumped(p, stats, batches_only)
            if meter.shown:
                meter.total(part.log_bytes(p.segment) if p.segment is not None else 0)
            # Text reads on past a batch whose CRC alone fails, as kafka-dump-log does; JSON stops at the end of
            # the valid prefix, as Kafka's recovery would (--salvage reads on in both, marking what it shows).
            events = read_range(part, p, stats, salvage=ask.salvage, batches_only=batches_only,
                                limit=ask.max_records, past_crc=fmt == "text", print_data=ask.show_data)
            if fmt == "text":
                show = ask.show_data
                open_line = dump_text.render(events, out, key if show else None, value if show else None, sys.stderr,
                                             whole)
            elif fmt == "jsonl":
                dump_json.write_lines(events, out, key, value, whole)
                closing = done.to_dict()
                emit_jsonl([{"type": "summary", **closing.pop("summary"), **closing}])
            else:
                head = {"path": str(path), "first_offset": p.first, "last_offset": p.last}
                dump_json.write_document(events, out, key, value, head, done.to_dict, whole)
    except OSError as e:
        if isinstance(e, BrokenPipeError):
            raise  # the reader went away: cli.main leaves quietly
        raise click.ClickException(f"{getattr(e, 'filename', None) or path}: {e.strerror or e}") from None
    finally:
        part.close()
    if fmt != "json":  # (the JSON document holds its notes)
        for line in done.stderr_lines():
            print(line, file=sys.stderr)
    return done.exit_code(), open_line


def _dump_file(path: Path, fmt: str, mode: str, out: TextIO) -> int:
    """An index, transaction index or producer snapshot: its entries as kafka-dump-log prints them (text),
    or as objects, written as they are read; where Kafka's tool would stop (it throws there), logtool stops
    too and says why."""
    try:
        d = file_dump.dump_file(path, mode)  # every file it needs is opened here
    except OSError as e:
        raise Failure(f"{getattr(e, 'filename', None) or path}: {e.strerror or e}") from None
    if fmt == "text":
        out.writelines(line + "\n" for line in dump_text.file_dump_lines(d))
    elif fmt == "jsonl":
        entries = dump_json.write_file_rows(d, out)
        emit_jsonl([{"type": "summary", "path": str(path), "entries": entries, "stop": d.stop,
                     "exit_code": d.exit_code()}])
    else:
        dump_json.write_file_document(d, out, d.exit_code)
    for line in d.stderr_lines():
        print(line, file=sys.stderr)
    return d.exit_code()
