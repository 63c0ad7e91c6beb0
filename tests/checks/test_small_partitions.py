"""What makes a log dir of many small partitions cheap to verify (issue 30; bench/small.py measures it) changes
no answer: a small segment read whole instead of mapped, side files looked up in the partition's listing, the
sizes of the files beside the segments taken from their reads, the log dir's partitions matched by their
paths as strings, and the cyclic collector paused while the checks run."""
from __future__ import annotations

import gc
import json
import os
import random
import re
import shutil
import sys
from pathlib import Path

import pytest

import logtool.store.mapping as mapping
import logtool.store.segment as segment_module
import logtool.store.sidefile as sidefile
from fixtures.fleet import TopicSpec, write_fleet
from logtool.checks import engine
from logtool.checks.engine import check_target, run_checks
from logtool.format import meta
from logtool.store.discover import Target
from logtool.store.mapping import GuardedMap, NotRegularFile, read_small
from logtool.store.partition import Partition
from logtool.store.segment import Segment
from logtool.store.sidefile import MAPPED_FROM


@pytest.fixture(scope="module")
def fleet(tmp_path_factory) -> Path:
    """A log dir of five small single-segment partitions and its checkpoints."""
    root = tmp_path_factory.mktemp("small")
    write_fleet(root, [TopicSpec("small", 5, 11_500)], brokers=1, replication=1, plant=False)
    return root / "broker-0"


@pytest.fixture
def log_dir(fleet, tmp_path) -> Path:
    copy = tmp_path / "broker-0"
    shutil.copytree(fleet, copy)
    return copy


def _verify(capsys, *args) -> tuple[int, str]:
    from logtool.cli import main
    with pytest.raises(SystemExit) as e:
        main([str(a) for a in args])
    return e.value.code, capsys.readouterr().out


def test_a_small_segment_is_read_whole_and_a_large_one_mapped(log_dir, tmp_path):
    log = next((log_dir / "small-0").glob("*.log"))
    with Segment(log, 0) as seg:
        assert isinstance(seg.buf, bytes) and seg.size == seg.file_size == log.stat().st_size
        assert seg.opened_mtime_ns == log.stat().st_mtime_ns and not seg.changed_since_opened()
    big = tmp_path / "00000000000000000000.log"
    big.write_bytes(log.read_bytes() * (MAPPED_FROM // log.stat().st_size + 1))
    with Segment(big, 0) as seg:
        assert isinstance(seg.buf, GuardedMap) and seg.size == big.stat().st_size


def test_under_a_read_policy_a_small_segment_is_read_whole_and_a_large_one_mapped(log_dir, tmp_path):
    """Sparing the page cache needs to know which pages were cached before the read: a small file's are all
    probed before it is read whole (tests/store/test_pacing.py holds what is given back); a large one is
    walked through a mapping, probed ahead of the walk."""
    from logtool.store.pacing import read_policy
    log = next((log_dir / "small-0").glob("*.log"))
    with Segment(log, 0, reading=read_policy(None, True)) as seg:
        assert isinstance(seg.buf, bytes) and seg.size == log.stat().st_size
    big = tmp_path / "00000000000000000000.log"
    big.write_bytes(log.read_bytes() * (MAPPED_FROM // log.stat().st_size + 1))
    with Segment(big, 0, reading=read_policy(None, True)) as seg:
        assert isinstance(seg.buf, GuardedMap)


def test_read_small_refuses_what_is_not_a_regular_file(tmp_path):
    fifo = tmp_path / "00000000000000000000.log"
    os.mkfifo(fifo)
    with pytest.raises(NotRegularFile, match="a FIFO, not a regular file"):
        read_small(fifo, MAPPED_FROM)
    empty = tmp_path / "empty"
    empty.write_bytes(b"")
    assert read_small(empty, MAPPED_FROM) == (b"", empty.stat().st_mtime_ns)


def test_a_file_cut_before_it_is_read_is_mapped_as_it_is_then(log_dir, monkeypatch):
    """A read shorter than the size fstat gave: the segment is opened again, mapped, as the file is now."""
    log = next((log_dir / "small-0").glob("*.log"))
    opened = mapping.open_regular_stat

    def cut_after_open(path):
        fd, st = opened(path)
        os.truncate(path, 1000)
        return fd, st

    monkeypatch.setattr(mapping, "open_regular_stat", cut_after_open)
    assert read_small(log, MAPPED_FROM) is None
    monkeypatch.setattr(mapping, "open_regular_stat", opened)
    with Segment(log, 0) as seg:
        assert seg.size == seg.file_size == 1000


def test_side_files_not_in_the_listing_are_not_looked_for(log_dir, monkeypatch):
    """The listing says there is no .txnindex: nothing opens one, and the reports are those of a lookup."""
    looked: list[str] = []
    opened = sidefile.open_regular_stat

    def counting(path):
        looked.append(os.path.basename(path))
        return opened(path)

    monkeypatch.setattr(sidefile, "open_regular_stat", counting)
    rep = check_target(Target(log_dir / "small-1"), deep=False)
    assert not any(name.endswith(".txnindex") for name in looked), looked
    assert rep.segments[0].indexes == {"index": 16, "timeindex": 12}
    # A segment not listed (None) looks every side file up, as before.
    seg = Segment(next((log_dir / "small-1").glob("*.log")), 0)
    looked.clear()
    assert not seg.side(".txnindex").exists and looked == ["00000000000000000000.txnindex"]


def test_an_index_that_is_a_directory_is_unreadable_not_missing(log_dir, capsys):
    part = log_dir / "small-2"
    index = next(part.glob("*.index"))
    index.unlink()
    index.mkdir()
    rc, out = _verify(capsys, "verify", "--format", "json", part)
    names = [f["name"] for f in json.loads(out)["partitions"][0]["segments"][0]["findings"]]
    assert "UNREADABLE" in names and "INDEX_MISSING" not in names


def test_the_sizes_of_the_files_beside_the_segments_are_their_sizes(log_dir, capsys):
    part = log_dir / "small-3"
    (part / "00000000000000000000.txnindex").write_bytes(b"")  # listed and read: an empty index
    (part / "00000000000000000042.snapshot").write_bytes(b"\0" * 10)  # unreadable as a snapshot
    (part / "stray.txt").write_bytes(b"x" * 7)  # never read: its size from stat
    os.symlink(part / "gone", part / "dangling.index")  # its size: -1, as stat fails
    _rc, out = _verify(capsys, "verify", "--format", "json", part)
    files = json.loads(out)["partitions"][0]["files"]
    expected = {p.name: (p.stat().st_size if p.exists() else -1) for p in part.iterdir() if p.suffix != ".log"}
    assert files == expected


@pytest.mark.parametrize("how", ["relative", "dot", "absolute", "partition"])
def test_partitions_meet_their_log_dir_however_the_paths_are_written(log_dir, capsys, monkeypatch, how):
    """The checkpoint checks find each partition of the log dir given, whatever the PATH's spelling."""
    cp = log_dir / "recovery-point-offset-checkpoint"
    lines = cp.read_text().splitlines()
    kept = [line for line in lines[2:] if not line.startswith("small 4 ")]
    cp.write_text("\n".join(["0", str(len(kept)), *kept]) + "\n")
    monkeypatch.chdir(log_dir.parent)
    args = {"relative": ["broker-0"], "dot": ["."], "absolute": [str(log_dir)],
            "partition": ["broker-0", "broker-0/small-4"]}[how]
    if how == "dot":
        monkeypatch.chdir(log_dir)
    _rc, out = _verify(capsys, "verify", "--format", "json", *args)
    report = json.loads(out)
    missing = [p["path"] for p in report["partitions"]
               if any(f["name"] == "CHECKPOINT_ENTRY_MISSING" for f in p["findings"])]
    assert [os.path.basename(p) for p in missing] == ["small-4"] * (2 if how == "partition" else 1)


def test_the_collector_is_paused_for_the_checks_and_then_as_it_was(log_dir, monkeypatch):
    seen = []
    checked = engine.check_target

    def spy(*args, **kwargs):
        seen.append(gc.isenabled())
        return checked(*args, **kwargs)

    monkeypatch.setattr(engine, "check_target", spy)
    monkeypatch.setattr(engine, "COLLECT_EVERY", 2)
    collected = []
    monkeypatch.setattr(engine.gc, "collect", lambda generation=2: collected.append(generation) or 0)
    assert gc.isenabled()
    run_checks([log_dir], deep=False)
    assert seen == [False] * 5 and gc.isenabled() and collected == [0, 0]
    gc.disable()
    try:
        run_checks([log_dir], deep=False)
        assert not gc.isenabled()  # left off, as it was
    finally:
        gc.enable()


def test_the_report_is_the_same_with_the_collector_running(log_dir, monkeypatch):
    import contextlib

    from logtool import collector
    paused = run_checks([log_dir], deep=True).to_dict()
    monkeypatch.setattr(collector, "paused", contextlib.nullcontext)
    assert run_checks([log_dir], deep=True).to_dict() == paused


def test_partition_from_dir_classifies_recurring_names_once(log_dir):
    a, b = Partition.from_dir(log_dir / "small-0"), Partition.from_dir(log_dir / "small-1")
    assert a.files == b.files and a.files["partition.metadata"] is b.files["partition.metadata"]
    assert [s.listed for s in a.segments] == [frozenset(os.listdir(log_dir / "small-0"))]


_JAVA_SPACES = re.compile(r"[ \t\n\x0b\f\r]+")
_JAVA_INTEGER = re.compile(r"[+-]?[0-9]+")


def test_checkpoint_fields_split_and_parse_as_java_does():
    """The fast paths of meta's field splitting and number parsing against the expressions they spare."""
    rng = random.Random(30)
    alphabet = [" ", "  ", "\t", "\r", "\x0b", "\x0c", "\xa0", "\x1c", "\u2003", "a", "1", "0", "-", "+", "é", "٣",
                "²", "9" * 12]
    for _ in range(20_000):
        line = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 7)))
        expected = _JAVA_SPACES.split(line)
        while len(expected) > 1 and expected[-1] == "":
            expected.pop()
        assert meta._java_split(line) == expected, repr(line)
        for bounds in (meta.INT, meta.LONG):
            want = int(line) if _JAVA_INTEGER.fullmatch(line) and bounds[0] <= int(line) <= bounds[1] else None
            assert meta._java_number(line, bounds) == want, repr(line)


def test_segment_module_still_maps_through_open_readonly_what_it_does_not_read(monkeypatch, tmp_path):
    """Big segments keep the guarded mapping (tests/test_shrinking_files.py cuts them under it)."""
    mapped = []
    monkeypatch.setattr(segment_module, "open_readonly", lambda p: mapped.append(p) or mapping.open_readonly(p))
    big = tmp_path / "00000000000000000000.log"
    big.write_bytes(b"\0" * MAPPED_FROM)
    with Segment(big, 0):
        pass
    assert mapped == [big]


def _printed(lines: list[str], plain: bool, monkeypatch) -> str:
    """What `render/text.py`'s batched printing writes of these lines of markup to a pipe."""
    import io
    from logtool.render import text
    out = io.StringIO()
    with monkeypatch.context() as m:
        m.setattr(sys, "stdout", out)
        if not plain:
            m.setattr(text.Lines, "_write_plain", lambda self, markup: False)
        printer = text.Lines(text.console())
        for line in lines:
            printer.print(line, text.FINDING_HANG)
        printer.flush()
    return out.getvalue()


def test_lines_printed_without_rich_are_those_rich_prints(monkeypatch):
    """Markup as render_verify makes it (static tags, everything else escaped), from names and messages holding
    what rich treats apart (brackets, backslashes, emoji codes, control characters, undecodable bytes)."""
    from rich.markup import escape
    from logtool.render import text
    rng = random.Random(30)
    bits = ["a", "/", "-0", " ", ":", ":smile:", ":smile-text:", ":not_one:", "[", "]", "[bold]", "[/]", "\\", "\t",
            "\x1b[0m", "\r", "\x07", "é", "😀", "\udcff", "..", "=", "@", "#", "[link=x]", text.GLUE, "0"]
    lines = []
    for _ in range(3000):
        name = "".join(rng.choice(bits) for _ in range(rng.randint(0, 8)))
        status = rng.choice(["[green]clean[/]", "[yellow]untrimmed[/]", "[bold red]damaged[/]", "[bold]log dir[/]"])
        lines.append(f"{status}{text.GLUE}{escape(text.glued(name))}:{text.GLUE}1{text.GLUE}segment(s), "
                     f"{escape(name)} [dim](and 2 more like it)[/]")
    for chunk in (lines[i:i + 300] for i in range(0, len(lines), 300)):
        assert _printed(chunk, True, monkeypatch) == _printed(chunk, False, monkeypatch)
    some_plain = [line for line in lines if text._plain(line.replace(text.GLUE, " ")) is not None]
    assert len(some_plain) > 300  # the plain path was taken, not only the fallback


def test_verify_prints_the_same_lines_without_rich(log_dir, capsys, monkeypatch):
    from logtool.render import text
    (log_dir / "small-1" / "00000000000000000000.timeindex").unlink()  # a finding line too
    _rc, fast_out = _verify(capsys, "verify", "--show-info", log_dir)
    monkeypatch.setattr(text.Lines, "_write_plain", lambda self, markup: False)
    _rc, rich_out = _verify(capsys, "verify", "--show-info", log_dir)
    assert fast_out == rich_out and "TIMEINDEX_MISSING" in fast_out


def test_a_target_s_own_name_is_taken_from_its_listing_and_asked_otherwise(log_dir, monkeypatch):
    """A partition dir its log dir's listing showed to be no symlink is named by that listing, with no lstat;
    a symlinked one, a partition dir named by itself and a segment file ask where they really are."""
    from logtool.store import discover as discover_module, layout
    (log_dir.parent / "elsewhere").mkdir()
    moved = log_dir.parent / "elsewhere" / "small-3"
    (log_dir / "small-3").rename(moved)
    (log_dir / "linked-9").symlink_to(moved)
    asked: list[Path] = []
    monkeypatch.setattr(discover_module, "real_name", lambda p: asked.append(p) or layout.real_name(p))
    found = discover_module.discover([log_dir])
    names = {t.path.name: t.own_name() for t in found.targets}
    assert names == {"small-0": "small-0", "small-1": "small-1", "small-2": "small-2", "small-4": "small-4",
                     "linked-9": "small-3"}
    assert asked == [log_dir / "linked-9"]
    alone = Target(log_dir / "linked-9")
    segment = Target(log_dir / "linked-9" / "00000000000000000000.log", discover_module.TargetKind.RECORDS_FILE)
    assert (alone.own_name(), segment.own_name()) == ("small-3", "small-3")
    assert asked[1:] == [alone.path, log_dir / "linked-9"]
