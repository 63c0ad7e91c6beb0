"""The audit's tables: their Parquet schemas, and the rows built from verify's reports (on the executors)."""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from pyspark.sql.types import (ArrayType, BinaryType, BooleanType, DataType, DoubleType, IntegerType, LongType,
                               StringType, StructField, StructType, TimestampType)

from logtool.findings import Finding, Severity
from logtool.recovery.verdict import Judged
from logtool.spark.listing import Broker, Listing, broker_of
from logtool.spark.task import BatchKey, Checked, packed


def _schema(*fields: tuple[str, DataType]) -> StructType:
    return StructType([StructField(name, kind, True) for name, kind in fields])


S, I, L, D, B, T = StringType(), IntegerType(), LongType(), DoubleType(), BooleanType(), TimestampType()
SCHEMA_VERSION = 3  # of the tables and summary.json: raised when a column changes meaning, goes or is renamed

# Every table's rows say whose they are: the broker (its cluster and node id, from the log dir's
# meta.properties; null for what is not inside a log dir given), its log dir and the host that read it. The
# writer adds the audit (audit_id, audited_at: driver.py).
BROKER = (("cluster_id", S), ("node_id", I), ("log_dir", S), ("host", S))

FINDINGS = _schema(
    *BROKER, ("scope", S), ("path", S), ("topic", S), ("partition", I), ("segment", S),
    ("code", S), ("name", S), ("severity", S), ("file", S), ("position", L), ("log_offset", L), ("message", S))

SEGMENT = _schema(
    ("file", S), ("base_offset", L), ("size", L), ("valid_bytes", L), ("first_invalid_position", L), ("batches", L),
    ("records", L), ("first_offset", L), ("last_offset", L), ("first_timestamp", T), ("max_timestamp", T),
    ("magic", ArrayType(I)), ("codecs", ArrayType(S)))

PARTITIONS = _schema(
    *BROKER, ("path", S), ("topic", S), ("partition", I), ("dir_kind", S), ("status", S),
    ("worst_finding", S), ("errors", I), ("warnings", I), ("infos", I), ("segment_count", I), ("bytes", L),
    ("valid_bytes", L), ("batches", L), ("records", L), ("first_offset", L), ("last_offset", L),
    ("first_invalid_segment", S), ("first_invalid_position", L), ("seconds", D), ("segments", ArrayType(SEGMENT)),
    # the partition's part of the verdict: whether it lets the broker start, what Kafka's recovery would do to it
    ("broker_starts", B), ("recovery_bytes_cut", L), ("recovery_segments_deleted", I),
    ("recovery_valid_records_dropped", L), ("log_end_offset_after", L), ("recovery_not_worked_out", S))

# With --replicas, a row per partition dir and block of BLOCK_OFFSETS offsets holding batches: the keys of the
# batches starting in the block, packed (task.packed). A row at most some 2 MB, however long the partition.
BATCHES = _schema(("cluster_id", S), ("log_dir", S), ("topic", S), ("partition", I), ("block", L),
                  ("keys", BinaryType()))
BLOCK_OFFSETS = 1 << 16
# What a block of a shared partition's batches shows (spark/divergence.py): where its replicas part, and the
# batches each holds there; or the batches where the shortest replicas end.
_HOLDERS = ArrayType(_schema(("log_dir", S), ("last_offset", L), ("crc", L), ("leader_epoch", I)))
BLOCK_OUTCOME = _schema(("cluster_id", S), ("topic", S), ("partition", I), ("parting_offset", L),
                        ("parting", _HOLDERS), ("tail", _HOLDERS))

# What the check tasks send back, one kind of row each (a row of one of the tables above, or a pickled Python
# value), so that all of it is computed once and cached in the JVM, and every table is a filter of it.
TAGGED = _schema(("kind", S), ("finding", FINDINGS), ("partition", PARTITIONS), ("batch", BATCHES),
                 ("blob", BinaryType()), ("key", S))
FINDING, PARTITION, BATCH = "finding", "partition", "batch"
# blob: a piece of a split partition (a `Checked`), a task's `Tally`, (log dir, `Judged`) of a partition that
# changes its log dir's verdict, a pinned unit (a `split.Unit`) whose task ran off its host. key: of a piece,
# its partition (outcome.partition_path), which the JVM groups the pieces by without a Python worker
PIECE, TALLY, JUDGED, MISPLACED = "piece", "tally", "judged", "misplaced"

# One row per log dir: verify's verdict (its JSON fields, documented in the README), and the host that read it.
VERDICTS = _schema(
    *BROKER, ("log_dir_checked", B), ("broker_starts", B),
    ("blockers", ArrayType(_schema(("code", S), ("name", S), ("dir", S), ("file", S), ("effect", S),
                                   ("message", S), ("fix", S)))),
    ("recovery", ArrayType(_schema(("partition", S), ("bytes_cut", L), ("segments_deleted", I),
                                   ("valid_records_dropped", L), ("log_end_offset_as_written", L),
                                   ("log_end_offset_after", L), ("cause", S)))),
    ("recovery_bytes_cut", L), ("recovery_valid_records_dropped", L),
    ("starts_unrecovered", ArrayType(_schema(("code", S), ("name", S), ("severity", S), ("file", S),
                                             ("position", L), ("offset", L), ("message", S)))),
    ("not_worked_out", ArrayType(_schema(("partition", S), ("why", S)))), ("next", ArrayType(S)))

# Replicas are compared within one cluster; `affected` are the replicas that differ from the one Kafka's
# truncation would keep (spark/divergence.py), `affected_nodes` their node ids; `leader_epochs`, one per replica
# (in the order of `replicas`), the leader epoch of its batch starting at the first divergent offset (null: none).
DIVERGENCE = _schema(
    ("cluster_id", S), ("topic", S), ("partition", I), ("replicas", ArrayType(S)), ("first_divergent_offset", L),
    ("kind", S), ("affected", ArrayType(S)), ("affected_nodes", ArrayType(I)), ("detail", S),
    ("leader_epochs", ArrayType(I)))

def _findings(broker: Broker, log_dir: str | None, host: str, scope: str, path: str, topic: str | None,
              partition: int | None, segment: str | None, findings: Iterable[Finding]) -> list[tuple]:
    return [(*broker, log_dir, host, scope, path, topic, partition, segment, f.code, f.name, str(f.severity), f.file,
             f.position, f.offset, f.message) for f in findings]


def listing_findings(listing: Listing) -> list[tuple]:
    """Findings about a PATH itself and about the log dirs it names."""
    rows = _findings((None, None), listing.path, listing.host, "path", listing.path, None, None, None,
                     listing.report.findings)
    for d in listing.report.log_dirs:
        rows += _findings(broker_of(d), d.path, listing.host, "log_dir", d.path, None, None, None, d.findings)
    return rows


def checked_findings(c: Checked) -> list[tuple]:
    rep, log_dir = c.report, c.item.log_dir
    rows = _findings(c.broker, log_dir, c.host, "partition", rep.path, rep.topic, rep.partition, None, rep.findings)
    for s in rep.segments:
        rows += _findings(c.broker, log_dir, c.host, "segment", rep.path, rep.topic, rep.partition, s.file,
                          s.findings)
    return rows


# The latest record timestamp a table holds: the end of year 9999, as far as Python's datetime (and every
# reader of the tables) goes; past it the value is corrupt.
_LAST_MS = 253_402_300_799_999


def timestamp(ms: int | None) -> int | None:
    """A record timestamp (epoch milliseconds) as a Spark timestamp column holds it (microseconds since the
    epoch: the rows go to the JVM as they are, see driver._tagged); None for Kafka's -1 (none) and for what
    no calendar holds (a corrupt value)."""
    if ms is None or not 0 <= ms <= _LAST_MS:
        return None
    return ms * 1000


def partition_row(c: Checked) -> tuple:
    rep, segs = c.report, c.report.segments
    found = list(rep.all_findings())
    worst = max(found, key=lambda f: f.severity, default=None)  # the first of the worst severity
    broken = next((s for s in segs if s.first_invalid_position is not None), None)
    firsts = [s.first_offset for s in segs if s.first_offset is not None]
    lasts = [s.last_offset for s in segs if s.last_offset is not None]
    records = [s.records for s in segs]
    return (
        *c.broker, c.item.log_dir, c.host, rep.path, rep.topic, rep.partition, rep.dir_kind, rep.status,
        f"{worst.code} {worst.name}" if worst else None,
        *(sum(1 for f in found if f.severity == sev) for sev in (Severity.ERROR, Severity.WARNING, Severity.INFO)),
        len(segs), sum(s.size for s in segs), sum(s.valid_bytes for s in segs), sum(s.batches for s in segs),
        sum(records) if records and None not in records else None,
        min(firsts, default=None), max(lasts, default=None),
        broken.file if broken else None, broken.first_invalid_position if broken else None, round(c.seconds, 6),
        [(s.file, s.base_offset, s.size, s.valid_bytes, s.first_invalid_position, s.batches, s.records, s.first_offset,
          s.last_offset, timestamp(s.first_timestamp), timestamp(s.max_timestamp), sorted(s.magic), sorted(s.codecs))
         for s in segs],
        *_judged_columns(c.judged),
    )


def _judged_columns(judged: Judged | None) -> tuple:
    loss = judged.loss if judged else None
    return (judged.starts if judged else True, loss.bytes_cut if loss else 0, loss.segments_deleted if loss else 0,
            loss.valid_records_dropped if loss else 0, loss.log_end_after if loss else None,
            judged.not_worked_out.why if judged and judged.not_worked_out else None)


def verdict_row(verdict: dict[str, Any]) -> tuple[Any, ...]:
    """A row of the verdicts table from a verdict's dict (`Verdict.to_dict` and its host)."""
    return _struct(verdict, VERDICTS)


def _struct(value: Any, kind: DataType) -> Any:
    """A dict's values as the tuple a struct of this schema takes, through arrays of them."""
    if isinstance(kind, ArrayType):
        return [_struct(v, kind.elementType) for v in value]
    if isinstance(kind, StructType):
        return tuple(_struct(value[f.name], f.dataType) for f in kind.fields)
    return value


def batch_rows(c: Checked) -> list[tuple]:
    rep = c.report
    return [(c.broker[0], c.item.log_dir, rep.topic, rep.partition, block, packed(keys))
            for block, keys in blocks(c.batches).items()]


def blocks(keys: list[BatchKey]) -> dict[int, list[BatchKey]]:
    """The keys by the block of BLOCK_OFFSETS offsets their batch starts in, each block's in file order."""
    out: dict[int, list[BatchKey]] = defaultdict(list)
    for key in keys:
        out[key[0] // BLOCK_OFFSETS].append(key)
    return out
