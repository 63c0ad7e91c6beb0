"""What a path is: Kafka's names for log dirs, partition dirs and the files inside them (FORMAT.md §6)."""
from __future__ import annotations

import functools
import os
import re
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

LOG_DIR_FILES = {
    "meta.properties", ".lock", ".kafka_cleanshutdown", "recovery-point-offset-checkpoint",
    "log-start-offset-checkpoint", "replication-offset-checkpoint", "cleaner-offset-checkpoint",
    "bootstrap.checkpoint",
}
OFFSET_CHECKPOINTS = ("recovery-point-offset-checkpoint", "replication-offset-checkpoint",
                      "log-start-offset-checkpoint", "cleaner-offset-checkpoint")
IGNORED_LOG_DIR_CHILDREN = {"remote-log-index-cache"}
CLUSTER_METADATA = "__cluster_metadata-0"

_SUFFIXED_DIR = re.compile(r"^(\S+)-(\S+)\.(\S+)-(delete|future|stray)$")
_SEGMENT_FILE = re.compile(r"^(\d+)\.(log|index|timeindex|txnindex|snapshot)((?:\.deleted|\.cleaned|\.swap))?$")
# The temporary files logtool's writer makes (recovery/writer.py): `.<name>.logtool-<hex>.tmp`.
LOGTOOL_TEMP = re.compile(r"^\..+\.logtool-[0-9a-f]+\.tmp$")
_KRAFT_SNAPSHOT = re.compile(r"^(\d{20})-(\d{10})\.checkpoint(\.part|\.deleted)?$|^\d{20}-\d{10}-.*\.checkpoint\.part$")


BOOTSTRAP_CHECKPOINT = "bootstrap.checkpoint"
_KRAFT_SNAPSHOT_DONE = re.compile(r"^(\d{20})-(\d{10})\.checkpoint$")


def kraft_snapshot_id(name: str) -> tuple[int, int] | None:
    """(end offset, epoch) of a finished KRaft snapshot file's name (`<offset>-<epoch>.checkpoint`), or None."""
    m = _KRAFT_SNAPSHOT_DONE.match(name)
    return (int(m.group(1)), int(m.group(2))) if m else None


def is_records_file(name: str) -> bool:
    """A file kafka-dump-log reads as batches besides segments: a KRaft snapshot, or the bootstrap one."""
    return name == BOOTSTRAP_CHECKPOINT or kraft_snapshot_id(name) is not None


class FileKind(Enum):
    LOG = "log"
    INDEX = "index"
    TIMEINDEX = "timeindex"
    TXNINDEX = "txnindex"
    SNAPSHOT = "snapshot"
    LEADER_EPOCH = "leader-epoch-checkpoint"
    PARTITION_METADATA = "partition.metadata"
    LEFTOVER = "leftover"  # .deleted / .cleaned / .swap
    LOGTOOL_TEMP = "logtool temp"  # a temporary file of an interrupted logtool repair (recovery/writer.py names them)
    KRAFT = "kraft"  # KRaft snapshots and quorum-state of __cluster_metadata-0
    UNKNOWN = "unknown"


@dataclass(slots=True, frozen=True)
class PartitionName:
    topic: str
    partition: int
    kind: str  # "plain", "delete", "future" or "stray"
    unique_id: str | None = None


_PARTITION_NUMBER = re.compile(r"[+-]?\d+")  # what Integer.parseInt takes (Character.digit: any Unicode digit)


# Cached: a log dir's check, its listing and each partition's own ask for the same name (a PartitionName is
# immutable).
@functools.lru_cache(maxsize=1 << 14)
def parse_partition_dir(name: str) -> PartitionName | None:
    """Kafka's `LocalLog.parseTopicPartitionName`: None when the name is not a partition directory."""
    kind, unique = "plain", None
    m = _SUFFIXED_DIR.match(name)
    if m:
        kind = m.group(4)
        name, unique = name[: name.rindex(".")], m.group(3)
    dash = name.rfind("-")
    if dash <= 0 or dash == len(name) - 1:
        return None
    topic, number = name[:dash], name[dash + 1 :]
    if not _PARTITION_NUMBER.fullmatch(number) or not -(2**31) <= int(number) < 2**31:
        return None
    return PartitionName(topic, int(number), kind, unique)


@dataclass(slots=True, frozen=True)
class FileName:
    kind: FileKind
    base_offset: int | None = None
    leftover: str | None = None  # ".deleted", ".cleaned" or ".swap"
    of_kind: FileKind | None = None  # for leftovers: what the file was


# Cached: most names recur in every partition dir of a log dir (partition.metadata, leader-epoch-checkpoint,
# 00000000000000000000.log and its indexes), and a FileName is immutable.
@functools.lru_cache(maxsize=1 << 14)
def classify_file(name: str) -> FileName:
    m = _SEGMENT_FILE.match(name)
    if m:
        kind = FileKind(m.group(2))
        if m.group(3):
            return FileName(FileKind.LEFTOVER, int(m.group(1)), m.group(3), kind)
        return FileName(kind, int(m.group(1)))
    if name == "leader-epoch-checkpoint":
        return FileName(FileKind.LEADER_EPOCH)
    if name == "partition.metadata":
        return FileName(FileKind.PARTITION_METADATA)
    if name == "quorum-state" or _KRAFT_SNAPSHOT.match(name):
        return FileName(FileKind.KRAFT)
    if LOGTOOL_TEMP.match(name):
        return FileName(FileKind.LOGTOOL_TEMP)
    return FileName(FileKind.UNKNOWN)


class PathKind(Enum):
    LOG_DIR = "log dir"
    PARTITION_DIR = "partition dir"
    SEGMENT_FILE = "segment file"
    NOT_KAFKA = "not Kafka"


def real_name(path: Path) -> str:
    """The name the directory at `path` has where it really is: a symlink or `.` names another. Only the
    last component can rename it, so the full resolve (a stat per component) is left to those cases."""
    if path.name not in ("", ".", "..") and not os.path.islink(path):
        return path.name
    return path.resolve().name


def classify_path(path: Path) -> PathKind:
    """Decide what a PATH given on the command line is. Raises OSError when it cannot be read."""
    path.stat()  # raises for a missing or unreachable path before anything else is decided
    if not path.is_dir():
        name = classify_file(path.name)
        return PathKind.SEGMENT_FILE if name.kind == FileKind.LOG else PathKind.NOT_KAFKA
    names = os.listdir(path)
    parsed = parse_partition_dir(real_name(path))
    has_segments = any(classify_file(n).kind in (FileKind.LOG, FileKind.INDEX, FileKind.TIMEINDEX) for n in names)
    if parsed is not None and (has_segments or not any((path / n).is_dir() for n in names)):
        return PathKind.PARTITION_DIR
    if any(n in LOG_DIR_FILES for n in names) or any(
        parse_partition_dir(n) is not None and (path / n).is_dir() for n in names
    ):
        return PathKind.LOG_DIR
    return PathKind.NOT_KAFKA
