"""Ctrl-C and SIGTERM in any command: one `logtool:` line and the exit code (8 for SIGINT, 143 for SIGTERM),
never click's bare "Aborted." or a silent 143. (A repair defers both to the end of a step: test_repair_faults.)"""
from __future__ import annotations

import signal
import subprocess
import time

import pytest
from conftest import LOGTOOL


@pytest.mark.slow
@pytest.mark.parametrize("sig, code, words", [(signal.SIGINT, 8, "interrupted (SIGINT)"),
                                               (signal.SIGTERM, 143, "terminated (SIGTERM)")])
def test_a_signal_ends_a_command_with_its_line(slow_target, sig, code, words):
    proc = subprocess.Popen([str(LOGTOOL), "verify", "--max-read-rate", "1", "--format", "json", str(slow_target)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(2)
    assert proc.poll() is None, "the command ended before the signal"
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == code, err
    assert err.strip().splitlines()[-1] == f"logtool: {words}", err
    assert "Traceback" not in err and "Aborted" not in err
    assert f'"exit_code": {code}' in out, "the JSON formats still say how the run ended"
