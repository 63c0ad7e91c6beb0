"""The daemon that forks a local audit's Python workers: PySpark's own, started with PySpark imported from
its installed package rather than from the pyspark.zip inside it.

Spark puts `$SPARK_HOME/python/lib/pyspark.zip` first on its Python workers' path. Python compiles what it
imports from a zip anew in every process (it writes no bytecode cache there), so every worker paid about
0.4 s of CPU compiling PySpark before its first task, against 0.1 s importing the same modules from the
installed package, whose bytecode pip compiled once. Where the zip is the one inside the installed pyspark
(a pip install: $SPARK_HOME is the package), the two are the same code, and the zip goes behind it. The
check task's modules are imported here once too, so that every worker forked from here has them."""
from __future__ import annotations

import importlib.machinery
import os
import site
import sys


def unzipped_first(path: list[str]) -> list[str]:
    """`path` with each of PySpark's zips (pyspark.zip, py4j's) put last when the directory holding the
    installed pyspark package it came with is on `path` too; anything else, as it was."""
    entries = {os.path.realpath(p) for p in path if p}
    behind = []
    for p in path:
        lib = os.path.dirname(p)
        # <packages>/pyspark/python/lib/pyspark.zip, with <packages> on the path: pip's layout.
        packages = os.path.dirname(os.path.dirname(os.path.dirname(lib)))
        if p.endswith(".zip") and lib.endswith(os.path.join("pyspark", "python", "lib")) \
                and os.path.realpath(packages) in entries:
            behind.append(p)
    return [p for p in path if p not in behind] + behind


def importable_anew() -> bool:
    """Whether a new process of this interpreter, as Spark starts its daemon (`python -m`), finds logtool:
    in site-packages, through a path hook installed there (an editable install) or on PYTHONPATH. Not this
    process's own path, which may hold the directory of the script running it, or zips that Spark added
    (SparkContext.addPyFile) and deleted since."""
    inherited = [*os.environ.get("PYTHONPATH", "").split(os.pathsep), *site.getsitepackages()]
    if site.ENABLE_USER_SITE:
        inherited.append(site.getusersitepackages())
    for finder in sys.meta_path:
        find = getattr(finder, "find_spec", None)
        if find is None:
            continue
        try:
            path = [p for p in inherited if p] if finder is importlib.machinery.PathFinder else None
            if find("logtool", path) is not None:
                return True
        except (ImportError, OSError):
            continue
    return False


def main() -> None:
    sys.path[:] = unzipped_first(sys.path)
    # The check task's entry (spark/outcome.py) and all it imports, PySpark's SQL types among them, imported
    # once for every worker forked below. None of it starts a thread, which a fork would not carry over
    # (tests/spark/test_daemon.py).
    import logtool.spark.outcome  # noqa: F401
    from pyspark.daemon import manager
    manager()


if __name__ == "__main__":
    main()
