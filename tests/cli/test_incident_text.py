"""The incident path as a person on call reads it: verify, truncate, `verify --explain` and restore.

1. On a terminal of 80 columns every line fits, wrapped at spaces: the words and numbers are those of the
   output to a pipe, none split; a line may be longer only to hold a path or a command whole, and the
   command that undoes a repair is a line of its own. A pipe keeps whole lines, COLUMNS or not.
2. A partition dir whose name is not UTF-8 prints escaped (`caf\\xe9-0`) in text and JSON, under a strict
   UTF-8 stdout, for scan, verify, truncate (its plan and --apply) and restore.
3. Small things: hidden info findings are pointed at, no "None" or "all 0", no file name twice, and
   `make demo` says how to run logtool.
"""
from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import LOGTOOL, ROOT

from logtool.findings import KINDS
from tools import docs

SAMPLE = ROOT / "fixtures" / "sample-logdir"
WIDTH = 80
NOT_UTF8 = b"caf\xe9-0"
SHOWN = "caf\\xe9-0"  # how logtool prints it, in text and in JSON


def logtool(*args: object, cwd: Path | None = None, strict: bool = False, **env: str) -> subprocess.CompletedProcess:
    """The installed command in a pipe; its output must be UTF-8 (decoding fails otherwise)."""
    environ = {k: v for k, v in os.environ.items() if k != "COLUMNS"} | env
    if strict:
        environ["PYTHONIOENCODING"] = "utf-8:strict"
    p = subprocess.run([str(LOGTOOL), *map(str, args)], capture_output=True, cwd=cwd, env=environ, timeout=300)
    return subprocess.CompletedProcess(p.args, p.returncode, p.stdout.decode(), p.stderr.decode())


def on_terminal(*args: object, cwd: Path | None = None, tmp_path: Path) -> subprocess.CompletedProcess:
    """The command with stdout on a pseudo-terminal of WIDTH columns (no COLUMNS in the environment: the
    width is the terminal's), colours and carriage returns taken out; stderr apart. The docs' runner
    (tools/docs.py), which shows every example as a terminal of that width does."""
    environ = {k: v for k, v in os.environ.items() if k != "COLUMNS"} | {"TERM": "xterm-256color"}
    argv = [str(LOGTOOL), *map(str, args)]
    code, stdout, stderr = docs.on_terminal(shlex.join(argv), cwd or tmp_path, environ, WIDTH, timeout=300)
    return subprocess.CompletedProcess(argv, code, stdout, stderr)


def over(text: str) -> list[str]:
    return [line for line in text.splitlines() if len(line) > WIDTH]


def too_long(text: str) -> list[str]:
    """The lines over WIDTH but those that hold one path (it may end in a colon) or one command, alone."""
    return [line for line in over(text) if " " in line.strip() and not line.startswith("logtool ")]


@pytest.fixture
def sample(tmp_path) -> Path:
    """A copy of the bundled sample log dir at tmp_path/sample-logdir."""
    shutil.copytree(SAMPLE, tmp_path / "sample-logdir")
    return tmp_path / "sample-logdir"


# ------------------------------------------------------------------------------------ 1. 80 columns

@pytest.mark.parametrize("args", [("verify", "sample-logdir"), ("truncate", "sample-logdir"),
                                  ("verify", "--explain", "all"), ("scan", "sample-logdir")],
                         ids=lambda a: " ".join(a))
def test_80_columns_wrap_at_spaces_and_split_no_word_or_number(args, sample, tmp_path):
    whole = logtool(*args, cwd=sample.parent)
    shown = on_terminal(*args, cwd=sample.parent, tmp_path=tmp_path)
    assert shown.returncode == whole.returncode and shown.returncode in (0, 4), shown.stderr
    assert too_long(shown.stdout) == []
    if args[0] != "scan":  # a table leaves out columns at 80; lines of text only move their breaks
        assert shown.stdout.split() == whole.stdout.split()
        assert over(whole.stdout), "the pipe's output has no long line: the test would prove nothing"


def test_a_pipe_keeps_one_finding_per_line_whatever_columns_says(sample):
    # readline exports COLUMNS=80 to the children of a Python program: no request to wrap
    for env in ({}, {"COLUMNS": str(WIDTH)}):
        text = logtool("verify", "sample-logdir", cwd=sample.parent, **env).stdout
        [crc] = [line for line in text.splitlines() if "CRC_MISMATCH" in line and "error" in line]
        assert crc.endswith("1477 bytes after it are cut by recovery")


def test_commands_in_explain_are_never_split(tmp_path):
    lines = on_terminal("verify", "--explain", "all", tmp_path=tmp_path).stdout.splitlines()
    commands = {c for k in KINDS for c in re.findall(r"`[^`]+`", k.meaning + k.remedy) if " " in c}
    assert commands
    for c in commands:
        assert any(c in line for line in lines), f"{c} is split across lines"


@pytest.mark.slow
def test_a_long_path_is_never_split_and_the_undo_command_is_a_line_of_its_own(tmp_path):
    deep = tmp_path / ("incident-" * 8) / "kafka-logs"
    shutil.copytree(SAMPLE, deep)
    assert len(str(deep)) > WIDTH
    verify = on_terminal("verify", deep, tmp_path=tmp_path)
    assert verify.returncode == 4
    assert all(str(deep) in line for line in over(verify.stdout)), over(verify.stdout)
    q = tmp_path / "q"
    done = on_terminal("truncate", "--apply", "--quarantine", q, deep, tmp_path=tmp_path)
    assert done.returncode == 1, done.stderr
    assert all(str(deep) in line for line in over(done.stdout)), over(done.stdout)
    [run] = list(q.iterdir())
    assert f"logtool restore {run}" in done.stderr.splitlines()
    assert over(done.stderr) == [f"logtool restore {run}"]
    restored = on_terminal("restore", run, tmp_path=tmp_path)
    assert restored.returncode == 0 and "restored" in restored.stdout
    assert all(line.strip().startswith(str(deep)) for line in over(restored.stdout)), over(restored.stdout)


# ----------------------------------------------------------------------------- 2. names not UTF-8

@pytest.fixture
def not_utf8(tmp_path) -> Path:
    """The sample log dir with clicks-2 (the damaged partition) renamed to b'caf\\xe9-0'."""
    log_dir = tmp_path / "ld"
    shutil.copytree(SAMPLE, log_dir)
    os.rename(os.fsencode(log_dir / "clicks-2"), os.fsencode(log_dir) + b"/" + NOT_UTF8)
    return log_dir


def _json_strings(value) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in _json_strings(k) + _json_strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _json_strings(v)]
    return []


def _escaped_in(doc) -> bool:
    strings = _json_strings(doc)
    assert not any("\udc80" <= c <= "\udcff" for s in strings for c in s), "a lone surrogate in the JSON"
    return any(SHOWN in s for s in strings)


@pytest.mark.parametrize("command", ["scan", "verify", "truncate"])
def test_a_name_that_is_not_utf8_prints_escaped_as_text(command, not_utf8):
    p = logtool(command, not_utf8, strict=True)
    assert p.returncode == 4, p.stderr
    assert SHOWN in p.stdout and "internal error" not in p.stderr


@pytest.mark.parametrize("command,fmt", [("scan", "json"), ("verify", "json"), ("verify", "jsonl"),
                                         ("truncate", "json")])
def test_a_name_that_is_not_utf8_is_an_escaped_string_in_json(command, fmt, not_utf8):
    p = logtool(command, "--format", fmt, not_utf8, strict=True)
    assert p.returncode == 4, p.stderr
    docs = [json.loads(line) for line in p.stdout.splitlines()] if fmt == "jsonl" else [json.loads(p.stdout)]
    assert any(_escaped_in(doc) for doc in docs)


@pytest.mark.slow
def test_a_repair_and_its_restore_of_a_name_that_is_not_utf8_print_every_line(not_utf8, tmp_path):
    q = tmp_path / "q"
    done = logtool("truncate", "--apply", "--quarantine", q, not_utf8, strict=True)
    assert done.returncode == 1, done.stderr
    assert SHOWN in done.stdout and "partition(s) repaired" in done.stdout
    [run] = list(q.iterdir())
    assert f"logtool restore {run}" in done.stderr.splitlines()
    restored = logtool("restore", run, strict=True)
    assert restored.returncode == 0, restored.stderr
    assert f"restored {not_utf8}/{SHOWN}/00000000000000000256.log" in restored.stdout.splitlines()


# ------------------------------------------------------------------------------------ 3. small things

def test_hidden_info_findings_are_pointed_at(case_copy):
    pdir = case_copy("v2-crash-preallocated")
    def summary(out: str) -> str:  # the summary line (the verdict follows it)
        [line] = [x for x in out.splitlines() if " partition(s), " in x]
        return line

    assert summary(logtool("verify", pdir).stdout).endswith("2 info (not listed: --show-info lists them)")
    shown = logtool("verify", "--show-info", pdir).stdout
    assert "INDEX_PREALLOCATED" in shown and summary(shown).endswith("2 info")


def test_a_file_name_is_printed_once_per_finding(case_copy):
    pdir = case_copy("v2-crash-preallocated")
    text = logtool("verify", "--show-info", pdir).stdout
    [line] = [line for line in text.splitlines() if "00000000000000000190.index" in line]
    assert line.count("00000000000000000190.index") == 1, line


def test_a_partition_without_segments_has_no_log_end_of_none(tmp_path):
    pdir = tmp_path / "orders-0"
    pdir.mkdir()
    shutil.copy(SAMPLE / "orders-0" / "partition.metadata", pdir)
    plan = logtool("truncate", pdir)
    assert plan.returncode == 0, plan.stderr
    assert "None" not in plan.stdout and "nothing to repair (no segments)" in plan.stdout
    rebuild = logtool("index", "rebuild", pdir)
    assert rebuild.returncode == 0 and rebuild.stdout == f"{pdir}: no index file to rewrite\n"


def test_index_rebuild_with_nothing_wrong_does_not_say_all_0(case_copy):
    pdir = case_copy("v2-crash-preallocated")
    text = logtool("index", "rebuild", pdir).stdout
    assert "all 0" not in text and "no index file to rewrite" in text


@pytest.mark.slow
def test_a_partition_with_only_a_preallocated_tail_is_untrimmed_not_damaged(case_copy):
    pdir = case_copy("v2-crash-preallocated")
    assert logtool("verify", pdir).stdout.startswith(f"untrimmed {pdir}: ")
    assert "│ untrimmed │" in logtool("scan", pdir).stdout
    assert json.loads(logtool("verify", "--format", "json", pdir).stdout)["partitions"][0]["status"] == "untrimmed"


def test_make_demo_ends_with_how_to_run_logtool():
    # -o: the installed environment is taken as it is (the test does not reinstall it)
    p = subprocess.run(["make", "-s", "-o", ".venv/.installed-core", "demo"], cwd=ROOT, capture_output=True,
                       text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines()[-1] == ".venv/bin/logtool --help"
