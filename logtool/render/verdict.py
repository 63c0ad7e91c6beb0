"""The verdict in words: per log dir, whether the broker would start and why not, what its recovery would
cut and drop, and the commands to run next (each on a line of its own, to copy)."""
from __future__ import annotations

from rich.markup import escape

from logtool.recovery.verdict import Verdict
from logtool.render.text import console, glued


def render_verdicts(verdicts: list[Verdict]) -> None:
    out = console()
    for v in verdicts:
        for line in verdict_lines(v):
            out.print(line)


def verdict_lines(v: Verdict) -> list[str]:
    where = escape(v.log_dir) + ("" if v.log_dir_checked else " (its own files not checked: give the log dir)")
    lines = []
    if v.blockers:
        lines.append(f"[bold red]verdict[/] {where}: the broker would not start with it:")
        for b in v.blockers:
            lines.append(f"  - {b.finding.code} {b.finding.name} {escape(b.finding.file or b.where)}: "
                         f"{escape(b.effect.value)}")
            lines.append(f"    fix: {escape(b.finding.kind.remedy)}")
    elif v.losses or v.unrecovered:
        lines.append(f"[bold yellow]verdict[/] {where}: the broker would start, and:")
    else:
        lines.append(f"[bold green]verdict[/] {where}: the broker would start; its recovery would lose nothing")
    if v.blockers and v.losses:
        lines.append("  once it starts:")
    for x in v.losses:
        dropped = (f", {x.valid_records_dropped} valid record(s) as written dropped (offsets up to "
                   f"{x.log_end_as_written}, the log ending at {x.log_end_after})" if x.valid_records_dropped else "")
        deleted = f", {x.segments_deleted} later segment(s) deleted" if x.segments_deleted else ""
        lines.append(f"  - its recovery would cut {x.bytes_cut} bytes of {escape(x.partition)}{deleted}{dropped} "
                     f"({escape(x.cause)})")
    for f in v.unrecovered:
        lines.append(f"  - but it would not recover: {f.code} {f.name}: {escape(f.message)}")
    for path in v.unplanned:
        lines.append(f"  - {escape(path)}: damaged, but what recovery would do cannot be worked out (a file "
                     f"cannot be read)")
    if v.next_steps:
        lines.append("  next:")
        lines += [f"    {glued(escape(step))}" for step in v.next_steps]
    return lines
