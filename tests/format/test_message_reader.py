"""The schema engine's two readers give one answer: the readers compiled per (message, version)
(`logtool.format.message_compiler`, what `Message.read`, `dump --decoder` and the metadata replay use) and the
reference reader that walks the schema for each message (`Message.read_reference`). On every real record of
the test data (the decoded objects, the `dump --decoder` output and the replayed states equal with the compiled
readers switched off), on random messages of every schema at every version, and on damaged copies of both: where
the reference refuses the bytes, the compiled reader refuses them too (and `Message.read` gives the reference's
error), never another answer."""
from __future__ import annotations

import base64
import math
import random
import string
from pathlib import Path

import pytest
from conftest import SHARED, require

from fixtures.metadata import encode
from logtool.format import metadata_records
from logtool.format.message_compiler import FAILURES, version_key
from logtool.format.messages import Field, Message, MessageError
from logtool.format.metadata_records import read_metadata_record
from logtool.format.records import iter_records
from logtool.format.schemas import load
from logtool.reads.internal_topics import for_path
from logtool.rules.metadata.replay import open_source, replay
from logtool.store.partition import Partition
from logtool.store.segment import Segment

REAL_DIRS = [SHARED / "real", SHARED / "real-more"]
MODULES = ("metadata", "kraft", "group", "transaction", "consumer")


def ordered(obj: object) -> object:
    """`obj` with its dicts as lists of items: equal only where the keys come in the same order too (dump prints
    them in that order)."""
    if isinstance(obj, dict):
        return [(k, ordered(v)) for k, v in obj.items()]
    if isinstance(obj, (list, tuple)):
        return [ordered(v) for v in obj]
    if isinstance(obj, float) and math.isnan(obj):
        return "NaN"
    return obj


def outcome(read, *args) -> object:
    try:
        return ("read", ordered(read(*args)))
    except MessageError as e:
        return ("refused", str(e), e.detail)


def agree(message: Message, data: bytes, version: int, pos: int) -> bool:
    """The compiled reader gives the reference's answer, or refuses what the reference refuses; whether the
    reference read it."""
    want = outcome(message.read_reference, data, version, pos)
    assert outcome(message.read, data, version, pos) == want
    reader = message.compiled(version)
    if reader is None:
        return want[0] == "read"
    try:
        got: object = ("read", ordered(reader(data, pos, len(data))))
    except FAILURES:
        got = None
    if want[0] == "read":
        assert got == want, (message.name, version, data)
    else:
        assert got is None, (message.name, version, data, want)
    return want[0] == "read"


@pytest.fixture
def reference_only(monkeypatch):
    """Every read the reference's: no compiled reader."""
    monkeypatch.setattr(Message, "compiled", lambda self, version: None)
    monkeypatch.setattr(metadata_records, "_READERS", {})


# ------------------------------------------------------------------------------------------- real records


def _metadata_files() -> list[Path]:
    logs = sorted(p for root in REAL_DIRS for p in require(root).rglob("__cluster_metadata-0") if p.is_dir())
    snaps = sorted(p for root in REAL_DIRS for p in root.rglob("*.checkpoint")
                   if p.name == "bootstrap.checkpoint" or p.parent.name == "__cluster_metadata-0")
    assert len(logs) >= 20 and snaps
    return [*logs, *snaps]


def _values(path: Path) -> list[bytes | None]:
    """The values of the metadata records of a log dir or a snapshot (control records left out)."""
    out = []
    segments = Partition.from_dir(path).segments if path.is_dir() else [Segment(path, 0)]
    for seg in segments:
        with seg:
            for v in seg.walk():
                if not v.is_control:
                    out += [r.value for r in iter_records(seg.buf, v)]
    return out


def _internal_topic_dirs() -> list[Path]:
    return sorted(p for root in REAL_DIRS for p in root.rglob("*") if p.is_dir()
                  and p.name.startswith(("__consumer_offsets-", "__transaction_state-")) and for_path(p) is not None
                  and any(f.stat().st_size for f in p.glob("*.log")))


def _decoded(path: Path, most: int = 400) -> list:
    """What `dump --decoder` makes of the first records of an internal topic's partition dir."""
    decoder = for_path(path)
    assert decoder is not None
    out: list = []
    for seg in Partition.from_dir(path).segments:
        with seg:
            for v in seg.walk():
                if len(out) >= most:
                    return out
                if not v.is_control:
                    out += [(r.offset, decoder.texts(r.offset, r.key, r.value),
                             decoder.objects(r.offset, r.key, r.value)) for r in iter_records(seg.buf, v)]
    return out


def test_every_real_metadata_record_reads_as_the_reference_reads_it(monkeypatch):
    values = {value for path in _metadata_files() for value in _values(path)}
    assert len(values) > 2000
    by_schema = early = 0
    for value in values:
        assert value is not None
        message = metadata_records.schemas()[value[1]]
        by_schema += agree(message, value, value[2], 3)
        compiled = outcome(read_metadata_record, value)
        with monkeypatch.context() as m:
            m.setattr(Message, "compiled", lambda self, version: None)
            m.setattr(metadata_records, "_READERS", {})
            assert outcome(read_metadata_record, value) == compiled
        early += read_metadata_record(value).note is not None
    # all but the development build's PartitionRecords v1, which only the reading before Directories reads
    assert early and by_schema + early == len(values)


def test_every_real_internal_topic_record_decodes_as_with_the_reference(reference_only, monkeypatch):
    dirs = _internal_topic_dirs()
    assert len(dirs) >= 20
    by_reference = {p: _decoded(p) for p in dirs}
    monkeypatch.undo()
    assert sum(map(len, by_reference.values())) > 5_000
    for path, want in by_reference.items():
        assert _decoded(path) == want, path


def test_every_real_metadata_log_replays_to_the_state_of_the_reference(reference_only, monkeypatch):
    logs = [p for p in _metadata_files() if p.is_dir()]
    by_reference = {p: replay(open_source(p)).to_dict() for p in logs}
    monkeypatch.undo()
    for path in logs:
        assert replay(open_source(path)).to_dict() == by_reference[path], path


# ------------------------------------------------------------------------------------------- every schema


def _random_value(f: Field, v: int, flexible: bool, rng: random.Random, depth: int = 0) -> object:
    if v in f.nullable and rng.random() < 0.15:
        return None
    kind = f.kind
    if kind == "bool":
        return rng.random() < 0.5
    if kind in ("int8", "int16", "int32", "int64", "uint16", "uint32"):
        bits = {"int8": 8, "int16": 16, "int32": 32, "int64": 64, "uint16": 16, "uint32": 32}[kind]
        if kind.startswith("u"):
            return rng.choice([0, 1, (1 << bits) - 1, rng.randrange(1 << bits)])
        return rng.choice([0, -1, 1, -(1 << (bits - 1)), (1 << (bits - 1)) - 1, rng.randrange(-(1 << (bits - 1)),
                                                                                             1 << (bits - 1))])
    if kind == "float64":
        return rng.choice([0.0, -0.0, 1.5, 1e300, float("inf"), float("nan"), rng.uniform(-1e9, 1e9)])
    if kind == "uuid":
        return base64.urlsafe_b64encode(rng.randbytes(16)).rstrip(b"=").decode()
    if kind == "string":
        return "".join(rng.choice(string.ascii_letters + "é€😀\n\"") for _ in range(rng.randrange(0, 12)))
    if kind == "bytes":
        return rng.randbytes(rng.randrange(0, 20))
    if kind == "array":
        assert f.element is not None
        n = rng.randrange(0, 4 if depth < 2 else 1)
        if f.element.kind in ("int32", "int16") and rng.random() < 0.2:
            n = rng.randrange(14, 40)  # past the arrays read by a struct made for their length
        return [_random_value(f.element, v, flexible, rng, depth + 1) for _ in range(n)]
    assert kind == "struct"
    return _random_object(f.fields or [], v, flexible, rng, depth + 1)


def _random_object(fields: list[Field], v: int, flexible: bool, rng: random.Random, depth: int = 0) -> dict:
    obj = {}
    for f in fields:
        if v in f.versions and not (f.tag is not None and v in f.tagged and rng.random() < 0.5):
            obj[f.name] = _random_value(f, v, flexible, rng, depth)
    return obj


def _damaged(data: bytes, rng: random.Random) -> bytes:
    b = bytearray(data)
    what = rng.randrange(5)
    if what == 0 and b:
        b[rng.randrange(len(b))] ^= 1 << rng.randrange(8)
    elif what == 1 and b:
        b[rng.randrange(len(b))] = rng.choice([0x00, 0x7F, 0x80, 0xFF])
    elif what == 2:
        del b[rng.randrange(len(b) + 1):]
    elif what == 3:
        at = rng.randrange(len(b) + 1)
        b[at:at] = rng.randbytes(rng.randrange(1, 4))
    else:
        b += rng.randbytes(rng.randrange(1, 6))
    return bytes(b)


def _messages() -> list[tuple[str, Message]]:
    return [(f"{module}.{name}", m) for module in MODULES for name, m in sorted(load(module).items())]


@pytest.mark.parametrize("seed", range(3))
def test_random_messages_of_every_schema_and_version_read_as_the_reference_reads_them(seed):
    rng = random.Random(seed)
    read = refused = 0
    for name, message in _messages():
        top = version_key(message, 0x7FFF)
        assert top is not None
        high = min(message.versions.high, top)
        for v in range(message.versions.low, high + 1):
            flexible = v in message.flexible
            for _ in range(12):
                data = encode(message, _random_object(message.fields, v, flexible, rng), v)
                prefix = rng.randbytes(rng.randrange(0, 3))
                assert agree(message, prefix + data, v, len(prefix)), (name, v)
                read += 1
                for _ in range(8):
                    if not agree(message, _damaged(data, rng), v, 0):
                        refused += 1
        # versions past the schema's read as its highest reads; a negative one only by the reference
        data = encode(message, _random_object(message.fields, high, high in message.flexible, rng), high)
        for v in (top + 1, top + 7, 0x7FFF, -1):
            agree(message, data, v, 0)
    assert read > 1000 and refused > 1000


def test_hostile_counts_and_lengths_are_refused_as_the_reference_refuses_them():
    msg = load("metadata")["PartitionChangeRecord"]
    base = bytes([0, 0, 0, 1]) + bytes(16)  # partitionId, topicId
    for tail in (
        b"\xff\xff\xff\xff\x0f",  # a tag count of 2^32-1
        b"\x01\x00\xff\xff\xff\x7f",  # a tagged field longer than the bytes
        b"\x01\x00\x05\x80\x80\x80\x80\x01",  # its ISR: an array of 2^28 elements in 5 bytes
        b"\x01\x01\x02\x00\x00",  # a leader of 4 bytes in 2
        b"\x02\x00\x01\x00\x00\x01\x00",  # a tag given twice, the second short
        b"\x01\x00\x01\x00",  # an ISR that is null (nullable): read as null
        b"",  # no tag count at all
    ):
        agree(msg, base + tail, 0, 0)
    group = load("group")["GroupMetadataValue"]
    agree(group, b"\x00\x03" + b"\x7f\xff" + b"x" * 10, 3, 2)  # a string longer than the bytes
    agree(group, b"\x00\x03" + b"\x00\x08consumer" + b"\x00\x00\x00\x01" + b"\xff\xff" + b"\x00\x00\x00\x00"
          + b"\xff\xff\xff\xff", 3, 2)
