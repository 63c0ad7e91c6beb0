"""`make bench`, the fleet at scale: `logtool audit` on local[2] over 20,000 and 100,000 small partition dirs
against serial `logtool verify` of the same log dirs: seconds, seconds per 1,000 partitions, Spark's start on
its own, the audit's phases, and peak memory of the driver (its Python and its JVM), of the largest Python
worker, and of verify. Each audit runs in a process of its own (as `logtool audit` does), so that its
peaks are its own. The README's "hundreds of thousands of partition directories", measured, and the
points the driver's memory model in docs/fleet.md is fitted to. Writes bench/results/audit_many.{json,md}.

BENCH_AUDIT_MANY: comma-separated fleets, each N (partitions over 4 log dirs) or NxB (over B log dirs).
BENCH_AUDIT_MANY_CLUSTER: fleets to audit again on a standalone cluster started here on loopback (a master
and two workers of one core, as tests/test_cluster.py runs them): there the driver's JVM is the driver's
only, the executors' are the workers' (none by default; the model in docs/fleet.md was fitted with
20000,100000,200000). Each fleet (fixtures/fleet.py, generated once into bench/data/) is B broker log dirs of
partitions of one small segment each (about 2 KB: a few batches), the shape of a cluster with many idle
partitions.

BENCH_AUDIT_MANY_REPLICAS: fleets of N partitions at 3 replicas over 4 log dirs (3N partition dirs of about
62 batches each, and ten planted divergences), audited with `--replicas` on local[2]: the replica comparison
at scale (none by default; 34000 is 102,030 partition dirs and 6.3 million batches, 3.2 GB on disk).
"""
from __future__ import annotations

import json
import os
import platform
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from collections.abc import Iterator
from pathlib import Path

from bench.run import DATA, warm, write_results
from fixtures.fleet import TopicSpec, write_fleet

FLEETS = [f for f in os.environ.get("BENCH_AUDIT_MANY", "20000,100000").split(",") if f]
ON_CLUSTER = [f for f in os.environ.get("BENCH_AUDIT_MANY_CLUSTER", "").split(",") if f]
REPLICATED = [int(f) for f in os.environ.get("BENCH_AUDIT_MANY_REPLICAS", "").split(",") if f]
BROKERS = 4
MASTER = "local[2]"


def _fleet_shape(spec: str) -> tuple[int, int]:
    n, _, brokers = spec.partition("x")
    return int(n), int(brokers or BROKERS)


def fleet(n: int, brokers: int = BROKERS) -> list[Path]:
    root = DATA / (f"many-{n}" if brokers == BROKERS else f"many-{n}x{brokers}")
    log_dirs = [root / f"broker-{b}" for b in range(brokers)]
    if not root.exists():
        print(f"generating {n:,} small partitions over {brokers} log dirs into {root} ...", file=sys.stderr)
        write_fleet(root, [TopicSpec("many", n, 2000)], brokers=brokers, replication=1, records_per_batch=5,
                    value_bytes=(20, 40), plant=False)
    return log_dirs


def replicated_fleet(n: int) -> list[Path]:
    """`n` partitions at 3 replicas over 4 log dirs, and the planted divergences of fixtures/fleet.py."""
    root = DATA / f"replicas-{n}"
    if not root.exists():
        print(f"generating {n:,} partitions at 3 replicas into {root} ...", file=sys.stderr)
        write_fleet(root, [TopicSpec("planted", 10, 1500, segment_bytes=500), TopicSpec("rep", n, 11_500)],
                    brokers=BROKERS, replication=3)
    return [root / f"broker-{b}" for b in range(BROKERS)]


def _status_mb(pid: int, field: str) -> float:
    """A process's VmHWM (peak resident set) or VmRSS, in MB; 0 once it is gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(f"{field}:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def _cpu_s(pid: int) -> float:
    """A process's CPU seconds, user and system, with those of the children it has waited for (a Python
    worker's, once its daemon reaped it); 0 once it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return sum(int(f) for f in fields[11:15]) / os.sysconf("SC_CLK_TCK")  # utime, stime, cutime, cstime


def _descendants(pid: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def verify_command(log_dirs: list[Path]) -> tuple[float, float, float]:
    """Seconds, CPU seconds and peak RSS (MB) of `logtool verify` over the log dirs, one process, as a user
    runs it."""
    with tempfile.TemporaryFile("w+") as err:
        t = time.perf_counter()
        p = subprocess.Popen([sys.executable, "-m", "logtool", "verify", "--format", "jsonl", *map(str, log_dirs)],
                             stdout=subprocess.DEVNULL, stderr=err)
        _, status, usage = os.wait4(p.pid, 0)
        seconds = time.perf_counter() - t
        p.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        assert p.returncode in (0, 4), err.read()[-3000:]
    return seconds, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def audit_once(n: int, brokers: int, master: str = MASTER, replicas: bool = False) -> dict:
    """In a process of its own: one audit, from Spark's start to its stop; with `replicas`, of the replicated
    fleet of `n` partitions, with --replicas."""
    from logtool.spark.driver import Audit, run_audit
    from logtool.spark.session import start, stop
    from logtool.spark.task import Settings

    log_dirs = replicated_fleet(n) if replicas else fleet(n, brokers)
    # The driver's garbage collections logged: the heap each left behind is what the driver's JVM had to hold
    # (at most; its RSS says how far the heap was let grow). In a directory of its own, removed whole: the JVM
    # moves a log file it finds already there aside (to NAME.0), and that was left behind in /tmp.
    scratch = tempfile.mkdtemp(prefix="audit-many-gc-")
    gc_log = Path(scratch, "gc.log")
    t = time.perf_counter()
    spark, _ = start(master, {"spark.ui.enabled": "false"}, java_options=(f"-Xlog:gc:file={gc_log}",))
    startup = time.perf_counter() - t
    me, jvm = os.getpid(), spark.sparkContext._gateway.proc.pid
    started = _status_mb(me, "VmRSS"), _status_mb(jvm, "VmRSS")
    try:
        t, cpu, jvm_cpu = time.perf_counter(), time.process_time(), _cpu_s(jvm)
        audited = run_audit(spark, Audit(tuple(map(str, log_dirs)), str(DATA / "audit-many-out"),
                                         Settings(replicas=replicas)))
        summary = audited.to_dict()
        seconds, cpu = time.perf_counter() - t, time.process_time() - cpu
        workers = [_status_mb(p, "VmHWM") for p in _descendants(jvm)]
        # The whole audit's CPU: the driver's Python, its JVM and the Python workers, with a local master all
        # of it (on a cluster the executors' is not counted); the machine's other processes are not.
        all_cpu = cpu + _cpu_s(jvm) - jvm_cpu + sum(_cpu_s(p) for p in _descendants(jvm))
        peaks = _status_mb(me, "VmHWM"), _status_mb(jvm, "VmHWM"), max(workers, default=0.0)
        heap = max((int(m.group(1)) for m in re.finditer(r"\d+M->(\d+)M\(\d+M\)", gc_log.read_text())), default=0)
    finally:
        stop(spark)
        shutil.rmtree(scratch)
    if replicas:  # the planted divergences come with damage: exit 4
        assert summary["divergence"]["shared_partitions"] == n + 10 and summary["exit_code"] == 4, summary
    else:
        assert summary["partitions"] == n and summary["exit_code"] == 0, summary["partitions"]
    return {"bytes": summary["bytes"], "tasks": summary["tasks"], "startup_s": round(startup, 2),
            "partition_dirs": summary["partitions"], "batches": summary["batches"],
            "diverging": summary["divergence"]["diverging"] if replicas else None,
            "audit_s": round(seconds, 2), "audit_phases": summary["seconds"], "driver_python_cpu_s": round(cpu, 2),
            "audit_cpu_s": round(all_cpu, 2),
            "driver_python_started_mb": round(started[0]), "driver_jvm_started_mb": round(started[1]),
            "driver_python_rss_mb": round(peaks[0]), "driver_jvm_rss_mb": round(peaks[1]),
            "driver_jvm_heap_after_gc_mb": heap, "worker_python_rss_mb": round(peaks[2])}


def audit_command(n: int, brokers: int, master: str = MASTER, replicas: bool = False,
                  class_cache: bool = True) -> dict:
    p = subprocess.run([sys.executable, "-m", "bench.audit_many", "--one", str(n), str(brokers), master,
                        *(["replicas"] if replicas else [])], capture_output=True, text=True,
                       env=os.environ | {"LOGTOOL_CLASS_CACHE": "1" if class_cache else "0"})
    assert p.returncode == 0, p.stderr[-3000:]
    return json.loads(p.stdout.strip().splitlines()[-1])


def class_cache_ready() -> float | None:
    """The driver JVM's class archive (spark/class_cache.py) made before anything is timed, as a user's
    audits find it after their first: a small audit records the classes, and its detached builder is waited
    for (it would take a core from the audits timed next). The archive's size in MB; None without one."""
    from logtool.spark.class_cache import current_cache
    from logtool.spark.session import java

    java_bin = java()
    cache = current_cache(java_bin) if java_bin else None
    if cache is None:
        return None
    if not cache.archive.exists():
        audit_command(*_fleet_shape("2000"))
        deadline = time.monotonic() + 600
        while not cache.archive.exists() or list(cache.folder.glob(f"{cache.archive.stem}.*.classes")):
            if time.monotonic() > deadline:
                return None
            time.sleep(1)
    return round(cache.archive.stat().st_size / 1e6)


def _spark_class(args: list[str], env: dict, log: Path) -> subprocess.Popen:
    spark_home = Path(__import__("pyspark").__file__).parent
    return subprocess.Popen([str(spark_home / "bin" / "spark-class"), *args],
                            env={**os.environ, "SPARK_HOME": str(spark_home), "SPARK_NO_DAEMONIZE": "1", **env},
                            stdout=log.open("w"), stderr=subprocess.STDOUT, start_new_session=True)


def _wait_for(log: Path, text: str, proc: subprocess.Popen, seconds: float = 120) -> None:
    deadline = time.monotonic() + seconds
    while text not in log.read_text(errors="replace"):
        if proc.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"{text!r} not in {log}")
        time.sleep(0.3)


@contextmanager
def standalone() -> Iterator[str]:
    """A master and two one-core workers on loopback (127.0.0.2 and .3), stopped at the end; its URL."""
    procs = []
    with tempfile.TemporaryDirectory(prefix="audit-many-cluster-") as root:
        try:
            with socket.socket() as sock:
                sock.bind(("127.0.0.1", 0))
                port = sock.getsockname()[1]
            log = Path(root) / "master.log"
            procs.append(_spark_class(["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port",
                                       str(port), "--webui-port", "0"],
                                      {"SPARK_LOCAL_IP": "127.0.0.1", "SPARK_LOG_DIR": root}, log))
            _wait_for(log, "I have been elected leader", procs[-1])
            url = f"spark://127.0.0.1:{port}"
            for ip in ("127.0.0.2", "127.0.0.3"):
                log = Path(root) / f"worker-{ip}.log"
                procs.append(_spark_class(["org.apache.spark.deploy.worker.Worker", "--host", ip, "--cores", "1",
                                           "--memory", "1g", "--webui-port", "0", "--work-dir",
                                           f"{root}/work-{ip}", url],
                                          {"SPARK_LOCAL_IP": ip, "SPARK_LOG_DIR": root}, log))
                _wait_for(log, "Successfully registered with master", procs[-1])
            yield url
        finally:
            for proc in reversed(procs):
                if proc.poll() is None:
                    os.killpg(proc.pid, signal.SIGTERM)
                    proc.wait(30)


def main() -> int:
    results, clustered = [], []
    archive_mb = class_cache_ready()
    without = []
    for spec in FLEETS[:1]:  # what the class cache saves: the first fleet audited without it too
        n, brokers = _fleet_shape(spec)
        warm(fleet(n, brokers))
        without.append({"partitions": n, **audit_command(n, brokers, class_cache=False)})
    for spec in FLEETS:
        n, brokers = _fleet_shape(spec)
        log_dirs = fleet(n, brokers)
        warm(log_dirs)
        before = os.getloadavg()[0]
        t_verify, verify_cpu, verify_rss = verify_command(log_dirs)
        run = audit_command(n, brokers)
        results.append({"partitions": n, "log_dirs": brokers, **run,
                        "verify_s": round(t_verify, 2), "verify_cpu_s": round(verify_cpu, 2),
                        "verify_rss_mb": round(verify_rss),
                        "check_to_verify": round(run["audit_phases"]["check"] / t_verify, 2),
                        "verify_s_per_1000": round(t_verify / n * 1000, 3),
                        "audit_s_per_1000": round(run["audit_s"] / n * 1000, 3),
                        "load_average": [round(before, 2), round(os.getloadavg()[0], 2)]})
    if ON_CLUSTER:
        with standalone() as url:
            for spec in ON_CLUSTER:
                n, brokers = _fleet_shape(spec)
                warm(fleet(n, brokers))
                before = os.getloadavg()[0]
                run = audit_command(n, brokers, url)
                clustered.append({"partitions": n, "log_dirs": brokers, **run,
                                  "audit_s_per_1000": round(run["audit_s"] / n * 1000, 3),
                                  "load_average": [round(before, 2), round(os.getloadavg()[0], 2)]})
    replicated = []
    for n in REPLICATED:
        warm(replicated_fleet(n))
        before = os.getloadavg()[0]
        run = audit_command(n, BROKERS, replicas=True)
        replicated.append({"partitions": n, "log_dirs": BROKERS, **run,
                           "load_average": [round(before, 2), round(os.getloadavg()[0], 2)]})
    write_results("audit_many", {
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
        "master": MASTER, "class_cache_mb": archive_mb, "without_class_cache": without,
        "runs": results, "cluster": clustered, "replicas": replicated,
        "model": model(results), "cluster_model": model(clustered)}, render)
    return 0


def _fit(xs: list[float], ys: list[float]) -> tuple[float, float]:
    """Least squares y = a + b x."""
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    var = sum((x - mx) ** 2 for x in xs)
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / var if var else 0.0
    return my - b * mx, b


def model(runs: list[dict]) -> dict | None:
    """Straight lines through the runs over the same number of log dirs (the most common): the driver's
    Python peak (MB at no partitions, MB per 1,000 partitions), its Python CPU seconds and the audit's seconds
    per 1,000; the driver's Python per log dir, from runs of as many partitions over more log dirs. The JVM
    gets no line: its peak follows the heap Spark lets it grow to, not the partitions (docs/fleet.md)."""
    shapes = [r["log_dirs"] for r in runs]
    if not shapes:
        return None
    usual = max(set(shapes), key=shapes.count)
    same = [r for r in runs if r["log_dirs"] == usual]
    if len({r["partitions"] for r in same}) < 2:
        return None
    xs = [r["partitions"] / 1000 for r in same]
    fitted: dict = {"log_dirs": usual, "points": len(same)}
    for key in ("driver_python_rss_mb", "driver_python_cpu_s", "driver_jvm_heap_after_gc_mb"):
        a, b = _fit(xs, [r[key] for r in same])
        fitted[key] = {"at_0": round(a, 1), "per_1000": round(b, 4)}
    for key in ("driver_jvm_rss_mb", "audit_s_per_1000"):
        fitted[key] = [min(r[key] for r in same), max(r[key] for r in same)]
    wider = [(r, o) for r in runs if r["log_dirs"] != usual
             for o in same if o["partitions"] == r["partitions"]]
    fitted["driver_python_mb_per_log_dir"] = round(
        sum((r["driver_python_rss_mb"] - o["driver_python_rss_mb"]) / (r["log_dirs"] - o["log_dirs"])
            for r, o in wider) / len(wider), 3) if wider else None
    return fitted


def _model_text(m: dict | None, where: str) -> str:
    if m is None:
        return ""
    per_dir = "" if m["driver_python_mb_per_log_dir"] is None else \
        f" and {m['driver_python_mb_per_log_dir']} MB per further log dir"
    py, heap = m["driver_python_rss_mb"], m["driver_jvm_heap_after_gc_mb"]
    return (f"{where}, fitted to the {m['points']} runs over {m['log_dirs']} log dirs (least squares against "
            f"partitions): the driver's Python {py['at_0']} MB + {py['per_1000']} MB per 1,000 partitions{per_dir}, "
            f"its CPU {m['driver_python_cpu_s']['per_1000']} s per 1,000; the heap its JVM kept after a garbage "
            f"collection {heap['at_0']} MB + {heap['per_1000']} MB per 1,000, its RSS {m['driver_jvm_rss_mb'][0]} "
            f"to {m['driver_jvm_rss_mb'][1]} MB (as far as Spark's 1 GB heap limit let it grow); the audit "
            f"{m['audit_s_per_1000'][0]} to {m['audit_s_per_1000'][1]} s per 1,000 partitions.\n")


def _class_cache_text(r: dict) -> str:
    if not r.get("class_cache_mb"):
        return "The driver's JVMs ran without the class cache (spark/class_cache.py): it was off or unusable.\n"
    text = (f"The driver's JVMs mapped Spark's classes from the class cache (spark/class_cache.py; an archive of "
            f"{r['class_cache_mb']} MB, made before the runs).")
    for x in r.get("without_class_cache", []):
        p = x["audit_phases"]
        text += (f" Without it, at {x['partitions']:,} partitions: Spark start {x['startup_s']} s, audit "
                 f"{x['audit_s']} s ({p['listing']} / {p['check']} / {p['output']} s), the audit's CPU "
                 f"{x['audit_cpu_s']} s.")
    return text + "\n"


def render(r: dict) -> str:
    rows = "\n".join(
        f"| {x['partitions']:,} | {x['log_dirs']} | {x['bytes'] / 1e6:.0f} MB | {x['verify_s']} s "
        f"({x['verify_s_per_1000']} s) | {x['verify_rss_mb']} MB | {x['startup_s']} s | {x['audit_s']} s "
        f"({x['audit_s_per_1000']} s) | {x['audit_phases']['listing']} / {x['audit_phases']['check']} / "
        f"{x['audit_phases']['output']} s | {x['check_to_verify']}x | {x['verify_cpu_s']} / {x['audit_cpu_s']} s | "
        f"{x['driver_python_cpu_s']} s | {x['tasks']} | "
        f"{x['driver_python_rss_mb']} MB + JVM {x['driver_jvm_rss_mb']} MB | {x['driver_jvm_heap_after_gc_mb']} MB | "
        f"{x['worker_python_rss_mb']} MB | "
        f"{x['load_average'][0]} / {x['load_average'][1]} |" for x in r["runs"])
    cluster = "\n".join(
        f"| {x['partitions']:,} | {x['log_dirs']} | {x['startup_s']} s | {x['audit_s']} s "
        f"({x['audit_s_per_1000']} s) | {x['audit_phases']['listing']} / {x['audit_phases']['check']} / "
        f"{x['audit_phases']['output']} s | {x['driver_python_cpu_s']} s | {x['tasks']} | "
        f"{x['driver_python_started_mb']} / {x['driver_python_rss_mb']} MB | "
        f"{x['driver_jvm_started_mb']} / {x['driver_jvm_rss_mb']} MB | {x['driver_jvm_heap_after_gc_mb']} MB | "
        f"{x['load_average'][0]} / {x['load_average'][1]} |" for x in r.get("cluster", []))
    replicated = "\n".join(
        f"| {x['partitions']:,} x 3 | {x['partition_dirs']:,} | {x['batches']:,} | {x['bytes'] / 1e6:.0f} MB | "
        f"{x['startup_s']} s | {x['audit_s']} s | {x['audit_phases']['listing']} / {x['audit_phases']['check']} / "
        f"{x['audit_phases']['output']} s | {x['diverging']} | {x['driver_python_rss_mb']} MB + JVM "
        f"{x['driver_jvm_rss_mb']} MB | {x['driver_jvm_heap_after_gc_mb']} MB | {x['worker_python_rss_mb']} MB | "
        f"{x['load_average'][0]} / {x['load_average'][1]} |" for x in r.get("replicas", []))
    with_replicas = "" if not replicated else f"""
With `--replicas`, on {r['master']}: fleets of partitions at 3 replicas over 4 log dirs, compared replica by
replica (the tables step holds the comparison):

| partitions | partition dirs | batches | bytes | Spark start | audit | listing / checks / tables | diverging | driver peak RSS | JVM heap after GC | worker peak RSS | load |
|---|---|---|---|---|---|---|---|---|---|---|---|
{replicated}
"""  # noqa: E501 - a Markdown table's head, as it is written
    head = ("| partitions | log dirs | Spark start | audit (per 1,000) | listing / checks / tables | "
            "driver Python CPU | tasks | driver Python | driver JVM | JVM heap after GC | load |\n|" + "---|" * 11)
    on_cluster = "" if not cluster else f"""
The same fleets on a standalone cluster started on loopback (a master and two workers of one core, 1 GB
each): the driver's JVM is then the driver's only. Its Python and JVM, when Spark had started / at their peak:

{head}
{cluster}

{_model_text(r.get("cluster_model"), "On the cluster")}"""
    return f"""# audit at fleet scale (many small partitions)

{r['machine']}; `logtool audit` on {r['master']} against serial `logtool verify`, one run each, each audit in a
process of its own, every fleet's files read once before it is timed (a warm page cache for all): "Spark start" is the session's start, not in the audit's seconds; check / verify is the
check phase against verify's whole run; CPU: the seconds verify worked, and the audit's (its driver's Python
and JVM and the Python workers; not Spark's start), which the machine's other load changes less than times;
driver Python CPU: the seconds the driver's own Python worked (listing results, the deal, the summary), the
audit's serial part. Peak RSS: the driver's Python and its JVM (with a
local master the executor too: it holds the cached rows), the largest Python worker; JVM heap after GC: the
most the driver's JVM heap held after any garbage collection (from its GC log), what it needed at most. Load average (1 minute)
before verify and after the audit: the machine is shared, so times are noisy; memory is not.

| partitions | log dirs | bytes | verify (per 1,000) | verify peak RSS | Spark start | audit (per 1,000) | listing / checks / tables | check / verify | CPU: verify / audit | driver Python CPU | tasks | driver peak RSS | JVM heap after GC | worker peak RSS | load |
|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|
{rows}

{_class_cache_text(r)}
{_model_text(r.get("model"), "On local[2]")}{on_cluster}{with_replicas}
What this means for a million partitions on 500 brokers: the fleet audit's page, "The driver's memory".
"""  # noqa: E501 - the report's Markdown: a table row, or a line, as it is written


if __name__ == "__main__":
    if sys.argv[1:2] == ["--one"]:
        print(json.dumps(audit_once(int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5:6] == ["replicas"])))
        sys.exit(0)
    sys.exit(main())
