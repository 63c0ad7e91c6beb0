"""The stderr of the driver JVM that `logtool audit` starts, passed on to logtool's stderr less three kinds of
noise Spark makes as it stops:

- the JVM's notice that Spark uses an incubating module (every run, first line);
- a worker-daemon traceback ending in BrokenPipeError (local masters, whose Python workers are the driver
  JVM's): when the context stops, Spark closes the sockets of its idle Python workers, and a worker that
  notices before it is killed fails to flush, which PySpark prints (6 audits in 57 here, the machine busy or
  not), line by line: two workers stopping together interleave their lines. Nothing was lost; the job had
  finished.
- a Java stack trace of a task refused by a thread pool already shut down (`RejectedExecutionException ...
  rejected from ...[Terminated` or `[Shutting down`): a callback Spark schedules while its context stops, printed
  by Scala's default reporter. Seen once in about 4,000 audits, after a job that had failed and been reported
  (CI, a loaded machine); a pool refuses work that way only once it is being shut down.

Everything else (Java's own errors, log4j's fatal lines, any other Python traceback) passes through byte for
byte. Only the JVM logtool launches itself goes through here: under spark-submit the JVM is the parent."""
from __future__ import annotations

import os
import re
import threading

INCUBATOR_NOTICE = b"WARNING: Using incubator modules: jdk.incubator.vector"
DAEMON_FLUSH_HEADER = b"PySpark daemon failed to flush the output to the worker process:"
TRACEBACK = b"Traceback (most recent call last):"
FRAME = re.compile(rb'\s+File "(?P<path>[^"]*)", line \d+')
CLOSED_SOCKET = re.compile(rb"(BrokenPipeError|ConnectionResetError)\b")
REFUSED_BY_A_STOPPED_POOL = re.compile(
    rb'(Exception in thread "[^"]*" )?java\.util\.concurrent\.RejectedExecutionException: '
    rb".* rejected from \S+\[(Terminated|Shutting down),")
JAVA_TRACE_LINE = re.compile(rb"\t+(at |\.\.\. \d+ more)|\t*(Caused by|Suppressed): ")  # printStackTrace's
HELD_AT_MOST = 200  # lines held at once; more are no stopping worker's, and are passed on


class StderrFilter:
    """Line by line: feed() returns the lines to pass on. A traceback is held until its last line decides; a
    refused task's Java trace, until a line that is not one of its own.
    Workers stopping together print their tracebacks line by line into one stream, interleaved: what is held
    is every traceback begun and not yet ended, dropped once all have ended, each in a closed socket, with
    every frame in the daemon."""

    def __init__(self) -> None:
        self._held: list[bytes] = []
        self._open = 0  # tracebacks begun in what is held and not yet ended by their exception line
        self._refused = False  # what is held is a Java trace of a task refused by a stopped pool

    def feed(self, line: bytes) -> list[bytes]:
        text = line.rstrip(b"\r\n")
        if self._refused:
            return self._in_refused_trace(line, text)
        if not self._held:
            if text == INCUBATOR_NOTICE:
                return []
            if REFUSED_BY_A_STOPPED_POOL.match(text):
                self._held, self._refused = [line], True
                return []
            if text in (TRACEBACK, DAEMON_FLUSH_HEADER):
                return self._hold(line, text)
            return [line]
        if len(self._held) >= HELD_AT_MOST:
            return [*self._release(), *self.feed(line)]
        if text in (TRACEBACK, DAEMON_FLUSH_HEADER) or text[:1].isspace():  # a traceback begun, a frame, its source
            return self._hold(line, text)
        if CLOSED_SOCKET.match(text) and self._open > 0:  # the exception line, the last of a traceback
            self._held.append(line)
            self._open -= 1
            if self._open > 0:
                return []
            return self._drop() if _daemon_only(self._held) else self._release()
        return [*self._release(), *self.feed(line)]

    def _in_refused_trace(self, line: bytes, text: bytes) -> list[bytes]:
        if not JAVA_TRACE_LINE.match(text):  # the refused task's trace ended before this line: dropped
            return [*self._drop(), *self.feed(line)]
        if len(self._held) >= HELD_AT_MOST:  # longer than any of Spark's: passed on
            return [*self._release(), line]
        self._held.append(line)
        return []

    def _hold(self, line: bytes, text: bytes) -> list[bytes]:
        self._held.append(line)
        self._open += text == TRACEBACK
        return []

    def _release(self) -> list[bytes]:
        """What is held, passed on: it turned out to be no noise."""
        held, self._held, self._open, self._refused = self._held, [], 0, False
        return held

    def _drop(self) -> list[bytes]:
        """What is held, dropped: Spark's noise."""
        self._held, self._open, self._refused = [], 0, False
        return []

    def flush(self) -> list[bytes]:
        """The stream ended: a refused task's trace ended with it, anything else held is passed on."""
        return self._drop() if self._refused else self._release()


def _daemon_only(held: list[bytes]) -> bool:
    """Held lines are one traceback whose every frame is in PySpark's worker daemon."""
    frames = [m for m in map(FRAME.match, held) if m]
    return bool(frames) and all(f["path"].endswith(b"pyspark/daemon.py") for f in frames)


def filtered_stderr() -> int:
    """The write end of a pipe whose lines reach this process's stderr through StderrFilter, for the JVM's
    stderr. The caller closes it once the JVM holds its copy; a daemon thread pumps until the JVM closes its."""
    read_fd, write_fd = os.pipe()
    threading.Thread(target=_pump, args=(read_fd,), name="logtool-jvm-stderr", daemon=True).start()
    return write_fd


def _pump(read_fd: int) -> None:
    keep = StderrFilter()
    with os.fdopen(read_fd, "rb") as jvm:
        for line in jvm:
            _write(keep.feed(line))
    _write(keep.flush())


def _write(lines: list[bytes]) -> None:
    # os.write to fd 2, not sys.stderr: a daemon thread holding sys.stderr's lock as the interpreter exits
    # aborts it, and Python's own stderr is line-buffered, so lines do not interleave within a line.
    try:
        for line in lines:
            while line:
                line = line[os.write(2, line):]
    except OSError:  # our stderr is closed: the JVM's lines have nowhere to go, as they would not have
        pass
