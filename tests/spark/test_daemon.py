"""A local audit's Python workers are forked by logtool's daemon (spark/daemon.py): PySpark imported from its
installed, compiled package rather than compiled again from pyspark.zip in every worker, and the check task's
modules imported once, before the fork."""
from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from logtool.spark.daemon import unzipped_first

ROOT = Path(__file__).resolve().parents[2]
SITE = "/venv/lib/python3.11/site-packages"
PIP_ZIPS = [f"{SITE}/pyspark/python/lib/pyspark.zip", f"{SITE}/pyspark/python/lib/py4j-0.10.9.9-src.zip"]


def test_the_zips_of_an_installed_pyspark_go_behind_the_package_they_came_with():
    path = [*PIP_ZIPS, "/work", "/usr/lib/python311.zip", SITE]
    assert unzipped_first(path) == ["/work", "/usr/lib/python311.zip", SITE, *PIP_ZIPS]


def test_the_zips_of_a_spark_distribution_stay_first():
    # $SPARK_HOME a Spark download: its zips are the only PySpark there is, or the one matching its JVM.
    zips = ["/opt/spark/python/lib/pyspark.zip", "/opt/spark/python/lib/py4j-0.10.9.9-src.zip"]
    path = [*zips, "", SITE]
    assert unzipped_first(path) == path
    # A pip-installed pyspark's zips whose package is not on the path: nothing to take their place.
    assert unzipped_first([*PIP_ZIPS, "/elsewhere"]) == [*PIP_ZIPS, "/elsewhere"]


def _importable_anew(placed: str, pythonpath: str | None = None, isolated: bool = True) -> bool:
    """importable_anew() in a new interpreter, logtool's directory put on its path by `placed` (a line of
    Python) or by PYTHONPATH; `isolated`: without site-packages (-S), so without the installed logtool."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | ({"PYTHONPATH": pythonpath} if pythonpath else {})
    code = f"import sys\n{placed}\nfrom logtool.spark.daemon import importable_anew\nprint(importable_anew())"
    p = subprocess.run([sys.executable, *(["-S"] if isolated else []), "-c", code], capture_output=True, text=True,
                       env=env, cwd="/")
    assert p.returncode == 0, p.stderr
    return p.stdout.strip() == "True"


def test_logtool_is_importable_anew_when_a_new_process_inherits_its_place():
    assert _importable_anew("", pythonpath=str(ROOT))  # the daemon inherits PYTHONPATH
    assert _importable_anew("", isolated=False)  # installed (here, in editable mode)


def test_logtool_on_this_process_s_path_alone_is_not(tmp_path):
    # sys.path[0] is the running script's directory, which Spark's `python -m` daemon does not have; an entry
    # added at run time is not inherited either.
    assert not _importable_anew(f"sys.path.insert(0, {str(ROOT)!r}); sys.path.append({str(ROOT)!r})")
    # A zip Spark shipped (addPyFile puts it on the driver's path too) and deleted when its context stopped.
    archive = tmp_path / "gone.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("logtool/__init__.py", "")
    placed = f"sys.path.insert(0, {str(ROOT)!r}); import logtool.spark.daemon, importlib.machinery, os; " \
             f"sys.path.insert(1, {str(archive)!r}); importlib.machinery.PathFinder.find_spec('logtool', " \
             f"[{str(archive)!r}]); os.remove({str(archive)!r})"
    assert not _importable_anew(placed)


def test_what_the_daemon_imports_before_it_forks_starts_no_thread():
    code = "import threading, logtool.spark.outcome; print(threading.active_count())"
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd="/")
    assert p.returncode == 0 and p.stdout.strip() == "1", (p.stdout, p.stderr)


@pytest.fixture(scope="module")
def spark():
    from logtool.spark.session import start
    session, _ = start("local[2]", {"spark.ui.enabled": "false"})
    yield session
    session.stop()


def test_a_local_audits_workers_import_the_installed_pyspark_and_have_the_task_preloaded(spark):
    import pyspark
    assert spark.sparkContext.getConf().get("spark.python.daemon.module") == "logtool.spark.daemon"
    # A lambda, which goes to the workers by value (this module is not importable there).
    seen = set(spark.sparkContext.parallelize(range(2), 2).map(
        lambda _: (__import__("pyspark").__file__, "logtool.spark.outcome" in __import__("sys").modules)).collect())
    assert seen == {(pyspark.__file__, True)}  # the driver's own pyspark, not .../pyspark.zip/pyspark
