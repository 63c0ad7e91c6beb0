"""`logtool metadata` as text (fitted to the terminal) and as JSON Lines rows: the replayed cluster state, the
changes between two points, the records that touched a topic. Each renderer works from the result's dict, the
one JSON prints, so text and JSON say the same."""
from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from rich.markup import escape

from logtool.render.table import Column, print_fitted
from logtool.render.text import Screen, console, glued

if TYPE_CHECKING:
    from logtool.rules.metadata.compare import DiffResult, HistoryResult
    from logtool.rules.metadata.replay import Replay


def when(ms: int | None) -> str:
    """Epoch milliseconds as an ISO-8601 UTC time (`2025-01-22T15:36:31.478Z`); as they are when out of range."""
    if ms is None:
        return "-"
    try:
        return datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    except (OverflowError, OSError, ValueError):
        return f"{ms} ms"


def _changed(c: dict[str, Any] | None) -> str:
    if not c:
        return "-"
    return f"{'≤' if c.get('in_snapshot') else ''}{c['offset']}"


def _ids(values: list[Any]) -> str:
    return ",".join(map(str, values)) if values else "-"


def _position(pos: dict[str, Any]) -> str:
    """`offset 30637 (2025-01-22T15:36:31.478Z, epoch 190)`."""
    if pos["offset"] is None:
        return "no record"
    if pos["offset"] < 0:
        return "the start (a bootstrap snapshot: before the log's first record)"
    return f"offset {pos['offset']} ({when(pos['timestamp'])}, epoch {pos['epoch']})"


def _source_line(pos: dict[str, Any]) -> str:
    snap = pos["snapshot"]
    parts = []
    if snap is not None:
        parts.append(f"snapshot {glued(snap['file'])}")
    upto = pos["offset"] if pos["reached_point"] else (pos["log_end_offset"] or 0) - 1
    if pos["log_from_offset"] is not None and upto is not None and upto >= pos["log_from_offset"]:
        parts.append(f"the log's offsets {pos['log_from_offset']}..{upto}")
    where = " and ".join(parts) or "nothing"
    beyond = ""
    if pos["reached_point"] and pos["log_end_offset"] is not None:
        beyond = f"; the log goes on to offset {pos['log_end_offset'] - 1}"
    return f"  from {where}{beyond}"


def _problems(out: Screen, d: dict[str, Any]) -> None:
    for p in d["problems"]:
        where = f"{glued(p['file'])}: " if p.get("file") else ""
        out.print(f"[bold red]{escape(p['kind'])}[/] {escape(where)}{escape(p['message'])}", hang=4)
    for n in d["notes"]:
        out.print(f"[dim]note: {escape(n)}[/]", hang=4)


def render_state(result: Replay) -> None:
    d = result.to_dict()
    out = console()
    s, pos, q = d["state"], d["position"], d["quorum"]
    name = d["metadata_dir"] or d["path"]
    out.print(f"[bold]{escape(glued(name))}[/]: the cluster at {_position(pos)}")
    out.print(_source_line(pos))
    mv = s["metadata_version"]
    feats = [f"metadata.version {mv['version']} (level {mv['level']})" if mv else "metadata.version unknown"]
    feats += [f"{escape(n)} {f['level']}" for n, f in s["features"].items()]
    if s["zk_migration_state"] not in (None, "NONE"):
        feats.append(f"zk migration {s['zk_migration_state']}")
    out.print("  features: " + ", ".join(feats))
    if q["leader_id"] is not None or q["voters"] is not None:
        kraft = f", kraft.version {q['kraft_version']}" if q["kraft_version"] is not None else ""
        out.print(f"  quorum: leader {q['leader_id']} (epoch {q['leader_epoch']}), voters "
                  f"{_ids(q['voters'] or [])}{kraft}")
    c = s["counts"]
    _brokers(out, s)
    _topics(out, s)
    pids = s["producer_ids"]
    if pids is not None:
        out.print(f"producer ids: the next block starts at {pids['next_producer_id']} (changed at "
                  f"{_changed(pids['changed'])})")
    out.print(f"ACLs {c['acls']}, client quotas {c['client_quotas']} ({c['client_quota_entities']} entities), SCRAM "
              f"credentials {c['scram_credentials']}, delegation tokens {c['delegation_tokens']}")
    for cfg in s["configs"]:
        values = ", ".join(f"{escape(k)}={escape(str(v))}" for k, v in cfg["configs"].items())
        out.print(f"configs of {cfg['resource_type']} {escape(cfg['resource_name'] or '(default)')}: {values}", hang=4)
    r = d["records"]
    out.print(f"{r['from_snapshot']} record(s) from the snapshot, {r['from_log']} from the log; "
              f"{len(d['problems'])} problem(s)")
    _problems(out, d)


def _brokers(out: Screen, s: dict[str, Any]) -> None:
    out.print(f"[bold]brokers ({len(s['brokers'])})[/]")
    rows = []
    for b in s["brokers"]:
        state = "[yellow]fenced[/]" if b["fenced"] else "unfenced"
        if b["in_controlled_shutdown"]:
            state += ", shutting down"
        rows.append([str(b["id"]), state, str(b["epoch"]),
                     escape(" ".join(f"{e['name']}://{e['host']}:{e['port']}" for e in b["endpoints"])),
                     escape(b["rack"] or "-"), escape(" ".join(b["log_dirs"]) or "-"), _changed(b["changed"])])
    print_fitted(out, [Column("id"), Column("state"), Column("epoch", 2), Column("endpoints", 1), Column("rack", 4),
                       Column("log dirs", 3), Column("changed", 5)], rows)
    if s["controllers"]:
        out.print(f"[bold]controllers ({len(s['controllers'])})[/]")
        print_fitted(out, [Column("id"), Column("endpoints", 1), Column("incarnation", 2), Column("changed", 3)],
                     [[str(c["id"]), escape(" ".join(f"{e['name']}://{e['host']}:{e['port']}" for e in c["endpoints"])),
                       c["incarnation_id"], _changed(c["changed"])] for c in s["controllers"]])


def _topics(out: Screen, s: dict[str, Any]) -> None:
    out.print(f"[bold]topics ({len(s['topics'])}), partitions ({s['counts']['partitions']})[/]")
    print_fitted(out, [Column("topic"), Column("id", 1), Column("partitions", 1), Column("configs", 3),
                       Column("changed", 2)],
                 [[escape(t["name"]), t["id"], str(len(t["partitions"])),
                   escape(", ".join(f"{k}={v}" for k, v in t["configs"].items()) or "-"), _changed(t["changed"])]
                  for t in s["topics"]])
    every = s["counts"]["partitions"] <= ALL_PARTITIONS_UP_TO
    rows = []
    for t in s["topics"]:
        for p in t["partitions"]:
            if every or _needs_a_look(p):
                rows.append(_partition_row(t["name"], p))
    print_fitted(out, [Column("partition"), Column("leader"), Column("replicas"), Column("isr"),
                       Column("epochs leader/partition", 1), Column("directories", 4), Column("elr/last known", 5),
                       Column("adding/removing", 3), Column("changed", 2)], rows)
    if not every:
        out.print(f"  {len(rows)} of {s['counts']['partitions']} partitions shown: those without a leader, with "
                  f"fewer in sync than assigned, being reassigned or recovering (--format json lists every one)")


# Up to this many partitions, text shows each; above, those that need a look (a table of 20,000 rows is no read).
ALL_PARTITIONS_UP_TO = 500


def _needs_a_look(p: dict[str, Any]) -> bool:
    return (p["leader"] < 0 or len(p["isr"]) < len(p["replicas"]) or bool(p["adding_replicas"])
            or bool(p["removing_replicas"]) or p["leader_recovery_state"] != "RECOVERED")


def _partition_row(topic: str, p: dict[str, Any]) -> list[str]:
    leader = str(p["leader"]) if p["leader"] >= 0 else "[red]none[/]"
    isr = _ids(p["isr"])
    if len(p["isr"]) < len(p["replicas"]):
        isr = f"[yellow]{isr}[/]"
    dirs = " ".join(p["directories"]) if any(x != "MIGRATING" for x in p["directories"]) else "-"
    elr = _ids(p["eligible_leader_replicas"]) + "/" + _ids(p["last_known_elr"])
    moving = _ids(p["adding_replicas"]) + "/" + _ids(p["removing_replicas"]) \
        if p["adding_replicas"] or p["removing_replicas"] else "-"
    return [escape(f"{topic}-{p['partition']}"), leader, _ids(p["replicas"]), isr,
            f"{p['leader_epoch']}/{p['partition_epoch']}", dirs, elr if elr != "-/-" else "-", moving,
            _changed(p["changed"])]


def _value(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, list) and all(isinstance(e, dict) and {"name", "host", "port"} <= e.keys() for e in v) and v:
        return " ".join(f"{e['name']}://{e['host']}:{e['port']}" for e in v)  # endpoints
    if isinstance(v, list):
        return "[" + ",".join(map(_value, v)) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k}: {_value(x)}" for k, x in v.items()) + "}"
    return str(v)


def change_line(c: dict[str, Any]) -> str:
    """`partition orders-0: leader 1 -> 3, isr [1,2,3] -> [3]`."""
    head = f"{c['item']} {c['name']}" if c["item"] not in c["name"] else c["name"]
    if c["how"] != "changed":
        extra = ", ".join(f"{k} {_value(v['to'] if v['to'] is not None else v['from'])}"
                          for k, v in c["fields"].items())
        return f"{head}: {c['how']}" + (f" ({extra})" if extra else "")
    return f"{head}: " + ", ".join(f"{k} {_value(v['from'])} -> {_value(v['to'])}" for k, v in c["fields"].items())


def render_diff(result: DiffResult) -> None:
    d = result.to_dict()
    out = console()
    out.print(f"[bold]{escape(glued(d['path']))}[/]: from {_position(d['from'])} to {_position(d['to'])}")
    for c in d["changes"]:
        out.print(f"  {escape(change_line(c))}", hang=6)
    out.print(f"{len(d['changes'])} change(s); {len(d['problems'])} problem(s)")
    _problems(out, d)


def render_history(result: HistoryResult) -> None:
    d = result.to_dict()
    out = console()
    what = d["topic"] if d["partition"] is None else f"{d['topic']}-{d['partition']}"
    out.print(f"[bold]{escape(what)}[/]: {len(d['entries'])} record(s) from {escape(glued(d['path']))}, from offset "
              f"{d['from_offset']} to {_position(d['position'])}")
    for e in d["entries"]:
        where = f"≤{e['offset']} (snapshot)" if e["in_snapshot"] else str(e["offset"])
        part = f" partition {e['partition']}" if e["partition"] is not None and d["partition"] is None else ""
        style = "[red]" if e["refused"] else ""
        out.print(f"  {where} {when(e['timestamp'])} {e['record']}{part}: {style}{escape(e['change'])}"
                  f"{'[/]' if style else ''}" + (f" ({escape(e['refused'])})" if e["refused"] else ""), hang=6)
    _problems(out, d)
