"""Replica divergence, which no Kafka tool does offline: for every partition found in more than one log dir,
the first offset where the replicas' batch sequences part, as joins and aggregations over per-batch rows.

Batches are compared by (base offset, last offset, CRC, leader epoch), from the highest first offset of the
replicas on (below it, retention simply kept more on some). At a batch start b, the replicas that *cover* b
(their last batch ends after it) must all hold a batch starting at b, and the same one. The first b where
they do not is the divergence point:
- `different-batch`: replicas hold different batches at b. Affected: the replicas without the batch of the
  highest leader epoch there, which Kafka's truncation would discard; all of them when no single batch wins.
- `missing-batch`: some replicas lack a batch the others hold at b. Affected: the ones holding it.
Where the sequences never part but end at different offsets, the partition is `shorter` at the first offset
the shortest replicas lack; they are the affected ones.
"""
from __future__ import annotations

from collections import defaultdict

from pyspark.sql import DataFrame, Row
from pyspark.sql import functions as F

from logtool.spark.rows import DIVERGENCE

KEY = ["topic", "partition"]


def _plain(partitions: DataFrame) -> DataFrame:
    """The rows of plain partition directories (not -delete, -future or -stray)."""
    return partitions.filter((F.col("dir_kind") == "plain") & F.col("topic").isNotNull())


def shared_partitions(partitions: DataFrame) -> DataFrame:
    """(topic, partition) of every partition found in more than one log dir."""
    return _plain(partitions).groupBy(*KEY).count().filter("count > 1").drop("count")


def divergence(batches: DataFrame, partitions: DataFrame) -> DataFrame:
    """One row per diverging partition (schema `rows.DIVERGENCE`), from the per-batch rows and the partitions
    table (whose first and last offsets are those of each replica's batches)."""
    # Per shared partition: its replicas with the offsets their batches span (null for an empty one), and
    # the highest first offset among them, where the comparison starts.
    span = F.struct("log_dir", F.col("first_offset").alias("first"), (F.col("last_offset") + 1).alias("end"))
    shared = (_plain(partitions).groupBy(*KEY)
              .agg(F.count("*").alias("n"), F.sort_array(F.collect_list(span)).alias("replicas"),
                   F.max("first_offset").alias("start"))
              .filter("n > 1").drop("n"))
    # Partitioned by (topic, partition) once: the join and both aggregations below then need no other shuffle.
    parting = (batches.repartition(*KEY).join(shared, KEY).filter(F.col("base_offset") >= F.col("start"))
               .groupBy(*KEY, "base_offset")
               .agg(F.first("replicas").alias("replicas"),
                    F.collect_list(F.struct("log_dir", "last_offset", "crc", "leader_epoch")).alias("holders"),
                    F.countDistinct("last_offset", "crc", "leader_epoch").alias("versions"))
               .filter((F.size("holders") < F.expr("size(filter(replicas, r -> r.end > base_offset))"))
                       | (F.col("versions") > 1))
               .groupBy(*KEY).agg(F.min_by(F.struct("base_offset", "holders"), "base_offset").alias("at")))
    # Only what diverges goes on to Python: a parting point, or replicas ending at different offsets.
    ends_differ = F.expr("size(array_distinct(transform(replicas, r -> coalesce(r.end, start)))) > 1")
    described = shared.join(parting, KEY, "left").filter(F.col("at").isNotNull() | ends_differ).rdd.flatMap(describe)
    return batches.sparkSession.createDataFrame(described, DIVERGENCE)


def describe(row: Row) -> list[tuple]:
    """The divergence row of one shared partition, or none when its replicas agree."""
    names = [r.log_dir for r in row.replicas]
    if row.at is not None:
        return [_parting(row, names)]
    if row.start is None:  # every replica is empty
        return []
    # An empty replica lacks everything from the first offset the others hold.
    ends = {r.log_dir: r.end if r.end is not None else row.start for r in row.replicas}
    low, high = min(ends.values()), max(ends.values())
    if low == high:
        return []
    short = sorted(d for d, end in ends.items() if end == low)
    return [(row.topic, row.partition, names, low, "shorter", short,
             f"{', '.join(short)} end before offset {low}; the longest replica goes on to offset {high - 1}")]


def _parting(row: Row, names: list[str]) -> tuple:
    at = row.at.base_offset
    covering = [r.log_dir for r in row.replicas if r.end is not None and r.end > at]
    versions: dict[tuple[int, int, int], list[str]] = defaultdict(list)
    for h in row.at.holders:
        versions[(h.last_offset, h.crc, h.leader_epoch)].append(h.log_dir)
    lacking = sorted(set(covering) - {d for dirs in versions.values() for d in dirs})
    held = "; ".join(f"{', '.join(sorted(dirs))} hold offsets {at}..{last} (leader epoch {epoch}, crc {crc:#010x})"
                     for (last, crc, epoch), dirs in sorted(versions.items()))
    detail = held + (f"; {', '.join(lacking)} hold no batch starting at {at}" if lacking else "")
    if len(versions) == 1:
        return row.topic, row.partition, names, at, "missing-batch", sorted(next(iter(versions.values()))), detail
    top = max(epoch for _, _, epoch in versions)
    winners = [dirs for (_, _, epoch), dirs in versions.items() if epoch == top]
    affected = sorted(set(covering) - set(winners[0])) if len(winners) == 1 else sorted(covering)
    return row.topic, row.partition, names, at, "different-batch", affected, detail
