"""`logtool truncate` and `logtool restore`, end to end through the installed command.

What is specified here:

* the dry run prints the plan and changes nothing (exit 4 when there is something to repair, 0 when not);
* `--apply` (exit 1) leaves exactly what Kafka's own recovery keeps (`logLoaderUnclean` with recovery
  point 0 in each case's expected.json: the kept .log files and sizes, the rebuilt indexes, the leader
  epochs), keeps every removed byte in the quarantine (only the cut tail of a truncated file), leaves a
  directory `logtool verify` finds no error in, and `logtool restore RUN` gives back every original byte;
* a repair killed at any durable step (the LOGTOOL_TEST_STOP_AT hook), at random moments, or inside a
  step, is finished by a second `--apply` to exactly the bytes of an uninterrupted run, and undone by
  `restore` to exactly the original bytes;
* the broker's lock, owners and modes, symlinks, a changed file after the repair, a second `--apply`, and
  a quarantine inside the log dir;
* the planner in-process.

Every case is a copy (under tmp_path) of a shared Kafka-written fixture, edited there when a test needs more
damage; the shared fixtures are never written to. A copy is laid out as `<root>/logs/<partition dir>` (the
log dir is `<root>/logs`) with its quarantine at `<root>/q`.
"""
from __future__ import annotations

import concurrent.futures
import contextlib
import dataclasses
import functools
import hashlib
import json
import os
import random
import shutil
import signal
import struct
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from conftest import KAFKA_WRITTEN, LOGTOOL, kafka_case, require
from logtool.recovery import quarantine
from logtool.recovery.truncate_plan import plan_repair
from logtool.rules.expected_index import DEFAULT_INDEX_INTERVAL_BYTES
from logtool.store.layout import LOGTOOL_TEMP

require(KAFKA_WRITTEN)

EXIT_CLEAN, EXIT_REPAIRED, EXIT_PROBLEMS, EXIT_OPERATIONAL = 0, 1, 4, 8
STOP_AT, STOP_SIGNAL = "LOGTOOL_TEST_STOP_AT", "LOGTOOL_TEST_STOP_SIGNAL"
KILLED = -signal.SIGKILL
WORKERS = max(2, min(4, 2 * (os.cpu_count() or 1)))  # CLI runs in parallel: each is mostly interpreter start


# --------------------------------------------------------------------------------------------- the cases

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


@pytest.fixture(scope="session")
def spec(tmp_path_factory):
    made: dict[str, Spec] = {}

    def get(case: str) -> Spec:
        if case not in made:
            made[case] = build_first(tmp_path_factory.mktemp("first")) if case == FIRST else fixture_spec(case)
        return made[case]

    return get


@pytest.fixture(scope="session")
def reference(spec, tmp_path_factory):
    """Each case's partition dir after one uninterrupted `truncate --apply`: name -> sha256."""
    done: dict[str, dict[str, str]] = {}

    def get(case: str) -> dict[str, str]:
        if case not in done:
            root = tmp_path_factory.mktemp("reference")
            pdir = fresh(spec(case), root)
            r = apply(pdir, root / "q")
            assert r.returncode == EXIT_REPAIRED, r.stderr
            done[case] = tree(pdir)
        return done[case]

    return get


# --------------------------------------------------------------------------------------------- helpers

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


# --------------------------------------------------------------------------------------------- dry run

@pytest.mark.sample(2)
@pytest.mark.parametrize("case", DAMAGED + [CRASHED, FIRST] + CLEAN)
def test_dry_run_prints_the_plan_and_changes_nothing(case, spec, tmp_path):
    s = spec(case)
    pdir = fresh(s, tmp_path)
    before = tree(pdir)
    assert before == s.originals
    text, doc = parallel(lambda fmt: logtool("truncate", "--format", fmt, "--quarantine", tmp_path / "q", pdir),
                         ["text", "json"])
    assert tree(pdir) == before and not (tmp_path / "q").exists() and sorted(os.listdir(tmp_path / "logs")) == [pdir.name]
    damaged = case not in CLEAN
    assert text.returncode == doc.returncode == (EXIT_PROBLEMS if damaged else EXIT_CLEAN), text.stderr + doc.stderr
    plan = json.loads(doc.stdout)
    assert plan["applied"] is False and plan["run"] is None and plan["problems"] == []
    [part] = plan["partitions"]
    assert part["log_end_offset_after"] == s.log_end
    acts = part["actions"]
    for a in acts:
        assert {"action", "files", "bytes_removed", "byte_range", "offsets", "records", "to_bytes"} <= set(a)
    if not damaged:
        assert {a["action"] for a in acts} == {"keep"} and part["cut_at"] is None
        assert part["log_end_offset_before"] == part["log_end_offset_after"]
        return
    sizes = {n: len((s.source / n).read_bytes()) for n in s.originals}
    [cut] = [a for a in acts if a["action"] == "truncate"]
    name = cut["files"][0]
    assert cut["to_bytes"] == s.kept_logs[name], "cut where Kafka's recovery cuts"
    assert cut["byte_range"] == [cut["to_bytes"], sizes[name]]
    assert cut["bytes_removed"] == sizes[name] - cut["to_bytes"]
    assert part["cut_at"]["file"] == name and part["cut_at"]["position"] == cut["to_bytes"]
    kept = {a["files"][0] for a in acts if a["action"] == "keep"} | {name}
    assert kept == set(s.kept_logs), "every .log Kafka keeps is kept or cut, no other"
    dropped = [a for a in acts if a["action"] == "quarantine segment"]
    assert {a["files"][0] for a in dropped} == {n for n in sizes if n.endswith(".log")} - kept
    segs = {seg_name(g["baseOffset"], ".log"): g for g in expected(FIRST_FROM if case == FIRST else case)["asWritten"]["segments"]}
    for a in dropped:  # a dropped segment goes whole, with its indexes, and the plan counts its records
        g = segs[a["files"][0]]
        assert a["bytes_removed"] == sizes[a["files"][0]] and a["byte_range"] == [0, sizes[a["files"][0]]]
        assert a["records"] == sum(b["count"] for b in g["log"]["batches"])
        assert a["offsets"] == [g["log"]["batches"][0]["baseOffset"], g["log"]["batches"][-1]["lastOffset"]]
        stem = a["files"][0][: -len(".log")]
        assert set(a["files"]) == {n for n in sizes if n.startswith(stem) and not n.endswith(".snapshot")}
    assert part["valid_records_dropped"] == sum(a["records"] for a in dropped)


def test_dry_run_text_names_the_cut(spec, tmp_path):
    s = spec("corrupt-torn-tail")
    pdir = fresh(s, tmp_path)
    r = logtool("truncate", pdir)
    assert r.returncode == EXIT_PROBLEMS
    assert "00000000000000000457.log to 2139 bytes" in r.stdout and "--apply" in r.stdout
    assert tree(pdir) == s.originals


# --------------------------------------------------------------------------------------------- apply and restore

@pytest.mark.sample(1)
@pytest.mark.parametrize("case", DAMAGED + [CRASHED, FIRST])
def test_apply_keeps_what_kafka_keeps_and_restore_gives_back_every_byte(case, spec, tmp_path):
    s = spec(case)
    pdir, q = fresh(s, tmp_path), tmp_path / "q"
    originals = {n: (pdir / n).read_bytes() for n in s.originals}
    r = apply(pdir, q)
    assert r.returncode == EXIT_REPAIRED, r.stderr
    run = the_run(q)
    assert str(run) in r.stderr

    # What stays is what Kafka's recovery (recovery point 0) keeps. The cut segment's indexes are the ones
    # Kafka's recovery rebuilds; the indexes of the segments before it, right as they were written, stay as
    # they are (a repair changes a file only where a check finds it wrong).
    assert {p.name: p.stat().st_size for p in pdir.glob("*.log")} == s.kept_logs
    cut = {n for n, size in s.kept_logs.items() if size != len(originals.get(n, b""))}
    for base, entries in s.offset_index.items():
        name = seg_name(base, ".index")
        if seg_name(base, ".log") in cut:
            assert offset_entries(pdir / name, base) == entries, f"{base}: offset index"
        elif seg_name(base, ".log") in s.kept_logs and name in originals:
            assert (pdir / name).read_bytes() == originals[name], f"{base}: a right offset index was rewritten"
    for base, entries in (s.time_index or {}).items():
        if seg_name(base, ".log") in cut:
            assert time_entries(pdir / seg_name(base, ".timeindex"), base) == entries, f"{base}: time index"
    if s.leader_epochs is not None:
        assert leader_epochs(pdir / "leader-epoch-checkpoint") == s.leader_epochs

    # Every original byte is either still in the log dir or in the quarantine, and the quarantine holds
    # only removed bytes: the cut tail of a truncated file, never a copy of what stays.
    entries = {e["name"]: e for e in manifest(run)["entries"]}
    stored_total = 0
    for name, data in originals.items():
        e = entries.get(name)
        now = (pdir / name).read_bytes() if (pdir / name).exists() else None
        if e is None:
            assert now == data, f"{name} changed but the quarantine does not hold it"
            continue
        stored = (run / e["stored"]).read_bytes()
        stored_total += len(stored)
        assert e["size"] == len(data) and e["sha256"] == hashlib.sha256(data).hexdigest()
        if e["action"] == "truncated":
            assert now is not None and len(now) == e["truncated_to"]
            assert len(stored) == len(data) - len(now), f"{name}: the quarantine keeps only the cut tail"
            assert now + stored == data
        elif e["action"] == "removed":
            assert now is None and stored == data
        else:
            assert e["action"] == "replaced" and stored == data and now is not None
            assert hashlib.sha256(now).hexdigest() == e["after_sha256"]
    assert not [n for n in os.listdir(pdir) if n not in originals and entries.get(n, {}).get("action") != "created"]
    assert sum(p.stat().st_size for p in (run / "files").iterdir()) == stored_total

    # The repaired dir has no error left.
    v = logtool("verify", "--deep", "--format", "json", pdir)
    errors = [f for f in findings(json.loads(v.stdout)) if f["severity"] == "error"]
    assert v.returncode in (EXIT_CLEAN, EXIT_PROBLEMS) and not errors, errors
    assert v.returncode == EXIT_CLEAN or findings(json.loads(v.stdout))

    # A second --apply has nothing to do.
    repaired = tree(pdir)
    again = apply(pdir, q)
    assert again.returncode == EXIT_CLEAN, again.stderr
    assert tree(pdir) == repaired and runs(q) == [run]

    # restore gives back every file, byte for byte, and nothing else.
    back = logtool("restore", run)
    assert back.returncode == EXIT_CLEAN, back.stderr
    assert tree(pdir) == s.originals


@pytest.mark.slow
def test_restore_refuses_files_changed_since_the_repair_unless_forced(spec, tmp_path):
    s = spec("corrupt-torn-tail")
    pdir, q = fresh(s, tmp_path), tmp_path / "q"
    assert apply(pdir, q).returncode == EXIT_REPAIRED
    run = the_run(q)
    changed = [n for n, e in ((e["name"], e) for e in manifest(run)["entries"]) if e["action"] in ("truncated", "replaced")]
    assert {"00000000000000000457.log", "00000000000000000457.timeindex"} <= set(changed)
    for n in ("00000000000000000457.log", "00000000000000000457.timeindex"):
        with open(pdir / n, "ab") as f:
            f.write(b"appended")
    edited, run_before = tree(pdir), deep_tree(run)
    r = logtool("restore", run)
    assert r.returncode == EXIT_OPERATIONAL
    assert str(pdir / "00000000000000000457.log") in r.stderr and str(pdir / "00000000000000000457.timeindex") in r.stderr
    assert tree(pdir) == edited and deep_tree(run) == run_before, "nothing was written"
    forced = logtool("restore", "--force", run)
    assert forced.returncode == EXIT_CLEAN, forced.stderr
    assert tree(pdir) == s.originals


# --------------------------------------------------------------------------------------------- kills

KILL_CASES = [FIRST, "corrupt-v1-bitflip", "corrupt-bitflip-last-segment", "corrupt-torn-tail",
              "corrupt-txn-torn-tail", "corrupt-v1-gzip-torn-tail", "corrupt-zero-tail", "v2-crash-preallocated",
              "corrupt-garbage-appended"]
KILL_POINTS: dict[str, int] = {}


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


@pytest.mark.slow
@pytest.mark.parametrize("case", KILL_CASES)
def test_killed_at_every_durable_step_resumes_or_restores(case, spec, reference, tmp_path):
    """k = 1, 2, 3, ... until a run completes: every k that kills is one kill point. The hook stops the
    process at the same place on every copy, so the state one copy is left in is exactly what another fresh
    copy killed at k would be left in: it is resumed, and (copied aside before) restored."""
    s, ref = spec(case), reference(case)
    problems, killed, k, completed = [], 0, 1, False
    while not completed:
        batch = range(k, k + WORKERS)
        for was_killed, found in parallel(lambda j: kill_point(s, ref, j, tmp_path), batch):
            killed += was_killed
            completed |= not was_killed
            problems += found
        k += WORKERS
        assert k < 500, "the repair never completed"
    KILL_POINTS[case] = killed
    changed = sum(1 for n in set(ref) | set(s.originals) if ref.get(n) != s.originals.get(n))
    assert killed > changed, "every changed file takes at least one durable step, and so does the journal"
    assert not problems, "\n".join(problems)


def count_kill_points(s: Spec, root: Path) -> int:
    k = 1
    while True:
        d = root / f"count-{k}"
        if apply(fresh(s, d), d / "q", env=killed_at(k)).returncode != KILLED:
            return k - 1
        k += 1


@pytest.mark.slow
def test_kill_points_cover_at_least_100_steps(spec, tmp_path):
    for case in KILL_CASES:  # counted here when the matrix above was deselected
        if case not in KILL_POINTS:
            KILL_POINTS[case] = count_kill_points(spec(case), tmp_path / case)
    print("kill points:", KILL_POINTS, "total", sum(KILL_POINTS.values()))
    assert sum(KILL_POINTS.values()) >= 100


@pytest.mark.slow
def test_killed_at_random_moments_resumes_or_restores(spec, reference, tmp_path):
    """Stopped at a seeded random step (SIGSTOP through the hook), let go, then SIGKILLed from here after a
    seeded random delay: the kill lands anywhere inside the steps that follow, not only between them. The
    killed state is both resumed and restored."""
    s, ref = spec(FIRST), reference(FIRST)
    rnd = random.Random(20241025)
    plans = [(i, rnd.randint(1, 45), rnd.uniform(0.0, 0.02)) for i in range(6)]

    def one(plan) -> list[str]:
        i, k, delay = plan
        root = tmp_path / f"r{i}"
        pdir = fresh(s, root)
        proc = start_apply(pdir, root / "q", {STOP_AT: str(k), STOP_SIGNAL: "STOP"})
        try:
            if wait_stopped(proc):
                os.kill(proc.pid, signal.SIGCONT)
                time.sleep(delay)
                os.kill(proc.pid, signal.SIGKILL)
        finally:
            proc.communicate(timeout=60)
        if proc.returncode != KILLED:
            return [] if proc.returncode == EXIT_REPAIRED and tree(pdir) == ref else [f"#{i}: ended {proc.returncode}"]
        return resume_and_restore(s, ref, root, f"#{i} (SIGKILL {delay * 1000:.1f} ms after step {k})")

    problems = [p for found in parallel(one, plans) for p in found]
    assert not problems, "\n".join(problems)


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


@pytest.mark.slow
@pytest.mark.parametrize("where", ["before-rename", "after-rename"])
def test_killed_inside_a_file_replacement_resumes_and_restores(where, spec, reference, tmp_path):
    s, ref = spec("corrupt-torn-tail"), reference("corrupt-torn-tail")
    results = {}
    for what in ("resume", "restore"):
        root = tmp_path / what
        pdir, q = fresh(s, root), root / "q"
        crash = subprocess.run([sys.executable, "-c", CRASH, where, "truncate", "--apply", "--quarantine", str(q),
                                str(pdir)], capture_output=True, text=True, timeout=120)
        assert crash.returncode == KILLED, crash.stderr
        assert (pdir / "00000000000000000457.log").stat().st_size == 2139, "killed after the cut"
        r = apply(pdir, q) if what == "resume" else logtool("restore", the_run(q))
        results[what] = (r.returncode, tree(pdir), r.stderr)
    code, now, err = results["resume"]
    assert code == EXIT_REPAIRED and now == ref, f"a second --apply leaves {sorted(set(now) ^ set(ref))}: {err}"
    code, now, err = results["restore"]
    assert code == EXIT_CLEAN, f"restore of the interrupted run refused: {err}"
    assert now == s.originals, f"restore leaves {sorted(set(now) ^ set(s.originals))}"


@pytest.mark.slow
def test_killed_run_given_by_relative_paths_is_finished_by_the_same_command(spec, reference, tmp_path):
    """The user's own words, `logtool truncate --apply --quarantine q logs/orders-0` from the same
    directory, killed right after the first segment was cut and run again: the journal must be found and
    finished (the later segments go, as in an uninterrupted run), not a new plan made of the half-repaired
    dir (where the cut segment looks clean and the later segments would stay)."""
    s, ref = spec(FIRST), reference(FIRST)
    cut = s.kept_logs[seg_name(0, ".log")]
    for k in range(1, 10):
        root = tmp_path / f"k{k}"
        pdir = fresh(s, root)
        args = ["truncate", "--apply", "--quarantine", "q", f"logs/{s.partition}"]
        assert logtool(*args, env=killed_at(k), cwd=root).returncode == KILLED
        if (pdir / seg_name(0, ".log")).stat().st_size == cut:
            break
    assert (pdir / seg_name(94, ".log")).exists(), "killed after the cut, before the later segments went"
    again = logtool(*args, cwd=root)
    now = tree(pdir)
    assert now == ref, f"differs from an uninterrupted run in {differs(now, ref)}"
    assert len(runs(root / "q")) == 1, "the interrupted run was left unfinished and another one made"
    assert again.returncode == EXIT_REPAIRED and "finished the interrupted repair" in again.stderr, again.stderr


# --------------------------------------------------------------------------------------------- the broker's lock

@pytest.mark.slow
@pytest.mark.parametrize("how", ["lockf", "flock"])
def test_apply_refuses_while_the_log_dir_is_locked(how, spec, tmp_path):
    s = spec("corrupt-torn-tail")
    pdir, q = fresh(s, tmp_path), tmp_path / "q"
    log_dir = pdir.parent
    with lock_held(log_dir, how):
        r = apply(pdir, q)
        assert r.returncode == EXIT_OPERATIONAL
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and str(log_dir) in lines[0], r.stderr
        assert tree(pdir) == s.originals and runs(q) == []
    r = apply(pdir, q)  # the lock, and nothing else, stopped it
    assert r.returncode == EXIT_REPAIRED, r.stderr


@pytest.mark.slow
def test_restore_refuses_while_the_log_dir_is_locked(spec, tmp_path):
    s = spec("corrupt-torn-tail")
    pdir, q = fresh(s, tmp_path), tmp_path / "q"
    assert apply(pdir, q).returncode == EXIT_REPAIRED
    run = the_run(q)
    repaired, run_before = tree(pdir), deep_tree(run)
    with lock_held(pdir.parent, "lockf"):
        r = logtool("restore", run)
        assert r.returncode == EXIT_OPERATIONAL and str(pdir.parent) in r.stderr, r.stderr
        assert tree(pdir) == repaired and deep_tree(run) == run_before, "nothing written"
    assert logtool("restore", run).returncode == EXIT_CLEAN
    assert tree(pdir) == s.originals


@pytest.mark.slow
def test_a_repair_holds_the_lock_while_it_runs(spec, reference, tmp_path):
    s = spec("corrupt-torn-tail")
    pdir, q = fresh(s, tmp_path), tmp_path / "q"
    proc = start_apply(pdir, q, {STOP_AT: "2", STOP_SIGNAL: "STOP"})
    try:
        assert wait_stopped(proc), "the repair ended before its 2nd durable step"
        assert len(runs(q)) == 1, "stopped inside the repair, its run begun"
        assert probe_lock(pdir.parent, "lockf") == "refused", "a broker could start meanwhile"
        assert probe_lock(pdir.parent, "flock") == "refused"
    finally:
        os.kill(proc.pid, signal.SIGCONT)
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == EXIT_REPAIRED, err
    assert tree(pdir) == reference("corrupt-torn-tail")


# --------------------------------------------------------------------------------------------- owners and modes

@pytest.mark.slow
@pytest.mark.root
def test_owner_group_mode_and_mtime_are_kept(spec, tmp_path):
    if os.geteuid() != 0:
        pytest.skip("needs root to chown")
    s = spec(FIRST)
    pdir, q = fresh(s, tmp_path), tmp_path / "q"
    (pdir / seg_name(0, ".timeindex")).unlink()  # so that the repair also creates a file
    for i, p in enumerate(sorted(pdir.iterdir())):
        os.chown(p, 1234, 2345)
        os.chmod(p, 0o600)
        os.utime(p, ns=(1_600_000_000_000_000_000 + i * 1_000_003, 1_600_000_000_000_000_000 + i * 1_000_003))
    before = {p.name: (p.stat().st_uid, p.stat().st_gid, p.stat().st_mode & 0o7777, p.stat().st_mtime_ns, sha(p))
              for p in pdir.iterdir()}
    r = apply(pdir, q)
    assert r.returncode == EXIT_REPAIRED, r.stderr
    assert (pdir / seg_name(0, ".timeindex")).exists() and (pdir / "leader-epoch-checkpoint").exists()
    for p in pdir.iterdir():
        st = p.stat()
        assert (st.st_uid, st.st_gid, st.st_mode & 0o7777) == (1234, 2345, 0o600), p.name
    back = logtool("restore", the_run(q))
    assert back.returncode == EXIT_CLEAN, back.stderr
    after = {p.name: (p.stat().st_uid, p.stat().st_gid, p.stat().st_mode & 0o7777, p.stat().st_mtime_ns, sha(p))
             for p in pdir.iterdir()}
    assert after == before


# --------------------------------------------------------------------------------------------- symlinks

@pytest.mark.slow
def test_symlinked_partition_dir_is_refused(spec, tmp_path):
    s = spec("corrupt-torn-tail")
    target = fresh(s, tmp_path / "elsewhere")
    log_dir = tmp_path / "logs"
    log_dir.mkdir()
    (log_dir / s.partition).symlink_to(target, target_is_directory=True)
    before = deep_tree(tmp_path)
    r = apply(log_dir / s.partition, tmp_path / "q")
    assert r.returncode == EXIT_OPERATIONAL
    assert str(log_dir / s.partition) in r.stderr
    assert {k: v for k, v in deep_tree(tmp_path).items() if not k.startswith("q/") and k != "q"} == before
    assert tree(target) == s.originals
    real = apply(target, tmp_path / "q")  # where it points, by that path, as the refusal says
    assert real.returncode == EXIT_REPAIRED, real.stderr
    assert {p.name: p.stat().st_size for p in target.glob("*.log")} == s.kept_logs


@pytest.mark.slow
def test_symlinked_index_that_would_be_rebuilt_is_refused_before_any_write(spec, tmp_path):
    """corrupt-v1-bitflip: the plan cuts 00000000000000000272.log and rebuilds its indexes; its .timeindex is
    a symlink to a file outside the log dir."""
    s = spec("corrupt-v1-bitflip")
    pdir = fresh(s, tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    index = pdir / seg_name(272, ".timeindex")
    shutil.move(index, outside / index.name)
    index.symlink_to(outside / index.name)
    plan = json.loads(logtool("truncate", "--format", "json", pdir).stdout)
    assert index.name in [f for a in plan["partitions"][0]["actions"] if a["action"] == "rebuild indexes" for f in a["files"]]
    logs_before, outside_before = deep_tree(tmp_path / "logs"), deep_tree(outside)
    r = apply(pdir, tmp_path / "q")
    assert r.returncode == EXIT_OPERATIONAL
    assert index.name in r.stderr
    assert deep_tree(outside) == outside_before, "the file outside the log dir was written"
    now = deep_tree(tmp_path / "logs")
    assert now == logs_before, f"refused after writing: {sorted(n for n in now if now[n] != logs_before.get(n))}"


# --------------------------------------------------------------------------------------------- quarantine

@pytest.mark.parametrize("where", ["log dir", "partition dir"])
def test_quarantine_inside_the_log_dir_is_refused(where, spec, tmp_path):
    s = spec("corrupt-torn-tail")
    pdir = fresh(s, tmp_path)
    q = (pdir.parent if where == "log dir" else pdir) / "quarantine"
    before = deep_tree(tmp_path)
    r = apply(pdir, q)
    assert r.returncode == EXIT_OPERATIONAL and "quarantine" in r.stderr, r.stderr
    assert deep_tree(tmp_path) == before and not q.exists()


# --------------------------------------------------------------------------------------------- the planner

def test_plan_of_a_clean_partition_has_nothing_pending():
    plan = plan_repair([kafka_case("v2-none-mixed")], False, DEFAULT_INDEX_INTERVAL_BYTES)
    assert plan.problems == [] and plan.pending == []
    [part] = plan.partitions
    assert {a.action for a in part.actions} == {"keep"}
    assert part.log_end_before == part.log_end_after == kafka_rp0("v2-none-mixed")["logEndOffset"]
    assert sum(a.records for a in part.actions) == sum(
        b["count"] for g in expected("v2-none-mixed")["asWritten"]["segments"] for b in g["log"]["batches"])


def test_plan_drops_the_later_segments_with_their_records(spec):
    s = spec(FIRST)
    plan = plan_repair([s.source], False, DEFAULT_INDEX_INTERVAL_BYTES)
    [part] = plan.pending
    later = expected(FIRST_FROM)["asWritten"]["segments"][1:]
    assert part.valid_records_dropped == sum(b["count"] for g in later for b in g["log"]["batches"])
    assert part.log_end_after == s.log_end == first_damaged_batch()["baseOffset"]
    doc = json.loads(json.dumps(plan.to_dict()))
    assert doc["partitions"][0]["valid_records_dropped"] == part.valid_records_dropped
    assert [a["files"][0] for a in doc["partitions"][0]["actions"] if a["action"] == "quarantine segment"] == \
        [seg_name(g["baseOffset"], ".log") for g in later]


@pytest.mark.parametrize("case", DAMAGED + [CRASHED])
def test_plan_agrees_with_kafka(case):
    plan = plan_repair([kafka_case(case)], False, DEFAULT_INDEX_INTERVAL_BYTES)
    [part] = plan.pending
    rp0 = kafka_rp0(case)
    assert part.log_end_after == rp0["logEndOffset"]
    [cut] = [a for a in part.actions if a.action == "truncate"]
    assert cut.to_bytes == {seg_name(g["baseOffset"], ".log"): g["size"] for g in rp0["segments"]}[cut.files[0]]
    recovered = {seg_name(r["baseOffset"], ".log"): r["truncatedBytes"] for r in expected(case)["segmentRecover"]}
    assert cut.bytes_removed == recovered[cut.files[0]]
