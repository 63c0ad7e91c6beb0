"""Files beside the segments (indexes, checkpoints, metadata, snapshots), read once, with an I/O error turned
into data: the one place where the checks' reading of a file can fail."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from logtool.store.mapping import open_readonly


@dataclass(slots=True, frozen=True)
class SideFile:
    """A file's bytes (an mmap for large ones), or why there are none: `error` is None when it is missing."""

    name: str
    data: object | None  # bytes, or a read-only mmap
    error: str | None = None

    @property
    def exists(self) -> bool:
        return self.data is not None or self.error is not None

    @property
    def size(self) -> int | None:
        return None if self.data is None else len(self.data)

    def text(self) -> tuple[str | None, str | None]:
        """(the file as UTF-8 text, None), or (None, why it cannot be read as text)."""
        if self.data is None:
            return None, self.error or "it is gone"
        try:
            return bytes(self.data).decode("utf-8", errors="strict"), None
        except UnicodeDecodeError as e:
            return None, str(e)


def read_side(path: Path, mapped: bool = False) -> SideFile:
    """Read a file once; `mapped` maps it instead (index files can be large, and are read in place)."""
    try:
        if mapped:
            data, _size = open_readonly(path)
        else:
            data = path.read_bytes()
    except FileNotFoundError:
        return SideFile(path.name, None)
    except OSError as e:
        return SideFile(path.name, None, e.strerror or str(e))
    return SideFile(path.name, data)
