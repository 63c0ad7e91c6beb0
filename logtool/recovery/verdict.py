"""The verdict: the question on call, answered per log dir from a verify report. Would the broker start with
this log dir (and if not, every reason, each with its fix)? What would its recovery do to each damaged
partition (bytes cut, segments deleted, valid records as written dropped)? What to run next?

What recovery does is the truncate planner's answer with Kafka's rule (recovery point 0, every segment
recovered), made only for the partitions whose report has a cut: the rest lose nothing.
"""
from __future__ import annotations

import shlex
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any
from dataclasses import dataclass, field
from pathlib import Path

from logtool.checks.engine import Report
from logtool.checks.partition import PartitionReport
from logtool.findings import (CLEAN_SHUTDOWN_WITH_DAMAGE, NOT_AUDITED, RECOVERY_SKIPS_DAMAGE, UNREADABLE, AtStart,
                              Finding, Severity)
from logtool.store.pacing import ReadPolicy
from logtool.store.partition import Partition

if TYPE_CHECKING:
    from logtool.recovery.truncate_plan import PartitionPlan

# Kinds the broker starts with but that leave a partition as it is instead of recovering it.
_SKIPS_RECOVERY = (CLEAN_SHUTDOWN_WITH_DAMAGE.name, RECOVERY_SKIPS_DAMAGE.name)
_UNREADABLE = "a file of it cannot be read"


@dataclass(slots=True, frozen=True)
class Blocker:
    finding: Finding
    dir: str  # the log dir or partition dir it was found in
    effect: AtStart

    def to_dict(self) -> dict[str, Any]:
        return {"code": self.finding.code, "name": self.finding.name, "dir": self.dir,
                "file": self.finding.file, "effect": self.effect.value, "message": self.finding.message,
                "fix": self.finding.kind.remedy}


@dataclass(slots=True, frozen=True)
class Loss:
    """What the broker's recovery would do to one partition."""

    partition: str
    bytes_cut: int
    segments_deleted: int
    valid_records_dropped: int  # valid records as written that recovery drops (past damage, in later segments)
    log_end_as_written: int | None
    log_end_after: int | None
    cause: str  # the finding recovery cuts at

    def to_dict(self) -> dict[str, Any]:
        return {"partition": self.partition, "bytes_cut": self.bytes_cut, "segments_deleted": self.segments_deleted,
                "valid_records_dropped": self.valid_records_dropped,
                "log_end_offset_as_written": self.log_end_as_written, "log_end_offset_after": self.log_end_after,
                "cause": self.cause}


@dataclass(slots=True, frozen=True)
class NotWorkedOut:
    """A damaged partition whose loss could not be worked out, and why."""

    partition: str
    why: str
    unread: bool = False  # nothing of it was read (an audit's lost host): whether it stops the broker is unknown

    def to_dict(self) -> dict[str, Any]:
        return {"partition": self.partition, "why": self.why}


@dataclass(slots=True)
class Judged:
    """One partition's part of its log dir's verdict (made where its files can be read: on an audit's
    executor, then sent to the driver)."""

    partition: str
    blockers: list[Blocker] = field(default_factory=list)
    unrecovered: list[Finding] = field(default_factory=list)
    loss: Loss | None = None
    not_worked_out: NotWorkedOut | None = None

    @property
    def starts(self) -> bool | None:
        """Whether it lets the broker start: None when it was not read."""
        return _starts(self.blockers, [self.not_worked_out] if self.not_worked_out else [])

    @property
    def matters(self) -> bool:
        """Whether it adds anything to the verdict (most partitions do not)."""
        return bool(self.blockers or self.unrecovered or self.loss or self.not_worked_out)


@dataclass(slots=True)
class Verdict:
    """One log dir's verdict (or, for partition dirs given without their log dir, their parent's: then the
    log dir's own files were not checked, and `log_dir_checked` says so)."""

    log_dir: str
    log_dir_checked: bool
    blockers: list[Blocker] = field(default_factory=list)
    losses: list[Loss] = field(default_factory=list)
    unrecovered: list[Finding] = field(default_factory=list)  # damage the broker would start with, unrecovered
    unplanned: list[NotWorkedOut] = field(default_factory=list)
    next_steps: list[str] = field(default_factory=list)

    @property
    def starts(self) -> bool | None:
        """Whether the broker would start with it: None (cannot be told) when a part of it was not read and
        nothing read stops it."""
        return _starts(self.blockers, self.unplanned)

    def add_log_dir_findings(self, findings: list[Finding]) -> None:
        self.blockers += [Blocker(f, self.log_dir, f.kind.at_start) for f in findings if f.kind.at_start is not None]
        self.unrecovered += [f for f in findings if f.name in _SKIPS_RECOVERY]

    def add(self, judged: Judged) -> None:
        self.blockers += judged.blockers
        self.unrecovered += judged.unrecovered
        if judged.loss is not None:
            self.losses.append(judged.loss)
        if judged.not_worked_out is not None:
            self.unplanned.append(judged.not_worked_out)

    def finish(self) -> "Verdict":
        """Work out the next steps, once every partition was added."""
        self.next_steps = _next_steps(self)
        return self

    def to_dict(self) -> dict[str, Any]:
        return {"log_dir": self.log_dir, "log_dir_checked": self.log_dir_checked, "broker_starts": self.starts,
                "blockers": [b.to_dict() for b in self.blockers], "recovery": [x.to_dict() for x in self.losses],
                "recovery_bytes_cut": sum(x.bytes_cut for x in self.losses),
                "recovery_valid_records_dropped": sum(x.valid_records_dropped for x in self.losses),
                "starts_unrecovered": [f.to_dict() for f in self.unrecovered],
                "not_worked_out": [x.to_dict() for x in self.unplanned], "next": self.next_steps}


def _starts(blockers: list[Blocker], unplanned: list[NotWorkedOut]) -> bool | None:
    if blockers:
        return False
    return None if any(x.unread for x in unplanned) else True


@dataclass(slots=True)
class Verified:
    """verify's result: the checks' report, and the verdict worked out from it."""

    report: Report
    judged: list[Verdict]

    def exit_code(self, fail_on: Severity = Severity.WARNING) -> int:
        return self.report.exit_code(fail_on)

    def to_dict(self) -> dict[str, Any]:
        return {**self.report.to_dict(), "verdict": [v.to_dict() for v in self.judged]}

    def rows(self) -> Iterator[dict[str, Any]]:
        yield from self.report.rows()
        yield from ({"type": "verdict", **v.to_dict()} for v in self.judged)

    def summary(self) -> dict[str, Any]:
        return self.report.summary()

    def stderr_lines(self) -> list[str]:
        return self.report.stderr_lines()


def verified(report: Report, reading: ReadPolicy | None = None) -> Verified:
    """The report with its verdicts; a damaged partition's files read again (`judge`) under `reading`."""
    return Verified(report, verdicts(report, reading))


def verdicts(report: Report, reading: ReadPolicy | None = None) -> list[Verdict]:
    """A verdict per log dir of the report, in its order, then one per other parent of partition dirs given
    (a damaged partition's files read again under `reading`)."""
    by_dir: dict[str, Verdict] = {}
    for d in report.log_dirs:
        by_dir.setdefault(str(Path(d.path)), Verdict(d.path, True)).add_log_dir_findings(d.findings)
    for p in report.partitions:
        parent = p.parent
        verdict = by_dir.get(parent)
        if verdict is None:  # (not setdefault: that would make a Verdict for every partition)
            verdict = by_dir[parent] = Verdict(parent, False)
        verdict.add(judge(p, reading=reading))
    return [v.finish() for v in by_dir.values()]


def unread(path: str, findings: Iterable[Finding]) -> NotWorkedOut | None:
    """What the verdict says of `path` when an audit's lost host read nothing of it (its NOT_AUDITED finding)."""
    not_read = next((f for f in findings if f.kind is NOT_AUDITED), None)
    return None if not_read is None else NotWorkedOut(path, not_read.message, unread=True)


def judge(p: PartitionReport, directory: Path | None = None, unreachable: str | None = None,
          reading: ReadPolicy | None = None) -> Judged:
    """The partition's part of the verdict, from its report. Its files (at `directory`, its report's path
    unless given) are read again, under `reading` as its checks read them, only when its recovery would cut;
    when they cannot be reached from here, `unreachable` says why and the loss is not worked out."""
    findings = list(p.all_findings())
    judged = Judged(p.path, [Blocker(f, p.path, f.kind.at_start) for f in findings if f.kind.at_start is not None],
                    [f for f in findings if f.name in _SKIPS_RECOVERY])
    not_read = unread(p.path, findings)
    if not_read is not None:  # nothing was read, so nothing is known, not "loses nothing"
        judged.not_worked_out = not_read
    elif any(f.kind is UNREADABLE for f in findings):  # a plan blind to a file would say nothing true
        judged.not_worked_out = NotWorkedOut(p.path, _UNREADABLE)
    elif any(f.kind.cuts for f in findings):  # else recovery loses nothing here
        directory = directory or Path(p.path)
        if directory.is_file():  # what recovery does depends on the partition's other segments
            unreachable = "a lone segment was given: give its partition dir"
        plan = None if unreachable else _plan(directory, reading)
        if plan is None:
            judged.not_worked_out = NotWorkedOut(p.path, unreachable or _UNREADABLE)
        else:
            judged.loss = _loss(p.path, plan)
    return judged


def _plan(directory: Path, reading: ReadPolicy | None) -> PartitionPlan | None:
    """Kafka's recovery of the partition as the truncate planner works it out; None when a file is unreadable."""
    # Imported here: the planner is a large share of a verify's start, and only a partition whose recovery
    # cuts needs it.
    from logtool.recovery.truncate_plan import plan_log_loss
    try:
        part = Partition.from_dir(directory).read_under(reading)
        try:
            plan = plan_log_loss(part)
        finally:
            part.close()
    except OSError:
        return None
    return None if plan.unreadable else plan


def _loss(path: str, plan: PartitionPlan) -> Loss:
    from logtool.recovery.truncate_plan import ActionKind  # as in `_plan`
    cause = f"{plan.cause.code} {plan.cause.name} in {plan.cause.file}" if plan.cause else "damage"
    return Loss(path, plan.bytes_leaving, sum(1 for a in plan.actions if a.action is ActionKind.QUARANTINE_SEGMENT),
                plan.valid_records_dropped_by_kafka, plan.log_end_as_written, plan.log_end_after, cause)


def _next_steps(v: Verdict) -> list[str]:
    """The commands to run next, in order: keep what recovery would drop, preview the repair."""
    steps = []
    for loss in v.losses:
        if loss.valid_records_dropped:
            name = Path(loss.partition).name
            steps.append(f"logtool dump {shlex.quote(loss.partition)} --salvage --format jsonl > "
                         f"{shlex.quote(name + '.rescued.jsonl')}")
    repairable = v.losses or any(b.finding.kind.fix is not None for b in v.blockers)
    if repairable or v.unrecovered:
        target = v.log_dir if v.log_dir_checked else " ".join(shlex.quote(x.partition) for x in v.losses)
        if target:
            steps.append(f"logtool truncate {shlex.quote(target) if v.log_dir_checked else target}")
    return steps
