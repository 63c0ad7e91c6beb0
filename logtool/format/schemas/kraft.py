"""KRaft control records (LEADER_CHANGE, SNAPSHOT_HEADER/FOOTER, KRAFT_VERSION, KRAFT_VOTERS): apache/kafka
clients/src/main/resources/common/message/{LeaderChangeMessage,SnapshotHeaderRecord,SnapshotFooterRecord,
KRaftVersionRecord,VotersRecord}.json at version 0 (Kafka reads them at 0 whatever they say), transcribed in the
form `logtool.format.schemas` describes; `id` is the control record type."""

TEXT = """
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
