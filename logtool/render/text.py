"""Text output for people (rich): finding lists, inventory tables, summaries."""
from __future__ import annotations

import os
import sys

from rich.console import Console
from rich.markup import escape

from logtool.findings import Finding, Kind, Severity
from logtool.checks.engine import Report
from logtool.render.table import Column, print_fitted
from logtool.store.layout import FileKind, classify_file

_SEGMENT_KINDS = {FileKind.LOG, FileKind.INDEX, FileKind.TIMEINDEX, FileKind.TXNINDEX, FileKind.SNAPSHOT}

_STYLE = {Severity.ERROR: "bold red", Severity.WARNING: "yellow", Severity.INFO: "dim"}


def console() -> Console:
    # In a pipe rich would assume 80 columns and leave out table columns a file has room for: 200 there,
    # unless COLUMNS says otherwise. On a terminal rich asks the terminal.
    width = None if sys.stdout.isatty() else int(os.environ.get("COLUMNS", "").strip() or 0) or 200
    return Console(highlight=False, soft_wrap=True, width=width)


def finding_line(f: Finding) -> str:
    where = f.file or ""
    if f.position is not None:
        where += f"@{f.position}"
    at = f" offset {f.offset}" if f.offset is not None else ""
    return (f"  [{_STYLE[f.severity]}]{str(f.severity):7}[/] {f.code} {f.name:<26} "
            f"{escape(where)}{at}: {escape(f.message)}")


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


class _Lines:
    """Lines of markup printed a few hundred at a time: one `Console.print` per line costs a third of a
    verify of thousands of small partitions."""

    EVERY = 256

    def __init__(self, out: Console) -> None:
        self.out, self.lines = out, []

    def print(self, line: str) -> None:
        self.lines.append(line)
        if len(self.lines) >= self.EVERY:
            self.flush()

    def flush(self) -> None:
        if self.lines:
            self.out.print("\n".join(self.lines))
            self.lines = []


def render_verify(report: Report, show_info: bool) -> None:
    out = _Lines(console())
    for d in report.log_dirs:
        meta = ", ".join(f"{k}={v}" for k, v in d.meta.items() if k in ("cluster.id", "node.id", "broker.id"))
        out.print(f"[bold]log dir[/] {escape(d.path)}" + (f" ({escape(meta)})" if meta else ""))
        for line in finding_lines([f for f in d.findings if show_info or f.severity > Severity.INFO]):
            out.print(line)
    for f in report.findings:
        out.print(finding_line(f))
    for p in report.partitions:
        shown = [f for f in p.all_findings() if show_info or f.severity > Severity.INFO]
        status = "[green]clean[/]" if p.status == "clean" else "[bold red]damaged[/]"
        segs = p.segments
        valid = sum(s.valid_bytes for s in segs)
        size = sum(s.size for s in segs)
        rng = ""
        firsts = [s.first_offset for s in segs if s.first_offset is not None]
        lasts = [s.last_offset for s in segs if s.last_offset is not None]
        if firsts:
            rng = f", offsets {min(firsts)}..{max(lasts)}"
        out.print(f"{status} {escape(p.path)}: {len(segs)} segment(s), {sum(s.batches for s in segs)} batches,"
                  f" {valid}/{size} bytes valid{rng}")
        for line in finding_lines(shown):
            out.print(line)
    s = report.summary()
    out.print(f"[bold]{s['partitions']} partition(s), {s['segments']} segment(s), {s['bytes']} bytes, "
              f"{s['batches']} batches: {s['errors']} error(s), {s['warnings']} warning(s), {s['infos']} info[/]")
    out.flush()


def render_kind(k: Kind) -> None:
    out = console()
    out.print(f"[bold]{k.code} {k.name}[/] ({k.severity})")
    out.print(f"  Meaning: {escape(k.meaning)}")
    out.print(f"  Remedy:  {escape(k.remedy)}")


def _other_files(files: dict[str, int]) -> str:
    """Files beside the segments and their indexes: snapshots counted, the rest named."""
    kinds = {n: classify_file(n).kind for n in files}
    snapshots = sum(1 for k in kinds.values() if k == FileKind.SNAPSHOT)
    named = sorted(n for n, k in kinds.items() if k not in _SEGMENT_KINDS)
    parts = ([f"{snapshots} snapshot(s)"] if snapshots else []) + named
    return ", ".join(parts) or "-"


def render_inventory(report: Report) -> None:
    out = console()
    for d in report.log_dirs:
        out.print(f"[bold]log dir[/] {escape(d.path)}")
        for k, v in sorted(d.meta.items()):
            out.print(f"  {escape(k)} = {escape(v)}")
        for name, n in sorted(d.checkpoints.items()):
            out.print(f"  {name}: {n} entries")
        if d.clean_shutdown_marker:
            out.print("  .kafka_cleanshutdown present (the broker will skip recovery)")
        for f in d.findings:  # what is wrong with the log-dir files listed above
            out.print(finding_line(f))
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
            escape(name), "clean" if p.status == "clean" else "[red]damaged[/]", str(len(segs)),
            str(sum(s.size for s in segs)),
            f"{min(firsts)}..{max(lasts)}" if firsts else "-",
            f"{min(ts_first)}..{max(ts_max)}" if ts_first else "-",
            ",".join(str(m) for m in sorted({m for s in segs for m in s.magic})) or "-",
            ",".join(sorted({c for s in segs for c in s.codecs})) or "-",
            f"{idx} files", escape(_other_files(p.files)),
        ])
    print_fitted(out, columns, rows)
