"""The log dir's own blockers are part of the repair, and the verdict says what the broker would do.

* `truncate` plans, and `--apply` carries out through the one executor, the log-dir entries that stop a broker
  or that it ignores: a directory that is not a partition (`lost+found`: the broker refuses to start) goes to
  the quarantine whole (its files, owners, modes), a checkpoint's `.tmp` leftover too; `restore` puts both
  back; killed at any step, a rerun finishes and `restore` undoes.
* the verdict (`recovery.verdict`): per log dir, whether the broker would start and, if not, every reason
  with its fix; what recovery would cut and drop per damaged partition; the next commands.

Every case is a copy of the bundled sample log dir (written by kafka-python's builders), edited there.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
from pathlib import Path

import pytest
from conftest import LOGTOOL, ROOT

from logtool.checks.engine import run_checks
from logtool.recovery.verdict import verdicts

SAMPLE = ROOT / "fixtures" / "sample-logdir"
KILLED = -signal.SIGKILL


def logtool(*args, env: dict | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("LOGTOOL_TEST_")}
    environ.update(env or {})
    return subprocess.run([str(LOGTOOL), *map(str, args)], capture_output=True, text=True, env=environ, cwd=cwd,
                          timeout=120)


def blocked_copy(root: Path) -> Path:
    """The sample log dir with a `lost+found` holding one file (as e2fsck leaves it) and a checkpoint's
    `.tmp` leftover; its clicks-2 has a corrupt batch already."""
    log_dir = root / "logs"
    shutil.copytree(SAMPLE, log_dir)
    lost = log_dir / "lost+found"
    lost.mkdir(mode=0o700)
    (lost / "#1234").write_bytes(b"an inode e2fsck found")
    os.chown(lost / "#1234", 1234, 2345)
    os.chmod(lost / "#1234", 0o640)
    os.utime(lost / "#1234", ns=(1_600_000_000_000_000_000, 1_600_000_000_000_000_000))
    (log_dir / "recovery-point-offset-checkpoint.tmp").write_text("0\n1\nclicks-2 0 \n")
    return log_dir


def state(top: Path, mtimes: bool = True) -> dict[str, tuple]:
    """Every entry under `top` (the `.lock` a repair creates aside): bytes, owner, mode, and mtime of files
    (not for a repaired state: files a repair writes get the time they were written)."""
    out = {}
    for d, dirs, files in os.walk(top):
        for n in dirs + files:
            p = Path(d) / n
            rel = str(p.relative_to(top))
            if rel == ".lock":
                continue
            st = p.lstat()
            body = p.read_bytes() if p.is_file() else b"<dir>"
            out[rel] = (body, st.st_uid, st.st_gid, st.st_mode, st.st_mtime_ns if p.is_file() and mtimes else None)
    return out


@pytest.mark.slow
@pytest.mark.root
def test_the_plan_moves_a_refused_dir_and_a_tmp_leftover_and_restore_puts_them_back(tmp_path):
    log_dir, q = blocked_copy(tmp_path), tmp_path / "q"
    before = state(log_dir)
    plan = logtool("truncate", "--format", "json", log_dir)
    assert plan.returncode == 4, plan.stderr
    actions = {a["action"]: a["files"] for a in json.loads(plan.stdout)["log_dirs"]}
    assert actions["move directory to quarantine"] == ["lost+found"]
    assert actions["remove .tmp leftover"] == ["recovery-point-offset-checkpoint.tmp"]
    assert state(log_dir) == before, "the dry run wrote"

    r = logtool("truncate", "--apply", "--quarantine", q, log_dir)
    assert r.returncode == 1, r.stderr
    assert not (log_dir / "lost+found").exists() and not (log_dir / "recovery-point-offset-checkpoint.tmp").exists()
    v = logtool("verify", "--format", "json", log_dir)
    assert v.returncode == 0, v.stdout  # nothing left: the broker starts, and loses nothing
    (verdict,) = json.loads(v.stdout)["verdict"]
    assert verdict["broker_starts"] and not verdict["blockers"] and not verdict["recovery"]

    (run,) = [p for p in q.iterdir() if p.is_dir()]
    back = logtool("restore", run)
    assert back.returncode == 0, back.stderr
    assert state(log_dir) == before, "restore did not give back the log dir as it was"


@pytest.mark.slow
@pytest.mark.root
def test_killed_at_every_step_a_rerun_finishes_and_restore_undoes(tmp_path):
    """The hook stops the process at the same step on every copy: one copy killed at k is finished by a rerun,
    another killed at the same k is undone by `restore` (owners, modes and mtimes too)."""
    reference = blocked_copy(tmp_path / "ref")
    assert logtool("truncate", "--apply", "--quarantine", tmp_path / "ref-q", reference).returncode == 1
    finished = state(reference, mtimes=False)
    k, killed = 1, 0
    while True:
        copies = {what: blocked_copy(tmp_path / f"k{k}-{what}") for what in ("rerun", "restore")}
        original = state(copies["restore"])
        runs = {what: logtool("truncate", "--apply", "--quarantine", d.parent / "q", d,
                              env={"LOGTOOL_TEST_STOP_AT": str(k)}) for what, d in copies.items()}
        if runs["rerun"].returncode != KILLED:
            assert runs["rerun"].returncode == 1, runs["rerun"].stderr
            assert state(copies["rerun"], mtimes=False) == finished
            break
        killed += 1
        log_dir = copies["rerun"]
        again = logtool("truncate", "--apply", "--quarantine", log_dir.parent / "q", log_dir)
        # 0 when the kill came after the journal's last mark: the repair was whole already
        assert again.returncode in (0, 1) and state(log_dir, mtimes=False) == finished, f"k={k}: {again.stderr}"
        log_dir = copies["restore"]
        (run,) = [p for p in (log_dir.parent / "q").iterdir() if p.is_dir()]
        back = logtool("restore", run)
        assert back.returncode == 0 and state(log_dir) == original, f"k={k}: {back.stderr}"
        for d in copies.values():
            shutil.rmtree(d.parent)
        k += 1
        assert k < 60, "the repair never completed"
    assert killed >= 5


@pytest.mark.root
def test_the_verdict_names_every_reason_the_broker_would_not_start(tmp_path):
    log_dir = blocked_copy(tmp_path)
    (verdict,) = verdicts(run_checks([log_dir], False))
    assert not verdict.starts
    assert [(b.finding.name, b.finding.file) for b in verdict.blockers] == [("NOT_KAFKA", "lost+found")]
    assert "refuses to start" in verdict.blockers[0].effect.value
    (loss,) = verdict.losses
    assert loss.partition.endswith("clicks-2") and loss.bytes_cut == 1477 and loss.segments_deleted == 0
    assert verdict.next_steps == [f"logtool truncate {log_dir}"]


def test_the_verdict_counts_what_recovery_drops_and_says_how_to_keep_it(tmp_path):
    """Damage in the first of several segments: recovery cuts there and deletes every later segment, so the
    verdict counts their valid records and first says how to keep them (`dump --salvage`)."""
    log_dir = tmp_path / "logs"
    shutil.copytree(SAMPLE, log_dir)
    first = log_dir / "orders-0" / "00000000000000000000.log"
    data = bytearray(first.read_bytes())
    data[200] ^= 0x01  # inside the first batch's records: its CRC fails
    first.write_bytes(bytes(data))
    v = {x.log_dir: x for x in verdicts(run_checks([log_dir], False))}[str(log_dir)]
    assert v.starts
    loss = next(x for x in v.losses if x.partition.endswith("orders-0"))
    assert loss.segments_deleted == 2 and loss.valid_records_dropped > 0
    assert loss.log_end_after < loss.log_end_as_written
    assert v.next_steps[0].startswith(f"logtool dump {log_dir / 'orders-0'} --salvage --format jsonl > ")
    assert v.next_steps[-1] == f"logtool truncate {log_dir}"


def two_log_dirs(root: Path) -> tuple[Path, Path]:
    """Two log dirs of the sample's broker; the second has lost its meta.properties."""
    a, b = root / "a", root / "b"
    shutil.copytree(SAMPLE, a)
    shutil.copytree(SAMPLE, b)
    for gone in ("clicks-2", "orders-0"):
        shutil.rmtree(b / gone)
    for gone in ("payments-1", "legacy-events-0"):
        shutil.rmtree(a / gone)
    for name in ("recovery-point-offset-checkpoint", "replication-offset-checkpoint", "log-start-offset-checkpoint"):
        for d, kept in ((a, ("clicks", "orders")), (b, ("payments", "legacy-events"))):
            lines = (d / name).read_text().splitlines()
            entries = [x for x in lines[2:] if x.split()[0] in kept]
            (d / name).write_text("\n".join(["0", str(len(entries)), *entries]) + "\n")
    (b / "meta.properties").unlink()
    return a, b


@pytest.mark.slow
def test_a_missing_meta_properties_is_rebuilt_from_the_other_log_dirs(tmp_path):
    from logtool.format.meta import meta_identity, properties

    a, b = two_log_dirs(tmp_path)
    q = tmp_path / "q"
    r = logtool("truncate", "--apply", "--quarantine", q, a, b)
    assert r.returncode == 1, r.stderr
    mine, theirs = (meta_identity(properties((d / "meta.properties").read_text())) for d in (b, a))
    assert (mine.version, mine.cluster_id, mine.node_id) == (theirs.version, theirs.cluster_id, theirs.node_id)
    assert mine.directory_id and mine.directory_id != theirs.directory_id
    assert (b / "meta.properties").stat().st_uid == b.stat().st_uid
    v = json.loads(logtool("verify", "--format", "json", a, b).stdout)
    names = {f["name"] for d in v["log_dirs"] for f in d["findings"]}
    assert not names & {"META_PROPERTIES_MISSING", "META_PROPERTIES_INVALID", "META_PROPERTIES_MISMATCH"}, names
    (run,) = [p for p in q.iterdir() if p.is_dir()]
    assert logtool("restore", run).returncode == 0 and not (b / "meta.properties").exists()


@pytest.mark.slow
def test_a_missing_meta_properties_with_no_answer_is_explained_not_guessed(tmp_path):
    _, b = two_log_dirs(tmp_path)
    plan = json.loads(logtool("truncate", "--format", "json", b).stdout)
    assert not [x for x in plan["log_dirs"] if x["action"] == "rebuild meta.properties"]
    (note,) = plan["log_dir_notes"]
    assert "cannot be rebuilt" in note["note"] and "kafka-storage.sh format" in note["note"]
    assert "meta.properties is missing and cannot be rebuilt" in logtool("truncate", b).stdout, "text says it too"


@pytest.mark.slow
def test_a_plan_of_only_log_dir_changes_is_not_called_nothing_to_repair(tmp_path):
    """A log dir whose partitions are whole but that holds a refused directory and two .tmp leftovers: the
    text names every file it moves and says there is something to do."""
    log_dir = tmp_path / "logs"
    shutil.copytree(SAMPLE, log_dir)
    assert logtool("truncate", "--apply", "--quarantine", tmp_path / "q0", log_dir).returncode == 1  # clicks-2
    (log_dir / "lost+found").mkdir()
    for name in ("recovery-point-offset-checkpoint.tmp", "log-start-offset-checkpoint.tmp"):
        (log_dir / name).write_text("0\n0\n")
    text = logtool("truncate", log_dir)
    assert text.returncode == 4
    assert "nothing to repair\n" not in text.stdout.splitlines()[-1] + "\n"
    assert "0 of 4 partition(s) to repair and 2 change(s) to log dirs' own files" in text.stdout
    assert "log-start-offset-checkpoint.tmp, recovery-point-offset-checkpoint.tmp" in text.stdout


@pytest.mark.slow
@pytest.mark.root
def test_verify_prints_the_verdict_in_text_json_and_json_lines(tmp_path):
    log_dir = blocked_copy(tmp_path)
    text = logtool("verify", log_dir)
    assert f"verdict {log_dir}: the broker would not start with it:" in text.stdout
    assert f"\n    logtool truncate {log_dir}\n" in text.stdout, "the next command on a line of its own"
    (doc,) = json.loads(logtool("verify", "--format", "json", log_dir).stdout)["verdict"]
    rows = [json.loads(line) for line in logtool("verify", "--format", "jsonl", log_dir).stdout.splitlines()]
    (row,) = [r for r in rows if r["type"] == "verdict"]
    assert rows[-1]["type"] == "summary" and {k: v for k, v in row.items() if k != "type"} == doc
    assert doc["broker_starts"] is False and [b["file"] for b in doc["blockers"]] == ["lost+found"]
    assert doc["recovery_bytes_cut"] == 1477 and doc["next"] == [f"logtool truncate {log_dir}"]
