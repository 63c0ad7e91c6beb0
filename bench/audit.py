"""`make bench`, audit part: `logtool audit` on local[2] against serial `logtool verify` of the same log dirs,
in one run. Writes bench/results/audit.{json,md}.

The fleet (fixtures/fleet.py, generated once into bench/data/) is BENCH_AUDIT_PARTITIONS partition dirs
(default 2000) of BENCH_AUDIT_BYTES bytes in all (default 2 GB), over four broker log dirs, so that 500,
1,000 and 2,000 partitions are one, two and four log dirs. Spark's start-up is measured apart; the first
audit in a fresh session (the JVM still compiling) apart from the best of BENCH_REPEAT warm ones; what a
task costs, from the whole fleet audited again in twice as many tasks.
"""
from __future__ import annotations

import os
import platform
import subprocess
import sys
import time
from pathlib import Path

from bench.audit_many import class_cache_ready
from bench.run import DATA, REPEAT, warm, write_results
from logtool.checks.engine import run_checks
from fixtures.fleet import TopicSpec, write_fleet
from logtool.spark.driver import Audit, run_audit
from logtool.spark.session import start, stop
from logtool.spark.task import Settings

PARTITIONS = int(os.environ.get("BENCH_AUDIT_PARTITIONS", 2000))
TOTAL_BYTES = int(os.environ.get("BENCH_AUDIT_BYTES", 2_000_000_000))
BROKERS = 4
MASTER = "local[2]"


def fleet() -> list[Path]:
    root = DATA / f"fleet-{PARTITIONS}x{TOTAL_BYTES // PARTITIONS}"
    log_dirs = [root / f"broker-{b}" for b in range(BROKERS)]
    if not root.exists():
        print(f"generating {PARTITIONS} partitions, {TOTAL_BYTES} bytes into {root} ...", file=sys.stderr)
        write_fleet(root, [TopicSpec("bench", PARTITIONS, TOTAL_BYTES // PARTITIONS)], brokers=BROKERS,
                    replication=1, records_per_batch=100, value_bytes=(100, 200), plant=False)
    return log_dirs


def timed(log_dirs: list[Path], fn, *args) -> tuple[float, object]:
    """Seconds of `fn(*args)` with `log_dirs` in the page cache, and its result. Warmed before every timed
    run: this machine's memory reclaim takes back idle page cache within minutes, and the audit's default
    `--spare-page-cache` does not keep what it had to read from disk."""
    warm(log_dirs)
    t = time.perf_counter()
    result = fn(*args)
    return time.perf_counter() - t, result


def best_warm(log_dirs: list[Path], fn, *args) -> tuple[float, object]:
    """The best of REPEAT `timed` runs, with the result of that run."""
    return min((timed(log_dirs, fn, *args) for _ in range(REPEAT)), key=lambda run: run[0])


def verify_command(log_dirs: list[Path]) -> None:
    """`logtool verify` as a user runs it: one process, serially."""
    p = subprocess.run([sys.executable, "-m", "logtool", "verify", "--format", "json", *map(str, log_dirs)],
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    # 4, not 0: verify takes log dirs given together for one broker's, and these are four brokers'.
    assert p.returncode in (0, 4), p.stderr


def audit(spark, log_dirs: list[Path], out: Path, task_bytes: int | None = None) -> dict:
    summary = run_audit(spark, Audit(tuple(map(str, log_dirs)), str(out), Settings(), task_bytes)).to_dict()
    assert summary["exit_code"] == 0 and summary["partitions"] == PARTITIONS * len(log_dirs) // BROKERS, summary
    return summary


def main() -> int:
    log_dirs = fleet()
    size = warm(log_dirs)
    out = DATA / "audit-out"
    t_engine, _ = best_warm(log_dirs, run_checks, log_dirs, False)

    class_cache_ready()  # as a user's audits find Spark after their first, and no builder running beside
    began = time.perf_counter()
    spark, _ = start(MASTER, {"spark.ui.enabled": "false"})
    startup = time.perf_counter() - began
    try:
        t_cold, cold = timed(log_dirs, audit, spark, log_dirs, out)
        scaling = []
        for n in (1, 2, 4):  # 500, 1,000 and 2,000 partitions
            t, summary = best_warm(log_dirs, audit, spark, log_dirs[:n], out)
            scaling.append({"partitions": summary["partitions"], "bytes": summary["bytes"], "seconds": round(t, 3),
                            "check_seconds": summary["seconds"]["check"], "tasks": summary["tasks"],
                            "task_bytes": summary["task_bytes"]})
        # What a task costs besides its partitions (scheduling, its Python worker's round trips, which
        # spark/session.py makes over a Unix socket): the whole fleet again, in tasks of half the default size.
        whole = scaling[-1]
        t_halved, halved = best_warm(log_dirs, audit, spark, log_dirs, out, whole["task_bytes"] // 2)
        per_task = (t_halved - whole["seconds"]) / max(1, halved["tasks"] - whole["tasks"])
        # Verify and the whole audit in turns, so that both meet the machine in the same state (its speed
        # drifts by tens of percent over minutes here); the best of each.
        rounds = [(timed(log_dirs, verify_command, log_dirs)[0], timed(log_dirs, audit, spark, log_dirs, out))
                  for _ in range(REPEAT)]
    finally:
        stop(spark)
    t_verify = min(v for v, _ in rounds)
    t_full, summary = min((a for _, a in rounds), key=lambda a: a[0])
    full = {"seconds": round(t_full, 3), "check_seconds": summary["seconds"]["check"], "tasks": summary["tasks"]}

    mb = size / 1e6
    # What each further 1,000 partitions cost (from 1,000 to 2,000): the per-partition overhead, without the
    # fixed cost of a job (scheduling, writing the tables) that a larger fleet spreads thinner.
    big, half = scaling[-1], scaling[-2]
    marginal = (big["seconds"] - half["seconds"]) / ((big["partitions"] - half["partitions"]) / 1000)
    verify_per_1000 = t_verify / (PARTITIONS / 1000)
    res = {
        "partitions": PARTITIONS, "bytes": size, "log_dirs": BROKERS, "master": MASTER, "repeat": REPEAT,
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
        "load_average": round(os.getloadavg()[0], 2),
        "verify": {"command_s": round(t_verify, 3), "in_process_s": round(t_engine, 3),
                   "MBps": round(mb / t_verify), "partitions_per_s": round(PARTITIONS / t_verify)},
        "audit": {"spark_startup_s": round(startup, 3), "first_audit_s": round(t_cold, 3),
                  "first_audit_phases": cold["seconds"], "seconds": full["seconds"],
                  "check_seconds": full["check_seconds"], "tasks": full["tasks"],
                  "MBps": round(mb / full["seconds"]), "partitions_per_s": round(PARTITIONS / full["seconds"]),
                  "check_MBps": round(mb / full["check_seconds"])},
        "ratio_audit_vs_verify": round(t_verify / full["seconds"], 2),
        "ratio_checks_vs_verify": round(t_verify / full["check_seconds"], 2),
        "marginal_s_per_1000_partitions": {"audit": round(marginal, 3), "verify": round(verify_per_1000, 3)},
        "ratio_marginal_vs_verify": round(verify_per_1000 / marginal, 2),
        "scaling": scaling,
        "task": {"tasks": [whole["tasks"], halved["tasks"]], "seconds": [whole["seconds"], round(t_halved, 3)],
                 "s_per_further_task": round(per_task, 4)},
    }
    write_results("audit", res, render)
    return 0


def render(r: dict) -> str:
    v, a, m, t = r["verify"], r["audit"], r["marginal_s_per_1000_partitions"], r["task"]
    rows = "\n".join(f"| {s['partitions']:,} | {s['bytes'] / 1e9:.2f} GB | {s['tasks']} | {s['seconds']} s | "
                     f"{s['check_seconds']} s |" for s in r["scaling"])
    return f"""# audit benchmark ({r['partitions']:,} partition dirs, {r['bytes'] / 1e9:.2f} GB, {r['log_dirs']} log dirs)

{r['machine']}; `logtool audit` on {r['master']}; best of {r['repeat']}, verify and audit taking turns; every
segment is in the page cache;
load average {r['load_average']} when it ended (other work on the machine slows both contenders).

| what | seconds | MB/s | partitions/s |
|---|---|---|---|
| serial `logtool verify` (one process, as a command) | {v['command_s']} | {v['MBps']} | {v['partitions_per_s']} |
| `logtool audit`, whole job in a running session | {a['seconds']} | {a['MBps']} | {a['partitions_per_s']} |
| `logtool audit`, its check phase alone | {a['check_seconds']} | {a['check_MBps']} | - |

Audit against verify: {r['ratio_audit_vs_verify']}x for the whole job, {r['ratio_checks_vs_verify']}x for the checks,
{r['ratio_marginal_vs_verify']}x for each further 1,000 partitions ({m['audit']} s against verify's {m['verify']} s;
the rest of the job is a fixed cost). Verify's engine alone, in process: {v['in_process_s']} s. Spark start-up:
{a['spark_startup_s']} s; the first audit in a fresh session: {a['first_audit_s']} s (phases {a['first_audit_phases']}).

What a task costs besides its partitions (spark/split.py's TASKS_PER_CORE): the whole fleet in {t['tasks'][0]} tasks took
{t['seconds'][0]} s, in {t['tasks'][1]} tasks {t['seconds'][1]} s: {round(t['s_per_further_task'] * 1000, 1)} ms for each further task.

| partitions | bytes | tasks | whole job | checks |
|---|---|---|---|---|
{rows}
"""  # noqa: E501 - the report's Markdown: a table row, or a line, as it is written


if __name__ == "__main__":
    sys.exit(main())
