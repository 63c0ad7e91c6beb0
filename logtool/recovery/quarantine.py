"""The quarantine: every byte a repair removes or replaces is kept here first, with a manifest, so that
`logtool restore RUN` puts the directory back exactly as it was.

A run is one directory `<quarantine>/<UTC time>-<pid>-<label>/` holding the kept files under `files/`
and `manifest.json`, which lists for each file its original path, size and sha256 and what the repair did.
The manifest is rewritten (atomically) after every change, so a crash mid-repair leaves a usable record.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from logtool import __version__

MANIFEST = "manifest.json"


class QuarantineError(Exception):
    """The quarantine cannot be used (inside the log dir, unwritable, or a manifest that does not check out)."""


@dataclass(slots=True)
class Entry:
    original: str  # absolute path of the file in the log dir
    stored: str | None  # path inside the run, None for a file the repair created
    size: int
    sha256: str | None
    action: str  # "replaced", "removed", "truncated" or "created"


@dataclass(slots=True)
class Run:
    path: Path
    command: str
    created: str = field(default_factory=lambda: time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
    entries: list[Entry] = field(default_factory=list)

    @classmethod
    def start(cls, root: Path, label: str, command: str, log_dirs: list[Path]) -> "Run":
        root = root.resolve()
        for d in log_dirs:
            d = d.resolve()
            if root == d or d in root.parents:
                raise QuarantineError(f"the quarantine {root} lies inside {d}; choose a directory outside the log dir")
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        path = root / f"{stamp}-{os.getpid()}-{label}"
        try:
            (path / "files").mkdir(parents=True)
        except OSError as e:
            raise QuarantineError(f"cannot create {path}: {e.strerror or e}") from None
        run = cls(path, command)
        run.save()
        return run

    def keep(self, original: Path, action: str) -> Entry:
        """Copy `original` into the run (fsynced) before the repair touches it."""
        original = original.resolve()
        stored = self.path / "files" / f"{len(self.entries):04d}-{original.name}"
        digest = hashlib.sha256()
        with open(original, "rb") as src, open(stored, "wb") as dst:
            while chunk := src.read(1 << 20):
                digest.update(chunk)
                dst.write(chunk)
            dst.flush()
            os.fsync(dst.fileno())
        entry = Entry(str(original), str(stored.relative_to(self.path)), stored.stat().st_size, digest.hexdigest(), action)
        self.entries.append(entry)
        self.save()
        return entry

    def record_created(self, path: Path) -> None:
        """Record a file the repair is about to create, so that restore removes it."""
        self.entries.append(Entry(str(path.resolve()), None, 0, None, "created"))
        self.save()

    def save(self) -> None:
        doc = {"tool": "logtool", "version": __version__, "created": self.created, "command": self.command,
               "entries": [asdict(e) for e in self.entries]}
        tmp = self.path / (MANIFEST + ".tmp")
        tmp.write_text(json.dumps(doc, indent=2) + "\n")
        with open(tmp, "rb") as f:
            os.fsync(f.fileno())
        os.replace(tmp, self.path / MANIFEST)


def load(run_dir: Path) -> Run:
    try:
        doc = json.loads((run_dir / MANIFEST).read_text())
        run = Run(run_dir, doc["command"], doc["created"], [Entry(**e) for e in doc["entries"]])
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise QuarantineError(f"{run_dir} is not a logtool quarantine run: {e}") from None
    return run


def restore(run_dir: Path) -> list[Entry]:
    """Put every file of a run back where it was, checking each against its recorded sha256."""
    run = load(run_dir)
    for e in run.entries:
        if e.stored is None:
            continue
        stored = run_dir / e.stored
        if _sha256(stored) != e.sha256:
            raise QuarantineError(f"{stored} no longer matches its recorded sha256; nothing was restored")
    for e in reversed(run.entries):  # undo in reverse order: the oldest copy of a file wins
        target = Path(e.original)
        if e.stored is None:
            if target.exists():
                target.unlink()
            continue
        tmp = target.with_name(f".{target.name}.logtool-restore")
        shutil.copyfile(run_dir / e.stored, tmp)
        with open(tmp, "rb") as f:
            os.fsync(f.fileno())
        os.replace(tmp, target)
    return run.entries


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()
