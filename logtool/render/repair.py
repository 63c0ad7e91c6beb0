"""Text for people of a truncate plan: per partition, what stays, what goes and why, in plain words."""
from __future__ import annotations

from rich.markup import escape

from logtool.recovery.truncate_plan import Action, PartitionPlan, RepairPlan
from logtool.render.text import console


def _offsets(a: Action) -> str:
    if a.offsets is None:
        return ""
    lo, hi = a.offsets
    return f", offsets {lo}..{hi}" if lo != hi else f", offset {lo}"


def _line(a: Action) -> str:
    name = escape(", ".join(a.files))
    if a.action == "keep":
        return f"  keep      {name} ({a.records} records{_offsets(a)})"
    if a.action == "truncate":
        lo, hi = a.byte_range
        held = f"; {a.records} valid records{_offsets(a)} go with it" if a.records else ""
        return (f"  [bold red]truncate[/]  {name} to {a.to_bytes} bytes: bytes {lo}..{hi} ({a.bytes_removed} bytes) "
                f"removed{held}\n            because {escape(a.detail)}")
    if a.action == "quarantine segment":
        return (f"  [red]quarantine whole segment[/] {name}: {a.bytes_removed} bytes, {a.records} valid "
                f"records{_offsets(a)}")
    if a.action == "excise":
        lo, hi = a.byte_range
        return f"  [red]excise[/]    bytes {lo}..{hi} of {escape(a.files[0])} ({a.bytes_removed} damaged bytes)"
    if a.action == "split off segment":
        lo, hi = a.byte_range
        return (f"  [green]split off[/] bytes {lo}..{hi} of {escape(a.files[1])} as {escape(a.files[0])} "
                f"({a.records} records{_offsets(a)})")
    return f"  [yellow]{a.action}[/]: {escape(a.detail)}"


def _partition(out, p: PartitionPlan, applied: bool) -> None:
    if not p.changes:
        out.print(f"[bold]{escape(str(p.partition))}[/]: nothing to repair (log end offset {p.log_end_before})")
        return
    verb = "repaired" if applied else "plan"
    out.print(f"[bold]{escape(str(p.partition))}[/] {verb}: log start offset {p.log_start}, log end offset "
              f"{p.log_end_before} -> {p.log_end_after}")
    for a in p.actions:
        out.print(_line(a))
    for note in p.notes:
        out.print(f"  note: {escape(note)}")


def render_plan(plan: RepairPlan, applied: bool) -> None:
    out = console()
    for p in plan.partitions:
        _partition(out, p, applied)
    for log_dir, a in plan.log_dir_actions:
        out.print(f"[bold]{escape(str(log_dir))}[/]: [yellow]{a.action}[/] {escape(a.files[0])}: {escape(a.detail)}")
    pending = plan.pending
    removed = sum(a.bytes_removed for p in pending for a in p.changes)
    dropped = sum(p.records_removed for p in pending)
    if not pending:
        out.print(f"{len(plan.partitions)} partition(s): nothing to repair")
    elif applied:
        out.print(f"{len(pending)} of {len(plan.partitions)} partition(s) repaired: {removed} bytes moved to the "
                  f"quarantine, {dropped} valid record(s) among them")
    else:
        out.print(f"{len(pending)} of {len(plan.partitions)} partition(s) to repair: {removed} bytes would leave "
                  f"the log dir (kept in the quarantine), {dropped} valid record(s) among them; "
                  f"run again with --apply to carry it out")
