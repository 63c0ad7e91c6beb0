"""`dump` against what Apache Kafka's own kafka-dump-log printed for the same files
(../shared/fixtures/kafka-dump-log and kafka-dump-log-real, taken with the bare file name inside the
partition dir): byte for byte, every .log in its three flag sets and every index, transaction index and
producer snapshot of both sets. Damaged files included: stdout is Kafka's, logtool's explanation goes to
stderr."""
from __future__ import annotations

import gzip
import hashlib
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import SHARED, require

from logtool.cli import cli
from logtool.reads import file_dump
from logtool.render.dump_text import file_dump_lines

SETS = {require(SHARED / "kafka-dump-log"): SHARED / "kafka-written",
        require(SHARED / "kafka-dump-log-real"): SHARED / "real-more"}


LOG_FLAGS = {"shallow": ["--batches-only"], "deep": [], "data": ["--print-data"]}


def _cases(modes=("dump",)) -> list[tuple[Path, Path, str, str]]:
    """(Kafka's output folder, the file dumped, its name, the mode) for every file Kafka's tool was run on
    in `modes`."""
    out = []
    for outputs, data in SETS.items():
        for commands in sorted(outputs.rglob("COMMANDS")):
            for line in commands.read_text().splitlines():
                if line.startswith("#"):
                    continue
                mode, name, _code, _command = line.split("\t")
                if mode in modes and (mode in LOG_FLAGS or file_dump.dumpable(Path(name))):
                    out.append((commands.parent, data / commands.parent.relative_to(outputs) / name, name, mode))
    return out


def _ids(cases: list[tuple]) -> list[str]:
    """Each case's id: the dumped file's path under ../shared/fixtures, then `:mode` where the mode is not
    the plain dump, e.g. `kafka-written/corrupt-torn-tail/orders-0/00000000000000000000.log:deep`. Stable (a new
    fixture shifts no other case's id) and unique, so pytest adds no positional suffix."""
    ids = [str(c[1].relative_to(SHARED)) + (f":{c[3]}" if len(c) > 3 else "") for c in cases]
    assert len(set(ids)) == len(ids), "two cases with one id"
    return ids


CASES = [c[:3] for c in _cases()]
INDEX_MODES = {"sanity": "--index-sanity-check", "verify": "--verify-index-only"}
INDEX_CASES = _cases(tuple(INDEX_MODES))
LOG_CASES = _cases(tuple(LOG_FLAGS))


def _kafka_stdout(folder: Path, name: str, mode: str = "dump") -> tuple[bytes, str | None]:
    plain, packed = folder / f"{name}.{mode}.stdout", folder / f"{name}.{mode}.stdout.gz"
    if plain.exists():
        return plain.read_bytes(), None
    if packed.exists():
        return gzip.decompress(packed.read_bytes()), None
    head = gzip.decompress((folder / f"{name}.{mode}.stdout.head.gz").read_bytes())
    return head, (folder / f"{name}.{mode}.stdout.sha256").read_text().split()[0]


def _same(got: bytes, want: bytes, sha: str | None) -> bool:
    return got == want if sha is None else got.startswith(want) and hashlib.sha256(got).hexdigest() == sha


def test_every_kind_is_covered():
    assert {Path(n).suffix for _, _, n in CASES} == {".index", ".timeindex", ".txnindex", ".snapshot"}
    assert len(CASES) > 500


@pytest.mark.parametrize("folder,path,name", CASES, ids=_ids(CASES))
def test_side_file_text_is_kafkas(folder, path, name):
    d = file_dump.dump_file(path)
    d.path = Path(name)  # as Kafka's was run: the bare name inside the partition dir
    got = "".join(line + "\n" for line in file_dump_lines(d)).encode()
    want, sha = _kafka_stdout(folder, name)
    assert _same(got, want, sha)


@pytest.mark.parametrize("folder,path,name,mode", INDEX_CASES, ids=_ids(INDEX_CASES))
def test_index_check_flags_are_kafkas(folder, path, name, mode):
    d = file_dump.dump_file(path, mode)
    d.path = Path(name)
    got = "".join(line + "\n" for line in file_dump_lines(d)).encode()
    assert _same(got, *_kafka_stdout(folder, name, mode))


@pytest.mark.sample(100)
@pytest.mark.parametrize("folder,path,name,mode", LOG_CASES, ids=_ids(LOG_CASES))
def test_log_text_is_kafkas(folder, path, name, mode, monkeypatch):
    monkeypatch.chdir(path.parent)
    r = CliRunner().invoke(cli, ["dump", name, *LOG_FLAGS[mode]], catch_exceptions=False)
    want, sha = _kafka_stdout(folder, name, mode)
    assert want.strip(), "Kafka printed nothing here"
    assert _same(r.stdout_bytes, want, sha)
    assert _gaps(r.stderr, path.parent) == _gaps(_kafka_stderr(folder, name, mode), None)


def _kafka_stderr(folder: Path, name: str, mode: str) -> str:
    plain, packed = folder / f"{name}.{mode}.stderr", folder / f"{name}.{mode}.stderr.gz"
    if plain.exists():
        return plain.read_text(errors="replace")
    return gzip.decompress(packed.read_bytes()).decode(errors="replace") if packed.exists() else ""


def _gaps(stderr: str, where: Path | None) -> list[str]:
    """The `Non-consecutive offsets` lines Kafka's tool writes to stderr, its path cut to the file's name."""
    lines = stderr.splitlines()
    out = []
    for i, line in enumerate(lines):
        if line.startswith("Non-consecutive offsets in "):
            out.append("Non-consecutive offsets in " + line.rsplit("/", 1)[-1])
            out += [x for x in lines[i + 1:] if x.startswith("  ") and " is followed by " in x]
    return out


def test_damaged_logs_are_among_them():
    dirs = {f"{f.parent.name}/{f.name}" for f, _, _, _ in LOG_CASES}
    assert {"corrupt-bitflip-last-segment/orders-0", "corrupt-torn-tail/orders-0", "corrupt-zero-tail/metrics-1",
            "corrupt-garbage-appended/clicks-3", "corrupt-v1-bitflip/legacy-0"} <= dirs
    assert len(LOG_CASES) == 864


KRAFT = SHARED / "real-more/OdinSword__Fantasy-Premier-League/kafka/data"


@pytest.mark.parametrize("name,header", [
    ("__cluster_metadata-0/00000000000000043847-0000000007.checkpoint", "Snapshot end offset: 43847, epoch: 7"),
    ("bootstrap.checkpoint", "KRaft bootstrap snapshot"),
])
def test_kraft_snapshots_read_as_kafka_dump_log_reads_them(name, header, tmp_path, monkeypatch):
    """kafka-dump-log's dumpLog reads a KRaft snapshot as batches from offset 0, the line after `Dumping F`
    naming its end offset and epoch (from the file name) or saying it is the bootstrap snapshot: the same
    text as those bytes dumped as a segment at base offset 0, but for that line."""
    src = require(KRAFT / name)
    (tmp_path / "m-0").mkdir()
    (tmp_path / "m-0" / "00000000000000000000.log").write_bytes(src.read_bytes())
    runner = CliRunner()
    monkeypatch.chdir(KRAFT)
    got = runner.invoke(cli, ["dump", name, "--print-data"], standalone_mode=False, catch_exceptions=False)
    monkeypatch.chdir(tmp_path / "m-0")
    as_log = runner.invoke(cli, ["dump", "00000000000000000000.log", "--print-data"], catch_exceptions=False)
    lines, log_lines = got.stdout.splitlines(), as_log.stdout.splitlines()
    assert got.return_value == 0 and lines[:2] == [f"Dumping {name}", header]
    assert lines[2:] == log_lines[2:] and len(lines) > 5
    assert any(" SnapshotHeader {" in line for line in lines) and any(" SnapshotFooter {" in line for line in lines)


def test_many_paths_of_every_kind_in_one_run(monkeypatch):
    """As kafka-dump-log --files a,b,c: each file in turn, each printed as that tool prints its kind; a log
    dir stands for its partition dirs; one exit code for the run (the worst)."""
    case = require(SHARED / "kafka-dump-log" / "v2-idempotent-txn" / "payments-0")
    names = ["00000000000000000096.snapshot", "00000000000000000000.index", "00000000000000000096.log"]
    monkeypatch.chdir(SHARED / "kafka-written" / "v2-idempotent-txn" / "payments-0")
    r = CliRunner().invoke(cli, ["dump", *names], standalone_mode=False, catch_exceptions=False)
    want = (case / f"{names[0]}.dump.stdout").read_bytes() + (case / f"{names[1]}.dump.stdout").read_bytes() + \
        (case / f"{names[2]}.deep.stdout").read_bytes()
    assert r.return_value == 0 and r.stdout_bytes == want
    r = CliRunner().invoke(cli, ["dump", "--batches-only", str(SHARED / "kafka-written" / "v2-idempotent-txn")],
                           standalone_mode=False, catch_exceptions=False)
    assert r.stdout.count("Dumping ") == 4  # the case dir holds one partition dir of four segments
