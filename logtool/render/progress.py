"""A progress bar on a terminal, nothing in a pipe."""
from __future__ import annotations

import sys
from contextlib import contextmanager

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn


@contextmanager
def progress(label: str):
    """Yields (set_total, advance) callbacks; both do nothing when stderr is not a terminal."""
    if not sys.stderr.isatty():
        yield (lambda total: None), (lambda *_: None)
        return
    bar = Progress(TextColumn(label), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                   console=Console(stderr=True), transient=True)
    task = bar.add_task(label, total=None)
    with bar:
        yield (lambda total: bar.update(task, total=total)), (lambda *_: bar.advance(task))
