"""The verdict in words: per log dir, whether the broker would start and why not, what its recovery would
cut and drop, and the commands to run next (each on a line of its own, to copy). Drawn from the verdict's
documented dict (verify's JSON, the audit's summary), so verify and the audit say it the same way."""
from __future__ import annotations

from rich.markup import escape

from logtool.recovery.verdict import Verified
from logtool.render.text import glued, print_lines, render_verify


def render_verified(v: Verified, show_info: bool) -> None:
    """verify's text: the findings, then the verdict."""
    render_verify(v.report, show_info)
    render_verdicts([x.to_dict() for x in v.judged])


def render_verdicts(verdicts: list[dict]) -> None:
    print_lines(line for v in verdicts for line in verdict_lines(v))


def verdict_lines(v: dict) -> list[str]:
    unread_whole = any(x["partition"] == v["log_dir"] for x in v["not_worked_out"])  # a PATH never listed
    where = escape(v["log_dir"]) + ("" if v["log_dir_checked"] or unread_whole
                                    else " (its own files not checked: give the log dir)")
    lines = []
    if v["blockers"]:
        lines.append(f"[bold red]verdict[/] {where}: the broker would not start with it:")
        for b in v["blockers"]:
            lines.append(f"  - {b['code']} {b['name']} {escape(b['file'] or b['dir'])}: {escape(b['effect'])}")
            lines.append(f"    fix: {escape(b['fix'])}")
    elif v["broker_starts"] is None:  # a part of it was not read (an audit's lost host)
        lines.append(f"[bold yellow]verdict[/] {where}: whether the broker would start cannot be told, as not all "
                     f"of it was read:")
    elif v["recovery"] or v["starts_unrecovered"] or v["not_worked_out"]:
        lines.append(f"[bold yellow]verdict[/] {where}: the broker would start, and:")
    else:
        lines.append(f"[bold green]verdict[/] {where}: the broker would start; its recovery would lose nothing")
    if v["blockers"] and v["recovery"]:
        lines.append("  once it starts:")
    for x in v["recovery"]:
        dropped = (f", {x['valid_records_dropped']} valid record(s) as written dropped (offsets up to "
                   f"{x['log_end_offset_as_written']}, the log ending at {x['log_end_offset_after']})"
                   if x["valid_records_dropped"] else "")
        deleted = f", {x['segments_deleted']} later segment(s) deleted" if x["segments_deleted"] else ""
        lines.append(f"  - its recovery would cut {x['bytes_cut']} bytes of {escape(x['partition'])}{deleted}"
                     f"{dropped} ({escape(x['cause'])})")
    for f in v["starts_unrecovered"]:
        lines.append(f"  - but it would not recover: {f['code']} {f['name']}: {escape(f['message'])}")
    for x in v["not_worked_out"]:
        lines.append(f"  - {escape(x['partition'])}: what recovery would do cannot be worked out ({escape(x['why'])})")
    if v["next"]:
        lines.append("  next:")
        lines += [f"    {glued(escape(step))}" for step in v["next"]]
    return lines
