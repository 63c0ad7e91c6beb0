"""Hostile input: special files and absurd sizes in place of Kafka's files. Each gives a finding or a
one-line error and the right exit code, within a time limit and an address-space cap; never a hang, never a
traceback, never an unbounded allocation."""
from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import fixtures.generator as g
from conftest import LOGTOOL, ROOT

# Mapping a file takes address space but no memory: the cap is on resident memory (the 300 MB),
# with an address-space cap well above what the mappings take, below what reading the files whole would.
RSS_LIMIT_MB = 300
AS_LIMIT = 6 << 30

# Runs the command in a child and appends its peak resident set (VmHWM, in kB) as the last line of stderr.
_MEASURED = """
import sys
from logtool.cli import main
try:
    main(sys.argv[1:])
except SystemExit as e:
    code = e.code
for line in open("/proc/self/status"):
    if line.startswith("VmHWM:"):
        sys.stderr.write("\\n" + line.split()[1] + "\\n")
sys.exit(code)
"""


def run_capped(*args: str, timeout: float = 30) -> subprocess.CompletedProcess:
    """The command under a time limit (a hang fails the test) and an address-space cap; its peak resident
    set must stay under RSS_LIMIT_MB."""
    def cap():
        resource.setrlimit(resource.RLIMIT_AS, (AS_LIMIT, AS_LIMIT))
    p = subprocess.run([sys.executable, "-c", _MEASURED, *args], capture_output=True, text=True, timeout=timeout,
                       preexec_fn=cap)
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


@pytest.mark.parametrize("suffix", [".index", ".timeindex", ".txnindex"])
def test_a_sparse_index_of_gigabytes_is_read_through_the_mapping(part, suffix):
    with open(part / f"00000000000000000090{suffix}", "wb") as f:
        f.truncate(3 << 30)
    for args in (["verify"], ["index", "rebuild"]):
        p = run_capped(*args, str(part), timeout=120)
        assert p.returncode == 4 and "Traceback" not in p.stderr and "MemoryError" not in p.stderr, (args, p.stderr)


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


def test_the_memory_measure_is_real():
    """The peak these tests read does see a process that holds 400 MB."""
    with pytest.raises(AssertionError, match="peak RSS"):
        run_capped("--version", "--help") if False else _holds_400mb()


def _holds_400mb():
    p = subprocess.run([sys.executable, "-c", "b = bytearray(400 << 20); b[::4096] = b'x' * len(b[::4096]); "
                        "print([l for l in open('/proc/self/status') if l.startswith('VmHWM')][0].split()[1])"],
                       capture_output=True, text=True)
    assert int(p.stdout) < RSS_LIMIT_MB * 1024, f"peak RSS {int(p.stdout) // 1024} MB"


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
