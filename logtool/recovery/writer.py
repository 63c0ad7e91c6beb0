"""Writing into a log dir (a partition directory, or the log dir itself for its own files), the only way logtool
does it.

Everything goes through a file descriptor of the directory (a DirHandle) opened with O_NOFOLLOW, and every name
is opened with O_NOFOLLOW: a symlink planted in a log dir, or a partition dir that is itself a symlink, makes
the repair refuse instead of writing somewhere else. Temporary files get unpredictable names and are created
with O_EXCL. A file that replaces another keeps its owner, group and mode, so a broker running as its own
user can still open it. Every change is fsynced, and so is the directory after a rename or an unlink.

Nothing is written through a second name: a file with more than one link (a backup made with `cp -al`, an
rsnapshot tree) is never cut or appended to in place; its new content goes to a new file renamed over this
name, which leaves the other names holding the original bytes.
"""
from __future__ import annotations

import ctypes
import hashlib
import os
import secrets
import shutil
import stat
import tarfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from logtool.recovery.errors import RepairRefused

CHUNK = 1 << 20


class WriteRefused(RepairRefused):
    """A write that would follow a symlink, or touch something that is not a regular file."""


@dataclass(slots=True, frozen=True)
class FileMeta:
    """What a repair keeps of a file besides its bytes, and puts back with them."""

    size: int
    uid: int
    gid: int
    mode: int
    mtime_ns: int
    nlink: int = 1

    @classmethod
    def of(cls, st: os.stat_result) -> "FileMeta":
        return cls(st.st_size, st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode), st.st_mtime_ns, st.st_nlink)


class DirHandle:
    """A directory of a log dir held open by fd for the length of a repair: a partition dir, or the log dir
    itself for its root files (then `partition` is ""). `log_dir` and `partition` are the names the
    manifest records, as the user gave them (a symlink is not resolved)."""

    def __init__(self, path: Path, log_dir: Path, partition: str) -> None:
        self.path, self.log_dir, self.partition = path, log_dir, partition
        try:
            self.fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        except OSError:
            if os.path.islink(path):
                raise WriteRefused(f"{path} is a symlink; repair it where it points, by that path") from None
            raise

    def close(self) -> None:
        os.close(self.fd)

    def __enter__(self) -> "DirHandle":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def meta(self, name: str) -> FileMeta | None:
        """The file's metadata; None when it does not exist. Refuses anything but a regular file."""
        try:
            st = os.stat(name, dir_fd=self.fd, follow_symlinks=False)
        except FileNotFoundError:
            return None
        if not stat.S_ISREG(st.st_mode):
            kind = "a symlink" if stat.S_ISLNK(st.st_mode) else "not a regular file"
            raise WriteRefused(f"{self.path / name} is {kind}; logtool does not write through it")
        return FileMeta.of(st)

    def kind(self, name: str) -> str | None:
        """"file", "dir", "other" (a symlink among them) or None when nothing has the name."""
        try:
            st = os.stat(name, dir_fd=self.fd, follow_symlinks=False)
        except FileNotFoundError:
            return None
        return "file" if stat.S_ISREG(st.st_mode) else "dir" if stat.S_ISDIR(st.st_mode) else "other"

    def remove_tree(self, name: str) -> None:
        """Remove a directory and everything in it; shutil's fd-based walk never follows a symlink."""
        shutil.rmtree(name, dir_fd=self.fd)
        self.fsync()

    def extract(self, archive: Path) -> None:
        """Put back a directory archived by the quarantine: names that would leave this directory, links
        and special files are refused by the tar filter; owners (as root), modes and mtimes come back."""
        with tarfile.open(archive, "r") as tar:
            tar.extractall(self.path, filter="tar")
        self.fsync()

    def existing(self, name: str) -> FileMeta:
        """The metadata of a file that must be there. Raises FileNotFoundError."""
        meta = self.meta(name)
        if meta is None:
            raise FileNotFoundError(2, "No such file or directory", str(self.path / name))
        return meta

    def meta_for_new(self, sibling: str) -> FileMeta:
        """Owner, group and mode for a file the repair creates: its sibling's (a segment's .log), or the
        directory's owner with mode 0644 when there is none."""
        meta = self.meta(sibling)
        if meta is not None:
            return meta
        st = os.fstat(self.fd)
        return FileMeta(0, st.st_uid, st.st_gid, 0o644, st.st_mtime_ns)

    def names(self) -> list[str]:
        return os.listdir(self.fd)

    def chunks(self, name: str, start: int = 0, end: int | None = None) -> Iterator[bytes]:
        """The file's bytes from `start` to `end` (the end of the file when None)."""
        return read_chunks(name, start, end, dir_fd=self.fd)

    def sha256(self, name: str, end: int | None = None) -> str:
        return sha256_of(self.chunks(name, 0, end))

    def replace(self, name: str, data: bytes | Iterator[bytes], like: FileMeta, sync: bool = True) -> None:
        """Put `data` under `name` atomically, with the owner, group and mode of `like`. `sync` False: the
        caller makes it durable (flush_filesystem) with others before it journals them."""
        tmp = f".{name}.logtool-{secrets.token_hex(8)}.tmp"  # store.layout.LOGTOOL_TEMP knows this shape
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600, dir_fd=self.fd)
        try:
            for chunk in ([data] if isinstance(data, (bytes, bytearray)) else data):
                write_all(fd, chunk)
            _own(fd, like)
            if sync:
                os.fsync(fd)
        except BaseException:
            os.close(fd)
            os.unlink(tmp, dir_fd=self.fd)
            raise
        os.close(fd)
        self.meta(name)  # refuses when a symlink took the name meanwhile
        os.rename(tmp, name, src_dir_fd=self.fd, dst_dir_fd=self.fd)
        if sync:
            self.fsync()

    def cut(self, name: str, size: int) -> None:
        """Cut a file to `size` bytes; a file with another name too gets a cut copy under this one instead."""
        meta = self.existing(name)
        if meta.nlink > 1:
            self.replace(name, self.chunks(name, 0, size), meta)
            return
        fd = os.open(name, os.O_WRONLY | os.O_NOFOLLOW, dir_fd=self.fd)
        try:
            os.ftruncate(fd, size)
            os.fsync(fd)
        finally:
            os.close(fd)

    def put_tail(self, name: str, keep: int, tail: Iterator[bytes], sync: bool = True) -> None:
        """The file's first `keep` bytes followed by `tail`: appended in place, or, for a file with another
        name too, written as a new file renamed over this name. Safe to run again after a stop anywhere."""
        meta = self.existing(name)
        if meta.nlink > 1:
            self.replace(name, _chain(self.chunks(name, 0, keep), tail), meta, sync)
            return
        fd = os.open(name, os.O_WRONLY | os.O_NOFOLLOW, dir_fd=self.fd)
        try:
            os.ftruncate(fd, keep)
            os.lseek(fd, keep, os.SEEK_SET)
            for chunk in tail:
                write_all(fd, chunk)
            if sync:
                os.fsync(fd)
        finally:
            os.close(fd)

    def unlink(self, name: str, sync: bool = True) -> None:
        os.unlink(name, dir_fd=self.fd)
        if sync:
            self.fsync()

    def set_meta(self, name: str, meta: FileMeta, sync: bool = True) -> None:
        """Give a file back its owner, group, mode and mtime."""
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW, dir_fd=self.fd)
        try:
            _own(fd, meta)
            os.utime(fd, ns=(meta.mtime_ns, meta.mtime_ns))
            if sync:
                os.fsync(fd)
        finally:
            os.close(fd)

    def fsync(self) -> None:
        os.fsync(self.fd)


def flush_filesystem(fd: int) -> None:
    """Make every write to the filesystem holding `fd` durable at once (syncfs): one flush for a group of
    files instead of one fsync each, which is what keeps a repair of 50,000 segments linear and fast."""
    syncfs = getattr(_LIBC, "syncfs", None)
    if syncfs is None:  # not Linux: every filesystem, which is more than needed
        os.sync()
    elif syncfs(fd) != 0:  # since Linux 5.8 a write-back error of the filesystem is reported here
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))


_LIBC = ctypes.CDLL(None, use_errno=True)


def read_chunks(path: str | Path, start: int = 0, end: int | None = None, dir_fd: int | None = None
                ) -> Iterator[bytes]:
    """A file's bytes from `start` to `end` (the end of the file when None), a chunk at a time, the file
    opened without following a symlink: every byte a repair or restore reads of a log dir or a run."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW, dir_fd=dir_fd)
    try:
        pos = start
        while end is None or pos < end:
            chunk = os.pread(fd, CHUNK if end is None else min(CHUNK, end - pos), pos)
            if not chunk:
                break
            pos += len(chunk)
            yield chunk
    finally:
        os.close(fd)


def sha256_of(chunks: Iterable[bytes]) -> str:
    digest = hashlib.sha256()
    for chunk in chunks:
        digest.update(chunk)
    return digest.hexdigest()


def _chain(*parts: Iterator[bytes]) -> Iterator[bytes]:
    for part in parts:
        yield from part


def fsync_dir(path: Path) -> None:
    """Make a directory's entries durable (a file created, renamed or removed in it): a quarantine run's, whose
    directories logtool made, so its path is followed as given."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_all(fd: int, data: bytes | bytearray | memoryview) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _own(fd: int, like: FileMeta) -> None:
    """Give a new file the owner, group and mode of the one it stands for. Only root may give a file away;
    anyone else writes files that are already theirs."""
    if os.geteuid() == 0:
        os.fchown(fd, like.uid, like.gid)
    os.fchmod(fd, like.mode)

