"""How long the driver waits for a pinned host's executor: up to its wait for an executor that exited (its
worker starts another), not at all for a host whose worker the master reports lost. The Spark status store is
played by a stand-in with the few JVM calls hosts.py makes; tests/spark/test_cluster.py kills a real worker."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from logtool.spark import hosts
from logtool.spark.hosts import Pin, lost_worker_hosts, resolve
from logtool.spark.rounds import repin

WORKER_LOST = "worker lost: 10.0.0.2:38133 got disassociated"  # what a standalone master tells the driver
EXITED = "Command exited with code 137"


class _Option:
    """scala.Option as py4j hands it over."""

    def __init__(self, value: object) -> None:
        self.value = value

    def isDefined(self) -> bool:  # noqa: N802 (the JVM's name)
        return self.value is not None

    def get(self) -> object:
        assert self.value is not None
        return self.value


class _Executor:
    def __init__(self, ident: str, host: str, active: bool, why: str | None = None, removed_at: int = 0) -> None:
        self.ident, self.host, self.active, self.why, self.removed_at = ident, host, active, why, removed_at

    def id(self) -> str:
        return self.ident

    def hostPort(self) -> str:  # noqa: N802
        return f"{self.host}:40000"

    def isActive(self) -> bool:  # noqa: N802
        return self.active

    def removeReason(self) -> _Option:  # noqa: N802
        return _Option(None if self.active else self.why)

    def removeTime(self) -> _Option:  # noqa: N802 (a java.util.Date)
        return _Option(None if self.active else SimpleNamespace(getTime=lambda: self.removed_at))


class _Iterator:
    def __init__(self, items: list[_Executor]) -> None:
        self.items = list(items)

    def hasNext(self) -> bool:  # noqa: N802
        return bool(self.items)

    def next(self) -> _Executor:
        return self.items.pop(0)


class _Context:
    """A SparkContext on a standalone master whose status store lists `executors`."""

    def __init__(self, executors: list[_Executor]) -> None:
        self.master = "spark://master:7077"
        self.executors = executors
        store = SimpleNamespace(executorList=lambda active_only: SimpleNamespace(iterator=lambda: _Iterator(
            [e for e in self.executors if e.active or not active_only])))
        self._jsc = SimpleNamespace(sc=lambda: SimpleNamespace(statusStore=lambda: store))


class _Clock:
    """time for hosts.py: sleeping moves the clock on, and may run `on_sleep` (an executor registering)."""

    def __init__(self, on_sleep=None) -> None:
        self.now, self.slept, self.on_sleep = 0.0, 0.0, on_sleep

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds
        self.slept += seconds
        if self.on_sleep is not None:
            self.on_sleep(self.now)


def test_a_host_is_lost_when_its_last_executor_went_with_its_worker():
    sc = _Context([
        _Executor("driver", "10.0.0.1", True),
        _Executor("0", "10.0.0.2", False, WORKER_LOST),  # its worker killed
        _Executor("1", "10.0.0.3", False, EXITED),  # the executor only: its worker starts another
        _Executor("2", "10.0.0.4", False, WORKER_LOST),
        _Executor("3", "10.0.0.4", True),  # lost once, and back since with a new worker
        _Executor("4", "10.0.0.5", True),
    ])
    assert lost_worker_hosts(sc) == {"10.0.0.2"}


def test_a_host_s_last_executor_is_the_last_removed_not_the_last_listed():
    """The store lists executors by id as strings: "10" comes before "2"."""
    worker_lost_then_exited = _Context([_Executor("10", "10.0.0.2", False, EXITED, removed_at=2_000),
                                        _Executor("2", "10.0.0.2", False, WORKER_LOST, removed_at=1_000)])
    assert lost_worker_hosts(worker_lost_then_exited) == set()
    exited_then_worker_lost = _Context([_Executor("10", "10.0.0.2", False, WORKER_LOST, removed_at=2_000),
                                        _Executor("2", "10.0.0.2", False, EXITED, removed_at=1_000)])
    assert lost_worker_hosts(exited_then_worker_lost) == {"10.0.0.2"}


@pytest.fixture
def clock(monkeypatch):
    c = _Clock()
    monkeypatch.setattr(hosts, "time", c)
    return c


def test_a_host_whose_worker_was_lost_is_not_waited_for(clock):
    sc = _Context([_Executor("0", "10.0.0.2", False, WORKER_LOST), _Executor("1", "10.0.0.3", True)])
    assert resolve(sc, ["10.0.0.2", "10.0.0.3"], wait=60) == {"10.0.0.2": None, "10.0.0.3": "10.0.0.3"}
    assert clock.slept == 0
    again, gone = repin(sc, ["a", "b"], lambda x: Pin("broker-2" if x == "a" else "10.0.0.3",
                                                       "10.0.0.2" if x == "a" else "10.0.0.3"), 0, wait=60)
    assert again == ["b"] and gone == [("a", "its host broker-2 has no live Spark executor (lost during the audit)")]
    assert clock.slept == 0


def test_an_executor_that_exited_is_waited_for_until_its_worker_starts_another(clock):
    sc = _Context([_Executor("0", "10.0.0.2", False, EXITED)])
    clock.on_sleep = lambda now: now >= 7 and sc.executors.append(_Executor("1", "10.0.0.2", True))
    assert resolve(sc, ["10.0.0.2"], wait=20) == {"10.0.0.2": "10.0.0.2"}
    assert 7 <= clock.slept < 20


def test_an_executor_that_exited_and_never_came_back_is_waited_for_no_longer_than_the_wait(clock):
    sc = _Context([_Executor("0", "10.0.0.2", False, EXITED)])
    assert resolve(sc, ["10.0.0.2"], wait=20) == {"10.0.0.2": None}
    assert 20 <= clock.slept <= 21


def test_a_lost_host_does_not_spare_the_wait_for_one_that_may_come_back(clock):
    """Both missing: the one whose executor exited is still waited for."""
    sc = _Context([_Executor("0", "10.0.0.2", False, WORKER_LOST), _Executor("1", "10.0.0.3", False, EXITED)])
    assert resolve(sc, ["10.0.0.2", "10.0.0.3"], wait=20) == {"10.0.0.2": None, "10.0.0.3": None}
    assert clock.slept >= 20
