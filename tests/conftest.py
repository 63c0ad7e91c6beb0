"""Shared test helpers: where the shared fixtures live, and how to run the installed command; the test tiers."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zlib
from collections import defaultdict
from pathlib import Path

import pytest

# Fixtures several groups of tests use, from modules of their own.
pytest_plugins = ["support.repair_fixtures"]

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


@pytest.fixture(scope="session")
def slow_target(tmp_path_factory):
    """A 16 MB partition, which a command reads at 1 MB/s (`--max-read-rate 1`) to be still reading when a
    signal comes (test_signals.py, spark/test_interrupt.py)."""
    from fixtures import generator as g

    part = tmp_path_factory.mktemp("signals") / "big-0"
    g.write_big(part, 16 << 20)
    return part


@pytest.fixture
def case_copy(tmp_path):
    """Copy a Kafka-written case's partition dir into tmp_path, for tests that edit bytes."""

    def copy(name: str) -> Path:
        src = kafka_case(name)
        dst = tmp_path / src.name
        shutil.copytree(src, dst)
        return dst

    return copy


# ------------------------------------------------------------------------------------------------ test tiers
# `make check` (before each commit) runs `-m "not slow and not spark and not cluster and not crash"`, and also
# `not root` for a user other than root; `make test` (CI) runs everything. A marker says what a test needs or
# costs, never what it checks. "Slow" is measured, not guessed: a case that took 0.5 s or more in a full run
# (`pytest --durations=0`) on the 2-core development machine; a parametrized suite of cheaper cases whose sum is
# large carries `sample(k)` instead.
MARKERS = {
    "slow": "a case of 0.5 s or more in a full run, or a parametrized case left out of its suite's sample; "
            "`make check` leaves it out, `make test` runs it",
    "spark": "starts a JVM: a local Spark session, spark-submit or `logtool audit`; given at collection to "
             "every test that uses a Spark session fixture (COSTLY_FIXTURES)",
    "cluster": "a real standalone Spark cluster (a master and workers as processes); also spark",
    "crash": "fault injection into repairs (tmpfs and loop mounts, chattr, setpriv, signals at every step); "
             "needs root",
    "root": "needs root itself (mount, chattr, setpriv --bounding-set, chown to another user): `make check` "
            "leaves it out for anyone else",
    "sample(k)": "a parametrized suite of which the fast tier runs k cases, chosen by a stable hash of their "
                 "ids (adding a case moves at most one other); its other cases are marked slow at collection",
}
# A test that uses one of these fixtures (directly or through another fixture) gets these markers: the fixture
# starts something that costs its tests more than they cost themselves (test_docs.py's `site` builds the Sphinx
# site, ~40 s).
COSTLY_FIXTURES = {"spark": ("spark",), "local_spark": ("spark",), "cluster": ("spark", "cluster"), "site": ("slow",)}


def pytest_configure(config):
    # The suite's Spark JVMs neither read nor add to the user's class cache (spark/class_cache.py), and leave no
    # builder behind them; tests/spark/test_class_cache.py turns it on, in a directory of its own.
    os.environ["LOGTOOL_CLASS_CACHE"] = "0"
    known = {line.split(":")[0].strip() for line in config.getini("markers")}
    for name, meaning in MARKERS.items():
        if name.split("(")[0] not in known:
            config.addinivalue_line("markers", f"{name}: {meaning}")


@pytest.hookimpl(tryfirst=True)  # before -m deselects: the markers given here count
def pytest_collection_modifyitems(config, items):
    suites: dict[str, list[pytest.Item]] = defaultdict(list)
    for item in items:
        for fixture, names in COSTLY_FIXTURES.items():
            if fixture in getattr(item, "fixturenames", ()):
                for name in names:
                    item.add_marker(name)
        if item.get_closest_marker("sample") is not None and hasattr(item, "callspec"):
            suites[item.nodeid.split("[")[0]].append(item)
    for cases in suites.values():
        (k,) = cases[0].get_closest_marker("sample").args
        kept = set(sorted(cases, key=lambda c: zlib.crc32(c.callspec.id.encode()))[:k])
        for case in cases:
            if case not in kept:
                case.add_marker(pytest.mark.slow)
    # Files with a Spark cluster, then files with a Spark session, first: `make test` runs files on two workers
    # (pytest-xdist, --dist loadfile, in this order), and these are the longest, mostly waiting on JVMs and
    # lost executors; started last, one would run alone at the end. Within a file the order stays.
    rank = {}
    for item in items:
        here = 0 if item.get_closest_marker("cluster") else 1 if item.get_closest_marker("spark") else 2
        rank[item.path] = min(rank.get(item.path, 2), here)
    items.sort(key=lambda item: rank[item.path])
