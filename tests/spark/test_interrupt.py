"""Ctrl-C during an audit, as a terminal sends it (to the whole foreground process group): whether Spark is
still starting or the checks are running, one `logtool:` line and exit code 8, never a traceback. (PySpark's
own Ctrl-C handler called into the JVM from inside the signal handler, and Py4J printed the failure, and the
connections it closed after, with their tracebacks; in the first second or two, the JVM was left running.)"""
from __future__ import annotations

import os
import signal
import subprocess
import time

import pytest
from conftest import LOGTOOL


@pytest.mark.spark
@pytest.mark.slow
@pytest.mark.parametrize("after", [1.0, 2.5, 8.0], ids=["starting", "started", "checking"])
def test_ctrl_c_ends_an_audit_with_one_line(slow_target, tmp_path, after):
    proc = subprocess.Popen([str(LOGTOOL), "audit", "--max-read-rate", "1", "-o", str(tmp_path / "out"),
                             str(slow_target)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        time.sleep(after)
        assert proc.poll() is None, "the audit ended before the signal"
        os.killpg(proc.pid, signal.SIGINT)
        # Ends, and nothing holds its pipes after it: interrupted while PySpark started the JVM, the JVM was
        # left waiting for ever (holding them).
        out, err = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert proc.returncode == 8, err
    assert err.strip().splitlines()[-1] == "logtool: interrupted (SIGINT)", err
    assert "Traceback" not in err and "ERROR" not in err and "Exception" not in err, err
