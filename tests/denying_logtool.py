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


if __name__ == "__main__":
    os.open = _denying(os.open)
    os.scandir = _denying(os.scandir)
    os.listdir = _denying(os.listdir)
    builtins.open = io.open = _denying(io.open)
    from logtool.cli import main
    sys.argv[0] = "logtool"
    main()
