"""The replica comparison on its own, without a JVM: rows as the divergence job hands them to Python (a shared
partition's replicas with their spans, the comparison's start and shortest end, each replica's packed batch
keys), each case a rule of spark/divergence.py's docstring. The audit's tests hold the whole job to the fleet's
planted divergences and to the metadata logs of real KRaft nodes."""
from __future__ import annotations

from pyspark.sql import Row

from logtool.spark.divergence import block_outcome, describe
from logtool.spark.rows import BLOCK_OFFSETS, blocks
from logtool.spark.task import packed, unpacked

A, B, C = "/d/broker-0", "/d/broker-1", "/d/broker-2"
NODES = {A: 0, B: 1, C: 2}


def _key(base: int, epoch: int = 0, crc: int | None = None) -> tuple[int, int, int, int]:
    """A batch of offsets base..base+2; its CRC follows its offset unless given."""
    return (base, base + 2, crc if crc is not None else 1000 + base, epoch)


def _row(held: dict[str, list[tuple[int, int, int, int]]], ends: dict[str, int] | None = None) -> list[tuple]:
    """describe's rows of a shared partition: a replica's span is its batches' (first, last + 1); one without
    batches starts nowhere and ends where `ends` says. Its keys go block by block (rows.blocks) through
    block_outcome, whose outcomes are put together as the job's aggregation does (`_together`)."""
    ends = ends or {}
    replicas = sorted((d, NODES[d], keys[0][0] if keys else None, keys[-1][1] + 1 if keys else ends.get(d))
                      for d, keys in held.items())
    firsts = [first for _, _, first, _ in replicas if first is not None]
    start = max(firsts) if firsts else None
    ends_or_start = [end if end is not None else start for *_, end in replicas]
    shared = dict(cluster_id="c", topic="t", partition=0,
                  replicas=[Row(log_dir=d, node_id=n, first=f, end=e) for d, n, f, e in replicas],
                  start=start, shortest=min(ends_or_start) if start is not None else None)
    by_block: dict[int, list[Row]] = {}
    for d, keys in held.items():
        for block, in_block in blocks(keys).items():
            by_block.setdefault(block, []).append(Row(log_dir=d, keys=packed(in_block)))
    found = [o for block, rows in sorted(by_block.items()) for o in block_outcome(Row(**shared, held=rows))]
    return describe(Row(**shared, **_together(found)))


def _together(found: list[tuple]) -> dict:
    """What the job's aggregation makes of a partition's block outcomes (BLOCK_OUTCOME rows): the parting point
    of least offset, and the tail of the block that has one."""
    parting = min((f for f in found if f[3] is not None), key=lambda f: f[3], default=None)
    tails = [f[5] for f in found if f[5] is not None]
    return {"at": Row(base_offset=parting[3], holders=parting[4]) if parting else None,
            "tail": tails[0] if tails else None}


def _one(rows: list[tuple]) -> dict:
    (out,) = rows
    return dict(zip(("cluster_id", "topic", "partition", "replicas", "offset", "kind", "affected", "affected_nodes",
                     "detail", "leader_epochs"), out))


SAME = [_key(0), _key(3), _key(6)]


def test_keys_travel_packed_and_come_back_as_they_were():
    keys = [_key(0), (2**62, 2**62 + 5, 0xFFFFFFFF, -1), (-1, 7, 0, 2**31 - 1)]
    assert len(packed(keys)) == 32 * len(keys)
    assert unpacked(packed(keys)) == keys and unpacked(packed([])) == []


def test_replicas_holding_the_same_batches_do_not_diverge():
    assert _row({A: SAME, B: SAME, C: SAME}) == []


def test_what_retention_deleted_below_the_highest_first_offset_is_not_compared():
    assert _row({A: SAME, B: SAME[1:], C: [(0, 2, 5, 0), *SAME[1:]]}) == []


def test_a_different_batch_held_by_one_replica_affects_that_replica():
    row = _one(_row({A: SAME, B: [_key(0), _key(3, crc=7), _key(6)], C: SAME}))
    assert (row["offset"], row["kind"], row["affected"], row["affected_nodes"]) == (3, "different-batch", [B], [1])
    assert row["leader_epochs"] == [0, 0, 0] and "crc 0x00000007" in row["detail"]


def test_the_batch_of_the_higher_leader_epoch_is_the_one_kept_even_against_the_majority():
    row = _one(_row({A: SAME, B: [_key(0), _key(3, epoch=1), _key(6, epoch=1)], C: SAME}))
    assert (row["offset"], row["kind"], row["affected"], row["leader_epochs"]) == (3, "different-batch", [A, C],
                                                                                    [0, 1, 0])


def test_a_replica_covering_an_offset_without_a_batch_starting_there_is_missing_it():
    row = _one(_row({A: SAME, B: [_key(0), (3, 8, 9, 0)], C: SAME}))
    # B's batch 3..8 differs at 3; a replica lacking a start inside what it covers is `missing-batch`
    assert row["kind"] == "different-batch" and row["affected"] == [B]
    row = _one(_row({A: SAME, B: [_key(0), _key(6)], C: SAME}))
    assert (row["offset"], row["kind"], row["affected"]) == (3, "missing-batch", [B])
    assert row["leader_epochs"] == [0, None, 0] and f"{B} hold no batch starting at 3" in row["detail"]


def test_a_replica_ending_early_is_shorter_at_the_first_offset_it_lacks():
    row = _one(_row({A: SAME, B: SAME[:2], C: SAME}))
    assert (row["offset"], row["kind"], row["affected"], row["affected_nodes"]) == (6, "shorter", [B], [1])
    assert row["leader_epochs"] == [0, None, 0]  # the others' batches at offset 6


def test_a_replica_holding_no_batch_ends_where_its_log_ends():
    row = _one(_row({A: SAME, B: [], C: SAME}, ends={B: 3}))
    assert (row["offset"], row["kind"], row["affected"]) == (3, "shorter", [B])
    assert _row({A: SAME, B: [], C: SAME}, ends={B: 9}) == []  # an empty log at the others' end


def test_replicas_with_no_batch_at_all_are_not_compared():
    assert _row({A: [], B: []}, ends={A: 0, B: 5}) == []


def test_two_groups_tied_on_every_rank_make_every_covering_replica_affected():
    row = _one(_row({A: SAME, B: [_key(0), _key(3, crc=7), _key(6)]}))
    assert row["kind"] == "different-batch" and row["affected"] == [A, B]


def test_replicas_alike_whose_batches_repeat_a_base_offset_do_not_diverge():
    """A log repeating a base offset (verify's OFFSET_NOT_INCREASING) is damage within each replica; replicas
    holding the very same batches there do not part (the shortcut for alike replicas takes only batches in
    increasing order, so these are compared replica by replica)."""
    twice = [_key(0), _key(3), _key(3, crc=9), _key(6)]
    assert _row({A: twice, B: twice, C: twice}) == []


def test_replicas_part_at_a_repeated_base_offset_where_their_batches_there_differ():
    twice = [_key(0), _key(3), _key(3, crc=9), _key(6)]
    once = [_key(0), _key(3), _key(6)]
    row = _one(_row({A: twice, B: twice, C: once}))
    assert (row["offset"], row["kind"], row["affected"]) == (3, "different-batch", [C])
    assert row["detail"] == ("/d/broker-2 hold offsets 3..5 (leader epoch 0, crc 0x000003eb); /d/broker-0, "
                             "/d/broker-1 hold offsets 3..5 (leader epoch 0, crc 0x000003eb), then offsets 3..5 "
                             "(leader epoch 0, crc 0x00000009)")


# Past one block of offsets: batches of 100 offsets, 0 to 199,900 (four blocks).
LONG = [(base, base + 99, 1000 + base, 0) for base in range(0, 200_000, 100)]


def test_a_partition_s_batches_are_compared_block_by_block_and_the_earliest_parting_wins():
    assert len(blocks(LONG)) == 4 and max(len(keys) for keys in blocks(LONG).values()) <= BLOCK_OFFSETS
    late = [k if k[0] != 150_000 else (150_000, 150_099, 7, 0) for k in LONG]
    row = _one(_row({A: LONG, B: late, C: LONG}))
    assert (row["offset"], row["kind"], row["affected"]) == (150_000, "different-batch", [B])
    early = [k if k[0] != 70_000 else (70_000, 70_099, 7, 0) for k in late]  # and one a block before
    assert _one(_row({A: LONG, B: early, C: LONG}))["offset"] == 70_000


def test_where_a_long_replica_ends_early_the_tail_comes_from_its_block():
    row = _one(_row({A: LONG, B: LONG[:1500], C: LONG}))  # B ends at offset 150,000, in the third block
    assert (row["offset"], row["kind"], row["affected"], row["leader_epochs"]) == (150_000, "shorter", [B],
                                                                                    [0, None, 0])
