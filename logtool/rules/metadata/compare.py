"""Two states compared (`diff`: what changed between two points), and the records that touched one topic or
partition (`History`, a `Watch` the replay tells of each record it applies)."""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, NamedTuple, cast

from logtool.findings import Severity
from logtool.format.messages import jsonable
from logtool.format.metadata_records import MetadataRecord, type_name
from logtool.rules.metadata.replay import Problem, Replay, Source, problem_rows, replay
from logtool.rules.metadata.state import ClusterState, Stamp

_TOPIC, _PARTITION, _CONFIG, _PARTITION_CHANGE, _REMOVE_TOPIC, _CLEAR_ELR = 2, 3, 4, 5, 9, 28


class Change(NamedTuple):
    """One item that differs between two states: what it is, which one, and how (added, removed, recreated:
    the same name under another id, changed: `fields`, each (before, after))."""

    item: str  # metadata.version, feature, broker, controller, topic, partition, config, producer_ids, count, quorum
    name: str
    how: str
    fields: dict[str, tuple[Any, Any]]

    def to_dict(self) -> dict[str, Any]:
        return {"item": self.item, "name": self.name, "how": self.how,
                "fields": {k: {"from": a, "to": b} for k, (a, b) in self.fields.items()}}


def _plain(d: dict[str, Any] | None) -> dict[str, Any]:
    """An item's dict without where it last changed (which differs whenever anything does)."""
    return {k: v for k, v in (d or {}).items() if k != "changed"}


def _fields(a: dict[str, Any], b: dict[str, Any]) -> dict[str, tuple[Any, Any]]:
    return {k: (a.get(k), b.get(k)) for k in dict.fromkeys([*a, *b]) if a.get(k) != b.get(k)}


def _keyed(items: list[dict[str, Any]], key: str) -> dict[Any, dict[str, Any]]:
    return {i[key]: _plain(i) for i in items}


def _compare(item: str, a: dict[Any, dict[str, Any]], b: dict[Any, dict[str, Any]], label) -> list[Change]:
    out = []
    for k in sorted(a.keys() | b.keys()):  # the keys of one item kind are all numbers, names or pairs
        if k not in b:
            out.append(Change(item, label(k), "removed", {}))
        elif k not in a:
            out.append(Change(item, label(k), "added", {}))
        elif a[k] != b[k]:
            out.append(Change(item, label(k), "changed", _fields(a[k], b[k])))
    return out


def diff(a: dict[str, Any], b: dict[str, Any], quorum_a: dict[str, Any] | None = None,
         quorum_b: dict[str, Any] | None = None) -> list[Change]:
    """What changed from state `a` to state `b` (both as `ClusterState.to_dict` gives them)."""
    changes: list[Change] = []
    mva, mvb = _plain(a["metadata_version"]), _plain(b["metadata_version"])
    if mva != mvb:
        changes.append(Change("metadata.version", "metadata.version", "changed",
                              {"version": (mva.get("version"), mvb.get("version"))}))
    changes += _compare("feature", {n: _plain(f) for n, f in a["features"].items()},
                        {n: _plain(f) for n, f in b["features"].items()}, str)
    if a["zk_migration_state"] != b["zk_migration_state"]:
        changes.append(Change("zk_migration_state", "zk_migration_state", "changed",
                              {"state": (a["zk_migration_state"], b["zk_migration_state"])}))
    if quorum_a is not None and quorum_b is not None:  # what a point's log says of the quorum: known at both
        moved = {k: v for k, v in _fields(_plain(quorum_a), _plain(quorum_b)).items() if None not in v}
        if moved:
            changes.append(Change("quorum", "quorum", "changed", moved))
    changes += _compare("broker", _keyed(a["brokers"], "id"), _keyed(b["brokers"], "id"), lambda k: f"broker {k}")
    changes += _compare("controller", _keyed(a["controllers"], "id"), _keyed(b["controllers"], "id"),
                        lambda k: f"controller {k}")
    changes += _topics(a["topics"], b["topics"])
    changes += _compare("config", {(c["resource_type"], c["resource_name"]): c["configs"] for c in a["configs"]},
                        {(c["resource_type"], c["resource_name"]): c["configs"] for c in b["configs"]},
                        lambda k: f"{k[0]} {k[1]}")
    pa, pb = _plain(a["producer_ids"]), _plain(b["producer_ids"])
    if pa != pb:
        changes.append(Change("producer_ids", "producer_ids", "changed", _fields(pa, pb)))
    counts = {k: v for k, v in _fields(a["counts"], b["counts"]).items()
              if k not in ("brokers", "controllers", "topics", "partitions")}
    if counts:
        changes.append(Change("count", "counts", "changed", counts))
    return changes


def _topics(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> list[Change]:
    ta, tb = {t["name"]: t for t in a}, {t["name"]: t for t in b}
    out = []
    for name in sorted(ta.keys() | tb.keys()):
        x, y = ta.get(name), tb.get(name)
        if y is None:
            out.append(Change("topic", name, "removed", {"id": (x["id"], None)}))  # type: ignore[index]
            continue
        if x is None or x["id"] != y["id"]:
            out.append(Change("topic", name, "added" if x is None else "recreated",
                              {"id": (None if x is None else x["id"], y["id"]),
                               "partitions": (None if x is None else len(x["partitions"]), len(y["partitions"]))}))
            continue
        if x["configs"] != y["configs"]:
            out.append(Change("topic", name, "changed", {f"config {k}": v for k, v in
                                                         _fields(x["configs"], y["configs"]).items()}))
        out += _compare("partition", _keyed(x["partitions"], "partition"), _keyed(y["partitions"], "partition"),
                        lambda n, name=name: f"{name}-{n}")
    return out


def change_text(fields: dict[str, tuple[Any, Any]]) -> str:
    """`leader 1 -> 3, isr [1, 2, 3] -> [3]`."""
    return ", ".join(f"{k} {_shown(a)} -> {_shown(b)}" for k, (a, b) in fields.items())


def _shown(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, list):
        return "[" + ",".join(map(str, value)) + "]"
    return str(value)


class History:
    """The records that touched a topic (every partition) or one partition of it, as the replay applies them:
    each with its offset, time, type and what it changed."""

    def __init__(self, topic: str, partition: int | None = None) -> None:
        self.topic, self.partition = topic, partition
        self.entries: list[dict[str, Any]] = []

    def before(self, api_key: int, data: dict, state: ClusterState) -> object | None:
        if api_key == _TOPIC:
            return ("topic", None) if data["name"] == self.topic else None
        if api_key == _REMOVE_TOPIC:
            t = state.topics.get(data["topicId"])
            return ("topic", None) if t is not None and t.name == self.topic else None
        if api_key in (_PARTITION, _PARTITION_CHANGE):
            t = state.topics.get(data["topicId"])
            n = data["partitionId"]
            if t is None or t.name != self.topic or self.partition not in (None, n):
                return None
            p = t.partitions.get(n)
            return "partition", {n: p.to_dict() if p is not None else None}
        if api_key == _CONFIG:
            hit = data["resourceType"] == 2 and data["resourceName"] == self.topic and self.partition is None
            return ("config", None) if hit else None
        if api_key == _CLEAR_ELR and data["topicName"] in ("", self.topic):
            topic = state.topic(self.topic)
            if topic is None:
                return None
            return "partition", {n: p.to_dict() for n, p in topic.partitions.items()
                                 if self.partition in (None, n)}
        return None

    def after(self, token: object, record: MetadataRecord, state: ClusterState, at: Stamp,
              refused: str | None) -> None:
        kind, before = cast(tuple[str, Any], token)
        data = record.data
        base = {"offset": at.offset, "timestamp": at.timestamp, "in_snapshot": at.snapshot,
                "record": type_name(record.schema), "version": record.version, "data": jsonable(data),
                "refused": refused}
        if kind == "partition":
            topic = state.topic(self.topic)
            for n, old in sorted(before.items()):
                new = topic.partitions.get(n) if topic is not None else None
                after = _plain(new.to_dict()) if new is not None else None
                if refused is not None:
                    what = "refused"
                elif old is None:
                    what = "created: " + ", ".join(f"{k} {_shown(v)}" for k, v in (after or {}).items()
                                                   if v not in ([], None))
                else:
                    what = change_text(_fields(_plain(old), after or {})) or "no change"
                self.entries.append({**base, "partition": n, "change": what})
        elif kind == "topic":
            if refused is not None:
                what = "refused"
            elif record.api_key == _TOPIC:
                what = f"topic created, id {data['topicId']}"
            else:
                what = f"topic deleted (id {data['topicId']})"
            self.entries.append({**base, "partition": None, "change": what})
        else:
            value = data["value"]
            what = f"config {data['name']} = {value}" if value is not None else f"config {data['name']} removed"
            self.entries.append({**base, "partition": None, "change": what})


class Point(NamedTuple):
    """A point of the log: an offset (records up to and including it) or a time (records written at or
    before it); neither: the end."""

    offset: int | None = None
    time: int | None = None


@dataclass(slots=True)
class DiffResult:
    """The states at two points and what changed between them."""

    before: Replay
    after: Replay
    changes: list[Change]

    def exit_code(self, fail_on: Severity = Severity.WARNING) -> int:
        return max(self.before.exit_code(), self.after.exit_code())

    def to_dict(self) -> dict[str, Any]:
        return {"path": str(self.before.source.path), "from": self.before.position(), "to": self.after.position(),
                "changes": [c.to_dict() for c in self.changes],
                "problems": [p.to_dict() for p in _problems(self.before, self.after)],
                "notes": self._notes(), "exit_code": self.exit_code()}

    def rows(self) -> Iterator[dict[str, Any]]:
        for c in self.changes:
            yield {"type": "change", **c.to_dict()}
        yield from problem_rows(_problems(self.before, self.after))

    def summary(self) -> dict[str, Any]:
        return {"path": str(self.before.source.path), "from": self.before.position(), "to": self.after.position(),
                "changes": len(self.changes), "notes": self._notes()}

    def stderr_lines(self) -> list[str]:
        return []

    def _notes(self) -> list[str]:
        return list(dict.fromkeys(self.before.notes + self.after.notes))


def _problems(*replays: Replay) -> list[Problem]:
    return list(dict.fromkeys(p for r in replays for p in r.problems))


def diff_between(source: Source, a: Point, b: Point) -> DiffResult:
    """The state at `a`, the state at `b` (each replayed as `replay` does), and what changed."""
    before = replay(source, a.offset, a.time)
    after = replay(source, b.offset, b.time)
    return DiffResult(before, after, diff(before.state.to_dict(), after.state.to_dict(), before.quorum.to_dict(),
                                          after.quorum.to_dict()))


class _Both:
    """Tells two watches of each record (`--history orders-0`: the topic `orders-0`, or partition 0 of
    `orders`, whichever the log holds)."""

    def __init__(self, *watches: History) -> None:
        self.watches = watches

    def before(self, api_key: int, data: dict, state: ClusterState) -> object | None:
        tokens = [w.before(api_key, data, state) for w in self.watches]
        return tokens if any(t is not None for t in tokens) else None

    def after(self, token: object, record: MetadataRecord, state: ClusterState, at: Stamp,
              refused: str | None) -> None:
        for w, t in zip(self.watches, token):  # type: ignore[call-overload]
            if t is not None:
                w.after(t, record, state, at, refused)


@dataclass(slots=True)
class HistoryResult:
    replay: Replay
    topic: str
    partition: int | None
    entries: list[dict[str, Any]]

    def exit_code(self, fail_on: Severity = Severity.WARNING) -> int:
        return self.replay.exit_code()

    def to_dict(self) -> dict[str, Any]:
        return {"path": str(self.replay.source.path), "topic": self.topic, "partition": self.partition,
                "from_offset": self._from_offset(), "position": self.replay.position(), "entries": self.entries,
                "problems": [p.to_dict() for p in self.replay.problems], "notes": self.replay.notes,
                "exit_code": self.exit_code()}

    def rows(self) -> Iterator[dict[str, Any]]:
        for e in self.entries:
            yield {"type": "record", "topic": self.topic, **e}
        yield from problem_rows(self.replay.problems)

    def summary(self) -> dict[str, Any]:
        return {"path": str(self.replay.source.path), "topic": self.topic, "partition": self.partition,
                "records": len(self.entries), "from_offset": self._from_offset(),
                "position": self.replay.position(), "notes": self.replay.notes}

    def stderr_lines(self) -> list[str]:
        return []

    def _from_offset(self) -> int | None:
        return self.replay.snapshot.last_offset if self.replay.snapshot else self.replay.log_from


def history_of(source: Source, spec: str, at: Point | None = None) -> HistoryResult:
    """Every record that touched TOPIC or TOPIC-PARTITION (`spec`), from the oldest point the files hold (the
    log's first record, or the snapshot it goes on from) up to `at`. A name that ends in -N is the topic of
    that name where the log has one, else partition N of the topic before it."""
    whole = History(spec)
    watches = [whole]
    topic, dash, number = spec.rpartition("-")
    part = History(topic, int(number)) if dash and topic and number.isdigit() else None
    if part is not None:
        watches.append(part)
    at = at or Point()
    result = replay(source, at.offset, at.time, earliest=True, watch=_Both(*watches))
    chosen = whole if whole.entries or part is None else part
    if not chosen.entries:
        start = result.snapshot.last_offset if result.snapshot is not None else result.log_from
        result.notes.append(f"no record from offset {start} on touched {spec}")
    return HistoryResult(result, chosen.topic, chosen.partition, chosen.entries)
