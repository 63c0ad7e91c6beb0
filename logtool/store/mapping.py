"""Opening a file for reading in place: a read-only mapping, never a copy, and never of something that is
not a regular file (a FIFO would block `open` forever, a device could be endless). A file larger than any
segment can be is mapped only in part (`open_prefix`), its rest read in bounded windows (`zeros_from`): the
address space (ulimit -v) may not hold it whole. A mapping the address space has no room for is an OSError
that says so."""
from __future__ import annotations

import errno
import mmap
import os
import stat
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Self

from logtool.format import Bytes
from logtool.store.mapguard import Guard, guard

_WHAT = {stat.S_IFIFO: "a FIFO", stat.S_IFSOCK: "a socket", stat.S_IFCHR: "a character device",
         stat.S_IFBLK: "a block device", stat.S_IFDIR: "a directory"}

# The least of a file's first bytes `open_prefix` maps before it gives up for want of address space.
SMALLEST_PREFIX = 64 << 20
# The most of a file `zeros_from` maps at once.
WINDOW = 64 << 20


class NotRegularFile(OSError):
    """The path is a FIFO, a socket, a device or a directory where a file should be."""


def open_regular(path: Path | str) -> tuple[int, int]:
    """(a read-only descriptor, the size) of a regular file. Raises OSError."""
    fd, st = open_regular_stat(path)
    return fd, st.st_size


def open_regular_stat(path: Path | str) -> tuple[int, os.stat_result]:
    """(a read-only descriptor, its `fstat`) of a regular file. O_NONBLOCK: opening a FIFO returns at once
    instead of waiting for a writer; it changes nothing for a regular file. Raises OSError."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        what = _WHAT.get(stat.S_IFMT(st.st_mode), "not a regular file")
        raise NotRegularFile(0, f"{what}, not a regular file", str(path))
    return fd, st


class GuardedMap(mmap.mmap):
    """A read-only mapping that a file cut short under it cannot kill the process through: a page past the
    new end reads as zeros (store/mapguard.py), and `faulted_at` says from where. `after_unmap`: called once
    the mapping is gone, however it goes (a read policy giving back the pages it brought in: pages still
    mapped cannot leave the page cache)."""

    _guard: Guard | None = None  # stays None on a mapping that failed: there is nothing to unregister
    _after_unmap: Callable[[], None] | None = None

    def __new__(cls, fd: int, size: int, offset: int = 0, after_unmap: Callable[[], None] | None = None) -> Self:
        self = super().__new__(cls, fd, size, access=mmap.ACCESS_READ, offset=offset)
        self._guard = guard(self, hold=False)
        self._after_unmap = after_unmap
        return self

    def faulted_at(self) -> int | None:
        """None, or the offset (page-aligned, from the start of the mapping) from which the file was gone
        when it was read."""
        return self._guard.faulted_at() if self._guard is not None else None

    def close(self) -> None:
        if self._guard is not None:
            self._guard.close()  # before the unmap: the addresses may be reused by another mapping
        super().close()
        hook, self._after_unmap = self._after_unmap, None
        if hook is not None:
            hook()

    def __del__(self) -> None:
        if self._after_unmap is not None:  # unmapped here, not after: its hook is to run once it is gone
            try:
                self.close()
            except Exception:  # (at the interpreter's exit what the hook needs may be gone: its pages then stay)
                pass
        elif self._guard is not None:
            self._guard.close()


def _mapped(fd: int, path: Path | str, length: int, size: int, offset: int = 0,
            after_unmap: Callable[[], None] | None = None) -> GuardedMap:
    """`length` bytes of the file from `offset`. Raises OSError; one that says, when the address space has no
    room for the mapping (ulimit -v), how large it was."""
    try:
        return GuardedMap(fd, length, offset, after_unmap)
    except OSError as e:
        if e.errno != errno.ENOMEM:
            raise
        what = f"its {size} bytes" if length == size else f"{length} of its {size} bytes"
        raise OSError(e.errno, f"{e.strerror}: no room in the address space to map {what} (ulimit -v)",
                      str(path)) from None


def open_readonly(path: Path, around: AroundRead | None = None) -> tuple[GuardedMap | bytes, int]:
    """A read-only buffer over a file (a GuardedMap made within `around`, as `map_within`; or b"" when empty)
    and its size. Raises OSError."""
    fd, st = open_regular_stat(path)
    try:
        if st.st_size == 0:
            return b"", 0
        return map_within(fd, path, st, around), st.st_size
    finally:
        os.close(fd)


# Called with a small file's descriptor and `fstat` before it is read; what it returns, if anything, is called
# once the read is over (store/pacing.py gives back the pages the read brought into the page cache).
AroundRead = Callable[[int, os.stat_result], Callable[[], None] | None]


def read_small(path: Path | str, below: int, around: AroundRead | None = None) -> tuple[bytes, int] | None:
    """(the file's bytes, its mtime in ns) when it is a regular file of fewer than `below` bytes, read whole
    with one read of the size `fstat` gives (a mapping's length): a mapping of a small file (its SIGBUS guard,
    the faults, the unmap) costs more than the copy, and a log dir of thousands of small partitions has
    thousands of them. None when it is larger, or was cut short before it was read (the caller maps it
    instead, as it is then). Raises OSError as `open_regular`."""
    fd, st = open_regular_stat(path)
    try:
        size = st.st_size
        if size >= below:
            return None
        data = read_within(fd, st, os.read, around)
        return (data, st.st_mtime_ns) if len(data) == size else None
    finally:
        os.close(fd)


def read_within(fd: int, st: os.stat_result, read: Callable[[int, int], bytes], around: AroundRead | None) -> bytes:
    """`read(fd, size)` of the file open as `fd` (`st`: its fstat) within `around`: the hook called before
    the read, and what it returns called after it, however the read ends."""
    after = around(fd, st) if around is not None else None
    try:
        return read(fd, st.st_size)
    finally:
        if after is not None:
            after()


def map_within(fd: int, path: Path | str, st: os.stat_result, around: AroundRead | None) -> GuardedMap:
    """The whole file open as `fd` (`st`: its fstat; `path`: its name, for an error) mapped within `around`:
    the hook called before the mapping is made, and what it returns once the mapping is gone (on a descriptor
    of its own: the caller may close `fd` as soon as the mapping is made). Raises OSError as `_mapped`."""
    size = st.st_size
    if around is None:
        return _mapped(fd, path, size, size)
    kept = os.dup(fd)
    try:
        after = around(kept, st)
        if after is not None:
            return _mapped(fd, path, size, size, after_unmap=partial(_then_close, after, kept))
    except BaseException:
        os.close(kept)
        raise
    os.close(kept)
    return _mapped(fd, path, size, size)


def _then_close(after: Callable[[], None], fd: int) -> None:
    try:
        after()
    finally:
        os.close(fd)


def open_prefix(path: Path, most: int) -> tuple[GuardedMap | bytes, int]:
    """A read-only buffer over the file's first `most` bytes (all of them in a smaller file), or as many of
    them as the address space has room for, down to SMALLEST_PREFIX; and the file's size. For a file too
    large to be anything but hostile, whose bytes past `most` are only ever read by `zeros_from`. Raises
    OSError."""
    fd, size = open_regular(path)
    try:
        if size == 0:
            return b"", 0
        length = min(size, most)
        while True:
            try:
                return _mapped(fd, path, length, size), size
            except OSError as e:
                if e.errno != errno.ENOMEM or length <= SMALLEST_PREFIX:
                    raise
                length = max(SMALLEST_PREFIX, length // 2)
    finally:
        os.close(fd)


_ZEROS = bytes(1 << 20)


def zeros_from(path: Path, start: int, end: int) -> bool:
    """Whether the file holds nothing but zeros from byte `start` to `end` (or to its end, if sooner). Its
    holes are passed unread (SEEK_DATA; a sparse file of terabytes takes no time); the rest is mapped at
    most WINDOW bytes at a time. Raises OSError."""
    fd, size = open_regular(path)
    try:
        pos, end = start, min(end, size)
        while pos < end:
            try:
                pos = os.lseek(fd, pos, os.SEEK_DATA)
            except OSError as e:
                if e.errno == errno.ENXIO:  # nothing but a hole from here to the end of the file
                    return True
                raise
            if pos >= end:
                return True
            origin = pos - pos % mmap.ALLOCATIONGRANULARITY
            stop = min(end, origin + WINDOW)
            window = _mapped(fd, path, stop - origin, size, origin)
            try:
                if not _all_zeros(window, pos - origin, stop - origin):
                    return False
            finally:
                window.close()
            pos = stop
        return True
    finally:
        os.close(fd)


def _all_zeros(buf: Bytes, start: int, end: int) -> bool:
    # A megabyte at a time: a slice of a window is a copy.
    for pos in range(start, end, len(_ZEROS)):
        n = min(len(_ZEROS), end - pos)
        if buf[pos:pos + n] != _ZEROS[:n]:
            return False
    return True
