"""mapguard: a file truncated under a read-only mmap reads zeros past the cut instead of killing us.

Every test that could kill the process on a regression runs the dangerous part in a child process;
the in-process tests would take pytest down with SIGBUS (exit 135) if the guard failed, which is a
loud failure too.
"""
from __future__ import annotations

import faulthandler
import mmap
import os
import random
import signal
import struct
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from logtool.store import _mapguard, mapguard  # a missing build fails these tests, never skips them

MiB = 1 << 20
PAGE = mmap.PAGESIZE
PATTERN = bytes(range(1, 256))  # no zero byte: a zero read is never the file's content


def expected(off: int, n: int) -> bytes:
    start = off % len(PATTERN)
    reps = (start + n) // len(PATTERN) + 1
    return (PATTERN * reps)[start:start + n]


def write_file(path, size: int, real: int, extra: tuple[int, ...] = ()) -> None:
    """A sparse file of `size` bytes: the pattern over [0, real) and over one page at each `extra`."""
    with open(path, "wb") as f:
        f.write(expected(0, real))
        for off in extra:
            f.seek(off)
            f.write(expected(off, PAGE))
        f.truncate(size)


def map_readonly(path) -> mmap.mmap:
    fd = os.open(path, os.O_RDONLY)
    try:
        return mmap.mmap(fd, 0, access=mmap.ACCESS_READ)
    finally:
        os.close(fd)


def roundup(n: int) -> int:
    return -(-n // PAGE) * PAGE


def run_child(code: str, *args: str, fault_handler: bool = False, cwd=None) -> subprocess.CompletedProcess:
    flags = ["-X", "faulthandler"] if fault_handler else []
    return subprocess.run([sys.executable, *flags, "-c", textwrap.dedent(code), *args],
                          capture_output=True, text=True, timeout=120, cwd=cwd)


def test_available_and_installed_on_top_of_faulthandler(tmp_path):
    assert sys.platform != "linux" or mapguard.AVAILABLE, mapguard.UNAVAILABLE_REASON
    assert mapguard.SLOTS == _mapguard.SLOTS == 4096
    (tmp_path / "f").write_bytes(b"x" * PAGE)
    mm = map_readonly(tmp_path / "f")
    with mapguard.guard(mm) as g:
        assert g.active
        # pytest (or -X faulthandler) enables faulthandler before any test runs: ours went on top, lazily
        assert mapguard.handler_state() == "installed", faulthandler.is_enabled()
    assert not g.active
    mm.close()


def test_truncated_by_another_process_reads_zeros(tmp_path):
    path = tmp_path / "00000000000000000000.log"
    write_file(path, 50 * MiB, 2 * MiB, extra=(40 * MiB,))
    mm = map_readonly(path)
    g = mapguard.guard(mm)
    try:
        assert mm[40 * MiB:40 * MiB + 16] == expected(40 * MiB, 16)  # the page is mapped and resident
        assert g.faulted_at() is None
        done = subprocess.run([sys.executable, "-c", f"import os; os.truncate({str(path)!r}, {MiB})"], timeout=60)
        assert done.returncode == 0 and os.path.getsize(path) == MiB

        assert mm[MiB:MiB + 64] == bytes(64)                  # no signal: zeros past the cut
        assert g.faulted_at() == MiB                          # and where it happened
        assert mm[:MiB] == expected(0, MiB)                   # below the cut: the real bytes
        assert mm[40 * MiB:40 * MiB + 16] == bytes(16)        # a page that was resident is cut too
        assert struct.unpack_from(">qi", mm, 30 * MiB + 5) == (0, 0)
        assert memoryview(mm)[49 * MiB:49 * MiB + 8].tobytes() == bytes(8)
        assert g.faulted_at() == MiB                          # the lowest one stays
        assert len(mm) == 50 * MiB
        assert mm[MiB - 8:MiB + 8] == expected(MiB - 8, 8) + bytes(8)
    finally:
        g.close()
        mm.close()


def test_lowest_fault_unaligned_cut_reset_and_release(tmp_path):
    path = tmp_path / "seg.log"
    cut = 3 * MiB + 100
    write_file(path, 16 * MiB, 16 * MiB)
    mm = map_readonly(path)
    with mapguard.guard(mm) as g:
        os.truncate(path, cut)
        assert mm[12 * MiB] == 0
        assert g.faulted_at() == 12 * MiB
        assert mm[5 * MiB + 17] == 0
        assert g.faulted_at() == 5 * MiB                      # page-aligned, and the minimum wins
        # the page holding the cut is still file-backed: the kernel zero-fills past EOF, no fault
        assert mm[cut - 50:cut + 50] == expected(cut - 50, 50) + bytes(50)
        assert g.faulted_at() == 5 * MiB
        assert mm[roundup(cut) + 1] == 0
        assert g.faulted_at() == roundup(cut)
        g.reset()
        assert g.faulted_at() is None
        assert mm[5 * MiB + 99] == 0                          # a repaired page reads zeros, no new fault
        assert g.faulted_at() is None
        # what the walker does to pages it has passed (segment._release): still no signal afterwards
        mm.madvise(mmap.MADV_DONTNEED, 4 * MiB, 4 * MiB)
        assert mm[4 * MiB:8 * MiB] == bytes(4 * MiB)
        assert mm[:MiB] == expected(0, MiB)
    mm.close()


# A 4 MiB file, mapped, then cut to 1 MiB under the mapping: what both children below fault on.
CUT_MAP = """
    def cut_map(path):
        with open(path, "wb") as f:
            f.write(b"\\x01" * (4 << 20))
        fd = os.open(path, os.O_RDONLY)
        mm = mmap.mmap(fd, 0, access=mmap.ACCESS_READ)
        os.close(fd)
        os.truncate(path, 1 << 20)
        return mm
"""

CHILD_UNGUARDED = """
    import mmap, os, sys
    from logtool.store import mapguard
""" + CUT_MAP + """
    guarded = cut_map(sys.argv[1] + ".guarded")
    g = mapguard.guard(guarded)                 # installs the handler
    assert guarded[2 << 20] == 0 and g.faulted_at() == 2 << 20
    print("guarded ok", mapguard.handler_state(), flush=True)
    what = sys.argv[2]
    if what == "unregistered":
        other = cut_map(sys.argv[1] + ".other")
        other[2 << 20]                          # never registered: must die of SIGBUS
    elif what == "after-close":
        g.close()
        guarded[3 << 20]                        # unregistered: must die of SIGBUS
    elif what == "kill":
        os.kill(os.getpid(), 7)                 # a SIGBUS sent by kill(): no address, not ours
    print("survived", flush=True)
"""


@pytest.mark.parametrize("fault_handler", [False, True], ids=["plain", "faulthandler"])
@pytest.mark.parametrize("what", ["unregistered", "after-close", "kill"])
def test_faults_outside_the_ranges_still_kill(tmp_path, what, fault_handler):
    done = run_child(CHILD_UNGUARDED, str(tmp_path / "f"), what, fault_handler=fault_handler, cwd=tmp_path)
    assert "guarded ok installed" in done.stdout, done.stderr
    assert "survived" not in done.stdout
    assert done.returncode == -signal.SIGBUS, (done.returncode, done.stderr)
    if fault_handler:  # chained to faulthandler, which ran (its traceback) and then let the default kill us
        assert "Fatal Python error: Bus error" in done.stderr
    else:
        assert "Fatal Python error" not in done.stderr


def test_without_the_guard_the_truncation_kills(tmp_path):
    """The problem this module solves, as it was: exit by SIGBUS (a shell shows 135)."""
    code = """
        import mmap, os, sys
        path = sys.argv[1]
        with open(path, "wb") as f:
            f.write(b"\\x01" * (4 << 20))
        fd = os.open(path, os.O_RDONLY)
        mm = mmap.mmap(fd, 0, access=mmap.ACCESS_READ)
        os.truncate(path, 1 << 20)
        mm[2 << 20]
        print("survived")
    """
    done = run_child(code, str(tmp_path / "f"))
    assert done.returncode == -signal.SIGBUS and "survived" not in done.stdout


CHILD_LATE_FAULTHANDLER = """
    import faulthandler, mmap, os, sys
    from logtool.store import mapguard
""" + CUT_MAP + """
    first = cut_map(sys.argv[1] + ".first")
    g1 = mapguard.guard(first)
    faulthandler.enable()                 # goes on top of ours: it would re-raise our faults, addressless
    print(mapguard.handler_state())
    g2 = mapguard.guard(b"")              # any register() puts ours back on top, chaining to faulthandler
    print(mapguard.handler_state())
    print(first[2 << 20], g1.faulted_at(), flush=True)
    if sys.argv[2] == "disabled":
        faulthandler.disable()            # restores what it replaced (ours): we chain to a disabled handler
    other = cut_map(sys.argv[1] + ".other")
    other[2 << 20]                        # not ours: faulthandler's dump (when enabled), then SIGBUS
    print("survived", flush=True)
"""


@pytest.mark.parametrize("then", ["enabled", "disabled"])
def test_faulthandler_enabled_after_the_guard(tmp_path, then):
    """faulthandler.enable() after the first guard replaces our handler; the next register() stacks ours
    on top again. Faults outside the ranges then still die of SIGBUS, through faulthandler's dump when it
    is enabled, and neither handler loops into the other (no recursion, no hang)."""
    done = run_child(CHILD_LATE_FAULTHANDLER, str(tmp_path / "f"), then, cwd=tmp_path)
    assert done.stdout.split() == ["overridden", "installed", "0", str(2 * MiB)], done.stderr
    assert done.returncode == -signal.SIGBUS, (done.returncode, done.stderr)
    assert done.stderr.count("Fatal Python error: Bus error") == (1 if then == "enabled" else 0), done.stderr


def test_slot_reuse_and_errors(tmp_path):
    path = tmp_path / "f"
    write_file(path, 2 * MiB, 2 * MiB)
    mm = map_readonly(path)
    slot = _mapguard.register(mm)
    os.truncate(path, MiB)
    assert mm[MiB] == 0 and _mapguard.faulted(slot) == MiB
    _mapguard.unregister(slot)
    with pytest.raises(ValueError):
        _mapguard.unregister(slot)
    with pytest.raises(ValueError):
        _mapguard.faulted(slot)
    with pytest.raises(ValueError):
        _mapguard.faulted(-1)
    with pytest.raises(ValueError):
        _mapguard.faulted(_mapguard.SLOTS)
    again = _mapguard.register(mm)
    assert again == slot                                      # the freed slot is taken again
    assert _mapguard.faulted(again) == -1                     # with nothing recorded
    _mapguard.reset(again)
    _mapguard.unregister(again)
    with pytest.raises(ValueError, match="read-only"):
        _mapguard.register(bytearray(16))                     # a writable buffer is refused
    with pytest.raises(TypeError):
        _mapguard.register(42)
    with mapguard.guard(b"") as g:                            # what open_readonly gives for an empty file
        assert g.active and g.faulted_at() is None
    mm.close()


def test_many_cycles_and_a_full_table(tmp_path):
    path = tmp_path / "f"
    write_file(path, MiB, MiB)
    mm = map_readonly(path)
    base = _mapguard.in_use()
    for _ in range(100_000):
        _mapguard.unregister(_mapguard.register(mm))
    for _ in range(1000):
        mapguard.guard(mm).close()
    assert _mapguard.in_use() == base
    slots = [_mapguard.register(mm) for _ in range(_mapguard.SLOTS - base)]
    try:
        assert len(set(slots)) == len(slots)
        with pytest.raises(mapguard.TableFullError, match="slots are in use"):
            mapguard.guard(mm)
        freed = slots.pop(1234)
        _mapguard.unregister(freed)
        slots.append(_mapguard.register(mm))
        assert slots[-1] == freed                             # the only free slot
        # the same mapping registered many times: a fault is recorded in every slot that covers it
        os.truncate(path, PAGE)
        assert mm[PAGE * 3] == 0
        assert {_mapguard.faulted(s) for s in slots} == {3 * PAGE}
    finally:
        for s in slots:
            _mapguard.unregister(s)
    assert _mapguard.in_use() == base
    mm.close()


def test_a_dropped_guard_frees_its_slot(tmp_path):
    (tmp_path / "f").write_bytes(b"x" * PAGE)
    mm = map_readonly(tmp_path / "f")
    base = _mapguard.in_use()
    g = mapguard.guard(mm)
    assert _mapguard.in_use() == base + 1
    del g
    assert _mapguard.in_use() == base
    mm.close()


@pytest.mark.slow
def test_truncation_racing_reads_in_another_thread(tmp_path):
    """A thread cuts the file at a random byte while this one reads through it the way logtool does."""
    rng = random.Random(20240611)
    size = 8 * MiB
    cut_mid_pass = 0  # passes that read the file's bytes past the cut, then zeros: the cut fell inside
    for it in range(20):
        path = tmp_path / f"{it:020d}.log"
        write_file(path, size, size)
        mm = map_readonly(path)
        view = memoryview(mm)
        g = mapguard.guard(mm)
        cut = rng.randrange(1, size)
        delay = rng.uniform(0, 0.01)

        def truncate(path=path, cut=cut, delay=delay):  # this iteration's, bound now
            time.sleep(delay)
            os.truncate(path, cut)

        t = threading.Thread(target=truncate)
        t.start()
        passes = 0
        while t.is_alive() or passes < 2:
            real_past_cut = zero_past_cut = False
            for off in range(rng.randrange(8), size - 64, PAGE + 8 * it + 1):
                want = expected(off, 12)
                batch = struct.pack(">qi", *struct.unpack_from(">qi", mm, off))
                piece = view[off:off + 12].tobytes()
                for got in (batch, piece):  # each byte is the file's, or zero once cut
                    assert all(b in (w, 0) for b, w in zip(got, want)), (it, off, cut)
                if off >= cut:
                    real_past_cut |= piece == want
                    zero_past_cut |= piece == bytes(12)
            cut_mid_pass += real_past_cut and zero_past_cut
            passes += 1
        t.join()
        assert os.path.getsize(path) == cut
        # now the cut is known: below it the real bytes, past it zeros, and where the first fault was
        assert mm[:cut] == expected(0, cut)
        assert mm[cut:] == bytes(size - cut)
        if roundup(cut) < size:
            assert g.faulted_at() == roundup(cut)
        view.release()
        g.close()
        mm.close()
    assert cut_mid_pass, "no truncation landed inside a pass: the race was not exercised"


def test_import_from_elsewhere(tmp_path):
    """The installed (editable) package carries the built extension: no source tree on sys.path."""
    done = run_child("import logtool.store._mapguard as m, logtool.store.mapguard as w; "
                     "print(w.AVAILABLE, m.__file__)", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("True ")


def test_threads_faulting_at_once_with_the_gil_released(tmp_path):
    """hashlib releases the GIL over large buffers: four threads fault past the cut at the same time."""
    import hashlib
    path = tmp_path / "f"
    size = 32 * MiB
    write_file(path, size, size)
    mm = map_readonly(path)
    view = memoryview(mm)
    with mapguard.guard(mm) as g:
        os.truncate(path, 4 * MiB + 5)
        digests: dict[int, bytes] = {}
        spans = [(4 * MiB + 5 + k * 7 * MiB, 7 * MiB) for k in range(4)]
        spans[-1] = (spans[-1][0], size - spans[-1][0])
        threads = [threading.Thread(target=lambda k=k, off=off, n=n: digests.__setitem__(
            k, hashlib.sha256(view[off:off + n]).digest())) for k, (off, n) in enumerate(spans)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for k, (_, n) in enumerate(spans):
            assert digests[k] == hashlib.sha256(bytes(n)).digest()
        assert g.faulted_at() == roundup(4 * MiB + 5)
    view.release()
    mm.close()
