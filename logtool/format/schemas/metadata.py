"""KRaft metadata records (`__cluster_metadata`): apache/kafka metadata/src/main/resources/common/metadata/*.json,
transcribed in the form `logtool.format.schemas` describes. Read from apache/kafka at 207f229 (0), 120e688 (3, 17),
6bb8a43 (12), 0f124f4 (10), c730af4 (14), 578062a (15) and the commits of the removed or late records (6, 16, 18-29);
1, 2, 4, 7, 8, 9 and 11 from a trunk-era mirror (muxun-research/kafka 05780be), 5 from aiven/inkless 0afeda0 up to
LastKnownElr, as the stored apache/kafka copies of those were pre-release drafts."""

TEXT = """
MESSAGE RegisterBrokerRecord id=0 versions=0-3 flexible=0+
BrokerId int32 0+
IsMigratingZkBroker bool 2+ default=false
IncarnationId uuid 0+
BrokerEpoch int64 0+
EndPoints []BrokerEndpoint 0+
  Name string 0+
  Host string 0+
  Port uint16 0+
  SecurityProtocol int16 0+
Features []BrokerFeature 0+
  Name string 0+
  MinSupportedVersion int16 0+
  MaxSupportedVersion int16 0+
Rack string 0+ nullable=0+
Fenced bool 0+ default=true
InControlledShutdown bool 1+ default=false
LogDirs []uuid 3+ tag=0 tagged=3+

MESSAGE UnregisterBrokerRecord id=1 versions=0 flexible=0+
BrokerId int32 0+
BrokerEpoch int64 0+

MESSAGE TopicRecord id=2 versions=0 flexible=0+
Name string 0+
TopicId uuid 0+

MESSAGE PartitionRecord id=3 versions=0-2 flexible=0+
PartitionId int32 0+ default=-1
TopicId uuid 0+
Replicas []int32 0+
Isr []int32 0+
RemovingReplicas []int32 0+
AddingReplicas []int32 0+
Leader int32 0+ default=-1
LeaderRecoveryState int8 0+ default=0 tag=0 tagged=0+
LeaderEpoch int32 0+ default=-1
PartitionEpoch int32 0+ default=-1
Directories []uuid 1+
EligibleLeaderReplicas []int32 2+ nullable=2+ default=null tag=1 tagged=2+
LastKnownElr []int32 2+ nullable=2+ default=null tag=2 tagged=2+

MESSAGE ConfigRecord id=4 versions=0 flexible=0+
ResourceType int8 0+
ResourceName string 0+
Name string 0+
Value string 0+ nullable=0+

MESSAGE PartitionChangeRecord id=5 versions=0-2 flexible=0+
PartitionId int32 0+ default=-1
TopicId uuid 0+
Isr []int32 0+ nullable=0+ default=null tag=0 tagged=0+
Leader int32 0+ default=-2 tag=1 tagged=0+
Replicas []int32 0+ nullable=0+ default=null tag=2 tagged=0+
RemovingReplicas []int32 0+ nullable=0+ default=null tag=3 tagged=0+
AddingReplicas []int32 0+ nullable=0+ default=null tag=4 tagged=0+
LeaderRecoveryState int8 0+ default=-1 tag=5 tagged=0+
Directories []uuid 1+ nullable=1+ default=null tag=8 tagged=1+
EligibleLeaderReplicas []int32 2+ nullable=2+ default=null tag=6 tagged=2+
LastKnownElr []int32 2+ nullable=2+ default=null tag=7 tagged=2+

MESSAGE AccessControlRecord id=6 versions=0 flexible=none
ResourceType int8 0+
ResourceName string 0+ nullable=0+
PatternType int8 0+
Principal string 0+
Host string 0+
Operation int8 0+
PermissionType int8 0+

MESSAGE FenceBrokerRecord id=7 versions=0 flexible=0+
Id int32 0+
Epoch int64 0+

MESSAGE UnfenceBrokerRecord id=8 versions=0 flexible=0+
Id int32 0+
Epoch int64 0+

MESSAGE RemoveTopicRecord id=9 versions=0 flexible=0+
TopicId uuid 0+

MESSAGE DelegationTokenRecord id=10 versions=0 flexible=0+
Owner string 0+
Requester string 0+
Renewers []string 0+
IssueTimestamp int64 0+
MaxTimestamp int64 0+
ExpirationTimestamp int64 0+
TokenId string 0+

MESSAGE UserScramCredentialRecord id=11 versions=0 flexible=0+
Name string 0+
Mechanism int8 0+
Salt bytes 0+
StoredKey bytes 0+
ServerKey bytes 0+
Iterations int32 0+

MESSAGE FeatureLevelRecord id=12 versions=0 flexible=0+
Name string 0+
FeatureLevel int16 0+

MESSAGE ClientQuotaRecord id=14 versions=0 flexible=0+
Entity []EntityData 0+
  EntityType string 0+
  EntityName string 0+ nullable=0+
Key string 0+
Value float64 0+
Remove bool 0+

MESSAGE ProducerIdsRecord id=15 versions=0 flexible=0+
BrokerId int32 0+
BrokerEpoch int64 0+ default=-1
NextProducerId int64 0+

MESSAGE RemoveFeatureLevelRecord id=16 versions=0 flexible=0+
Name string 0+

MESSAGE BrokerRegistrationChangeRecord id=17 versions=0-2 flexible=0+
BrokerId int32 0+
BrokerEpoch int64 0+
Fenced int8 0+ tag=0 tagged=0+
InControlledShutdown int8 1+ tag=1 tagged=1+
LogDirs []uuid 2+ tag=2 tagged=2+

MESSAGE AccessControlEntryRecord id=18 versions=0 flexible=0+
Id uuid 0+
ResourceType int8 0+
ResourceName string 0+
PatternType int8 0+
Principal string 0+
Host string 0+
Operation int8 0+
PermissionType int8 0+

MESSAGE RemoveAccessControlEntryRecord id=19 versions=0 flexible=0+
Id uuid 0+

MESSAGE NoOpRecord id=20 versions=0 flexible=0+

MESSAGE ZkMigrationStateRecord id=21 versions=0 flexible=0+
ZkMigrationState int8 0+

MESSAGE RemoveUserScramCredentialRecord id=22 versions=0 flexible=0+
Name string 0+
Mechanism int8 0+

MESSAGE BeginTransactionRecord id=23 versions=0 flexible=0+
Name string 0+ nullable=0+ default=null tag=0 tagged=0+

MESSAGE EndTransactionRecord id=24 versions=0 flexible=0+

MESSAGE AbortTransactionRecord id=25 versions=0 flexible=0+
Reason string 0+ nullable=0+ default=null tag=0 tagged=0+

MESSAGE RemoveDelegationTokenRecord id=26 versions=0 flexible=0+
TokenId string 0+

MESSAGE RegisterControllerRecord id=27 versions=0 flexible=0+
ControllerId int32 0+
IncarnationId uuid 0+
ZkMigrationReady bool 0+
EndPoints []ControllerEndpoint 0+
  Name string 0+
  Host string 0+
  Port uint16 0+
  SecurityProtocol int16 0+
Features []ControllerFeature 0+
  Name string 0+
  MinSupportedVersion int16 0+
  MaxSupportedVersion int16 0+

MESSAGE ClearElrRecord id=28 versions=0 flexible=0+
TopicName string 0+

MESSAGE UnregisterControllerRecord id=29 versions=0 flexible=0+
ControllerId int32 0+
"""

# PartitionRecord as Kafka's development builds of late 2023 (trunk between KIP-966's ELR fields and KIP-858's
# Directories) wrote it: version 1 is version 0 with EligibleLeaderReplicas and LastKnownElr as tagged fields 1
# and 2; no Directories. Released Kafka gave version 1 to Directories and moved the ELR fields to version 2.
# Confirmed on the records that build wrote (fixtures real-more/apache__kafka: two tagged fields, tags 1 and 2,
# each an empty compact array, and nothing else after PartitionEpoch); the trunk commit itself is not stored.
BEFORE_DIRECTORIES = """
MESSAGE PartitionRecord id=3 versions=0-1 flexible=0+
PartitionId int32 0+ default=-1
TopicId uuid 0+
Replicas []int32 0+
Isr []int32 0+
RemovingReplicas []int32 0+
AddingReplicas []int32 0+
Leader int32 0+ default=-1
LeaderRecoveryState int8 0+ default=0 tag=0 tagged=0+
LeaderEpoch int32 0+ default=-1
PartitionEpoch int32 0+ default=-1
EligibleLeaderReplicas []int32 1+ nullable=1+ default=null tag=1 tagged=1+
LastKnownElr []int32 1+ nullable=1+ default=null tag=2 tagged=1+
"""
