"""Values of KRaft control records (FORMAT.md §2.7): LEADER_CHANGE, SNAPSHOT_HEADER/FOOTER, KRAFT_VERSION,
KRAFT_VOTERS, decoded into the objects Kafka's generated `*JsonConverter.write` prints.

Kafka reads these values with schema version 0 whatever their embedded Version field says
(`ControlRecordUtils`), so do we, through the one schema engine (`logtool.format.messages`). Every schema
is flexible: compact strings and arrays, a tagged-field section after each struct.
"""
from __future__ import annotations

from functools import cache

from logtool.format.messages import Message, MessageError, parse
from logtool.format.records import RecordError

# apache/kafka clients/src/main/resources/common/message/{LeaderChangeMessage,SnapshotHeaderRecord,
# SnapshotFooterRecord,KRaftVersionRecord,VotersRecord}.json at version 0, in the form of logtool.format.schemas.
_TEXT = """
MESSAGE LeaderChangeMessage id=2 versions=0 flexible=0+
Version int16 0+
LeaderId int32 0+
Voters []Voter 0+
GrantingVoters []Voter 0+

STRUCT Voter
VoterId int32 0+

MESSAGE SnapshotHeaderRecord id=3 versions=0 flexible=0+
Version int16 0+
LastContainedLogTimestamp int64 0+

MESSAGE SnapshotFooterRecord id=4 versions=0 flexible=0+
Version int16 0+

MESSAGE KRaftVersionRecord id=5 versions=0 flexible=0+
Version int16 0+
KRaftVersion int16 0+

MESSAGE VotersRecord id=6 versions=0 flexible=0+
Version int16 0+
Voters []Voter 0+
  VoterId int32 0+
  VoterDirectoryId uuid 0+
  Endpoints []Endpoint 0+
    Name string 0+
    Host string 0+
    Port uint16 0+
  KRaftVersionFeature KRaftVersionFeature 0+
    MinSupportedVersion int16 0+
    MaxSupportedVersion int16 0+
"""


@cache
def _schemas() -> dict[int, Message]:
    return {m.id: m for m in parse(_TEXT).values()}


def control_value(type_id: int, value: bytes | None) -> dict | None:
    """The decoded value of a KRaft control record, None for types that have none here (ABORT, COMMIT,
    unknown ids). Raises RecordError when the bytes do not hold the schema."""
    schema = _schemas().get(type_id)
    if schema is None:
        return None
    try:
        obj, _pos = schema.read(value or b"", 0)
    except MessageError as e:
        raise RecordError(f"control record value of type {type_id} cannot be read: {e.detail}",
                          "CONTROL_RECORD_INVALID") from None
    return obj
