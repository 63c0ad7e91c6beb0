"""Run every check over the PATHs a user gives: the shared engine of `scan`, `verify` and `audit`."""
from __future__ import annotations

import gc
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path

from logtool.findings import Finding, Severity
from logtool.checks.checkpoints import check_partition_checkpoints
from logtool.checks.logdir import LogDirReport, check_log_dir
from logtool.checks.logdir_set import check_log_dir_set
from logtool.checks.partition import PartitionReport, check_partition
from logtool.checks.producers import DEFAULT_TRANSACTION_TIMEOUT_MS
from logtool.store.segment import Lens
from logtool.checks.shutdown import check_clean_shutdown
from logtool.store.pacing import ReadPolicy
from logtool.store.discover import Found, Target, TargetKind, cannot_read, discover
from logtool.store.read_ahead import Ahead, read_ahead
from logtool.store.layout import parse_partition_dir
from logtool.store.partition import Partition
from logtool import collector, exitcodes


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

    def only(self, keep: Callable[[Finding], bool]) -> "Report":
        """The same report with only the findings `keep` accepts (`index verify`'s: the index-scope kinds)."""
        def kept(fs: list[Finding]) -> list[Finding]:
            return [f for f in fs if keep(f)]
        parts = [replace(p, findings=kept(p.findings), segments=[replace(s, findings=kept(s.findings))
                                                                 for s in p.segments])
                 for p in self.partitions]
        dirs = [replace(d, findings=kept(d.findings)) for d in self.log_dirs]
        return replace(self, partitions=parts, log_dirs=dirs, findings=kept(self.findings))

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

    def rows(self) -> Iterator[dict]:
        """A row per log dir, per path that could not be read (an error row) and per partition."""
        yield from ({"type": "log_dir", **d.to_dict()} for d in self.log_dirs)
        yield from ({"type": "error", "error": "operational", "message": f"{f.file}: {f.message}",
                     "finding": f.to_dict()} for f in self.findings)
        yield from ({"type": "partition", **p.to_dict()} for p in self.partitions)

    def stderr_lines(self) -> list[str]:
        """What stopped a PATH from being read at all."""
        return [f"logtool: {f.file}: {f.message}" for f in self.findings]


def unreadable(target: Target, e: OSError) -> Finding:
    return cannot_read(target.path, e)


def found_report(found: Found) -> Report:
    """The report a check of what was found starts from: the path findings, and each log dir's own files
    checked (a log dir gone unreadable since it was listed is a path finding too)."""
    report = Report(findings=list(found.findings), operational_error=bool(found.findings))
    for path in found.log_dirs:
        try:
            report.log_dirs.append(check_log_dir(path))
        except OSError as e:
            report.operational_error = True
            report.findings.append(cannot_read(path, e))
    return report


def open_target(target: Target, reading: ReadPolicy | None = None,
                ahead: Ahead | None = None) -> Partition | PartitionReport:
    """The target's partition, its segments read under `reading` (`ahead`: its directory as it was read
    ahead); or, when it cannot be listed, the report that says so (named by its directory as the broker names
    it, so that checkpoint entries still find it)."""
    try:
        part = target.partition(ahead)
    except OSError as e:
        name = None if target.single_file else parse_partition_dir(target.own_name())
        rep = PartitionReport(str(target.path), *((name.topic, name.partition, name.kind) if name else (None, None)))
        rep.findings.append(unreadable(target, e))
        return rep
    return part.read_under(reading)


def check_target(target: Target, deep: bool, reading: ReadPolicy | None = None, lens: Lens | None = None,
                 transaction_timeout_ms: int = DEFAULT_TRANSACTION_TIMEOUT_MS,
                 ahead: Ahead | None = None) -> PartitionReport:
    """Check one target, reading under `reading` (`ahead`: its directory as it was read ahead) and feeding
    `lens` every batch."""
    part = open_target(target, reading, ahead)
    if isinstance(part, PartitionReport):
        return part
    try:
        return check_partition(part, deep, lens, transaction_timeout_ms=transaction_timeout_ms)
    finally:
        part.close()


def run_checks(paths: list[Path], deep: bool, bytes_known: Callable[[int], None] | None = None,
               reading: ReadPolicy | None = None,
               transaction_timeout_ms: int = DEFAULT_TRANSACTION_TIMEOUT_MS) -> Report:
    """Every check over PATHs; `bytes_known` is told how many segment bytes the walk will read."""
    # The reports live on, and their garbage is freed by reference counting but for the rare cycle (an
    # exception and its traceback): collected every COLLECT_EVERY partitions.
    with collector.paused():
        found = discover(paths)
        report = found_report(found)
        check_log_dir_set(report.log_dirs)
        if bytes_known:
            bytes_known(sum(t.segment_bytes() for t in found.targets))
        dirs = [t.path if t.kind is TargetKind.PARTITION_DIR else None for t in found.targets]
        with read_ahead(dirs, reading) as aheads:
            for i, (t, ahead) in enumerate(zip(found.targets, aheads), start=1):
                rep = check_target(t, deep, reading, transaction_timeout_ms=transaction_timeout_ms, ahead=ahead)
                if any(f.kind.operational for f in rep.all_findings()):
                    report.operational_error = True
                report.partitions.append(rep)
                if i % COLLECT_EVERY == 0:
                    gc.collect(0)
        check_across_files(report)
    return report


# Partitions checked between two collections of what they left (a tenth of the checks of 20,000 small
# partitions went to the collector walking their reports while it ran on its own).
COLLECT_EVERY = 4096


def check_across_files(report: Report) -> None:
    """The checks between each log dir's root files and its partitions, once every partition was walked."""
    # Both are str() of a Path: a partition's parent is its log dir exactly when the strings are equal.
    parents = [p.parent for p in report.partitions]
    for ld in report.log_dirs:
        for p, parent in zip(report.partitions, parents):
            if parent == ld.path:
                check_against_log_dir(ld, p)


def check_against_log_dir(ld: LogDirReport, p: PartitionReport) -> None:
    """One walked partition against its log dir's root files (the audit runs it in the task that walked it)."""
    check_partition_checkpoints(ld, p)
    check_clean_shutdown(ld, p)
