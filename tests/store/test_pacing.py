"""Paced reading: the read-rate cap, and a page cache left as it was found (store/pacing.py)."""
from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from conftest import ROOT, run_logtool

from fixtures.generator import write_big
from logtool.checks.engine import check_target
from logtool.store import pacing as pacing_module
from logtool.store import residency as residency_module
from logtool.store import segment as segment_module
from logtool.store.discover import Target
from logtool.store.mapping import read_small
from logtool.store.sidefile import MAPPED_FROM
from logtool.store.pacing import EVERY, FOLIO, PAGE, ReadPolicy, Throttle, read_policy
from logtool.store.residency import residency

MB = 1_000_000


class FakeTime:
    """A clock that moves only when slept on, so pacing is checked without waiting."""

    def __init__(self) -> None:
        self.now = 0.0
        self.slept = 0.0

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds
        self.slept += seconds


@pytest.fixture(scope="module")
def big(tmp_path_factory):
    """A ~24 MB single-segment partition on a real file system (the page cache must be able to drop it)."""
    part = tmp_path_factory.mktemp("gentle") / "big-0"
    write_big(part, 24 * MB)
    log = next(part.glob("*.log"))
    fd = os.open(log, os.O_RDONLY)
    os.fsync(fd)  # dirty pages cannot be dropped: write them back first
    yield part, log, fd
    os.close(fd)


def cached(fd: int) -> bytes:
    return residency(fd, 0, os.fstat(fd).st_size)


# The kernel finishes readahead asynchronously and may reclaim cold pages at any time (DAMON runs on
# these machines), so residency is compared with a small tolerance; a policy that did nothing (or
# dropped everything) is still far outside it.
TOLERANCE = 0.05


def share(flags: bytes) -> float:
    return sum(1 for f in flags if f) / max(1, len(flags))


def mostly_cached(fd: int) -> bool:
    return share(cached(fd)) >= 1 - TOLERANCE


def mostly_evicted(fd: int) -> bool:
    return share(cached(fd)) <= TOLERANCE


def evict(fd: int, start: int = 0, length: int = 0) -> None:
    os.posix_fadvise(fd, start, length, os.POSIX_FADV_DONTNEED)


@contextmanager
def cold(paths: list[Path]) -> Iterator[list[int]]:
    """Descriptors of the files, each written back and then out of the page cache; closed after the block."""
    fds = [os.open(p, os.O_RDONLY) for p in paths]
    try:
        for fd in fds:
            os.fsync(fd)  # dirty pages cannot be dropped: write them back first
            evict(fd)
        yield fds
    finally:
        for fd in fds:
            os.close(fd)


def test_throttle_sleeps_exactly_what_the_rate_needs():
    t = FakeTime()
    throttle = Throttle(5 * MB, t.clock, t.sleep)
    for _ in range(10):
        throttle.spend(MB)
    assert t.slept == pytest.approx(2.0)  # 10 MB at 5 MB/s
    t.now += 10  # a pause: bytes read later may go at full speed until the average catches up
    throttle.spend(MB)
    assert t.slept == pytest.approx(2.0)


@pytest.mark.slow
def test_walk_is_paced_over_the_whole_task(big):
    part, log, _ = big
    t = FakeTime()
    policy = ReadPolicy(Throttle(8 * MB, t.clock, t.sleep))
    rep = check_target(Target(part), False, policy)
    size = log.stat().st_size
    assert rep.segments[0].valid_bytes == size
    assert t.slept == pytest.approx(size / (8 * MB))


def test_probe_sees_the_page_cache(big):
    _, log, fd = big
    evict(fd)
    assert mostly_evicted(fd)
    log.read_bytes()
    assert mostly_cached(fd)


@pytest.fixture(params=["big", "small"])
def either(request):
    """The partition a segment of which is mapped and walked (big), and the one read whole (small)."""
    return request.getfixturevalue(request.param)


def test_pages_the_walk_brought_in_are_given_back(either):
    part, _, fd = either
    evict(fd)
    rep = check_target(Target(part), False, read_policy(None, spare_cache=True))
    assert rep.segments[0].valid_bytes == os.fstat(fd).st_size
    assert mostly_evicted(fd)


def test_pages_cached_before_stay(either):
    part, log, fd = either
    log.read_bytes()
    check_target(Target(part), False, read_policy(None, spare_cache=True))
    assert mostly_cached(fd)


def test_a_mixed_cache_is_left_as_found(big):
    part, log, fd = big
    log.read_bytes()
    for start in range(0, os.fstat(fd).st_size, 2 * FOLIO):  # every other 2 MiB out of the cache
        evict(fd, start, FOLIO)
    before = cached(fd)
    assert 0 < sum(before) < len(before)
    check_target(Target(part), False, read_policy(None, spare_cache=True))
    after = cached(fd)
    changed = sum(1 for a, b in zip(before, after) if bool(a) != bool(b))
    assert changed <= TOLERANCE * len(before)


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    """A ~600 KB single-segment partition: read whole (store/segment.py), not mapped."""
    part = tmp_path_factory.mktemp("gentle-small") / "small-0"
    write_big(part, 600_000)
    log = next(part.glob("*.log"))
    assert log.stat().st_size < MAPPED_FROM
    fd = os.open(log, os.O_RDONLY)
    os.fsync(fd)
    yield part, log, fd
    os.close(fd)


def test_a_small_segment_under_a_policy_is_read_whole(small, monkeypatch):
    part, log, _ = small
    monkeypatch.setattr(segment_module, "open_readonly", None)  # never mapped: read whole, as without a policy
    rep = check_target(Target(part), False, read_policy(None, spare_cache=True))
    assert rep.segments[0].valid_bytes == log.stat().st_size


def test_a_small_segment_read_whole_is_paced(small):
    part, log, _ = small
    t = FakeTime()
    check_target(Target(part), False, ReadPolicy(Throttle(MB, t.clock, t.sleep)))
    assert t.slept == pytest.approx(log.stat().st_size / MB)


def test_without_spare_cache_the_walk_leaves_its_pages(big):
    part, _, fd = big
    evict(fd)
    check_target(Target(part), False, None)
    assert mostly_cached(fd)


def test_nothing_is_dropped_when_mincore_cannot_see_the_cache(either, monkeypatch):
    # Linux hides page-cache residency from a process that neither owns nor may write the file: then every
    # page must count as the broker's.
    part, _, fd = either
    monkeypatch.setattr(pacing_module, "_mincore_sees_cache", lambda path, st=None: False)
    evict(fd)
    check_target(Target(part), False, read_policy(None, spare_cache=True))
    assert mostly_cached(fd)


def test_walker_calls_back_every_so_many_bytes(big):
    part, log, _ = big
    seen: list[int] = []
    closed: list[bool] = []

    class Recorder:
        def __init__(self, path, size) -> None:
            assert path == log and size == log.stat().st_size

        def passed(self, pos: int) -> None:
            seen.append(pos)

        def close(self) -> None:
            closed.append(True)

    class Policy:
        every = EVERY

        def open(self, path, size):
            return Recorder(path, size)

        def read_small(self, path, below):  # the partition's small files: read as without a policy
            return read_small(path, below)

        def around(self, path):
            return None

    check_target(Target(part), False, Policy())
    size = log.stat().st_size
    assert closed == [True] and seen and seen[-1] > size - 2 * EVERY  # no long stretch goes unpaced
    assert all(b - a >= EVERY for a, b in zip([0, *seen], seen)) and all(p % PAGE == 0 for p in seen)


@pytest.mark.slow
def test_verify_options_change_no_finding(big):
    part, _, _ = big
    plain = run_logtool("verify", "--format", "json", str(part))
    gentle_run = run_logtool("verify", "--format", "json", "--max-read-rate", "500", "--spare-page-cache", str(part))
    assert gentle_run.returncode == plain.returncode == 0
    assert json.loads(gentle_run.stdout) == json.loads(plain.stdout)
    bad = run_logtool("verify", "--max-read-rate", "0", str(part))
    assert bad.returncode == 16 and "Traceback" not in bad.stderr


def test_without_cachestat_a_small_file_is_still_spared(small, monkeypatch):
    # A kernel before 6.5 (or a sandbox refusing the call): every small file is probed.
    part, log, fd = small
    monkeypatch.setattr(residency_module, "_CACHESTAT", None)
    evict(fd)
    check_target(Target(part), False, read_policy(None, spare_cache=True))
    assert mostly_evicted(fd)
    log.read_bytes()
    check_target(Target(part), False, read_policy(None, spare_cache=True))
    assert mostly_cached(fd)


def test_the_small_index_files_of_a_segment_are_spared_too(small):
    part, log, _ = small
    indexes = [log.with_suffix(".index"), log.with_suffix(".timeindex")]
    with cold(indexes) as fds:
        assert all(0 < os.fstat(fd).st_size < MAPPED_FROM for fd in fds)  # read whole, not mapped
        check_target(Target(part), False, read_policy(None, spare_cache=True))
        assert all(mostly_evicted(fd) for fd in fds)
        for p in indexes:
            p.read_bytes()
        check_target(Target(part), False, read_policy(None, spare_cache=True))
        assert all(mostly_cached(fd) for fd in fds)


@pytest.fixture
def preallocated(tmp_path):
    """A partition whose segment's index is 10 MiB, its entries then zeros, as Kafka preallocates the active
    segment's index (segment.index.bytes) and leaves it after an unclean stop: large enough to be mapped."""
    part = tmp_path / "active-0"
    write_big(part, 600_000)
    index = next(part.glob("*.index"))
    entries = index.read_bytes()
    index.write_bytes(entries + bytes((10 << 20) - len(entries)))
    fd = os.open(index, os.O_RDONLY)
    os.fsync(fd)
    yield part, index, fd
    os.close(fd)


def test_a_mapped_index_is_spared_too(preallocated):
    """A mapped index's pages that were not cached before are given back once it is unmapped."""
    part, index, fd = preallocated
    assert os.fstat(fd).st_size >= MAPPED_FROM
    evict(fd)
    assert mostly_evicted(fd)
    check_target(Target(part), False, read_policy(None, spare_cache=True))
    assert mostly_evicted(fd)
    check_target(Target(part), False, None)  # the check maps and reads it whole: without sparing, it stays
    assert mostly_cached(fd)
    check_target(Target(part), False, read_policy(None, spare_cache=True))  # cached before: stays
    assert mostly_cached(fd)


def test_verify_sparing_the_cache_leaves_a_cold_log_dir_cold(preallocated):
    """verify reads partition dirs ahead (store/read_ahead.py), under --spare-page-cache only the files the page
    cache holds whole; the rest, read by the checks, are given back: the segment, its small time index, its
    mapped index."""
    part, index, index_fd = preallocated
    files = sorted(part.iterdir())
    with cold(files) as fds:
        assert all(mostly_evicted(fd) for fd in fds)
        r = run_logtool("verify", "--spare-page-cache", "--format", "json", str(part))
        assert r.returncode == 0, r.stderr
        assert json.loads(r.stdout)["partitions"][0]["segments"][0]["valid_bytes"] > 500_000
        assert all(mostly_evicted(fd) for fd in fds), [f.name for f, fd in zip(files, fds) if not mostly_evicted(fd)]
        r = run_logtool("verify", "--no-spare-page-cache", str(part))
        assert r.returncode == 0 and mostly_cached(index_fd)


@pytest.fixture
def damaged(tmp_path):
    """A cold partition whose segment has a bad batch half way: its verdict reads it again to work out
    recovery's cut, and the indexes recovery would rebuild against those on disk."""
    part = tmp_path / "damaged-0"
    write_big(part, 600_000)
    log = next(part.glob("*.log"))
    data = bytearray(log.read_bytes())
    data[len(data) // 2] ^= 0xFF
    log.write_bytes(data)
    with cold(sorted(part.iterdir())) as fds:
        yield part, fds


def test_the_verdict_reads_a_damaged_partition_again_sparing_the_cache(damaged):
    part, fds = damaged
    r = run_logtool("verify", "--spare-page-cache", "--format", "json", str(part))
    assert r.returncode == 4, r.stderr
    (verdict,) = json.loads(r.stdout)["verdict"]
    assert verdict["recovery"][0]["bytes_cut"] > 0  # worked out from the files, read again
    assert all(mostly_evicted(fd) for fd in fds)


def test_an_audit_task_s_verdict_reads_a_damaged_partition_again_sparing_the_cache(damaged):
    from logtool.spark.listing import list_path
    from logtool.spark.outcome import unit_rows
    from logtool.spark.split import split
    from logtool.spark.task import Settings

    part, fds = damaged

    class Counted:
        def add(self, n: int) -> None:
            pass

    (unit,) = split(list(list_path(str(part)).targets), 1 << 40)
    rows = list(unit_rows(Settings(spare_page_cache=True), Counted(), unit))
    assert [r[0] for r in rows].count("judged") == 1  # its verdict, recovery's cut worked out
    assert all(mostly_evicted(fd) for fd in fds)
    list(unit_rows(Settings(spare_page_cache=False), Counted(), unit))
    assert not all(mostly_evicted(fd) for fd in fds)


def test_the_indexes_recovery_would_rebuild_are_compared_sparing_the_cache(tmp_path):
    """The sample's clicks-2 (a bad batch in its last segment, its time index past it): the verdict holds the
    indexes recovery would build against those on disk, mapped and given back like the rest."""
    part = tmp_path / "clicks-2"
    shutil.copytree(ROOT / "fixtures" / "sample-logdir" / "clicks-2", part)
    with cold([p for p in sorted(part.iterdir()) if p.stat().st_size]) as fds:
        r = run_logtool("verify", "--spare-page-cache", "--format", "json", str(part))
        assert r.returncode == 4, r.stderr
        assert json.loads(r.stdout)["verdict"][0]["recovery"][0]["bytes_cut"] == 1477
        assert all(mostly_evicted(fd) for fd in fds)
