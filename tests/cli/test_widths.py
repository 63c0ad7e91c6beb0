"""Text that reads at any terminal width: the partition's name and its status are never cut, whatever
else has to go (issue 18.1). Rendered as a pipe with COLUMNS set, as a terminal of that width would be."""
from __future__ import annotations

import json
import os
import re
import subprocess

import pytest
from conftest import LOGTOOL, SHARED, require

LOG_DIRS = [require(SHARED / "real-more/Danielowo2000__BigDataTechnologies-Version-2/kafka_data"),
            require(SHARED / "real/seanorth__kafka-server/kafka-logs")]
WIDTHS = (60, 80, 120, 200)


def _run(width: int, *args: str) -> str:
    p = subprocess.run([str(LOGTOOL), *args], capture_output=True, text=True, timeout=300,
                       env={**os.environ, "COLUMNS": str(width)})
    assert p.returncode in (0, 4), p.stderr
    return p.stdout


def _statuses(log_dir) -> dict[str, str]:
    doc = json.loads(_run(200, "scan", "--format", "json", str(log_dir)))
    return {f"{p['topic']}-{p['partition']}": p["status"] for p in doc["partitions"]}


@pytest.mark.sample(2)
@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("log_dir", LOG_DIRS, ids=lambda d: d.parent.name)
def test_scan_rows_keep_name_and_status_whole(log_dir, width):
    statuses = _statuses(log_dir)
    text = _run(width, "scan", str(log_dir))
    rows = {}
    for line in text.splitlines():
        # a table row, or (where even name and status do not fit a table) a line of name and status
        cells = [c.strip() for c in (line.strip("│ ").split("│") if "│" in line else line.split("  "))]
        if len(cells) >= 2 and cells[0] in statuses:
            rows[cells[0]] = cells[1]
    assert rows == statuses
    if width == 60:
        assert "not shown at 60 columns:" in text


@pytest.mark.sample(2)
@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("log_dir", LOG_DIRS, ids=lambda d: d.parent.name)
def test_verify_lines_keep_name_and_status_whole(log_dir, width):
    statuses = _statuses(log_dir)
    seen = {}
    for line in _run(width, "verify", str(log_dir)).splitlines():
        m = re.match(r"(clean|damaged) (.+?): \d+ segment", line)
        if m:
            seen[m.group(2).rsplit("/", 1)[-1]] = m.group(1)
    assert seen == statuses


def test_no_empty_table_before_an_error():
    p = subprocess.run([str(LOGTOOL), "scan", "/nonexistent"], capture_output=True, text=True, timeout=60)
    assert p.returncode == 8 and p.stdout == "" and p.stderr.startswith("logtool: /nonexistent: ")
