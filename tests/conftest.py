"""Shared test helpers: where the shared fixtures live, and how to run the installed command."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = (ROOT.parent / "shared" / "fixtures").resolve()
KAFKA_WRITTEN = SHARED / "kafka-written"
REAL = SHARED / "real"
LOGTOOL = Path(sys.executable).with_name("logtool")


def require(path: Path) -> Path:
    """Shared fixtures are part of the test contract (CI puts shared/ beside the checkout): fail, never skip."""
    assert path.exists(), f"missing shared fixtures at {path}: put the shared/ folder beside the checkout"
    return path


def kafka_case(name: str) -> Path:
    """The partition dir of a Kafka-written case."""
    case = require(KAFKA_WRITTEN / name)
    return case / json.loads((case / "expected.json").read_text())["partitionDir"]


def run_logtool(*args: str) -> subprocess.CompletedProcess:
    """The installed console script, as a user runs it."""
    return subprocess.run([str(LOGTOOL), *args], capture_output=True, text=True, timeout=300)


def peak_rss_kb(argv: list[str], cwd: Path | None = None) -> tuple[int, int, str]:
    """Run `argv` (stdout to /dev/null) under a small Python parent that reports its only child's peak resident
    set: (exit code, peak RSS in KB, stderr). Not measured from here: a child forked from a test process keeps
    that process's resident set as its own peak across exec (Linux's maxrss), so a long test run would count."""
    probe = ("import resource, subprocess, sys\n"
             "p = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)\n"
             "sys.stderr.buffer.write(p.stderr)\n"
             "print(p.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n")
    p = subprocess.run([sys.executable, "-c", probe, *argv], cwd=cwd, capture_output=True, text=True, timeout=600)
    rc, rss = map(int, p.stdout.split())
    return rc, rss, p.stderr


@pytest.fixture
def fast():
    """The compiled kernel, for tests that hold it to the pure path; failing, not skipping, where it is absent."""
    from logtool.format import kernel

    if kernel.KERNEL is None:
        pytest.fail(f"no kernel to compare: {kernel.WHY_PURE}")
    return kernel.KERNEL


@pytest.fixture
def case_copy(tmp_path):
    """Copy a Kafka-written case's partition dir into tmp_path, for tests that edit bytes."""

    def copy(name: str) -> Path:
        src = kafka_case(name)
        dst = tmp_path / src.name
        shutil.copytree(src, dst)
        return dst

    return copy
