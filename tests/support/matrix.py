"""The matrix of partitions every buildable library, magic and codec writes (kafka-python, aiokafka)."""
from __future__ import annotations

import json
from pathlib import Path

from conftest import run_logtool
from kafka.record import MemoryRecords

from fixtures import generator as g

MATRIX = [(lib, magic, codec)
          for lib in ("kafka-python", "aiokafka")
          for magic, codecs in ((0, ("none", "gzip", "snappy")), (1, ("none", "gzip", "snappy", "lz4")),
                                (2, ("none", "gzip", "snappy", "lz4", "zstd")))
          for codec in codecs]


def spec(lib: str, magic: int, codec: str, **kw) -> g.BatchSpec:
    args = dict(library=lib, magic=magic, codec=codec, batches=12, records_per_batch=6,
                null_key_every=5, null_value_every=7, empty_value_every=4, gaps={3: 5, 8: 2})
    if magic == 2:
        args.update(headers_per_record=2, producer=g.Producer(7001, 3, 0))
    return g.BatchSpec(**{**args, **kw})


def write(tmp: Path, s: g.BatchSpec, segment_bytes: int = 3000) -> Path:
    return g.write_partition(tmp, "topic-a.b", 3, g.build_batches(s), segment_bytes=segment_bytes).path


def reference(part: Path) -> list[dict]:
    """kafka-python's view of every .log: batches with their records."""
    out = []
    for log in sorted(part.glob("*.log")):
        recs = MemoryRecords(log.read_bytes())
        while recs.has_next():
            b = recs.next_batch()
            assert b.validate_crc()
            out.append({"file": log.name, "records": [(r.offset, r.timestamp, r.key, r.value,
                                                       tuple((k, v) for k, v in (r.headers or ()))) for r in b]})
    return out


def verify(*args: str) -> tuple[int, dict]:
    p = run_logtool("verify", "--format", "json", *args)
    assert "Traceback" not in p.stderr, p.stderr
    return p.returncode, json.loads(p.stdout)


def _last_log(part: Path) -> Path:
    return sorted(part.glob("*.log"))[-1]
