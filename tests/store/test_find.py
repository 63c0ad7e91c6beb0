"""`find` agrees with a brute-force walk for every offset and timestamp, whatever state the indexes are in."""
from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from conftest import kafka_case, run_logtool

from logtool.format.records import iter_records
from logtool.store.partition import Partition
from logtool.store.seek import SeekError, seek_offset, seek_timestamp

CASES = ["v2-none-mixed", "v2-compacted", "v2-mixed-codecs", "v1-gzip", "v0-snappy", "v1-to-v2-upgrade",
         "v2-idempotent-txn", "v2-gzip-logappendtime", "v2-crash-preallocated", "corrupt-index-wrong-positions",
         "corrupt-index-truncated", "corrupt-timeindex-backwards"]


def brute(part_dir: Path):
    """Every valid batch in log order (file, position, base, last) and every record (offset, timestamp)."""
    batches, records = [], []
    part = Partition.from_dir(part_dir)
    for seg in part.segments:
        with seg:
            for v in seg.walk():
                batches.append((seg.log_path.name, v.position, v.base_offset, v.last_offset))
                records += [(r.offset, r.timestamp, seg.log_path.name, v.position) for r in iter_records(seg.buf, v)]
    return batches, records


@pytest.mark.parametrize("case", CASES)
def test_every_offset(case):
    part_dir = kafka_case(case)
    batches, _ = brute(part_dir)
    part = Partition.from_dir(part_dir)
    first, last = batches[0][2], batches[-1][3]
    for target in range(first, last + 1):
        want = next(b for b in batches if b[3] >= target)
        hit = seek_offset(part, target)
        assert (hit.segment.log_path.name, hit.batch.position) == (want[0], want[1]), target
        assert hit.offset == max(target, want[2])
    with pytest.raises(SeekError, match=f"{first}..{last}"):
        seek_offset(part, last + 1)


@pytest.mark.parametrize("case", CASES)
def test_every_timestamp(case):
    part_dir = kafka_case(case)
    _, records = brute(part_dir)
    part = Partition.from_dir(part_dir)
    stamps = sorted({t for _, t, _, _ in records})
    probes = sorted({p for t in stamps for p in (t - 1, t, t + 1)})
    if len(probes) > 600:
        probes = random.Random(5).sample(probes, 600)
    for target in probes:
        want = next(((o, t, f, p) for o, t, f, p in records if t >= target), None)
        if want is None:
            with pytest.raises(SeekError):
                seek_timestamp(part, target)
            continue
        hit = seek_timestamp(part, target)
        assert (hit.offset, hit.timestamp, hit.segment.log_path.name, hit.batch.position) == want, target


def test_cost_is_bounded_by_the_index(case_copy=None):
    part = Partition.from_dir(kafka_case("v2-none-mixed"))
    hit = seek_offset(part, 470)
    assert hit.cost.index_entries_read <= 6
    assert hit.cost.log_bytes_read <= 4096 + 2 * 1400  # one index interval plus about one batch
    assert hit.cost.notes == []


def test_damaged_index_is_named_and_walked_around():
    part = Partition.from_dir(kafka_case("corrupt-index-wrong-positions"))
    hit = seek_offset(part, 40)
    assert hit.batch.base_offset <= 40 <= hit.batch.last_offset
    assert any("does not start the batch" in n for n in hit.cost.notes)


def test_garbage_indexes(case_copy):
    part_dir = case_copy("v2-none-mixed")
    rnd = random.Random(3)
    for idx in part_dir.glob("*index"):
        idx.write_bytes(bytes(rnd.randrange(256) for _ in range(rnd.randrange(1, 300))))
    batches, records = brute(part_dir)
    part = Partition.from_dir(part_dir)
    for target in range(batches[0][2], batches[-1][3] + 1, 7):
        want = next(b for b in batches if b[3] >= target)
        hit = seek_offset(part, target)
        assert (hit.segment.log_path.name, hit.batch.position) == (want[0], want[1])
    for _, t, _, _ in records[::11]:
        hit = seek_timestamp(part, t)
        assert hit.timestamp >= t


def test_cli_json_and_errors():
    part = kafka_case("v2-compacted")
    p = run_logtool("find", str(part), "--offset", "430", "--format", "json")
    doc = json.loads(p.stdout)
    assert p.returncode == 0
    assert {"offset", "segment", "position", "batch_base_offset", "batch_last_offset", "index_entries_read",
            "log_bytes_read"} <= set(doc)
    p = run_logtool("find", str(part), "--offset", "99999")
    assert p.returncode == 4 and "429..562" in p.stderr
    p = run_logtool("find", str(part), "--timestamp", "2023-11-15T11:13:30Z")
    assert p.returncode == 0 and "offset" in p.stdout
    assert run_logtool("find", str(part)).returncode == 16
    assert run_logtool("find", str(part), "--timestamp", "yesterday").returncode == 16
    assert run_logtool("find", "/no/such/dir", "--offset", "1").returncode == 8
