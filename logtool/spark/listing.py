"""Listing, run on an executor once per PATH: what `verify` plans for it, and the size of every segment, so
that the driver can balance the tasks by bytes without reading a directory itself.

A listing holds no object per partition: its targets are columns (`Targets`: their names, segment sizes and
checkpoint entries as arrays, a few dozen bytes each), which is how they reach the driver and how the driver
deals them out to the check tasks. A log dir's offset checkpoints stay with the partitions they are about:
each partition carries its own entries, so that no task needs a whole log dir's (verify's
check_against_log_dir, run in the task that walked the partition, sees exactly what it would see there)."""
from __future__ import annotations

import os
from array import array
from collections.abc import Collection, Iterable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path

from logtool.checks.engine import Report, found_report
from logtool.checks.logdir import LogDirReport
from logtool.findings import NOT_AUDITED, finding
from logtool.format.meta import MetaError, meta_identity
from logtool.spark.hosts import Pin, executor_host, named, reader, same_host
from logtool.spark.pieces import Piece
from logtool.store.discover import Target, TargetKind, discover
from logtool.store.layout import OFFSET_CHECKPOINTS, parse_partition_dir

Broker = tuple[str | None, int | None]  # (cluster id, node id)


def broker_of(log_dir: LogDirReport | None) -> Broker:
    """The cluster and node a log dir belongs to, as Kafka reads its meta.properties; unknown parts None."""
    if log_dir is None:
        return None, None
    try:
        identity = meta_identity(log_dir.meta)
    except MetaError:
        return log_dir.meta.get("cluster.id"), None
    return identity.cluster_id, identity.node_id


@dataclass(slots=True, frozen=True)
class RootFiles:
    """What verify holds each partition of a log dir (one of the PATHs) against, besides the partition's own
    checkpoint entries: which offset checkpoints the log dir has (read and valid), its clean-shutdown marker,
    and whose it is (meta.properties)."""

    path: str  # the log dir, named as its findings name it
    checkpoints: tuple[str, ...] = ()
    clean_shutdown_marker: bool = False
    broker: Broker = (None, None)

    @classmethod
    def of(cls, ld: LogDirReport) -> "RootFiles":
        return cls(ld.path, tuple(ld.offsets), ld.clean_shutdown_marker, broker_of(ld))

    def report(self, key: tuple[str | None, int | None], entries: Iterable[tuple[str, int]]) -> LogDirReport:
        """The log dir's report as check_against_log_dir reads it for the partition `key` whose entries
        (checkpoint file, offset) are given: every checkpoint the log dir has, each with this entry or none."""
        offsets: dict[str, dict[tuple[str, int], int]] = {file: {} for file in self.checkpoints}
        if key[0] is not None and key[1] is not None:
            for file, offset in entries:
                offsets[file][(key[0], key[1])] = offset
        return LogDirReport(self.path, offsets=offsets, clean_shutdown_marker=self.clean_shutdown_marker)


@dataclass(slots=True, frozen=True)
class Sized:
    """A target, the log dir it belongs to, its segments as (base offset, bytes) in offset order, and the
    piece of it a task walks when the partition was split (spark/pieces.py). Made on an executor from a
    `Targets` row, one at a time; the driver holds none but the few it splits."""

    target: Target
    log_dir: str
    segments: tuple[tuple[int, int], ...] = ()
    piece: Piece | None = None  # a partition too large for one task: the base offsets this item walks
    pin: Pin | None = None  # from a HOST:PATH: read only by an executor on that host
    root: RootFiles | None = None  # its log dir's, when that log dir is one of the PATHs
    checkpoints: tuple[tuple[str, int], ...] = ()  # its entries in the log dir's checkpoints: (file, offset)

    def cut(self, first: int, end: int | None, segments: tuple[tuple[int, int], ...]) -> "Sized":
        return replace(self, piece=(first, end), segments=segments)


@dataclass(slots=True, frozen=True)
class Group:
    """What the targets of one kind in one directory share."""

    directory: str  # where they lie, on their host
    kind: TargetKind
    log_dir: str  # `Sized.log_dir`
    pin: Pin | None = None
    root: RootFiles | None = None


def _u32() -> array:
    return array("I")


def _i64() -> array:
    return array("q")


@dataclass(slots=True)
class Targets:
    """Targets as columns, in their listing's order: per target its group, its name (file-system bytes, the
    names end to end), its segments (base offsets and sizes) and its checkpoint entries (file, offset), each
    column cut by an array of ends. A piece of a split partition keeps its (first, end) in `pieces`; a target
    whose name its listing did not show to be its own (a symlink, or a PATH named by itself) is in `unsure`.
    Iterating gives each target as a `Sized`."""

    groups: list[Group] = field(default_factory=list)
    group: array = field(default_factory=_u32)
    names: bytearray = field(default_factory=bytearray)
    name_end: array = field(default_factory=_u32)
    seg_end: array = field(default_factory=_u32)
    bases: array = field(default_factory=_i64)
    sizes: array = field(default_factory=_i64)
    cp_end: array = field(default_factory=_u32)
    cp_file: bytearray = field(default_factory=bytearray)  # an index into OFFSET_CHECKPOINTS
    cp_offset: array = field(default_factory=_i64)
    pieces: dict[int, Piece] = field(default_factory=dict)
    # (few: the targets of a log dir's listing are known by it, which spares each check task an lstat per target)
    unsure: set[int] = field(default_factory=set)

    def __len__(self) -> int:
        return len(self.group)

    def __iter__(self) -> Iterator[Sized]:
        folders: dict[int, Path] = {}
        for i in range(len(self)):
            yield self.item(i, folders)

    def item(self, i: int, folders: dict[int, Path] | None = None) -> Sized:
        g = self.group[i]
        group = self.groups[g]
        folder = folders.get(g) if folders is not None else None
        if folder is None:
            folder = Path(group.directory)
            if folders is not None:
                folders[g] = folder
        name = os.fsdecode(bytes(self.names[self.name_end[i - 1] if i else 0:self.name_end[i]]))
        s0, s1 = self.seg_end[i - 1] if i else 0, self.seg_end[i]
        c0, c1 = self.cp_end[i - 1] if i else 0, self.cp_end[i]
        real = name if name and i not in self.unsure else None
        return Sized(Target(folder / name if name else folder, group.kind, real), group.log_dir,
                     tuple(zip(self.bases[s0:s1], self.sizes[s0:s1])), self.pieces.get(i), group.pin, group.root,
                     tuple((OFFSET_CHECKPOINTS[f], o) for f, o in zip(self.cp_file[c0:c1], self.cp_offset[c0:c1])))

    def segment_count(self, i: int) -> int:
        return self.seg_end[i] - (self.seg_end[i - 1] if i else 0)

    def segment_bytes(self, i: int) -> int:
        return sum(self.sizes[self.seg_end[i - 1] if i else 0:self.seg_end[i]])

    def log_dirs(self) -> list[str]:
        """The log dirs its targets lie in, in order of first appearance."""
        return list(dict.fromkeys(g.log_dir for g in self.groups))

    def outline(self) -> "Targets":
        """Its groups only (what `log_dirs` reads), once the driver has dealt its targets out."""
        return Targets(list(self.groups))

    @classmethod
    def of(cls, items: Iterable[Sized]) -> "Targets":
        built = TargetsBuilder()
        for item in items:
            built.add_sized(item)
        return built.targets


class TargetsBuilder:
    """A `Targets` put together target by target, its groups shared."""

    def __init__(self) -> None:
        self.targets = Targets()
        self._index: dict[Group, int] = {}

    def _group(self, group: Group) -> int:
        g = self._index.get(group)
        if g is None:
            g = self._index[group] = len(self.targets.groups)
            self.targets.groups.append(group)
        return g

    def add(self, group: Group, name: str, segments: Iterable[tuple[int, int]],
            checkpoints: Iterable[tuple[str, int]] = (), piece: Piece | None = None, sure: bool = False) -> None:
        """`sure`: `name` is the target's real name (`Target.real_name`)."""
        t = self.targets
        if piece is not None:
            t.pieces[len(t)] = piece
        if not sure:
            t.unsure.add(len(t))
        t.group.append(self._group(group))
        t.names += os.fsencode(name)
        t.name_end.append(len(t.names))
        for base, size in segments:
            t.bases.append(base)
            t.sizes.append(size)
        t.seg_end.append(len(t.bases))
        for file, offset in checkpoints:
            t.cp_file.append(OFFSET_CHECKPOINTS.index(file))
            t.cp_offset.append(offset)
        t.cp_end.append(len(t.cp_offset))

    def add_sized(self, item: Sized) -> None:
        target = item.target
        self.add(Group(str(target.path.parent), target.kind, item.log_dir, item.pin, item.root), target.path.name,
                 item.segments, item.checkpoints, item.piece, sure=target.real_name is not None)

    def add_from(self, src: Targets, i: int) -> None:
        """Target `i` of `src`, copied column by column (no `Sized` made)."""
        t = self.targets
        if (piece := src.pieces.get(i)) is not None:
            t.pieces[len(t)] = piece
        if i in src.unsure:
            t.unsure.add(len(t))
        t.group.append(self._group(src.groups[src.group[i]]))
        t.names += src.names[src.name_end[i - 1] if i else 0:src.name_end[i]]
        t.name_end.append(len(t.names))
        s0, s1 = src.seg_end[i - 1] if i else 0, src.seg_end[i]
        t.bases += src.bases[s0:s1]
        t.sizes += src.sizes[s0:s1]
        t.seg_end.append(len(t.bases))
        c0, c1 = src.cp_end[i - 1] if i else 0, src.cp_end[i]
        t.cp_file += src.cp_file[c0:c1]
        t.cp_offset += src.cp_offset[c0:c1]
        t.cp_end.append(len(t.cp_offset))


@dataclass(slots=True)
class Listing:
    """One PATH as an executor saw it: verify's plan report (its log dirs' own findings, their partition
    lists and checkpoints left out: each target carries its entries) and the sized targets."""

    path: str
    host: str
    report: Report
    targets: Targets = field(default_factory=Targets)
    misplaced: bool = False  # pinned, but its task ran on another host: it read nothing (spark/rounds.py)

    def __post_init__(self) -> None:
        if not isinstance(self.targets, Targets):  # a list of `Sized`
            self.targets = Targets.of(self.targets)


def path_key(path: str, pin: Pin | None = None) -> str:
    """How a PATH (or a directory on its host) is named where partitions are held against their log dir."""
    return str(Path(named(pin, str(Path(path)))))


def list_path(path: str, pin: Pin | None = None, paths: Collection[str] = ()) -> Listing:
    """What verify plans for PATH, as this executor sees it. A pinned PATH (HOST:PATH) is read only on its
    host: elsewhere the listing says it was not audited; its log dirs and partitions are named HOST:PATH.
    `paths` are the keys (`path_key`) of all the PATHs audited together: a partition whose log dir is
    another of them is held against that log dir's files, as when the two are listed together."""
    here = executor_host()
    if pin is not None and not same_host(pin.executor, here):
        return replace(not_audited(path, pin.asked, f"its task ran on {here}"), misplaced=True)
    found = discover([Path(path)])
    report = found_report(found)
    for ld in report.log_dirs:
        ld.path = named(pin, ld.path)
    # named as verify's findings name it, with the host asked for where there was one
    listing = Listing(named(pin, str(Path(path))), reader(pin, here), report)
    built = TargetsBuilder()
    own = {str(Path(ld.path)): ld for ld in report.log_dirs}
    groups: dict[tuple[Path, TargetKind], tuple[Group, LogDirReport | None]] = {}
    for target in found.targets:
        where = (target.path.parent, target.kind)
        if where not in groups:
            groups[where] = _group(target, pin, own, paths)
        group, against = groups[where]
        built.add(group, target.path.name, target.segment_sizes(), _entries(against, target),
                  sure=target.real_name is not None)
    listing.targets = built.targets
    for ld in report.log_dirs:  # carried by the targets: the driver needs none of it
        ld.partition_dirs, ld.offsets = [], {}
    return listing


def _group(target: Target, pin: Pin | None, own: dict[str, LogDirReport], paths: Collection[str]) \
        -> tuple[Group, LogDirReport | None]:
    """A target's group, and the report of the log dir its partition is held against (None: none)."""
    directory = str(target.path.parent)
    key = path_key(directory, pin)
    ld = own.get(key)
    if ld is None and key in paths:
        ld = next(iter(found_report(discover([target.path.parent])).log_dirs), None)
        if ld is not None:
            ld.path = key
    return Group(directory, target.kind, named(pin, str(target.log_dir)), pin, RootFiles.of(ld) if ld else None), ld


def _entries(ld: LogDirReport | None, target: Target) -> list[tuple[str, int]]:
    """A partition's entries in its log dir's checkpoints, found by the name its walk will give it."""
    if ld is None or not ld.offsets:
        return []
    name = parse_partition_dir(target.own_name())
    if name is None:
        return []
    key = (name.topic, name.partition)
    return [(file, entries[key]) for file, entries in ld.offsets.items() if key in entries]


def not_audited(path: str, asked: str, why: str) -> Listing:
    """A pinned PATH no executor on its host read: a finding row, an operational error."""
    report = Report(operational_error=True)
    report.findings.append(finding(NOT_AUDITED, f"not audited: {why}", f"{asked}:{path}"))
    return Listing(f"{asked}:{path}", asked, report)
