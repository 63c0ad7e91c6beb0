"""Small metadata files (FORMAT.md §11-§12): checkpoints, leader epochs, partition.metadata,
meta.properties, the clean-shutdown marker and producer snapshots. Parsers raise `MetaError`."""
from __future__ import annotations

import base64
import re
import struct
from dataclasses import dataclass

from logtool.format.crc import crc32c


class MetaError(Exception):
    """A metadata file Kafka would refuse to read; the message says why, in Kafka's terms."""


@dataclass(slots=True, frozen=True)
class Checkpoint:
    version: int
    entries: tuple[tuple[str, ...], ...]  # each line split on whitespace


def parse_checkpoint(text: str, fields: int) -> Checkpoint:
    """Kafka's `CheckpointFile` container: version 0, a count, then `count` lines of `fields` fields."""
    lines = text.split("\n")
    if not text.strip():
        return Checkpoint(0, ())
    try:
        version = int(lines[0].strip())
    except ValueError:
        raise MetaError(f"malformed version line: {lines[0]!r}") from None
    if version != 0:
        raise MetaError(f"Unrecognised version:{version}, expected version: 0")
    if len(lines) < 2 or not lines[1].strip():
        return Checkpoint(0, ())
    try:
        count = int(lines[1].strip())
    except ValueError:
        raise MetaError(f"malformed count line: {lines[1]!r}") from None
    body = [ln for ln in lines[2:] if ln.strip()]
    entries = []
    for line in body:
        parts = tuple(line.split())
        if len(parts) != fields or not all(_is_long(p) for p in parts[-2 if fields == 3 else 0 :]):
            raise MetaError(f"Malformed line in checkpoint file: {line!r}")
        entries.append(parts)
    if len(entries) != count:
        raise MetaError(f"Expected [{count}] entries in checkpoint file, but found only [{len(entries)}]")
    return Checkpoint(version, tuple(entries))


def _is_long(text: str) -> bool:
    return re.fullmatch(r"-?\d{1,19}", text) is not None


def offset_checkpoint(text: str) -> dict[tuple[str, int], int]:
    """`<topic> <partition> <offset>` checkpoints (recovery point, high watermark, log start, cleaner)."""
    return {(t, int(p)): int(o) for t, p, o in parse_checkpoint(text, 3).entries}


def leader_epochs(text: str) -> list[tuple[int, int]]:
    """`leader-epoch-checkpoint`: (epoch, start offset) pairs in file order."""
    return [(int(e), int(o)) for e, o in parse_checkpoint(text, 2).entries]


def decode_uuid(text: str) -> bytes:
    """Kafka's `Uuid.fromString`: 22 characters of base64url without padding."""
    if len(text) != 22:
        raise MetaError(f"invalid Uuid {text!r}: expected 22 base64url characters")
    try:
        raw = base64.urlsafe_b64decode(text + "==")
    except ValueError:
        raise MetaError(f"invalid Uuid {text!r}") from None
    return raw


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


def producer_snapshot(data: bytes) -> list[ProducerEntry]:
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
