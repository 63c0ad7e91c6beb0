"""The class cache (spark/class_cache.py): the first local audit records the classes its JVM loads, a detached
builder makes a CDS archive of them, and the next audits' JVMs map it, with the same output and not a word more."""
from __future__ import annotations

import fcntl
import json
import os
import re
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from logtool.spark import class_cache
from logtool.spark.class_cache import PREFIX, Cache, Request, build, cache_folder, installation_key, plan

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "fixtures" / "sample-logdir"
LOGTOOL = Path(sys.executable).with_name("logtool")


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    folder = tmp_path / "cache"
    monkeypatch.setenv("LOGTOOL_CACHE_DIR", str(folder))
    monkeypatch.setenv("LOGTOOL_CLASS_CACHE", "1")
    return folder


@pytest.fixture
def installation(tmp_path, monkeypatch):
    """A Java and a Spark home of a few files: what the key digests, nothing runs."""
    home = tmp_path / "jdk"
    (home / "bin").mkdir(parents=True)
    (home / "lib").mkdir()
    (home / "lib" / "modules").write_bytes(b"modules")
    java = home / "bin" / "java"
    java.write_text("#!/bin/sh\n")
    spark = tmp_path / "spark"
    (spark / "jars").mkdir(parents=True)
    (spark / "jars" / "spark-core.jar").write_bytes(b"jar")
    monkeypatch.setattr(class_cache, "_spark_home", lambda: str(spark))
    return java, spark


def test_the_cache_is_made_private_where_the_user_says(cache_dir):
    assert cache_folder() == cache_dir
    assert stat.S_IMODE(cache_dir.stat().st_mode) == 0o700


def test_no_cache_when_turned_off_or_when_others_can_write_into_it(cache_dir, monkeypatch):
    monkeypatch.setenv("LOGTOOL_CLASS_CACHE", "0")
    assert cache_folder() is None
    monkeypatch.setenv("LOGTOOL_CLASS_CACHE", "1")
    cache_dir.mkdir()
    cache_dir.chmod(0o777)  # anyone could put classes there for the JVM to run
    assert cache_folder() is None
    cache_dir.chmod(0o700)
    assert cache_folder() == cache_dir


def test_no_cache_where_the_jvm_could_not_name_an_archive(tmp_path, monkeypatch):
    monkeypatch.setenv("LOGTOOL_CLASS_CACHE", "1")
    monkeypatch.setenv("LOGTOOL_CACHE_DIR", str(tmp_path / "a:b"))  # it would build, and fail, after every audit
    assert cache_folder() is None


def test_never_a_kafka_directory(tmp_path, monkeypatch):
    log_dir = tmp_path / "kafka-logs"
    (log_dir / "orders-0").mkdir(parents=True)
    (log_dir / "meta.properties").write_text("node.id=1\nversion=1\ncluster.id=abc\n")
    (log_dir / "recovery-point-offset-checkpoint").write_text("0\n1\norders 0 0\n")
    log_dir.chmod(0o700)
    monkeypatch.setenv("LOGTOOL_CLASS_CACHE", "1")
    monkeypatch.setenv("LOGTOOL_CACHE_DIR", str(log_dir))
    assert cache_folder() is None


def test_the_key_follows_the_java_and_the_jars(installation):
    java, spark = installation
    first = installation_key(str(java), str(spark))
    assert installation_key(str(java), str(spark)) == first
    (spark / "jars" / "extra.jar").write_bytes(b"more")
    added = installation_key(str(java), str(spark))
    assert added != first
    (java.parent.parent / "lib" / "modules").write_bytes(b"an upgraded Java")
    assert installation_key(str(java), str(spark)) not in (first, added)


def test_a_jvm_records_its_classes_until_there_is_an_archive_then_maps_it(cache_dir, installation):
    java, _ = installation
    first = plan(str(java))
    assert first.recording is not None and first.recording.parent == cache_dir
    assert f"-XX:DumpLoadedClassList={first.recording}" in first.options
    assert "-Xlog:cds*=off" in first.options  # the JVM's CDS warnings would go to logtool's stdout
    assert first.cache is not None
    archive = first.cache.archive
    archive.write_bytes(b"an archive")
    archive.chmod(0o400)
    mapped = plan(str(java))
    assert mapped.recording is None
    assert mapped.options == (f"-XX:SharedArchiveFile={archive}", "-Xshare:auto", "-Xlog:cds*=off")
    archive.chmod(0o606)  # one another user could have changed: recorded and built again, never mapped
    assert plan(str(java)).recording is not None


def test_nothing_is_recorded_while_a_builder_makes_the_archive(cache_dir, installation):
    java, _ = installation
    cache = plan(str(java)).cache
    assert cache is not None
    with open(cache.lock, "rb") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        assert plan(str(java)).options == ()
    assert plan(str(java)).recording is not None


def _fake_java(tmp_path: Path, rc: int) -> Path:
    """A `java` that writes the archive -Xshare:dump is asked for (and says what it was given), or fails."""
    script = tmp_path / f"java-{rc}"
    script.write_text(f"""#!{sys.executable}
import sys
args = sys.argv[1:]
open({str(tmp_path / 'args.json')!r}, 'w').write(__import__('json').dumps(args))
out = next(a.split('=', 1)[1] for a in args if a.startswith('-XX:SharedArchiveFile='))
open(out, 'wb').write(b'archived classes')
sys.exit({rc})
""")
    script.chmod(0o755)
    return script


def _request(cache: Cache, java: Path, classes: Path) -> Request:
    gone = subprocess.Popen(["true"])
    gone.wait()  # the audit's JVM, ended
    return Request(str(java), "/spark/jars/a.jar:/spark/jars/b.jar", str(classes), str(cache.archive),
                   str(cache.lock), gone.pid)


def test_a_builder_makes_the_archive_whole_and_clears_what_is_stale(tmp_path, cache_dir, installation):
    java, _ = installation
    made = plan(str(java))
    assert made.cache is not None and made.recording is not None
    made.recording.write_text("java/lang/Object id: 0\n")
    old_archive = cache_dir / f"{PREFIX}0000000000000000.jsa"  # another installation's
    old_archive.write_bytes(b"old")
    running = cache_dir / f"{PREFIX}{made.cache.key}.1-2.classes"  # another audit's, recording now
    running.write_text("")
    forgotten = cache_dir / f"{PREFIX}{made.cache.key}.3-4.classes"  # of an audit killed long ago
    forgotten.write_text("")
    os.utime(forgotten, (0, 0))

    assert build(_request(made.cache, _fake_java(tmp_path, 0), made.recording))
    assert made.cache.archive.read_bytes() == b"archived classes"
    assert stat.S_IMODE(made.cache.archive.stat().st_mode) == 0o400
    args = json.loads((tmp_path / "args.json").read_text())
    assert "-Xshare:dump" in args and f"-XX:SharedClassListFile={made.recording}" in args
    assert args[args.index("-cp") + 1] == "/spark/jars/a.jar:/spark/jars/b.jar"  # the JVM's own class path
    assert not made.recording.exists() and not old_archive.exists() and not forgotten.exists()
    assert running.exists()
    assert sorted(p.name for p in cache_dir.iterdir()) == sorted([made.cache.archive.name, made.cache.lock.name,
                                                                  running.name])
    assert plan(str(java)).options[0] == f"-XX:SharedArchiveFile={made.cache.archive}"


def test_a_failed_build_leaves_no_archive_and_the_next_audit_records_again(tmp_path, cache_dir, installation):
    java, _ = installation
    made = plan(str(java))
    assert made.cache is not None and made.recording is not None
    made.recording.write_text("java/lang/Object id: 0\n")
    assert not build(_request(made.cache, _fake_java(tmp_path, 1), made.recording))
    assert sorted(p.name for p in cache_dir.iterdir()) == [made.cache.lock.name]  # no part, no list
    assert plan(str(java)).recording is not None


def test_no_archive_from_a_list_the_jvm_could_not_write(tmp_path, cache_dir, installation):
    java, _ = installation
    made = plan(str(java))
    assert made.cache is not None and made.recording is not None
    made.recording.write_text("")  # a full disk: the JVM made the file and wrote nothing into it
    assert not build(_request(made.cache, _fake_java(tmp_path, 0), made.recording))
    assert not (tmp_path / "args.json").exists() and not made.recording.exists()


def test_a_second_builder_leaves_the_archive_to_the_first(tmp_path, cache_dir, installation):
    java, _ = installation
    made = plan(str(java))
    assert made.cache is not None and made.recording is not None
    made.recording.write_text("java/lang/Object id: 0\n")
    with open(made.cache.lock, "rb") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        assert not build(_request(made.cache, _fake_java(tmp_path, 0), made.recording))
    assert not made.cache.archive.exists() and not (tmp_path / "args.json").exists()


def _audit(out: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([str(LOGTOOL), "audit", "--master", "local[1]", str(SAMPLE), "--output", str(out),
                           "--format", "json"], capture_output=True, text=True, timeout=300, env=env)


def _comparable(stdout: str) -> dict:
    doc = json.loads(stdout)
    return {k: v for k, v in doc.items() if k not in ("seconds", "audit_id", "audited_at", "output")}


def _archive_built(cache: Path, deadline_s: float = 600) -> Path:
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        archives = list(cache.glob(f"{PREFIX}*.jsa"))
        if archives and not list(cache.glob(f"{PREFIX}*.classes")):
            return archives[0]
        time.sleep(0.5)
    raise AssertionError(f"no archive in {sorted(p.name for p in cache.iterdir())}")


@pytest.mark.spark
def test_audits_with_the_archive_say_what_audits_without_it_say(tmp_path):
    cache = tmp_path / "cache"
    env = os.environ | {"LOGTOOL_CACHE_DIR": str(cache), "LOGTOOL_CLASS_CACHE": "1"}
    plain = _audit(tmp_path / "plain", os.environ | {"LOGTOOL_CLASS_CACHE": "0"})
    recording = _audit(tmp_path / "recording", env)
    archive = _archive_built(cache)  # by the detached builder, once the first audit's JVM has ended
    mapped = _audit(tmp_path / "mapped", env)
    assert plain.returncode == recording.returncode == mapped.returncode == 4  # the sample's planted damage
    assert _comparable(plain.stdout) == _comparable(recording.stdout) == _comparable(mapped.stdout)
    assert plain.stderr == recording.stderr == mapped.stderr == ""
    assert archive.exists() and sorted(cache.glob(f"{PREFIX}*.classes")) == []

    # Where the JVM cannot use it (here: not an archive at all), it runs without it, not a word more.
    archive.chmod(0o600)
    archive.write_bytes(os.urandom(1 << 20))
    archive.chmod(0o400)
    broken = _audit(tmp_path / "broken", env)
    assert broken.returncode == 4 and broken.stderr == ""
    assert _comparable(broken.stdout) == _comparable(plain.stdout)


_SESSION = """
import dataclasses, json, sys
from pathlib import Path
from logtool.spark import class_cache
from logtool.spark.session import start, stop
requests = []
class_cache.start_builder = requests.append  # the test builds it, not a detached process
spark, started = start("local[1]", {"spark.ui.enabled": "false"})
assert started and spark.sparkContext.parallelize(range(10), 2).sum() == 45
maps = Path(f"/proc/{spark.sparkContext._gateway.proc.pid}/maps").read_text()
stop(spark)
print(json.dumps({"maps": maps, "requests": [dataclasses.asdict(r) for r in requests]}))
"""


def _session(env: dict[str, str]) -> dict:
    """A session started and stopped in a process of its own (PySpark keeps one JVM per process): the
    memory map of its driver's JVM, and the builder requests its stop made."""
    p = subprocess.run([sys.executable, "-c", _SESSION], capture_output=True, text=True, timeout=300, env=env)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout.strip().splitlines()[-1])


@pytest.mark.spark
def test_the_driver_jvm_maps_the_archive(tmp_path):
    # In a directory whose name has a space, as a home directory may: Spark splits the JVM's options as a shell
    # does, and the JVM took the path's second half for the class to run.
    env = os.environ | {"LOGTOOL_CACHE_DIR": str(tmp_path / "my cache"), "LOGTOOL_CLASS_CACHE": "1"}
    recorded = _session(env)
    (request,) = (Request(**r) for r in recorded["requests"])
    assert request.archive not in recorded["maps"]
    assert build(request)
    mapped = _session(env)
    assert re.search(re.escape(request.archive) + "$", mapped["maps"], re.M)
    assert mapped["requests"] == []  # nothing recorded once there is an archive


def test_an_audit_that_ends_without_its_jvm_leaves_no_class_list(cache_dir, installation, monkeypatch):
    """Interrupted, or its JVM gone before the session stopped: no builder, and its class list removed."""
    from logtool.spark import session

    java, _ = installation
    made = plan(str(java))
    assert made.recording is not None
    made.recording.write_text("java/lang/Object id: 0\n")
    monkeypatch.setattr(session, "_class_plan", made)
    started = []
    monkeypatch.setattr(class_cache, "start_builder", started.append)

    class Gone:
        class sparkContext:  # noqa: N801 - a SparkSession's attribute
            _gateway = None
            _jvm = None

        def stop(self) -> None:
            pass

    session.stop(Gone())  # type: ignore[arg-type]
    assert started == [] and not made.recording.exists()
    assert session._class_plan == class_cache.Plan()
