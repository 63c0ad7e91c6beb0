"""The records of `__consumer_offsets` (the group coordinator's keys and values, by record type): apache/kafka
group-coordinator/src/main/resources/common/message/*Key.json and *Value.json, transcribed in the form
`logtool.format.schemas` describes."""

TEXT = """
MESSAGE LegacyOffsetCommitKey id=0 versions=0 flexible=none
group string 0
topic string 0
partition int32 0

MESSAGE LegacyOffsetCommitValue id=0 versions=0 flexible=none
offset int64 0
metadata string 0
commitTimestamp int64 0

MESSAGE OffsetCommitKey id=1 versions=0 flexible=none
group string 0
topic string 0
partition int32 0

MESSAGE OffsetCommitValue id=1 versions=0-4 flexible=4+
offset int64 0+
leaderEpoch int32 3+ default=-1
metadata string 0+
commitTimestamp int64 0+
expireTimestamp int64 1 default=-1

MESSAGE GroupMetadataKey id=2 versions=0 flexible=none
group string 0

STRUCT MemberMetadata
memberId string 0+
groupInstanceId string 3+ nullable=3+ default=null
clientId string 0+
clientHost string 0+
rebalanceTimeout int32 1+ default=-1
sessionTimeout int32 0+
subscription bytes 0+
assignment bytes 0+

MESSAGE GroupMetadataValue id=2 versions=0-4 flexible=4+
protocolType string 0+
generation int32 0+
protocol string 0+ nullable=0+
leader string 0+ nullable=0+
currentStateTimestamp int64 2+ default=-1
members []MemberMetadata 0+

MESSAGE ConsumerGroupMetadataKey id=3 versions=0 flexible=none
GroupId string 0

MESSAGE ConsumerGroupMetadataValue id=3 versions=0 flexible=0+
Epoch int32 0+
MetadataHash int64 0+ default=0 tag=0 tagged=0+
CreationTimeMs int64 0+ default=-1 tag=1 tagged=0+

MESSAGE ConsumerGroupPartitionMetadataKey id=4 versions=0 flexible=none
GroupId string 0

MESSAGE ConsumerGroupPartitionMetadataValue id=4 versions=0 flexible=0+
Topics []TopicMetadata 0+
  TopicId uuid 0+
  TopicName string 0+
  NumPartitions int32 0+
  PartitionMetadata []PartitionMetadata 0+
    Partition int32 0+
    Racks []string 0+

MESSAGE ConsumerGroupMemberMetadataKey id=5 versions=0 flexible=none
GroupId string 0
MemberId string 0

MESSAGE ConsumerGroupMemberMetadataValue id=5 versions=0 flexible=0+
InstanceId string 0+ nullable=0+
RackId string 0+ nullable=0+
ClientId string 0+
ClientHost string 0+
SubscribedTopicNames []string 0+
SubscribedTopicRegex string 0+ nullable=0+
RebalanceTimeoutMs int32 0+ default=-1
ServerAssignor string 0+ nullable=0+
ClassicMemberMetadata ClassicMemberMetadata 0+ nullable=0+ default=null tag=0 tagged=0+
  SessionTimeoutMs int32 0+
  SupportedProtocols []ClassicProtocol 0+
    Name string 0+
    Metadata bytes 0+

MESSAGE ConsumerGroupTargetAssignmentMetadataKey id=6 versions=0 flexible=none
GroupId string 0

MESSAGE ConsumerGroupTargetAssignmentMetadataValue id=6 versions=0 flexible=0+
AssignmentEpoch int32 0+
AssignmentTimestamp int64 0+ default=0 tag=0 tagged=0+

MESSAGE ConsumerGroupTargetAssignmentMemberKey id=7 versions=0 flexible=none
GroupId string 0
MemberId string 0

MESSAGE ConsumerGroupTargetAssignmentMemberValue id=7 versions=0 flexible=0+
TopicPartitions []TopicPartition 0+
  TopicId uuid 0+
  Partitions []int32 0+

MESSAGE ConsumerGroupCurrentMemberAssignmentKey id=8 versions=0 flexible=none
GroupId string 0
MemberId string 0

STRUCT TopicPartitions
TopicId uuid 0+
Partitions []int32 0+
AssignmentEpochs []int32 0+ nullable=0+ default=null tag=0 tagged=0+

MESSAGE ConsumerGroupCurrentMemberAssignmentValue id=8 versions=0 flexible=0+
MemberEpoch int32 0+
PreviousMemberEpoch int32 0+
State int8 0+
AssignedPartitions []TopicPartitions 0+
PartitionsPendingRevocation []TopicPartitions 0+

MESSAGE ShareGroupPartitionMetadataKey id=9 versions=0 flexible=none
GroupId string 0

MESSAGE ShareGroupPartitionMetadataValue id=9 versions=0 flexible=0+
Topics []TopicMetadata 0+
  TopicId uuid 0+
  TopicName string 0+
  NumPartitions int32 0+
  PartitionMetadata []PartitionMetadata 0+
    Partition int32 0+
    Racks []string 0+

MESSAGE ShareGroupMemberMetadataKey id=10 versions=0 flexible=none
GroupId string 0
MemberId string 0

MESSAGE ShareGroupMemberMetadataValue id=10 versions=0 flexible=0+
RackId string 0+ nullable=0+
ClientId string 0+
ClientHost string 0+
SubscribedTopicNames []string 0+

MESSAGE ShareGroupMetadataKey id=11 versions=0 flexible=none
GroupId string 0

MESSAGE ShareGroupMetadataValue id=11 versions=0 flexible=0+
Epoch int32 0+
MetadataHash int64 0+

MESSAGE ShareGroupTargetAssignmentMetadataKey id=12 versions=0 flexible=none
GroupId string 0

MESSAGE ShareGroupTargetAssignmentMetadataValue id=12 versions=0 flexible=0+
AssignmentEpoch int32 0+

MESSAGE ShareGroupTargetAssignmentMemberKey id=13 versions=0 flexible=none
GroupId string 0
MemberId string 0

MESSAGE ShareGroupTargetAssignmentMemberValue id=13 versions=0 flexible=0+
TopicPartitions []TopicPartition 0+
  TopicId uuid 0+
  Partitions []int32 0+

MESSAGE ShareGroupCurrentMemberAssignmentKey id=14 versions=0 flexible=none
GroupId string 0
MemberId string 0

STRUCT ShareGroupCurrentMemberAssignmentValueTopicPartitions
TopicId uuid 0+
Partitions []int32 0+

MESSAGE ShareGroupCurrentMemberAssignmentValue id=14 versions=0 flexible=0+
MemberEpoch int32 0+
PreviousMemberEpoch int32 0+
State int8 0+
AssignedPartitions []ShareGroupCurrentMemberAssignmentValueTopicPartitions 0+

MESSAGE ShareGroupStatePartitionMetadataKey id=15 versions=0 flexible=none
GroupId string 0

STRUCT TopicPartitionsInfo
TopicId uuid 0+
TopicName string 0+
Partitions []int32 0+
CreateTimestamp int64 0+

STRUCT ShareGroupStatePartitionMetadataValueTopicInfo
TopicId uuid 0+
TopicName string 0+

MESSAGE ShareGroupStatePartitionMetadataValue id=15 versions=0 flexible=0+
InitializingTopics []TopicPartitionsInfo 0+
InitializedTopics []TopicPartitionsInfo 0+
DeletingTopics []ShareGroupStatePartitionMetadataValueTopicInfo 0+

MESSAGE ConsumerGroupRegularExpressionKey id=16 versions=0 flexible=none
GroupId string 0
RegularExpression string 0

MESSAGE ConsumerGroupRegularExpressionValue id=16 versions=0 flexible=0+
Topics []string 0+
Version int64 0+
Timestamp int64 0+

MESSAGE StreamsGroupMetadataKey id=17 versions=0 flexible=none
GroupId string 0

STRUCT AssignmentConfig
Key string 0+
Value string 0+

MESSAGE StreamsGroupMetadataValue id=17 versions=0 flexible=0+
Epoch int32 0+
MetadataHash int64 0+
ValidatedTopologyEpoch int32 0+ default=-1 tag=0 tagged=0+
AssignmentConfigs []AssignmentConfig 0+

MESSAGE StreamsGroupPartitionMetadataKey id=18 versions=0 flexible=none
GroupId string 0

MESSAGE StreamsGroupPartitionMetadataValue id=18 versions=0 flexible=0+
Topics []TopicMetadata 0+
  TopicId uuid 0+
  TopicName string 0+
  NumPartitions int32 0+
  PartitionMetadata []PartitionMetadata 0+
    Partition int32 0+
    Racks []string 0+

MESSAGE StreamsGroupMemberMetadataKey id=19 versions=0 flexible=none
GroupId string 0
MemberId string 0

STRUCT Endpoint
Host string 0+
Port uint16 0+

STRUCT KeyValue
Key string 0+
Value string 0+

MESSAGE StreamsGroupMemberMetadataValue id=19 versions=0 flexible=0+
InstanceId string 0+ nullable=0+
RackId string 0+ nullable=0+
ClientId string 0+
ClientHost string 0+
RebalanceTimeoutMs int32 0+ default=-1
TopologyEpoch int32 0+
ProcessId string 0+
UserEndpoint Endpoint 0+ nullable=0+ default=null
ClientTags []KeyValue 0+

MESSAGE StreamsGroupTargetAssignmentMetadataKey id=20 versions=0 flexible=none
GroupId string 0

MESSAGE StreamsGroupTargetAssignmentMetadataValue id=20 versions=0 flexible=0+
AssignmentEpoch int32 0+

MESSAGE StreamsGroupTargetAssignmentMemberKey id=21 versions=0 flexible=none
GroupId string 0
MemberId string 0

STRUCT TaskIds
SubtopologyId string 0+
Partitions []int32 0+

MESSAGE StreamsGroupTargetAssignmentMemberValue id=21 versions=0 flexible=0+
ActiveTasks []TaskIds 0+
StandbyTasks []TaskIds 0+
WarmupTasks []TaskIds 0+

MESSAGE StreamsGroupCurrentMemberAssignmentKey id=22 versions=0 flexible=none
GroupId string 0
MemberId string 0

MESSAGE StreamsGroupCurrentMemberAssignmentValue id=22 versions=0 flexible=0+
MemberEpoch int32 0+
PreviousMemberEpoch int32 0+
State int8 0+
ActiveTasks []TaskIds 0+
StandbyTasks []TaskIds 0+
WarmupTasks []TaskIds 0+
ActiveTasksPendingRevocation []TaskIds 0+
StandbyTasksPendingRevocation []TaskIds 0+
WarmupTasksPendingRevocation []TaskIds 0+

MESSAGE StreamsGroupTopologyKey id=23 versions=0 flexible=none
GroupId string 0

STRUCT TopicConfig
key string 0+
value string 0+

STRUCT TopicInfo
Name string 0+
Partitions int32 0+
ReplicationFactor int16 0+
TopicConfigs []TopicConfig 0+

MESSAGE StreamsGroupTopologyValue id=23 versions=0 flexible=0+
Epoch int32 0+
Subtopologies []Subtopology 0+
  SubtopologyId string 0+
  SourceTopics []string 0+
  SourceTopicRegex []string 0+
  StateChangelogTopics []TopicInfo 0+
  RepartitionSinkTopics []string 0+
  RepartitionSourceTopics []TopicInfo 0+
  CopartitionGroups []CopartitionGroup 0+
    SourceTopics []int16 0+
    SourceTopicRegex []int16 0+
    RepartitionSourceTopics []int16 0+

MESSAGE StreamsGroupTargetAssignmentResolvedTopicIdsKey id=24 versions=0 flexible=none
GroupId string 0

STRUCT ResolvedTopicIds
SubtopologyId string 0+
TopicIds []uuid 0+

MESSAGE StreamsGroupTargetAssignmentResolvedTopicIdsValue id=24 versions=0 flexible=0+
AssignmentEpoch int32 0+
ResolvedTopicIdsBySubtopology []ResolvedTopicIds 0+
"""
