"""`make bench`, dump part: `logtool dump --format jsonl > /dev/null` of the large generated segment against
aiokafka's record iteration on the same file in one run, where the time goes, and `--from-offset` near
the end of a partition of many segments (what it reads). Writes bench/results/dump.{json,md}.

The large segment is bench.run's (BENCH_BYTES, default 1 GB); the partition of many segments is
bench.index's (BENCH_SEGMENTS x BENCH_SEGMENT_BYTES). BENCH_REPEAT gives best-of-N (default 3).
"""
from __future__ import annotations

import json
import os
import platform
import sys
import time
from pathlib import Path

from bench import peers
from bench.index import many_segments
from bench.run import REPEAT, RESULTS, best, measured, partition_dir
from logtool.reads import decoders
from logtool.render import dump_json
from logtool.store.partition import Partition
from logtool.reads.ranges import Stats, plan_range, read_range


def read_only(part_dir: Path) -> int:
    """The records lens alone: walk, decompress, decode (what aiokafka's iteration does), no output."""
    part, stats = Partition.from_dir(part_dir), Stats()
    for _ in read_range(part, plan_range(part), stats):
        pass
    part.close()
    return stats.records


def render_to_nothing(part_dir: Path) -> int:
    """The records lens and the JSON Lines renderer, in-process, output discarded."""
    part, stats = Partition.from_dir(part_dir), Stats()
    utf8 = decoders.get("utf8")
    for _ in dump_json.objects(read_range(part, plan_range(part), stats), utf8, utf8):
        pass
    part.close()
    return stats.records


def near_the_end(part_dir: Path) -> dict:
    """`--from-offset` 50 records before the end: which segments and how many log bytes it reads."""
    part = Partition.from_dir(part_dir)
    last = part.segments[-1]
    with last:
        last_offset = max(v.last_offset for v in last.walk())
    target = last_offset - 50
    stats = Stats()
    t = time.perf_counter()
    p = plan_range(part, from_offset=target)
    n = sum(1 for _ in read_range(part, p, stats))
    seconds = time.perf_counter() - t
    assert n and stats.records == 51 and p.segment == len(part.segments) - 1, (stats, p)
    part.close()
    cmd = measured("dump", str(part_dir), "--from-offset", str(target), "--format", "jsonl")
    assert cmd["exit"] == 0, cmd
    return {
        "segments": len(part.segments), "partition_bytes": sum(s.size for s in part.segments),
        "from_offset": target, "records": stats.records, "segments_read": stats.segments_read,
        "started_in_segment": p.segment, "seek_log_bytes": p.seek_bytes, "walked_log_bytes": stats.log_bytes_walked,
        "last_segment_bytes": last.size, "in_process_ms": round(seconds * 1e3, 2), "command": cmd,
    }


def main() -> int:
    big = partition_dir()
    log = next(big.glob("*.log"))
    size = log.stat().st_size
    log.read_bytes()  # warm the page cache so every contender reads from memory
    cmd = min((measured("dump", str(big), "--format", "jsonl") for _ in range(REPEAT)), key=lambda c: c["seconds"])
    assert cmd["exit"] == 0, cmd
    t_read, data = best(log.read_bytes)
    t_ak, (_, ak_records) = best(peers.aiokafka_records, data)
    del data
    t_lens, records = best(read_only, big)
    t_render, rendered = best(render_to_nothing, big)
    assert ak_records == records == rendered
    far = near_the_end(many_segments())

    res = {
        "file_bytes": size, "records": records, "repeat": REPEAT,
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
        "command": cmd, "command_records_per_s": round(records / cmd["seconds"]),
        "aiokafka_records_per_s": round(records / t_ak), "aiokafka_with_read_s": round(t_ak + t_read, 3),
        "ratio_command_vs_aiokafka": round(t_ak / cmd["seconds"], 4),
        "ratio_command_vs_aiokafka_with_read": round((t_ak + t_read) / cmd["seconds"], 4),
        "read_only_s": round(t_lens, 3), "read_only_records_per_s": round(records / t_lens),
        "ratio_read_only_vs_aiokafka": round(t_ak / t_lens, 4),
        "render_in_process_s": round(t_render, 3),
        "time_split": {  # where the command's time goes
            "walk_decompress_decode_s": round(t_lens, 3),
            "json_rendering_s": round(t_render - t_lens, 3),
            "startup_and_writing_s": round(cmd["seconds"] - t_render, 3),
        },
        "from_offset_near_end": far,
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "dump.json").write_text(json.dumps(res, indent=2) + "\n")
    (RESULTS / "dump.md").write_text(render(res))
    print(render(res))
    return 0


def render(r: dict) -> str:
    c, s, f = r["command"], r["time_split"], r["from_offset_near_end"]
    total = c["seconds"]
    share = {k: f"{v / total:.0%}" for k, v in s.items()}
    return f"""# dump benchmark ({r['file_bytes']:,} bytes, {r['records']:,} records)

{r['machine']}; best of {r['repeat']}; the file is in the page cache for every contender.

| what | logtool | aiokafka (compiled) | ratio (aiokafka time / logtool time) |
|---|---|---|---|
| `logtool dump --format jsonl > /dev/null` vs record iteration | {c['seconds']} s, {r['command_records_per_s']:,} records/s | {r['aiokafka_records_per_s']:,} records/s | {r['ratio_command_vs_aiokafka']}x |
| same, aiokafka's time including reading the file into memory | {c['seconds']} s | {r['aiokafka_with_read_s']} s | {r['ratio_command_vs_aiokafka_with_read']}x |
| records lens alone (walk, decompress, decode; no output) | {r['read_only_s']} s, {r['read_only_records_per_s']:,} records/s | {r['aiokafka_records_per_s']:,} records/s | {r['ratio_read_only_vs_aiokafka']}x |

Peak RSS of the command: {c['max_rss_mb']} MB. Where its time goes: walking, decompressing and decoding
{s['walk_decompress_decode_s']} s ({share['walk_decompress_decode_s']}), JSON rendering {s['json_rendering_s']} s
({share['json_rendering_s']}), interpreter start-up and writing the {r['records']:,} lines {s['startup_and_writing_s']} s
({share['startup_and_writing_s']}).

`dump --from-offset {f['from_offset']}` (50 records before the end) on a partition of {f['segments']} segments
({f['partition_bytes']:,} bytes): {f['segments_read']} segment read (segment #{f['started_in_segment']}, the last),
{f['seek_log_bytes']:,} log bytes read by the seek and {f['walked_log_bytes']:,} walked from there, of
{f['last_segment_bytes']:,} in that segment; {f['records']} records in {f['in_process_ms']} ms in-process,
{f['command']['seconds']} s as a command (Python start-up included).
"""  # noqa: E501 - the report's Markdown: a table row, or a line, as it is written


if __name__ == "__main__":
    sys.exit(main())
