"""The package an audit ships to its executors (spark/session.py's `package_archive`): imported from the zip,
logtool runs there as it does here, with its compiled kernel and its SIGBUS guard (logtool/extensions.py
loads them out of the archive, which Python does not), and with compiled code that no executor compiles
again. Before, every executor ran the pure-Python walk, unguarded."""
from __future__ import annotations

import json
import subprocess
import sys
import zipfile

import pytest

from logtool.spark.session import package_archive

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
