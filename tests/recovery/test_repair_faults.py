"""Faults a repair meets: full filesystems, out of inodes, read-only, permissions, immutable files and
signals. Items 1-5 of the repair engine's contract (issue 26), end to end through the installed command.

What is specified here:

* preflight (1): the repair is refused before its first write when the quarantine's tmpfs holds half the
  bytes the repair moves there, when the log dir's filesystem has no room for the files the repair creates
  (`truncate --excise`'s new segment; `index rebuild`'s missing indexes), and when either filesystem is out
  of inodes. Refused means: exit 8, stderr ONE `logtool: ` line with "needs", "free" and the dir, every file
  of the log dir as it was (sha256, owner, group, mode, mtime), no run left under the quarantine, nothing
  outside changed. Given the room, the same command then makes the uninterrupted repair;
* a fault after the first write (2): `truncate --apply` stopped at its k-th durable step (the test hook
  LOGTOOL_TEST_STOP_AT=k, LOGTOOL_TEST_STOP_SIGNAL=STOP), for every k, meets a fault there and is let go:
  its quarantine's tmpfs filled up (ENOSPC), its log dir's tmpfs filled up (ENOSPC), its partition dir's
  tmpfs remounted read-only (EROFS), the partition dir and its unfinished files made mode 000 for a
  process without CAP_DAC_OVERRIDE (EACCES), or made immutable (`chattr +i`) on a loop-mounted ext4
  (EPERM). It exits 8 with a `logtool: ` line naming the run dir, `logtool restore RUN` and the command
  that finishes it, and no traceback or "internal error": for EROFS, EACCES and EPERM wherever the
  partition dir still had to change, for a full filesystem at least right after the first write (else it
  may complete, to the uninterrupted bytes). With the fault removed, the same command finishes the same run
  (no second run) to exactly the bytes of an uninterrupted run; and on a second, identical copy stopped the
  same way, `logtool restore RUN` gives back every file of the log dir with its sha256, owner, group, mode
  and mtime. Nothing outside the log dir and the quarantine changes (a sibling dir is hashed);
* signals (3): SIGINT / SIGTERM at every durable step of `truncate --apply` exit 8 / 143 with that line,
  then resume and restore as in 2. A signal that comes during the command's last step (the hook counts
  durable steps; one step of the command may make several) may let it complete instead; at the first
  step it must not;
* restore (5): a `restore` stopped by SIGKILL, SIGINT (exit 8) or SIGTERM (exit 143) at any of its steps is
  finished by `logtool restore RUN` again, without --force; once more, it says "already restored" and
  writes nothing. A `restore` meeting any of the faults of 2 exits 8 with a line naming the run and
  `logtool restore RUN`, and, the fault removed, `restore` again gives back the originals;
* `index rebuild --apply` of a partition with two .index files deleted and one corrupt, stopped by SIGKILL,
  SIGINT or SIGTERM at every durable step: the same command finishes the same run to the uninterrupted
  bytes, and restore gives back the originals.

Every case is a copy of a shared Kafka-written fixture laid out as in test_truncate, `<root>/logs/<partition
dir>` with its quarantine at `<root>/q` and a sibling dir `<root>/sibling`; the filesystems a case needs
(tmpfs, loop-mounted ext4) are mounted for that case and unmounted when it ends, failed or not. The tests
need root (mount, chattr, setpriv), as CI has; they are marked `crash`.
"""
from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
import signal
import stat
import struct
import subprocess
import tempfile
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from conftest import LOGTOOL
from support.repairs import (
    EXIT_CLEAN,
    EXIT_OPERATIONAL,
    EXIT_REPAIRED,
    FIRST,
    KILLED,
    STOP_AT,
    STOP_SIGNAL,
    WORKERS,
    Spec,
    deep_tree,
    differs,
    make_writable,
    parallel,
    runs,
    seg_name,
    sha,
    tree,
    wait_stopped,
)

pytestmark = [pytest.mark.crash, pytest.mark.root]

PLANNED = "LOGTOOL_TEST_STOP_PLANNED"
EXIT_TERM = 128 + signal.SIGTERM  # 143
EXITS = {"KILL": KILLED, "INT": EXIT_OPERATIONAL, "TERM": EXIT_TERM}
PAGE = os.sysconf("SC_PAGE_SIZE")  # a tmpfs block
ROLES = ("resume", "restore")  # what is done with a stopped copy; two identical copies are stopped each time
NO_DAC = ("setpriv", "--bounding-set", "-dac_override,-dac_read_search", "--")  # root, but file modes hold


# --------------------------------------------------------------------------------------------- the repairs

def break_indexes(pdir: Path) -> None:
    """The .index files of the first two segments deleted, and the first entry of the third segment's
    .index pointing 17 bytes past its batch."""
    for base in (0, 94):
        (pdir / seg_name(base, ".index")).unlink()
    path = pdir / seg_name(184, ".index")
    data = bytearray(path.read_bytes())
    rel, pos = struct.unpack_from(">ii", data, 0)
    struct.pack_into(">ii", data, 0, rel, pos + 17)
    path.write_bytes(bytes(data))


@dataclass(frozen=True)
class Job:
    """A repair: `logtool <words> --quarantine Q PDIR` on a copy of a case (damaged further by `damage`)."""

    label: str
    case: str
    words: tuple[str, ...]
    damage: Callable[[Path], None] | None = None

    def argv(self, q: Path, pdir: Path) -> list[str]:
        return [*self.words, "--quarantine", str(q), str(pdir)]

    @property
    def command(self) -> str:
        """What the stop line must show as the command that finishes the run."""
        return "logtool " + " ".join(self.words)


# corrupt-torn-tail: cuts 00000000000000000457.log, rewrites its .timeindex, removes the 481 snapshot
TORN = Job("truncate", "corrupt-torn-tail", ("truncate", "--apply"))
# the first segment cut in the middle, the five later segments dropped: 60-odd KB to the quarantine
DROPS = Job("truncate-first", FIRST, ("truncate", "--apply"))
# the batches after the flipped bit become a new segment
EXCISE = Job("excise", "corrupt-bitflip-last-segment", ("truncate", "--excise", "--apply"))
# creates two .index files and rewrites one
INDEX = Job("index-rebuild", "v2-none-mixed", ("index", "rebuild", "--apply"), break_indexes)


@dataclass(frozen=True)
class Uninterrupted:
    tree: dict[str, str]  # the partition dir after an uninterrupted run: name -> sha256
    created: dict[str, int]  # the files it made that were not there: name -> size


@pytest.fixture(scope="session")
def uninterrupted(spec, reference, tmp_path_factory):  # noqa: F811
    """Each job's partition dir after one uninterrupted run on a plain directory."""
    done: dict[str, Uninterrupted] = {}

    def get(job: Job) -> Uninterrupted:
        if job.label not in done:
            s = spec(job.case)
            c = prepare(job, s, tmp_path_factory.mktemp(job.label))
            before = tree(c.pdir)
            r = run(*job.argv(c.q, c.pdir))
            assert r.returncode == EXIT_REPAIRED, f"an uninterrupted {job.label} ended with {r.returncode}: {r.stderr}"
            after = tree(c.pdir)
            if job.words == TORN.words:
                assert after == reference(job.case), "the same repair as test_truncate's reference"
            done[job.label] = Uninterrupted(after, {n: (c.pdir / n).stat().st_size for n in after if n not in before})
        return done[job.label]

    return get


# --------------------------------------------------------------------------------------------- copies

@dataclass
class Copy:
    root: Path
    log_dir: Path
    pdir: Path
    q: Path
    originals: dict[str, tuple] = field(default_factory=dict)  # the log dir, files with their metadata
    outside: dict[str, str] = field(default_factory=dict)  # every file under root but the log dir and q


def prepare(job: Job, s: Spec, root: Path, owned: bool = True) -> Copy:
    """A copy of the job's case at `<root>/logs/<partition dir>` (directories already mounted there are
    used as they are), its `.lock` (as a broker leaves one), a sibling dir, and the originals noted."""
    root = root.resolve()
    c = Copy(root, root / "logs", root / "logs" / s.partition, root / "q")
    c.pdir.mkdir(parents=True, exist_ok=True)
    shutil.copytree(s.source, c.pdir, dirs_exist_ok=True)
    make_writable(c.pdir)
    if job.damage:
        job.damage(c.pdir)
    dress(c.pdir, owned)
    (c.log_dir / ".lock").touch()
    sibling = root / "sibling"
    sibling.mkdir(exist_ok=True)
    (sibling / "notes.txt").write_text("not the log dir's\n")
    shutil.copy2(s.source / seg_name(0, ".log"), sibling / seg_name(0, ".log"))
    c.originals, c.outside = meta_tree(c.log_dir), outside(root)
    return c


def dress(pdir: Path, owned: bool) -> None:
    """Owners, modes and mtimes a plain copy would not have, for restore to give back: 1234:2345 (root's
    kept unless `owned`), modes 0600 and 0640 in turn, mtimes apart."""
    for i, p in enumerate(sorted(pdir.iterdir())):
        if owned:
            os.chown(p, 1234, 2345)
        os.chmod(p, 0o640 if i % 2 else 0o600)
        t = 1_600_000_000_000_000_000 + i * 1_000_003
        os.utime(p, ns=(t, t))


def meta_tree(top: Path) -> dict[str, tuple]:
    """Every entry under `top`, not following symlinks: relative path -> (sha256, uid, gid, mode, mtime_ns)
    for a file, its kind for a directory or symlink."""
    out: dict[str, tuple] = {}
    for d, dirs, files in os.walk(top):
        for n in dirs + files:
            p = Path(d) / n
            st = p.lstat()
            rel = str(p.relative_to(top))
            if stat.S_ISDIR(st.st_mode):
                out[rel] = ("dir",)
            elif stat.S_ISLNK(st.st_mode):
                out[rel] = ("-> " + os.readlink(p),)
            else:
                out[rel] = (sha(p), st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode), st.st_mtime_ns)
    return out


def outside(root: Path) -> dict[str, str]:
    return {k: v for k, v in deep_tree(root).items() if Path(k).parts[0] not in ("logs", "q")}


def tail(text: str) -> str:
    return text.strip()[-700:]


# --------------------------------------------------------------------------------------------- commands

def environ(extra: dict | None = None) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in (STOP_AT, STOP_SIGNAL, PLANNED)}
    env.update(extra or {})
    return env


def run(*args, env: dict | None = None, wrap: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    return subprocess.run([*wrap, str(LOGTOOL), *map(str, args)], capture_output=True, text=True, env=environ(env),
                          timeout=120)


def start(args: list[str], env: dict, wrap: tuple[str, ...] = ()) -> subprocess.Popen:
    return subprocess.Popen([*wrap, str(LOGTOOL), *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True, env=environ(env))


def sh(*argv: str) -> None:
    r = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    if r.returncode:
        raise AssertionError(f"`{' '.join(argv)}` failed ({r.returncode}): {r.stderr.strip()}")


def stop_line(stderr: str, run_dir: Path, finish: str, path: Path | None) -> list[str]:
    """Contract 2 and 3: a `logtool: ` line naming the run dir, then the commands to copy on lines of their own:
    `logtool restore RUN` and the command that finishes the run (with the path as given); no traceback, no
    internal error."""
    problems = []
    if "Traceback" in stderr or "internal error" in stderr.lower():
        problems.append(f"a traceback or an internal error: {tail(stderr)}")
    lines = stderr.splitlines()
    if not any(line.startswith("logtool: ") and str(run_dir) in line for line in lines):
        problems.append(f"no `logtool: ` line naming {run_dir}: {tail(stderr)}")
    if f"logtool restore {run_dir}" not in lines:
        problems.append(f"no line that is `logtool restore {run_dir}` alone: {tail(stderr)}")
    if not any(line.startswith(finish) and (path is None or str(path) in line) for line in lines):
        problems.append(f"no line that is the command finishing it ({finish} ... {path}): {tail(stderr)}")
    return problems


def refused_before_first_write(c: Copy, r: subprocess.CompletedProcess, where: Path) -> list[str]:
    """Contract 1, for a preflight refusal about `where`."""
    problems = []
    lines = r.stderr.strip().splitlines()
    if r.returncode != EXIT_OPERATIONAL:
        problems.append(f"exit {r.returncode}, not {EXIT_OPERATIONAL}")
    if len(lines) != 1 or not lines[0].startswith("logtool: "):
        problems.append(f"stderr is not one `logtool: ` line: {tail(r.stderr)!r}")
    elif not all(w in lines[0] for w in ("needs", "free", str(where))):
        problems.append(f"the line does not say what it needs in {where} and what is free: {lines[0]!r}")
    now = meta_tree(c.log_dir)
    if now != c.originals:
        problems.append(f"written before refusing: {differs(now, c.originals)}")
    if runs(c.q):
        problems.append(f"a run left under the quarantine: {[p.name for p in runs(c.q)]}")
    if outside(c.root) != c.outside:
        problems.append(f"files outside the log dir and the quarantine changed: {differs(outside(c.root), c.outside)}")
    return problems


def finish(job: Job, c: Copy, want: dict[str, str], run_dir: Path, role: str, label: str) -> list[str]:
    """A stopped copy, its fault removed: `resume` runs the same command again, which must finish the same
    run to the uninterrupted bytes; `restore` restores the run, which must give back the originals."""
    if role == "resume":
        again = run(*job.argv(c.q, c.pdir))
        now = tree(c.pdir)
        problems = []
        if again.returncode not in (EXIT_CLEAN, EXIT_REPAIRED) or now != want:
            problems.append(f"{label}: the same command again ended with {again.returncode} and differs from an "
                            f"uninterrupted run in {differs(now, want)} {tail(again.stderr)}")
        if runs(c.q) != [run_dir]:
            problems.append(f"{label}: the stopped run was not finished in place: runs {[p.name for p in runs(c.q)]}")
        return problems
    back = run("restore", run_dir)
    now = meta_tree(c.log_dir)
    if back.returncode != EXIT_CLEAN or now != c.originals:
        return [f"{label}: restore of the stopped run ended with {back.returncode} and differs from the originals "
                f"in {differs(now, c.originals)} {tail(back.stderr)}"]
    return []


def count_steps(stopped_at: Callable[[int], bool], what: str) -> int:
    """The number of durable steps: the last k at which the hook stops the command (stopped_at(k))."""
    k = 1
    while True:
        batch = list(range(k, k + WORKERS))
        for j, hit in zip(batch, parallel(stopped_at, batch)):
            if not hit:
                assert j > 1, f"the hook never stopped {what}: LOGTOOL_TEST_STOP_AT is not honoured"
                return j - 1
        k += WORKERS
        assert k < 400, f"{what} never completed"


STEPS: dict[str, int] = {}
_STEPS_LOCK = threading.Lock()


def apply_steps(job: Job, s: Spec, base: Path) -> int:
    with _STEPS_LOCK:
        if job.label not in STEPS:
            def stopped_at(k: int) -> bool:
                c = prepare(job, s, base / f"count-{k}")
                hit = run(*job.argv(c.q, c.pdir), env={STOP_AT: str(k)}).returncode == KILLED
                shutil.rmtree(c.root)
                return hit

            STEPS[job.label] = count_steps(stopped_at, job.label)
        return STEPS[job.label]


def restore_steps(job: Job, s: Spec, base: Path) -> int:
    with _STEPS_LOCK:
        key = f"restore of {job.label}"
        if key not in STEPS:
            def stopped_at(k: int) -> bool:
                c = prepare(job, s, base / f"count-restore-{k}")
                assert run(*job.argv(c.q, c.pdir)).returncode == EXIT_REPAIRED
                hit = run("restore", runs(c.q)[0], env={STOP_AT: str(k)}).returncode == KILLED
                shutil.rmtree(c.root)
                return hit

            STEPS[key] = count_steps(stopped_at, key)
        return STEPS[key]


# --------------------------------------------------------------------------------------------- mounts

class Mounts:
    """The filesystems one test mounts. Each case mounts inside `with mounts.scope() as m:`, unmounted when
    the block ends however it ends; the fixture unmounts whatever is still mounted when the test ends."""

    def __init__(self, images: Path) -> None:
        self.images = images
        self.active: list[Path] = []
        self.errors: list[str] = []
        self._lock = threading.Lock()

    @contextlib.contextmanager
    def scope(self) -> Iterator["Scope"]:
        made: list[Path] = []
        try:
            yield Scope(self, made)
        finally:
            for where in reversed(made):
                self.unmount(where)

    def mount(self, argv: list[str], where: Path, made: list[Path]) -> None:
        where.mkdir(parents=True, exist_ok=True)
        sh(*argv)
        with self._lock:
            self.active.append(where)
        made.append(where)

    def unmount(self, where: Path) -> None:
        with self._lock:
            if where not in self.active:
                return
            self.active.remove(where)
        r = subprocess.run(["umount", str(where)], capture_output=True, text=True, timeout=60)
        if r.returncode:
            lazy = subprocess.run(["umount", "-l", str(where)], capture_output=True, text=True, timeout=60)
            self.errors.append(f"umount {where}: {r.stderr.strip()} (lazily: {lazy.returncode == 0})")

    def unmount_all(self) -> None:
        for where in reversed(list(self.active)):
            self.unmount(where)


@dataclass
class Scope:
    mounts: Mounts
    made: list[Path]

    def tmpfs(self, where: Path, size: int, nr_inodes: int | None = None, mode: str = "0755") -> Path:
        opts = f"size={size},mode={mode}" + (f",nr_inodes={nr_inodes}" if nr_inodes else "")
        self.mounts.mount(["mount", "-t", "tmpfs", "-o", opts, "tmpfs", str(where)], where, self.made)
        return where

    def ext4(self, where: Path, size: int = 8 << 20) -> Path:
        """A loop-mounted ext4 image (kept outside every case's root), without its lost+found."""
        self.mounts.images.mkdir(exist_ok=True)
        fd, image = tempfile.mkstemp(suffix=".ext4", dir=self.mounts.images)
        os.ftruncate(fd, size)
        os.close(fd)
        sh("mkfs.ext4", "-q", "-F", image)
        self.mounts.mount(["mount", "-o", "loop", image, str(where)], where, self.made)
        (where / "lost+found").rmdir()
        os.chmod(where, 0o755)
        return where

    def remount(self, where: Path, opts: str) -> None:
        sh("mount", "-o", f"remount,{opts}", str(where))


@pytest.fixture(autouse=True)
def as_root():
    assert os.geteuid() == 0, "these tests mount filesystems, chown, chattr and drop capabilities: run them as root " \
                              "(CI does)"


@pytest.fixture
def mounts(tmp_path):
    m = Mounts(tmp_path / "images")
    try:
        yield m
    finally:
        m.unmount_all()
    assert not m.errors, "\n".join(m.errors)


def used_bytes(path: Path) -> int:
    st = os.statvfs(path)
    return (st.f_blocks - st.f_bfree) * st.f_frsize


def used_inodes(path: Path) -> int:
    st = os.statvfs(path)
    return st.f_files - st.f_ffree


def room(s: Spec) -> int:
    """A tmpfs size that holds the case many times over (and any quarantine's slack)."""
    size = sum(p.stat().st_size for p in s.source.iterdir())
    return max(16 << 20, -(-8 * size // PAGE) * PAGE)


# --------------------------------------------------------------------------------------------- 1: preflight

def test_quarantine_too_small_is_refused_before_the_first_write(spec, uninterrupted, mounts, tmp_path):
    """The quarantine on a tmpfs of half the bytes the repair moves there (the dry run's bytes removed:
    the cut tail of the first segment and five whole segments): refused before the first write. Given room
    (the tmpfs remounted larger), the same command makes the uninterrupted repair."""
    s, want = spec(DROPS.case), uninterrupted(DROPS).tree
    plan = run("truncate", "--format", "json", s.source)
    moved = sum(a["bytes_removed"] for p in json.loads(plan.stdout)["partitions"] for a in p["actions"])
    assert moved >= 8 * PAGE, f"the case moves only {moved} bytes: too few to size a tmpfs by"
    with mounts.scope() as m:
        q = m.tmpfs(tmp_path.resolve() / "case" / "q", size=moved // 2 // PAGE * PAGE, mode="0700")
        c = prepare(DROPS, s, tmp_path / "case")
        r = run(*DROPS.argv(c.q, c.pdir))
        problems = refused_before_first_write(c, r, q)
        m.remount(q, f"size={room(s)}")
        again = run(*DROPS.argv(c.q, c.pdir))
        if again.returncode != EXIT_REPAIRED or tree(c.pdir) != want:
            problems.append(f"with room it ended with {again.returncode}: {tail(again.stderr)}")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("job", [EXCISE, INDEX], ids=lambda j: j.label)
def test_log_dir_without_room_for_new_files_is_refused_before_the_first_write(job, spec, uninterrupted, mounts,
                                                                             tmp_path):
    """The log dir on a tmpfs whose size is exactly what the copy uses (0 bytes free), and a repair that
    creates files there: `truncate --excise` a new segment for the batches after the flipped bit,
    `index rebuild` the two deleted .index files. Refused before the first write; given room, the same
    command makes the uninterrupted repair."""
    s, done = spec(job.case), uninterrupted(job)
    assert sum(done.created.values()) > 0, f"{job.label} creates no bytes in the log dir: {done.created}"
    with mounts.scope() as m:
        log_dir = m.tmpfs(tmp_path.resolve() / "case" / "logs", size=room(s))
        c = prepare(job, s, tmp_path / "case")
        m.remount(log_dir, f"size={used_bytes(log_dir)}")
        assert os.statvfs(log_dir).f_bavail == 0
        r = run(*job.argv(c.q, c.pdir))
        problems = refused_before_first_write(c, r, log_dir)
        m.remount(log_dir, f"size={room(s)}")
        again = run(*job.argv(c.q, c.pdir))
        if again.returncode != EXIT_REPAIRED or tree(c.pdir) != done.tree:
            problems.append(f"with room it ended with {again.returncode}: {tail(again.stderr)}")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("where,job", [("quarantine", DROPS), ("log dir", EXCISE), ("log dir", INDEX)],
                         ids=["quarantine-truncate", "log-dir-excise", "log-dir-index-rebuild"])
def test_out_of_inodes_is_refused_before_the_first_write(where, job, spec, uninterrupted, mounts, tmp_path):
    """A tmpfs with room for the bytes but 2 free inodes for the quarantine (a run needs its dir, a
    manifest and a file for each of the 20-odd files it keeps), or 1 free inode in the log dir where the
    repair creates at least two files: refused before the first write. With inodes given, the same command
    makes the uninterrupted repair."""
    s, done = spec(job.case), uninterrupted(job)
    root = tmp_path.resolve() / "case"
    with mounts.scope() as m:
        if where == "quarantine":
            fs = m.tmpfs(root / "q", size=room(s), nr_inodes=3, mode="0700")  # its root dir and 2 more
            c = prepare(job, s, root)
        else:
            assert len(done.created) >= 2, f"{job.label} creates fewer than two files: {done.created}"
            fs = m.tmpfs(root / "logs", size=room(s))
            c = prepare(job, s, root)
            m.remount(fs, f"nr_inodes={used_inodes(fs) + 1}")
        assert os.statvfs(fs).f_favail == (2 if where == "quarantine" else 1)
        r = run(*job.argv(c.q, c.pdir))
        problems = refused_before_first_write(c, r, fs)
        m.remount(fs, "nr_inodes=100000")
        again = run(*job.argv(c.q, c.pdir))
        if again.returncode != EXIT_REPAIRED or tree(c.pdir) != done.tree:
            problems.append(f"with inodes it ended with {again.returncode}: {tail(again.stderr)}")
    assert not problems, "\n".join(problems)


# --------------------------------------------------------------------------------------------- 2: faults

@dataclass(frozen=True)
class Fault:
    """A fault made while the repair is stopped; `inject` returns what removes it."""

    name: str
    layout: Callable[[Scope, Path, Spec], None]  # mounts made before the copy
    inject: Callable[[Scope, Copy, list[str], int], Callable[[], None]]  # (scope, copy, unfinished files, pid)
    wrap: tuple[str, ...] = ()  # how the repair is started
    every_write: bool = True  # met by any write to the partition dir (else only by some: a full filesystem)


def quarantine_tmpfs(m: Scope, root: Path, s: Spec) -> None:
    m.tmpfs(root / "q", size=room(s), mode="0700")


def fill(directory: Path) -> Callable[[], None]:
    """ENOSPC: a file in `directory` takes every free block of its tmpfs; returns what removes it."""
    filler = directory / ".filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        st = os.statvfs(directory)
        os.posix_fallocate(fd, 0, st.f_bavail * st.f_frsize)
        os.lseek(fd, 0, os.SEEK_END)
        while True:
            try:
                os.write(fd, b"\0" * PAGE)
            except OSError as e:
                assert e.errno == errno.ENOSPC, e
                break
    finally:
        os.close(fd)
    assert os.statvfs(directory).f_bavail == 0
    return filler.unlink


def fill_quarantine(m: Scope, c: Copy, unfinished: list[str], pid: int) -> Callable[[], None]:
    return fill(c.q)


def log_dir_tmpfs(m: Scope, root: Path, s: Spec) -> None:
    m.tmpfs(root / "logs", size=room(s))


def fill_log_dir(m: Scope, c: Copy, unfinished: list[str], pid: int) -> Callable[[], None]:
    """The filler is in the log dir itself, beside the partition dir."""
    return fill(c.log_dir)


def partition_tmpfs(m: Scope, root: Path, s: Spec) -> None:
    m.tmpfs(root / "logs" / s.partition, size=room(s))


def remount_read_only(m: Scope, c: Copy, unfinished: list[str], pid: int) -> Callable[[], None]:
    """EROFS: the partition dir's tmpfs remounted read-only (refused while the stopped process holds a file
    on it open for writing: the assertion then lists its fds)."""
    try:
        m.remount(c.pdir, "ro")
    except AssertionError as e:
        fds = {}
        with contextlib.suppress(OSError):
            fds = {n: os.readlink(f"/proc/{pid}/fd/{n}") for n in os.listdir(f"/proc/{pid}/fd")}
        raise AssertionError(f"{e}; the stopped repair's open files: {fds}") from None
    return lambda: m.remount(c.pdir, "rw")


def no_layout(m: Scope, root: Path, s: Spec) -> None:
    pass


def mode_000(m: Scope, c: Copy, unfinished: list[str], pid: int) -> Callable[[], None]:
    """EACCES: the partition dir and its unfinished files made mode 000 (the repair runs as root without
    CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH, so modes hold for it)."""
    paths = [c.pdir] + [c.pdir / n for n in unfinished]
    modes = {p: stat.S_IMODE(p.lstat().st_mode) for p in paths}
    for p in reversed(paths):
        os.chmod(p, 0)

    def undo() -> None:
        for p, mode in modes.items():
            os.chmod(p, mode)

    return undo


def logs_ext4(m: Scope, root: Path, s: Spec) -> None:
    m.ext4(root / "logs")


def immutable(m: Scope, c: Copy, unfinished: list[str], pid: int) -> Callable[[], None]:
    """EPERM: `chattr +i` on the partition dir (no name made, removed or renamed in it) and on its unfinished
    files (none written, cut or replaced), on ext4."""
    paths = [str(c.pdir)] + [str(c.pdir / n) for n in unfinished]
    sh("chattr", "+i", *paths)
    return lambda: sh("chattr", "-i", *paths)


FAULTS = [
    Fault("ENOSPC-quarantine-full", quarantine_tmpfs, fill_quarantine, every_write=False),
    Fault("ENOSPC-log-dir-full", log_dir_tmpfs, fill_log_dir, every_write=False),
    Fault("EROFS-partition-read-only", partition_tmpfs, remount_read_only),
    Fault("EACCES-mode-000", no_layout, mode_000, wrap=NO_DAC),
    Fault("EPERM-immutable-ext4", logs_ext4, immutable),
]


def fault_while_stopped(proc: subprocess.Popen, fault: Fault, m: Mounts, c: Copy,
                        changes: Callable[[], tuple[bool, list[str]]]) -> tuple[bool, bool, str]:
    """A command stopped at its step by the hook: the fault made on the files still to change, the command let
    go to the end, the fault removed. (stopped?, anything was still to change, stderr); not stopped: the
    command ended first."""
    undo = None
    try:
        if not wait_stopped(proc):
            _, err = proc.communicate(timeout=60)
            return False, False, err
        left, unfinished = changes()
        undo = fault.inject(m, c, unfinished, proc.pid)
        os.kill(proc.pid, signal.SIGCONT)
        _, err = proc.communicate(timeout=60)
        return True, left, err
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=60)
        if undo is not None:
            undo()


def fault_point(fault: Fault, job: Job, s: Spec, want: dict[str, str], k: int, role: str, base: Path,
                mounts: Mounts) -> tuple[str, list[str]]:
    """Stop the repair at step k, make the fault, let it go; then remove the fault and resume or restore.
    Returns (outcome, problems): "done" (k is past the last step: not stopped), "stopped" (exit 8),
    "passed" (the repair completed: nothing was left to write where the fault was)."""
    label = f"{fault.name} at k={k} ({role})"
    root = base / f"k{k}-{role}"
    with mounts.scope() as m:
        fault.layout(m, root.resolve(), s)
        c = prepare(job, s, root, owned=not fault.wrap)
        proc = start(job.argv(c.q, c.pdir), {STOP_AT: str(k), STOP_SIGNAL: "STOP"}, fault.wrap)
        def changes() -> tuple[bool, list[str]]:
            now = tree(c.pdir)  # whether the partition dir still has to change, and which files
            return now != want, [n for n in now if now[n] != want.get(n)]

        stopped, left, err = fault_while_stopped(proc, fault, m, c, changes)
        if not stopped:
            if proc.returncode == EXIT_REPAIRED and tree(c.pdir) == want:
                return "done", []
            return "done", [f"{label}: not stopped, it ended with {proc.returncode} {tail(err)}"]
        problems = []
        found = runs(c.q)
        if proc.returncode == EXIT_REPAIRED and (not fault.every_write or not left):
            outcome = "passed"
            if tree(c.pdir) != want:
                problems.append(f"{label}: completed to other bytes than an uninterrupted run: "
                                f"{differs(tree(c.pdir), want)}")
        elif proc.returncode != EXIT_OPERATIONAL:
            outcome = "stopped"
            problems.append(f"{label}: ended with {proc.returncode}, not {EXIT_OPERATIONAL}"
                            + (" though its partition dir still had to change" if left else "") + f" {tail(err)}")
        elif len(found) != 1:
            outcome = "stopped"
            problems.append(f"{label}: {len(found)} runs under the quarantine after one stopped repair")
        else:
            outcome = "stopped"
            problems += [f"{label}: {p}" for p in stop_line(err, found[0], job.command, c.pdir)]
            problems += finish(job, c, want, found[0], role, label)
        if outside(c.root) != c.outside:
            problems.append(f"{label}: files outside the log dir and the quarantine changed: "
                            f"{differs(outside(c.root), c.outside)}")
    return outcome, problems


@pytest.mark.parametrize("fault", FAULTS, ids=lambda f: f.name)
def test_fault_after_a_durable_step_stops_with_exit_8_then_resumes_or_restores(fault, spec, uninterrupted, mounts,
                                                                               tmp_path):
    """`truncate --apply` of corrupt-torn-tail stopped (SIGSTOP through the hook) at every durable step k, the
    fault made, and let go: exit 8 with the line wherever the fault is met (EROFS, EACCES, EPERM: whenever
    the partition dir still had to change; a full filesystem: at least right after the first write), else it
    completes to the uninterrupted bytes. With the fault removed: the same command finishes the same run to
    the uninterrupted bytes, and on a second copy stopped the same way restore gives back the originals with
    their metadata."""
    s, want = spec(TORN.case), uninterrupted(TORN).tree
    outcomes: dict[tuple[int, str], str] = {}
    problems: list[str] = []
    k, per_batch = 1, max(1, WORKERS // len(ROLES))
    while not any(o == "done" for o in outcomes.values()):
        batch = [(j, role) for j in range(k, k + per_batch) for role in ROLES]
        results = parallel(lambda item: fault_point(fault, TORN, s, want, *item, tmp_path, mounts), batch)
        for item, (outcome, found) in zip(batch, results):
            outcomes[item] = outcome
            problems += found
        k += per_batch
        assert k < 200, "the repair never completed"
    stopped = sorted({j for (j, _), o in outcomes.items() if o == "stopped"})
    passed = sorted({j for (j, _), o in outcomes.items() if o == "passed"})
    print(f"{fault.name}: exit 8 at k={stopped}, completed though the fault was made at k={passed}")
    assert not problems, "\n".join(problems)
    assert 1 in stopped, f"the fault right after the first write did not stop the repair (stopped at {stopped})"


# --------------------------------------------------------------------------------------------- 3: signals

def signal_point(job: Job, sig: str, s: Spec, want: dict[str, str], k: int, role: str, last: int,
                 base: Path) -> tuple[str, list[str]]:
    """`job` given SIG at its k-th durable step (k up to one past the last). Returns (outcome, problems):
    "stopped" (the exit the contract gives the signal; for INT and TERM with the stop line; then resume or
    restore checked), or "completed" (exit 1 and the uninterrupted bytes: the signal came in its last step,
    or k is past the last)."""
    label = f"{sig} at k={k} ({role})"
    c = prepare(job, s, base / f"k{k}-{role}")
    r = run(*job.argv(c.q, c.pdir), env={STOP_AT: str(k), STOP_SIGNAL: sig})
    found = runs(c.q)
    problems: list[str] = []
    if r.returncode == EXIT_REPAIRED and tree(c.pdir) == want:
        outcome = "completed"
    elif r.returncode != EXITS[sig]:
        outcome, problems = "stopped", [f"{label}: ended with {r.returncode}, not {EXITS[sig]} {tail(r.stderr)}"]
    elif len(found) != 1:
        outcome, problems = "stopped", [f"{label}: {len(found)} runs under the quarantine after one stopped repair"]
    else:
        outcome = "stopped"
        if sig != "KILL":
            problems += [f"{label}: {p}" for p in stop_line(r.stderr, found[0], job.command, c.pdir)]
        problems += finish(job, c, want, found[0], role, label)
    if outside(c.root) != c.outside:
        problems.append(f"{label}: files outside the log dir and the quarantine changed")
    shutil.rmtree(c.root)
    return outcome, problems


def only_the_last_step_completes(outcomes: dict[int, str], last: int, sig: str) -> list[str]:
    """The signal stops the command after the step it came in; coming in its last step (as the hook counts
    durable steps, one step of the command may take several) it may let the command complete. So the k
    that complete are a suffix of 1..last+1, holding last+1 and not 1."""
    done = sorted(k for k, o in outcomes.items() if o == "completed")
    if last + 1 not in done:
        return [f"past the last step ({last + 1}) the command did not complete: {outcomes}"]
    if 1 in done or done != list(range(done[0], last + 2)):
        return [f"{sig} at a step before the command's last one let it complete: completed at k={done}, "
                f"stopped at k={sorted(set(outcomes) - set(done))}"]
    return []


def every_step(job: Job, sig: str, s: Spec, want: dict[str, str], base: Path) -> list[str]:
    last = apply_steps(job, s, base)
    items = [(k, role) for k in range(1, last + 2) for role in ROLES]
    results = parallel(lambda i: signal_point(job, sig, s, want, *i, last, base), items)
    problems = [p for _, found in results for p in found]
    for role in ROLES:
        outcomes = {k: o for (k, r), (o, _) in zip(items, results) if r == role}
        problems += [f"{role}: {p}" for p in only_the_last_step_completes(outcomes, last, sig)]
    print(f"{job.label} given {sig}: {last} durable steps; completed at k="
          f"{sorted(k for (k, r), (o, _) in zip(items, results) if r == ROLES[0] and o == 'completed')}")
    return problems


@pytest.mark.parametrize("sig", ["INT", "TERM"])
def test_signal_at_every_step_of_truncate_stops_after_the_step_then_resumes_or_restores(sig, spec, uninterrupted,
                                                                                        tmp_path):
    """SIGINT (exit 8) or SIGTERM (exit 143) at every durable step of `truncate --apply` (corrupt-torn-tail):
    the step is finished and the line printed (a signal in the last step may let the repair complete); the
    same command finishes the same run to the uninterrupted bytes, and restore of a second copy gives back
    the originals with their metadata."""
    problems = every_step(TORN, sig, spec(TORN.case), uninterrupted(TORN).tree, tmp_path)
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("sig", ["KILL", "INT", "TERM"])
def test_index_rebuild_stopped_at_every_step_resumes_or_restores(sig, spec, uninterrupted, tmp_path):
    """`index rebuild --apply` of v2-none-mixed with the first two segments' .index files deleted and the
    third's corrupt, given SIG at every durable step: exit -9 / 8 / 143 (with the line for INT and TERM; a
    signal in the last step may let it complete); the same command finishes the same run to the bytes of an
    uninterrupted rebuild, and restore of a second copy gives back the originals (the deleted files absent
    again) with their metadata."""
    s, done = spec(INDEX.case), uninterrupted(INDEX)
    assert {seg_name(0, ".index"), seg_name(94, ".index")} <= set(done.created), done.created
    problems = every_step(INDEX, sig, s, done.tree, tmp_path)
    assert not problems, "\n".join(problems)


# --------------------------------------------------------------------------------------------- 5: restore

@pytest.mark.parametrize("sig", ["KILL", "INT", "TERM"])
def test_restore_stopped_at_every_step_is_finished_by_restore_again(sig, spec, tmp_path):
    """A finished `truncate --apply` (corrupt-torn-tail), then `restore RUN` given SIG at every one of its
    durable steps: exit -9 / 8 / 143 (INT and TERM with the line naming the run and `logtool restore RUN`; a
    signal in its last step may let it complete); `logtool restore RUN` again, without --force, exits 0 and
    gives back the originals with their metadata; once more, it exits 0, says "already restored" and writes
    nothing (the log dir and the run as they were)."""
    s = spec(TORN.case)
    last = restore_steps(TORN, s, tmp_path)

    def one(k: int) -> tuple[str, list[str]]:
        label = f"restore given {sig} at k={k}"
        c = prepare(TORN, s, tmp_path / f"k{k}")
        r = run(*TORN.argv(c.q, c.pdir))
        assert r.returncode == EXIT_REPAIRED, r.stderr
        [run_dir] = runs(c.q)
        first = run("restore", run_dir, env={STOP_AT: str(k), STOP_SIGNAL: sig})
        problems: list[str] = []
        if first.returncode == EXIT_CLEAN and meta_tree(c.log_dir) == c.originals:
            outcome = "completed"
        elif first.returncode != EXITS[sig]:
            return "stopped", [f"{label}: ended with {first.returncode}, not {EXITS[sig]} {tail(first.stderr)}"]
        else:
            outcome = "stopped"
            if sig != "KILL":
                line = stop_line(first.stderr, run_dir, f"logtool restore {run_dir}", None)
                problems += [f"{label}: {p}" for p in line]
            again = run("restore", run_dir)
            now = meta_tree(c.log_dir)
            if again.returncode != EXIT_CLEAN or now != c.originals:
                return outcome, problems + [f"{label}: restore again ended with {again.returncode} and differs from "
                                            f"the originals in {differs(now, c.originals)} {tail(again.stderr)}"]
        before = meta_tree(c.log_dir), deep_tree(run_dir)
        once_more = run("restore", run_dir)
        if once_more.returncode != EXIT_CLEAN or "already restored" not in once_more.stdout + once_more.stderr:
            problems.append(f"{label}: restore of a restored run ended with {once_more.returncode} without saying "
                            f"\"already restored\": {tail(once_more.stdout + once_more.stderr)}")
        if (meta_tree(c.log_dir), deep_tree(run_dir)) != before:
            problems.append(f"{label}: restore of a restored run wrote")
        if outside(c.root) != c.outside:
            problems.append(f"{label}: files outside the log dir and the quarantine changed")
        shutil.rmtree(c.root)
        return outcome, problems

    ks = list(range(1, last + 2))
    results = parallel(one, ks)
    problems = [p for _, found in results for p in found]
    problems += only_the_last_step_completes({k: o for k, (o, _) in zip(ks, results)}, last, sig)
    assert not problems, "\n".join(problems)


def restore_fault_point(fault: Fault, s: Spec, k: int, base: Path, mounts: Mounts) -> tuple[str, list[str]]:
    """A finished repair of corrupt-torn-tail; its `restore` stopped at step k, the fault made, let go; then
    the fault removed and `restore` run again. Outcomes as in fault_point."""
    label = f"restore meeting {fault.name} at k={k}"
    with mounts.scope() as m:
        fault.layout(m, (base / f"k{k}").resolve(), s)
        c = prepare(TORN, s, base / f"k{k}", owned=not fault.wrap)
        r = run(*TORN.argv(c.q, c.pdir))
        assert r.returncode == EXIT_REPAIRED, r.stderr
        [run_dir] = runs(c.q)
        proc = start(["restore", str(run_dir)], {STOP_AT: str(k), STOP_SIGNAL: "STOP"}, fault.wrap)
        def changes() -> tuple[bool, list[str]]:
            now = meta_tree(c.log_dir)  # whether the log dir still has to change, and which files
            key = lambda n: f"{c.pdir.name}/{n}"  # noqa: E731
            return now != c.originals, [n for n in os.listdir(c.pdir) if now.get(key(n)) != c.originals.get(key(n))]

        stopped, left, err = fault_while_stopped(proc, fault, m, c, changes)
        if not stopped:
            if proc.returncode == EXIT_CLEAN and meta_tree(c.log_dir) == c.originals:
                return "done", []
            return "done", [f"{label}: not stopped, it ended with {proc.returncode} {tail(err)}"]
        problems = []
        if proc.returncode == EXIT_CLEAN and (not fault.every_write or not left):
            outcome = "passed"
            if meta_tree(c.log_dir) != c.originals:
                problems.append(f"{label}: completed, but differs from the originals in "
                                f"{differs(meta_tree(c.log_dir), c.originals)}")
        elif proc.returncode != EXIT_OPERATIONAL:
            outcome = "stopped"
            problems.append(f"{label}: ended with {proc.returncode}, not {EXIT_OPERATIONAL}"
                            + (" though the log dir still had to change" if left else "") + f" {tail(err)}")
        else:
            outcome = "stopped"
            problems += [f"{label}: {p}" for p in stop_line(err, run_dir, f"logtool restore {run_dir}", None)]
            again = run("restore", run_dir)
            now = meta_tree(c.log_dir)
            if again.returncode != EXIT_CLEAN or now != c.originals:
                problems.append(f"{label}: restore again ended with {again.returncode} and differs from the "
                                f"originals in {differs(now, c.originals)} {tail(again.stderr)}")
        if outside(c.root) != c.outside:
            problems.append(f"{label}: files outside the log dir and the quarantine changed")
    return outcome, problems


@pytest.mark.parametrize("fault", FAULTS, ids=lambda f: f.name)
def test_restore_meeting_a_fault_stops_with_exit_8_and_restore_again_finishes(fault, spec, mounts, tmp_path):
    """`restore RUN` of a finished repair (corrupt-torn-tail) stopped at every durable step k, the fault made
    (as for the repair above) and let go: exit 8 with a `logtool: ` line naming the run and `logtool restore
    RUN` wherever the fault is met (EROFS, EACCES, EPERM: whenever the log dir still had to change; a full
    filesystem: at least right after the first write), else exit 0 with the originals back. With the fault
    removed, `logtool restore RUN` again, without --force, gives back every original file with its sha256,
    owner, group, mode and mtime."""
    s = spec(TORN.case)
    outcomes: dict[int, str] = {}
    problems: list[str] = []
    k = 1
    while "done" not in outcomes.values():
        batch = list(range(k, k + WORKERS))
        for j, (outcome, found) in zip(batch, parallel(lambda j: restore_fault_point(fault, s, j, tmp_path, mounts),
                                                       batch)):
            outcomes[j] = outcome
            problems += found
        k += WORKERS
        assert k < 200, "the restore never completed"
    stopped = sorted(j for j, o in outcomes.items() if o == "stopped")
    print(f"restore meeting {fault.name}: exit 8 at k={stopped}, completed though the fault was made at "
          f"k={sorted(j for j, o in outcomes.items() if o == 'passed')}")
    assert not problems, "\n".join(problems)
    assert 1 in stopped, f"the fault right after restore's first write did not stop it (stopped at {stopped})"
