"""The compiled kernel (`_kernel.c`), where it was built, and whether the code running now uses it.

The kernel answers the common case of the walker's and the deep check's questions (whole valid v2 batches;
records that no check would report) and hands everything else to the pure-Python code, which stays the
reference: findings are always worded by it. Where the kernel sums up a run of batches or records for a lens,
the lens declares the bounds the run must keep to (`PlainRunBounds`, `IndexRunBounds`, `RecordRunBounds`;
`SegmentBounds` gathers a check's lenses' for a whole segment) and the kernel reads them: it holds no
rule of a lens's own, only the format's layout.

`KERNEL` is the module as loaded, or None: `LOGTOOL_PURE=1` in the environment, or an install without a
compiler (the extension is optional); `WHY_PURE` then says which. Code that runs on it asks `active()`, which
is None also inside `pure()`: a context (this thread's, or this task's), not a switch of the process. Only
format/crc.py takes `KERNEL` as loaded, whatever the context: a CRC is the same answer on both paths.
"""
from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Literal, NamedTuple, Protocol

from logtool.extensions import instead

if TYPE_CHECKING:
    from logtool.format import Bytes
    from logtool.format.batch import BatchView

PURE_ENV = "LOGTOOL_PURE"


class PlainRunBounds(NamedTuple):
    """What every batch of a run keeps to for `plain_run` to sum the run up whole, as the segment lens
    (checks/segment.py) declares it: outside any bound is something the lens reports, so the kernel declines
    the run and the lens walks it. The field order is the C's (it reads the tuple by position)."""

    # By magic, the bits of the codec ids a batch of that magic may name: a magic from len(codecs) on is not
    # taken, nor a codec whose bit is clear.
    codecs: tuple[int, ...]
    max_relative_offset: int  # a batch's last offset is at most this far above the segment base, and not below it
    increasing: bool  # each batch starts above the previous batch's last offset and ends at or above its start


class IndexRunBounds(NamedTuple):
    """What every offset index entry a run of batches meets keeps to for `index_run` to merge it, as the
    offset index lens (checks/index.py) declares it; the kernel stops at the first batch where an entry does
    not, and the lens takes it from there. The field order is the C's."""

    at_batch_start: bool  # the entry's position is the start of the batch it names
    after_previous_batch: bool  # its offset is above the last offset of the batch before that one
    within_batch: bool  # its offset is at or above that batch's base offset
    increasing: bool  # the next entry's offset and position are both above its own


class TimeIndexRunBounds(NamedTuple):
    """What every time index entry the batches meet keeps to for `clean_segment` to take the segment, as the
    time index lens (checks/index.py) declares it. The field order is the C's."""

    entry_in_batch: bool  # the entry's offset is at or above the first offset of the batch that reaches it
    time_is_max: bool  # its timestamp is the largest batch max timestamp up to that batch
    increasing: bool  # the next entry's timestamp is above its own, its offset not below


class ProducerRunBounds(NamedTuple):
    """What every batch of an idempotent producer keeps to, after the producer's batch before it in the segment,
    for `clean_segment` to take the segment, as the producer lens (checks/producers.py) declares it. The field
    order is the C's."""

    epochs_not_backwards: bool  # its producer epoch is at least the one before
    sequences_follow_on: bool  # in the same epoch, its base sequence follows on the last sequence before


class SegmentBounds(NamedTuple):
    """What a whole segment keeps to for `clean_segment` to sum it up in one call: the declarations of the
    lenses a check feeds, gathered by the segment lens (checks/segment.py). Outside any bound is something a
    lens reports, so the kernel declines and the lenses walk the segment. The field order is the C's."""

    batches: PlainRunBounds  # every batch, the first too
    first_at_base: bool  # the first batch starts at the segment's base offset (the file name)
    offset_index: IndexRunBounds  # every offset index entry
    index_last_within_log: bool  # the last offset index entry names an offset at most the segment's last
    time_index: TimeIndexRunBounds  # every time index entry
    producers: ProducerRunBounds  # every batch of an idempotent producer (of no transaction: none is summed up)
    # A deep check's: every record of every batch, uncompressed (None: a shallow check's, which reads none). A
    # batch whose record times the record lens does not check is held to them too: the kernel declines it
    # where one is past its max, and the lens then finds nothing there either.
    records: RecordRunBounds | None


class SegmentSummary(NamedTuple):
    """`clean_segment`'s answer: what the lenses would have gathered of a segment in which they found nothing."""

    batches: int
    first_offset: int
    last_offset: int
    first_timestamp: int
    max_timestamp: int
    codecs: int  # a bit per codec id met
    magics: int  # a bit per magic met
    epoch_runs: list[tuple[int, int, int]]  # (leader epoch, first offset, last offset) of each run of batches
    records: int | None  # how many records the batches hold (None: a shallow check's, which counts none)
    # Each producer's batches as the producer lens keeps them (ProducerSpan, but for its transactions: none):
    # (producer id, first epoch, first position, first offset, last epoch, first data, last data).
    producers: list[tuple[int, int, int, int, int, tuple[int, int, int, int] | None, tuple[int, int, int] | None]]


class RecordRunBounds(NamedTuple):
    """What every record of a v2 batch keeps to for `clean_records` to count the batch's records clean, as the
    record lens (checks/records.py) declares it: outside any bound is something the lens reports, so the
    kernel answers -1 and the lens decodes the batch itself. Within them or not, the kernel counts no record
    the reader (format/records.py) would not read: how records are laid out is the format's, not a lens's
    rule. The field order is the C's."""

    offsets_increasing: bool  # each record's offset is above the one before it
    offsets_within_last: bool  # each record's offset is at most the batch's last offset
    times_within_max: bool  # each record's timestamp (base timestamp + its delta) is at most the batch's max
    count_within_span: bool  # the batch holds no more records than offsets from its base to its last


# No bound: how many records a batch holds where every one of them reads (a read of the records, not a check).
DECODE_ONLY = RecordRunBounds(offsets_increasing=False, offsets_within_last=False, times_within_max=False,
                              count_within_span=False)


class Kernel(Protocol):
    """What the Python side calls of the compiled module. `_kernel.pyi` declares the C functions' signatures;
    mypy holds that module to this contract where `_load` returns it."""

    def frames(self, view_type: type[BatchView], buf: Bytes, pos: int, end: int, window: int,
               /) -> tuple[list[BatchView], int]: ...
    def clean_records(self, payload: Bytes, count: int, base_offset: int, last_offset: int, base_ts: int,
                      max_ts: int, bounds: RecordRunBounds, /) -> int: ...
    def render_text(self, payload: bytes, count: int, base_offset: int, base_ts: int, append_ts: int | None,
                    base_seq: int, ts_type: str, key_mode: int, value_mode: int, large: int, previous: int,
                    /) -> tuple[str, int, list[tuple[int, int]]] | None: ...
    def render_json(self, payload: bytes, count: int, base_offset: int, base_ts: int, append_ts: int | None,
                    base_seq: int, ts_type: str, key_mode: int, value_mode: int, large: int, tail: str,
                    unverified: bool, /) -> bytes | None: ...
    def plain_run(self, views: list[BatchView], base: int, prev_last: int, epoch: int, bounds: PlainRunBounds,
                  /) -> tuple[int, int, int, int] | None: ...
    def index_run(self, views: list[BatchView], index: Bytes, entry: int, entries: int, base: int,
                  prev_last: int | None, bounds: IndexRunBounds, /) -> tuple[int, int, int | None]: ...
    def clean_segment(self, log: Bytes, index: Bytes, time_index: Bytes, base: int, bounds: SegmentBounds,
                      /) -> tuple[int, int, int, int, int, int, int, list[tuple[int, int, int]], int | None,
                                  list[tuple[int, int, int, int, int, tuple[int, int, int, int] | None,
                                             tuple[int, int, int] | None]]] | None: ...
    def crc32c(self, data: Bytes, /) -> int: ...
    def threads(self, n: int = ..., /) -> int: ...
    def split_passes(self) -> int: ...
    def hardware_crc(self) -> bool: ...


def _load() -> tuple[Kernel | None, str | None]:
    if os.environ.get(PURE_ENV, "") not in ("", "0"):
        return None, f"{PURE_ENV} is set"
    try:
        from logtool.format import _kernel
    except ImportError as e:  # or an audit's executor, importing logtool from the archive the driver shipped
        _kernel, why = instead("logtool.format._kernel", e)
        if _kernel is None:
            return None, f"the compiled kernel {why}"
    return _kernel, None


KERNEL, WHY_PURE = _load()

# Whether the code running in this context may use the kernel: `pure()` clears it for its block. A context
# variable, so that it holds for this thread or task alone (a thread started inside the block starts with the
# kernel on, as every new thread's context does).
_USE_KERNEL: ContextVar[bool] = ContextVar("logtool_use_kernel", default=True)


def active() -> Kernel | None:
    """The kernel the code running here uses: None on the pure path (inside `pure()`, or no kernel loaded)."""
    return KERNEL if _USE_KERNEL.get() else None


def clean_count(fast: Kernel, payload: Bytes, view: BatchView, checks: RecordRunBounds | Literal[False]) -> int:
    """How many records the kernel `fast` (the caller's `active()`) reads in a v2 batch's (uncompressed)
    payload where every one keeps within `checks`, the bounds the caller declares (False: none, DECODE_ONLY).
    -1 where the reference must answer: a record outside them or that does not read, or a header value an
    int64 does not hold."""
    if view.base_offset is None or view.count is None:
        return -1  # a legacy entry's view (only v2 views come here): the reference answers
    try:
        return fast.clean_records(payload, view.count, view.base_offset, view.last_offset, view.first_timestamp,
                                  view.max_timestamp, checks or DECODE_ONLY)
    except OverflowError:
        return -1


def clean_segment(fast: Kernel, log: Bytes, index: Bytes, time_index: Bytes, base: int,
                  bounds: SegmentBounds) -> SegmentSummary | None:
    """The kernel `fast`'s summary of a whole segment (its .log, .index and .timeindex bytes) where nothing in
    it is outside `bounds`; None where something is, or a base offset an int64 does not hold: the lenses
    then walk it."""
    try:
        summary = fast.clean_segment(log, index, time_index, base, bounds)
    except OverflowError:
        return None
    return SegmentSummary(*summary) if summary is not None else None


@contextmanager
def pure() -> Iterator[None]:
    """Run the block on the pure-Python reference (the tests hold both paths to the same answers)."""
    token = _USE_KERNEL.set(False)
    try:
        yield
    finally:
        _USE_KERNEL.reset(token)
