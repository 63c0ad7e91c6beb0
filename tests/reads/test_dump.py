"""`logtool dump`: records against kafka-python's reader on every generated and real log, range semantics,
damage, text lines against Kafka's own values, decoders, and the command in a shell pipeline."""
from __future__ import annotations

import base64
import codecs
import hashlib
import json
import random
import re
import shutil
import subprocess
import sys
import textwrap

import pytest
from conftest import KAFKA_WRITTEN, LOGTOOL, kafka_case, require, run_logtool
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.dumping import (
    B64,
    CLEAN,
    SOURCES,
    V2_BATCH,
    VECTORS,
    dump,
    dump_bytes,
    kafka_lines,
    kafka_python_records,
    objects,
    offsets,
    records_of,
    records_of_plain,
)
from support.matrix import MATRIX, spec
from support.real import REAL, TARGETS, kp_read, partition_dirs

from fixtures import generator as g
from logtool.format.batch import read_entry
from logtool.format.kraft import control_value
from logtool.format.records import Record, RecordError, parse_control
from logtool.reads import decoders
from logtool.reads.ranges import Control
from logtool.render import dump_text
from logtool.store.partition import Partition

# ------------------------------------------------------------------ every log against kafka-python

@pytest.mark.parametrize("lib,magic,codec", MATRIX)
def test_generated_logs_match_kafka_python(tmp_path, lib, magic, codec):
    part = g.write_partition(tmp_path, "topic-a.b", 3, g.build_batches(spec(lib, magic, codec)), segment_bytes=3000).path
    rc, out, err = dump(part, *B64)
    theirs = kafka_python_records(part)
    assert rc == 0 and err == ""
    assert len(Partition.from_dir(part).segments) > 1 and len(theirs) == 12 * 6
    assert records_of(out) == theirs


@pytest.mark.sample(4)
@pytest.mark.parametrize("target", TARGETS)
def test_real_logs_match_kafka_python(target):
    for part in partition_dirs(target):
        if not any(part.glob("*.log")):
            continue
        rc, out, _err = dump(part, *B64)
        assert rc == 0, f"{part}: exit {rc}"
        assert records_of(out) == kafka_python_records(part), part


# --------------------------------------------------------------------------------------- ranges


@pytest.mark.sample(2)
@pytest.mark.parametrize("case", ["v2-compacted", "v2-mixed-codecs", "v1-gzip", "v0-snappy", "v2-idempotent-txn"])
def test_offset_ranges(case):
    """Every start and end around batch edges, inside compressed batches, in compaction gaps, across
    segment boundaries, before the log start and beyond the log end."""
    part = kafka_case(case)
    every = [r[0] for r in kafka_python_records(part)]
    batches = [(b.base_offset, b.last_offset) for s in Partition.from_dir(part).segments
               for b in kp_read(s.log_path).batches]
    probes = sorted({x + d for b in batches for x in b for d in (-1, 0, 1)} | {0, every[-1] + 5})
    pairs = [(lo, hi) for lo in probes for hi in probes if 0 <= lo <= hi]
    for lo, hi in random.Random(case).sample(pairs, 100):
        assert offsets(part, "--from-offset", lo, "--to-offset", hi) == [o for o in every if lo <= o <= hi], (lo, hi)


def test_range_inside_one_compressed_batch(tmp_path):
    s = spec("aiokafka", 2, "zstd")
    part = g.write_partition(tmp_path, "t", 0, g.build_batches(s), segment_bytes=3000).path
    every = [r[0] for r in kafka_python_records(part)]
    start, end = every[20], every[22]  # records 2..4 of the fourth batch
    assert offsets(part, "--from-offset", start, "--to-offset", end) == every[20:23]


def test_compaction_gap_starts_at_next_record():
    part = kafka_case("v2-compacted")
    assert offsets(part, "--from-offset", 435, "--max-records", 2) == [441, 454]  # 435..439 were compacted away
    assert offsets(part, "--from-offset", 473, "--to-offset", 474) == [474]  # a hole inside batch 472..478
    assert offsets(part, "--from-offset", 0, "--max-records", 1) == [431]  # before the log start


def test_range_across_segments():
    part = kafka_case("v2-none-mixed")
    bases = [s.base_offset for s in Partition.from_dir(part).segments]
    got = offsets(part, "--from-offset", bases[2] - 3, "--to-offset", bases[3] + 2)
    assert got == list(range(bases[2] - 3, bases[3] + 3))


def test_beyond_the_log_end():
    rc, out, err = dump(kafka_case("v2-compacted"), "--from-offset", 600)
    assert rc == 0 and "after the last valid offset" in err and "429..562" in err
    assert "no records from offset 600" in err
    # A torn tail: the offsets asked for may be in the damaged bytes, so the damage is reported.
    rc, out, err = dump(kafka_case("corrupt-torn-tail"), "--from-offset", 475, "--format", "jsonl")
    damage = [o for o in objects(out) if o["type"] == "damage"]
    assert rc == 4 and len(damage) == 1 and damage[0]["finding"]["name"] == "TORN_BATCH"
    assert [o for o in objects(out) if o["type"] == "record"] == []


def test_time_ranges():
    """Times become offsets as ListOffsets answers them: from the first record at or after --from-time, to
    the last record before the first one after --to-time; epoch ms and ISO-8601 alike."""
    part = kafka_case("v2-none-mixed")
    recs = kafka_python_records(part)
    stamps = sorted({r[1] for r in recs})
    for lo, hi in [(stamps[10], stamps[200]), (stamps[0] - 5, stamps[3]), (stamps[300] + 1, stamps[-1] + 99)]:
        start = next(i for i, r in enumerate(recs) if r[1] >= lo)
        stop = next((i for i, r in enumerate(recs) if r[1] > hi), len(recs))
        assert offsets(part, "--from-time", lo, "--to-time", hi) == [r[0] for r in recs[start:stop]]
    iso = "2023-11-14T22:13:20.500Z"  # epoch ms 1700000000500
    assert offsets(part, "--from-time", iso, "--max-records", 5) == offsets(part, "--from-time", 1700000000500, "--max-records", 5)
    rc, _out, err = dump(part, "--from-time", stamps[-1] + 1)
    assert rc == 0 and "no record has a timestamp at or after" in err


def test_max_records_and_batches_only():
    part = kafka_case("v2-mixed-codecs")
    assert len(offsets(part, "--max-records", 7)) == 7
    rc, out, _ = dump(part, "--batches-only", "--format", "jsonl", "--max-records", 3)
    got = objects(out)
    assert rc == 0 and [o["type"] for o in got] == ["batch"] * 3
    first = kp_read(Partition.from_dir(part).segments[0].log_path).batches[0]
    assert (got[0]["base_offset"], got[0]["last_offset"], got[0]["codec"], got[0]["crc"]) == \
        (first.base_offset, first.last_offset, first.codec, first.crc)


def test_jsonl_fields_and_control_records():
    rc, out, _ = dump(kafka_case("v2-idempotent-txn"), "--format", "jsonl")
    recs = [o for o in objects(out) if o["type"] == "record"]
    assert rc == 0
    assert {"offset", "timestamp", "timestamp_type", "key", "value", "headers", "batch"} <= set(recs[0])
    assert set(recs[0]["batch"]) >= {"base_offset", "last_offset", "position", "magic", "codec", "producer_id",
                                     "producer_epoch", "base_sequence", "is_transactional", "is_control",
                                     "partition_leader_epoch"}
    markers = [o for o in recs if o["control"] is not None]
    assert {m["control"]["type"] for m in markers} == {"COMMIT", "ABORT"}
    assert all(m["batch"]["is_control"] and m["control"]["coordinator_epoch"] is not None for m in markers)
    headed = next(o for o in recs if o["headers"])
    assert headed["headers"][0] == {"key": "trace-id", "value": None}


def test_json_document_streams_the_same_objects():
    part = kafka_case("corrupt-bitflip-last-segment")
    rc, lines, _ = dump(part, "--format", "jsonl")
    rc2, doc, _ = dump(part, "--format", "json")
    doc = json.loads(doc)
    assert rc == rc2 == 4
    assert doc["events"] == objects(lines)
    assert doc["summary"]["damaged"] is True and doc["summary"]["records"] == len(records_of_plain(lines))


# --------------------------------------------------------------------------------------- damage

def test_damaged_segment_dumped_up_to_its_valid_prefix():
    case = require(KAFKA_WRITTEN / "corrupt-bitflip-last-segment")
    expected = json.loads((case / "expected.json").read_text())
    cut = next(s for s in expected["segmentRecover"] if s["truncatedBytes"])
    rc, out, _ = dump(kafka_case("corrupt-bitflip-last-segment"), "--format", "jsonl")
    objs = objects(out)
    damage = [o for o in objs if o["type"] == "damage"]
    assert rc == 4 and len(damage) == 1
    d = damage[0]
    assert d["bytes_following"] == cut["truncatedBytes"] and d["finding"]["name"] == "CRC_MISMATCH"
    assert max(o["offset"] for o in objs if o["type"] == "record") == cut["lastValidOffset"]
    assert objs[-1] == d  # nothing of the damaged segment is read past it
    # Text is kafka-dump-log's: the batch with `isvalid: false` and the ones after it, the why on stderr.
    rc, text, err = dump(kafka_case("corrupt-bitflip-last-segment"))
    assert rc == 4 and f"position: {d['position']} " in text and "isvalid: false" in text
    assert re.search(rf"^logtool: damage at byte {d['position']} of {d['segment']}: LT101 CRC_MISMATCH: "
                     rf"Record is corrupt \(stored crc = \d+, computed crc = \d+\); the valid log ends at byte "
                     rf"{d['position']}, {d['bytes_following']} bytes after it are cut by recovery$", err, re.M)


def test_zero_tail_of_the_active_segment():
    rc, out, _ = dump(kafka_case("v2-crash-preallocated"), "--format", "jsonl")
    damage = [o for o in objects(out) if o["type"] == "damage"]
    assert rc == 4 and [d["finding"]["name"] for d in damage] == ["PREALLOCATED_TAIL"]
    assert damage[0]["bytes_following"] == 21136


# ------------------------------------------------------------------------------------- text lines


@pytest.mark.parametrize("hexdata", VECTORS)
def test_format_md_vectors(tmp_path, hexdata):
    log = tmp_path / "vec-0" / "00000000000000000000.log"
    log.parent.mkdir()
    log.write_bytes(bytes.fromhex(hexdata))
    rc, out, _ = dump(log, "--print-data")
    assert rc == 0
    assert out.splitlines() == [f"Dumping {log}", "Log starting offset: 0", *VECTORS[hexdata]]
    _rc, batches, _ = dump(log, "--batches-only")
    assert batches.splitlines()[2:] == VECTORS[hexdata][:1]
    _rc, meta, _ = dump(log)  # --deep-iteration without --print-data-log: no key, no payload
    assert meta.splitlines()[3] == VECTORS[hexdata][1].split(" key: ")[0].split(" payload: ")[0]


@pytest.mark.parametrize("case", CLEAN)
def test_text_matches_kafkas_values(case):
    rc, out, _ = dump(kafka_case(case))
    assert rc == 0
    assert out.splitlines() == kafka_lines(case)


def test_print_data_shows_keys_and_payloads():
    """Keys as Kafka recorded them, payloads by the sha256 Kafka recorded; bytes that are not UTF-8 become
    U+FFFD as Kafka's StringDecoder makes them (`--value-decoder utf8` shows them escaped instead)."""
    expected = json.loads((KAFKA_WRITTEN / "v2-none-mixed" / "expected.json").read_text())
    want = [r for s in expected["asWritten"]["segments"] for b in s["log"]["batches"] for r in b["records"]]
    values = [r[3] for r in kafka_python_records(kafka_case("v2-none-mixed"))]
    rc, out, _ = dump(kafka_case("v2-none-mixed"), "--print-data")
    got = [line for line in out.split("\n") if line.startswith("| ")]
    assert rc == 0 and len(got) == len(want) == len(values)
    escaped = 0
    for line, r, value in zip(got, want, values):
        key = re.search(r" key: (.*?)(?= payload: |$)", line)
        assert r["key"] is None or key.group(1) == r["key"]
        payload = line.split(" payload: ", 1)[1] if " payload: " in line else None
        if r["valueSize"] == -1:
            assert payload is None
            continue
        try:
            text = value.decode("utf-8")
        except UnicodeDecodeError:
            escaped += 1
            assert "\ufffd" in payload and payload == decoders.get("string").text(value)
            continue
        assert payload == text and hashlib.sha256(payload.encode()).hexdigest()[:16] == r["valueSha256_16"]
    assert escaped  # the case holds binary values


def test_leader_change_records_of_a_real_kraft_log():
    part = REAL / "FrankXu0908__data_enginnering/kafka-data/data/__cluster_metadata-0"
    rc, out, _ = dump(require(part))
    changes = [line for line in out.splitlines() if "LeaderChange" in line]
    assert rc == 0 and changes
    assert changes[0].endswith(' LeaderChange: {"version":0,"leaderId":1,"voters":[{"voterId":1}],'
                               '"grantingVoters":[{"voterId":1}]}')
    assert all(" key: " not in c and " payload: " not in c for c in changes)


def test_kraft_control_values_print_as_kafka_does():
    """Values laid out as FORMAT.md §2.7 gives them; the expected texts are what kafka-dump-log printed for
    such records in apache/kafka PR #19729 (KAFKA-19069)."""
    directory_id = base64.urlsafe_b64decode("tpx8pd1IQDqJwMfGzXj6GA==")
    voters = (b"\x00\x00" + b"\x02" + (1).to_bytes(4, "big") + directory_id + b"\x02" + b"\x0bCONTROLLER"
              + b"\x0alocalhost" + (9093).to_bytes(2, "big") + b"\x00" + b"\x00\x00\x00\x01\x00" + b"\x00" + b"\x00")
    cases = {
        5: (b"\x00\x00\x00\x01\x00", ' KRaftVersion {"version":0,"kRaftVersion":1}'),
        6: (voters, ' KRaftVoters {"version":0,"voters":[{"voterId":1,"voterDirectoryId":"tpx8pd1IQDqJwMfGzXj6GA",'
                    '"endpoints":[{"name":"CONTROLLER","host":"localhost","port":9093}],'
                    '"kRaftVersionFeature":{"minSupportedVersion":0,"maxSupportedVersion":1}}]}'),
        3: ((0).to_bytes(2, "big") + (1700000000000).to_bytes(8, "big") + b"\x00",
            ' SnapshotHeader {"version":0,"lastContainedLogTimestamp":1700000000000}'),
        4: (b"\x00\x00\x00", ' SnapshotFooter {"version":0}'),
    }
    v2 = next(h for h in VECTORS if VECTORS[h][0] == V2_BATCH)
    view = read_entry(bytes.fromhex(v2), 0, len(v2) // 2)  # the line's batch part: any v2 batch will do
    for type_id, (value, text) in cases.items():
        record = Record(0, 0, type_id.to_bytes(4, "big"), value)
        control = Control(parse_control(record), control_value(type_id, value))
        assert dump_text.record_line(view, record, control, None, None).endswith(text), type_id
    with pytest.raises(RecordError):
        control_value(6, voters[:-5])


# ------------------------------------------------------------------------------------------ decoders

@pytest.mark.parametrize("data,java", [
    (b"\xfd\x96", "\ufffd\ufffd"),  # neither byte starts a sequence
    (b"\x00\x00\xed\xa4", "\x00\x00\ufffd"),  # a surrogate's prefix at the end: one U+FFFD (Python: two)
    (b"\xed\xa0\x80x", "\ufffdx"),  # a whole surrogate: one U+FFFD for its three bytes (Python: three)
    (b"\xe2\x82A", "\ufffdA"),  # a 3-byte sequence cut short by an ASCII byte
    (b"\xf0\x9f\x98", "\ufffd"),  # a 4-byte sequence cut by the end
    (b"\xf0\x9fA\x98", "\ufffdA\ufffd"),
    (b"\xc0\xaf", "\ufffd\ufffd"),  # an overlong: both bytes
    (b"\xf5\x80\x80\x80", "\ufffd\ufffd\ufffd\ufffd"),
    ("é€😀".encode(), "é€😀"),
])
def test_string_decoder_replaces_as_java_does(data, java):
    """Java's new String(bytes, UTF_8) (kafka-dump-log's StringDecoder): the cases where it differs from
    Python's "replace" come from Kafka's own output on real files (a key ending in ED A4 printed one U+FFFD)."""
    assert decoders.get("string").text(data) == java


def test_decoders():
    data = b'{"a": [1, "\xc3\xa9"]}\xff'
    utf8, hexd, b64, js, none = (decoders.get(n) for n in ("utf8", "hex", "base64", "json", "none"))
    assert utf8.text(data) == '{"a": [1, "é"]}\\xff' and json.loads(utf8.json_fragment(data)) == utf8.text(data)
    assert hexd.text(b"\x00\xab") == "00ab" and json.loads(hexd.json_fragment(b"\x00\xab")) == "00ab"
    assert json.loads(b64.json_fragment(data)) == base64.b64encode(data).decode()
    assert js.text(b'{"a":1}') == '{\n  "a": 1\n}' and json.loads(js.json_fragment(b'{"a":1}')) == {"a": 1}
    assert js.text(data) == utf8.text(data)  # not JSON: shown as utf8 would
    assert not none.shown and none.json_fragment(data) == "null"
    with pytest.raises(decoders.DecoderError, match="utf8, string, hex, base64, json, none"):
        decoders.get("nope")


def test_decoder_plugins_by_entry_point(tmp_path, monkeypatch):
    (tmp_path / "rot_plugin.py").write_text(textwrap.dedent("""
        import codecs
        from logtool.reads.decoders import Decoder

        class Rot13(Decoder):
            def text(self, data):
                return codecs.encode(data.decode(), "rot13")
    """))
    info = tmp_path / "rot_plugin-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: rot-plugin\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[logtool.decoders]\nrot13 = rot_plugin:Rot13\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert "rot13" in decoders.names()
    part = kafka_case("v2-none-mixed")
    rc, out, _ = dump(part, "--value-decoder", "rot13", "--key-decoder", "none", "--max-records", 1, "--format", "jsonl")
    rec = objects(out)[0]
    plain = kafka_python_records(part)[0][3].decode()
    assert rc == 0 and rec["key"] is None and rec["key_size"] > 0
    assert rec["value"] == codecs.encode(plain, "rot13") != plain


def test_json_decoder_embeds_values(tmp_path):
    recs = [[g.Record(b"k", json.dumps({"n": i}).encode(), g.FIXED_TIME_MS)] for i in range(3)]
    part = g.write_partition(tmp_path, "j", 0, g.build_batches(g.BatchSpec(records=recs))).path
    rc, out, _ = dump(part, "--format", "jsonl", "--value-decoder", "json")
    assert rc == 0 and [o["value"] for o in objects(out)] == [{"n": 0}, {"n": 1}, {"n": 2}]
    rc, text, _ = dump(part, "--value-decoder", "json")
    assert 'payload: {\n  "n": 0\n}' in text


# ----------------------------------------------------------------------------------- the command

@pytest.mark.slow
def test_usage_and_operational_errors(tmp_path):
    part = str(kafka_case("v2-none-mixed"))
    assert run_logtool("dump", part, "--value-decoder", "nope").returncode == 16
    assert run_logtool("dump", part, "--from-time", "yesterday").returncode == 16
    assert run_logtool("dump", part, "--from-offset", "9", "--to-offset", "3").returncode == 16
    p = run_logtool("dump", "/no/such/dir")
    assert p.returncode == 8 and p.stderr.count("\n") == 1 and "Traceback" not in p.stderr
    (tmp_path / "x.txt").write_text("hello")
    assert run_logtool("dump", str(tmp_path / "x.txt")).returncode == 8


@pytest.mark.slow
def test_head_in_a_shell_pipeline(tmp_path):
    """`dump | head -1` ends as soon as head does, quietly, with exit 0 (the pipe fills long before the end)."""
    s = g.BatchSpec(batches=400, records_per_batch=50, seed=3)
    part = g.write_partition(tmp_path, "big", 0, g.build_batches(s)).path
    assert sum(f.stat().st_size for f in part.glob("*.log")) > 1_000_000
    for fmt in ("text", "jsonl", "json"):
        p = subprocess.run(["bash", "-c", f"set -o pipefail; '{LOGTOOL}' dump '{part}' --print-data --format {fmt} | head -1"],
                           capture_output=True, text=True, timeout=60)
        assert p.returncode == 0 and p.stderr == "", (fmt, p.stderr)
        assert len(p.stdout.splitlines()) == 1


def test_dump_changes_nothing(tmp_path):
    part = tmp_path / "orders-0"
    shutil.copytree(kafka_case("corrupt-bitflip-last-segment"), part)
    state = lambda: {f.name: (f.read_bytes(), f.stat().st_mtime_ns) for f in part.iterdir()}  # noqa: E731
    before = state()
    assert dump(part, "--salvage", "--format", "jsonl")[0] == 4
    assert state() == before


# ------------------------------------------------------------------------------- never a traceback


@pytest.mark.slow
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.binary(max_size=4096))
def test_random_bytes_never_raise(tmp_path, data):
    dump_bytes(tmp_path, data)  # asserts inside: every byte is read or reported


@pytest.mark.slow
@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(src=st.sampled_from(SOURCES), where=st.floats(0, 1), bit=st.integers(0, 7), cut=st.floats(0.5, 1))
def test_damaged_kafka_segments_never_raise(tmp_path, src, where, bit, cut):
    data = bytearray(src.read_bytes()[: int(src.stat().st_size * cut)])
    i = min(int(len(data) * where), len(data) - 1)
    data[i] ^= 1 << bit
    with Partition.from_segment_file(src).segments[0] as seg:
        intact = {v.position for v in seg.walk() if v.position + v.size <= len(data) and not v.position <= i < v.position + v.size}
    read = dump_bytes(tmp_path, bytes(data))
    assert intact <= read  # salvage reads every batch the damage left whole


def test_offsets_going_backwards_are_said_in_band_and_exit_4():
    """Kafka keeps the batch (its checksum holds), so reading goes on past it; dump says so, as verify does."""
    part = kafka_case("corrupt-offset-backwards")
    rc, out, _ = dump(part, "--format", "jsonl")
    damage = [o for o in objects(out) if o["type"] == "damage"]
    assert rc == 4 and [d["finding"]["name"] for d in damage] == ["OFFSET_NOT_INCREASING"]
    assert damage[0]["reading_goes_on"] is True
    later = [o for o in objects(out) if o["type"] == "record" and o["batch"]["position"] > damage[0]["position"]]
    assert later, "the records after the batch are still read"
    rc, text, err = dump(part)  # text: stdout is kafka-dump-log's, logtool's explanation on stderr
    assert rc == 4 and "LT111 OFFSET_NOT_INCREASING" in err and "LT111" not in text


@pytest.mark.parametrize("name", ["utf8", "hex", "base64", "none"])
def test_a_large_value_in_pieces_is_the_same_json_as_whole(name):
    """Values over 1 MiB are written in pieces (their JSON can be five times their size): the pieces join to
    exactly the fragment written whole, with multi-byte characters and bad bytes across piece boundaries."""
    decoder = decoders.get(name)
    value = ("é" * 700_000).encode() + b"\xff\xfe" + ("ß€" * 300_000).encode() + b"\xc3"
    assert "".join(decoder.json_pieces(value)) == decoder.json_fragment(value)
    assert "".join(decoder.text_pieces(value)) == decoder.text(value)


@pytest.mark.slow
def test_a_record_with_a_large_value_streams_within_bounded_memory(tmp_path):
    from kafka.record.default_records import DefaultRecordBatchBuilder
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False, producer_id=-1,
                                        producer_epoch=-1, base_sequence=-1, batch_size=64 << 20)
    value = bytes(range(256)) * (48 << 12)  # 48 MiB, most of it not UTF-8: JSON escapes it five times larger
    builder.append(0, timestamp=1_700_000_000_000, key=b"k", value=value, headers=[])
    part = tmp_path / "big-0"
    part.mkdir()
    (part / "00000000000000000000.log").write_bytes(bytes(builder.build()))
    code = ("import sys\nfrom logtool.cli import main\ntry:\n    main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
            "print([l for l in open('/proc/self/status') if l.startswith('VmHWM')][0].split()[1], file=sys.stderr)")
    out = tmp_path / "out.jsonl"
    with open(out, "w") as f:
        p = subprocess.run([sys.executable, "-c", code, "dump", "--format", "jsonl", "--value-decoder", "base64",
                            str(part)], stdout=f, stderr=subprocess.PIPE, text=True)
    assert int(p.stderr.split()[-1]) < 300 * 1024, "peak RSS in kB"
    record = json.loads(out.read_text().splitlines()[0])
    assert record["value_size"] == len(value) and base64.b64decode(record["value"]) == value
