"""Offsets must grow batch after batch within a segment. Kafka enforces it when it appends and never checks
it again (the v2 checksum does not cover the base offset), so recovery keeps such a batch: the checks and
`dump` both report it, in these words."""
from __future__ import annotations

from logtool.format.batch import BatchView


def offsets_go_back(prev_last: int | None, view: BatchView) -> str | None:
    """Why `view` does not follow a batch that ended at `prev_last` (None: it does, or it is the first)."""
    last = view.last_offset
    first = view.first_offset
    if prev_last is not None and (first <= prev_last or last < first):
        return (f"batch at byte {view.position} covers offsets {first}..{last} after a batch ending at offset "
                f"{prev_last}")
    return None
