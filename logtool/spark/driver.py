"""The audit's driver: list the PATHs (on executors), split the work by bytes, run verify's checks in Spark
tasks, write the tables and the summary. The driver itself never opens a log dir."""
from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path

from pyspark import RDD, Broadcast, SparkContext, StorageLevel
from pyspark.sql import DataFrame, SparkSession

from logtool.checks.catalog import Severity
from logtool.checks.logdir import LogDirReport
from logtool.checks.logdir_set import check_log_dir_set
from logtool.format.meta import MetaError, meta_identity
from logtool.spark.divergence import divergence
from logtool.spark.listing import Listing, list_path
from logtool.spark.progress import job_progress
from logtool.spark.rows import BATCHES, FINDINGS, PARTITIONS, batch_rows, listing_findings, outcome_findings, partition_row
from logtool.spark.session import ship
from logtool.spark.split import TASKS_PER_CORE, Unit, split, task_size
from logtool.spark.summary import divergence_summary, tally
from logtool.spark.task import Checked, DirFindings, Settings, across_files, merge, parent_dir, run_unit

ROWS_PER_FILE = 200_000  # partitions per Parquet file: a few files for a big fleet, one for a small one


@dataclass(slots=True, frozen=True)
class Audit:
    paths: tuple[str, ...]
    output: str
    settings: Settings = field(default_factory=Settings)
    task_bytes: int | None = None  # None: about four tasks per core (split.task_size)
    fail_on: Severity = Severity.WARNING


def _whole(c: Checked) -> bool:
    return c.item.target.piece is None


def _piece_of(c: Checked) -> bool:
    return c.item.target.piece is not None


def _partition_path(c: Checked) -> str:
    return str(c.item.target.path)


def _without_batches(c: Checked) -> Checked:
    return replace(c, batches=[])


def _is_checked(outcome: Checked | DirFindings) -> bool:
    return isinstance(outcome, Checked)


def _check_log_dir_sets(log_dirs: list[LogDirReport]) -> None:
    """verify holds the log dirs it is given together as one broker's; a fleet is many brokers, so each
    node's log dirs are held against each other (a log dir whose node is unknown stands alone)."""
    by_node: dict[object, list[LogDirReport]] = {}
    for ld in log_dirs:
        try:
            node = meta_identity(ld.meta).node_id
        except MetaError:
            node = None
        by_node.setdefault(ld.path if node is None else node, []).append(ld)
    for group in by_node.values():
        check_log_dir_set(group)


def run_audit(spark: SparkSession, audit: Audit, startup_seconds: float | None = None) -> dict:
    """Run the audit, write DIR/findings, DIR/partitions, DIR/divergence (with --replicas) and DIR/summary.json;
    return the summary."""
    sc = spark.sparkContext
    ship(spark)
    group = f"logtool-audit-{uuid.uuid4().hex[:8]}"
    began = time.perf_counter()
    sc.setJobGroup(f"{group}-listing", "logtool audit: listing the PATHs")
    with job_progress(sc, f"{group}-listing", "listing"):
        # One task per PATH (a log dir is a fair share of listing), but no more than the cluster runs at once.
        slices = max(1, min(len(audit.paths), TASKS_PER_CORE * sc.defaultParallelism))
        listings: list[Listing] = sc.parallelize(audit.paths, slices).map(list_path).collect()
    log_dirs = [ld for listing in listings for ld in listing.report.log_dirs]
    _check_log_dir_sets(log_dirs)
    items = [t for listing in listings for t in listing.targets]
    task_bytes = audit.task_bytes or task_size(items, sc.defaultParallelism)
    units = split(items, task_bytes)
    listed = time.perf_counter()

    sc.setJobGroup(f"{group}-check", "logtool audit: checking partitions")
    # The aggregations over the tables are small next to the checks: a few shuffle partitions, not 200.
    spark.conf.set("spark.sql.shuffle.partitions", str(max(2 * sc.defaultParallelism, len(units))))
    dirs = sc.broadcast({str(Path(ld.path)): ld for ld in log_dirs})
    outcomes, finished = _check(sc, units, audit.settings, dirs)
    with job_progress(sc, f"{group}-check", "checking"):
        count = finished.count()
    checked_at = time.perf_counter()

    sc.setJobGroup(f"{group}-output", "logtool audit: writing the tables")
    out = _Output(spark, audit.output)
    about_paths = [r for listing in listings for r in listing_findings(listing)]
    _write_tables(spark, out, finished, about_paths, max(1, min(len(units), count // ROWS_PER_FILE + 1)))
    if audit.settings.replicas:
        batches = spark.createDataFrame(outcomes.flatMap(batch_rows), BATCHES).persist()
        out.table("divergence", divergence(batches, out.read("partitions")).coalesce(1))
        batches.unpersist()
    else:
        out.remove("divergence")  # from an earlier run with --replicas: it would not describe this one
    counted = tally(finished)
    for listing in listings:
        counted.count(listing.report.findings, listing.report.operational_error)
    for ld in log_dirs:
        counted.count(ld.findings)
    summary = counted.summary(audit.fail_on)
    summary["divergence"] = divergence_summary(out.read("divergence"), out.read("partitions")) \
        if audit.settings.replicas else None
    outcomes.unpersist()
    finished.unpersist()
    dirs.destroy()
    done = time.perf_counter()

    summary |= {
        "paths": list(audit.paths), "output": audit.output, "master": sc.master, "tasks": len(units),
        "task_bytes": task_bytes,
        "seconds": {"startup": None if startup_seconds is None else round(startup_seconds, 3),
                    "listing": round(listed - began, 3), "check": round(checked_at - listed, 3),
                    "output": round(done - checked_at, 3), "total": round(done - began, 3)},
    }
    out.text("summary.json", json.dumps(summary, indent=2) + "\n")
    return summary


def _check(sc: SparkContext, units: list[Unit], settings: Settings,
           dirs: Broadcast) -> tuple[RDD[Checked], RDD[Checked | DirFindings]]:
    """The checks, lazily: each partition's outcome (pieces joined again), and the outcomes after the checks
    of each log dir's root files against its partitions (with those files' findings), persisted."""
    outcomes = checked = sc.parallelize(units, max(1, len(units))).flatMap(partial(run_unit, settings))
    if any(item.target.piece is not None for unit in units for item in unit.items):
        checked.persist(StorageLevel.MEMORY_AND_DISK)  # read twice: whole partitions, and pieces to join
        joined = checked.filter(_piece_of).keyBy(_partition_path).groupByKey().values().map(merge)
        outcomes = checked.filter(_whole).union(joined)
    if settings.replicas:
        outcomes.persist(StorageLevel.MEMORY_AND_DISK)  # its batch keys are read again for the divergence
    # The batch keys need not travel to the checks across a log dir's files.
    finished = outcomes.map(_without_batches).keyBy(parent_dir).groupByKey().flatMap(partial(across_files, dirs))
    return outcomes, finished.persist(StorageLevel.MEMORY_AND_DISK)


def _write_tables(spark: SparkSession, out: "_Output", finished: RDD, about_paths: list[tuple], files: int) -> None:
    findings = spark.createDataFrame(finished.flatMap(outcome_findings), FINDINGS).unionByName(
        spark.createDataFrame(about_paths, FINDINGS))
    out.table("findings", findings.coalesce(files))
    out.table("partitions", spark.createDataFrame(finished.filter(_is_checked).map(partition_row), PARTITIONS)
              .coalesce(files))


class _Output:
    """The --output directory, through Hadoop's file system API: a local path or any URI Spark can write."""

    def __init__(self, spark: SparkSession, root: str) -> None:
        self.spark, self.root = spark, root.rstrip("/")
        jvm = spark.sparkContext._jvm
        self._path = jvm.org.apache.hadoop.fs.Path
        self.fs = self._path(self.root).getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())
        self.fs.setWriteChecksum(False)  # no .crc files beside summary.json

    def table(self, name: str, df: DataFrame) -> None:
        df.write.mode("overwrite").parquet(f"{self.root}/{name}")

    def read(self, name: str) -> DataFrame:
        return self.spark.read.parquet(f"{self.root}/{name}")

    def remove(self, name: str) -> None:
        self.fs.delete(self._path(f"{self.root}/{name}"), True)

    def text(self, name: str, text: str) -> None:
        stream = self.fs.create(self._path(f"{self.root}/{name}"), True)
        try:
            stream.write(text.encode())
        finally:
            stream.close()
