"""KRaft metadata records (`__cluster_metadata` and KRaft snapshots, FORMAT.md §14.3): a record's value is its
frame version (1), record type and record version, each an unsigned varint, then the record as its schema
(`logtool.format.schemas.metadata`) defines it at that version, to the last byte. The one reading of them:
`dump --decoder` prints what this returns, and the metadata replay applies it.

One more reading than released Kafka's: a `PartitionRecord` of version 1 written by Kafka's development builds of
late 2023, when version 1 carried the eligible-leader-replica fields (KIP-966) as tagged fields 1 and 2 and no
`Directories` yet (KIP-858 took version 1 later, and the ELR fields moved to version 2). Released Kafka cannot
read such a record; that build read it as `schemas.metadata.BEFORE_DIRECTORIES` does, and so does this, saying
so in the record's `note`.
"""
from __future__ import annotations

import re
from functools import cache
from typing import Any, NamedTuple

from logtool.format.message_compiler import FAILURES, Reader
from logtool.format.messages import Message, MessageError, parse
from logtool.format.schemas import load
from logtool.format.schemas.metadata import BEFORE_DIRECTORIES
from logtool.format.varint import VarintError, read_unsigned_varint

PARTITION_RECORD = 3
NO_OP_RECORD = 20
# A NoOpRecord (version 0, no tagged fields): most of a quiet cluster's log, one each half second (KIP-835).
NO_OP_BYTES = bytes([1, NO_OP_RECORD, 0, 0])

BEFORE_DIRECTORIES_NOTE = ("PartitionRecord version 1 as Kafka's development builds of late 2023 wrote it, before "
                           "the Directories field (KIP-858) took version 1: read without directories (each replica's "
                           "directory is MIGRATING), its ELR fields as tagged fields 1 and 2")


class MetadataRecord(NamedTuple):
    """A metadata record as read: its type (`api_key`), version, schema and fields (the names Kafka's
    JsonConverter prints), and a note where it was read otherwise than by released Kafka's schema."""

    api_key: int
    version: int
    schema: Message
    data: dict[str, Any]
    note: str | None = None


@cache
def schemas() -> dict[int, Message]:
    """The metadata record schemas by record type."""
    return {m.id: m for m in load("metadata").values() if m.id is not None}


@cache
def _before_directories() -> Message:
    return parse(BEFORE_DIRECTORIES)["PartitionRecord"]


def read_metadata_record(value: bytes | None) -> MetadataRecord:
    """The record a metadata value frames. Raises MessageError in Kafka's words
    (`AbstractApiMessageSerde.read`), what went wrong inside the record in its `detail`."""
    if value is None:
        raise MessageError("null", "the record has no value, which every metadata record has")
    if len(value) >= 3 and value[0] == 1 and value[1] < 0x80 and value[2] < 0x80:  # every record Kafka writes
        api_key, version, pos = value[1], value[2], 3
        fast = _READERS.get(api_key << 8 | version, False)
        if fast is False:  # not looked up yet
            fast = _reader(api_key, version)
        if isinstance(fast, tuple) and value.__class__ is bytes:  # the compiled reader straight away
            try:
                data, end = fast[1](value, 3, len(value))
                if end == len(value):  # tuple.__new__: a NamedTuple's own __new__ is a Python call
                    return tuple.__new__(MetadataRecord, (api_key, version, fast[0], data, None))
            except FAILURES:
                pass  # the long way below says what is wrong
    else:
        api_key, version, pos = _header(value)
    schema = schemas().get(api_key)
    if schema is None:
        raise MessageError(f"org.apache.kafka.common.errors.UnsupportedVersionException: Unknown metadata id "
                           f"{api_key}", f"record type {api_key} is none logtool knows")
    try:
        data, end = schema.read(value, version, pos)
        if end != len(value):
            raise MessageError(f"Found {len(value) - end} byte(s) of garbage after {api_key}")
    except MessageError as e:
        early = _read_before_directories(value, api_key, version, pos)
        if early is not None:
            return MetadataRecord(api_key, version, schema, early, BEFORE_DIRECTORIES_NOTE)
        if str(e).startswith("Found "):
            raise
        raise MessageError(f"Failed to deserialize record with type {api_key}", e.detail) from None
    return MetadataRecord(api_key, version, schema, data)


# (schema, compiled reader) by record type << 8 | version, for the types and versions of one byte each; None
# for a type no schema is known for
_READERS: dict[int, tuple[Message, Reader] | None] = {}


def _reader(api_key: int, version: int) -> tuple[Message, Reader] | None:
    schema = schemas().get(api_key)
    reader = schema.compiled(version) if schema is not None else None
    found = _READERS[api_key << 8 | version] = (schema, reader) if schema is not None and reader is not None else None
    return found


def type_name(message: Message) -> str:
    """Kafka's `MetadataRecordType` constant for a record: `TopicRecord` -> `TOPIC_RECORD`."""
    return _type_name(message.name)


@cache
def _type_name(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).upper()


def _header(value: bytes) -> tuple[int, int, int]:
    """(record type, version, position after them) read the long way, with Kafka's words for each refusal."""
    pos, header = 0, []
    for what in ("frame version", "type", "version"):
        try:
            n, pos = read_unsigned_varint(value, pos, len(value))
        except VarintError as e:
            raise MessageError(f"Error while reading {what}", str(e)) from None
        if n > 0x7FFF:
            raise MessageError(f"Value for {what} was too large.")
        header.append(n)
    frame, api_key, version = header
    if frame == 0:
        raise MessageError("Could not deserialize metadata record with frame version 0. Note that upgrades from "
                           "the preview release of KRaft in 2.8 to newer versions are not supported.")
    if frame != 1:
        raise MessageError(f"Could not deserialize metadata record due to unknown frame version {frame}"
                           f"(only frame version 1 is supported)")
    return api_key, version, pos


def _read_before_directories(value: bytes, api_key: int, version: int, pos: int) -> dict[str, Any] | None:
    """A PartitionRecord version 1 of the late-2023 development builds, read to its last byte; None otherwise."""
    if api_key != PARTITION_RECORD or version != 1:
        return None
    try:
        data, end = _before_directories().read(value, version, pos)
    except MessageError:
        return None
    return data if end == len(value) else None
