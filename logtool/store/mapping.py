"""Opening a file for reading in place: a read-only mapping, never a copy."""
from __future__ import annotations

import mmap
import os
from pathlib import Path


def open_readonly(path: Path) -> tuple[object, int]:
    """A read-only buffer over a file (an mmap, or b"" when empty) and its size. Raises OSError."""
    fd = os.open(path, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        if size == 0:
            return b"", 0
        return mmap.mmap(fd, size, access=mmap.ACCESS_READ), size
    finally:
        os.close(fd)
