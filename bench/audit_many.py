"""`make bench`, the fleet at scale: `logtool audit` on local[2] over 20,000 and 100,000 small partition dirs
(BENCH_AUDIT_MANY, comma-separated counts) against serial `logtool verify` of the same log dirs: seconds, seconds
per 1,000 partitions, and peak memory of the driver (its Python and its JVM) and of verify. The README's
"hundreds of thousands of partition directories", measured. Writes bench/results/audit_many.{json,md}.

Each fleet (fixtures/fleet.py, generated once into bench/data/) is four broker log dirs of partitions of one
small segment each (about 2 KB: a few batches), the shape of a cluster with many idle partitions.
"""
from __future__ import annotations

import os
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path

from bench.run import DATA, write_results
from fixtures.fleet import TopicSpec, write_fleet
from logtool.spark.driver import Audit, run_audit
from logtool.spark.session import start
from logtool.spark.task import Settings

COUNTS = [int(n) for n in os.environ.get("BENCH_AUDIT_MANY", "20000,100000").split(",") if n]
BROKERS = 4
MASTER = "local[2]"


def fleet(n: int) -> list[Path]:
    root = DATA / f"many-{n}"
    log_dirs = [root / f"broker-{b}" for b in range(BROKERS)]
    if not root.exists():
        print(f"generating {n:,} small partitions into {root} ...", file=sys.stderr)
        write_fleet(root, [TopicSpec("many", n, 2000)], brokers=BROKERS, replication=1, records_per_batch=5,
                    value_bytes=(20, 40), plant=False)
    return log_dirs


def _hwm_mb(pid: int) -> float:
    """A process's peak resident set (VmHWM), in MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


def verify_command(log_dirs: list[Path]) -> tuple[float, float]:
    """Seconds and peak RSS (MB) of `logtool verify` over the log dirs, one process, as a user runs it."""
    t = time.perf_counter()
    p = subprocess.Popen([sys.executable, "-m", "logtool", "verify", "--format", "jsonl", *map(str, log_dirs)],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    _, err = p.communicate()
    seconds = time.perf_counter() - t
    assert p.returncode in (0, 4), err
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)  # the largest child so far: verify is run first
    return seconds, usage.ru_maxrss / 1024


def main() -> int:
    results = []
    for n in COUNTS:
        log_dirs = fleet(n)
        t_verify, verify_rss = verify_command(log_dirs)
        spark, _ = start(MASTER, {"spark.ui.enabled": "false"})
        jvm = spark.sparkContext._gateway.proc.pid
        try:
            t = time.perf_counter()
            summary = run_audit(spark, Audit(tuple(map(str, log_dirs)), str(DATA / "audit-many-out"), Settings()))
            t_audit = time.perf_counter() - t
            driver_rss, jvm_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, _hwm_mb(jvm)
        finally:
            spark.stop()
        assert summary["partitions"] == n and summary["exit_code"] == 0, summary["partitions"]
        results.append({"partitions": n, "bytes": summary["bytes"], "tasks": summary["tasks"],
                        "verify_s": round(t_verify, 2), "verify_rss_mb": round(verify_rss),
                        "audit_s": round(t_audit, 2), "audit_phases": summary["seconds"],
                        "driver_python_rss_mb": round(driver_rss), "driver_jvm_rss_mb": round(jvm_rss),
                        "verify_s_per_1000": round(t_verify / n * 1000, 3),
                        "audit_s_per_1000": round(t_audit / n * 1000, 3)})
    write_results("audit_many", {
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
        "master": MASTER, "load_average": round(os.getloadavg()[0], 2), "runs": results}, render)
    return 0


def render(r: dict) -> str:
    rows = "\n".join(
        f"| {x['partitions']:,} | {x['bytes'] / 1e6:.0f} MB | {x['verify_s']} s ({x['verify_s_per_1000']} s) | "
        f"{x['verify_rss_mb']} MB | {x['audit_s']} s ({x['audit_s_per_1000']} s) | {x['audit_phases']['listing']} / "
        f"{x['audit_phases']['check']} / {x['audit_phases']['output']} s | {x['tasks']} | "
        f"{x['driver_python_rss_mb']} MB + JVM {x['driver_jvm_rss_mb']} MB |" for x in r["runs"])
    return f"""# audit at fleet scale (many small partitions)

{r['machine']}; `logtool audit` on {r['master']} (a running session: Spark's start-up not counted) against serial
`logtool verify`, one run each; load average {r['load_average']} when it ended.

| partitions | bytes | verify (per 1,000) | verify peak RSS | audit (per 1,000) | listing / checks / tables | tasks | driver peak RSS |
|---|---|---|---|---|---|---|---|
{rows}
"""  # noqa: E501 - the report's Markdown: a table row, or a line, as it is written


if __name__ == "__main__":
    sys.exit(main())
