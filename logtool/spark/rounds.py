"""Pinned work under a bounded locality wait. Spark runs a pinned task elsewhere once its host has had no free
slot for the wait, so a host lost mid-audit never leaves its tasks waiting forever; such a task reads nothing
and comes back as it was sent. The driver pins it again while its host has a live executor (it was only
busy), and reports it not audited once the host is gone."""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, TypeVar

from logtool.spark.hosts import EXECUTOR_WAIT, Pin, resolve

if TYPE_CHECKING:
    from pyspark import SparkContext

T = TypeVar("T")
# Rounds in a row in which a live host took none of its tasks: then it is treated as gone (an executor
# Spark excluded, say), rather than rounds without end.
STALLED_ROUNDS = 3


def repin(sc: "SparkContext", back: Sequence[T], pin_of: Callable[[T], Pin], stalled: int,
          wait: float = EXECUTOR_WAIT) -> tuple[list[T], list[tuple[T, str]]]:
    """Of the items whose task ran off their host: those to run again on it, and those not to audit, with
    why. A host without a live executor is waited for up to `wait` seconds (a worker may restart it), unless
    its worker was lost."""
    live = resolve(sc, sorted({pin_of(x).executor for x in back}), wait) if back else {}
    again: list[T] = []
    gone: list[tuple[T, str]] = []
    for x in back:
        pin = pin_of(x)
        if live.get(pin.executor) is None:
            gone.append((x, f"its host {pin.asked} has no live Spark executor (lost during the audit)"))
        elif stalled >= STALLED_ROUNDS:
            gone.append((x, f"its host {pin.asked} took none of its tasks in {stalled} rounds"))
        else:
            again.append(x)
    return again, gone


def progress_made(sent: int, back: int, stalled: int) -> int:
    """The count of rounds in a row without progress, after a round that sent `sent` items and got `back`."""
    return stalled + 1 if sent and back == sent else 0
