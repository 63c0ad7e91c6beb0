"""Undo a repair: put every file of a quarantine run back as it was, byte for byte, with its owner, group,
mode and mtime, under the same locks a repair takes. Before writing anything it checks that the kept
bytes are whole and that the log dir still holds exactly what the repair left; a file changed since is
listed and nothing is written, unless `force`."""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from logtool.recovery.quarantine import Entry, QuarantineError, Run, load, mark_restored, stored_chunks
from logtool.recovery.session import Session, sweep_temporaries
from logtool.recovery.writer import FileMeta, PartitionDir


class ChangedSinceRepair(QuarantineError):
    """Files of the log dir differ from what the repair left."""


@dataclass(slots=True)
class Restored:
    run: Run
    entries: list[Entry]


def restore(run_dir: Path, force: bool = False) -> Restored:
    run = load(run_dir)
    log_dirs = sorted({Path(e.log_dir) for e in run.entries})
    with Session(log_dirs, lambda: run) as session:
        sweep_temporaries(session, {(Path(e.log_dir) / e.partition, e.partition == "") for e in run.entries})
        known = _check_kept_bytes(session, run)
        if not force:
            changed = [e for e in _first_entries(run) if not _as_repair_left(session, run, e, known)]
            if changed:
                names = ", ".join(str(e.original) for e in changed)
                raise ChangedSinceRepair(f"changed since the repair: {names}; nothing was restored "
                                         f"(--force restores over them)")
        for e in reversed(run.entries):  # newest first: the oldest copy of a file is put back last
            _put_back(session, run, e)
        for e in _first_entries(run):
            pdir = _dir_of(session, e)
            if e.action != "created" and pdir.sha256(e.name) != e.sha256:
                raise QuarantineError(f"{e.original} does not match its recorded sha256 after the restore")
        mark_restored(run)
    return Restored(run, run.entries)


def _dir_of(session: Session, e: Entry) -> PartitionDir:
    return session.log_dir_root(Path(e.log_dir)) if e.partition == "" else session.partition_dir(e.partition_dir)


def _first_entries(run: Run) -> list[Entry]:
    """One entry per file: the first, which holds the file as it was before the run."""
    seen, out = set(), []
    for e in run.entries:
        if (e.log_dir, e.partition, e.name) not in seen:
            seen.add((e.log_dir, e.partition, e.name))
            out.append(e)
    return out


def _check_kept_bytes(session: Session, run: Run) -> dict[tuple[str, str, str], str]:
    """Check that every kept copy gives back its original. Returns the sha256 of the files this read whole
    on the way (a cut file of its own size: prefix only), so that they are not read again."""
    known: dict[tuple[str, str, str], str] = {}
    for e in run.entries:
        if e.stored is None:
            continue
        digest = hashlib.sha256()
        if e.action == "truncated":
            pdir = _dir_of(session, e)
            if (pdir.meta(e.name) or FileMeta(-1, 0, 0, 0, 0)).size < e.truncated_to:
                raise QuarantineError(f"{e.original} is shorter than the repair left it; its cut tail cannot be appended")
            for chunk in pdir.chunks(e.name, 0, e.truncated_to):
                digest.update(chunk)
            if pdir.meta(e.name).size == e.truncated_to:
                known[(e.log_dir, e.partition, e.name)] = digest.copy().hexdigest()
        try:
            for chunk in stored_chunks(run, e):
                digest.update(chunk)
        except OSError as err:
            raise QuarantineError(f"{run.path / e.stored}: {err.strerror or err}; nothing was restored") from None
        if digest.hexdigest() != e.sha256:
            raise QuarantineError(f"{run.path / e.stored} does not give back {e.original} (sha256 differs); "
                                  f"nothing was restored")
    return known


def _as_repair_left(session: Session, run: Run, first: Entry, known: dict[tuple[str, str, str], str]) -> bool:
    """Whether the file is now what the run's last change to it left."""
    last = [e for e in run.entries if (e.log_dir, e.partition, e.name) == (first.log_dir, first.partition, first.name)][-1]
    pdir = _dir_of(session, first)
    meta = pdir.meta(first.name)
    if meta is None:
        return last.action == "removed" or first.action == "created"
    current = known.get((first.log_dir, first.partition, first.name)) or pdir.sha256(first.name)
    # An interrupted repair may have stopped before it reached this file: then it is still the original.
    return current in (last.after_sha256, first.sha256)


def _put_back(session: Session, run: Run, e: Entry) -> None:
    pdir: PartitionDir = _dir_of(session, e)
    if e.action == "created":
        if pdir.meta(e.name) is not None:
            pdir.unlink(e.name)
        return
    if e.action == "truncated":
        pdir.truncate(e.name, e.truncated_to)
        pdir.append(e.name, stored_chunks(run, e))
    else:
        pdir.replace(e.name, stored_chunks(run, e), e.meta)
    pdir.set_meta(e.name, e.meta)
