"""The cluster state KRaft metadata records build, and the rules each record applies by.

The rules are Kafka's, transcribed from apache/kafka `metadata/src/main/java/org/apache/kafka/image/`
(`MetadataDelta.replay` dispatches each record type to `FeaturesDelta`, `ClusterDelta`, `TopicsDelta` and
`TopicDelta`, `ConfigurationsDelta`, `ClientQuotasDelta`, `ProducerIdsDelta`, `AclsDelta`, `ScramDelta`,
`DelegationTokenDelta`), `metadata/PartitionRegistration` (a PartitionRecord, and `merge` of a
PartitionChangeRecord), `metadata/BrokerRegistration` with `BrokerRegistrationFencingChange` and
`BrokerRegistrationInControlledShutdownChange`, and `common/DirectoryId`. Where Kafka's delta throws (its
loader's fault handler then reports the record and goes on without it), `apply` raises `Refused` and changes
nothing.

Records are applied one after the other to one mutable state; Kafka gathers them into deltas over an
immutable image, which gives the same state record by record. Each item keeps the `Stamp` of the record
that last changed it. The state holds what the cluster holds (its size follows the number of brokers, topics,
partitions, configs, ACLs), never the records.
"""
from __future__ import annotations

import base64
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

# Reserved directory ids (DirectoryId: the first 100 Uuids are reserved). A replica whose directory is
# MIGRATING was placed before directories were recorded; UNASSIGNED: not yet placed; LOST: its dir is offline.
MIGRATING = "AAAAAAAAAAAAAAAAAAAAAA"  # Uuid(0, 0)
UNASSIGNED = "AAAAAAAAAAAAAAAAAAAAAQ"  # Uuid(0, 1)
LOST = "AAAAAAAAAAAAAAAAAAAAAg"  # Uuid(0, 2)
RESERVED_DIRECTORIES = {MIGRATING: "MIGRATING", UNASSIGNED: "UNASSIGNED", LOST: "LOST"}

NO_LEADER = -1
NO_LEADER_CHANGE = -2  # a PartitionChangeRecord's Leader when the leader stays
TOPIC_RESOURCE = 2  # ConfigResource.Type: 2 TOPIC, 4 BROKER, 8 BROKER_LOGGER, 16 CLIENT_METRICS, 32 GROUP
RESOURCE_TYPES = {2: "topic", 4: "broker", 8: "broker_logger", 16: "client_metrics", 32: "group"}
SECURITY_PROTOCOLS = {0: "PLAINTEXT", 1: "SSL", 2: "SASL_PLAINTEXT", 3: "SASL_SSL"}
LEADER_RECOVERY_STATES = {0: "RECOVERED", 1: "RECOVERING"}
ZK_MIGRATION_STATES = {0: "NONE", 1: "PRE_MIGRATION", 2: "MIGRATION", 3: "POST_MIGRATION", 4: "ZK"}
SCRAM_MECHANISMS = {1: "SCRAM-SHA-256", 2: "SCRAM-SHA-512"}
METADATA_VERSION = "metadata.version"
KRAFT_VERSION = "kraft.version"
# metadata.version's feature levels (server-common MetadataVersion): 1 is 3.0-IV1, 7 is 3.3-IV3 ...
_RELEASES = ["3.0-IV1", "3.1-IV0", "3.2-IV0", "3.3-IV0", "3.3-IV1", "3.3-IV2", "3.3-IV3", "3.4-IV0", "3.5-IV0",
             "3.5-IV1", "3.5-IV2", "3.6-IV0", "3.6-IV1", "3.6-IV2", "3.7-IV0", "3.7-IV1", "3.7-IV2", "3.7-IV3",
             "3.7-IV4", "3.8-IV0", "3.9-IV0", "4.0-IV0", "4.0-IV1", "4.0-IV2", "4.0-IV3", "4.1-IV0", "4.1-IV1",
             "4.2-IV0", "4.2-IV1"]


def metadata_version_name(level: int) -> str:
    """`3.7-IV4` for feature level 19; `level N` for one this table does not know."""
    return _RELEASES[level - 1] if 1 <= level <= len(_RELEASES) else f"level {level}"


def directory_name(directory: str) -> str:
    """A directory id as shown: its name when it is one of the reserved ids, else the id."""
    return RESERVED_DIRECTORIES.get(directory, directory)


class Refused(Exception):
    """Kafka's metadata loader would not apply the record: what its delta throws, in logtool's words."""


class Stamp(NamedTuple):
    """Where an item last changed: the record's offset and timestamp. `snapshot`: it came from a snapshot
    whose last contained record is at `offset` (its timestamp the snapshot's): it changed there or before."""

    offset: int
    timestamp: int
    snapshot: bool = False

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"offset": self.offset, "timestamp": self.timestamp}
        if self.snapshot:
            d["in_snapshot"] = True
        return d


class PartitionState:
    """One partition's registration (PartitionRegistration): arrays as tuples, `directories` one per replica."""

    __slots__ = ("replicas", "directories", "isr", "removing", "adding", "leader", "recovery", "leader_epoch",
                 "partition_epoch", "elr", "last_known_elr", "at")

    def __init__(self, replicas: tuple[int, ...], directories: tuple[str, ...], isr: tuple[int, ...],
                 removing: tuple[int, ...], adding: tuple[int, ...], leader: int, recovery: int, leader_epoch: int,
                 partition_epoch: int, elr: tuple[int, ...], last_known_elr: tuple[int, ...], at: Stamp) -> None:
        self.replicas, self.directories, self.isr, self.removing, self.adding = (replicas, directories, isr,
                                                                                 removing, adding)
        self.leader, self.recovery, self.leader_epoch, self.partition_epoch = (leader, recovery, leader_epoch,
                                                                               partition_epoch)
        self.elr, self.last_known_elr, self.at = elr, last_known_elr, at

    def directory(self, node: int) -> str | None:
        """The directory of `node`'s replica; None when it holds none."""
        for replica, directory in zip(self.replicas, self.directories):
            if replica == node:
                return directory
        return None

    def to_dict(self) -> dict[str, Any]:
        return {"replicas": list(self.replicas), "isr": list(self.isr), "leader": self.leader,
                "leader_epoch": self.leader_epoch, "partition_epoch": self.partition_epoch,
                "leader_recovery_state": LEADER_RECOVERY_STATES.get(self.recovery, str(self.recovery)),
                "directories": [directory_name(d) for d in self.directories],
                "removing_replicas": list(self.removing), "adding_replicas": list(self.adding),
                "eligible_leader_replicas": list(self.elr), "last_known_elr": list(self.last_known_elr),
                "changed": self.at.to_dict()}


class TopicState:
    __slots__ = ("name", "id", "partitions", "at")

    def __init__(self, name: str, topic_id: str, at: Stamp) -> None:
        self.name, self.id, self.at = name, topic_id, at
        self.partitions: dict[int, PartitionState] = {}


def _feature_map(features: list[dict[str, Any]]) -> dict[str, tuple[int, int]]:
    """A registration's supported features: name -> (min, max) version."""
    return {f["name"]: (f["minSupportedVersion"], f["maxSupportedVersion"]) for f in features}


def _features(features: dict[str, tuple[int, int]]) -> dict[str, dict[str, int]]:
    return {n: {"min": lo, "max": hi} for n, (lo, hi) in sorted(features.items())}


class BrokerState:
    """A broker's registration (BrokerRegistration)."""

    __slots__ = ("id", "epoch", "incarnation_id", "endpoints", "features", "rack", "fenced", "in_controlled_shutdown",
                 "migrating_zk_broker", "log_dirs", "at")

    def __init__(self, data: dict, at: Stamp) -> None:
        self.id: int = data["brokerId"]
        self.epoch: int = data["brokerEpoch"]
        self.incarnation_id: str = data["incarnationId"]
        self.endpoints = _endpoint_map(data["endPoints"])
        self.features = _feature_map(data["features"])
        self.rack: str | None = data["rack"]
        self.fenced: bool = data["fenced"]
        self.in_controlled_shutdown: bool = data.get("inControlledShutdown", False)
        self.migrating_zk_broker: bool = data.get("isMigratingZkBroker", False)
        self.log_dirs: tuple[str, ...] = uuid_sorted(data.get("logDirs") or ())
        self.at = at

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "epoch": self.epoch, "incarnation_id": self.incarnation_id,
                "fenced": self.fenced, "in_controlled_shutdown": self.in_controlled_shutdown,
                "endpoints": _endpoints(self.endpoints), "rack": self.rack, "log_dirs": list(self.log_dirs),
                "migrating_zk_broker": self.migrating_zk_broker,
                "features": _features(self.features),
                "changed": self.at.to_dict()}


class ControllerState:
    """A controller's registration (RegisterControllerRecord, KIP-919)."""

    __slots__ = ("id", "incarnation_id", "zk_migration_ready", "endpoints", "features", "at")

    def __init__(self, data: dict, at: Stamp) -> None:
        self.id: int = data["controllerId"]
        self.incarnation_id: str = data["incarnationId"]
        self.zk_migration_ready: bool = data["zkMigrationReady"]
        self.endpoints = _endpoint_map(data["endPoints"])
        self.features = _feature_map(data["features"])
        self.at = at

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "incarnation_id": self.incarnation_id, "zk_migration_ready": self.zk_migration_ready,
                "endpoints": _endpoints(self.endpoints),
                "features": _features(self.features),
                "changed": self.at.to_dict()}


def uuid_sorted(ids: list[str] | tuple[str, ...]) -> tuple[str, ...]:
    """Uuids in Kafka's order (`Uuid.compareTo`: the signed high 64 bits, then the signed low ones), as a
    broker registration keeps its directories."""
    def key(text: str) -> tuple[int, int]:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
        return int.from_bytes(raw[:8], "big", signed=True), int.from_bytes(raw[8:16], "big", signed=True)

    try:
        return tuple(sorted(ids, key=key))
    except ValueError:  # not base64 (the schema reader gives only Uuids: never here)
        return tuple(ids)


def _endpoint_map(endpoints: list[dict]) -> tuple[tuple[str, str, int, int], ...]:
    """A registration's endpoints by listener name (Kafka keeps them in a map: their order means nothing)."""
    by_name = {e["name"]: (e["name"], e["host"], e["port"], e["securityProtocol"]) for e in endpoints}
    return tuple(by_name[n] for n in sorted(by_name))


def _endpoints(endpoints: tuple[tuple[str, str, int, int], ...]) -> list[dict[str, Any]]:
    return [{"name": n, "host": h, "port": p, "security_protocol": SECURITY_PROTOCOLS.get(s, str(s))}
            for n, h, p, s in endpoints]


class Placement(NamedTuple):
    """A replica the metadata assigns to a node: its topic, partition, topic id and directory."""

    topic: str
    partition: int
    topic_id: str
    directory: str


def _ints(values: list[int] | None) -> tuple[int, ...]:
    return tuple(values) if values else ()


class ClusterState:
    """The cluster as the records so far describe it (Kafka's MetadataImage), and the rule of each record."""

    def __init__(self) -> None:
        self.metadata_version: int | None = None
        self.metadata_version_at: Stamp | None = None
        self.features: dict[str, tuple[int, Stamp]] = {}  # finalized features other than metadata.version
        self.zk_migration_state: int | None = None
        self.brokers: dict[int, BrokerState] = {}
        self.controllers: dict[int, ControllerState] = {}
        self.topics: dict[str, TopicState] = {}  # by topic id
        self.topic_ids: dict[str, str] = {}  # name -> id
        self.configs: dict[tuple[int, str], dict[str, str]] = {}
        self.configs_at: dict[tuple[int, str], Stamp] = {}
        self.client_quotas: dict[tuple[tuple[str, str | None], ...], dict[str, float]] = {}
        self.producer_ids: tuple[int, Stamp] | None = None  # the next producer id to hand out (ProducerIdsImage)
        self.acls: dict[str, Stamp] = {}  # ACL id -> where it was added
        self.scram: set[tuple[int, str]] = set()  # (mechanism, user)
        self.delegation_tokens: set[str] = set()
        self._rules: dict[int, Callable[[dict, Stamp], None]] = {
            0: self._register_broker, 1: self._unregister_broker, 2: self._topic, 3: self._partition,
            4: self._config, 5: self._partition_change, 7: self._fence, 8: self._unfence, 9: self._remove_topic,
            10: self._delegation_token, 11: self._scram, 12: self._feature_level, 14: self._client_quota,
            15: self._producer_ids, 17: self._broker_change, 18: self._acl, 19: self._remove_acl, 20: _nothing,
            21: self._zk_migration, 22: self._remove_scram, 26: self._remove_delegation_token,
            27: self._register_controller, 28: self._clear_elr, 29: self._unregister_controller,
        }

    # ------------------------------------------------------------------------------------------ applying

    def apply(self, api_key: int, data: dict, at: Stamp) -> None:
        """Apply one record (its type and decoded fields) as MetadataDelta.replay would. Raises Refused, having
        changed nothing, where Kafka's delta throws."""
        rule = self._rules.get(api_key)
        if rule is None:  # 6 AccessControlRecord, 16 RemoveFeatureLevelRecord: records of unreleased builds
            raise Refused(f"released Kafka replays no record of type {api_key} (MetadataDelta: \"Unknown metadata "
                          f"record type\")")
        rule(data, at)

    def _register_broker(self, data: dict, at: Stamp) -> None:
        broker = BrokerState(data, at)
        self.brokers[broker.id] = broker

    def _unregister_broker(self, data: dict, at: Stamp) -> None:
        self.brokers.pop(data["brokerId"], None)

    def _registered(self, broker_id: int, epoch: int, action: str) -> BrokerState:
        broker = self.brokers.get(broker_id)
        if broker is None:
            raise Refused(f"Tried to {action} broker {broker_id}, but that broker was not registered.")
        if broker.epoch != epoch:
            raise Refused(f"Tried to {action} broker {broker_id}, but the given epoch, {epoch}, did not match the "
                          f"current broker epoch, {broker.epoch}")
        return broker

    def _fence(self, data: dict, at: Stamp) -> None:
        broker = self._registered(data["id"], data["epoch"], "fence")
        if not broker.fenced:
            broker.fenced, broker.at = True, at

    def _unfence(self, data: dict, at: Stamp) -> None:
        broker = self._registered(data["id"], data["epoch"], "unfence")
        if broker.fenced:
            broker.fenced, broker.at = False, at

    def _broker_change(self, data: dict, at: Stamp) -> None:
        broker = self._registered(data["brokerId"], data["brokerEpoch"], "change")
        fenced, shutdown = data.get("fenced", 0), data.get("inControlledShutdown", 0)
        if fenced not in (-1, 0, 1):
            raise Refused(f"Unable to replay the record: unknown value for fenced field: {fenced}")
        if shutdown not in (0, 1):
            raise Refused(f"Unable to replay the record: unknown value for inControlledShutdown field: {shutdown}")
        new_fenced = broker.fenced if fenced == 0 else fenced == 1
        new_shutdown = broker.in_controlled_shutdown or shutdown == 1
        dirs = uuid_sorted(data.get("logDirs") or ()) or broker.log_dirs  # an empty list changes nothing
        if (new_fenced, new_shutdown, dirs) != (broker.fenced, broker.in_controlled_shutdown, broker.log_dirs):
            broker.fenced, broker.in_controlled_shutdown, broker.log_dirs, broker.at = (new_fenced, new_shutdown,
                                                                                        dirs, at)

    def _register_controller(self, data: dict, at: Stamp) -> None:
        controller = ControllerState(data, at)
        self.controllers[controller.id] = controller

    def _unregister_controller(self, data: dict, at: Stamp) -> None:
        self.controllers.pop(data["controllerId"], None)

    def _topic(self, data: dict, at: Stamp) -> None:
        name, topic_id = data["name"], data["topicId"]
        old = self.topics.get(topic_id)  # Kafka starts it anew: a TopicRecord for a known id drops its partitions
        if old is not None and self.topic_ids.get(old.name) == topic_id:
            del self.topic_ids[old.name]
        self.topics[topic_id] = TopicState(name, topic_id, at)
        self.topic_ids[name] = topic_id

    def _remove_topic(self, data: dict, at: Stamp) -> None:
        topic = self.topics.pop(data["topicId"], None)
        if topic is None:
            raise Refused(f"Unable to delete topic with id {data['topicId']}: no such topic found.")
        # TopicsImage drops the name, whichever topic it names (two topics of one name: only a broken log)
        self.topic_ids.pop(topic.name, None)
        key = (TOPIC_RESOURCE, topic.name)  # ConfigurationsDelta drops the topic's configs with it
        self.configs.pop(key, None)
        self.configs_at.pop(key, None)

    def _partition(self, data: dict, at: Stamp) -> None:
        topic = self.topics.get(data["topicId"])
        if topic is None:  # TopicsDelta makes a TopicDelta of no image and fails on it (NullPointerException)
            raise Refused(f"PartitionRecord for partition {data['partitionId']} of topic id {data['topicId']}, "
                          f"which no TopicRecord created")
        replicas = _ints(data["replicas"])
        directories = tuple(data.get("directories") or ())
        if directories and len(directories) != len(replicas):
            raise Refused(f"InvalidReplicaDirectoriesException: {len(replicas)} replicas but {len(directories)} "
                          f"directories")
        recovery = data.get("leaderRecoveryState", 0)
        if recovery not in LEADER_RECOVERY_STATES:
            raise Refused(f"Unknown leader recovery state {recovery}")
        topic.partitions[data["partitionId"]] = PartitionState(
            replicas, directories or (MIGRATING,) * len(replicas), _ints(data["isr"]),
            _ints(data["removingReplicas"]), _ints(data["addingReplicas"]), data["leader"], recovery,
            data["leaderEpoch"], data["partitionEpoch"], _ints(data.get("eligibleLeaderReplicas")),
            _ints(data.get("lastKnownElr")), at)

    def _partition_change(self, data: dict, at: Stamp) -> None:
        topic = self.topics.get(data["topicId"])
        p = topic.partitions.get(data["partitionId"]) if topic is not None else None
        if p is None:
            raise Refused(f"Unable to find partition {data['topicId']}:{data['partitionId']}")
        merge(p, data, at)

    def _clear_elr(self, data: dict, at: Stamp) -> None:
        name = data["topicName"]
        if name:
            topic_id = self.topic_ids.get(name)
            if topic_id is None:
                raise Refused(f"Unable to clear elr for topic with name {name}: no such topic found.")
            topics = [self.topics[topic_id]]
        else:
            topics = list(self.topics.values())
        clear: dict[str, list[int]] = {"eligibleLeaderReplicas": [], "lastKnownElr": []}
        for topic in topics:
            for p in topic.partitions.values():
                if p.elr or p.last_known_elr:  # TopicDelta.maybeClearElr: a merge, so the partition epoch moves
                    merge(p, clear, at)

    def _config(self, data: dict, at: Stamp) -> None:
        key = (data["resourceType"], data["resourceName"])
        values = self.configs.get(key)
        if data["value"] is None:
            if values is None or data["name"] not in values:
                return
            del values[data["name"]]
            if not values:
                del self.configs[key]
                self.configs_at.pop(key, None)
                return
        else:
            if values is None:
                values = self.configs[key] = {}
            values[data["name"]] = data["value"]
        self.configs_at[key] = at

    def _feature_level(self, data: dict, at: Stamp) -> None:
        name, level = data["name"], data["featureLevel"]
        if name == METADATA_VERSION:
            self.metadata_version, self.metadata_version_at = level, at
        elif name == KRAFT_VERSION:
            return  # kraft.version is the quorum's, from its control records (KAFKA-18979)
        elif level == 0:
            self.features.pop(name, None)
        else:
            self.features[name] = (level, at)

    def _zk_migration(self, data: dict, at: Stamp) -> None:
        self.zk_migration_state = data["zkMigrationState"]

    def _client_quota(self, data: dict, at: Stamp) -> None:
        entity = tuple(sorted((e["entityType"], e["entityName"]) for e in data["entity"]))
        quotas = self.client_quotas.get(entity)
        if data["remove"]:
            if quotas is not None:
                quotas.pop(data["key"], None)
                if not quotas:
                    del self.client_quotas[entity]
        else:
            if quotas is None:
                quotas = self.client_quotas[entity] = {}
            quotas[data["key"]] = data["value"]

    def _producer_ids(self, data: dict, at: Stamp) -> None:
        self.producer_ids = (data["nextProducerId"], at)  # the broker the block went to is not kept (nor snapshotted)

    def _acl(self, data: dict, at: Stamp) -> None:
        self.acls[data["id"]] = at

    def _remove_acl(self, data: dict, at: Stamp) -> None:
        if self.acls.pop(data["id"], None) is None:
            raise Refused(f"Failed to find existing ACL with ID {data['id']} in either image or changes")

    def _scram(self, data: dict, at: Stamp) -> None:
        self.scram.add((data["mechanism"], data["name"]))

    def _remove_scram(self, data: dict, at: Stamp) -> None:
        self.scram.discard((data["mechanism"], data["name"]))

    def _delegation_token(self, data: dict, at: Stamp) -> None:
        self.delegation_tokens.add(data["tokenId"])

    def _remove_delegation_token(self, data: dict, at: Stamp) -> None:
        self.delegation_tokens.discard(data["tokenId"])

    # ------------------------------------------------------------------------------------------ asking

    def topic_id(self, name: str) -> str | None:
        """The id of the topic of this name, None when there is none."""
        return self.topic_ids.get(name)

    def topic(self, name: str) -> TopicState | None:
        topic_id = self.topic_ids.get(name)
        return self.topics.get(topic_id) if topic_id is not None else None

    def placements(self, node: int, directory: str | None = None) -> Iterator[Placement]:
        """The replicas assigned to `node`, with the directory each is assigned to; with `directory`, only
        those assigned to it or to none in particular (MIGRATING, UNASSIGNED: the broker places them)."""
        for topic in self.topics.values():
            for number, p in topic.partitions.items():
                if node in p.replicas:
                    where = p.directory(node) or MIGRATING
                    if directory is None or where == directory or where in (MIGRATING, UNASSIGNED):
                        yield Placement(topic.name, number, topic.id, where)

    def partition_count(self) -> int:
        return sum(len(t.partitions) for t in self.topics.values())

    def to_dict(self) -> dict[str, Any]:
        """The state as JSON's types: every item with where it last changed."""
        features = {n: {"level": lvl, "changed": at.to_dict()} for n, (lvl, at) in sorted(self.features.items())}
        mv = None
        if self.metadata_version is not None and self.metadata_version_at is not None:
            mv = {"level": self.metadata_version, "version": metadata_version_name(self.metadata_version),
                  "changed": self.metadata_version_at.to_dict()}
        topics = []
        for t in sorted(self.topics.values(), key=lambda t: (t.name, t.id)):
            own = self.configs.get((TOPIC_RESOURCE, t.name), {})
            topics.append({"name": t.name, "id": t.id, "changed": t.at.to_dict(),
                           "configs": dict(sorted(own.items())),
                           "partitions": [{"partition": n, **p.to_dict()} for n, p in sorted(t.partitions.items())]})
        configs = [{"resource_type": RESOURCE_TYPES.get(rt, str(rt)), "resource_name": rn,
                    "configs": dict(sorted(v.items())), "changed": self.configs_at[(rt, rn)].to_dict()}
                   for (rt, rn), v in sorted(self.configs.items()) if rt != TOPIC_RESOURCE or rn not in self.topic_ids]
        facts = self.facts()
        return {"metadata_version": mv, "features": features, "zk_migration_state": facts["zk_migration_state"],
                "brokers": [b.to_dict() for _, b in sorted(self.brokers.items())],
                "controllers": [c.to_dict() for _, c in sorted(self.controllers.items())],
                "topics": topics, "configs": configs, "producer_ids": facts["producer_ids"],
                "counts": facts["counts"]}

    def facts(self) -> dict[str, Any]:
        """What the state says in a few words (its summary's): the ZooKeeper migration's state, the next
        producer id, and how many of each item it holds; without the items themselves."""
        pids = None
        if self.producer_ids is not None:
            nxt, at = self.producer_ids
            pids = {"next_producer_id": nxt, "changed": at.to_dict()}
        return {"zk_migration_state": None if self.zk_migration_state is None else
                ZK_MIGRATION_STATES.get(self.zk_migration_state, str(self.zk_migration_state)),
                "producer_ids": pids,
                "counts": {"brokers": len(self.brokers), "controllers": len(self.controllers),
                           "topics": len(self.topics), "partitions": self.partition_count(), "acls": len(self.acls),
                           "client_quota_entities": len(self.client_quotas),
                           "client_quotas": sum(len(q) for q in self.client_quotas.values()),
                           "scram_credentials": len(self.scram), "delegation_tokens": len(self.delegation_tokens)}}


def _nothing(data: dict, at: Stamp) -> None:
    """NoOpRecord: it moves only the offset the state stands at."""


# A PartitionChangeRecord of these fields only (most of them: an ISR shrinks or grows, a leader is elected) moves
# no replica and no directory: `merge` applies it without the general rules' lookups.
_ISR_OR_LEADER = frozenset(("partitionId", "topicId", "isr", "leader"))


def merge(p: PartitionState, data: dict, at: Stamp) -> None:
    """PartitionRegistration.merge: a PartitionChangeRecord's fields onto the partition. Absent fields keep the
    partition's; a leader (also the same one) moves the leader epoch; every change moves the partition epoch.
    Raises Refused, having changed nothing, where Kafka throws."""
    if data.keys() <= _ISR_OR_LEADER and p.directories and len(p.directories) == len(p.replicas):
        # what the rules below come to for such a record (_merged_directories keeps the partition's)
        isr, leader = data.get("isr"), data.get("leader", NO_LEADER_CHANGE)
        if isr is not None:
            p.isr = tuple(isr)
        if leader != NO_LEADER_CHANGE:
            p.leader = leader
            p.leader_epoch += 1
        p.partition_epoch += 1
        p.at = at
        return
    replicas = data.get("replicas")
    new_replicas = p.replicas if replicas is None else tuple(replicas)
    new_dirs = _merged_directories(p, replicas, data.get("directories"))
    recovery = data.get("leaderRecoveryState", -1)
    if recovery != -1 and recovery not in LEADER_RECOVERY_STATES:
        raise Refused(f"Unknown leader recovery state {recovery}")
    leader = data.get("leader", NO_LEADER_CHANGE)
    isr, removing, adding = data.get("isr"), data.get("removingReplicas"), data.get("addingReplicas")
    elr, last_known = data.get("eligibleLeaderReplicas"), data.get("lastKnownElr")
    p.replicas, p.directories = new_replicas, new_dirs
    if isr is not None:
        p.isr = tuple(isr)
    if removing is not None:
        p.removing = tuple(removing)
    if adding is not None:
        p.adding = tuple(adding)
    if leader != NO_LEADER_CHANGE:
        p.leader = leader
        p.leader_epoch += 1
    if recovery != -1:
        p.recovery = recovery
    if elr is not None:
        p.elr = tuple(elr)
    if last_known is not None:
        p.last_known_elr = tuple(last_known)
    p.partition_epoch += 1
    p.at = at


def _merged_directories(p: PartitionState, replicas: list[int] | None,
                        directories: list[str] | None) -> tuple[str, ...]:
    """The directories after a change: the record's; else, where it moves replicas, each kept replica's own
    and UNASSIGNED for a new one (DirectoryId.createDirectoriesFrom); else the partition's."""
    if directories:
        if replicas is not None and len(replicas) != len(directories):
            raise Refused(f"InvalidReplicaDirectoriesException: {len(replicas)} replicas but {len(directories)} "
                          f"directories")
        new_dirs = tuple(directories)
    elif replicas is not None:
        if len(set(p.replicas)) != len(p.replicas):
            raise Refused("IllegalArgumentException: Duplicate broker ID in assignment")
        old = dict(zip(p.replicas, p.directories))
        new_dirs = tuple(old.get(r, UNASSIGNED) for r in replicas)
    else:
        new_dirs = p.directories
    if not new_dirs:
        new_dirs = (MIGRATING,) * len(p.replicas)  # as Kafka: sized by the replicas before the change
    if new_dirs and len(new_dirs) != (len(p.replicas) if replicas is None else len(replicas)):
        raise Refused("IllegalArgumentException: The lengths for replicas and directories do not match.")
    return new_dirs
