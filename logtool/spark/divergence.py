"""Replica divergence, which no Kafka tool does offline: for every partition found in more than one log dir,
the first offset where the replicas' batch sequences part, as joins and aggregations over per-batch rows.

Replicas are the partition dirs of one (cluster id, topic, partition): log dirs of different clusters never
hold replicas of each other. Batches are compared by (base offset, last offset, CRC, leader epoch), from the
highest first offset of the replicas on (below it, retention simply kept more on some). At a batch start b,
the replicas that *cover* b (their last batch ends after it) must all hold a batch starting at b, and the
same one. The first b where they do not is the divergence point:
- `different-batch`: replicas hold different batches at b;
- `missing-batch`: some replicas hold no batch starting at b where the others hold one.
Where the sequences never part but end at different offsets, the partition is `shorter` at the first offset
the shortest replicas lack. A replica holding no batch takes no part in the comparison, but ends where its log
ends (its segments' base offsets say where: a KRaft node that fetched the leader's snapshot has an empty metadata
log starting at the snapshot's offset). `leader_epochs` gives each replica's leader epoch at the offset reported
(that of its batch starting there; none where it holds none), which for the `__cluster_metadata` logs of a
cluster's controllers and brokers is the raft epoch each was written in.

`affected` has one meaning for every kind: the replicas that differ from the one Kafka would keep. At the
divergence point that is the batch of the highest leader epoch (a replica holding none there ranks lowest),
then the batch most replicas hold, then the replicas whose log reaches furthest; for `shorter`, the longest
log. When two groups tie on all three, every covering replica is affected.
"""
from __future__ import annotations

from collections import defaultdict

from pyspark.sql import DataFrame, Row
from pyspark.sql import functions as F

from logtool.spark.rows import DIVERGENCE

KEY = ["cluster_id", "topic", "partition"]


def _plain(partitions: DataFrame) -> DataFrame:
    """The rows of plain partition directories (not -delete, -future or -stray)."""
    return _keyed(partitions.filter((F.col("dir_kind") == "plain") & F.col("topic").isNotNull()))


def _keyed(rows: DataFrame) -> DataFrame:
    # A partition dir given without its log dir has no cluster id: such dirs are compared with each other
    # (an empty key, as a join never matches a null one), and their rows say null again.
    return rows.withColumn("cluster_id", F.coalesce("cluster_id", F.lit("")))


def shared_partitions(partitions: DataFrame) -> DataFrame:
    """(cluster id, topic, partition) of every partition found in more than one log dir."""
    return _plain(partitions).groupBy(*KEY).count().filter("count > 1").drop("count")


def divergence(batches: DataFrame, partitions: DataFrame) -> DataFrame:
    """One row per diverging partition (schema `rows.DIVERGENCE`), from the per-batch rows and the partitions
    table (whose first and last offsets are those of each replica's batches)."""
    # Per shared partition: its replicas with the offsets their batches span, and the highest first offset
    # among them, where the comparison starts. A replica holding no batch starts nowhere (first null) and ends
    # at its log end offset: its first damaged segment's base offset, where recovery would cut it, else its last
    # segment's (an empty active segment: so a KRaft node that fetched the leader's snapshot starts its metadata
    # log at the snapshot's offset); null where it has no segment at all.
    empty_end = F.coalesce(
        F.expr("array_min(transform(filter(segments, s -> s.first_invalid_position is not null), s -> s.base_offset))"),
        F.expr("array_max(transform(segments, s -> s.base_offset))"))
    span = F.struct("log_dir", "node_id", F.col("first_offset").alias("first"),
                    F.coalesce(F.col("last_offset") + 1, empty_end).alias("end"))
    shared = (_plain(partitions).groupBy(*KEY)
              .agg(F.count("*").alias("n"), F.sort_array(F.collect_list(span)).alias("replicas"),
                   F.max("first_offset").alias("start"))
              .filter("n > 1").drop("n")
              .withColumn("shortest", F.expr("array_min(transform(replicas, r -> coalesce(r.end, start)))")))
    # Partitioned by (cluster id, topic, partition) once: the join and both aggregations below then need no
    # other shuffle. At each batch start: whether the replicas part there; and the batches at the first offset
    # the shortest replicas lack, for the leader epochs of a `shorter` partition.
    covering = "size(filter(replicas, r -> r.first <= base_offset and r.end > base_offset))"
    parts = (F.size("holders") < F.expr(covering)) | (F.col("versions") > 1)
    parting_offset = F.when(F.col("parts"), F.col("base_offset"))  # null elsewhere: min_by passes it over
    parting = (_keyed(batches).repartition(*KEY).join(shared, KEY).filter(F.col("base_offset") >= F.col("start"))
               .groupBy(*KEY, "base_offset")
               .agg(F.first("replicas").alias("replicas"), F.first("shortest").alias("shortest"),
                    F.collect_list(F.struct("log_dir", "last_offset", "crc", "leader_epoch")).alias("holders"),
                    F.countDistinct("last_offset", "crc", "leader_epoch").alias("versions"))
               .withColumn("parts", parts)
               .filter(F.col("parts") | (F.col("base_offset") == F.col("shortest")))
               .groupBy(*KEY)
               .agg(F.min_by(F.struct("base_offset", "holders"), parting_offset).alias("at"),
                    F.first(F.when(~F.col("parts"), F.col("holders")), ignorenulls=True).alias("tail")))
    # Only what diverges goes on to Python: a parting point, or replicas ending at different offsets.
    ends_differ = F.expr("size(array_distinct(transform(replicas, r -> coalesce(r.end, start)))) > 1")
    described = shared.join(parting, KEY, "left").filter(F.col("at").isNotNull() | ends_differ).rdd.flatMap(describe)
    return batches.sparkSession.createDataFrame(described, DIVERGENCE)


def describe(row: Row) -> list[tuple]:
    """The divergence row of one shared partition, or none when its replicas agree."""
    names = [r.log_dir for r in row.replicas]
    if row.at is not None:
        kind, at, affected, detail = _parting(row)
        holders = row.at.holders
    elif row.start is None:  # no replica holds a batch
        return []
    else:
        # A replica without segments lacks everything from the first offset the others hold.
        ends = {r.log_dir: r.end if r.end is not None else row.start for r in row.replicas}
        at, high = min(ends.values()), max(ends.values())
        if at == high:
            return []
        kind, affected = "shorter", sorted(d for d, end in ends.items() if end == at)
        detail = f"{', '.join(affected)} end before offset {at}; the longest replica goes on to offset {high - 1}"
        holders = row.tail or []  # the batches at the first offset the shortest lack, where the others hold one
    nodes = {r.log_dir: r.node_id for r in row.replicas}
    epochs = {h.log_dir: h.leader_epoch for h in holders}
    return [(row.cluster_id or None, row.topic, row.partition, names, at, kind, affected, [nodes[d] for d in affected],
             detail, [epochs.get(d) for d in names])]


def _parting(row: Row) -> tuple[str, int, list[str], str]:
    """(kind, offset, affected, detail) where the replicas' batches part."""
    at = row.at.base_offset
    ends = {r.log_dir: r.end for r in row.replicas}
    covering = sorted(r.log_dir for r in row.replicas if r.first is not None and r.first <= at < r.end)
    versions: dict[tuple[int, int, int], list[str]] = defaultdict(list)
    for h in row.at.holders:
        versions[(h.last_offset, h.crc, h.leader_epoch)].append(h.log_dir)
    lacking = sorted(set(covering) - {d for dirs in versions.values() for d in dirs})
    held = "; ".join(f"{', '.join(sorted(dirs))} hold offsets {at}..{last} (leader epoch {epoch}, crc {crc:#010x})"
                     for (last, crc, epoch), dirs in sorted(versions.items()))
    detail = held + (f"; {', '.join(lacking)} hold no batch starting at {at}" if lacking else "")
    # The groups at the parting point, ranked as Kafka would keep them (the module's docstring).
    groups: list[tuple[tuple[float, int, int], list[str]]] = [
        ((epoch, len(dirs), max(ends[d] for d in dirs)), dirs) for (_, _, epoch), dirs in versions.items()]
    if lacking:
        groups.append(((float("-inf"), len(lacking), max(ends[d] for d in lacking)), lacking))
    groups.sort(key=lambda g: g[0], reverse=True)
    tied = len(groups) > 1 and groups[0][0] == groups[1][0]
    affected = covering if tied else sorted(set(covering) - set(groups[0][1]))
    return ("missing-batch" if lacking else "different-batch"), at, affected, detail
