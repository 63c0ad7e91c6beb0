"""`make bench`: logtool against kafka-python and aiokafka on the same generated files, in one run.

Writes bench/results/verify.json (every figure) and bench/results/verify.md (the table the README
quotes). The data file is generated once into bench/data/ (git-ignored) by the fixture generator.
Set BENCH_BYTES to change the segment size (default 1 GB), BENCH_REPEAT for best-of-N (default 3).
"""
from __future__ import annotations

import compileall
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

from bench import peers
from fixtures.generator import write_big
from logtool.checks.engine import check_target
from logtool.store.discover import Target

HERE = Path(__file__).resolve().parent
DATA = HERE / "data"
RESULTS = HERE / "results"
TARGET_BYTES = int(os.environ.get("BENCH_BYTES", 1_000_000_000))
REPEAT = int(os.environ.get("BENCH_REPEAT", 3))
KAFKA_PYTHON_DEEP_BATCHES = 2000  # pure-Python record iteration is slow: sample the first batches


def partition_dir() -> Path:
    part = DATA / f"v2-{TARGET_BYTES}" / "bench-0"
    if not part.exists():
        print(f"generating {TARGET_BYTES} bytes into {part} ...", file=sys.stderr)
        write_big(part, TARGET_BYTES)
    return part


def warm(log_dirs: list[Path]) -> int:
    """Every file of the log dirs read once, so that each contender meets a warm page cache, as a second run
    does (a fleet generated or last read long ago is partly on disk only, and the first process to read it
    would pay for the disk, the others not); the bytes of their segments."""
    segments = 0
    for log_dir in log_dirs:
        for folder, _, names in os.walk(log_dir):
            for name in names:
                with open(os.path.join(folder, name), "rb") as f:
                    read = sum(len(chunk) for chunk in iter(lambda: f.read(1 << 20), b""))
                segments += read if name.endswith(".log") else 0
    return segments


def best(fn, *args):
    """(best wall seconds of REPEAT runs, the last result)."""
    times, result = [], None
    for _ in range(REPEAT):
        t = time.perf_counter()
        result = fn(*args)
        times.append(time.perf_counter() - t)
    return min(times), result


def logtool_in_process(part: Path, deep: bool):
    rep = check_target(Target(part), deep)
    bad = [f for f in rep.all_findings() if f.severity > 0]
    assert not bad, bad
    return sum(s.batches for s in rep.segments), sum(s.records or 0 for s in rep.segments)


# Runs `logtool verify` in a child and reports the child's peak RSS from VmHWM, which execve resets
# (ru_maxrss would carry over the parent's size from before the exec).
MEASURED_CHILD = """
import sys
from logtool.cli import main
try:
    main(sys.argv[1:])
except SystemExit as e:
    code = e.code
for line in open("/proc/self/status"):
    if line.startswith("VmHWM:"):
        sys.stderr.write(line.split()[1] + "\\n")
sys.exit(code)
"""


def child_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of a measured command: an install's, where Python reads its compiled bytecode (a
    PYTHONDONTWRITEBYTECODE left in the environment would make every run compile every module anew, a large
    share of a small command's start-up: the start-up table of bench/results/kernel.md), with `extra` added."""
    compileall.compile_dir(Path(__file__).resolve().parents[1] / "logtool", quiet=1)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    return {**env, **(extra or {})}


def measured(*args: str, env: dict[str, str] | None = None) -> dict:
    """Wall time, peak RSS and stderr lines of `logtool ARGS > /dev/null` as a user runs it (with `env`
    added to the environment)."""
    environment = child_env(env)
    t = time.perf_counter()
    # Started outside the checkout: `-c` puts the working directory first on sys.path, which would shadow a
    # PYTHONPATH naming another revision (BENCH_BASELINE).
    proc = subprocess.run([sys.executable, "-c", MEASURED_CHILD, *args], stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True, env=environment, cwd="/")
    seconds = time.perf_counter() - t
    *messages, peak_kb = proc.stderr.split("\n")[:-1]
    return {"seconds": round(seconds, 3), "max_rss_mb": round(int(peak_kb) / 1024, 1), "exit": proc.returncode,
            "stderr": messages}


def main() -> int:
    part = partition_dir()
    log = next(part.glob("*.log"))
    size = log.stat().st_size
    log.read_bytes()  # warm the page cache so every contender reads from memory
    cmd_shallow = measured("verify", "--format", "json", str(part))
    cmd_deep = measured("verify", "--format", "json", "--deep", str(part))
    t_read, data = best(log.read_bytes)

    t_shallow, (batches, _) = best(logtool_in_process, part, False)
    t_kp, (kp_batches, _) = best(peers.kafka_python_batches, data)
    t_ak_shallow, _ = best(peers.aiokafka_batches, data)
    assert kp_batches == batches
    t_deep, (_, records) = best(logtool_in_process, part, True)
    t_ak, (_, ak_records) = best(peers.aiokafka_records, data)
    assert ak_records == records
    t_kp_deep, (_, kp_sample) = best(peers.kafka_python_records, data, KAFKA_PYTHON_DEEP_BATCHES)
    del data

    mb = size / 1e6
    res = {
        "file_bytes": size, "batches": batches, "records": records, "repeat": REPEAT,
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
        "read_file_s": round(t_read, 4),
        "shallow": {
            "logtool_s": round(t_shallow, 4), "logtool_MBps": round(mb / t_shallow),
            "kafka_python_iter_s": round(t_kp, 4), "kafka_python_with_read_s": round(t_kp + t_read, 4),
            "aiokafka_iter_s": round(t_ak_shallow, 4),
            "ratio_vs_kafka_python_with_read": round((t_kp + t_read) / t_shallow, 2),
            "ratio_vs_kafka_python_iter_only": round(t_kp / t_shallow, 2),
        },
        "deep": {
            "logtool_s": round(t_deep, 3), "logtool_records_per_s": round(records / t_deep),
            "aiokafka_records_per_s": round(records / t_ak),
            "kafka_python_records_per_s": round(kp_sample / t_kp_deep),
            "ratio_vs_aiokafka": round(t_ak / t_deep, 3),
            "ratio_vs_kafka_python": round((records / t_deep) / (kp_sample / t_kp_deep), 2),
        },
        "command_shallow": cmd_shallow,
        "command_deep": cmd_deep,
    }
    write_results("verify", res, render)
    return 0


def write_results(name: str, res: dict, render_md) -> None:
    """bench/results/<name>.json (every figure) and <name>.md (the table), and the table on stdout."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"{name}.json").write_text(json.dumps(res, indent=2) + "\n")
    (RESULTS / f"{name}.md").write_text(render_md(res))
    print(render_md(res))


def render(r: dict) -> str:
    s, d, cs, cd = r["shallow"], r["deep"], r["command_shallow"], r["command_deep"]
    return f"""# verify benchmark ({r['file_bytes']:,} bytes, {r['batches']:,} v2 batches, {r['records']:,} records)

{r['machine']}; best of {r['repeat']}; the file is in the page cache for every contender.

| what | logtool | peer | ratio (peer time / logtool time) |
|---|---|---|---|
| shallow verify vs kafka-python batch iteration + CRC, file read included | {s['logtool_s']} s ({s['logtool_MBps']} MB/s) | {s['kafka_python_with_read_s']} s | {s['ratio_vs_kafka_python_with_read']}x |
| same, kafka-python's iteration alone (bytes already in memory) | {s['logtool_s']} s | {s['kafka_python_iter_s']} s | {s['ratio_vs_kafka_python_iter_only']}x |
| verify --deep vs aiokafka record iteration (compiled) | {d['logtool_records_per_s']:,} records/s | {d['aiokafka_records_per_s']:,} records/s | {d['ratio_vs_aiokafka']}x |
| verify --deep vs kafka-python record iteration (pure Python) | {d['logtool_records_per_s']:,} records/s | {d['kafka_python_records_per_s']:,} records/s | {d['ratio_vs_kafka_python']}x |

`logtool verify` as a command: shallow {cs['seconds']} s, peak RSS {cs['max_rss_mb']} MB; `--deep` {cd['seconds']} s, peak RSS {cd['max_rss_mb']} MB.
aiokafka's batch iteration with CRC alone: {s['aiokafka_iter_s']} s. Reading the file into memory: {r['read_file_s']} s.
"""  # noqa: E501 - the report's Markdown: a table row, or a line, as it is written


if __name__ == "__main__":
    sys.exit(main())
