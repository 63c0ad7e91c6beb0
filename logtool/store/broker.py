"""Is a broker running on a log dir? Seen without taking its lock, so that read-only commands stay free of
side effects: a broker holds a POSIX lock on `<log dir>/.lock` for its whole life (FORMAT.md §12.6)."""
from __future__ import annotations

import os
import struct
from pathlib import Path

LOCK_FILE = ".lock"
_FLOCK = struct.Struct("@hhqqi")  # struct flock: l_type, l_whence, l_start, l_len, l_pid


def lock_holders(lock: Path) -> list[int]:
    """The pids /proc/locks shows holding a lock (POSIX or flock) on this file; empty when none or unknown."""
    try:
        st = os.stat(lock, follow_symlinks=False)
        with open("/proc/locks") as f:
            lines = f.read().splitlines()
    except OSError:
        return []
    want = (os.major(st.st_dev), os.minor(st.st_dev), st.st_ino)
    pids: list[int] = []
    for line in lines:
        parts = line.split()
        if "->" in parts:  # a process waiting for the lock, not holding it
            continue
        try:
            major, minor, inode = parts[5].split(":")
            pid = int(parts[4])
            if (int(major, 16), int(minor, 16), int(inode)) == want and pid not in pids:
                pids.append(pid)
        except (IndexError, ValueError):
            continue
    return pids


def running_broker(log_dir: Path) -> int | None:
    """The pid of the process holding the log dir's lock (0 when held but the pid is unknown); None: free."""
    import fcntl  # (here: most checks never ask, and loading it is a share of a small command's start)

    lock = log_dir / LOCK_FILE
    holders = lock_holders(lock)
    if holders:
        return holders[0]
    try:
        fd = os.open(lock, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        # F_GETLK asks who would block a write lock, without taking one; a read-only fd is enough for it.
        answer = fcntl.fcntl(fd, fcntl.F_GETLK, _FLOCK.pack(fcntl.F_WRLCK, os.SEEK_SET, 0, 0, 0))
        kind, _, _, _, pid = _FLOCK.unpack(answer)
        return None if kind == fcntl.F_UNLCK else pid
    except OSError:
        return None
    finally:
        os.close(fd)
