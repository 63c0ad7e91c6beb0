"""PATHs pinned to a host (`HOST:PATH`, as rsync and scp write them): a broker's disk is read by a Spark
executor on that broker. The driver finds the executor of each HOST among the live ones, hands Spark the tasks
with that host as their only preferred location, and each task checks where it runs before it reads anything:
a task Spark ran elsewhere (its locality wait is bounded, so that a lost host never hangs the audit) reads
nothing and is pinned again, or reported not audited once its host is gone (spark/rounds.py)."""
from __future__ import annotations

import os
import re
import socket
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark import RDD, SparkContext

# HOST:/absolute/path; a HOST has neither a slash nor a colon, so a local path (absolute or ./relative) never
# reads as one. An IPv6 host is written in brackets: [::1]:/data.
_PINNED = re.compile(r"^(\[[0-9A-Fa-f:.]+\]|[^/:\[\]\s]+):(/.*)$")
EXECUTOR_WAIT = 20.0  # seconds the driver waits for an executor on a pinned HOST to register
LOCALITY_WAIT = 3.0  # seconds a pinned task waits for a free slot on its host before Spark runs it elsewhere


@dataclass(slots=True, frozen=True)
class Pin:
    """Where a pinned PATH is read: the HOST the user wrote, and the executor host Spark knows it by."""

    asked: str
    executor: str


def named(pin: Pin | None, path: str) -> str:
    """A path as the user wrote its PATH: on the host asked for (HOST:path) where it is pinned."""
    return path if pin is None else f"{pin.asked}:{path}"


def reader(pin: Pin | None, here: str) -> str:
    """The host column: this host, or the host asked for and the executor that read it."""
    return here if pin is None else f"{pin.asked} (read on {here})"


def pinned(path: str) -> tuple[str | None, str]:
    """(HOST, PATH) of `HOST:PATH`; (None, path) for a path of this machine's."""
    m = _PINNED.match(path)
    if m is None:
        return None, path
    return m.group(1).strip("[]"), m.group(2)


def executor_host() -> str:
    """This process's host as Spark names the executor it belongs to: the worker's SPARK_LOCAL_HOSTNAME or
    SPARK_LOCAL_IP (which its executors inherit), else the machine's name."""
    return os.environ.get("SPARK_LOCAL_HOSTNAME") or os.environ.get("SPARK_LOCAL_IP") or socket.gethostname()


def _addresses(name: str) -> set[str]:
    try:
        return {str(info[4][0]) for info in socket.getaddrinfo(name, None)}
    except (OSError, UnicodeError):
        return set()


def _is_address(name: str) -> bool:
    return bool(re.fullmatch(r"[0-9.]+|[0-9A-Fa-f:]+", name)) and ("." in name or ":" in name)


def same_host(asked: str, known: str) -> bool:
    """Whether the host a user wrote names the host Spark knows: the same name, the same short name
    (broker-1 and broker-1.example.com), or a name that resolves to that address."""
    if asked.lower() == known.lower():
        return True
    if not _is_address(asked) and not _is_address(known):
        return asked.split(".")[0].lower() == known.split(".")[0].lower()
    if _is_address(known):
        return known in _addresses(asked)
    return asked in _addresses(known)


def _this_machine(name: str) -> bool:
    names = {socket.gethostname().lower(), socket.getfqdn().lower(), "localhost"}
    if name.lower() in names or name.startswith("127.") or name == "::1":
        return True
    return bool(_addresses(name) & (_addresses(socket.gethostname()) | {"127.0.0.1", "::1"}))


def is_local(sc: "SparkContext") -> bool:
    """Whether the master is local (the driver's process runs the tasks)."""
    return (sc.master or "").startswith("local")


def gateway(sc: "SparkContext") -> Any:
    """The JVM behind a live SparkContext (PySpark types it optional: None only once it is stopped)."""
    jvm = sc._jvm
    if jvm is None:
        raise RuntimeError("the SparkContext is stopped")
    return jvm


def _executors(sc: "SparkContext", active_only: bool) -> Iterator[Any]:
    """The executors in Spark's status store (its ExecutorSummary objects), the dead ones too unless
    `active_only`."""
    it = sc._jsc.sc().statusStore().executorList(active_only).iterator()
    while it.hasNext():
        yield it.next()


def _host_of(executor: Any) -> str:
    return str(executor.hostPort()).rsplit(":", 1)[0]


def live_executor_hosts(sc: "SparkContext") -> list[str]:
    """The hosts of the live executors (Spark's status store; the driver left out unless the master is
    local: then the driver is the executor)."""
    local = is_local(sc)
    return sorted({_host_of(e) for e in _executors(sc, active_only=True) if local or e.id() != "driver"})


def lost_worker_hosts(sc: "SparkContext") -> set[str]:
    """The hosts whose last executor was removed because the worker that ran it was lost (a standalone
    master says so: "worker lost: ..."): nothing there starts an executor again. An executor that merely
    exited (killed, out of memory) is started again by its worker, so its host is not among these."""
    active: set[str] = set()
    last: dict[str, tuple[int, str]] = {}  # host: (when its last removed executor went, why)
    for e in _executors(sc, active_only=False):
        if e.id() == "driver":
            continue
        host = _host_of(e)
        if e.isActive():
            active.add(host)
        elif e.removeTime().isDefined() and e.removeReason().isDefined():
            # By the time it went: the store lists executors by id, compared as strings ("10" before "2").
            removed = (int(e.removeTime().get().getTime()), str(e.removeReason().get()))
            last[host] = max(last.get(host, removed), removed)
    return {host for host, (_, why) in last.items() if host not in active and why.startswith("worker lost")}


def resolve(sc: "SparkContext", asked: Sequence[str], wait: float = EXECUTOR_WAIT) -> dict[str, str | None]:
    """For each HOST asked, the host of a live executor there (None: there is none), waiting up to `wait`
    seconds for missing ones to register, but not for a host whose worker was lost."""
    local = is_local(sc)
    deadline = time.monotonic() + wait
    while True:
        hosts = live_executor_hosts(sc)
        found: dict[str, str | None] = {}
        for a in asked:
            if local:
                found[a] = hosts[0] if hosts and _this_machine(a) else None
            else:
                found[a] = next((h for h in hosts if same_host(a, h)), None)
        missing = [a for a, h in found.items() if h is None]
        if local or not missing or time.monotonic() >= deadline:
            return found
        lost = lost_worker_hosts(sc)
        if all(any(same_host(a, h) for h in lost) for a in missing):
            return found
        time.sleep(0.5)


def located(sc: "SparkContext", items: Sequence[tuple[object, str | None]]) -> "RDD":
    """An RDD of `items` (object, preferred host or None), one partition each, that Spark schedules on its
    host (`SparkContext.makeRDD` with locations, which PySpark does not expose): each object goes pickled
    as PySpark's own serializer writes it."""
    from pyspark import RDD
    from pyspark.serializers import CPickleSerializer

    serializer = CPickleSerializer()
    jvm = gateway(sc)
    convert = jvm.scala.jdk.javaapi.CollectionConverters
    pairs = jvm.java.util.ArrayList()
    for obj, host in items:
        hosts = jvm.java.util.ArrayList()
        if host is not None:
            hosts.add(host)
        pairs.add(jvm.scala.Tuple2(bytearray(serializer.dumps(obj)), convert.asScala(hosts).toSeq()))
    tag = jvm.scala.reflect.ClassTag.apply(jvm.java.lang.Class.forName("[B"))
    rdd = sc._jsc.sc().makeRDD(convert.asScala(pairs).toSeq(), tag)
    return RDD(jvm.org.apache.spark.api.java.JavaRDD(rdd, tag), sc, serializer)
