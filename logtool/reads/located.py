"""`find`'s answer: the batch holding an offset, or holding the first record at or after a time, looked up
through the partition's indexes as a broker does (store/seek.py)."""
from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from logtool import exitcodes
from logtool.findings import Severity
from logtool.store.discover import open_partition
from logtool.store.pacing import ReadPolicy
from logtool.store.seek import Hit, seek_offset, seek_timestamp


@dataclass(slots=True, frozen=True)
class Located:
    hit: Hit

    def exit_code(self, fail_on: Severity = Severity.WARNING) -> int:
        return exitcodes.CLEAN  # an offset or time the partition does not hold is no answer: `locate` raises

    def to_dict(self) -> dict[str, Any]:
        return self.hit.to_dict()

    def rows(self) -> Iterator[dict[str, Any]]:
        yield {"type": "hit", **self.hit.to_dict()}

    def summary(self) -> dict[str, Any]:
        cost = self.hit.cost
        return {"index_entries_read": cost.index_entries_read, "log_bytes_read": cost.log_bytes_read}

    def stderr_lines(self) -> list[str]:
        return []


def locate(path: Path, offset: int | None = None, timestamp: int | None = None, reading: ReadPolicy | None = None,
           sizing: Callable[[int], None] | None = None) -> Located:
    """The batch holding `offset`, or the first record at or after `timestamp` (exactly one is given), in the
    partition dir or .log file `path`. `sizing` is told the bytes a walk could read at most (where no index
    helps). Raises NotAPartition for a path that names no one partition, SeekError for an offset or time the
    partition does not hold, OSError for a file that cannot be read."""
    part = open_partition(path)
    try:
        if sizing is not None:
            sizing(part.log_bytes())
        part.read_under(reading)
        if offset is not None:
            return Located(seek_offset(part, offset))
        assert timestamp is not None, "exactly one of offset and timestamp"
        return Located(seek_timestamp(part, timestamp))
    finally:
        part.close()
