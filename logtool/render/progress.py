"""Progress on a terminal (on stderr, never stdout), nothing in a pipe or a file: bytes read of bytes to
read, the rate and the time left, moving within a segment as the walker passes its bytes; or counted steps
where bytes are not known (the audit's listing)."""
from __future__ import annotations

import sys
from contextlib import contextmanager
from dataclasses import replace
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from logtool.store.pacing import PROGRESS_EVERY, ReadPolicy

if TYPE_CHECKING:
    from rich.progress import Progress


class Meter:
    """What a command tells the display: how much there is to do, and how much more is done."""

    def __init__(self, bar: "Progress | None" = None) -> None:
        self._bar = bar
        self._task = bar.add_task("", total=None) if bar is not None else None  # None exactly when _bar is

    @property
    def shown(self) -> bool:
        return self._bar is not None

    @property
    def sizing(self) -> Callable[[int], None] | None:
        """Where to report the bytes to come, or None when nothing is shown: no one then lists files for it."""
        return self.total if self._bar is not None else None

    def total(self, n: int) -> None:
        if self._bar is not None and self._task is not None:
            self._bar.update(self._task, total=n)

    def add(self, n: int = 1) -> None:
        if self._bar is not None and self._task is not None:
            self._bar.advance(self._task, n)
            # The total is what a listing saw before the reads; a command that reads some bytes twice (a
            # repair plan reads a damaged segment's tail again past the damage) goes past it. The total then
            # grows with what is done, so the display never shows more done than there is.
            task = next(t for t in self._bar.tasks if t.id == self._task)
            if task.total is not None and task.completed > task.total:
                self._bar.update(self._task, total=task.completed)

    def reading(self, policy: ReadPolicy | None) -> ReadPolicy | None:
        """`policy` (or none) with every byte the walker reads counted here."""
        if self._bar is None:
            return policy
        if policy is None:
            return ReadPolicy(every=PROGRESS_EVERY, on_bytes=self.add)
        return replace(policy, on_bytes=self.add)


@contextmanager
def progress(label: str, in_bytes: bool = True, shown: bool | None = None) -> Iterator[Meter]:
    """A Meter shown while the body runs, when stderr is a terminal (or `shown` says so)."""
    if not (sys.stderr.isatty() if shown is None else shown):
        yield Meter()
        return
    # rich's progress display is imported only where it is shown: importing it is a noticeable part of a small
    # command's start-up (bench/results/kernel.md)
    from rich.console import Console
    from rich.progress import (BarColumn, DownloadColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn,
                               TimeRemainingColumn, TransferSpeedColumn)

    columns = ([DownloadColumn(), TransferSpeedColumn(), TimeRemainingColumn()] if in_bytes
               else [MofNCompleteColumn(), TimeElapsedColumn()])
    # stdout is never the display's: by default rich swaps sys.stdout for a proxy that prints through the
    # console while the bar is live, so that what a command writes there (records, a report) would land on
    # the terminal, re-wrapped, instead of in the file or pipe it was sent to. Lines written to stderr
    # meanwhile are printed above the bar.
    bar = Progress(TextColumn(label), BarColumn(), *columns, console=Console(stderr=True), transient=True,
                   redirect_stdout=False)
    with bar:
        yield Meter(bar)
