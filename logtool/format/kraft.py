"""Values of KRaft control records (FORMAT.md §2.7): LEADER_CHANGE, SNAPSHOT_HEADER/FOOTER, KRAFT_VERSION,
KRAFT_VOTERS, decoded into the objects Kafka's generated `*JsonConverter.write` prints.

Kafka reads these values with schema version 0 whatever their embedded Version field says
(`ControlRecordUtils`), so do we. Every schema is flexible: compact strings and arrays, a tagged-field
section after each struct. Unknown tagged fields are skipped, as the JSON converters do not print them.
"""
from __future__ import annotations

import base64
import struct

from logtool.format.records import RecordError
from logtool.format.varint import VarintError, read_unsigned_varint

# A schema is a tuple of (JSON field name, type); a type is a primitive name, a nested schema (struct)
# or a one-element list holding a schema (compact array of structs). Field names are the JSON names
# Kafka prints: the schema names with a lower-case first letter.
_LEADER_CHANGE_VOTER = (("voterId", "int32"),)
_ENDPOINT = (("name", "string"), ("host", "string"), ("port", "uint16"))
_VOTER = (("voterId", "int32"), ("voterDirectoryId", "uuid"), ("endpoints", [_ENDPOINT]),
          ("kRaftVersionFeature", (("minSupportedVersion", "int16"), ("maxSupportedVersion", "int16"))))

SCHEMAS: dict[int, tuple] = {
    2: (("version", "int16"), ("leaderId", "int32"), ("voters", [_LEADER_CHANGE_VOTER]),
        ("grantingVoters", [_LEADER_CHANGE_VOTER])),
    3: (("version", "int16"), ("lastContainedLogTimestamp", "int64")),
    4: (("version", "int16"),),
    5: (("version", "int16"), ("kRaftVersion", "int16")),
    6: (("version", "int16"), ("voters", [_VOTER])),
}

_FIXED = {"int16": struct.Struct(">h"), "uint16": struct.Struct(">H"), "int32": struct.Struct(">i"),
          "int64": struct.Struct(">q")}


def control_value(type_id: int, value: bytes | None) -> dict | None:
    """The decoded value of a KRaft control record, None for types that have none here (ABORT, COMMIT,
    unknown ids). Raises RecordError when the bytes do not hold the schema."""
    schema = SCHEMAS.get(type_id)
    if schema is None:
        return None
    data = value or b""
    try:
        obj, _pos = _struct(data, 0, schema)
    except (VarintError, struct.error, IndexError, UnicodeDecodeError) as e:
        raise RecordError(f"control record value of type {type_id} cannot be read: {e}", "CONTROL_RECORD_INVALID") from None
    return obj


def _struct(data: bytes, pos: int, schema: tuple) -> tuple[dict, int]:
    obj = {}
    for name, kind in schema:
        obj[name], pos = _field(data, pos, kind)
    return obj, _skip_tagged(data, pos)


def _field(data: bytes, pos: int, kind) -> tuple[object, int]:
    if isinstance(kind, list):
        n, pos = read_unsigned_varint(data, pos, len(data))
        if n == 0:
            return None, pos  # a null array
        if n - 1 > len(data) - pos:  # every element takes at least one byte: refuse huge counts early
            raise IndexError(f"array of {n - 1} elements runs past the value")
        items = []
        for _ in range(n - 1):
            item, pos = _struct(data, pos, kind[0])
            items.append(item)
        return items, pos
    if isinstance(kind, tuple):
        return _struct(data, pos, kind)
    if kind == "string":
        n, pos = read_unsigned_varint(data, pos, len(data))
        if n == 0:
            return None, pos
        if pos + n - 1 > len(data):
            raise IndexError("string runs past the value")
        return data[pos : pos + n - 1].decode("utf-8"), pos + n - 1
    if kind == "uuid":
        raw = data[pos : pos + 16]
        if len(raw) != 16:
            raise IndexError("uuid runs past the value")
        # Kafka's Uuid.toString: URL-safe base64 without padding
        return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii"), pos + 16
    fixed = _FIXED[kind]
    return fixed.unpack_from(data, pos)[0], pos + fixed.size


def _skip_tagged(data: bytes, pos: int) -> int:
    count, pos = read_unsigned_varint(data, pos, len(data))
    for _ in range(count):
        _tag, pos = read_unsigned_varint(data, pos, len(data))
        size, pos = read_unsigned_varint(data, pos, len(data))
        pos += size
        if pos > len(data):
            raise IndexError("tagged field runs past the value")
    return pos
