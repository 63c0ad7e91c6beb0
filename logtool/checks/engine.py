"""Run every check over the PATHs a user gives: the shared engine of `scan`, `verify` and `audit`."""
from __future__ import annotations

import os

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from logtool.findings import NOT_KAFKA, UNREADABLE, Finding, Severity, finding
from logtool.checks.checkpoints import check_partition_checkpoints
from logtool.checks.logdir import LogDirReport, check_log_dir
from logtool.checks.logdir_set import check_log_dir_set
from logtool.checks.partition import PartitionReport, check_partition
from logtool.checks.producers import DEFAULT_TRANSACTION_TIMEOUT_MS
from logtool.store.segment import Lens
from logtool.checks.shutdown import check_clean_shutdown
from logtool.store.pacing import ReadPolicy
from logtool.store.layout import PathKind, classify_path, is_records_file, parse_partition_dir, real_name
from logtool.store.partition import Partition
from logtool import exitcodes


def fsck_code(operational: bool, worst: Severity | None, fail_on: Severity) -> int:
    """fsck's codes: 8 operational error, 4 problems found, 0 clean."""
    if operational:
        return exitcodes.OPERATIONAL
    return exitcodes.PROBLEMS if worst is not None and worst >= fail_on else exitcodes.CLEAN


@dataclass(slots=True)
class Report:
    log_dirs: list[LogDirReport] = field(default_factory=list)
    partitions: list[PartitionReport] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)  # about the paths themselves
    operational_error: bool = False  # something could not be read at all

    def all_findings(self) -> Iterator[Finding]:
        yield from self.findings
        for d in self.log_dirs:
            yield from d.findings
        for p in self.partitions:
            yield from p.all_findings()

    def summary(self) -> dict:
        segs = [s for p in self.partitions for s in p.segments]
        sev = [f.severity for f in self.all_findings()]
        return {"partitions": len(self.partitions), "segments": len(segs), "bytes": sum(s.size for s in segs),
                "batches": sum(s.batches for s in segs), "errors": sev.count(Severity.ERROR),
                "warnings": sev.count(Severity.WARNING), "infos": sev.count(Severity.INFO)}

    def exit_code(self, fail_on: Severity = Severity.WARNING) -> int:
        worst = max((f.severity for f in self.all_findings()), default=None)
        return fsck_code(self.operational_error, worst, fail_on)

    def to_dict(self) -> dict:
        return {"log_dirs": [d.to_dict() for d in self.log_dirs], "partitions": [p.to_dict() for p in self.partitions],
                "findings": [f.to_dict() for f in self.findings], "summary": self.summary()}


@dataclass(slots=True, frozen=True)
class Target:
    """One unit of work: a partition dir, or a single segment file."""

    path: Path
    single_file: bool = False


def plan_targets(paths: list[Path], report: Report) -> list[Target]:
    """Resolve PATHs into partition targets, recording log-dir reports and path problems in `report`."""
    targets: list[Target] = []
    for path in paths:
        try:
            kind = classify_path(path)
            if kind == PathKind.LOG_DIR:
                ld = check_log_dir(path)
                report.log_dirs.append(ld)
                targets += [Target(p) for p in ld.partition_dirs]
            elif kind == PathKind.PARTITION_DIR:
                targets.append(Target(path))
            elif kind == PathKind.SEGMENT_FILE or (is_records_file(path.name) and path.is_file()):
                targets.append(Target(path, single_file=True))  # a .log, or a KRaft snapshot
            else:
                # Nothing here can be checked: an operational error, like an unreadable path.
                report.operational_error = True
                report.findings.append(finding(NOT_KAFKA, "not a Kafka log dir, partition dir or .log file",
                                               str(path)))
        except OSError as e:
            report.operational_error = True
            report.findings.append(finding(UNREADABLE, f"cannot be read: {e.strerror or e}", str(path)))
    return targets


def unreadable(target: Target, e: OSError) -> Finding:
    return finding(UNREADABLE, f"cannot be read: {e.strerror or e}", str(target.path))


def open_target(target: Target, reading: ReadPolicy | None = None) -> Partition | PartitionReport:
    """The target's partition, its segments read under `reading`; or, when it cannot be listed, the report
    that says so (named by its directory as the broker names it, so that checkpoint entries still find it)."""
    try:
        part = Partition.from_segment_file(target.path) if target.single_file else Partition.from_dir(target.path)
    except OSError as e:
        name = None if target.single_file else parse_partition_dir(real_name(target.path))
        rep = PartitionReport(str(target.path), *((name.topic, name.partition, name.kind) if name else (None, None)))
        rep.findings.append(unreadable(target, e))
        return rep
    return part.read_under(reading)


def check_target(target: Target, deep: bool, reading: ReadPolicy | None = None, lens: Lens | None = None,
                 transaction_timeout_ms: int = DEFAULT_TRANSACTION_TIMEOUT_MS) -> PartitionReport:
    """Check one target, reading under `reading` and feeding `lens` every batch."""
    part = open_target(target, reading)
    if isinstance(part, PartitionReport):
        return part
    try:
        return check_partition(part, deep, lens, transaction_timeout_ms=transaction_timeout_ms)
    finally:
        part.close()


def segment_bytes(target: Target) -> int:
    """The bytes of the target's .log files, as listed now (0 for what cannot be listed): what a walk of
    it reads, for a progress display."""
    paths: list[os.PathLike[str]]
    if target.single_file:
        paths = [target.path]
    else:
        try:
            paths = [e for e in os.scandir(target.path) if e.name.endswith(".log")]
        except OSError:
            return 0
    total = 0
    for p in paths:
        try:
            total += os.stat(p, follow_symlinks=False).st_size
        except OSError:
            pass
    return total


def run_checks(paths: list[Path], deep: bool, bytes_known: Callable[[int], None] | None = None,
               reading: ReadPolicy | None = None,
               transaction_timeout_ms: int = DEFAULT_TRANSACTION_TIMEOUT_MS) -> Report:
    """Every check over PATHs; `bytes_known` is told how many segment bytes the walk will read."""
    report = Report()
    targets = plan_targets(paths, report)
    check_log_dir_set(report.log_dirs)
    if bytes_known:
        bytes_known(sum(map(segment_bytes, targets)))
    for t in targets:
        rep = check_target(t, deep, reading, transaction_timeout_ms=transaction_timeout_ms)
        if any(f.kind.operational for f in rep.all_findings()):
            report.operational_error = True
        report.partitions.append(rep)
    check_across_files(report)
    return report


def check_across_files(report: Report) -> None:
    """The checks between each log dir's root files and its partitions, once every partition was walked."""
    parents = [Path(p.path).parent for p in report.partitions]
    for ld in report.log_dirs:
        here = Path(ld.path)
        for p, parent in zip(report.partitions, parents):
            if parent == here:
                check_against_log_dir(ld, p)


def check_against_log_dir(ld: LogDirReport, p: PartitionReport) -> None:
    """One walked partition against its log dir's root files (the audit runs it in the task that walked it)."""
    check_partition_checkpoints(ld, p)
    check_clean_shutdown(ld, p)
