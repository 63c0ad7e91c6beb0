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
compiler) nothing is read ahead. A read policy that paces reads or spares the page cache reads every file
itself.
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
from logtool.store.sidefile import MAPPED_FROM

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
    def read_dirs(self, paths: list[bytes], below: int, budget: int, /) \
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
    """Whether files may be read ahead under `policy`: not where it paces reads or spares the page cache
    (each read of it is timed, and probed before it is made); a progress display's counting is kept."""
    return READER is not None and (policy is None or policy.throttle is None and not policy.spare_cache)


@contextmanager
def read_ahead(paths: Sequence[Path | None]) -> Iterator[Iterator[Ahead | None]]:
    """An `Ahead` (or None) for each of `paths` in turn (None in `paths`: not a directory to read), read by a
    thread at most AHEAD_BATCHES batches ahead of the caller. Leaving the block stops the thread."""
    reader = READER
    wanted = [(i, os.fsencode(p)) for i, p in enumerate(paths) if p is not None]
    if reader is None or not wanted:
        yield iter([None] * len(paths))
        return
    if len(wanted) <= BATCH:  # a thread would cost more than it saves: read them here
        found = dict(_read_batch(reader, wanted))
        yield (found.get(i) for i in range(len(paths)))
        return
    batches: queue.Queue[list[tuple[int, Ahead | None]]] = queue.Queue(maxsize=AHEAD_BATCHES)
    stop = threading.Event()

    def run() -> None:
        start, size = 0, min(FIRST_BATCH, BATCH)
        while start < len(wanted):
            batch = _read_batch(reader, wanted[start:start + size])
            start, size = start + size, min(2 * size, BATCH)
            while not stop.is_set():
                try:
                    batches.put(batch, timeout=0.1)
                    break
                except queue.Full:
                    continue
            else:
                return

    thread = threading.Thread(target=run, name="logtool-read-ahead", daemon=True)
    # The thread needs the GIL for a moment after each batch, to hand its bytes over as Python objects; the
    # checks, which hold it, let go of it every SWITCH_INTERVAL once asked, instead of Python's 5 ms, which
    # left the thread waiting behind them (20 of 140 ms of 2,000 small partitions' checks went to waiting for
    # its batches).
    interval = sys.getswitchinterval()
    sys.setswitchinterval(min(interval, SWITCH_INTERVAL))
    thread.start()

    def each() -> Iterator[Ahead | None]:
        pending: dict[int, Ahead | None] = {}
        for i, p in enumerate(paths):
            if p is None:
                yield None
                continue
            while i not in pending:
                try:
                    pending.update(batches.get(timeout=0.5))
                except queue.Empty:
                    if not thread.is_alive() and batches.empty():  # (a defect of its own ended it: the
                        pending[i] = None  # checks read the rest themselves, rather than wait for ever)
            yield pending.pop(i)

    try:
        yield each()
    finally:
        stop.set()
        thread.join()
        sys.setswitchinterval(interval)


def _read_batch(reader: _Extension, batch: list[tuple[int, bytes]]) -> list[tuple[int, Ahead | None]]:
    try:
        answers = reader.read_dirs([p for _, p in batch], READ_BELOW, BATCH_BYTES)
        return [(i, _ahead(a)) for (i, _), a in zip(batch, answers)]
    except Exception:  # (no memory for the batch): the checks read these as they would have, and find the same
        return [(i, None) for i, _ in batch]
