"""The broker's lock on a log dir, taken and held by every repair.

A broker holds a POSIX record lock (`FileChannel.tryLock`, fcntl F_SETLK on Linux) on `<log dir>/.lock` for
its whole life. A repair takes the same lock, plus a `flock` (which some tools and wrappers use instead),
before its first write and keeps both until its last fsync: a broker started meanwhile fails to get the
lock and refuses to start, instead of loading half-repaired files.

`.lock` is never removed: a broker that opened it between our unlink and our close would lock a deleted
inode, and the next repair would create a fresh `.lock` and write while that broker runs. Where there is
none, one is created, as the broker does, and left.
"""
from __future__ import annotations

import fcntl
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from logtool.recovery.errors import RepairRefused
from logtool.store.broker import LOCK_FILE, lock_holders



class LockRefused(RepairRefused):
    """Another process holds a log dir's lock, or the lock file cannot be used."""


@dataclass(slots=True)
class HeldLock:
    log_dir: Path
    fd: int

    def release(self) -> None:
        os.close(self.fd)  # closing drops both the POSIX lock and the flock


def _open_dir(path: Path) -> int:
    return os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)


def _open_lock_file(dir_fd: int) -> int:
    """The log dir's .lock, created when missing and then given the directory's owner: a broker running as its
    own user must be able to open it for writing, as it does at start."""
    try:
        return os.open(LOCK_FILE, os.O_RDWR | os.O_NOFOLLOW, dir_fd=dir_fd)
    except FileNotFoundError:
        pass
    try:
        fd = os.open(LOCK_FILE, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644, dir_fd=dir_fd)
    except FileExistsError:  # made meanwhile by someone else: theirs, as it is
        return os.open(LOCK_FILE, os.O_RDWR | os.O_NOFOLLOW, dir_fd=dir_fd)
    st = os.fstat(dir_fd)
    if os.geteuid() == 0:
        os.fchown(fd, st.st_uid, st.st_gid)
    os.fsync(fd)
    os.fsync(dir_fd)
    return fd


def _refusal(log_dir: Path) -> LockRefused:
    pids = lock_holders(log_dir / LOCK_FILE)
    who = f" (pid {', '.join(map(str, pids))})" if pids else ""
    return LockRefused(f"{log_dir}: a running broker or another process holds {LOCK_FILE}{who}; stop it first")


def take(log_dir: Path) -> HeldLock:
    """Take the log dir's lock the way a broker does, without following a symlink. Raises LockRefused."""
    try:
        dir_fd = _open_dir(log_dir)
    except OSError as e:
        raise LockRefused(f"{log_dir}: cannot open the log dir: {e.strerror or e}") from None
    try:
        fd = _open_lock_file(dir_fd)
    except OSError as e:
        raise LockRefused(f"{log_dir}/{LOCK_FILE}: cannot open or create it ({e.strerror or e}); nothing was "
                          f"written") from None
    finally:
        os.close(dir_fd)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise LockRefused(f"{log_dir}/{LOCK_FILE} is not a regular file")
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        raise _refusal(log_dir) from None
    return HeldLock(log_dir, fd)


@dataclass(slots=True)
class LockSet:
    """The locks of every log dir a repair touches, taken in one order and held together."""

    held: list[HeldLock] = field(default_factory=list)

    @classmethod
    def take_all(cls, log_dirs: list[Path]) -> "LockSet":
        locks = cls()
        try:
            for d in sorted(set(log_dirs)):
                locks.held.append(take(d))
        except LockRefused:
            locks.release()
            raise
        return locks

    def release(self) -> None:
        for lock in reversed(self.held):
            lock.release()
        self.held.clear()
