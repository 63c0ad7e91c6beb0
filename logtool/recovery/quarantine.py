"""The quarantine: every byte a repair removes or replaces is kept here first, with a manifest, so that
`logtool restore RUN` puts the directory back exactly as it was.

A run is one directory `<quarantine>/<UTC time>-<pid>-<random>-<label>/` holding the kept bytes under
`files/`, the bytes a repair is to write under `staged/`, `manifest.jsonl` and the journals. For each file
the manifest records where it was (the log dir, the partition dir and file name as found there), what the
repair did, the size, sha256, owner, group, mode and mtime of the original, and the sha256 of what the
repair left, so that `restore` can tell whether anything changed since. A file cut short keeps only its cut
tail here, never a copy of the bytes that stay.

The manifest is JSON Lines, appended and fsynced one record at a time (never rewritten whole, so a repair
of 50,000 files costs 50,000 appends): a header, then `{"entry": {...}}` for each file as it is kept and
`{"after": N, "sha256": ...}` when the repair learns what it leaves in entry N. A crash mid-append leaves at
most a torn last line, which `load` ignores: the change it would have recorded was not made yet.
"""
from __future__ import annotations

import errno
import hashlib
import json
import os
import secrets
import stat
import tarfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, TypeVar

from logtool import __version__
from logtool.recovery.errors import RepairRefused
from logtool.recovery.writer import (DirHandle, FileMeta, flush_filesystem, fsync_dir, read_chunks, sha256_of,
                                     write_all)

MANIFEST = "manifest.jsonl"
FILES = "files"
STAGED = "staged"
RESTORED = "restored"  # written into a run that `restore` undid: such a run is never resumed
NAME_MAX = 255  # bytes, for any one name on Linux filesystems
_READABLE_MAX = 160  # bytes of the original's names kept readable in a stored file's name

T = TypeVar("T")

ACTIONS = ("replaced", "removed", "truncated", "created", "removed dir")  # "removed dir": kept as a tar archive


class QuarantineError(RepairRefused):
    """The quarantine cannot be used (inside the log dir, unwritable, or a manifest that does not check out)."""


@dataclass(slots=True)
class Entry:
    log_dir: str  # absolute, resolved once when the repair began
    partition: str  # the partition dir's name in the log dir ("" for the log dir's own files)
    name: str  # the file's name in the partition dir
    action: str  # one of ACTIONS
    stored: str | None  # the kept bytes, relative to the run (the cut tail for "truncated"); None for "created"
    size: int  # of the original (0 for "created")
    sha256: str | None  # of the whole original
    uid: int | None = None
    gid: int | None = None
    mode: int | None = None
    mtime_ns: int | None = None
    truncated_to: int | None = None  # "truncated": the size the repair left
    after_sha256: str | None = None  # what the repair left; None for "removed" (nothing is left)

    def to_json(self) -> dict[str, Any]:
        return {f: getattr(self, f) for f in ENTRY_FIELDS}

    @property
    def key(self) -> tuple[str, str, str]:
        return self.log_dir, self.partition, self.name

    @property
    def original(self) -> Path:
        return Path(self.log_dir) / self.partition / self.name

    @property
    def partition_dir(self) -> Path:
        return Path(self.log_dir) / self.partition

    @property
    def directory(self) -> tuple[str, bool]:
        """Where it is, as a step names it: (the directory's path, whether that is the log dir itself)."""
        return (self.log_dir, True) if self.partition == "" else (str(self.partition_dir), False)

    @property
    def meta(self) -> FileMeta | None:
        if self.uid is None or self.gid is None or self.mode is None or self.mtime_ns is None:
            return None
        return FileMeta(self.size, self.uid, self.gid, self.mode, self.mtime_ns, 1)


ENTRY_FIELDS = tuple(f.name for f in fields(Entry))


@dataclass(slots=True)
class QuarantineRun:
    path: Path
    command: str
    label: str = ""
    created: str = field(default_factory=lambda: time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
    entries: list[Entry] = field(default_factory=list)
    _by_key: dict[tuple[str, str, str], Entry] = field(default_factory=dict, repr=False)
    _position: dict[int, int] = field(default_factory=dict, repr=False)  # id(entry) -> its line among entries

    @classmethod
    def start(cls, root: Path, label: str, command: str, log_dirs: list[Path]) -> "QuarantineRun":
        root = root.absolute()
        refuse_inside(root, log_dirs)
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        path = root / f"{stamp}-{os.getpid()}-{secrets.token_hex(3)}-{label}"
        try:
            root.mkdir(parents=True, exist_ok=True)
            path.mkdir(mode=0o700)  # fails if the name exists: a run never reuses what it did not make
            (path / FILES).mkdir()
            (path / STAGED).mkdir()
        except OSError as e:
            raise QuarantineError(f"cannot create {path}: {e.strerror or e}") from None
        run = cls(path, command, label)
        header = {"tool": "logtool", "version": __version__, "created": run.created, "command": command,
                  "label": label}
        append_line(path / MANIFEST, header, create=True)
        return run

    def _stored_rel(self, partition: str, name: str, number: int) -> str:
        return f"{FILES}/{stored_name(number, partition or 'root', name)}"

    def _claim(self, rel: str, make: Callable[[Path], T]) -> T:
        """`make` the stored file `rel`. A stop between keeping and recording can have left one of that name: no
        entry names it (its number is the next entry's), so it is removed and made again."""
        try:
            return make(self.path / rel)
        except FileExistsError:
            os.unlink(self.path / rel)
            return make(self.path / rel)

    def _new_file(self, partition: str, name: str, suffix: str = "", at: int | None = None) -> tuple[str, int]:
        """A new file for kept bytes, for the entry that will be number `at` (the next one by default)."""
        rel = self._stored_rel(partition, name + suffix, len(self.entries) if at is None else at)
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
        return rel, self._claim(rel, lambda path: os.open(path, flags, 0o600))

    def keep_whole(self, pdir: DirHandle, name: str, action: str) -> Entry:
        """Copy a whole file into the run (fsynced) before the repair replaces or removes it."""
        return self.keep_many([(pdir, name)], action)[0]

    def keep_many(self, files: list[tuple[DirHandle, str]], action: str,
                  each: Callable[[], None] | None = None) -> list[Entry]:
        """Keep whole files in the run before the repair removes or replaces them, recorded by one manifest
        append however many they are. On the log dir's own filesystem a file is kept by a second name (a hard
        link: the repair then only takes the log dir's name away, so nothing is copied and the bytes are the
        very inode the broker wrote); elsewhere it is copied, the copies made durable by one flush."""
        entries = []
        copied = None
        for i, (pdir, name) in enumerate(files):
            meta = pdir.existing(name)
            rel = self._linked(pdir, name, len(self.entries) + i)
            if rel is None:
                rel = self._copied(pdir, name, len(self.entries) + i)
                copied = rel
            entries.append(Entry(str(pdir.log_dir), pdir.partition, name, action, rel, meta.size,
                                 sha256_of(read_chunks(self.path / rel)),
                                 meta.uid, meta.gid, meta.mode, meta.mtime_ns))
            if each is not None:  # the kill tests stop here too: a file kept that no entry records yet
                each()
        if copied is not None:
            fd = os.open(self.path / copied, os.O_RDONLY | os.O_NOFOLLOW)
            try:
                flush_filesystem(fd)
            finally:
                os.close(fd)
        fsync_dir(self.path / FILES)
        append_lines(self.path / MANIFEST, [{"entry": e.to_json()} for e in entries])
        for e in entries:
            self._index(e)
        return entries

    def _linked(self, pdir: DirHandle, name: str, number: int) -> str | None:
        """The file kept under a second name in the run, or None where a link cannot be made (another
        filesystem; an immutable file)."""
        rel = self._stored_rel(pdir.partition, name, number)
        try:
            self._claim(rel, lambda path: os.link(name, path, src_dir_fd=pdir.fd, follow_symlinks=False))
        except OSError as e:
            if e.errno in (errno.EXDEV, errno.EPERM, errno.EMLINK):
                return None
            raise
        return rel

    def _copied(self, pdir: DirHandle, name: str, number: int) -> str:
        rel, out = self._new_file(pdir.partition, name, at=number)
        try:
            for chunk in pdir.chunks(name):
                write_all(out, chunk)
        finally:
            os.close(out)
        return rel

    def keep_tail(self, pdir: DirHandle, name: str, keep: int) -> Entry:
        """Copy the bytes of a file from `keep` on into the run (fsynced) before the file is cut there. The
        bytes that stay are only read, for the sha256 of the original and of what the cut leaves."""
        meta = pdir.existing(name)
        rel, out = self._new_file(pdir.partition, name, ".tail")
        digest = hashlib.sha256()
        try:
            for chunk in pdir.chunks(name, 0, keep):
                digest.update(chunk)
            after = digest.copy()
            for chunk in pdir.chunks(name, keep):
                digest.update(chunk)
                write_all(out, chunk)
            os.fsync(out)
        finally:
            os.close(out)
        return self._add(Entry(str(pdir.log_dir), pdir.partition, name, "truncated", rel, meta.size, digest.hexdigest(),
                               meta.uid, meta.gid, meta.mode, meta.mtime_ns, truncated_to=keep,
                               after_sha256=after.hexdigest()))

    def keep_tree(self, root: DirHandle, name: str) -> Entry:
        """Archive a directory of the log dir (every entry in it, never following a symlink; owners, modes and
        mtimes kept) into the run before the repair removes it: a directory the broker refuses to start
        with, such as `lost+found`."""
        st = os.stat(name, dir_fd=root.fd, follow_symlinks=False)
        rel, out = self._new_file("root", name, ".tar")
        try:
            with os.fdopen(os.dup(out), "wb") as f, tarfile.open(fileobj=f, mode="w", format=tarfile.PAX_FORMAT) as tar:
                tar.add(str(root.path / name), arcname=name, recursive=True)
            os.fsync(out)
            size = os.fstat(out).st_size
        finally:
            os.close(out)
        return self._add(Entry(str(root.log_dir), "", name, "removed dir", rel, size,
                               sha256_of(read_chunks(self.path / rel)),
                               st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode), st.st_mtime_ns))

    def record_created(self, pdir: DirHandle, name: str) -> Entry:
        """Record a file the repair is about to create, so that restore removes it."""
        return self._add(Entry(str(pdir.log_dir), pdir.partition, name, "created", None, 0, None))

    def set_after(self, entry: Entry, sha256: str | None) -> None:
        entry.after_sha256 = sha256
        append_line(self.path / MANIFEST, {"after": self._position[id(entry)], "sha256": sha256})

    def _add(self, entry: Entry) -> Entry:
        append_line(self.path / MANIFEST, {"entry": entry.to_json()})
        self._index(entry)
        return entry

    def _index(self, entry: Entry) -> None:
        self._position[id(entry)] = len(self.entries)
        self.entries.append(entry)
        self._by_key.setdefault(entry.key, entry)

    def discard(self) -> None:
        """Remove a run that kept nothing (a repair refused before its first write)."""
        if self.entries:
            return
        for p in sorted(self.path.rglob("*"), reverse=True):
            p.rmdir() if p.is_dir() and not p.is_symlink() else p.unlink()
        self.path.rmdir()

    def find(self, pdir: DirHandle, name: str) -> Entry | None:
        """The first entry of this file: it holds the file as it was before the run."""
        return self._by_key.get((str(pdir.log_dir), pdir.partition, name))

    def first_entries(self) -> list[Entry]:
        """One entry per file, the first, in manifest order."""
        return [e for e in self.entries if self._by_key.get(e.key) is e]

    @property
    def restored(self) -> bool:
        return (self.path / RESTORED).exists()

    def mark_restored(self) -> None:
        write_atomically(self.path / RESTORED, "restored\n")


def stored_name(index: int, partition: str, name: str) -> str:
    """A stored file's name: its place in the run and a short hash of where it came from (unique, whatever
    the length of a topic's name), then as much of the original names as fits NAME_MAX."""
    where = f"{partition}/{name}".encode("utf-8", "surrogateescape")
    readable = f"{partition}-{name}".encode("utf-8", "surrogateescape")
    if len(readable) > _READABLE_MAX:  # keep the file's own name whole and the start of the partition's
        tail = name.encode("utf-8", "surrogateescape")[-_READABLE_MAX // 2:]
        readable = readable[: _READABLE_MAX - len(tail) - 1] + b"~" + tail
    text = readable.decode("utf-8", "ignore")  # a cut through a multi-byte character drops it
    return f"{index:06d}-{hashlib.sha256(where).hexdigest()[:10]}-{text}"


def refuse_inside(root: Path, log_dirs: list[Path]) -> None:
    """A quarantine inside a log dir, or inside a partition dir, would itself be damage to the broker."""
    real_root = root.resolve()
    for d in log_dirs:
        real = d.resolve()
        if real_root == real or real in real_root.parents:
            raise QuarantineError(f"the quarantine {root} lies inside {d}; choose a directory outside the log dir")


def append_line(path: Path, record: dict[str, Any], create: bool = False) -> None:
    """One JSON line appended and fsynced (with the directory, when the file is new)."""
    append_lines(path, [record], create)


def append_lines(path: Path, records: list[dict[str, Any]], create: bool = False) -> None:
    """JSON lines appended in one write and fsynced (with the directory, when the file is new)."""
    flags = os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW | (os.O_CREAT | os.O_EXCL if create else 0)
    fd = os.open(path, flags, 0o600)
    try:
        write_all(fd, "".join(json.dumps(r) + "\n" for r in records).encode("utf-8", "surrogateescape"))
        os.fsync(fd)
    finally:
        os.close(fd)
    if create:
        fsync_dir(path.parent)


def read_lines(path: Path) -> list[dict[str, Any]]:
    """The records of a JSON Lines file of a run; a torn last line (a crash mid-append) is left out."""
    lines = path.read_bytes().decode("utf-8", "surrogateescape").split("\n")
    out = []
    for i, line in enumerate(lines):
        if not line:
            continue
        try:
            record = json.loads(line)
        except ValueError:
            if i == len(lines) - 1:  # only the last line may be torn: it has no newline yet
                break
            raise
        if not isinstance(record, dict):
            raise ValueError(f"line {i + 1} is not an object")
        out.append(record)
    return out


def write_atomically(path: Path, text: str) -> None:
    """A file of the run, replaced whole: temp, fsync, rename, fsync the run directory."""
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        write_all(fd, text.encode())
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    fsync_dir(path.parent)


def load(run_dir: Path) -> QuarantineRun:
    """A run as its manifest records it. Raises QuarantineError for anything that is not a run's manifest."""
    try:
        records = read_lines(run_dir / MANIFEST)
        header = records[0]
        run = QuarantineRun(run_dir, str(header["command"]), str(header.get("label", "")), str(header["created"]))
        for r in records[1:]:
            if "entry" in r:
                run._index(Entry(**r["entry"]))
            else:
                run.entries[int(r["after"])].after_sha256 = r["sha256"]
    except (OSError, ValueError, KeyError, TypeError, IndexError) as e:
        raise QuarantineError(f"{run_dir} is not a logtool quarantine run: {e}") from None
    return run


def check_names(run: QuarantineRun) -> None:
    """Every place an entry names lies inside the log dir it names, and every stored file inside the run's
    files/ and is a regular file: a manifest edited to name `../../x`, an absolute path or a symlink is
    refused before anything is written."""
    for e in run.entries:
        where = f"{run.path / MANIFEST}: entry for {e.name!r}"
        if e.action not in ACTIONS:
            raise QuarantineError(f"{where}: unknown action {e.action!r}; nothing was restored")
        log_dir = e.log_dir if isinstance(e.log_dir, str) else ""
        if not os.path.isabs(log_dir) or os.path.normpath(log_dir) != log_dir.rstrip("/") or "\0" in log_dir:
            raise QuarantineError(f"{where}: the log dir {e.log_dir!r} is not an absolute, normal path; "
                                  f"nothing was restored")
        if e.partition != "" and not is_plain_name(e.partition):
            raise QuarantineError(f"{where}: {e.partition!r} is not a directory name; nothing was restored")
        if not is_plain_name(e.name):
            raise QuarantineError(f"{where}: {e.name!r} is not a file name; nothing was restored")
        if (e.stored is None) != (e.action == "created"):
            raise QuarantineError(f"{where}: its kept bytes are missing; nothing was restored")
        if e.stored is not None:
            folder, _, stored = e.stored.partition("/")
            if folder != FILES or not is_plain_name(stored):
                raise QuarantineError(f"{where}: {e.stored!r} does not lie in the run's {FILES}/; nothing was restored")
            try:
                st = os.lstat(run.path / FILES / stored)
            except OSError as err:
                raise QuarantineError(f"{run.path / e.stored}: {err.strerror or err}; nothing was restored") from None
            if not stat.S_ISREG(st.st_mode):
                raise QuarantineError(f"{run.path / e.stored} is not a regular file; nothing was restored")


def is_plain_name(name: object) -> bool:
    """One entry of a directory: no separator, not `.` or `..`, not empty."""
    return isinstance(name, str) and name not in ("", ".", "..") and "/" not in name and "\0" not in name


def stored_path(run: QuarantineRun, entry: Entry) -> Path:
    assert entry.stored is not None
    return run.path / entry.stored


def stored_chunks(run: QuarantineRun, entry: Entry, start: int = 0, end: int | None = None) -> Iterator[bytes]:
    """The kept bytes of an entry, from `start` to `end` (to the end when None), a chunk at a time."""
    return read_chunks(stored_path(run, entry), start, end)
