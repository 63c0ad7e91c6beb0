"""Repairs racing other writers, and what a repair must never write through: items 6-11 of the repair
engine's contract (issue 26), end to end through the installed command.

What is specified here:

* stale plans (6): a `truncate --apply` (or `index rebuild --apply`) stopped once its plan is made (the
  LOGTOOL_TEST_STOP_PLANNED hook: before preflight and the locks), whose partition then changes (a segment
  cut short, a later segment removed, the whole partition dir swapped for another copy, a complete second
  repair, or for index rebuild a truncate that removes the segments whose indexes it planned) is refused when
  let go: exit 8, one `logtool: ` line saying what "changed", nothing written (the partition is as the change
  left it, no new run under the quarantine). Two `truncate --apply` of one partition started together: one
  writes (exit 1), the other exits 8 or 0, and the result is one uninterrupted repair;
* hard links (7): a file of the log dir with a second name outside it is never written through, by the
  repair nor by `restore`;
* names (8): a topic of 249 characters repairs and restores, and no name under the quarantine passes 255 bytes;
* tampered runs (9): a manifest naming a place outside its partition dir (`../../victim.txt`, an absolute
  path, a name with `/`, a partition `../..`, a relative or another log dir) or a stored file replaced by a
  symlink: `restore` exits 8 with one line and writes nothing anywhere;
* `.lock` (10): created when missing, never removed, never replaced;
* a symlinked log dir (11) is accepted by truncate, index rebuild and restore.

Every case is a copy (under tmp_path) of a shared Kafka-written fixture laid out as `<root>/logs/<partition
dir>` with its quarantine at `<root>/q`, as in test_truncate, whose helpers these tests use.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
from pathlib import Path

import pytest
from conftest import LOGTOOL, kafka_case
from support.repairs import (
    EXIT_CLEAN,
    EXIT_OPERATIONAL,
    EXIT_REPAIRED,
    FIRST,
    FIRST_FROM,
    STOP_AT,
    STOP_SIGNAL,
    apply,
    differs,
    fresh,
    logtool,
    make_writable,
    parallel,
    runs,
    seg_name,
    sha,
    the_run,
    tree,
    wait_stopped,
)

PLANNED = "LOGTOOL_TEST_STOP_PLANNED"
TORN = "corrupt-torn-tail"  # cuts 00000000000000000457.log, rewrites its .timeindex, removes the 481 snapshot
INDEXES = "corrupt-index-wrong-positions"  # index rebuild rewrites 00000000000000000000.index; nothing to truncate
PAIRS = 50
NAME_MAX = 255


# --------------------------------------------------------------------------------------------- helpers

def start(*args, env: dict | None = None) -> subprocess.Popen:
    """A logtool command running in the background (its stderr kept), without the tests' stop hooks unless
    `env` sets them."""
    environ = {k: v for k, v in os.environ.items() if k not in (STOP_AT, STOP_SIGNAL, PLANNED)}
    environ.update(env or {})
    return subprocess.Popen([str(LOGTOOL), *map(str, args)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True, env=environ)


@pytest.fixture
def planned():
    """Start a logtool command that stops itself (SIGSTOP) once its plan is made; returns it stopped. Any
    process a failing test leaves stopped is killed at teardown."""
    started: list[subprocess.Popen] = []

    def begin(*args) -> subprocess.Popen:
        proc = start(*args, env={PLANNED: "1"})
        started.append(proc)
        if not wait_stopped(proc):
            _, err = proc.communicate(timeout=60)
            pytest.fail(f"`logtool {' '.join(map(str, args))}` ended with {proc.returncode} instead of stopping "
                        f"after planning ({PLANNED}=1): {err.strip()[-800:]}")
        return proc

    yield begin
    for proc in started:
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=60)


def let_go(proc: subprocess.Popen) -> subprocess.CompletedProcess:
    """SIGCONT a stopped command and wait for it."""
    os.kill(proc.pid, signal.SIGCONT)
    _, err = proc.communicate(timeout=120)
    return subprocess.CompletedProcess(proc.args, proc.returncode, "", err)


def state(top: Path, leave_out: tuple[str, ...] = ()) -> dict[str, object]:
    """Everything under `top`, not following symlinks: relative path -> (sha256, uid, gid, mode, mtime) of a
    file, "-> target" of a symlink, "dir" of a directory. `leave_out`: relative paths not looked at (a log
    dir's .lock, which a refused command may create: contract 10)."""
    out: dict[str, object] = {}
    if not top.exists():
        return out
    for d, dirs, files in os.walk(top):
        for n in sorted(dirs + files):
            p = Path(d) / n
            rel = str(p.relative_to(top))
            if rel in leave_out:
                continue
            st = p.lstat()
            if p.is_symlink():
                out[rel] = "-> " + os.readlink(p)
            elif p.is_dir():
                out[rel] = "dir"
            else:
                out[rel] = (sha(p), st.st_uid, st.st_gid, st.st_mode, st.st_mtime_ns)
    return out


def changed_paths(a: dict, b: dict) -> list[str]:
    return sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))


def one_refusal_line(r: subprocess.CompletedProcess) -> str:
    """The single `logtool: ` line a refusal prints (contract 1); fails with the whole stderr otherwise."""
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("logtool: "), f"not one `logtool: ` line: {r.stderr!r}"
    return lines[0]


def segment_files(pdir: Path, base: int) -> list[Path]:
    return sorted(p for p in pdir.iterdir() if p.name.startswith(seg_name(base, ".")))


def orphan_indexes(pdir: Path) -> list[str]:
    """Index files of a segment whose .log is not there."""
    return sorted(p.name for p in pdir.iterdir()
                  if p.suffix in (".index", ".timeindex", ".txnindex") and not p.with_suffix(".log").exists())


# --------------------------------------------------------------------------------------------- 6. stale plans

def shorten_cut_segment(root: Path, pdir: Path) -> list[str]:
    """The segment the plan cuts loses its last 3 bytes (it stays longer than the planned cut)."""
    log = pdir / seg_name(0, ".log")
    os.truncate(log, log.stat().st_size - 3)
    return [log.name]


def remove_later_segment(root: Path, pdir: Path) -> list[str]:
    """A later segment, one the plan removes, goes (every file of it)."""
    gone = segment_files(pdir, 184)
    assert seg_name(184, ".log") in [p.name for p in gone]
    for p in gone:
        p.unlink()
    return [p.name for p in gone]


def swap_partition_dir(root: Path, pdir: Path) -> list[str]:
    """The partition dir is renamed aside and a clean copy of another case (the undamaged log the first
    case was made from) put under its name."""
    aside = root / "aside"
    aside.mkdir()
    pdir.rename(aside / pdir.name)
    shutil.copytree(kafka_case(FIRST_FROM), pdir)
    make_writable(pdir)
    return []


def second_repair(root: Path, pdir: Path) -> list[str]:
    """A complete second `truncate --apply` of the same partition, into the same quarantine."""
    r = apply(pdir, root / "q")
    assert r.returncode == EXIT_REPAIRED, f"the second repair: {r.stderr}"
    return []


STALE = {"a segment cut short": shorten_cut_segment, "a later segment removed": remove_later_segment,
         "the partition dir swapped": swap_partition_dir, "a second repair ran": second_repair}


@pytest.mark.parametrize("change", list(STALE))
def test_a_truncate_whose_plan_went_stale_before_the_locks_is_refused(change, planned, spec, reference, tmp_path):
    """first-segment-bitflip (the plan cuts the first segment and removes the five later ones). The repair
    is stopped once its plan is made, the partition changes, then the repair is let go: exit 8, one line
    saying what changed, and nothing written: the partition (and a dir renamed aside) is exactly as the
    change left it, and the quarantine holds no new run."""
    s = spec(FIRST)
    root = tmp_path
    pdir, q = fresh(s, root), root / "q"
    proc = planned("truncate", "--apply", "--quarantine", q, pdir)
    names = STALE[change](root, pdir)
    left = state(root / "logs", leave_out=(".lock",)), state(root / "aside")
    runs_left = runs(q)

    r = let_go(proc)

    assert r.returncode == EXIT_OPERATIONAL, f"a stale plan was not refused ({r.returncode}): {r.stderr}"
    line = one_refusal_line(r)
    assert "changed" in line, line
    assert any(n in line for n in [pdir.name, *names]), f"the line names neither the partition nor the file: {line}"
    now = state(root / "logs", leave_out=(".lock",)), state(root / "aside")
    assert now == left, f"written after the change: {changed_paths(left[0], now[0]) + changed_paths(left[1], now[1])}"
    assert runs(q) == runs_left, f"a run was left: {sorted(set(p.name for p in runs(q)) - {p.name for p in runs_left})}"
    if change == "a second repair ran":
        assert tree(pdir) == reference(FIRST), "the second repair's result is the one left"


def test_an_index_rebuild_whose_segments_a_truncate_removed_meanwhile_is_refused(planned, spec, tmp_path):
    """first-segment-bitflip without 00000000000000000184.index and 00000000000000000267.timeindex: `index
    rebuild --apply` plans to create them (and rewrite the first segment's), stops after planning, and a
    `truncate --apply` runs to the end meanwhile, removing those segments. Let go, the index rebuild is
    refused (exit 8, one line saying what changed) and writes nothing: no orphan index for a segment the
    truncate removed, the partition exactly as the truncate left it, no run of its own."""
    s = spec(FIRST)
    pdir, q = fresh(s, tmp_path), tmp_path / "q"
    missing = [seg_name(184, ".index"), seg_name(267, ".timeindex")]
    for n in missing:
        (pdir / n).unlink()
    proc = planned("index", "rebuild", "--apply", "--quarantine", q, pdir)
    t = apply(pdir, q)
    assert t.returncode == EXIT_REPAIRED, t.stderr
    assert not (pdir / seg_name(184, ".log")).exists() and not (pdir / seg_name(267, ".log")).exists()
    left, runs_left = state(tmp_path / "logs", leave_out=(".lock",)), runs(q)

    r = let_go(proc)

    assert orphan_indexes(pdir) == [], "the stale index rebuild wrote indexes of segments the truncate removed"
    assert r.returncode == EXIT_OPERATIONAL, f"a stale plan was not refused ({r.returncode}): {r.stderr}"
    line = one_refusal_line(r)
    assert "changed" in line, line
    assert any(n in line for n in [pdir.name, *missing]), f"the line names neither the partition nor the file: {line}"
    now = state(tmp_path / "logs", leave_out=(".lock",))
    assert now == left, f"written after the truncate: {changed_paths(left, now)}"
    assert runs(q) == runs_left


@pytest.mark.slow
def test_two_repairs_of_one_partition_started_together(spec, reference, tmp_path):
    """50 times, on fresh copies of first-segment-bitflip (several at once): two `truncate --apply` of the
    same partition into the same quarantine, started together. Exactly one writes (exit 1); the other is
    refused (exit 8, one `logtool: ` line: the lock is held, or its plan changed) or finds nothing left to do
    (exit 0). The partition ends exactly as one uninterrupted repair leaves it, with one run."""
    s, ref = spec(FIRST), reference(FIRST)

    def pair(i: int) -> list[str]:
        root = tmp_path / f"pair{i}"
        pdir, q = fresh(s, root), root / "q"
        procs = [start("truncate", "--apply", "--quarantine", q, pdir) for _ in range(2)]
        try:
            done = [(p.communicate(timeout=120)[1], p.returncode) for p in procs]
        except subprocess.TimeoutExpired:
            for p in procs:
                p.kill()
                p.communicate()
            return [f"#{i}: still running after 120 s"]
        codes = sorted(code for _, code in done)
        problems = []
        if codes not in ([EXIT_CLEAN, EXIT_REPAIRED], [EXIT_REPAIRED, EXIT_OPERATIONAL]):
            problems.append(f"#{i}: exits {[c for _, c in done]}: " + " | ".join(e.strip() for e, _ in done))
        for err, code in done:
            lines = err.strip().splitlines()
            if code == EXIT_OPERATIONAL and not (len(lines) == 1 and lines[0].startswith("logtool: ")):
                problems.append(f"#{i}: the refused one did not print one `logtool: ` line: {err!r}")
        now = tree(pdir)
        if now != ref:
            problems.append(f"#{i}: differs from one uninterrupted repair in {differs(now, ref)}")
        if len(runs(q)) != 1:
            problems.append(f"#{i}: {len(runs(q))} runs in the quarantine")
        if not problems:
            shutil.rmtree(root)
        return problems

    problems = [p for found in parallel(pair, range(PAIRS)) for p in found]
    assert not problems, f"{len(problems)} problem(s) in {PAIRS} pairs:\n" + "\n".join(problems)


# --------------------------------------------------------------------------------------------- 7. hard links

def identity(p: Path) -> tuple:
    """What must not change about a file outside the log dir: its inode, bytes, mode and mtime."""
    st = p.stat()
    return st.st_dev, st.st_ino, sha(p), st.st_mode, st.st_mtime_ns


def names_of(inode: tuple[int, int], top: Path) -> list[str]:
    """Every name under `top` of one inode (dev, ino)."""
    found = []
    for d, _, files in os.walk(top):
        for n in files:
            st = (Path(d) / n).lstat()
            if (st.st_dev, st.st_ino) == inode:
                found.append(str((Path(d) / n).relative_to(top)))
    return sorted(found)


@pytest.mark.slow
def test_hard_linked_files_are_never_written_through(spec, reference, tmp_path):
    """corrupt-torn-tail: the .log the repair cuts and the .timeindex it rewrites each have a second name
    outside the log dir (os.link). After `truncate --apply` (exit 1) the log dir is exactly the reference and
    the outside files are byte for byte, inode, mode and mtime what they were: the repair broke the links
    rather than writing through them (no name in the log dir shares their inode; their link count is the
    names they have left). `restore` then gives back the originals, and the outside files are still as
    they were."""
    s, ref = spec(TORN), reference(TORN)
    pdir, q = fresh(s, tmp_path), tmp_path / "q"
    outside = tmp_path / "outside"
    outside.mkdir()
    linked = [seg_name(457, ".log"), seg_name(457, ".timeindex")]
    for n in linked:
        assert ref[n] != s.originals[n], f"{n}: the repair changes it"
        os.link(pdir / n, outside / n)
        assert (outside / n).stat().st_nlink == 2
    before = {n: identity(outside / n) for n in linked}
    preview = logtool("truncate", "--format", "json", pdir)  # the plan says the cut is not made in place
    notes = json.loads(preview.stdout)["partitions"][0]["notes"]
    assert [n for n in notes if linked[0] in n and "hard links" in n], notes

    r = apply(pdir, q)
    assert r.returncode == EXIT_REPAIRED, r.stderr
    assert {n: identity(outside / n) for n in linked} == before, "a file outside the log dir was written through"
    assert tree(pdir) == ref, f"differs from the reference in {differs(tree(pdir), ref)}"
    for n in linked:
        st = (outside / n).stat()
        names = names_of((st.st_dev, st.st_ino), tmp_path)
        assert not [m for m in names if m.startswith("logs/")], f"{n}: still linked from the log dir: {names}"
        assert st.st_nlink == len(names), f"{n}: link count {st.st_nlink}, names {names}"

    back = logtool("restore", the_run(q))
    assert back.returncode == EXIT_CLEAN, back.stderr
    assert tree(pdir) == s.originals, f"restore leaves {differs(tree(pdir), s.originals)}"
    assert {n: identity(outside / n) for n in linked} == before, "restore wrote through a link outside the log dir"


# --------------------------------------------------------------------------------------------- 8. names

def test_a_topic_of_249_characters_repairs_and_restores(spec, reference, tmp_path):
    """The longest topic Kafka allows: the partition dir `"t" * 249 + "-0"` (251 bytes) holding
    corrupt-torn-tail's files. `truncate --apply` exits 1 and leaves what it leaves for the same files under
    a short name; every name under the quarantine is at most 255 bytes; `restore` gives back the originals."""
    s, ref = spec(TORN), reference(TORN)
    pdir, q = tmp_path / "logs" / ("t" * 249 + "-0"), tmp_path / "q"
    shutil.copytree(s.source, pdir)
    make_writable(pdir)

    r = apply(pdir, q)
    assert r.returncode == EXIT_REPAIRED, r.stderr
    assert tree(pdir) == ref, f"differs from the reference in {differs(tree(pdir), ref)}"
    run = the_run(q)
    names = [n for _, dirs, files in os.walk(q) for n in dirs + files]
    assert len([n for n in names if n != run.name]) >= 3, f"the run keeps nothing: {names}"
    too_long = [n for n in names if len(n.encode()) > NAME_MAX]
    assert not too_long, f"names of more than {NAME_MAX} bytes: {too_long}"

    back = logtool("restore", run)
    assert back.returncode == EXIT_CLEAN, back.stderr
    assert tree(pdir) == s.originals, f"restore leaves {differs(tree(pdir), s.originals)}"


# --------------------------------------------------------------------------------------------- 9. tampered runs

TARGET = seg_name(457, ".timeindex")  # the run's "replaced" entry: restore would write the original back there


def rewrite_entry(run: Path, of: str, **changes) -> None:
    """Edit the manifest entry of the file named `of` in RUN/manifest.jsonl (JSON Lines: a header object, then the
    entries, each either an object of its own or under "entry"), in place."""
    path = run / "manifest.jsonl"
    assert path.is_file(), f"no {path} (contract 9): {sorted(p.name for p in run.iterdir())}"
    lines = path.read_text().splitlines()
    records = [json.loads(line) for line in lines]
    hits = 0
    for i, rec in enumerate(records[1:], 1):
        entry = rec.get("entry", rec)
        if isinstance(entry, dict) and entry.get("name") == of:
            entry.update(changes)
            lines[i] = json.dumps(rec)
            hits += 1
    assert hits, f"no entry for {of} in {path}"
    path.write_text("".join(line + "\n" for line in lines))


def victim_like_the_target(path: Path, pdir: Path) -> None:
    """A file outside the partition dir holding exactly what the repair left in TARGET: to a restore that
    follows the edited entry, it looks like the file it is to put back."""
    path.write_bytes((pdir / TARGET).read_bytes())


def name_dotdot(root, pdir, run):
    victim_like_the_target(root / "victim.txt", pdir)
    rewrite_entry(run, TARGET, name="../../victim.txt")


def name_absolute(root, pdir, run):
    victim_like_the_target(root / "victim.txt", pdir)
    rewrite_entry(run, TARGET, name=str(root / "victim.txt"))


def name_with_slash(root, pdir, run):  # it even names the right file
    rewrite_entry(run, TARGET, name=f"../{pdir.name}/{TARGET}")


def partition_dotdot(root, pdir, run):
    victim_like_the_target(root.parent / TARGET, pdir)  # <log dir>/../../<name>
    rewrite_entry(run, TARGET, partition="../..")


def log_dir_relative(root, pdir, run):  # "logs", from the directory restore runs in, is the log dir itself
    rewrite_entry(run, TARGET, log_dir="logs")


def log_dir_another(root, pdir, run):
    """Another log dir (with its .lock, as a broker's) holding a copy of the repaired partition."""
    other = root / "other"
    shutil.copytree(pdir, other / pdir.name)
    (other / ".lock").touch()
    rewrite_entry(run, TARGET, log_dir=str(other))


def stored_symlink(root, pdir, run):
    """The stored copy of TARGET replaced by a symlink to an outside file holding the same bytes."""
    from logtool.recovery import quarantine

    [entry] = [e for e in quarantine.load(run).entries if e.name == TARGET]
    stored = run / entry.stored
    outside = root / "outside.bin"
    outside.write_bytes(stored.read_bytes())
    stored.unlink()
    stored.symlink_to(outside)


TAMPERED = {"name ../../victim.txt": name_dotdot, "name an absolute path": name_absolute,
            "name with /": name_with_slash, "partition ../..": partition_dotdot,
            "log_dir relative": log_dir_relative, "log_dir another dir": log_dir_another,
            "stored file a symlink": stored_symlink}


@pytest.mark.slow
def test_restore_of_a_tampered_run_writes_nothing(spec, tmp_path):
    """corrupt-torn-tail, repaired (exit 1); then the run is edited in one of the ways above (each on its own
    copy, several at once). `restore RUN` (run from the copy's root) exits 8 with one `logtool: ` line, and
    writes nothing anywhere: the log dir, the run, the victim files and the other log dir are as they were
    (bytes, owner, mode, mtime)."""
    s = spec(TORN)

    def setup(label: str) -> tuple[Path, Path]:
        root = tmp_path / label.replace("/", "slash").replace(" ", "-").replace(".", "dot") / "r"
        pdir = fresh(s, root)
        r = apply(pdir, root / "q")
        assert r.returncode == EXIT_REPAIRED, r.stderr
        return root, pdir

    made = dict(zip(TAMPERED, parallel(setup, list(TAMPERED))))

    def tamper_and_restore(label: str) -> list[str]:
        root, pdir = made[label]
        run = the_run(root / "q")
        TAMPERED[label](root, pdir, run)
        before = state(root.parent)
        r = logtool("restore", run, cwd=root)
        now = state(root.parent)
        problems = []
        lines = r.stderr.strip().splitlines()
        if r.returncode != EXIT_OPERATIONAL:
            problems.append(f"{label}: restore ended with {r.returncode}: {r.stderr.strip()}")
        elif not (len(lines) == 1 and lines[0].startswith("logtool: ")):
            problems.append(f"{label}: not one `logtool: ` line: {r.stderr!r}")
        if now != before:
            problems.append(f"{label}: written: {changed_paths(before, now)}")
        return problems

    problems = [p for found in parallel(tamper_and_restore, list(TAMPERED)) for p in found]
    assert not problems, "\n".join(problems)


# --------------------------------------------------------------------------------------------- 10. .lock

def lock_inode(log_dir: Path) -> tuple[int, int] | None:
    lock = log_dir / ".lock"
    if not lock.exists():
        return None
    st = lock.lstat()
    assert lock.is_file() and not lock.is_symlink(), f"{lock} is not a regular file"
    return st.st_dev, st.st_ino


@pytest.mark.slow
def test_lock_file_is_created_when_missing_and_never_removed_or_replaced(spec, tmp_path):
    """In a log dir without `.lock`, `truncate --apply` (corrupt-torn-tail) and `index rebuild --apply`
    (corrupt-index-wrong-positions) each leave a `.lock` there, and `restore` leaves it too, the same file.
    In a log dir that has one (the broker's, as Kafka leaves it), truncate and restore keep that very file
    (same inode)."""

    def one(how: str) -> list[str]:
        root = tmp_path / how.replace(" ", "-")
        case = INDEXES if how.startswith("index") else TORN
        pdir, q = fresh(spec(case), root), root / "q"
        log_dir = pdir.parent
        if how.endswith("with a .lock"):
            (log_dir / ".lock").touch()
        before = lock_inode(log_dir)
        if how.startswith("index"):
            r = logtool("index", "rebuild", "--apply", "--quarantine", q, pdir)
        else:
            r = apply(pdir, q)
        if r.returncode != EXIT_REPAIRED:
            return [f"{how}: exit {r.returncode}: {r.stderr.strip()}"]
        problems = []
        after = lock_inode(log_dir)
        if after is None:
            problems.append(f"{how}: no .lock after the repair")
        elif before is not None and after != before:
            problems.append(f"{how}: the repair replaced .lock")
        back = logtool("restore", the_run(q))
        if back.returncode != EXIT_CLEAN:
            problems.append(f"{how}: restore exit {back.returncode}: {back.stderr.strip()}")
        restored = lock_inode(log_dir)
        if restored is None:
            problems.append(f"{how}: no .lock after restore")
        elif after is not None and restored != after:
            problems.append(f"{how}: restore replaced .lock")
        return problems

    hows = ["truncate without a .lock", "index rebuild without a .lock", "truncate with a .lock"]
    problems = [p for found in parallel(one, hows) for p in found]
    assert not problems, "\n".join(problems)


# --------------------------------------------------------------------------------------------- 11. symlinked log dir

@pytest.mark.slow
def test_a_symlinked_log_dir_is_accepted(spec, reference, tmp_path):
    """`<root>/link -> <root>/logs`. `truncate --apply --quarantine Q <root>/link/<partition>`, and with the
    log dir PATH `<root>/link`, on corrupt-torn-tail: exit 1 and the partition is exactly the reference;
    `index rebuild --apply` through `<root>/link/<partition>` on corrupt-index-wrong-positions: exit 1 and the
    partition is what the same command leaves in a log dir named directly. `restore RUN` then gives back the
    originals in each."""
    torn, ref = spec(TORN), reference(TORN)
    indexes = spec(INDEXES)

    def one(how: str) -> tuple[dict | None, list[str]]:
        root = tmp_path / how.replace(" ", "-")
        s = indexes if how.startswith("index") else torn
        pdir, q = fresh(s, root), root / "q"
        link = root / "link"  # made for the plain run too, which names the log dir directly
        link.symlink_to(root / "logs", target_is_directory=True)
        path = {"truncate partition": link / s.partition, "truncate log dir": link,
                "index rebuild": link / s.partition, "index rebuild plain": pdir}[how]
        if how.startswith("index"):
            r = logtool("index", "rebuild", "--apply", "--quarantine", q, path)
        else:
            r = apply(path, q)
        if r.returncode != EXIT_REPAIRED:
            return None, [f"{how} ({path}): exit {r.returncode}: {r.stderr.strip()}"]
        repaired = tree(pdir)
        problems = []
        if not how.startswith("index") and repaired != ref:
            problems.append(f"{how}: differs from the reference in {differs(repaired, ref)}")
        if os.readlink(link) != str(root / "logs") or set(os.listdir(root / "logs")) - {s.partition, ".lock"}:
            problems.append(f"{how}: the link or the log dir changed: {sorted(os.listdir(root / 'logs'))}")
        back = logtool("restore", the_run(q))
        if back.returncode != EXIT_CLEAN or tree(pdir) != s.originals:
            problems.append(f"{how}: restore exit {back.returncode}, leaves {differs(tree(pdir), s.originals)} "
                            f"{back.stderr.strip()}")
        return repaired, problems

    hows = ["truncate partition", "truncate log dir", "index rebuild", "index rebuild plain"]
    done = dict(zip(hows, parallel(one, hows)))
    problems = [p for _, found in done.values() for p in found]
    through, plain = done["index rebuild"][0], done["index rebuild plain"][0]
    if through is not None and plain is not None and through != plain:
        problems.append(f"index rebuild through the link differs from the plain one in {differs(through, plain)}")
    if plain is not None and plain == indexes.originals:
        problems.append("index rebuild rewrote nothing")
    assert not problems, "\n".join(problems)


# --------------------------------------------------------------------------------------------- the closed set

def test_every_fix_and_every_action_has_its_steps():
    """The plan's actions are a closed set, each carried out by its own steps (a kind without them is a
    KeyError here, never an executor's fallback), and every fix a finding names is answered by actions."""
    from logtool.findings import Fix
    from logtool.recovery.steps import STEP_TYPES
    from logtool.recovery.truncate import FIX_ACTIONS, STEPS_OF
    from logtool.recovery.truncate_plan import ActionKind

    assert set(STEPS_OF) == set(ActionKind)
    assert set(FIX_ACTIONS) == set(Fix) and all(FIX_ACTIONS.values())
    assert set(STEP_TYPES) == {"cut", "remove", "write", "split", "move dir", "put back"}
