"""What the PATHs a user gives name: the one answer every command and the audit's listing use.

A PATH is a log dir (its partition dirs are the targets), a partition dir, a `.log` segment or a KRaft
snapshot (a lone records file), or, for the commands that read them (dump), an index, transaction index or
producer snapshot. Discovery lists and classifies; it runs no check: what a log dir's own files say is the
log-dir check's business, and what a target holds is the walk's.
"""
from __future__ import annotations

import enum
import os
from dataclasses import dataclass, field
from pathlib import Path

from logtool.findings import NOT_KAFKA, UNREADABLE, Finding, finding
from logtool.store.layout import (CLUSTER_METADATA, IGNORED_LOG_DIR_CHILDREN, FileKind, PathKind, classify_file,
                                  classify_path, is_records_file, parse_partition_dir, real_name)
from logtool.store.partition import Partition, listing
from logtool.store.read_ahead import Ahead

# The files a PATH may name for the commands that print a side file's entries.
ENTRY_FILES = (FileKind.INDEX, FileKind.TIMEINDEX, FileKind.TXNINDEX, FileKind.SNAPSHOT)


class TargetKind(enum.Enum):
    PARTITION_DIR = "partition dir"
    RECORDS_FILE = "records file"  # one .log segment or KRaft snapshot, named by itself
    ENTRY_FILE = "entry file"  # an index, transaction index or producer snapshot (ENTRY_FILES)


@dataclass(slots=True, frozen=True)
class Target:
    """One unit of work: a partition dir, a lone records file, or (where asked for) an entry file."""

    path: Path
    kind: TargetKind = TargetKind.PARTITION_DIR
    # The directory's own name where the log dir's listing showed it is no symlink: what `real_name` would
    # answer, without the lstat per partition (None: not known, asked when listed). What is known of the
    # target, not which target it is: not compared.
    real_name: str | None = field(default=None, compare=False)

    @property
    def single_file(self) -> bool:
        return self.kind is TargetKind.RECORDS_FILE

    def own_name(self) -> str:
        """The name of the directory it is (a file: of its partition dir) where that really is: as its log
        dir's listing showed it, or asked (`real_name`, an lstat)."""
        if self.kind is not TargetKind.PARTITION_DIR:
            return real_name(self.path.parent)
        return self.real_name if self.real_name is not None else real_name(self.path)

    @property
    def log_dir(self) -> Path:
        """The log dir it lies in: a partition's parent; a file's partition dir's parent."""
        return self.path.parent if self.kind is TargetKind.PARTITION_DIR else self.path.parent.parent

    def partition(self, ahead: Ahead | None = None) -> Partition:
        """Its files listed (a records file with the side files of its segment), or as `ahead` read them.
        Raises OSError."""
        if self.single_file:
            return Partition.from_segment_file(self.path)
        return Partition.from_dir(self.path, self.real_name, ahead)

    def segment_sizes(self) -> tuple[tuple[int, int], ...]:
        """(base offset, bytes) of each `.log` by its name, in offset order, as listed now: one stat per
        segment and nothing opened, for balancing work and sizing a progress display. What cannot be read
        counts as nothing; the walk reports it."""
        if self.kind is not TargetKind.PARTITION_DIR:
            return ((classify_file(self.path.name).base_offset or 0, _size(self.path)),)
        sizes = []
        try:
            with os.scandir(self.path) as entries:
                for e in entries:
                    # Only names ending in .log can be segments: the test spares classifying every index file.
                    if e.name.endswith(".log") and (name := classify_file(e.name)).kind == FileKind.LOG \
                            and name.base_offset is not None:
                        sizes.append((name.base_offset, _size(e)))
        except OSError:
            return ()
        return tuple(sorted(sizes))

    def segment_bytes(self) -> int:
        return sum(size for _, size in self.segment_sizes())


def _size(path: Path | os.DirEntry[str]) -> int:
    try:
        return path.stat(follow_symlinks=False).st_size
    except OSError:
        return 0


@dataclass(slots=True)
class Found:
    """What the PATHs name: the targets in the order given (a log dir's in name order), the log dirs among
    them, and a finding for each PATH that names nothing to work on (an operational error)."""

    targets: list[Target] = field(default_factory=list)
    log_dirs: list[Path] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)

    def refusal(self) -> str | None:
        """The first PATH that names nothing to work on, as the one line of a command that stops there."""
        if not self.findings:
            return None
        f = self.findings[0]
        return f"{f.file}: {f.message.removeprefix('cannot be read: ')}"


def cannot_read(path: Path, e: OSError) -> Finding:
    return finding(UNREADABLE, f"cannot be read: {e.strerror or e}", str(path))


def discover(paths: list[Path], entry_files: bool = False) -> Found:
    """Resolve PATHs into targets. With `entry_files`, an index, transaction index or producer snapshot is a
    target too (dump prints its entries); without, it is not Kafka's to check on its own."""
    found = Found()
    for path in paths:
        try:
            kind = classify_path(path)
            if kind is PathKind.LOG_DIR:
                dirs = partition_dirs(path)
                found.log_dirs.append(path)
                found.targets += [Target(path / e.name, real_name=None if e.is_symlink() else e.name) for e in dirs]
            elif kind is PathKind.PARTITION_DIR:
                found.targets.append(Target(path))
            elif kind is PathKind.SEGMENT_FILE or (is_records_file(path.name) and path.is_file()):
                found.targets.append(Target(path, TargetKind.RECORDS_FILE))
            elif entry_files and path.is_file() and classify_file(path.name).kind in ENTRY_FILES:
                found.targets.append(Target(path, TargetKind.ENTRY_FILE))
            else:
                what = "log dir, partition dir, .log file or index" if entry_files else \
                    "log dir, partition dir or .log file"
                found.findings.append(finding(NOT_KAFKA, f"not a Kafka {what}", str(path)))
        except OSError as e:
            found.findings.append(cannot_read(path, e))
    return found


def partition_dirs(log_dir: Path) -> list[os.DirEntry[str]]:
    """The children of a log dir the broker loads as partitions (the metadata log's too), in name order.
    Raises OSError when it cannot be listed."""
    return [e for e in listing(log_dir) if is_partition_dir_name(e.name) and e.is_dir()]


def is_partition_dir_name(name: str) -> bool:
    return name not in IGNORED_LOG_DIR_CHILDREN and (name == CLUSTER_METADATA or parse_partition_dir(name) is not None)


class NotAPartition(Exception):
    """A path that is not a partition directory or a .log file, or cannot be read (the message says)."""


def open_partition(path: Path) -> Partition:
    """The one partition dir or .log file a PATH names. Raises NotAPartition saying what it is instead."""
    found = discover([path])
    if (refused := found.refusal()) is not None:
        raise NotAPartition(refused)
    if found.log_dirs or len(found.targets) != 1:
        raise NotAPartition(f"{path}: a log dir, not a partition directory or .log file: give one of its partitions")
    try:
        return found.targets[0].partition()
    except OSError as e:
        raise NotAPartition(f"{path}: {e.strerror or e}") from None
