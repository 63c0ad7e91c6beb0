"""Decompression of batch payloads as Kafka's readers accept them (FORMAT.md §4), with a size bound.

Every decoder refuses to produce more than `limit` bytes, so a corrupt or hostile length can never make
us allocate without bound. Failures raise `CodecError` with a message for a finding.
"""
from __future__ import annotations

import struct
import threading
import zlib

import lz4.block
import snappy
import zstandard

from logtool.format import Bytes

# What one batch may decompress to. Producers cap a batch near 1 MB compressed (max.request.size); 64 MiB
# allows a ratio of 64:1 on the largest, and keeps a bomb (decoded, plus the decoder's own buffer) within
# the 300 MB a check may take.
DEFAULT_LIMIT = 64 * 1024 * 1024

_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_LZ4_MAGIC = b"\x04\x22\x4d\x18"
_U32LE = struct.Struct("<I")
_I32BE = struct.Struct(">i")


class CodecError(Exception):
    """The payload cannot be decompressed the way Kafka would."""


def decompress(codec: int, data: Bytes, magic: int, limit: int = DEFAULT_LIMIT) -> bytes:
    if codec == 1:
        return _gunzip(data, limit)
    if codec == 2:
        return _unsnappy(data, limit)
    if codec == 3:
        return _unlz4(data, magic, limit)
    if codec == 4:
        if magic < 2:
            raise CodecError(f"zstd is not allowed in a magic {magic} message")
        return _unzstd(data, limit)
    raise CodecError(f"unknown compression type id {codec}")


def _too_large(limit: int) -> CodecError:
    return CodecError(f"decompresses to more than {limit} bytes")


def _gunzip(data: Bytes, limit: int) -> bytes:
    # GZIPInputStream reads concatenated members; zlib's decompressobj stops after one, so loop.
    out = bytearray()
    rest = bytes(data)
    while rest:
        d = zlib.decompressobj(31)
        try:
            out += d.decompress(rest, limit - len(out) + 1)
        except zlib.error as e:
            raise CodecError(f"gzip: {e}") from None
        if len(out) > limit or d.unconsumed_tail:
            raise _too_large(limit)
        if not d.eof:
            raise CodecError("gzip: stream ended prematurely")
        rest = d.unused_data
    return bytes(out)


def _raw_snappy_length(block: Bytes) -> int:
    value = shift = 0
    for i in range(min(5, len(block))):
        b = block[i]
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value
        shift += 7
    raise CodecError("snappy: bad uncompressed-length header")


def _raw_snappy(block: Bytes, budget: int) -> bytes:
    if _raw_snappy_length(block) > budget:
        raise CodecError("snappy: declared length exceeds the decompression limit")
    try:
        out: bytes = snappy.decompress(bytes(block))  # python-snappy has no annotations
        return out
    except Exception as e:  # python-snappy raises several unrelated types
        raise CodecError(f"snappy: {e}") from None


def _unsnappy(data: Bytes, limit: int) -> bytes:
    data = memoryview(data)
    if len(data) < 16 or bytes(data[:8]) != _XERIAL_MAGIC:
        if len(data) == 0:
            raise CodecError("snappy: cannot decompress empty stream")
        return _raw_snappy(data, limit)  # non-Java clients write one raw block
    out = bytearray()
    pos = 16
    while pos < len(data):
        if pos + 4 > len(data):
            raise CodecError("snappy: truncated chunk length")
        if bytes(data[pos : pos + 8]) == _XERIAL_MAGIC:  # a concatenated stream's header
            pos += 16
            continue
        n = _I32BE.unpack_from(data, pos)[0]
        if n < 0 or pos + 4 + n > len(data):
            raise CodecError(f"snappy: bad chunk length {n}")
        out += _raw_snappy(data[pos + 4 : pos + 4 + n], limit - len(out))
        if len(out) > limit:
            raise _too_large(limit)
        pos += 4 + n
    return bytes(out)


def _unlz4(data: Bytes, magic: int, limit: int) -> bytes:
    """Kafka's own LZ4 frame reader: walks the blocks itself so the broken magic-0 header checksum
    (KAFKA-3160) and an unverified content checksum are accepted exactly as Kafka accepts them."""
    data = memoryview(data)
    max_block, block_checksum, header_len = _lz4_frame_header(data)
    if magic >= 1:
        _check_lz4_hc(data, header_len)
    out = bytearray()
    pos = header_len
    while True:
        if pos + 4 > len(data):
            raise CodecError("lz4: stream ended prematurely")
        word = _U32LE.unpack_from(data, pos)[0]
        pos += 4
        if word == 0:
            return bytes(out)
        n = word & 0x7FFFFFFF
        if n > max_block:
            raise CodecError(f"lz4: block size {n} exceeded max: {max_block}")
        if pos + n > len(data):
            raise CodecError("lz4: stream ended prematurely")
        block = data[pos : pos + n]
        if word & 0x80000000:
            out += block
        else:
            try:
                out += lz4.block.decompress(bytes(block), uncompressed_size=max_block)
            except Exception as e:
                raise CodecError(f"lz4: {e}") from None
        if len(out) > limit:
            raise _too_large(limit)
        pos += n + (4 if block_checksum else 0)


def _lz4_frame_header(data: memoryview) -> tuple[int, bool, int]:
    """The frame descriptor's rules, in the order Kafka's reader checks them: (the largest block, whether
    blocks carry a checksum, the header's length)."""
    if len(data) < 7 or bytes(data[:4]) != _LZ4_MAGIC:
        raise CodecError("lz4: stream unsupported (invalid magic bytes)")
    flg, bd = data[4], data[5]
    if flg >> 6 != 1:
        raise CodecError(f"lz4: version {flg >> 6} is unsupported")
    if flg & 0x03:
        raise CodecError("lz4: reserved bits must be 0")
    if not flg & 0x20:
        raise CodecError("lz4: dependent block stream is unsupported")
    if bd & 0x8F:
        raise CodecError("lz4: reserved BD bits must be 0")
    size_code = (bd >> 4) & 0x07
    if size_code < 4:
        raise CodecError("lz4: block size value must be between 4 and 7")
    return 1 << (2 * size_code + 8), bool(flg & 0x10), 7 + (8 if flg & 0x08 else 0)


def _check_lz4_hc(data: Bytes, header_len: int) -> None:
    expected = (_xxh32(bytes(data[4 : header_len - 1])) >> 8) & 0xFF
    if data[header_len - 1] != expected:
        raise CodecError("lz4: stream frame descriptor corrupted")


def _xxh32(data: bytes, seed: int = 0) -> int:
    """xxHash32 of a few descriptor bytes (the LZ4 header checksum); short inputs only."""
    p1, p2, p3, p4, p5 = 2654435761, 2246822519, 3266489917, 668265263, 374761393
    mask = 0xFFFFFFFF

    def rotl(x: int, r: int) -> int:
        return ((x << r) | (x >> (32 - r))) & mask

    n = len(data)
    i = 0
    if n >= 16:
        v = [(seed + p1 + p2) & mask, (seed + p2) & mask, seed & mask, (seed - p1) & mask]
        while i + 16 <= n:
            for j in range(4):
                lane = int.from_bytes(data[i : i + 4], "little")
                v[j] = (rotl((v[j] + lane * p2) & mask, 13) * p1) & mask
                i += 4
        h = (rotl(v[0], 1) + rotl(v[1], 7) + rotl(v[2], 12) + rotl(v[3], 18)) & mask
    else:
        h = (seed + p5) & mask
    h = (h + n) & mask
    while i + 4 <= n:
        h = (rotl((h + int.from_bytes(data[i : i + 4], "little") * p3) & mask, 17) * p4) & mask
        i += 4
    while i < n:
        h = (rotl((h + data[i] * p5) & mask, 11) * p1) & mask
        i += 1
    h ^= h >> 15
    h = (h * p2) & mask
    h ^= h >> 13
    h = (h * p3) & mask
    h ^= h >> 16
    return h


# One decompression context per thread, reused: making one per batch, and reading with a buffer of the
# whole limit, was most of a zstd batch's time (mixed codecs: bench/results/kernel.md).
_ZSTD = threading.local()
_ZSTD_FIRST_READ = 1 << 16  # most batches decompress to less: one read, a small buffer
_ZSTD_READ = 1 << 20


def _unzstd(data: Bytes, limit: int) -> bytes:
    # Streaming writers omit the content size, so read through a stream reader across frames.
    context = getattr(_ZSTD, "context", None)
    if context is None:
        context = _ZSTD.context = zstandard.ZstdDecompressor()
    parts, total, want = [], 0, _ZSTD_FIRST_READ
    try:
        reader = context.stream_reader(bytes(data), read_across_frames=True)
        while total <= limit:
            chunk = reader.read(min(want, limit + 1 - total))
            if not chunk:
                break
            parts.append(chunk)
            total += len(chunk)
            want = _ZSTD_READ
    except zstandard.ZstdError as e:
        raise CodecError(f"zstd: {e}") from None
    if total > limit:
        raise _too_large(limit)
    return parts[0] if len(parts) == 1 else b"".join(parts)
