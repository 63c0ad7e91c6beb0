"""The audit on a real Spark standalone cluster, started here from the installed pyspark on loopback: a master and
two workers bound to 127.0.0.2 and 127.0.0.3, which play two broker hosts. PATHs written HOST:PATH are read on
their host only; with one worker stopped, its PATHs come back as "not audited" rows and the rest is complete.
Every process is stopped at the end, failure or not."""
from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from conftest import KAFKA_WRITTEN, LOGTOOL, ROOT, SHARED, require, run_logtool

from fixtures.fleet import TopicSpec, write_fleet
from logtool.spark.session import start
from logtool.store.layout import parse_partition_dir

pytestmark = [pytest.mark.spark, pytest.mark.cluster]

WORKERS = ("127.0.0.2", "127.0.0.3")
SPARK_HOME = Path(__import__("pyspark").__file__).parent
TOPICS = [TopicSpec("orders", 10, 1500, segment_bytes=500), TopicSpec("clicks", 6, 1200)]


def _free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def _spark_class(args: list[str], env: dict, log: Path) -> subprocess.Popen:
    return subprocess.Popen([str(SPARK_HOME / "bin" / "spark-class"), *args], env={**os.environ, **env},
                            stdout=log.open("w"), stderr=subprocess.STDOUT, start_new_session=True)


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def _wait_for(log: Path, text: str, proc: subprocess.Popen, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while text not in log.read_text(errors="replace"):
        if proc.poll() is not None or time.monotonic() > deadline:
            raise AssertionError(f"{text!r} not in {log}:\n{log.read_text(errors='replace')[-2000:]}")
        time.sleep(0.3)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    root = tmp_path_factory.mktemp("cluster")
    env = {"SPARK_HOME": str(SPARK_HOME), "SPARK_LOG_DIR": str(root), "SPARK_NO_DAEMONIZE": "1"}
    procs: dict[str, subprocess.Popen] = {}
    try:
        port = _free_port()
        master_log = root / "master.log"
        procs["master"] = _spark_class(["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port",
                                        str(port), "--webui-port", str(_free_port())],
                                       {**env, "SPARK_LOCAL_IP": "127.0.0.1"}, master_log)
        _wait_for(master_log, "I have been elected leader", procs["master"])
        cluster = SimpleNamespace(url=f"spark://127.0.0.1:{port}", procs=procs, root=root, env=env)
        for ip in WORKERS:
            _start_worker(cluster, ip)
        yield cluster
    finally:
        for proc in reversed(list(procs.values())):
            _stop(proc)


def _start_worker(cluster: SimpleNamespace, ip: str) -> None:
    log = cluster.root / f"worker-{ip}.log"
    log.unlink(missing_ok=True)
    cluster.procs[ip] = _spark_class(["org.apache.spark.deploy.worker.Worker", "--host", ip, "--cores", "1",
                                      "--memory", "1g", "--webui-port", "0", "--work-dir",
                                      str(cluster.root / f"work-{ip}"), cluster.url],
                                     {**cluster.env, "SPARK_LOCAL_IP": ip}, log)
    _wait_for(log, "Successfully registered with master", cluster.procs[ip])


@pytest.fixture(scope="module")
def brokers(tmp_path_factory):
    written = write_fleet(tmp_path_factory.mktemp("brokers"), TOPICS)
    return written.log_dirs


@pytest.fixture(scope="module")
def local_spark():
    session, _ = start("local[1]", {"spark.ui.enabled": "false"})
    yield session
    session.stop()


def _audit(cluster, paths: list[str], out: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(LOGTOOL), "audit", "--master", cluster.url, *paths, "-o", str(out), "--format", "json",
                           *extra], capture_output=True, text=True, timeout=600, cwd="/")


def _verify(log_dirs) -> list[dict]:
    return [json.loads(run_logtool("verify", "--format", "json", str(d)).stdout) for d in log_dirs]


def _unpinned(path: str) -> str:
    host, sep, rest = path.partition(":")
    return rest if sep and host in WORKERS else path


def test_pinned_paths_are_read_on_their_hosts_and_agree_with_verify(cluster, brokers, local_spark, tmp_path):
    pins = {brokers[0]: WORKERS[0], brokers[1]: WORKERS[1], brokers[2]: WORKERS[0]}
    out = tmp_path / "out"
    r = _audit(cluster, [f"{host}:{d}" for d, host in pins.items()], out)
    assert "Traceback" not in r.stderr, r.stderr[-3000:]
    summary = json.loads(r.stdout)
    docs = _verify(brokers)
    assert (summary["errors"], summary["warnings"], summary["infos"]) == \
        tuple(sum(d["summary"][k] for d in docs) for k in ("errors", "warnings", "infos"))
    assert summary["exit_code"] == 4  # the planted damage, found as verify finds it
    parts = local_spark.read.parquet(str(out / "partitions")).collect()
    assert len(parts) == sum(len(d["partitions"]) for d in docs)
    for row in parts:
        host, _, path = row.path.partition(":")
        assert pins[Path(path).parent] == host, row.path  # named as asked
        assert row.host == f"{host} (read on {host})", row.host  # and read there, by that worker's executor
    found = sorted(((_unpinned(r.path), r.code, r.file, r.position, r.log_offset, r.message)
                    for r in local_spark.read.parquet(str(out / "findings")).collect()), key=repr)
    assert found == _verify_rows(docs)


def test_spark_submit_runs_the_pinned_job_too(cluster, brokers, tmp_path):
    out = tmp_path / "out"
    r = subprocess.run([str(SPARK_HOME / "bin" / "spark-submit"), "--master", cluster.url,
                        "--conf", f"spark.pyspark.python={sys.executable}",
                        "--conf", f"spark.pyspark.driver.python={sys.executable}",
                        str(ROOT / "logtool" / "spark_job.py"), f"{WORKERS[1]}:{brokers[1]}", "-o", str(out),
                        "--format", "json"], capture_output=True, text=True, timeout=600, cwd="/",
                       env={**os.environ, "SPARK_HOME": str(SPARK_HOME)})
    assert "Traceback" not in r.stderr, r.stderr[-3000:]
    summary = json.loads(r.stdout)
    doc = _verify([brokers[1]])[0]
    assert summary["partitions"] == len(doc["partitions"]) and summary["errors"] == doc["summary"]["errors"]


def test_the_packed_environment_recipe_runs_on_executors_without_logtool(cluster, brokers, tmp_path):
    """README's recipe as written: `make pack-env`'s archive, unpacked by Spark beside each executor, is the
    executors' Python (PYSPARK_PYTHON=./env/bin/python); the driver's is this one (PYSPARK_DRIVER_PYTHON)."""
    archive = tmp_path / "logtool-env.tar.gz"
    subprocess.run([sys.executable, "-m", "tools.pack_env", str(archive)], cwd=ROOT, check=True, timeout=600)
    out = tmp_path / "out"
    env = {**os.environ, "SPARK_HOME": str(SPARK_HOME), "PYSPARK_DRIVER_PYTHON": sys.executable,
           "PYSPARK_PYTHON": "./env/bin/python"}
    r = subprocess.run([str(SPARK_HOME / "bin" / "spark-submit"), "--master", cluster.url, "--archives",
                        f"{archive}#env", str(ROOT / "logtool" / "spark_job.py"), f"{WORKERS[0]}:{brokers[2]}",
                        "-o", str(out), "--format", "json"], capture_output=True, text=True, timeout=600, cwd="/",
                       env=env)
    assert "Traceback" not in r.stderr, r.stderr[-3000:]
    summary = json.loads(r.stdout)
    doc = _verify([brokers[2]])[0]
    assert summary["partitions"] == len(doc["partitions"]) and summary["errors"] == doc["summary"]["errors"]
    # Spark unpacked the archive in the executor's work dir, where ./env/bin/python (which started every
    # Python worker, or the job would have failed) is found
    assert list((cluster.root / f"work-{WORKERS[0]}").glob("app-*/*/env/bin/python"))


def shared_paths() -> list[Path]:
    """The shared fixtures as PATHs: every real broker's log dir, every Kafka-written partition dir."""
    real = sorted({p.parent.parent for root in (SHARED / "real", SHARED / "real-more")
                   for p in require(root).rglob("*.log") if parse_partition_dir(p.parent.name) is not None})
    written = sorted(p for p in require(KAFKA_WRITTEN).glob("*/*-[0-9]*") if p.is_dir())
    return real + written


def test_a_pinned_worker_killed_during_the_checks_ends_the_job_and_names_what_it_did_not_audit(
        cluster, brokers, local_spark, tmp_path):
    """Its tasks cannot run anywhere else: Spark gives up waiting for the host after the bounded locality
    wait, the tasks come back unread, and the driver reports them not audited once the host is gone. (With
    a wait that never ended, the job hung with no task running.)"""
    out = tmp_path / "out"
    victim = WORKERS[1]
    paths = [f"{WORKERS[0]}:{brokers[0]}", f"{victim}:{brokers[1]}", f"{victim}:{brokers[2]}"]
    earlier = set((cluster.root / f"work-{victim}").glob("app-*"))
    proc = subprocess.Popen([str(LOGTOOL), "audit", "--master", cluster.url, *paths, "-o", str(out), "--format",
                             "json", "--task-bytes", "200000"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, cwd="/")
    try:
        deadline = time.monotonic() + 300
        while not _checking_on(cluster.root / f"work-{victim}", earlier):
            assert proc.poll() is None and time.monotonic() < deadline, "the audit ended before a check ran there"
            time.sleep(0.2)
        os.killpg(cluster.procs[victim].pid, signal.SIGKILL)  # the worker and its executor, without a word
        cluster.procs[victim].wait()
        stdout, stderr = proc.communicate(timeout=240)  # ends (it hung for good before), within a bounded time
    finally:
        proc.kill()
        _start_worker(cluster, victim)  # for the tests after this one
    assert proc.returncode == 8 and "Traceback" not in stderr, stderr[-3000:]
    summary = json.loads(stdout)
    (lost,) = summary["not_audited"]
    assert lost["host"] == victim and lost["count"] > 0
    assert f"logtool: not audited on {victim}: {lost['count']} PATH(s) or partition(s)" in stderr
    docs = _verify(brokers)
    parts = local_spark.read.parquet(str(out / "partitions")).collect()
    # every partition once: the survivor's all checked, the victim's checked before the kill or not audited
    assert sorted(_unpinned(r.path) for r in parts) == sorted(p["path"] for d in docs for p in d["partitions"])
    missing = {r.path for r in local_spark.read.parquet(str(out / "findings")).collect() if r.name == "NOT_AUDITED"}
    assert len(missing) == lost["count"] and all(p.startswith(f"{victim}:") for p in missing)
    survivor = [r for r in parts if r.path.startswith(f"{WORKERS[0]}:")]
    assert survivor and all(r.host == f"{WORKERS[0]} (read on {WORKERS[0]})" for r in survivor)
    # Of what was not read nothing is known, whether it would stop its broker either.
    assert all(r.broker_starts is None for r in parts if r.path in missing)
    unread = [v for v in local_spark.read.parquet(str(out / "verdicts")).collect()
              if any(x.why.startswith("not audited") for x in v.not_worked_out)]
    assert unread and all(v.broker_starts is not True and v.log_dir.startswith(f"{victim}:") for v in unread)
    assert summary["verdict"]["would_not_start"] + summary["verdict"]["start_unknown"] >= len(unread)


def test_a_worker_killed_during_the_checks_changes_nothing(cluster, brokers, local_spark, tmp_path):
    """Over the shared fixtures and the generated brokers, Spark runs the lost tasks again on the other
    worker: the result is verify's, row for row."""
    out = tmp_path / "out"
    paths = [*brokers, *shared_paths()]
    victim = WORKERS[1]
    earlier = set((cluster.root / f"work-{victim}").glob("app-*"))
    # About 130 tasks: many still to run when the worker goes (675 of 4 MB took 100 s on the one core left)
    proc = subprocess.Popen([str(LOGTOOL), "audit", "--master", cluster.url, *map(str, paths), "-o", str(out),
                             "--format", "json", "--task-bytes", "20000000"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd="/")
    deadline = time.monotonic() + 300
    while not _checking_on(cluster.root / f"work-{victim}", earlier):  # a check task has started there
        assert proc.poll() is None and time.monotonic() < deadline, "the audit ended before a check ran on " + victim
        time.sleep(0.2)
    _stop(cluster.procs[victim])
    stdout, stderr = proc.communicate(timeout=600)
    assert "Traceback" not in stderr, stderr[-3000:]
    summary = json.loads(stdout)
    # One verify of every PATH (one run each took 15-20 s): the same report of each, but verify holds the log
    # dirs it is given as one broker's against each other (META_PROPERTIES_MISMATCH, LT514), and the audit
    # holds log dirs of one node id against each other: the shared fixtures come from many clusters whose
    # brokers share node ids. A verify of each PATH alone reports no LT514 here.
    doc = json.loads(run_logtool("verify", "--format", "json", *map(str, paths)).stdout)
    assert summary["partitions"] == len(doc["partitions"]) > 1500
    rows = local_spark.read.parquet(str(out / "findings")).collect()
    found = sorted(((r.path, r.code, r.file, r.position, r.log_offset, r.message) for r in rows
                    if r.name != "META_PROPERTIES_MISMATCH"), key=repr)
    assert found == [row for row in _verify_rows([doc]) if row[1] != "LT514"]
    assert {r.scope for r in rows if r.name == "META_PROPERTIES_MISMATCH"} <= {"log_dir"}


def _checking_on(work: Path, earlier: set[Path] = frozenset()) -> bool:
    """Whether a check task (stage 2 or later) has started in the newest application's executor there; the
    applications of `earlier` tests left their logs in the same work dir and are not this one."""
    apps = sorted(set(work.glob("app-*")) - earlier)
    logs = list(apps[-1].glob("*/stderr")) if apps else []
    return any(re.search(r"Running task \S+ in stage ([2-9]|\d\d)", p.read_text(errors="replace")) for p in logs)


def _verify_rows(docs: list[dict]) -> list[tuple]:
    return sorted([(p["path"], f["code"], f["file"], f["position"], f["offset"], f["message"])
                   for d in docs for p in d["partitions"]
                   for f in [*p["findings"], *(f for s in p["segments"] for f in s["findings"])]]
                  + [(ld["path"], f["code"], f["file"], f["position"], f["offset"], f["message"])
                     for d in docs for ld in d["log_dirs"] for f in ld["findings"]], key=repr)


def test_a_stopped_hosts_paths_are_not_audited_and_the_rest_is_complete(cluster, brokers, local_spark, tmp_path):
    _stop(cluster.procs[WORKERS[1]])  # (stopped already by the test before): the cluster goes on with one worker
    out = tmp_path / "out"
    r = _audit(cluster, [f"{WORKERS[0]}:{brokers[0]}", f"{WORKERS[1]}:{brokers[1]}"], out)
    assert r.returncode == 8, r.stderr[-3000:]
    summary = json.loads(r.stdout)
    missing = [row for row in local_spark.read.parquet(str(out / "findings")).collect() if row.name == "NOT_AUDITED"]
    assert [(m.scope, m.path, m.message) for m in missing] == \
        [("path", f"{WORKERS[1]}:{brokers[1]}", f"not audited: no live Spark executor on {WORKERS[1]}")]
    unread = f"{WORKERS[1]}:{brokers[1]}"
    (verdict,) = [v for v in local_spark.read.parquet(str(out / "verdicts")).collect() if v.log_dir == unread]
    assert verdict.broker_starts is None and not verdict.log_dir_checked and verdict.host == WORKERS[1]
    assert [(x.partition, x.why) for x in verdict.not_worked_out] == \
        [(unread, f"not audited: no live Spark executor on {WORKERS[1]}")]
    assert summary["verdict"]["start_unknown"] == 1
    doc = _verify([brokers[0]])[0]
    assert summary["partitions"] == len(doc["partitions"])
    assert summary["errors"] == doc["summary"]["errors"] + 1  # broker-0 complete, plus the row for broker-1
