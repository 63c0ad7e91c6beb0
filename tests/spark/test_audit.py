"""`logtool audit` on a generated fleet on local[2]: serial verify's findings row for row, the planted replica
divergence, the same job through spark-submit, and paths an executor cannot use. One SparkSession serves the
whole module (starting one costs seconds)."""
from __future__ import annotations

import datetime
import json
import os
import pickle
import shutil
import struct
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from types import SimpleNamespace

import pytest
from click.testing import CliRunner
from conftest import KAFKA_WRITTEN, LOGTOOL, ROOT, SHARED, require, run_logtool
from pyspark.sql.types import StringType, StructField, StructType, TimestampType

from fixtures import generator as g
from fixtures.fleet import TopicSpec, write_fleet
from fixtures.metadata import metadata_value
from logtool.checks.engine import Report, Target
from logtool.cli import cli
from logtool.format.crc import crc32c
from logtool.checks.partition import PartitionReport
from logtool.findings import KINDS, NOT_AUDITED, SEGMENT_TOO_LARGE, finding
from logtool.recovery.verdict import Blocker, Judged, Loss, NotWorkedOut, judge
from logtool.render.verdict import verdict_lines
from logtool.spark.driver import Audit, list_on_executors, run_audit
from logtool.spark.listing import Listing, Sized, list_path, not_audited
from logtool.spark.rows import DIVERGENCE, FINDINGS, PARTITIONS, SCHEMA_VERSION, VERDICTS
from logtool.spark.session import LOG4J2, start
from logtool.spark.split import SEGMENT_COST, TASKS_PER_CORE, pieces, split, task_size, weight
from logtool.spark.task import Settings
from logtool.spark.verdicts import fleet_verdicts, verdict_summary

# 10 + 6 x 115 partitions at 3 replicas: 2,100 partition dirs over 3 brokers. The first topic's partitions
# span several segments, as its planted cases need (fixtures/fleet.py).
TOPICS = [TopicSpec("orders", 10, 1500, segment_bytes=500)] + [TopicSpec(f"t{i}", 115, 1200) for i in range(6)]
JOB = ROOT / "logtool" / "spark_job.py"
SPARK_SUBMIT = Path(sys.executable).with_name("spark-submit")


@pytest.fixture(scope="module")
def spark():
    session, _ = start("local[2]", {"spark.ui.enabled": "false"})
    yield session
    session.stop()


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    root = tmp_path_factory.mktemp("fleet")
    written = write_fleet(root, TOPICS)
    assert len(written.log_dirs) == 3 and written.partition_dirs >= 2000
    broker = written.log_dirs[0]
    (broker / "lost+found").mkdir()  # a directory that is not a partition, inside a log dir
    (broker / "quiet-0").mkdir()  # a partition dir holding nothing
    (broker / "ghost-0").mkdir()  # a partition whose only segment cannot be opened
    (broker / "ghost-0" / "00000000000000000000.log").symlink_to(root / "nowhere.log")
    # Readable here; the spark-submit test's executors are denied it (tests/denying_daemon.py).
    shutil.copytree(written.log_dirs[1] / "t0-1", broker / "unreadable-0")
    empty, notes, gone = root / "empty", root / "notes", root / "gone"
    empty.mkdir()
    notes.mkdir()
    (notes / "README.txt").write_text("not a log dir")
    gone.symlink_to(root / "nowhere")  # a PATH that cannot be read at all
    return SimpleNamespace(written=written, paths=[str(p) for p in (*written.log_dirs, empty, notes, gone)],
                           extras=[str(p) for p in (empty, notes, gone)])


@pytest.fixture(scope="module")
def audited(spark, fleet, tmp_path_factory):
    out = tmp_path_factory.mktemp("audit") / "out"
    summary = run_audit(spark, Audit(tuple(fleet.paths), str(out), Settings(replicas=True))).to_dict()
    return SimpleNamespace(out=out, summary=summary)


@pytest.fixture(scope="module")
def verified(fleet):
    """Serial `logtool verify --format json`: once per broker (verify takes the log dirs it is given together
    as one broker's), once over the other PATHs."""
    runs = [run_logtool("verify", "--format", "json", *group)
            for group in [[str(d)] for d in fleet.written.log_dirs] + [fleet.extras]]
    assert all("Traceback" not in p.stderr for p in runs)
    return SimpleNamespace(docs=[json.loads(p.stdout) for p in runs], codes=[p.returncode for p in runs])


def _finding(f: dict) -> tuple:
    return f["code"], f["name"], f["severity"], f["file"], f["position"], f["offset"], f["message"]


def verify_findings(docs: list[dict]) -> list[tuple]:
    rows = []
    for doc in docs:
        rows += [("path", f["file"], None, *_finding(f)) for f in doc["findings"]]
        for d in doc["log_dirs"]:
            rows += [("log_dir", d["path"], None, *_finding(f)) for f in d["findings"]]
        for p in doc["partitions"]:
            rows += [("partition", p["path"], None, *_finding(f)) for f in p["findings"]]
            for s in p["segments"]:
                rows += [("segment", p["path"], s["file"], *_finding(f)) for f in s["findings"]]
    return sorted(rows, key=repr)


def audit_findings(spark, out: Path) -> list[tuple]:
    return sorted(((r.scope, r.path, r.segment, r.code, r.name, r.severity, r.file, r.position, r.log_offset,
                    r.message)
                   for r in spark.read.parquet(str(out / "findings")).collect()), key=repr)


SEGMENT_FIELDS = ("file", "base_offset", "size", "valid_bytes", "first_invalid_position", "batches", "records",
                  "first_offset", "last_offset", "first_timestamp", "max_timestamp", "magic", "codecs")


def verify_partitions(docs: list[dict]) -> dict[str, tuple]:
    return {p["path"]: (p["topic"], p["partition"], p["dir_kind"], p["status"],
                        [tuple(s[k] for k in SEGMENT_FIELDS) for s in p["segments"]])
            for doc in docs for p in doc["partitions"]}


def _ms(value):
    """A timestamp of the tables as verify's epoch milliseconds (Spark gives it back in local time, naive)."""
    return round(value.timestamp() * 1000) if isinstance(value, datetime.datetime) else value


def audit_partitions(spark, out: Path) -> dict[str, tuple]:
    return {r.path: (r.topic, r.partition, r.dir_kind, r.status,
                     [tuple(_ms(s[k]) for k in SEGMENT_FIELDS) for s in r.segments])
            for r in spark.read.parquet(str(out / "partitions")).collect()}


def test_findings_equal_serial_verify_row_for_row(spark, audited, verified):
    rows = audit_findings(spark, audited.out)
    assert rows == verify_findings(verified.docs)
    assert {r[4] for r in rows} >= {"CRC_MISMATCH", "TORN_BATCH", "LATER_SEGMENTS_DROPPED", "TIMEINDEX_MISSING"}


def test_partitions_equal_verify(spark, audited, verified):
    assert audit_partitions(spark, audited.out) == verify_partitions(verified.docs)


def test_summary_and_exit_code_are_verify_s(audited, verified):
    s = audited.summary
    for key in ("partitions", "segments", "bytes", "batches", "errors", "warnings", "infos"):
        assert s[key] == sum(doc["summary"][key] for doc in verified.docs), key
    assert s["exit_code"] == max(verified.codes) == 8  # PATHs that are not Kafka's are operational errors
    assert json.loads((audited.out / "summary.json").read_text()) == s
    assert s["worst_partitions"][0]["errors"] >= 2 and s["tasks"] >= 2


def test_divergence_is_where_it_was_planted(spark, fleet, audited):
    rows = spark.read.parquet(str(audited.out / "divergence")).collect()
    found = {(r.topic, r.partition, r.kind, r.first_divergent_offset, tuple(r.affected)) for r in rows}
    assert found == {(d.topic, d.partition, d.kind, d.offset, d.affected) for d in fleet.written.divergences}
    assert all(len(r.replicas) == 3 and r.detail for r in rows)
    # each replica's leader epoch at the point: none for the replicas lacking the batch there
    for r in rows:
        held = dict(zip(r.replicas, r.leader_epochs))
        assert len(held) == 3 and all((held[a] is None) == (r.kind != "different-batch") for a in r.affected), r
    assert audited.summary["divergence"]["shared_partitions"] == sum(t.partitions for t in TOPICS)


def test_paths_that_cannot_be_used_are_rows_and_the_job_succeeds(spark, fleet, audited):
    rows = spark.read.parquet(str(audited.out / "findings")).collect()
    by_path = {(r.scope, Path(r.path).name, r.name) for r in rows}
    assert ("path", "gone", "UNREADABLE") in by_path
    assert ("path", "empty", "NOT_KAFKA") in by_path and ("path", "notes", "NOT_KAFKA") in by_path
    assert ("log_dir", "broker-0", "NOT_KAFKA") in by_path  # lost+found
    assert ("partition", "ghost-0", "UNREADABLE") in by_path
    quiet = spark.read.parquet(str(audited.out / "partitions")).filter("path LIKE '%/quiet-0'").collect()
    assert len(quiet) == 1 and quiet[0].segment_count == 0


def test_tables_have_the_documented_schemas(spark, audited):
    for name, schema in (("findings", FINDINGS), ("partitions", PARTITIONS), ("verdicts", VERDICTS),
                         ("divergence", DIVERGENCE)):
        # the audit's columns last: when it began, and its id (the directory each audit writes: audit_id=ID)
        assert spark.read.parquet(str(audited.out / name)).schema == \
            StructType([*schema.fields, StructField("audited_at", TimestampType()),
                        StructField("audit_id", StringType())]), name
        assert [p.name for p in (audited.out / name).iterdir() if p.is_dir()] == \
            [f"audit_id={audited.summary['audit_id']}"]
    assert audited.summary["schema_version"] == SCHEMA_VERSION


def test_split_partitions_give_verify_s_report(spark, fleet, tmp_path):
    # Small tasks cut each multi-segment partition into pieces; orders-5 on broker-2 is damaged in its first
    # segment, so LATER_SEGMENTS_DROPPED must see the segments of later pieces.
    paths = [str(fleet.written.log_dirs[2] / f"orders-{p}") for p in (4, 5, 6)]
    summary = run_audit(spark, Audit(tuple(paths), str(tmp_path / "out"), task_bytes=SEGMENT_COST * 3)).to_dict()
    assert summary["tasks"] > len(paths)
    doc = json.loads(run_logtool("verify", "--format", "json", *paths).stdout)
    assert audit_findings(spark, tmp_path / "out") == verify_findings([doc])
    assert audit_partitions(spark, tmp_path / "out") == verify_partitions([doc])
    assert "LATER_SEGMENTS_DROPPED" in {f["name"] for p in doc["partitions"] for f in p["findings"]}


def test_kafka_written_cases_split_at_every_segment_give_verify_s_findings(spark, tmp_path):
    """A split must not invent findings: transactions opened before a cut have an unknown first offset in
    the later piece (v2-idempotent-txn/payments-0 gave two false TXNINDEX_MISMATCH errors). Tasks this
    small put every segment of every Kafka-written case in a piece of its own."""
    paths = sorted(str(p) for p in KAFKA_WRITTEN.glob("*/*-[0-9]*") if p.is_dir())
    summary = run_audit(spark, Audit(tuple(paths), str(tmp_path / "out"), task_bytes=1)).to_dict()
    assert summary["tasks"] > 2 * len(paths)
    doc = json.loads(run_logtool("verify", "--format", "json", *paths).stdout)
    assert audit_findings(spark, tmp_path / "out") == verify_findings([doc])


def test_a_hanging_transaction_split_across_tasks_is_verify_s_with_the_same_timeout(spark, tmp_path):
    """A transaction opened in one piece and still open at the end of another: hanging or merely open as
    --transaction-timeout says, in the audit as in verify."""
    from support.producers import MINUTE, TS, batches, txn

    entries = batches(7, 0, 0, 0) + txn(9, 1, 0, 6, TS, None) + batches(7, 0, 6, 10, n=6, ts=TS + 40 * MINUTE)
    path = str(g.write_partition(tmp_path / "data", "t", 0, entries, segment_bytes=400).path)
    for timeout in (15 * MINUTE, 60 * MINUTE):
        out = tmp_path / f"out-{timeout}"
        run_audit(spark, Audit((path,), str(out), Settings(transaction_timeout_ms=timeout), task_bytes=1))
        doc = json.loads(run_logtool("verify", "--format", "json", "--transaction-timeout", f"{timeout}ms",
                                     path).stdout)
        assert audit_findings(spark, out) == verify_findings([doc])
        names = {f["name"] for p in doc["partitions"] for f in p["findings"]}
        assert names == ({"TRANSACTION_HANGING"} if timeout == 15 * MINUTE else {"TRANSACTION_OPEN"})


class _PageNumbers(HTMLParser):
    """The numbers a report page draws from the summary (`data-field`/`data-value`), and every URL it would
    load or link to."""

    def __init__(self) -> None:
        super().__init__()
        self.values: dict[str, list[str]] = {}
        self.urls: list[str] = []
        self.tags: set[str] = set()

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags.add(tag)
        if "data-field" in a:
            self.values.setdefault(a["data-field"], []).append(a["data-value"])
        self.urls += [v for k, v in attrs if k in ("src", "href", "xmlns", "action") and v]


def test_the_report_page_shows_the_summary_s_numbers_and_loads_nothing(audited, verified, tmp_path):
    page_path = tmp_path / "report.html"
    r = CliRunner().invoke(cli, ["report", str(audited.out), "-o", str(page_path)], standalone_mode=False,
                           catch_exceptions=False)
    assert r.return_value == 0
    summary = json.loads((audited.out / "summary.json").read_text())
    page = _PageNumbers()
    page.feed(page_path.read_text())
    assert page.urls == [] and not page.tags & {"script", "link", "img", "iframe", "object"}
    for key in ("partitions", "segments", "bytes", "batches", "errors", "warnings", "infos", "exit_code"):
        assert page.values[key] == [str(summary[key])], key
    assert page.values["by_code.count"] == [str(r["count"]) for r in summary["by_code"]]
    assert page.values["worst.errors"] == [str(r["errors"]) for r in summary["worst_partitions"]]
    hosts = summary["by_host"]
    assert sum(h["errors"] for h in hosts) == summary["errors"] and sum(h["infos"] for h in hosts) == summary["infos"]
    assert page.values["by_host.damaged_bytes"] == [str(h["damaged_bytes"]) for h in hosts]
    topics = summary["by_topic"]
    assert sum(t["warnings"] for t in topics) == summary["warnings"]
    damaged = sum(s["size"] - s["valid_bytes"] for d in verified.docs for s in _segments(d))
    assert sum(h["damaged_bytes"] for h in hosts) == sum(t["damaged_bytes"] for t in topics) == damaged > 0
    assert sum(d["partitions"] for d in summary["damage_by_day"]) == \
        sum(1 for d in verified.docs for p in d["partitions"] if any(s["first_invalid_position"] is not None
                                                                    for s in p["segments"]))
    assert page.values["divergence.diverging"] == [str(summary["divergence"]["diverging"])]
    verdict = summary["verdict"]
    for key in ("log_dirs", "would_not_start", "partitions_cut", "recovery_bytes_cut",
                "recovery_valid_records_dropped"):
        assert page.values[f"verdict.{key}"] == [str(verdict[key])], key
    assert page.values["verdict.first.recovery_bytes_cut"] == [str(v["recovery_bytes_cut"]) for v in verdict["first"]]
    # the same page on standard output; a directory that is not an audit's is one line and exit 8
    r = CliRunner().invoke(cli, ["report", str(audited.out), "-o", "-"], standalone_mode=False,
                           catch_exceptions=False)
    assert r.stdout == page_path.read_text()
    r = run_logtool("report", str(tmp_path))
    assert r.returncode == 8 and r.stderr.count("\n") == 1 and "summary.json" in r.stderr
    log_dir = KAFKA_WRITTEN / "v2-idempotent-txn"  # a partition dir's parent: refused, nothing written
    r = run_logtool("report", str(audited.out), "-o", str(log_dir / "payments-0" / "report.html"))
    assert r.returncode == 8 and "writes nothing there" in r.stderr
    assert not (log_dir / "payments-0" / "report.html").exists()


def test_the_day_of_damage_is_the_last_record_s_before_it():
    from logtool.spark.rows import timestamp
    from logtool.spark.summary import _day_of_damage

    def seg(name: str, max_ts):  # a partitions-table segment: file first, max_timestamp at index 10
        return (name, 0, 0, 0, None, 0, None, None, None, None, timestamp(max_ts), [2], ["none"])

    day = 86_400_000
    row = {"first_invalid_segment": "b.log", "segments": [seg("a.log", 3 * day), seg("b.log", 5 * day + 7),
                                                          seg("c.log", 9 * day)]}
    assert _day_of_damage(row) == "1970-01-06"  # the damaged segment's own, not the later one's
    row["segments"][1] = seg("b.log", None)  # damage at its first batch: the segment before says when
    assert _day_of_damage(row) == "1970-01-04"
    row["segments"][0] = seg("a.log", -1)
    assert _day_of_damage(row) == "unknown"


def _segments(doc: dict):
    return [s for p in doc["partitions"] for s in p["segments"]]


def _sized(name: str, sizes: list[int]) -> Sized:
    bases = [1000 * i for i in range(len(sizes))]
    return Sized(Target(Path(f"/logs/{name}")), "/logs", tuple(zip(bases, sizes)))


def test_work_is_balanced_by_bytes():
    task = 256 << 20
    huge = _sized("huge-0", [100 << 20] * 10)
    small = [_sized(f"small-{i}", [4096]) for i in range(500)]
    cut = pieces(huge, task)
    assert len(cut) == 5 and [p.piece for p in cut] == [(0, 2000), (2000, 4000), (4000, 6000), (6000, 8000), (8000, None)]
    assert [s for p in cut for s in p.segments] == list(huge.segments)
    units = split([huge, *small], task)
    assert sorted(str(i.target.path) for u in units for i in u.items if i.piece is None) == \
        sorted(str(s.target.path) for s in small)
    total = sum(weight(p) for p in cut) + sum(weight(s) for s in small)
    assert sum(u.weight for u in units) == total and len(units) == -(-total // task)
    # As even as the items allow: no unit is lighter than another by more than one item.
    assert max(u.weight for u in units) - min(u.weight for u in units) <= max(weight(p) for p in cut)
    assert all(u.weight <= task for u in units)  # here the small partitions fill up every unit evenly
    assert [u.weight for u in units] == sorted((u.weight for u in units), reverse=True)


@pytest.mark.parametrize("size,rounds", [(100_000, 1), (8 << 20, 2)])  # 2,000 x 9.25 MiB is past 4 x MAX_TASK
def test_many_equal_partitions_make_whole_rounds_of_tasks(size, rounds):
    parts = [_sized(f"p-{i}", [size]) for i in range(2000)]
    units = split(parts, task_size(parts, cores=2))
    assert len(units) == 2 * TASKS_PER_CORE * rounds and len({len(u.items) for u in units}) == 1  # no straggler


def test_listing_on_executors_is_the_driver_s(spark, fleet):
    # A cluster's executors list the PATHs (a local master lists in the driver): the same listings.
    by_executors = list_on_executors(spark.sparkContext, [(p, None) for p in fleet.paths], "test-listing")
    in_driver = [list_path(p) for p in fleet.paths]
    assert [(x.path, x.targets, [d.findings for d in x.report.log_dirs], x.report.findings) for x in by_executors] == \
        [(x.path, x.targets, [d.findings for d in x.report.log_dirs], x.report.findings) for x in in_driver]
    assert sum(len(x.targets) for x in by_executors) >= 2000


def _rows_without(rows, name: str):
    return [r for r in rows if Path(r[1]).name != name]


def test_spark_submit_with_a_python_lacking_logtool_s_dependencies_is_one_line(tmp_path):
    """spark-submit runs the job with whatever Python it finds (PYSPARK_DRIVER_PYTHON unset): a bare one
    says what it cannot import, in one line, before anything starts."""
    bare = tmp_path / "bare"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(bare)], check=True)
    r = subprocess.run([str(bare / "bin" / "python"), str(JOB), str(tmp_path), "-o", str(tmp_path / "out")],
                       capture_output=True, text=True, timeout=120, cwd="/")
    assert r.returncode == 8 and r.stdout == ""
    assert r.stderr.count("\n") == 1 and "(spark-submit's Python) cannot import click, rich, crc32c" in r.stderr
    assert "PYSPARK_DRIVER_PYTHON" in r.stderr and not (tmp_path / "out").exists()


def test_spark_submit_runs_the_same_job(spark, fleet, audited, tmp_path):
    out = tmp_path / "out"
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1",
           "PYTHONPATH": str(ROOT / "tests")}  # where the denying daemon lives
    p = subprocess.run([str(SPARK_SUBMIT), "--master", "local[2]", "--conf", "spark.ui.enabled=false",
                        "--driver-java-options", f"-XX:TieredStopAtLevel=1 -Dlog4j2.configurationFile={LOG4J2.as_uri()}",
                        "--conf", "spark.python.daemon.module=denying_daemon", str(JOB), *fleet.paths,
                        "--output", str(out), "--replicas", "--format", "json"],
                       capture_output=True, text=True, env=env, timeout=300)
    assert p.returncode == 8, p.stderr[-3000:]
    assert json.loads(p.stdout)["partitions"] == audited.summary["partitions"]
    submitted = audit_findings(spark, out)
    # The executors could not list unreadable-0: a finding row, not a failed job. Its name still says which
    # partition it is, so the checkpoints that do not list it (it was copied in) still say so.
    denied = [r for r in submitted if Path(r[1]).name == "unreadable-0"]
    assert sorted((r[0], r[4]) for r in denied) == [("partition", "CHECKPOINT_ENTRY_MISSING")] * 2 + [
        ("partition", "UNREADABLE")]
    assert "Permission denied" in next(r for r in denied if r[4] == "UNREADABLE")[-1]
    assert _rows_without(submitted, "unreadable-0") == _rows_without(audit_findings(spark, audited.out), "unreadable-0")
    same = {k: v for k, v in audit_partitions(spark, audited.out).items() if not k.endswith("/unreadable-0")}
    assert {k: v for k, v in audit_partitions(spark, out).items() if not k.endswith("/unreadable-0")} == same
    divergence = [sorted(map(tuple, spark.read.parquet(str(d / "divergence")).drop("audited_at", "audit_id").collect()))
                  for d in (out, audited.out)]
    assert divergence[0] == divergence[1]


def test_the_command_prints_the_summary(spark, fleet, tmp_path, capsys):
    # In-process, so the module's session (already active) runs it.
    from logtool.cli import main

    paths = [str(fleet.written.log_dirs[0] / "t1-0"), str(fleet.written.log_dirs[0] / "orders-4")]
    with pytest.raises(SystemExit) as exit_:
        main(["audit", *paths, "--output", str(tmp_path / "out"), "--replicas"])
    assert exit_.value.code == 4  # orders-4 is torn on broker-0
    text = capsys.readouterr().out
    assert "2 partition(s)" in text and "TORN_BATCH" in text and "0 partition(s) on more than one log dir" in text
    # the verdict as verify says it: the partitions' parent would start, and its recovery would cut orders-4
    assert "verdict: of 1 log dir(s), 0 would not start; recovery would cut" in text
    assert "its recovery would cut" in text and "orders-4" in text and "next:" in text
    assert "Traceback" not in text and (tmp_path / "out" / "summary.json").exists()


@pytest.mark.slow
def test_usage_errors_stop_before_spark(fleet, tmp_path):
    log_dir = fleet.written.log_dirs[0]
    p = run_logtool("audit", str(log_dir), "--output", str(log_dir / "audit"))
    assert p.returncode == 16 and "never writes into what it reads" in p.stderr and "Traceback" not in p.stderr
    assert not (log_dir / "audit").exists()
    p = run_logtool("audit", str(log_dir), "--output", str(tmp_path / "o"), "--master", "bogus://x")
    assert p.returncode == 16 and "not a Spark master" in p.stderr and "Traceback" not in p.stderr


def test_without_pyspark_one_line_names_the_extra(tmp_path):
    code = "import sys; sys.modules['pyspark'] = None; from logtool.cli import main; main(sys.argv[1:])"
    p = subprocess.run([sys.executable, "-c", code, "audit", str(tmp_path / "logs"), "--output", str(tmp_path / "o")],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 8 and len(p.stderr.strip().splitlines()) == 1 and "logtool[spark]" in p.stderr


def test_without_java_one_line(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "JAVA_HOME"} | {"PATH": str(LOGTOOL.parent)}
    p = subprocess.run([str(LOGTOOL), "audit", str(tmp_path / "logs"), "--output", str(tmp_path / "o")],
                       capture_output=True, text=True, env=env, timeout=60)
    assert p.returncode == 8 and len(p.stderr.strip().splitlines()) == 1 and "Java" in p.stderr


@pytest.mark.spark
def test_executors_without_logtool_s_dependencies_fail_in_one_line(tmp_path):
    """A Python on the executors that lacks what the checks import (PYSPARK_PYTHON pointing elsewhere): one
    tiny job before the audit says what is missing where, instead of four failed attempts per task."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(tmp_path / "bare")], check=True, timeout=120)
    (tmp_path / "logs" / "t-0").mkdir(parents=True)
    env = {**os.environ, "PYSPARK_PYTHON": str(tmp_path / "bare" / "bin" / "python")}
    p = subprocess.run([str(LOGTOOL), "audit", "--master", "local[1]", str(tmp_path / "logs"), "--output",
                        str(tmp_path / "o"), "--conf", "spark.ui.enabled=false"],
                       capture_output=True, text=True, env=env, timeout=300)
    errors = p.stderr.splitlines()  # Spark's noise included (logtool.spark.jvm_stderr): none
    assert p.returncode == 8 and len(errors) == 1 and errors[0].startswith("logtool:")
    assert "lacks" in errors[0] and "zstandard" in errors[0] and str(tmp_path / "bare") in errors[0]


def test_executor_modules_do_not_import_the_driver_s_display():
    """What executors unpickle lives in modules that import neither rich nor click (README's list of what
    each node needs is then true)."""
    code = ("import sys; import logtool.spark.outcome, logtool.spark.listing, logtool.spark.task, logtool.spark.session;"
            " print(sorted(m for m in ('rich', 'click', 'logtool.render', 'logtool.spark.driver') if m in sys.modules))")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert p.stdout.strip() == "[]", p.stdout + p.stderr


def verify_verdicts(docs: list[dict]) -> dict[str, dict]:
    return {v["log_dir"]: v for doc in docs for v in doc.get("verdict", [])}


def audit_verdicts(spark, out: Path) -> dict[str, dict]:
    rows = spark.read.parquet(str(out / "verdicts")).collect()
    # verify's fields; the audit's own columns (whose broker, which audit) aside
    return {r.log_dir: {k: v for k, v in r.asDict(recursive=True).items()
                        if k not in ("host", "cluster_id", "node_id", "audited_at", "audit_id")} for r in rows}


def test_verdicts_are_verify_s_log_dir_for_log_dir(spark, fleet, audited, verified):
    verdicts = audit_verdicts(spark, audited.out)
    assert verdicts == verify_verdicts(verified.docs)
    broker = verdicts[str(fleet.written.log_dirs[0])]
    # lost+found stops broker-0; ghost-0 cannot be read, so what recovery does to it is not worked out
    assert not broker["broker_starts"] and {b["file"] for b in broker["blockers"]} == {"lost+found"}
    assert [x["partition"].rsplit("/", 1)[1] for x in broker["not_worked_out"]] == ["ghost-0"]
    assert broker["recovery_bytes_cut"] > 0 and broker["next"][-1] == f"logtool truncate {fleet.written.log_dirs[0]}"
    assert all(v["broker_starts"] for d, v in verdicts.items() if d != str(fleet.written.log_dirs[0]))
    s = audited.summary["verdict"]
    assert s["log_dirs"] == len(verdicts) and s["would_not_start"] == 1
    assert s["recovery_bytes_cut"] == sum(v["recovery_bytes_cut"] for v in verdicts.values()) > 0
    assert s["first"][0]["log_dir"] == str(fleet.written.log_dirs[0])  # the one that would not start first


def test_each_partition_s_recovery_is_its_verdict_s(spark, audited, verified):
    losses = {x["partition"]: x for v in verify_verdicts(verified.docs).values() for x in v["recovery"]}
    rows = spark.read.parquet(str(audited.out / "partitions")).collect()
    cut = {r.path: (r.recovery_bytes_cut, r.recovery_segments_deleted, r.recovery_valid_records_dropped,
                    r.log_end_offset_after) for r in rows if r.recovery_bytes_cut}
    assert cut == {p: (x["bytes_cut"], x["segments_deleted"], x["valid_records_dropped"], x["log_end_offset_after"])
                   for p, x in losses.items()}
    assert any(x["segments_deleted"] for x in losses.values())
    assert {r.path.rsplit("/", 1)[1] for r in rows if r.recovery_not_worked_out} == {"ghost-0"}
    assert all(r.broker_starts for r in rows)  # no partition of this fleet stops its broker by itself


def test_a_split_partition_s_verdict_is_verify_s(spark, fleet, tmp_path):
    # orders-5 on broker-2 is damaged in its first segment: its recovery deletes the later segments, which
    # other pieces walked; the verdict is worked out once the pieces are joined.
    paths = [str(fleet.written.log_dirs[2] / f"orders-{p}") for p in (4, 5, 6)]
    summary = run_audit(spark, Audit(tuple(paths), str(tmp_path / "out"), task_bytes=SEGMENT_COST * 3)).to_dict()
    assert summary["tasks"] > len(paths)
    doc = json.loads(run_logtool("verify", "--format", "json", *paths).stdout)
    verdicts = audit_verdicts(spark, tmp_path / "out")
    assert verdicts == verify_verdicts([doc])
    (verdict,) = verdicts.values()
    assert any(x["segments_deleted"] and x["valid_records_dropped"] for x in verdict["recovery"])
    assert any(step.startswith("logtool dump ") and "--salvage" in step for step in verdict["next"])


def test_a_pinned_log_dir_s_next_commands_are_for_its_host():
    # Partitions of h1:/data/kafka, its own files not among the PATHs; the next commands run on h1.
    listing = Listing("h1:/data/kafka/orders-0", "h1", Report(),
                      [Sized(Target(Path("/data/kafka/orders-0")), "h1:/data/kafka")])
    loss = Loss("h1:/data/kafka/orders-0", 633, 1, 5, 477, 472, "LT102 TORN_BATCH in 00000000000000000457.log")
    (verdict,) = fleet_verdicts([listing], [("h1:/data/kafka", Judged("h1:/data/kafka/orders-0", loss=loss))])
    assert verdict["host"] == "h1" and verdict["broker_starts"] and not verdict["log_dir_checked"]
    assert verdict["next"] == [
        "on h1: logtool dump /data/kafka/orders-0 --salvage --format jsonl > orders-0.rescued.jsonl",
        "on h1: logtool truncate /data/kafka/orders-0"]


def test_what_was_not_read_neither_starts_nor_stops_its_broker():
    """A PATH whose host was lost before it was listed, and a log dir with a partition whose host was lost
    during the checks: each has a verdict, and whether its broker would start cannot be told, unless what
    was read stops it. The summary counts them apart and puts them after those that would not start."""
    lost = not_audited("/data/kafka", "h2", "no live Spark executor on h2")
    listed = Listing("h1:/data/kafka/orders-0", "h1", Report(),
                     [Sized(Target(Path("/data/kafka/orders-0")), "h1:/data/kafka")])
    unread = Judged("h1:/data/kafka/orders-0",
                    not_worked_out=NotWorkedOut("h1:/data/kafka/orders-0", "not audited: lost", unread=True))
    refused = Blocker(finding(SEGMENT_TOO_LARGE, "too large", "h1:/data/kafka/orders-1"), "h1:/data/kafka/orders-1",
                      SEGMENT_TOO_LARGE.at_start)
    verdicts = {v["log_dir"]: v for v in fleet_verdicts([listed, lost], [("h1:/data/kafka", unread)])}
    assert verdicts["h2:/data/kafka"]["broker_starts"] is None and verdicts["h2:/data/kafka"]["host"] == "h2"
    assert verdicts["h2:/data/kafka"]["not_worked_out"] == [
        {"partition": "h2:/data/kafka", "why": "not audited: no live Spark executor on h2"}]
    assert verdicts["h1:/data/kafka"]["broker_starts"] is None
    assert verdict_lines(verdicts["h2:/data/kafka"])[0] == ("[bold yellow]verdict[/] h2:/data/kafka: whether the "
                                                           "broker would start cannot be told, as not all of it was "
                                                           "read:")
    stopped = fleet_verdicts([listed], [("h1:/data/kafka", unread),
                                        ("h1:/data/kafka", Judged("h1:/data/kafka/orders-1", [refused]))])
    assert stopped[0]["broker_starts"] is False  # what was read stops it, whatever the rest holds
    summary = verdict_summary([*verdicts.values(), *stopped])
    assert (summary["would_not_start"], summary["start_unknown"], summary["troubled"]) == (1, 2, 3)
    assert [v["broker_starts"] for v in summary["first"]] == [False, None, None]
    assert unread.starts is None and Judged("h1:/data/kafka/orders-2").starts is True


def test_a_finding_pickled_between_executors_keeps_the_catalog_s_kind():
    """The pieces of a split partition not audited travel pickled to the task that joins them: there, its
    NOT_AUDITED is still NOT_AUDITED (`is`), so the verdict knows nothing was read (it said nothing before)."""
    assert all(pickle.loads(pickle.dumps(k)) is k for k in KINDS)
    rep = PartitionReport("h1:/data/kafka/orders-0", "orders", 0, "plain")
    rep.findings.append(finding(NOT_AUDITED, "not audited: lost", rep.path))
    judged = judge(pickle.loads(pickle.dumps(rep, pickle.HIGHEST_PROTOCOL)))
    assert judged.starts is None and judged.not_worked_out == NotWorkedOut(rep.path, "not audited: lost", True)


def test_audits_accumulate_and_answer_an_analyst_s_questions_in_duckdb(spark, fleet, audited, tmp_path):
    """A second audit into the same output adds its own rows beside the first's; DuckDB reads the tables
    as they are (hive partitions by audit_id), with no column named by a reserved word."""
    import duckdb
    from support.producers import MINUTE, TS, batches, txn

    out = tmp_path / "out"
    shutil.copytree(audited.out, out)
    entries = batches(7, 0, 0, 0) + txn(9, 1, 0, 6, TS, None) + batches(7, 0, 6, 10, n=6, ts=TS + 40 * MINUTE)
    hanging = g.write_partition(tmp_path / "data", "payments", 0, entries).path
    second = run_audit(spark, Audit((str(hanging),), str(out), Settings(transaction_timeout_ms=15 * MINUTE))).to_dict()
    assert second["audit_id"] > audited.summary["audit_id"]  # sortable by time
    assert json.loads((out / "summary.json").read_text()) == second  # the latest, and each under summaries/
    assert sorted(p.stem for p in (out / "summaries").iterdir()) == [audited.summary["audit_id"], second["audit_id"]]

    db = duckdb.connect()

    def table(name: str, audit_id: str) -> str:
        return (f"(select * from read_parquet('{out}/{name}/*/*.parquet', hive_partitioning = true) "
                f"where audit_id = '{audit_id}')")

    first = audited.summary["audit_id"]
    # the brokers by damaged bytes, as the summary counts them
    by_broker = db.sql(f"select cluster_id, node_id, sum(bytes - valid_bytes) as damaged from {table('partitions', first)}"
                       f" group by all having damaged > 0 order by damaged desc, node_id").fetchall()
    assert by_broker == [(b["cluster_id"], b["node_id"], b["damaged_bytes"]) for b in
                         sorted(audited.summary["by_broker"], key=lambda b: (-b["damaged_bytes"], b["node_id"]))
                         if b["damaged_bytes"]]
    assert len(by_broker) == 3 and len({c for c, _, _ in by_broker}) == 1  # one cluster, three brokers
    # the topics with hanging transactions, in the second audit only
    assert db.sql(f"select distinct topic from {table('findings', second['audit_id'])} "
                  f"where name = 'TRANSACTION_HANGING'").fetchall() == [("payments",)]
    assert db.sql(f"select count(*) from {table('findings', first)} where name = 'TRANSACTION_HANGING'").fetchall() \
        == [(0,)]
    # where the replicas part, and the node ids of the affected brokers (broker-N is node N)
    diverging = db.sql(f"select topic, partition, kind, first_divergent_offset, affected_nodes "
                       f"from {table('divergence', first)} order by partition").fetchall()
    assert diverging == sorted([(d.topic, d.partition, d.kind, d.offset, [int(Path(a).name.split("-")[1])
                                                                         for a in d.affected])
                                for d in fleet.written.divergences], key=lambda r: r[1])


def test_replicas_are_compared_within_their_cluster_only(spark, fleet, tmp_path):
    """A log dir of another cluster holding the same topic names is not a replica of anything here."""
    b0, b1 = fleet.written.log_dirs[:2]
    foreign = tmp_path / "other-cluster"
    shutil.copytree(b1, foreign, ignore=shutil.ignore_patterns("lost+found", "ghost-0", "unreadable-0", "quiet-0"))
    meta = (foreign / "meta.properties").read_text()
    cluster = next(line.split("=", 1)[1] for line in meta.splitlines() if line.startswith("cluster.id="))
    (foreign / "meta.properties").write_text(meta.replace(cluster, "AAAAAAAAAAAAAAAAAAAAAA"))
    shutil.rmtree(foreign / "t0-1")  # and it differs: a partition the other cluster does not have
    rows = {}
    for name, paths in (("alone", (b0, b1)), ("beside", (b0, b1, foreign))):
        run_audit(spark, Audit(tuple(map(str, paths)), str(tmp_path / name), Settings(replicas=True)))
        rows[name] = [(r.cluster_id, r.topic, r.partition, tuple(r.replicas), r.kind, tuple(r.affected))
                      for r in spark.read.parquet(str(tmp_path / name / "divergence")).collect()]
    assert rows["beside"] and sorted(rows["beside"]) == sorted(rows["alone"])
    assert all(str(foreign) not in r[3] for r in rows["beside"])


KRAFT_NODES = ("kafka-2167572160391180112", "kafka-7498518511977031704")  # node.id 0 and 2 of one real cluster
KRAFT_CLUSTER = "ljAoerGESXi5val3QKEeFQ"


def _kraft_node(root: Path, node_id: int, source: Path | None = None) -> Path:
    """A log dir of node `node_id` of the real cluster: a copy of `source` (writable), or only meta.properties
    and an empty __cluster_metadata-0."""
    log_dir = root / f"node-{node_id}"
    if source is None:
        (log_dir / "__cluster_metadata-0").mkdir(parents=True)
    else:
        shutil.copytree(source, log_dir)
        for p in [log_dir, *log_dir.rglob("*")]:
            p.chmod(0o755 if p.is_dir() else 0o644)
    (log_dir / "meta.properties").write_text(f"#\n#Fri Dec 15 12:55:03 CET 2023\nnode.id={node_id}\nversion=1\n"
                                             f"cluster.id={KRAFT_CLUSTER}\n")
    return log_dir


def _metadata_divergence(spark, paths: list[Path], out: Path) -> list:
    run_audit(spark, Audit(tuple(map(str, paths)), str(out), Settings(replicas=True)))
    return [r for r in spark.read.parquet(str(out / "divergence")).collect() if r.topic == "__cluster_metadata"]


def test_the_metadata_logs_of_a_cluster_s_nodes_are_compared_like_replicas(spark, tmp_path):
    """Two nodes of one KRaft cluster (Kafka's own test data in real-more): their __cluster_metadata logs are
    compared as replicas are: node 2's log ends at offset 24, where node 0's goes on (offset 24 in leader epoch
    1, then the LEADER_CHANGE of epoch 2). A third node whose metadata log is empty from offset 26 on (as after
    fetching the leader's snapshot: Kafka starts the log anew at the snapshot's offset) lacks nothing."""
    root = require(SHARED / "real-more" / "apache__kafka" / "core" / "data")
    fetched = _kraft_node(tmp_path, 1)
    (fetched / "__cluster_metadata-0" / "00000000000000000026.log").write_bytes(b"")
    nodes = [root / KRAFT_NODES[0], root / KRAFT_NODES[1], fetched]
    rows = _metadata_divergence(spark, nodes, tmp_path / "out")
    assert [(r.cluster_id, r.partition, r.kind, r.first_divergent_offset, r.affected_nodes) for r in rows] == \
        [(KRAFT_CLUSTER, 0, "shorter", 24, [2])]
    assert dict(zip(rows[0].replicas, rows[0].leader_epochs)) == {str(nodes[0]): 1, str(nodes[1]): None,
                                                                   str(fetched): None}


def test_where_a_node_s_metadata_log_parts_from_the_quorum_s_are_the_offset_and_the_epochs(spark, tmp_path):
    """A controller and two brokers of the real cluster: the controller's metadata log is node 0's (the leader's
    log, offsets 0..25: epoch 1, and from offset 25 epoch 2, opened by its LEADER_CHANGE). Node 2 fetched offset
    24 and then, at offset 25, a record of epoch 1 that the old leader never committed (a batch written here by
    kafka-python). Kafka's truncation keeps the epoch 2 batch: node 2 is the one that parts, at offset 25."""
    root = require(SHARED / "real-more" / "apache__kafka" / "core" / "data")
    node0 = _kraft_node(tmp_path, 0, root / KRAFT_NODES[0])
    node2 = _kraft_node(tmp_path, 2, root / KRAFT_NODES[1])
    # A pure controller's log dir: meta.properties (node.id, cluster.id) and the metadata log, nothing else.
    controller = tmp_path / "controller-1000"
    controller.mkdir()
    (controller / "meta.properties").write_text(f"#\n#Fri Dec 15 12:55:02 CET 2023\nnode.id=1000\nversion=1\n"
                                                f"cluster.id={KRAFT_CLUSTER}\ndirectory.id=hKxMiwY3Qc2XKYK5xBdt_g\n")
    shutil.copytree(node0 / "__cluster_metadata-0", controller / "__cluster_metadata-0")
    leader = (node0 / "__cluster_metadata-0" / "00000000000000000000.log").read_bytes()
    entries = {h.offset: h for h in g.iter_entry_headers(leader)}
    assert (entries[24].leader_epoch, entries[25].leader_epoch) == (1, 2)
    at_24 = leader[entries[24].position:entries[24].position + entries[24].size]
    record = g.Record(None, metadata_value("NoOpRecord", {}), entries[24].max_timestamp + 1)
    stale = g.build_batches(g.BatchSpec(records=[[record]], batches=1, records_per_batch=1, leader_epoch=1), 25)
    log = node2 / "__cluster_metadata-0" / "00000000000000000000.log"
    assert [h.offset for h in g.iter_entry_headers(log.read_bytes())][-1] == 23
    log.write_bytes(log.read_bytes() + at_24 + stale[0].data)
    # the batches are whole: the walker takes them as valid (their CRCs are good), so only the comparison parts them
    assert crc32c(stale[0].data[21:]) == struct.unpack_from(">I", stale[0].data, 17)[0]

    rows = _metadata_divergence(spark, [controller, node0, node2], tmp_path / "out")
    assert [(r.cluster_id, r.topic, r.partition, r.first_divergent_offset, r.kind, r.affected, r.affected_nodes)
            for r in rows] == [(KRAFT_CLUSTER, "__cluster_metadata", 0, 25, "different-batch", [str(node2)], [2])]
    row = rows[0]
    assert row.replicas == [str(controller), str(node0), str(node2)] and row.leader_epochs == [2, 2, 1]
    assert "(leader epoch 2" in row.detail and "(leader epoch 1" in row.detail
