"""The incident path of `dump`: records reach the file or pipe they are sent to whatever the terminal shows,
side files stream in flat memory, kafka-dump-log's output is held at two more corners of damage, and an
unreadable segment is reported while the segments after it are read."""
from __future__ import annotations

import json
import os
import re
import shutil
import struct
import subprocess
import threading
from pathlib import Path

import pytest
from conftest import KAFKA_WRITTEN, LOGTOOL, peak_rss_kb, require

from fixtures import generator as g

LOG = "00000000000000000000.log"
TERMINAL_ENV = {"COLUMNS": "80", "TERM": "xterm-256color"}


@pytest.fixture(scope="module")
def partition(tmp_path_factory) -> Path:
    """A partition of about 2 MB in three segments, one with a batch whose CRC fails: long enough for a bar."""
    spec = g.BatchSpec(batches=300, records_per_batch=50, seed=5)
    part = g.write_partition(tmp_path_factory.mktemp("incident"), "orders", 0, g.build_batches(spec),
                             segment_bytes=700_000).path
    logs = sorted(part.glob("*.log"))
    assert len(logs) == 3
    g.flip_bit(logs[1], 5_000)
    return part


# ------------------------------------------------------------------ 1. progress never touches stdout

def _run_at_terminal(argv: list[str], stdout: str, tmp_path: Path) -> tuple[int, bytes, bytes]:
    """`argv` with stderr on a pseudo-terminal and stdout to a file or a pipe: the exit code, stdout's bytes,
    and what the terminal was sent."""
    master, slave = os.openpty()
    shown: list[bytes] = []

    def drain() -> None:  # a terminal that is not read fills up, and the writer blocks
        while True:
            try:
                chunk = os.read(master, 1 << 16)
            except OSError:  # EIO: every writer has closed it
                return
            if not chunk:
                return
            shown.append(chunk)

    reader = threading.Thread(target=drain)
    reader.start()
    env = {**os.environ, **TERMINAL_ENV}
    try:
        if stdout == "file":
            target = tmp_path / "stdout"
            with target.open("wb") as f:
                rc = subprocess.run(argv, stdout=f, stderr=slave, stdin=subprocess.DEVNULL, env=env,
                                    timeout=300).returncode
            out = target.read_bytes()
        else:
            p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=slave, stdin=subprocess.DEVNULL, env=env,
                               timeout=300)
            rc, out = p.returncode, p.stdout
    finally:
        os.close(slave)
        reader.join(timeout=30)
        os.close(master)
    return rc, out, b"".join(shown)


def _run_without_terminal(argv: list[str]) -> tuple[int, bytes]:
    p = subprocess.run(argv, capture_output=True, stdin=subprocess.DEVNULL, env={**os.environ, **TERMINAL_ENV},
                       timeout=300)
    return p.returncode, p.stdout


@pytest.mark.sample(2)
@pytest.mark.parametrize("stdout", ["file", "pipe"])
@pytest.mark.parametrize("command,jsonl", [(["dump", "--format", "jsonl"], True), (["dump"], False),
                                           (["dump", "--print-data"], False), (["verify", "--format", "jsonl"], True)],
                         ids=["dump-jsonl", "dump-text", "dump-data", "verify-jsonl"])
def test_records_reach_stdout_whatever_the_terminal_shows(partition, tmp_path, command, jsonl, stdout):
    """`logtool dump orders-0 --format jsonl > rescued.jsonl` at a terminal: the bar is drawn on the terminal
    (stderr) and every byte of the records is in the file, as without a terminal; nothing re-wrapped."""
    argv = [str(LOGTOOL), *command, str(partition)]
    rc, out, terminal = _run_at_terminal(argv, stdout, tmp_path)
    want_rc, want = _run_without_terminal(argv)
    assert b"\x1b[" in terminal, "no progress display was drawn: the test does not test it"
    assert rc == want_rc == 4 and out == want
    if jsonl:
        rows = [json.loads(line) for line in out.decode().splitlines()]
        assert rows[-1]["type"] == "summary" and len(rows) > (100 if command[0] == "dump" else 1)
    else:
        assert out.startswith(b"Dumping ") and out.count(b"Dumping ") == 3 and len(out) > 1_000_000
    assert b"baseOffset" not in terminal and b'"type"' not in terminal  # no record went to the terminal


@pytest.mark.spark
def test_the_audit_summary_reaches_stdout_at_a_terminal(partition, tmp_path):
    """The audit's progress line shows on the terminal; its summary is in the file, the same document as
    without a terminal but for the seconds it took, where its tables went and which audit it was."""
    def argv(out: str) -> list[str]:
        return [str(LOGTOOL), "audit", str(partition), "-o", str(tmp_path / out), "--master", "local[1]",
                "--format", "json"]

    rc, out, terminal = _run_at_terminal(argv("at-terminal"), "file", tmp_path)
    want_rc, want = _run_without_terminal(argv("without"))

    def same_part(doc: bytes) -> dict:
        d = json.loads(doc)
        return {k: v for k, v in d.items() if k not in ("seconds", "output", "audit_id", "audited_at")}

    assert terminal and rc == want_rc == 4 and same_part(out) == same_part(want)


# ------------------------------------------------------------------ 2. side files stream in flat memory

RSS_LIMIT_KB = 300 * 1024


def _write_offset_index(path: Path, entries: int, position: int) -> None:
    """An offset index of `entries` 8-byte entries, offsets 1, 2, 3... (relative), all at `position`."""
    entry = struct.Struct(">ii")
    chunk = 1 << 20
    with path.open("wb") as f:
        for start in range(1, entries + 1, chunk):
            f.write(b"".join(entry.pack(rel, position) for rel in range(start, min(start + chunk, entries + 1))))


@pytest.fixture(scope="module")
def big_index(tmp_path_factory) -> Path:
    """A partition dir whose one small segment has an 80 MB `.index` (10 million entries) and a 12 MB
    `.timeindex` (a million entries) over it."""
    part = g.write_partition(tmp_path_factory.mktemp("big-index"), "events", 0,
                             g.build_batches(g.BatchSpec(batches=2, records_per_batch=1)), segment_bytes=1 << 30).path
    _write_offset_index(part / "00000000000000000000.index", 10_000_000, 0)
    time_entry = struct.Struct(">qi")
    (part / "00000000000000000000.timeindex").write_bytes(
        b"".join(time_entry.pack(g.FIXED_TIME_MS + i, i + 1) for i in range(1_000_000)))
    assert (part / "00000000000000000000.index").stat().st_size == 80_000_000
    return part


@pytest.mark.slow
@pytest.mark.parametrize("name", ["00000000000000000000.index", "00000000000000000000.timeindex"])
def test_side_file_dump_memory_stays_flat(big_index, name):
    """Entries stream: the whole index was a list before anything printed (1.2 GB for 10 million entries),
    and a `.timeindex` loaded its sibling `.index` so."""
    rc, rss, err = peak_rss_kb([str(LOGTOOL), "dump", name], big_index)
    assert rc == 0 and err == ""
    assert rss < RSS_LIMIT_KB, f"peak RSS {rss // 1024} MB"


@pytest.mark.slow
def test_side_file_json_is_the_indented_document_written_an_entry_at_a_time(tmp_path):
    """`--format json` of an index writes, an entry at a time, the document json.dumps(indent=2) makes."""
    part = g.write_partition(tmp_path, "events", 0, g.build_batches(g.BatchSpec(batches=2, records_per_batch=1)),
                             segment_bytes=1 << 30).path
    _write_offset_index(part / "00000000000000000000.index", 3, 0)
    (part / "00000000000000000000.timeindex").write_bytes(b"")
    docs = []
    for name in ("00000000000000000000.index", "00000000000000000000.timeindex"):
        p = subprocess.run([str(LOGTOOL), "dump", name, "--format", "json"], cwd=part, capture_output=True, text=True)
        doc = json.loads(p.stdout)
        assert p.stdout == json.dumps(doc, indent=2) + "\n"
        assert list(doc) == ["path", "type", "entries", "stop", "exit_code"] and doc["exit_code"] == p.returncode == 0
        docs.append(doc["entries"])
    assert docs == [[{"offset": n, "position": 0} for n in (1, 2, 3)], []]


# ------------------------------------------------------------------ 3. two corners of kafka-dump-log

def _legacy_partition(root: Path, magic: int, codec: str) -> tuple[Path, g.EntryHeader]:
    """A v0/v1 partition of four entries written by kafka-python; returns it and its third entry's header."""
    part = g.write_partition(root, f"legacy{magic}{codec}", 0, g.build_batches(
        g.BatchSpec(magic=magic, codec=codec, batches=4, records_per_batch=2, seed=1)), segment_bytes=1 << 30).path
    return part, list(g.iter_entry_headers((part / LOG).read_bytes()))[2]


def _shrink_length(log: Path, entry: g.EntryHeader, by: int) -> int:
    """The entry's length field made `by` smaller (as a flipped bit in it can); returns the new length."""
    data = bytearray(log.read_bytes())
    length = struct.unpack_from(">i", data, entry.position + 8)[0] - by
    struct.pack_into(">i", data, entry.position + 8, length)
    log.write_bytes(bytes(data))
    return length


def _dump_text(part: Path, *flags: str) -> subprocess.CompletedProcess:
    """As kafka-dump-log was run for the shared outputs: inside the partition dir, with the bare file name."""
    return subprocess.run([str(LOGTOOL), "dump", LOG, *flags], cwd=part, capture_output=True)


def _kafka_batch_line(log: Path, position: int) -> bytes:
    """printBatchLevel for a v0/v1 entry, from its bytes as FileLogInputStream frames it."""
    data = log.read_bytes()
    offset, length, crc, magic, attributes = struct.unpack_from(">qiIbb", data, position)
    timestamp = struct.unpack_from(">q", data, position + 18)[0] if magic == 1 else -1
    kind = "NoTimestampType" if magic == 0 else "LogAppendTime" if attributes & 8 else "CreateTime"
    codec = ["none", "gzip", "snappy", "lz4"][attributes & 7]
    return (f"offset: {offset} position: {position} {kind}: {timestamp} size: {12 + length} magic: {magic} "
            f"compresscodec: {codec} crc: {crc} isvalid: false\n").encode()


def _lines_before(stdout: bytes, position: int) -> bytes:
    """The lines of a dump before the batch line at `position` (`... position: P ...`)."""
    m = re.search(rb"^offset: \d+ position: %d " % position, stdout, re.M)
    assert m, stdout[-500:]
    return stdout[: m.start()]


@pytest.mark.sample(1)
@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("flags", [[], ["--print-data"]], ids=["deep", "data"])
def test_a_shrunk_compressed_wrapper_ends_the_text_where_kafkas_tool_throws(tmp_path, magic, flags):
    """DumpLogSegments prints the wrapper's batch line (isvalid: false), then its deep iterator reads the
    wrapper's value past the shortened message (LegacyRecord.value: a limit beyond the buffer) and throws:
    its stdout ends there. logtool read on: a `Found N invalid bytes` line or another batch."""
    part, entry = _legacy_partition(tmp_path, magic, "gzip")
    clean, clean_shallow = _dump_text(part, *flags).stdout, _dump_text(part, "--batches-only").stdout
    length = _shrink_length(part / LOG, entry, 3)
    p = _dump_text(part, *flags)
    assert p.stdout == _lines_before(clean, entry.position) + _kafka_batch_line(part / LOG, entry.position)
    assert p.returncode == 4 and b"kafka-dump-log throws in the records of the batch at byte" in p.stderr
    assert b"Non-consecutive offsets" not in p.stderr  # its list of gaps is never reached
    # Without --deep-iteration no record is read: it frames the next entry inside the wrapper's old value
    # (a length beyond the file) and ends quietly, as logtool did and does.
    log = (part / LOG).read_bytes()
    after = entry.position + 12 + length
    assert struct.unpack_from(">i", log, after + 8)[0] > len(log) - after
    shallow = _dump_text(part, "--batches-only").stdout
    assert shallow == _lines_before(clean_shallow, entry.position) + _kafka_batch_line(part / LOG, entry.position) + \
        f"Found {len(log) - after} invalid bytes at the end of {LOG}\n".encode()


@pytest.mark.slow
@pytest.mark.parametrize("magic", [0, 1])
def test_a_shrunk_message_prints_its_sizes_as_kafkas_tool_reads_them(tmp_path, magic):
    """An uncompressed v0/v1 message is its own record: DumpLogSegments reads its key and value sizes from
    their fields (within the shortened message) and prints the record line, then frames the next entry
    inside the message's old value (text: a length beyond the file) and ends quietly. With
    --print-data-log it reads the value itself, past the message, and throws after the sizes: its last
    line has no newline. logtool printed no record line and read on."""
    part, entry = _legacy_partition(tmp_path, magic, "none")
    deep, data = _dump_text(part).stdout, _dump_text(part, "--print-data").stdout
    length = _shrink_length(part / LOG, entry, 3)
    log = (part / LOG).read_bytes()
    key_at = entry.position + 12 + (6 if magic == 0 else 14)
    key_size = struct.unpack_from(">i", log, key_at)[0]
    value_size = struct.unpack_from(">i", log, key_at + 4 + key_size)[0]
    after = entry.position + 12 + length
    assert struct.unpack_from(">i", log, after + 8)[0] > len(log) - after  # the next frame: too long, quiet end
    crc = struct.unpack_from(">I", log, entry.position + 12)[0]
    kind = "NoTimestampType: -1" if magic == 0 else f"CreateTime: {entry.max_timestamp}"
    record = f"| offset: {entry.offset} {kind} keySize: {key_size} valueSize: {value_size} isValid: false crc: {crc}"
    batch = _kafka_batch_line(part / LOG, entry.position)

    p = _dump_text(part)
    assert p.stdout == _lines_before(deep, entry.position) + batch + record.encode() + \
        f"\nFound {len(log) - after} invalid bytes at the end of {LOG}\n".encode()
    p = _dump_text(part, "--print-data")
    assert p.stdout == _lines_before(data, entry.position) + batch + record.encode()
    assert p.returncode == 4


@pytest.mark.slow
def test_a_timeindex_without_its_index_prints_no_entry(tmp_path):
    """DumpLogSegments opens the offset index beside a `.timeindex` before reading an entry; a missing one is
    created with a max index size of -1, which it refuses (Invalid max index size: -1). logtool printed
    every entry, and creates nothing."""
    part = tmp_path / "payments-0"
    shutil.copytree(require(KAFKA_WRITTEN / "v2-idempotent-txn" / "payments-0"), part)
    (part / "00000000000000000000.index").unlink()
    for flags in ([], ["--index-sanity-check"], ["--verify-index-only"]):
        p = subprocess.run([str(LOGTOOL), "dump", "00000000000000000000.timeindex", *flags], cwd=part,
                           capture_output=True, text=True)
        assert p.stdout == "Dumping 00000000000000000000.timeindex\n" and p.returncode == 4
        assert "00000000000000000000.index is missing" in p.stderr
    p = subprocess.run([str(LOGTOOL), "dump", "00000000000000000000.timeindex", "--format", "jsonl"], cwd=part,
                       capture_output=True, text=True)
    [summary] = [json.loads(line) for line in p.stdout.splitlines()]
    assert summary["entries"] == 0 and "Invalid max index size: -1" in summary["stop"]
    assert not (part / "00000000000000000000.index").exists()
    assert b"timestamp: " in subprocess.run(  # a segment that has its index is dumped as before
        [str(LOGTOOL), "dump", "00000000000000000096.timeindex"], cwd=part, capture_output=True).stdout


# ------------------------------------------------------------------ 4. an unreadable segment

NO_DAC = ("setpriv", "--inh-caps=-dac_override,-dac_read_search",
          "--bounding-set=-dac_override,-dac_read_search", "--")  # root, but file modes hold


@pytest.fixture
def one_unreadable(tmp_path) -> tuple[Path, list[Path]]:
    """A partition of three segments whose middle `.log` may not be read (mode 000)."""
    part = g.write_partition(tmp_path, "orders", 0, g.build_batches(g.BatchSpec(batches=9, records_per_batch=2)),
                             segment_bytes=1200).path
    logs = sorted(part.glob("*.log"))
    assert [log.name for log in logs] == [LOG, "00000000000000000008.log", "00000000000000000016.log"]
    logs[1].chmod(0)
    assert subprocess.run([*NO_DAC, "cat", str(logs[1])], capture_output=True).returncode != 0
    return part, logs


def _dump_no_dac(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*NO_DAC, str(LOGTOOL), "dump", *map(str, args)], capture_output=True, text=True,
                          timeout=300)


@pytest.mark.root
def test_an_unreadable_segment_is_reported_and_the_next_are_read(one_unreadable):
    """Exit 8, as the README promises for what could not be read: the job was not done whole. The
    segments after it are dumped (they were skipped: the dump stopped there)."""
    part, logs = one_unreadable
    p = _dump_no_dac(part, "--format", "jsonl")
    rows = [json.loads(line) for line in p.stdout.splitlines()]
    [damage] = [r for r in rows if r["type"] == "damage"]
    assert damage["segment"] == logs[1].name and damage["position"] == 0
    assert damage["bytes_following"] == logs[1].stat().st_size and damage["finding"]["name"] == "UNREADABLE"
    assert [r["offset"] for r in rows if r["type"] == "record"] == [*range(8), 16, 17]
    assert rows[-1]["type"] == "summary" and rows[-1]["exit_code"] == 8 and rows[-1]["segments_unreadable"] == 1
    assert p.returncode == 8

    p = _dump_no_dac(part)  # text: the segment's header lines, as kafka-dump-log prints them before it opens it
    assert p.returncode == 8 and p.stdout.count("Dumping ") == 3
    assert f"Dumping {logs[1]}\nLog starting offset: 8\nDumping {logs[2]}\n" in p.stdout
    assert "| offset: 17 " in p.stdout
    assert f"logtool: cannot read {logs[1].name}: Permission denied" in p.stderr

    p = _dump_no_dac(part, "--from-offset", "10", "--format", "jsonl")  # a range that starts inside it
    rows = [json.loads(line) for line in p.stdout.splitlines()]
    assert [r["type"] for r in rows] == ["damage", "record", "record", "summary"] and p.returncode == 8
