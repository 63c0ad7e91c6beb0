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


class _DenyingReader:
    """The compiled read-ahead (store/_dirread.c), which lists directories where Python cannot see it, meeting
    the same denial."""

    def __init__(self, real) -> None:
        self.real = real

    def read_dirs(self, paths, *args):
        answers = self.real.read_dirs(paths, *args)
        return [errno.EACCES if "unreadable" in os.path.basename(os.fsdecode(p)) else a for p, a in zip(paths, answers)]


if __name__ == "__main__":
    # inherited by every worker the daemon forks
    os.listdir, os.scandir = _denied(os.listdir), _denied(os.scandir)
    from logtool.store import read_ahead
    if read_ahead.READER is not None:
        read_ahead.READER = _DenyingReader(read_ahead.READER)
    daemon.manager()
