"""Hostile input: special files and absurd sizes in place of Kafka's files. Each gives a finding or a
one-line error and the right exit code, within a time limit and an address-space cap; never a hang, never a
traceback, never an unbounded allocation."""
from __future__ import annotations

import json
import os
import resource
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import LOGTOOL, ROOT

import fixtures.generator as g
from bench.run import MEASURED_CHILD

# Mapping a file takes address space but no memory: the cap is on resident memory (the 300 MB),
# with an address-space cap well above what the mappings take, below what reading the files whole would.
RSS_LIMIT_MB = 300
AS_LIMIT = 6 << 30

def run_capped(*args: str, timeout: float = 30) -> subprocess.CompletedProcess:
    """The command under a time limit (a hang fails the test) and an address-space cap; its peak resident
    set must stay under RSS_LIMIT_MB."""
    def cap():
        resource.setrlimit(resource.RLIMIT_AS, (AS_LIMIT, AS_LIMIT))
    p = subprocess.run([sys.executable, "-c", MEASURED_CHILD, *args], capture_output=True, text=True,
                       timeout=timeout, preexec_fn=cap)
    rest, _, peak_kb = p.stderr.rstrip("\n").rpartition("\n")
    assert peak_kb.isdigit(), p.stderr
    assert int(peak_kb) < RSS_LIMIT_MB * 1024, f"{args}: peak RSS {int(peak_kb) // 1024} MB"
    p.stderr = rest
    return p


@pytest.fixture
def part(tmp_path) -> Path:
    shutil.copytree(ROOT / "fixtures" / "sample-logdir", tmp_path / "ld")
    return tmp_path / "ld" / "orders-0"


def _findings(stdout: str) -> list[dict]:
    doc = json.loads(stdout)
    return [f for p in doc["partitions"] for f in p["findings"] + [x for s in p["segments"] for x in s["findings"]]]


SIDE_FILES = ["leader-epoch-checkpoint", "partition.metadata", "00000000000000000160.snapshot"]


@pytest.mark.sample(1)
@pytest.mark.parametrize("name", SIDE_FILES + ["00000000000000000090.index", "00000000000000000090.timeindex"])
def test_a_fifo_in_place_of_a_file_is_reported_not_waited_on(part, name):
    (part / name).unlink(missing_ok=True)
    os.mkfifo(part / name)
    p = run_capped("verify", "--format", "json", str(part))
    assert p.returncode == 8 and "Traceback" not in p.stderr, p.stderr
    hit = [f for f in _findings(p.stdout) if f["file"] == name]
    assert [f["name"] for f in hit] == ["UNREADABLE"] and "a FIFO, not a regular file" in hit[0]["message"]
    for args in (["scan"], ["index", "verify"], ["index", "rebuild"], ["find", "--offset", "100"],
                 ["dump", "--from-offset", "100", "--max-records", "1"], ["truncate"]):
        q = run_capped(*args, str(part))
        assert q.returncode in (0, 4, 8) and "Traceback" not in q.stderr, (args, q.stderr)


def test_a_fifo_in_place_of_a_segment(part):
    log = part / "00000000000000000090.log"
    log.unlink()
    os.mkfifo(log)
    p = run_capped("verify", "--format", "json", str(part))
    assert p.returncode == 8
    assert any(f["name"] == "UNREADABLE" and "FIFO" in f["message"] for f in _findings(p.stdout))


@pytest.mark.parametrize("name", SIDE_FILES)
def test_a_sparse_side_file_of_gigabytes_is_a_finding_not_a_read(part, name):
    with open(part / name, "wb") as f:
        f.truncate(3 << 30)
    p = run_capped("verify", "--format", "json", str(part))
    assert p.returncode == 4 and "Traceback" not in p.stderr, p.stderr
    hit = [f for f in _findings(p.stdout) if f["file"] == name]
    assert [f["name"] for f in hit] == ["SIDE_FILE_TOO_LARGE"]


@pytest.mark.sample(1)
@pytest.mark.parametrize("suffix", [".index", ".timeindex", ".txnindex"])
def test_a_sparse_index_of_gigabytes_is_read_through_the_mapping(part, suffix):
    with open(part / f"00000000000000000090{suffix}", "wb") as f:
        f.truncate(3 << 30)
    for args in (["verify"], ["index", "rebuild"]):
        p = run_capped(*args, str(part), timeout=120)
        assert p.returncode == 4 and "Traceback" not in p.stderr and "MemoryError" not in p.stderr, (args, p.stderr)


@pytest.mark.slow
def test_index_rebuild_refuses_offsets_no_index_can_hold(tmp_path):
    """A batch 2^31+ offsets past its segment's base: Kafka splits the segment at load; no index is written."""
    part = tmp_path / "big-0"
    part.mkdir()
    entries = g.build_batches(g.BatchSpec(batches=3, records_per_batch=2), first_offset=2**31 + 5)
    (part / "00000000000000000000.log").write_bytes(b"".join(e.data for e in entries))
    p = subprocess.run([str(LOGTOOL), "index", "rebuild", "--format", "json", str(part)], capture_output=True, text=True)
    assert p.returncode == 4 and "internal error" not in p.stderr
    doc = json.loads(p.stdout)
    assert doc["partitions"][0]["offset_overflow"] == ["00000000000000000000.log"]
    assert doc["partitions"][0]["files"] == []
    q = tmp_path / "q"
    p = subprocess.run([str(LOGTOOL), "index", "rebuild", "--apply", "--quarantine", str(q), str(part)],
                       capture_output=True, text=True)
    assert p.returncode == 4 and sorted(x.name for x in part.iterdir()) == ["00000000000000000000.log"]
    v = subprocess.run([str(LOGTOOL), "verify", "--format", "json", str(part)], capture_output=True, text=True)
    assert "OFFSET_OVERFLOW" in {f["name"] for f in _findings(v.stdout)}


@pytest.mark.slow
def test_the_memory_measure_is_real():
    """The peak these tests read does see a process that holds 400 MB."""
    with pytest.raises(AssertionError, match="peak RSS"):
        run_capped("--version", "--help") if False else _holds_400mb()


def _holds_400mb():
    p = subprocess.run([sys.executable, "-c", "b = bytearray(400 << 20); b[::4096] = b'x' * len(b[::4096]); "
                        "print([l for l in open('/proc/self/status') if l.startswith('VmHWM')][0].split()[1])"],
                       capture_output=True, text=True)
    assert int(p.stdout) < RSS_LIMIT_MB * 1024, f"peak RSS {int(p.stdout) // 1024} MB"


@pytest.mark.slow
def test_a_partition_without_segments_is_reported_and_its_lost_records_named(tmp_path):
    """Kafka starts such a partition empty at its log start; the checkpoints say it held offsets 0..239."""
    shutil.copytree(ROOT / "fixtures" / "sample-logdir", tmp_path / "ld")
    part = tmp_path / "ld" / "orders-0"
    for f in part.iterdir():
        if f.name != "partition.metadata":
            f.unlink()
    p = run_capped("verify", "--format", "json", str(tmp_path / "ld"))
    doc = json.loads(p.stdout)
    mine = next(x for x in doc["partitions"] if x["path"].endswith("orders-0"))
    names = {f["name"] for f in mine["findings"]}
    assert "NO_SEGMENTS" in names and {"RECOVERY_POINT_BEYOND_LOG", "HIGH_WATERMARK_BEYOND_LOG"} & names
    assert p.returncode == 4


def _legacy_gzip_bomb(messages: int) -> bytes:
    """A magic-0 gzip wrapper inflating to `messages` tiny inner messages (26 bytes each), its CRC right:
    the shape that made the walker list every inner message to learn the first offset."""
    import gzip
    import zlib

    body = bytes([0, 0]) + struct.pack(">ii", -1, -1)  # magic 0, attributes 0, null key, null value
    crc = zlib.crc32(body)
    one = struct.Struct(">qiI")
    inner = bytearray()
    for i in range(messages):
        inner += one.pack(i, len(body) + 4, crc) + body
    value = gzip.compress(bytes(inner), compresslevel=6)
    wrapper = bytes([0, 1]) + struct.pack(">i", -1) + struct.pack(">i", len(value)) + value
    return struct.pack(">qiI", messages - 1, len(wrapper) + 4, zlib.crc32(wrapper)) + wrapper


def _v2_bad_records_bomb(records: int) -> bytes:
    """One v2 batch of `records` 7-byte records that all claim offset delta 0 and a timestamp past the batch
    max: each record after the first is a finding; the CRC is right."""
    import crc32c

    rec = bytes([0x0C, 0x00, 0x02, 0x00, 0x01, 0x01, 0x00])  # length 6, attrs, ts delta 1, offset delta 0, -1, -1, 0
    body = (struct.pack(">hiqqqhii", 0, records - 1, 1_700_000_000_000, 1_700_000_000_000, -1, -1, -1, records)
            + rec * records)  # attributes .. record count, then the records
    header_tail = struct.pack(">iB", 0, 2)  # partition leader epoch, magic
    crc = crc32c.crc32c(body)
    length = len(header_tail) + 4 + len(body)
    return struct.pack(">qi", 0, length) + header_tail + struct.pack(">I", crc) + body


@pytest.mark.slow
@pytest.mark.parametrize("bomb", [lambda: _legacy_gzip_bomb(1_000_000), lambda: _v2_bad_records_bomb(1_000_000)],
                         ids=["legacy-wrapper-of-a-million-messages", "v2-batch-of-a-million-bad-records"])
def test_bombs_stay_within_memory_and_time(tmp_path, bomb):
    part = tmp_path / "bomb-0"
    part.mkdir()
    (part / "00000000000000000000.log").write_bytes(bomb())
    for args in (["scan"], ["verify"], ["verify", "--deep", "--format", "json"], ["dump", "--max-records", "5"],
                 ["dump", "--batches-only"]):
        p = run_capped(*args, str(part), timeout=120)
        assert p.returncode in (0, 4) and "Traceback" not in p.stderr and "internal error" not in p.stderr, (args, p.stderr)
        if "--deep" in args:
            findings = [f for s in json.loads(p.stdout)["partitions"][0]["segments"] for f in s["findings"]]
            per_kind = {}
            for f in findings:
                per_kind[f["name"]] = per_kind.get(f["name"], 0) + 1
            assert all(n <= 6 for n in per_kind.values()), per_kind  # the cap, plus its "N more" line


@pytest.fixture
def unreadable_log(part, monkeypatch):
    """A segment this user may not read (the suite runs as root, which reads anything: the denial is made
    where logtool opens files)."""
    import logtool.store.mapping as mapping
    denied = part / "00000000000000000090.log"
    opened = mapping.open_regular_stat  # what every open of a file for reading goes through

    def open_regular_stat(path):
        if Path(path) == denied:
            raise PermissionError(13, "Permission denied", str(path))
        return opened(path)

    monkeypatch.setattr(mapping, "open_regular_stat", open_regular_stat)
    return part


def _main(capsys, *args) -> tuple[int, str]:
    from logtool.cli import main
    with pytest.raises(SystemExit) as e:
        main([str(a) for a in args])
    return e.value.code, capsys.readouterr().err


def test_find_on_an_unreadable_segment_is_one_line_and_exit_8(unreadable_log, capsys):
    rc, err = _main(capsys, "find", unreadable_log, "--offset", "100")
    assert rc == 8 and err.startswith("logtool: ") and "Permission denied" in err and "internal error" not in err


def test_truncate_does_not_plan_a_partition_it_cannot_read_whole(unreadable_log, capsys):
    rc, err = _main(capsys, "truncate", unreadable_log)
    assert rc == 8 and "not planned" in err and "Permission denied" in err


def test_scan_of_a_damaged_partition_exits_4():
    from conftest import kafka_case
    p = subprocess.run([str(LOGTOOL), "scan", str(kafka_case("corrupt-torn-tail"))], capture_output=True, text=True)
    assert p.returncode == 4 and "damaged" in p.stdout
