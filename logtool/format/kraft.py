"""Values of KRaft control records (FORMAT.md §2.7): LEADER_CHANGE, SNAPSHOT_HEADER/FOOTER, KRAFT_VERSION,
KRAFT_VOTERS, decoded into the objects Kafka's generated `*JsonConverter.write` prints.

Kafka reads these values with schema version 0 whatever their embedded Version field says
(`ControlRecordUtils`), so do we, through the one schema engine (`logtool.format.messages`). Every schema
is flexible: compact strings and arrays, a tagged-field section after each struct.
"""
from __future__ import annotations

from functools import cache

from logtool.format.messages import Message, MessageError
from logtool.format.schemas import load
from logtool.format.records import RecordError
from logtool.findings import CONTROL_RECORD_INVALID

@cache
def _schemas() -> dict[int, Message]:
    return {m.id: m for m in load("kraft").values() if m.id is not None}


def control_value(type_id: int, value: bytes | None) -> dict[str, object] | None:
    """The decoded value of a KRaft control record, None for types that have none here (ABORT, COMMIT,
    unknown ids). Raises RecordError when the bytes do not hold the schema."""
    schema = _schemas().get(type_id)
    if schema is None:
        return None
    try:
        obj, _pos = schema.read(value or b"", 0)
    except MessageError as e:
        raise RecordError(f"control record value of type {type_id} cannot be read: {e.detail}",
                          CONTROL_RECORD_INVALID.name) from None
    return obj
