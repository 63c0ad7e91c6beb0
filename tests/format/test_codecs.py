"""Decompression as Kafka's readers accept it; payloads come from independent encoders (kafka-python's
codec module, the lz4/zstandard/gzip libraries); the quirks are byte edits of those."""
from __future__ import annotations

import gzip

import lz4.frame
import pytest
import zstandard
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka import codec as kcodec

from logtool.format.codecs import CodecError, _xxh32, decompress

PAYLOAD = b"".join(b"record %05d with some text that compresses; " % i for i in range(4000))  # ~180 KB


def test_gzip_reads_concatenated_members():
    data = gzip.compress(PAYLOAD[:1000]) + gzip.compress(PAYLOAD[1000:])
    assert decompress(1, data, 2) == PAYLOAD


def test_snappy_xerial_framing_and_raw_blocks():
    xerial = kcodec.snappy_encode(PAYLOAD, xerial_compatible=True, xerial_blocksize=32768)
    assert xerial[:8] == b"\x82SNAPPY\x00"
    assert decompress(2, xerial, 2) == PAYLOAD
    raw = kcodec.snappy_encode(PAYLOAD, xerial_compatible=False)  # librdkafka's way: one raw block
    assert decompress(2, raw, 1) == PAYLOAD


def test_lz4_kafka_frame_and_the_magic0_header_checksum_quirk():
    frame = bytearray(lz4.frame.compress(PAYLOAD, block_linked=False, content_checksum=False))
    assert decompress(3, bytes(frame), 2) == PAYLOAD
    header_len = 7 + (8 if frame[4] & 0x08 else 0)
    # Old clients hashed the magic bytes too (KAFKA-3160): Kafka ignores the checksum for magic 0 only.
    frame[header_len - 1] = (_xxh32(bytes(frame[: header_len - 1])) >> 8) & 0xFF
    assert decompress(3, bytes(frame), 0) == PAYLOAD
    with pytest.raises(CodecError, match="descriptor"):
        decompress(3, bytes(frame), 1)


def test_lz4_header_checksum_matches_kafkas_constants():
    assert (_xxh32(bytes([0x60, 0x40])) >> 8) & 0xFF == 0x82  # FORMAT.md §17
    assert (_xxh32(bytes.fromhex("04224d186040")) >> 8) & 0xFF == 0x1A


def test_zstd_stream_without_content_size():
    stream = zstandard.ZstdCompressor().compressobj()
    data = stream.compress(PAYLOAD) + stream.flush()
    assert decompress(4, data, 2) == PAYLOAD


def test_zstd_is_refused_in_legacy_messages():
    with pytest.raises(CodecError, match="zstd"):
        decompress(4, zstandard.ZstdCompressor().compress(b"x"), 1)


@pytest.mark.parametrize("codec,data", [
    (1, gzip.compress(bytes(50_000_000))),
    (3, lz4.frame.compress(bytes(50_000_000), block_linked=False)),
    (4, zstandard.ZstdCompressor().compress(bytes(50_000_000))),
    (2, kcodec.snappy_encode(bytes(50_000_000), xerial_compatible=True)),
], ids=["gzip", "lz4", "zstd", "snappy"])
def test_decompression_is_bounded(codec, data):
    """A small payload that expands past the limit is refused, not allocated."""
    with pytest.raises(CodecError, match="more than|exceeds"):
        decompress(codec, data, 2, limit=1_000_000)


@pytest.mark.parametrize("codec", [1, 2, 3, 4, 5, 7])
@settings(max_examples=60, deadline=None)
@given(data=st.binary(max_size=300))
def test_random_bytes_raise_only_codec_errors(codec, data):
    try:
        decompress(codec, data, 2, limit=1 << 20)
    except CodecError:
        pass


def test_truncated_streams_are_codec_errors():
    for codec, data in ((1, gzip.compress(PAYLOAD)), (3, lz4.frame.compress(PAYLOAD, block_linked=False)),
                        (2, kcodec.snappy_encode(PAYLOAD, xerial_compatible=True))):
        with pytest.raises(CodecError):
            decompress(codec, data[: len(data) // 2], 2)
