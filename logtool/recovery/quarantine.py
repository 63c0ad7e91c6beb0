"""The quarantine: every byte a repair removes or replaces is kept here first, with a manifest, so that
`logtool restore RUN` puts the directory back exactly as it was.

A run is one directory `<quarantine>/<UTC time>-<pid>-<random>-<label>/` holding the kept bytes under
`files/` and `manifest.json`. For each file the manifest records where it was (the log dir as the user gave
it, the partition dir and file name as found there, never a resolved symlink), what the repair did, the
size, sha256, owner, group, mode and mtime of the original, and the sha256 of what the repair left, so that
`restore` can tell whether anything changed since. A file cut short keeps only its cut tail here, never a
copy of the bytes that stay. The manifest is rewritten atomically after every change, so a crash
mid-repair leaves a usable record.
"""
from __future__ import annotations

import hashlib
import json
import os
import secrets
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from logtool import __version__
from logtool.recovery.errors import RepairRefused
from logtool.recovery.writer import CHUNK, FileMeta, PartitionDir, write_all

MANIFEST = "manifest.json"
FILES = "files"
RESTORED = "restored"  # written into a run that `restore` undid: such a run is never resumed


class QuarantineError(RepairRefused):
    """The quarantine cannot be used (inside the log dir, unwritable, or a manifest that does not check out)."""


@dataclass(slots=True)
class Entry:
    log_dir: str  # as the user named it (absolute), not resolved
    partition: str  # the partition dir's name in the log dir
    name: str  # the file's name in the partition dir
    action: str  # "replaced", "removed", "truncated" or "created"
    stored: str | None  # the kept bytes, relative to the run (the cut tail for "truncated"); None for "created"
    size: int  # of the original (0 for "created")
    sha256: str | None  # of the whole original
    uid: int | None = None
    gid: int | None = None
    mode: int | None = None
    mtime_ns: int | None = None
    truncated_to: int | None = None  # "truncated": the size the repair left
    after_sha256: str | None = None  # what the repair left; None for "removed" (nothing is left)

    @property
    def original(self) -> Path:
        return Path(self.log_dir) / self.partition / self.name

    @property
    def partition_dir(self) -> Path:
        return Path(self.log_dir) / self.partition

    @property
    def meta(self) -> FileMeta | None:
        if self.uid is None:
            return None
        return FileMeta(self.size, self.uid, self.gid, self.mode, self.mtime_ns)


@dataclass(slots=True)
class Run:
    path: Path
    command: str
    created: str = field(default_factory=lambda: time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
    entries: list[Entry] = field(default_factory=list)

    @classmethod
    def start(cls, root: Path, label: str, command: str, log_dirs: list[Path]) -> "Run":
        root = root.absolute()
        real_root = root.resolve()
        for d in log_dirs:
            real = d.resolve()
            if real_root == real or real in real_root.parents:
                raise QuarantineError(f"the quarantine {root} lies inside {d}; choose a directory outside the log dir")
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        path = root / f"{stamp}-{os.getpid()}-{secrets.token_hex(3)}-{label}"
        try:
            root.mkdir(parents=True, exist_ok=True)
            path.mkdir(mode=0o700)  # fails if the name exists: a run never reuses what it did not make
            (path / FILES).mkdir()
        except OSError as e:
            raise QuarantineError(f"cannot create {path}: {e.strerror or e}") from None
        run = cls(path, command)
        run.save()
        return run

    def _new_file(self, partition: str, name: str, suffix: str = "") -> tuple[str, int]:
        # A crash between storing and recording leaves a file no entry names: never reuse a name.
        rel = f"{FILES}/{len(self.entries):04d}-{secrets.token_hex(3)}-{partition}-{name}{suffix}"
        fd = os.open(self.path / rel, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        return rel, fd

    def keep_whole(self, pdir: PartitionDir, name: str, action: str) -> Entry:
        """Copy a whole file into the run (fsynced) before the repair replaces or removes it."""
        meta = pdir.meta(name)
        rel, out = self._new_file(pdir.partition or "root", name)
        digest = hashlib.sha256()
        try:
            for chunk in pdir.chunks(name):
                digest.update(chunk)
                write_all(out, chunk)
            os.fsync(out)
        finally:
            os.close(out)
        return self._add(Entry(str(pdir.log_dir), pdir.partition, name, action, rel, meta.size, digest.hexdigest(),
                               meta.uid, meta.gid, meta.mode, meta.mtime_ns))

    def keep_tail(self, pdir: PartitionDir, name: str, keep: int) -> Entry:
        """Copy the bytes of a file from `keep` on into the run (fsynced) before the file is cut there. The
        bytes that stay are only read, for the sha256 of the original and of what the cut leaves."""
        meta = pdir.meta(name)
        rel, out = self._new_file(pdir.partition or "root", name, ".tail")
        digest = hashlib.sha256()
        after = None  # the digest of the bytes that stay, once the walk passed them
        try:
            pos = 0
            for chunk in pdir.chunks(name):
                if after is None and pos + len(chunk) >= keep:
                    digest.update(chunk[: keep - pos])
                    after = digest.copy()
                    tail = chunk[keep - pos :]
                else:
                    tail = chunk if after is not None else None
                    if tail is None:
                        digest.update(chunk)
                if tail:
                    digest.update(tail)
                    write_all(out, tail)
                pos += len(chunk)
            if after is None:  # an empty file
                after = digest.copy()
            os.fsync(out)
        finally:
            os.close(out)
        return self._add(Entry(str(pdir.log_dir), pdir.partition, name, "truncated", rel, meta.size, digest.hexdigest(),
                               meta.uid, meta.gid, meta.mode, meta.mtime_ns, truncated_to=keep,
                               after_sha256=after.hexdigest()))

    def record_created(self, pdir: PartitionDir, name: str) -> Entry:
        """Record a file the repair is about to create, so that restore removes it."""
        return self._add(Entry(str(pdir.log_dir), pdir.partition, name, "created", None, 0, None))

    def set_after(self, entry: Entry, sha256: str | None) -> None:
        entry.after_sha256 = sha256
        self.save()

    def _add(self, entry: Entry) -> Entry:
        self.entries.append(entry)
        self.save()
        return entry

    def discard(self) -> None:
        """Remove a run that kept nothing (a repair refused before its first write)."""
        if not self.entries:
            for p in sorted(self.path.rglob("*"), reverse=True):
                p.rmdir() if p.is_dir() else p.unlink()
            self.path.rmdir()

    def find(self, pdir: PartitionDir, name: str) -> Entry | None:
        """The first entry of this file: it holds the file as it was before the run."""
        place = (str(pdir.log_dir), pdir.partition, name)
        return next((e for e in self.entries if (e.log_dir, e.partition, e.name) == place), None)

    def save(self) -> None:
        doc = {"tool": "logtool", "version": __version__, "created": self.created, "command": self.command,
               "entries": [asdict(e) for e in self.entries]}
        write_atomically(self.path / MANIFEST, json.dumps(doc, indent=2) + "\n")


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
    dfd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)


def load(run_dir: Path) -> Run:
    try:
        doc = json.loads((run_dir / MANIFEST).read_text())
        run = Run(run_dir, doc["command"], doc["created"], [Entry(**e) for e in doc["entries"]])
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise QuarantineError(f"{run_dir} is not a logtool quarantine run: {e}") from None
    return run


def stored_chunks(run: Run, entry: Entry, start: int = 0, end: int | None = None):
    """The kept bytes of an entry, from `start` to `end` (to the end when None), a chunk at a time."""
    with open(run.path / entry.stored, "rb") as f:
        f.seek(start)
        left = None if end is None else end - start
        while left is None or left > 0:
            chunk = f.read(CHUNK if left is None else min(CHUNK, left))
            if not chunk:
                break
            if left is not None:
                left -= len(chunk)
            yield chunk


def mark_restored(run: Run) -> None:
    write_atomically(run.path / RESTORED, "restored\n")
