"""The audit's summary (DIR/summary.json and the terminal): each check task tallies the partitions it
checked, the driver adds the tallies up with the findings about PATHs and log dirs it already has."""
from __future__ import annotations

import datetime
import heapq
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, fields
from typing import Any

from pyspark.sql import DataFrame

from logtool.findings import NOT_AUDITED, Finding, Severity
from logtool.checks.engine import fsck_code
from logtool.spark.divergence import shared_partitions
from logtool.spark.rows import PARTITIONS
from logtool.spark.task import Checked

WORST_SHOWN = 10
NO_TOPIC = "(no topic: a log dir or PATH)"
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
    # For the report's breakdowns: (host, topic or broker, severity) -> findings; host, topic or broker ->
    # bytes past the valid prefixes; the UTC day of the last record before each damage -> partitions. A host
    # is the broker's (the HOST of a HOST:PATH, else the machine that read it); a broker is (cluster id, node
    # id, host).
    by_host: Counter = field(default_factory=Counter)
    by_broker: Counter = field(default_factory=Counter)
    damaged_broker: Counter = field(default_factory=Counter)
    broker_partitions: Counter = field(default_factory=Counter)
    by_topic: Counter = field(default_factory=Counter)
    damaged_host: Counter = field(default_factory=Counter)
    damaged_topic: Counter = field(default_factory=Counter)
    damage_days: Counter = field(default_factory=Counter)
    not_audited: Counter = field(default_factory=Counter)  # host -> PATHs and partitions its executors never read

    def add(self, c: Checked, partition_row: tuple) -> "Tally":
        """Count a checked partition, given its row of the partitions table."""
        row = dict(zip(_COLUMNS, partition_row))
        self.partitions += 1
        self.segments += row["segment_count"]
        self.bytes += row["bytes"]
        self.batches += row["batches"]
        if row["records"] is not None:
            self.records = (self.records or 0) + row["records"]
        topic = row["topic"] if row["topic"] is not None else NO_TOPIC
        host = c.item.pin.asked if c.item.pin else c.host
        broker = (row["cluster_id"], row["node_id"], host)
        self.broker_partitions[broker] += 1
        self.count(c.report.all_findings(), any(f.kind.operational for f in c.report.findings),
                   host, topic, broker)
        damaged = row["bytes"] - row["valid_bytes"]
        if damaged:
            self.damaged_host[host] += damaged
            self.damaged_topic[topic] += damaged
            self.damaged_broker[broker] += damaged
        if row["first_invalid_segment"] is not None:
            self.damage_days[_day_of_damage(row)] += 1
        if row["errors"] or row["warnings"]:
            self.worst = heapq.nsmallest(WORST_SHOWN, [*self.worst, (-row["errors"], -row["warnings"], row["path"],
                                                                    {k: row[k] for k in _WORST})])
        return self

    def count(self, findings: Iterable[Finding], operational: bool = False, host: str | None = None,
              topic: str = NO_TOPIC, broker: tuple | None = None) -> "Tally":
        """Count findings (of their broker's host, their partition's topic (none for a log dir's or a PATH's
        own) and their broker, where known)."""
        for f in findings:
            if f.name == NOT_AUDITED.name:
                self.not_audited[host] += 1
            severity = str(f.severity)
            self.by_code[(f.code, f.name, severity)] += 1
            if host is not None:
                self.by_host[(host, severity)] += 1
                self.by_topic[(topic, severity)] += 1
            if broker is not None:
                self.by_broker[(broker, severity)] += 1
        self.operational |= operational
        return self

    def merge(self, other: "Tally") -> "Tally":
        for name in _SUMS:
            setattr(self, name, getattr(self, name) + getattr(other, name))
        if other.records is not None:
            self.records = (self.records or 0) + other.records
        for name in _COUNTERS:
            getattr(self, name).update(getattr(other, name))
        self.worst = heapq.nsmallest(WORST_SHOWN, self.worst + other.worst)
        self.operational |= other.operational
        return self

    def summary(self, fail_on: Severity) -> dict:
        severity = {str(s): sum(n for (_, _, sev), n in self.by_code.items() if sev == str(s)) for s in Severity}
        return {
            "partitions": self.partitions, "segments": self.segments, "bytes": self.bytes, "batches": self.batches,
            "records": self.records, "errors": severity["error"], "warnings": severity["warning"],
            "infos": severity["info"],
            "by_code": [{"code": code, "name": name, "severity": sev, "count": n}
                        for (code, name, sev), n in sorted(self.by_code.items(), key=lambda kv: (-kv[1], kv[0]))],
            "worst_partitions": [row for *_, row in self.worst],
            "by_host": _breakdown("host", self.by_host, self.damaged_host),
            "by_topic": _breakdown("topic", self.by_topic, self.damaged_topic),
            "by_broker": self._by_broker(),
            "damage_by_day": [{"day": day, "partitions": n} for day, n in sorted(self.damage_days.items())],
            "not_audited": [{"host": host, "count": n} for host, n in sorted(self.not_audited.items())],
            "operational_error": self.operational,
            "exit_code": _exit_code(lambda s: severity[str(s)], self.operational, fail_on),
        }


    def _brokers(self) -> set[tuple]:
        return set(self.broker_partitions) | {broker for broker, _ in self.by_broker}

    def _by_broker(self) -> list[dict]:
        rows = [{"cluster_id": cluster, "node_id": node, "host": host, "partitions": n,
                 **{f"{s}s": self.by_broker[((cluster, node, host), str(s))] for s in Severity},
                 "damaged_bytes": self.damaged_broker[(cluster, node, host)]}
                for (cluster, node, host), n in ((b, self.broker_partitions[b]) for b in self._brokers())]
        return sorted(rows, key=lambda r: (-r["errors"], -r["warnings"], -r["damaged_bytes"], -r["infos"],
                                           str(r["cluster_id"]), str(r["node_id"]), r["host"]))


# How tallies add up: these fields are sums, every Counter adds up key by key (records, worst and operational
# have rules of their own).
_SUMS = ("partitions", "segments", "bytes", "batches")
_COUNTERS = tuple(f.name for f in fields(Tally) if f.type == "Counter")


_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)


def _day_of_damage(row: dict) -> str:
    """The UTC day of the last record written before the partition's damage: the latest timestamp of the
    damaged segment's valid prefix, or of the segments before it when that prefix holds none ("unknown"
    when none does)."""
    latest = None
    for segment in row["segments"]:  # in offset order, up to the damaged one
        ts = segment[10]  # its max_timestamp: microseconds (rows.timestamp), None where it has none
        if ts is not None:
            latest = ts if latest is None else max(latest, ts)
        if segment[0] == row["first_invalid_segment"]:
            break
    if latest is None:
        return "unknown"
    return (_EPOCH + datetime.timedelta(microseconds=latest)).date().isoformat()


def _breakdown(key: str, findings: Counter, damaged: Counter) -> list[dict]:
    """Per host or topic: findings by severity and bytes past the valid prefixes, the most troubled first."""
    names = {name for name, _ in findings} | set(damaged)
    rows = [{key: name, **{f"{s}s": findings[(name, str(s))] for s in Severity}, "damaged_bytes": damaged[name]}
            for name in names]
    return sorted(rows, key=lambda r: (-r["errors"], -r["warnings"], -r["damaged_bytes"], -r["infos"], r[key]))


def _exit_code(findings: Callable[[Severity], int], operational: bool, fail_on: Severity) -> int:
    """verify's exit code for a fleet, from how many findings it has of each severity."""
    return fsck_code(operational, max((s for s in Severity if findings(s)), default=None), fail_on)


# The summary's breakdowns: each a list of rows, a JSON Lines row each of this type.
_BREAKDOWNS = (("code", "by_code"), ("worst_partition", "worst_partitions"), ("broker", "by_broker"),
               ("host", "by_host"), ("topic", "by_topic"), ("not_audited", "not_audited"))


@dataclass(slots=True, frozen=True)
class Audited:
    """An audit's outcome: the summary it wrote (DIR/summary.json), with verify's exit codes."""

    doc: dict[str, Any]

    def exit_code(self, fail_on: Severity = Severity.WARNING) -> int:
        d = self.doc
        return _exit_code(lambda s: d[f"{s}s"], d["operational_error"], fail_on)

    def to_dict(self) -> dict[str, Any]:
        return self.doc

    def rows(self) -> Iterator[dict[str, Any]]:
        """The breakdowns, a row each: findings by code, the worst partitions, brokers, hosts, topics, the
        first divergences, the PATHs not audited by host."""
        d = self.doc
        for kind, key in _BREAKDOWNS:
            yield from ({"type": kind, **row} for row in d[key])
        if d["divergence"] is not None:
            yield from ({"type": "divergence", **row} for row in d["divergence"]["first"])

    def summary(self) -> dict[str, Any]:
        left_out = {key for _, key in _BREAKDOWNS} | {"exit_code"}  # (emit adds the result's own)
        return {k: v for k, v in self.doc.items() if k not in left_out}

    def stderr_lines(self) -> list[str]:
        """The operational error, named where a script's log shows it."""
        return [f"logtool: not audited on {lost['host']}: {lost['count']} PATH(s) or partition(s) (NOT_AUDITED "
                f"rows in {self.doc['output']}/findings say why)" for lost in self.doc["not_audited"]]


def divergence_summary(divergence: DataFrame, partitions: DataFrame) -> dict:
    kinds = {r.kind: r["count"] for r in divergence.groupBy("kind").count().collect()}
    shown = divergence.orderBy("topic", "partition").limit(WORST_SHOWN).collect()
    return {"shared_partitions": shared_partitions(partitions).count(), "diverging": sum(kinds.values()),
            "by_kind": kinds,
            "first": [{**r.asDict(), "replicas": list(r.replicas), "affected": list(r.affected)} for r in shown]}
