"""Is a broker running on this log dir? Kafka holds a POSIX record lock on `<log dir>/.lock`."""
from __future__ import annotations

import fcntl
import os
from pathlib import Path


def held_by_broker(log_dir: Path) -> bool:
    """True when another process holds the lock. Probing takes and drops the lock at once; a POSIX lock is
    per process, so this is only meaningful from a process that does not itself hold the file open."""
    lock = log_dir / ".lock"
    if not lock.exists():
        return False
    fd = os.open(lock, os.O_RDWR)
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except (BlockingIOError, PermissionError):
        return True
    else:
        fcntl.lockf(fd, fcntl.LOCK_UN)
        return False
    finally:
        os.close(fd)
