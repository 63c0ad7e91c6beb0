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


@contextmanager
def pure() -> Iterator[None]:
    """Run the block on the pure-Python reference (the tests hold both paths to the same answers)."""
    global KERNEL
    saved, KERNEL = KERNEL, None
    try:
        yield
    finally:
        KERNEL = saved
