"""`index verify` and `index rebuild`: Kafka's own rebuilt indexes, every kind of index damage, and a
rebuild that can be undone byte for byte."""
from __future__ import annotations

import hashlib
import json
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import KAFKA_WRITTEN, REAL, kafka_case, require, run_logtool
from support.real import TARGETS as REAL_TARGETS

from fixtures import generator as g
from logtool.recovery import index_rebuild, quarantine
from logtool.store.partition import Partition

CASES = sorted(d.name for d in require(KAFKA_WRITTEN).iterdir() if d.is_dir())


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.mark.parametrize("case", CASES)
def test_rebuild_plan_equals_kafkas_recovery(case):
    exp = json.loads((KAFKA_WRITTEN / case / "expected.json").read_text())
    plan = index_rebuild.plan_index_rebuild(Partition.from_dir(kafka_case(case)), 4096)
    by_name = {c.path.name: c.new for c in plan.changes}
    for r in exp["segmentRecover"]:
        base = f"{r['baseOffset']:020d}"
        index, timeindex = by_name[base + ".index"], by_name[base + ".timeindex"]
        assert [[o + r["baseOffset"], p] for o, p in struct.iter_unpack(">ii", index)] == r["rebuiltOffsetIndex"]
        assert [[t, o + r["baseOffset"]] for t, o in struct.iter_unpack(">qi", timeindex)] == r["rebuiltTimeIndex"]
        if not r["truncatedBytes"]:
            assert (sha(index), sha(timeindex)) == (r["indexSha256AfterClose"], r["timeIndexSha256AfterClose"])
        txn = by_name.get(base + ".txnindex", b"")
        got = [dict(zip(("version", "producerId", "firstOffset", "lastOffset", "lastStableOffset"),
                        (v >> 8, p, f, la, ls))) for v, p, f, la, ls in struct.iter_unpack(">hqqqq", txn)]
        assert got == r["rebuiltAbortedTxns"]


@pytest.mark.parametrize("case", ["v0-none", "v1-none", "v1-to-v2-upgrade", "v2-idempotent-txn", "v2-compacted"])
def test_broker_written_indexes_are_not_damage(case):
    """Brokers that append several messages per write index fewer entries than recovery would: fine."""
    p = run_logtool("index", "verify", "--format", "json", str(kafka_case(case)))
    assert p.returncode == 0, p.stdout


@pytest.mark.slow
def test_generated_indexes_round_trip(tmp_path):
    for i, (lib, magic, codec) in enumerate([("kafka-python", 2, "gzip"), ("aiokafka", 1, "snappy"), ("aiokafka", 0, "none")]):
        spec = g.BatchSpec(library=lib, magic=magic, codec=codec, batches=60, records_per_batch=5, value_bytes=(80, 300))
        part = g.write_partition(tmp_path / str(i), "t", 0, g.build_batches(spec), segment_bytes=20000).path
        assert run_logtool("index", "verify", str(part)).returncode == 0
        p = run_logtool("index", "rebuild", "--format", "json", str(part))
        assert p.returncode == 0 and json.loads(p.stdout)["partitions"][0]["changed"] == 0


def damaged(case_copy, edit) -> set[str]:
    part = case_copy("v2-none-mixed")
    edit(part)
    p = run_logtool("index", "verify", "--format", "json", str(part))
    doc = json.loads(p.stdout)
    names = {f["name"] for q in doc["partitions"] for s in q["segments"] for f in s["findings"]}
    names |= {f["name"] for q in doc["partitions"] for f in q["findings"]}
    assert p.returncode == (4 if names - {"INDEX_PREALLOCATED"} else 0)
    return names


def _rewrite(path: Path, fn) -> None:
    data = bytearray(path.read_bytes())
    fn(data)
    path.write_bytes(bytes(data))


IDX = "00000000000000000094.index"
TIDX = "00000000000000000094.timeindex"


@pytest.mark.parametrize("edit,expected", [
    (lambda p: _rewrite(p / IDX, lambda d: d.extend(b"\x00\x00\x01")), "INDEX_CORRUPT"),
    (lambda p: _rewrite(p / IDX, lambda d: struct.pack_into(">i", d, 4, struct.unpack_from(">i", d, 4)[0] + 5)), "INDEX_WRONG_POSITION"),
    (lambda p: _rewrite(p / IDX, lambda d: d.__setitem__(slice(0, 16), d[8:16] + d[0:8])), "INDEX_NOT_INCREASING"),
    (lambda p: _rewrite(p / IDX, lambda d: d.extend(struct.pack(">ii", 900, 10**7))), "INDEX_PAST_LOG_END"),
    (lambda p: _rewrite(p / IDX, lambda d: d.extend(bytes(800))), "INDEX_PREALLOCATED_CLOSED"),
    (lambda p: _rewrite(p / TIDX, lambda d: struct.pack_into(">q", d, len(d) - 12, 5)), "TIMEINDEX_CORRUPT"),
    (lambda p: _rewrite(p / TIDX, lambda d: struct.pack_into(">q", d, 0, struct.unpack_from(">q", d, 0)[0] - 1)), "TIMEINDEX_WRONG_ENTRY"),
    (lambda p: _rewrite(p / TIDX, lambda d: d.extend(b"\x01")), "TIMEINDEX_CORRUPT"),
    (lambda p: (p / IDX).unlink(), "INDEX_MISSING"),
    (lambda p: (p / "00000000000000000999.timeindex").write_bytes(b""), "ORPHAN_INDEX"),
])
def test_index_damage_is_detected(case_copy, edit, expected):
    assert expected in damaged(case_copy, edit)


def test_clean_partition_has_no_index_findings(case_copy):
    assert damaged(case_copy, lambda p: None) == set()


@pytest.mark.parametrize("mutate,expected_words", [
    (lambda d: d.__setitem__(slice(0, 34), b""), "is not listed"),  # an abort missing from the index
    (lambda d: struct.pack_into(">q", d, 10, struct.unpack_from(">q", d, 10)[0] - 2), "is listed from offset"),
    (lambda d: struct.pack_into(">q", d, 26, struct.unpack_from(">q", d, 26)[0] + 1), "last stable offset"),
    (lambda d: d.extend(struct.pack(">hqqqq", 0, 77, 120, 121, 122)), "no such abort marker"),
])
def test_txnindex_must_list_exactly_the_aborts(case_copy, mutate, expected_words):
    part = case_copy("v2-idempotent-txn")
    _rewrite(part / "00000000000000000096.txnindex", mutate)
    p = run_logtool("index", "verify", "--format", "json", str(part))
    msgs = [f["message"] for q in json.loads(p.stdout)["partitions"] for s in q["segments"] for f in s["findings"]
            if f["name"] == "TXNINDEX_MISMATCH"]
    assert p.returncode == 4 and any(expected_words in m for m in msgs), msgs


def test_txnindex_version_byte(case_copy):
    part = case_copy("v2-idempotent-txn")
    _rewrite(part / "00000000000000000096.txnindex", lambda d: d.__setitem__(0, 1))
    p = run_logtool("index", "verify", "--format", "json", str(part))
    assert "TXNINDEX_CORRUPT" in p.stdout and p.returncode == 4


@pytest.mark.slow
def test_rebuild_apply_then_restore_is_byte_for_byte(case_copy, tmp_path_factory):
    part = case_copy("corrupt-index-wrong-positions")
    before = {f.name: f.read_bytes() for f in part.iterdir()}
    assert run_logtool("index", "rebuild", str(part)).returncode == 4  # dry run: differences, nothing written
    assert {f.name: f.read_bytes() for f in part.iterdir()} == before
    q = tmp_path_factory.mktemp("quarantine")  # not beside the partition: that is its log dir
    p = run_logtool("index", "rebuild", "--apply", "--quarantine", str(q), str(part))
    assert p.returncode == 1, p.stderr
    assert run_logtool("index", "verify", str(part)).returncode == 0
    assert run_logtool("index", "rebuild", str(part)).returncode == 0
    (run_dir,) = q.iterdir()
    assert [e.name for e in quarantine.load(run_dir).entries] == ["00000000000000000000.index"]
    assert run_logtool("restore", str(run_dir)).returncode == 0
    assert {f.name: f.read_bytes() for f in part.iterdir()} == before


def test_apply_needs_a_quarantine_outside_the_log_dir(case_copy):
    part = case_copy("corrupt-index-wrong-positions")
    assert run_logtool("index", "rebuild", "--apply", str(part)).returncode == 16
    p = run_logtool("index", "rebuild", "--apply", "--quarantine", str(part / "q"), str(part))
    assert p.returncode == 8 and "outside the log dir" in p.stderr


@pytest.mark.slow
def test_apply_refuses_while_a_broker_holds_the_lock(case_copy, tmp_path_factory):
    part = case_copy("corrupt-index-wrong-positions")
    q = tmp_path_factory.mktemp("quarantine")
    lock = part.parent / ".lock"
    lock.write_bytes(b"")
    holder = subprocess.Popen([sys.executable, "-c", (
        "import fcntl, os, sys, time; fd = os.open(sys.argv[1], os.O_RDWR); fcntl.lockf(fd, fcntl.LOCK_EX); "
        "print('locked', flush=True); time.sleep(30)"), str(lock)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        before = (part / "00000000000000000000.index").read_bytes()
        p = run_logtool("index", "rebuild", "--apply", "--quarantine", str(q), str(part))
        assert p.returncode == 8 and "holds .lock" in p.stderr
        assert (part / "00000000000000000000.index").read_bytes() == before
    finally:
        holder.kill()
        holder.wait()
    time.sleep(0.05)
    assert run_logtool("index", "rebuild", "--apply", "--quarantine", str(q), str(part)).returncode == 1


def test_restore_rejects_what_is_not_a_run(tmp_path):
    p = run_logtool("restore", str(tmp_path))
    assert p.returncode == 8 and "not a logtool quarantine run" in p.stderr


def test_entries_past_a_damaged_tail_are_healed_by_recovery_so_only_a_warning(case_copy):
    """The same entry past the end of a whole log is an error (INDEX_PAST_LOG_END, above); past a damaged
    tail, which recovery cuts and then rebuilds the indexes, it is a warning."""
    def edit(p):
        log = p / "00000000000000000094.log"
        _rewrite(log, lambda d: d.extend(b"\x00\x00\x00\x00\x00\x00\x00\x00\x7f\xff\xff\xff" + bytes(100)))
        _rewrite(p / IDX, lambda d: d.extend(struct.pack(">ii", 900, log.stat().st_size - 50)))
    names = damaged(case_copy, edit)
    assert "INDEX_BEYOND_LOG" in names and "INDEX_PAST_LOG_END" not in names


def _pending(path: Path, *flags: str) -> list[str]:
    p = run_logtool("index", "rebuild", "--format", "json", *flags, str(path))
    return [Path(f["file"]).name for part in json.loads(p.stdout)["partitions"] for f in part["files"] if f["changed"]]


REAL_DIRS = [REAL / t for t in REAL_TARGETS]


def _findings(doc: dict):
    for container in [doc, *doc.get("log_dirs", [])]:
        yield from container.get("findings", [])
    for part in doc.get("partitions", []):
        yield from part.get("findings", [])
        for seg in part.get("segments", []):
            yield from seg.get("findings", [])


@pytest.mark.sample(4)
@pytest.mark.parametrize("target", REAL_DIRS, ids=REAL_TARGETS)
def test_rebuild_rewrites_only_what_index_verify_finds_wrong(target):
    """An index a broker built while appending can differ from the one recovery builds and still be right
    (Kafka's v1 appends index per append, recovery per message): only what a check finds wrong, or a missing
    index, is rewritten. Where `index verify` is clean the plan is empty."""
    p = run_logtool("index", "verify", "--format", "json", str(target))
    named = {Path(f["file"]).name for f in _findings(json.loads(p.stdout)) if f.get("file")}
    pending = _pending(target)
    assert set(pending) <= named
    if p.returncode == 0:
        assert pending == []


@pytest.mark.slow
def test_force_rewrites_what_differs_from_recovery():
    part = kafka_case("v1-none")
    assert run_logtool("index", "verify", str(part)).returncode == 0
    assert _pending(part) == []
    assert "00000000000000000188.index" in _pending(part, "--force")
