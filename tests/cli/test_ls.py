"""`logtool ls`: a line per partition whose offsets are the walk's (scan's JSON), fitted to the terminal."""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from conftest import LOGTOOL, ROOT

SAMPLE = ROOT / "fixtures" / "sample-logdir"


def _run(*args: str, columns: int = 200) -> tuple[int, str]:
    p = subprocess.run([str(LOGTOOL), *args], capture_output=True, text=True, timeout=300,
                       env={**os.environ, "COLUMNS": str(columns)})
    return p.returncode, p.stdout


def test_each_partition_shows_its_first_offset_and_log_end_as_scan_finds_them():
    rc, text = _run("ls", str(SAMPLE))
    _, scanned = _run("scan", str(SAMPLE), "--format", "json")
    parts = json.loads(scanned)["partitions"]
    assert rc == 4 and parts  # the sample carries planted damage
    rows = [line.strip("│ ").split("│") for line in text.splitlines() if line.startswith("│")]
    assert len(rows) == len(parts)
    for row, p in zip(rows, parts):
        name, status, first, end, size = (cell.strip() for cell in row)
        assert name.endswith(Path(p["path"]).name) and status == p["status"]
        assert int(first) == min(s["first_offset"] for s in p["segments"])
        assert int(end) == max(s["last_offset"] for s in p["segments"]) + 1
        assert int(size) == sum(s["size"] for s in p["segments"])
    assert {r[1].strip() for r in rows} >= {"clean", "damaged"}


def test_at_80_columns_the_name_and_status_stay_and_what_is_left_out_is_named():
    rc, text = _run("ls", str(SAMPLE), columns=80)
    assert rc == 4
    table = [line for line in text.splitlines() if line[:1] in "┏┃┡│└"]
    assert table and all(len(line) <= 80 for line in table)
    assert "damaged" in text and "clicks-2" in text
    # which columns fit depends on how long the path is (the checkout's): each one that does not is named
    left_out = text.split("not shown at 80 columns: ")[1].split(";")[0].split(", ") if "not shown" in text else []
    for column in ("first offset", "log end offset", "bytes"):
        assert (column in table[1]) != (column in left_out), column


def test_the_json_forms_are_scans():
    assert json.loads(_run("ls", str(SAMPLE), "--format", "json")[1])["partitions"] == \
        json.loads(_run("scan", str(SAMPLE), "--format", "json")[1])["partitions"]


def test_no_path_is_a_usage_error():
    p = subprocess.run([str(LOGTOOL), "ls"], capture_output=True, text=True, timeout=60)
    assert p.returncode == 16 and "give at least one PATH" in p.stderr
