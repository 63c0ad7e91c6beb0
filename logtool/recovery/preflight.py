"""Before the first write: will the repair fit? The bytes and inodes the quarantine and the log dirs need
(cut tails, whole files kept, staged new contents, new segments, temporary copies, the journals), against
what their filesystems have free, and whether both can be written at all. A repair that cannot finish is
refused with one line and nothing written, rather than stopped half-way by a full disk."""
from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from logtool.recovery.errors import RepairRefused
from logtool.recovery.steps import CutTail, MoveDir, RemoveFile, SplitOff, Step, WriteFile

# The manifest and journal lines a step costs (generously: names of up to 255 bytes, JSON and hashes).
_RECORD_BYTES = 1024
# Filesystems round every file up to blocks; and leave room for the directories the run creates.
_BLOCK = 4096
_SLACK_BYTES = 1 << 20


class PreflightRefused(RepairRefused):
    """The repair would not fit, or could not write where it must."""


@dataclass(slots=True)
class Need:
    where: Path  # a directory on the filesystem
    bytes: int = 0
    inodes: int = 0
    peak: int = 0  # the largest temporary copy that exists at once besides the files above

    def add(self, nbytes: int, inodes: int = 1) -> None:
        self.bytes += _rounded(nbytes)
        self.inodes += inodes


@dataclass(slots=True)
class Needs:
    by_dev: dict[int, Need] = field(default_factory=dict)
    _dev_of: dict[str, int] = field(default_factory=dict)

    def on(self, path: str | Path) -> Need:
        key = str(path)
        if key not in self._dev_of:
            self._dev_of[key] = os.stat(key).st_dev
        return self.by_dev.setdefault(self._dev_of[key], Need(Path(key)))


def _rounded(n: int) -> int:
    return -(-n // _BLOCK) * _BLOCK


def _size(path: str) -> int:
    try:
        return os.lstat(path).st_size
    except FileNotFoundError:
        return 0


def _tree_size(path: str) -> int:
    total = 0
    for d, dirs, files in os.walk(path):
        for n in dirs + files:
            total += _rounded(_size(os.path.join(d, n))) + 512
    return total


def _links(path: str) -> int:
    try:
        return os.lstat(path).st_nlink
    except FileNotFoundError:
        return 1


def needs_of(steps: list[Step], staged: dict[str, bytes], quarantine: Path) -> Needs:
    """What the steps need, per filesystem (the quarantine's and each log dir's may be one)."""
    needs = Needs()
    q = needs.on(_existing_ancestor(quarantine))
    q.add(_SLACK_BYTES + sum(len(b) for b in staged.values()) + _RECORD_BYTES * 2 * len(steps), 4 + len(staged))
    for step in steps:
        path = os.path.join(step.dir, step.name)
        d = needs.on(step.dir)
        if isinstance(step, CutTail):
            q.add(max(0, _size(path) - step.size))
            if _links(path) > 1:  # the cut copy is a new file beside the other name's
                d.add(step.size)
        elif isinstance(step, RemoveFile):
            q.add(_size(path))
        elif isinstance(step, WriteFile):
            old = _size(path)
            new = len(staged[step.staged])
            q.add(old)
            d.add(max(0, new - old), 0 if old else 1)
            d.peak = max(d.peak, _rounded(min(old, new)))  # the temp copy before the rename frees the old one
        elif isinstance(step, SplitOff):
            d.add(step.end - step.start)
        elif isinstance(step, MoveDir):
            q.add(_tree_size(path) + _BLOCK)  # the archive: its files and a header each
    return needs


def _existing_ancestor(path: Path) -> Path:
    path = path.absolute()
    while not path.exists():
        path = path.parent
    return path


def check(steps: list[Step], staged: dict[str, bytes], quarantine: Path) -> None:
    """Refuse (PreflightRefused, one line, nothing written) when the repair cannot fit or cannot write."""
    _check_no_links(steps)
    try:
        needs = needs_of(steps, staged, quarantine)
    except OSError as e:
        raise PreflightRefused(f"{e.filename or quarantine}: {e.strerror or e}; nothing was written") from None
    for need in needs.by_dev.values():
        st = os.statvfs(need.where)
        if st.f_flag & os.ST_RDONLY:
            raise PreflightRefused(f"{need.where} is on a read-only filesystem; nothing was written")
        free = st.f_bavail * st.f_frsize
        wanted = need.bytes + need.peak
        if wanted > free:
            raise PreflightRefused(f"the repair needs {_human(wanted)} in {need.where}, {_human(free)} free; "
                                   f"nothing was written")
        if st.f_files and need.inodes + 2 > st.f_favail:  # f_files 0: the filesystem has no inode limit
            raise PreflightRefused(f"the repair needs {need.inodes + 2} inodes in {need.where}, {st.f_favail} "
                                   f"free; nothing was written")
    _check_writable(steps, quarantine)


def _check_no_links(steps: list[Step]) -> None:
    """A symlink, or something not a regular file, where a step writes: refused before the locks (the writer
    refuses them again under the locks, by file descriptor)."""
    for d in sorted({s.dir for s in steps}):
        if os.path.islink(d):
            raise PreflightRefused(f"{d} is a symlink; repair it where it points, by that path")
    for path, st in _existing_files(steps):
        if not stat.S_ISREG(st.st_mode):
            kind = "a symlink" if stat.S_ISLNK(st.st_mode) else "not a regular file"
            raise PreflightRefused(f"{path} is {kind}; logtool does not write through it")


def _existing_files(steps: list[Step]) -> Iterator[tuple[str, os.stat_result]]:
    """Every file the steps name that exists, with what lstat says of it."""
    for s in steps:
        for name in s.names():
            path = os.path.join(s.dir, name)
            try:
                yield path, os.lstat(path)
            except FileNotFoundError:
                continue


def _check_writable(steps: list[Step], quarantine: Path) -> None:
    """Directories the repair writes into, as this user: a repair that is not root can give new files only its
    own owner, so it refuses files it does not own (the broker could not open what it wrote)."""
    root = os.geteuid() == 0
    dirs = {Path(d) for d in {s.dir for s in steps}} | {_existing_ancestor(quarantine)}
    for d in sorted(dirs):
        if not os.access(d, os.W_OK | os.X_OK):
            raise PreflightRefused(f"{d} is not writable by this user; nothing was written")
    if root:
        return
    for path, st in _existing_files(steps):
        if st.st_uid != os.geteuid():
            raise PreflightRefused(f"{path} belongs to uid {st.st_uid}: run the repair as that user or as root; "
                                   f"nothing was written")


def _human(n: int) -> str:
    if n < 1000:
        return f"{n} bytes"
    units = ("KB", "MB", "GB", "TB")
    value, i = float(n) / 1000, 0
    while value >= 1000 and i < len(units) - 1:
        value /= 1000
        i += 1
    return f"{value:.1f} {units[i]}"
