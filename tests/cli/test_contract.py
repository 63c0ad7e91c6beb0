"""The promise every command keeps (README "Exit codes"): one exit code per class of outcome, and in the
JSON formats a stdout that parses, carries the exit code and names what went wrong, whatever went wrong.
Each command meets the same situations: a clean partition, a damaged one, a missing path, a path it may
not read, a partition with a side file it may not read, a directory that is not Kafka's, a bad option."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import kafka_case

DENYING = Path(__file__).parents[1] / "denying_logtool.py"

COMMANDS = {  # command words -> the formats it offers for machines
    "scan": ("json", "jsonl"),
    "verify": ("json", "jsonl"),
    "index verify": ("json", "jsonl"),
    "index rebuild": ("json",),
    "find --offset 5": ("json",),
    "dump": ("json", "jsonl"),
    "truncate": ("json",),
}
SITUATIONS = ("clean-0", "damaged-0", "missing-0", "unreadable-0", "side-0", "not-kafka", "--bogus")

# 0 nothing wrong, 4 problems found, 8 could not do the job, 16 usage. `find` answers about offset 5,
# which the damaged partition still holds; an unreadable leader-epoch-checkpoint stops only the commands
# whose job reads it.
EXPECTED = {
    "scan":            (0, 4, 8, 8, 8, 8, 16),
    "verify":          (0, 4, 8, 8, 8, 8, 16),
    "index verify":    (0, 4, 8, 8, 8, 8, 16),
    "index rebuild":   (0, 4, 8, 8, 0, 8, 16),
    "find --offset 5": (0, 0, 8, 8, 0, 8, 16),
    "dump":            (0, 4, 8, 8, 0, 8, 16),
    "truncate":        (0, 4, 8, 8, 8, 8, 16),
}


@pytest.fixture(scope="module")
def tree(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("contract")
    for name, case in (("clean-0", "v2-lz4"), ("damaged-0", "corrupt-torn-tail"), ("unreadable-0", "v2-lz4"),
                       ("side-0", "v2-lz4")):
        shutil.copytree(kafka_case(case), root / name)
    (root / "not-kafka").mkdir()
    (root / "not-kafka" / "notes.txt").write_text("hello\n")
    return root


def run(tree: Path, command: str, situation: str, *extra: str) -> subprocess.CompletedProcess:
    target = ["--bogus", str(tree / "clean-0")] if situation == "--bogus" else [str(tree / situation)]
    env = {**os.environ, "LOGTOOL_TEST_DENY": os.pathsep.join(
        [str(tree / "unreadable-0"), str(tree / "side-0" / "leader-epoch-checkpoint")])}
    return subprocess.run([sys.executable, str(DENYING), *command.split(), *extra, *target],
                          capture_output=True, text=True, env=env, timeout=120)


@pytest.mark.sample(1)
@pytest.mark.parametrize("command", COMMANDS)
def test_exit_codes(tree, command):
    got = tuple(run(tree, command, s).returncode for s in SITUATIONS)
    assert dict(zip(SITUATIONS, got)) == dict(zip(SITUATIONS, EXPECTED[command]))


def _parsed(stdout: str, fmt: str) -> tuple[list[dict], dict]:
    """Every object on stdout (each line must parse in jsonl) and the last, which carries the exit code."""
    if fmt == "json":
        doc = json.loads(stdout)
        return [doc], doc
    rows = [json.loads(line) for line in stdout.splitlines()]
    assert rows, "nothing on stdout"
    return rows, rows[-1]


@pytest.mark.sample(5)
@pytest.mark.parametrize("command,fmt", [(c, f) for c, fs in COMMANDS.items() for f in fs])
@pytest.mark.parametrize("situation", ["damaged-0", "missing-0", "unreadable-0", "not-kafka", "--bogus"])
def test_machine_formats_carry_every_error(tree, command, fmt, situation):
    p = run(tree, command, situation, "--format", fmt)
    rows, last = _parsed(p.stdout, fmt)
    assert last["exit_code"] == p.returncode
    if situation != "damaged-0":
        assert situation in p.stdout, "stdout does not name what could not be done"
        if fmt == "jsonl":
            assert any(r.get("type") == "error" for r in rows)


@pytest.mark.slow
def test_find_out_of_range_is_an_error_object():
    p = subprocess.run([sys.executable, str(DENYING), "find", "--format", "json", "--offset", "99999",
                        str(kafka_case("v2-lz4"))], capture_output=True, text=True, timeout=120)
    doc = json.loads(p.stdout)
    assert p.returncode == 4 and doc["type"] == "error" and doc["exit_code"] == 4 and "99999" in doc["message"]


@pytest.mark.slow
def test_jsonl_rows_say_what_they_are_and_end_with_the_summary(tree):
    missing = tree / "missing-0"
    p = run(tree, "verify", "clean-0", "--format", "jsonl", str(missing), str(tree))
    rows = [json.loads(line) for line in p.stdout.splitlines()]
    types = [r["type"] for r in rows]
    assert types[0] == "log_dir" and "error" in types and types[-1] == "summary"
    assert rows[-1]["partitions"] == types.count("partition") and rows[-1]["exit_code"] == p.returncode == 8
