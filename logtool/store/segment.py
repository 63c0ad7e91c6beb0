"""Segment: the walker. The single place that decides where each batch starts, whether it is whole and
valid, and where the valid prefix of a `.log` file ends, exactly as Kafka's `LogSegment.recover` would.
"""
from __future__ import annotations

import errno
import mmap
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, TypeGuard

from logtool.findings import (
    BAD_TXN_MARKER, CRC_MISMATCH, FILE_SHRANK_WHILE_READ, GARBAGE, PREALLOCATED_TAIL, RECOVERY_FAILS, SHORT_TAIL,
    TORN_BATCH, ZERO_TAIL, Finding, finding)
from logtool.format import Bytes, kernel
from logtool.format.batch import MAX_SEGMENT_BYTES, BatchView, FrameStop, read_entry
from logtool.format.records import RecordError, first_control, first_legacy_offset
from logtool.store.mapping import GuardedMap, open_prefix, open_readonly, read_small, zeros_from
from logtool.store.pacing import around_read
from logtool.store.sidefile import MAPPED_FROM, SideFile, read_side

if TYPE_CHECKING:
    from logtool.store.pacing import ReadPolicy, Pacer
    from logtool.store.read_ahead import Ahead


# The walker hands back the pages it has passed every RELEASE_EVERY bytes, so the resident set stays flat
# on a segment of any size. MADV_DONTNEED on a read-only file mapping only unmaps: the pages stay in the
# page cache, so a broker reading the same file loses nothing.
RELEASE_EVERY = 32 << 20
FIRST_RUN = 64 << 10  # the bytes of batches the kernel checks in its first run of a walk
# ... and at most in any run of a walk whose caller reads the batches' bytes: they are still in the CPU's
# cache when it does, which makes a deep verify faster than runs up to the release mark would (its time: the
# "verify --deep" rows of bench/results/kernel.md). A walk
# whose caller reads only the views runs up to the release mark, where the kernel checks the CRCs of its
# longer passes on several cores, but to at most MOST_VIEWS batches of the sizes it has met: a run is a list
# of views (~430 bytes each), and 32 MiB of 60-byte batches would be 230 MB of them.
LONGEST_RUN = 256 << 10
MOST_VIEWS = 4096
# The most of a file mapped to walk it: no entry Kafka reads ends past it (a larger file is SEGMENT_TOO_LARGE:
# Kafka refuses to load it). What lies past it is only read to learn whether it is zeros, in windows.
MAPPED_AT_MOST = MAX_SEGMENT_BYTES
_SMALL = min(MAPPED_FROM, MAPPED_AT_MOST + 1)  # a segment below this many bytes is read whole, not mapped
# Stops whose reason rests on the bytes up to the end of the file (zeros to the end, too few bytes left, a
# batch longer than what is left).
_STOPS_AT_END = {ZERO_TAIL.name, SHORT_TAIL.name, TORN_BATCH.name, GARBAGE.name}


def _rests_on_the_end(entry: BatchView | FrameStop | None) -> TypeGuard[FrameStop | None]:
    """Whether `read_entry`'s answer rests on where the buffer ends (None: it ended there): at the end of
    a mapping shorter than its file, it may not be the file's."""
    return entry is None or isinstance(entry, FrameStop) and entry.reason in _STOPS_AT_END


def _release(buf: Bytes, start: int, end: int) -> int:
    """Drop the mapping of whole pages in [start, end); returns the new release mark."""
    if not isinstance(buf, mmap.mmap):
        return start
    lo = start - start % mmap.PAGESIZE
    hi = end - end % mmap.PAGESIZE
    if hi > lo:
        buf.madvise(mmap.MADV_DONTNEED, lo, hi - lo)
        return hi
    return start


class Lens(Protocol):
    """Anything fed every batch of a segment's valid prefix, in file order, by one walk. A lens that has a
    `feed_many(views)` is handed the walk's runs of batches (`Segment.walk_runs`) instead, one call each."""

    def feed(self, view: BatchView) -> None: ...


def feeder(lens: Lens) -> Callable[[list[BatchView]], None]:
    """What hands a lens a run of batches: its own `feed_many`, or `feed` for each."""
    many: Callable[[list[BatchView]], None] | None = getattr(lens, "feed_many", None)
    if many is not None:
        return many
    feed = lens.feed

    def feed_each(views: list[BatchView]) -> None:
        for v in views:
            feed(v)

    return feed_each


@dataclass(slots=True)
class WalkOutcome:
    """The outcome of a walk, filled in as it goes: `valid_bytes` ends the valid prefix; `stop` says why
    it ended before the file did (None when the file is whole)."""

    size: int
    valid_bytes: int = 0
    batches: int = 0
    stop: FrameStop | None = None
    stop_view: BatchView | None = None  # the batch that failed validation, when there was one
    shrunk_at: int | None = None  # the file was cut short under the reader: from here on it read zeros

    def stop_finding(self, file: str, active: bool, snapshot: bool = False) -> Finding | None:
        """The finding that says why the valid prefix ends before the file does; None when it does not.
        Every command that meets a stopped walk reports it through here, in these words. `snapshot`: a KRaft
        snapshot, which Kafka's recovery never cuts."""
        stop = self.stop
        if stop is None:
            return None
        if self.shrunk_at is not None:
            return finding(FILE_SHRANK_WHILE_READ, f"the file was cut short while it was read: it ended before byte "
                                                   f"{self.shrunk_at + mmap.PAGESIZE}, so reading stopped at byte "
                                                   f"{stop.position} of {self.size}", file, stop.position)
        # Zeros at the end of the active segment are what preallocation (or a crash mid-write) leaves.
        name = PREALLOCATED_TAIL.name if stop.reason == ZERO_TAIL.name and active else stop.reason
        offset = self.stop_view.base_offset if self.stop_view is not None else None
        after = "cannot be read (recovery leaves snapshot files as they are)" if snapshot else "are cut by recovery"
        return finding(name, f"{stop.detail}; the valid log ends at byte {stop.position}, "
                             f"{self.size - stop.position} bytes after it {after}", file, stop.position, offset)


@dataclass(slots=True)
class Segment:
    log_path: Path
    base_offset: int
    _buf: GuardedMap | bytes | None = field(default=None, repr=False)
    _size: int = 0  # the bytes of `buf`
    _file_size: int = 0
    opened_mtime_ns: int = 0  # the file's mtime when it was opened: a change since means it is being written
    reading: "ReadPolicy | None" = None  # paces reads and spares the page cache (store/pacing.py); None: neither
    _pacer: "Pacer | None" = field(default=None, repr=False)
    # The names in the segment's directory when it was listed (None: not listed): a side file not among them is
    # missing, and is not looked for.
    listed: frozenset[str] | None = field(default=None, repr=False)
    # Its directory as it was read ahead (store/read_ahead.py): the segment's and its indexes' bytes, if read.
    ahead: "Ahead | None" = field(default=None, repr=False)
    _stem: str | None = field(default=None, repr=False)  # its name without the suffix, once asked (`side`)

    def open(self) -> "Segment":
        if self._buf is None:
            read = self.ahead.take(self.log_path.name) if self.ahead is not None else None
            if read is not None:  # (only where its policy lets files be read ahead: it counts the bytes here)
                self._buf, self.opened_mtime_ns = read
                self._size = self._file_size = len(read[0])
                if self.reading is not None:
                    self.reading.spend(self._size)
                return self
            # A small file is read whole, as a small index is (sidefile.MAPPED_FROM): a mapping of it costs more
            # than the copy, and the kernel sums up only a segment read whole.
            small = read_small(self.log_path, _SMALL) if self.reading is None else \
                self.reading.read_small(self.log_path, _SMALL)
            if small is not None:
                self._buf, self.opened_mtime_ns = small
                self._size = self._file_size = len(self._buf)
                return self
            st = os.stat(self.log_path)
            if st.st_size <= MAPPED_AT_MOST:
                buf, self._file_size = open_readonly(self.log_path)
            else:  # no segment is this large (a sparse file of terabytes can be): the address space may not
                # hold it whole, and reading it through would take hours where its holes take no time
                buf, self._file_size = open_prefix(self.log_path, MAPPED_AT_MOST)
            self._buf, self._size = buf, len(buf)
            self.opened_mtime_ns = st.st_mtime_ns
            if self.reading is not None:
                self._pacer = self.reading.open(self.log_path, self._size)
        return self

    def close(self) -> None:
        if isinstance(self._buf, mmap.mmap):
            self._buf.close()
        self._buf = None
        if self._pacer is not None:
            self._pacer.close()  # after unmapping: pages still mapped cannot leave the page cache
            self._pacer = None

    def __enter__(self) -> "Segment":
        return self.open()

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def buf(self) -> GuardedMap | bytes:
        buf = self.open()._buf
        assert buf is not None  # open() leaves it set
        return buf

    @property
    def size(self) -> int:
        """The bytes of `buf`: the file's size, unless it is larger than any segment can be (`file_size`)."""
        self.open()
        return self._size

    @property
    def file_size(self) -> int:
        self.open()
        return self._file_size

    def changed_since_opened(self) -> bool:
        """Whether the file grew, shrank or was written since it was opened."""
        try:
            st = os.stat(self.log_path)
        except OSError:
            return True
        return st.st_size != self._file_size or st.st_mtime_ns != self.opened_mtime_ns

    def side(self, suffix: str) -> SideFile:
        """The segment's index file with this suffix, mapped read-only (or why it cannot be)."""
        name = self._side_name(suffix)
        if self.listed is not None and name not in self.listed:
            return SideFile(name, None)
        if self.ahead is not None and (taken := self.ahead.side(name)) is not None:
            return taken
        path = self._side_path(suffix)
        return read_side(path, mapped=True, name=name, around=around_read(self.reading, path))

    def path_with(self, suffix: str) -> Path:
        """The path of the segment's file with this suffix (its .index, .timeindex, .txnindex)."""
        return Path(self._side_path(suffix))

    def _side_name(self, suffix: str) -> str:
        """The name of the segment's file with this suffix: `log_path.with_suffix(suffix).name`, its stem made
        once a segment."""
        stem = self._stem
        if stem is None:
            log = self.log_path.name
            stem = self._stem = log[: len(log) - len(os.path.splitext(log)[1])]
        return stem + suffix

    def _side_path(self, suffix: str) -> str:
        # A str, which the checks of every segment read with (a Path made for each is a share of a small
        # partition's cost).
        return os.path.join(os.path.dirname(self.log_path), self._side_name(suffix))

    def walk(self, result: WalkOutcome | None = None, start: int = 0,
             reads_bytes: bool = True) -> Iterator[BatchView]:
        """Yield each whole, valid batch of the valid prefix in file order; record the outcome in `result`.

        Validity is Kafka's recovery rule: framing (§1.1), size and CRC (`ensureValid`), and a readable
        end-transaction marker in producer control batches. Nothing else moves the end of the prefix.
        `reads_bytes`: as for `walk_runs`.
        """
        for views in self.walk_runs(result, start, reads_bytes):
            yield from views

    def walk_runs(self, result: WalkOutcome | None = None, start: int = 0,
                  reads_bytes: bool = True) -> Iterator[list[BatchView]]:
        """`walk`'s batches a run at a time, for lenses that take many at once (`feed_many`): `result` is
        brought up to the end of each run before it is handed out. `reads_bytes`: the caller reads the
        batches' bytes (their records), not only their views.

        The compiled kernel, where there is one, walks the runs of plain valid v2 batches, each up to
        twice as many bytes as the one before (a seek that wants one batch checks few), at most LONGEST_RUN
        when the caller reads the bytes (MOST_VIEWS batches when it does not), and never past the next
        release mark; every other entry is read here, so each stop keeps its reason and its words.
        Raises OSError where the valid prefix goes on past what could be mapped of the file.
        """
        buf, end = self.buf, self.size
        walk = result if result is not None else WalkOutcome(self.file_size)
        walk.size = self.file_size
        pos = released = start
        every = self.reading.every if self.reading is not None else RELEASE_EVERY
        fast = kernel.active()
        run, longest = FIRST_RUN, LONGEST_RUN
        while True:
            if pos - released >= every:
                released = _release(buf, released, pos)
                if self._pacer is not None:
                    self._pacer.passed(released)
            if pos >= end == walk.size:  # the end of the whole file: no entry is there (read_entry's None)
                break
            if fast is not None:
                views, stopped = fast.frames(BatchView, buf, pos, end, min(run, every - (pos - released)))
                if views:
                    if not reads_bytes:  # MOST_VIEWS batches of this run's mean size, up to the release mark
                        longest = min(every, max(LONGEST_RUN, (stopped - pos) // len(views) * MOST_VIEWS))
                    run = min(run * 2, longest)
                    walk.valid_bytes = pos = stopped
                    walk.batches += len(views)
                    yield views
                    continue
            entry = self._entry_at(buf, pos, end, walk)
            if entry is None:
                break
            pos += entry.size
            walk.valid_bytes = pos
            walk.batches += 1
            yield [entry]
        if walk.stop is not None and isinstance(buf, GuardedMap):
            walk.shrunk_at = buf.faulted_at()

    def _entry_at(self, buf: Bytes, pos: int, end: int, walk: WalkOutcome) -> BatchView | None:
        """The whole, valid entry at `pos`, read by the pure path; None where the valid prefix ends there (why
        in `walk.stop`; none at the end of the file)."""
        entry = read_entry(buf, pos, end)
        if end < walk.size and _rests_on_the_end(entry):
            entry = self._stop_past_the_mapping(pos, entry)
        if entry is None:
            return None
        if isinstance(entry, FrameStop):
            walk.stop = entry
            return None
        if entry.crc_stored != entry.crc_computed:
            walk.stop = FrameStop(pos, CRC_MISMATCH.name,
                                  f"Record is corrupt (stored crc = {entry.crc_stored}, computed crc = "
                                  f"{entry.crc_computed})")
            walk.stop_view = entry
            return None
        if entry.base_offset is None:  # a compressed legacy wrapper
            return _with_legacy_base(buf, entry)
        if entry.is_control and entry.producer_id >= 0:  # a producer's control batch
            problem = _marker_problem(buf, entry)
            if problem:
                reason, fatal = problem
                walk.stop = FrameStop(pos, RECOVERY_FAILS.name if fatal else BAD_TXN_MARKER.name, reason)
                walk.stop_view = entry
                return None
        return entry

    def _stop_past_the_mapping(self, pos: int, stop: FrameStop | None) -> FrameStop:
        """Where a walk from `pos` reached the end of a mapping shorter than its file (`stop`: what it found
        there): zeros to the end of the file, or what it could not read (OSError)."""
        zeros = stop is None or stop.reason == ZERO_TAIL.name  # from `pos` to the end of the mapping
        if zeros and zeros_from(self.log_path, self._size, self._file_size):
            return FrameStop(pos, ZERO_TAIL.name, f"{self._file_size - pos} zero bytes after the last batch "
                                                  f"(preallocated or zero-filled)")
        code, why = ((errno.ENOMEM, "no room in the address space to map more of it: ulimit -v")
                     if self._size < MAPPED_AT_MOST else (errno.EFBIG, "no segment holds more"))
        raise OSError(code, f"read only its first {self._size} of {self._file_size} bytes ({why}), and the log goes "
                            f"on past them", str(self.log_path))


def _with_legacy_base(buf: Bytes, view: BatchView) -> BatchView:
    """A compressed legacy wrapper knows only its last offset; Kafka reports the first inner one as base."""
    try:
        return view._replace(base_offset=first_legacy_offset(buf, view))
    except (RecordError, StopIteration):
        return view  # stays None: the deep checks report why the wrapper cannot be read


def _marker_problem(buf: Bytes, view: BatchView) -> tuple[str, bool] | None:
    """Recovery replays producer state, which decodes the first record of a producer's control batch:
    (why that fails, whether Kafka's recovery fails with it instead of cutting the log there)."""
    if view.codec > 4:
        return f"Unknown compression type id: {view.codec}", True  # CompressionType.forId throws
    try:
        marker = first_control(buf, view)
        if marker is not None and marker.type_id not in (0, 1):
            return f"Invalid control record type for end transaction marker: {marker.type_id}", False
    except RecordError as e:
        return str(e), e.fatal
    return None
