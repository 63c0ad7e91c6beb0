"""A KRaft log dir held against the metadata its node keeps: `__cluster_metadata-0` in the log dir, replayed to its
end (the newest whole snapshot, then the log, as `logtool metadata` replays it), against the partition dirs,
their `partition.metadata` topic ids and `meta.properties`.

The rules are Kafka's at a broker's start (`LogManager`, `TopicsImage.isStrayReplica`, `ReplicaManager`): a
partition dir is stray when the metadata has no partition of its topic id and number or does not list the node
among its replicas (Kafka 3.7 and later rename it `-stray` and keep it); a partition the metadata assigns to the
node with no dir is created empty. logtool holds a dir by its name first, so that a deleted topic, a partition
reassigned away and a topic id that is not the one of the topic of that name are told apart.

What is not held, and why:
- a log dir without a node id (no meta.properties, or one that cannot be read: reported already): only the
  replay's own problems are reported;
- a node the metadata has neither a broker registration for nor a partition assigned to: a controller's log
  dir (normal) holds no partition dirs, and any other gets one NODE_NOT_REGISTERED for all its dirs;
- dirs named `-delete`, `-future` or `-stray` (Kafka's own: the partition checks report them), and
  partition.metadata files that cannot be read (the partition checks report them; the dir is held by its name);
- where the replay could not read a segment (UNREADABLE, reported by the partition checks): the state is not
  the log's, and nothing is held against it.

The node's own metadata log may be behind the cluster's (a broker that was down): the findings say up to which
offset the metadata was read. Cost: one replay (memory follows the cluster's state, not the log), and one small
partition.metadata read per partition dir.
"""
from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from logtool.findings import (ASSIGNED_PARTITION_MISSING, DIRECTORY_NOT_REGISTERED, NODE_NOT_REGISTERED,
                              PARTITION_NOT_ASSIGNED, REPLICA_DIRECTORY_MISMATCH, TOPIC_ID_MISMATCH, UNREADABLE,
                              Finding, Group, Kind, finding)
from logtool.format.meta import MetaError, meta_identity, partition_metadata
from logtool.rules.metadata.replay import MetadataPathError, Replay, open_source, replay
from logtool.rules.metadata.state import LOST, MIGRATING, UNASSIGNED, PartitionState, directory_name
from logtool.store.layout import CLUSTER_METADATA, parse_partition_dir
from logtool.store.sidefile import read_side

if TYPE_CHECKING:  # checks/logdir.py calls this module at the end of its check
    from logtool.checks.logdir import LogDirReport

_METADATA_TOPIC = "__cluster_metadata"

# Replay problems of one kind reported in full; the rest are counted in one closing finding.
REPLAY_PROBLEMS_SHOWN = 10


def check_against_metadata(path: Path, rep: LogDirReport) -> None:
    """Add to `rep` what holding the log dir at `path` against its own metadata log finds (nothing when it holds
    none). Never raises for bad input: what cannot be read is left to the checks that report it."""
    if CLUSTER_METADATA not in rep.partition_dirs:
        return
    try:
        source = open_source(path / CLUSTER_METADATA)
    except MetadataPathError:
        return  # the partition checks of __cluster_metadata-0 say why it cannot be read
    try:
        r = replay(source)
    finally:
        source.close()
    rep.findings += replay_findings(r)
    if r.last_offset is None or any(p.kind is UNREADABLE for p in r.problems):
        return  # no state, or not the log's: nothing to hold the log dir against
    try:
        identity = meta_identity(rep.meta) if rep.meta else None
    except MetaError:
        return  # META_PROPERTIES_INVALID says why
    if identity is None or identity.node_id is None:
        return
    _Holding(path, rep, r, identity.node_id, identity.directory_id).run()


def replay_findings(r: Replay) -> list[Finding]:
    """The replay's own problems as findings (those of the walker and the unreadable segments are the partition
    checks' to report), each named by its segment under the metadata dir; past REPLAY_PROBLEMS_SHOWN of a kind,
    one finding counts the rest."""
    out: list[Finding] = []
    seen: dict[Kind, tuple[int, str]] = {}  # kind -> how many, the file of the last one
    for p in r.problems:
        if p.kind.group is not Group.METADATA:
            continue
        file = f"{CLUSTER_METADATA}/{p.file}" if p.file else CLUSTER_METADATA
        n = seen.get(p.kind, (0, file))[0] + 1
        seen[p.kind] = (n, file)
        if n <= REPLAY_PROBLEMS_SHOWN:
            out.append(Finding(p.kind, p.message, file, p.position, p.offset))
    for kind, (n, file) in seen.items():
        if n > REPLAY_PROBLEMS_SHOWN:
            more = n - REPLAY_PROBLEMS_SHOWN
            out.append(Finding(kind, f"... and {more} more findings like the above", file, more=more))
    return out


def _is_directory(directory: str) -> bool:
    """A real directory id, not one of the reserved ones (MIGRATING, UNASSIGNED, LOST)."""
    return directory not in (MIGRATING, UNASSIGNED, LOST)


def _nodes(ids: Iterable[int]) -> str:
    return ", ".join(str(i) for i in sorted(ids)) or "none"


class _Holding:
    """One log dir against one replayed state."""

    def __init__(self, path: Path, rep: LogDirReport, r: Replay, node: int, directory: str | None) -> None:
        self.path, self.rep, self.r, self.state, self.node, self.directory = path, rep, r, r.state, node, directory
        self.upto = f"the metadata up to offset {r.last_offset}"
        broker = self.state.brokers.get(node)
        self.broker = broker
        self.registered: tuple[str, ...] = broker.log_dirs if broker is not None else ()
        # partition -> its dir here; other dirs of the same partition (-delete, -future, -stray) by partition
        self.plain: dict[tuple[str, int], str] = {}
        self.suffixed: dict[tuple[str, int], list[str]] = {}
        for d in rep.partition_dirs:
            name = parse_partition_dir(d)
            if name is None or name.topic == _METADATA_TOPIC:
                continue
            key = (name.topic, name.partition)
            if name.kind == "plain":
                self.plain[key] = d
            else:
                self.suffixed.setdefault(key, []).append(d)

    def add(self, f: Finding) -> None:
        self.rep.findings.append(f)

    def run(self) -> None:
        assigned = {(p.topic, p.partition): p for p in self.state.placements(self.node)}
        if self.broker is None:
            if not assigned:
                if self.plain:
                    self._node_unknown()
                return  # a controller's log dir, or a node that never registered and holds nothing
            self._node_unknown(len(assigned))
        directory_known = self._directory_registered()
        for key, name in sorted(self.plain.items()):
            self._hold_dir(key, name, directory_known)
        for key, placement in sorted(assigned.items()):
            if key not in self.plain:
                self._missing(key, placement.directory, directory_known)

    # ------------------------------------------------------------------------------------------ the node

    def _node_unknown(self, assigned: int = 0) -> None:
        state, node = self.state, self.node
        roles = []
        if node in state.controllers or node in (self.r.quorum.voters or ()):
            roles.append(f"node {node} is a controller of this cluster, not a registered broker")
        brokers = f"it registers broker(s) {_nodes(state.brokers)}"
        if assigned:
            what = (f"{self.upto} has no broker registration for node {node} (unregistered, or never registered), "
                    f"though it assigns {assigned} partition(s) to it; {brokers}")
        else:
            what = (f"meta.properties names node {node}, which {self.upto} neither registers as a broker nor "
                    f"assigns any partition to ({brokers}): none of the {len(self.plain)} partition dir(s) here "
                    f"is the node's, and a broker with this node id would set each aside as stray")
        self.add(finding(NODE_NOT_REGISTERED, "; ".join([what, *roles]), "meta.properties"))

    def _directory_registered(self) -> bool:
        """Whether the metadata's directories can be held against this log dir's directory.id: the broker
        registers it (else DIRECTORY_NOT_REGISTERED, once, and the partitions' directories are not held)."""
        if self.directory is None or not self.registered:
            return False  # no directory.id (before Kafka 3.7), or a registration without directories
        if self.directory in self.registered:
            return True
        assert self.broker is not None
        self.add(finding(DIRECTORY_NOT_REGISTERED, f"meta.properties' directory.id {self.directory} is not among the "
                         f"log dirs broker {self.node} registered ({', '.join(self.registered)}, at offset "
                         f"{self.broker.at.offset}) in {self.upto}", "meta.properties"))
        return False

    # ------------------------------------------------------------------------------------------ partition dirs

    def _topic_id(self, name: str) -> str | None:
        """The topic id of the dir's partition.metadata; None when it has none that can be read (the partition
        checks report that)."""
        text, _problem = read_side(self.path / name / "partition.metadata").text()
        if text is None:
            return None
        try:
            return partition_metadata(text)[1]
        except MetaError:
            return None

    def _hold_dir(self, key: tuple[str, int], name: str, directory_known: bool) -> None:
        topic, number = key
        state = self.state
        on_disk = self._topic_id(name)
        topic_id = state.topic_id(topic)
        history = f"`logtool metadata --history {topic}-{number}` shows its records"
        if topic_id is None:
            other = state.topics.get(on_disk) if on_disk is not None else None
            also = f"; its topic id {on_disk} is topic {other.name!r}'s" if other is not None else ""
            self.add(finding(PARTITION_NOT_ASSIGNED, f"{name}: {self.upto} has no topic {topic!r} (deleted, or never "
                             f"created in this cluster){also}; {history}", name))
            return
        if on_disk is not None and on_disk != topic_id:
            created = state.topics[topic_id].at
            self.add(finding(TOPIC_ID_MISMATCH, f"{name}: partition.metadata names topic id {on_disk}, but "
                             f"{self.upto} gives {topic!r} the id {topic_id} (its TopicRecord at offset "
                             f"{created.offset}): the directory is another topic's of that name; "
                             f"{self._assigned_words(topic_id, number)}", f"{name}/partition.metadata"))
            return
        p = state.topics[topic_id].partitions.get(number)
        if p is None:
            count = len(state.topics[topic_id].partitions)
            self.add(finding(PARTITION_NOT_ASSIGNED, f"{name}: topic {topic!r} has {count} partition(s) in "
                             f"{self.upto}, and no partition {number}; {history}", name))
        elif self.node not in p.replicas:
            self.add(finding(PARTITION_NOT_ASSIGNED, f"{name}: {self.upto} assigns its replicas to node(s) "
                             f"{_nodes(p.replicas)}, not to node {self.node} (the partition last changed at offset "
                             f"{p.at.offset}); {history}", name))
        elif directory_known:
            self._hold_directory(name, p)

    def _assigned_words(self, topic_id: str, number: int) -> str:
        p = self.state.topics[topic_id].partitions.get(number)
        if p is not None and self.node in p.replicas:
            return (f"the metadata assigns that topic's partition {number} to node {self.node}: the broker sets this "
                    f"directory aside as stray and creates the partition anew, empty")
        return "the broker sets this directory aside as stray"

    def _hold_directory(self, name: str, p: PartitionState) -> None:
        where = p.directory(self.node)
        if where is None or where == self.directory or where in (MIGRATING, UNASSIGNED):
            return
        if where == LOST:
            said = "as lost (its directory reported offline)"
        elif where in self.registered:
            said = f"in directory {where}, another log dir of broker {self.node}"
        else:
            said = f"in directory {where}, which broker {self.node} does not register"
        self.add(finding(REPLICA_DIRECTORY_MISMATCH, f"{name}: {self.upto} places node {self.node}'s replica {said}, "
                         f"not in this log dir ({self.directory}); the partition last changed at offset "
                         f"{p.at.offset}", name))

    # ------------------------------------------------------------------------------------------ missing dirs

    def _missing(self, key: tuple[str, int], where: str, directory_known: bool) -> None:
        """A partition the metadata assigns to the node with no dir here: reported where it belongs in this log
        dir (its directory is this one's, or the broker has no other log dir to hold it)."""
        if where == LOST:
            return  # its directory is offline by the metadata: it is in no log dir
        if _is_directory(where):
            if where != self.directory:
                return  # in another log dir of the broker (or one it no longer registers: DIRECTORY_NOT_REGISTERED)
            placed = "and to this log dir's directory.id"
        elif len(self.registered) > 1:
            return  # in no directory in particular, and the broker has others: it may be in any of them
        elif self.registered:
            placed = f"({directory_name(where)}: to no directory in particular, and the broker registers only one)"
        else:
            placed = ("(the metadata records no log dirs of the broker, as before metadata.version 3.7-IV2: if it "
                      "has other log dirs, the partition may be in one of them)")
        dir_name = f"{key[0]}-{key[1]}"
        evidence = [f"{file} at {entries[key]}" for file, entries in sorted(self.rep.offsets.items())
                    if key in entries]
        said = f"; the offset checkpoints still list it ({', '.join(evidence)})" if evidence else ""
        others = self.suffixed.get(key)
        if others:
            said += f"; {', '.join(sorted(others))} is here"
        self.add(finding(ASSIGNED_PARTITION_MISSING, f"{dir_name}: {self.upto} assigns it to node {self.node} "
                         f"{placed}, but the log dir has no directory for it{said}; the broker would create it empty "
                         f"and fetch it from the leader", dir_name))
