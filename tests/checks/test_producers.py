"""verify's producer checks (sequences, epochs, snapshots), open and hanging transactions, consumer offsets
going back, `logtool txn`, and KRaft snapshots walked as segments. Batches from kafka-python's and aiokafka's
builders (idempotent and transactional), markers by editing a built batch (fixtures.generator.marker_batch)."""
from __future__ import annotations

import json
import shutil
import struct
from pathlib import Path

import crc32c
import pytest
from click.testing import CliRunner
from conftest import SHARED, kafka_case, require
from support.offsets import offset_key, offset_value_v3
from support.producers import MINUTE, TS, batches, txn

from fixtures import generator as g
from logtool.checks.engine import Target
from logtool.checks.partition import check_partition
from logtool.cli import cli
from logtool.spark.pieces import check_piece, finish_pieces
from logtool.store.partition import Partition


def write(tmp: Path, entries: list[g.LogEntry], segment_bytes: int = 1 << 20, topic: str = "t") -> Path:
    return g.write_partition(tmp, topic, 0, entries, segment_bytes=segment_bytes).path


def verify(*args) -> tuple[int, dict]:
    r = CliRunner().invoke(cli, ["verify", "--format", "json", *map(str, args)], standalone_mode=False,
                           catch_exceptions=False)
    return r.return_value, json.loads(r.stdout)


def found(doc: dict, prefix: str = "LT6") -> list[tuple[str, int | None, str]]:
    """(name, offset, message) of every producer finding, partition and segment level."""
    out = []
    for p in doc["partitions"]:
        for f in [*p["findings"], *(f for s in p["segments"] for f in s["findings"])]:
            if f["code"].startswith(prefix):
                out.append((f["name"], f["offset"], f["message"]))
    return out


def names(doc: dict) -> list[tuple[str, int | None]]:
    return [(n, o) for n, o, _m in found(doc)]


# ------------------------------------------------------------------------------------ sequences and epochs

@pytest.mark.parametrize("segment_bytes", [1 << 20, 300], ids=["one segment", "a segment per batch"])
@pytest.mark.parametrize("library", ["kafka-python", "aiokafka"])
def test_sequences_that_follow_on_are_clean_and_a_gap_a_repeat_or_an_older_epoch_is_found(tmp_path, segment_bytes,
                                                                                          library):
    clean = batches(7, 0, 0, 0, library=library) + batches(7, 0, 6, 6, library=library) \
        + batches(8, 0, 0, 12, library=library)
    rc, doc = verify(write(tmp_path / "clean", clean, segment_bytes))
    assert rc == 0 and found(doc) == []

    gap = batches(7, 0, 0, 0, library=library) + batches(7, 0, 10, 6, library=library)
    rc, doc = verify(write(tmp_path / "gap", gap, segment_bytes))
    assert rc == 0  # informational: compaction and retention leave gaps too
    assert found(doc) == [("PRODUCER_SEQUENCE_GAP", 6, "producer 7 (epoch 0) jumps from sequence 5 (offset 5) to "
                                                       "10 at offset 6: 4 sequence number(s) are not in the log")]

    repeat = batches(7, 0, 0, 0, library=library) + batches(7, 0, 2, 6, n=1, library=library)
    rc, doc = verify(write(tmp_path / "repeat", repeat, segment_bytes))
    assert rc == 4 and names(doc) == [("PRODUCER_SEQUENCE_DUPLICATE", 6)]

    fenced = batches(7, 3, 0, 0, library=library) + batches(7, 2, 6, 6, n=1, library=library)
    rc, doc = verify(write(tmp_path / "fenced", fenced, segment_bytes))
    assert rc == 4 and names(doc) == [("PRODUCER_EPOCH_BACKWARDS", 6)]

    bumped = batches(7, 2, 40, 0, library=library) + batches(7, 3, 0, 6, library=library)
    rc, doc = verify(write(tmp_path / "bumped", bumped, segment_bytes))
    assert rc == 0 and found(doc) == []  # a new epoch starts its sequences afresh


def test_sequences_wrap_at_int32_max(tmp_path):
    wrap = batches(7, 0, 2**31 - 4, 0, n=2) + batches(7, 0, 0, 4, n=1)
    rc, doc = verify(write(tmp_path, wrap))
    assert rc == 0 and found(doc) == []


# ------------------------------------------------------------------------------------ transactions


def test_ended_transactions_are_clean_an_open_one_is_noted_an_old_open_one_is_hanging(tmp_path):
    # (commits: an abort needs its .txnindex entry, which the generator does not write)
    ended = txn(9, 1, 0, 0, TS, "commit") + txn(9, 1, 4, 5, TS + MINUTE, "commit")
    rc, doc = verify(write(tmp_path / "ended", ended))
    assert rc == 0 and found(doc) == []

    fresh = ended + txn(9, 1, 8, 10, TS + 2 * MINUTE, None) + batches(5, 0, 0, 14, ts=TS + 3 * MINUTE)
    rc, doc = verify(write(tmp_path / "fresh", fresh))
    assert rc == 0 and names(doc) == [("TRANSACTION_OPEN", 10)]

    stale = ended + txn(9, 1, 8, 10, TS + 2 * MINUTE, None) + batches(5, 0, 0, 14, ts=TS + 40 * MINUTE)
    path = write(tmp_path / "stale", stale)
    rc, doc = verify(path)
    assert rc == 4 and names(doc) == [("TRANSACTION_HANGING", 10)]
    message = found(doc)[0][2]
    assert "read_committed consumers cannot read past offset 10" in message
    assert message.endswith("kafka-transactions.sh --bootstrap-server HOST:PORT abort --topic t --partition 0 "
                            "--start-offset 10")
    rc, doc = verify(path, "--transaction-timeout", "1h")
    assert rc == 0 and names(doc) == [("TRANSACTION_OPEN", 10)]


def test_kafka_written_transactions_agree_with_kafkas_own_account():
    """v2-idempotent-txn: Kafka's own writer left the last transaction open ("the last transaction is left
    open"), its producer 3012 at offset 340, and every sequence follows on."""
    part = kafka_case("v2-idempotent-txn")
    assert "last transaction is left open" in json.loads((part.parent / "expected.json").read_text())["description"]
    rc, doc = verify(part)
    assert rc == 0 and names(doc) == [("TRANSACTION_OPEN", 340)]
    assert found(doc)[0][2].startswith("producer 3012 (epoch 1) has a transaction open since offset 340")


def test_a_split_partition_gives_the_same_producer_findings_as_one_walk(tmp_path):
    """The audit walks a large partition in pieces: findings across the cut come out as verify's."""
    entries = batches(7, 0, 0, 0) + batches(7, 0, 10, 6) + txn(9, 1, 0, 12, TS, None) \
        + batches(7, 2, 0, 16) + batches(7, 1, 6, 22, n=1) + batches(5, 0, 0, 24, ts=TS + 40 * MINUTE)
    path = write(tmp_path, entries, segment_bytes=400)
    part = Partition.from_dir(path)
    try:
        whole = check_partition(part, deep=False)
    finally:
        part.close()
    bases = [int(p.name[:20]) for p in sorted(path.glob("*.log"))]
    assert len(bases) >= 4
    pieces = [(0, bases[1]), (bases[1], bases[3]), (bases[3], None)]
    reports = [check_piece(Target(path), piece, deep=False) for piece in pieces]
    joined = finish_pieces(Target(path), reports)
    listed = lambda rep: sorted((f.name, f.offset, f.message) for f in rep.all_findings())  # noqa: E731
    assert [n for n, _o, _m in listed(whole) if n.startswith(("PRODUCER", "TRANSACTION"))] == \
        ["PRODUCER_EPOCH_BACKWARDS", "PRODUCER_SEQUENCE_GAP", "TRANSACTION_HANGING"]
    assert listed(joined) == listed(whole)


# ------------------------------------------------------------------------------------ producer snapshots

def snapshot(entries: list[tuple[int, int, int, int]]) -> bytes:
    """A producer-state snapshot (version 1) of (producer id, epoch, last sequence, last offset) entries."""
    body = struct.pack(">i", len(entries)) + b"".join(
        struct.pack(">qhiqiqiq", pid, epoch, seq, offset, 1, TS, -1, -1) for pid, epoch, seq, offset in entries)
    return struct.pack(">hI", 1, crc32c.crc32c(body)) + body


def test_a_snapshot_that_disagrees_with_the_log_it_summarises(tmp_path):
    entries = batches(7, 0, 0, 0) + batches(8, 2, 0, 6) + batches(7, 0, 6, 12)
    path = write(tmp_path, entries, segment_bytes=600)
    bases = [int(p.name[:20]) for p in sorted(path.glob("*.log"))]
    second = bases[1]
    part = Partition.from_dir(path)
    try:
        state = {(v.producer_id): (v.producer_epoch, v.last_sequence, v.last_offset)
                 for seg in part.segments if seg.base_offset < second for v in seg.walk()}
    finally:
        part.close()
    right = [(pid, *state[pid]) for pid in sorted(state)]
    (path / f"{second:020d}.snapshot").write_bytes(snapshot(right))
    rc, doc = verify(path)
    assert rc == 0 and found(doc) == []
    pid, epoch, seq, offset = right[0]
    (path / f"{second:020d}.snapshot").write_bytes(snapshot([(pid, epoch, seq + 2, offset + 2), *right[1:]]))
    rc, doc = verify(path)
    assert rc == 4 and names(doc) == [("PRODUCER_SNAPSHOT_MISMATCH", second)]
    assert f"producer {pid}: the snapshot says epoch {epoch}, last sequence {seq + 2}" in found(doc)[0][2]


@pytest.mark.slow
def test_real_brokers_logs_have_no_producer_warnings():
    """The brokers' own logs (idempotent producers are Kafka 3's default): no gap, repeat, older epoch,
    disagreeing snapshot or hanging transaction is read into them."""
    dirs = sorted({p.parent for root in (SHARED / "real", SHARED / "real-more") for p in require(root).rglob("*.log")})
    assert len(dirs) > 1000
    rc, doc = verify(*dirs)
    assert [f for f in found(doc) if f[0] != "PRODUCER_SEQUENCE_GAP"] == []


# ------------------------------------------------------------------------------------ consumer offsets

def commits(tmp: Path, offsets: list[int | None]) -> Path:
    pairs = [(offset_key("grp", "orders", 0), None if o is None else offset_value_v3(o, 0, "", TS)) for o in offsets]
    spec = g.BatchSpec(records=[[g.Record(k, v, TS + i)] for i, (k, v) in enumerate(pairs)], batches=len(pairs),
                       records_per_batch=1)
    return g.write_partition(tmp, "__consumer_offsets", 0, g.build_batches(spec), segment_bytes=200).path


def test_committed_offsets_going_back_are_noted_with_deep(tmp_path):
    back = commits(tmp_path / "back", [10, 20, 15, 30])
    rc, doc = verify(back, "--deep")
    assert rc == 0 and names(doc) == [("CONSUMER_OFFSET_BACKWARDS", 2)]
    assert found(doc)[0][2] == "group 'grp' commits offset 15 for orders-0 at offset 2, after committing 20 at " \
                               "offset 1: its consumers read 5 record(s) again"
    assert found(verify(back)[1]) == []  # a record-level check: --deep only
    rc, doc = verify(commits(tmp_path / "reset", [10, 20, None, 5, 6]), "--deep")
    assert found(doc) == []  # a tombstone (offsets deleted) starts afresh


# ------------------------------------------------------------------------------------ logtool txn

def txn_cmd(*args) -> tuple[int, dict]:
    r = CliRunner().invoke(cli, ["txn", "--format", "json", *map(str, args)], standalone_mode=False,
                           catch_exceptions=False)
    return r.return_value, json.loads(r.stdout)


def test_txn_tabulates_each_producers_transactions(tmp_path):
    entries = txn(9, 1, 0, 0, TS, "commit") + txn(9, 1, 4, 5, TS + MINUTE, "abort") \
        + txn(11, 0, 0, 10, TS + MINUTE, "commit") + txn(9, 1, 8, 15, TS + 2 * MINUTE, None) \
        + batches(5, 0, 0, 19, ts=TS + 40 * MINUTE)
    path = write(tmp_path, entries)
    rc, doc = txn_cmd(path)
    assert rc == 4 and doc["summary"] == {"partitions": 1, "producers": 2, "committed": 2, "aborted": 1, "open": 1,
                                          "hanging": 1}
    p9, p11 = doc["partitions"][0]["producers"]
    assert (p9["producer_id"], p9["committed"], p9["aborted"], p9["open_since_offset"], p9["hanging"]) == \
        (9, 1, 1, 15, True)
    assert (p9["committed_records"], p9["aborted_records"], p9["open_records"]) == (4, 4, 4)
    assert p9["duration_ms_min"] == p9["duration_ms_max"] == 100  # the first batch's first record to the marker
    assert (p11["committed"], p11["open_since_offset"], p11["hanging"]) == (1, None, False)
    rc, _doc = txn_cmd(path, "--transaction-timeout", "2h")
    assert rc == 0
    r = CliRunner().invoke(cli, ["txn", str(path)], standalone_mode=False, catch_exceptions=False)
    assert "hanging since offset 15" in r.stdout and "1 hanging" in r.stdout


# ------------------------------------------------------------------------------------ KRaft snapshots

def test_kraft_snapshots_are_walked_as_segments(tmp_path):
    real = sorted(p for p in require(SHARED / "real-more").rglob("__cluster_metadata-0/*.checkpoint"))
    assert real
    part_dir = tmp_path / "__cluster_metadata-0"
    part_dir.mkdir()
    shutil.copy(real[0], part_dir / real[0].name)
    rc, doc = verify(part_dir)
    assert rc == 0, doc
    rc, doc = verify(part_dir / real[0].name, "--deep")
    assert rc == 0 and doc["partitions"][0]["segments"][0]["batches"] > 1
    data = bytearray((part_dir / real[0].name).read_bytes())
    data[len(data) // 2] ^= 0x40
    (part_dir / real[0].name).write_bytes(bytes(data))
    rc, doc = verify(part_dir)
    crc = [f for f in doc["partitions"][0]["findings"] if f["name"] == "CRC_MISMATCH"]
    assert rc == 4 and [f["file"] for f in crc] == [real[0].name]
    assert crc[0]["message"].endswith("bytes after it cannot be read (recovery leaves snapshot files as they are)")
