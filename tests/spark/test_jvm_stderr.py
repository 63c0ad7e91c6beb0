"""The JVM's stderr on the way to logtool's: the three kinds of noise Spark makes as it stops are dropped,
every other line passes byte for byte, and a Java that fails to start is still heard."""
from __future__ import annotations

import os
import subprocess

import pytest
from conftest import LOGTOOL

from logtool.spark.jvm_stderr import HELD_AT_MOST, StderrFilter

ZIP = b"/venv/lib/python3.11/site-packages/pyspark/python/lib/pyspark.zip/pyspark"
# What an idle worker printed when the context stopped (captured from a local[1] audit, PySpark 4.3).
DAEMON_BROKEN_PIPE = [
    b"Traceback (most recent call last):\n",
    b'  File "' + ZIP + b'/daemon.py", line 264, in manager\n',
    b'  File "' + ZIP + b'/daemon.py", line 95, in worker\n',
    b"BrokenPipeError: [Errno 32] Broken pipe\n",
]


def passed(lines: list[bytes]) -> list[bytes]:
    keep = StderrFilter()
    out = [kept for line in lines for kept in keep.feed(line)]
    return out + keep.flush()


def test_the_incubator_notice_and_a_stopping_worker_s_broken_pipe_are_dropped():
    lines = [b"WARNING: Using incubator modules: jdk.incubator.vector\n", *DAEMON_BROKEN_PIPE,
             b"25/11/24 12:00:00 FATAL SparkContext: out of memory\n", *DAEMON_BROKEN_PIPE]
    assert passed(lines) == [b"25/11/24 12:00:00 FATAL SparkContext: out of memory\n"]


def test_the_daemon_s_own_flush_failure_message_is_dropped_with_its_traceback():
    header = b"PySpark daemon failed to flush the output to the worker process:\n"
    with_source = [DAEMON_BROKEN_PIPE[0], DAEMON_BROKEN_PIPE[2], b"    outfile.flush()\n",
                   b"ConnectionResetError: [Errno 104] Connection reset by peer\n"]
    assert passed([header, *with_source, b"next\n"]) == [b"next\n"]


def _interleaved(a: list[bytes], b: list[bytes]) -> list[bytes]:
    """Two workers' tracebacks as they reach one stream when both print at once: line by line, in turn."""
    out: list[bytes] = []
    for i in range(max(len(a), len(b))):
        out += a[i:i + 1] + b[i:i + 1]
    return out


def test_the_broken_pipes_of_workers_stopping_together_are_dropped_however_their_lines_interleave():
    flush_failure = [b"PySpark daemon failed to flush the output to the worker process:\n", *DAEMON_BROKEN_PIPE]
    for a, b in ((DAEMON_BROKEN_PIPE, DAEMON_BROKEN_PIPE), (flush_failure, DAEMON_BROKEN_PIPE),
                 (DAEMON_BROKEN_PIPE, flush_failure)):
        assert passed([*_interleaved(a, b), b"next\n"]) == [b"next\n"]
        assert passed([*a[:2], *b, *a[2:], b"next\n"]) == [b"next\n"]  # one inside the other


def test_a_traceback_of_another_kind_interleaved_with_the_daemon_s_passes_with_it():
    elsewhere = [DAEMON_BROKEN_PIPE[0], b'  File "' + ZIP + b'/worker.py", line 1, in main\n',
                 DAEMON_BROKEN_PIPE[3]]
    lines = _interleaved(DAEMON_BROKEN_PIPE, elsewhere)
    assert passed([*lines, b"next\n"]) == [*lines, b"next\n"]


def test_any_other_traceback_passes_whole():
    elsewhere = [DAEMON_BROKEN_PIPE[0], b'  File "' + ZIP + b'/worker.py", line 1, in main\n',
                 DAEMON_BROKEN_PIPE[3]]
    other_error = [*DAEMON_BROKEN_PIPE[:3], b"ValueError: bad\n"]
    header_alone = [b"PySpark daemon failed to flush the output to the worker process:\n", b"then this\n"]
    cut_short = DAEMON_BROKEN_PIPE[:2]
    for lines in (elsewhere, other_error, header_alone, cut_short):
        assert passed(lines) == lines


def test_a_traceback_longer_than_a_daemon_s_passes_whole():
    frame = DAEMON_BROKEN_PIPE[1]
    lines = [DAEMON_BROKEN_PIPE[0], *[frame] * (HELD_AT_MOST + 5), DAEMON_BROKEN_PIPE[3]]
    assert passed(lines) == lines


def test_lines_pass_byte_for_byte():
    lines = [b"\xff\xfe not utf-8\r\n", b"   indented first\n", b"no newline at the end"]
    assert passed(lines) == lines


@pytest.mark.slow
def test_a_java_that_fails_to_start_is_heard(tmp_path):
    java = tmp_path / "jdk" / "bin" / "java"
    java.parent.mkdir(parents=True)
    java.write_text("#!/bin/sh\necho 'Error: this java is broken on purpose' >&2\nexit 1\n")
    java.chmod(0o755)
    (tmp_path / "logs").mkdir()
    p = subprocess.run([str(LOGTOOL), "audit", "--master", "local[1]", str(tmp_path / "logs"), "--output",
                        str(tmp_path / "o")], capture_output=True, text=True,
                       env={**os.environ, "JAVA_HOME": str(java.parents[1])}, timeout=120)
    assert p.returncode == 8 and "Error: this java is broken on purpose" in p.stderr
    assert p.stderr.splitlines()[-1].startswith("logtool: Spark did not start")


# The shape of what a CI run printed after a failed preflight job, as the context stopped (30 lines there).
REFUSED = [
    b"java.util.concurrent.RejectedExecutionException: Task Future(<not completed>) rejected from "
    b"java.util.concurrent.ThreadPoolExecutor@1b2c3d4[Terminated, pool size = 0, active threads = 0, "
    b"queued tasks = 0, completed tasks = 3]\n",
    b"\tat java.base/java.util.concurrent.ThreadPoolExecutor$AbortPolicy.rejectedExecution(ThreadPoolExecutor.java:2065)\n",
    b"\tat scala.concurrent.impl.ExecutionContextImpl.execute(ExecutionContextImpl.scala:21)\n",
    b"\tat scala.concurrent.impl.Promise$Transformation.submitWithValue(Promise.scala:462)\n",
    b"Caused by: java.lang.InterruptedException\n",
    b"\t... 12 more\n",
]


def test_a_task_refused_by_a_stopped_pool_is_dropped_with_its_whole_trace():
    shutting = [REFUSED[0].replace(b"[Terminated,", b"[Shutting down,"), *REFUSED[1:]]
    in_thread = [b'Exception in thread "dispatcher-event-loop-1" ' + REFUSED[0], *REFUSED[1:]]
    for trace in (REFUSED, shutting, in_thread):
        assert passed([b"before\n", *trace, b"after\n"]) == [b"before\n", b"after\n"]
        assert passed([*trace, *DAEMON_BROKEN_PIPE, *trace]) == []  # the stream ends inside the trace


def test_a_task_refused_by_a_running_pool_and_other_java_traces_pass_whole():
    running = [REFUSED[0].replace(b"[Terminated,", b"[Running,"), *REFUSED[1:]]
    other = [b"java.lang.OutOfMemoryError: Java heap space\n", *REFUSED[1:]]
    for trace in (running, other):
        assert passed([*trace, b"after\n"]) == [*trace, b"after\n"]


def test_a_refused_trace_longer_than_any_of_spark_s_passes_whole():
    lines = [REFUSED[0], *[REFUSED[1]] * (HELD_AT_MOST + 5), b"after\n"]
    assert passed(lines) == lines
