"""A log dir whose broker is running: it holds `.lock` and appends to the active segment while logtool
reads it. Such a tail is a write in progress, not damage; the same bytes with no broker are damage."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from conftest import run_logtool

import fixtures.generator as g

# The appender: holds the lock the way the JVM does (fcntl write lock on .lock), then appends batches to
# the active segment, every other one in two writes with a pause between them (a reader may see half).
APPENDER = textwrap.dedent("""
    import fcntl, os, sys, time
    log_dir, log, batches = sys.argv[1], sys.argv[2], sys.argv[3]
    fd = os.open(os.path.join(log_dir, ".lock"), os.O_RDWR | os.O_CREAT)
    fcntl.lockf(fd, fcntl.LOCK_EX)
    data = open(batches, "rb").read()
    sizes = [int(x) for x in open(batches + ".sizes").read().split()]
    print("locked", flush=True)
    out = os.open(log, os.O_WRONLY | os.O_APPEND)
    pos = 0
    for i, size in enumerate(sizes):
        chunk = data[pos : pos + size]
        pos += size
        if i % 2:
            os.write(out, chunk[: size // 2])
            time.sleep(0.03)
            os.write(out, chunk[size // 2 :])
        else:
            os.write(out, chunk)
        time.sleep(0.01)
    print("done", flush=True)
    sys.stdin.read()
""")


def _partition(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A log dir with one partition of 20 batches, and 200 more batches (offsets after them) to append."""
    log_dir = tmp_path / "logs"
    entries = g.build_batches(g.BatchSpec(batches=220, records_per_batch=5, seed=3))
    g.write_log_dir(log_dir, [g.PartitionSpec("live", 0, entries[:20])])
    more = tmp_path / "more.bin"
    more.write_bytes(b"".join(e.data for e in entries[20:]))
    Path(str(more) + ".sizes").write_text(" ".join(str(len(e.data)) for e in entries[20:]))
    log = sorted((log_dir / "live-0").glob("*.log"))[-1]
    return log_dir, log, more


def _errors(doc: dict) -> list[dict]:
    return [f for p in doc["partitions"] for s in p["segments"] for f in s["findings"] if f["severity"] == "error"] + \
           [f for p in doc["partitions"] for f in p["findings"] if f["severity"] == "error"]


@pytest.mark.slow
def test_a_tail_being_written_by_a_running_broker_is_not_damage(tmp_path):
    log_dir, log, more = _partition(tmp_path)
    child = subprocess.Popen([sys.executable, "-c", APPENDER, str(log_dir), str(log), str(more)],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "locked"
        seen_being_written = 0
        for _ in range(20):
            p = run_logtool("verify", "--format", "json", str(log_dir / "live-0"))
            doc = json.loads(p.stdout)
            assert _errors(doc) == [], _errors(doc)
            names = [f["name"] for s in doc["partitions"][0]["segments"] for f in s["findings"]]
            seen_being_written += "TAIL_BEING_WRITTEN" in names
            assert p.returncode == 0
    finally:
        child.kill()
        child.wait()
    # The appender wrote in halves with pauses: some runs must have met a half-written batch.
    assert seen_being_written > 0


def test_the_same_torn_tail_without_a_broker_is_damage(tmp_path):
    log_dir, log, more = _partition(tmp_path)
    data = more.read_bytes()
    size = int(Path(str(more) + ".sizes").read_text().split()[0])
    with open(log, "ab") as f:
        f.write(data[: size // 2])  # half a batch, and nobody is writing the rest
    p = run_logtool("verify", "--format", "json", str(log_dir / "live-0"))
    assert p.returncode == 4
    assert [f["name"] for f in _errors(json.loads(p.stdout))] == ["TORN_BATCH"]


@pytest.mark.slow
def test_a_broker_holding_the_lock_with_a_torn_tail_that_does_not_change_is_damage(tmp_path):
    """Re-examined once: a tail that stays torn while the broker runs is damage (a crash of the writer)."""
    log_dir, log, more = _partition(tmp_path)
    size = int(Path(str(more) + ".sizes").read_text().split()[0])
    with open(log, "ab") as f:
        f.write(more.read_bytes()[: size // 2])
    os.utime(log, ns=(time.time_ns() - 10**10,) * 2)
    holder = subprocess.Popen([sys.executable, "-c", "import fcntl,os,sys; fd=os.open(sys.argv[1], os.O_RDWR|os.O_CREAT); "
                               "fcntl.lockf(fd, fcntl.LOCK_EX); print('locked', flush=True); sys.stdin.read()",
                               str(log_dir / ".lock")], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        p = run_logtool("verify", "--format", "json", str(log_dir / "live-0"))
    finally:
        holder.kill()
        holder.wait()
    assert [f["name"] for f in _errors(json.loads(p.stdout))] == ["TORN_BATCH"]
