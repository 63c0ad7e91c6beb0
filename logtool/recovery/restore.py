"""Undo a repair: put every file of a quarantine run back as it was, byte for byte, with its owner, group,
mode and mtime, through the same executor, locks and journal a repair uses.

Before writing anything it checks the run itself (every name it records lies inside its log dir, every kept
copy is a regular file of the run, each entry matches a step the repair journaled), that the kept bytes give
back the originals, and that the log dir still holds what the repair left (a file changed since is listed
and nothing is written, unless `force`). Those checks are made once: the restore's own journal is written
before its first change, and a restore stopped anywhere (a signal, a full disk) is finished by running it
again, without --force. The `restored` mark is written before success is reported, and a run with a
restore journal is never resumed as a repair.
"""
from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from logtool import exitcodes
from logtool.findings import Severity

from logtool.recovery.errors import RepairRefused, RepairStopped
from logtool.recovery.executor import JOURNAL, RESTORE_JOURNAL, Journal, describe, execute, restore_command
from logtool.recovery.quarantine import (Entry, QuarantineError, QuarantineRun, check_names, load, read_lines,
                                         stored_chunks)
from logtool.recovery.session import Session
from logtool.recovery.steps import PutBack
from logtool.recovery.writer import DirHandle


class ChangedSinceRepair(QuarantineError):
    """Files of the log dir differ from what the repair left."""


@dataclass(slots=True)
class Restored:
    """What a restore put back (a restore that cannot be made raises, and writes nothing or says how to finish)."""

    run: QuarantineRun
    entries: list[Entry]
    already: bool = False  # the run was restored before: nothing was written
    earlier: frozenset[tuple[str, str, str]] = frozenset()  # files an earlier, stopped restore put back

    def exit_code(self, fail_on: Severity = Severity.WARNING) -> int:
        return exitcodes.CLEAN

    def files(self) -> list[dict[str, Any]]:
        """Each file of the run as it is now: `restored`, or `removed` (a file the repair created), and whether
        a restore that stopped had already done it."""
        return [{"file": str(e.original), "done": "removed" if e.action == "created" else "restored",
                 "by_earlier_restore": e.key in self.earlier} for e in self.entries]

    def to_dict(self) -> dict[str, Any]:
        return {**self.summary(), "files": self.files()}

    def rows(self) -> Iterator[dict[str, Any]]:
        return ({"type": "file", **f} for f in self.files())

    def summary(self) -> dict[str, Any]:
        return {"run": str(self.run.path), "already_restored": self.already, "files": len(self.entries)}

    def stderr_lines(self) -> list[str]:
        return []


def restore(run_dir: Path, force: bool = False) -> Restored:
    run = load(run_dir)
    if run.restored:
        return Restored(run, run.first_entries(), already=True)
    check_names(run)
    _check_against_journal(run)
    steps = [PutBack.of(run, i) for i in reversed(range(len(run.entries)))]  # newest first: the oldest copy last
    log_dirs = sorted({Path(e.log_dir) for e in run.entries})
    finish = restore_command(run.path)
    with Session(log_dirs, lambda: run) as session:
        session.sweep_temporaries({(Path(s.dir), s.root) for s in steps})
        journal_path = run.path / RESTORE_JOURNAL
        earlier: frozenset[tuple[str, str, str]] = frozenset()
        if journal_path.exists():  # a restore that stopped: its checks were made when it began
            journal = Journal.load(journal_path)
            earlier = frozenset(run.entries[step.entry].key for step in steps[:journal.done])
        else:
            known = _check_kept_bytes(session, run)
            if not force:
                last = {e.key: e for e in run.entries}
                changed = [e for e in run.first_entries() if not _as_repair_left(session, last[e.key], e, known)]
                if changed:
                    names = ", ".join(str(e.original) for e in changed)
                    raise ChangedSinceRepair(f"changed since the repair: {names}; nothing was restored "
                                             f"(--force restores over them)")
            if session.signalled is not None:
                raise RepairRefused("interrupted before the first write; nothing was restored")
            journal = Journal.create(journal_path, {"restore": str(run.path), "steps": len(steps), "force": force})
            session.step_done()
        execute(session, journal, steps, finish=finish, undo=None)
        try:
            for e in run.first_entries():
                pdir = _dir_of(session, e)
                if e.action == "removed dir":
                    if pdir.kind(e.name) != "dir":
                        raise QuarantineError(f"{e.original} is not back after the restore")
                elif e.action != "created" and pdir.sha256(e.name) != e.sha256:
                    raise QuarantineError(f"{e.original} does not match its recorded sha256 after the restore")
            run.mark_restored()
        except OSError as err:
            raise RepairStopped(f"{describe(err)}: every file of {run.path} was put back, but the restore could not "
                                f"be checked and marked done. Finish it with:\n{finish}") from None
    return Restored(run, run.first_entries(), earlier=earlier)


def _check_against_journal(run: QuarantineRun) -> None:
    """Every entry is a file one of the repair's journaled steps names: a manifest edited by hand is refused."""
    try:
        header = read_lines(run.path / JOURNAL)[0]
        named = {(s["dir"], s["name"]) for s in header["steps"]} | \
                {(s["dir"], s["source"]) for s in header["steps"] if "source" in s}
    except (OSError, ValueError, KeyError, TypeError, IndexError) as err:
        raise QuarantineError(f"{run.path / JOURNAL}: cannot be read ({err}); nothing was restored") from None
    for e in run.entries:
        if (e.directory[0], e.name) not in named:
            raise QuarantineError(f"{run.path}: the manifest names {e.original}, which no step of the repair "
                                  f"touched; nothing was restored")


def _dir_of(session: Session, e: Entry) -> DirHandle:
    return session.directory(*e.directory)


def _check_kept_bytes(session: Session, run: QuarantineRun) -> dict[tuple[str, str, str], str]:
    """Check that every kept copy gives back its original. Returns the sha256 of the files this read whole
    on the way (a cut file of its own size: prefix only), so that they are not read again."""
    known: dict[tuple[str, str, str], str] = {}
    for e in run.entries:
        if e.stored is None:
            continue
        digest = hashlib.sha256()
        if e.action == "truncated":
            assert e.truncated_to is not None
            pdir = _dir_of(session, e)
            meta = pdir.meta(e.name)
            if meta is None or meta.size < e.truncated_to:
                raise QuarantineError(f"{e.original} is shorter than the repair left it; its cut tail cannot be "
                                      f"appended; nothing was restored")
            for chunk in pdir.chunks(e.name, 0, e.truncated_to):
                digest.update(chunk)
            if meta.size == e.truncated_to:
                known[e.key] = digest.copy().hexdigest()
        try:
            for chunk in stored_chunks(run, e):
                digest.update(chunk)
        except OSError as err:
            raise QuarantineError(f"{run.path / e.stored}: {err.strerror or err}; nothing was restored") from None
        if digest.hexdigest() != e.sha256:
            raise QuarantineError(f"{run.path / e.stored} does not give back {e.original} (sha256 differs); "
                                  f"nothing was restored")
    return known


def _as_repair_left(session: Session, last: Entry, first: Entry, known: dict[tuple[str, str, str], str]) -> bool:
    """Whether the file is now what the run's last change to it (`last`) left."""
    pdir = _dir_of(session, first)
    if first.action == "removed dir":  # gone, or still there (a repair stopped before it removed it)
        return pdir.kind(first.name) in (None, "dir")
    meta = pdir.meta(first.name)
    if meta is None:
        return last.action == "removed" or first.action == "created"
    current = known.get(first.key) or pdir.sha256(first.name)
    # An interrupted repair may have stopped before it reached this file: then it is still the original.
    return current in (last.after_sha256, first.sha256)
