"""The mutation fuzzer (fuzz/): a fixed-seed slice that must find no defect, and tests that the harness
itself sees each kind of defect (an escaped exception, an 'internal error' line, a hang, a memory blow-up,
a crash, a wrong exit code, a write), so that a clean slice cannot be a harness that looks away.

The slice is seed SLICE_SEED, inputs 0..SLICE_N-1: every (file kind x target) pair at least once.
`python -m bench.fuzz --replay SLICE_SEED:INDEX` rebuilds and reruns any one of its inputs;
`make fuzz` runs the same harness at scale.
"""
from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

import pytest
from conftest import require

from fuzz import harness, seeds
from fuzz import targets as tg

SLICE_SEED = 20250601
# Inputs of `make fuzz` (seed 1) that found defects: rerun with the slice until they pass. (seed, index);
# an index names the same input as long as fuzz/mutate.py and the seed files stay as they are.
REGRESSIONS: list[tuple[int, int]] = [(1, 7236), (1, 10899), (1, 6922), (1, 22434), (1, 26374)]
JOBS = max(2, min(4, os.cpu_count() or 2))


def _describe(v: harness.Verdict) -> str:
    spec = v.spec
    lines = [f"[{', '.join(v.defects)}] {v.seed}:{v.index} {v.kind} x {v.target}: {v.symptom}",
             f"    origin: {v.origin}", f"    seed file: {spec.get('seed_file')}",
             f"    mutations: {spec.get('mutations')}"]
    if spec.get("argv"):
        lines.append(f"    argv: {spec['argv']}")
    lines.append(f"    replay: python -m bench.fuzz --replay {v.seed}:{v.index}")
    return "\n".join(lines)


@pytest.fixture(scope="module")
def warm():
    require(seeds.SHARED)
    import logtool.cli  # noqa: F401  (forked workers start with logtool imported, as bench.fuzz does)
    return harness.all_pairs()


@pytest.mark.slow
def test_seeds_cover_every_kind(warm):
    kinds = set(seeds.kinds())
    for k in ("index", "timeindex", "txnindex", "snapshot", "leader-epoch-checkpoint", "partition.metadata",
              *seeds.LOGDIR_KINDS, "log.v0.none", "log.v1.none", "log.v1.gzip", "log.v2.none", "log.v2.gzip",
              "log.v2.snappy", "log.v2.lz4", "log.v2.zstd", "log.v2.txn", "log.kraft"):
        assert k in kinds, f"no seed of kind {k}"
    targets = {t for _k, t in warm}
    assert targets == set(tg.CLI) | set(tg.PARSERS)


def test_inputs_are_reproducible(tmp_path, warm):
    for index in (0, 7, 123, len(warm) + 5):
        a, b = tmp_path / f"a{index}", tmp_path / f"b{index}"
        a.mkdir()
        b.mkdir()
        sa, _ = harness.build_input(SLICE_SEED, index, a, warm)
        sb, _ = harness.build_input(SLICE_SEED, index, b, warm)
        assert (sa.kind, sa.target, sa.seed_file, sa.mutations) == (sb.kind, sb.target, sb.seed_file, sb.mutations)
        assert (a / sa.file).read_bytes() == (b / sb.file).read_bytes()
        if sa.argv:
            assert [x.replace(str(a), "") for x in sa.argv] == [x.replace(str(b), "") for x in sb.argv]


@pytest.mark.slow
def test_fixed_seed_slice_has_no_defects(tmp_path, warm):
    """Every (file kind x target) pair twice over: no traceback, hang, crash, memory blow-up, bad exit code."""
    n = 2 * len(warm)
    t = time.monotonic()
    verdicts = harness.run(SLICE_SEED, range(n), JOBS, tmp_path / "work")
    assert len(verdicts) == n
    assert not [v for v in verdicts if "harness" in v.defects], [_describe(v) for v in verdicts if "harness" in v.defects]
    defects = sorted((v for v in verdicts if v.defects), key=lambda v: v.index)
    assert not defects, f"{len(defects)} of {n} inputs found defects ({time.monotonic() - t:.0f} s):\n" + \
        "\n".join(_describe(v) for v in defects)


@pytest.mark.sample(2)
@pytest.mark.parametrize("seed,index", REGRESSIONS, ids=[f"{s}:{i}" for s, i in REGRESSIONS])
def test_fuzz_regression(tmp_path, warm, seed, index):
    """A defect `make fuzz` found, as its reproducer: the same input must now give a finding or a one-line error."""
    [v] = harness.run(seed, [index], 1, tmp_path / "work")
    if "memory" in v.defects and not v.origin:
        harness.triage_memory(v, tmp_path / "triage")
    assert not v.defects, _describe(v) + "\n" + v.detail[-3000:]


# --- the harness sees every kind of defect ---------------------------------------------------------------

def _raise(ctx):
    raise ValueError("a parser bug")


def _internal_error_line(ctx):
    print("logtool: internal error: KeyError: 'x' (set LOGTOOL_DEBUG=1 for the traceback)", file=sys.stderr)
    return {"exit": 8}


def _sleep(ctx):
    time.sleep(30)
    return {}


def _allocate_1gb(ctx):
    block = b"\x01" * (1 << 30)  # every page touched: 1 GB resident
    return {"len": len(block)}


def _allocate_past_cap(ctx):
    block = bytearray(16 << 30)  # more than the address-space cap: MemoryError
    return {"len": len(block)}


def _segfault(ctx):
    import faulthandler

    faulthandler.disable()  # pytest's would print the stack of this deliberate crash to the terminal
    os.kill(os.getpid(), signal.SIGSEGV)
    time.sleep(5)
    return {}


def _bad_exit(ctx):
    return {"exit": 3}


def _write(ctx):
    Path(ctx["file"]).write_bytes(b"changed")
    return {}


def _fine(ctx):
    return {"n": len(ctx["data"] or b"")}


EXTRA = {"test:raise": _raise, "test:internal-error": _internal_error_line, "test:sleep": _sleep,
         "test:1gb": _allocate_1gb, "test:past-cap": _allocate_past_cap, "test:segfault": _segfault,
         "test:bad-exit": _bad_exit, "test:write": _write, "test:fine": _fine}


@pytest.fixture
def extra_targets(monkeypatch):
    for name, fn in EXTRA.items():
        monkeypatch.setitem(tg.EXTRA, name, fn)


def _one(tmp_path, target: str, kind: str = "log.v2.none", **kw) -> harness.Verdict:
    [v] = harness.run(SLICE_SEED, [3], 1, tmp_path / "w", forced=(kind, target), **kw)
    return v


@pytest.mark.parametrize("target,expected", [
    ("test:raise", "traceback"), ("test:internal-error", "traceback"), ("test:segfault", "signal"),
    ("test:bad-exit", "exit-code"), ("test:write", "wrote"), ("test:past-cap", "memory"), ("test:1gb", "memory"),
])
@pytest.mark.sample(2)
def test_harness_detects(tmp_path, warm, extra_targets, target, expected):
    v = _one(tmp_path, target)
    assert expected in v.defects, (v.defects, v.symptom, v.detail[-2000:])
    assert v.spec.get("mutations"), "the reproducer records the mutations"


@pytest.mark.slow
def test_harness_detects_a_hang(tmp_path, warm, extra_targets):
    t = time.monotonic()
    v = _one(tmp_path, "test:sleep", limits={"test:sleep": 1.0})
    assert v.defects == ["hang"], (v.defects, v.symptom)
    assert time.monotonic() - t < 20, "the hung worker was killed at its limit"


@pytest.mark.slow
def test_harness_measures_peak_rss(tmp_path, warm, extra_targets):
    v = _one(tmp_path, "test:1gb")
    assert v.peak_rss >= 1 << 30, v.peak_rss
    fine = _one(tmp_path, "test:fine")
    # Measured on top of where the worker started (a fork of this process, as large as pytest has grown).
    assert fine.defects == [] and fine.peak_rss - fine.rss_start < harness.RSS_LIMIT, (fine.defects, fine.peak_rss)


@pytest.mark.slow
def test_harness_sees_an_internal_error_of_the_cli(tmp_path, warm, monkeypatch):
    """A bug deep in a command: with the real `scan` command and a broken check, the CLI path reports it."""
    import logtool.commands.scan as scan

    def broken(*a, **k):
        raise KeyError("a bug in a check")

    monkeypatch.setattr(scan, "check_with_progress", broken)
    v = _one(tmp_path, "scan")
    assert "traceback" in v.defects, (v.defects, v.symptom)
    assert "KeyError" in v.symptom


@pytest.mark.slow
def test_harness_passes_a_clean_command(tmp_path, warm):
    v = _one(tmp_path, "verify")
    assert v.defects == [] and v.exit in (0, 4), (v.defects, v.symptom, v.exit)
