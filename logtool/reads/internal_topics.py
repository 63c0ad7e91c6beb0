"""Decoders for the records of Kafka's internal topics, as kafka-dump-log's `--offsets-decoder`,
`--transaction-log-decoder` and `--cluster-metadata-decoder` show them (DumpLogSegments.java's
`OffsetsMessageParser`, `TransactionLogMessageParser`, `ClusterMetadataLogMessageParser`).

A coordinator record's key is an int16 record type and the key message; its value an int16 version and the
value message of that type, or null (a tombstone). Kafka prints the key as `{"type":"<type>","data":{...}}`
and the value as `{"version":"<version>","data":{...}}` (both numbers as strings), `<DELETE>` for a
tombstone. A metadata record has no key; its value is framed (frame version 1, record type, version, each an
unsigned varint) and printed as `{"type":"TOPIC_RECORD","version":0,"data":{...}}`. What cannot be decoded
is printed in Kafka's words (`Unknown record type ...`, `Error at offset ...`) and, in JSON, kept as its
bytes beside the reason: never dropped.
"""
from __future__ import annotations

import base64
import struct
from typing import NamedTuple

from logtool.format.messages import Message, MessageError, jackson, jsonable
from logtool.format.metadata_records import read_metadata_record, type_name as metadata_type_name
from logtool.format.schemas import by_record_type, load
from logtool.store.layout import BOOTSTRAP_CHECKPOINT, kraft_snapshot_id, parse_partition_dir

_INT16 = struct.Struct(">h")


class Decoded(NamedTuple):
    """A record as a decoder reads it. `key`/`value`: a str for Kafka's fixed texts (`<DELETE>`, its words
    for what does not decode), a dict for a decoded message, None where Kafka prints nothing. `error`: what
    went wrong (Kafka's words, with logtool's where Kafka's leave out what), or None. `schema`: the schema
    the record was read by (`OffsetCommit` for its key and value, `TopicRecord`), None where none was found."""

    key: object
    value: object
    error: str | None = None
    schema: str | None = None


class RecordDecoder:
    """Decodes a record's key and value together (a value's schema may depend on its key)."""

    name = ""

    def decoded(self, offset: int, key: bytes | None, value: bytes | None) -> Decoded:
        raise NotImplementedError

    def texts(self, offset: int, key: bytes | None, value: bytes | None) -> tuple[str | None, str | None]:
        """What kafka-dump-log prints after ` key: ` and ` payload: ` (None: that part is not printed)."""
        d = self.decoded(offset, key, value)
        return _text(d.key), _text(d.value)

    def objects(self, offset: int, key: bytes | None, value: bytes | None) -> tuple[object, object, str | None]:
        """The key and value for JSON output, and the schema's name: Kafka's objects, null for a null key or
        value; what cannot be decoded as {"error": what went wrong, "base64": its bytes}."""
        d = self.decoded(offset, key, value)
        if d.error is not None:
            if d.key is not None:
                return _raw(key, d.error), _raw(value, None), d.schema
            return _raw(key, None), _raw(value, d.error), d.schema
        return (None if key is None else jsonable(d.key)), (None if value is None else jsonable(d.value)), d.schema


def _text(obj: object) -> str | None:
    return obj if obj is None or isinstance(obj, str) else jackson(obj)


def _raw(data: bytes | None, error: str | None) -> dict[str, str | None] | None:
    if data is None and error is None:
        return None
    out: dict[str, str | None] = {"error": error} if error is not None else {}
    out["base64"] = None if data is None else base64.b64encode(data).decode("ascii")
    return out


class _Coordinator(RecordDecoder):
    module = ""

    def decoded(self, offset, key, value):
        if key is None:  # Kafka's parser throws this and the tool dies; logtool says it and goes on
            text = (f"Failed to decode message at offset {offset} using the specified decoder (message had a missing "
                    "key)")
            return Decoded(text, None, text)
        keys, values = by_record_type(self.module)
        schema = None
        try:
            record_type = self._version(key, "key")
            key_schema, value_schema = keys.get(record_type), values.get(record_type)
            if key_schema is None or value_schema is None:
                text = f"Unknown record type {record_type} at offset {offset}, skipping."
                return Decoded(text, None, text)
            schema = key_schema.name.removesuffix("Key")
            # A key's schema has one version (Kafka reads it at the record type, which changes nothing).
            k = {"type": str(record_type), "data": self._read(key_schema, key, record_type, "key",
                                                              key_schema.versions.low)}
            if value is None:
                return Decoded(k, "<DELETE>", None, schema)
            version = self._version(value, "value")
            v = {"version": str(version), "data": self._value(value_schema, value, version)}
        except MessageError as e:
            text = f"Error at offset {offset}, skipping. {e}"
            return Decoded(text, None, _explained(text, e), schema)
        return Decoded(k, v, None, schema)

    @staticmethod
    def _version(data: bytes, name: str) -> int:
        if len(data) < 2:
            raise MessageError(f"Could not read version from {name}'s buffer.")
        return _INT16.unpack_from(data)[0]

    @staticmethod
    def _read(schema: Message, data: bytes, version: int, name: str, at: int | None = None) -> dict:
        """`schema` read after the int16 version, at `version` (or `at`); errors in Kafka's words."""
        try:
            obj, _end = schema.read(data, version if at is None else at, 2)
        except MessageError as e:
            raise MessageError(f"Could not read record with version {version} from {name}'s buffer due to: {e}.",
                               e.detail) from None
        return obj

    def _value(self, schema: Message, data: bytes, version: int) -> dict:
        return self._read(schema, data, version, "value")


class Offsets(_Coordinator):
    """`__consumer_offsets`: offset commits, classic group metadata (a consumer group's member subscriptions
    and assignments decoded too, as Kafka does) and the newer consumer, share and streams group records."""

    name = "offsets"
    module = "group"

    def _value(self, schema, data, version):
        obj = super()._value(schema, data, version)
        if schema.name == "GroupMetadataValue" and obj.get("protocolType") == "consumer":
            for member in obj.get("members") or ():
                for field, message in (("subscription", "ConsumerProtocolSubscription"),
                                       ("assignment", "ConsumerProtocolAssignment")):
                    member[field] = _consumer_protocol(message, member.get(field))
        return obj


def _consumer_protocol(message: str, data: object) -> object:
    """A classic consumer's subscription or assignment: its own int16 version, then the message; the bytes
    as they are where they do not hold one (Kafka keeps them so too)."""
    if not isinstance(data, bytes) or len(data) < 2:
        return data
    schema = load("consumer")[message]
    version = _INT16.unpack_from(data)[0]
    try:
        obj, _end = schema.read(data, version, 2)
    except MessageError:
        return data
    return obj


class TransactionLog(_Coordinator):
    """`__transaction_state`: each transactional id's producer id and epoch, state, partitions, timestamps."""

    name = "transaction-log"
    module = "transaction"


class ClusterMetadata(RecordDecoder):
    """`__cluster_metadata` (and KRaft snapshots): every metadata record by its type name and version."""

    name = "cluster-metadata"

    def decoded(self, offset, key, value):
        try:
            obj, schema = self.record(value)
        except MessageError as e:
            text = f"Error at {offset}, skipping. {e}"
            return Decoded(None, text, _explained(text, e))
        return Decoded(None, obj, None, schema)

    @staticmethod
    def record(value: bytes | None) -> tuple[dict, str]:
        """The metadata record a value frames, {"type", "version", "data"} (and "note" where it was read
        otherwise than by released Kafka's schema: `logtool.format.metadata_records`), and its schema's name.
        Errors in Kafka's words (`AbstractApiMessageSerde.read`), what went wrong inside a record in `detail`."""
        r = read_metadata_record(value)
        obj = {"type": metadata_type_name(r.schema), "version": r.version, "data": r.data}
        if r.note is not None:
            obj["note"] = r.note
        return obj, r.schema.name


def _explained(text: str, e: MessageError) -> str:
    """Kafka's words for JSON, with logtool's where Kafka's leave out what went wrong."""
    return text if e.detail == str(e) else f"{text} ({e.detail})"


BY_NAME: dict[str, type[RecordDecoder]] = {d.name: d for d in (Offsets, TransactionLog, ClusterMetadata)}
_BY_TOPIC = {"__consumer_offsets": Offsets, "__transaction_state": TransactionLog,
             "__cluster_metadata": ClusterMetadata}


def for_path(path) -> RecordDecoder | None:
    """The decoder for what a partition dir, segment or KRaft snapshot holds, by its topic's name; None for
    a topic that is not one of Kafka's internal ones."""
    from pathlib import Path

    p = Path(path).absolute()
    if p.name == BOOTSTRAP_CHECKPOINT or kraft_snapshot_id(p.name) is not None:
        return ClusterMetadata()
    for name in (p.name, p.parent.name):
        parsed = parse_partition_dir(name)
        if parsed is not None:
            found = _BY_TOPIC.get(parsed.topic)
            return found() if found else None
    return None
