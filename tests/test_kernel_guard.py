"""The kernel never takes what a lens would report. For every kind the segment lens and the offset index lens
report batch by batch (their declarations, `PER_BATCH`, held here to the catalog's kinds each lens names), a
case built from batches kafka-python wrote, a few bytes edited: the kernel does not take the damaged batch,
the kernel path reports exactly what the pure path does, the finding among it; and where a bound of the
lens's declaration is what makes the kernel decline, a kernel that ignored that bound would lose the finding.
A lens that comes to report a kind with no case here fails the suite; so does one that names a kind it does
not declare."""
from __future__ import annotations

import ast
import inspect
import zlib
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import NamedTuple

import crc32c
import pytest

from fixtures.generator import BatchSpec, EntryHeader, build_batches, iter_entry_headers, segment_file, write_partition
from logtool import findings
from logtool.checks import index as index_lens, segment as segment_lens
from logtool.findings import (FIRST_OFFSET_ABOVE_NAME, FIRST_OFFSET_BELOW_NAME, INDEX_NOT_INCREASING,
                              INDEX_WRONG_POSITION, LEGACY_WRAPPER_UNREADABLE, OFFSET_NOT_INCREASING, OFFSET_OVERFLOW,
                              UNKNOWN_CODEC, UNKNOWN_MAGIC, Kind)
from logtool.checks.segment import check_segment
from logtool.format import kernel
from logtool.store.segment import Segment

# Each lens: its module (which declares PER_BATCH), its class, and the kernel function that takes its runs.
LENSES = {
    "segment": (segment_lens, "_BatchRules", "plain_run"),
    "index": (index_lens, "OffsetIndexCheck", "index_run"),
}
NOT_PER_BATCH = ("__init__", "finish")  # a lens's methods that run once, before or after the batches


def _named_kinds(cls: type) -> set[str]:
    """The catalog's kinds a lens class names in its methods that run batch by batch."""
    kinds = {name for name, value in vars(findings).items() if isinstance(value, Kind)}
    body = ast.parse(inspect.getsource(cls)).body[0]
    assert isinstance(body, ast.ClassDef)
    return {node.id for method in body.body if isinstance(method, ast.FunctionDef) and method.name not in NOT_PER_BATCH
            for node in ast.walk(method) if isinstance(node, ast.Name) and node.id in kinds}


@pytest.mark.parametrize("lens", LENSES)
def test_a_lens_declares_every_kind_it_reports_batch_by_batch(lens):
    module, cls, _ = LENSES[lens]
    assert all(kind in findings.KINDS for kind in module.PER_BATCH)
    assert _named_kinds(getattr(module, cls)) == {kind.name for kind in module.PER_BATCH}


# ---- the cases: batches kafka-python wrote, a few bytes edited ----------------------------------------------

BATCHES, MIDDLE = 12, 6  # plain batches on both sides of the one a case damages
V2 = BatchSpec(batches=BATCHES, records_per_batch=3, value_bytes=(20, 40))
V1_WRAPPERS = BatchSpec(magic=1, codec="gzip", batches=4, records_per_batch=3, value_bytes=(20, 40))
V1_MESSAGES = BatchSpec(magic=1, batches=4, records_per_batch=1, value_bytes=(20, 40))


def _written(tmp: Path, *specs: BatchSpec, first: int = 0) -> tuple[Path, list[EntryHeader]]:
    """A one-segment partition of the specs' batches in turn, an offset index entry for each batch but the
    first (index interval 0): its .log and its entries' headers."""
    entries = []
    for spec in specs:
        entries += build_batches(spec, entries[-1].next_offset if entries else first)
    part = write_partition(tmp, "guard", 0, entries, index_interval_bytes=0)
    log = segment_file(part.path, first, ".log")
    return log, list(iter_entry_headers(log.read_bytes()))


def _edit(path: Path, at: int, new: bytes) -> None:
    data = bytearray(path.read_bytes())
    data[at : at + len(new)] = new
    path.write_bytes(bytes(data))


def _i32(n: int) -> bytes:
    return n.to_bytes(4, "big", signed=True)


def _i64(n: int) -> bytes:
    return n.to_bytes(8, "big", signed=True)


def _v2_crc(log: Path, h: EntryHeader) -> None:
    """The v2 batch's CRC-32C (over its attributes to its end) made right again after an edit."""
    data = log.read_bytes()
    _edit(log, h.position + 17, crc32c.crc32c(data[h.position + 21 : h.position + h.size]).to_bytes(4, "big"))


def _v1_crc(log: Path, h: EntryHeader) -> None:
    """The v1 message's CRC-32 (over its magic to its end) made right again after an edit."""
    data = log.read_bytes()
    _edit(log, h.position + 12, zlib.crc32(data[h.position + 16 : h.position + h.size]).to_bytes(4, "big"))


def _entry(log: Path, i: int, offset: int | None = None, position: int | None = None) -> None:
    """Index entry i (it names batch i + 1) made to name another offset or position."""
    index = log.with_suffix(".index")
    base = int(log.stem)
    if offset is not None:
        _edit(index, 8 * i, _i32(offset - base))
    if position is not None:
        _edit(index, 8 * i + 4, _i32(position))


def _renamed(log: Path, base: int) -> Path:
    """The segment's files named after another base offset."""
    for suffix in (".log", ".index", ".timeindex"):
        log.with_suffix(suffix).rename(log.with_name(f"{base:020d}{suffix}"))
    return log.with_name(f"{base:020d}.log")


def _base_goes_back(tmp: Path) -> tuple[Path, int]:
    log, h = _written(tmp, V2)
    _edit(log, h[MIDDLE].position, _i64(h[MIDDLE - 1].offset))  # the base offset: no CRC covers it
    return log, h[MIDDLE].position


def _last_below_base(tmp: Path) -> tuple[Path, int]:
    log, h = _written(tmp, V2)
    _edit(log, h[MIDDLE].position + 23, _i32(-1))  # lastOffsetDelta
    _v2_crc(log, h[MIDDLE])
    return log, h[MIDDLE].position


def _past_the_base_s_reach(tmp: Path) -> tuple[Path, int]:
    log, h = _written(tmp, V2)
    _edit(log, h[-1].position, _i64(2**31))
    return log, h[-1].position


def _magic(tmp: Path) -> tuple[Path, int]:
    log, h = _written(tmp, V2)
    _edit(log, h[MIDDLE].position + 16, bytes([3]))  # the magic byte: no v2 CRC covers it
    return log, h[MIDDLE].position


def _v2_codec(tmp: Path) -> tuple[Path, int]:
    log, h = _written(tmp, V2)
    _edit(log, h[MIDDLE].position + 22, bytes([5]))  # the attributes' low byte: codec id 5
    _v2_crc(log, h[MIDDLE])
    return log, h[MIDDLE].position


def _v1_codec(tmp: Path) -> tuple[Path, int]:
    log, h = _written(tmp, V1_MESSAGES, V2)
    _edit(log, h[2].position + 17, bytes([4]))  # zstd, which no v1 message may name
    _v1_crc(log, h[2])
    return log, h[2].position


def _wrapper_unreadable(tmp: Path) -> tuple[Path, int]:
    log, h = _written(tmp, V1_WRAPPERS, V2)
    w = h[2]
    data = log.read_bytes()
    key_length = int.from_bytes(data[w.position + 26 : w.position + 30], "big", signed=True)
    value_at = w.position + 34 + max(key_length, 0)
    _edit(log, value_at, bytes(w.position + w.size - value_at))  # the gzip stream, zeroed
    _v1_crc(log, w)
    return log, w.position


def _first_below_name(tmp: Path) -> tuple[Path, int]:
    log, h = _written(tmp, V2, first=10)
    return _renamed(log, 11), h[0].position


def _first_above_name(tmp: Path) -> tuple[Path, int]:
    log, h = _written(tmp, V2, first=10)
    return _renamed(log, 9), h[0].position


def _entry_off_a_batch_start(tmp: Path) -> tuple[Path, int]:
    log, h = _written(tmp, V2)
    _entry(log, MIDDLE - 1, position=h[MIDDLE].position - 1)
    return log, h[MIDDLE].position


def _entry_in_the_batch_before(tmp: Path) -> tuple[Path, int]:
    """An offset at or above its batch's first, yet held by the batch before: the batch reaches back into it."""
    log, h = _written(tmp, V2)
    _edit(log, h[MIDDLE].position, _i64(h[MIDDLE - 1].offset + 1))
    _entry(log, MIDDLE - 2, offset=h[MIDDLE - 1].offset)  # the entry before names its batch's first offset,
    _entry(log, MIDDLE - 1, offset=h[MIDDLE - 1].offset + 1)  # so that this one, the next batch's, follows it
    return log, h[MIDDLE].position


def _entry_below_its_batch(tmp: Path) -> tuple[Path, int]:
    log, h = _written(tmp, replace(V2, gaps={MIDDLE: 5}))  # offsets a compaction removed
    _entry(log, MIDDLE - 1, offset=h[MIDDLE].offset - 1)
    return log, h[MIDDLE].position


def _entry_not_above_the_next(tmp: Path) -> tuple[Path, int]:
    log, h = _written(tmp, V2)
    _entry(log, MIDDLE - 1, offset=h[MIDDLE + 1].last_offset)  # past its batch (allowed), as far as the next
    return log, h[MIDDLE].position


class Case(NamedTuple):
    build: Callable[[Path], tuple[Path, int]]  # the segment's .log, and where the batch the kernel must not take is
    bound: str | None  # the field of the lens's declaration the kernel declines it by; None: the lens keeps it back


CASES: dict[Kind, dict[str, Case]] = {
    OFFSET_NOT_INCREASING: {"base offset goes back": Case(_base_goes_back, "increasing"),
                            "last offset below the base": Case(_last_below_base, "increasing")},
    OFFSET_OVERFLOW: {"past the base's reach": Case(_past_the_base_s_reach, "max_relative_offset")},
    UNKNOWN_MAGIC: {"magic 3": Case(_magic, "codecs")},
    UNKNOWN_CODEC: {"v2 codec 5": Case(_v2_codec, "codecs"),
                    "v1 zstd": Case(_v1_codec, None)},  # its view has no base offset: no run's
    LEGACY_WRAPPER_UNREADABLE: {"gzip stream zeroed": Case(_wrapper_unreadable, None)},
    FIRST_OFFSET_BELOW_NAME: {"named above": Case(_first_below_name, None)},  # a first batch: never offered
    FIRST_OFFSET_ABOVE_NAME: {"named below": Case(_first_above_name, None)},
    INDEX_WRONG_POSITION: {"off a batch start": Case(_entry_off_a_batch_start, "at_batch_start"),
                           "in the batch before": Case(_entry_in_the_batch_before, "after_previous_batch"),
                           "below its batch": Case(_entry_below_its_batch, "within_batch")},
    INDEX_NOT_INCREASING: {"as far as the next": Case(_entry_not_above_the_next, "increasing")},
}

# Every declared kind with each of its cases; a kind without one is a case of None, which fails.
GUARDED = [(lens, kind, name)
           for lens, (module, _, _) in LENSES.items() for kind in module.PER_BATCH
           for name in CASES.get(kind) or [None]]
IDS = [f"{kind.name}-{name}" for _, kind, name in GUARDED]


def test_every_case_is_of_a_declared_kind():
    assert set(CASES) == {kind for module, _, _ in LENSES.values() for kind in module.PER_BATCH}


class _Watch:
    """The kernel, noting the positions of the batches each of plain_run and index_run took; with `relax`,
    a kernel that ignores one bound of the declaration it is handed."""

    def __init__(self, real: kernel.Kernel, relax: str | None = None) -> None:
        self.real, self.relax = real, relax
        self.took: dict[str, set[int]] = {"plain_run": set(), "index_run": set()}
        self.calls = 0

    def __getattr__(self, name):
        return getattr(self.real, name)

    def _bounds(self, bounds):
        if self.relax is None or self.relax not in bounds._fields:
            return bounds
        loose = (0xFF,) * 64 if self.relax == "codecs" else 2**63 - 1 if self.relax == "max_relative_offset" else False
        return bounds._replace(**{self.relax: loose})

    def plain_run(self, views, base, prev_last, epoch, bounds):
        self.calls += 1
        summary = self.real.plain_run(views, base, prev_last, epoch, self._bounds(bounds))
        if summary is not None:
            self.took["plain_run"].update(v.position for v in views)
        return summary

    def index_run(self, views, index, entry, entries, base, prev_last, bounds):
        self.calls += 1
        answer = self.real.index_run(views, index, entry, entries, base, prev_last, self._bounds(bounds))
        self.took["index_run"].update(v.position for v in views[: answer[0]])
        return answer


def _report(log: Path) -> dict:
    with Segment(log, int(log.stem)) as seg:
        return check_segment(seg, active=False, deep=True).to_dict()


def _both_ways(monkeypatch, log: Path, watch: _Watch) -> tuple[dict, dict]:
    with monkeypatch.context() as m:
        m.setattr(kernel, "KERNEL", watch)
        compiled = _report(log)
    with kernel.pure():
        reference = _report(log)
    return compiled, reference


@pytest.mark.parametrize(("lens", "kind", "case"), GUARDED, ids=IDS)
def test_the_kernel_declines_what_the_lens_reports(fast, tmp_path, monkeypatch, lens, kind, case):
    assert case is not None, (f"the {lens} lens reports {kind.name} batch by batch and no case shows the kernel "
                              f"declining it: add one to CASES")
    log, damaged = CASES[kind][case].build(tmp_path)
    watch = _Watch(fast)
    compiled, reference = _both_ways(monkeypatch, log, watch)
    assert compiled == reference
    assert kind.name in [f["name"] for f in compiled["findings"]]
    assert damaged not in watch.took[LENSES[lens][2]]
    assert watch.calls, "the kernel was not asked: the case shows nothing of it"


BOUNDED = [(kind, case) for _, kind, case in GUARDED if case is not None and CASES[kind][case].bound is not None]


@pytest.mark.parametrize(("kind", "case"), BOUNDED, ids=[f"{kind.name}-{case}" for kind, case in BOUNDED])
def test_a_kernel_that_forgot_the_bound_would_be_caught(fast, tmp_path, monkeypatch, kind, case):
    """The cases are not vacuous: each bound is what keeps the kernel from its case's batch."""
    log, damaged = CASES[kind][case].build(tmp_path)
    watch = _Watch(fast, relax=CASES[kind][case].bound)
    compiled, reference = _both_ways(monkeypatch, log, watch)
    assert kind.name in [f["name"] for f in reference["findings"]]
    assert damaged in watch.took["plain_run"] | watch.took["index_run"]
    assert compiled != reference
