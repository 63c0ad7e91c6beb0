"""Deep checks (`--deep`): decode every record of a batch and hold it to what its header claims."""
from __future__ import annotations

from collections.abc import Callable

from logtool.findings import (
    CONTROL_RECORD_INVALID, INNER_CRC_MISMATCH, LEGACY_WRAPPER_UNREADABLE, OFFSET_DELTA_INVALID, RECORDS_UNREADABLE,
    RECORD_COUNT_MISMATCH, TIMESTAMP_ABOVE_MAX, Kind, Sink)
from logtool.format import Bytes, kernel
from logtool.format.batch import BatchView
from logtool.format.records import RecordError, batch_payload, iter_records, parse_control

# The bounds `_check_each` and `check_records` hold each record of a batch to, declared for the kernel: it
# counts a batch's records clean (clean_records) only where every one keeps within them, and the lens
# decodes any other batch itself; the kinds beside each are what the lens reports of a record that does not.
RECORD_RUN = kernel.RecordRunBounds(
    offsets_increasing=True,  # OFFSET_DELTA_INVALID: "follows"
    offsets_within_last=True,  # OFFSET_DELTA_INVALID: "is beyond the batch's last offset"
    times_within_max=True,  # TIMESTAMP_ABOVE_MAX, of a batch whose times are checked (_times_checked)
    count_within_span=True,  # RECORD_COUNT_MISMATCH: "records over ... offsets"
)
_UNTIMED_RUN = RECORD_RUN._replace(times_within_max=False)  # a batch whose times are not checked
# Which of the two a v2 batch's records keep to, by its attributes (all `_times_checked` reads of a v2 batch):
# asked once a value, not once a batch, whose properties cost a call each.
_RUN_BY_ATTRIBUTES: dict[int, kernel.RecordRunBounds] = {}
# Every kind `check_records` reports of a batch's records: those it names, and those the reader names in the
# RecordErrors it raises (format/records.py), which the lens reports as they come. The kernel is offered
# only v2 data batches, and counts none clean where a record is outside a bound of RECORD_RUN or does not
# read (RECORDS_UNREADABLE; RECORD_COUNT_MISMATCH where the count and the payload disagree); the other kinds
# are of batches it is never offered (INNER_CRC_MISMATCH and LEGACY_WRAPPER_UNREADABLE: a legacy wrapper's;
# CONTROL_RECORD_INVALID: a control batch's). tests/format/test_kernel_guard.py holds a case of each in which the
# kernel path reports what the pure path does.
PER_RECORD = (OFFSET_DELTA_INVALID, TIMESTAMP_ABOVE_MAX, RECORD_COUNT_MISMATCH, RECORDS_UNREADABLE, INNER_CRC_MISMATCH,
              LEGACY_WRAPPER_UNREADABLE, CONTROL_RECORD_INVALID)


def check_records(buf: Bytes, view: BatchView, sink: Sink, fast: kernel.Kernel | None) -> int:
    """Decode every record of one whole, valid batch into `sink`'s findings; returns how many were decoded.
    `fast`: the kernel the walk runs on (`kernel.active()`, asked once a walk), None on the pure path."""
    if fast is not None and view.magic >= 2 and not view.is_control:
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
    check_ts = _times_checked(view)
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


def _times_checked(view: BatchView) -> bool:
    """Whether the batch's records' timestamps are held to its max: not where they are the broker's
    (LogAppendTime, the max itself), nor where the base timestamp is a delete horizon (the cleaner's)."""
    return view.timestamp_type == "CreateTime" and not view.has_delete_horizon


def _clean_count(fast: kernel.Kernel, buf: Bytes, view: BatchView) -> int:
    """How many records the compiled kernel finds in a v2 data batch where no check above would report
    anything; -1 where one would, or where the payload cannot be had: the reference then says why."""
    try:
        payload = batch_payload(buf, view)
    except RecordError:
        return -1
    bounds = _RUN_BY_ATTRIBUTES.get(view.attributes)
    if bounds is None:
        bounds = _RUN_BY_ATTRIBUTES[view.attributes] = RECORD_RUN if _times_checked(view) else _UNTIMED_RUN
    return kernel.clean_count(fast, payload, view, bounds)
