"""The package an audit ships to its executors (spark/package.py): imported from the zip,
logtool runs there as it does here, with its compiled kernel and its SIGBUS guard (logtool/extensions.py
loads them out of the archive, which Python does not), and with compiled code that no executor compiles
again. Before, every executor ran the pure-Python walk, unguarded."""
from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
import zipfile

import pytest

from logtool.spark import package
from logtool.spark.package import package_archive

# What an executor's Python sees of logtool, imported from the archive alone: no site-packages (-S), so that
# the installed package cannot stand in for the archive's.
PROBE = """
import json, sys
sys.path.insert(0, sys.argv[1])
import logtool, logtool.format.kernel as kernel, logtool.store.mapguard as mapguard
print(json.dumps({"file": logtool.__file__, "kernel": kernel.KERNEL is not None, "why_pure": kernel.WHY_PURE,
                  "guard": mapguard.AVAILABLE, "why_unguarded": mapguard.UNAVAILABLE_REASON,
                  "crc": kernel.KERNEL.crc32c(b"123456789") if kernel.KERNEL else None}))
"""


def _probe(archive, cwd) -> dict:
    p = subprocess.run([sys.executable, "-S", "-c", PROBE, str(archive)], capture_output=True, text=True, cwd=cwd)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def test_logtool_imported_from_the_shipped_archive_has_its_kernel_and_its_guard(tmp_path):
    archive = package_archive(tmp_path)
    seen = _probe(archive, tmp_path)
    assert seen["file"] == f"{archive}/logtool/__init__.pyc"  # the archive's compiled code, not its source
    assert seen["kernel"] and seen["why_pure"] is None, seen
    assert seen["guard"] and seen["why_unguarded"] is None, seen
    assert seen["crc"] == 0xE3069283  # CRC-32C's check value
    # copied out once, beside the archive; a second process loads the same copies
    copies = sorted(p.name for p in (tmp_path / f"{archive.name}.compiled").iterdir())
    assert len(copies) == 2 and _probe(archive, tmp_path)["kernel"]
    assert sorted(p.name for p in (tmp_path / f"{archive.name}.compiled").iterdir()) == copies


def test_the_archive_holds_each_module_s_source_and_compiled_code_and_the_extensions(tmp_path):
    archive = package_archive(tmp_path)
    names = set(zipfile.ZipFile(archive).namelist())
    sources = {n for n in names if n.endswith(".py")}
    assert "logtool/spark/task.py" in sources and {n[:-3] + ".pyc" for n in sources} <= names
    assert any(n.startswith("logtool/format/_kernel.") for n in names)
    assert any(n.startswith("logtool/store/_mapguard.") for n in names)
    assert package_archive(tmp_path, skip={archive.name}) is None  # named by its content: shipped once


def test_without_a_build_for_this_python_the_archive_s_logtool_runs_pure(tmp_path):
    """An archive without the extensions (a driver whose build is missing): the executor says why it runs
    the pure path, as an install without them does, and does not fail."""
    archive = package_archive(tmp_path)
    stripped = tmp_path / "stripped" / archive.name
    stripped.parent.mkdir()
    with zipfile.ZipFile(archive) as src, zipfile.ZipFile(stripped, "w") as dst:
        for item in src.infolist():
            if not item.filename.endswith(".so"):
                dst.writestr(item, src.read(item))
    seen = _probe(stripped, tmp_path)
    assert not seen["kernel"] and "cannot be loaded from the archive" in seen["why_pure"]
    assert "holds no build of logtool.format._kernel" in seen["why_pure"], seen
    assert not seen["guard"] and "holds no build of logtool.store._mapguard" in seen["why_unguarded"], seen


def test_where_no_copy_can_be_made_the_archive_s_logtool_runs_pure_and_says_why(tmp_path):
    """Neither beside the archive (a file stands where its directory would) nor in a temporary directory (the
    one named is gone): as on a full or read-only disk. The import does not fail; the pure path says why."""
    archive = package_archive(tmp_path)
    (tmp_path / f"{archive.name}.compiled").write_text("")
    nowhere = f"import tempfile; tempfile.tempdir = {str(tmp_path / 'gone')!r}\n"
    p = subprocess.run([sys.executable, "-S", "-c", nowhere + PROBE, str(archive)], capture_output=True, text=True,
                       cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    seen = json.loads(p.stdout)
    assert not seen["kernel"] and "cannot copy logtool.format._kernel out of" in seen["why_pure"], seen
    assert not seen["guard"] and "cannot copy logtool.store._mapguard" in seen["why_unguarded"], seen


# A Spark job's Python workers, started where no logtool lies (the daemon puts its working directory first
# on its path), after the audit's `ship`: what each task imported. Forked by Spark's own daemon, as on a
# cluster's executors: a local audit's (spark/daemon.py, tests/spark/test_daemon.py) has the installed
# logtool imported before any task runs.
ON_EXECUTORS = """
import json
from logtool.spark.session import ship, start

def seen(_):
    import logtool, logtool.format.kernel as kernel, logtool.store.mapguard as mapguard
    return [(logtool.__file__, kernel.KERNEL is not None, mapguard.AVAILABLE)]

spark, _ = start("local[2]", {"spark.ui.enabled": "false", "spark.python.daemon.module": "pyspark.daemon"})
try:
    ship(spark)
    print(json.dumps(spark.sparkContext.parallelize([0, 1], 2).mapPartitions(seen).collect()))
finally:
    spark.stop()
"""


@pytest.mark.spark
def test_an_audit_s_executors_check_with_the_kernel_and_the_guard(tmp_path):
    p = subprocess.run([sys.executable, "-c", ON_EXECUTORS], capture_output=True, text=True, cwd=tmp_path)
    assert p.returncode == 0, p.stderr[-3000:]
    tasks = json.loads(p.stdout.strip().splitlines()[-1])
    assert len(tasks) == 2
    for file, kernel, guard in tasks:
        assert ".zip/logtool/" in file and kernel and guard, tasks


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """A private cache directory in use (the suite turns the cache off), and a count of modules compiled."""
    folder = tmp_path / "cache"
    monkeypatch.setenv("LOGTOOL_CACHE_DIR", str(folder))
    monkeypatch.setenv("LOGTOOL_CLASS_CACHE", "1")
    compiled: list[str] = []
    real = package._unchecked_pyc

    def counted(source: bytes, path: str) -> bytes:
        compiled.append(path)
        return real(source, path)

    monkeypatch.setattr(package, "_unchecked_pyc", counted)
    return folder, compiled


def _shipped(tmp_path, name: str):
    (tmp_path / name).mkdir()
    return package_archive(tmp_path / name)


def test_the_zip_is_made_once_per_install_and_copied_from_the_cache_after(tmp_path, cache):
    folder, compiled = cache
    first = _shipped(tmp_path, "a")
    (kept,) = folder.glob(f"{package.PREFIX}*")
    assert compiled and kept.read_bytes() == first.read_bytes() and stat.S_IMODE(kept.stat().st_mode) == 0o400
    compiled.clear()
    os.utime(kept, (1, 1))
    second = _shipped(tmp_path, "b")
    assert compiled == [] and second.name == first.name and second.read_bytes() == first.read_bytes()
    assert kept.stat().st_mtime > 1  # in use: not taken for an unused one
    assert _probe(second, tmp_path)["kernel"]  # the copy is a package that runs


def test_a_cached_zip_others_could_change_or_cut_short_is_not_used(tmp_path, cache):
    folder, compiled = cache
    first = _shipped(tmp_path, "a")
    (kept,) = folder.glob(f"{package.PREFIX}*")
    kept.chmod(0o664)  # group-writable: someone else could have put code in it
    compiled.clear()
    assert _shipped(tmp_path, "b").read_bytes() == first.read_bytes() and compiled
    kept.chmod(0o600)
    kept.write_bytes(first.read_bytes()[: first.stat().st_size // 2])  # a copy cut short
    compiled.clear()
    assert _shipped(tmp_path, "c").read_bytes() == first.read_bytes() and compiled
    assert kept.read_bytes() == first.read_bytes()  # made whole again


def test_cached_zips_unused_for_a_week_go_and_nothing_is_cached_with_the_cache_off(tmp_path, cache, monkeypatch):
    folder, _ = cache
    folder.mkdir(mode=0o700)
    old, recent = folder / f"{package.PREFIX}logtool-0.zip", folder / f"{package.PREFIX}logtool-1.zip"
    for other in (old, recent):
        other.write_bytes(b"an older install's")
    os.utime(old, (time.time() - package.UNUSED_S - 60,) * 2)
    _shipped(tmp_path, "a")
    assert not old.exists() and recent.exists()
    monkeypatch.setenv("LOGTOOL_CLASS_CACHE", "0")
    emptied = tmp_path / "cache-off"
    monkeypatch.setenv("LOGTOOL_CACHE_DIR", str(emptied))
    assert _shipped(tmp_path, "b").exists() and not emptied.exists()


def test_one_package_makes_one_zip_byte_for_byte(tmp_path, monkeypatch):
    first = _shipped(tmp_path, "a")
    monkeypatch.setattr(time, "localtime", lambda *_: time.struct_time((2031, 5, 6, 7, 8, 9, 0, 1, 0)))
    assert _shipped(tmp_path, "b").read_bytes() == first.read_bytes()
