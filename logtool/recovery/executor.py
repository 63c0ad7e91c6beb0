"""The one executor every write into a log dir goes through: `truncate --apply`, `index rebuild --apply` and
`restore`.

A new repair: preflight (space, inodes, writability) -> the locks of every log dir it touches -> the plan's
facts checked again under them (a plan made of files that moved since is refused, nothing written) -> the
new contents staged in the run and the steps journaled -> the steps, each journaled when done. The journal
is JSON Lines, appended (a header with every step, then `{"done": k}` per step), so its cost is linear in
the steps. SIGINT and SIGTERM are held until the step under way ends; any error or signal after the first
write stops with one line naming the run, the command that finishes it and the one that undoes it, and
leaves a run that either does.
"""
from __future__ import annotations

import hashlib
import os
import shlex
import signal
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from logtool.recovery import preflight
from logtool.recovery.errors import RepairRefused, RepairStopped
from logtool.recovery.quarantine import QuarantineError, QuarantineRun, append_line, load, read_lines, refuse_inside
from logtool.recovery.seen import Seen, canonical
from logtool.recovery.session import Session, stop_if_planned_hook
from logtool.recovery.steps import Step, WriteFile, from_json
from logtool.recovery.writer import fsync_dir, write_all

JOURNAL = "journal.jsonl"
RESTORE_JOURNAL = "restore.jsonl"
# A group of removals or restores: large enough that its flushes cost little per file, small enough that a
# signal is heeded within a second or so.
GROUP_STEPS = 512
GROUP_BYTES = 256 << 20


class StalePlan(RepairRefused):
    """The files a plan was made from changed before the locks were taken."""


@dataclass(slots=True)
class Applied:
    run: Path
    steps: int
    resumed: bool


def undo_lines(run: Path, kept: str) -> list[str]:
    """What a repair says once made: where its `kept` bytes are, and the command that undoes it on a line
    of its own, to copy whole (the run's path is in it)."""
    return [f"logtool: {kept} kept in the run below; undo the repair with:",
            shlex.join(["logtool", "restore", str(run)])]


@dataclass(slots=True)
class Journal:
    path: Path
    header: dict[str, Any]
    done: int  # steps done, from the first

    @classmethod
    def create(cls, path: Path, header: dict[str, Any]) -> "Journal":
        append_line(path, header, create=True)
        return cls(path, header, 0)

    @classmethod
    def load(cls, path: Path) -> "Journal":
        records = read_lines(path)
        done = [r["done"] for r in records[1:] if "done" in r]
        return cls(path, records[0], max(done) + 1 if done else 0)

    def mark(self, k: int) -> None:
        append_line(self.path, {"done": k})
        self.done = k + 1


def log_dir_of(step: Step) -> str:
    return step.dir if step.root else os.path.dirname(step.dir)


def carry_out(steps: list[Step], staged: dict[str, bytes], quarantine: Path, label: str, command: str,
              seen: list[Seen]) -> Applied:
    """Carry out the steps of a plan in a new run. Raises RepairRefused (nothing written) or RepairStopped."""
    stop_if_planned_hook()
    log_dirs = [Path(d) for d in sorted({log_dir_of(s) for s in steps})]
    inside = log_dirs + [Path(d) for d in sorted({s.dir for s in steps})]
    refuse_inside(quarantine.absolute(), inside)  # before the locks: a refusal leaves no trace
    preflight.check(steps, staged, quarantine)
    with Session(log_dirs, lambda: QuarantineRun.start(quarantine, label, command, inside)) as session:
        run = session.run
        try:
            changed = [c for s in seen for c in s.changes()]
            if changed:
                raise StalePlan(f"changed since the plan was made: {'; '.join(changed[:3])}"
                                f"{f' (and {len(changed) - 3} more)' if len(changed) > 3 else ''}; nothing was "
                                f"written: run the command again for a new plan")
            _check_steps(session, steps)
            _refuse_if_signalled(session)
            _stage(run, staged)
            journal = Journal.create(run.path / JOURNAL, {"label": label, "command": command,
                                                          "steps": [s.to_json() for s in steps],
                                                          "dirs": _dir_ids(steps)})
        except OSError as e:
            run.discard()
            raise RepairRefused(f"{describe(e)}; nothing was written") from None
        except RepairRefused:
            run.discard()  # nothing was written: leave no run to resume
            raise
        session.step_done()
        execute(session, journal, steps, finish=command, undo=restore_command(run.path))
        return Applied(run.path, len(steps), False)


def _check_steps(session: Session, steps: list[Step]) -> None:
    """Every directory and file the steps touch, looked at before the first write: a symlink or a file that
    is not regular anywhere refuses the whole repair, not the step that meets it."""
    for step in steps:
        pdir = step.pdir(session)
        for name in step.names():
            pdir.meta(name)


def _stage(run: QuarantineRun, staged: dict[str, bytes]) -> None:
    for rel, data in staged.items():
        fd = os.open(run.path / rel, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        try:
            write_all(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
    if staged:
        fsync_dir(run.path / Path(next(iter(staged))).parent)


def _dir_ids(steps: list[Step]) -> dict[str, list[int]]:
    out = {}
    for d in sorted({s.dir for s in steps}):
        st = os.lstat(d)
        out[d] = [st.st_dev, st.st_ino]
    return out


def staged_write(step_dir: Path, name: str, data: bytes, like: str, staged: dict[str, bytes],
                 root: bool = False) -> WriteFile:
    """A WriteFile step whose bytes are staged in the run under `staged/` before the first change."""
    rel = f"staged/{len(staged):06d}"
    staged[rel] = data
    return WriteFile(str(step_dir), name, root, rel, hashlib.sha256(data).hexdigest(), like)


def execute(session: Session, journal: Journal, steps: Sequence[Step], finish: str, undo: str | None) -> None:
    """Run the steps from the first not done, journaling each. Raises RepairStopped on any error or signal."""
    k = journal.done
    try:
        while k < len(steps):
            if session.signalled is not None:
                raise _interrupted(session, k, len(steps), finish, undo)
            step = steps[k]
            if step.grouped:
                end = _group_end(session, steps, k)
                type(step).run_group(session, list(steps[k:end]))
            else:
                end = k + 1
                step.run(session)
            journal.mark(end - 1)
            session.step_done()
            k = end
    except (OSError, QuarantineError) as e:
        raise RepairStopped(f"{describe(e)}: stopped at step {k + 1} of {len(steps)}. "
                            f"{_way_forward(session, finish, undo)}") from e


def _group_end(session: Session, steps: Sequence[Step], k: int) -> int:
    """Where the group of steps of one grouped type starting at k ends: at GROUP_STEPS steps or about
    GROUP_BYTES copied, whichever comes first."""
    kind, end, copied = type(steps[k]), k, 0
    while end < len(steps) and type(steps[end]) is kind and end - k < GROUP_STEPS and copied < GROUP_BYTES:
        copied += steps[end].size_hint(session)
        end += 1
    return end


def restore_command(run_dir: Path) -> str:
    return shlex.join(["logtool", "restore", str(run_dir)])


def _interrupted(session: Session, k: int, n: int, finish: str, undo: str | None) -> RepairStopped:
    sig = session.signalled or signal.SIGINT
    name = signal.Signals(sig).name
    return RepairStopped(f"interrupted ({name}) after step {k} of {n}. {_way_forward(session, finish, undo)}",
                         exit_code=128 + sig if sig == signal.SIGTERM else 8)


def _refuse_if_signalled(session: Session) -> None:
    if session.signalled is not None:
        name = signal.Signals(session.signalled).name
        raise RepairRefused(f"interrupted ({name}) before the first write; nothing was written")


def _way_forward(session: Session, finish: str, undo: str | None) -> str:
    """The run, and the commands that finish or undo it, each on a line of its own (to copy whole)."""
    if undo is None:
        return f"Finish the restore of {session.run.path} with:\n{finish}"
    return (f"Every byte it removed is kept in {session.run.path}. Finish the repair, or undo it, with one of:"
            f"\n{finish}\n{undo}")


def describe(e: BaseException) -> str:
    """An error as its line says it: the file it met, then what went wrong."""
    if isinstance(e, OSError):
        where = f"{e.filename}: " if e.filename else ""
        return f"{where}{e.strerror or e}"
    return str(e)


def unfinished_runs(quarantine: Path, paths: list[Path]) -> list[Path]:
    """Runs of this quarantine that stopped before their last step and touch any of these PATHs (partition
    dirs, or log dirs and the partition dirs in them). A run a restore began is never one of them."""
    wanted: set[str] = set()
    for p in paths:
        wanted.add(str(canonical(p)))
        if p.is_dir() and not p.is_symlink():
            real = p.resolve()
            wanted.add(str(real))
            wanted |= {str(real / c.name) for c in real.iterdir() if c.is_dir()}
    found: list[Path] = []
    if not quarantine.is_dir():
        return found
    for run_dir in sorted(quarantine.iterdir()):
        if not (run_dir / JOURNAL).is_file() or (run_dir / RESTORE_JOURNAL).exists() or \
                (run_dir / "restored").exists():
            continue
        try:
            journal = Journal.load(run_dir / JOURNAL)
            dirs = {s["dir"] for s in journal.header["steps"]}
        except (OSError, ValueError, KeyError, TypeError, IndexError):
            continue
        if journal.done < len(journal.header["steps"]) and wanted & dirs:
            found.append(run_dir)
    return found


def resume(run_dir: Path) -> Applied | None:
    """Finish an interrupted run from its journal, under the same locks, after checking that its directories
    are still the ones it began in. None: by the time the locks were held, the run had been finished (by
    the repair that was still running when the run was found) or a restore had begun."""
    try:
        journal = Journal.load(run_dir / JOURNAL)
        steps = [from_json(s) for s in journal.header["steps"]]
        dirs = journal.header["dirs"]
    except (OSError, ValueError, KeyError, TypeError, IndexError) as e:
        raise QuarantineError(f"{run_dir / JOURNAL}: cannot be read ({describe(e)})") from None
    log_dirs = [Path(d) for d in sorted({log_dir_of(s) for s in steps})]
    command = str(journal.header.get("command", "logtool truncate --apply"))
    with Session(log_dirs, lambda: load(run_dir)) as session:
        journal = Journal.load(run_dir / JOURNAL)  # again, under the locks
        if journal.done >= len(steps) or (run_dir / RESTORE_JOURNAL).exists():
            return None
        moved = [c for d, (dev, ino) in dirs.items() for c in Seen(Path(d), dev, ino, {}, frozenset()).changes()]
        if moved:  # its directories, as it began in them (their files are the steps' to judge)
            raise StalePlan(f"{moved[0]}: the interrupted repair {run_dir} cannot go on. Undo it with:\n"
                            f"{restore_command(run_dir)}")
        try:
            session.sweep_temporaries({(Path(s.dir), s.root) for s in steps})
        except OSError as e:
            raise RepairStopped(f"{describe(e)}. {_way_forward(session, command, restore_command(run_dir))}") from e
        execute(session, journal, steps, finish=command, undo=restore_command(run_dir))
    return Applied(run_dir, len(steps), True)
