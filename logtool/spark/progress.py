"""A driver-side progress line over the tasks of the audit's Spark jobs (Spark's UI shows the same in detail)."""
from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from pyspark import Accumulator, SparkContext

from logtool.render.progress import progress

POLL_SECONDS = 0.5


def _tasks(sc: SparkContext, group: str) -> int:
    """The finished tasks over every stage of every job of `group` so far."""
    tracker = sc.statusTracker()
    done = 0
    for job in tracker.getJobIdsForGroup(group):
        info = tracker.getJobInfo(job)
        for stage in info.stageIds if info else ():
            s = tracker.getStageInfo(stage)
            if s is not None:
                done += s.numCompletedTasks
    return done


@contextmanager
def job_progress(sc: SparkContext, group: str, label: str, counted: Accumulator | None = None,
                 total: int | None = None) -> Iterator[None]:
    """While the body runs, show `label` on a terminal: with `counted` (an accumulator the tasks add to as
    they finish) out of `total`, a total known before the first task, so the bar never moves backwards;
    else the group's finished Spark tasks, without a total (its jobs and stages appear as it runs)."""
    if not sys.stderr.isatty():
        yield
        return
    stop = threading.Event()
    with progress(label if counted is not None else f"{label} (Spark tasks)", in_bytes=False) as meter:
        if total is not None:
            meter.total(total)

        shown = 0

        def update() -> None:
            nonlocal shown
            done = counted.value if counted is not None else _tasks(sc, group)
            meter.add(max(0, done - shown))
            shown = max(shown, done)

        def poll() -> None:
            while not stop.wait(POLL_SECONDS):
                update()

        watcher = threading.Thread(target=poll, name="logtool-audit-progress", daemon=True)
        watcher.start()
        try:
            yield
        finally:
            stop.set()
            watcher.join()
        update()  # the count as the body left it: a run shorter than a poll ended the bar at 0/N
