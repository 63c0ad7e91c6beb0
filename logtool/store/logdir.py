"""A log dir as the checks see it: its listing (which children are directories, which are links) and its
root files, read once with I/O errors as data."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from logtool.store.partition import listing, symlinks_in
from logtool.store.sidefile import SideFile, read_side


@dataclass(slots=True)
class LogDir:
    path: Path
    names: list[str]
    dirs: set[str] = field(default_factory=set)  # children that are directories (through a link too)
    symlinks: dict[str, str] = field(default_factory=dict)  # name -> where it points

    @classmethod
    def from_path(cls, path: Path) -> "LogDir":
        """List the log dir. Raises OSError when it cannot be listed."""
        entries = listing(path)
        return cls(path, [e.name for e in entries], {e.name for e in entries if e.is_dir()}, symlinks_in(path, entries))

    def side(self, name: str) -> SideFile:
        return read_side(self.path / name)
