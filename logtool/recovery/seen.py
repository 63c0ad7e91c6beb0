"""What a plan saw of the directories it was made from, so that the executor can tell, once it holds the
locks, whether anything moved since: the directory itself (a partition dir swapped for another copy is
another inode) and every file in it (inode, size, mtime, ctime: a file cut, appended to, replaced, relinked
or re-owned since). A plan whose directories changed is never carried out."""
from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from logtool.store.layout import LOGTOOL_TEMP

FileFacts = tuple[int, int, int, int, int]  # inode, size, mtime_ns, ctime_ns, links


@dataclass(slots=True, frozen=True)
class Seen:
    path: Path
    dev: int
    ino: int
    files: dict[str, FileFacts]
    only: frozenset[str] | None  # the names looked at; None: every name in the directory

    def changes(self) -> list[str]:
        """What differs now, in words (empty when nothing does)."""
        try:
            now = look(self.path, self.only)
        except OSError as e:
            return [f"{self.path}: {e.strerror or e}"]
        if (now.dev, now.ino) != (self.dev, self.ino):
            return [f"{self.path} is another directory than the one planned (replaced since)"]
        out = []
        for name in sorted(set(self.files) | set(now.files)):
            before, after = self.files.get(name), now.files.get(name)
            if before == after:
                continue
            if before is None:
                out.append(f"{self.path / name} appeared")
            elif after is None:
                out.append(f"{self.path / name} was removed")
            elif before[0] != after[0]:
                out.append(f"{self.path / name} was replaced")
            elif before[1] != after[1]:
                out.append(f"{self.path / name} changed size ({before[1]} -> {after[1]} bytes)")
            else:
                out.append(f"{self.path / name} was modified")
        return out

    def links(self, name: str) -> int:
        facts = self.files.get(name)
        return facts[4] if facts is not None else 1


def look(path: Path, only: Iterable[str] | None = None) -> Seen:
    """The facts of a directory and its entries (or only the names in `only`), never following a symlink.
    logtool's own temporary files are left out: a rerun sweeps them."""
    st = os.lstat(path)
    names = frozenset(only) if only is not None else None
    files: dict[str, FileFacts] = {}
    with os.scandir(path) as it:
        for entry in it:
            if (names is not None and entry.name not in names) or LOGTOOL_TEMP.match(entry.name):
                continue
            s = entry.stat(follow_symlinks=False)
            files[entry.name] = (s.st_ino, s.st_size if stat.S_ISREG(s.st_mode) else -1, s.st_mtime_ns, s.st_ctime_ns,
                                 s.st_nlink)
    return Seen(path, st.st_dev, st.st_ino, files, names)


def canonical(partition_dir: Path) -> Path:
    """A partition dir with its log dir resolved once (`log.dirs` entries are often symlinks); the partition
    dir's own name is kept, so a partition dir that is itself a symlink is still refused by the writer."""
    absolute = partition_dir.absolute()
    return absolute.parent.resolve() / absolute.name
