"""Property tests: the walker and parsers never raise and never claim bytes past the end, whatever the input."""
from __future__ import annotations

from pathlib import Path

import pytest
from conftest import kafka_case
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from logtool.checks.segment import check_segment
from logtool.format.batch import read_entry
from logtool.format.index import aborted_txns, offset_index_sanity, time_index_sanity
from logtool.format.meta import MetaError, leader_epochs, offset_checkpoint, partition_metadata, producer_snapshot
from logtool.format.records import RecordError, iter_records
from logtool.store.segment import Segment, WalkOutcome

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
# Segments written by Kafka itself, one per message format and codec family.
SOURCES = [
    kafka_case("v2-none-mixed") / "00000000000000000457.log",
    kafka_case("v2-mixed-codecs") / "00000000000000000413.log",
    kafka_case("v1-gzip") / "00000000000000000318.log",
    kafka_case("v0-snappy") / "00000000000000000284.log",
    kafka_case("v2-idempotent-txn") / "00000000000000000288.log",
]


def walk_bytes(tmp: Path, data: bytes, deep: bool = True) -> WalkOutcome:
    path = tmp / "00000000000000000000.log"
    path.write_bytes(data)
    seg = Segment(path, 0)
    walk = WalkOutcome(len(data))
    with seg:
        for view in seg.walk(walk):
            assert view.position + view.size <= len(data)
            if deep:
                try:
                    for _ in iter_records(seg.buf, view):
                        pass
                except RecordError:
                    pass
        report = check_segment(seg, active=True, deep=deep)
    assert report.valid_bytes == walk.valid_bytes
    return walk


@SETTINGS
@given(data=st.binary(max_size=4096))
def test_random_bytes_never_raise(tmp_path, data):
    walk = walk_bytes(tmp_path, data)
    assert 0 <= walk.valid_bytes <= len(data)
    assert (walk.stop is None) == (walk.valid_bytes == len(data))


@pytest.mark.slow
@SETTINGS
@given(src=st.sampled_from(SOURCES), cut=st.floats(0, 1))
def test_truncations_end_on_a_batch_boundary(tmp_path, src, cut):
    original = src.read_bytes()
    data = original[: int(len(original) * cut)]
    walk = walk_bytes(tmp_path, data)
    whole = walk_bytes(tmp_path, original, deep=False)
    assert walk.valid_bytes <= len(data)
    # a prefix of a valid file keeps exactly the whole batches that fit
    assert walk.stop is None or walk.stop.reason in ("TORN_BATCH", "SHORT_TAIL", "ZERO_TAIL")
    assert walk.valid_bytes <= whole.valid_bytes


@pytest.mark.slow
@SETTINGS
@given(src=st.sampled_from(SOURCES), where=st.floats(0, 1), bit=st.integers(0, 7))
def test_bit_flips_never_raise(tmp_path, src, where, bit):
    original = src.read_bytes()
    data = bytearray(original)
    i = min(int(len(data) * where), len(data) - 1)
    data[i] ^= 1 << bit
    with Segment(src, 0) as seg:
        ends = [v.position + v.size for v in seg.walk()]
    untouched = max((e for e in ends if e <= i), default=0)
    walk = walk_bytes(tmp_path, bytes(data))
    # every batch before the flipped byte is still whole and valid, so the prefix reaches at least its end
    assert untouched <= walk.valid_bytes <= len(data)


@SETTINGS
@given(data=st.binary(max_size=512), pos=st.integers(0, 600))
def test_read_entry_total(data, pos):
    entry = read_entry(data, pos, len(data))
    if entry is not None and hasattr(entry, "size"):
        assert entry.position + entry.size <= len(data)


@SETTINGS
@given(data=st.binary(max_size=400), base=st.integers(0, 2**40))
def test_index_parsers_total(data, base):
    offset_index_sanity(data, base)
    time_index_sanity(data, base)
    list(aborted_txns(data))


@SETTINGS
@given(text=st.text(max_size=300), data=st.binary(max_size=300))
def test_metadata_parsers_raise_only_meta_error(text, data):
    for parse in (offset_checkpoint, leader_epochs, partition_metadata):
        try:
            parse(text)
        except MetaError:
            pass
    try:
        producer_snapshot(data)
    except MetaError:
        pass
