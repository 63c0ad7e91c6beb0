"""A reader that goes away (`logtool ... | head -1`) ends every command quietly with exit 0, as Unix tools end,
never with 1 ("problems repaired") or a traceback. `dump`'s own pipeline test: tests/reads/test_dump.py."""
from __future__ import annotations

import fcntl
import os
import shutil
import subprocess

import pytest
from conftest import LOGTOOL, SHARED, require

from fixtures import generator as g

# The pipe holds one page, and head reads at most 8 KiB before it leaves: a command printing more than both
# still writes after head has gone, so the broken pipe is certain, not a race.
PIPE_SIZE = 4096
PARTITIONS = 300
THREE_BROKERS = SHARED / "real-more/greenlemonT__kafka-temp/data/kafka1"


@pytest.fixture(scope="module")
def torn_log_dir(tmp_path_factory):
    """A log dir of PARTITIONS partitions, each with a torn tail (a finding and a repair for each)."""
    log_dir = tmp_path_factory.mktemp("logs")
    first = g.write_partition(log_dir, "t", 0, g.build_batches(g.BatchSpec(batches=5, records_per_batch=3, seed=1)))
    with open(first.path / f"{0:020d}.log", "ab") as log:
        log.write(b"\0" * 7)
    for n in range(1, PARTITIONS):
        shutil.copytree(first.path, log_dir / f"t-{n}")
    return log_dir


@pytest.mark.parametrize("words", [
    ["scan", "{logs}"], ["verify", "{logs}"], ["ls", "{logs}"], ["truncate", "{logs}"],
    ["index", "rebuild", "{logs}"], ["verify", "--format", "jsonl", "{logs}"],
    ["metadata", "--history", "__consumer_offsets", "{kraft}"],
], ids=" ".join)
def test_a_reader_gone_ends_a_command_with_0(torn_log_dir, words):
    argv = [str(LOGTOOL)] + [w.format(logs=torn_log_dir, kraft=require(THREE_BROKERS)) for w in words]
    whole = subprocess.run(argv, capture_output=True, timeout=120)
    assert len(whole.stdout) > PIPE_SIZE + 8192 + 4096, "too little output for a certain broken pipe"
    read_end, write_end = os.pipe()
    fcntl.fcntl(write_end, fcntl.F_SETPIPE_SZ, PIPE_SIZE)
    head = subprocess.Popen(["head", "-1"], stdin=read_end, stdout=subprocess.PIPE)
    os.close(read_end)
    try:
        p = subprocess.run(argv, stdout=write_end, stderr=subprocess.PIPE, timeout=120)
    finally:
        os.close(write_end)
    first = head.communicate(timeout=60)[0]
    assert p.returncode == 0, p.stderr
    assert p.stderr == b""
    assert first == whole.stdout.split(b"\n")[0] + b"\n"
