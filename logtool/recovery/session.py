"""One repair from first write to last fsync: the locks of every log dir it touches, the quarantine run
that keeps what it removes, the partition directories it writes through, and the test hook that stops it
at a chosen step (how the kill tests prove that every step can be resumed or undone)."""
from __future__ import annotations

import os
import signal
from pathlib import Path

from logtool.recovery.lock import LockSet
from logtool.recovery.quarantine import Run
from logtool.recovery.writer import PartitionDir
from logtool.store.layout import LOGTOOL_TEMP

# Test-only: stop (SIGKILL, or SIGSTOP for the lock tests) at the n-th durable step of a repair.
STOP_AT_ENV = "LOGTOOL_TEST_STOP_AT"
STOP_SIGNAL_ENV = "LOGTOOL_TEST_STOP_SIGNAL"


class Session:
    """Use as a context manager; the locks are taken before the run starts and released after it ends."""

    def __init__(self, log_dirs: list[Path], start_run) -> None:
        self.log_dirs = log_dirs
        self._start_run = start_run  # called once the locks are held: a new Run, or one being resumed
        self.run: Run | None = None
        self._locks: LockSet | None = None
        self._dirs: dict[Path, PartitionDir] = {}
        self._steps = 0
        stop = os.environ.get(STOP_AT_ENV)
        self._stop_at = int(stop) if stop else None

    def __enter__(self) -> "Session":
        self._locks = LockSet.take_all(self.log_dirs)
        try:
            self.run = self._start_run()
        except BaseException:
            self._locks.release()
            raise
        return self

    def __exit__(self, *exc) -> None:
        for d in self._dirs.values():
            d.close()
        self._dirs.clear()
        self._locks.release()

    def partition_dir(self, path: Path) -> PartitionDir:
        """A partition dir, opened once for the session."""
        return self._open(path, log_dir_of(path), path.name)

    def log_dir_root(self, log_dir: Path) -> PartitionDir:
        """A log dir itself, for its root files (the offset checkpoints)."""
        return self._open(log_dir, log_dir.absolute(), "")

    def _open(self, path: Path, log_dir: Path, partition: str) -> PartitionDir:
        key = (str(log_dir), partition)
        if key not in self._dirs:
            self._dirs[key] = PartitionDir(path, log_dir, partition)
        return self._dirs[key]

    def step_done(self) -> None:
        """Called after every durable step; the test hook stops the process here."""
        self._steps += 1
        if self._stop_at is not None and self._steps == self._stop_at:
            sig = signal.SIGSTOP if os.environ.get(STOP_SIGNAL_ENV) == "STOP" else signal.SIGKILL
            os.kill(os.getpid(), sig)


def log_dir_of(partition_dir: Path) -> Path:
    """The log dir holding a partition dir, named as the user named it (a symlink is not resolved)."""
    return partition_dir.absolute().parent


def new_session(partition_dirs: list[Path], quarantine: Path, label: str, command: str) -> Session:
    """A session for a new repair of these partition dirs: their log dirs' locks, then a new run."""
    log_dirs = sorted({log_dir_of(p) for p in partition_dirs})
    # A quarantine inside a log dir, or inside a partition dir, would itself be damage to the broker.
    inside = log_dirs + [p.absolute() for p in partition_dirs]
    return Session(log_dirs, lambda: Run.start(quarantine, label, command, inside))


def sweep_temporaries(session: Session, dirs: set[tuple[Path, bool]]) -> None:
    """Remove the temporary files a killed repair left in these directories ((path, is a log dir root)):
    they hold only bytes that a step writes again, never a byte of the log."""
    for path, root in dirs:
        pdir = session.log_dir_root(path) if root else session.partition_dir(path)
        for name in pdir.names():
            if LOGTOOL_TEMP.match(name) and pdir.meta(name) is not None:
                pdir.unlink(name)
