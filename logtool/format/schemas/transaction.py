"""The records of `__transaction_state` (the transaction coordinator's key and value, record type 0): apache/kafka
transaction-coordinator/src/main/resources/common/message/TransactionLog{Key,Value}.json, transcribed in the form
`logtool.format.schemas` describes."""

TEXT = """
MESSAGE TransactionLogKey id=0 versions=0 flexible=none
TransactionalId string 0

MESSAGE TransactionLogValue id=0 versions=0-1 flexible=1+
ProducerId int64 0+
PreviousProducerId int64 1+ default=-1 tag=0 tagged=1+
NextProducerId int64 1+ default=-1 tag=1 tagged=1+
ProducerEpoch int16 0+
TransactionTimeoutMs int32 0+
TransactionStatus int8 0+
TransactionPartitions []PartitionsSchema 0+ nullable=0+
  Topic string 0+
  PartitionIds []int32 0+
TransactionLastUpdateTimestampMs int64 0+
TransactionStartTimestampMs int64 0+
ClientTransactionVersion int16 1+ default=0 tag=2 tagged=1+
"""
