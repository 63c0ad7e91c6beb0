"""The consumer protocol a classic group's members carry in their subscription and assignment bytes: apache/kafka
clients/src/main/resources/common/message/ConsumerProtocol{Subscription,Assignment}.json, transcribed in the form
`logtool.format.schemas` describes."""

TEXT = """
MESSAGE ConsumerProtocolSubscription versions=0-3 flexible=none
Topics []string 0+
UserData bytes 0+ nullable=0+ default=null
OwnedPartitions []TopicPartition 1+
  Topic string 1+
  Partitions []int32 1+
GenerationId int32 2+ default=-1
RackId string 3+ nullable=3+ default=null

MESSAGE ConsumerProtocolAssignment versions=0-3 flexible=none
AssignedPartitions []TopicPartition 0+
  Topic string 0+
  Partitions []int32 0+
UserData bytes 0+ nullable=0+ default=null
"""
