"""`logtool metadata`: the KRaft metadata replay (`logtool.rules.metadata`) and its command.

Held against what we did not compute ourselves:
- Kafka's own snapshots: the log replayed up to a snapshot's last offset is the state the controller wrote into
  that snapshot (every real log that holds both);
- the brokers' own disks: on every real KRaft log dir, each partition the metadata assigns to the node has its
  partition dir there, with the topic id of its partition.metadata, and no plain partition dir is unassigned;
  the node's directory.id is one its registration lists. The dirs where that does not hold are named below;
- a model of the state written from Kafka's delta rules (in this file, in its own words), driven by random
  record sequences whose records are built by the schema engine (`fixtures.metadata`), one sample of them read
  back through `dump --decoder`;
- hostile input: a torn tail, a garbage snapshot, records Kafka's loader refuses, random bytes.
"""
from __future__ import annotations

import base64
import json
import random
import re
import shutil
from pathlib import Path

import pytest
from conftest import SHARED, require, run_logtool
from support.dumping import dump, objects

from fixtures.metadata import metadata_value, uuid_text, write_metadata_log
from logtool.findings import TORN_BATCH, UNREADABLE
from logtool.format.metadata_records import BEFORE_DIRECTORIES_NOTE, read_metadata_record
from logtool.rules.metadata.compare import Point, diff, diff_between, history_of
from logtool.rules.metadata.replay import (
    LOG_GAP,
    RECORD_REFUSED,
    RECORD_UNREADABLE,
    SNAPSHOT_UNUSABLE,
    MetadataPathError,
    Source,
    open_source,
    replay,
)
from logtool.rules.metadata.state import MIGRATING, UNASSIGNED
from logtool.store.layout import parse_partition_dir

REAL_ROOTS = [SHARED / "real", SHARED / "real-more"]


def metadata_logs() -> list[Path]:
    found = sorted(p for root in REAL_ROOTS for p in require(root).rglob("__cluster_metadata-0") if p.is_dir())
    assert len(found) >= 20, found
    return found


def _id(path: Path) -> str:
    return str(path.relative_to(SHARED).parent)


REAL = metadata_logs()

# Offsets the real logs lack: codecrafters-a's log (a hand-made sample of the "build your own Kafka" course)
# starts at offset 1.
KNOWN_PROBLEMS = {"real/codecrafters-a": {LOG_GAP}}
# Partitions the metadata assigns to the node whose dirs are not there. The Kafka Connect config partitions were
# taken out of the fixture sets (their SOURCES.md: they held Connect's session keys); __consumer_offsets-14 of
# kraft-broker-logdir is missing from the data as published (github.com/Niloufar1171/LDI-POC): a real
# inconsistency, the broker would recreate it empty.
MISSING_ON_DISK = {
    "real-more/Danielowo2000__BigDataTechnologies-Version-2/kafka_data": {("_kafka-connect-configs", 0)},
    "real/ItumelengMogase__Real-Time-Data-Pipeline-for-Patient-Admissions/kafka-data": {("docker-connect-configs", 0)},
    "real/kraft-broker-logdir": {("__consumer_offsets", 14)},
}


def plain(obj):
    """A state's dict without where each item last changed."""
    if isinstance(obj, dict):
        return {k: plain(v) for k, v in obj.items() if k != "changed"}
    if isinstance(obj, list):
        return [plain(v) for v in obj]
    return obj


def _properties(log_dir: Path) -> dict[str, str]:
    meta = log_dir / "meta.properties"
    if not meta.exists():
        return {}
    return dict(line.split("=", 1) for line in meta.read_text().splitlines() if "=" in line and line[0] != "#")


# ------------------------------------------------------------------------------------------- the real logs


@pytest.mark.parametrize("path", REAL, ids=_id)
def test_every_real_log_replays_and_its_broker_holds_what_the_metadata_assigns(path):
    r = replay(open_source(path))
    assert {p.kind for p in r.problems} == KNOWN_PROBLEMS.get(_id(path), set()), r.problems
    assert r.last_offset is not None and r.state.metadata_version is not None
    log_dir = path.parent
    props = _properties(log_dir)
    node = int(props["node.id"]) if "node.id" in props else (next(iter(r.state.brokers)) if len(r.state.brokers) == 1
                                                              else None)
    if node is None:  # a test broker of apache/kafka's build without meta.properties, or no broker registered
        return
    on_disk = {}
    for child in log_dir.iterdir():
        name = parse_partition_dir(child.name)
        if child.is_dir() and name is not None and name.kind == "plain" and name.topic != "__cluster_metadata":
            meta = child / "partition.metadata"
            found = re.search(r"topic_id: (\S+)", meta.read_text()) if meta.exists() else None
            on_disk[(name.topic, name.partition)] = found.group(1) if found else None
    assigned = {(p.topic, p.partition): p.topic_id for p in r.state.placements(node)}
    assert set(assigned) - set(on_disk) == MISSING_ON_DISK.get(_id(path), set())
    assert not set(on_disk) - set(assigned), "partition dirs the metadata does not assign to this node"
    assert {k: v for k, v in on_disk.items() if assigned[k] != v} == {}, "partition.metadata topic ids differ"
    for (topic, _), topic_id in assigned.items():
        assert r.state.topic_id(topic) == topic_id
    broker = r.state.brokers[node]
    if "directory.id" in props and broker.log_dirs:  # brokers below metadata.version 3.7-IV2 register none
        assert props["directory.id"] in broker.log_dirs
        directories = {p.directory for p in r.state.placements(node)}
        assert directories <= set(broker.log_dirs) | {MIGRATING, UNASSIGNED}, directories


def _snapshot_pairs():
    """(log dir, snapshot, where the log replay starts: an older snapshot or None for offset 0) for every real log
    that holds the records up to a snapshot of its own."""
    pairs = []
    for path in REAL:
        src = open_source(path)
        if src.partition is None or not src.partition.segments:
            continue
        first = src.partition.segments[0].base_offset
        for snap in src.snapshots:
            older = [s for s in src.snapshots if first <= s.end_offset < snap.end_offset]
            if first == 0:
                pairs.append(pytest.param(path, snap.path.name, None, id=f"{_id(path)}:{snap.end_offset}:0"))
            if older:
                pairs.append(pytest.param(path, snap.path.name, older[-1].path.name,
                                          id=f"{_id(path)}:{snap.end_offset}:{older[-1].end_offset}"))
    assert len(pairs) >= 6
    return pairs


@pytest.mark.parametrize("path,snapshot,start", _snapshot_pairs())
def test_the_log_replayed_to_a_snapshot_is_the_state_kafka_wrote_into_it(path, snapshot, start):
    src = open_source(path)
    snap = next(s for s in src.snapshots if s.path.name == snapshot)
    alone = replay(Source(snap.path, None, None, [snap]))
    base = [s for s in src.snapshots if s.path.name == start]
    logged = replay(Source(src.path, src.directory, src.partition, base), at_offset=snap.last_offset)
    assert not alone.problems and not logged.problems
    assert logged.last_offset == snap.last_offset and logged.reached_point
    assert diff(alone.state.to_dict(), logged.state.to_dict()) == []
    assert plain(alone.state.to_dict()) == plain(logged.state.to_dict())


def test_the_development_builds_partition_records_predate_directories():
    """The apache/kafka checkout's brokers (late-2023 trunk) wrote PartitionRecord v1 without Directories:
    read as that build read them, said so, in the replay and in `dump --decoder`."""
    logs = [p for p in REAL if "apache__kafka" in p.parts]
    early = []
    for path in logs:
        r = replay(open_source(path))
        assert not r.problems
        if BEFORE_DIRECTORIES_NOTE in r.notes:
            early.append(path)
            topic = r.state.topic("topic") or next(iter(r.state.topics.values()))
            assert all(p.directories == (MIGRATING,) * len(p.replicas) for p in topic.partitions.values())
        _rc, out, _err = dump(path, "--format", "jsonl")
        values = [o["value"] for o in objects(out) if o["type"] == "record" and o["control"] is None]
        assert not [v for v in values if "error" in v]
        noted = [v for v in values if v.get("note") == BEFORE_DIRECTORIES_NOTE]
        assert all(v["type"] == "PARTITION_RECORD" and v["version"] == 1 and "directories" not in v["data"]
                   and v["data"]["eligibleLeaderReplicas"] == [] for v in noted)
    assert len(early) == 2
    _rc, text, _err = dump(early[0], "--decoder", "cluster-metadata")
    assert text.count('"note":"PartitionRecord version 1 as Kafka') == 6  # offsets 24-28 and 42


def _largest() -> Path:
    return max(REAL, key=lambda p: sum(f.stat().st_size for f in p.glob("*.log")))


@pytest.mark.slow
@pytest.mark.slow
def test_at_an_offset_and_a_time_on_the_largest_real_log():
    path = _largest()
    end = replay(open_source(path))
    src = open_source(path)
    snap = src.snapshots[-1]
    middle = (snap.end_offset + end.last_offset) // 2
    at = replay(src, at_offset=middle)
    assert at.snapshot == snap and at.last_offset == middle and at.reached_point
    assert at.log_end == end.last_offset + 1
    # The state at the time of that record is the same state.
    by_time = replay(src, at_time=at.last_timestamp)
    assert by_time.last_timestamp == at.last_timestamp and by_time.last_offset >= middle
    assert plain(replay(src, at_offset=by_time.last_offset).state.to_dict()) == plain(by_time.state.to_dict())
    # Before the last snapshot, an older point starts from the log (or an older snapshot).
    early = replay(src, at_offset=snap.end_offset - 100)
    assert early.snapshot != snap and early.last_offset == snap.end_offset - 100
    # As a command.
    res = run_logtool("metadata", str(path), "--at", str(middle), "--format", "json")
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    assert doc["position"]["offset"] == middle and doc["exit_code"] == 0
    assert plain(doc["state"]) == plain(at.state.to_dict())


@pytest.mark.slow
@pytest.mark.slow
def test_diff_and_history_on_the_largest_real_log():
    path = _largest()
    src = open_source(path)
    end = replay(src)
    a = src.snapshots[-1].end_offset + 200
    changes = diff_between(src, Point(a), Point(end.last_offset))
    assert changes.changes and changes.exit_code() == 0
    at_a = {f"{t['name']}-{p['partition']}": p for t in replay(src, a).state.to_dict()["topics"]
            for p in t["partitions"]}
    at_b = {f"{t['name']}-{p['partition']}": p for t in end.state.to_dict()["topics"] for p in t["partitions"]}
    moved = {c.name for c in changes.changes if c.item == "partition"}
    assert moved == {n for n in at_b if plain(at_a.get(n)) != plain(at_b[n])}
    for c in changes.changes:
        if c.item == "partition":
            assert all(at_a[c.name][k] == old and at_b[c.name][k] == new for k, (old, new) in c.fields.items())
    # The history of one partition that moved: its last entry leaves it as the state has it, and every entry
    # after `a` is a record the diff saw.
    name = sorted(moved)[0]
    h = history_of(src, name)
    topic, _, number = name.rpartition("-")
    assert (h.topic, h.partition) == (topic, int(number))
    assert h.entries[0]["record"] in ("TOPIC_RECORD", "PARTITION_RECORD")
    last = [e for e in h.entries if e["partition"] == int(number)][-1]
    assert last["offset"] == end.state.topic(topic).partitions[int(number)].at.offset
    assert [e["offset"] for e in h.entries] == sorted(e["offset"] for e in h.entries)
    res = run_logtool("metadata", str(path), "--diff", str(a), str(end.last_offset))
    assert res.returncode == 0 and f"partition {name}:" in res.stdout, res.stdout[-2000:]
    res = run_logtool("metadata", str(path), "--history", name, "--format", "jsonl")
    rows = [json.loads(line) for line in res.stdout.splitlines()]
    assert rows[-1]["type"] == "summary" and rows[-1]["records"] == len(h.entries)


# ------------------------------------------------------------------------------------------- random scenarios


class Model:
    """The cluster state by Kafka's delta rules (MetadataDelta and the deltas it calls, PartitionRegistration's
    merge), kept as plain dicts: what the replay must agree with."""

    def __init__(self):
        self.mv = None
        self.features = {}
        self.brokers = {}
        self.topics = {}  # id -> {"name", "parts": {n: {...}}}
        self.names = {}  # name -> id: the last TopicRecord of the name; a removal drops the name (TopicsImage)
        self.configs = {}
        self.acls = set()
        self.scram = set()
        self.quotas = {}
        self.next_pid = None

    def apply(self, name, d):  # noqa: C901 - one branch per record type, as MetadataDelta.replay
        """Apply a record; False where Kafka's delta throws (and nothing changes)."""
        if name == "RegisterBrokerRecord":
            self.brokers[d["brokerId"]] = {"epoch": d["brokerEpoch"], "fenced": d["fenced"],
                                           "shutdown": False, "dirs": list(d.get("logDirs", []))}
        elif name == "UnregisterBrokerRecord":
            self.brokers.pop(d["brokerId"], None)
        elif name in ("FenceBrokerRecord", "UnfenceBrokerRecord", "BrokerRegistrationChangeRecord"):
            bid = d.get("id", d.get("brokerId"))
            b = self.brokers.get(bid)
            if b is None or b["epoch"] != d.get("epoch", d.get("brokerEpoch")):
                return False
            if name == "FenceBrokerRecord":
                b["fenced"] = True
            elif name == "UnfenceBrokerRecord":
                b["fenced"] = False
            else:
                if d.get("fenced", 0):
                    b["fenced"] = d["fenced"] == 1
                if d.get("inControlledShutdown", 0) == 1:
                    b["shutdown"] = True
                if d.get("logDirs"):
                    b["dirs"] = list(d["logDirs"])
        elif name == "TopicRecord":
            old = self.topics.get(d["topicId"])
            if old is not None and self.names.get(old["name"]) == d["topicId"]:
                del self.names[old["name"]]
            self.topics[d["topicId"]] = {"name": d["name"], "parts": {}}
            self.names[d["name"]] = d["topicId"]
        elif name == "RemoveTopicRecord":
            t = self.topics.pop(d["topicId"], None)
            if t is None:
                return False
            self.names.pop(t["name"], None)
            self.configs.pop((2, t["name"]), None)
        elif name == "PartitionRecord":
            t = self.topics.get(d["topicId"])
            if t is None:
                return False
            dirs = d.get("directories") or [MIGRATING] * len(d["replicas"])
            t["parts"][d["partitionId"]] = {
                "replicas": d["replicas"], "isr": d["isr"], "leader": d["leader"], "leader_epoch": d["leaderEpoch"],
                "partition_epoch": d["partitionEpoch"], "directories": dirs,
                "elr": d.get("eligibleLeaderReplicas") or [], "removing": d["removingReplicas"],
                "adding": d["addingReplicas"]}
        elif name == "PartitionChangeRecord":
            t = self.topics.get(d["topicId"])
            p = t["parts"].get(d["partitionId"]) if t else None
            if p is None:
                return False
            if "replicas" in d:
                if d.get("directories"):
                    dirs = d["directories"]
                else:
                    where = dict(zip(p["replicas"], p["directories"]))
                    dirs = [where.get(r, UNASSIGNED) for r in d["replicas"]]
                p["replicas"], p["directories"] = d["replicas"], dirs
            for key, field in (("isr", "isr"), ("elr", "eligibleLeaderReplicas"), ("removing", "removingReplicas"),
                               ("adding", "addingReplicas")):
                if field in d:
                    p[key] = d[field]
            if d.get("leader", -2) != -2:
                p["leader"] = d["leader"]
                p["leader_epoch"] += 1
            p["partition_epoch"] += 1
        elif name == "ConfigRecord":
            key = (d["resourceType"], d["resourceName"])
            values = self.configs.setdefault(key, {})
            if d["value"] is None:
                values.pop(d["name"], None)
            else:
                values[d["name"]] = d["value"]
            if not values:
                del self.configs[key]
        elif name == "FeatureLevelRecord":
            if d["name"] == "metadata.version":
                self.mv = d["featureLevel"]
            elif d["featureLevel"] == 0:
                self.features.pop(d["name"], None)
            else:
                self.features[d["name"]] = d["featureLevel"]
        elif name == "AccessControlEntryRecord":
            self.acls.add(d["id"])
        elif name == "RemoveAccessControlEntryRecord":
            if d["id"] not in self.acls:
                return False
            self.acls.discard(d["id"])
        elif name == "UserScramCredentialRecord":
            self.scram.add((d["mechanism"], d["name"]))
        elif name == "RemoveUserScramCredentialRecord":
            self.scram.discard((d["mechanism"], d["name"]))
        elif name == "ProducerIdsRecord":
            self.next_pid = d["nextProducerId"]
        elif name == "ClearElrRecord":  # TopicDelta.maybeClearElr: a partition with ELR is merged with none
            if d["topicName"] and d["topicName"] not in self.names:
                return False
            for tid, t in self.topics.items():
                if d["topicName"] in ("", t["name"]) and (not d["topicName"] or self.names[t["name"]] == tid):
                    for p in t["parts"].values():
                        if p["elr"]:
                            p["elr"] = []
                            p["partition_epoch"] += 1
        elif name == "ClientQuotaRecord":
            entity = tuple(sorted((e["entityType"], e["entityName"]) for e in d["entity"]))
            q = self.quotas.setdefault(entity, {})
            if d["remove"]:
                q.pop(d["key"], None)
            else:
                q[d["key"]] = d["value"]
            if not q:
                del self.quotas[entity]
        return True

    def agrees_with(self, state):
        """Assert that the replayed state holds what the model does."""
        assert state.metadata_version == self.mv
        assert {n: lvl for n, (lvl, _) in state.features.items()} == self.features
        assert {i: {"epoch": b.epoch, "fenced": b.fenced, "shutdown": b.in_controlled_shutdown,
                    "dirs": sorted(b.log_dirs)} for i, b in state.brokers.items()} == \
            {i: {**b, "dirs": sorted(b["dirs"])} for i, b in self.brokers.items()}
        got = {}
        for tid, t in state.topics.items():
            got[tid] = {"name": t.name, "parts": {n: {
                "replicas": list(p.replicas), "isr": list(p.isr), "leader": p.leader, "leader_epoch": p.leader_epoch,
                "partition_epoch": p.partition_epoch, "directories": list(p.directories), "elr": list(p.elr),
                "removing": list(p.removing), "adding": list(p.adding)} for n, p in t.partitions.items()}}
        assert got == self.topics
        assert state.topic_ids == self.names
        assert state.configs == self.configs
        assert set(state.acls) == self.acls and state.scram == self.scram and state.client_quotas == self.quotas
        assert (state.producer_ids[0] if state.producer_ids else None) == self.next_pid


class Scenario:
    """Random records for a small cluster, a few of which Kafka's loader refuses."""

    def __init__(self, seed):
        self.rng = random.Random(seed)
        self.brokers = {}  # id -> epoch (as the generator believes: sometimes stale on purpose)
        self.topics = {}  # id -> (name, partition count)
        self.partitions = []  # (topic id, partition) a PartitionRecord created
        self.n = 0

    def uuid(self):
        self.n += 1
        return uuid_text(self.rng.getrandbits(120) + (1 << 121) + self.n)

    def replicas(self):
        ids = list(self.brokers) or [0, 1, 2]
        return self.rng.sample(ids, min(len(ids), self.rng.randint(1, 3)))

    def record(self):  # noqa: C901 - one branch per kind of event
        rng = self.rng
        roll = rng.random()
        if roll < 0.08 or not self.brokers:
            b = rng.randrange(5)
            epoch = self.brokers[b] = self.brokers.get(b, 0) + rng.randint(1, 9)
            return "RegisterBrokerRecord", {
                "brokerId": b, "incarnationId": self.uuid(), "brokerEpoch": epoch, "rack": None,
                "endPoints": [{"name": "PLAINTEXT", "host": f"b{b}", "port": 9092, "securityProtocol": 0}],
                "features": [], "fenced": rng.random() < 0.5, "logDirs": [self.uuid()]}, rng.choice([1, 2, 3])
        if roll < 0.2:
            b = rng.choice(list(self.brokers))
            epoch = self.brokers[b] if rng.random() < 0.9 else self.brokers[b] + 1
            kind = rng.choice(["FenceBrokerRecord", "UnfenceBrokerRecord", "BrokerRegistrationChangeRecord"])
            if kind == "BrokerRegistrationChangeRecord":
                data = {"brokerId": b, "brokerEpoch": epoch, "fenced": rng.choice([-1, 0, 1]),
                        "inControlledShutdown": rng.choice([0, 0, 1])}
                if rng.random() < 0.2:
                    data["logDirs"] = [self.uuid()]
                return kind, data, 2
            return kind, {"id": b, "epoch": epoch}, 0
        if roll < 0.23:
            return "UnregisterBrokerRecord", {"brokerId": rng.choice(list(self.brokers)), "brokerEpoch": 0}, 0
        if roll < 0.33 or not self.topics:
            tid = self.uuid()
            name = f"t{rng.randrange(6)}"  # names come back: a topic deleted and created again
            self.topics[tid] = (name, rng.randint(1, 3))
            return "TopicRecord", {"name": name, "topicId": tid}, 0
        if roll < 0.45:
            tid = rng.choice(list(self.topics))
            name, count = self.topics[tid]
            reps = self.replicas()
            version = rng.choice([0, 1, 2])
            data = {"partitionId": rng.randrange(count), "topicId": tid, "replicas": reps,
                    "isr": reps[:rng.randint(1, len(reps))], "removingReplicas": [], "addingReplicas": [],
                    "leader": reps[0], "leaderEpoch": rng.randrange(5), "partitionEpoch": rng.randrange(5)}
            if version >= 1 and rng.random() < 0.7:
                data["directories"] = [self.uuid() for _ in reps]
            if version == 2 and rng.random() < 0.5:
                data["eligibleLeaderReplicas"] = reps[-1:]
            self.partitions.append((tid, data["partitionId"]))
            return "PartitionRecord", data, version
        if roll < 0.72:
            if self.partitions and rng.random() < 0.9:
                tid, number = rng.choice(self.partitions)
            else:
                tid, number = (rng.choice(list(self.topics)) if rng.random() < 0.5 else self.uuid()), rng.randrange(3)
            data = {"partitionId": number, "topicId": tid}
            if rng.random() < 0.6:
                data["isr"] = self.replicas()[:rng.randint(1, 2)]
            if rng.random() < 0.5:
                data["leader"] = rng.choice([-1, *self.brokers])
            if rng.random() < 0.2:
                data["replicas"] = self.replicas()
                if rng.random() < 0.5:
                    data["directories"] = [self.uuid() for _ in data["replicas"]]
            if rng.random() < 0.1:
                data["addingReplicas"] = self.replicas()[:1]
            if rng.random() < 0.15:
                data["eligibleLeaderReplicas"] = self.replicas()[:1]
            return "PartitionChangeRecord", data, rng.choice([0, 1, 2])
        if roll < 0.76:
            tid = rng.choice(list(self.topics)) if rng.random() < 0.9 else self.uuid()
            self.topics.pop(tid, None)
            return "RemoveTopicRecord", {"topicId": tid}, 0
        if roll < 0.84:
            topic = rng.choice([t for t, _ in self.topics.values()] + ["gone"])
            resource = rng.choice([(2, topic), (4, str(rng.randrange(3))), (4, "")])
            return "ConfigRecord", {"resourceType": resource[0], "resourceName": resource[1],
                                    "name": rng.choice(["retention.ms", "cleanup.policy"]),
                                    "value": rng.choice([None, "1", "compact"])}, 0
        if roll < 0.87:
            name = rng.choice(["metadata.version", "group.version", "transaction.version"])
            return "FeatureLevelRecord", {"name": name, "featureLevel": rng.choice([0, 1, 2, 19])}, 0
        if roll < 0.9:
            acl = uuid_text(rng.randrange(1, 6) << 64)
            if rng.random() < 0.5:
                return "RemoveAccessControlEntryRecord", {"id": acl}, 0
            return "AccessControlEntryRecord", {"id": acl, "resourceType": 2, "resourceName": "t0", "patternType": 3,
                                                "principal": "User:a", "host": "*", "operation": 3,
                                                "permissionType": 3}, 0
        if roll < 0.92:
            kind = rng.choice(["UserScramCredentialRecord", "RemoveUserScramCredentialRecord"])
            data = {"name": rng.choice(["alice", "bob"]), "mechanism": rng.choice([1, 2])}
            if kind == "UserScramCredentialRecord":
                data.update(salt=b"s", storedKey=b"k", serverKey=b"v", iterations=4096)
            return kind, data, 0
        if roll < 0.94:
            return "ClientQuotaRecord", {"entity": [{"entityType": "user", "entityName": rng.choice(["a", None])}],
                                         "key": "producer_byte_rate", "value": float(rng.randrange(100)),
                                         "remove": rng.random() < 0.3}, 0
        if roll < 0.95:
            return "ClearElrRecord", {"topicName": rng.choice(["", "t0", "t1", "nope"])}, 0
        if roll < 0.96:
            return "ProducerIdsRecord", {"brokerId": 0, "brokerEpoch": 1, "nextProducerId": rng.randrange(1 << 40)}, 0
        return "NoOpRecord", {}, 0


# Fields that records carry only from a version on (the schemas' "versions"): a record written at a lower one
# does not hold them.
SINCE = {("RegisterBrokerRecord", "logDirs"): 3, ("PartitionRecord", "directories"): 1,
         ("PartitionRecord", "eligibleLeaderReplicas"): 2, ("PartitionChangeRecord", "directories"): 1,
         ("PartitionChangeRecord", "eligibleLeaderReplicas"): 2, ("BrokerRegistrationChangeRecord", "logDirs"): 2,
         ("BrokerRegistrationChangeRecord", "inControlledShutdown"): 1}


def at_version(name: str, data: dict, version: int) -> dict:
    return {k: v for k, v in data.items() if SINCE.get((name, k), 0) <= version}


@pytest.mark.parametrize("seed", range(20))
def test_random_records_replay_as_the_model_of_kafkas_rules(tmp_path, seed):
    scenario, model = Scenario(seed), Model()
    batches, batch, refused, offset, built = [], [], set(), 0, []
    txn: list | None = None
    for _ in range(500):
        name, data, version = scenario.record()
        data = at_version(name, data, version)
        if txn is None and scenario.rng.random() < 0.03:  # a metadata transaction: applied at its end, or dropped
            batch.append(metadata_value("BeginTransactionRecord", {}))
            offset += 1
            txn = []
        value = metadata_value(name, data, version)
        built.append((offset, name, data))
        batch.append(value)
        if txn is not None:
            txn.append((offset, name, data))
        elif not model.apply(name, data):
            refused.add(offset)
        offset += 1
        if txn is not None and (len(txn) > 4 or scenario.rng.random() < 0.1):
            commit = scenario.rng.random() < 0.7
            batch.append(metadata_value("EndTransactionRecord" if commit else "AbortTransactionRecord", {}))
            offset += 1
            for at, n, d in txn if commit else ():
                if not model.apply(n, d):
                    refused.add(at)
            txn = None
        if scenario.rng.random() < 0.4:
            batches.append(batch)
            batch = []
    batches.append(batch)
    path = write_metadata_log(tmp_path, batches)
    r = replay(open_source(path))
    assert {p.offset for p in r.problems} == refused and {p.kind for p in r.problems} <= {RECORD_REFUSED}
    model.agrees_with(r.state)
    assert (r.open_transaction is not None) == (txn is not None)
    # A sample of the records read back the way `dump --decoder` reads them: the fields as they were built.
    _rc, out, _err = dump(path, "--format", "jsonl")
    decoded = {o["offset"]: o["value"] for o in objects(out) if o["type"] == "record"}
    for at, name, data in random.Random(seed).sample(built, 40):
        value = decoded[at]
        assert value["type"] == re.sub(r"(?<=[a-z])(?=[A-Z])", "_", name).upper()
        for k, v in data.items():
            if k not in value["data"]:  # a tagged field at its default is not printed (nor written)
                assert v in (0, -1, -2, None, []), (k, v)
                continue
            assert value["data"][k] == (base64.b64encode(v).decode() if isinstance(v, bytes) else v)


# ------------------------------------------------------------------------------------------- hostile input


def _small_log(tmp_path: Path) -> Path:
    t1 = uuid_text(77)
    return write_metadata_log(tmp_path, [
        [metadata_value("FeatureLevelRecord", {"name": "metadata.version", "featureLevel": 19})],
        [metadata_value("TopicRecord", {"name": "orders", "topicId": t1}),
         metadata_value("PartitionRecord", {"partitionId": 0, "topicId": t1, "replicas": [1], "isr": [1],
                                            "removingReplicas": [], "addingReplicas": [], "leader": 1,
                                            "leaderEpoch": 0, "partitionEpoch": 0}, 0)],
        [metadata_value("PartitionChangeRecord", {"partitionId": 0, "topicId": uuid_text(78), "leader": 2}, 0)],
        [bytes([1, 2, 0, 9]) + b"or", bytes([1, 99, 0])],
        [metadata_value("PartitionChangeRecord", {"partitionId": 0, "topicId": t1, "isr": [1], "leader": 1}, 0)],
    ])


def test_records_kafka_refuses_or_cannot_read_are_problems(tmp_path):
    path = _small_log(tmp_path)
    r = replay(open_source(path))
    assert [(p.kind, p.offset) for p in r.problems] == [(RECORD_REFUSED, 3), (RECORD_UNREADABLE, 4),
                                                        (RECORD_UNREADABLE, 5)]
    assert r.state.topic("orders").partitions[0].leader_epoch == 1 and r.exit_code() == 4
    res = run_logtool("metadata", str(path.parent))
    assert res.returncode == 4 and "METADATA_RECORD_REFUSED" in res.stdout and "Traceback" not in res.stderr
    h = history_of(open_source(path), "orders")
    assert [e["offset"] for e in h.entries] == [1, 2, 6]


def test_a_torn_tail_stops_the_replay_where_recovery_would(tmp_path):
    path = _small_log(tmp_path)
    log = path / "00000000000000000000.log"
    data = log.read_bytes()
    log.write_bytes(data[:-7])
    r = replay(open_source(path))
    assert r.problems[-1].kind is TORN_BATCH and r.last_offset == 5
    assert r.state.topic("orders").partitions[0].leader_epoch == 0
    res = run_logtool("metadata", str(path), "--format", "jsonl")
    rows = [json.loads(line) for line in res.stdout.splitlines()]
    assert res.returncode == 4 and rows[-1]["exit_code"] == 4
    assert any(row["type"] == "problem" and row["kind"] == "TORN_BATCH" for row in rows)


def test_a_garbage_snapshot_is_passed_over_for_the_log(tmp_path):
    path = _small_log(tmp_path)
    rng = random.Random(5)
    (path / "00000000000000000003-0000000001.checkpoint").write_bytes(rng.randbytes(300))
    r = replay(open_source(path))
    assert r.snapshot is None and r.problems[0].kind == SNAPSHOT_UNUSABLE
    assert r.state.topic("orders") is not None and r.last_offset == 6
    # Given alone, it is a problem too, and a one-line answer, not a traceback.
    res = run_logtool("metadata", str(path / "00000000000000000003-0000000001.checkpoint"))
    assert res.returncode == 4 and "SNAPSHOT_UNUSABLE" in res.stdout and "Traceback" not in res.stderr


def test_a_real_snapshot_cut_short_falls_back_to_an_older_one(tmp_path):
    src = next(p for p in REAL if len(open_source(p).snapshots) >= 2 and open_source(p).partition.segments)
    copy = tmp_path / "__cluster_metadata-0"
    shutil.copytree(src, copy)
    newest = sorted(copy.glob("*.checkpoint"))[-1]
    newest.write_bytes(newest.read_bytes()[:-20])
    r = replay(open_source(copy))
    assert r.problems[0].kind == SNAPSHOT_UNUSABLE and r.snapshot is not None
    assert r.snapshot.path.name < newest.name
    assert plain(r.state.to_dict()) == plain(replay(open_source(src)).state.to_dict())


@pytest.mark.parametrize("seed", range(6))
def test_random_bytes_never_raise(tmp_path, seed):
    rng = random.Random(seed)
    part = tmp_path / "__cluster_metadata-0"
    part.mkdir()
    (part / "00000000000000000000.log").write_bytes(rng.randbytes(rng.randrange(0, 3000)))
    (part / "00000000000000000009-0000000001.checkpoint").write_bytes(rng.randbytes(rng.randrange(0, 500)))
    r = replay(open_source(part))
    assert r.exit_code() in (0, 4)
    for value in (rng.randbytes(rng.randrange(0, 60)) for _ in range(300)):
        try:
            read_metadata_record(bytes([1, rng.randrange(40), rng.randrange(4)]) + value)
        except Exception as e:  # noqa: BLE001 - the one exception allowed is the decoder's own
            assert type(e).__name__ == "MessageError", e


def test_an_absurd_length_is_refused_without_allocating(tmp_path):
    value = bytes([1, 3, 1]) + b"\x00" * 20 + b"\xff\xff\xff\x7f"  # a replica array of 2^31 elements
    with pytest.raises(Exception, match="allocate|runs past|deserialize"):
        read_metadata_record(value)


@pytest.mark.slow
@pytest.mark.slow
def test_the_command_says_what_is_wrong_with_its_arguments(tmp_path):
    assert run_logtool("metadata", str(tmp_path / "missing")).returncode == 8
    res = run_logtool("metadata", str(tmp_path), "--format", "json")
    assert res.returncode == 8 and json.loads(res.stdout)["type"] == "error"
    path = _small_log(tmp_path)
    assert run_logtool("metadata", str(path), "--at", "1", "--at-time", "0").returncode == 16
    assert run_logtool("metadata", str(path), "--diff", "1").returncode == 16
    assert run_logtool("metadata", str(path), "--diff", "1", "yesterday").returncode == 16
    with pytest.raises(MetadataPathError):
        open_source(tmp_path / "nothing")


def test_a_segment_that_cannot_be_read_is_an_operational_error(tmp_path):
    path = _small_log(tmp_path)
    (path / "00000000000000000100.log").symlink_to(tmp_path / "gone.log")  # a link to nothing
    r = replay(open_source(path))
    assert r.problems[-1].kind is UNREADABLE and r.exit_code() == 8
    assert r.state.topic("orders") is not None  # what came before it is replayed
    res = run_logtool("metadata", str(path), "--format", "json")
    assert res.returncode == 8 and json.loads(res.stdout)["exit_code"] == 8
