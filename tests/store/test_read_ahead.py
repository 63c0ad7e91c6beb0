"""Partition directories read ahead (store/read_ahead.py, _dirread.c): what the compiled reader answers for
each kind of entry, the thread that runs it ahead of the checks, and the checks' reports, which read-ahead
must leave exactly as the Python readers make them."""
from __future__ import annotations

import errno
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import ROOT, SHARED, require

from fixtures.fleet import TopicSpec, write_fleet
from logtool.checks.engine import run_checks
from logtool.format.kernel import PURE_ENV
from logtool.store import read_ahead
from logtool.store.pacing import ReadPolicy, Throttle
from logtool.store.read_ahead import READ_BELOW, READER, Ahead

# CI and `make` build the reader (gcc and the Python headers are there): without it, every test here fails.
pytestmark = pytest.mark.skipif(os.environ.get(PURE_ENV, "") not in ("", "0"), reason=f"{PURE_ENV} is set")


def test_the_reader_is_loaded():
    assert READER is not None, read_ahead.WHY_NOT


@pytest.fixture
def served(monkeypatch) -> list[Ahead]:
    """Every directory the reader answered for, as the checks were handed it."""
    out: list[Ahead] = []
    answer = read_ahead._ahead

    def keep(entries):
        a = answer(entries)
        if a is not None:
            out.append(a)
        return a

    monkeypatch.setattr(read_ahead, "_ahead", keep)
    return out


def _read(*dirs: Path, below: int = READ_BELOW, budget: int = 1 << 20) -> list:
    assert READER is not None
    return READER.read_dirs([os.fsencode(d) for d in dirs], below, budget)


def test_a_plain_directory_comes_with_its_names_subdirectories_and_small_files(tmp_path):
    (tmp_path / "00000000000000000000.log").write_bytes(b"\x01" * 100)
    (tmp_path / "partition.metadata").write_text("version: 0\n")
    (tmp_path / "empty").write_bytes(b"")
    (tmp_path / "sub").mkdir()
    [(names, dirs, contents)] = _read(tmp_path)
    assert sorted(names) == ["00000000000000000000.log", "empty", "partition.metadata", "sub"]
    assert dirs == ["sub"]
    mtime = (tmp_path / "partition.metadata").stat().st_mtime_ns
    assert contents["partition.metadata"] == (b"version: 0\n", mtime)
    assert contents["00000000000000000000.log"][0] == b"\x01" * 100
    assert contents["empty"][0] == b""
    assert "sub" not in contents


def test_what_it_does_not_read_is_listed_without_bytes(tmp_path):
    """A file of `below` bytes or more, a FIFO (never opened for long: O_NONBLOCK), and what the batch's budget
    has no room for are listed; the checks read them as they would have."""
    (tmp_path / "a-large").write_bytes(b"x" * 64)
    os.mkfifo(tmp_path / "b-fifo")
    (tmp_path / "c-small").write_bytes(b"y" * 10)
    [(names, _, contents)] = _read(tmp_path, below=64)
    assert sorted(names) == ["a-large", "b-fifo", "c-small"]
    assert set(contents) == {"c-small"}
    [(_, _, within)] = _read(tmp_path, budget=70)  # 64 bytes fit, the next 10 do not
    assert len(within) == 1


def test_a_directory_it_cannot_list_is_an_errno_and_one_with_a_symlink_is_left_to_python(tmp_path):
    (tmp_path / "linked").mkdir()
    (tmp_path / "linked" / "00000000000000000000.log").write_bytes(b"")
    os.symlink("00000000000000000000.log", tmp_path / "linked" / "00000000000000000001.log")
    (tmp_path / "a-file").write_bytes(b"")
    answers = _read(tmp_path / "missing", tmp_path / "linked", tmp_path / "a-file")
    assert answers == [errno.ENOENT, None, errno.ENOTDIR]
    assert read_ahead._ahead(answers[0]) is None and read_ahead._ahead(answers[1]) is None


def test_names_that_are_not_utf8_come_as_os_listdir_gives_them(tmp_path):
    raw = b"topic-\xff\xfe-0"
    os.mkdir(os.fsencode(tmp_path) + b"/" + raw)
    [(names, dirs, _)] = _read(tmp_path)
    assert names == dirs == os.listdir(tmp_path)


def test_the_thread_hands_each_directory_its_own_answer_in_order(tmp_path, monkeypatch):
    monkeypatch.setattr(read_ahead, "BATCH", 4)  # many batches, through the thread
    dirs: list[Path | None] = []
    for i in range(23):
        d = tmp_path / f"t-{i}"
        d.mkdir()
        (d / "leader-epoch-checkpoint").write_text(f"{i}\n")
        dirs.append(d)
        if i % 5 == 0:
            dirs.append(None)  # not a directory to read: passed through
    with read_ahead.read_ahead(dirs) as aheads:
        got = list(aheads)
    assert len(got) == len(dirs)
    for d, a in zip(dirs, got):
        if d is None:
            assert a is None
        else:
            assert isinstance(a, Ahead) and a.take("leader-epoch-checkpoint") == \
                ((d / "leader-epoch-checkpoint").read_bytes(), (d / "leader-epoch-checkpoint").stat().st_mtime_ns)
            assert a.take("leader-epoch-checkpoint") is None  # taken once: a second read reads the file


def test_leaving_early_stops_the_thread(tmp_path, monkeypatch):
    monkeypatch.setattr(read_ahead, "BATCH", 2)
    dirs = []
    for i in range(40):
        (tmp_path / str(i)).mkdir()
        dirs.append(tmp_path / str(i))
    with read_ahead.read_ahead(dirs) as aheads:
        next(aheads)
    assert not any(t.name == "logtool-read-ahead" for t in __import__("threading").enumerate())


def test_a_read_policy_that_paces_reads_every_file_itself(tmp_path):
    assert read_ahead.reads_ahead(None)
    assert read_ahead.reads_ahead(ReadPolicy(on_bytes=lambda n: None))  # a progress display's counting
    assert read_ahead.reads_ahead(ReadPolicy(spare_cache=True))  # what the page cache holds whole
    assert not read_ahead.reads_ahead(ReadPolicy(Throttle(1e6)))
    (tmp_path / "p").mkdir()
    with read_ahead.read_ahead([tmp_path / "p"], ReadPolicy(Throttle(1e6))) as aheads:
        assert list(aheads) == [None]


def _cold(path: Path) -> None:
    """The file's pages out of the page cache, where its file system lets them go (tmpfs keeps them)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def _pages(path: Path) -> bytes:
    """One byte per page of the file, 1 where the page cache holds it, as the probe of store/residency.py sees
    it."""
    from logtool.store.residency import residency

    fd = os.open(path, os.O_RDONLY)
    try:
        return residency(fd, 0, path.stat().st_size)
    finally:
        os.close(fd)


def test_sparing_the_page_cache_reads_every_file_and_leaves_the_cache_as_it_was(tmp_path):
    """Under a policy that spares the page cache the reader reads a file the page cache holds whole as it is,
    and any other after probing its residency, giving back every page its read brought in."""
    from logtool.store.residency import PAGE

    files = {name: os.urandom(5 * PAGE + 100) for name in ("cold", "warm", "cold-too")}
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
    for name in ("cold", "cold-too"):
        _cold(tmp_path / name)
    before = {name: _pages(tmp_path / name) for name in files}
    assert not any(before["cold"]) and not any(before["cold-too"]) and all(before["warm"])
    [(_, _, contents)] = READER.read_dirs([os.fsencode(tmp_path)], READ_BELOW, 1 << 20, True)
    assert {name: read[0] for name, read in contents.items()} == files
    assert {name: _pages(tmp_path / name) for name in files} == before
    [(_, _, everything)] = READER.read_dirs([os.fsencode(tmp_path)], READ_BELOW, 1 << 20, False)
    assert set(everything) == set(files)
    assert all(_pages(tmp_path / "cold"))  # without sparing, a read leaves its pages


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    """A directory any user may list, outside pytest's own (which only its owner may enter)."""
    path = Path(tempfile.mkdtemp(prefix="logtool-shared-"))
    path.chmod(0o755)
    try:
        yield path
    finally:
        shutil.rmtree(path)


@pytest.mark.root
def test_sparing_the_page_cache_leaves_to_the_checks_a_file_whose_residency_it_cannot_see(shared_dir):
    """Linux shows a file's residency only to its owner or to a process that may write it: for anyone else the
    reader could not tell what its read brought in, so it leaves the file to the checks (which read a file only
    where they need it, keeping its pages). Without sparing, it reads it."""
    from logtool.store.residency import PAGE

    for name in ("cold", "warm"):
        (shared_dir / name).write_bytes(os.urandom(5 * PAGE + 100))
        (shared_dir / name).chmod(0o444)
    _cold(shared_dir / "cold")
    assert not any(_pages(shared_dir / "cold")) and all(_pages(shared_dir / "warm"))
    probe = ("import os, sys\n"
             "from logtool.store._dirread import read_dirs\n"
             "[(_, _, read)] = read_dirs([os.fsencode(sys.argv[1])], 1 << 20, 1 << 20, sys.argv[2] == 'spare')\n"
             "print(' '.join(sorted(read)))\n")

    def as_nobody(spare: str) -> list[str]:
        p = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable, "-c",
                            probe, str(shared_dir), spare], capture_output=True, text=True, timeout=60, cwd=ROOT)
        assert p.returncode == 0, p.stderr
        return p.stdout.split()

    # ("warm" is left too where the kernel refuses another user's cachestat, as recent kernels do.)
    assert "cold" not in as_nobody("spare")
    assert not any(_pages(shared_dir / "cold"))
    assert as_nobody("plain") == ["cold", "warm"]


def test_a_fleet_checked_sparing_the_page_cache_reports_the_same_with_and_without_read_ahead(tmp_path, monkeypatch,
                                                                                           served):
    fleet = write_fleet(tmp_path, [TopicSpec("orders", 150, 6_000, segment_bytes=2_500)], brokers=1, replication=1,
                        plant=False)
    parts = sorted(p for p in fleet.log_dirs[0].iterdir() if p.is_dir())
    seg = sorted(parts[0].glob("*.log"))[-1]
    seg.write_bytes(seg.read_bytes()[:-7])  # torn, and cold
    for part in parts[:50]:  # a third of the partitions out of the page cache, where the file system lets them go
        for f in part.iterdir():
            _cold(f)
    ahead, reference = _both_ways(list(fleet.log_dirs), monkeypatch, reading=ReadPolicy(spare_cache=True))
    assert ahead == reference
    assert len(served) == len(reference["partitions"]) == 150
    assert reference["partitions"][0]["status"] == "damaged"


def _both_ways(paths: list[Path], monkeypatch, deep: bool = False,
               reading: ReadPolicy | None = None) -> tuple[dict, dict]:
    ahead = run_checks(paths, deep, reading=reading).to_dict()
    with monkeypatch.context() as m:
        m.setattr(read_ahead, "READER", None)
        reference = run_checks(paths, deep, reading=reading).to_dict()
    return ahead, reference


def _counting() -> tuple[ReadPolicy, list[int]]:
    counted: list[int] = []
    return ReadPolicy(on_bytes=counted.append), counted


@pytest.mark.parametrize("deep", [False, True])
def test_every_shared_log_dir_reports_the_same_with_and_without_read_ahead(monkeypatch, served, deep):
    roots = [require(SHARED / "real"), require(SHARED / "real-more"), require(SHARED / "kafka-written")]
    log_dirs = sorted({p.parent.parent for root in roots for p in root.rglob("*.log")})
    assert len(log_dirs) > 40
    ahead, reference = _both_ways(log_dirs, monkeypatch, deep)
    assert len(reference["partitions"]) > 500
    assert len(served) > 0.9 * len(reference["partitions"])  # read ahead, nearly all of them
    assert ahead == reference


def test_a_damaged_fleet_reports_the_same_with_and_without_read_ahead(tmp_path, monkeypatch):
    """The fleet's planted damage, and more made by editing its bytes: a torn segment, a symlinked partition
    file, a FIFO where an index should be, a file too large to read ahead, a missing index."""
    fleet = write_fleet(tmp_path, [TopicSpec("orders", 300, 6_000, segment_bytes=2_500)], brokers=3)
    log_dir = fleet.log_dirs[0]
    parts = sorted(p for p in log_dir.iterdir() if p.is_dir())
    seg = sorted(parts[40].glob("*.log"))[-1]
    seg.write_bytes(seg.read_bytes()[:-7])
    side = sorted(parts[41].glob("*.index"))[0]
    side.unlink()
    os.mkfifo(side)
    os.symlink(sorted(parts[42].glob("*.log"))[0].name, parts[42] / "00000000000000999999.log")
    (parts[43] / "stray.bin").write_bytes(b"\0" * (READ_BELOW + 1))
    sorted(parts[44].glob("*.timeindex"))[0].unlink()
    ahead, reference = _both_ways([log_dir], monkeypatch)
    assert ahead == reference
    by_path = {p["path"]: p for p in reference["partitions"]}
    assert all(by_path[str(parts[i])]["status"] == "damaged" for i in (40, 41, 42, 44))
    assert "stray.bin" in by_path[str(parts[43])]["files"]


def test_a_progress_display_counts_the_same_bytes_with_and_without_read_ahead(tmp_path, monkeypatch):
    fleet = write_fleet(tmp_path, [TopicSpec("orders", 200, 3_000)], brokers=1, replication=1, plant=False)
    segments = sum(p.stat().st_size for p in fleet.log_dirs[0].rglob("*.log"))
    policy, counted = _counting()
    run_checks(list(fleet.log_dirs), deep=False, reading=policy)
    with monkeypatch.context() as m:
        m.setattr(read_ahead, "READER", None)
        reference, counted_reference = _counting()
        run_checks(list(fleet.log_dirs), deep=False, reading=reference)
    assert sum(counted) == sum(counted_reference) == segments


def test_the_sample_log_dir_reports_the_same_with_and_without_read_ahead(monkeypatch):
    ahead, reference = _both_ways([ROOT / "fixtures" / "sample-logdir"], monkeypatch, deep=True)
    assert ahead == reference and reference["partitions"]


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")  # the death it injects
def test_a_thread_that_dies_leaves_the_rest_to_the_checks(tmp_path, monkeypatch):
    """Whatever ends the thread before its last batch, the checks do not wait for ever: what it did not hand
    over they read themselves."""
    monkeypatch.setattr(read_ahead, "BATCH", 2)
    dirs = []
    for i in range(9):
        (tmp_path / str(i)).mkdir()
        dirs.append(tmp_path / str(i))
    calls = []

    def dying(reader, batch, spare_cache):
        calls.append(batch)
        if len(calls) > 1:
            raise RuntimeError("a defect in the thread")
        return [(i, None) for i, _ in batch]

    monkeypatch.setattr(read_ahead, "_read_batch", dying)
    with read_ahead.read_ahead(dirs) as aheads:
        assert list(aheads) == [None] * 9
