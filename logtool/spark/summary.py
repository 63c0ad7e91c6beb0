"""The audit's summary (DIR/summary.json and the terminal): each check task tallies the partitions it
checked, the driver adds the tallies up with the findings about PATHs and log dirs it already has."""
from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from pyspark.sql import DataFrame

from logtool.findings import Finding, Severity
from logtool.checks.engine import fsck_code
from logtool.spark.divergence import shared_partitions
from logtool.spark.rows import PARTITIONS
from logtool.spark.task import Checked

WORST_SHOWN = 10
# partition_row's columns the summary keeps for the worst partitions
_WORST = ("path", "host", "status", "errors", "warnings", "infos", "worst_finding")
_COLUMNS = PARTITIONS.fieldNames()


@dataclass(slots=True)
class Tally:
    """What the summary counts; tallies of parts of the fleet add up to the fleet's."""

    partitions: int = 0
    segments: int = 0
    bytes: int = 0
    batches: int = 0
    records: int | None = None  # only with --deep
    by_code: Counter = field(default_factory=Counter)  # (code, name, severity) -> findings
    worst: list[tuple] = field(default_factory=list)  # (-errors, -warnings, path, row): the WORST_SHOWN first
    operational: bool = False  # verify's rule: an unusable PATH, or a partition that could not be listed

    def add(self, c: Checked, partition_row: tuple) -> "Tally":
        """Count a checked partition, given its row of the partitions table."""
        row = dict(zip(_COLUMNS, partition_row))
        self.partitions += 1
        self.segments += row["segment_count"]
        self.bytes += row["bytes"]
        self.batches += row["batches"]
        if row["records"] is not None:
            self.records = (self.records or 0) + row["records"]
        self.count(c.report.all_findings(), any(f.name == "UNREADABLE" for f in c.report.findings))
        if row["errors"] or row["warnings"]:
            self.worst = heapq.nsmallest(WORST_SHOWN, [*self.worst, (-row["errors"], -row["warnings"], row["path"],
                                                                    {k: row[k] for k in _WORST})])
        return self

    def count(self, findings: Iterable[Finding], operational: bool = False) -> "Tally":
        self.by_code.update((f.code, f.name, str(f.severity)) for f in findings)
        self.operational |= operational
        return self

    def merge(self, other: "Tally") -> "Tally":
        self.partitions += other.partitions
        self.segments += other.segments
        self.bytes += other.bytes
        self.batches += other.batches
        if other.records is not None:
            self.records = (self.records or 0) + other.records
        self.by_code += other.by_code
        self.worst = heapq.nsmallest(WORST_SHOWN, self.worst + other.worst)
        self.operational |= other.operational
        return self

    def summary(self, fail_on: Severity) -> dict:
        severity = {str(s): sum(n for (_, _, sev), n in self.by_code.items() if sev == str(s)) for s in Severity}
        worst = max((s for s in Severity if severity[str(s)]), default=None)
        return {
            "partitions": self.partitions, "segments": self.segments, "bytes": self.bytes, "batches": self.batches,
            "records": self.records, "errors": severity["error"], "warnings": severity["warning"],
            "infos": severity["info"],
            "by_code": [{"code": code, "name": name, "severity": sev, "count": n}
                        for (code, name, sev), n in sorted(self.by_code.items(), key=lambda kv: (-kv[1], kv[0]))],
            "worst_partitions": [row for *_, row in self.worst],
            "operational_error": self.operational,
            "exit_code": fsck_code(self.operational, worst, fail_on),
        }


def divergence_summary(divergence: DataFrame, partitions: DataFrame) -> dict:
    kinds = {r.kind: r["count"] for r in divergence.groupBy("kind").count().collect()}
    shown = divergence.orderBy("topic", "partition").limit(WORST_SHOWN).collect()
    return {"shared_partitions": shared_partitions(partitions).count(), "diverging": sum(kinds.values()),
            "by_kind": kinds,
            "first": [{**r.asDict(), "replicas": list(r.replicas), "affected": list(r.affected)} for r in shown]}
