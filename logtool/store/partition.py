"""Partition: a partition directory's files, its segments in offset order, and what else lies there."""
from __future__ import annotations

import bisect
import enum
import operator
import os
from dataclasses import dataclass, field
from pathlib import Path

from logtool.store.broker import running_broker
from logtool.store.pacing import ReadPolicy, around_read
from logtool.store.read_ahead import Ahead
from logtool.store.layout import FileKind, FileName, PartitionName, classify_file, parse_partition_dir, real_name
from logtool.store.segment import Segment
from logtool.store.sidefile import SideFile, read_side


def link_target(path: Path) -> str:
    try:
        return os.readlink(path)
    except OSError as e:
        return f"(unreadable link: {e.strerror or e})"


_NAME = operator.attrgetter("name")
_BASE_OFFSET = operator.attrgetter("base_offset")


def listing(directory: Path) -> list[os.DirEntry[str]]:
    """The directory's entries in name order, from one scandir pass (their kinds come with their names).
    Raises OSError when it cannot be listed."""
    with os.scandir(directory) as entries:
        return sorted(entries, key=_NAME)


def symlinks_in(directory: Path, entries: list[os.DirEntry[str]]) -> dict[str, str]:
    """Where each of these entries of the directory points, for those that are symbolic links."""
    return {e.name: link_target(directory / e.name) for e in entries if e.is_symlink()}


class _Unasked(enum.Enum):
    """Partition.writer() has not asked yet (None is an answer: no broker holds the lock)."""

    UNASKED = enum.auto()


@dataclass(slots=True)
class Partition:
    path: Path
    name: PartitionName | None
    segments: list[Segment]
    files: dict[str, FileName] = field(default_factory=dict)  # every file in the directory by name
    single_file: bool = False  # the user named one .log file, not the directory
    # the process holding the log dir's lock (a running broker), None: none; asked only when a walk of the
    # last segment stops short (`writer`): most partitions never need to know
    _broker_pid: int | None | _Unasked = field(default=_Unasked.UNASKED, repr=False)
    symlinks: dict[str, str] = field(default_factory=dict)  # name -> where it points, for files that are links
    ahead: Ahead | None = None  # its files' bytes as they were read ahead (store/read_ahead.py), or None
    reading: ReadPolicy | None = None  # what its files are read under (`read_under`): None, plainly

    @property
    def topic(self) -> str | None:
        return self.name.topic if self.name else None

    @property
    def number(self) -> int | None:
        return self.name.partition if self.name else None

    @classmethod
    def from_dir(cls, path: Path, real: str | None = None, ahead: Ahead | None = None) -> "Partition":
        """Read the directory listing, or take it from `ahead` (the directory as it was read ahead, its files'
        bytes then taken from it too). `real`: the directory's name where it really is, when the caller knows
        it (`real_name` is asked otherwise). Raises OSError when it cannot be listed."""
        if ahead is None:
            listed = listing(path)
            names = frozenset(e.name for e in listed)  # what each segment's side files are looked up in
            entries = [e for e in listed if not e.is_dir()]
            files = {e.name: classify_file(e.name) for e in entries}
            symlinks = symlinks_in(path, entries)
        else:  # (it holds no symlink: those are listed here)
            names = frozenset(ahead.names)
            files = {n: classify_file(n) for n in ahead.names if n not in ahead.dirs}
            symlinks = {}
        # a .log file's name is its base offset: classify_file gives every LOG one
        segments = [Segment(path / n, f.base_offset, listed=names, ahead=ahead) for n, f in files.items()
                    if f.kind == FileKind.LOG and f.base_offset is not None]
        if len(segments) > 1:
            segments.sort(key=_BASE_OFFSET)
        return cls(path, parse_partition_dir(real if real is not None else real_name(path)), segments, files,
                   symlinks=symlinks, ahead=ahead)

    @classmethod
    def from_segment_file(cls, log_path: Path) -> "Partition":
        name = classify_file(log_path.name)
        directory = log_path.parent
        files = {n: classify_file(n) for n in sorted(os.listdir(directory))
                 if n.startswith(log_path.stem + ".")}
        return cls(directory, parse_partition_dir(real_name(directory)),
                   [Segment(log_path, name.base_offset or 0)], files, single_file=True)

    def writer(self) -> int | None:
        """The pid of the running broker that holds the log dir's lock (0: held, pid unknown); None: none."""
        if isinstance(self._broker_pid, _Unasked):
            self._broker_pid = running_broker(self.path.absolute().parent)
        return self._broker_pid

    def side(self, name: str) -> SideFile:
        """A file of the directory besides the segments, read once (or why it cannot be)."""
        if self.ahead is not None and (taken := self.ahead.side(name)) is not None:
            return taken
        path = os.path.join(self.path, name)  # no Path object: called for every file
        return read_side(path, name=name, around=around_read(self.reading, path))

    def size_of(self, name: str) -> int:
        """A file's size in bytes; -1 when it cannot be stat'ed."""
        try:
            return os.stat(os.path.join(self.path, name)).st_size  # no Path object: called for every file
        except OSError:
            return -1

    def floor_segment(self, offset: int) -> int | None:
        """Index of the segment with the greatest base offset not above `offset` (Kafka's floorSegment)."""
        i = bisect.bisect_right([s.base_offset for s in self.segments], offset) - 1
        return i if i >= 0 else None

    def log_bytes(self, first: int = 0) -> int:
        """The bytes of the .log files from segment `first` on, as stat sees them (nothing is opened)."""
        return sum(max(0, self.size_of(s.log_path.name)) for s in self.segments[first:])

    def read_under(self, policy: ReadPolicy | None) -> Partition:
        """Every file of the partition is read under `policy`: its segments paced, counted and sparing the page
        cache, the files beside them sparing it."""
        self.reading = policy
        for s in self.segments:
            s.reading = policy
        return self

    def close(self) -> None:
        for s in self.segments:
            s.close()
