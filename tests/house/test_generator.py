"""Tests of the independent fixture writer ``fixtures.generator``.

What it writes is read back with kafka-python's own reader (``kafka.record.MemoryRecords``), and its
index writer is compared with the indexes Apache Kafka itself rebuilt for the shared Kafka-written logs.
"""

from __future__ import annotations

import base64
import hashlib
import json
import struct
from dataclasses import dataclass
from pathlib import Path

import pytest
from kafka.record import MemoryRecords

from fixtures import generator as g

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "fixtures" / "sample-logdir"
KAFKA_WRITTEN = REPO.parent / "shared" / "fixtures" / "kafka-written"  # required: CI puts shared/ beside the checkout

SUPPORTED = [
    (library, magic, codec)
    for library in g.LIBRARIES
    for magic in (0, 1, 2)
    for codec in g.CODEC_IDS
    if not (codec == "zstd" and magic < 2) and not (codec == "lz4" and magic == 0)
]


@dataclass
class ReadBatch:
    """One log entry as kafka-python reads it, with its position in the segment file."""

    position: int
    size: int
    crc_ok: bool
    codec: int
    last_offset: int
    max_timestamp: int | None  # None when kafka-python has no public accessor (v0/v1 wrappers)
    records: list


def read_log(data: bytes) -> tuple[list[ReadBatch], int]:
    """All complete entries of a ``.log`` file and the number of bytes they span."""
    reader = MemoryRecords(data)
    batches = []
    position = 0
    while reader.has_next():
        batch = reader.next_batch()
        crc_ok = batch.validate_crc()  # before iterating: iteration swaps in the decompressed buffer
        records = list(batch)
        if batch.magic == 2:
            last_offset, max_timestamp = batch.last_offset, batch.max_timestamp
        else:  # a legacy entry's offset is the last offset it covers
            last_offset = batch.base_offset
            max_timestamp = None if batch.compression_type else _legacy_timestamp(records[0])
        batches.append(
            ReadBatch(
                position, batch.size_in_bytes, crc_ok, batch.compression_type,
                last_offset, max_timestamp, records,
            )
        )
        position += batch.size_in_bytes
    return batches, reader.valid_bytes()


def _legacy_timestamp(record) -> int:
    return -1 if record.timestamp is None else record.timestamp


def read_partition(written: g.WrittenPartition) -> dict[int, list[ReadBatch]]:
    segments = {}
    for base in written.segment_base_offsets:
        data = g.segment_file(written.path, base, ".log").read_bytes()
        batches, valid = read_log(data)
        assert valid == len(data), f"segment {base} has a torn tail"
        segments[base] = batches
    return segments


def expected_offsets(spec: g.BatchSpec, first_offset: int) -> list[int]:
    offsets: list[int] = []
    next_offset = first_offset
    for index, batch in enumerate(g.generate_records(spec)):
        base = next_offset + spec.gaps.get(index, 0)
        offsets += [base + i * spec.offset_stride for i in range(len(batch))]
        next_offset = offsets[-1] + 1
    return offsets


def kafka_index_rule(batches: list[ReadBatch], interval: int) -> tuple[list, list]:
    """FORMAT.md §7.3 recovery rule, restated from kafka-python's view of the batches."""
    offset_entries, time_entries = [], []
    last_indexed, max_ts, max_ts_offset = 0, -1, -1

    def append_time() -> None:
        if max_ts > (time_entries[-1][0] if time_entries else -1):
            time_entries.append((max_ts, max_ts_offset))

    for batch in batches:
        if batch.max_timestamp > max_ts:
            max_ts, max_ts_offset = batch.max_timestamp, batch.last_offset
        if batch.position - last_indexed > interval:
            offset_entries.append((batch.last_offset, batch.position))
            append_time()
            last_indexed = batch.position
    append_time()
    return offset_entries, time_entries


def index_entries(partition_dir: Path, base: int) -> tuple[list, list]:
    """``(offset, position)`` and ``(timestamp, offset)`` entries of a segment's index files."""
    index = g.segment_file(partition_dir, base, ".index").read_bytes()
    time_index = g.segment_file(partition_dir, base, ".timeindex").read_bytes()
    offsets = [(base + rel, pos) for rel, pos in struct.iter_unpack(">ii", index)]
    times = [(ts, base + rel) for ts, rel in struct.iter_unpack(">qi", time_index)]
    return offsets, times


def rich_spec(library: str, magic: int, codec: str) -> g.BatchSpec:
    return g.BatchSpec(
        library=library, magic=magic, codec=codec, batches=12, records_per_batch=7,
        null_key_every=5, null_value_every=11, empty_value_every=6,
        headers_per_record=2 if magic == 2 else 0, timestamp_jitter_ms=40,
        offset_stride=1 if magic < 2 and codec == "none" else 2, gaps={3: 5, 7: 1}, seed=7,
    )


# --- building and layout --------------------------------------------------------------------------


@pytest.mark.parametrize(("library", "magic", "codec"), SUPPORTED)
def test_round_trip_through_kafka_python(tmp_path: Path, library: str, magic: int, codec: str) -> None:
    spec = rich_spec(library, magic, codec)
    segment_bytes = 2000
    written = g.write_partition(
        tmp_path, "t", 3, g.build_batches(spec, first_offset=1000), segment_bytes=segment_bytes
    )
    segments = read_partition(written)

    records = [r for batches in segments.values() for b in batches for r in b.records]
    assert [r.offset for r in records] == expected_offsets(spec, 1000)
    expected = [r for batch in g.generate_records(spec) for r in batch]
    assert [(r.key, r.value) for r in records] == [(e.key, e.value) for e in expected]
    if magic >= 1:
        assert [r.timestamp for r in records] == [e.timestamp for e in expected]
    if magic == 2:
        assert [tuple(r.headers) for r in records] == [e.headers for e in expected]

    for base, batches in segments.items():
        assert all(b.crc_ok for b in batches)
        assert {b.codec for b in batches} == {g.CODEC_IDS[codec]}
        assert batches[0].records[0].offset == base  # segment named after its first offset
        size = g.segment_file(written.path, base, ".log").stat().st_size
        assert size <= segment_bytes or len(batches) == 1
    assert written.log_end_offset == records[-1].offset + 1


def test_uncompressed_legacy_batches_become_one_entry_per_record() -> None:
    entries = g.build_batches(g.BatchSpec(magic=1, batches=2, records_per_batch=3))
    assert [e.first_offset for e in entries] == [0, 1, 2, 3, 4, 5]


def test_explicit_records_are_written_as_given(tmp_path: Path) -> None:
    records = [
        [g.Record(None, b"", 5, (("k", None),)), g.Record(b"a", None, 9)],
        [g.Record(b"b", b"x" * 3, 7, (("h", b"v"), ("h", b"w")))],
    ]
    spec = g.BatchSpec(library="aiokafka", records=records)
    written = g.write_partition(tmp_path, "t", 0, g.build_batches(spec))
    read = [r for b in read_partition(written)[0] for r in b.records]
    assert [(r.offset, r.key, r.value, r.timestamp, list(r.headers)) for r in read] == [
        (0, None, b"", 5, [("k", None)]),
        (1, b"a", None, 9, []),
        (2, b"b", b"xxx", 7, [("h", b"v"), ("h", b"w")]),
    ]


@pytest.mark.parametrize("library", g.LIBRARIES)
@pytest.mark.parametrize("transactional", [False, True])
def test_producer_fields(tmp_path: Path, library: str, transactional: bool) -> None:
    producer = g.Producer(77, producer_epoch=3, base_sequence=10, transactional=transactional)
    spec = g.BatchSpec(library=library, codec="lz4", batches=4, records_per_batch=5, producer=producer)
    written = g.write_partition(tmp_path, "t", 0, g.build_batches(spec))
    reader = MemoryRecords(g.segment_file(written.path, 0, ".log").read_bytes())
    batches = [reader.next_batch() for _ in range(4)]
    assert [b.base_sequence for b in batches] == [10, 15, 20, 25]
    states = {(b.producer_id, b.producer_epoch, b.is_transactional) for b in batches}
    assert states == {(77, 3, transactional)}
    assert not any(b.is_control_batch for b in batches)


def test_leader_epoch_is_stamped_and_checkpointed(tmp_path: Path) -> None:
    spec = g.BatchSpec(library="aiokafka", batches=2, leader_epoch=4)  # aiokafka itself writes -1
    entries = g.build_batches(spec, first_offset=50)
    assert {e.header.leader_epoch for e in entries} == {4}
    written = g.write_partition(tmp_path, "t", 0, entries)
    assert (written.path / "leader-epoch-checkpoint").read_text() == "0\n1\n4 50\n"


def test_large_value_gets_a_segment_of_its_own(tmp_path: Path) -> None:
    spec = g.BatchSpec(batches=5, records_per_batch=2, large_value_every=5, large_value_bytes=1 << 20)
    written = g.write_partition(tmp_path, "t", 0, g.build_batches(spec), segment_bytes=4096)
    segments = read_partition(written)
    # Records 5 and 10 (batches 2 and 4) are large: each such batch overflows a segment by itself.
    big = [
        base for base, batches in segments.items()
        if any(len(r.value) == 1 << 20 for b in batches for r in b.records)
    ]
    assert big == [4, 8] and all(len(segments[base]) == 1 for base in big)
    assert written.segment_base_offsets == (0, 4, 6, 8)


def test_empty_partition_has_one_empty_segment(tmp_path: Path) -> None:
    written = g.write_partition(tmp_path, "t", 0, [])
    assert written.segment_base_offsets == (0,) and written.log_end_offset == 0
    assert sorted(p.name for p in written.path.iterdir()) == [
        "00000000000000000000.index", "00000000000000000000.log", "00000000000000000000.timeindex",
        "partition.metadata",
    ]


@pytest.mark.parametrize(
    "kwargs",
    [
        {"magic": 1, "codec": "zstd"},
        {"magic": 0, "codec": "lz4"},
        {"magic": 1, "headers_per_record": 1},
        {"magic": 0, "producer": g.Producer(1)},
        {"magic": 3},
        {"codec": "brotli"},
        {"offset_stride": 0},
    ],
    ids=lambda kwargs: ",".join(f"{k}={v}" for k, v in kwargs.items()),
)
def test_unbuildable_specs_are_refused(kwargs: dict) -> None:
    with pytest.raises(ValueError):
        g.BatchSpec(**kwargs)


def test_relocation_refuses_v0_compressed_wrappers() -> None:
    (entry,) = g.build_batches(g.BatchSpec(magic=0, codec="gzip", batches=1))
    with pytest.raises(ValueError):
        entry.relocated(10)


@pytest.mark.parametrize(("magic", "codec"), [(2, "snappy"), (1, "gzip"), (1, "none")])
def test_relocation_keeps_entries_valid(magic: int, codec: str) -> None:
    entries = g.build_batches(g.BatchSpec(magic=magic, codec=codec, batches=1, records_per_batch=4))
    moved = b"".join(e.relocated(e.first_offset + 500).data for e in entries)
    batches, _ = read_log(moved)
    assert all(b.crc_ok for b in batches)
    assert [r.offset for b in batches for r in b.records] == [500, 501, 502, 503]


# --- indexes --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("library", "magic", "codec"),
    [s for s in SUPPORTED if s[1] == 2 or s[2] == "none"],  # kafka-python shows no wrapper timestamp
)
def test_index_files_follow_kafkas_rule(tmp_path: Path, library: str, magic: int, codec: str) -> None:
    spec = rich_spec(library, magic, codec)
    interval = 300
    written = g.write_partition(
        tmp_path, "t", 0, g.build_batches(spec), segment_bytes=3000, index_interval_bytes=interval
    )
    for base, batches in read_partition(written).items():
        offsets, times = index_entries(written.path, base)
        assert (offsets, times) == kafka_index_rule(batches, interval)
        assert offsets, "the test should exercise non-empty indexes"
        assert all(pos > 0 for _, pos in offsets)  # the first entry is never indexed
        assert all(a[0] < b[0] for a, b in zip(times, times[1:]))
        if magic > 0:  # the closing entry records the segment's max timestamp
            assert times[-1][0] == max(b.max_timestamp for b in batches)


def kafka_cases() -> list[Path]:
    if not KAFKA_WRITTEN.is_dir():
        return []
    return sorted(p for p in KAFKA_WRITTEN.iterdir() if (p / "expected.json").is_file())


@pytest.mark.parametrize("case", kafka_cases(), ids=lambda p: p.name)
def test_indexes_equal_what_kafka_rebuilt(case: Path) -> None:
    expected = json.loads((case / "expected.json").read_text())
    partition_dir = case / expected["partitionDir"]
    for segment in expected["segmentRecover"]:
        base = segment["baseOffset"]
        log = g.segment_file(partition_dir, base, ".log").read_bytes()[: segment["validSize"]]
        indexer = g.index_segment(log, base)
        assert [list(e) for e in indexer.offset_entries] == segment["rebuiltOffsetIndex"]
        assert [list(e) for e in indexer.time_entries] == segment["rebuiltTimeIndex"]
        assert hashlib.sha256(indexer.offset_index).hexdigest() == segment["indexSha256AfterClose"]
        assert hashlib.sha256(indexer.time_index).hexdigest() == segment["timeIndexSha256AfterClose"]


# --- log dirs, determinism, the sample ------------------------------------------------------------


def tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_same_call_writes_the_same_bytes(tmp_path: Path) -> None:
    g.write_sample(tmp_path / "a")
    g.write_sample(tmp_path / "b")
    assert tree(tmp_path / "a") == tree(tmp_path / "b")


def test_log_dir_files(tmp_path: Path) -> None:
    written = g.write_log_dir(tmp_path, g.sample_partitions())
    meta = (tmp_path / "meta.properties").read_text().splitlines()
    assert meta[0] == "#" and meta[1].startswith("#")
    props = dict(line.split("=", 1) for line in meta[2:])
    assert props["version"] == "1" and props["node.id"] == "1"
    assert len(base64.urlsafe_b64decode(props["cluster.id"] + "==")) == 16

    ends = {f"{w.topic} {w.partition}": w for w in written}
    replication = (tmp_path / "replication-offset-checkpoint").read_text().splitlines()
    assert replication[:2] == ["0", "4"]
    assert {line.rsplit(" ", 1)[0]: int(line.rsplit(" ", 1)[1]) for line in replication[2:]} == {
        key: w.log_end_offset for key, w in ends.items()
    }
    recovery = (tmp_path / "recovery-point-offset-checkpoint").read_text()
    clicks = ends["clicks 2"]
    assert f"clicks 2 {clicks.segment_base_offsets[-1]}\n" in recovery  # not flushed: crash state
    assert (tmp_path / "log-start-offset-checkpoint").read_text().startswith("0\n4\n")

    for w in written:
        metadata = (w.path / "partition.metadata").read_text()
        assert metadata == f"version: 0\ntopic_id: {g.topic_id(w.topic)}"
        assert len(g.topic_id(w.topic)) == 22
        has_v2 = w.topic != "legacy-events"
        assert (w.path / "leader-epoch-checkpoint").exists() == has_v2


def test_committed_sample_is_healthy_except_clicks() -> None:
    partitions = sorted(p.name for p in SAMPLE.iterdir() if p.is_dir())
    assert partitions == ["clicks-2", "legacy-events-0", "orders-0", "payments-1"]
    for name in ("orders-0", "payments-1", "legacy-events-0"):
        logs = sorted((SAMPLE / name).glob("*.log"))
        assert len(logs) > 1, "healthy partitions have several segments"
        for log in logs:
            data = log.read_bytes()
            batches, valid = read_log(data)
            assert valid == len(data) and all(b.crc_ok for b in batches), log
    assert sum(p.stat().st_size for p in SAMPLE.rglob("*") if p.is_file()) < 300_000


def test_committed_sample_clicks_damage() -> None:
    logs = sorted((SAMPLE / "clicks-2").glob("*.log"))
    for log in logs[:-1]:
        batches, valid = read_log(log.read_bytes())
        assert valid == log.stat().st_size and all(b.crc_ok for b in batches)

    last = logs[-1]
    damaged = last.read_bytes()
    batches, valid = read_log(damaged)
    assert valid < len(damaged)  # the torn last batch is not a complete entry
    assert [b.crc_ok for b in batches].count(False) == 1
    bad = next(i for i, b in enumerate(batches) if not b.crc_ok)
    assert 0 < bad < len(batches)  # in the middle, not the first batch

    # Against the intact bytes: exactly one flipped bit, inside the last record's value of the bad batch.
    clicks = next(p for p in g.sample_partitions() if p.topic == "clicks")
    base = int(last.name.split(".")[0])
    intact = b"".join(e.data for e in clicks.entries if e.first_offset >= base)
    assert intact.startswith(damaged[: batches[bad].position])
    differing = [i for i in range(len(damaged)) if damaged[i] != intact[i]]
    assert len(differing) == 1 and bin(damaged[differing[0]] ^ intact[differing[0]]).count("1") == 1
    intact_batches, _ = read_log(intact)
    values = [r.value for r in batches[bad].records]
    intact_values = [r.value for r in intact_batches[bad].records]
    assert values[:-1] == intact_values[:-1] and values[-1] != intact_values[-1]
    assert len(damaged) == valid + (len(intact) - valid) // 2  # last batch cut in half

    offsets, _ = index_entries(SAMPLE / "clicks-2", base)
    assert all(pos < valid for _, pos in offsets)


# --- big files ------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("codec", ["none", "zstd"])
def test_big_file(tmp_path: Path, codec: str) -> None:
    target = 3_000_000
    written = g.write_big(tmp_path / "bench-0", target, codec)
    assert written.segment_base_offsets == (0,)
    log = g.segment_file(written.path, 0, ".log")
    batches, valid = read_log(log.read_bytes())
    largest = max(len(t.data) for t in g.big_templates(codec))
    assert target - largest < valid == log.stat().st_size <= target
    assert all(b.crc_ok for b in batches)
    offsets = [r.offset for b in batches for r in b.records]
    assert offsets == list(range(written.log_end_offset))
    assert index_entries(written.path, 0) == kafka_index_rule(batches, g.DEFAULT_INDEX_INTERVAL_BYTES)


def test_big_needs_a_partition_directory_name(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        g.write_big(tmp_path / "bench", 1000)


def test_fleet_command_writes_the_readme_audit_example(tmp_path):
    """README's audit example reads fleet/ as `python -m fixtures.fleet fleet` writes it."""
    from fixtures import fleet
    assert fleet.main([str(tmp_path / "fleet")]) == 0
    assert sorted(p.name for p in (tmp_path / "fleet").iterdir()) == ["broker-0", "broker-1", "broker-2"]
    assert (tmp_path / "fleet" / "broker-1" / "orders-0").is_dir()
    with pytest.raises(SystemExit):
        fleet.main([str(tmp_path / "fleet")])  # never writes over what is there
