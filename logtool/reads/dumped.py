"""What a dump came to, once its rows are out: the result a dump's closing row, its notes and its exit code
are drawn from. A dump streams (its records are written as they are read), so its result is known only
at the end."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from logtool import exitcodes
from logtool.findings import Severity
from logtool.reads.ranges import RangePlan, Stats


@dataclass(slots=True)
class RecordsDumped:
    """The records of one partition dir, .log or KRaft snapshot, in the asked range."""

    plan: RangePlan
    stats: Stats
    batches_only: bool

    def exit_code(self, fail_on: Severity = Severity.WARNING) -> int:
        """8 when a segment could not be read at all (the job was not done whole), else 4 when damage was met."""
        if self.stats.unreadable:
            return exitcodes.OPERATIONAL
        return exitcodes.PROBLEMS if self.stats.damaged else exitcodes.CLEAN

    def notes(self) -> list[str]:
        """What the user should know when the output is shorter than asked: why, and what the log holds."""
        notes = list(self.plan.notes)
        if not (self.stats.batches if self.batches_only else self.stats.records):
            notes.append(f"no {'batches' if self.batches_only else 'records'} from {self.plan.describe()}")
        return notes

    def stderr_lines(self) -> list[str]:
        return [f"logtool: {note}" for note in self.notes()]

    def summary(self) -> dict[str, Any]:
        s = self.stats
        return {"segments_read": s.segments_read, "batches": s.batches, "records": s.records, "damaged": s.damaged,
                "segments_unreadable": s.unreadable}

    def to_dict(self) -> dict[str, Any]:
        """What the JSON forms end with: the notes, the counts and the exit code."""
        return {"notes": self.notes(), "summary": self.summary(), "exit_code": self.exit_code()}
