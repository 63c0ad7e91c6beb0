"""What the page cache holds of a file, asked without reading it: `mincore` on a mapping made without faulting
it in, and `cachestat` where the kernel has it. Through ctypes, which only a read that spares the page cache
(store/pacing.py) imports."""
from __future__ import annotations

import ctypes
import mmap
import platform
import sys
from functools import cache

PAGE = mmap.PAGESIZE
_LOW_BIT = bytes(i & 1 for i in range(256))  # mincore's vector: bit 0 is residency, the rest reserved


def residency(fd: int, offset: int, length: int) -> bytes:
    """One byte per page of [offset, offset + length) (offset page-aligned): 1 when the page is in the page
    cache. Reports every page as cached when the probe cannot be made, so that nothing is dropped."""
    pages = -(-length // PAGE)
    libc = _libc()
    if libc is None:
        return b"\x01" * pages
    addr = libc.mmap(None, length, mmap.PROT_READ, mmap.MAP_SHARED, fd, offset)
    if addr in (None, ctypes.c_void_p(-1).value):
        return b"\x01" * pages
    try:
        vec = (ctypes.c_ubyte * pages)()
        if libc.mincore(addr, length, vec) != 0:
            return b"\x01" * pages
        return bytes(vec).translate(_LOW_BIT)
    finally:
        libc.munmap(addr, length)


@cache
def _libc() -> ctypes.CDLL | None:
    """libc with the prototypes `residency` (mapping a range without faulting it in) and `cached_whole`
    need, or None."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.mmap.restype = ctypes.c_void_p
        libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                              ctypes.c_int64]
        libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_ubyte)]
        libc.mincore.restype = ctypes.c_int
        libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
        libc.munmap.restype = ctypes.c_int
        libc.syscall.restype = ctypes.c_long
        return libc
    except (OSError, AttributeError):
        return None


def cached_whole(fd: int, size: int) -> bool:
    """Whether every page of the file is in the page cache, as a live broker's recent files mostly are: one
    `cachestat` call (Linux 6.5 and later), which reads nothing and starts no read, where the probe takes
    three. False where it cannot tell (an older kernel, a sandbox that refuses the call): the probe decides."""
    libc = _libc()
    if libc is None or _CACHESTAT is None:
        return False
    counts = _Cachestat()
    if libc.syscall(_CACHESTAT, fd, ctypes.byref(_Range(0, 0)), ctypes.byref(counts), 0) != 0:  # 0: to the end
        return False
    cached: int = counts.nr_cache
    return cached >= -(-size // PAGE)


class _Range(ctypes.Structure):  # struct cachestat_range
    _fields_ = [("off", ctypes.c_uint64), ("len", ctypes.c_uint64)]


class _Cachestat(ctypes.Structure):  # struct cachestat
    _fields_ = [(name, ctypes.c_uint64) for name in
                ("nr_cache", "nr_dirty", "nr_writeback", "nr_evicted", "nr_recently_evicted")]


# cachestat's number, one for every architecture (Linux numbers its system calls alike since 5.1) but alpha.
_CACHESTAT: int | None = 451 if sys.platform == "linux" and platform.machine() != "alpha" else None
