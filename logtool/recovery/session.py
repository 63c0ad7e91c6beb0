"""One repair (or restore) from first write to last fsync: the locks of every log dir it touches, the quarantine
run that keeps what it removes, the directories it writes through, the signals it defers to the end of a
step, and the test hooks that stop it at a chosen point (how the kill tests prove that every step can be
resumed or undone)."""
from __future__ import annotations

import os
import signal
from collections.abc import Callable
from pathlib import Path
from types import FrameType

from logtool.recovery.lock import LockSet
from logtool.recovery.quarantine import QuarantineRun
from logtool.recovery.writer import DirHandle
from logtool.store.layout import LOGTOOL_TEMP

# Test-only: at the n-th durable step, the process sends itself a signal (KILL by default; STOP for the lock
# tests; INT or TERM for the signal tests).
STOP_AT_ENV = "LOGTOOL_TEST_STOP_AT"
STOP_SIGNAL_ENV = "LOGTOOL_TEST_STOP_SIGNAL"
# Test-only: SIGSTOP once the plan is made, before preflight and the locks (the stale-plan tests change the
# partition then).
STOP_PLANNED_ENV = "LOGTOOL_TEST_STOP_PLANNED"
_SIGNALS = {"KILL": signal.SIGKILL, "STOP": signal.SIGSTOP, "INT": signal.SIGINT, "TERM": signal.SIGTERM}
DEFERRED = (signal.SIGINT, signal.SIGTERM)


class Session:
    """Use as a context manager: the locks are taken, then the run is started (or loaded), and SIGINT and
    SIGTERM are held until the executor reaches the end of a step."""

    def __init__(self, log_dirs: list[Path], start_run: Callable[[], QuarantineRun]) -> None:
        self.log_dirs = log_dirs
        self._start_run = start_run  # called once the locks are held: a new run, or one being resumed
        self._run: QuarantineRun | None = None
        self._locks: LockSet | None = None
        self._dirs: dict[tuple[str, str], DirHandle] = {}
        self._by_name: dict[tuple[str, bool], DirHandle] = {}
        self._steps = 0
        stop = os.environ.get(STOP_AT_ENV)
        self._stop_at = int(stop) if stop else None
        self.signalled: int | None = None  # the first SIGINT or SIGTERM received
        self._handlers: dict[int, object] = {}

    @property
    def run(self) -> QuarantineRun:
        assert self._run is not None, "the run starts when the session is entered"
        return self._run

    def __enter__(self) -> "Session":
        for sig in DEFERRED:
            self._handlers[sig] = signal.signal(sig, self._defer)
        try:
            self._locks = LockSet.take_all(self.log_dirs)
            try:
                self._run = self._start_run()
            except BaseException:
                self._locks.release()
                raise
        except BaseException:
            self._restore_handlers()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        for d in self._dirs.values():
            d.close()
        self._dirs.clear()
        self._by_name.clear()
        if self._locks is not None:
            self._locks.release()
        self._restore_handlers()

    def _defer(self, signum: int, frame: FrameType | None) -> None:
        if self.signalled is None:
            self.signalled = signum

    def _restore_handlers(self) -> None:
        for sig, handler in self._handlers.items():
            signal.signal(sig, handler)  # type: ignore[arg-type]
        self._handlers.clear()

    def directory(self, path: str, root: bool) -> DirHandle:
        """A step's directory by its journaled name: a log dir's root, or a partition dir. (Looked up by
        string first: a repair of 50,000 files asks for it 100,000 times.)"""
        found = self._by_name.get((path, root))
        if found is None:
            found = self._by_name[(path, root)] = self.log_dir_root(Path(path)) if root else \
                self.partition_dir(Path(path))
        return found

    def partition_dir(self, path: Path) -> DirHandle:
        """A partition dir, opened once for the session."""
        return self._open(path, path.parent, path.name)

    def log_dir_root(self, log_dir: Path) -> DirHandle:
        """A log dir itself, for its root files (the offset checkpoints)."""
        return self._open(log_dir, log_dir, "")

    def _open(self, path: Path, log_dir: Path, partition: str) -> DirHandle:
        key = (str(log_dir), partition)
        if key not in self._dirs:
            self._dirs[key] = DirHandle(path, log_dir, partition)
        return self._dirs[key]

    def step_done(self) -> None:
        """Called after every durable step; the test hook stops the process here."""
        self._steps += 1
        if self._stop_at is not None and self._steps == self._stop_at:
            os.kill(os.getpid(), _SIGNALS.get(os.environ.get(STOP_SIGNAL_ENV, "KILL"), signal.SIGKILL))

    def sweep_temporaries(self, dirs: set[tuple[Path, bool]]) -> None:
        """Remove the temporary files a stopped repair left in these directories ((path, is a log dir root)):
        they hold only bytes that a step writes again, never a byte of the log."""
        for path, root in dirs:
            pdir = self.log_dir_root(path) if root else self.partition_dir(path)
            for name in pdir.names():
                if LOGTOOL_TEMP.match(name) and pdir.meta(name) is not None:
                    pdir.unlink(name)


def stop_if_planned_hook() -> None:
    """The test hook between planning and the locks."""
    if os.environ.get(STOP_PLANNED_ENV):
        os.kill(os.getpid(), signal.SIGSTOP)
