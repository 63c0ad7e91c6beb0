"""A segment cut short while logtool reads it (a follower truncating its log does exactly that) becomes a
finding and exit 4, never SIGBUS. The cut is made right after the file is mapped, so the reader meets it
deterministically; one test makes it from another process during a paced read."""
from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from pathlib import Path

import pytest
from conftest import LOGTOOL

import fixtures.generator as g
import logtool.store.segment as segment_module
from logtool.cli import main
from logtool.store.mapping import open_readonly

SIZE = 50 << 20
CUT = 1 << 20


@pytest.fixture(scope="module")
def big(tmp_path_factory) -> Path:
    part = tmp_path_factory.mktemp("shrink") / "big-0"
    g.write_big(part, SIZE)
    return part


@pytest.fixture
def part(big, tmp_path) -> Path:
    copy = tmp_path / big.name
    copy.mkdir()
    for f in big.iterdir():
        os.link(f, copy / f.name) if f.suffix != ".log" else (copy / f.name).write_bytes(f.read_bytes())
    return copy


@pytest.fixture
def cut_when_mapped(monkeypatch):
    """Every segment the walker maps is cut to CUT bytes right after it is mapped."""
    def mapped_then_cut(path):
        buf, size = open_readonly(path)
        if path.suffix == ".log" and size > CUT:
            os.truncate(path, CUT)
        return buf, size
    monkeypatch.setattr(segment_module, "open_readonly", mapped_then_cut)


def run(capsys, *args) -> tuple[int, str]:
    with pytest.raises(SystemExit) as e:
        main([str(a) for a in args])
    return e.value.code, capsys.readouterr().out


def test_verify(part, cut_when_mapped, capsys):
    rc, out = run(capsys, "verify", "--format", "json", part)
    seg = json.loads(out)["partitions"][0]["segments"][0]
    names = [f["name"] for f in seg["findings"]]
    assert rc == 4 and "FILE_SHRANK_WHILE_READ" in names
    assert seg["first_invalid_position"] is None and 0 < seg["valid_bytes"] <= CUT


def test_index_verify(part, cut_when_mapped, capsys):
    rc, out = run(capsys, "index", "verify", "--format", "json", part)
    assert rc == 4 and "FILE_SHRANK_WHILE_READ" in out


def test_dump(part, cut_when_mapped, capsys):
    rc, out = run(capsys, "dump", "--format", "jsonl", part)
    damage = [json.loads(line) for line in out.splitlines() if '"type":"damage"' in line.replace(" ", "")]
    assert rc == 4 and [d["finding"]["name"] for d in damage] == ["FILE_SHRANK_WHILE_READ"]


def test_find_holds_the_offset_before_the_cut(part, capsys):
    rc, out = run(capsys, "find", part, "--offset", "250000")
    assert rc == 0 and "offset 250000" in out


def test_find(part, cut_when_mapped, capsys):
    for index in part.glob("*.index"):
        index.unlink()  # no index: find walks the segment, through the cut
    rc, _ = run(capsys, "find", part, "--offset", "250000")  # about 45 MB in, past the cut
    assert rc == 4


@pytest.mark.slow
def test_cut_from_another_process_during_a_paced_verify(part):
    log = next(part.glob("*.log"))
    proc = subprocess.Popen([str(LOGTOOL), "verify", "--format", "json", "--max-read-rate", "25", str(part)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(0.8)
    os.truncate(log, CUT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 4, err  # not -7 (SIGBUS)
    names = [f["name"] for f in json.loads(out)["partitions"][0]["segments"][0]["findings"]]
    assert "FILE_SHRANK_WHILE_READ" in names


def test_cut_by_another_thread_while_walking(part):
    """A thread cuts the file while the main thread walks it: the walk ends at the cut, no signal."""
    from logtool.checks.engine import Target, check_target
    log = next(part.glob("*.log"))
    timer = threading.Timer(0.05, os.truncate, (log, CUT))
    timer.start()
    rep = check_target(Target(part), deep=True)
    timer.join()
    seg = rep.segments[0]
    assert seg.valid_bytes <= SIZE
    if seg.valid_bytes < seg.size:  # the cut came before the walk's end, as it almost always does
        assert "FILE_SHRANK_WHILE_READ" in [f.name for f in seg.findings]
