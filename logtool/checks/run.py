"""Run every check over the PATHs a user gives: the shared engine of `scan`, `verify` and `audit`."""
from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from logtool.checks.catalog import Finding, Severity, finding
from logtool.checks.logdir import LogDirReport, check_log_dir
from logtool.checks.partition import PartitionReport, check_partition
from logtool.store.layout import PathKind, kind_of
from logtool.store.partition import Partition


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
        """fsck's codes: 8 operational error, 4 problems found, 0 clean."""
        if self.operational_error:
            return 8
        return 4 if any(f.severity >= fail_on for f in self.all_findings()) else 0

    def to_dict(self) -> dict:
        return {"log_dirs": [d.to_dict() for d in self.log_dirs], "partitions": [p.to_dict() for p in self.partitions],
                "findings": [f.to_dict() for f in self.findings], "summary": self.summary()}


@dataclass(slots=True, frozen=True)
class Target:
    """One unit of work: a partition dir, or a single segment file."""

    path: Path
    single_file: bool = False


def plan(paths: list[Path], report: Report) -> list[Target]:
    """Resolve PATHs into partition targets, recording log-dir reports and path problems in `report`."""
    targets: list[Target] = []
    for path in paths:
        try:
            kind = kind_of(path)
            if kind == PathKind.LOG_DIR:
                ld = check_log_dir(path)
                report.log_dirs.append(ld)
                targets += [Target(p) for p in ld.partition_dirs]
            elif kind == PathKind.PARTITION_DIR:
                targets.append(Target(path))
            elif kind == PathKind.SEGMENT_FILE:
                targets.append(Target(path, single_file=True))
            else:
                # Nothing here can be checked: an operational error, like an unreadable path.
                report.operational_error = True
                report.findings.append(finding("NOT_KAFKA", f"{path}: not a Kafka log dir, partition dir or .log file", str(path)))
        except OSError as e:
            report.operational_error = True
            report.findings.append(finding("UNREADABLE", f"{path}: {e.strerror or e}", str(path)))
    return targets


def check_target(target: Target, deep: bool) -> PartitionReport:
    try:
        part = Partition.from_segment_file(target.path) if target.single_file else Partition.from_dir(target.path)
    except OSError as e:
        rep = PartitionReport(str(target.path), None, None)
        rep.findings.append(finding("UNREADABLE", f"{target.path}: {e.strerror or e}", str(target.path)))
        return rep
    try:
        return check_partition(part, deep)
    finally:
        part.close()


def run(paths: list[Path], deep: bool, on_target: Callable[[Target], None] | None = None,
        targets_known: Callable[[int], None] | None = None) -> Report:
    report = Report()
    targets = plan(paths, report)
    if targets_known:
        targets_known(len(targets))
    for t in targets:
        rep = check_target(t, deep)
        if any(f.name == "UNREADABLE" for f in rep.findings):
            report.operational_error = True
        report.partitions.append(rep)
        if on_target:
            on_target(t)
    return report
