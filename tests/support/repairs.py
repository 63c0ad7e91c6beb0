"""The harness of the repair tests: Kafka-written cases copied to a scratch dir, the repair run through
the installed command (killed at a chosen step where asked), and the trees of bytes compared."""
from __future__ import annotations

import concurrent.futures
import contextlib
import dataclasses
import functools
import hashlib
import json
import os
import shutil
import signal
import struct
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from conftest import KAFKA_WRITTEN, LOGTOOL, kafka_case

from logtool.recovery import quarantine
from logtool.store.layout import LOGTOOL_TEMP

EXIT_CLEAN, EXIT_REPAIRED, EXIT_PROBLEMS, EXIT_OPERATIONAL = 0, 1, 4, 8


STOP_AT, STOP_SIGNAL = "LOGTOOL_TEST_STOP_AT", "LOGTOOL_TEST_STOP_SIGNAL"


KILLED = -signal.SIGKILL


WORKERS = max(2, min(4, 2 * (os.cpu_count() or 1)))  # CLI runs in parallel: each is mostly interpreter start


@functools.cache
def expected(case: str) -> dict:
    return json.loads((KAFKA_WRITTEN / case / "expected.json").read_text())


def kafka_rp0(case: str) -> dict:
    """Kafka's LogLoader after an unclean shutdown with recovery point 0 (every segment recovered)."""
    return next(r for r in expected(case)["logLoaderUnclean"] if r["recoveryPoint"] == 0)


CASES = sorted(p.name for p in KAFKA_WRITTEN.iterdir() if (p / "expected.json").is_file())


# Damage Kafka's recovery cuts. It leaves index damage and offsets going backwards as they are (the fixture
# names that kind "batch-offset-goes-backwards"), so those cases are not repairs of the log.
DAMAGED = [c for c in CASES if expected(c).get("corruption")
           and not expected(c)["corruption"]["kind"].startswith(("index", "timeindex", "offset", "batch-offset"))]


CRASHED = "v2-crash-preallocated"  # not corrupted on purpose, but Kafka's recovery cuts its zero padding


CLEAN = ["v2-none-mixed", "v2-zstd"]


# Made here: v2-none-mixed with one byte flipped in the records of a batch in the middle of the FIRST
# segment, so that Kafka's rule cuts the first segment there and drops all five later segments.
FIRST = "first-segment-bitflip"


FIRST_FROM = "v2-none-mixed"


def first_damaged_batch() -> dict:
    batches = expected(FIRST_FROM)["asWritten"]["segments"][0]["log"]["batches"]
    return batches[len(batches) // 2]


def seg_name(base: int, suffix: str) -> str:
    return f"{base:020d}{suffix}"


@dataclass(frozen=True)
class Spec:
    """A case and Kafka's answer for it."""

    name: str
    source: Path  # the partition dir every copy is made from
    originals: dict[str, str]  # every file of the partition dir as written: name -> sha256
    kept_logs: dict[str, int]  # Kafka's recovery (point 0): each .log that stays -> its size
    log_end: int  # Kafka's log end offset after it
    leader_epochs: list[list[int]] | None  # Kafka's leader-epoch cache after it (None: no checkpoint file)
    offset_index: dict[int, list[list[int]]]  # segment base -> Kafka's rebuilt [offset, position] entries
    time_index: dict[int, list[list[int]]] | None  # segment base -> [timestamp, offset]; None: not known

    @property
    def partition(self) -> str:
        return self.source.name


def fixture_spec(case: str) -> Spec:
    rp0 = kafka_rp0(case)
    return Spec(case, kafka_case(case), {f["name"]: f["sha256"] for f in expected(case)["asWritten"]["files"]},
                {seg_name(s["baseOffset"], ".log"): s["size"] for s in rp0["segments"]}, rp0["logEndOffset"],
                [list(e) for e in rp0["leaderEpochs"]] if (kafka_case(case) / "leader-epoch-checkpoint").exists() else None,
                {s["baseOffset"]: s["offsetIndex"] for s in rp0["segments"]},
                {s["baseOffset"]: s["timeIndex"] for s in rp0["segments"]})


def build_first(root: Path) -> Spec:
    """The first-segment case, and what Kafka's rule (README of the fixtures: recovery stops at the first
    bad batch, and with recovery point 0 every later segment is deleted) makes of it."""
    src = root / kafka_case(FIRST_FROM).name
    shutil.copytree(kafka_case(FIRST_FROM), src)
    make_writable(src)
    bad = first_damaged_batch()
    log = src / seg_name(0, ".log")
    data = bytearray(log.read_bytes())
    data[bad["position"] + bad["size"] - 1] ^= 0xFF  # the last byte of the batch's records: under its CRC
    log.write_bytes(bytes(data))
    originals = {f["name"]: f["sha256"] for f in expected(FIRST_FROM)["asWritten"]["files"]}
    originals[log.name] = hashlib.sha256(data).hexdigest()
    cut = bad["position"]
    whole = expected(FIRST_FROM)["segmentRecover"][0]["rebuiltOffsetIndex"]
    epochs = [list(e) for e in kafka_rp0(FIRST_FROM)["leaderEpochs"] if e[1] < bad["baseOffset"]]
    return Spec(FIRST, src, originals, {log.name: cut}, bad["baseOffset"], epochs,
                # an index entry depends only on the bytes before it: the prefix keeps the entries inside it
                {0: [e for e in whole if e[1] < cut]}, None)


def make_writable(pdir: Path) -> None:
    os.chmod(pdir, 0o755)
    for p in pdir.iterdir():
        os.chmod(p, 0o644)


def fresh(s: Spec, root: Path) -> Path:
    """A fresh copy of the case: `<root>/logs/<partition dir>`."""
    pdir = root / "logs" / s.partition
    pdir.parent.mkdir(parents=True, exist_ok=True)
    shutil.copytree(s.source, pdir)
    make_writable(pdir)
    return pdir


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def tree(pdir: Path) -> dict[str, str]:
    """Every entry of a directory (hidden ones too): name -> sha256 ("-> target" for a symlink)."""
    out = {}
    for p in sorted(pdir.iterdir()):
        if p.is_symlink():
            out[p.name] = "-> " + os.readlink(p)
        elif p.is_dir():
            out[p.name] = "dir"
        else:
            out[p.name] = sha(p)
    return out


def deep_tree(root: Path) -> dict[str, str]:
    """Every file under `root`, not following symlinks: relative path -> sha256 / link target."""
    out = {}
    for d, dirs, files in os.walk(root):
        for n in dirs + files:
            p = Path(d) / n
            rel = str(p.relative_to(root))
            if p.is_symlink():
                out[rel] = "-> " + os.readlink(p)
            elif p.is_file():
                out[rel] = sha(p)
    return out


def logtool(*args, env: dict | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess:
    environ = {k: v for k, v in os.environ.items() if k not in (STOP_AT, STOP_SIGNAL)}
    environ.update(env or {})
    return subprocess.run([str(LOGTOOL), *map(str, args)], capture_output=True, text=True, env=environ, cwd=cwd,
                          timeout=120)


def apply(pdir, q, env: dict | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return logtool("truncate", "--apply", "--quarantine", q, pdir, env=env, cwd=cwd)


def killed_at(k: int) -> dict:
    return {STOP_AT: str(k)}


def runs(q: Path) -> list[Path]:
    return sorted(p for p in q.iterdir() if p.is_dir()) if q.is_dir() else []


def the_run(q: Path) -> Path:
    found = runs(q)
    assert len(found) == 1, f"expected one run under {q}, found {[p.name for p in found]}"
    return found[0]


def manifest(run: Path) -> dict:
    """The run's manifest as a document: its entries as dicts."""
    return {"entries": [dataclasses.asdict(e) for e in quarantine.load(run).entries]}


def offset_entries(path: Path, base: int) -> list[list[int]]:
    data = path.read_bytes()
    return [[base + rel, pos] for rel, pos in struct.iter_unpack(">ii", data[: len(data) // 8 * 8])]


def time_entries(path: Path, base: int) -> list[list[int]]:
    data = path.read_bytes()
    return [[ts, base + rel] for ts, rel in struct.iter_unpack(">qi", data[: len(data) // 12 * 12])]


def leader_epochs(path: Path) -> list[list[int]]:
    lines = path.read_text().split("\n")
    count = int(lines[1])
    return [[int(x) for x in line.split()] for line in lines[2 : 2 + count]]


def findings(doc) -> list[dict]:
    """Every finding anywhere in a verify report."""
    if isinstance(doc, dict):
        here = [doc] if {"code", "severity", "message"} <= set(doc) else []
        return here + [f for v in doc.values() for f in findings(v)]
    if isinstance(doc, list):
        return [f for v in doc for f in findings(v)]
    return []


def parallel(fn, items) -> list:
    with concurrent.futures.ThreadPoolExecutor(WORKERS) as pool:
        return list(pool.map(fn, items))


def wait_stopped(proc: subprocess.Popen, timeout: float = 60) -> bool:
    """Poll /proc until the process is stopped (state T); False when it exited first."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return False
        try:
            state = Path(f"/proc/{proc.pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            state = ""
        if state == "T":
            return True
        time.sleep(0.002)
    raise AssertionError(f"pid {proc.pid} neither stopped nor exited within {timeout} s")


def start_apply(pdir: Path, q: Path, env: dict) -> subprocess.Popen:
    environ = {k: v for k, v in os.environ.items() if k not in (STOP_AT, STOP_SIGNAL)}
    environ.update(env)
    return subprocess.Popen([str(LOGTOOL), "truncate", "--apply", "--quarantine", str(q), str(pdir)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=environ)


HOLDER = """
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o644)
(fcntl.lockf if sys.argv[2] == "lockf" else fcntl.flock)(fd, fcntl.LOCK_EX)
print("held", flush=True)
sys.stdin.read()
"""


PROBE = """
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR)
try:
    (fcntl.lockf if sys.argv[2] == "lockf" else fcntl.flock)(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
except OSError:
    print("refused")
else:
    print("locked")
"""


@contextlib.contextmanager
def lock_held(log_dir: Path, how: str):
    """A child process holding <log dir>/.lock the way a broker (lockf) or a wrapper (flock) does."""
    child = subprocess.Popen([sys.executable, "-c", HOLDER, str(log_dir / ".lock"), how],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "held"
        yield child.pid
    finally:
        child.stdin.close()
        child.wait(timeout=30)


def probe_lock(log_dir: Path, how: str) -> str:
    return subprocess.run([sys.executable, "-c", PROBE, str(log_dir / ".lock"), how], capture_output=True,
                          text=True, timeout=30).stdout.strip()


KILL_CASES = [FIRST, "corrupt-v1-bitflip", "corrupt-bitflip-last-segment", "corrupt-torn-tail",
              "corrupt-txn-torn-tail", "corrupt-v1-gzip-torn-tail", "corrupt-zero-tail", "v2-crash-preallocated",
              "corrupt-garbage-appended"]


def differs(a: dict[str, str], b: dict[str, str]) -> list[str]:
    return sorted(n for n in set(a) | set(b) if a.get(n) != b.get(n))


def resume_and_restore(s: Spec, ref: dict[str, str], root: Path, label: str) -> list[str]:
    """`root` holds a copy killed mid-repair. A second --apply must finish it to exactly the bytes of an
    uninterrupted run, in the same run; and restore of the interrupted run must give back the original
    bytes. The killed state is copied aside first (bytes and mtimes, to the same paths, since the run's
    journal and manifest name them), so that both are tried on the same kill."""
    pdir, q = root / "logs" / s.partition, root / "q"
    aside = root.with_name(root.name + "-aside")
    shutil.copytree(root, aside, symlinks=True)
    problems = []
    second = apply(pdir, q)
    now = tree(pdir)
    if second.returncode not in (EXIT_CLEAN, EXIT_REPAIRED) or now != ref:
        problems.append(f"{label}: a second --apply ended with {second.returncode} and differs from an uninterrupted "
                        f"run in {differs(now, ref)} {second.stderr.strip()}")
    if len(runs(q)) != 1:
        problems.append(f"{label}: the second --apply did not finish the interrupted run but made another: "
                        f"{[p.name for p in runs(q)]}")
    shutil.rmtree(root)
    os.rename(aside, root)  # the killed state again
    found = runs(q)
    if len(found) != 1:
        problems.append(f"{label}: {len(found)} runs after one interrupted repair")
    else:
        back = logtool("restore", found[0])
        now = tree(pdir)
        if back.returncode != EXIT_CLEAN or now != s.originals:
            problems.append(f"{label}: restore of the interrupted run ended with {back.returncode} and differs from "
                            f"the original in {differs(now, s.originals)} {back.stderr.strip()}")
    shutil.rmtree(root)
    return problems


def kill_point(s: Spec, ref: dict[str, str], k: int, root: Path) -> tuple[bool, list[str]]:
    """Kill a repair at its k-th durable step (the hook SIGKILLs the process there). (killed?, problems)"""
    base = root / f"k{k}"
    pdir = fresh(s, base)
    first = apply(pdir, base / "q", env=killed_at(k))
    if first.returncode != KILLED:
        ok = first.returncode == EXIT_REPAIRED and tree(pdir) == ref
        shutil.rmtree(base)
        return False, [] if ok else [f"k={k}: the run that was not killed ended with {first.returncode} "
                                     f"{first.stderr.strip()}"]
    return True, halfway(s, ref, tree(pdir), f"k={k}") + resume_and_restore(s, ref, base, f"k={k}")


def halfway(s: Spec, ref: dict[str, str], now: dict[str, str], label: str) -> list[str]:
    """Killed anywhere, every file of the partition is either as it was or as the uninterrupted repair leaves
    it (a step never leaves a file half-changed; logtool's own temporary files aside, which a rerun sweeps)."""
    torn = [n for n in set(now) | set(ref) | set(s.originals)
            if not LOGTOOL_TEMP.match(n) and now.get(n) not in (s.originals.get(n), ref.get(n))]
    return [f"{label}: left half-changed: {sorted(torn)}"] if torn else []


def count_kill_points(s: Spec, root: Path) -> int:
    k = 1
    while True:
        d = root / f"count-{k}"
        if apply(fresh(s, d), d / "q", env=killed_at(k)).returncode != KILLED:
            return k - 1
        k += 1


# A crash inside a step, at an exact place: a wrapper that runs the real command after arranging for the
# process to SIGKILL itself at one call.
CRASH = """
import os, signal, sys
from logtool.recovery import quarantine
where = sys.argv[1]
if where == "after-rename":  # the new file is in place; the manifest does not know its sha256 yet
    assert hasattr(quarantine.QuarantineRun, "set_after")
    quarantine.QuarantineRun.set_after = lambda *a, **k: os.kill(os.getpid(), signal.SIGKILL)
elif where == "before-rename":  # the temp file is written and fsynced, not yet renamed over the old one
    real = os.rename
    def rename(src, dst, *a, **k):
        if ".logtool-" in os.fspath(src):
            os.kill(os.getpid(), signal.SIGKILL)
        return real(src, dst, *a, **k)
    os.rename = rename
from logtool.cli import main
main(sys.argv[2:])
"""
