"""`dump` of indexes, transaction indexes and producer snapshots against what Apache Kafka's own
kafka-dump-log printed for the same files (../shared/fixtures/kafka-dump-log and kafka-dump-log-real, taken
with the bare file name inside the partition dir): byte for byte, every file of both sets."""
from __future__ import annotations

import gzip
import hashlib
from pathlib import Path

import pytest

from conftest import SHARED, require
from logtool.reads import file_dump
from logtool.render.dump_text import file_dump_lines

SETS = {require(SHARED / "kafka-dump-log"): SHARED / "kafka-written",
        require(SHARED / "kafka-dump-log-real"): SHARED / "real-more"}


def _cases() -> list[tuple[Path, Path, str]]:
    """(Kafka's output folder, the file dumped, its name) for every side file Kafka's tool was run on."""
    out = []
    for outputs, data in SETS.items():
        for commands in sorted(outputs.rglob("COMMANDS")):
            for line in commands.read_text().splitlines():
                if line.startswith("#"):
                    continue
                mode, name, _code, _command = line.split("\t")
                if mode == "dump" and file_dump.dumpable(Path(name)):
                    out.append((commands.parent, data / commands.parent.relative_to(outputs) / name, name))
    return out


CASES = _cases()


def _kafka_stdout(folder: Path, name: str) -> tuple[bytes, str | None]:
    plain, packed = folder / f"{name}.dump.stdout", folder / f"{name}.dump.stdout.gz"
    if plain.exists():
        return plain.read_bytes(), None
    if packed.exists():
        return gzip.decompress(packed.read_bytes()), None
    head = gzip.decompress((folder / f"{name}.dump.stdout.head.gz").read_bytes())
    return head, (folder / f"{name}.dump.stdout.sha256").read_text().split()[0]


def test_every_kind_is_covered():
    assert {Path(n).suffix for _, _, n in CASES} == {".index", ".timeindex", ".txnindex", ".snapshot"}
    assert len(CASES) > 500


@pytest.mark.parametrize("folder,path,name", CASES, ids=[f"{f.parent.name}/{n}" for f, _, n in CASES])
def test_side_file_text_is_kafkas(folder, path, name):
    d = file_dump.dump_file(path)
    d.path = Path(name)  # as Kafka's was run: the bare name inside the partition dir
    got = "".join(line + "\n" for line in file_dump_lines(d)).encode()
    want, sha = _kafka_stdout(folder, name)
    if sha is None:
        assert got == want
    else:
        assert got.startswith(want) and hashlib.sha256(got).hexdigest() == sha
