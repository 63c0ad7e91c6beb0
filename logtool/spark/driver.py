"""The audit's driver: list the PATHs on executors, split the work by bytes, run verify's checks in Spark
tasks, write the tables and the summary. The driver itself never reads a log dir, and holds no object per
partition: the listings come back as columns (listing.Targets), are dealt out to the tasks as columns, and
what comes back to it is a few tallies and the partitions that change a verdict."""
from __future__ import annotations

import datetime
import json
import math
import pickle
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial, reduce
from pathlib import Path

from py4j.protocol import Py4JError
from pyspark import RDD, Accumulator, SparkContext, StorageLevel
from pyspark.errors import PySparkException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.util import InheritableThread

from logtool import __version__
from logtool.findings import Severity
from logtool.checks.logdir_set import check_log_dir_sets_by_node
from logtool.spark.divergence import divergence
from logtool.spark.hosts import Pin, gateway, located, pinned, resolve
from logtool.spark.listing import Listing, list_path, not_audited, path_key
from logtool.spark.outcome import blob, gathered, lost_rows, merged_rows, unit_rows
from logtool.spark.progress import job_progress
from logtool.spark.rounds import progress_made, repin
from logtool.spark.rows import (BATCH, FINDING, FINDINGS, JUDGED, MISPLACED, PARTITION, PIECE, TAGGED, TALLY,
                                SCHEMA_VERSION, VERDICTS, broker_of, listing_findings, verdict_row)
from logtool.spark.session import preflight, ship, stop_if_interrupted
from logtool.spark.split import TASKS_PER_CORE, Unit, split, task_size
from logtool.spark.summary import Audited, Tally, divergence_summary
from logtool.spark.task import Settings
from logtool.spark.verdicts import fleet_verdicts, verdict_summary

ROWS_PER_FILE = 200_000  # partitions per Parquet file: a few files for a big fleet, one for a small one


@dataclass(slots=True, frozen=True)
class Audit:
    paths: tuple[str, ...]
    output: str
    settings: Settings = field(default_factory=Settings)
    task_bytes: int | None = None  # None: about two tasks per core (split.task_size)
    fail_on: Severity = Severity.WARNING


def run_audit(spark: SparkSession, audit: Audit, startup_seconds: float | None = None) -> Audited:
    """Run the audit, write its part of DIR/findings, DIR/partitions, DIR/verdicts, DIR/divergence (with
    --replicas), each under audit_id=ID/ so that audits accumulate; DIR/summary.json (the latest audit's, and
    DIR/summaries/ID.json); return the result, whose document is the summary written."""
    sc = spark.sparkContext
    audited_at = datetime.datetime.now(datetime.UTC).replace(microsecond=0)
    # Sortable by time, unique by its random part.
    audit_id = f"{audited_at:%Y%m%dT%H%M%SZ}-{uuid.uuid4().hex[:8]}"
    group = f"logtool-audit-{audit_id}"
    warming = _warm_up(spark, group)
    ship(spark)
    preflight(spark)
    stop_if_interrupted()
    began = time.perf_counter()
    listings = _list(sc, audit.paths, f"{group}-listing")
    stop_if_interrupted()
    log_dirs = [ld for listing in listings for ld in listing.report.log_dirs]
    check_log_dir_sets_by_node(log_dirs)
    # The driver deals the listings' columns out into the tasks' shares, then keeps only their log dirs.
    targets = [listing.targets for listing in listings]
    task_bytes = audit.task_bytes or task_size(targets, sc.defaultParallelism)
    units = split(targets, task_bytes)
    del targets
    for listing in listings:
        listing.targets = listing.targets.outline()
    listed = time.perf_counter()

    sc.setJobGroup(f"{group}-check", "logtool audit: checking partitions")
    # The aggregations over the tables are small next to the checks: a few shuffle partitions, not 200.
    spark.conf.set("spark.sql.shuffle.partitions", str(max(2 * sc.defaultParallelism, len(units))))
    checked = sc.accumulator(0)
    with job_progress(sc, f"{group}-check", "checking partitions", checked, sum(len(u.items) for u in units)):
        # The checks fill the cache every table below is read from.
        rows = _check(spark, units, audit.settings, checked)
        sent = _gather(rows[-1])
    stop_if_interrupted()  # before any table is written
    counted = reduce(Tally.merge, (pickle.loads(b) for kind, b in sent if kind == TALLY), Tally())
    verdicts = fleet_verdicts(listings, (pickle.loads(b) for kind, b in sent if kind == JUDGED))
    checked_at = time.perf_counter()

    warming.join()  # long over, but for a fleet of a few partitions: its table is not written beside ours
    sc.setJobGroup(f"{group}-output", "logtool audit: writing the tables")
    out = _Output(spark, audit.output, audit_id, audited_at)
    with job_progress(sc, f"{group}-output", "writing the tables"):
        summary = _write(spark, out, audit, counted, rows, listings, len(units), verdicts)
    for cached in rows:
        cached.unpersist()
    done = time.perf_counter()

    summary |= {
        "logtool_version": __version__, "schema_version": SCHEMA_VERSION, "audit_id": audit_id,
        "audited_at": audited_at.isoformat(),
        "paths": list(audit.paths), "output": audit.output, "master": sc.master, "tasks": len(units),
        "task_bytes": task_bytes,
        "seconds": {"startup": None if startup_seconds is None else round(startup_seconds, 3),
                    "listing": round(listed - began, 3), "check": round(checked_at - listed, 3),
                    "output": round(done - checked_at, 3), "total": round(done - began, 3)},
    }
    text = json.dumps(summary, indent=2) + "\n"
    out.text(f"summaries/{audit_id}.json", text)
    out.text("summary.json", text)
    return Audited(summary)


def _warm_up(spark: SparkSession, group: str) -> InheritableThread:
    """Start, beside the listing, what a Spark session pays once for its first queries, whatever their size:
    the SQL engine's classes loaded and its first plans compiled for the check rows (rows.TAGGED cached,
    then filtered) and, with a local master, for the Parquet writer (an empty table written to a directory
    of its own, on this machine, which a cluster's executors would not share). The audit's own queries then
    find them ready (bench/results/audit_many.md). Best effort: a warm-up that fails leaves the audit's own
    queries to pay, and to report any error, as they did before."""
    def run() -> None:
        spark.sparkContext.setJobGroup(f"{group}-warm-up", "logtool audit: starting Spark SQL")
        try:
            cached = spark.createDataFrame([], TAGGED).persist()
            _kind(cached, MISPLACED).select("blob")._jdf.queryExecution().toRdd()  # planned and compiled, not run
            cached.unpersist()
            if (spark.sparkContext.master or "").startswith("local"):
                with tempfile.TemporaryDirectory(prefix="logtool-warm-up-") as scratch:
                    _Output.stamped(spark.createDataFrame([], VERDICTS), datetime.datetime.now(datetime.UTC)) \
                        .write.parquet(Path(scratch, "table").as_uri())
        except (Py4JError, PySparkException, OSError):
            pass

    thread = InheritableThread(target=run, name="logtool-audit-warm-up", daemon=True)
    thread.start()
    return thread


def _write(spark: SparkSession, out: "_Output", audit: Audit, counted: Tally, rows: list[DataFrame],
           listings: list[Listing], units: int, verdicts: list[dict]) -> dict:
    """The tables, from the cached check rows and the verdicts, and the summary's counts."""
    files = max(1, min(units, counted.partitions // ROWS_PER_FILE + 1))
    out.table("verdicts", spark.createDataFrame([verdict_row(v) for v in verdicts], VERDICTS).coalesce(1))
    about_paths = spark.createDataFrame([r for listing in listings for r in listing_findings(listing)], FINDINGS)
    # Two small jobs over the cache, each keeping one core busy in the JVM: side by side.
    _side_by_side(lambda: out.table("findings", _kind(rows[-1], FINDING).select("finding.*")
                                    .unionByName(about_paths).coalesce(files)),
                  lambda: out.table("partitions", _kind(rows[-1], PARTITION).select("partition.*").coalesce(files)))
    if audit.settings.replicas:
        batches = _kind(rows[-1], BATCH).select("batch.*")
        out.table("divergence", divergence(batches, out.read("partitions")).coalesce(1))
    for listing in listings:
        host = pinned(listing.path)[0] or listing.host  # the broker's, as in the partitions' counts
        counted.count(listing.report.findings, listing.report.operational_error, host)
        for ld in listing.report.log_dirs:
            counted.count(ld.findings, host=host, broker=(*broker_of(ld), host))
    summary = counted.summary(audit.fail_on)
    summary["verdict"] = verdict_summary(verdicts)
    summary["divergence"] = divergence_summary(out.read("divergence"), out.read("partitions")) \
        if audit.settings.replicas else None
    return summary


def _list(sc: SparkContext, paths: tuple[str, ...], group: str) -> list[Listing]:
    """What verify plans for each PATH, with segment sizes, listed by the executors (a HOST:PATH on an
    executor of its host): on a cluster the PATHs may be reachable from the executors only, and with any
    master the driver then holds each PATH's listing only as columns, never a partition's objects (with a
    local master too: 100,000 partitions over 4 log dirs listed in the driver's Python cost it 30 MB more at
    its peak). A HOST:PATH whose host has no live executor is not audited: a finding row says so and the
    rest goes on."""
    asked = [pinned(p) for p in paths]
    keys = frozenset(path_key(path, Pin(host, host) if host else None) for host, path in asked)
    executors = resolve(sc, sorted({host for host, _ in asked if host is not None})) if any(h for h, _ in asked) \
        else {}
    work: list[tuple[int, str, Pin | None]] = []
    listings: dict[int, Listing] = {}
    for i, (host, path) in enumerate(asked):
        if host is None:
            work.append((i, path, None))
        elif (executor := executors.get(host)) is None:
            listings[i] = not_audited(path, host, f"no live Spark executor on {host}")
        else:
            work.append((i, path, Pin(host, executor)))
    if work:
        listings |= dict(zip((i for i, _, _ in work),
                             list_on_executors(sc, [(p, pin) for _, p, pin in work], group, keys)))
    return [listings[i] for i in range(len(paths))]


def list_on_executors(sc: SparkContext, paths: list[tuple[str, Pin | None]], group: str,
                      keys: frozenset[str] | None = None) -> list[Listing]:
    """(PATH, its pin or None) listed on executors, each pinned one on its host, in the order given. `keys`:
    of all the PATHs audited together (listing.path_key), by default these."""
    if keys is None:
        keys = frozenset(path_key(p, pin) for p, pin in paths)
    listed_one = partial(_list_one, keys)
    sc.setJobGroup(group, "logtool audit: listing the PATHs")
    with job_progress(sc, group, "listing"):
        if not any(pin for _, pin in paths):
            # One task per PATH (a log dir is a fair share of listing), but no more than the cluster runs at once.
            slices = max(1, min(len(paths), TASKS_PER_CORE * sc.defaultParallelism))
            return sc.parallelize(paths, slices).map(listed_one).collect()
        # One task per PATH, each where it must run; again for those Spark ran elsewhere (spark/rounds.py).
        listed: dict[int, Listing] = {}
        pending, stalled = list(enumerate(paths)), 0
        while pending:
            stop_if_interrupted()
            got = located(sc, [(work, work[1].executor if work[1] else None) for _, work in pending]) \
                .map(listed_one).collect()
            listed |= {i: listing for (i, _), listing in zip(pending, got) if not listing.misplaced}
            back = [(i, work) for (i, work), listing in zip(pending, got) if listing.misplaced]
            stalled = progress_made(len(pending), len(back), stalled)
            pending, gone = repin(sc, back, _pin_of_work, stalled)
            listed |= {i: not_audited(p, _pin_of_work((i, (p, pin))).asked, why) for (i, (p, pin)), why in gone}
        return [listed[i] for i in range(len(paths))]


def _pin_of_work(work: tuple[int, tuple[str, Pin | None]]) -> Pin:
    pin = work[1][1]
    assert pin is not None, "only a pinned PATH's task can run off its host"
    return pin


def _unit_pin(unit: Unit) -> Pin:
    assert unit.pin is not None, "only a pinned unit's task can run off its host"
    return unit.pin


def _list_one(keys: frozenset[str], work: tuple[str, Pin | None]) -> Listing:
    return list_path(*work, paths=keys)


def _side_by_side(*calls: Callable[[], None]) -> None:
    """Run `calls` in threads that carry this one's Spark job group; raise the first error."""
    errors: list[BaseException] = []

    def run(call: Callable[[], None]) -> None:
        try:
            call()
        except BaseException as e:  # handed to the caller's thread
            errors.append(e)

    threads = [InheritableThread(target=run, args=(call,)) for call in calls]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]


def _kind(rows: DataFrame, kind: str) -> DataFrame:
    return rows.filter(rows.kind == kind)


def _check(spark: SparkSession, units: list[Unit], settings: Settings,
           checked_items: Accumulator) -> list[DataFrame]:
    """The checks, as tagged rows (`rows.TAGGED`) cached in the JVM; the last DataFrame holds every
    partition's rows (the others are cached steps towards it, to unpersist at the end). Pinned units Spark
    ran off their host go again, in rounds, until checked or their host is gone (spark/rounds.py). Pieces of
    a split partition are joined again last, which is the only shuffle, and only when something was split."""
    sc = spark.sparkContext
    rounds: list[DataFrame] = []
    split_any = any(u.items.pieces for u in units)
    # A pinned item's rows cannot be computed again anywhere but on its host: kept on two executors, so that
    # the loss of one (its host gone) costs no row already checked there (Spark would run the task again,
    # off the dead host, where it reads nothing).
    keep = StorageLevel.MEMORY_AND_DISK_2 if any(u.pin for u in units) else StorageLevel.MEMORY_AND_DISK
    pending, stalled = units, 0
    while pending:
        stop_if_interrupted()
        # Units pinned to a host (HOST:PATH) go where their host is; the others anywhere.
        tasks = located(sc, [(u, u.host) for u in pending]) if any(u.pin for u in pending) else \
            sc.parallelize(pending, max(1, len(pending)))
        checked = _tagged(spark, tasks.flatMap(partial(unit_rows, settings, checked_items))).persist(keep)
        rounds.append(checked)
        back: list[Unit] = [blob(r) for r in _kind(checked, MISPLACED).select("blob").collect()]  # runs the round
        stalled = progress_made(len(pending), len(back), stalled)
        pending, gone = repin(sc, back, _unit_pin, stalled)
        if gone:  # their rows made on executors too: a lost host's partitions may be many
            lost = sc.parallelize(gone, min(len(gone), TASKS_PER_CORE * sc.defaultParallelism)).flatMap(lost_rows)
            rounds.append(_tagged(spark, lost))
    # No unit at all (no PATH could be listed): an empty table, whose rows are the listing's findings only.
    checked = reduce(DataFrame.unionByName, rounds) if rounds else spark.createDataFrame([], TAGGED)
    if not split_any:
        return [*rounds, checked]
    # Grouped in the JVM by their key: a Python worker sees the pieces of the partitions it joins only.
    pieces = _kind(checked, PIECE).groupBy("key").agg(F.collect_list("blob").alias("pieces"))
    joined = pieces.rdd.mapPartitions(partial(merged_rows, settings))
    whole = checked.filter(checked.kind != PIECE).unionByName(_tagged(spark, joined)).persist(keep)
    return [*rounds, whole]


def _tagged(spark: SparkSession, rows: RDD[tuple]) -> DataFrame:
    """The check tasks' rows as a DataFrame. spark/rows.py builds them as Spark holds values of `rows.TAGGED`
    (tuples, lists, timestamps in microseconds), so they go to the JVM as they are: PySpark's
    createDataFrame would walk every row again in the Python workers to convert it to that very form, at a
    cost per row of the order of its building (tests/spark/test_tagged_rows.py holds the rows to the form)."""
    jvm = spark.sparkContext._jvm
    assert jvm is not None  # a live context's
    objects = jvm.SerDeUtil.toJavaArray(rows._to_java_object_rdd())
    return DataFrame(spark._jsparkSession.applySchemaToPythonRDD(objects.rdd(), TAGGED.json()), spark)


def _gather(rows: DataFrame) -> list[tuple[str, bytes]]:
    """The rows.JUDGED blobs and the tasks' tallies, the tallies added up on executors first: a few come
    to the driver, not one per task."""
    sent = rows.filter(rows.kind.isin(TALLY, JUDGED)).select("kind", "blob").rdd
    return sent.coalesce(max(1, math.isqrt(sent.getNumPartitions()))).mapPartitions(gathered).collect()


class _Output:
    """The --output directory, through Hadoop's file system API: a local path or any URI Spark can write. Each
    table is partitioned by audit: this audit writes (and reads back) TABLE/audit_id=ID only, its rows
    stamped with the time it began."""

    def __init__(self, spark: SparkSession, root: str, audit_id: str, audited_at: datetime.datetime) -> None:
        self.spark, self.root, self.audit_id, self.audited_at = spark, root.rstrip("/"), audit_id, audited_at
        self._path = gateway(spark.sparkContext).org.apache.hadoop.fs.Path
        self.fs = self._path(self.root).getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())
        self.fs.setWriteChecksum(False)  # no .crc files beside summary.json

    def _here(self, name: str) -> str:
        return f"{self.root}/{name}/audit_id={self.audit_id}"

    def table(self, name: str, df: DataFrame) -> None:
        # The partition column's value is its directory's name, as Spark, DuckDB and Arrow read hive layouts.
        self.stamped(df, self.audited_at).write.mode("overwrite").parquet(self._here(name))

    @staticmethod
    def stamped(df: DataFrame, audited_at: datetime.datetime) -> DataFrame:
        """A table's rows with the time the audit began."""
        return df.withColumn("audited_at", F.lit(audited_at))

    def read(self, name: str) -> DataFrame:
        return self.spark.read.parquet(self._here(name)).drop("audited_at")

    def text(self, name: str, text: str) -> None:
        stream = self.fs.create(self._path(f"{self.root}/{name}"), True)
        try:
            stream.write(text.encode())
        finally:
            stream.close()
