"""Files beside the segments (indexes, checkpoints, metadata, snapshots), read once, with an I/O error turned
into data: the one place where the checks' reading of a file can fail."""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from logtool.store.mapping import AroundRead, GuardedMap, map_within, open_regular_stat, read_within
from logtool.findings import SIDE_FILE_TOO_LARGE, UNREADABLE


@dataclass(slots=True, frozen=True)
class SideFile:
    """A file's bytes (an mmap for large ones), or why there are none: `error` is None when it is missing."""

    name: str
    data: bytes | GuardedMap | None
    error: str | None = None
    too_large: bool = False  # larger than Kafka ever writes this file: not read at all

    @property
    def problem_kind(self) -> str:
        """The finding that reports why there are no bytes."""
        return SIDE_FILE_TOO_LARGE.name if self.too_large else UNREADABLE.name

    @property
    def exists(self) -> bool:
        return self.data is not None or self.error is not None

    @property
    def size(self) -> int | None:
        return None if self.data is None else len(self.data)

    def text(self) -> tuple[str | None, str | None]:
        """(the file as UTF-8 text, None), or (None, why it cannot be read as text)."""
        if self.data is None:
            return None, self.error or "it is gone"  # (listed, then gone before it was read)
        try:
            return bytes(self.data).decode("utf-8", errors="strict"), None
        except UnicodeDecodeError as e:
            return None, str(e)


# Kafka's own side files stay small: a leader-epoch checkpoint or partition.metadata of a few KB, a producer
# snapshot of some 40 bytes per producer. Past this a file is not Kafka's as it stands (a sparse or foreign
# file), and reading it whole would only exhaust memory.
SIDE_FILE_LIMIT = 64 << 20


# A `mapped` file smaller than this is read instead: a mapping (and its SIGBUS guard) costs more than
# reading a small index, and a log dir of thousands of small partitions has thousands of them.
MAPPED_FROM = 1 << 20


def read_side(path: Path | str, mapped: bool = False, name: str | None = None,
              around: AroundRead | None = None) -> SideFile:
    """Read a file once; `mapped` maps it instead when it is large (index files can be, and are read in place).
    `name`: the file's name, when the caller has it (else it is taken from `path`). `around`: as for
    mapping.read_small, when the file is read, and as for mapping.map_within when it is mapped (a read
    policy's sparing of the page cache)."""
    if name is None:
        name = os.path.basename(path)
    try:
        fd, st = open_regular_stat(path)
        size = st.st_size
        try:
            if mapped and size >= MAPPED_FROM:
                return SideFile(name, map_within(fd, path, st, around))
            if size > SIDE_FILE_LIMIT:
                return SideFile(name, None, f"{size} bytes, more than Kafka ever writes in this file", too_large=True)
            data = read_within(fd, st, _read_all, around)
        finally:
            os.close(fd)
    except FileNotFoundError:
        return SideFile(name, None)
    except OSError as e:
        return SideFile(name, None, e.strerror or str(e))
    return SideFile(name, data)


_CHUNK = 1 << 20  # the most one read asks for


def _read_all(fd: int, size: int) -> bytes:
    """At most `size` bytes: a file that grows while it is read is taken as it was when it was opened."""
    first = os.read(fd, min(size, _CHUNK)) if size else b""
    if len(first) == size or not first:  # the whole file in one read, as a small one is: no list, no join
        return first
    chunks, left = [first], size - len(first)
    while left > 0:
        chunk = os.read(fd, min(left, _CHUNK))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)
