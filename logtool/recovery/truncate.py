"""Carrying out a truncate plan, crash-safely.

The plan becomes a list of file steps (cut a file keeping its tail, remove a file, replace a file with
staged bytes), written with the staged bytes into the run's `journal.json` before the first change. The
journal names the next step and is fsynced after each one. Every step can be run again after a crash at
any point inside it and ends in the same state, so `truncate --apply` run again finds an unfinished run of
the same partitions and finishes it from its journal, and `restore` of an interrupted run returns the
original bytes.
"""
from __future__ import annotations

import base64
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from logtool.recovery.quarantine import RESTORED, Run, load, stored_chunks, write_atomically
from logtool.recovery.errors import RepairRefused
from logtool.recovery.session import Session, log_dir_of, new_session, sweep_temporaries
from logtool.recovery.truncate_plan import RepairPlan

JOURNAL = "journal.json"
LABEL = "truncate"


@dataclass(slots=True)
class Applied:
    run: Path
    steps: int
    resumed: bool


def steps_of(plan: RepairPlan) -> list[dict]:
    """The file steps that carry out the plan, in order: cut first, then removals, then rewritten files."""
    steps = []
    for p in plan.pending:
        where = str(p.partition.absolute())  # the journal may be resumed from another working directory
        for a in p.changes:
            if a.action == "truncate":
                steps.append({"op": "cut", "dir": where, "name": a.files[0], "size": a.to_bytes})
            elif a.action == "excise":
                continue  # the excised bytes are part of the cut tail the truncate step keeps
            elif a.action == "split off segment":
                start, end = a.byte_range
                steps.append({"op": "extract", "dir": where, "name": a.files[0], "source": a.files[1],
                              "start": start, "end": end})
            elif a.action in ("quarantine segment", "remove producer snapshot", "handle leftover"):
                steps += [{"op": "remove", "dir": where, "name": n} for n in a.files]
            else:  # rebuilt indexes, a rewritten leader-epoch-checkpoint
                steps += [{"op": "replace", "dir": where, "name": n,
                           "data": base64.b64encode(data).decode()} for n, data in a.new_contents.items()]
    for log_dir, a in plan.log_dir_actions:  # the log dirs' checkpoints, once every partition is repaired
        steps += [{"op": "replace", "dir": str(log_dir.absolute()), "root": True, "name": n,
                   "data": base64.b64encode(data).decode()} for n, data in a.new_contents.items()]
    return steps


def apply_plan(plan: RepairPlan, quarantine: Path, command: str) -> Applied:
    """Carry out `plan` in a new run. Raises RepairRefused before the first write."""
    steps = steps_of(plan)
    with new_session([p.partition for p in plan.pending], quarantine, LABEL, command) as session:
        try:
            _check_steps(session, steps)
        except RepairRefused:
            session.run.discard()  # nothing was written: leave no run to resume
            raise
        write_atomically(session.run.path / JOURNAL, json.dumps({"steps": steps, "next": 0}))
        session.step_done()
        _carry_out(session, steps, 0)
        return Applied(session.run.path, len(steps), False)


def _check_steps(session: Session, steps: list[dict]) -> None:
    """Every directory and file the steps touch, looked at before the first write: a symlink or a file that
    is not regular anywhere refuses the whole repair, not the step that meets it."""
    for step in steps:
        pdir = _dir_of(session, step)
        for name in (step["name"], step.get("source")):
            if name is not None:
                pdir.meta(name)


def _dir_of(session: Session, step: dict):
    directory = Path(step["dir"])
    return session.log_dir_root(directory) if step.get("root") else session.partition_dir(directory)


def unfinished_runs(quarantine: Path, partitions: list[Path]) -> list[Path]:
    """Runs of this quarantine that stopped before their last step and touch any of these partitions."""
    wanted = {str(p.absolute()) for p in partitions}
    found = []
    if not quarantine.is_dir():
        return found
    for run_dir in sorted(quarantine.iterdir()):
        journal = run_dir / JOURNAL
        if not run_dir.name.endswith(LABEL) or not journal.is_file() or (run_dir / RESTORED).exists():
            continue
        try:
            doc = json.loads(journal.read_text())
        except (OSError, ValueError):
            continue
        if doc.get("next", 0) < len(doc.get("steps", [])) and wanted & {s["dir"] for s in doc["steps"]}:
            found.append(run_dir)
    return found


def resume(run_dir: Path) -> Applied:
    """Finish an interrupted run from its journal, under the same locks."""
    doc = json.loads((run_dir / JOURNAL).read_text())
    steps = doc["steps"]
    log_dirs = sorted({Path(s["dir"]).absolute() if s.get("root") else log_dir_of(Path(s["dir"])) for s in steps})
    with Session(log_dirs, lambda: load(run_dir)) as session:
        sweep_temporaries(session, {(Path(s["dir"]), bool(s.get("root"))) for s in steps})
        _carry_out(session, steps, doc["next"])
    return Applied(run_dir, len(steps), True)


def _carry_out(session: Session, steps: list[dict], start: int) -> None:
    for k in range(start, len(steps)):
        _step(session, steps[k])
        write_atomically(session.run.path / JOURNAL, json.dumps({"steps": steps, "next": k + 1}))
        session.step_done()


def _step(session: Session, step: dict) -> None:
    """One step, safe to run again from any point it may have stopped at."""
    run: Run = session.run
    pdir, name = _dir_of(session, step), step["name"]
    entry = run.find(pdir, name)
    if step["op"] == "cut":
        if entry is None:
            run.keep_tail(pdir, name, step["size"])
            session.step_done()
        meta = pdir.meta(name)
        if meta is not None and meta.size > step["size"]:
            pdir.truncate(name, step["size"])
    elif step["op"] == "extract":
        _extract(session, step, pdir, entry)
    elif step["op"] == "remove":
        if entry is None and pdir.meta(name) is not None:
            run.keep_whole(pdir, name, "removed")
            session.step_done()
        if pdir.meta(name) is not None:
            pdir.unlink(name)
    else:
        data = base64.b64decode(step["data"])
        digest = hashlib.sha256(data).hexdigest()
        old = pdir.meta(name)
        if entry is None:
            entry = run.keep_whole(pdir, name, "replaced") if old else run.record_created(pdir, name)
            session.step_done()
        if entry.after_sha256 != digest:
            run.set_after(entry, digest)  # before the rename: restore must know the new bytes the moment they land
        if old is None or pdir.sha256(name) != digest:
            like = old if old is not None else pdir.meta_for_new(Path(name).stem + ".log")
            pdir.replace(name, data, like)


def _extract(session: Session, step: dict, pdir, entry) -> None:
    """Create a segment from a stretch of a file's cut tail, which the quarantine holds."""
    run, name = session.run, step["name"]
    source = run.find(pdir, step["source"])
    lo, hi = step["start"] - source.truncated_to, step["end"] - source.truncated_to
    digest = hashlib.sha256()
    for chunk in stored_chunks(run, source, lo, hi):
        digest.update(chunk)
    digest = digest.hexdigest()
    if entry is None:
        entry = run.record_created(pdir, name)
        session.step_done()
    if entry.after_sha256 != digest:
        run.set_after(entry, digest)
    if pdir.meta(name) is None or pdir.sha256(name) != digest:
        pdir.replace(name, stored_chunks(run, source, lo, hi), pdir.meta_for_new(step["source"]))
