"""`logtool` as a user who may not read some paths: the paths listed in LOGTOOL_TEST_DENY (separated by
os.pathsep) fail to open or list with EACCES. Tests run as root, who reads everything, so this is how they
meet a permission denial; every other path, and logtool itself, is untouched."""
from __future__ import annotations

import builtins
import errno
import io
import os
import sys

DENIED = {os.path.realpath(p) for p in os.environ.get("LOGTOOL_TEST_DENY", "").split(os.pathsep) if p}


def _denying(real):
    def call(path, *args, **kwargs):
        if isinstance(path, (str, bytes, os.PathLike)) and kwargs.get("dir_fd") is None and \
                os.path.realpath(os.fsdecode(path)) in DENIED:
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), os.fsdecode(path))
        return real(path, *args, **kwargs)
    return call


class _DenyingReader:
    """The compiled read-ahead (store/_dirread.c), which opens files where Python cannot see it, meeting the
    same denials: a denied directory is EACCES, a denied file is left unread (the checks then open it)."""

    def __init__(self, real) -> None:
        self.real = real

    def read_dirs(self, paths, below, budget, spare_cache=False):
        answers = self.real.read_dirs(paths, below, budget, spare_cache)
        for i, (path, answer) in enumerate(zip(paths, answers)):
            if os.path.realpath(os.fsdecode(path)) in DENIED:
                answers[i] = errno.EACCES
            elif isinstance(answer, tuple):
                for name in list(answer[2]):
                    if os.path.realpath(os.path.join(os.fsdecode(path), name)) in DENIED:
                        del answer[2][name]
        return answers


if __name__ == "__main__":
    os.open = _denying(os.open)
    os.scandir = _denying(os.scandir)
    os.listdir = _denying(os.listdir)
    builtins.open = io.open = _denying(io.open)
    from logtool.store import read_ahead
    if read_ahead.READER is not None:
        read_ahead.READER = _DenyingReader(read_ahead.READER)
    from logtool.cli import main
    sys.argv[0] = "logtool"
    main()
