"""Writing into a log dir, the only way logtool does it: keep the old bytes in the quarantine, write the
new ones to a temporary file beside the target, fsync, rename over it, fsync the directory."""
from __future__ import annotations

import os
from pathlib import Path

from logtool.recovery.quarantine import Run


def replace_file(target: Path, data: bytes, run: Run) -> None:
    if target.exists():
        run.keep(target, "replaced")
    else:
        run.record_created(target)
    tmp = target.with_name(f".{target.name}.logtool-tmp")
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, target)
    fsync_dir(target.parent)


def fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
