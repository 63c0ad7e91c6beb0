"""The numbers a truncate plan shows are the numbers an operator approves the repair on: they are held here to
what `truncate --apply` really does to a copy of the partition.

* `bytes_leaving` is the drop in the partition's .log bytes (the quarantine also takes replaced indexes and
  leader-epoch files, and with --excise the stretches it splits off come back as segments);
* `records_leaving` is the drop in valid records `dump --salvage` reads, past the damage too;
* `log_end_offset_as_written` is one past the highest offset `dump --salvage` reads before the repair,
  `log_end_offset_after` what `verify` finds after it, and Kafka's recovery's log end is Kafka's own
  (expected.json, recovery point 0);
* the text shows the same numbers as the JSON.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest
from conftest import KAFKA_WRITTEN, LOGTOOL, require

require(KAFKA_WRITTEN)

# Made here, as in test_truncate.py: v2-none-mixed with the last byte of a batch in the middle of the FIRST
# segment flipped (under its CRC), so that Kafka's rule drops the rest of it and all five later segments.
FIRST = "first-segment-bitflip"
FIRST_FROM = "v2-none-mixed"

CASES = [
    ("corrupt-bitflip-last-segment", []),
    ("corrupt-bitflip-last-segment", ["--excise"]),
    ("corrupt-torn-tail", []),
    ("corrupt-offset-backwards", ["--strict"]),
    (FIRST, []),
    (FIRST, ["--excise"]),
]


def expected(case: str) -> dict:
    return json.loads((KAFKA_WRITTEN / case / "expected.json").read_text())


def first_damaged_batch() -> dict:
    batches = expected(FIRST_FROM)["asWritten"]["segments"][0]["log"]["batches"]
    return batches[len(batches) // 2]


def kafka_log_end(case: str) -> int:
    """Kafka's log end offset after its recovery with recovery point 0."""
    if case == FIRST:  # recovery stops at the damaged batch
        return first_damaged_batch()["baseOffset"]
    return next(r for r in expected(case)["logLoaderUnclean"] if r["recoveryPoint"] == 0)["logEndOffset"]


def writable_copy(case: str, case_copy) -> Path:
    """A copy of the case's partition dir (its log dir is tmp_path), writable as a broker's is."""
    pdir = case_copy(FIRST_FROM if case == FIRST else case)
    os.chmod(pdir, 0o755)
    for p in pdir.iterdir():
        os.chmod(p, 0o644)
    if case == FIRST:
        bad = first_damaged_batch()
        log = pdir / f"{0:020d}.log"
        data = bytearray(log.read_bytes())
        data[bad["position"] + bad["size"] - 1] ^= 0xFF
        log.write_bytes(bytes(data))
    return pdir


def logtool(*args) -> subprocess.CompletedProcess:
    return subprocess.run([str(LOGTOOL), *map(str, args)], capture_output=True, text=True, timeout=120)


def log_bytes(pdir: Path) -> int:
    return sum(p.stat().st_size for p in pdir.glob("*.log"))


def salvaged_offsets(pdir: Path) -> list[int]:
    """The offset of every valid record `dump --salvage` reads, past damage too (not those of a batch whose
    CRC fails, which it marks unverified)."""
    r = logtool("dump", "--salvage", "--format", "jsonl", pdir)
    rows = [json.loads(line) for line in r.stdout.splitlines()]
    offsets = [row["offset"] for row in rows if row["type"] == "record" and not row.get("unverified")]
    assert offsets, r.stderr
    return offsets


def verified_log_end(pdir: Path) -> int:
    """The log end offset by what `verify` reports of the segments (Kafka's rule: the first segment whose
    valid prefix ends early, else the last; its last offset + 1, or its base offset when it is empty)."""
    r = logtool("verify", "--format", "json", pdir)
    segments = json.loads(r.stdout)["partitions"][0]["segments"]
    end = next((s for s in segments if s["first_invalid_position"] is not None), segments[-1])
    return end["last_offset"] + 1 if end["last_offset"] is not None else end["base_offset"]


NUMBERS = re.compile(r"log end offset as written (\d+) -> (\d+) after the repair \(Kafka's recovery: (\d+)\)\n"
                     r"  (\d+) bytes would leave the log dir \(kept in the quarantine\), (\d+) valid record\(s\) "
                     r"among them; Kafka's recovery drops (\d+) valid record\(s\) as written, --excise keeps (\d+)")
SUMMARY = re.compile(r"partition\(s\) to repair: (\d+) bytes would leave the log dir .*?(\d+) valid record\(s\) "
                     r"among them")
KEYS = ["log_end_offset_as_written", "log_end_offset_after", "log_end_offset_kafka_recovery", "bytes_leaving",
        "records_leaving", "valid_records_dropped_by_kafka", "records_kept_by_excise"]
KAFKA_KEYS = ["log_end_offset_kafka_recovery", "valid_records_dropped_by_kafka", "records_kept_by_excise"]


@pytest.mark.sample(1)
@pytest.mark.parametrize("case,flags", CASES, ids=[f"{c}{''.join(f)}" for c, f in CASES])
def test_plan_numbers_are_what_apply_moves(case, flags, case_copy, tmp_path_factory):
    pdir = writable_copy(case, case_copy)
    quarantine = tmp_path_factory.mktemp("q") / "q"  # outside the log dir, as truncate requires
    text = logtool("truncate", *flags, "--quarantine", quarantine, pdir)
    doc = logtool("truncate", *flags, "--format", "json", "--quarantine", quarantine, pdir)
    assert text.returncode == doc.returncode == 4, text.stderr + doc.stderr
    plan = json.loads(doc.stdout)
    [part] = plan["partitions"]
    # The other of the plain and the --excise plan, of the same bytes.
    twin = None if "--strict" in flags else logtool("truncate", *([] if flags else ["--excise"]), "--format", "json",
                                                    "--quarantine", quarantine, pdir)

    before_bytes, before_offsets = log_bytes(pdir), salvaged_offsets(pdir)
    applied = logtool("truncate", *flags, "--apply", "--format", "json", "--quarantine", quarantine, pdir)
    assert applied.returncode == 1, applied.stderr
    moved_bytes, moved_records = before_bytes - log_bytes(pdir), len(before_offsets) - len(salvaged_offsets(pdir))

    # What the operator reads and approves: the summary line.
    summary = SUMMARY.search(text.stdout)
    assert summary, text.stdout
    assert [int(n) for n in summary.groups()] == [moved_bytes, moved_records]

    # The JSON, and the same numbers in the partition's lines of the text.
    assert [plan["bytes_leaving"], plan["records_leaving"]] == [part["bytes_leaving"], part["records_leaving"]] \
        == [moved_bytes, moved_records]
    assert part["log_end_offset_as_written"] == max(before_offsets) + 1
    assert part["log_end_offset_after"] == verified_log_end(pdir) <= part["log_end_offset_as_written"]
    assert part["log_end_offset_kafka_recovery"] == part["log_end_offset_before"] == kafka_log_end(case)
    shown = NUMBERS.search(text.stdout)
    assert shown, text.stdout
    assert [int(n) for n in shown.groups()] == [part[k] for k in KEYS]
    [done] = json.loads(applied.stdout)["partitions"]  # the plan made again under --apply
    assert {k: done[k] for k in KEYS} == {k: part[k] for k in KEYS}

    # What Kafka's rule drops is what a plain plan moves (--strict may cut more); --excise keeps all of it
    # but what cannot become a segment.
    if not flags:
        assert part["valid_records_dropped_by_kafka"] == moved_records
    if flags == ["--excise"]:
        assert part["valid_records_dropped_by_kafka"] - part["records_kept_by_excise"] == moved_records
    if twin is not None:  # and both plans count them alike
        [other] = json.loads(twin.stdout)["partitions"]
        assert {k: other[k] for k in KAFKA_KEYS} == {k: part[k] for k in KAFKA_KEYS}


def test_the_verdicts_short_plan_is_the_plans_log_part(case_copy):
    """verify's verdict works out a damaged partition's loss with `plan_log_loss`, which leaves out the index
    and side-file actions and the walk they need: its segment actions and numbers are `plan_partition`'s,
    for every Kafka-written case (damaged or not), the first segment damaged, and the sample's torn clicks-2."""
    from conftest import ROOT, kafka_case

    from logtool.recovery.truncate_plan import ActionKind, plan_log_loss, plan_partition
    from logtool.rules.expected_index import DEFAULT_INDEX_INTERVAL_BYTES
    from logtool.store.partition import Partition

    log_part = (ActionKind.KEEP, ActionKind.TRUNCATE, ActionKind.QUARANTINE_SEGMENT)
    cases = sorted(p.name for p in KAFKA_WRITTEN.iterdir() if (p / "expected.json").is_file())
    dirs = [kafka_case(c) for c in cases] + [writable_copy(FIRST, case_copy), ROOT / "fixtures/sample-logdir/clicks-2"]
    cut = 0
    for pdir in dirs:
        plans = []
        for plan_of in (plan_log_loss, lambda p: plan_partition(p, False, DEFAULT_INDEX_INTERVAL_BYTES)):
            part = Partition.from_dir(pdir)
            try:
                plan = plan_of(part)
            finally:
                part.close()
            plans.append((plan.log_start, plan.log_end_before, plan.log_end_as_written, plan.log_end_after,
                          plan.bytes_leaving, plan.records_leaving, plan.valid_records_dropped,
                          plan.valid_records_dropped_by_kafka, plan.cause, plan.unreadable,
                          [a for a in plan.actions if a.action in log_part]))
        assert plans[0] == plans[1], pdir
        cut += plans[0][4] > 0
    assert cut >= 10  # most of them cut: the comparison covers the cuts, not only logs kept whole
