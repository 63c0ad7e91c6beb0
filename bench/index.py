"""`make bench`, index part: `find` against a full walk on a partition of many segments, and `index
rebuild` against shallow verify on one large segment. Writes bench/results/index.{json,md}.

BENCH_SEGMENTS (default 1000) segments of BENCH_SEGMENT_BYTES (default 1 MB) each; the large segment is
the one bench.run generates (BENCH_BYTES, default 1 GB).
"""
from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path

from bench.run import DATA, best, partition_dir, write_results
from fixtures.generator import big_templates, repeat_to_size, write_partition
from logtool.checks.engine import check_target
from logtool.store.discover import Target
from logtool.recovery import index_rebuild
from logtool.store.partition import Partition
from logtool.store.seek import seek_offset

SEGMENTS = int(os.environ.get("BENCH_SEGMENTS", 1000))
SEGMENT_BYTES = int(os.environ.get("BENCH_SEGMENT_BYTES", 1_000_000))
LOOKUPS = 300


def many_segments() -> Path:
    part = DATA / f"segments-{SEGMENTS}x{SEGMENT_BYTES}" / "many-0"
    if not part.exists():
        print(f"generating {SEGMENTS} segments into {part} ...", file=sys.stderr)
        write_partition(part.parent, "many", 0, repeat_to_size(big_templates(), SEGMENTS * SEGMENT_BYTES),
                        segment_bytes=SEGMENT_BYTES)
    return part


def walk_to(part: Partition, target: int) -> int:
    """The naive way: read every batch from the start until the one holding `target`; bytes read."""
    read = 0
    for seg in part.segments:
        with seg:
            for v in seg.walk():
                read += v.size
                if v.last_offset >= target:
                    return read
    raise AssertionError(f"offset {target} not found")


def main() -> int:
    part_dir = many_segments()
    part = Partition.from_dir(part_dir)
    last = seek_offset(part, 0)  # warm the directory listing and page cache
    end = part.segments[-1]
    with end:
        last_offset = max(v.last_offset for v in end.walk())
    rnd = random.Random(11)
    targets = [rnd.randint(0, last_offset) for _ in range(LOOKUPS)]
    t = time.perf_counter()
    costs = [seek_offset(part, x).cost for x in targets]
    per_lookup = (time.perf_counter() - t) / LOOKUPS
    far = [rnd.randint(last_offset * 9 // 10, last_offset) for _ in range(3)]
    t_find_far, _ = best(lambda: [seek_offset(part, x) for x in far])
    t_walk_far, walked = best(lambda: [walk_to(part, x) for x in far])
    exe = Path(sys.executable).with_name("logtool")
    t = time.perf_counter()
    out = subprocess.run([str(exe), "find", str(part_dir), "--offset", str(far[0]), "--format", "json"],
                         capture_output=True, text=True, check=True).stdout
    t_command = time.perf_counter() - t
    assert json.loads(out)["batch_last_offset"] >= far[0]
    del last

    big = partition_dir()
    t_verify, _ = best(lambda: check_target(Target(big), False))
    t_rebuild, plan = best(lambda: index_rebuild.plan_index_rebuild(Partition.from_dir(big), 4096))
    assert not plan.pending, "the generator writes indexes by the recovery rule: nothing should differ"

    res = {
        "segments": len(part.segments), "partition_bytes": sum(s.size for s in part.segments),
        "find_lookups": LOOKUPS, "find_us_per_lookup": round(per_lookup * 1e6, 1),
        "find_max_log_bytes_read": max(c.log_bytes_read for c in costs),
        "find_mean_log_bytes_read": round(sum(c.log_bytes_read for c in costs) / LOOKUPS),
        "find_max_index_entries_read": max(c.index_entries_read for c in costs),
        "far_targets": far, "find_far_s": round(t_find_far / len(far), 6),
        "walk_far_s": round(t_walk_far / len(far), 3),
        "walk_far_bytes": walked, "find_speedup_vs_walk": round(t_walk_far / t_find_far),
        "find_command_s": round(t_command, 3),
        "rebuild_segment_bytes": sum(s.size for s in Partition.from_dir(big).segments),
        "verify_shallow_s": round(t_verify, 3), "index_rebuild_s": round(t_rebuild, 3),
        "rebuild_over_verify": round(t_rebuild / t_verify, 2),
    }
    write_results("index", res, render)
    return 0


def render(r: dict) -> str:
    return f"""# index benchmark

`find --offset` on a partition of {r['segments']} segments ({r['partition_bytes']:,} bytes), {r['find_lookups']} random offsets:
{r['find_us_per_lookup']} us per lookup in-process, at most {r['find_max_log_bytes_read']:,} log bytes
(mean {r['find_mean_log_bytes_read']:,}) and {r['find_max_index_entries_read']} index entries read per lookup.
Near the end of the partition: find {r['find_far_s'] * 1e3:.3f} ms against a full walk of {r['walk_far_s']} s
({r['find_speedup_vs_walk']:,}x faster). As a command (`logtool find --offset`, Python start-up included): {r['find_command_s']} s.

`index rebuild` of a {r['rebuild_segment_bytes']:,}-byte segment: {r['index_rebuild_s']} s against shallow verify
{r['verify_shallow_s']} s ({r['rebuild_over_verify']}x).
"""  # noqa: E501 - the report's Markdown: a table row, or a line, as it is written


if __name__ == "__main__":
    sys.exit(main())
