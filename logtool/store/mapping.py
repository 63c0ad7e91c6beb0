"""Opening a file for reading in place: a read-only mapping, never a copy, and never of something that is
not a regular file (a FIFO would block `open` forever, a device could be endless)."""
from __future__ import annotations

import mmap
import os
import stat
from pathlib import Path

from logtool.store.mapguard import guard

_WHAT = {stat.S_IFIFO: "a FIFO", stat.S_IFSOCK: "a socket", stat.S_IFCHR: "a character device",
         stat.S_IFBLK: "a block device", stat.S_IFDIR: "a directory"}


class NotRegularFile(OSError):
    """The path is a FIFO, a socket, a device or a directory where a file should be."""


def open_regular(path: Path) -> tuple[int, int]:
    """(a read-only descriptor, the size) of a regular file. O_NONBLOCK: opening a FIFO returns at once
    instead of waiting for a writer; it changes nothing for a regular file. Raises OSError."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        what = _WHAT.get(stat.S_IFMT(st.st_mode), "not a regular file")
        raise NotRegularFile(0, f"{what}, not a regular file", str(path))
    return fd, st.st_size


class GuardedMap(mmap.mmap):
    """A read-only mapping that a file cut short under it cannot kill the process through: a page past the
    new end reads as zeros (store/mapguard.py), and `faulted_at` says from where."""

    def __new__(cls, fd: int, size: int):
        self = super().__new__(cls, fd, size, access=mmap.ACCESS_READ)
        self._guard = guard(self, hold=False)
        return self

    def faulted_at(self) -> int | None:
        """None, or the offset (page-aligned) from which the file was gone when it was read."""
        return self._guard.faulted_at()

    def close(self) -> None:
        self._guard.close()  # before the unmap: the addresses may be reused by another mapping
        super().close()

    def __del__(self) -> None:
        self._guard.close()


def open_readonly(path: Path) -> tuple[object, int]:
    """A read-only buffer over a file (a GuardedMap, or b"" when empty) and its size. Raises OSError."""
    fd, size = open_regular(path)
    try:
        if size == 0:
            return b"", 0
        return GuardedMap(fd, size), size
    finally:
        os.close(fd)
