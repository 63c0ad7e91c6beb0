"""Listing, run on an executor once per PATH: what `verify` plans for it, and the size of every segment, so
that the driver can balance the tasks by bytes without reading a directory itself."""
from __future__ import annotations

import os
import socket
from dataclasses import dataclass, field, replace
from pathlib import Path

from logtool.checks.engine import Report, Target, plan_targets
from logtool.spark.pieces import Piece
from logtool.store.layout import FileKind, classify_file


@dataclass(slots=True, frozen=True)
class Sized:
    """A target, the log dir it belongs to, its segments as (base offset, bytes) in offset order, and the
    piece of it a task walks when the partition was split (spark/pieces.py)."""

    target: Target
    log_dir: str
    segments: tuple[tuple[int, int], ...] = ()
    piece: Piece | None = None  # a partition too large for one task: the base offsets this item walks

    def cut(self, first: int, end: int | None, segments: tuple[tuple[int, int], ...]) -> "Sized":
        return replace(self, piece=(first, end), segments=segments)


@dataclass(slots=True)
class Listing:
    """One PATH as an executor saw it: verify's plan report (log dirs, path findings) and the sized targets."""

    path: str
    host: str
    report: Report
    targets: list[Sized] = field(default_factory=list)


def list_path(path: str) -> Listing:
    report = Report()
    listing = Listing(str(Path(path)), socket.gethostname(), report)  # named as verify's findings name it
    for target in plan_targets([Path(path)], report):
        # A partition's log dir is its parent; a lone segment file's is its partition dir's parent.
        log_dir = target.path.parent.parent if target.single_file else target.path.parent
        listing.targets.append(Sized(target, str(log_dir), _segment_sizes(target)))
    return listing


def _segment_sizes(target: Target) -> tuple[tuple[int, int], ...]:
    """(base offset, bytes) of each `.log` by its name: an estimate for balancing only, one stat per segment
    (the check task lists the directory again through `Partition`, which decides). What cannot be read counts
    as nothing; the check task reports it."""
    if target.single_file:
        return ((classify_file(target.path.name).base_offset or 0, _size(target.path)),)
    sizes = []
    try:
        with os.scandir(target.path) as entries:
            for e in entries:
                # Only names ending in .log can be segments: the test spares classifying every index file.
                if e.name.endswith(".log") and (name := classify_file(e.name)).kind == FileKind.LOG:
                    sizes.append((name.base_offset, _size(e)))
    except OSError:
        return ()
    return tuple(sorted(sizes))


def _size(path: Path | os.DirEntry) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0
