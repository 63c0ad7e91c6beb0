"""The incident path, store side: what a responder meets when the disk or the machine is not as expected.

1. A `.log` larger than the address space allows (`ulimit -v`): a file larger than any segment is mapped only
   as far as a segment can reach (less where the address space has no room), the rest read in windows, its
   holes not at all; a mapping that fails is the file's finding, never an internal error.
2. A segment this user may not read: counted, named, and no gap claimed where its offsets are.
3. `scan` of 100,000 partitions stays under 300 MB, in text as in JSON Lines.
4. A PATH this user may not read is an operational error (8) for every command, not a usage error (16).

The suite runs as root, which reads anything: `NO_DAC` runs a command without the capabilities that
override file modes, so that a mode of 000 holds.
"""
from __future__ import annotations

import concurrent.futures
import json
import os
import resource
import shutil
import subprocess
from contextlib import nullcontext
from pathlib import Path

import pytest
from conftest import LOGTOOL, kafka_case, peak_rss_kb

import fixtures.generator as g
import logtool.store.mapping as mapping
import logtool.store.segment as segment_module
from logtool import exitcodes
from logtool.checks.engine import run_checks
from logtool.format import kernel

NO_DAC = ("setpriv", "--inh-caps=-dac_override,-dac_read_search",
          "--bounding-set=-dac_override,-dac_read_search", "--") if os.geteuid() == 0 else ()
AS_LIMIT = 3 << 29  # 1.5 GiB of address space: less than the 2 GiB a segment can hold
SEG = "00000000000000000000.log"
FAILURES = ("Traceback", "internal error", "Exception ignored", "Invalid value")


def run(*args: str, limit: int | None = None, pure: bool = False,
        wrap: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    """The installed command, under an address-space limit and on the pure path when asked."""
    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    env = {**os.environ, kernel.PURE_ENV: "1" if pure else "0"}
    return subprocess.run([*wrap, str(LOGTOOL), *args], capture_output=True, text=True, timeout=300, env=env,
                          preexec_fn=cap if limit else None)


def sound(p: subprocess.CompletedProcess) -> bool:
    """The command said what it had to say: no traceback, no internal error, no usage error."""
    return not any(word in p.stderr for word in FAILURES)


def segment_findings(doc: dict, file: str = SEG) -> list[dict]:
    return [f for p in doc["partitions"] for f in p["findings"] + [x for s in p["segments"] for x in s["findings"]]
            if f["file"] == file]


# ------------------------------------------------------------------- 1. larger than the address space allows

@pytest.fixture
def sparse(tmp_path) -> Path:
    """A partition whose one segment is a 3 GB hole: more than the address space allows."""
    part = tmp_path / "big-0"
    part.mkdir()
    with open(part / SEG, "wb") as f:
        f.truncate(3 << 30)
    return part


@pytest.mark.slow
@pytest.mark.parametrize("pure", [False, True], ids=["kernel", "pure"])
def test_a_file_larger_than_the_address_space_is_walked(sparse, pure):
    p = run("verify", "--format", "json", str(sparse), limit=AS_LIMIT, pure=pure)
    assert p.returncode == exitcodes.PROBLEMS and sound(p), p.stderr
    found = {f["name"]: f for f in segment_findings(json.loads(p.stdout))}
    assert set(found) == {"SEGMENT_TOO_LARGE", "PREALLOCATED_TAIL"}
    assert found["PREALLOCATED_TAIL"]["position"] == 0
    assert found["PREALLOCATED_TAIL"]["message"].startswith(f"{3 << 30} zero bytes after the last batch")


@pytest.mark.sample(1)
@pytest.mark.parametrize("pure", [False, True], ids=["kernel", "pure"])
@pytest.mark.parametrize("args", [["scan"], ["index", "verify"], ["index", "rebuild"], ["dump"],
                                  ["find", "--offset", "5"], ["txn"], ["truncate"]], ids=" ".join)
def test_every_command_reads_a_file_larger_than_the_address_space(sparse, args, pure):
    p = run(*args, str(sparse), limit=AS_LIMIT, pure=pure)
    assert p.returncode in (exitcodes.CLEAN, exitcodes.PROBLEMS) and sound(p), p.stderr
    assert "Cannot allocate memory" not in p.stdout + p.stderr


def test_a_segment_the_address_space_cannot_map_is_the_files_finding(tmp_path):
    """No larger than a segment can be, so mapped whole or not at all: here not at all."""
    part = tmp_path / "full-0"
    part.mkdir()
    with open(part / SEG, "wb") as f:
        f.truncate(2**31 - 1)
    p = run("verify", "--format", "json", str(part), limit=AS_LIMIT)
    assert p.returncode == exitcodes.OPERATIONAL and sound(p), p.stderr
    [found] = segment_findings(json.loads(p.stdout))
    assert found["name"] == "UNREADABLE" and "no room in the address space" in found["message"]
    for args in (["dump"], ["find", "--offset", "5"]):
        q = run(*args, str(part), limit=AS_LIMIT)
        assert q.returncode == exitcodes.OPERATIONAL and sound(q), q.stderr
        assert "no room in the address space" in q.stderr, q.stderr


def _one_segment(tmp_path: Path, zeros: int, hole: int, tail: bytes = b"") -> tuple[Path, int]:
    """A partition of one segment: valid batches, `zeros` zero bytes written, a hole of `hole` bytes, then
    `tail`; and where the batches end."""
    part = tmp_path / "t-0"
    part.mkdir()
    log = b"".join(e.data for e in g.build_batches(g.BatchSpec(batches=40, records_per_batch=5)))
    with open(part / SEG, "wb") as f:
        f.write(log + bytes(zeros))
        f.seek(len(log) + zeros + hole)
        f.write(tail)
    return part, len(log)


def _outcome(part: Path, pure: bool) -> list:
    """What verify says of the partition: its segments' numbers and every finding."""
    with kernel.pure() if pure else nullcontext():
        report = run_checks([part], deep=True)
    segs = [(s.size, s.valid_bytes, s.batches, s.records, s.last_offset) for p in report.partitions for s in p.segments]
    return [segs, [(f.name, f.file, f.position, f.offset, f.message) for f in report.all_findings()]]


@pytest.mark.parametrize("pure", [False, True], ids=["kernel", "pure"])
@pytest.mark.parametrize("mapped", ["to the valid end", "into the zeros", "into the hole"])
def test_a_zero_tail_past_the_mapping_reads_as_the_whole_file_does(tmp_path, monkeypatch, pure, mapped):
    """Past what is mapped of a file larger than any segment (made small here), the walk reads windows, and
    says what it says of the whole file mapped."""
    part, valid = _one_segment(tmp_path, zeros=300_000, hole=5 << 20)
    whole = _outcome(part, pure)
    assert [f[0] for f in whole[1]] == ["INDEX_MISSING", "TIMEINDEX_MISSING", "PREALLOCATED_TAIL"]
    at_most = {"to the valid end": valid, "into the zeros": valid + 100_000, "into the hole": valid + 400_000}
    monkeypatch.setattr(segment_module, "MAPPED_AT_MOST", at_most[mapped])
    monkeypatch.setattr(mapping, "WINDOW", 64 << 10)  # the zeros span several windows
    assert _outcome(part, pure) == whole


@pytest.mark.parametrize("pure", [False, True], ids=["kernel", "pure"])
@pytest.mark.parametrize("case", ["batches", "bytes after the zeros"])
def test_what_goes_on_past_the_mapping_is_unreadable_not_damage(tmp_path, monkeypatch, pure, case):
    """Valid batches past the mapping, or bytes after zeros: the walk cannot say where the valid log ends,
    so it says what it could not read; nothing is called damage, nothing would be cut."""
    part, valid = _one_segment(tmp_path, zeros=300_000, hole=1 << 20, tail=b"\x01")
    monkeypatch.setattr(segment_module, "MAPPED_AT_MOST", valid // 2 if case == "batches" else valid + 100_000)
    [found] = _outcome(part, pure)[1]
    assert found[:2] == ("UNREADABLE", SEG) and "no segment holds more" in found[4]


def test_zeros_from_skips_holes_and_finds_a_byte_in_a_later_window(tmp_path, monkeypatch):
    monkeypatch.setattr(mapping, "WINDOW", 64 << 10)
    path = tmp_path / "f"
    with open(path, "wb") as f:
        f.write(bytes(200_000))
        f.seek(10 << 20)
        f.write(bytes(100_000) + b"\x07")
    end = path.stat().st_size
    assert mapping.zeros_from(path, 0, end - 1)
    assert not mapping.zeros_from(path, 0, end)
    assert not mapping.zeros_from(path, end - 1, end + 100)
    assert mapping.zeros_from(path, end, end + 100)


# ------------------------------------------------------------------------------ 2. an unreadable segment

@pytest.fixture
def denied_segment(tmp_path) -> tuple[Path, str]:
    """corrupt-torn-tail with its second segment (offsets 94..183) unreadable to this user."""
    part = tmp_path / "orders-0"
    shutil.copytree(kafka_case("corrupt-torn-tail"), part)
    name = "00000000000000000094.log"
    (part / name).chmod(0)
    return part, name


def test_an_unreadable_segment_is_counted_and_no_gap_is_claimed(denied_segment):
    part, name = denied_segment
    p = run("verify", "--format", "json", str(part), wrap=NO_DAC)
    assert p.returncode == exitcodes.OPERATIONAL and sound(p), p.stderr
    doc = json.loads(p.stdout)
    [found] = segment_findings(doc, name)
    assert found["name"] == "UNREADABLE" and "Permission denied" in found["message"]
    names = [f["name"] for p in doc["partitions"] for f in p["findings"]]
    assert "SEGMENT_GAP" not in names and "SEGMENT_OVERLAP" not in names
    segments = doc["partitions"][0]["segments"]
    assert [s["file"] for s in segments] == sorted(x.name for x in part.glob("*.log"))
    assert doc["summary"]["segments"] == 6
    assert doc["summary"]["bytes"] == sum(x.stat().st_size for x in part.glob("*.log"))


def test_scan_text_names_the_unreadable_segment(denied_segment):
    part, name = denied_segment
    p = run("scan", str(part), wrap=NO_DAC)
    assert p.returncode == exitcodes.OPERATIONAL and sound(p), p.stderr
    assert name in p.stdout + p.stderr and "Permission denied" in p.stdout + p.stderr


# ------------------------------------------------------------------------------------- 3. memory of scan

SCAN_RSS_LIMIT_MB = 300


@pytest.mark.slow
def test_scan_of_100000_partitions_stays_under_300_mb(tmp_path):
    log_dir = tmp_path / "ld"
    log_dir.mkdir()
    for i in range(100_000):
        os.mkdir(log_dir / f"t{i // 1000}-{i % 1000}")
    formats = ("text", "jsonl")
    with concurrent.futures.ThreadPoolExecutor(len(formats)) as pool:  # both at once, each measured on its own
        measured = dict(zip(formats, pool.map(lambda fmt: peak_rss_kb([str(LOGTOOL), "scan", "--format", fmt,
                                                                        str(log_dir)]), formats)))
    for fmt, (rc, rss_kb, err) in measured.items():
        assert rc == exitcodes.PROBLEMS, (fmt, err)  # NO_SEGMENTS is a warning
        assert rss_kb < SCAN_RSS_LIMIT_MB * 1024, f"{fmt}: peak RSS {rss_kb // 1024} MB"


# ------------------------------------------------------------------------------- 4. an unreadable PATH

def _commands(path: Path, tmp: Path) -> list[list[str]]:
    """Every command that takes PATHs, given `path`."""
    p = str(path)
    return [["scan", p], ["verify", p], ["index", "verify", p], ["index", "rebuild", p], ["txn", p], ["dump", p],
            ["find", p, "--offset", "5"], ["truncate", p], ["audit", "--output", str(tmp / "audit"), p],
            ["report", p], ["restore", p]]


@pytest.mark.slow
def test_an_unreadable_path_is_an_operational_error_for_every_command(tmp_path):
    denied = tmp_path / "orders-0"
    shutil.copytree(kafka_case("v2-none-mixed"), denied)
    denied.chmod(0)
    for args in _commands(denied, tmp_path):
        p = run(*args, wrap=NO_DAC)
        assert p.returncode == exitcodes.OPERATIONAL and sound(p), (args, p.returncode, p.stderr[-2000:])
        said = p.stdout + p.stderr  # the audit's text is a table of finding counts; its rows say why
        assert "Permission denied" in said or "UNREADABLE" in said, args
