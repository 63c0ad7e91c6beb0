"""Kafka's zig-zag varints (FORMAT.md §0), read from a buffer at a position."""
from __future__ import annotations

from logtool.format import Bytes


class VarintError(Exception):
    """A varint ran past the buffer or past its maximum length."""


def _read_zigzag(buf: Bytes, pos: int, end: int, bits: int) -> tuple[int, int]:
    """A zig-zag varint of at most `bits` bits (32: 5 bytes, 64: 10 bytes): (value, next position)."""
    u = shift = 0
    while True:
        if pos >= end:
            raise VarintError("varint runs past the end of the buffer")
        b = buf[pos]
        pos += 1
        u |= (b & 0x7F) << shift
        if not b & 0x80:
            break
        shift += 7
        if shift >= bits + 3:  # 35 for 32 bits, 70 for 64: one more continuation byte than allowed
            raise VarintError("varint is too long")
    u &= (1 << bits) - 1
    return (u >> 1) ^ -(u & 1), pos


def read_varint(buf: Bytes, pos: int, end: int) -> tuple[int, int]:
    """Signed 32-bit zig-zag varint at `pos`: (value, next position)."""
    return _read_zigzag(buf, pos, end, 32)


def read_varlong(buf: Bytes, pos: int, end: int) -> tuple[int, int]:
    """Signed 64-bit zig-zag varlong at `pos`: (value, next position)."""
    return _read_zigzag(buf, pos, end, 64)


def read_unsigned_varint(buf: Bytes, pos: int, end: int) -> tuple[int, int]:
    """Unsigned 32-bit varint at `pos` (`ByteUtils.readUnsignedVarint`, the protocol's compact lengths).
    Zig-zag is a bijection on 32-bit values, so this re-encodes what `read_varint` decoded."""
    v, pos = read_varint(buf, pos, end)
    return ((v << 1) ^ (v >> 31)) & 0xFFFFFFFF, pos
