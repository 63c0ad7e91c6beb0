"""Text for people of a truncate plan: per partition, what stays, what goes and why, in plain words; and of
what a restore put back."""
from __future__ import annotations

from pathlib import Path

from rich.markup import escape

from logtool.format.index import entries
from logtool.recovery.index_rebuild import IndexRebuild
from logtool.recovery.restore import Restored
from logtool.recovery.truncate import Truncated
from logtool.recovery.truncate_plan import Action, ActionKind, PartitionPlan
from logtool.render.text import Lines, console, glued, print_lines

_ACTION_HANG = 12  # an action's continuation lines start under its file names
_NOTE_HANG = 8  # a note's, under its text


def _name(path: object) -> str:
    return escape(glued(str(path)))


def _offsets(a: Action) -> str:
    if a.offsets is None:
        return ""
    lo, hi = a.offsets
    return f", offsets {lo}..{hi}" if lo != hi else f", offset {lo}"


def _bytes(a: Action) -> tuple[int, int]:
    assert a.byte_range is not None  # a truncate, an excise and a split-off each name the bytes they take
    return a.byte_range


def _line(a: Action) -> str:
    name = escape(", ".join(glued(f) for f in a.files))
    if a.action is ActionKind.KEEP:
        return f"  keep      {name} ({a.records} records{_offsets(a)})"
    if a.action is ActionKind.TRUNCATE:
        lo, hi = _bytes(a)
        # With --excise the valid records in the cut tail come back in the split-off lines below it.
        held = f"; they hold {a.records} valid records{_offsets(a)}" if a.records else ""
        return (f"  [bold red]truncate[/]  {name} to {a.to_bytes} bytes: bytes {lo}..{hi} ({a.bytes_removed} bytes) "
                f"cut off{held}")
    if a.action is ActionKind.QUARANTINE_SEGMENT:
        return (f"  [red]quarantine whole segment[/] {name}: {a.bytes_removed} bytes, {a.records} valid "
                f"records{_offsets(a)}")
    if a.action is ActionKind.EXCISE:
        lo, hi = _bytes(a)
        return f"  [red]excise[/]    bytes {lo}..{hi} of {_name(a.files[0])} ({a.bytes_removed} damaged bytes)"
    if a.action is ActionKind.SPLIT_OFF:
        lo, hi = _bytes(a)
        return (f"  [green]split off[/] bytes {lo}..{hi} of {_name(a.files[1])} as {_name(a.files[0])} "
                f"({a.records} records{_offsets(a)})")
    return f"  [yellow]{a.action}[/]: {escape(a.detail)}"


def _action(out: Lines, a: Action) -> None:
    out.print(_line(a), hang=_ACTION_HANG)
    if a.action is ActionKind.TRUNCATE:
        out.print(f"            because {escape(a.detail)}", hang=_ACTION_HANG + len("because "))


def _partition(out: Lines, p: PartitionPlan, applied: bool) -> None:
    if not p.changes:
        end = "no segments" if p.log_end_before is None else f"log end offset {p.log_end_before}"
        out.print(f"[bold]{_name(p.partition)}[/]: nothing to repair ({end})")
        return
    verb = "repaired" if applied else "plan"
    out.print(f"[bold]{_name(p.partition)}[/] {verb}: log start offset {p.log_start}, log end offset as "
              f"written {p.log_end_as_written} -> {p.log_end_after} after the repair (Kafka's recovery: "
              f"{p.log_end_before})")
    out.print(f"  {_leaving(p.bytes_leaving, p.records_leaving, applied)}; Kafka's recovery drops "
              f"{p.valid_records_dropped_by_kafka} valid record(s) as written, --excise keeps "
              f"{p.records_kept_by_excise} of them")
    for a in p.actions:
        _action(out, a)
    for note in p.notes:
        out.print(f"  note: {escape(note)}", hang=_NOTE_HANG)


def render_repair(done: Truncated) -> None:
    out, plan, applied = Lines(console()), done.plan, done.applied is not None
    for p in plan.partitions:
        _partition(out, p, applied)
    for log_dir, a in plan.log_dir_actions:
        out.print(f"[bold]{_name(log_dir)}[/]: [yellow]{a.action}[/] {', '.join(map(_name, a.files))}: "
                  f"{escape(a.detail)}")
    for log_dir, note in plan.log_dir_notes:
        out.print(f"[bold]{_name(log_dir)}[/]: note: {escape(note)}")
    pending = plan.pending
    leaving = _leaving(plan.bytes_leaving, plan.records_leaving, applied)
    # the log dirs' own files: a refused directory moved out, a .tmp leftover, meta.properties, checkpoints
    own = f" and {len(plan.log_dir_actions)} change(s) to log dirs' own files" if plan.log_dir_actions else ""
    if not plan.has_changes:
        out.print(f"{len(plan.partitions)} partition(s): nothing to repair")
    elif applied:
        out.print(f"{len(pending)} of {len(plan.partitions)} partition(s) repaired{own}: {leaving}")
    else:
        out.print(f"{len(pending)} of {len(plan.partitions)} partition(s) to repair{own}: {leaving}; "
                  f"run again with --apply to carry it out")
    out.flush()


def _leaving(bytes_leaving: int, records: int, applied: bool) -> str:
    """Segment bytes and valid records that leave the log dir (the quarantine keeps them)."""
    verb = "left" if applied else "would leave"
    return f"{bytes_leaving} bytes {verb} the log dir (kept in the quarantine), {records} valid record(s) among them"


def render_restored(done: Restored) -> None:
    if done.already:
        console().print(f"{_name(done.run.path)} is already restored; nothing to do")
        return
    print_lines(f"{'already ' if f['by_earlier_restore'] else ''}{f['done']} {_name(f['file'])}" for f in done.files())


def render_index_rebuild(outcome: IndexRebuild) -> None:
    out, applied = Lines(console()), outcome.applied
    for p in outcome.plans:
        pending = p.pending
        partition = escape(glued(str(p.partition)))
        if pending:
            out.print(f"[bold]{partition}[/]: {'rewrote' if applied else 'would rewrite'} {len(pending)} of "
                      f"{len(p.changes)} index files")
        elif p.changes:
            out.print(f"[bold]{partition}[/]: all {len(p.changes)} index files match the log")
        else:
            out.print(f"[bold]{partition}[/]: no index file to rewrite")
        for c in pending:
            d = c.to_dict()
            old = "missing" if d["old_entries"] is None else f"{entries(d['old_entries'])} ({d['old_size']} bytes)"
            new = f"{entries(d['new_entries'])} ({d['new_size']} bytes)"
            out.print(f"  {escape(Path(d['file']).name)}: {old} -> {new}")
        for name in p.valid_prefix_short:
            out.print(f"  [yellow]{name}[/]: indexed up to the end of its valid prefix; "
                      "the damaged tail is not indexed")
        for line in p.unreadable:
            out.print(f"  [red]{line}[/]: left as it is")
        for name in p.overflow:
            out.print(f"  [red]{name}[/]: holds offsets more than 2^31-1 past its base (LT112 OFFSET_OVERFLOW), "
                      "which no index can hold; Kafka splits such a segment at load: its indexes are left as they are")
    out.flush()
