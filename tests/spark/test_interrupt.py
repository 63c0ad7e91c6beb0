"""Ctrl-C during an audit, as a terminal sends it (to the whole foreground process group): whether Spark is
still starting or the checks are running, one `logtool:` line and exit code 8, never a traceback. (PySpark's
own Ctrl-C handler called into the JVM from inside the signal handler, and Py4J printed the failure, and the
connections it closed after, with their tracebacks; in the first second or two, the JVM was left running.)"""
from __future__ import annotations

import os
import signal
import subprocess
import threading
import time

import pytest
from conftest import LOGTOOL, kafka_case

from logtool.spark import driver, session
from logtool.spark.task import Settings


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


@pytest.mark.spark
def test_a_ctrl_c_pyspark_swallowed_still_stops_the_audit_before_its_next_step(tmp_path, monkeypatch):
    """PySpark catches BaseException around a JVM call it makes while converting a JVM error (the end of a Java
    iterator is one, as in SparkContext.listFiles when the package is shipped): a Ctrl-C landing there only
    set the handler's flag, and the audit ran to its end with exit code 0 (seen once in each of a run of the
    test above under load and a sweep of signal times). The audit now stops at its next step, before it
    writes anything."""
    monkeypatch.setattr(session, "_interrupted", threading.Event())
    shipped = driver.ship

    def ship_then_a_swallowed_ctrl_c(spark) -> None:
        shipped(spark)
        try:
            session._interrupt(signal.SIGINT, None)  # the handler an audit's session installs
        except BaseException:  # what PySpark's CapturedException.__str__ does around its JVM call
            pass

    monkeypatch.setattr(driver, "ship", ship_then_a_swallowed_ctrl_c)
    spark, _ = session.start("local[1]", {"spark.ui.enabled": "false"})
    try:
        with pytest.raises(KeyboardInterrupt):
            driver.run_audit(spark, driver.Audit((str(kafka_case("corrupt-garbage-appended")),), str(tmp_path / "out"),
                                                 Settings()))
    finally:
        session.stop(spark)
    assert not (tmp_path / "out").exists()
