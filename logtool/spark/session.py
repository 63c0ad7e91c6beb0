"""The SparkSession of an audit: what it needs (PySpark, Java), how a local one is set up, and shipping logtool
to the executors. Importable without PySpark, so that its absence is a one-line message."""
from __future__ import annotations

import importlib.util
import logging
import os
import shlex
import shutil
import signal
import sys
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import TYPE_CHECKING

from logtool.spark import class_cache
from logtool.spark.daemon import importable_anew
from logtool.spark.package import package_archive

if TYPE_CHECKING:
    from pyspark import SparkConf
    from pyspark.sql import SparkSession

LOG4J2 = Path(__file__).with_name("log4j2.properties")
# What the class cache does for the JVM this process started last (one JVM at a time: PySpark's gateway).
_class_plan = class_cache.Plan()


class SparkUnavailable(Exception):
    """Spark cannot run here; the message says why in one line."""


def java() -> str | None:
    """The java that spark-submit will run: $JAVA_HOME/bin/java, else the first on PATH."""
    home = os.environ.get("JAVA_HOME")
    if home:
        candidate = Path(home) / "bin" / "java"
        return str(candidate) if candidate.exists() else None
    return shutil.which("java")


def require() -> None:
    """Raise SparkUnavailable unless PySpark and Java are both here."""
    if importlib.util.find_spec("pyspark") is None:
        raise SparkUnavailable("audit needs PySpark: install logtool's `spark` extra (pip install 'logtool[spark]')")
    if java() is None:
        where = "$JAVA_HOME/bin/java does not exist" if os.environ.get("JAVA_HOME") else "no java on PATH"
        raise SparkUnavailable(f"audit needs Java 17 or newer for Spark ({where}); install a JDK or set JAVA_HOME")


def _under_spark_submit() -> bool:
    # spark-submit starts the JVM first and tells the Python driver where to find it.
    return "PYSPARK_GATEWAY_PORT" in os.environ


def start(master: str | None, conf: dict[str, str], java_options: Sequence[str] = ()) \
        -> tuple["SparkSession", bool]:
    """The active session, or a new one; the flag says whether this call made it (and should stop it with
    `stop`). `java_options`: more options for a driver JVM started here, after logtool's own.

    A session started here for a local master stays on this machine (driver bound to 127.0.0.1), runs its
    Python workers with this interpreter (which has logtool's dependencies) and logs fatal errors only.
    Under spark-submit, spark-submit's master and settings apply."""
    require()
    root = logging.getLogger()
    if not root.handlers:
        # Py4J logs through the root logger, whose first record would give it a stderr handler
        # (logging.basicConfig): tracebacks of the calls a Ctrl-C interrupted, and of the connections
        # closed after it. logtool says what went wrong in its own lines.
        root.addHandler(logging.NullHandler())
    from pyspark import SparkConf, SparkContext
    from pyspark.errors import PySparkException
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        return active, False
    submitted = _under_spark_submit()
    local = master.startswith("local") if master else not submitted
    settings = {"spark.ui.showConsoleProgress": "false",  # the driver shows its own progress line
                # An executor talks to its Python workers over a Unix socket instead of TCP on localhost
                # (Spark 4.1 and newer): each task's exchanges with its worker cost less, which an audit of
                # many tasks pays many times (bench/audit.py measures what a task costs).
                "spark.python.unix.domain.socket.enabled": "true"}
    if local:
        settings |= {"spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1"}
    # PySpark keeps one JVM per process: a later session runs in the JVM the first one started, with its options.
    launch = not submitted and SparkContext._gateway is None
    global _class_plan
    _class_plan = class_cache.Plan()
    if launch:
        # Spark splits this setting as a shell would: a path with a space (a home directory's) quoted, or the JVM
        # takes its second half for the class to run.
        settings["spark.driver.extraJavaOptions"] = shlex.join(_driver_options(local, conf, java_options))
    if "spark.pyspark.python" not in conf:
        # PySpark starts its Python workers with $PYSPARK_PYTHON (else `python3`, which may lack logtool's
        # dependencies), read when the context is made: unless the user chose one, this interpreter, on a
        # cluster too (preflight() then checks that the executors can use it).
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        if local and not submitted and os.environ["PYSPARK_PYTHON"] == sys.executable and importable_anew():
            # Workers of this interpreter, which has logtool: forked by logtool's daemon (spark/daemon.py),
            # which spares each of them compiling PySpark again.
            settings["spark.python.daemon.module"] = "logtool.spark.daemon"
    spark_conf = SparkConf().setAppName("logtool audit").setAll(list((settings | conf).items()))
    if master:
        spark_conf.setMaster(master)
    try:
        if launch:
            _launch_jvm(spark_conf)
        spark = SparkSession.builder.config(conf=spark_conf).getOrCreate()
    except (PySparkException, OSError) as e:
        _class_plan = class_cache.discard(_class_plan)
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise SparkUnavailable(f"Spark did not start: {first} (Spark needs Java 17 or newer; this is {java()})") \
            from None
    except BaseException:  # interrupted while Spark started: no session to stop
        _class_plan = class_cache.discard(_class_plan)
        raise
    if submitted and "spark.log.level" not in conf:
        spark.sparkContext.setLogLevel("ERROR")  # spark-submit's JVM logged its start already; quiet from here on
    _plain_interrupt()
    return spark, True


def _driver_options(local: bool, conf: dict[str, str], more: Sequence[str]) -> list[str]:
    """The options of a driver JVM started here (conf's spark.driver.extraJavaOptions, if any, replaces them)."""
    global _class_plan
    # Fatal errors only in its log, so the terminal shows logtool's lines, not Spark's banner and warnings.
    options = [f"-Dlog4j2.configurationFile={LOG4J2.as_uri()}"]
    if local:
        # The JVM of a local audit only schedules tasks and writes small tables: the JIT's top tier would
        # spend more CPU compiling Spark than it saves (it halves the CPU time of an audit on two cores).
        options.append("-XX:TieredStopAtLevel=1")
    if "spark.driver.extraJavaOptions" not in conf and (java_bin := java()) is not None:
        # Spark's classes mapped from an archive made once, not loaded from its jars each time.
        _class_plan = class_cache.plan(java_bin)
        options += _class_plan.options
    return options + list(more)


def stop(spark: "SparkSession") -> None:
    """Stop a session `start` made; when its JVM recorded the classes it loaded, have the class cache's
    archive built from them (spark/class_cache.py), after this process and its JVM are gone."""
    global _class_plan
    made, _class_plan = _class_plan, class_cache.Plan()
    request = None
    try:
        request = class_cache.request_from(spark, made)
        _stop_promptly(spark)
    finally:
        if request is not None:
            class_cache.start_builder(request)
        else:  # nothing recorded, or an audit interrupted with its JVM: no list left behind
            class_cache.discard(made)


def _stop_promptly(spark: "SparkSession") -> None:
    """spark.stop(), without waiting for PySpark's accumulator server to end (0.74-0.85 s of a 0.97 s stop,
    measured, every audit): its handler polls the JVM's connection in 1 s steps and notices the stop only
    between two. A daemon thread waits instead; the process may exit first, which closes the sockets the same
    way. A server on a Unix socket (the default here) would remove its file as it ends: the file goes at once."""
    context = spark.sparkContext
    server = getattr(context, "_accumulatorServer", None)
    # spark.stop() ends the server only if the context still holds it (PySpark types the slot without None).
    context._accumulatorServer = None  # type: ignore[assignment]
    try:
        spark.stop()
    finally:
        if server is not None:
            if isinstance(server.server_address, str):  # a Unix socket's path: no one connects after the stop
                with suppress(FileNotFoundError):
                    os.unlink(server.server_address)
            threading.Thread(target=server.shutdown, name="logtool-accumulator-stop", daemon=True).start()


def _plain_interrupt() -> None:
    """Ctrl-C a plain KeyboardInterrupt again, once a SparkContext is made: PySpark's handler calls into the
    JVM from inside the signal handler, on the connection the interrupted call is reading, and Py4J logs
    that failure with its traceback. The command stops the session on its way out, which cancels its jobs."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, _interrupt)


_interrupted = threading.Event()


def _interrupt(signum: int, frame: object) -> None:
    _interrupted.set()
    raise KeyboardInterrupt


def stop_if_interrupted() -> None:
    """Raise KeyboardInterrupt if a Ctrl-C has reached the handler a session of this process installed, though
    its own KeyboardInterrupt did not arrive as one:
    - a Py4J call it interrupted fails with an error of its own ("Answer from Java side is empty"), which is
      then the interruption, not a failed job;
    - PySpark catches BaseException around a JVM call it makes while converting a JVM error to a Python one
      (CapturedException.__str__; the end of a Java iterator, as in SparkContext.listFiles, is such an
      error), so a Ctrl-C landing there only left its mark here, and the audit ran on to its end. The audit
      calls this between its steps."""
    if _interrupted.is_set():
        raise KeyboardInterrupt


def _launch_jvm(conf: "SparkConf") -> None:
    """Start the driver's JVM and its SparkContext, the JVM's stderr reaching ours through jvm_stderr's filter
    (the builder then finds this context). PySpark's launch_gateway takes Popen arguments for this purpose."""
    from pyspark import SparkContext
    from pyspark.java_gateway import launch_gateway

    from logtool.spark.jvm_stderr import filtered_stderr

    stderr = filtered_stderr()
    try:
        with _signals_held():
            gateway = launch_gateway(conf, popen_kwargs={"stderr": stderr})
    finally:
        os.close(stderr)
    SparkContext(conf=conf, gateway=gateway)
    _plain_interrupt()


@contextmanager
def _signals_held() -> Iterator[None]:
    """SIGINT and SIGTERM held while PySpark starts the JVM, and acted on after. Interrupted there, PySpark
    removes the file the JVM is to write its port in, and the JVM, its gateway already listening, waits
    for ever: each Ctrl-C in the first seconds of an audit left a Java process behind."""
    if threading.current_thread() is not threading.main_thread():  # only the main thread takes signals
        yield
        return
    held: list[int] = []
    previous = {sig: signal.signal(sig, lambda signum, _frame: held.append(signum))
                for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    if held:
        signal.raise_signal(held[0])  # to the handler that was there: the JVM, connected, ends with us


def ship(spark: "SparkSession") -> None:
    """Make logtool importable on every executor: a zip of the installed package (`package_archive`), added
    once per context (named by its content, so a changed package is shipped again)."""
    from pyspark import SparkFiles

    sc = spark.sparkContext
    shipped = {Path(f).name for f in sc.listFiles}
    # Inside the context's own files directory: it lives exactly as long as the files it serves.
    folder = Path(SparkFiles.getRootDirectory()) / "logtool-package"
    folder.mkdir(exist_ok=True)
    archive = package_archive(folder, skip=shipped)
    if archive is not None:
        sc.addPyFile(str(archive))


# What an executor imports to check partitions, each with its fallbacks (click and rich are the driver's).
EXECUTOR_NEEDS = (("crc32c", "crcmod"), ("snappy",), ("lz4.frame",), ("zstandard",))


def _missing_here(_index: int) -> tuple[str, str, list[str]]:
    """On an executor: its host, its Python, and what it cannot import of what the checks need."""
    import importlib
    import socket

    missing = []
    for choices in (*EXECUTOR_NEEDS, ("logtool.spark.task",)):
        for module in choices:
            try:
                importlib.import_module(module)
                break
            except ImportError:
                continue
        else:
            missing.append(choices[0])
    return socket.gethostname(), sys.executable, missing


def preflight(spark: "SparkSession") -> None:
    """One tiny job before the audit: every executor it reaches can import what the checks need. Raises
    SparkUnavailable saying what is missing where (rather than four failed attempts per task later)."""
    from py4j.protocol import Py4JError
    from pyspark.errors import PySparkException

    sc = spark.sparkContext
    n = max(1, sc.defaultParallelism)
    try:
        found = sc.parallelize(range(n), n).map(_missing_here).collect()
    except (PySparkException, Py4JError) as e:
        lines = [line for line in str(e).splitlines() if line.strip()] or [type(e).__name__]
        raise SparkUnavailable(f"the executors cannot run logtool's Python ({lines[0][:300]}); set PYSPARK_PYTHON "
                               f"to an interpreter that has logtool installed on every worker") from None
    lacking = sorted({(host, python, ", ".join(missing)) for host, python, missing in found if missing})
    if lacking:
        where = "; ".join(f"{python} on {host} lacks {what}" for host, python, what in lacking)
        raise SparkUnavailable(f"executors cannot import what the checks need: {where}. Set PYSPARK_PYTHON (or "
                               f"--conf spark.pyspark.python=...) to an interpreter with logtool's dependencies")
