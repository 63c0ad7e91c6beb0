"""logtool against whole log directories written by real brokers (`../shared/fixtures/real/`).

The reference is kafka-python's own reader (`kafka.record.MemoryRecords` / `DefaultRecordBatch`,
`validate_crc()`, record iteration), run on the same bytes, plus what `SOURCES.md` says about each log
dir: its totals, its per-partition table, the files absent from the snapshot and the leftovers it lists.

* `test_logs_match_kafka_python`: every `.log`, batch by batch and record by record, through the Python
  walker and through `logtool verify --deep --format json`.
* `test_findings_are_explained_by_sources`: the only warnings/errors are the ones SOURCES.md explains.
* `test_totals_match_sources_overview` / `test_partition_rows_match_sources`: logtool's counts against
  SOURCES.md. Where SOURCES.md counts something logtool does not walk, the difference is computed from
  the fixture and named in `SOURCES_DIFFERENCES` below, never silently dropped.

The fixture set is data only and is never written to.
"""
from __future__ import annotations

import pytest
from conftest import REAL  # noqa: E402 - fails loudly when ../shared is missing
from support.real import (
    DESCRIBED,
    LOG_DIRS,
    SOURCES_DIFFERENCES,
    SOURCES_MD,
    TARGETS,
    Tally,
    _add,
    _batch_diffs,
    _compare,
    _explanation,
    _lt_record,
    _rel,
    all_findings,
    kp_read,
    logtool_partition_tally,
    partition_dirs,
    partitions_of,
    section,
    sources,
    swap_tally,
    verify_json,
)

from logtool.format.records import iter_records
from logtool.store.partition import Partition
from logtool.store.segment import WalkOutcome

# ----------------------------------------------------------------------------------- SOURCES.md parser


# --------------------------------------------------------------------------------- logtool, kafka-python


# ------------------------------------------------------------------------------------ the fixture set

def test_fixture_set_is_described():
    described = set(sources())
    undescribed = [ld for ld in LOG_DIRS if ld not in described]
    assert LOG_DIRS, f"no log dirs found under {REAL}"
    missing = [k for k in described if k not in LOG_DIRS]
    assert not missing, f"SOURCES.md describes log dirs that are not in {REAL}: {missing}"
    # SOURCES.md says which directories it does not describe; nothing else may be undescribed.
    text = SOURCES_MD.read_text()
    named_as_undescribed = {ld for ld in undescribed if f"`{ld.split('/')[0]}/`" in text}
    assert set(undescribed) == named_as_undescribed, \
        f"log dirs SOURCES.md neither describes nor names as undescribed: {sorted(set(undescribed) - named_as_undescribed)}"


# ------------------------------------------------------------------- every .log against kafka-python


@pytest.mark.parametrize("target", TARGETS)
def test_logs_match_kafka_python(target):
    parts = partitions_of(target)
    diffs: list[str] = []
    n_logs = 0
    for pdir in partition_dirs(target):
        prel = _rel(pdir)
        part = Partition.from_dir(pdir)
        try:
            lt_segments = {s["file"]: s for s in (parts.get(prel) or {}).get("segments") or []}
            files_on_disk = sorted(p.name for p in pdir.glob("*.log"))
            walked = sorted(s.log_path.name for s in part.segments)
            if walked != files_on_disk:
                diffs.append(f"{prel}: Partition.from_dir finds {walked}, the directory holds {files_on_disk}")
            if sorted(lt_segments) != files_on_disk:
                diffs.append(f"{prel}: `logtool verify` lists segments {sorted(lt_segments)}, "
                             f"the directory holds {files_on_disk}")
            for seg in part.segments:
                n_logs += 1
                name = f"{prel}/{seg.log_path.name}"
                kp = kp_read(seg.log_path)
                # SOURCES.md: no real log is damaged; kafka-python agrees.
                if kp.valid_bytes != kp.size or not all(b.crc_valid for b in kp.batches):
                    diffs.append(f"{name}: kafka-python finds damage (valid {kp.valid_bytes} of {kp.size} bytes)")
                result = WalkOutcome(0)
                views = list(seg.walk(result))
                if len(views) != len(kp.batches):
                    diffs.append(f"{name}: walk yields {len(views)} batches, kafka-python {len(kp.batches)}")
                if result.valid_bytes != kp.size or result.stop is not None:
                    diffs.append(f"{name}: walk ends the valid prefix at {result.valid_bytes} of {kp.size} "
                                 f"bytes (stop {result.stop!r}); kafka-python reads all {kp.valid_bytes}")
                for view, kb in zip(views, kp.batches):
                    bd = _batch_diffs(view, kb)
                    diffs += [f"{name} batch @{kb.position}: {d}" for d in bd]
                    if bd:
                        continue
                    try:
                        recs = [_lt_record(r) for r in iter_records(seg.buf, view)]
                    except Exception as e:  # noqa: BLE001 - report any failure as a difference
                        diffs.append(f"{name} batch @{kb.position}: iter_records raised {type(e).__name__}: {e}")
                        continue
                    if len(recs) != len(kb.records):
                        diffs.append(f"{name} batch @{kb.position}: {len(recs)} records, kafka-python {len(kb.records)}")
                    for i, (g, w) in enumerate(zip(recs, kb.records)):
                        if g != w:
                            diffs.append(f"{name} batch @{kb.position} record {i}: logtool {g!r:.200}, "
                                         f"kafka-python {w!r:.200}")
                js = lt_segments.get(seg.log_path.name)
                if js is None:
                    continue
                want = {
                    "size": kp.size, "valid_bytes": kp.size, "first_invalid_position": None,
                    "batches": len(kp.batches), "records": sum(len(b.records) for b in kp.batches),
                    "first_offset": kp.batches[0].base_offset if kp.batches else None,
                    "last_offset": kp.batches[-1].last_offset if kp.batches else None,
                    "magic": sorted({b.magic for b in kp.batches}),
                    "codecs": sorted({b.codec for b in kp.batches}),
                    "max_timestamp": max((b.max_timestamp for b in kp.batches), default=None),
                }
                for key, w in want.items():
                    g = sorted(js.get(key) or []) if key in ("magic", "codecs") else js.get(key)
                    if g != w:
                        diffs.append(f"{name}: `logtool verify --deep` {key} = {g!r}, kafka-python {w!r}")
        finally:
            part.close()
    assert n_logs, f"{target}: no .log files found"
    assert not diffs, (f"{target}: logtool disagrees with kafka-python ({len(diffs)} differences):\n  "
                       + "\n  ".join(diffs[:60]))


# ---------------------------------------------------------------------- findings SOURCES.md explains


@pytest.mark.parametrize("log_dir", LOG_DIRS)
def test_findings_are_explained_by_sources(log_dir):
    rc, report = verify_json(log_dir)
    sec = section(log_dir)
    problems = [f for _w, f in all_findings(report) if f["severity"] in ("warning", "error")]
    assert rc == (4 if problems else 0), f"{log_dir}: exit code {rc} with {len(problems)} warnings/errors"
    unexplained = [
        f"{where or log_dir}: {f['name']} ({f['severity']}) on {f['file']} at {f['position']}: {f['message']}"
        for where, f in all_findings(report)
        if f["severity"] in ("warning", "error") and _explanation(sec, where, log_dir, f) is None
    ]
    note = "" if sec is not None else " (SOURCES.md does not describe this log dir, so it explains none of them)"
    assert not unexplained, (f"{log_dir}: {len(unexplained)} warning/error findings SOURCES.md does not "
                             f"explain{note}:\n  " + "\n  ".join(unexplained))


@pytest.mark.parametrize("log_dir", DESCRIBED)
def test_everything_sources_lists_is_found(log_dir):
    """The converse: each leftover SOURCES.md lists inside a partition is reported as LEFTOVER_FILE, and each
    non-empty listed segment whose .index/.timeindex is absent gets INDEX_MISSING/TIMEINDEX_MISSING."""
    _rc, report = verify_json(log_dir)
    sec = section(log_dir)
    got = {(where, f["name"], f["file"]) for where, f in all_findings(report)}
    missing = []
    for item in sorted(sec.leftovers):
        if item.endswith("/"):
            continue  # a leftover directory (test-topic-0.<id>-delete/); not a partition file
        partition, file = item.split("/", 1)
        if (f"{log_dir}/{partition}", "LEFTOVER_FILE", file) not in got:
            missing.append(f"LEFTOVER_FILE for {item}")
    for partition, row in sec.rows.items():
        for base in row.bases:
            if "swap" in base:
                continue
            log = REAL / log_dir / partition / f"{int(base):020d}.log"
            if not log.is_file() or log.stat().st_size == 0:
                continue
            for ext, kind in ((".index", "INDEX_MISSING"), (".timeindex", "TIMEINDEX_MISSING")):
                if f"{log.stem}{ext}" in row.absent and (f"{log_dir}/{partition}", kind, f"{log.stem}{ext}") not in got:
                    missing.append(f"{kind} for {partition}/{log.stem}{ext}")
    assert not missing, f"{log_dir}: logtool does not report what SOURCES.md lists:\n  " + "\n  ".join(missing)


# --------------------------------------------------------------------------- counts against SOURCES.md


@pytest.mark.parametrize("log_dir", DESCRIBED)
def test_totals_match_sources_overview(log_dir):
    sec = section(log_dir)
    _rc, report = verify_json(log_dir)
    got, swaps = Tally(), Tally()
    for prel in partitions_of(log_dir):
        partition = prel[len(log_dir) + 1:]
        _add(got, logtool_partition_tally(log_dir, partition).as_dict())
        _add(swaps, swap_tally(log_dir, partition).as_dict())
    # logtool's own summary agrees with its per-partition figures.
    summary = report["summary"]
    assert (summary["partitions"], summary["segments"], summary["bytes"], summary["batches"]) == \
        (got.partitions, got.log_files, got.log_bytes, got.batches), f"{log_dir}: summary {summary} vs {got}"

    adjusted = Tally()
    _add(adjusted, got.as_dict())
    _add(adjusted, swaps.as_dict())  # what SOURCES.md counts that logtool does not walk
    explained = ""
    if log_dir in SOURCES_DIFFERENCES:
        reason, delta = SOURCES_DIFFERENCES[log_dir]
        _add(adjusted, delta)
        explained = f"\n(after adding the documented difference: {reason})"
    if swaps.log_files:
        explained += f"\n(after adding {swaps.log_files} .log.swap leftover(s) SOURCES.md counts as .log: {swaps.as_dict()})"
    diffs = _compare(adjusted.as_dict(), sec.totals)
    assert not diffs, f"{log_dir}: totals differ from SOURCES.md's overview:\n  " + "\n  ".join(diffs) + explained


@pytest.mark.parametrize("log_dir", DESCRIBED)
def test_partition_rows_match_sources(log_dir):
    sec = section(log_dir)
    present = {prel[len(log_dir) + 1:] for prel in partitions_of(log_dir)}
    diffs = []
    for partition, row in sorted(sec.rows.items()):
        if partition not in present:
            diffs.append(f"{partition}: listed in SOURCES.md, not found by logtool")
            continue
        t = Tally()
        _add(t, logtool_partition_tally(log_dir, partition).as_dict())
        _add(t, swap_tally(log_dir, partition).as_dict())
        got = t.as_dict()
        got["magic"], got["codecs"] = set(got["magic"]), set(got["codecs"])
        want = {"log_files": row.log_files, "log_bytes": row.log_bytes, "batches": row.batches,
                "records": row.records, "magic": row.magic, "codecs": row.codecs, "control": row.control,
                "txn": row.txn}
        diffs += [f"{partition}: {d}" for d in _compare(got, want)]
        bases = sorted(int(b) for b in row.bases if "swap" not in b)
        lt_bases = sorted(s["base_offset"] for s in partitions_of(log_dir)[f"{log_dir}/{partition}"]["segments"])
        if bases != lt_bases:
            diffs.append(f"{partition}: segment base offsets logtool {lt_bases}, SOURCES.md {bases}")
    # "(N more)": every other partition holds only empty .log files.
    others = sorted(present - set(sec.rows))
    if len(others) != sec.more:
        diffs.append(f"{len(others)} partitions are not listed one by one, SOURCES.md says {sec.more}")
    for partition in others:
        t = logtool_partition_tally(log_dir, partition)
        if t.log_bytes or t.batches:
            diffs.append(f"{partition}: SOURCES.md folds it into '(N more) only empty .log files', logtool "
                         f"finds {t.log_bytes} bytes and {t.batches} batches")
    assert not diffs, f"{log_dir}: per-partition figures differ from SOURCES.md:\n  " + "\n  ".join(diffs)
