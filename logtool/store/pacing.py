"""Paced reading, for audits of live brokers: a cap on the read rate, and a page cache left as it was found.

A `ReadPolicy` policy rides on each `Segment` (its `reading` field). The walker calls the policy's per-file
`Pacer` every `every` bytes, right after it has unmapped the pages it passed, and once more when the
segment is closed. The pacer then
- sleeps as long as it takes to keep the bytes read under `max_rate` bytes per second, counted over the
  policy's whole life (one Spark task, or one `logtool verify` run);
- with `spare_cache`, gives back to the kernel (`posix_fadvise(DONTNEED)`) the pages this read brought
  into the page cache, and leaves every page that was cached before: residency is probed with `mincore`
  ahead of the walker, before any of our reads could have touched those pages.

Every uncertainty errs towards keeping pages: a broker page we evict costs it a disk read, while a page
of ours we keep costs nothing the kernel cannot reclaim. So when `mincore` cannot be trusted (Linux shows
page-cache residency only to a process that owns the file or may write it) or cannot be called at all,
nothing is dropped; pages the kernel read ahead beyond a probe count as cached before.
"""
from __future__ import annotations

import mmap
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from logtool.store.mapping import AroundRead, read_small

PAGE = mmap.PAGESIZE
# How often the walker calls back: often enough to pace smoothly at a few MB/s.
EVERY = 4 << 20
# ... and when it only counts bytes for a progress display: a few times a second at disk speed.
PROGRESS_EVERY = 16 << 20
# How far ahead of the walker residency is probed: beyond what the kernel may already be reading ahead for
# our faults (read_ahead_kb, often 128 KiB, 8 MiB on some virtual disks, plus the async window after it),
# so that what a probe sees cached was cached by someone else.
LOOKAHEAD = 64 << 20
# The page cache holds files in folios of up to 2 MiB, aligned to their size, and the kernel drops a folio
# only when the whole of it lies in the range and none of it is mapped: drops stop at this alignment below
# the walker, whose current folio is still partly mapped.
FOLIO = 2 << 20


@dataclass(slots=True)
class Throttle:
    """Keeps the bytes spent under `rate` per second since the throttle was made, by sleeping."""

    rate: float  # bytes per second
    clock: Callable[[], float] = time.monotonic
    sleep: Callable[[float], None] = time.sleep
    spent: int = 0
    start: float = field(init=False)

    def __post_init__(self) -> None:
        self.start = self.clock()

    def spend(self, n: int) -> None:
        self.spent += n
        ahead = self.spent / self.rate - (self.clock() - self.start)
        if ahead > 0:
            self.sleep(ahead)


@dataclass(slots=True)
class ReadPolicy:
    """The reading policy: a rate cap (None: none) and whether to spare the page cache."""

    throttle: Throttle | None = None
    spare_cache: bool = False
    every: int = EVERY
    on_bytes: Callable[[int], None] | None = None  # told how many more bytes were read (a progress display)

    def open(self, path: Path, size: int) -> "Pacer":
        return Pacer(self, path, size)

    def read_small(self, path: Path, below: int) -> tuple[bytes, int] | None:
        """`mapping.read_small` under this policy (its bytes paced): a small file costs a probe, no `Pacer`."""
        small = read_small(path, below, self.around(path))
        if small is not None:
            self.spend(len(small[0]))
        return small

    def around(self, path: Path | str) -> AroundRead | None:
        """What a small file read whole under this policy (a segment, an index) is read within: with
        `spare_cache`, its residency probed before the read and the pages the read brought in given back
        right after it (a copy leaves nothing mapped)."""
        return partial(_spared, path) if self.spare_cache else None

    def spend(self, n: int) -> None:
        """`n` more bytes were read: paced, and counted for the progress display."""
        if self.throttle is not None:
            self.throttle.spend(n)
        if self.on_bytes is not None:
            self.on_bytes(n)


def around_read(policy: ReadPolicy | None, path: Path | str) -> AroundRead | None:
    """`policy.around(path)`, or None without a policy: what a file is read or mapped within."""
    return policy.around(path) if policy is not None else None


def read_policy(max_rate_mb: float | None, spare_cache: bool) -> ReadPolicy | None:
    """The policy for `--max-read-rate MB/s` and `--spare-page-cache`; None when neither asks for one."""
    if max_rate_mb is None and not spare_cache:
        return None
    return ReadPolicy(Throttle(max_rate_mb * 1e6) if max_rate_mb is not None else None, spare_cache)


class Pacer:
    """One segment file under a `ReadPolicy` policy: paces its bytes and gives back the pages it brought in."""

    def __init__(self, policy: ReadPolicy, path: Path, size: int) -> None:
        self.policy, self.size, self.counted = policy, size, 0
        self.fd: int | None = None
        self.cached = bytearray()  # one byte per page from 0: 1 when it was in the page cache before we read
        self.dropped = 0  # pages below this index have been given back (or kept)
        if policy.spare_cache and size and _mincore_sees_cache(path):
            self.fd = os.open(path, os.O_RDONLY)
            self._probe(self.fd, min(size, LOOKAHEAD))

    def passed(self, pos: int) -> None:
        """Every byte below `pos` has been read and unmapped."""
        self._spend(pos)
        if self.fd is not None:
            self._drop(self.fd, pos // FOLIO * FOLIO // PAGE)
            self._probe(self.fd, min(self.size, pos + LOOKAHEAD))

    def close(self) -> None:
        """The segment's mapping is gone: the rest of the file can be given back."""
        self._spend(self.size)
        if self.fd is not None:
            self._probe(self.fd, self.size)  # a batch longer than the lookahead may have outrun the probes
            self._drop(self.fd, len(self.cached))
            os.close(self.fd)
            self.fd = None

    def _spend(self, pos: int) -> None:
        if pos > self.counted:
            self.policy.spend(pos - self.counted)
            self.counted = pos

    def _probe(self, fd: int, end: int) -> None:
        from logtool.store.residency import residency  # (ctypes: only where the page cache is spared)

        start = len(self.cached) * PAGE
        if end > start:
            self.cached += residency(fd, start, end - start)

    def _drop(self, fd: int, upto: int) -> None:
        upto = min(upto, len(self.cached))
        give_back(fd, self.cached, self.dropped, upto)
        self.dropped = max(self.dropped, upto)


def give_back(fd: int, cached: bytes | bytearray, start: int, upto: int) -> None:
    """Give back, in runs, the pages of index `start` to `upto` that were not cached (0 in `cached`) before
    we read them."""
    page = cached.find(0, start, upto)
    while page != -1:
        run = cached.find(1, page, upto)
        run = upto if run == -1 else run
        os.posix_fadvise(fd, page * PAGE, (run - page) * PAGE, os.POSIX_FADV_DONTNEED)
        page = cached.find(0, run, upto)


def _spared(path: Path | str, fd: int, st: os.stat_result) -> Callable[[], None] | None:
    """Before a small file is read whole (mapping.read_small): its residency; after, the pages it did not
    have cached given back."""
    from logtool.store.residency import cached_whole, residency

    if not st.st_size or not _mincore_sees_cache(path, st) or cached_whole(fd, st.st_size):
        return None
    before = residency(fd, 0, st.st_size)
    if 0 not in before:
        return None
    return lambda: give_back(fd, before, 0, len(before))


def _mincore_sees_cache(path: Path | str, st: os.stat_result | None = None) -> bool:
    """Linux reports page-cache residency of a file mapping only to its owner or to a process that may write
    the file (mm/mincore.c, `can_do_mincore`); anyone else sees only its own mapped pages. `st`: its stat,
    when the caller has it."""
    try:
        if (st or os.stat(path)).st_uid == os.geteuid():
            return True
        return os.access(path, os.W_OK, effective_ids=os.access in os.supports_effective_ids)
    except OSError:
        return False
