"""A PySpark worker daemon (`spark.python.daemon.module`) whose workers may not list a directory whose name
contains "unreadable". Tests run as root, who reads every directory, so this is how they give an executor
a directory it cannot read; the driver and every other directory are untouched."""
from __future__ import annotations

import errno
import os

from pyspark import daemon


def _denied(real):
    """`real` (os.listdir or os.scandir), failing with EACCES as for a directory the user may not read."""

    def listing(path: str | os.PathLike = "."):
        if "unreadable" in os.path.basename(os.fspath(path)):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), os.fspath(path))
        return real(path)

    return listing


if __name__ == "__main__":
    # inherited by every worker the daemon forks
    os.listdir, os.scandir = _denied(os.listdir), _denied(os.scandir)
    daemon.manager()
