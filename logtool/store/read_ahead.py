"""Partition directories listed and read ahead of their checks, on another core.

A log dir of thousands of small partitions spends most of a check's time in system calls: a listing and four
or five small files per partition. The compiled reader (`_dirread.c`) lists a batch of directories and reads
their small regular files with the GIL released, in a thread, while the checks of the partitions before them
run in Python; what it read is handed to `Partition.from_dir` as an `Ahead`, and each file's bytes are taken
from it once, in place of the read the checks would have made.

It answers only the plain case, and the Python readers stay the reference: a directory it could not list, or
whose listing holds a symlink or an entry of unknown type, is listed again by `Partition.from_dir`; a file it
did not read (not regular, not small, gone, cut short, past the batch's budget) is read by the checks as
before, with the same errors and findings. Without the extension (LOGTOOL_PURE=1, or an install without a
compiler) nothing is read ahead. A read policy that paces reads reads every file itself (each read is timed).
Under one that spares the page cache the reader leaves the cache as it found it, as the checks' own reads do
(store/pacing.py): it reads as they are the files the page cache holds whole (`cachestat`), probes the others'
residency first and gives back the pages its read brought in, and leaves to the checks a file whose residency
it cannot see (another user's, which the checks read only where they need it, keeping its pages).
"""
from __future__ import annotations

import os
import queue
import sys
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from logtool.extensions import instead
from logtool.format.kernel import PURE_ENV
from logtool.store.sidefile import MAPPED_FROM, SideFile

if TYPE_CHECKING:
    from logtool.store.pacing import ReadPolicy

# The files read ahead: those the checks read whole rather than map (sidefile.MAPPED_FROM, and the segments
# below it, store/segment.py).
READ_BELOW = MAPPED_FROM
# Directories read in one call, and the most bytes one call reads: the thread runs at most two batches ahead,
# so what is held at once stays under a few times BATCH_BYTES whatever the files.
BATCH = 128
BATCH_BYTES = 16 << 20
AHEAD_BATCHES = 2
# The first batch is smaller, each next one twice as large up to BATCH: the checks wait for the first.
FIRST_BATCH = 16
SWITCH_INTERVAL = 0.001  # seconds: see read_ahead


class _Extension(Protocol):
    def read_dirs(self, paths: list[bytes], below: int, budget: int, spare_cache: bool = False, /) \
            -> list[int | tuple[list[str], list[str], dict[str, tuple[bytes, int]]] | None]: ...


def _load() -> tuple[_Extension | None, str | None]:
    if os.environ.get(PURE_ENV, "") not in ("", "0"):
        return None, f"{PURE_ENV} is set"
    try:
        from logtool.store import _dirread
    except ImportError as e:
        _dirread, why = instead("logtool.store._dirread", e)
        if _dirread is None:
            return None, f"the directory reader {why}"
    return _dirread, None


READER, WHY_NOT = _load()


@dataclass(slots=True)
class Ahead:
    """A directory as it was read ahead: its entries' names, which of them are directories, and the bytes
    (with the mtime in ns) of the small regular files, each taken once by `take`."""

    names: list[str]
    dirs: frozenset[str]
    contents: dict[str, tuple[bytes, int]]

    def take(self, name: str) -> tuple[bytes, int] | None:
        """The file's bytes and mtime as read ahead, or None: not read ahead, or taken already (a second read
        of a file reads it again, as it would have been)."""
        return self.contents.pop(name, None)

    def side(self, name: str) -> SideFile | None:
        """The file as a `SideFile` of its bytes (taken, as by `take`), or None."""
        read = self.take(name)
        return None if read is None else SideFile(name, read[0])


def _ahead(answer: int | tuple[list[str], list[str], dict[str, tuple[bytes, int]]] | None) -> Ahead | None:
    """What the reader answered for one directory as an `Ahead`; None where the Python listing must answer:
    it could not list it (the listing again says why, in its own words), or it holds a symlink or an entry of
    unknown type (os.scandir follows or stats them to say what they are)."""
    if answer is None or isinstance(answer, int):
        return None
    names, dirs, contents = answer
    names.sort()
    return Ahead(names, frozenset(dirs), contents)


def reads_ahead(policy: ReadPolicy | None) -> bool:
    """Whether files may be read ahead under `policy`: not where it paces reads (each read of it is timed); a
    progress display's counting is kept, and a policy that spares the page cache is kept by the reader too."""
    return READER is not None and (policy is None or policy.throttle is None)


@contextmanager
def read_ahead(paths: Sequence[Path | None], policy: ReadPolicy | None = None) -> Iterator[Iterator[Ahead | None]]:
    """An `Ahead` (or None) for each of `paths` in turn (None in `paths`: not a directory to read), read under
    `policy` by a thread at most AHEAD_BATCHES batches ahead of the caller. Leaving the block stops the
    thread."""
    reader = READER
    wanted = [(i, os.fsencode(p)) for i, p in enumerate(paths) if p is not None] if reads_ahead(policy) else []
    if reader is None or not wanted:
        yield iter([None] * len(paths))
        return
    spare_cache = policy is not None and policy.spare_cache
    if len(wanted) <= BATCH:  # a thread would cost more than it saves: read them here
        found = dict(_read_batch(reader, wanted, spare_cache))
        yield (found.get(i) for i in range(len(paths)))
        return
    ahead = _ReadingAhead(reader, wanted, spare_cache)
    try:
        yield ahead.each(len(paths))
    finally:
        ahead.stop()


class _ReadingAhead:
    """The thread reading the directories `wanted` (by their index among the caller's paths), a batch at a
    time, at most AHEAD_BATCHES batches ahead of `each`."""

    def __init__(self, reader: _Extension, wanted: list[tuple[int, bytes]], spare_cache: bool) -> None:
        self.reader, self.wanted, self.spare_cache = reader, wanted, spare_cache
        self.batches: queue.Queue[list[tuple[int, Ahead | None]]] = queue.Queue(maxsize=AHEAD_BATCHES)
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run, name="logtool-read-ahead", daemon=True)
        # The thread needs the GIL for a moment after each batch, to hand its bytes over as Python objects; the
        # checks, which hold it, let go of it every SWITCH_INTERVAL once asked, instead of Python's 5 ms, which
        # left the thread waiting behind them (20 of 140 ms of 2,000 small partitions' checks went to waiting
        # for its batches).
        self.interval = sys.getswitchinterval()
        sys.setswitchinterval(min(self.interval, SWITCH_INTERVAL))
        self.thread.start()

    def _run(self) -> None:
        start, size = 0, min(FIRST_BATCH, BATCH)
        while start < len(self.wanted):
            if not self._hand_over(_read_batch(self.reader, self.wanted[start:start + size], self.spare_cache)):
                return
            start, size = start + size, min(2 * size, BATCH)

    def _hand_over(self, batch: list[tuple[int, Ahead | None]]) -> bool:
        """Queue `batch` once there is room; False when the reading is stopped first."""
        while not self.stopping.is_set():
            try:
                self.batches.put(batch, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def each(self, count: int) -> Iterator[Ahead | None]:
        """What was read for each of the caller's `count` paths, in order."""
        pending: dict[int, Ahead | None] = {}
        wanted = {i for i, _ in self.wanted}
        for i in range(count):
            while i in wanted and i not in pending:
                try:
                    pending.update(self.batches.get(timeout=0.5))
                except queue.Empty:
                    if not self.thread.is_alive() and self.batches.empty():  # (a defect of its own ended it:
                        pending[i] = None  # the checks read the rest themselves, rather than wait for ever)
            yield pending.pop(i, None)

    def stop(self) -> None:
        self.stopping.set()
        self.thread.join()
        sys.setswitchinterval(self.interval)


def _read_batch(reader: _Extension, batch: list[tuple[int, bytes]], spare_cache: bool) \
        -> list[tuple[int, Ahead | None]]:
    try:
        answers = reader.read_dirs([p for _, p in batch], READ_BELOW, BATCH_BYTES, spare_cache)
        return [(i, _ahead(a)) for (i, _), a in zip(batch, answers)]
    except Exception:  # (no memory for the batch): the checks read these as they would have, and find the same
        return [(i, None) for i, _ in batch]
