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


def _missing() -> list[str]:
    """What the driver cannot import of what the audit needs (the checkout's package itself is found above)."""
    from logtool.spark.session import EXECUTOR_NEEDS

    needs = (("click",), ("rich",), *EXECUTOR_NEEDS)
    return [choices[0] for choices in needs
            if not any(importlib.util.find_spec(m.split(".")[0]) for m in choices)]


if __name__ == "__main__":
    _importable()
    missing = _missing()
    if missing:  # spark-submit's Python is not the one logtool is installed in
        print(f"logtool: {sys.executable} (spark-submit's Python) cannot import {', '.join(missing)}: run spark-submit "
              f"with PYSPARK_DRIVER_PYTHON and PYSPARK_PYTHON set to the Python logtool is installed in",
              file=sys.stderr)
        sys.exit(8)
    from logtool.cli import main

    main(["audit", *sys.argv[1:]])
