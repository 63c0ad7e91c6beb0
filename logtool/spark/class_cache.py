"""Spark's classes kept between audits: a class data sharing (CDS) archive of the classes the driver's JVM
loads, which the next JVM maps from one file instead of finding, reading and verifying each class in Spark's
300 jars. On a two-core machine it took Spark's start from 3.3 to 1.5 s, and the JVM's CPU during the checks
of 20,000 partitions from 2.0 to 1.0 s (docs/fleet.md).

The first audit records the names of the classes its JVM loads (-XX:DumpLoadedClassList, which costs it
nothing measurable). When it stops, a detached process of low priority waits for that JVM to end and builds the
archive from the list (java -Xshare:dump: about 20 s of CPU and 180-195 MB of disk, once); later audits map it. The
archive is named by a digest of the Java and of Spark's jars, so a changed installation makes a new one (and
the old ones are removed); an archive the JVM cannot use is ignored by the JVM without a word (its CDS logging
is off), never an error. LOGTOOL_CACHE_DIR moves the cache (default $XDG_CACHE_HOME/logtool, else
~/.cache/logtool); LOGTOOL_CLASS_CACHE=0 turns this off, and the cache of logtool's shipped package
(spark/package.py), which keeps its zip in the same directory.

Only for a JVM that logtool starts itself (any master but spark-submit's): spark-submit's JVM is started
before logtool runs (docs/fleet.md says how to give it an archive)."""
from __future__ import annotations

import fcntl
import hashlib
import json
import os
import stat
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from logtool.store.layout import PathKind, classify_path

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

PREFIX = "spark-classes-"
# The JVM's heap when Spark starts it (spark.driver.memory's default): the archive is built for the same
# compressed-pointer layout, without which the JVM would not map it.
DUMP_HEAP = "-Xmx1g"
QUIET = "-Xlog:cds*=off"  # the JVM's CDS warnings go to stdout, which is logtool's output
JVM_EXIT_WAIT_S = 120  # how long a builder waits for the audit's JVM to end (it ends with the audit)
DUMP_TIMEOUT_S = 900
STALE_LIST_S = 86_400  # a class list no builder took (its audit was killed) is removed after a day


@dataclass(frozen=True, slots=True)
class Cache:
    """The files of one Java and Spark installation in the cache directory."""

    folder: Path
    key: str

    @property
    def archive(self) -> Path:
        return self.folder / f"{PREFIX}{self.key}.jsa"

    @property
    def lock(self) -> Path:
        return self.folder / f"{PREFIX}{self.key}.lock"

    def class_list(self) -> Path:
        """Where a JVM about to start writes the names of the classes it loads (one file per JVM)."""
        return self.folder / f"{PREFIX}{self.key}.{os.getpid()}-{time.monotonic_ns()}.classes"


def cache_folder() -> Path | None:
    """The cache directory, made (mode 700) if need be; None when the class cache is off or there is none
    this user owns and alone can write."""
    if os.environ.get("LOGTOOL_CLASS_CACHE", "1").strip().lower() in ("0", "no", "off", "false"):
        return None
    chosen = os.environ.get("LOGTOOL_CACHE_DIR")
    if chosen:
        folder = Path(chosen)
    else:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        folder = Path(base) / "logtool"
    if ":" in str(folder):
        return None  # the JVM reads -XX:SharedArchiveFile as a list split at colons: no archive could be named
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        st = folder.stat()
    except OSError:
        return None
    # A JVM runs the classes it maps from here: only from a directory no one else can write into.
    if not _private(st) or not os.access(folder, os.W_OK):
        return None
    try:
        if classify_path(folder) in (PathKind.LOG_DIR, PathKind.PARTITION_DIR):
            return None  # logtool writes nothing into Kafka's directories but its repairs
    except OSError:
        return None
    return folder


def installation_key(java_bin: str, spark_home: str) -> str:
    """A digest of what an archive is valid for: the Java (its binary and its module image) and Spark's jars
    (names, sizes, modification times), which the JVM itself checks before mapping an archive."""
    digest = hashlib.sha256()
    real_java = os.path.realpath(java_bin)
    digest.update(real_java.encode())
    home = Path(real_java).parent.parent
    for part in (home / "lib" / "modules", Path(real_java)):
        try:
            st = part.stat()
        except OSError:
            continue
        digest.update(f"{part}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    jars = Path(spark_home) / "jars"
    try:
        names = sorted(os.listdir(jars))
    except OSError:
        names = []
    for name in names:
        try:
            st = (jars / name).stat()
        except OSError:
            continue
        digest.update(f"{name}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return digest.hexdigest()[:16]


def _spark_home() -> str:
    from pyspark.find_spark_home import _find_spark_home

    return _find_spark_home()


def current_cache(java_bin: str) -> Cache | None:
    folder = cache_folder()
    if folder is None:
        return None
    return Cache(folder, installation_key(java_bin, _spark_home()))


def _private(st: os.stat_result) -> bool:
    """Owned by this user, and no one else may write it."""
    return st.st_uid == os.geteuid() and not st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def usable(path: Path) -> bool:
    """A file in the cache (not a link) this user made and alone can change."""
    try:
        st = path.lstat()
    except OSError:
        return False
    return stat.S_ISREG(st.st_mode) and _private(st)


def _locked(lock: Path | str) -> int | None:
    """The cache's lock, taken: its descriptor, held until closed. None: another builder holds it, or it
    cannot be opened."""
    try:
        fd = os.open(lock, os.O_RDONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    return fd


def _building(cache: Cache) -> bool:
    """Whether a builder holds the cache's lock now (or it cannot be told: then nothing is recorded)."""
    fd = _locked(cache.lock)
    if fd is None:
        return True
    os.close(fd)
    return False


@dataclass(frozen=True, slots=True)
class Plan:
    """What the class cache does for one JVM: its options, and the class list it records (if it records)."""

    options: tuple[str, ...] = ()
    recording: Path | None = None
    cache: Cache | None = None


def plan(java_bin: str) -> Plan:
    """The options for a JVM logtool is about to start: map the archive if there is one, else record the
    classes it loads (unless a builder is making the archive now, or the cache is off)."""
    cache = current_cache(java_bin)
    if cache is None:
        return Plan()
    if usable(cache.archive):
        return Plan((f"-XX:SharedArchiveFile={cache.archive}", "-Xshare:auto", QUIET), None, cache)
    if _building(cache):
        return Plan()
    recording = cache.class_list()
    return Plan((f"-XX:DumpLoadedClassList={recording}", QUIET), recording, cache)


def discard(made: Plan) -> Plan:
    """Remove the class list `made` had its JVM record, which no builder will take; an empty plan."""
    if made.recording is not None:
        made.recording.unlink(missing_ok=True)
    return Plan()


@dataclass(frozen=True, slots=True)
class Request:
    """What a builder needs, as the running JVM reports it (its Java, its exact class path)."""

    java: str
    class_path: str
    classes: str
    archive: str
    lock: str
    jvm_pid: int


def request_from(spark: "SparkSession", made: Plan) -> Request | None:
    """Before the session stops: the builder's request, when this JVM recorded its classes."""
    if made.recording is None or made.cache is None:
        return None
    sc = spark.sparkContext
    gateway = sc._gateway
    proc = getattr(gateway, "proc", None)
    jvm = sc._jvm
    if proc is None or jvm is None:
        return None
    from py4j.protocol import Py4JError

    try:
        java_home, class_path = jvm.System.getProperty("java.home"), jvm.System.getProperty("java.class.path")
    except Py4JError:  # the JVM is gone (its audit failed with it): nothing to build from
        return None
    return Request(os.path.join(java_home, "bin", "java"), class_path, str(made.recording), str(made.cache.archive),
                   str(made.cache.lock), proc.pid)


def start_builder(request: Request) -> None:
    """Detach a builder for `request`: a process of its own session, no terminal, lowest priority."""
    try:
        subprocess.Popen([sys.executable, "-m", "logtool.spark.class_cache", json.dumps(asdict(request))],
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         start_new_session=True, close_fds=True, cwd="/")
    except OSError:
        pass  # no archive this time: the next audit records again


def build(request: Request) -> bool:
    """Make the archive `request` asks for, unless another builder is making it or it is there; whether it
    is there now. The class list is removed whatever happens, and so are the archives of other installations."""
    classes, archive = Path(request.classes), Path(request.archive)
    fd = _locked(request.lock)
    try:
        if fd is None:
            return False  # another builder's
        _wait_for_exit(request.jvm_pid)
        if not usable(archive) and _recorded(classes):
            _dump(request, archive)
        _remove_others(archive, Path(request.lock))
        return usable(archive)
    finally:
        classes.unlink(missing_ok=True)
        if fd is not None:
            os.close(fd)


def _recorded(classes: Path) -> bool:
    """Whether the JVM wrote its class list (on a full disk it leaves an empty file)."""
    try:
        return classes.stat().st_size > 0
    except OSError:
        return False


def _wait_for_exit(pid: int) -> None:
    """Until the audit's JVM has ended (its class list complete), for a bounded time."""
    deadline = time.monotonic() + JVM_EXIT_WAIT_S
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        except PermissionError:
            pass  # alive, another user's (the pid was reused)
        time.sleep(0.1)


def _dump(request: Request, archive: Path) -> None:
    part = archive.with_name(archive.name + ".part")
    command = [request.java, "-Xshare:dump", DUMP_HEAP, "-Xlog:all=off", f"-XX:SharedClassListFile={request.classes}",
               f"-XX:SharedArchiveFile={part}", "-cp", request.class_path]
    try:
        done = subprocess.run(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, timeout=DUMP_TIMEOUT_S, check=False)
        if done.returncode == 0 and part.is_file():
            os.chmod(part, 0o400)
            os.replace(part, archive)  # whole or absent: the JVM never maps a half-written archive
    except (OSError, subprocess.SubprocessError):
        pass
    finally:
        part.unlink(missing_ok=True)


def _remove_others(archive: Path, lock: Path) -> None:
    """The files of other installations (an upgraded Java or Spark), and class lists no builder took."""
    now = time.time()
    for other in archive.parent.glob(f"{PREFIX}*"):
        if other in (archive, lock):
            continue
        try:
            if other.suffix == ".classes" and now - other.stat().st_mtime < STALE_LIST_S:
                continue  # another audit's, maybe running
            other.unlink()
        except OSError:
            pass


def main(argv: list[str]) -> int:
    """The detached builder: `python -m logtool.spark.class_cache REQUEST-JSON`."""
    try:
        os.nice(19)
    except OSError:
        pass
    build(Request(**json.loads(argv[0])))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
