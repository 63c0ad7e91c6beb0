"""Listing, run on an executor once per PATH: what `verify` plans for it, and the size of every segment, so
that the driver can balance the tasks by bytes without reading a directory itself."""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

from logtool.checks.engine import Report, found_report
from logtool.findings import NOT_AUDITED, finding
from logtool.spark.hosts import Pin, executor_host, named, reader, same_host
from logtool.spark.pieces import Piece
from logtool.store.discover import Target, discover


@dataclass(slots=True, frozen=True)
class Sized:
    """A target, the log dir it belongs to, its segments as (base offset, bytes) in offset order, and the
    piece of it a task walks when the partition was split (spark/pieces.py)."""

    target: Target
    log_dir: str
    segments: tuple[tuple[int, int], ...] = ()
    piece: Piece | None = None  # a partition too large for one task: the base offsets this item walks
    pin: Pin | None = None  # from a HOST:PATH: read only by an executor on that host

    def cut(self, first: int, end: int | None, segments: tuple[tuple[int, int], ...]) -> "Sized":
        return replace(self, piece=(first, end), segments=segments)


@dataclass(slots=True)
class Listing:
    """One PATH as an executor saw it: verify's plan report (log dirs, path findings) and the sized targets."""

    path: str
    host: str
    report: Report
    targets: list[Sized] = field(default_factory=list)
    misplaced: bool = False  # pinned, but its task ran on another host: it read nothing (spark/rounds.py)


def list_path(path: str, pin: Pin | None = None) -> Listing:
    """What verify plans for PATH, as this executor sees it. A pinned PATH (HOST:PATH) is read only on its
    host: elsewhere the listing says it was not audited; its log dirs and partitions are named HOST:PATH."""
    here = executor_host()
    if pin is not None and not same_host(pin.executor, here):
        return replace(not_audited(path, pin.asked, f"its task ran on {here}"), misplaced=True)
    found = discover([Path(path)])
    report = found_report(found)
    # named as verify's findings name it, with the host asked for where there was one
    listing = Listing(named(pin, str(Path(path))), reader(pin, here), report)
    for target in found.targets:
        listing.targets.append(Sized(target, named(pin, str(target.log_dir)), target.segment_sizes(), pin=pin))
    for ld in report.log_dirs:
        ld.path = named(pin, ld.path)
    return listing


def not_audited(path: str, asked: str, why: str) -> Listing:
    """A pinned PATH no executor on its host read: a finding row, an operational error."""
    report = Report(operational_error=True)
    report.findings.append(finding(NOT_AUDITED, f"not audited: {why}", f"{asked}:{path}"))
    return Listing(f"{asked}:{path}", asked, report)
