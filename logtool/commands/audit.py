"""`logtool audit`: verify a fleet of log dirs as one Spark job, into Parquet tables and a summary."""
from __future__ import annotations

import re
import sys
import time
from pathlib import Path

import click

from logtool.findings import Severity
from logtool.commands.common.options import (deep_option, epilog, fail_on_option, max_read_rate_option, paths_argument,
                                      spare_page_cache_option, transaction_timeout_option)
from logtool.render.emit import emit
from logtool.spark.hosts import LOCALITY_WAIT, pinned
from logtool.spark.session import SparkUnavailable, require, start, stop, stop_if_interrupted


def _conf(_ctx, _param, values: tuple[str, ...]) -> dict[str, str]:
    pairs = {}
    for value in values:
        key, sep, setting = value.partition("=")
        if not sep or not key:
            raise click.BadParameter(f"{value!r} is not KEY=VALUE")
        pairs[key] = setting
    return pairs


# The masters spark-submit accepts (SparkSubmit.prepareSubmitEnvironment); anything else fails inside the JVM.
_MASTER = re.compile(r"local(\[[^\]]+\])?|local-cluster\[[^\]]+\]|spark://.+|yarn|k8s://.+")


def _master(_ctx, _param, value: str | None) -> str | None:
    if value is not None and not _MASTER.fullmatch(value):
        raise click.BadParameter(f"{value!r} is not a Spark master (local[*], spark://HOST:PORT, yarn, k8s://URL)")
    return value


def _check_output(output: str, paths: tuple[Path, ...]) -> None:
    """The audit writes only to --output, so --output must not lie inside a log dir it reads."""
    if "://" in output:
        return
    target = Path(output).resolve()
    for p in paths:
        if target.is_relative_to(p.resolve()):
            raise click.UsageError(f"--output {output} lies inside {p}: the audit never writes into what it reads")


def _one_line(e: Exception) -> str:
    from pyspark.errors import PythonException
    from py4j.protocol import Py4JJavaError

    if isinstance(e, Py4JJavaError):
        return str(e.java_exception.toString()).splitlines()[0]
    lines = [line for line in str(e).splitlines() if line.strip()] or [type(e).__name__]
    # An executor's Python error arrives with its traceback: its last line says what went wrong.
    return lines[-1] if isinstance(e, PythonException) else lines[0]


@click.command("audit", short_help="Verify a fleet of log dirs as one Spark job.", epilog=epilog([
    ("logtool audit /mnt/broker-1/data /mnt/broker-2/data -o /var/tmp/audit",
     "every partition of two log dirs on this machine's cores (local[*])"),
    ("logtool audit --master spark://spark-master:7077 --replicas /data/b1 /data/b2 /data/b3 -o hdfs:///audits/today",
     "on a cluster, also comparing the replicas of each partition"),
    ("spark-submit logtool/spark_job.py /data/b1 -o /var/tmp/audit", "the same job through spark-submit"),
], "4 here: a finding at or above --fail-on, as verify would say."))
@paths_argument
@click.option("--output", "-o", required=True, metavar="DIR",
              help="where to write findings/, partitions/, verdicts/, divergence/ (Parquet) and summary.json; a path "
                   "or a URI")
@click.option("--master", metavar="URL", callback=_master, help="Spark master  [default: local[*], or spark-submit's]")
@deep_option
@click.option("--replicas", is_flag=True,
              help="the PATHs are log dirs of different brokers: also compare the replicas of every partition")
@click.option("--format", "fmt", type=click.Choice(["text", "json", "jsonl"]), default="text", show_default=True,
              help="text summary for people; the summary as JSON, or as JSON Lines (a row per code, worst "
                   "partition, broker, host, topic, divergence shown, then the counts)")
@fail_on_option
@max_read_rate_option
@spare_page_cache_option(default=True)
@transaction_timeout_option
@click.option("--task-bytes", type=click.IntRange(min=1), metavar="BYTES",
              help="work per Spark task, in bytes: each partition weighs its segments' bytes plus 1 MiB, "
                   "and 256 KiB a segment  [default: about two tasks per core]")
@click.option("--locality-wait", type=click.FloatRange(min=0.1), metavar="SECONDS", default=LOCALITY_WAIT,
              show_default=True, help="how long a HOST:PATH task waits for a free slot on its host before Spark "
                                      "runs it elsewhere (where it reads nothing and is sent again, or reported "
                                      "not audited once its host is lost)")
@click.option("--conf", "conf", multiple=True, metavar="KEY=VALUE", callback=_conf,
              help="a Spark setting, as spark-submit's --conf (repeatable)")
def command(paths: tuple[Path, ...], output: str, master: str | None, deep: bool, replicas: bool, fmt: str,
            fail_on: Severity, max_read_rate: float | None, spare_page_cache: bool, transaction_timeout_ms: int,
            task_bytes: int | None, locality_wait: float, conf: dict[str, str]) -> int:
    """Verify every partition of many log dirs as one Spark job: Parquet tables of findings, partitions and
    verify's verdict per log dir (and replica divergence with --replicas), a summary, and verify's exit codes."""
    # Executors resolve a relative path in their own work dir: the driver's are made absolute here.
    # A HOST:PATH (rsync's and scp's form) is read only by an executor on that host, and is absolute there.
    texts = tuple(str(p) if pinned(str(p))[0] else str(p.absolute()) for p in paths)
    _check_output(output, tuple(Path(t) for t in texts if pinned(t)[0] is None))
    if any(pinned(t)[0] for t in texts):
        # A pinned task waits this long for its host, whatever else: bounded, so a lost host never hangs the job.
        conf = {"spark.locality.wait": f"{round(locality_wait * 1000)}ms", **conf}
    try:
        require()
    except SparkUnavailable as e:
        raise click.ClickException(str(e)) from None
    from pyspark.errors import PySparkException
    from py4j.protocol import Py4JError

    from logtool.render.audit import render_audit
    from logtool.spark.driver import Audit, run_audit
    from logtool.spark.task import Settings

    settings = Settings(deep, max_read_rate, spare_page_cache, replicas, transaction_timeout_ms)
    audit = Audit(texts, output, settings, task_bytes, fail_on)
    began = time.perf_counter()
    if sys.stderr.isatty():  # the first seconds are the JVM's: say so, rather than a bar that does not move
        print(f"logtool: starting Spark ({master or 'local[*]'}) ...", file=sys.stderr)
    try:
        spark, started = start(master, conf)
    except SparkUnavailable as e:
        raise click.ClickException(str(e)) from None
    try:
        audited = run_audit(spark, audit, time.perf_counter() - began if started else None)
    except SparkUnavailable as e:
        raise click.ClickException(str(e)) from None
    except (PySparkException, Py4JError) as e:
        stop_if_interrupted()
        raise click.ClickException(f"the Spark job failed: {_one_line(e)}") from None
    finally:
        if started:
            stop(spark)
    return emit(audited, fmt, render_audit, fail_on)
