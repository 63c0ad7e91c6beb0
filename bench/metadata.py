"""`logtool metadata`'s replay on generated KRaft metadata logs of BENCH_METADATA_RECORDS records (default
1,000,000): a quiet cluster's log (NoOpRecords, KIP-835's one each 500 ms, are most of it, as in every real log
of ../shared/fixtures) and a busy one with none (ISR and leader changes, broker fencing, topic creations and
deletions, configs). Writes bench/results/metadata.{json,md}.

The logs are generated once into bench/data/ by fixtures.metadata: records by logtool's schemas, batches by
kafka-python. Timed in-process (best of BENCH_REPEAT) and as a command, whose peak RSS shows that memory follows
the state, not the log.
"""
from __future__ import annotations

import os
import random
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from bench.run import DATA, REPEAT, best, measured, write_results
from fixtures.metadata import metadata_value, uuid_text, write_metadata_log
from logtool.rules.metadata.replay import open_source, replay

RECORDS = int(os.environ.get("BENCH_METADATA_RECORDS", 1_000_000))
BROKERS = 6
TOPICS = 2000
PARTITIONS = 10  # per topic: 20,000 partitions
WORKLOADS = {"quiet": 0.85, "busy": 0.0}  # the share of NoOpRecords


class _Cluster:
    """What the generator knows of the cluster it writes records for, so that every record applies."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.epochs = dict.fromkeys(range(BROKERS), 0)
        self.fenced = dict.fromkeys(range(BROKERS), True)
        self.topics: dict[str, tuple[str, list[list[int]], list[list[int]]]] = {}  # name -> id, replicas, isrs
        self.next_topic = 0

    def setup(self) -> Iterator[bytes]:
        yield metadata_value("FeatureLevelRecord", {"name": "metadata.version", "featureLevel": 19})
        for b in range(BROKERS):
            yield from self.register(b)
        for _ in range(TOPICS):
            yield from self.create_topic()

    def register(self, broker: int) -> Iterator[bytes]:
        self.epochs[broker] += 100
        self.fenced[broker] = False
        yield metadata_value("RegisterBrokerRecord", {
            "brokerId": broker, "incarnationId": uuid_text(1000 + broker * 7 + self.epochs[broker]),
            "brokerEpoch": self.epochs[broker], "endPoints": [{"name": "PLAINTEXT", "host": f"broker-{broker}",
                                                              "port": 9092, "securityProtocol": 0}],
            "features": [{"name": "metadata.version", "minSupportedVersion": 1, "maxSupportedVersion": 19}],
            "rack": None, "fenced": True, "logDirs": [uuid_text(500 + broker)]}, 2)
        yield metadata_value("UnfenceBrokerRecord", {"id": broker, "epoch": self.epochs[broker]})

    def create_topic(self) -> Iterator[bytes]:
        name, topic_id = f"topic-{self.next_topic}", uuid_text(10**6 + self.next_topic)
        self.next_topic += 1
        replicas = [self.rng.sample(range(BROKERS), 3) for _ in range(PARTITIONS)]
        self.topics[name] = (topic_id, replicas, [list(r) for r in replicas])
        yield metadata_value("TopicRecord", {"name": name, "topicId": topic_id})
        for p, r in enumerate(replicas):
            yield metadata_value("PartitionRecord", {
                "partitionId": p, "topicId": topic_id, "replicas": r, "isr": r, "removingReplicas": [],
                "addingReplicas": [], "leader": r[0], "leaderEpoch": 0, "partitionEpoch": 0,
                "directories": [uuid_text(500 + b) for b in r]}, 1)
        yield metadata_value("ConfigRecord", {"resourceType": 2, "resourceName": name, "name": "retention.ms",
                                              "value": str(self.rng.choice([3600000, 86400000, 604800000]))})

    def change(self) -> Iterator[bytes]:
        """One busy-cluster event: mostly an ISR or leader change, sometimes a broker or topic event."""
        rng = self.rng
        roll = rng.random()
        if roll < 0.9:
            name = f"topic-{rng.randrange(self.next_topic)}"
            while name not in self.topics:
                name = f"topic-{rng.randrange(self.next_topic)}"
            topic_id, replicas, isrs = self.topics[name]
            p = rng.randrange(PARTITIONS)
            isr = isrs[p]
            if len(isr) > 1 and rng.random() < 0.5:
                isr.remove(rng.choice(isr))
                yield metadata_value("PartitionChangeRecord", {"partitionId": p, "topicId": topic_id, "isr": isr}, 0)
            else:
                isrs[p] = isr = list(replicas[p])
                yield metadata_value("PartitionChangeRecord", {"partitionId": p, "topicId": topic_id, "isr": isr,
                                                               "leader": rng.choice(isr)}, 0)
        elif roll < 0.96:
            broker = rng.randrange(BROKERS)
            fence = not self.fenced[broker]
            self.fenced[broker] = fence
            yield metadata_value("BrokerRegistrationChangeRecord", {"brokerId": broker,
                                                                    "brokerEpoch": self.epochs[broker],
                                                                    "fenced": 1 if fence else -1}, 1)
        elif roll < 0.98:
            yield metadata_value("ConfigRecord", {"resourceType": 2, "resourceName": rng.choice(list(self.topics)),
                                                  "name": "cleanup.policy", "value": rng.choice(["delete", "compact"])})
        elif roll < 0.99:
            name = rng.choice(list(self.topics))
            topic_id, _, _ = self.topics.pop(name)
            yield metadata_value("RemoveTopicRecord", {"topicId": topic_id})
        else:
            yield from self.create_topic()


def _batches(noops: float, seed: int) -> Iterator[list[bytes]]:
    """RECORDS records in batches of the sizes a controller writes (a few records, NoOps alone)."""
    cluster = _Cluster(seed)
    rng = cluster.rng
    noop = metadata_value("NoOpRecord", {})
    written = 0
    setup = list(cluster.setup())
    for i in range(0, len(setup), 50):
        yield setup[i:i + 50]
    written += len(setup)
    while written < RECORDS:
        if rng.random() < noops:
            batch = [noop]
        else:
            batch = list(cluster.change())
        batch = batch[:RECORDS - written]
        written += len(batch)
        yield batch


def metadata_log(workload: str) -> Path:
    root = DATA / f"metadata-{workload}-{RECORDS}"
    path = root / "__cluster_metadata-0"
    if not path.exists():
        print(f"generating {RECORDS:,} metadata records into {path} ...", file=sys.stderr)
        write_metadata_log(root, _batches(WORKLOADS[workload], 31), step_ms=5, segment_bytes=100 << 20)
    return path


def main() -> int:
    res: dict = {"records": RECORDS, "brokers": BROKERS, "topics": TOPICS, "partitions_per_topic": PARTITIONS,
                 "repeat": REPEAT, "workloads": {}}
    for workload, noops in WORKLOADS.items():
        path = metadata_log(workload)
        log_bytes = sum(f.stat().st_size for f in path.glob("*.log"))
        t, result = best(lambda p=path: replay(open_source(p)))
        assert not result.problems, result.problems[:3]
        cpu = time.process_time()
        replay(open_source(path))
        cpu = time.process_time() - cpu
        records = result.log_records
        t0 = time.perf_counter()
        middle = replay(open_source(path), at_offset=records // 2)
        t_half = time.perf_counter() - t0
        command = measured("metadata", "--format", "json", str(path))
        early = measured("metadata", "--format", "json", "--at", str(records // 10), str(path))
        res["workloads"][workload] = {
            "noop_share": noops, "log_bytes": log_bytes, "records": records, "replay_s": round(t, 3),
            "replay_cpu_s": round(cpu, 3), "records_per_s": round(records / t), "at_half_s": round(t_half, 3),
            "state_topics": len(result.state.topics), "state_partitions": result.state.partition_count(),
            "at_half_partitions": middle.state.partition_count(),
            "command_s": command["seconds"], "command_max_rss_mb": command["max_rss_mb"],
            "command_exit": command["exit"], "at_tenth_command_max_rss_mb": early["max_rss_mb"],
        }
    write_results("metadata", res, render)
    return 0


def render(r: dict) -> str:
    rows = "\n".join(
        f"| {name} ({w['noop_share']:.0%} NoOps) | {w['records']:,} | {w['log_bytes'] / 1e6:.0f} MB "
        f"| {w['replay_s']} s ({w['replay_cpu_s']} s CPU) | {w['records_per_s']:,} | {w['at_half_s']} s "
        f"| {w['command_s']} s | {w['command_max_rss_mb']} MB | {w['at_tenth_command_max_rss_mb']} MB |"
        for name, w in r["workloads"].items())
    busy = r["workloads"]["busy"]
    return f"""# metadata replay benchmark ({r['records']:,} records)

`logtool metadata` replays a generated `__cluster_metadata-0` of {r['records']:,} records: {r['brokers']} brokers,
{r['topics']:,} topics of {r['partitions_per_topic']} partitions created first, then NoOps and changes (ISR shrinks
and expansions, leader elections, fencing, configs, topics deleted and created). The quiet log is shaped like
every real one of the test data (NoOpRecords are most of it); the busy one has none, and each of its records
differs from the others (real logs repeat their ISR changes, which the replay decodes once). Best of
{r['repeat']} in-process (and the CPU time of one run: the machine is shared); the command (Python's start-up
and the JSON of the state included) once, with its peak RSS, also at a tenth of the log (`--at`).

| workload | records | log | replay | records/s | `--at` half-way | command | peak RSS | peak RSS, `--at` a tenth |
|---|---|---|---|---|---|---|---|---|
{rows}

The state at the end holds {busy['state_topics']:,} topics and {busy['state_partitions']:,} partitions (busy). The
peak RSS is the state's and its JSON's: the same at a tenth of the log as at its end (the segments are mapped
and read a batch at a time). Records are read by readers compiled from the schemas once per record type and
version (`logtool.format.message_compiler`: about 1 us a PartitionChangeRecord, where the reference reader, which
walks the schema for every record, `Message.read_reference`, takes about 7 us), and the replay pauses Python's
cyclic garbage collector (it makes no cycles); before both, the busy log's replay took 24-38 s. What is left is
shared about evenly by the walk and the records' framing, the reading, and the state's rules.
"""  # noqa: E501 - the report's Markdown: a table row, or a line, as it is written


if __name__ == "__main__":
    sys.exit(main())
