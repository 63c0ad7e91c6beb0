"""A PySpark worker daemon (`spark.python.daemon.module`) whose workers may not list a directory whose name
contains "unreadable". Tests run as root, who reads every directory, so this is how they give an executor
a directory it cannot read; the driver and every other directory are untouched."""
from __future__ import annotations

import errno
import os

from pyspark import daemon

_listdir = os.listdir


def _listdir_denied(path: str | os.PathLike = ".") -> list[str]:
    if "unreadable" in os.path.basename(os.fspath(path)):
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), os.fspath(path))
    return _listdir(path)


if __name__ == "__main__":
    os.listdir = _listdir_denied  # inherited by every worker the daemon forks
    daemon.manager()
