"""The audit's driver stays small: a listing reaches it as columns (listing.Targets), the work is dealt out as
columns, and each partition carries its own checkpoint entries instead of a broadcast of every log dir's
report. These are the guards of that design; that the audit still equals verify is tests/test_audit.py's."""
from __future__ import annotations

import dataclasses
import pickle
from pathlib import Path

import pytest

from fixtures.fleet import TopicSpec, write_fleet
from logtool.checks.engine import check_against_log_dir, check_target, found_report
from logtool.spark.hosts import Pin
from logtool.spark.listing import Listing, Sized, Targets, list_path, path_key
from logtool.spark.outcome import checked_rows, lost_rows, partition_path
from logtool.spark.rows import FINDING, FINDINGS, JUDGED, MISPLACED, PARTITION, PARTITIONS, PIECE, TAGGED, TALLY
from logtool.spark.summary import Tally
from logtool.spark.split import pieces, split, task_size, weight
from logtool.spark.task import Settings, check_unit
from logtool.store import layout, read_ahead
from logtool.store import partition as partition_store
from logtool.store.discover import Target, TargetKind, discover


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    """Three brokers; broker-0 stopped cleanly (its marker) over a torn partition, one of its checkpoint
    entries dropped and one beyond its partition's end; a partition dir outside the checkpoints."""
    root = tmp_path_factory.mktemp("scale")
    written = write_fleet(root, [TopicSpec("orders", 10, 1500, segment_bytes=500), TopicSpec("t", 40, 1200)])
    broker = written.log_dirs[0]
    (broker / ".kafka_cleanshutdown").write_text("")
    (broker / "quiet-0").mkdir()
    checkpoint = broker / "replication-offset-checkpoint"
    head, count, *entries = checkpoint.read_text().splitlines()
    kept = [e for e in entries if not e.startswith("t 0 ")]
    kept = [f"{e.rsplit(' ', 1)[0]} 999999" if e.startswith("t 1 ") else e for e in kept]
    checkpoint.write_text("\n".join([head, str(len(kept)), *kept]) + "\n")
    return written


def _codes(report) -> list[tuple]:
    return [(f.code, f.file, f.offset, f.message) for f in report.all_findings()]


def test_a_partition_s_own_entries_give_the_findings_of_its_whole_log_dir(fleet):
    """What check_against_log_dir finds with a partition's entries alone (the task's view) is what it finds
    with the log dir's whole report (verify's), partition by partition."""
    compared = 0
    for log_dir in fleet.log_dirs:
        whole = found_report(discover([log_dir])).log_dirs[0]
        listing = list_path(str(log_dir))
        assert [ld.partition_dirs for ld in listing.report.log_dirs] == [[]]  # none of it reaches the driver
        assert [ld.offsets for ld in listing.report.log_dirs] == [{}]
        for item in listing.targets:
            assert item.root is not None and item.root.path == str(log_dir)
            alone, full = (check_target(item.target, deep=False) for _ in range(2))
            check_against_log_dir(item.root.report((alone.topic, alone.partition), item.checkpoints), alone)
            check_against_log_dir(whole, full)
            assert _codes(alone) == _codes(full)
            compared += 1
    found = {c for log_dir in fleet.log_dirs for item in list_path(str(log_dir)).targets
             for c in _codes(_held(item))}
    # the cases above were found: a missing entry, one past the end, the marker over damage
    assert {"LT506", "LT507", "LT513"} <= {c[0] for c in found} and compared == fleet.partition_dirs + 1


def _held(item: Sized):
    rep = check_target(item.target, deep=False)
    if item.root is not None:
        check_against_log_dir(item.root.report((rep.topic, rep.partition), item.checkpoints), rep)
    return rep


def test_a_partition_given_beside_its_log_dir_is_held_against_it(fleet):
    log_dir = fleet.log_dirs[0]
    part = next(p for p in sorted(log_dir.iterdir()) if p.name.startswith("t-"))
    keys = frozenset(path_key(str(p)) for p in (log_dir, part))
    (alone,) = list_path(str(part), paths=keys).targets
    (listed,) = [t for t in list_path(str(log_dir)).targets if t.target.path == part]
    assert alone == listed and alone.root is not None
    (unrelated,) = list_path(str(part)).targets  # its log dir not among the PATHs: held against nothing
    assert unrelated.root is None and unrelated.checkpoints == ()


def test_targets_are_columns_that_give_back_each_sized(fleet):
    listing = list_path(str(fleet.log_dirs[1]))
    items = list(listing.targets)
    assert Targets.of(items) == listing.targets and len(listing.targets) == len(items) > 40
    again = pickle.loads(pickle.dumps(listing, pickle.HIGHEST_PROTOCOL))
    assert list(again.targets) == items
    # a listing without a target, and one made of Sized (as tests and the old callers build them)
    assert list(Listing("p", "h", listing.report).targets) == []
    assert list(Listing("p", "h", listing.report, items[:2]).targets) == items[:2]
    # pinned, a lone file, a piece: every field comes back
    pinned = Sized(Target(Path("/d/x-0/00000000000000000000.log"), TargetKind.RECORDS_FILE), "h1:/d",
                   ((0, 10),), (0, None), Pin("h1", "10.0.0.1"), items[0].root, (("recovery-point-offset-checkpoint",
                                                                                 7),))
    assert list(Targets.of([pinned, items[0]])) == [pinned, items[0]]


def test_a_task_knows_each_partition_s_own_name_from_its_listing(fleet, tmp_path, monkeypatch):
    """Where the log dir's listing showed a partition dir to be no symlink, its name is its own: the task is
    told so through the columns (no lstat per partition to ask again); a symlinked one is asked where it is."""
    log_dir = tmp_path / "broker"
    log_dir.mkdir()
    real = next(p for p in sorted(fleet.log_dirs[1].iterdir()) if p.name.startswith("t-"))
    (log_dir / "t-77").symlink_to(real)  # named t-77 here, t-N where it really is
    for p in sorted(fleet.log_dirs[1].iterdir())[:6]:
        if p.is_dir() and p != real:
            (log_dir / p.name).mkdir()
            for f in p.iterdir():
                (log_dir / p.name / f.name).write_bytes(f.read_bytes())
    items = list(list_path(str(log_dir)).targets)
    sent = list(pickle.loads(pickle.dumps(Targets.of(items), pickle.HIGHEST_PROTOCOL)))
    (unit,) = split(sent, 1 << 40)
    dealt = list(unit.items)
    for listed in (items, sent, dealt):
        assert {i.target.path.name: i.target.real_name for i in listed} == \
            {p.name: None if p.is_symlink() else p.name for p in log_dir.iterdir()}, listed
    asked: list[Path] = []
    monkeypatch.setattr(partition_store, "real_name", lambda p: asked.append(p) or layout.real_name(p))
    reports = [c.report for c in check_unit(Settings(), unit)]
    assert asked == [log_dir / "t-77"]
    # and the symlinked partition is named as the broker names it: by where it really is
    assert {(r.topic, r.partition) for r in reports if r.path.endswith("t-77")} == \
        {("t", int(real.name.rsplit("-", 1)[1]))}


def test_a_listing_costs_the_driver_tens_of_bytes_a_partition(fleet):
    """The listing as it travels (pickled) and as the driver holds it: arrays, no object per partition."""
    listing = list_path(str(fleet.log_dirs[1]))
    n = len(listing.targets)
    sent = len(pickle.dumps(listing.targets, pickle.HIGHEST_PROTOCOL))
    shared = len(pickle.dumps(listing.targets.outline(), pickle.HIGHEST_PROTOCOL))  # its log dir's, once
    # per partition: its name (8 bytes here) and end, a segment (16), three checkpoint entries (27), a group
    assert (sent - shared) / n < 80, (sent - shared) / n
    assert len(listing.targets.groups) == 1


def test_the_driver_splits_columns_without_making_a_partition_s_object(fleet, monkeypatch):
    """split over the listings' columns deals what split over Sized deals, making a Sized only of what
    it cuts."""
    listings = [list_path(str(d)) for d in fleet.log_dirs]
    items = [t for listing in listings for t in listing.targets]
    heavy = max(items, key=weight)
    task = weight(heavy) // 2  # the heaviest partitions are cut, the rest grouped
    cut = sum(len(pieces(i, task)) > 1 for i in items)
    candidates = sum(len(i.segments) > 1 and weight(i) > task for i in items)
    assert 0 < cut <= candidates < len(items) / 2
    made = []
    real = Targets.item
    monkeypatch.setattr(Targets, "item", lambda self, i, folders=None: made.append(i) or real(self, i, folders))
    units = split([listing.targets for listing in listings], task)
    assert len(made) == candidates
    monkeypatch.undo()
    expected = split(items, task)
    assert sorted(_dealt(u) for u in units) == sorted(_dealt(u) for u in expected)
    assert {t for u in units for t in u.items if t.piece is None} == {i for i in items if len(pieces(i, task)) == 1}
    assert task_size([listing.targets for listing in listings], 2) == task_size(items, 2)


def _dealt(unit) -> tuple:
    return unit.weight, sorted(str((i.target.path, i.piece)) for i in unit.items)


def test_a_pinned_unit_run_off_its_host_comes_back_whole(fleet):
    listing = list_path(str(fleet.log_dirs[2]))
    pin = Pin("elsewhere", "192.0.2.1")  # TEST-NET: never this machine
    units = split([Sized(i.target, i.log_dir, i.segments, None, pin, i.root, i.checkpoints)
                   for i in listing.targets], 1 << 40)
    (unit,) = units
    (back,) = check_unit(Settings(), unit)
    assert back is unit
    rows = list(checked_rows([back]))
    assert [r[0] for r in rows] == [MISPLACED, "tally"] and pickle.loads(rows[0][4]) == unit
    # its host gone: a row per partition, not audited, still held against its log dir's checkpoints
    lost = list(lost_rows((unit, "its host elsewhere has no live Spark executor")))
    assert sum(r[0] == PARTITION for r in lost) == len(listing.targets)
    assert {r[1][9] for r in lost if r[0] == FINDING} == {"LT518"}
    # and the verdict does not say they lose nothing: what recovery would do is not known of any of them
    judged = [pickle.loads(r[4])[1] for r in lost if r[0] == JUDGED]
    assert len(judged) == len(listing.targets)
    assert all(j.not_worked_out.why == "not audited: its host elsewhere has no live Spark executor" for j in judged)


def test_the_tallies_of_the_tasks_add_up_to_the_fleet_s(fleet):
    """Each task tallies its partitions and the driver adds the tallies up: the sum of the tasks' tallies is
    the tally of all their partitions counted at once, field by field (the damaged broker's findings, bytes
    past its valid prefixes and days of damage included)."""
    outcomes = []
    for log_dir in fleet.log_dirs:
        (unit,) = split(list(list_path(str(log_dir)).targets), 1 << 40)  # a task per log dir: no pieces
        outcomes.append(list(check_unit(Settings(), unit)))
    tallies = [[pickle.loads(r[4]) for r in checked_rows(o) if r[0] == TALLY] for o in outcomes]
    added = Tally()
    for (tally,) in tallies:
        added.merge(tally)
    (everything,) = split([i for log_dir in fleet.log_dirs for i in list_path(str(log_dir)).targets], 1 << 40)
    (whole,) = [pickle.loads(r[4]) for r in checked_rows(check_unit(Settings(), everything)) if r[0] == TALLY]
    assert added.damaged_broker and added.damage_days  # the fleet's damage is in what was added up
    for name in (f.name for f in dataclasses.fields(Tally)):
        assert getattr(added, name) == getattr(whole, name), name


def _rows_apart_from_times(rows: list[tuple]) -> list[tuple]:
    """A task's rows with what the clock puts in them left out: the seconds of a partition row and of a piece,
    a tally."""
    at = PARTITIONS.fieldNames().index("seconds")

    def timeless(kind: str, partition: tuple | None, blob: bytes | None) -> tuple:
        if kind == PARTITION:
            return (*partition[:at], *partition[at + 1:]), blob
        if kind == PIECE:
            return partition, dataclasses.replace(pickle.loads(blob), seconds=0.0)
        return partition, None if kind == TALLY else blob

    return [(kind, finding, *timeless(kind, partition, blob), batch, key)
            for kind, finding, partition, batch, blob, key in rows]


@pytest.mark.parametrize("spare_page_cache", [True, False])
def test_a_task_reads_its_partitions_ahead_and_sends_the_rows_it_sends_without(fleet, monkeypatch, spare_page_cache):
    """A check task reads its whole partition dirs ahead, as verify does (store/read_ahead.py), and its rows
    (the fleet's damage, its pieces of split partitions, the verdict's blobs) are the rows the Python readers
    alone make, sparing the page cache or not."""
    served = []
    answer = read_ahead._ahead
    monkeypatch.setattr(read_ahead, "_ahead", lambda a: served.append(answer(a)) or served[-1])
    items = [i for log_dir in fleet.log_dirs for i in list_path(str(log_dir)).targets]
    units = split(items, 3_000)  # small tasks: the torn partition's segments are cut into pieces
    assert any(u.items.pieces for u in units)
    settings = Settings(spare_page_cache=spare_page_cache)

    def rows() -> list[tuple]:
        return _rows_apart_from_times([r for u in units for r in checked_rows(check_unit(settings, u))])

    ahead = rows()
    assert sum(a is not None for a in served) >= fleet.partition_dirs - sum(len(u.items.pieces) for u in units)
    with monkeypatch.context() as m:
        m.setattr(read_ahead, "READER", None)
        reference = rows()
    assert ahead == reference
    code = FINDINGS.fieldNames().index("code")
    assert {r[1][code] for r in reference if r[0] == FINDING} >= {"LT506", "LT507"}  # (the torn one is in pieces)
    # A piece carries its partition's key, which the JVM groups the pieces by; no other row has one.
    raw = [r for u in units for r in checked_rows(check_unit(settings, u))]
    key = TAGGED.fieldNames().index("key")
    assert {r[key] for r in raw if r[0] != PIECE} == {None}
    keys = [(r[key], partition_path(pickle.loads(r[4]))) for r in raw if r[0] == PIECE]
    assert keys and all(k == path for k, path in keys) and len({k for k, _ in keys}) < len(keys)
