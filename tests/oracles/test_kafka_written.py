"""logtool against partition directories written and judged by Apache Kafka's own Java code.

Every case under `../shared/fixtures/kafka-written/` holds one partition directory and `expected.json`:
the batches as Kafka's `FileRecords` iterator sees them (`asWritten`), and what `LogSegment.recover`
decided for each segment (`segmentRecover`). These tests hold logtool to Kafka's answers, twice:

* end to end, through the installed `logtool verify --deep --format json` (exit code, per-segment
  summary, findings), and
* at the Python level, batch by batch (`Segment.walk()`) and record by record (`iter_records`).

The fixture set is data only and is never written to.
"""
from __future__ import annotations

import functools
import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import KAFKA_WRITTEN, require  # noqa: E402 - fails loudly when ../shared is missing

from logtool.format.records import iter_records, parse_control
from logtool.store.partition import Partition
from logtool.store.segment import WalkOutcome

require(KAFKA_WRITTEN)

CASES = sorted(p.name for p in KAFKA_WRITTEN.iterdir() if p.is_dir())
CORRUPT = [c for c in CASES if c.startswith("corrupt-")]
# Clean cases Kafka still wants to cut: the crash left the active segment zero-padded (a preallocated tail).
NEEDS_RECOVERY = {"v2-crash-preallocated"}

EXIT_CLEAN, EXIT_PROBLEMS = 0, 4


# --------------------------------------------------------------------------------------------- helpers

@functools.cache
def expected(case: str) -> dict:
    return json.loads((KAFKA_WRITTEN / case / "expected.json").read_text())


def partition_dir(case: str) -> Path:
    return KAFKA_WRITTEN / case / expected(case)["partitionDir"]


def logtool_cmd() -> list[str]:
    script = Path(sys.executable).with_name("logtool")
    return [str(script)] if script.exists() else [sys.executable, "-m", "logtool"]


@functools.cache
def verify_json(path: Path) -> tuple[int, dict]:
    """`logtool verify --deep --format json PATH`, run once per path: (exit code, parsed report)."""
    cmd = logtool_cmd() + ["verify", "--deep", "--format", "json", str(path)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    try:
        report = json.loads(proc.stdout)
    except json.JSONDecodeError:
        pytest.fail(f"{' '.join(cmd)} did not print JSON (exit {proc.returncode}).\n"
                    f"stdout: {proc.stdout[:2000]}\nstderr: {proc.stderr[-3000:]}")
    return proc.returncode, report


def all_findings(report: dict) -> list[dict]:
    """Every finding of the report wherever it sits (top level, log dirs, partitions, segments)."""
    out = list(report.get("findings") or [])
    for ld in report.get("log_dirs") or []:
        out += ld.get("findings") or []
    for p in report.get("partitions") or []:
        out += p.get("findings") or []
        for s in p.get("segments") or []:
            out += s.get("findings") or []
    return out


def problems(report: dict) -> list[dict]:
    return [f for f in all_findings(report) if f["severity"] in ("warning", "error")]


def fmt_findings(findings: list[dict]) -> str:
    return "\n".join(f"  {f['name']} ({f['severity']}) file={f['file']} position={f['position']} "
                     f"offset={f['offset']}: {f['message']}" for f in findings) or "  (none)"


def recover_of(case: str, base_offset: int) -> dict:
    [rec] = [r for r in expected(case)["segmentRecover"] if r["baseOffset"] == base_offset]
    return rec


def valid_batches(case: str, seg: dict) -> list[dict]:
    """Kafka's batches of a segment that lie wholly inside what LogSegment.recover keeps."""
    valid_size = recover_of(case, seg["baseOffset"])["validSize"]
    return [b for b in seg["log"]["batches"] if b["position"] + b["size"] <= valid_size]


def derived_case(case: str) -> str | None:
    src = expected(case).get("derivedFrom")
    return src.split("/")[-1] if src else None


def kafka_record_count(case: str, seg: dict) -> int | None:
    """Records Kafka decoded in the valid batches of `seg`. Corrupt cases carry no record lists; their
    untouched batches are byte-identical (same position and CRC) to the clean case they were copied
    from, whose lists are used then. None when some valid batch cannot be matched that way."""
    total = 0
    source = None
    for b in valid_batches(case, seg):
        if "records" in b:
            total += len(b["records"])
            continue
        if source is None:
            src = derived_case(case)
            if src is None or src not in CASES:
                return None
            source = {(s["log"]["file"], sb["position"], sb["crc"]): sb
                      for s in expected(src)["asWritten"]["segments"] for sb in s["log"]["batches"]}
        twin = source.get((seg["log"]["file"], b["position"], b["crc"]))
        if twin is None or "records" not in twin:
            return None
        total += len(twin["records"])
    return total


# ------------------------------------------------------------------------------------ the fixture set

def test_fixture_set_is_complete():
    readme = (KAFKA_WRITTEN / "README.md").read_text()
    listed = sorted(line[4:].strip() for line in readme.splitlines() if line.startswith("### "))
    assert CASES == listed, f"case directories {CASES} differ from the cases README.md lists {listed}"
    assert len(CASES) == 26, f"expected 26 Kafka-written cases, found {len(CASES)}: {CASES}"
    for case in CASES:
        assert partition_dir(case).is_dir(), f"{case}: partition dir {partition_dir(case)} is missing"


# ------------------------------------------------------------------------- end to end: segment summary

@pytest.mark.sample(6)
@pytest.mark.parametrize("case", CASES)
def test_verify_segments_match_kafka(case):
    exp = expected(case)
    _rc, report = verify_json(partition_dir(case))
    [part] = report["partitions"]
    got = {s["file"]: s for s in part["segments"]}
    want_files = [s["log"]["file"] for s in exp["asWritten"]["segments"]]
    assert sorted(got) == sorted(want_files), f"{case}: logtool lists segments {sorted(got)}, Kafka {want_files}"

    diffs = []
    for seg in exp["asWritten"]["segments"]:
        name = seg["log"]["file"]
        s = got[name]
        rec = recover_of(case, seg["baseOffset"])
        valid = valid_batches(case, seg)
        want = {
            "base_offset": seg["baseOffset"],
            "size": seg["log"]["size"],
            "valid_bytes": rec["validSize"],
            "first_invalid_position": rec["validSize"] if rec["truncatedBytes"] > 0 else None,
            "batches": len(valid),
            "first_offset": valid[0]["baseOffset"] if valid else None,
            "last_offset": valid[-1]["lastOffset"] if valid else None,
            "magic": sorted({b["magic"] for b in valid}),
            "codecs": sorted({b["codec"] for b in valid}),
            "max_timestamp": max((b["maxTimestamp"] for b in valid), default=None),
        }
        if valid:
            assert want["last_offset"] == rec["lastValidOffset"], f"{case}/{name}: fixture inconsistent"
        n_records = kafka_record_count(case, seg)
        if n_records is not None:
            want["records"] = n_records
        for key, w in want.items():
            g = s.get(key)
            if key in ("magic", "codecs"):
                g = sorted(g or [])
            if g != w:
                diffs.append(f"  {name}: {key}: logtool {g!r}, Kafka {w!r}")
    assert not diffs, f"{case}: `logtool verify --deep` disagrees with Kafka:\n" + "\n".join(diffs)


# --------------------------------------------------------------------- end to end: exit code, findings

def _damage(case: str) -> tuple[str, set[str], int | None] | None:
    """(file, acceptable finding names, position) Kafka's recovery says the log damage is at, if any."""
    cut = [r for r in expected(case)["segmentRecover"] if r["truncatedBytes"] > 0]
    if not cut:
        return None
    [rec] = cut
    [seg] = [s for s in expected(case)["asWritten"]["segments"] if s["baseOffset"] == rec["baseOffset"]]
    kind = (expected(case).get("corruption") or {}).get("kind")
    names = {
        "bit-flip": {"CRC_MISMATCH"},
        "garbage-appended": {"BAD_LENGTH", "GARBAGE"},
        "torn-tail": {"TORN_BATCH"},
        "zero-filled-tail": {"PREALLOCATED_TAIL"},
        None: {"PREALLOCATED_TAIL"},  # v2-crash-preallocated: the active segment is still zero-padded
    }[kind]
    return seg["log"]["file"], names, rec["validSize"]


def test_damage_positions_agree_with_corruption_notes():
    """The corruption notes and Kafka's recovery name the same byte (guards the expectations below)."""
    for case in CORRUPT:
        c = expected(case)["corruption"]
        dmg = _damage(case)
        if dmg is None:
            continue
        file, _names, pos = dmg
        assert file == c["file"], case
        note = c.get("batchPosition", c.get("cutInsideBatchAtPosition", c.get("originalSize")))
        assert pos == note, f"{case}: recovery keeps {pos} bytes, corruption note says {note}"


@pytest.mark.parametrize("case", CASES)
def test_verify_exit_code_and_findings(case):
    exp = expected(case)
    rc, report = verify_json(partition_dir(case))
    found = problems(report)
    listing = fmt_findings(found)
    corruption = exp.get("corruption")

    if corruption is None and case not in NEEDS_RECOVERY:
        assert not found, f"{case} is clean (Kafka recovers it unchanged) but logtool reports:\n{listing}"
        assert rc == EXIT_CLEAN, f"{case}: exit code {rc}, want {EXIT_CLEAN} for a clean partition"
        return

    assert rc == EXIT_PROBLEMS, f"{case}: exit code {rc}, want {EXIT_PROBLEMS}; findings:\n{listing}"

    def expect(names: set[str], file: str, position: int | set[int] | None = None) -> None:
        positions = position if isinstance(position, set) else {position}
        hits = [f for f in found if f["name"] in names and f["file"] == file
                and (position is None or f["position"] in positions)]
        where = f" at position {sorted(positions)}" if position is not None else ""
        assert hits, (f"{case}: expected {' or '.join(sorted(names))} on {file}{where}; "
                      f"logtool reports:\n{listing}")

    dmg = _damage(case)
    if dmg is not None:
        file, names, pos = dmg
        expect(names, file, pos)
    kind = (corruption or {}).get("kind")
    if kind == "index-truncated":
        expect({"INDEX_CORRUPT"}, corruption["file"])
    elif kind == "timeindex-backwards":
        expect({"TIMEINDEX_CORRUPT"}, corruption["file"])
    elif kind == "batch-offset-goes-backwards":
        expect({"OFFSET_NOT_INCREASING"}, corruption["file"], corruption["batchPosition"])
    elif kind == "index-wrong-positions":
        # `position` of an index finding may name the entry's byte in the .index or the log position it
        # points at: accept either, but every changed entry must be reported.
        for slot, _old, new in corruption["changedEntries[slot,oldPosition,newPosition]"]:
            expect({"INDEX_WRONG_POSITION"}, corruption["file"], {new, slot * 8})
        wrong = [f for f in found if f["name"] == "INDEX_WRONG_POSITION"]
        assert len(wrong) == len(corruption["changedEntries[slot,oldPosition,newPosition]"]), \
            f"{case}: only the changed entries are wrong; logtool reports:\n{fmt_findings(wrong)}"
    elif dmg is None:
        pytest.fail(f"{case}: no expectation written for corruption kind {kind!r}")

    # The damage is in one segment; nothing about the other (untouched) segments may be reported, except a
    # producer snapshot the damage left beyond the log end Kafka's own LogLoader reached.
    damaged_file = corruption["file"] if corruption else dmg[0]
    stem = damaged_file.split(".")[0]
    kafka_end = exp["logLoaderUnclean"][0]["logEndOffset"]
    elsewhere = [f for f in found if not (f["file"] or "").startswith(stem + ".")
                 and not (f["name"] == "PRODUCER_SNAPSHOT_BEYOND_LOG" and f["offset"] > kafka_end)]
    assert not elsewhere, (f"{case}: the damage is in {damaged_file}, but logtool also reports "
                           f"problems elsewhere:\n{fmt_findings(elsewhere)}")


# ------------------------------------------------------------------ Python level: batches of the walk

V2_FIELDS = {  # Kafka's key: BatchView attribute
    "partitionLeaderEpoch": "partition_leader_epoch",
    "producerId": "producer_id",
    "producerEpoch": "producer_epoch",
    "baseSequence": "base_sequence",
    "lastSequence": "last_sequence",
    "isTransactional": "is_transactional",
    "isControl": "is_control",
}


def _view_diffs(view, kb: dict) -> list[str]:
    got = {
        "position": view.position, "size": view.size, "magic": view.magic,
        "baseOffset": view.base_offset, "lastOffset": view.last_offset,
        "crc": view.crc_stored, "isValid": view.is_valid, "codec": view.codec_name,
        "timestampType": view.timestamp_type, "maxTimestamp": view.max_timestamp,
    }
    if kb["magic"] >= 2:
        got.update({k: getattr(view, a) for k, a in V2_FIELDS.items()})
        got["deleteHorizonMs"] = view.first_timestamp if view.has_delete_horizon else None
        got["count"] = view.count
    out = [f"{k}: logtool {g!r}, Kafka {kb[k]!r}" for k, g in got.items() if g != kb[k]]
    if kb["magic"] < 2:
        # Kafka reports no count for any legacy entry; logtool gives 1 for a plain (uncompressed) message
        # and None for a compressed wrapper.
        want = {None, 1} if view.codec == 0 else {None}
        if kb["count"] is not None or view.count not in want:
            out.append(f"count: logtool {view.count!r}, Kafka {kb['count']!r}")
    return out


@pytest.mark.parametrize("case", CASES)
def test_walk_batches_match_kafka(case):
    exp = expected(case)
    part = Partition.from_dir(partition_dir(case))
    diffs = []
    try:
        by_base = {s.base_offset: s for s in part.segments}
        assert sorted(by_base) == sorted(s["baseOffset"] for s in exp["asWritten"]["segments"]), \
            f"{case}: logtool's segments {sorted(by_base)} differ from Kafka's"
        for seg in exp["asWritten"]["segments"]:
            name = seg["log"]["file"]
            rec = recover_of(case, seg["baseOffset"])
            want = valid_batches(case, seg)
            result = WalkOutcome(0)
            views = list(by_base[seg["baseOffset"]].walk(result))
            if len(views) != len(want):
                diffs.append(f"{name}: walk yields {len(views)} batches at "
                             f"{[v.position for v in views]}, Kafka keeps {len(want)} at {[b['position'] for b in want]}")
            for view, kb in zip(views, want):
                diffs += [f"{name} batch @{kb['position']}: {d}" for d in _view_diffs(view, kb)]
            if result.valid_bytes != rec["validSize"]:
                diffs.append(f"{name}: walk ends the valid prefix at {result.valid_bytes}, "
                             f"Kafka's recovery at {rec['validSize']}")
            if rec["truncatedBytes"] > 0:
                if result.stop is None or result.stop.position != rec["validSize"]:
                    diffs.append(f"{name}: walk stop {result.stop!r}, Kafka cuts at {rec['validSize']}")
                bad = [b for b in seg["log"]["batches"] if b["position"] == rec["validSize"]]
                if bad and not bad[0]["isValid"]:
                    # Kafka saw a whole batch there and found it invalid: the walk must have seen it too.
                    sv = result.stop_view
                    if sv is None or sv.position != bad[0]["position"] or sv.crc_stored != bad[0]["crc"] \
                            or sv.is_valid:
                        diffs.append(f"{name}: invalid batch @{bad[0]['position']} (crc {bad[0]['crc']}) "
                                     f"not reported as the walk's stop_view ({sv!r})")
            elif result.stop is not None:
                diffs.append(f"{name}: walk stops early ({result.stop!r}); Kafka keeps the whole file")
    finally:
        part.close()
    assert not diffs, f"{case}: Segment.walk() disagrees with Kafka's FileRecords:\n  " + "\n  ".join(diffs)


# ----------------------------------------------------------------- Python level: records of each batch

def _has_records(case: str) -> bool:
    return any("records" in b for s in expected(case)["asWritten"]["segments"] for b in s["log"]["batches"])


RECORD_CASES = [c for c in CASES if _has_records(c)]


def _record_diffs(rec, kr: dict, is_control: bool) -> list[str]:
    def size(b):
        return -1 if b is None else len(b)

    got = {
        "offset": rec.offset, "timestamp": rec.timestamp,
        "keySize": size(rec.key), "valueSize": size(rec.value),
        "valueSha256_16": None if rec.value is None else hashlib.sha256(rec.value).hexdigest()[:16],
    }
    if kr.get("key") is not None:
        got["key"] = rec.key.decode("utf-8", "replace") if rec.key is not None else None
    if "sequence" in kr:
        got["sequence"] = rec.sequence
    if "headers" in kr:
        got["headers"] = [{"key": h.key.decode("utf-8", "replace"), "valueSize": size(h.value)}
                          for h in rec.headers]
    if is_control and "controlType" in kr:
        marker = parse_control(rec)
        got["controlType"] = marker.type_name
        got["coordinatorEpoch"] = marker.coordinator_epoch
    return [f"{k}: logtool {g!r}, Kafka {kr[k]!r}" for k, g in got.items() if g != kr[k]]


@pytest.mark.parametrize("case", RECORD_CASES)
def test_records_match_kafka(case):
    exp = expected(case)
    part = Partition.from_dir(partition_dir(case))
    diffs = []
    try:
        by_base = {s.base_offset: s for s in part.segments}
        for seg in exp["asWritten"]["segments"]:
            name = seg["log"]["file"]
            segment = by_base[seg["baseOffset"]]
            kafka = {b["position"]: b for b in seg["log"]["batches"]}
            for view in segment.walk():
                kb = kafka.get(view.position)
                if kb is None or "records" not in kb:
                    continue  # batch-level disagreement is test_walk_batches_match_kafka's to report
                try:
                    recs = list(iter_records(segment.buf, view))
                except Exception as e:  # noqa: BLE001 - report any failure as a difference
                    diffs.append(f"{name} batch @{view.position}: iter_records raised {type(e).__name__}: {e}")
                    continue
                if len(recs) != len(kb["records"]):
                    diffs.append(f"{name} batch @{view.position}: {len(recs)} records, Kafka {len(kb['records'])}")
                for i, (r, kr) in enumerate(zip(recs, kb["records"])):
                    diffs += [f"{name} batch @{view.position} record {i} (offset {kr['offset']}): {d}"
                              for d in _record_diffs(r, kr, bool(kb.get("isControl")))]
    finally:
        part.close()
    assert not diffs, (f"{case}: iter_records disagrees with Kafka's records ({len(diffs)} differences):\n  "
                       + "\n  ".join(diffs[:50]))
