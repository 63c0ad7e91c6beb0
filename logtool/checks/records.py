"""Deep checks (`--deep`): decode every record of a batch and hold it to what its header claims."""
from __future__ import annotations

from collections.abc import Callable

from logtool.findings import (
    INNER_CRC_MISMATCH, OFFSET_DELTA_INVALID, RECORD_COUNT_MISMATCH, TIMESTAMP_ABOVE_MAX, Kind, Sink)
from logtool.format import Bytes, kernel
from logtool.format.batch import BatchView
from logtool.format.records import RecordError, batch_payload, iter_records, parse_control


def check_records(buf: Bytes, view: BatchView, sink: Sink, fast: kernel.Kernel | None) -> int:
    """Decode every record of one whole, valid batch into `sink`'s findings; returns how many were decoded.
    `fast`: the kernel the walk runs on (`kernel.active()`, asked once a walk), None on the pure path."""
    if fast is not None and view.magic >= 2 and not view.attributes & 0x20:
        n = _clean_count(fast, buf, view)
        if n >= 0:
            return n
    # The reference: it decodes every record and words what is wrong (and is what the kernel answers for).

    def report(kind: Kind | str, message: str) -> None:
        sink.add(kind, message, view.position, view.base_offset)

    n, whole = _check_each(buf, view, report)
    if whole and not view.is_legacy and view.base_offset is not None:  # (a v2 header always holds its base offset)
        span = view.last_offset - view.base_offset + 1
        if n > span:
            report(RECORD_COUNT_MISMATCH, f"header says {view.count} records over {span} offsets; {n} decoded")
    return n


def _check_each(buf: Bytes, view: BatchView, report: Callable[[Kind | str, str], None]) -> tuple[int, bool]:
    """Decode the records one by one, reporting what is wrong in each: (how many were decoded, whether
    every one was)."""
    n = 0
    prev_offset = None
    # Hoisted out of the per-record loop: properties cost a call each.
    check_ts = view.timestamp_type == "CreateTime" and not view.has_delete_horizon
    max_ts, last_offset, control = view.max_timestamp, view.last_offset, view.is_control
    try:
        for rec in iter_records(buf, view):
            n += 1
            if prev_offset is not None and rec.offset <= prev_offset:
                report(OFFSET_DELTA_INVALID, f"record offset {rec.offset} follows {prev_offset} inside the batch")
            elif rec.offset > last_offset:
                report(OFFSET_DELTA_INVALID, f"record offset {rec.offset} is beyond the batch's last offset "
                                             f"{last_offset}")
            prev_offset = rec.offset
            if rec.legacy_valid is False:
                report(INNER_CRC_MISMATCH, f"inner message at offset {rec.offset} fails its CRC")
            if check_ts and rec.timestamp > max_ts:
                report(TIMESTAMP_ABOVE_MAX, f"record {rec.offset} has timestamp {rec.timestamp}, above the batch max "
                                            f"{max_ts}")
            if control:
                parse_control(rec)
    except RecordError as e:
        # A wrapper the walker could not open was reported when it was walked (LEGACY_WRAPPER_UNREADABLE).
        if view.base_offset is not None:
            assert e.kind is not None  # iter_records and parse_control name the finding of every RecordError
            report(e.kind, str(e))
        return n, False
    return n, True


def _clean_count(fast: kernel.Kernel, buf: Bytes, view: BatchView) -> int:
    """How many records the compiled kernel finds in a v2 data batch where no check above would report
    anything; -1 where one would, or where the payload cannot be had: the reference then says why."""
    try:
        payload = batch_payload(buf, view)
    except RecordError:
        return -1
    return kernel.clean_count(fast, payload, view, checks=True)
