"""The kernel checks the CRCs of a long pass of batches on several threads: its answers must be the one-thread
answers and the pure path's, wherever in the pass a batch is damaged, and a file cut short under a walk must
be survived in a helper thread as in the main one."""
from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import textwrap
from contextlib import contextmanager
from pathlib import Path

import pytest

from fixtures.generator import BatchSpec, big_templates, build_batches, repeat_to_size
from logtool.format import kernel
from logtool.format.batch import BatchView
from logtool.spark.task import task_threads
from logtool.store.segment import MOST_VIEWS, Segment, WalkOutcome

# Six MiB of ~17 KB batches: one pass of the kernel, split into as many parts as threads are allowed.
SIZE = 6 << 20


def _segment_bytes() -> bytes:
    return b"".join(e.data for e in repeat_to_size(big_templates(), SIZE))


SEGMENT = _segment_bytes()


@contextmanager
def threads(k, n: int):
    was = k.threads(n)
    try:
        yield
    finally:
        k.threads(was)


def _frames(k, data: bytes, n: int) -> tuple[list, int, int]:
    """(views, stop, passes split) of one frames call over the whole buffer on at most n threads."""
    with threads(k, n):
        before = k.split_passes()
        views, stop = k.frames(BatchView, data, 0, len(data), len(data))
        return views, stop, k.split_passes() - before


def _pure_walk(tmp_path: Path, data: bytes) -> tuple[list, WalkOutcome]:
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(data)
    walk = WalkOutcome(len(data))
    with kernel.pure(), Segment(path, 0) as seg:
        views = list(seg.walk(walk))
    return views, walk


def _damaged(where: list[float | int], seed: int) -> bytes:
    """SEGMENT with a byte changed at each place: a fraction of its length, or a position (an int)."""
    data = bytearray(SEGMENT)
    rng = random.Random(seed)
    for w in where:
        at = w if isinstance(w, int) else min(int(len(data) * w), len(data) - 1)
        data[at] ^= rng.randrange(1, 256)
    return bytes(data)


def test_threads_default_to_the_usable_cpus_and_can_be_limited(fast):
    assert fast.threads() == min(len(os.sched_getaffinity(0)), 4)
    with threads(fast, 1):
        assert fast.threads() == 1
    with threads(fast, 99):
        assert fast.threads() == 4


# Damage in the first part (the calling thread's), in a helper's, in several, at the very end, and none.
PLACES = {"none": [], "first part": [0.1], "second part": [0.4], "last part": [0.9], "two parts": [0.3, 0.8],
          "last byte": [1.0], "first header": [30]}  # 30: the first batch's first timestamp, under its CRC


@pytest.mark.parametrize("place", PLACES)
@pytest.mark.parametrize("seed", range(3))
def test_a_split_pass_gives_the_one_thread_answer_and_the_pure_walk_s(fast, tmp_path, place, seed):
    data = _damaged(PLACES[place], seed)
    one, one_stop, split = _frames(fast, data, 1)
    assert split == 0
    reference, walk = _pure_walk(tmp_path, data)
    assert (one, one_stop) == (reference, walk.valid_bytes)
    for n in (2, 3, 4):
        many, stop, split = _frames(fast, data, n)
        assert (many, stop) == (one, one_stop), n
        assert split == 1, n  # headers are read on past a wrong CRC: the pass holds the whole 6 MiB


@pytest.mark.slow
def test_a_wrong_crc_in_any_one_batch_stops_every_thread_count_there(fast):
    data = bytearray(SEGMENT)
    starts = [v.position for v in _frames(fast, SEGMENT, 1)[0]]
    for i, at in enumerate(starts):
        data[at + 100] ^= 0xFF  # in the batch's records, which its CRC covers
        for n in (1, 2, 3, 4):
            views, stop, _ = _frames(fast, data, n)
            assert (len(views), stop) == (i, at), (i, n)
        data[at + 100] ^= 0xFF


@pytest.mark.slow
def test_passes_after_the_first_are_split_too(fast, tmp_path):
    # Over 1,024 batches: more than one pass in one call, each split.
    data = b"".join(e.data for e in repeat_to_size(big_templates(), 20 << 20))
    one, one_stop, _ = _frames(fast, data, 1)
    many, stop, split = _frames(fast, data, 2)
    assert len(one) > 1024 and (many, stop) == (one, one_stop) == (_pure_walk(tmp_path, data)[0], len(data))
    assert split == 2


def test_a_walk_of_views_only_walks_as_one_that_reads_the_bytes(fast, tmp_path):
    for data in (SEGMENT, _damaged([0.7], 1)):
        path = tmp_path / "00000000000000000000.log"
        path.write_bytes(data)
        both = []
        for reads_bytes in (True, False):
            walk = WalkOutcome(len(data))
            with Segment(path, 0) as seg:
                both.append((list(seg.walk(walk, reads_bytes=reads_bytes)), walk))
        assert both[0] == both[1]


@pytest.mark.slow
def test_a_walk_of_views_only_keeps_its_runs_to_a_few_thousand_views(fast, tmp_path):
    # 32 MiB of batches of a hundred bytes would be 300,000 views in one list.
    spec = BatchSpec(batches=40_000, records_per_batch=1, value_bytes=(10, 60), seed=5)
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(b"".join(e.data for e in build_batches(spec)))
    with Segment(path, 0) as seg:
        runs = [len(r) for r in seg.walk_runs(reads_bytes=False)]
    assert sum(runs) == 40_000
    assert max(runs) <= 2 * MOST_VIEWS


def test_a_spark_task_checks_crcs_on_the_cpus_spark_gave_it(fast, monkeypatch):
    import pyspark

    class Task:
        def cpus(self):
            return 1

    with threads(fast, 4):
        monkeypatch.setattr(pyspark.TaskContext, "get", staticmethod(lambda: None))
        task_threads()  # outside a task: left as it was
        assert fast.threads() == 4
        monkeypatch.setattr(pyspark.TaskContext, "get", staticmethod(lambda: Task()))
        task_threads()
        assert fast.threads() == 1


def test_a_pass_under_a_mib_per_thread_stays_on_one(fast):
    small = SEGMENT[: 1 << 20]
    views, stop, split = _frames(fast, small, 4)
    assert split == 0 and views


def test_a_long_pass_is_split(fast):
    views, stop, split = _frames(fast, SEGMENT, 2)
    assert split == 1 and stop == len(SEGMENT) and len(views) > 300


# A child maps the segment, cuts the file short, then checks the whole mapping in one frames call (the
# kernel) or walks it (the pure path): the pages past the cut fault in whichever thread reads them, and the
# SIGBUS guard must make them zeros there too.
CUT_UNDER_A_WALK = textwrap.dedent("""
    import json, os, sys
    from pathlib import Path
    from logtool.format import kernel
    from logtool.format.batch import BatchView
    from logtool.store.segment import Segment, WalkOutcome
    path, cut, n = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    with Segment(path, 0) as seg:
        seg.open()
        os.truncate(path, cut)
        if kernel.KERNEL is None:
            walk = WalkOutcome(seg.size)
            views, stop = list(seg.walk(walk)), walk.valid_bytes
        else:
            kernel.KERNEL.threads(n)
            views, stop = kernel.KERNEL.frames(BatchView, seg.buf, 0, seg.size, seg.size)
        print(json.dumps([len(views), stop, seg.buf.faulted_at(), kernel.KERNEL and kernel.KERNEL.split_passes()]))
""")


def _walk_cut(tmp_path: Path, cut: int, threads_: int, pure: bool = False) -> list:
    path = tmp_path / f"{threads_}-{pure}" / "00000000000000000000.log"
    path.parent.mkdir()
    path.write_bytes(SEGMENT)
    env = {**os.environ, **({kernel.PURE_ENV: "1"} if pure else {})}
    p = subprocess.run([sys.executable, "-c", CUT_UNDER_A_WALK, str(path), str(cut), str(threads_)],
                       capture_output=True, text=True, env=env, timeout=120)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


# The cut falls 100 bytes into a batch of ~17 KB, so reading that batch faults past the cut's page; a pass
# that reaches it holds two MiB or more, so it is split, and the cut lies in a helper's part.
@pytest.mark.parametrize("where", [0.4, 0.7, 0.95])
def test_a_file_cut_under_a_split_pass_reads_zeros_in_every_thread(fast, tmp_path, where):
    starts = [v.position for v in _frames(fast, SEGMENT, 1)[0]]
    cut = next(p for p in starts if p >= SIZE * where) + 100
    reference = _walk_cut(tmp_path, cut, 0, pure=True)
    one = _walk_cut(tmp_path, cut, 1)
    many = _walk_cut(tmp_path, cut, 4)
    assert one[:3] == reference[:3] == many[:3]
    assert reference[1] == cut - 100 and reference[2] is not None  # it stopped at that batch, knowing why
    assert one[3] == 0 and many[3] == 1
