"""Carrying out a truncate plan: each kind of planned action becomes its typed steps, which the one executor
runs under the locks, journaled, after checking the plan is not stale. `truncate --apply` run again finds an
unfinished run of the same partitions and finishes it from its journal; `restore` undoes it."""
from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from logtool import exitcodes
from logtool.findings import Fix, Severity
from logtool.recovery.executor import Applied, carry_out, staged_write, undo_lines
from logtool.recovery.steps import CutTail, MoveDir, RemoveFile, SplitOff, Step
from logtool.recovery.truncate_plan import Action, ActionKind, RepairPlan

LABEL = "truncate"

StepsOf = Callable[[Path, Action, dict[str, bytes]], list[Step]]


def _cut(where: Path, a: Action, staged: dict[str, bytes]) -> list[Step]:
    assert a.to_bytes is not None
    return [CutTail(str(where), a.files[0], False, a.to_bytes)]


def _remove(where: Path, a: Action, staged: dict[str, bytes]) -> list[Step]:
    return [RemoveFile(str(where), name, False) for name in a.files]


def _split_off(where: Path, a: Action, staged: dict[str, bytes]) -> list[Step]:
    assert a.byte_range is not None
    start, end = a.byte_range
    return [SplitOff(str(where), a.files[0], False, a.files[1], start, end)]


def _rewrite(where: Path, a: Action, staged: dict[str, bytes]) -> list[Step]:
    # a new index takes its segment's owner and mode; a rewritten file keeps its own
    return [staged_write(where, name, data, Path(name).stem + ".log", staged) for name, data in a.new_contents.items()]


def _move_dir(where: Path, a: Action, staged: dict[str, bytes]) -> list[Step]:
    return [MoveDir(str(where), name, True) for name in a.files]


def _nothing(where: Path, a: Action, staged: dict[str, bytes]) -> list[Step]:
    return []


# Every kind of action, and the steps that carry it out: a kind missing here is a KeyError in the tests, never
# a silent fallback.
STEPS_OF: dict[ActionKind, StepsOf] = {
    ActionKind.KEEP: _nothing,
    ActionKind.TRUNCATE: _cut,
    ActionKind.EXCISE: _nothing,  # the excised bytes are part of the cut tail the truncate step keeps
    ActionKind.SPLIT_OFF: _split_off,
    ActionKind.QUARANTINE_SEGMENT: _remove,
    ActionKind.REMOVE_SNAPSHOT: _remove,
    ActionKind.HANDLE_LEFTOVER: _remove,
    ActionKind.REBUILD_INDEXES: _rewrite,
    ActionKind.DROP_LEADER_EPOCHS: _rewrite,
    ActionKind.TRIM_CHECKPOINT: _rewrite,
    ActionKind.MOVE_DIR: _move_dir,
    ActionKind.WRITE_META: _rewrite,
    ActionKind.REMOVE_TMP: _remove,
}


# The actions that answer each kind of finding's fix (findings.Fix): what the plan may hold for it.
FIX_ACTIONS: dict[Fix, tuple[ActionKind, ...]] = {
    Fix.TRUNCATE: (ActionKind.TRUNCATE, ActionKind.QUARANTINE_SEGMENT, ActionKind.EXCISE, ActionKind.SPLIT_OFF),
    Fix.TRUNCATE_STRICT: (ActionKind.TRUNCATE, ActionKind.QUARANTINE_SEGMENT, ActionKind.EXCISE,
                          ActionKind.SPLIT_OFF),
    Fix.REBUILD_INDEXES: (ActionKind.REBUILD_INDEXES,),
    Fix.LEFTOVER: (ActionKind.HANDLE_LEFTOVER, ActionKind.REMOVE_TMP),
    Fix.LEADER_EPOCHS: (ActionKind.DROP_LEADER_EPOCHS,),
    Fix.SNAPSHOTS: (ActionKind.REMOVE_SNAPSHOT,),
    Fix.CHECKPOINTS: (ActionKind.TRIM_CHECKPOINT,),
    Fix.MOVE_OUT: (ActionKind.MOVE_DIR,),
    Fix.META_PROPERTIES: (ActionKind.WRITE_META,),
}


def steps_of(plan: RepairPlan) -> tuple[list[Step], dict[str, bytes]]:
    """The steps that carry out the plan, in order (cuts first, then removals, then rewritten files, as the
    plan lists them; the log dirs' checkpoints once every partition is done), and the bytes to stage."""
    steps: list[Step] = []
    staged: dict[str, bytes] = {}
    for p in plan.pending:
        for a in p.changes:
            steps += STEPS_OF[ActionKind(a.action)](p.partition, a, staged)
    for log_dir, a in plan.log_dir_actions:  # the log dirs' own files, once every partition is done
        if a.new_contents:
            steps += [staged_write(log_dir, name, data, name, staged, root=True)
                      for name, data in a.new_contents.items()]
        else:
            steps += [replace(s, root=True) for s in STEPS_OF[ActionKind(a.action)](log_dir, a, staged)]
    return steps, staged


def apply_plan(plan: RepairPlan, quarantine: Path, command: str) -> Applied:
    """Carry out `plan` in a new run. Raises RepairRefused before the first write, RepairStopped after it."""
    steps, staged = steps_of(plan)
    seen = [p.seen for p in plan.pending if p.seen is not None] + plan.log_dir_seen
    return carry_out(steps, staged, quarantine, LABEL, command, seen)


@dataclass(slots=True)
class Truncated:
    """`truncate`'s result: the plan, the run that carried it out (with --apply), and the unfinished runs of
    an earlier repair that were finished first."""

    plan: RepairPlan
    applied: Applied | None = None
    resumed: list[Applied] = field(default_factory=list)

    def exit_code(self, fail_on: Severity = Severity.WARNING) -> int:
        if self.plan.problems:
            return exitcodes.OPERATIONAL
        if self.applied or self.resumed:
            return exitcodes.REPAIRED
        return exitcodes.PROBLEMS if self.plan.has_changes else exitcodes.CLEAN

    def to_dict(self) -> dict[str, Any]:
        return {**self.plan.to_dict(), "applied": self.applied is not None,
                "run": str(self.applied.run) if self.applied else None}

    def rows(self) -> Iterator[dict[str, Any]]:
        return ({"type": "partition", **p.to_dict()} for p in self.plan.partitions)

    def summary(self) -> dict[str, Any]:
        return {"partitions": len(self.plan.partitions), "to_repair": len(self.plan.pending),
                "bytes_leaving": self.plan.bytes_leaving, "records_leaving": self.plan.records_leaving,
                "applied": self.applied is not None}

    def stderr_lines(self) -> list[str]:
        runs = [*self.resumed, *([self.applied] if self.applied else [])]
        return [f"logtool: {line}" for line in self.plan.problems] + \
            [line for done in runs for line in undo_lines(done.run, "removed bytes")]
