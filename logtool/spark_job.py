"""`logtool audit` as a Spark application, for any cluster:

    spark-submit --master URL [--py-files logtool.zip] logtool/spark_job.py PATH... --output DIR [options]

It takes exactly the arguments and options of `logtool audit` (`--master` is spark-submit's here) and exits
with the same codes. The driver needs logtool's dependencies installed; the package itself is shipped to
the executors by the job. It stands beside `cli.py`, whose `main` it runs, rather than in `spark/`, which
the commands import.
"""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path


def _importable() -> None:
    # spark-submit runs this file as a script: its own directory is first on sys.path (where its neighbours
    # would pass for top-level modules), and the checkout holding the package is not on it at all.
    here = Path(__file__).resolve().parent
    sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != here]
    if importlib.util.find_spec("logtool") is None:
        sys.path.insert(0, str(here.parent))


if __name__ == "__main__":
    _importable()
    try:
        from logtool.cli import main
    except ImportError as e:  # spark-submit's Python is not the one logtool is installed in
        print(f"logtool: {sys.executable} cannot import {e.name or e}: run spark-submit with PYSPARK_PYTHON and "
              f"PYSPARK_DRIVER_PYTHON set to the Python logtool is installed in", file=sys.stderr)
        sys.exit(8)
    main(["audit", *sys.argv[1:]])
