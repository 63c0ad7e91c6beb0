"""The real brokers' log dirs of ../shared/fixtures/real*: which they are, what their SOURCES.md says of
them, kafka-python's reading of their logs, and verify over them (shared by the oracle, checks, reads and
recovery tests)."""
from __future__ import annotations

import functools
import json
import re
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from conftest import REAL, require  # noqa: E402 - fails loudly when ../shared is missing
from kafka.record import MemoryRecords

from logtool.store.partition import Partition

SOURCES_MD = require(REAL / "SOURCES.md")


CODECS = ("none", "gzip", "snappy", "lz4", "zstd")


OFFSET_CHECKPOINTS = ("recovery-point-offset-checkpoint", "replication-offset-checkpoint",
                      "log-start-offset-checkpoint", "cleaner-offset-checkpoint")


def _is_log_dir(d: Path) -> bool:
    return (d / "meta.properties").is_file() or any((d / n).is_file() for n in OFFSET_CHECKPOINTS)


def _rel(p: Path) -> str:
    return p.relative_to(REAL).as_posix()


LOG_DIRS = sorted(_rel(d) for d in REAL.rglob("*") if d.is_dir() and _is_log_dir(d))


# Partition directories holding .log files that do not sit in any log dir (codecrafters-a/-b).
STRAY_PARTITION_DIRS = sorted(
    _rel(d) for d in {p.parent for p in REAL.rglob("*.log")}
    if not any(_rel(d).startswith(ld + "/") for ld in LOG_DIRS)
)


TARGETS = LOG_DIRS + STRAY_PARTITION_DIRS


def _int(cell: str) -> int:
    return int(cell.replace(",", "").split()[0]) if cell.strip() not in ("", "-") else 0


def _counts(cell: str) -> dict[str, int]:
    """'gzip: 2, none: 12' -> {'gzip': 2, 'none': 12}; 'v2: 14' -> {'v2': 14}."""
    return {k.strip(): int(v) for k, v in (x.split(":") for x in cell.split(",") if ":" in x)}


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def _unquote(cell: str) -> str:
    return cell.strip().strip("`").rstrip("/")


@dataclass
class Row:
    """One line of a log dir's per-partition table."""

    partition: str
    log_files: int
    bases: list[str]  # "0", "862", "0 (swap)"
    log_bytes: int
    batches: int
    records: int
    magic: set[int]
    codecs: set[str]
    control: int
    txn: int
    absent: set[str]


@dataclass
class Section:
    key: str
    totals: dict = field(default_factory=dict)  # the overview row
    rows: dict[str, Row] = field(default_factory=dict)
    more: int = 0  # "(N more)": partitions holding only empty .log files
    absent_counts: Counter = field(default_factory=Counter)  # ".index" -> 52
    absent_named: set[str] = field(default_factory=set)  # "partition/file" named in the Absent bullet
    leftovers: set[str] = field(default_factory=set)  # "partition/file" or "dir/"
    # "Checkpoints compared with the logs": (partition, checkpoint file, checkpoint value) ahead of the log end
    checkpoints_ahead: set[tuple[str, str, int]] = field(default_factory=set)
    root_tmp: set[str] = field(default_factory=set)  # `*.tmp` among the "Log-dir root files"
    no_meta: bool = False  # "no meta.properties in this log dir"


@functools.cache
def sources() -> dict[str, Section]:
    text = SOURCES_MD.read_text()
    out: dict[str, Section] = {}
    current: Section | None = None
    in_overview = False
    for line in text.splitlines():
        if line.startswith("## "):
            in_overview = line.strip() == "## Overview"
            current = None
            m = re.match(r"^## `(.+?)/?`\s*$", line)
            if m:
                current = out.setdefault(m.group(1).rstrip("/"), Section(m.group(1).rstrip("/")))
            continue
        if in_overview and line.startswith("| `"):
            c = _cells(line)
            key = _unquote(c[0])
            out.setdefault(key, Section(key)).totals = {
                "partitions": _int(c[2]), "log_files": _int(c[3]), "log_bytes": _int(c[4]),
                "batches": _int(c[5]), "records": _int(c[6]),
                "magic": {int(k.lstrip("v")): n for k, n in _counts(c[7]).items()},
                "codecs": _counts(c[8]), "control": _int(c[9]), "txn": _int(c[10]),
            }
            continue
        if current is None:
            continue
        if line.startswith("- Absent because"):
            rest = line.split(":", 1)[1]
            for n, ext in re.findall(r"(\d+) `(\.\w+)`", rest):
                current.absent_counts[ext] += int(n)
            current.absent_named |= set(re.findall(r"`([^`]+/[^`]+)`", rest))
        elif line.startswith("- Leftovers / in-flight files:"):
            current.leftovers |= set(re.findall(r"`([^`]+)`", line.split(":", 1)[1]))
        elif m := re.match(r"^\s+- `(.+?)`: (\S+) ahead of log end: checkpoint (\d+), log end offset \d+", line):
            current.checkpoints_ahead.add((m.group(1), m.group(2), int(m.group(3))))
        elif line.strip() == "- no meta.properties in this log dir":
            current.no_meta = True
        elif line.startswith("- Log-dir root files:"):
            current.root_tmp |= {n for n in re.findall(r"`([^`]+)`", line) if n.endswith(".tmp")}
        elif line.startswith("| (") and "more)" in line:
            current.more = int(re.match(r"\| \((\d+) more\)", line).group(1))
        elif line.startswith("| `"):
            c = _cells(line)
            m = re.match(r"^(\d+) \((.*)\)$", c[1])
            bases = [] if m.group(2) == "-" else re.split(r",\s*(?![^()]*\))", m.group(2))
            current.rows[_unquote(c[0])] = Row(
                partition=_unquote(c[0]), log_files=int(m.group(1)), bases=[b.strip() for b in bases],
                log_bytes=_int(c[2]), batches=_int(c[3]), records=_int(c[4]),
                magic=set() if c[5] == "-" else {int(x.strip().lstrip("v")) for x in c[5].split(",")},
                codecs=set() if c[6] == "-" else {x.strip() for x in c[6].split(",")},
                control=_int(c[7]), txn=_int(c[8]),
                absent=set() if c[10] == "-" else {x.strip() for x in c[10].split(",")},
            )
    return out


def section(log_dir: str) -> Section | None:
    return sources().get(log_dir)


DESCRIBED = [ld for ld in LOG_DIRS if section(ld) is not None and section(ld).totals]


def logtool_cmd() -> list[str]:
    script = Path(sys.executable).with_name("logtool")
    return [str(script)] if script.exists() else [sys.executable, "-m", "logtool"]


@functools.cache
def verify_json(target: str) -> tuple[int, dict]:
    """`logtool verify --deep --format json` on a log dir or partition dir, once per target."""
    cmd = logtool_cmd() + ["verify", "--deep", "--format", "json", str(REAL / target)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    try:
        return proc.returncode, json.loads(proc.stdout)
    except json.JSONDecodeError:
        pytest.fail(f"{' '.join(cmd)} did not print JSON (exit {proc.returncode}).\n"
                    f"stdout: {proc.stdout[:2000]}\nstderr: {proc.stderr[-3000:]}")


def partitions_of(target: str) -> dict[str, dict]:
    """logtool's partitions of a target, keyed by path relative to REAL."""
    _rc, report = verify_json(target)
    return {_rel(Path(p["path"]).resolve()): p for p in report["partitions"]}


@dataclass
class KPBatch:
    position: int
    size: int
    magic: int
    base_offset: int
    last_offset: int
    count: int | None
    crc: int | None
    crc_valid: bool
    codec: str
    is_control: bool
    is_transactional: bool
    producer_id: int
    producer_epoch: int
    base_sequence: int
    leader_epoch: int
    max_timestamp: int
    records: list[tuple]  # (offset, timestamp, key, value, headers)


@dataclass
class KPLog:
    size: int
    valid_bytes: int
    batches: list[KPBatch]


def _kp_records(batch) -> list[tuple]:
    return [(r.offset, r.timestamp, r.key, r.value, tuple((k, v) for k, v in (r.headers or [])))
            for r in batch]


@functools.cache
def kp_read(path: Path) -> KPLog:
    """kafka-python's reading of a whole .log file: framing from offset 0, CRCs, every record."""
    data = path.read_bytes()
    mr = MemoryRecords(data)
    out, pos = [], 0
    while mr.has_next():
        b = mr.next_batch()
        if b.magic >= 2:
            crc_valid = b.validate_crc()  # before iterating, as kafka-python requires
            recs = _kp_records(b)
            out.append(KPBatch(pos, b.size_in_bytes, b.magic, b.base_offset, b.last_offset, b.records_count,
                               b.crc & 0xFFFFFFFF, crc_valid, CODECS[b.compression_type], b.is_control_batch,
                               b.is_transactional, b.producer_id, b.producer_epoch, b.base_sequence,
                               b.leader_epoch, b.max_timestamp, recs))
        else:
            crc_valid = b.validate_crc()
            recs = _kp_records(b)
            out.append(KPBatch(pos, b.size_in_bytes, b.magic, recs[0][0] if recs else b.base_offset,
                               recs[-1][0] if recs else b.base_offset, None, None, crc_valid,
                               CODECS[b.compression_type], False, False, -1, -1, -1, -1, -1, recs))
        pos += b.size_in_bytes
    return KPLog(len(data), mr.valid_bytes(), out)


def all_findings(report: dict) -> list[tuple[str, dict]]:
    """(where, finding) for every finding of a report; `where` is the partition or log dir path."""
    out = [("", f) for f in report.get("findings") or []]
    for ld in report.get("log_dirs") or []:
        out += [(_rel(Path(ld["path"]).resolve()), f) for f in ld.get("findings") or []]
    for p in report.get("partitions") or []:
        where = _rel(Path(p["path"]).resolve())
        out += [(where, f) for f in p.get("findings") or []]
        for s in p.get("segments") or []:
            out += [(where, f) for f in s.get("findings") or []]
    return out


def partition_dirs(target: str) -> list[Path]:
    root = REAL / target
    if target in STRAY_PARTITION_DIRS:
        return [root]
    return sorted(d for d in root.iterdir() if d.is_dir())


def _batch_diffs(view, kb: KPBatch) -> list[str]:
    pairs = {
        "position": (view.position, kb.position), "size": (view.size, kb.size), "magic": (view.magic, kb.magic),
        "base_offset": (view.base_offset, kb.base_offset), "last_offset": (view.last_offset, kb.last_offset),
        "crc_valid": (view.is_valid, kb.crc_valid), "codec": (view.codec_name, kb.codec),
    }
    if kb.magic >= 2:
        pairs.update({
            "count": (view.count, kb.count), "crc": (view.crc_stored, kb.crc),
            "is_control": (view.is_control, kb.is_control),
            "is_transactional": (view.is_transactional, kb.is_transactional),
            "producer_id": (view.producer_id, kb.producer_id),
            "producer_epoch": (view.producer_epoch, kb.producer_epoch),
            "base_sequence": (view.base_sequence, kb.base_sequence),
            "partition_leader_epoch": (view.partition_leader_epoch, kb.leader_epoch),
            "max_timestamp": (view.max_timestamp, kb.max_timestamp),
        })
    return [f"{k}: logtool {g!r}, kafka-python {w!r}" for k, (g, w) in pairs.items() if g != w]


def _lt_record(r) -> tuple:
    return (r.offset, r.timestamp, r.key, r.value,
            tuple((h.key.decode("utf-8", "replace"), h.value) for h in r.headers))


# Checkpoint findings about a partition name: the partition is the message's first word.
CHECKPOINT_KINDS_BEYOND = {"HIGH_WATERMARK_BEYOND_LOG", "RECOVERY_POINT_BEYOND_LOG", "LOG_START_BEYOND_LOG",
                           "CLEANER_OFFSET_BEYOND_LOG"}


# True anomalies of the fixture set that SOURCES.md does not list, each checked by hand against the files and
# pinned exactly (test_dir_forensics asserts each is found): SOURCES.md should list them.
UNLISTED_ANOMALIES = {
    "sagarrao1__kafka/MultiNode/kafka-logs-1": {
        ("CHECKPOINT_UNKNOWN_PARTITION", "first_topic-0"):
            "recovery-point and replication checkpoints name first_topic 0 (offset 64); the source repository never "
            "held a first_topic-0 directory",
    },
    "kraft-broker-logdir": {
        ("CHECKPOINT_UNKNOWN_PARTITION", "__consumer_offsets-14"):
            "recovery-point and replication checkpoints name __consumer_offsets 14; the directory is not in the data",
        ("ASSIGNED_PARTITION_MISSING", "__consumer_offsets-14"):
            "the node's metadata log assigns __consumer_offsets 14 to it; the directory is not in the data",
    },
}


def unknown_partition(f: dict) -> str:
    """The partition a CHECKPOINT_UNKNOWN_PARTITION finding names ("<topic>-<n> (offset ...) has no ...")."""
    return f["message"].split(" (offset ")[0]


def removed_from_set(partition: str) -> bool:
    """SOURCES.md's notes on content: Kafka Connect config partitions were removed from the fixture set."""
    notes = re.search(r"^Notes on content: (.*)$", SOURCES_MD.read_text(), re.M)
    return bool(notes) and "Kafka Connect config partitions" in notes.group(1) and "removed" in notes.group(1) \
        and partition.rsplit("-", 1)[0].endswith("connect-configs")


def _explanation(sec: Section | None, where: str, log_dir: str, f: dict) -> str | None:
    """Why SOURCES.md expects this warning/error, or None when it does not."""
    if f["name"] == "CHECKPOINT_UNKNOWN_PARTITION":
        pinned = UNLISTED_ANOMALIES.get(log_dir, {}).get((f["name"], unknown_partition(f)))
        if pinned:
            return f"not in SOURCES.md, pinned: {pinned}"
        if removed_from_set(unknown_partition(f)):
            return "SOURCES.md's notes on content: Connect config partitions were removed from the set"
        return None
    if f["name"] == "ASSIGNED_PARTITION_MISSING":  # the metadata's word on the same absent directories: the file
        pinned = UNLISTED_ANOMALIES.get(log_dir, {}).get((f["name"], f["file"]))
        if pinned:
            return f"not in SOURCES.md, pinned: {pinned}"
        if removed_from_set(f["file"]):
            return "SOURCES.md's notes on content: Connect config partitions were removed from the set"
        return None
    if sec is None:
        # Undescribed dirs still follow the fixtures README: files of 4 MiB and more were not copied, which
        # takes exactly the active segment's preallocated 10 MiB indexes.
        logs = sorted((REAL / where).glob("*.log")) if where else []
        active = bool(logs) and (f["file"] or "").split(".")[0] == logs[-1].stem
        if f["name"] in ("INDEX_MISSING", "TIMEINDEX_MISSING") and active:
            return "the active segment's preallocated index is 10 MiB, too large for the snapshot"
        return None
    partition = where[len(log_dir) + 1:] if where.startswith(log_dir + "/") else None
    row = sec.rows.get(partition) if partition else None
    file = f["file"] or ""
    stem = file.split(".")[0]

    def absent(name: str, ext: str) -> bool:
        if row is not None:
            return name in row.absent or f"{partition}/{name}" in sec.absent_named
        # Partitions folded into "(N more)" are not listed one by one; SOURCES.md gives only counts.
        listed = sum(1 for r in sec.rows.values() for a in r.absent if a.endswith(ext))
        return partition is not None and sec.absent_counts[ext] > listed

    name = f["name"]
    if name == "INDEX_MISSING" and absent(f"{stem}.index", ".index"):
        return "the .index is listed as absent from the snapshot"
    if name == "TIMEINDEX_MISSING" and absent(f"{stem}.timeindex", ".timeindex"):
        return "the .timeindex is listed as absent from the snapshot"
    if name == "ORPHAN_INDEX" and absent(f"{stem}.log", ".log"):
        return "its .log is listed as absent from the snapshot"
    if name == "LEFTOVER_FILE" and partition and f"{partition}/{file}" in sec.leftovers:
        return "listed under Leftovers / in-flight files"
    if name in CHECKPOINT_KINDS_BEYOND and (partition, file, f["offset"]) in sec.checkpoints_ahead:
        return "listed under Checkpoints compared with the logs (checkpoints beyond log end)"
    if name in CHECKPOINT_KINDS_BEYOND and row is not None and any(a.endswith(".log") for a in row.absent):
        return "its .log is listed as absent from the snapshot, so the log ends early here"
    if name == "META_PROPERTIES_MISSING" and sec.no_meta:
        return "SOURCES.md: no meta.properties in this log dir"
    return None


# Differences between SOURCES.md's numbers and this fixture set that are not logtool's doing. Each is
# asserted exactly, so a change in the fixtures or in logtool shows up here.
SOURCES_DIFFERENCES = {
    "ItumelengMogase__Real-Time-Data-Pipeline-for-Patient-Admissions/kafka-data": (
        "The overview/Totals count one partition that is not in the fixture: the Kafka Connect config "
        "partition `docker-connect-configs-0` was removed (SOURCES.md 'Notes on content': Connect session "
        "keys); the offset checkpoints still name it at offset 10. The per-partition table does not list it "
        "(its rows add up to the fixture).",
        {"partitions": 1, "log_files": 1, "log_bytes": 1950, "batches": 10, "records": 10,
         "magic": {2: 10}, "codecs": {"none": 10}, "control": 0, "txn": 0},
    ),
}


@dataclass
class Tally:
    partitions: int = 0
    log_files: int = 0
    log_bytes: int = 0
    batches: int = 0
    records: int = 0
    magic: Counter = field(default_factory=Counter)
    codecs: Counter = field(default_factory=Counter)
    control: int = 0
    txn: int = 0

    def as_dict(self) -> dict:
        return {"partitions": self.partitions, "log_files": self.log_files, "log_bytes": self.log_bytes,
                "batches": self.batches, "records": self.records, "magic": dict(+self.magic),
                "codecs": dict(+self.codecs), "control": self.control, "txn": self.txn}


def _add(t: Tally, d: dict) -> None:
    for k, v in d.items():
        if isinstance(v, dict):
            getattr(t, k).update(v)
        else:
            setattr(t, k, getattr(t, k) + v)


@functools.cache
def logtool_partition_tally(log_dir: str, partition: str) -> Tally:
    """What logtool says about one partition: counts from `verify --deep` JSON, batch kinds from the walk."""
    p = partitions_of(log_dir)[f"{log_dir}/{partition}"]
    t = Tally(partitions=1)
    for s in p["segments"]:
        t.log_files += 1
        t.log_bytes += s["size"]
        t.batches += s["batches"]
        t.records += s["records"] or 0
    part = Partition.from_dir(REAL / log_dir / partition)
    try:
        for seg in part.segments:
            for v in seg.walk():
                t.magic[v.magic] += 1
                t.codecs[v.codec_name] += 1
                t.control += v.is_control
                t.txn += v.is_transactional
    finally:
        part.close()
    return t


@functools.cache
def swap_tally(log_dir: str, partition: str) -> Tally:
    """`.log.swap` leftovers, read by kafka-python. SOURCES.md counts them as .log files; logtool reports
    them as LEFTOVER_FILE and does not walk them (Kafka would apply the swap at load)."""
    t = Tally()
    for f in sorted((REAL / log_dir / partition).glob("*.log.swap")):
        kp = kp_read(f)
        t.log_files += 1
        t.log_bytes += kp.size
        t.batches += len(kp.batches)
        t.records += sum(len(b.records) for b in kp.batches)
        for b in kp.batches:
            t.magic[b.magic] += 1
            t.codecs[b.codec] += 1
            t.control += b.is_control
            t.txn += b.is_transactional
    return t


def _compare(got: dict, want: dict) -> list[str]:
    return [f"{k}: logtool {got[k]!r}, SOURCES.md {want[k]!r}" for k in want if got[k] != want[k]]
