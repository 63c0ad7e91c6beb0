"""The compiled kernel (`_kernel.c`), where it was built, and the switch that forces the pure path.

The kernel answers the common case of the walker's and the deep check's questions (whole valid v2 batches;
records that no check would report) and hands everything else to the pure-Python code, which stays the
reference: findings are always worded by it. `KERNEL` is the module, or None where it is not used:
`LOGTOOL_PURE=1` in the environment, or an install without a compiler (the extension is optional);
`WHY_PURE` then says which. Callers read `kernel.KERNEL` when they run, so `pure()` switches a process.
"""
from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from logtool.format import Bytes
    from logtool.format.batch import BatchView

PURE_ENV = "LOGTOOL_PURE"


class Kernel(Protocol):
    """What the Python side calls of the compiled module. `_kernel.pyi` declares the C functions' signatures;
    mypy holds that module to this contract where `_load` returns it."""

    def frames(self, view_type: type[BatchView], buf: Bytes, pos: int, end: int, window: int,
               /) -> tuple[list[BatchView], int]: ...
    def clean_records(self, payload: Bytes, count: int, base_offset: int, last_offset: int, base_ts: int,
                      max_ts: int, check_offsets: bool, check_ts: bool, /) -> int: ...
    def render_text(self, payload: bytes, count: int, base_offset: int, base_ts: int, append_ts: int | None,
                    base_seq: int, ts_type: str, key_mode: int, value_mode: int, large: int, previous: int,
                    /) -> tuple[str, int, list[tuple[int, int]]] | None: ...
    def render_json(self, payload: bytes, count: int, base_offset: int, base_ts: int, append_ts: int | None,
                    base_seq: int, ts_type: str, key_mode: int, value_mode: int, large: int, tail: str,
                    unverified: bool, /) -> bytes | None: ...
    def plain_run(self, views: list[BatchView], base: int, /) -> tuple[int, int, int, int, int, int] | None: ...
    def index_run(self, views: list[BatchView], index: Bytes, entry: int, entries: int, base: int,
                  prev_last: int | None, /) -> tuple[int, int, int | None]: ...
    def crc32c(self, data: Bytes, /) -> int: ...
    def threads(self, n: int = ..., /) -> int: ...
    def split_passes(self) -> int: ...
    def hardware_crc(self) -> bool: ...


def _load() -> tuple[Kernel | None, str | None]:
    if os.environ.get(PURE_ENV, "") not in ("", "0"):
        return None, f"{PURE_ENV} is set"
    try:
        from logtool.format import _kernel
    except ImportError as e:
        return None, f"the compiled kernel is not installed ({e})"
    return _kernel, None


KERNEL, WHY_PURE = _load()


def clean_count(payload: Bytes, view: BatchView, checks: bool) -> int:
    """How many records the kernel reads in a v2 batch's (uncompressed) payload: with `checks`, every check of
    the deep check too (its timestamp check where the batch's times are CreateTime with no delete horizon);
    without, only that they decode. -1 where the reference must answer: a record it would report, or a
    header value an int64 does not hold."""
    fast = KERNEL
    if fast is None or view.base_offset is None or view.count is None:
        return -1  # no kernel here, or a legacy entry's view (only v2 views come here): the reference answers
    try:
        return fast.clean_records(payload, view.count, view.base_offset, view.last_offset, view.first_timestamp,
                                  view.max_timestamp, checks, checks and not view.attributes & 0x48)
    except OverflowError:
        return -1


@contextmanager
def pure() -> Iterator[None]:
    """Run the block on the pure-Python reference (the tests hold both paths to the same answers)."""
    global KERNEL
    saved, KERNEL = KERNEL, None
    try:
        yield
    finally:
        KERNEL = saved
