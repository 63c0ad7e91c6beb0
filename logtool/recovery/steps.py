"""The steps a repair or a restore is made of: a closed set of types, each journaled by name and each safe to
run again from any point it may have stopped at (a rerun after a crash, a full disk or a signal ends in the
same state as an uninterrupted run).

Every step keeps what it is about to remove in the quarantine run, and records it in the manifest, before
it changes the log dir. A step names its directory by absolute path (`root` for a log dir's own files) and
its file by name in it.
"""
from __future__ import annotations

from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any, ClassVar

from logtool.recovery.quarantine import Entry, QuarantineError, QuarantineRun, stored_chunks, stored_path
from logtool.recovery.writer import DirHandle, flush_filesystem, read_chunks, sha256_of

if TYPE_CHECKING:
    from logtool.recovery.session import Session


@dataclass(slots=True, frozen=True)
class Step:
    op: ClassVar[str]
    dir: str  # the directory's absolute path
    name: str  # the file's name in it
    root: bool  # the directory is a log dir (its checkpoints), not a partition dir

    def to_json(self) -> dict[str, Any]:
        return {"op": self.op, **{f.name: getattr(self, f.name) for f in fields(self)}}

    def pdir(self, session: "Session") -> DirHandle:
        return session.directory(self.dir, self.root)

    def names(self) -> tuple[str, ...]:
        """The files of its directory the step reads or writes."""
        return (self.name,)

    # Steps of a grouped type run many at a time (run_group): their copies made durable by one flush, their
    # manifest records by one append, their journal by one mark. A group is redone whole after a stop.
    grouped: ClassVar[bool] = False

    def run(self, session: "Session") -> None:
        raise NotImplementedError

    @staticmethod
    def run_group(session: "Session", steps: list["Step"]) -> None:
        """Run a group of steps of this (grouped) type."""
        raise NotImplementedError

    def size_hint(self, session: "Session") -> int:
        """Roughly the bytes the step copies (a group is bounded by them, so that a signal is soon heeded)."""
        return 0


@dataclass(slots=True, frozen=True)
class CutTail(Step):
    """Cut a file to `size` bytes; the bytes after go to the quarantine."""

    op: ClassVar[str] = "cut"
    size: int

    def run(self, session: "Session") -> None:
        run, pdir = session.run, self.pdir(session)
        if run.find(pdir, self.name) is None:
            run.keep_tail(pdir, self.name, self.size)
            session.step_done()
        meta = pdir.meta(self.name)
        if meta is not None and meta.size > self.size:
            pdir.cut(self.name, self.size)


@dataclass(slots=True, frozen=True)
class RemoveFile(Step):
    """Move a whole file to the quarantine: a segment Kafka's recovery deletes, a snapshot past the log end,
    a leftover the loader deletes."""

    op: ClassVar[str] = "remove"
    grouped: ClassVar[bool] = True

    def run(self, session: "Session") -> None:
        RemoveFile.run_group(session, [self])

    def size_hint(self, session: "Session") -> int:
        meta = self.pdir(session).meta(self.name)
        return meta.size if meta is not None else 0

    @staticmethod
    def run_group(session: "Session", steps: list["Step"]) -> None:
        run = session.run
        where = [(s.pdir(session), s.name) for s in steps]
        todo = [(pdir, name) for pdir, name in where if run.find(pdir, name) is None and pdir.meta(name) is not None]
        if todo:
            run.keep_many(todo, "removed", each=session.step_done)
            session.step_done()
        for pdir, name in where:
            if pdir.meta(name) is not None:
                pdir.unlink(name, sync=False)
                session.step_done()
        for pdir in {id(p): p for p, _ in where}.values():
            pdir.fsync()


@dataclass(slots=True, frozen=True)
class WriteFile(Step):
    """Put new bytes (staged in the run before the first change) under a name: a rebuilt index, a rewritten
    checkpoint. The old file, if any, goes to the quarantine; a new one takes its segment's owner and mode."""

    op: ClassVar[str] = "write"
    staged: str  # relative to the run
    sha256: str
    like: str  # the sibling whose owner and mode a new file takes

    def run(self, session: "Session") -> None:
        run, pdir = session.run, self.pdir(session)
        old = pdir.meta(self.name)
        entry = run.find(pdir, self.name)
        if entry is None:
            entry = run.keep_whole(pdir, self.name, "replaced") if old else run.record_created(pdir, self.name)
            session.step_done()
        if entry.after_sha256 != self.sha256:
            run.set_after(entry, self.sha256)  # before the rename: restore must know the new bytes once they land
        if old is None or pdir.sha256(self.name) != self.sha256:
            like = old if old is not None else pdir.meta_for_new(self.like)
            pdir.replace(self.name, read_chunks(run.path / self.staged), like)


@dataclass(slots=True, frozen=True)
class SplitOff(Step):
    """Create a segment from a stretch [start, end) of a file whose tail an earlier step cut (and so the
    quarantine holds): the valid batches after damage that --excise keeps."""

    op: ClassVar[str] = "split"
    source: str
    start: int
    end: int

    def names(self) -> tuple[str, ...]:
        return (self.name, self.source)

    def run(self, session: "Session") -> None:
        run, pdir = session.run, self.pdir(session)
        source = run.find(pdir, self.source)
        if source is None or source.truncated_to is None:
            raise QuarantineError(f"{self.source}: its cut tail is not in {run.path}")
        lo, hi = self.start - source.truncated_to, self.end - source.truncated_to
        sha = sha256_of(stored_chunks(run, source, lo, hi))
        entry = run.find(pdir, self.name)
        if entry is None:
            entry = run.record_created(pdir, self.name)
            session.step_done()
        if entry.after_sha256 != sha:
            run.set_after(entry, sha)
        if pdir.meta(self.name) is None or pdir.sha256(self.name) != sha:
            pdir.replace(self.name, stored_chunks(run, source, lo, hi), pdir.meta_for_new(self.source))


@dataclass(slots=True, frozen=True)
class MoveDir(Step):
    """Move a directory of a log dir (one the broker refuses to start with) into the quarantine: archived
    whole, then removed without following a symlink."""

    op: ClassVar[str] = "move dir"

    def names(self) -> tuple[str, ...]:
        return ()  # no file of the log dir is written: the directory is looked at by kind below

    def run(self, session: "Session") -> None:
        run, root = session.run, self.pdir(session)
        kind = root.kind(self.name)
        if kind not in ("dir", None):
            raise QuarantineError(f"{root.path / self.name} is not a directory; it was not moved")
        present = kind == "dir"
        if run.find(root, self.name) is None and present:
            run.keep_tree(root, self.name)
            session.step_done()
        if present:
            root.remove_tree(self.name)


@dataclass(slots=True, frozen=True)
class PutBack(Step):
    """Restore: put one manifest entry's file back as it was before the repair (remove a file the repair
    created; append a cut tail; rename a kept copy over), with its owner, group, mode and mtime."""

    op: ClassVar[str] = "put back"
    grouped: ClassVar[bool] = True
    entry: int  # its place in the manifest

    def run(self, session: "Session") -> None:
        PutBack.run_group(session, [self])

    def size_hint(self, session: "Session") -> int:
        return session.run.entries[self.entry].size

    @staticmethod
    def run_group(session: "Session", steps: list["Step"]) -> None:
        dirs: dict[int, DirHandle] = {}
        for step in steps:
            assert isinstance(step, PutBack)
            pdir = step.pdir(session)
            dirs[id(pdir)] = pdir
            step._put_back(session.run, pdir)
        for pdir in dirs.values():  # every file of the group durable before the journal says so
            flush_filesystem(pdir.fd)
            pdir.fsync()

    def _put_back(self, run: QuarantineRun, pdir: DirHandle) -> None:
        e = run.entries[self.entry]
        if e.action == "removed dir":
            # extracted over whatever is there: the directory of a repair stopped before it removed it, or of a
            # restore stopped half-way through extracting it; nothing else in it is removed
            pdir.extract(stored_path(run, e))
            return
        if e.action == "created":
            if pdir.meta(e.name) is not None:
                pdir.unlink(e.name, sync=False)
            return
        meta = e.meta
        if meta is None:
            raise QuarantineError(f"{run.path}: the entry of {e.original} has no owner or mode recorded")
        if e.action == "truncated":
            assert e.truncated_to is not None
            pdir.put_tail(e.name, e.truncated_to, stored_chunks(run, e), sync=False)
        else:
            pdir.replace(e.name, stored_chunks(run, e), meta, sync=False)
        pdir.set_meta(e.name, meta, sync=False)

    @classmethod
    def of(cls, run: QuarantineRun, index: int) -> "PutBack":
        e: Entry = run.entries[index]
        directory, root = e.directory
        return cls(directory, e.name, root, index)


STEP_TYPES: dict[str, type[Step]] = {t.op: t for t in (CutTail, RemoveFile, WriteFile, SplitOff, MoveDir, PutBack)}


def from_json(doc: dict[str, Any]) -> Step:
    """A journaled step. Raises QuarantineError for anything not of the closed set."""
    kind = STEP_TYPES.get(doc.get("op", ""))
    if kind is None:
        raise QuarantineError(f"unknown step {doc.get('op')!r} in a journal")
    try:
        return kind(**{f.name: doc[f.name] for f in fields(kind)})
    except (KeyError, TypeError) as e:
        raise QuarantineError(f"a journal step of {kind.op!r} is malformed: {e}") from None
