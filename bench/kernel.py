"""`make bench`, kernel part: the compiled kernel against the pure-Python path, the CRC-32C ceiling and
aiokafka (compiled record iteration) on the same files in one run: issue 13's goals as ratios, each with
the machine's spread (best, median and worst of BENCH_REPEAT runs). Writes bench/results/kernel.{json,md}.

BENCH_BASELINE=DIR (a checkout of another revision, its _mapguard built, e.g. `git worktree add DIR REV`)
adds that revision's time for the small partitions and the start-up, run from DIR: "faster than today".

Files: bench.run's 1 GB uncompressed segment; a mixed-codec segment (BENCH_MIXED_BYTES, default 300 MB:
none, gzip, snappy, lz4 and zstd batches in turn); a log dir of 2,000 single-segment partitions of about
11 KB each (fixtures/fleet.py). The pure path is the same code with LOGTOOL_PURE=1.
"""
from __future__ import annotations

import mmap
import os
import platform
import shutil
import statistics
import sys
import time
from pathlib import Path

import crc32c

from bench import peers
from bench.run import DATA, REPEAT, measured, partition_dir, write_results
from bench.small import small_partitions as small_log_dir
from fixtures.generator import big_templates, iter_entry_headers, repeat_to_size, write_partition
from logtool.checks.engine import check_target
from logtool.store.discover import Target
from logtool.format import kernel

MIXED_BYTES = int(os.environ.get("BENCH_MIXED_BYTES", 300_000_000))
BASELINE = os.environ.get("BENCH_BASELINE")
SMALL_PARTITIONS = 2000
PURE = {kernel.PURE_ENV: "1"}


def spread(fn, *args, repeat: int = REPEAT) -> tuple[dict, object]:
    """({best, median, worst} seconds of `repeat` runs, the last result)."""
    times, result = [], None
    for _ in range(repeat):
        t = time.perf_counter()
        result = fn(*args)
        times.append(time.perf_counter() - t)
    return {"best": round(min(times), 4), "median": round(statistics.median(times), 4),
            "worst": round(max(times), 4)}, result


def command_spread(*args: str, env: dict | None = None, repeat: int = REPEAT) -> dict:
    runs = [measured(*args, env=env) for _ in range(repeat)]
    assert all(r["exit"] in (0, 4) for r in runs), runs[-1]
    times = [r["seconds"] for r in runs]
    return {"best": min(times), "median": round(statistics.median(times), 3), "worst": max(times),
            "max_rss_mb": max(r["max_rss_mb"] for r in runs)}


def mixed_dir() -> Path:
    part = DATA / f"mixed-{MIXED_BYTES}" / "mixed-0"
    if not part.exists():
        print(f"generating {MIXED_BYTES} bytes of mixed codecs into {part} ...", file=sys.stderr)
        templates = [t for codec in ("none", "gzip", "snappy", "lz4", "zstd") for t in big_templates(codec)[::4]]
        write_partition(part.parent, "mixed", 0, repeat_to_size(templates, MIXED_BYTES), segment_bytes=2**31 - 1)
    return part


def small_partitions() -> Path:
    """bench/small.py's log dir of SMALL_PARTITIONS (which also measures them against aiokafka's bare loops)."""
    return small_log_dir(SMALL_PARTITIONS)


def in_process(part: Path, deep: bool, pure: bool) -> int:
    """verify of one partition in-process: the records it decoded (deep) or its batches."""
    if pure:
        with kernel.pure():
            rep = check_target(Target(part), deep)
    else:
        rep = check_target(Target(part), deep)
    assert not [f for f in rep.all_findings() if f.severity > 0]
    return sum((s.records or 0) if deep else s.batches for s in rep.segments)


def crc_over_map(path: Path) -> int:
    """The CRC-32C ceiling as a mapped file offers it: the page faults of a fresh mapping included."""
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
        return crc32c.crc32c(m)


# What a mapping of a cached file costs depends on how its pages came into the page cache: read in by a
# sequential reader, they sit in large folios that map in a few steps each; written by a broker's appends of
# one batch at a time, in small ones, each page mapped on its own (a CRC pass over a fresh mapping takes longer:
# the two shallow rows of bench/results/kernel.md). The shallow walk is measured in both states, each made
# before it is measured.

def read_in(path: Path) -> None:
    """The file's pages dropped from the page cache, then read back in order, as a first reader after a
    restart brings them in."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        while os.read(fd, 1 << 20):
            pass
    finally:
        os.close(fd)


def written_in_appends(part: Path, log_bytes: bytes) -> Path:
    """A copy of the partition (one segment, whose bytes these are) with its .log written one batch per
    append, as a broker writes it: its pages stay in the page cache as those writes left them."""
    copy = DATA / "appended" / part.name
    copy.mkdir(parents=True, exist_ok=True)
    view = memoryview(log_bytes)
    for f in part.iterdir():
        if f.suffix != ".log":
            (copy / f.name).write_bytes(f.read_bytes())
            continue
        with open(copy / f.name, "wb", buffering=0) as out:
            for e in iter_entry_headers(log_bytes):
                out.write(view[e.position : e.position + e.size])
    return copy


def shallow_in(part: Path, ceiling: dict, pure: bool) -> dict:
    """Shallow verify of the partition, in the page cache state it is in, against CRC passes over it."""
    log = next(part.glob("*.log"))
    mapped, _ = spread(crc_over_map, log)
    split = kernel.KERNEL.split_passes()
    ours, batches = spread(in_process, part, False, False)
    out = {"batches": batches, "kernel_s": ours, "crc32c_over_a_fresh_map_s": mapped,
           "passes_split_per_walk": (kernel.KERNEL.split_passes() - split) // REPEAT,
           "share_of_ceiling": ratio(ceiling, ours), "share_of_mapped_ceiling": ratio(mapped, ours)}
    if pure:
        out["pure_s"], _ = spread(in_process, part, False, True)
        out["speedup_over_pure"] = ratio(out["pure_s"], ours)
    return out


def ratio(peer: dict, ours: dict) -> float:
    return round(peer["best"] / ours["best"], 3)


def main() -> int:
    assert kernel.KERNEL is not None, kernel.WHY_PURE
    big = partition_dir()
    log = next(big.glob("*.log"))
    data = log.read_bytes()  # the page cache warm for every contender, and the bytes aiokafka iterates
    res: dict = {"machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
                 "repeat": REPEAT, "file_bytes": len(data), "hardware_crc": kernel.KERNEL.hardware_crc()}

    ceiling, _ = spread(crc32c.crc32c, data)
    kernel_crc, _ = spread(kernel.KERNEL.crc32c, data)
    read_in(log)
    res["shallow"] = {"crc32c_in_memory_s": ceiling, "kernel_crc32c_in_memory_s": kernel_crc,
                      "threads": kernel.KERNEL.threads(), **shallow_in(big, ceiling, pure=True)}
    appended = written_in_appends(big, data)
    try:
        res["shallow_appended"] = shallow_in(appended, ceiling, pure=False)
    finally:
        shutil.rmtree(appended)

    deep, records = spread(in_process, big, True, False)
    deep_pure, _ = spread(in_process, big, True, True, repeat=1)
    aiokafka, (_, ak_records) = spread(peers.aiokafka_records, data)
    assert ak_records == records
    res["deep_uncompressed"] = {"records": records, "kernel_s": deep, "pure_s": deep_pure, "aiokafka_s": aiokafka,
                                "kernel_records_per_s": round(records / deep["best"]),
                                "aiokafka_records_per_s": round(records / aiokafka["best"]),
                                "ratio_vs_aiokafka": ratio(aiokafka, deep), "speedup_over_pure": ratio(deep_pure, deep)}
    del data

    mixed = mixed_dir()
    mixed_data = next(mixed.glob("*.log")).read_bytes()
    m_deep, m_records = spread(in_process, mixed, True, False)
    m_pure, _ = spread(in_process, mixed, True, True, repeat=1)
    m_ak, (_, m_ak_records) = spread(peers.aiokafka_records, mixed_data)
    assert m_ak_records == m_records
    res["deep_mixed_codecs"] = {"file_bytes": len(mixed_data), "records": m_records, "kernel_s": m_deep,
                                "pure_s": m_pure, "aiokafka_s": m_ak, "ratio_vs_aiokafka": ratio(m_ak, m_deep),
                                "speedup_over_pure": ratio(m_pure, m_deep)}
    del mixed_data

    dumps = {}
    for name, args in (("text", ("dump", "--print-data", str(big))),
                       ("jsonl", ("dump", "--format", "jsonl", str(big)))):
        fast = command_spread(*args)
        slow = command_spread(*args, env=PURE, repeat=1)
        dumps[name] = {"kernel": fast, "pure": slow, "records_per_s": round(records / fast["best"]),
                       "ratio_vs_aiokafka_iteration": ratio(aiokafka, fast), "speedup_over_pure": ratio(slow, fast)}
    res["dump"] = dumps

    small = small_partitions()
    baseline = {"PYTHONPATH": BASELINE} if BASELINE else None
    fleet = {}
    for name, args in (("shallow", ("verify", str(small))), ("deep", ("verify", "--deep", str(small)))):
        fast, slow = command_spread(*args), command_spread(*args, env=PURE)
        fleet[name] = {"kernel": fast, "pure": slow, "speedup_over_pure": ratio(slow, fast)}
        if baseline:
            before = command_spread(*args, env=baseline)
            fleet[name].update(baseline=before, speedup_over_baseline=ratio(before, fast))
    res["small_partitions"] = {"partitions": SMALL_PARTITIONS, "baseline": BASELINE, **fleet}

    tiny = Path(__file__).resolve().parents[1] / "fixtures" / "sample-logdir" / "orders-0"
    res["start_up"] = {}
    for args in (("--version",), ("verify", str(tiny)), ("scan", str(tiny)), ("dump", "--max-records", "1", str(tiny)),
                 ("find", "--offset", "5", str(tiny)), ("index", "verify", str(tiny)), ("truncate", str(tiny))):
        res["start_up"][" ".join(args)] = command_spread(*args, repeat=7)
        if baseline:
            res["start_up"][" ".join(args)]["baseline"] = command_spread(*args, env=baseline, repeat=7)["best"]
    write_results("kernel", res, render)
    return 0


def _s(d: dict) -> str:
    return f"{d['best']} s ({d['median']} / {d['worst']})"


def render(r: dict) -> str:
    sh, du, dm, dp, sp = r["shallow"], r["deep_uncompressed"], r["deep_mixed_codecs"], r["dump"], r["small_partitions"]
    sa = r["shallow_appended"]
    starts = "\n".join(f"| `logtool {k}` | {_s(v)} | {v.get('baseline', '')} | {v['max_rss_mb']} MB |"
                       for k, v in r["start_up"].items())
    before = "".join(f"; the baseline ({sp['baseline']}) {_s(sp[n]['baseline'])}: **{sp[n]['speedup_over_baseline']}x**"
                     f" {n}" for n in ("shallow", "deep") if "baseline" in sp[n])
    return f"""# Compiled kernel benchmark ({r['file_bytes']:,} bytes uncompressed, {du['records']:,} records)

{r['machine']}; SSE4.2 CRC: {r['hardware_crc']}. Times are best (median / worst) of {r['repeat']} runs (the
pure path's slow runs once); every file is in the page cache.

| work | kernel | pure Python | reference | goal: ratio |
|---|---|---|---|---|
| shallow verify, in-process ({sh['batches']:,} batches), the file read into the page cache in order | {_s(sh['kernel_s'])} | {_s(sh['pure_s'])} | CRC-32C of the bytes in memory {_s(sh['crc32c_in_memory_s'])}; of a fresh mapping {_s(sh['crc32c_over_a_fresh_map_s'])} | 60% of the ceiling: **{sh['share_of_ceiling']:.0%}** in memory, **{sh['share_of_mapped_ceiling']:.0%}** of the mapped one |
| same, the file as written in appends of one batch (a broker's writes) | {_s(sa['kernel_s'])} | | CRC-32C of a fresh mapping {_s(sa['crc32c_over_a_fresh_map_s'])} | **{sa['share_of_ceiling']:.0%}** in memory, **{sa['share_of_mapped_ceiling']:.0%}** of the mapped one |
| verify --deep, uncompressed | {_s(du['kernel_s'])} ({du['kernel_records_per_s']:,} records/s) | {_s(du['pure_s'])} | aiokafka's record iteration {_s(du['aiokafka_s'])} ({du['aiokafka_records_per_s']:,} records/s) | 3x aiokafka: **{du['ratio_vs_aiokafka']}x** |
| verify --deep, mixed codecs ({dm['file_bytes']:,} bytes, {dm['records']:,} records) | {_s(dm['kernel_s'])} | {_s(dm['pure_s'])} | aiokafka {_s(dm['aiokafka_s'])} | 1.5x aiokafka: **{dm['ratio_vs_aiokafka']}x** |
| `logtool dump --print-data > /dev/null` | {_s(dp['text']['kernel'])}, {dp['text']['records_per_s']:,} records/s, RSS {dp['text']['kernel']['max_rss_mb']} MB | {_s(dp['text']['pure'])} | aiokafka's iteration (above) | 0.25x aiokafka: **{dp['text']['ratio_vs_aiokafka_iteration']}x** |
| `logtool dump --format jsonl > /dev/null` | {_s(dp['jsonl']['kernel'])}, {dp['jsonl']['records_per_s']:,} records/s, RSS {dp['jsonl']['kernel']['max_rss_mb']} MB | {_s(dp['jsonl']['pure'])} | aiokafka's iteration | 0.5x aiokafka: **{dp['jsonl']['ratio_vs_aiokafka_iteration']}x** |
| `logtool verify DIR`, {sp['partitions']:,} single-segment partitions | {_s(sp['shallow']['kernel'])} | {_s(sp['shallow']['pure'])} | | 2x today: **{sp['shallow']['speedup_over_pure']}x** the pure path |
| `logtool verify --deep DIR`, same | {_s(sp['deep']['kernel'])} | {_s(sp['deep']['pure'])} | | 2x today: **{sp['deep']['speedup_over_pure']}x** the pure path |

Small partitions against the code before this kernel{before or ": set BENCH_BASELINE to measure it"}.

Speed-ups over the pure path: shallow {sh['speedup_over_pure']}x, deep {du['speedup_over_pure']}x (mixed codecs
{dm['speedup_over_pure']}x), dump text {dp['text']['speedup_over_pure']}x, JSON Lines {dp['jsonl']['speedup_over_pure']}x.
The kernel's own CRC-32C over the bytes in memory: {_s(sh['kernel_crc32c_in_memory_s'])}. A shallow walk's passes
have their CRCs checked on up to {sh['threads']} threads ({sh['passes_split_per_walk']} passes of a walk were split).
How the pages came into the page cache decides what mapping them costs: large folios (a sequential read)
map in a few steps each, the small ones a broker's appends leave one page at a time.

Start-up, as a command on the sample's smallest partition (best (median / worst) of 7; goal: under 150 ms):

| command | time | baseline (best) | peak RSS |
|---|---|---|---|
{starts}
"""  # noqa: E501 - the report's Markdown: a table row, or a line, as it is written


if __name__ == "__main__":
    sys.exit(main())
