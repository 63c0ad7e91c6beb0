"""Running the checks with a progress display: shared by `scan`, `verify` and `index verify`."""
from __future__ import annotations

from pathlib import Path

from logtool.checks.engine import Report, run_checks
from logtool.render.progress import progress


def check_with_progress(label: str, paths: tuple[Path, ...], deep: bool, **run_options) -> Report:
    """Every check over PATHs, with a progress bar on a terminal; `run_options` go to `checks.engine.run_checks`."""
    with progress(label) as meter:
        reading = meter.reading(run_options.pop("reading", None))
        return run_checks(list(paths), deep, bytes_known=meter.sizing, reading=reading, **run_options)
