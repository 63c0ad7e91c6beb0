"""The compiled kernel against the pure-Python reference: the same answers on every fixture and on bytes
mutated at random, and a kernel that did not load where it should have is a failure, not a silent slowdown."""
from __future__ import annotations

import os
import random
from pathlib import Path

import crc32c as crc32c_package
import pytest
from conftest import ROOT, SHARED, kafka_case, require
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from logtool.checks.engine import Target, check_target
from logtool.checks.records import _clean_count, check_records
from logtool.checks.segment import check_segment
from logtool.findings import Sink
from logtool.format import kernel
from logtool.format.batch import BatchView
from logtool.format.records import batch_payload
from logtool.store.segment import Segment, WalkOutcome

SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
SOURCES = [
    kafka_case("v2-none-mixed") / "00000000000000000457.log",
    kafka_case("v2-mixed-codecs") / "00000000000000000413.log",
    kafka_case("v2-idempotent-txn") / "00000000000000000288.log",
    kafka_case("v1-gzip") / "00000000000000000318.log",
]


def test_the_kernel_is_loaded_unless_the_pure_path_is_asked_for():
    # CI and `make` build it (gcc and the Python headers are there): not loading it there is a defect.
    if os.environ.get(kernel.PURE_ENV):
        assert kernel.KERNEL is None and kernel.active() is None
    else:
        assert kernel.KERNEL is not None, kernel.WHY_PURE
        assert kernel.active() is kernel.KERNEL


def test_pure_holds_for_its_block_in_this_thread_alone(fast):
    """pure() is a context, not a switch of the process: nested blocks undo in order, and a thread running
    meanwhile (or started inside the block, with a context of its own) keeps the kernel."""
    import threading

    seen: list = []
    with kernel.pure():
        assert kernel.active() is None
        with kernel.pure():
            assert kernel.active() is None
        assert kernel.active() is None
        other = threading.Thread(target=lambda: seen.append(kernel.active()))
        other.start()
        other.join()
        assert kernel.KERNEL is fast
    assert kernel.active() is fast
    assert seen == [fast]


def test_the_code_asks_whether_it_runs_on_the_kernel():
    """Only the adapter reads the loaded module (and the CRC, the same answer either way): everything else asks
    `kernel.active()`, which `pure()` reaches."""
    import re

    readers = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "logtool").rglob("*.py")
                     if re.search(r"\bKERNEL\b", p.read_text()))
    assert readers == ["logtool/format/crc.py", "logtool/format/kernel.py"]


@settings(max_examples=300, deadline=None)
@given(data=st.binary(max_size=20000), skip=st.integers(0, 15))
def test_crc32c_is_the_crc32c_package_s(data, skip):
    fast = kernel.KERNEL
    assert fast is not None, kernel.WHY_PURE
    # lengths around the three-lane blocks (3 x 256, 3 x 4096) and every alignment
    assert fast.crc32c(memoryview(data)[skip:]) == crc32c_package.crc32c(data[skip:])


def test_crc32c_over_the_lane_boundaries(fast):
    rng = random.Random(7)
    for n in (0, 1, 7, 8, 767, 768, 769, 49151, 49152, 49153, 3 * 49152 + 5, 1 << 20):
        data = rng.randbytes(n + 8)
        for skip in range(8):
            assert fast.crc32c(data[skip : skip + n]) == crc32c_package.crc32c(data[skip : skip + n])


def _partition_dirs() -> list[Path]:
    roots = [require(SHARED / "real"), require(SHARED / "real-more"), require(SHARED / "kafka-written"),
             ROOT / "fixtures" / "sample-logdir"]
    return sorted({p.parent for root in roots for p in root.rglob("*.log")})


@pytest.mark.slow
def test_every_fixture_verifies_identically_on_both_paths(fast):
    dirs = _partition_dirs()
    assert len(dirs) > 500  # the real log dirs, Kafka's written cases and the sample
    differ = []
    for d in dirs:
        compiled = check_target(Target(d), deep=True).to_dict()
        with kernel.pure():
            reference = check_target(Target(d), deep=True).to_dict()
        if compiled != reference:
            differ.append(str(d))
    assert differ == []


def _both_ways(tmp: Path, data: bytes) -> tuple[tuple, tuple]:
    path = tmp / "00000000000000000000.log"
    path.write_bytes(data)

    def run():
        walk = WalkOutcome(len(data))
        with Segment(path, 0) as seg:
            views = list(seg.walk(walk))
            report = check_segment(seg, active=True, deep=True).to_dict()
        return views, walk.valid_bytes, walk.batches, walk.stop, walk.stop_view, report

    compiled = run()
    with kernel.pure():
        reference = run()
    return compiled, reference


@pytest.mark.slow
@SETTINGS
@given(src=st.sampled_from(SOURCES), edits=st.lists(st.tuples(st.floats(0, 1), st.integers(0, 255)), min_size=1,
                                                     max_size=4))
def test_mutated_segments_walk_and_check_identically(tmp_path, src, edits):
    data = bytearray(src.read_bytes())
    for where, value in edits:
        data[min(int(len(data) * where), len(data) - 1)] = value
    compiled, reference = _both_ways(tmp_path, bytes(data))
    assert compiled == reference


@pytest.mark.slow
@SETTINGS
@given(src=st.sampled_from(SOURCES), cut=st.floats(0, 1), tail=st.sampled_from([b"", b"\0" * 40, b"\xff" * 70]))
def test_cut_and_padded_segments_walk_identically(tmp_path, src, cut, tail):
    original = src.read_bytes()
    compiled, reference = _both_ways(tmp_path, original[: int(len(original) * cut)] + tail)
    assert compiled == reference


def _data_batches() -> list[tuple[bytes, BatchView]]:
    """(the file's bytes, a view) of every v2 data batch of the sources."""
    out = []
    for src in SOURCES:
        data = src.read_bytes()
        with Segment(src, 0) as seg:
            out += [(data, v) for v in seg.walk() if v.magic == 2 and not v.is_control]
    return out


BATCHES = _data_batches()


@SETTINGS
@given(pick=st.integers(0, len(BATCHES) - 1), edits=st.lists(st.tuples(st.floats(0, 1), st.integers(0, 255)),
                                                             min_size=0, max_size=3))
def test_clean_records_says_clean_exactly_where_the_reference_finds_nothing(fast, pick, edits):
    data, view = BATCHES[pick]
    payload = bytearray(batch_payload(data, view))
    for where, value in edits:
        if payload:
            payload[min(int(len(payload) * where), len(payload) - 1)] = value
    # The payload as an uncompressed batch would hold it: the header's fields, the edited records.
    header = bytearray(data[view.position : view.position + 61])
    header[22] &= 0xF8
    batch = bytes(header) + bytes(payload)
    plain = view._replace(position=0, size=len(batch), attributes=view.attributes & 0xF8)
    n = _clean_count(fast, batch, plain)
    sink = Sink("x")
    decoded = check_records(batch, plain, sink, None)  # the reference
    findings = sink.done()
    assert (n >= 0) == (findings == []), findings
    if n >= 0:
        assert n == decoded


INT64 = range(-(2**63), 2**63)
record_st = st.tuples(st.integers(-2, 20), st.integers(-5, 5), st.one_of(st.none(), st.binary(max_size=3)),
                      st.one_of(st.none(), st.binary(max_size=5)),
                      st.lists(st.tuples(st.sampled_from(["h", ""]), st.one_of(st.none(), st.binary(max_size=2))),
                               max_size=2))


@pytest.mark.slow
@SETTINGS
@given(records=st.lists(record_st, max_size=8), base=st.sampled_from([0, 1000, 2**62, 2**63 - 8]),
       count=st.integers(-2, 2), last=st.integers(-2, 2), max_ts=st.integers(-3, 1),
       attributes=st.sampled_from([0, 0x08, 0x40]), base_ts=st.sampled_from([1_700_000_000_000, 2**63 - 3]))
def test_clean_records_on_records_built_to_break_each_check(fast, records, base, count, last, max_ts, attributes,
                                                           base_ts):
    """kafka-python's builder writes whatever offset deltas and timestamps it is given (repeated, going back,
    beyond the header's last offset); the header's count, last offset delta and max timestamp are then
    edited to disagree with the records, or not."""
    from kafka.record.default_records import DefaultRecordBatchBuilder

    builder = DefaultRecordBatchBuilder(2, 0, False, -1, -1, -1, 1 << 20)
    for delta, ts, key, value, headers in records:
        builder.append(delta, base_ts + ts if base_ts + ts < 2**63 else base_ts, key, value, headers)
    data = bytes(builder.build())
    view = BatchView(0, len(data), 2, base, base + max((r[0] for r in records), default=0) + last,
                     len(records) + count, attributes, base_ts, base_ts + max_ts, -1, -1, -1, 0, 0, 0)
    sink = Sink("x")
    decoded = check_records(data, view, sink, None)  # the reference
    findings = sink.done()
    n = _clean_count(fast, data, view)
    if n >= 0:
        assert findings == [] and n == decoded
    elif findings == []:  # asked the reference only where an int64 ends: the answer is the reference's
        sums = [view.last_offset] + [base + r[0] for r in records] + [base_ts + r[1] for r in records]
        assert any(s not in INT64 for s in sums), (records, view)


def _batch(deltas, stamps, headers=()):
    """A v2 batch from kafka-python's builder: records at these offset deltas and timestamp offsets."""
    from kafka.record.default_records import DefaultRecordBatchBuilder

    builder = DefaultRecordBatchBuilder(2, 0, False, -1, -1, -1, 1 << 20)
    for delta, ts in zip(deltas, stamps):
        builder.append(delta, 1_700_000_000_000 + ts, b"k", b"v", list(headers))
    return bytes(builder.build())


def _edit(data: bytes, old: bytes, new: bytes) -> bytes:
    assert data.count(old) >= 1
    return data.replace(old, new, 1)


# (records' offset deltas, their timestamp offsets, header edits, the view's last delta, count, max timestamp
# offset, attributes), and the finding the reference reports (None: clean). Each sits on a check's edge.
EDGES = {
    "clean": ([0, 1, 2], [0, 1, 2], None, 2, 3, 2, 0, None),
    "offset repeated": ([0, 0], [0, 0], None, 0, 2, 0, 0, "OFFSET_DELTA_INVALID"),
    "offset going back": ([1, 0], [0, 0], None, 1, 2, 0, 0, "OFFSET_DELTA_INVALID"),
    "offset past the last": ([0, 1], [0, 0], None, 0, 2, 0, 0, "OFFSET_DELTA_INVALID"),
    "offsets below the base": ([-1, 0], [0, 0], None, 0, 2, 0, 0, "RECORD_COUNT_MISMATCH"),
    "timestamp at the max": ([0, 1], [0, 5], None, 1, 2, 5, 0, None),
    "timestamp one above the max": ([0, 1], [0, 5], None, 1, 2, 4, 0, "TIMESTAMP_ABOVE_MAX"),
    "log append time": ([0, 1], [0, 5], None, 1, 2, 4, 0x08, None),
    "delete horizon": ([0, 1], [0, 5], None, 1, 2, 4, 0x40, None),
    "count one high": ([0, 1], [0, 0], None, 1, 3, 0, 0, "RECORD_COUNT_MISMATCH"),
    "count one low": ([0, 1], [0, 0], None, 1, 1, 0, 0, "RECORD_COUNT_MISMATCH"),
    "count negative": ([0, 1], [0, 0], None, 1, -1, 0, 0, "RECORDS_UNREADABLE"),
    "header key null": ([0], [0], (b"\x00\x02Z", b"\x01\x02Z"), 0, 1, 0, 0, "RECORDS_UNREADABLE"),
    "header count negative": ([0], [0], (b"\x02\x00\x02Z", b"\x01\x00\x02Z"), 0, 1, 0, 0, "RECORDS_UNREADABLE"),
    "header count negative, no header": ([0], [0], (b"\x02v\x00", b"\x02v\x01"), 0, 1, 0, 0, "RECORDS_UNREADABLE"),
    "header count past the record": ([0], [0], (b"\x02\x00\x02Z", b"\x08\x00\x02Z"), 0, 1, 0, 0,
                                     "RECORDS_UNREADABLE"),
}


@pytest.mark.parametrize("edge", EDGES)
def test_clean_records_on_each_check_s_edge(fast, edge):
    deltas, stamps, edit, last, count, max_ts, attributes, expected = EDGES[edge]
    data = _batch(deltas, stamps, [("", b"Z")] if edit and b"Z" in edit[0] else [])
    if edit:
        data = _edit(data, *edit)
    base, base_ts = 5000, 1_700_000_000_000
    view = BatchView(0, len(data), 2, base, base + last, count, attributes, base_ts, base_ts + max_ts,
                     -1, -1, -1, 0, 0, 0)
    sink = Sink("x")
    decoded = check_records(data, view, sink, None)  # the reference
    names = [f.name for f in sink.done()]
    assert names[:1] == ([] if expected is None else [expected])
    n = _clean_count(fast, data, view)
    assert (n >= 0) == (expected is None)
    if expected is None:
        assert n == decoded == len(deltas)


def _with_crc(entry: bytearray) -> bytes:
    entry[17:21] = crc32c_package.crc32c(bytes(entry[21:])).to_bytes(4, "big")
    return bytes(entry)


def _entries(src: Path) -> list[bytes]:
    data = src.read_bytes()
    with Segment(src, 0) as seg:
        return [data[v.position : v.position + v.size] for v in seg.walk()]


def _crafted() -> dict[str, bytes]:
    """Entries whose CRC holds but that the walker must still read itself: each between two valid batches."""
    plain = _entries(kafka_case("v2-none-mixed") / "00000000000000000457.log")
    txn = _entries(kafka_case("v2-idempotent-txn") / "00000000000000000288.log")
    marker = next(e for e in txn if e[22] & 0x20)
    tiny = bytearray(plain[0][:40])
    tiny[8:12] = (40 - 12).to_bytes(4, "big")
    magic3 = bytearray(plain[1])
    magic3[16] = 3
    bad_marker = bytearray(marker)
    bad_marker[-1 - 6 - 1 - 4 + 3] ^= 0x07  # the low byte of the control key's type (COMMIT/ABORT -> 6/7)
    no_producer = bytearray(marker)
    no_producer[43:51] = (-1).to_bytes(8, "big", signed=True)
    return {name: plain[0] + _with_crc(e) + plain[2]
            for name, e in {"tiny v2": tiny, "magic 3": magic3, "bad control key": bad_marker,
                            "control batch of no producer": no_producer}.items()}


@pytest.mark.parametrize("name", ["tiny v2", "magic 3", "bad control key", "control batch of no producer"])
def test_entries_only_the_walker_reads(fast, tmp_path, name):
    compiled, reference = _both_ways(tmp_path, _crafted()[name])
    assert compiled == reference
    assert compiled[2] >= 1  # the batch before it is walked either way


# dump's forms whose records the kernel renders (and one it hands back: base64), each on both paths: the
# two most used over every fixture, the other decoders over Kafka's written cases and the sample.
DUMP_FORMS = {
    ("--print-data",): "all",
    ("--format", "jsonl"): "all",
    (): "written",
    ("--format", "json", "--key-decoder", "hex", "--value-decoder", "utf8", "--salvage"): "written",
    ("--key-decoder", "utf8", "--value-decoder", "none"): "written",
    ("--format", "jsonl", "--key-decoder", "string", "--value-decoder", "base64"): "written",
}


def _dump(*args) -> tuple:
    from click.testing import CliRunner

    from logtool.cli import cli

    r = CliRunner().invoke(cli, ["dump", *map(str, args)], standalone_mode=False, catch_exceptions=False)
    return r.return_value, r.stdout_bytes, r.stderr_bytes


def _dump_both_ways(*args) -> tuple[tuple, tuple]:
    compiled = _dump(*args)
    with kernel.pure():
        reference = _dump(*args)
    return compiled, reference


@pytest.mark.slow
@pytest.mark.parametrize("form", DUMP_FORMS, ids=" ".join)
def test_every_fixture_dumps_identically_on_both_paths(fast, form):
    dirs = _partition_dirs()
    if DUMP_FORMS[form] == "written":
        dirs = [d for d in dirs if SHARED / "kafka-written" in d.parents or ROOT in d.parents]
    assert dirs
    differ = [str(d) for d in dirs if len(set(_dump_both_ways(*form, d))) != 1]
    assert differ == []


DECODER_NAMES = ["utf8", "string", "hex", "none"]
# UTF-8's edges: a surrogate, overlongs, past U+10FFFF, beyond the BMP, cut short, DEL and JSON's escapes
EDGY = [b"\xed\xa0\x80", b"\xed\x9f\xbf", b"\xe0\x80\x80", b"\xe0\xa0\x80", b"\xc0\xaf", b"\xc2\x80",
        b"\xf4\x90\x80\x80", b"\xf4\x8f\xbf\xbf", b"\xf0\x8f\xbf\xbf", b"\xf0\x9f\x98\x80", b"\xe2\x82",
        b"\xef\xbf\xbf", b"\x7f", b"\x00\x1f\"\\\x08\x0c\n\r\t/"]
field_st = st.one_of(st.none(), st.binary(max_size=12), st.text(max_size=6).map(lambda t: t.encode("utf-8", "surrogatepass")),
                     st.lists(st.sampled_from(EDGY), max_size=3).map(b"x".join))


def _utf8(data: bytes | None) -> bool:
    try:
        (data or b"").decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


class _Spy:
    """The kernel, counting the batches its renderers rendered (rather than handed back)."""

    def __init__(self, real) -> None:
        self.real, self.rendered = real, 0

    def __getattr__(self, name):
        return getattr(self.real, name)

    def render_text(self, *args):
        return self._count(self.real.render_text(*args))

    def render_json(self, *args):
        return self._count(self.real.render_json(*args))

    def _count(self, result):
        self.rendered += result is not None
        return result


@pytest.mark.slow
@SETTINGS
@given(records=st.lists(st.tuples(field_st, field_st,
                                  st.lists(st.tuples(st.text(max_size=4), field_st), max_size=2)), max_size=5),
       key_name=st.sampled_from(DECODER_NAMES), value_name=st.sampled_from(DECODER_NAMES), stride=st.integers(1, 3),
       unverified=st.booleans())
def test_rendered_records_are_the_reference_s_bytes(fast, monkeypatch, records, key_name, value_name, stride,
                                                     unverified):
    """Keys, values and headers of any bytes (not UTF-8, control characters, characters beyond the BMP,
    surrogates) rendered by the kernel read exactly as the reference renders them; only `string`'s U+FFFD
    rules for bytes that are not UTF-8 are handed back to it."""
    from kafka.record.default_records import DefaultRecordBatchBuilder

    from logtool.format.batch import read_entry
    from logtool.reads import decoders
    from logtool.reads.ranges import BatchRead, PackedRecords
    from logtool.render import dump_json, dump_text

    builder = DefaultRecordBatchBuilder(2, 0, False, 7, 0, 2**31 - 2, 1 << 20)
    for i, (key, value, headers) in enumerate(records):
        builder.append(i * stride, 1_700_000_000_000 + i, key, value, headers)
    data = bytes(builder.build())
    view = read_entry(data, 0, len(data))._replace(base_offset=100)
    packed = PackedRecords(view, data[61:], len(records))
    decoded = list(packed)
    key, value = decoders.get(key_name), decoders.get(value_name)
    seg = Segment(Path("00000000000000000000.log"), 0)
    ev_packed, ev_list = (BatchRead(seg, view, recs, None, None, unverified=unverified) for recs in (packed, decoded))
    header_keys_utf8 = all(_utf8(h.encode("utf-8", "surrogatepass")) for _k, _v, hs in records for h, _ in hs)
    keys_utf8 = all(_utf8(k) for k, _v, _h in records)
    values_utf8 = all(_utf8(v) for _k, v, _h in records)
    header_values_utf8 = all(_utf8(hv) for _k, _v, hs in records for _h, hv in hs)  # shown in JSON, not in text
    java_hands_back = (key_name == "string" and not keys_utf8) or (value_name == "string" and not values_utf8)
    java_json_hands_back = java_hands_back or (value_name == "string" and not header_values_utf8)
    spy = _Spy(kernel.KERNEL)
    monkeypatch.setattr(kernel, "KERNEL", spy)

    offsets = [99] + [r.offset for r in decoded]
    for shown, handed_back in (((key, value), java_hands_back or not header_keys_utf8),
                               ((None, None), not header_keys_utf8)):
        modes = tuple(-1 if d is None else decoders.kernel_mode(d) for d in shown)
        compiled = dump_text._compiled_lines(ev_packed, modes, 99)
        assert (compiled is None) == handed_back
        if compiled is not None:
            text, last, gaps = compiled
            assert text == "".join(dump_text.record_line(view, r, None, *shown) + "\n" for r in decoded)
            assert last == offsets[-1]
            assert gaps == [(a, b) for a, b in zip(offsets, offsets[1:]) if b != a + 1]

    spy.rendered = 0
    compiled_json = [t.decode("ascii") if isinstance(t, bytes) else t for t in dump_json.objects([ev_packed], key, value)]
    assert spy.rendered == (0 if java_json_hands_back else 1)
    with kernel.pure():
        reference_json = list(dump_json.objects([ev_list], key, value))
    assert compiled_json == reference_json


@pytest.mark.parametrize("encoding", ["utf-8", "utf-16", None])
def test_kernel_json_lines_reach_any_stream_in_order(encoding):
    """The kernel's ASCII bytes go beneath a text stream whose encoding writes ASCII as itself, after what the
    stream holds; any other stream (UTF-16, no buffer at all) gets them as text."""
    import io

    from logtool.render.dump_json import _write

    raw = io.BytesIO()
    out = io.StringIO() if encoding is None else io.TextIOWrapper(raw, encoding=encoding)
    _write(out, "before\n")
    _write(out, b'{"a":1}\n{"b":2}')
    _write(out, "\nafter\n")
    out.flush()
    text = out.getvalue() if encoding is None else raw.getvalue().decode(encoding)
    assert text == 'before\n{"a":1}\n{"b":2}\nafter\n'


# The two lenses the kernel sums up a run of batches for (plain_run, index_run): fed the same runs of batches,
# built to hit each thing either lens reports (offsets that go back or leave the base's reach, a new leader
# epoch, unknown magic or codec, a negative magic byte, a legacy wrapper with no base, index entries off a batch
# start, reaching back, out of order), they end in the same state and report the same findings on both paths.


def _mostly(usual, *rare):
    """`usual` nine times in ten, else one of `rare`: runs the kernel takes whole, and runs it hands back."""
    return st.sampled_from([usual] * 9 * len(rare) + list(rare))


@st.composite
def _runs(draw):
    base = draw(st.sampled_from([0, 5, 2**63 - 3]))
    views, position, offset = [], 0, base
    for _ in range(draw(st.integers(1, 12))):
        step = draw(_mostly(1, 0, -2, 2**31))
        first = offset + step
        last = first + draw(_mostly(3, 0, -1))
        # A legacy wrapper whose inner offsets could not be read has no base offset; a v2 batch always has one.
        legacy = draw(st.integers(0, 40)) == 0
        views.append(BatchView(
            position=position, size=100, magic=draw(_mostly(1, 0)) if legacy else draw(_mostly(2, 1, 0, 3, -1)),
            base_offset=None if legacy else first, last_offset=last, count=4,
            attributes=draw(_mostly(0, 1, 4, 5, 7, 0x10)), first_timestamp=draw(st.integers(-1, 9)),
            max_timestamp=draw(_mostly(3, -1, 9, 2**63 - 1)), producer_id=-1, producer_epoch=-1,
            base_sequence=-1, partition_leader_epoch=draw(_mostly(4, 5, -1)), crc_stored=1,
            crc_computed=1))
        position += draw(_mostly(100, 0, 37))
        offset = last
    cuts = sorted(draw(st.lists(st.integers(1, len(views)), max_size=3)))
    runs = [views[a:b] for a, b in zip([0, *cuts], [*cuts, len(views)]) if views[a:b]]
    return base, views, runs


def _index_bytes(draw, base: int, views: list[BatchView]) -> bytes:
    entries = []
    for v in views:
        if draw(st.integers(0, 2)):
            offset = (v.base_offset if v.base_offset is not None else v.last_offset) + draw(_mostly(0, 1, -1, 5))
            position = v.position + draw(_mostly(0, 1, -1))
            entries.append((offset - base, position))
    if draw(st.integers(0, 5)) == 0 and len(entries) > 1:
        i = draw(st.integers(0, len(entries) - 2))
        entries[i], entries[i + 1] = entries[i + 1], entries[i]
    return b"".join((r % 2**32).to_bytes(4, "big") + (p % 2**32).to_bytes(4, "big") for r, p in entries)


def _through_lenses(base: int, runs: list[list[BatchView]], index: bytes) -> tuple:
    from types import SimpleNamespace

    from logtool.checks.index import OffsetIndexCheck
    from logtool.checks.segment import SegmentReport, _BatchRules
    from logtool.store.segment import WalkOutcome as Outcome
    from logtool.store.sidefile import SideFile

    rep, sink = SegmentReport("s.log", base, 0), Sink("s.log")
    rules = _BatchRules(SimpleNamespace(base_offset=base), rep, sink)
    entries = OffsetIndexCheck(SideFile("s.index", index), base, False, sink)
    for run in runs:
        rules.feed_many(list(run))
        entries.feed_many(list(run))
    rules.finish()
    entries.finish(Outcome(size=0, valid_bytes=10**6), rep.last_offset)
    state = (rep.first_offset, rep.last_offset, rep.first_timestamp, rep.max_timestamp, sorted(rep.magic),
             sorted(rep.codecs), rep.epoch_runs, entries.prev, entries.next, entries.prev_batch_last)
    return state, [f.to_dict() for f in sink.done()]


@pytest.mark.slow
@SETTINGS
@given(case=_runs(), data=st.data())
def test_lenses_sum_up_runs_exactly_as_they_walk_them(fast, case, data):
    base, _, runs = case
    index = _index_bytes(data.draw, base, [v for run in runs for v in run])
    compiled = _through_lenses(base, runs, index)
    with kernel.pure():
        reference = _through_lenses(base, runs, index)
    assert compiled == reference


def test_an_index_entry_past_the_last_batch_is_reported_in_one_place_on_both_paths(fast):
    """Hypothesis found it: an entry pointing inside the last batch was ordered by wherever a lens had last
    left the walk's place (the pure index lens: the first batch; the kernel's run: the last), so the two
    paths listed the same findings in different orders. It is reported at the byte it points at."""
    views = [BatchView(0, 100, 2, 1, 4, 4, 0, 0, 3, -1, -1, -1, 4, 1, 1)] + \
        [BatchView(100 * i, 100, 1, None, 4 * i + 4, 4, 0, 0, 3, -1, -1, -1, 4, 1, 1) for i in range(1, 11)]
    index = bytes.fromhex("00000001000000000000002c000003e9")  # (offset 1, byte 0), (offset 44, byte 1001)
    compiled = _through_lenses(0, [views], index)
    with kernel.pure():
        reference = _through_lenses(0, [views], index)
    assert compiled == reference
    assert [f["name"] for f in compiled[1]][-1] == "INDEX_WRONG_POSITION"


def test_a_plain_run_is_summed_up_and_a_broken_one_is_not(fast):
    from logtool.checks.index import INDEX_RUN
    from logtool.checks.segment import PLAIN_RUN

    views = [BatchView(i * 100, 100, 2, 10 + 4 * i, 13 + 4 * i, 4, c, 0, 7 - i, -1, -1, -1, 3, 1, 1)
             for i, c in enumerate((0, 4, 1))]
    assert fast.plain_run(views, 10, 9, 3, PLAIN_RUN) == (21, 7, 0b10011, 0b100)
    assert fast.plain_run(views, 10, 10, 3, PLAIN_RUN) is None  # the first does not follow the batch before
    assert fast.plain_run([views[0], views[0]], 10, 9, 3, PLAIN_RUN) is None  # offsets do not grow
    assert fast.plain_run(views, 10, 9, 4, PLAIN_RUN) is None  # the lens's run is of another leader epoch
    assert fast.plain_run([views[0], views[1]._replace(partition_leader_epoch=4)], 10, 9, 3, PLAIN_RUN) is None
    assert fast.plain_run([views[0]._replace(base_offset=None)], 10, 9, 3, PLAIN_RUN) is None
    assert fast.plain_run(views, 2**63 - 1, 9, 3, PLAIN_RUN) is None  # offsets below the base
    index = b"".join(r.to_bytes(4, "big") + p.to_bytes(4, "big") for r, p in ((0, 0), (8, 200)))
    assert fast.index_run(views, index, 0, 2, 10, None, INDEX_RUN) == (3, 2, 21)
    assert fast.index_run(views, index[:8] + (10).to_bytes(4, "big") + (200).to_bytes(4, "big"), 0, 2, 10, None,
                          INDEX_RUN) == (3, 2, 21)  # an entry may name any offset of its batch
    # the entry for batch 3 names offset 13, in batch 2: the lens words that
    assert fast.index_run(views, index[:8] + (3).to_bytes(4, "big") + (200).to_bytes(4, "big"), 0, 2, 10, None,
                          INDEX_RUN) == (2, 1, 17)


def test_the_kernel_holds_a_run_to_the_bounds_it_is_given(fast):
    """No bound of its own: what plain_run and index_run take moves with the declaration they are handed."""
    from logtool.checks.index import INDEX_RUN
    from logtool.checks.segment import PLAIN_RUN

    views = [BatchView(i * 100, 100, 2, 10 + 4 * i, 13 + 4 * i, 4, c, 0, 7 - i, -1, -1, -1, 3, 1, 1)
             for i, c in enumerate((0, 4, 1))]
    assert fast.plain_run(views, 10, 9, 3, PLAIN_RUN._replace(codecs=(0b1111,) * 3)) is None  # zstd unknown
    assert fast.plain_run(views, 10, 9, 3, PLAIN_RUN._replace(codecs=(0b11111,) * 2)) is None  # magic 2 unknown
    assert fast.plain_run(views, 10, 9, 3, PLAIN_RUN._replace(max_relative_offset=10)) is None
    assert fast.plain_run(views, 10, 9, 3, PLAIN_RUN._replace(max_relative_offset=11)) is not None
    assert fast.plain_run([views[0], views[0]], 10, 9, 3, PLAIN_RUN._replace(increasing=False)) == (13, 7, 1, 4)
    index = b"".join(r.to_bytes(4, "big") + p.to_bytes(4, "big") for r, p in ((3, 0), (8, 150)))
    assert fast.index_run(views, index, 0, 2, 10, None, INDEX_RUN) == (2, 1, 17)  # 150 is not a batch start
    assert fast.index_run(views, index, 0, 2, 10, None, INDEX_RUN._replace(at_batch_start=False)) == (3, 2, 21)
    with pytest.raises(TypeError, match="PlainRunBounds"):
        fast.plain_run(views, 10, 9, 3, INDEX_RUN)
    with pytest.raises(TypeError, match="IndexRunBounds"):
        fast.index_run(views, index, 0, 2, 10, None, PLAIN_RUN)


# ---- a whole segment in one call (clean_segment): a check's report the same both ways, deep and shallow -----

def _generated_segment(tmp: Path, codec: str = "gzip", producer: int | None = None) -> Path:
    """A segment of two leader epochs' batches, uncompressed and then of `codec` (and of an idempotent
    `producer`, if any), an index entry for each batch but the first (and a time index entry with it)."""
    from fixtures.generator import BatchSpec, Producer, build_batches, segment_file, write_partition

    entries = build_batches(BatchSpec(batches=6, records_per_batch=3, value_bytes=(20, 40)), 0)
    entries += build_batches(BatchSpec(batches=6, records_per_batch=10, value_bytes=(200, 300), codec=codec,
                                       leader_epoch=3, producer=None if producer is None else Producer(producer, 2)),
                             entries[-1].next_offset)
    part = write_partition(tmp, f"whole-{codec}-{producer}", 0, entries, index_interval_bytes=0)
    return segment_file(part.path, 0, ".log")


def _segment_files(log: Path) -> dict[str, bytes]:
    return {suffix: log.with_suffix(suffix).read_bytes() for suffix in (".log", ".index", ".timeindex")}


def _checked_both_ways(tmp: Path, files: dict[str, bytes], base: int = 0) -> tuple[dict, dict, int]:
    """The segment's reports, deep and shallow, on the kernel path and on the pure one, and how many of the two
    checks the kernel summed up."""
    for suffix, data in files.items():
        (tmp / f"{base:020d}{suffix}").write_bytes(data)
    log = tmp / f"{base:020d}.log"
    summed = []
    real = kernel.clean_segment

    def watched(*args):
        summary = real(*args)
        summed.append(summary is not None)
        return summary

    def run() -> list[dict]:
        reports = []
        for deep in (False, True):
            with Segment(log, base) as seg:
                rep = check_segment(seg, active=True, deep=deep)
            reports.append({**rep.to_dict(), "epoch_runs": rep.epoch_runs, "producers": rep.producers})
        return reports

    kernel.clean_segment = watched
    try:
        compiled = run()
    finally:
        kernel.clean_segment = real
    with kernel.pure():
        reference = run()
    return compiled, reference, sum(summed)


def test_a_clean_segment_is_summed_up_whole_as_the_lenses_walk_it(fast, tmp_path):
    """Shallow, and deep but for its gzip batches (whose records the reader decompresses first)."""
    files = _segment_files(_generated_segment(tmp_path))
    compiled, reference, summed = _checked_both_ways(tmp_path, files)
    assert summed == 1
    assert compiled == reference
    assert all(rep["findings"] == [] and len(rep["epoch_runs"]) == 2 for rep in reference)


def test_an_uncompressed_segment_is_summed_up_deep(fast, tmp_path):
    """... an idempotent producer's batches among its batches."""
    case = tmp_path / "case"
    case.mkdir()
    compiled, reference, summed = _checked_both_ways(case, _segment_files(_generated_segment(tmp_path, "none", 7)))
    assert summed == 2
    assert compiled == reference
    assert reference[1]["records"] == 78 and reference[0]["records"] is None
    assert list(reference[0]["producers"]) == [7]


def _batch_starts(data: bytes) -> list[int]:
    """Where each entry of a log starts, as far as their lengths chain."""
    starts, pos = [], 0
    while pos + 61 <= len(data):
        starts.append(pos)
        pos += 12 + max(int.from_bytes(data[pos + 8 : pos + 12], "big", signed=True), 49)
    return starts


def _mutated(rng: random.Random, files: dict[str, bytes]) -> dict[str, bytes]:
    """One to three random edits of the three files: bytes set, a file cut, zeros (preallocated slots) added, a
    batch's header or first record edited and its CRC made right (what only the lenses' bounds catch)."""
    files = dict(files)
    for _ in range(rng.randint(1, 3)):
        suffix = rng.choice([".log", ".log", ".index", ".timeindex", ".index", ".timeindex"])
        data = bytearray(files[suffix])
        edit = rng.randrange(5)
        if edit == 4 and suffix == ".log" and (starts := _batch_starts(bytes(data))):
            at = rng.choice(starts)
            field = rng.choice([0, 7, 16, 22, 26, 34, 42, 50, 52, 56, 60, 61, 63, 64])  # offsets, times, ids, ...
            data[at + field] = (data[at + field] + rng.choice([1, -1, 0x80])) % 256
            end = at + 12 + int.from_bytes(data[at + 8 : at + 12], "big", signed=True)
            if 21 < end <= len(data):
                data[at + 17 : at + 21] = crc32c_package.crc32c(bytes(data[at + 21 : end])).to_bytes(4, "big")
        elif edit == 0 and data:
            data[rng.randrange(len(data))] = rng.randrange(256)
        elif edit == 1:
            del data[rng.randrange(len(data) + 1):]
        elif edit == 2:
            data += bytes(rng.choice([8, 12, 24, 5]))
        elif len(data) >= 12:  # an entry's field moved a little (a timestamp, a relative offset, a position)
            at = rng.randrange(len(data) - 3) & ~3
            value = int.from_bytes(data[at:at + 4], "big", signed=True) + rng.choice([-1, 1, 3, -2**31])
            data[at:at + 4] = (value % 2**32).to_bytes(4, "big")
        files[suffix] = bytes(data)
    return files


def _sources(tmp: Path) -> list[dict[str, bytes]]:
    out = [_segment_files(_generated_segment(tmp, codec, producer)) for codec, producer in (("none", 7), ("gzip", None))]
    for src in SOURCES:
        out.append(_segment_files(src))
    return out


def mutated_segments_check_identically(tmp: Path, cases: int, seed: int) -> int:
    """`cases` random edits of the sources' segments, each checked deep and shallow both ways (the ASan run of
    the kernel calls this with thousands); returns how many checks the kernel summed up."""
    rng, sources, summed = random.Random(seed), _sources(tmp / "sources"), 0
    for i in range(cases):
        case = tmp / str(i)
        case.mkdir()
        src = rng.randrange(len(sources))
        files = _mutated(rng, sources[src])
        compiled, reference, taken = _checked_both_ways(case, files, base=0 if src < 2 else int(SOURCES[src - 2].stem))
        assert compiled == reference, (i, src)
        summed += taken
    return summed


def test_mutated_segments_check_identically(fast, tmp_path):
    assert mutated_segments_check_identically(tmp_path, 150, seed=30) > 0


def test_clean_segment_holds_a_segment_to_the_bounds_it_is_given(fast, tmp_path):
    """No bound of its own: what clean_segment takes moves with the declaration it is handed."""
    from logtool.checks.segment import SEGMENT

    files = _segment_files(_generated_segment(tmp_path))
    log, index, times = files[".log"], files[".index"], files[".timeindex"]
    summary = fast.clean_segment(log, index, times, 0, SEGMENT)
    assert summary is not None and summary[0] == 12 and summary[7] == [(0, 0, 17), (3, 18, 77)]
    assert fast.clean_segment(log, index, times, 1, SEGMENT) is None  # the first batch is below the name
    assert fast.clean_segment(log, index, times, 1, SEGMENT._replace(first_at_base=False)) is None  # its entries move
    no_gzip = SEGMENT._replace(batches=SEGMENT.batches._replace(codecs=(0b1,) * 3))
    assert fast.clean_segment(log, index, times, 0, no_gzip) is None
    assert fast.clean_segment(log, index + bytes(8), times, 0, SEGMENT) is None  # a preallocated slot
    assert fast.clean_segment(log, index[:-1], times, 0, SEGMENT) is None  # a partial entry
    assert fast.clean_segment(log, index[:-8], times[:-12], 0, SEGMENT) is not None  # fewer entries: fine
    assert fast.clean_segment(log[:-1], index, times, 0, SEGMENT) is None  # a torn tail
    assert fast.clean_segment(b"", b"", b"", 0, SEGMENT) is None
    with pytest.raises(TypeError, match="SegmentBounds"):
        fast.clean_segment(log, index, times, 0, SEGMENT.batches)


def test_the_lines_counting_what_a_cap_left_out_come_in_batch_order_on_both_paths(fast, tmp_path):
    """Case 3688 of the mutation run of seed 11: two capped kinds, counted in one order by lenses fed a run of
    batches at once (the kernel's) and in the other by lenses fed one batch after another; their "... and N
    more" lines follow the batches each kind was first found at, on both paths."""
    rng, sources = random.Random(11), _sources(tmp_path / "sources")
    for _ in range(3689):
        src = rng.randrange(len(sources))
        files = _mutated(rng, sources[src])
    case = tmp_path / "case"
    case.mkdir()
    compiled, reference, _ = _checked_both_ways(case, files, base=0 if src < 2 else int(SOURCES[src - 2].stem))
    assert compiled == reference
    assert sum(1 for f in reference[0]["findings"] if f["message"].startswith("... and ")) >= 2
