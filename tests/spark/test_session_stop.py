"""Stopping an audit's session: Spark's context stops at once, PySpark's accumulator server ends after it in
the background (its handler notices a stop only between 1 s polls), and its Unix socket's file goes at once."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

_STOP = """
import json, os, threading
from logtool.spark.session import start, stop
spark, started = start("local[1]", {"spark.ui.enabled": "false"})
context = spark.sparkContext
server = context._accumulatorServer
total = context.accumulator(0)
context.parallelize(range(10), 2).foreach(lambda x: total.add(x))  # updates reach us through the server
released, ended = threading.Event(), threading.Event()
shutdown = server.shutdown
def held_shutdown():
    released.wait(60)
    shutdown()
    ended.set()
server.shutdown = held_shutdown
stop(spark)
path = server.server_address
seen = {"total": total.value, "stop_waited": ended.is_set() or released.is_set(),
        "unix": isinstance(path, str), "file_left": isinstance(path, str) and os.path.exists(path)}
released.set()
seen["ended"] = ended.wait(60)
print(json.dumps(seen))
"""


@pytest.mark.spark
def test_stop_does_not_wait_for_the_accumulator_server_and_leaves_no_socket_file():
    p = subprocess.run([sys.executable, "-c", _STOP], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    seen = json.loads(p.stdout.strip().splitlines()[-1])
    assert seen == {"total": 45, "stop_waited": False, "unix": True, "file_left": False, "ended": True}
