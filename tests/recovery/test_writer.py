"""The writer's promises for `index rebuild --apply` and `restore` (truncate has its own suite): the broker's
lock held for the whole repair, owners and modes kept, no write through a symlink, nothing outside the log
dir touched. The log dir is a copy of a Kafka-written case whose first .index is rewritten."""
from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import LOGTOOL, kafka_case, run_logtool

INDEX = "00000000000000000000.index"


@pytest.fixture
def pdir(tmp_path) -> Path:
    """A partition dir in a log dir, whose first .index differs from what recovery builds."""
    dst = tmp_path / "logs" / "orders-0"
    shutil.copytree(kafka_case("corrupt-index-wrong-positions"), dst)
    return dst


def _hashes(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and not p.is_symlink()}


def _only_run(q: Path) -> Path:
    runs = [d for d in q.iterdir() if d.is_dir()]
    assert len(runs) == 1
    return runs[0]


@pytest.mark.slow
@pytest.mark.root
def test_rebuild_and_restore_keep_owner_group_mode_and_mtime(pdir, tmp_path):
    if os.geteuid() != 0:
        pytest.skip("needs root to chown")
    for f in pdir.iterdir():
        os.chown(f, 1234, 2345)
        os.chmod(f, 0o600)
    before = {f.name: os.stat(f) for f in pdir.iterdir()}
    q = tmp_path / "q"
    p = run_logtool("index", "rebuild", "--apply", "--quarantine", str(q), str(pdir))
    assert p.returncode == 1, p.stderr
    st = os.stat(pdir / INDEX)
    assert (st.st_uid, st.st_gid, st.st_mode & 0o7777) == (1234, 2345, 0o600)
    assert _hashes(pdir)[INDEX] != hashlib.sha256((kafka_case("corrupt-index-wrong-positions") / INDEX).read_bytes()).hexdigest()
    p = run_logtool("restore", str(_only_run(q)))
    assert p.returncode == 0, p.stderr
    for f in pdir.iterdir():
        st, old = os.stat(f), before[f.name]
        assert (st.st_uid, st.st_gid, st.st_mode, st.st_mtime_ns) == (old.st_uid, old.st_gid, old.st_mode, old.st_mtime_ns)


def test_a_symlinked_index_is_refused_and_its_target_untouched(pdir, tmp_path):
    outside = tmp_path / "elsewhere.index"
    shutil.move(pdir / INDEX, outside)
    os.symlink(outside, pdir / INDEX)
    outside_hash = hashlib.sha256(outside.read_bytes()).hexdigest()
    before = _hashes(pdir)
    p = run_logtool("index", "rebuild", "--apply", "--quarantine", str(tmp_path / "q"), str(pdir))
    assert p.returncode == 8 and "symlink" in p.stderr and len(p.stderr.strip().splitlines()) == 1
    assert hashlib.sha256(outside.read_bytes()).hexdigest() == outside_hash and _hashes(pdir) == before
    assert (pdir / INDEX).is_symlink()
    v = run_logtool("verify", "--format", "json", str(pdir))
    links = [f for f in json.loads(v.stdout)["partitions"][0]["findings"] if f["name"] == "SYMLINK"]
    assert [f["file"] for f in links] == [INDEX] and str(outside) in links[0]["message"]


def test_a_symlinked_partition_dir_is_refused(pdir, tmp_path):
    real = tmp_path / "real-orders-0"
    shutil.move(pdir, real)
    os.symlink(real, pdir)
    before = _hashes(real)
    p = run_logtool("index", "rebuild", "--apply", "--quarantine", str(tmp_path / "q"), str(pdir))
    assert p.returncode == 8 and "symlink" in p.stderr
    assert _hashes(real) == before


def _holder(lock: Path, how: str) -> subprocess.Popen:
    code = ("import fcntl, os, sys; fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT); "
            "(fcntl.lockf if sys.argv[2] == 'lockf' else fcntl.flock)(fd, fcntl.LOCK_EX); "
            "print('held', flush=True); sys.stdin.read()")
    child = subprocess.Popen([sys.executable, "-c", code, str(lock), how], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
    assert child.stdout.readline().strip() == "held"
    return child


@pytest.mark.parametrize("how", ["lockf", "flock"])
def test_restore_is_refused_while_the_log_dir_is_locked(pdir, tmp_path, how):
    q = tmp_path / "q"
    assert run_logtool("index", "rebuild", "--apply", "--quarantine", str(q), str(pdir)).returncode == 1
    before = _hashes(pdir)
    holder = _holder(pdir.parent / ".lock", how)
    try:
        p = run_logtool("restore", str(_only_run(q)))
    finally:
        holder.kill()
        holder.wait()
    assert p.returncode == 8 and str(pdir.parent) in p.stderr and f"pid {holder.pid}" in p.stderr
    assert _hashes(pdir) == before


def test_rebuild_holds_the_lock_until_it_is_done(pdir, tmp_path):
    """Stopped in the middle of its writes, the repair still holds the lock a broker would need."""
    env = dict(os.environ, LOGTOOL_TEST_STOP_AT="1", LOGTOOL_TEST_STOP_SIGNAL="STOP")
    proc = subprocess.Popen([str(LOGTOOL), "index", "rebuild", "--apply", "--quarantine", str(tmp_path / "q"),
                             str(pdir)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        for _ in range(200):
            if Path(f"/proc/{proc.pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "T":
                break
            time.sleep(0.05)
        else:
            pytest.fail("the repair never reached its first step")
        fd = os.open(pdir.parent / ".lock", os.O_RDWR)
        try:
            with pytest.raises(OSError):
                fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        finally:
            os.close(fd)
    finally:
        proc.send_signal(signal.SIGCONT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 1, err
    # Never removed: a broker that opened it meanwhile would lock a deleted inode (issue 26.8).
    assert (pdir.parent / ".lock").is_file(), "the .lock the repair created is left, as a broker leaves it"
