"""`truncate --excise`: only the damaged bytes leave the log; the valid batches after them become a segment
of their own and every later segment stays. Killed at any step it resumes to the same bytes, and restore
gives back the original."""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess

import pytest
from conftest import LOGTOOL, kafka_case, run_logtool

CASE = "v2-none-mixed"


def _damaged_batch() -> dict:
    expected = json.loads((kafka_case(CASE).parent / "expected.json").read_text())
    return expected["asWritten"]["segments"][0]["log"]["batches"][5]


def _damaged_copy(root):
    """v2-none-mixed with a payload byte flipped in the middle of the first segment: Kafka's rule would drop
    the rest of that segment and the five segments after it."""
    pdir = root / "logs" / "orders-0"
    shutil.copytree(kafka_case(CASE), pdir)
    batch = _damaged_batch()
    log = pdir / "00000000000000000000.log"
    data = bytearray(log.read_bytes())
    data[batch["position"] + 100] ^= 0x10
    log.write_bytes(bytes(data))
    return pdir


def _tree(pdir) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(pdir.iterdir())}


def _apply(pdir, q, stop_at: int | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    if stop_at is not None:
        env["LOGTOOL_TEST_STOP_AT"] = str(stop_at)
    return subprocess.run([str(LOGTOOL), "truncate", "--excise", "--apply", "--quarantine", str(q), str(pdir)],
                          capture_output=True, text=True, env=env, timeout=120)


@pytest.mark.slow
def test_excise_keeps_every_valid_batch_and_restores(tmp_path):
    pdir = _damaged_copy(tmp_path)
    original = _tree(pdir)
    plan = json.loads(run_logtool("truncate", "--format", "json", str(pdir)).stdout)["partitions"][0]
    kafka_drops, excise_keeps = plan["records_removed"], plan["records_kept_by_excise"]
    # Kafka's rule drops every valid record after the damage; --excise keeps them all.
    assert kafka_drops > 300 and excise_keeps == kafka_drops
    p = _apply(pdir, tmp_path / "q")
    assert p.returncode == 1, p.stderr
    logs = sorted(x.name for x in pdir.glob("*.log"))
    assert len(logs) == 7, "every segment stays, and the batches after the damage are one more"
    v = json.loads(run_logtool("verify", "--format", "json", str(pdir)).stdout)
    errors = [f for s in v["partitions"][0]["segments"] for f in s["findings"] if f["severity"] == "error"]
    assert errors == [] and v["partitions"][0]["segments"][-1]["last_offset"] == 480
    d = run_logtool("dump", "--format", "jsonl", "--batches-only", str(pdir))
    records = sum(r.get("count", 0) for r in map(json.loads, d.stdout.splitlines()) if r["type"] == "batch")
    assert d.returncode == 0 and records == 481 - _damaged_batch()["count"], "only the damaged batch is gone"
    runs = [x for x in (tmp_path / "q").iterdir() if x.is_dir()]
    r = run_logtool("restore", str(runs[0]))
    assert r.returncode == 0, r.stderr
    assert _tree(pdir) == original


@pytest.mark.slow
def test_excise_killed_at_every_step_resumes_and_restores(tmp_path):
    reference = _damaged_copy(tmp_path / "ref")
    assert _apply(reference, tmp_path / "ref" / "q").returncode == 1
    want = _tree(reference)
    k = 1
    while True:
        resumed, undone = _damaged_copy(tmp_path / f"r{k}"), _damaged_copy(tmp_path / f"u{k}")
        original = _tree(undone)
        p = _apply(resumed, tmp_path / f"r{k}" / "q", stop_at=k)
        if p.returncode != -9:
            assert p.returncode == 1
            break
        assert _apply(resumed, tmp_path / f"r{k}" / "q").returncode in (0, 1)  # 0: killed after its last step
        assert _tree(resumed) == want, f"killed at step {k}, then resumed"
        assert _apply(undone, tmp_path / f"u{k}" / "q", stop_at=k).returncode == -9
        runs = [x for x in (tmp_path / f"u{k}" / "q").iterdir() if x.is_dir()]
        assert len(runs) == 1 and run_logtool("restore", str(runs[0])).returncode == 0
        assert _tree(undone) == original, f"killed at step {k}, then restored"
        k += 1
    assert k > 5, "an excise has more steps than that: the hook did not stop it"
