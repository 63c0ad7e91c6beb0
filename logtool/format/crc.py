"""CRC32C (v2 batches, producer snapshots) and CRC32 (v0/v1 messages).

The hardware-accelerated `crc32c` package runs at several GB/s; crcmod's table-driven CRC-32C is the
fallback for platforms where it cannot be imported (about 30x slower, still correct).
"""
from __future__ import annotations

import zlib

try:
    from crc32c import crc32c as _crc32c
except ImportError:  # pragma: no cover - exercised only where the wheel is missing
    import crcmod.predefined

    _crcmod_fn = crcmod.predefined.mkPredefinedCrcFun("crc-32c")

    def _crc32c(data) -> int:
        return _crcmod_fn(bytes(data))


def crc32c(data) -> int:
    """Castagnoli CRC of a bytes-like object (memoryview slices are not copied by the fast path)."""
    return _crc32c(data)


def crc32(data) -> int:
    """IEEE CRC32, as legacy (magic 0/1) messages use."""
    return zlib.crc32(data) & 0xFFFFFFFF
