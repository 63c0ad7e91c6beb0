"""Replica divergence, which no Kafka tool does offline: for every partition found in more than one log dir,
the first offset where the replicas' batch sequences part, from each replica's batch keys.

Replicas are the partition dirs of one (cluster id, topic, partition): log dirs of different clusters never
hold replicas of each other. Batches are compared by (base offset, last offset, CRC, leader epoch), from the
highest first offset of the replicas on (below it, retention simply kept more on some). At a batch start b,
the replicas that *cover* b (their last batch ends after it) must all hold a batch starting at b, and the
same one (the same ones, where a log repeats a base offset: damage within each replica, which replicas alike
share). The first b where they do not is the divergence point:
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
from typing import NamedTuple

from pyspark.sql import DataFrame, Row
from pyspark.sql import functions as F

from logtool.spark.rows import BLOCK_OUTCOME, DIVERGENCE
from logtool.spark.task import unpacked

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
    """One row per diverging partition (schema `rows.DIVERGENCE`), from the batch keys (a row per replica and
    block of offsets, `rows.BATCHES`) and the partitions table (whose first and last offsets are those of each replica's
    batches)."""
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
    # The replicas' keys side by side, block by block of offsets (`rows.BLOCK_OFFSETS`): compared batch by
    # batch in Python on the executors, each block on its own (a row per batch took the JVM's heap to its
    # limit at 6 million batches; a row per partition would grow with the partition). What a block finds is
    # put together per partition: the earliest parting point, and the batches where the shortest replicas end.
    held = (_keyed(batches).join(shared.select(*KEY), KEY).groupBy(*KEY, "block")
            .agg(F.collect_list(F.struct("log_dir", "keys")).alias("held")))
    spark = batches.sparkSession
    found = (spark.createDataFrame(held.join(shared, KEY).rdd.flatMap(block_outcome), BLOCK_OUTCOME)
             .groupBy(*KEY)
             .agg(F.min_by(F.struct(F.col("parting_offset").alias("base_offset"), F.col("parting").alias("holders")),
                           "parting_offset").alias("at"),  # a block without a parting point has a null offset,
                  F.first("tail", ignorenulls=True).alias("tail")))  # which min_by passes over
    return spark.createDataFrame(shared.join(found, KEY, "left").rdd.flatMap(describe), DIVERGENCE)


class _Holder(NamedTuple):
    """A replica's batch at an offset."""

    log_dir: str
    last_offset: int
    crc: int
    leader_epoch: int


def block_outcome(row: Row) -> list[tuple]:
    """What a block of a shared partition's batches shows, as a row of BLOCK_OUTCOME: the first batch start in
    it (from `start` on) where the replicas part, with the batches held there; else the batches at `shortest`,
    where the shortest replicas end, if it is in the block. At a batch start b the replicas covering b (their
    batches span it) must all hold a batch starting at b, and the same one."""
    if row.start is None or _alike(row):
        return []
    at: dict[int, list[_Holder]] = defaultdict(list)
    for h in row.held:
        for base, last, crc, epoch in unpacked(h.keys):
            if base >= row.start:
                at[base].append(_Holder(h.log_dir, last, crc, epoch))
    spans = [(r.first, r.end) for r in row.replicas if r.first is not None and r.end is not None]
    tail = None
    for b in sorted(at):
        holders = at[b]
        covering = sum(1 for first, end in spans if first <= b < end)
        held = _by_replica(holders)
        if len(held) < covering or len(set(held.values())) > 1:
            return [(row.cluster_id, row.topic, row.partition, b, holders, None)]
        if b == row.shortest:
            tail = holders
    return [(row.cluster_id, row.topic, row.partition, None, None, tail)] if tail is not None else []


def _by_replica(holders: list[_Holder]) -> dict[str, tuple[tuple[int, int, int], ...]]:
    """Each replica's batches starting at one offset, as (last offset, CRC, leader epoch) in its log's order:
    one as a rule; more where a log repeats a base offset (verify's OFFSET_NOT_INCREASING), which replicas
    holding the very same batches share without parting."""
    held: dict[str, list[tuple[int, int, int]]] = defaultdict(list)
    for h in holders:
        held[h.log_dir].append((h.last_offset, h.crc, h.leader_epoch))
    return {d: tuple(batches) for d, batches in held.items()}


def _alike(row: Row) -> bool:
    """Whether every replica holds the very same batches of the block over the very same span, each batch
    starting after the one before: nothing can part there, and no batch need be looked at (a healthy fleet's
    case)."""
    if len(row.held) != len(row.replicas) or len({h.keys for h in row.held}) != 1 \
            or len({(r.first, r.end) for r in row.replicas}) != 1:
        return False
    bases = [key[0] for key in unpacked(row.held[0].keys)]
    return all(a < b for a, b in zip(bases, bases[1:]))


def describe(row: Row) -> list[tuple]:
    """The divergence row of one shared partition from what its blocks found (`at`: the earliest parting
    point; `tail`), or none when its replicas agree."""
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
    versions: dict[tuple[tuple[int, int, int], ...], list[str]] = defaultdict(list)
    for d, batches in _by_replica(row.at.holders).items():
        versions[batches].append(d)
    lacking = sorted(set(covering) - {d for dirs in versions.values() for d in dirs})
    held = "; ".join(f"{', '.join(sorted(dirs))} hold " + ", then ".join(
        f"offsets {at}..{last} (leader epoch {epoch}, crc {crc:#010x})" for last, crc, epoch in batches)
        for batches, dirs in sorted(versions.items()))
    detail = held + (f"; {', '.join(lacking)} hold no batch starting at {at}" if lacking else "")
    # The groups at the parting point, ranked as Kafka would keep them (the module's docstring); a replica
    # repeating the base offset, by the highest leader epoch of its batches there.
    groups: list[tuple[tuple[float, int, int], list[str]]] = [
        ((max(epoch for _, _, epoch in batches), len(dirs), max(ends[d] for d in dirs)), dirs)
        for batches, dirs in versions.items()]
    if lacking:
        groups.append(((float("-inf"), len(lacking), max(ends[d] for d in lacking)), lacking))
    groups.sort(key=lambda g: g[0], reverse=True)
    tied = len(groups) > 1 and groups[0][0] == groups[1][0]
    affected = covering if tied else sorted(set(covering) - set(groups[0][1]))
    return ("missing-batch" if lacking else "different-batch"), at, affected, detail
