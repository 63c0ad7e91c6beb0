"""`make pack-env`: the packed Python environment a Spark cluster's executors run the audit with, for nodes
where logtool is not installed:

    PYSPARK_DRIVER_PYTHON=.venv/bin/python PYSPARK_PYTHON=./env/bin/python \\
        spark-submit --master URL --archives dist/logtool-env.tar.gz#env logtool/spark_job.py PATH... -o DIR

A fresh virtual environment with logtool installed from this checkout (its compiled parts built, not
editable) and its dependencies, packed by venv-pack. Its python links to this machine's base interpreter:
the workers need that same Python at the same path (as venv-pack requires), and nothing else.
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("output", type=Path, help="the archive to write (.tar.gz)")
    args = ap.parse_args(argv)
    import venv_pack  # the `spark` extra

    with tempfile.TemporaryDirectory(prefix="logtool-env-") as tmp:
        env = Path(tmp) / "env"
        subprocess.run([sys.executable, "-m", "venv", str(env)], check=True)
        subprocess.run([str(env / "bin" / "python"), "-m", "pip", "install", "--quiet", str(ROOT)], check=True)
        args.output.parent.mkdir(parents=True, exist_ok=True)
        venv_pack.pack(prefix=str(env), output=str(args.output), force=True, verbose=False)
    print(f"wrote {args.output}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
