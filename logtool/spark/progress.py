"""A driver-side progress line over the tasks of the audit's Spark jobs (Spark's UI shows the same in detail)."""
from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from pyspark import SparkContext

from logtool.render.progress import progress

POLL_SECONDS = 0.5


def _tasks(sc: SparkContext, group: str) -> tuple[int, int]:
    """(tasks, finished tasks) over every stage of every job of `group` so far."""
    tracker = sc.statusTracker()
    total = done = 0
    for job in tracker.getJobIdsForGroup(group):
        info = tracker.getJobInfo(job)
        for stage in info.stageIds if info else ():
            s = tracker.getStageInfo(stage)
            if s is not None:
                total += s.numTasks
                done += s.numCompletedTasks
    return total, done


@contextmanager
def job_progress(sc: SparkContext, group: str, label: str) -> Iterator[None]:
    """While the body runs, show `label` with the group's finished/total tasks; on a terminal only."""
    if not sys.stderr.isatty():
        yield
        return
    stop = threading.Event()
    with progress(f"{label} (Spark tasks)", in_bytes=False) as meter:
        def poll() -> None:
            shown = 0
            while not stop.wait(POLL_SECONDS):
                total, done = _tasks(sc, group)
                if total:  # before Spark registers the group's first job: "0/?", not "0/0"
                    meter.total(total)
                meter.add(max(0, done - shown))
                shown = max(shown, done)

        watcher = threading.Thread(target=poll, name="logtool-audit-progress", daemon=True)
        watcher.start()
        try:
            yield
        finally:
            stop.set()
            watcher.join()
