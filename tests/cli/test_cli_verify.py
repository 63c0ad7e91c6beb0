"""`logtool verify` and `logtool scan` end to end, through the installed command."""
from __future__ import annotations

import json
import struct
import subprocess
import sys

import pytest
from click.testing import CliRunner
from conftest import ROOT, kafka_case, run_logtool

from logtool.cli import cli

CONTRACT_SEGMENT = {"file", "base_offset", "size", "valid_bytes", "first_invalid_position", "batches", "records",
                    "first_offset", "last_offset", "magic", "codecs", "findings"}
CONTRACT_FINDING = {"code", "name", "severity", "position", "offset", "message"}


def names(doc: dict) -> set[str]:
    out = {f["name"] for f in doc["findings"]}
    for d in doc["log_dirs"]:
        out |= {f["name"] for f in d["findings"]}
    for p in doc["partitions"]:
        out |= {f["name"] for f in p["findings"]}
        for s in p["segments"]:
            out |= {f["name"] for f in s["findings"]}
    return out


def verify_json(*args: str) -> tuple[int, dict]:
    p = run_logtool("verify", "--format", "json", *args)
    return p.returncode, json.loads(p.stdout)


def test_clean_partition_exits_0_with_contract_fields():
    rc, doc = verify_json(str(kafka_case("v2-none-mixed")))
    assert rc == 0
    part = doc["partitions"][0]
    assert part["status"] == "clean" and part["topic"] == "orders" and part["partition"] == 0
    assert {"path", "topic", "partition", "status", "segments", "findings"} <= set(part)
    assert all(CONTRACT_SEGMENT <= set(s) for s in part["segments"])
    assert doc["summary"] == {**doc["summary"], "partitions": 1, "segments": 6, "batches": 90, "errors": 0, "warnings": 0}
    assert part["segments"][0]["records"] is None  # only --deep counts records


def test_deep_counts_records():
    rc, doc = verify_json("--deep", str(kafka_case("v2-mixed-codecs")))
    assert rc == 0
    assert sum(s["records"] for s in doc["partitions"][0]["segments"]) == 449


@pytest.mark.slow
def test_damaged_partition_exits_4_and_names_the_damage():
    rc, doc = verify_json(str(kafka_case("corrupt-torn-tail")))
    assert rc == 4
    seg = doc["partitions"][0]["segments"][-1]
    torn = [f for f in seg["findings"] if f["name"] == "TORN_BATCH"]
    assert torn and CONTRACT_FINDING <= set(torn[0]) and torn[0]["position"] == 2139
    assert seg["valid_bytes"] == seg["first_invalid_position"] == 2139


def test_text_output_is_readable():
    p = run_logtool("verify", str(kafka_case("corrupt-bitflip-last-segment")))
    assert p.returncode == 4
    assert "damaged" in p.stdout and "CRC_MISMATCH" in p.stdout and "LT101" in p.stdout
    assert "Traceback" not in p.stderr


@pytest.mark.slow
def test_fail_on_error_ignores_warnings(case_copy):
    part = case_copy("v2-none-mixed")
    (part / "00000000000000000094.index").unlink()  # a warning: the broker rebuilds it at load
    assert run_logtool("verify", str(part)).returncode == 4
    assert run_logtool("verify", "--fail-on", "error", str(part)).returncode == 0


def test_jsonl_one_object_per_partition():
    p = run_logtool("verify", "--format", "jsonl", str(kafka_case("v2-lz4")), str(kafka_case("v2-zstd")))
    rows = [json.loads(line) for line in p.stdout.splitlines()]
    assert [r["topic"] for r in rows if r["type"] == "partition"] == ["metrics", "events"]
    assert rows[-1]["type"] == "summary" and rows[-1]["partitions"] == 2 and rows[-1]["exit_code"] == 0


@pytest.mark.slow
def test_single_segment_file():
    rc, doc = verify_json(str(kafka_case("corrupt-zero-tail") / "00000000000000000695.log"))
    assert rc == 4
    segs = doc["partitions"][0]["segments"]
    assert len(segs) == 1 and segs[0]["valid_bytes"] == 6287


def test_missing_path_is_operational_error():
    p = run_logtool("verify", "/no/such/path")
    assert p.returncode == 8
    assert "No such file" in p.stderr and "Traceback" not in p.stderr


def test_non_kafka_directory_is_operational_error(tmp_path):
    (tmp_path / "notes.txt").write_text("hello")
    p = run_logtool("verify", str(tmp_path))
    assert p.returncode == 8 and "not a Kafka" in p.stderr


@pytest.mark.slow
def test_usage_errors_exit_16():
    assert run_logtool("verify").returncode == 16
    assert run_logtool("verify", "--no-such-option", "x").returncode == 16
    assert run_logtool("verify", "--explain", "NOPE").returncode == 16


@pytest.mark.slow
def test_explain_prints_meaning_and_remedy():
    p = run_logtool("verify", "--explain", "TORN_BATCH")
    assert p.returncode == 0 and "LT102" in p.stdout and "Remedy" in p.stdout
    assert run_logtool("verify", "--explain", "lt101").returncode == 0


def test_unreadable_segment_is_operational_error(case_copy, monkeypatch):
    part = case_copy("v2-lz4")
    import logtool.store.segment as segment_module
    from logtool.store import read_ahead

    real_open = segment_module.os.open

    def deny(path, flags, *a):
        if str(path).endswith("00000000000000000000.log"):
            raise PermissionError(13, "Permission denied")
        return real_open(path, flags, *a)

    monkeypatch.setattr(segment_module.os, "open", deny)
    # The denial is made where Python opens files (root reads anything): the compiled read-ahead, which would
    # read the segment past it, is off (tests/store/test_read_ahead.py holds both to one answer).
    monkeypatch.setattr(read_ahead, "READER", None)
    result = CliRunner().invoke(cli, ["verify", "--format", "json", str(part)], standalone_mode=False)
    assert result.exception is None, result.exception
    assert result.return_value == 8
    doc = json.loads(result.output)
    assert any(f["name"] == "UNREADABLE" and "Permission denied" in f["message"] for f in doc["partitions"][0]["findings"])


def test_python_dash_m_works():
    p = subprocess.run([sys.executable, "-m", "logtool", "verify", str(kafka_case("v0-none"))], capture_output=True, text=True)
    assert p.returncode == 0 and "clean" in p.stdout


def test_scan_inventory_json():
    p = run_logtool("scan", "--format", "json", str(kafka_case("v1-to-v2-upgrade")))
    assert p.returncode == 0
    part = json.loads(p.stdout)["partitions"][0]
    assert sorted({m for s in part["segments"] for m in s["magic"]}) == [1, 2]
    assert part["segments"][0]["indexes"]["index"] is not None
    assert "partition.metadata" in part["files"]


def test_scan_text_names_partitions():
    p = run_logtool("scan", str(kafka_case("v2-snappy")))
    assert p.returncode == 0 and "logs-0" in p.stdout and "snappy" in p.stdout


# -- damage made by editing Kafka-written bytes


def test_zero_tail_in_older_segment_endangers_later_segments(case_copy):
    part = case_copy("v2-none-mixed")
    seg = part / "00000000000000000094.log"
    seg.write_bytes(seg.read_bytes() + bytes(4096))
    rc, doc = verify_json(str(part))
    assert rc == 4
    assert {"ZERO_TAIL", "LATER_SEGMENTS_DROPPED"} <= names(doc)
    assert "PREALLOCATED_TAIL" not in names(doc)


def test_two_gib_length_field(case_copy):
    part = case_copy("v2-none-mixed")
    seg = part / "00000000000000000457.log"
    data = bytearray(seg.read_bytes())
    struct.pack_into(">i", data, 8, 2**31 - 1)  # length of the first batch
    seg.write_bytes(bytes(data))
    rc, doc = verify_json(str(part))
    s = doc["partitions"][0]["segments"][-1]
    assert rc == 4 and s["valid_bytes"] == 0 and "IMPOSSIBLE_LENGTH" in names(doc)


def test_short_garbage_tail(case_copy):
    part = case_copy("v2-none-mixed")
    seg = part / "00000000000000000457.log"
    size = seg.stat().st_size
    seg.write_bytes(seg.read_bytes() + b"\x01\x02\x03")
    rc, doc = verify_json(str(part))
    assert rc == 4 and "SHORT_TAIL" in names(doc)
    assert doc["partitions"][0]["segments"][-1]["valid_bytes"] == size


def test_leftovers_orphans_and_bad_metadata(case_copy):
    part = case_copy("v2-none-mixed")
    (part / "00000000000000000094.log").rename(part / "00000000000000000094.log.deleted")
    (part / "00000000000000000999.index").write_bytes(b"")
    (part / "partition.metadata").write_text("version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAA")
    (part / "leader-epoch-checkpoint").write_text("0\n2\n3 10\n1 20\n")
    rc, doc = verify_json(str(part))
    assert rc == 4
    assert {"LEFTOVER_FILE", "ORPHAN_INDEX", "PARTITION_METADATA_INVALID", "LEADER_EPOCH_INVALID"} <= names(doc)


def test_offset_backwards_reported_but_kept(case_copy):
    rc, doc = verify_json(str(kafka_case("corrupt-offset-backwards")))
    seg = doc["partitions"][0]["segments"][-1]
    assert rc == 4 and "OFFSET_NOT_INCREASING" in names(doc)
    assert seg["valid_bytes"] == seg["size"]  # Kafka's recovery keeps it, so do we


def test_log_dir_with_stray_directory(tmp_path):
    import shutil

    shutil.copytree(kafka_case("v2-lz4"), tmp_path / "metrics-1")
    (tmp_path / "lost+found").mkdir()
    (tmp_path / "meta.properties").write_text("#\nversion=1\nnode.id=3\ncluster.id=abc\n")
    rc, doc = verify_json(str(tmp_path))
    assert rc == 4 and "NOT_KAFKA" in names(doc)
    assert doc["log_dirs"][0]["meta"]["node.id"] == "3"


def test_text_folds_repeats_of_a_kind_in_one_file_json_keeps_them(tmp_path):
    """Legacy wrappers as kafka-python writes them, with timestamp 0 (a broker stamps the largest inner one):
    120 records per segment above the batch max. Text: one line per segment with the count; JSON: the cap
    (5) and its count line."""
    from fixtures import generator as g
    spec = g.BatchSpec(library="kafka-python", magic=1, codec="gzip", batches=24, records_per_batch=10, seed=3)
    part = g.write_partition(tmp_path, "legacy-events", 0, g.build_batches(spec), segment_bytes=8192).path
    text = run_logtool("verify", "--deep", str(part)).stdout
    lines = [x for x in text.splitlines() if "TIMESTAMP_ABOVE_MAX" in x]
    assert len(lines) == 2 and all("(and 119 more like it)" in x for x in lines)
    doc = json.loads(run_logtool("verify", "--deep", "--format", "json", str(part)).stdout)
    per_segment = [[f for f in s["findings"] if f["name"] == "TIMESTAMP_ABOVE_MAX"] for s in doc["partitions"][0]["segments"]]
    assert [len(fs) for fs in per_segment] == [6, 6]
    assert per_segment[0][-1]["message"] == "... and 115 more records like the above"


def test_the_bundled_sample_is_damaged_only_where_it_says():
    """`make demo`'s log dir: clicks-2 is damaged on purpose; the others are what a broker writes, so even
    `verify --deep` finds nothing in them (its legacy wrappers carry the timestamp a broker stamps)."""
    doc = json.loads(run_logtool("verify", "--deep", "--format", "json", str(ROOT / "fixtures" / "sample-logdir")).stdout)
    assert {p["topic"]: p["status"] for p in doc["partitions"]} == {
        "clicks": "damaged", "legacy-events": "clean", "orders": "clean", "payments": "clean"}
    assert [f["name"] for p in doc["partitions"] if p["topic"] != "clicks" for f in p["findings"]] == []
