"""Directory-level forensics: what lies between the files of a log dir (issue 6).

* Generated log dirs (fixtures/generator.py, written with kafka-python's builders) for every check, each
  once as written (no finding) and once edited by hand to make exactly the anomaly.
* Kafka's own LogLoader (kafka-written/*/expected.json) for the log end offset every check relies on.
* The real broker directories: each anomaly SOURCES.md lists is found, and every directory-level finding
  is one SOURCES.md explains.
"""
from __future__ import annotations

import json
import random
import shutil
import uuid
from pathlib import Path

import pytest
from conftest import KAFKA_WRITTEN, REAL, require, run_logtool
from support.real import (
    DESCRIBED,
    LOG_DIRS,
    UNLISTED_ANOMALIES,
    _explanation,
    all_findings,
    section,
    unknown_partition,
    verify_json,
)

from fixtures import generator as g
from logtool.checks.engine import Report, run_checks
from logtool.findings import Severity
from logtool.store.partition import Partition
from logtool.store.read_ahead import Ahead

RP, HW, LS, CL = ("recovery-point-offset-checkpoint", "replication-offset-checkpoint", "log-start-offset-checkpoint",
                  "cleaner-offset-checkpoint")


# ------------------------------------------------------------------------------------------- helpers

def spec(topic: str = "events", n: int = 0, batches: int = 12, epochs: tuple[int, ...] = (0,), first: int = 0,
         segment_bytes: int = 1500, **kw) -> g.PartitionSpec:
    """A partition of v2 batches (5 records each), the leader epoch changing `len(epochs)` times, about two
    batches per segment."""
    entries: list[g.LogEntry] = []
    for i, epoch in enumerate(epochs):
        part = g.build_batches(g.BatchSpec(batches=batches // len(epochs), records_per_batch=5, leader_epoch=epoch,
                                           seed=i, **kw), first_offset=entries[-1].next_offset if entries else first)
        entries += part
    return g.PartitionSpec(topic, n, entries, segment_bytes=segment_bytes)


def log_dir(tmp: Path, *specs: g.PartitionSpec, **kw) -> tuple[Path, dict[str, g.WrittenPartition]]:
    root = tmp / "kafka-logs"
    written = g.write_log_dir(root, list(specs) or [spec()], **kw)
    return root, {w.path.name: w for w in written}


def read_checkpoint(path: Path) -> dict[tuple[str, int], int]:
    lines = path.read_text().splitlines()[2:]
    return {(t, int(p)): int(o) for t, p, o in (line.split() for line in lines)}


def write_checkpoint(path: Path, entries: dict[tuple[str, int], int]) -> None:
    """By hand, in Kafka's format: version 0, the count, one `<topic> <partition> <offset>` line each."""
    lines = ["0", str(len(entries))] + [f"{t} {p} {o}" for (t, p), o in sorted(entries.items())]
    path.write_text("".join(line + "\n" for line in lines))


def set_entry(root: Path, name: str, key: tuple[str, int], value: int | None) -> None:
    entries = read_checkpoint(root / name) if (root / name).exists() else {}
    if value is None:
        del entries[key]
    else:
        entries[key] = value
    write_checkpoint(root / name, entries)


def set_meta(root: Path, **fields: str | None) -> None:
    """Rewrite meta.properties with `fields` changed (None removes one); keys use _ for ."""
    lines = (root / "meta.properties").read_text().splitlines()
    props = dict(line.split("=", 1) for line in lines if line and not line.startswith("#"))
    for key, value in fields.items():
        props.pop(key.replace("_", "."), None)
        if value is not None:
            props[key.replace("_", ".")] = value
    (root / "meta.properties").write_text("#\n#Tue Nov 14 22:13:20 UTC 2023\n"
                                          + "".join(f"{k}={v}\n" for k, v in props.items()))


def rename_segment(part: Path, base: int, new_base: int) -> None:
    for suffix in (".log", ".index", ".timeindex"):
        g.segment_file(part, base, suffix).rename(g.segment_file(part, new_base, suffix))


def check(*paths: Path) -> Report:
    return run_checks(list(paths), deep=False)


def found(report: Report, kind: str) -> list:
    return [f for f in report.all_findings() if f.name == kind]


def suffixed(part: Path, suffix: str) -> Path:
    return part.rename(part.with_name(f"{part.name}.{uuid.UUID(int=7).hex}-{suffix}"))


def kafka_snapshot() -> bytes:
    """A producer-state snapshot as Kafka wrote it; only its name (the offset it was taken at) matters here."""
    return require(KAFKA_WRITTEN / "v2-none-mixed" / "orders-0" / "00000000000000000481.snapshot").read_bytes()


# Findings about the files of a log dir and how they fit together, info included (SEGMENT_GAP and
# FIRST_OFFSET_ABOVE_NAME are left out: compaction leaves them in healthy logs).
DIR_KINDS = {"CHECKPOINT_UNKNOWN_PARTITION", "CHECKPOINT_ENTRY_MISSING", "HIGH_WATERMARK_BEYOND_LOG",
             "RECOVERY_POINT_BEYOND_LOG", "RECOVERY_SKIPS_DAMAGE", "LOG_START_BEYOND_LOG", "CLEANER_OFFSET_BEYOND_LOG",
             "CHECKPOINT_BELOW_LOG_START", "CHECKPOINT_INVALID", "CLEAN_SHUTDOWN_WITH_DAMAGE", "META_PROPERTIES_MISMATCH",
             "META_PROPERTIES_MISSING", "META_PROPERTIES_INCONSISTENT", "META_PROPERTIES_INVALID", "TMP_LEFTOVER",
             "PARTITION_DIR_DELETE", "PARTITION_DIR_FUTURE", "PARTITION_DIR_STRAY", "PRODUCER_SNAPSHOT_BEYOND_LOG",
             "LEADER_EPOCH_BEYOND_LOG", "LEADER_EPOCH_MISMATCH", "LEADER_EPOCH_INVALID", "ORPHAN_INDEX",
             "LEFTOVER_FILE", "NOT_KAFKA", "SEGMENT_OVERLAP", "FIRST_OFFSET_BELOW_NAME", "INDEX_MISSING",
             "TIMEINDEX_MISSING"}


# ------------------------------------------------------------------------ generated: as written

def test_generated_log_dir_is_clean(tmp_path):
    root, _ = log_dir(tmp_path, spec(epochs=(0, 3)), spec("orders", 2))
    (root / CL).write_text("")  # as a broker without compacted topics leaves it
    report = check(root)
    assert [f for f in report.all_findings() if f.name in DIR_KINDS] == []
    assert report.exit_code() == 0
    part = next(p for p in report.partitions if p.path.endswith("events-0"))
    assert (part.facts.log_start, part.facts.log_end, part.facts.recovery_cuts) == (0, 60, False)


# ----------------------------------------------------------------- checkpoints against the log

@pytest.mark.parametrize("name,kind,severity", [
    (HW, "HIGH_WATERMARK_BEYOND_LOG", Severity.ERROR),
    (RP, "RECOVERY_POINT_BEYOND_LOG", Severity.WARNING),
    (LS, "LOG_START_BEYOND_LOG", Severity.ERROR),
    (CL, "CLEANER_OFFSET_BEYOND_LOG", Severity.WARNING),
])
@pytest.mark.parametrize("past", [0, 3])
def test_checkpoint_value_past_the_log_end(tmp_path, name, kind, severity, past):
    root, w = log_dir(tmp_path)
    end = w["events-0"].log_end_offset
    set_entry(root, name, ("events", 0), end + past)
    hits = found(check(root), kind)
    if past == 0:  # the log end itself is a valid value for every checkpoint
        assert hits == []
    else:
        assert [(f.severity, f.file, f.offset) for f in hits] == [(severity, name, end + past)]


def test_empty_partition_ends_at_its_segment_base(tmp_path):
    root, w = log_dir(tmp_path, g.PartitionSpec("empty", 0, []))
    rename_segment(w["empty-0"].path, 0, 50)  # a log emptied by retention: one empty segment at 50
    set_entry(root, LS, ("empty", 0), None)  # Kafka lists only log starts above the first segment
    set_entry(root, HW, ("empty", 0), 50)
    set_entry(root, RP, ("empty", 0), 50)
    assert [f.name for f in check(root).all_findings() if f.name in DIR_KINDS] == []
    set_entry(root, HW, ("empty", 0), 51)
    [hit] = found(check(root), "HIGH_WATERMARK_BEYOND_LOG")
    assert "log end offset is 50" in hit.message and "offset 50 was committed" in hit.message


def test_partition_without_segments_starts_at_its_log_start(tmp_path):
    root, w = log_dir(tmp_path)
    for f in w["events-0"].path.glob("0*"):
        f.unlink()
    set_entry(root, LS, ("events", 0), 60)
    set_entry(root, RP, ("events", 0), 60)
    assert found(check(root), "HIGH_WATERMARK_BEYOND_LOG") == []  # HW 60: the broker starts it empty at 60
    set_entry(root, LS, ("events", 0), None)
    [hit] = found(check(root), "HIGH_WATERMARK_BEYOND_LOG")
    assert "no segment" in hit.message and hit.offset == 60


def test_recovery_point_after_damage_skips_it(tmp_path):
    root, w = log_dir(tmp_path)
    part = w["events-0"]
    first = g.segment_file(part.path, part.segment_base_offsets[0], ".log")
    g.flip_bit(first, first.stat().st_size - 10)  # inside the first segment's last batch: its CRC fails
    set_entry(root, RP, ("events", 0), part.segment_base_offsets[0])
    report = check(root)
    assert found(report, "RECOVERY_SKIPS_DAMAGE") == [] and found(report, "CRC_MISMATCH")
    set_entry(root, RP, ("events", 0), part.segment_base_offsets[-1])
    [hit] = found(check(root), "RECOVERY_SKIPS_DAMAGE")
    assert hit.severity == Severity.ERROR and found(check(root), "RECOVERY_POINT_BEYOND_LOG") == []


def test_recovery_point_at_the_log_end_can_still_skip_damage(tmp_path):
    """Garbage after the last batch of a closed segment: the log ends at the next segment's base, and a
    recovery point there makes Kafka start recovery at that next segment."""
    root, w = log_dir(tmp_path)
    part = w["events-0"]
    first = g.segment_file(part.path, part.segment_base_offsets[0], ".log")
    first.write_bytes(first.read_bytes() + b"\x01\x02\x03")
    set_entry(root, RP, ("events", 0), part.segment_base_offsets[1])
    report = check(root)
    facts = next(p.facts for p in report.partitions)
    assert facts.log_end == part.segment_base_offsets[1] and found(report, "RECOVERY_SKIPS_DAMAGE")


def test_checkpoint_below_the_first_segment_is_info(tmp_path):
    root, _ = log_dir(tmp_path, spec(first=100))
    assert found(check(root), "CHECKPOINT_BELOW_LOG_START") == []
    set_entry(root, RP, ("events", 0), 40)
    [hit] = found(check(root), "CHECKPOINT_BELOW_LOG_START")
    assert hit.severity == Severity.INFO and hit.offset == 40


def test_checkpoint_naming_a_partition_that_is_not_there(tmp_path):
    root, _ = log_dir(tmp_path, spec(), spec("gone", 0))
    suffixed(root / "gone-0", "delete")  # deleted by Kafka: its entries may linger, the dir says why
    assert found(check(root), "CHECKPOINT_UNKNOWN_PARTITION") == []
    set_entry(root, HW, ("ghost", 3), 17)
    [hit] = found(check(root), "CHECKPOINT_UNKNOWN_PARTITION")
    assert hit.severity == Severity.WARNING and hit.file == HW and hit.message.startswith("ghost-3 ")
    assert check(root).log_dirs[0].findings == [hit]


def test_unreadable_partition_is_still_the_one_its_checkpoint_entries_name(tmp_path, monkeypatch):
    root, _ = log_dir(tmp_path, spec(), spec("locked", 0))
    from_dir = Partition.from_dir

    def denied(path: Path, real: str | None = None, ahead: Ahead | None = None) -> Partition:
        if path.name == "locked-0":
            raise PermissionError(13, "Permission denied", str(path))
        return from_dir(path, real, ahead)

    monkeypatch.setattr(Partition, "from_dir", staticmethod(denied))  # root reads everything: deny by hand
    report = check(root)
    locked = next(p for p in report.partitions if p.path.endswith("locked-0"))
    assert [f.name for f in locked.findings] == ["UNREADABLE"] and (locked.topic, locked.partition) == ("locked", 0)
    assert found(report, "CHECKPOINT_UNKNOWN_PARTITION") == [] and report.operational_error


def test_partition_missing_from_checkpoints(tmp_path):
    root, _ = log_dir(tmp_path)
    g.write_partition(root, "__cluster_metadata", 0, g.build_batches(g.BatchSpec(batches=2)))  # Raft's own
    suffixed(g.write_partition(root, "stray", 1, []).path, "stray")
    assert found(check(root), "CHECKPOINT_ENTRY_MISSING") == []
    set_entry(root, RP, ("events", 0), None)
    [hit] = found(check(root), "CHECKPOINT_ENTRY_MISSING")
    assert (hit.severity, hit.file) == (Severity.INFO, RP)


@pytest.mark.parametrize("text,bad", [
    ("0\n1\nevents 0 60\n", False),
    ("0\r\n1\r\nevents 0 60", False),  # Windows line ends, no final one: readLine takes both
    ("", False),  # an empty file has no entries
    ("0\n", False),  # nor has one without a count line
    ("0\n1\nevents 0 60\n\n", True),  # a blank line is a malformed entry
    ("0\n1\n events 0 60\n", True),  # Java's split leaves an empty first field
    ("0\n2\nevents 0 60\n", True),  # wrong count
    ("1\n0\n", True),  # unknown version
    (" 0\n0\n", True),  # Integer.parseInt does not trim
    ("0\n1\nevents 2147483648 60\n", True),  # the partition is a Java int
])
def test_checkpoint_file_read_as_kafka_reads_it(tmp_path, text, bad):
    root, _ = log_dir(tmp_path)
    (root / RP).write_text(text)
    hits = found(check(root), "CHECKPOINT_INVALID")
    assert bool(hits) == bad
    if bad:
        assert hits[0].severity == Severity.ERROR and "recovered in full" in hits[0].message


def test_tmp_copies_of_checkpoints(tmp_path):
    root, w = log_dir(tmp_path)
    shutil.copy(root / HW, root / f"{HW}.tmp")
    shutil.copy(w["events-0"].path / "leader-epoch-checkpoint", w["events-0"].path / "leader-epoch-checkpoint.tmp")
    (root / "notes.tmp").write_text("not Kafka's")
    report = check(root)
    assert sorted(f.file for f in found(report, "TMP_LEFTOVER")) == ["leader-epoch-checkpoint.tmp", f"{HW}.tmp"]
    assert [f.file for f in found(report, "UNKNOWN_FILE")] == ["notes.tmp"]
    assert all(f.severity == Severity.INFO for f in found(report, "TMP_LEFTOVER"))


# ------------------------------------------------------------------------------------- segment sets

def test_index_files_without_their_log(tmp_path):
    root, w = log_dir(tmp_path)
    part = w["events-0"].path
    (part / "00000000000000000000.txnindex").write_bytes(b"")  # beside its .log: fine
    assert found(check(root), "ORPHAN_INDEX") == []
    base = w["events-0"].segment_base_offsets[1]
    g.segment_file(part, base, ".log").unlink()
    g.segment_file(part, 999, ".txnindex").write_bytes(b"")
    orphans = sorted(f.file for f in found(check(root), "ORPHAN_INDEX"))
    assert orphans == sorted([f"{base:020d}.index", f"{base:020d}.timeindex", f"{999:020d}.txnindex"])


def test_closed_segment_without_its_indexes(tmp_path):
    root, w = log_dir(tmp_path)
    base = w["events-0"].segment_base_offsets[1]
    g.segment_file(w["events-0"].path, base, ".index").unlink()
    g.segment_file(w["events-0"].path, base, ".timeindex").unlink()
    report = check(root)
    assert [f.file for f in found(report, "INDEX_MISSING")] == [f"{base:020d}.index"]
    assert [f.file for f in found(report, "TIMEINDEX_MISSING")] == [f"{base:020d}.timeindex"]


def gapped(tmp_path: Path) -> tuple[Path, Path]:
    """One batch per segment; batch 3 starts 5 offsets late (offsets 15..19 were compacted away)."""
    root, w = log_dir(tmp_path, g.PartitionSpec("events", 0, g.build_batches(
        g.BatchSpec(batches=5, records_per_batch=5, gaps={3: 5})), segment_bytes=1))
    return root, w["events-0"].path


def test_gap_between_segments_is_info(tmp_path):
    root, _ = log_dir(tmp_path, g.PartitionSpec("events", 0, g.build_batches(
        g.BatchSpec(batches=5, records_per_batch=5, offset_stride=2)), segment_bytes=1))
    assert found(check(root), "SEGMENT_GAP") == []  # holes inside batches are compaction's, not a gap
    root, _ = gapped(tmp_path / "b")
    [gap] = found(check(root), "SEGMENT_GAP")
    assert (gap.severity, gap.offset) == (Severity.INFO, 20) and "15..19" in gap.message


def test_segment_named_above_or_below_its_first_batch(tmp_path):
    root, part = gapped(tmp_path)
    rename_segment(part, 20, 15)  # named right after the previous segment: the gap is inside this one
    report = check(root)
    assert [f.offset for f in found(report, "FIRST_OFFSET_ABOVE_NAME")] == [20]
    assert found(report, "SEGMENT_GAP") == [] and found(report, "FIRST_OFFSET_BELOW_NAME") == []
    rename_segment(part, 25, 26)
    [below] = found(check(root), "FIRST_OFFSET_BELOW_NAME")
    assert below.severity == Severity.ERROR and below.file == f"{26:020d}.log"


def test_segments_claiming_the_same_offsets(tmp_path):
    root, part = gapped(tmp_path)
    assert found(check(root), "SEGMENT_OVERLAP") == []
    rename_segment(part, 20, 12)
    [overlap] = found(check(root), "SEGMENT_OVERLAP")
    assert overlap.severity == Severity.ERROR and overlap.offset == 12


@pytest.mark.parametrize("past", [0, 7])
def test_producer_snapshot_past_the_log_end(tmp_path, past):
    root, w = log_dir(tmp_path)
    end = w["events-0"].log_end_offset
    g.segment_file(w["events-0"].path, end + past, ".snapshot").write_bytes(kafka_snapshot())
    hits = found(check(root), "PRODUCER_SNAPSHOT_BEYOND_LOG")
    assert [(f.severity, f.offset) for f in hits] == ([(Severity.WARNING, end + past)] if past else [])


# -------------------------------------------------------------------------------- clean shutdown

@pytest.mark.parametrize("marker", ["", '{"version":0,"brokerEpoch":53326}'])
def test_clean_shutdown_marker_over_damage(tmp_path, marker):
    root, w = log_dir(tmp_path, spec(), spec("orders", 1))
    (root / ".kafka_cleanshutdown").write_text(marker)
    assert found(check(root), "CLEAN_SHUTDOWN_WITH_DAMAGE") == []  # intact: the marker is right
    log = g.segment_file(w["events-0"].path, w["events-0"].segment_base_offsets[-1], ".log")
    g.tear_last_entry(log)
    [hit] = found(check(root), "CLEAN_SHUTDOWN_WITH_DAMAGE")
    assert hit.severity == Severity.ERROR and hit.file == ".kafka_cleanshutdown" and log.name in hit.message
    assert "remove .kafka_cleanshutdown" in hit.kind.remedy


def test_damage_without_marker_or_in_a_deleted_dir(tmp_path):
    root, w = log_dir(tmp_path)
    log = g.segment_file(w["events-0"].path, w["events-0"].segment_base_offsets[-1], ".log")
    g.tear_last_entry(log)
    assert found(check(root), "CLEAN_SHUTDOWN_WITH_DAMAGE") == [] and found(check(root), "TORN_BATCH")
    (root / ".kafka_cleanshutdown").write_text("")
    suffixed(w["events-0"].path, "delete")  # never recovered anyway, and about to go
    assert found(check(root), "CLEAN_SHUTDOWN_WITH_DAMAGE") == []


# ----------------------------------------------------------------------- meta.properties across dirs

def two_dirs(tmp_path: Path) -> tuple[Path, Path]:
    """Two log dirs of one broker: same cluster.id and node.id, each its own directory.id."""
    a, _ = log_dir(tmp_path / "a", spec())
    b, _ = log_dir(tmp_path / "b", spec("orders", 1))
    set_meta(b, directory_id=g.kafka_uuid(random.Random(99)))
    return a, b


def test_log_dirs_of_one_broker(tmp_path):
    a, b = two_dirs(tmp_path)
    assert found(check(a, b), "META_PROPERTIES_MISMATCH") == []
    assert found(check(a, a), "META_PROPERTIES_MISMATCH") == []  # one dir given twice is one dir


@pytest.mark.parametrize("edit,word", [
    ({"node_id": "2"}, "node.id 2"),
    ({"cluster_id": "q1w2e3r4t5y6u7i8o9p0"}, "cluster.id q1w2e3r4t5y6u7i8o9p0"),
    ("copy-directory-id", "directory.id"),
], ids=["node.id", "cluster.id", "directory.id"])
def test_log_dirs_of_different_brokers(tmp_path, edit, word):
    a, b = two_dirs(tmp_path)
    if edit == "copy-directory-id":
        set_meta(b, directory_id=dict(line.split("=", 1) for line in (a / "meta.properties").read_text()
                                      .splitlines() if "=" in line)["directory.id"])
    else:
        set_meta(b, **edit)
    report = check(a, b)
    [hit] = found(report, "META_PROPERTIES_MISMATCH")
    assert hit.severity == Severity.ERROR and word in hit.message and hit in report.log_dirs[1].findings


def test_version_0_broker_id_matches_version_1_node_id(tmp_path):
    a, b = two_dirs(tmp_path)
    set_meta(b, version="0", node_id=None, broker_id="1", directory_id=None)
    report = check(a, b)
    assert found(report, "META_PROPERTIES_MISMATCH") == [] and found(report, "META_PROPERTIES_INCONSISTENT") == []
    set_meta(b, broker_id="4")
    assert "broker.id 4" in found(check(a, b), "META_PROPERTIES_MISMATCH")[0].message


def test_log_dir_without_meta_properties(tmp_path):
    root, _ = log_dir(tmp_path, meta_properties=False)
    [hit] = found(check(root), "META_PROPERTIES_MISSING")
    assert hit.severity == Severity.WARNING


@pytest.mark.parametrize("edit,kind", [
    ({}, None),
    ({"broker_id": "1"}, "META_PROPERTIES_INCONSISTENT"),  # version 1 reads node.id only
    ({"version": "0", "node_id": None, "broker_id": "1", "directory_id": None}, None),
    ({"version": "0", "broker_id": "1"}, "META_PROPERTIES_INCONSISTENT"),  # version 0 ignores node.id
    ({"version": None, "node_id": None, "broker_id": "1"}, None),  # no version line: version 0
    ({"cluster_id": None}, "META_PROPERTIES_INVALID"),
    ({"directory_id": "AAAAAAAAAAAAAAAAAAAAAQ"}, "META_PROPERTIES_INVALID"),  # reserved (UNASSIGNED)
    ({"node_id": "one"}, "META_PROPERTIES_INVALID"),
], ids=["as-written", "v1-broker.id", "v0-broker.id-only", "v0-with-node.id", "no-version", "no-cluster.id",
        "reserved-directory.id", "node.id-not-a-number"])
def test_meta_properties_fields_and_version(tmp_path, edit, kind):
    root, _ = log_dir(tmp_path)
    set_meta(root, **edit)
    kinds = {f.name for f in check(root).log_dirs[0].findings}
    assert kinds == ({kind} if kind else set())


# ------------------------------------------------------------------------------ directory names

@pytest.mark.parametrize("suffix,kind,severity", [
    ("delete", "PARTITION_DIR_DELETE", Severity.INFO),
    ("future", "PARTITION_DIR_FUTURE", Severity.INFO),
    ("stray", "PARTITION_DIR_STRAY", Severity.WARNING),
])
def test_suffixed_partition_dirs(tmp_path, suffix, kind, severity):
    root, w = log_dir(tmp_path, spec(), spec("orders", 1))
    assert found(check(root), kind) == []
    moved = suffixed(w["orders-1"].path, suffix)
    report = check(root)
    [hit] = found(report, kind)
    assert (hit.severity, hit.file) == (severity, moved.name)
    if suffix == "future":  # still this broker's replica: it is in the checkpoints
        assert found(report, "CHECKPOINT_UNKNOWN_PARTITION") == []


def test_directories_that_are_not_partitions(tmp_path):
    root, _ = log_dir(tmp_path)
    (root / "remote-log-index-cache").mkdir()
    assert found(check(root), "NOT_KAFKA") == []
    (root / "lost+found").mkdir()
    [hit] = found(check(root), "NOT_KAFKA")
    assert (hit.severity, hit.file) == (Severity.ERROR, "lost+found")


# ------------------------------------------------------------------------------ leader epochs

def epoch_entries(part: Path) -> list[str]:
    return (part / "leader-epoch-checkpoint").read_text().splitlines()


def write_epochs(part: Path, entries: list[tuple[int, int]]) -> None:
    (part / "leader-epoch-checkpoint").write_text("".join(f"{x}\n" for x in
                                                          ["0", len(entries), *(f"{e} {o}" for e, o in entries)]))


def test_leader_epochs_agree_with_the_batches(tmp_path):
    root, w = log_dir(tmp_path, spec(epochs=(0, 3)))
    assert epoch_entries(w["events-0"].path) == ["0", "2", "0 0", "3 30"]
    assert [f for f in check(root).all_findings() if f.name.startswith("LEADER_EPOCH")] == []
    write_epochs(w["events-0"].path, [(0, 12), (3, 30)])  # cut from the start as the log start moved: fine
    assert [f for f in check(root).all_findings() if f.name.startswith("LEADER_EPOCH")] == []


def test_checkpoint_disagrees_with_batch_epochs(tmp_path):
    root, w = log_dir(tmp_path, spec(epochs=(0, 3)))
    write_epochs(w["events-0"].path, [(0, 0), (3, 40)])
    [hit] = found(check(root), "LEADER_EPOCH_MISMATCH")
    assert hit.offset == 30 and "carry epoch 3" in hit.message and "gives epoch 0" in hit.message


def test_damaged_epoch_field_is_found(tmp_path):
    """partitionLeaderEpoch lies outside the batch CRC: a flipped epoch passes every checksum."""
    root, w = log_dir(tmp_path, spec(epochs=(0, 3)))
    part = w["events-0"]
    log = g.segment_file(part.path, part.segment_base_offsets[0], ".log")
    data = bytearray(log.read_bytes())
    data[12:16] = (7).to_bytes(4, "big")  # the first batch now says epoch 7
    log.write_bytes(bytes(data))
    report = check(root)
    [hit] = found(report, "LEADER_EPOCH_MISMATCH")
    assert hit.offset == 0 and "epoch 7" in hit.message and found(report, "CRC_MISMATCH") == []


@pytest.mark.parametrize("past", [0, 3])
def test_leader_epoch_past_the_log_end(tmp_path, past):
    root, w = log_dir(tmp_path, spec(epochs=(0, 3)))
    end = w["events-0"].log_end_offset
    write_epochs(w["events-0"].path, [(0, 0), (3, 30), (5, end + past)])  # a leader elected at the end is normal
    hits = found(check(root), "LEADER_EPOCH_BEYOND_LOG")
    assert [(f.severity, f.offset) for f in hits] == ([(Severity.WARNING, end + past)] if past else [])


def test_negative_leader_epoch_fails_the_load(tmp_path):
    root, w = log_dir(tmp_path)
    write_epochs(w["events-0"].path, [(-1, 0)])
    [hit] = found(check(root), "LEADER_EPOCH_INVALID")
    assert "negative" in hit.message


# ------------------------------------------------------------------------ end to end, CLI

@pytest.mark.slow
def test_verify_and_scan_report_directory_findings(tmp_path):
    root, w = log_dir(tmp_path)
    set_entry(root, HW, ("events", 0), w["events-0"].log_end_offset + 2)
    shutil.copy(root / RP, root / f"{RP}.tmp")
    p = run_logtool("verify", "--format", "json", str(root))
    doc = json.loads(p.stdout)
    assert p.returncode == 4 and "Traceback" not in p.stderr
    assert {f["name"] for f in doc["partitions"][0]["findings"]} == {"HIGH_WATERMARK_BEYOND_LOG"}
    assert {f["name"] for f in doc["log_dirs"][0]["findings"]} == {"TMP_LEFTOVER"}
    scan = run_logtool("scan", str(root))
    assert scan.returncode == 4 and "TMP_LEFTOVER" in scan.stdout  # the high watermark past the log: as verify
    explain = run_logtool("verify", "--explain", "CLEAN_SHUTDOWN_WITH_DAMAGE")
    assert explain.returncode == 0 and "LT513" in explain.stdout


# ---------------------------------------------------- Kafka's LogLoader: the log end every check uses

CASES = sorted(p.name for p in require(KAFKA_WRITTEN).iterdir() if (p / "expected.json").is_file())


@pytest.mark.parametrize("case", CASES)
def test_log_end_agrees_with_kafka_loader(case):
    exp = json.loads((KAFKA_WRITTEN / case / "expected.json").read_text())
    [part] = check(KAFKA_WRITTEN / case / exp["partitionDir"]).partitions
    assert part.facts.log_end == exp["logLoaderUnclean"][0]["logEndOffset"]  # recovery point 0: all recovered


# ------------------------------------------------------------------------------ real log dirs

def _expected_anomalies(log_dir: str) -> set[tuple[str, str]]:
    """(kind, partition or file) for every directory-level anomaly SOURCES.md lists for `log_dir`."""
    sec = section(log_dir)
    out = {(kind, subject) for (kind, subject) in UNLISTED_ANOMALIES.get(log_dir, {})}
    if sec is None:
        return out
    kinds = {HW: "HIGH_WATERMARK_BEYOND_LOG", RP: "RECOVERY_POINT_BEYOND_LOG", LS: "LOG_START_BEYOND_LOG",
             CL: "CLEANER_OFFSET_BEYOND_LOG"}
    out |= {(kinds[file], f"{partition}@{value}") for partition, file, value in sec.checkpoints_ahead}
    for item in sec.leftovers:
        partition, _, file = item.partition("/")
        out.add(("PARTITION_DIR_DELETE", partition) if not file else ("LEFTOVER_FILE", item))
    out |= {("TMP_LEFTOVER", name) for name in sec.root_tmp}
    if sec.no_meta:
        out.add(("META_PROPERTIES_MISSING", "meta.properties"))
    for partition, row in sec.rows.items():  # an index whose .log is listed as absent
        for absent in (a for a in row.absent if a.endswith(".log")):
            stem = absent[: -len(".log")]
            out |= {("ORPHAN_INDEX", f"{partition}/{p.name}") for p in (REAL / log_dir / partition).glob(f"{stem}.*")
                    if p.suffix in (".index", ".timeindex", ".txnindex")}
    return out


def _subject(log_dir: str, where: str, f: dict) -> str:
    partition = where[len(log_dir) + 1:]
    if f["name"] == "CHECKPOINT_UNKNOWN_PARTITION":
        return unknown_partition(f)
    if f["name"] in ("HIGH_WATERMARK_BEYOND_LOG", "RECOVERY_POINT_BEYOND_LOG", "LOG_START_BEYOND_LOG",
                     "CLEANER_OFFSET_BEYOND_LOG"):
        return f"{partition}@{f['offset']}"
    if f["name"] in ("ORPHAN_INDEX", "LEFTOVER_FILE"):
        return f"{partition}/{f['file']}"
    return partition or f["file"]


@pytest.mark.sample(3)
@pytest.mark.parametrize("log_dir", sorted(set(DESCRIBED) | set(UNLISTED_ANOMALIES)))
def test_anomalies_sources_lists_are_found(log_dir):
    _rc, report = verify_json(log_dir)
    got = {(f["name"], _subject(log_dir, where, f)) for where, f in all_findings(report)}
    missing = _expected_anomalies(log_dir) - got
    assert not missing, f"{log_dir}: SOURCES.md lists anomalies logtool does not report: {sorted(missing)}"


@pytest.mark.parametrize("log_dir", LOG_DIRS)
def test_directory_findings_are_explained(log_dir):
    """Every directory-level finding, info included, is a listed anomaly or one SOURCES.md explains (files absent
    from the snapshot, partitions removed from the set). Intact directories get none."""
    _rc, report = verify_json(log_dir)
    listed = _expected_anomalies(log_dir)
    unexplained = [f"{where}: {f['name']} {f['file']} {f['message']}" for where, f in all_findings(report)
                   if f["name"] in DIR_KINDS and (f["name"], _subject(log_dir, where, f)) not in listed
                   and _explanation(section(log_dir), where, log_dir, f) is None]
    assert not unexplained, f"{log_dir}: directory-level findings SOURCES.md does not explain:\n  " + \
        "\n  ".join(unexplained)
