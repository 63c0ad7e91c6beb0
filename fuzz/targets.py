"""What each input is fed to: `logtool.cli.main` with the argv of a read-only command, or a parser directly.

A target is `run(ctx) -> dict`, called in the worker process. `ctx` has `logdir` and `partition` (the
copies the mutated file lies in), `file` (the mutated file), `kind`, `data` (its bytes), `argv` (CLI
targets) and `rng` (a `random.Random` for the target's own choices). It returns what happened: for the CLI
`{"exit": code}`, for a parser `{"expected": n}` (how many documented "bad input" errors it raised). Any
exception that escapes is a defect; the harness records it.

Direct parser calls accept the errors their modules document for bad input: `RecordError` (records,
kraft; it wraps `CodecError` and `VarintError`), `MetaError` (meta.py). The framing reader
(`batch.read_entry`) and the index readers (index.py) are documented never to raise.
"""
from __future__ import annotations

import io
import os
import random
import sys
from dataclasses import dataclass
from pathlib import Path
from collections.abc import Callable

from fuzz.seeds import LOGDIR_KINDS

# CLI targets: (argv builder, whether it applies to log-dir-level kinds). `L`: the log dir, `P`: the partition dir.
Argv = Callable[[dict, random.Random], list[str]]


def _fmt(rng: random.Random, choices=("text", "json", "jsonl")) -> list[str]:
    return ["--format", rng.choice(choices)]


def _offset(ctx: dict, rng: random.Random) -> str:
    hi = max(ctx.get("max_base", 0), 0) + 400
    return str(rng.choice((rng.randint(0, hi), rng.randint(0, hi), 0, -1, 2**31 - 1, 2**31, 2**63 - 1, 2**63,
                           -(2**63))))


def _timestamp(_ctx: dict, rng: random.Random) -> str:
    return str(rng.choice((rng.randint(1_600_000_000_000, 1_800_000_000_000), rng.randint(0, 2**41), 0, -1, 2**63 - 1,
                           -(2**63), "2023-11-14T22:13:20Z", "1970-01-01T00:00:00", "9999-12-31T23:59:59Z")))


def _dump_extra(rng: random.Random, ctx: dict) -> list[str]:
    extra: list[str] = []
    r = rng.random()
    if r < 0.15:
        extra += ["--from-offset", str(rng.randint(0, max(ctx.get("max_base", 0), 0) + 200))]
    elif r < 0.25:
        extra += ["--from-time", _timestamp(ctx, rng).lstrip("-") or "0"]
    if rng.random() < 0.15:
        extra.append("--batches-only")
    if rng.random() < 0.15:
        extra += ["--value-decoder", rng.choice(("hex", "base64", "json", "none", "utf8"))]
    return extra


CLI: dict[str, tuple[Argv, bool]] = {
    "scan": (lambda c, r: ["scan", c["logdir"], *_fmt(r)], True),
    "verify": (lambda c, r: ["verify", c["logdir"], *_fmt(r)], True),
    "verify --deep": (lambda c, r: ["verify", "--deep", c["logdir"], *_fmt(r)], True),
    "index verify": (lambda c, r: ["index", "verify", c["logdir"], *_fmt(r)], True),
    "index rebuild": (lambda c, r: ["index", "rebuild", c["logdir"], *_fmt(r, ("text", "json"))], True),
    "truncate": (lambda c, r: ["truncate", c["logdir"], *r.choice(([], [], ["--strict"], ["--excise"])),
                               *_fmt(r, ("text", "json"))], True),
    "find --offset": (lambda c, r: ["find", c["partition"], "--offset", _offset(c, r), *_fmt(r, ("text", "json"))],
                      False),
    "find --timestamp": (lambda c, r: ["find", c["partition"], "--timestamp", _timestamp(c, r),
                                       *_fmt(r, ("text", "json"))], False),
    "dump": (lambda c, r: ["dump", c["partition"], *r.choice(([], ["--print-data"])), *_dump_extra(r, c)], False),
    "dump --salvage": (lambda c, r: ["dump", "--salvage", c["partition"], *r.choice(([], ["--print-data"])),
                                     *_dump_extra(r, c)], False),
    "dump jsonl": (lambda c, r: ["dump", c["partition"], "--format", "jsonl", *_dump_extra(r, c)], False),
    # The mutated file itself: a segment as kafka-dump-log reads it, an index, snapshot or other side file.
    "dump file": (lambda c, r: ["dump", c["file"], *_fmt(r), *r.choice(([], ["--print-data"], ["--batches-only"],
                                                                        ["--index-sanity-check"],
                                                                        ["--verify-index-only"]))], False),
    "dump --salvage jsonl": (lambda c, r: ["dump", "--salvage", c["partition"], "--format", "jsonl",
                                           *_dump_extra(r, c)], False),
}


def run_cli(ctx: dict) -> dict:
    """`logtool.cli.main(argv)` as the console script runs it; its exit code."""
    from logtool import cli

    try:
        cli.main(ctx["argv"])
    except SystemExit as e:
        code = e.code
        if code is None:
            code = 0
        elif not isinstance(code, int):
            print(code, file=sys.stderr)
            code = 1
        return {"exit": code}
    return {"exit": 0, "note": "main returned without sys.exit"}


# --- parser targets ------------------------------------------------------------------------------------------

def _views(buf):
    """Every whole entry of the buffer by `read_entry`, skipping past CRC failures (a fixed CRC makes any
    content reachable, so the record parsers are held to every whole batch)."""
    from logtool.format.batch import BatchView, FrameStop, read_entry

    pos, end = 0, len(buf)
    while True:
        e = read_entry(buf, pos, end)
        if e is None or isinstance(e, FrameStop):
            return
        assert isinstance(e, BatchView), f"read_entry returned {type(e).__name__}"
        assert e.size >= 14 and e.position == pos, f"read_entry at {pos}: position {e.position}, size {e.size}"
        yield e
        pos += e.size


def parse_batch(ctx: dict) -> dict:
    """`batch.read_entry` over the whole buffer, with every property of each view."""
    buf = ctx["data"]
    n = 0
    for v in _views(buf):
        _ = (v.is_legacy, v.is_valid, v.codec_name, v.timestamp_type, v.is_transactional, v.is_control,
             v.has_delete_horizon, v.last_sequence)  # every property computed: one that raises is a defect
        n += 1
    # read_entry at every position of the first bytes as well: a walker may resume anywhere (salvage).
    from logtool.format.batch import legacy_value, read_entry, BatchView

    for pos in range(0, min(len(buf), 512)):
        e = read_entry(buf, pos, len(buf))
        if isinstance(e, BatchView) and e.is_legacy:
            legacy_value(buf, e)
    return {"batches": n}


def parse_records(ctx: dict) -> dict:
    """`records.iter_records` (and `parse_control`, `first_legacy_offset`) on each whole batch; then the
    compiled kernel's answers against this reference's (`kernel_against_reference`), and the internal
    topics' decoders on the records' keys and values (`internal_topic_decoders`). Both ride on this target
    rather than on one of their own: a new target would renumber every input, and the regression tests
    name theirs by number."""
    from logtool.format.records import RecordError, first_legacy_offset, iter_records, parse_control

    buf, expected, records = ctx["data"], 0, 0
    decode = internal_topic_decoders(ctx["rng"])
    for v in _views(buf):
        try:
            for rec in iter_records(buf, v):
                records += 1
                decode(rec)
                if v.is_control:
                    try:
                        parse_control(rec)
                    except RecordError:
                        expected += 1
        except RecordError:
            expected += 1
        if v.is_legacy and v.codec:
            try:
                first_legacy_offset(buf, v)
            except (RecordError, StopIteration):
                expected += 1
    kernel_against_reference(ctx)
    return {"expected": expected, "records": records}


def internal_topic_decoders(rng: random.Random, limit: int = 64) -> Callable:
    """What decodes a record's key and value as each internal topic's decoder would, and a mutated copy of
    them: every outcome is text and JSON objects (Kafka's words where the bytes do not decode), never an
    exception. The first `limit` records only: each decodes three times over."""
    from fuzz.mutate import BYTE_MUTATIONS
    from logtool.reads.internal_topics import BY_NAME
    from logtool.render.dump_json import _dumps

    decoders = [d() for d in BY_NAME.values()]
    seen = 0

    def decode(rec) -> None:
        nonlocal seen
        seen += 1
        if seen > limit:
            return
        inputs = [(rec.key, rec.value)]
        for data in (rec.key, rec.value):
            if data:
                d = bytearray(data)
                rng.choice(BYTE_MUTATIONS)(d, rng, {})
                inputs.append((bytes(d), rec.value) if data is rec.key else (rec.key, bytes(d)))
        for d in decoders:
            for key, value in inputs:
                texts = d.texts(rec.offset, key, value)
                assert all(t is None or isinstance(t, str) for t in texts)
                _dumps(d.objects(rec.offset, key, value))  # (key, value, schema name)

    return decode


def parse_kraft(ctx: dict) -> dict:
    """`kraft.control_value` on every control record of the file, on a mutated copy of each value, and on
    slices of the file as values of each KRaft control type."""
    from logtool.format import kraft
    from logtool.format.records import RecordError, iter_records, parse_control

    buf, rng, expected, decoded = ctx["data"], ctx["rng"], 0, 0

    def feed(type_id: int, value: bytes | None) -> None:
        nonlocal expected, decoded
        try:
            kraft.control_value(type_id, value)
            decoded += 1
        except RecordError:
            expected += 1

    values: list[tuple[int, bytes | None]] = []
    for v in _views(buf):
        if not v.is_control:
            continue
        try:
            for rec in iter_records(buf, v):
                try:
                    values.append((parse_control(rec).type_id, rec.value))
                except RecordError:
                    expected += 1
        except RecordError:
            expected += 1
    for type_id, value in values:
        feed(type_id, value)
        if value:
            from fuzz.mutate import BYTE_MUTATIONS

            d = bytearray(value)
            rng.choice(BYTE_MUTATIONS)(d, rng, {})
            feed(type_id, bytes(d))
    for _ in range(8):
        a = rng.randrange(len(buf) + 1)
        feed(rng.choice((2, 3, 4, 5, 6)), bytes(buf[a : a + rng.choice((0, 1, 4, 16, 64, 300))]))
    return {"expected": expected, "decoded": decoded}


def parse_index(ctx: dict) -> dict:
    """The index readers and Kafka's sanity checks of index.py (documented never to raise)."""
    from logtool.format import index

    buf, kind = ctx["data"], ctx["kind"]
    base = int(Path(ctx["file"]).name.split(".")[0])
    for b in (base, 0, 2**63 - 1):
        if kind == "index":
            for _ in index.offset_entries(buf, b):
                pass
            index.offset_index_sanity(buf, b)
            index.zero_tail_start(buf, index.OFFSET_ENTRY.size)
        elif kind == "timeindex":
            for _ in index.time_entries(buf, b):
                pass
            index.time_index_sanity(buf, b)
            index.zero_tail_start(buf, index.TIME_ENTRY.size)
        else:
            for _ in index.aborted_txns(buf):
                pass
            index.zero_tail_start(buf, index.TXN_ENTRY.size)
    return {}


def _text(data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("utf-8", errors="replace")


def parse_meta(ctx: dict) -> dict:
    """The metadata parsers of meta.py (`MetaError` is the documented bad-input outcome)."""
    from logtool.format import meta

    data, kind, expected = ctx["data"], ctx["kind"], 0
    calls: list[Callable[[], object]]
    text = _text(data)
    if kind == "snapshot":
        calls = [lambda: meta.producer_snapshot(data)]
    elif kind == "leader-epoch-checkpoint":
        calls = [lambda: meta.leader_epochs(text)]
    elif kind == "partition.metadata":
        calls = [lambda: meta.partition_metadata(text)]
    elif kind == "meta.properties":
        calls = [lambda: meta.meta_identity(meta.properties(text)), lambda: meta.properties(text)]
    else:
        calls = [lambda: meta.offset_checkpoint(text),
                 lambda: meta.parse_checkpoint(text, (meta.TEXT, meta.INT, meta.LONG))]
    for call in calls:
        try:
            call()
        except meta.MetaError:
            expected += 1
    return {"expected": expected}


def kernel_against_reference(ctx: dict) -> dict:
    """The compiled kernel against the pure-Python reference on the mutated segment: the same walk (every
    batch, the valid prefix, the stop), the same deep report, and `dump`'s text and JSON Lines the same
    bytes. A difference is a defect (AssertionError); so is a kernel that is not there to compare."""
    from logtool.checks.segment import check_segment
    from logtool.format import kernel
    from logtool.reads import decoders
    from logtool.reads.ranges import Stats, plan_range, read_range
    from logtool.render import dump_json, dump_text
    from logtool.store.layout import classify_file
    from logtool.store.partition import Partition
    from logtool.store.segment import Segment, WalkOutcome

    if kernel.KERNEL is None:
        raise AssertionError(f"no kernel to compare: {kernel.WHY_PURE}")
    path = Path(ctx["file"])
    base = classify_file(path.name).base_offset or 0

    def both() -> tuple:
        walk = WalkOutcome(0)
        with Segment(path, base) as seg:
            views = list(seg.walk(walk))
            report = check_segment(seg, active=True, deep=True).to_dict()
        part = Partition.from_dir(Path(ctx["partition"]))
        text, err, lines = io.StringIO(), io.StringIO(), io.StringIO()
        string, utf8 = decoders.get("string"), decoders.get("utf8")
        try:
            dump_text.render(read_range(part, plan_range(part), Stats(), past_crc=True), text, string, string, err)
            dump_json.write_lines(read_range(part, plan_range(part), Stats()), lines, utf8, utf8)
        finally:
            part.close()
        return (views, walk.valid_bytes, walk.batches, walk.stop, report, text.getvalue(), err.getvalue(),
                lines.getvalue())

    compiled = both()
    with kernel.pure():
        reference = both()
    for name, a, b in zip(("batches", "valid bytes", "batch count", "stop", "deep report", "dump text", "dump stderr",
                           "dump jsonl"), compiled, reference):
        assert a == b, f"kernel and reference differ in the {name}"
    return {"expected": 0, "batches": compiled[2]}


@dataclass(frozen=True)
class ParserTarget:
    run: Callable[[dict], dict]
    applies: Callable[[str], bool]


PARSERS: dict[str, ParserTarget] = {
    "parse:batch": ParserTarget(parse_batch, lambda k: k.startswith("log.")),
    "parse:records": ParserTarget(parse_records, lambda k: k.startswith("log.")),
    "parse:kraft": ParserTarget(parse_kraft, lambda k: k.startswith("log.")),
    "parse:index": ParserTarget(parse_index, lambda k: k in ("index", "timeindex", "txnindex")),
    "parse:meta": ParserTarget(parse_meta, lambda k: k in ("snapshot", "leader-epoch-checkpoint", "partition.metadata",
                                                             *LOGDIR_KINDS)),
}


def pairs(kinds: list[str]) -> list[tuple[str, str]]:
    """Every (file kind, target) pair that makes sense: commands on a partition dir only for partition-level
    files, parsers only for the kinds they read."""
    out = []
    for kind in kinds:
        logdir_kind = kind in LOGDIR_KINDS
        for name, (_argv, any_level) in CLI.items():
            if any_level or not logdir_kind:
                out.append((kind, name))
        for name, p in PARSERS.items():
            if p.applies(kind):
                out.append((kind, name))
    return out


def is_cli(target: str) -> bool:
    return target in CLI


def runner(target: str) -> Callable[[dict], dict]:
    if target in CLI:
        return run_cli
    if target in PARSERS:
        return PARSERS[target].run
    if target in EXTRA:
        return EXTRA[target]
    raise KeyError(target)


# Targets added at run time (the harness's own tests register deliberately broken ones here).
EXTRA: dict[str, Callable[[dict], dict]] = {}


def redirect_output(stdout_path: str, stderr_path: str) -> None:
    """Send the worker's stdout and stderr to files, as a shell redirection would (fds 1 and 2 included)."""
    for fd, path in ((1, stdout_path), (2, stderr_path)):
        f = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(f, fd)
        os.close(f)
    sys.stdout = io.TextIOWrapper(open(1, "wb", closefd=False), encoding="utf-8", errors="strict", line_buffering=False)
    sys.stderr = io.TextIOWrapper(open(2, "wb", closefd=False), encoding="utf-8", errors="backslashreplace",
                                  line_buffering=True)
