"""Small metadata files (FORMAT.md §11-§12): checkpoints, leader epochs, partition.metadata,
meta.properties, the clean-shutdown marker and producer snapshots. Parsers raise `MetaError`."""
from __future__ import annotations

import base64
import functools
import os
import re
import struct
from dataclasses import dataclass
from typing import cast

from logtool.format import Bytes
from logtool.format.crc import crc32c


class MetaError(Exception):
    """A metadata file Kafka would refuse to read; the message says why, in Kafka's terms."""


@dataclass(slots=True, frozen=True)
class Checkpoint:
    version: int
    entries: tuple[tuple[str | int, ...], ...]  # one tuple per entry line, numbers already parsed


# Field types of a checkpoint line: Java int, Java long, or free text (a topic name).
INT = (-(2**31), 2**31 - 1)
LONG = (-(2**63), 2**63 - 1)
TEXT = None
Field = tuple[int, int] | None

_LINE_BREAK = re.compile(r"\r\n|\r|\n")  # what Java's BufferedReader.readLine splits on
_JAVA_SPACE = r" \t\n\x0b\f\r"  # what Java's \s matches
_JAVA_SPACES = re.compile(f"[{_JAVA_SPACE}]+")
_JAVA_INTEGER = re.compile(r"[+-]?[0-9]+")  # what Integer.parseInt / Long.parseLong accept


def _java_number(text: str, bounds: tuple[int, int]) -> int | None:
    # ASCII digits alone (most numbers) match _JAVA_INTEGER without the expression's cost.
    if not (text.isascii() and text.isdigit()) and not _JAVA_INTEGER.fullmatch(text):
        return None
    value = int(text)
    return value if bounds[0] <= value <= bounds[1] else None


def _java_split(line: str) -> list[str]:
    """`Pattern.compile("\\s+").split(line)`: a leading separator leaves an empty first field, trailing
    empty fields are dropped, and an empty line is one empty field."""
    if line.isprintable():  # no Java space but " " (\t\n\x0b\f\r are not printable)
        parts = line.split(" ")
        if "" not in parts:  # single spaces between fields, none before or after: the split is Java's
            return parts
    parts = _JAVA_SPACES.split(line)
    while len(parts) > 1 and parts[-1] == "":
        parts.pop()
    return parts


def _entry(line: str, fields: tuple[Field, ...]) -> tuple[str | int, ...] | None:
    parts = _java_split(line)
    if len(parts) != len(fields):
        return None
    out: list[str | int] = []
    for part, bounds in zip(parts, fields):
        value = part if bounds is None else _java_number(part, bounds)
        if value is None:
            return None
        out.append(value)
    return tuple(out)


def parse_checkpoint(text: str, fields: tuple[Field, ...]) -> Checkpoint:
    """Kafka's `CheckpointFile` reader, rule for rule: an empty file or one without a count line has no
    entries; otherwise version 0, a count, then exactly `count` lines of `fields`. Blank lines, padding
    and numbers out of range are malformed, as Java's parsers make them."""
    plain = _plain_entries(text, fields)
    if plain is not None:
        return Checkpoint(0, plain)
    lines = _LINE_BREAK.split(text)
    if lines[-1] == "":  # readLine does not return an empty line after the last line break
        lines.pop()
    if not lines:
        return Checkpoint(0, ())
    version = _java_number(lines[0], INT)
    if version is None:
        raise MetaError(f"Malformed line in checkpoint file: line 1 {lines[0]!r} is not a version number")
    if version != 0:
        raise MetaError(f"Unrecognised version:{version}, expected version: 0")
    if len(lines) < 2:
        return Checkpoint(0, ())
    count = _java_number(lines[1], INT)
    if count is None:
        raise MetaError(f"Malformed line in checkpoint file: line 2 {lines[1]!r} is not an entry count")
    entries = []
    for number, line in enumerate(lines[2:], start=3):
        entry = _entry(line, fields)
        if entry is None:
            raise MetaError(f"Malformed line in checkpoint file: line {number} {line!r}")
        entries.append(entry)
    if len(entries) != count:
        raise MetaError(f"Expected [{count}] entries in checkpoint file, but found only [{len(entries)}]")
    return Checkpoint(version, tuple(entries))


@functools.cache
def _plain_form(fields: tuple[Field, ...]) -> tuple[re.Pattern[str], re.Pattern[str]]:
    """The form Kafka writes a checkpoint of `fields` in (version 0, a count, each entry's fields a single
    space apart, each number's ASCII digits with no sign, a line break after each line), and an entry's."""
    entry = " ".join(f"([^{_JAVA_SPACE}]+)" if f is None else "([0-9]+)" for f in fields)
    return re.compile(r"0\n([0-9]+)\n((?:" + entry.replace("(", "(?:") + r"\n)*)"), re.compile(entry + r"\n")


def _plain_entries(text: str, fields: tuple[Field, ...]) -> tuple[tuple[str | int, ...], ...] | None:
    """The entries of a checkpoint written in Kafka's own form, read a column at a time (the log dir's
    checkpoints hold a line per partition); None where it is not in that form, or says something the
    line-by-line reader must word (a count the lines do not match, a number out of range)."""
    whole, entry = _plain_form(fields)
    m = whole.fullmatch(text)
    if m is None:
        return None
    rows = entry.findall(m.group(2))
    if len(rows) != int(m.group(1)):
        return None
    if not rows:
        return ()
    columns: list[list[str] | list[int]] = []
    for column, bounds in zip(zip(*rows), fields):
        if bounds is None:
            columns.append(list(column))
            continue
        numbers = list(map(int, column))
        if max(numbers) > bounds[1]:  # (no sign: none is below 0)
            return None
        columns.append(numbers)
    return tuple(zip(*columns))


def offset_checkpoint(text: str) -> dict[tuple[str, int], int]:
    """`<topic> <partition> <offset>` checkpoints (recovery point, high watermark, log start, cleaner)."""
    # The fields (TEXT, INT, LONG) give each entry a str and two ints.
    entries = cast("tuple[tuple[str, int, int], ...]", parse_checkpoint(text, (TEXT, INT, LONG)).entries)
    return {(t, p): o for t, p, o in entries}


# Partitions of a topic often hold the same leader-epoch checkpoint and the same partition.metadata (its topic
# id) byte for byte: each text is parsed once (a parse that fails is not kept, and fails again).
@functools.lru_cache(maxsize=1 << 12)
def leader_epochs(text: str) -> tuple[tuple[int, int], ...]:
    """`leader-epoch-checkpoint`: (epoch, start offset) pairs in file order."""
    # The fields (INT, LONG) give each entry two ints.
    return cast("tuple[tuple[int, int], ...]", parse_checkpoint(text, (INT, LONG)).entries)


def decode_uuid(text: str) -> bytes:
    """Kafka's `Uuid.fromString`: 22 characters of base64url without padding."""
    if len(text) != 22:
        raise MetaError(f"invalid Uuid {text!r}: expected 22 base64url characters")
    try:
        raw = base64.urlsafe_b64decode(text + "==")
    except ValueError:
        raise MetaError(f"invalid Uuid {text!r}") from None
    return raw


@functools.lru_cache(maxsize=1 << 12)
def partition_metadata(text: str) -> tuple[int, str]:
    """`partition.metadata`: (version, topic id)."""
    fields = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if not sep:
            raise MetaError(f"malformed line {line!r}")
        fields[key.strip()] = value.strip()
    try:
        version = int(fields["version"])
        topic_id = fields["topic_id"]
    except (KeyError, ValueError):
        raise MetaError("expected 'version: <n>' and 'topic_id: <uuid>' lines") from None
    if version < 0:
        raise MetaError(f"Unrecognized version of partition metadata file: {version}")
    if decode_uuid(topic_id) == bytes(16):
        raise MetaError("Invalid topic ID in partition metadata file (the zero UUID)")
    return version, topic_id


@dataclass(slots=True, frozen=True)
class MetaIdentity:
    """Who a log dir belongs to, as Kafka reads meta.properties (`MetaProperties.Builder(props).build()`)."""

    version: int
    cluster_id: str | None
    node_id: int | None  # broker.id in version 0, node.id in version 1
    directory_id: str | None


# The field each version reads as the node id; the other one is ignored by Kafka.
NODE_ID_FIELD = {0: "broker.id", 1: "node.id"}


def meta_identity(props: dict[str, str]) -> MetaIdentity:
    """Kafka's rules: version 0 when absent; version 1 requires node.id and cluster.id; ids are Java ints;
    directory.id is a Uuid outside the 100 ids Kafka reserves."""
    version = _java_number(props.get("version", "0"), INT)
    if version not in NODE_ID_FIELD:
        raise MetaError(f"unknown meta.properties version {props.get('version')!r}")
    id_field = NODE_ID_FIELD[version]
    node_id = None
    if id_field in props:
        node_id = _java_number(props[id_field], INT)
        if node_id is None:
            raise MetaError(f"Failed to parse {id_field} property as an int: {props[id_field]!r}")
    cluster_id = props.get("cluster.id")
    missing = [name for name, value in (("node.id", node_id), ("cluster.id", cluster_id)) if value is None]
    if version == 1 and missing:
        raise MetaError(f"version 1 requires {' and '.join(missing)}")
    directory_id = props.get("directory.id")
    if directory_id is not None:
        raw = decode_uuid(directory_id)
        if raw[:8] == bytes(8) and int.from_bytes(raw[8:], "big") < 100:
            raise MetaError(f"directory.id {directory_id} is one of the ids Kafka reserves")
    return MetaIdentity(version, cluster_id, node_id, directory_id)


def meta_properties_text(fields: dict[str, str], stamp: str) -> str:
    """meta.properties as Kafka writes it (`Properties.store`: a comment line, the date, then key=value), keys
    sorted so that the file reads the same every time."""
    return "#\n#" + stamp + "\n" + "".join(f"{k}={v}\n" for k, v in sorted(fields.items()))


def random_directory_id() -> str:
    """A directory.id as `Uuid.randomUuid` makes it: 16 random bytes in base64url without padding, never one of
    the ids Kafka reserves (the first 8 bytes zero and the rest below 100)."""
    while True:
        raw = os.urandom(16)
        if raw[:8] != bytes(8):
            return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def properties(text: str) -> dict[str, str]:
    """Java properties as `Properties.store` writes them (comments, `key=value`)."""
    out = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line[0] in "#!":
            continue
        key, value = _split_property(line)
        out[key] = value
    return out


def _split_property(line: str) -> tuple[str, str]:
    m = re.match(r"([^=:\s]+)\s*[=:]?\s*(.*)", line)
    return (m.group(1), m.group(2)) if m else (line, "")


@dataclass(slots=True, frozen=True)
class ProducerEntry:
    producer_id: int
    epoch: int
    last_sequence: int
    last_offset: int
    offset_delta: int
    timestamp: int
    coordinator_epoch: int
    current_txn_first_offset: int


_SNAP_HEAD = struct.Struct(">hIi")
_SNAP_ENTRY = struct.Struct(">qhiqiqiq")


def producer_snapshot(data: Bytes) -> list[ProducerEntry]:
    """A producer-state `.snapshot` (version 1, CRC32C over everything after the CRC field)."""
    if len(data) < _SNAP_HEAD.size:
        raise MetaError(f"Snapshot failed schema validation: file of {len(data)} bytes is too short")
    version, crc, count = _SNAP_HEAD.unpack_from(data)
    if version != 1:
        raise MetaError(f"Snapshot failed schema validation: Snapshot contained an unknown file version {version}")
    computed = crc32c(memoryview(data)[6:])
    if computed != crc:
        raise MetaError(f"Snapshot is corrupt (CRC is no longer valid). Stored crc: {crc}. Computed crc: {computed}")
    if count < 0 or _SNAP_HEAD.size + count * _SNAP_ENTRY.size != len(data):
        raise MetaError(f"Snapshot failed schema validation: {count} entries do not fill {len(data)} bytes")
    return [ProducerEntry(*_SNAP_ENTRY.unpack_from(data, _SNAP_HEAD.size + i * _SNAP_ENTRY.size)) for i in range(count)]
