"""Progress that says something (issue 18.5): on a terminal, long work shows bytes read of bytes to read,
moving within a single segment as the walker passes its bytes; in a pipe or a file, nothing."""
from __future__ import annotations

import io
import time

import pytest

import logtool.render.progress as progress_module
from fixtures import generator as g


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture(scope="module")
def one_segment(tmp_path_factory):
    spec = g.BatchSpec(batches=300, records_per_batch=50, seed=5)
    part = g.write_partition(tmp_path_factory.mktemp("progress"), "big", 0, g.build_batches(spec),
                             segment_bytes=1 << 30).path
    [log] = part.glob("*.log")
    assert log.stat().st_size > 1_000_000
    return part, log.stat().st_size


def _run(monkeypatch, capsys, stderr, *args) -> tuple[int, list[tuple[float, float | None]]]:
    """Run logtool in-process with `stderr`; returns the exit code and (done, total) after every advance."""
    from logtool.cli import main
    seen: list[tuple[float, float | None]] = []
    real_add = progress_module.Meter.add

    def add(self, n=1):
        real_add(self, n)
        if self.shown:
            task = self._bar.tasks[0]
            seen.append((task.completed, task.total))

    monkeypatch.setattr(progress_module.Meter, "add", add)
    monkeypatch.setattr(progress_module, "PROGRESS_EVERY", 64 << 10)  # a small segment then moves many times
    monkeypatch.setattr("sys.stderr", stderr)
    with pytest.raises(SystemExit) as e:
        main([str(a) for a in args])
    capsys.readouterr()
    return e.value.code, seen


@pytest.mark.parametrize("command", [("verify",), ("verify", "--deep"), ("index", "rebuild"), ("truncate",),
                                     ("dump", "--format", "jsonl")], ids=" ".join)
def test_a_terminal_sees_bytes_move_within_one_segment(one_segment, monkeypatch, capsys, command):
    part, size = one_segment
    terminal = _Terminal()
    rc, seen = _run(monkeypatch, capsys, terminal, *command, part)
    assert rc == 0
    within = [done for done, total in seen if 0 < done < size]
    assert len(within) >= 5, seen  # several frames before the one segment is done
    assert all(total == size for _, total in seen)
    assert "MB" in terminal.getvalue() or "kB" in terminal.getvalue()  # bytes, not a count of partitions


def test_a_plan_that_reads_a_damaged_tail_again_never_shows_more_done_than_the_total(tmp_path, monkeypatch,
                                                                                       capsys):
    """The repair plan reads a damaged segment's tail a second time (for --excise's count): the total grows
    with it, rather than the display showing 123.1/119.8 kB."""
    spec = g.BatchSpec(batches=300, records_per_batch=50, seed=6)
    part = g.write_partition(tmp_path, "cut", 0, g.build_batches(spec), segment_bytes=1 << 30).path
    [log] = part.glob("*.log")
    size = log.stat().st_size
    g.flip_bit(log, size // 2)  # a CRC mismatch half way: the tail past it is read again for the plan
    rc, seen = _run(monkeypatch, capsys, _Terminal(), "truncate", part)
    assert rc == 4 and seen
    assert max(done for done, _ in seen) > size  # the tail was read twice ...
    assert all(total is not None and done <= total for done, total in seen)  # ... and the display kept up
    assert [t for _, t in seen] == sorted(t for _, t in seen)  # a total that only grows


def test_nothing_in_a_pipe(one_segment, monkeypatch, capsys):
    part, _ = one_segment
    pipe = io.StringIO()
    rc, seen = _run(monkeypatch, capsys, pipe, "verify", part)
    assert rc == 0 and seen == [] and pipe.getvalue() == ""


def test_an_audit_phase_s_total_is_known_first_and_its_bar_never_moves_back(monkeypatch):
    """The checks count partitions out of a total set before the first task (it grew with Spark's stages,
    2 -> 3 -> 9 -> 32, and the bar moved backwards); a phase without a known total shows a count only."""
    import logtool.spark.progress as spark_progress

    class Counted:  # an accumulator as the driver reads it while the tasks run
        values = iter([0, 3, 3, 7])
        value = 0

    totals: list[int] = []
    added: list[int] = []
    real_total, real_add = progress_module.Meter.total, progress_module.Meter.add
    monkeypatch.setattr(progress_module.Meter, "total", lambda self, n: (totals.append(n), real_total(self, n)))
    monkeypatch.setattr(progress_module.Meter, "add", lambda self, n=1: (added.append(n), real_add(self, n)))
    monkeypatch.setattr(spark_progress, "POLL_SECONDS", 0.01)
    monkeypatch.setattr("sys.stderr", _Terminal())
    counted = Counted()
    with spark_progress.job_progress(None, "group", "checking partitions", counted, 7):
        for counted.value in Counted.values:
            time.sleep(0.05)
    assert totals == [7] and sum(added) == 7 and min(added) >= 0

    ticks = iter([0, 2, 5])
    monkeypatch.setattr(spark_progress, "_tasks", lambda _sc, _group: next(ticks, 5))
    totals.clear()
    added.clear()
    with spark_progress.job_progress(None, "group", "writing the tables"):
        time.sleep(0.1)
    assert totals == [] and sum(added) == 5

    # A run over before the first poll still ends its bar at what was done.
    monkeypatch.setattr(spark_progress, "POLL_SECONDS", 60)
    added.clear()
    counted = Counted()
    with spark_progress.job_progress(None, "group", "checking partitions", counted, 7):
        counted.value = 7
    assert sum(added) == 7
