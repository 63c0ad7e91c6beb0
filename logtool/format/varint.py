"""Kafka's zig-zag varints (FORMAT.md §0), read from a buffer at a position."""
from __future__ import annotations


class VarintError(Exception):
    """A varint ran past the buffer or past its maximum length."""


def read_varint(buf, pos: int, end: int) -> tuple[int, int]:
    """Signed 32-bit zig-zag varint at `pos`: (value, next position)."""
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
        if shift >= 35:
            raise VarintError("varint is too long")
    u &= 0xFFFFFFFF
    return (u >> 1) ^ -(u & 1), pos


def read_varlong(buf, pos: int, end: int) -> tuple[int, int]:
    """Signed 64-bit zig-zag varlong at `pos`: (value, next position)."""
    u = shift = 0
    while True:
        if pos >= end:
            raise VarintError("varlong runs past the end of the buffer")
        b = buf[pos]
        pos += 1
        u |= (b & 0x7F) << shift
        if not b & 0x80:
            break
        shift += 7
        if shift >= 70:
            raise VarintError("varlong is too long")
    u &= 0xFFFFFFFFFFFFFFFF
    return (u >> 1) ^ -(u & 1), pos
