"""Python's cyclic garbage collector, paused where work makes objects by the million that live on or die by
reference counting alone (the reports of thousands of partitions, a metadata replay's state): left to run,
the collector walks what lives on again and again, for nothing."""
from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def paused() -> Iterator[None]:
    """The collector off for the block (on again after it, if it was on). A block that may leave cycles (an
    exception and its traceback) frees them with `gc.collect(0)` now and then."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()
