"""CRC32C (v2 batches, producer snapshots) and CRC32 (v0/v1 messages).

The compiled kernel's CRC-32C where it is built (format/_kernel.c; the tests hold it to the crc32c
package's), else the hardware-accelerated `crc32c` package (importing it is a noticeable part of a small
command's start-up: bench/results/kernel.md), else crcmod's table-driven CRC-32C for platforms where
neither can be had (far slower, still correct). The kernel is looked up once, as it was loaded, and not
through `kernel.active()`: a CRC is the same answer on both paths, so `pure()` leaves it be (LOGTOOL_PURE,
which loads no kernel, does not).
"""
from __future__ import annotations

import zlib

from logtool.format import Bytes, kernel

if kernel.KERNEL is not None:
    _crc32c = kernel.KERNEL.crc32c
else:
    try:
        from crc32c import crc32c as _crc32c
    except ImportError:  # pragma: no cover - exercised only where the wheel is missing
        import crcmod.predefined

        _crcmod_fn = crcmod.predefined.mkPredefinedCrcFun("crc-32c")

        def _crc32c(data: Bytes) -> int:
            crc: int = _crcmod_fn(bytes(data))
            return crc


def crc32c(data: Bytes) -> int:
    """Castagnoli CRC of a bytes-like object (memoryview slices are not copied by the fast path)."""
    return _crc32c(data)


def crc32(data: Bytes) -> int:
    """IEEE CRC32, as legacy (magic 0/1) messages use."""
    return zlib.crc32(data) & 0xFFFFFFFF
