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

PURE_ENV = "LOGTOOL_PURE"


def _load():
    if os.environ.get(PURE_ENV, "") not in ("", "0"):
        return None, f"{PURE_ENV} is set"
    try:
        from logtool.format import _kernel
    except ImportError as e:
        return None, f"the compiled kernel is not installed ({e})"
    return _kernel, None


KERNEL, WHY_PURE = _load()


def clean_count(payload, view, checks: bool) -> int:
    """How many records the kernel reads in a v2 batch's (uncompressed) payload: with `checks`, every check of
    the deep check too (its timestamp check where the batch's times are CreateTime with no delete horizon);
    without, only that they decode. -1 where the reference must answer: a record it would report, or a
    header value an int64 does not hold."""
    try:
        return KERNEL.clean_records(payload, view.count, view.base_offset, view.last_offset, view.first_timestamp,
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
