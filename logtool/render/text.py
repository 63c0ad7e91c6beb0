"""Text output for people (rich): finding lists, inventory tables, summaries.

On a terminal every line of markup printed through `console()` is fitted to its width: wrapped at spaces,
never inside a word or a number, its continuation lines indented under it. In a pipe or a file lines stay
whole, one finding per line, for grep."""
from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterable
from typing import Any, TextIO

from rich.cells import cell_len
from rich.console import Console
from rich._emoji_replace import _emoji_replace
from rich.markup import RE_TAGS, escape
from rich.text import Text

from logtool.findings import UNREADABLE, Finding, Kind, Severity
from logtool import collector
from logtool.checks.engine import Report
from logtool.render.jsonout import undecoded_escaped
from logtool.store.layout import FileKind, classify_file

_SEGMENT_KINDS = {FileKind.LOG, FileKind.INDEX, FileKind.TIMEINDEX, FileKind.TXNINDEX, FileKind.SNAPSHOT}

_STYLE = {Severity.ERROR: "bold red", Severity.WARNING: "yellow", Severity.INFO: "dim"}
# "untrimmed": only a preallocated zero tail, which recovery trims without losing a record.
_STATUS_STYLE = {"clean": "green", "untrimmed": "yellow", "damaged": "bold red"}

# In markup, a space that is not a place to break a line (inside a path, a command, a head that must stay
# whole); it prints as a space. NUL, because no path or name can hold one.
GLUE = "\x00"

FINDING_HANG = 10  # a finding's continuation lines start under its code

# Where a line may not break besides GLUE: between a number and the word before it ("offset 272"), between
# a number standing alone and the word after it ("2 error(s)"), on either side of " = " and " -> " ("crc =
# 1415221374", "12 -> 16 bytes"), and inside a `command`.
_LABEL_NUMBER = re.compile(r"(?<=[A-Za-z]) (?=\d)")
_NUMBER_WORD = re.compile(r"(?<![^ (])(\d+) (?=[A-Za-z(])")
_OPERATOR = re.compile(r" (?=(?:=|->) )|(?<= =) |(?<= ->) ")
_COMMAND = re.compile(r"`[^`\n]*`")
_WORD = re.compile(r"[^ ]+")


def glued(s: str) -> str:
    """`s` (a path, a command) kept on one line: its spaces are no places to break."""
    return s.replace(" ", GLUE)


def _wrapped(line: Text, width: int, hang: int | None) -> list[Text]:
    """One line of text broken at spaces into lines of at most `width` cells, the continuation lines indented
    by `hang` (default: the line's own indent and 4 more). A word longer than a line keeps a line of its own,
    whole: the terminal folds it, and a path or command copied from it stays one."""
    shown = line.plain.replace(GLUE, " ")
    if cell_len(shown) <= width:
        return [line]
    breakable = _OPERATOR.sub(GLUE, _LABEL_NUMBER.sub(GLUE, line.plain))
    breakable = _NUMBER_WORD.sub(lambda m: m.group(1) + GLUE, breakable)
    breakable = _COMMAND.sub(lambda m: glued(m.group()), breakable)
    indent = len(shown) - len(shown.lstrip(" "))
    hang = min(indent + 4 if hang is None else hang, width // 2)
    spans: list[tuple[int, int]] = []
    start, end = 0, -1
    for word in _WORD.finditer(breakable):
        if end >= 0 and cell_len(shown[start:word.end()]) > width - (hang if spans else 0):
            spans.append((start, end))
            start = word.start()
        end = word.end()
    if end < 0:  # nothing but spaces
        return [line]
    spans.append((start, end))
    return [line[s:e] if i == 0 else Text(" " * hang) + line[s:e] for i, (s, e) in enumerate(spans)]


def fitted(markup: str, width: int | None, hang: int | None = None) -> Text:
    """Markup as text fitted to `width` (None: its lines stay whole)."""
    if width is None:
        return Text.from_markup(markup.replace(GLUE, " "))
    text = Text.from_markup(markup)
    text = Text("\n").join([part for line in text.split("\n", allow_blank=True)
                            for part in _wrapped(line, width, hang)])
    text.plain = text.plain.replace(GLUE, " ")  # the same length: the styles stay where they were
    return text


class _NamesEscaped:
    """stdout, with the bytes of names that are not UTF-8 escaped (see `undecoded_escaped`): a strict UTF-8
    stream refuses them, and a repair's last lines (the run to restore) must not be lost to that."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        return self._stream.write(undecoded_escaped(text))

    def __getattr__(self, name: str) -> Any:  # isatty, fileno, flush, encoding: the stream's own
        return getattr(self._stream, name)


class Screen(Console):
    """rich's Console, where a line of markup given to `print` is fitted to the width (`fitted`) when
    `wraps`, with `hang` for its continuation lines; tables and other renderables print as rich prints them."""

    def __init__(self, wraps: bool, **options: Any) -> None:
        super().__init__(**options)
        self.wraps = wraps

    def fitted(self, markup: str, hang: int | None = None) -> Text:
        return fitted(markup, self.width if self.wraps else None, hang)

    def print(self, *objects: Any, hang: int | None = None, **options: Any) -> None:
        if len(objects) == 1 and isinstance(objects[0], str):
            objects = (self.fitted(objects[0], hang),)
        super().print(*objects, **options)

    def on_broken_pipe(self) -> None:
        # rich exits with status 1 when the reader goes away (`logtool metadata | head -1`), which is "problems
        # repaired" to us. The error goes on to cli.main instead, which leaves quietly with 0 as Unix tools do.
        self.quiet = True
        raise


def console() -> Screen:
    """What every text renderer prints through. On a terminal, lines wrap to its width (COLUMNS first, as
    rich reads it). In a pipe or a file they stay whole, one finding per line, as grep and less want them
    and as ls, git or systemctl leave theirs; COLUMNS there only fits tables (else 200 columns: rich would
    assume 80 and leave out columns a file has room for). COLUMNS alone is no request to wrap: readline
    exports COLUMNS=80 to every child of a Python program that imported it."""
    options: dict[str, Any] = {"file": _NamesEscaped(sys.stdout), "highlight": False, "soft_wrap": True}
    if sys.stdout.isatty():
        return Screen(wraps=True, **options)
    columns = os.environ.get("COLUMNS", "").strip()
    return Screen(wraps=False, width=int(columns) if columns.isdigit() and int(columns) else 200, **options)


def _message(f: Finding) -> str:
    # Some checks begin a message with the file's name, which the line already shows before it.
    named = f"{f.file}: "
    return f.message[len(named):] if f.file and f.message.startswith(named) else f.message


def finding_line(f: Finding) -> str:
    """A finding as one line of markup (print it with hang=FINDING_HANG)."""
    where = glued(f.file or "")
    if f.position is not None:
        where += f"@{f.position}"
    at = f" offset {f.offset}" if f.offset is not None else ""
    return (f"  [{_STYLE[f.severity]}]{str(f.severity):7}[/] {f.code} {f.name:<26} "
            f"{escape(where)}{at}: {escape(_message(f))}")


def finding_lines(findings: list[Finding]) -> list[str]:
    """One line per kind and file: repeats of a kind in one file (and a cap's count of the rest) fold into
    its first finding's line, with how many more and the offsets they span. JSON keeps each one."""
    groups: dict[tuple[str, str | None], list[Finding]] = {}
    for f in findings:
        groups.setdefault((f.code, f.file), []).append(f)
    lines = []
    for group in groups.values():
        shown = [f for f in group if not f.more]
        if not shown:
            shown = group
        more = len(shown) - 1 + sum(f.more for f in group)
        line = finding_line(shown[0])
        if more:
            offsets = [f.offset for f in shown if f.offset is not None]
            span = f", offsets {min(offsets)}..{max(offsets)} shown" if len(set(offsets)) > 1 else ""
            line += f" [dim](and {more} more like it{span})[/]"
        lines.append(line)
    return lines


def _status(status: str) -> str:
    return f"[{_STATUS_STYLE.get(status, 'yellow')}]{status}[/]"


class Lines:
    """Lines of markup printed a few hundred at a time: one `Console.print` per line is a large share of a
    verify of thousands of small partitions (bench/results/kernel.md). Lines that stay whole are parsed as
    one markup text."""

    EVERY = 256

    def __init__(self, out: Screen) -> None:
        self.out = out
        self.lines: list[tuple[str, int | None]] = []  # markup, hang

    def print(self, line: str, hang: int | None = None) -> None:
        self.lines.append((line, hang))
        if len(self.lines) >= self.EVERY:
            self.flush()

    def flush(self) -> None:
        if self.lines:
            if self.out.wraps:
                self.out.print(Text("\n").join([self.out.fitted(line, hang) for line, hang in self.lines]))
            else:
                markup = "\n".join(line for line, _ in self.lines)
                if not self._write_plain(markup):
                    self.out.print(markup)
            self.lines = []

    def _write_plain(self, markup: str) -> bool:
        """Write what printing `markup` would, without rich's Text, spans and segments on the way (most of the
        printing of thousands of partitions' lines). False where that is left to rich: a console that colours,
        markup `_plain` does not take, or a stream that cannot encode the text (nothing is written then, and
        rich's print says so in its own words)."""
        plain = _plain(markup.replace(GLUE, " ")) if self.out.color_system is None else None
        if plain is None:
            return False
        try:
            self.out.file.write(plain + "\n")
        except UnicodeEncodeError:
            return False
        self.out.file.flush()
        return True


# What makes rich do more with markup than drop its tags and replace emoji codes: a backslash (an escape),
# control characters (stripped, or tabs expanded).
_NOT_PLAIN = re.compile(r"[\x00-\x09\x0b-\x1f\x7f\\]")
# What any emoji code rich replaces matches (its pattern is `:` no-spaces `:`, with an optional -variant).
_MAYBE_EMOJI = re.compile(r":\S*:")


def _plain(markup: str) -> str | None:
    """The text rich prints of `markup` (`Text.from_markup(markup).plain`) on a console that neither colours nor
    wraps, made without rich's Text (the cost of printing thousands of partitions' lines); None for markup that
    holds what `_NOT_PLAIN` names, which is left to rich. tests/test_small_partitions.py holds the two to one
    answer."""
    if _NOT_PLAIN.search(markup):
        return None
    pieces, at = [], 0
    for tag in RE_TAGS.finditer(markup):
        pieces.append(markup[at:tag.start()])
        at = tag.end()
    pieces.append(markup[at:])
    # As rich's markup.render: each piece between tags on its own; an emoji code is `:name:` (no space in it),
    # so a piece without one is left as it is, and rich's table of codes is not even loaded for it.
    return "".join([_emoji_replace(p) if _MAYBE_EMOJI.search(p) else p for p in pieces])


def print_lines(lines: Iterable[str]) -> None:
    """Lines of markup printed as `Screen.print` prints each (wrapped on a terminal, else whole), a few
    hundred at a time."""
    out = Lines(console())
    for line in lines:
        out.print(line)
    out.flush()


def render_verify(report: Report, show_info: bool) -> None:
    # The collector paused, as for the checks (checks/engine.py): the report is large and lives on, and the
    # lines made from it leave no cycles; left to run, it walks the report again and again (a quarter of the
    # printing of 20,000 small partitions).
    with collector.paused():
        _render_verify(report, show_info)


def _render_verify(report: Report, show_info: bool) -> None:
    out = Lines(console())
    for d in report.log_dirs:
        meta = ", ".join(f"{k}={v}" for k, v in d.meta.items() if k in ("cluster.id", "node.id", "broker.id"))
        out.print(f"[bold]log dir[/] {escape(glued(d.path))}" + (f" ({escape(meta)})" if meta else ""))
        for line in finding_lines([f for f in d.findings if show_info or f.severity > Severity.INFO]):
            out.print(line, FINDING_HANG)
    for f in report.findings:
        out.print(finding_line(f), FINDING_HANG)
    for p in report.partitions:
        shown = [f for f in p.all_findings() if show_info or f.severity > Severity.INFO]
        segs = p.segments
        valid = size = batches = 0
        first = last = None
        for s in segs:  # (one loop: most partitions have one segment, and a sum each cost more than the line)
            valid, size, batches = valid + s.valid_bytes, size + s.size, batches + s.batches
            if s.first_offset is not None:
                first = s.first_offset if first is None else min(first, s.first_offset)
            if s.last_offset is not None:
                last = s.last_offset if last is None else max(last, s.last_offset)
        rng = f", offsets {first}..{last}" if first is not None else ""
        # The status, the partition and its segment count stay on one line, whatever the width.
        status = p.status
        head = f"{_status(status)}{GLUE}{escape(glued(p.path))}:{GLUE}{len(segs)}{GLUE}segment(s)"
        out.print(f"{head}, {batches} batches, {valid}/{size} bytes valid{rng}", len(status) + 1)
        for line in finding_lines(shown):
            out.print(line, FINDING_HANG)
    out.print(_summary(report.summary(), show_info))
    out.flush()


def _summary(s: dict, show_info: bool) -> str:
    hidden = " (not listed: --show-info lists them)" if s["infos"] and not show_info else ""
    return (f"[bold]{s['partitions']} partition(s), {s['segments']} segment(s), {s['bytes']} bytes, "
            f"{s['batches']} batches: {s['errors']} error(s), {s['warnings']} warning(s), {s['infos']} info[/]"
            f"{hidden}")


def render_kind(k: Kind) -> None:
    out = console()
    out.print(f"[bold]{k.code} {k.name}[/] ({k.severity})")
    out.print(f"  Meaning: {escape(k.meaning)}", hang=11)
    out.print(f"  Remedy:  {escape(k.remedy)}", hang=11)
    out.print(f"  More:    man logtool-findings (search {k.code}); the docs site: findings.html#{k.code.lower()}",
              hang=11)


def _other_files(files: dict[str, int]) -> str:
    """Files beside the segments and their indexes: snapshots counted, the rest named."""
    kinds = {n: classify_file(n).kind for n in files}
    snapshots = sum(1 for k in kinds.values() if k == FileKind.SNAPSHOT)
    named = sorted(n for n, k in kinds.items() if k not in _SEGMENT_KINDS)
    parts = ([f"{snapshots} snapshot(s)"] if snapshots else []) + named
    return ", ".join(parts) or "-"


def render_listing(report: Report) -> None:
    """ls: a line per partition, its offsets from the first on disk to the log end (one past the last valid)."""
    from logtool.render.table import Column, print_fitted  # (rich's tables: a tenth of a small verify's imports)

    rows = []
    for p in report.partitions:
        firsts = [s.first_offset for s in p.segments if s.first_offset is not None]
        lasts = [s.last_offset for s in p.segments if s.last_offset is not None]
        rows.append([escape(glued(p.path)), _status(p.status), str(min(firsts)) if firsts else "-",
                     str(max(lasts) + 1) if lasts else "-", str(sum(s.size for s in p.segments))])
    print_fitted(console(), [Column("partition"), Column("status"), Column("first offset", 2),
                             Column("log end offset", 1), Column("bytes", 3)], rows)


def render_inventory(report: Report) -> None:
    from logtool.render.table import Column, print_fitted

    out = console()
    for d in report.log_dirs:
        out.print(f"[bold]log dir[/] {escape(glued(d.path))}")
        for k, v in sorted(d.meta.items()):
            out.print(f"  {escape(k)} = {escape(v)}")
        for name, n in sorted(d.checkpoints.items()):
            out.print(f"  {name}: {n} entries")
        if d.clean_shutdown_marker:
            out.print("  .kafka_cleanshutdown present (the broker will skip recovery)")
        for f in d.findings:  # what is wrong with the log-dir files listed above
            out.print(finding_line(f), hang=FINDING_HANG)
    columns = [Column("partition"), Column("status"), Column("segments", 2), Column("bytes", 3),
               Column("offsets", 1), Column("timestamps", 4), Column("magic", 6), Column("codecs", 5),
               Column("indexes", 7), Column("other files", 8)]
    rows = []
    for p in report.partitions:
        segs = p.segments
        firsts = [s.first_offset for s in segs if s.first_offset is not None]
        lasts = [s.last_offset for s in segs if s.last_offset is not None]
        ts_first = [s.first_timestamp for s in segs if s.first_timestamp is not None]
        ts_max = [s.max_timestamp for s in segs if s.max_timestamp is not None]
        idx = sum(1 for s in segs for v in s.indexes.values() if v is not None)
        name = f"{p.topic}-{p.partition}" if p.topic is not None else p.path
        rows.append([
            escape(name), _status(p.status), str(len(segs)),
            str(sum(s.size for s in segs)),
            f"{min(firsts)}..{max(lasts)}" if firsts else "-",
            f"{min(ts_first)}..{max(ts_max)}" if ts_first else "-",
            ",".join(str(m) for m in sorted({m for s in segs for m in s.magic})) or "-",
            ",".join(sorted({c for s in segs for c in s.codecs})) or "-",
            f"{idx} files", escape(_other_files(p.files)),
        ])
    print_fitted(out, columns, rows)
    for p in report.partitions:  # what could not be read: the table counts it, only this names it
        unread = [f for f in p.all_findings() if f.name == UNREADABLE.name]
        if unread:
            out.print(f"[bold]{escape(glued(p.path))}[/]")
            for f in unread:
                out.print(finding_line(f), hang=FINDING_HANG)
