"""Partition facts: what the checks between files need to know about a partition once its segments
were walked. Computed in one place so that every cross-file check agrees on the log's bounds."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol


class WalkedSegment(Protocol):
    """What the facts need of a walked segment (the checks' WalkedSegment has it)."""

    base_offset: int
    last_offset: int | None
    first_invalid_position: int | None


@dataclass(slots=True, frozen=True)
class PartitionFacts:
    """`log_start`/`log_end` are None when the partition has no readable segment.

    `log_end` is Kafka's log end offset after its recovery: recovery stops at the first segment whose
    valid prefix ends early (the later ones are deleted), and a segment's next offset is its last valid
    batch's last offset + 1, or its base offset when it holds no valid batch (`readNextOffset`).
    """

    log_start: int | None  # base offset of the first segment
    log_end: int | None
    cut_segment: int | None = None  # base offset of the first segment recovery would cut

    @property
    def recovery_cuts(self) -> bool:
        """Recovery would cut bytes: a segment's valid prefix ends before its file does."""
        return self.cut_segment is not None


def partition_facts(segments: Sequence[WalkedSegment]) -> PartitionFacts:
    if not segments:
        return PartitionFacts(None, None)
    end = next((s for s in segments if s.first_invalid_position is not None), None)
    cut = end.base_offset if end is not None else None
    end = end or segments[-1]
    log_end = end.last_offset + 1 if end.last_offset is not None else end.base_offset
    return PartitionFacts(segments[0].base_offset, log_end, cut)
