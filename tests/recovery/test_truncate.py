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

import hashlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time

import pytest
from conftest import KAFKA_WRITTEN, kafka_case, require
from support.repairs import (
    CLEAN,
    CRASH,
    CRASHED,
    DAMAGED,
    EXIT_CLEAN,
    EXIT_OPERATIONAL,
    EXIT_PROBLEMS,
    EXIT_REPAIRED,
    FIRST,
    FIRST_FROM,
    KILL_CASES,
    KILLED,
    STOP_AT,
    STOP_SIGNAL,
    WORKERS,
    apply,
    count_kill_points,
    deep_tree,
    differs,
    expected,
    findings,
    first_damaged_batch,
    fresh,
    kafka_rp0,
    kill_point,
    killed_at,
    leader_epochs,
    lock_held,
    logtool,
    manifest,
    offset_entries,
    parallel,
    probe_lock,
    resume_and_restore,
    runs,
    seg_name,
    sha,
    start_apply,
    the_run,
    time_entries,
    tree,
    wait_stopped,
)

from logtool.recovery.truncate_plan import plan_repair
from logtool.rules.expected_index import DEFAULT_INDEX_INTERVAL_BYTES

require(KAFKA_WRITTEN)


# --------------------------------------------------------------------------------------------- the cases


# --------------------------------------------------------------------------------------------- helpers


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


def repaired_torn_tail(spec, tmp_path):
    """A copy of corrupt-torn-tail repaired: (its spec, the partition dir, the quarantine run)."""
    s = spec("corrupt-torn-tail")
    pdir, q = fresh(s, tmp_path), tmp_path / "q"
    assert apply(pdir, q).returncode == EXIT_REPAIRED
    return s, pdir, the_run(q)


@pytest.mark.slow
def test_restore_refuses_files_changed_since_the_repair_unless_forced(spec, tmp_path):
    s, pdir, run = repaired_torn_tail(spec, tmp_path)
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


def test_restore_in_json_names_each_file_put_back_and_a_second_restore_does_nothing(spec, tmp_path):
    s, pdir, run = repaired_torn_tail(spec, tmp_path)
    r = logtool("restore", "--format", "json", run)
    assert r.returncode == EXIT_CLEAN, r.stderr
    doc = json.loads(r.stdout)
    assert doc["run"] == str(run) and doc["already_restored"] is False and doc["exit_code"] == EXIT_CLEAN
    kept = {str(pdir / e["name"]): e["action"] for e in manifest(run)["entries"]}
    assert len(doc["files"]) == len(kept) and {f["file"] for f in doc["files"]} == set(kept)
    assert all(f["done"] == ("removed" if kept[f["file"]] == "created" else "restored") for f in doc["files"])
    assert tree(pdir) == s.originals
    again = json.loads(logtool("restore", "--format", "json", run).stdout)
    assert again["already_restored"] is True and again["exit_code"] == EXIT_CLEAN


# --------------------------------------------------------------------------------------------- kills

KILL_POINTS: dict[str, int] = {}


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
    s, pdir, run = repaired_torn_tail(spec, tmp_path)
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
