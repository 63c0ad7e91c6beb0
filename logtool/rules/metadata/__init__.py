"""The KRaft metadata replay: the cluster state `__cluster_metadata` describes at any offset or time, as Kafka's
metadata loader builds it (`state`: the records' rules; `replay`: snapshots, the log, control records, where
a torn tail stops it; `compare`: what changed between two states, and which records touched a topic)."""
