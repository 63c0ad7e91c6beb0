"""Seed files of every kind, taken from the shared fixtures (Kafka-written and real broker data) and from
fixtures/sample-logdir, with the directory each is placed in when fuzzed.

A partition-level file (a `.log` of each message format and codec, the indexes, producer snapshots,
leader-epoch-checkpoint, partition.metadata) is fuzzed inside a copy of its own partition dir, so the
other files of the partition stay consistent with the seed. A log-dir-level file (meta.properties, the
offset checkpoints) is fuzzed inside a copy of fixtures/sample-logdir.

Nothing here imports logtool: `.log` files are classified by a small reader of their own.
"""
from __future__ import annotations

import hashlib
import os
import random
import struct
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = (ROOT.parent / "shared" / "fixtures").resolve()
SAMPLE = ROOT / "fixtures" / "sample-logdir"
SOURCES = (("kafka-written", SHARED / "kafka-written"), ("real", SHARED / "real"),
           ("real-more", SHARED / "real-more"), ("sample", SAMPLE))

OFFSET_CHECKPOINTS = ("recovery-point-offset-checkpoint", "replication-offset-checkpoint",
                      "log-start-offset-checkpoint", "cleaner-offset-checkpoint")
LOGDIR_KINDS = ("meta.properties", *OFFSET_CHECKPOINTS)
TEXT_KINDS = {"leader-epoch-checkpoint", "partition.metadata", *LOGDIR_KINDS}

# Keep every input small enough that one run of `verify --deep` takes well under a second.
MAX_HOST_BYTES = 1_600_000
MAX_SEED_BYTES = 1_200_000
PER_KIND = 40

CODECS = ("none", "gzip", "snappy", "lz4", "zstd")


@dataclass(frozen=True)
class Seed:
    kind: str  # "log.v2.zstd", "index", "meta.properties", ...
    path: Path  # the fixture file (never written)
    label: str  # where it comes from, relative to the fixture sources ("kafka-written/v2-lz4/metrics-1/...")
    host: Path  # the directory copied around it: its partition dir, or the sample log dir
    scope: str  # "partition" or "logdir"

    @property
    def is_log(self) -> bool:
        return self.kind.startswith("log.")

    @property
    def is_text(self) -> bool:
        return self.kind in TEXT_KINDS


def log_variant(data: bytes, partition_name: str) -> str | None:
    """"log.v<magic>.<codec>", "log.v2.txn" (control batches), "log.kraft" (__cluster_metadata), or None when
    the file holds no whole batch."""
    pos, first, control = 0, None, False
    while pos + 22 <= len(data):
        length = struct.unpack_from(">i", data, pos + 8)[0]
        if length < 14 or pos + 12 + length > len(data):
            break
        magic = data[pos + 16]
        if magic == 2:
            attributes = struct.unpack_from(">h", data, pos + 21)[0]
            control |= bool(attributes & 0x20)
        elif magic in (0, 1):
            attributes = data[pos + 17]
        else:
            break
        if first is None or (first[1] == 0 and attributes & 7):
            first = (magic, attributes & 7)
        pos += 12 + length
    if first is None:
        return None
    if partition_name.startswith("__cluster_metadata"):
        return "log.kraft"
    if control:
        return "log.v2.txn"
    magic, codec = first
    return f"log.v{magic}.{CODECS[codec] if codec < len(CODECS) else codec}"


def _kind_of(name: str) -> str | None:
    if name.endswith(".log"):
        return "log"
    for suffix in ("index", "timeindex", "txnindex", "snapshot"):
        if name.endswith("." + suffix) and name.split(".")[0].isdigit():
            return suffix
    if name in ("leader-epoch-checkpoint", "partition.metadata", *LOGDIR_KINDS):
        return name
    return None


def _dir_bytes(path: Path) -> int:
    return sum(os.stat(path / n).st_size for n in os.listdir(path) if (path / n).is_file())


def _candidates() -> list[Seed]:
    out: list[Seed] = []
    for source, base in SOURCES:
        if not base.exists():
            continue
        for dirpath, dirnames, filenames in os.walk(base):
            dirnames.sort()
            d = Path(dirpath)
            names = sorted(filenames)
            is_partition = any(n.endswith(".log") for n in names)
            small = is_partition and _dir_bytes(d) <= MAX_HOST_BYTES
            for n in names:
                seed = _seed(d / n, f"{source}/{(d / n).relative_to(base)}", small)
                if seed is not None:
                    out.append(seed)
    return out


def _seed(path: Path, label: str, small: bool) -> Seed | None:
    """The seed a file makes, None when it makes none: a log dir's file of a kind the fuzzer mutates, or a
    partition's (of a `small` partition) that is not empty, unless empty is a text kind's content."""
    kind = _kind_of(path.name)
    if kind is None:
        return None
    size = os.stat(path).st_size
    if kind in LOGDIR_KINDS:
        return Seed(kind, path, label, SAMPLE, "logdir") if size <= MAX_SEED_BYTES else None
    if not small or size > MAX_SEED_BYTES:
        return None
    if kind == "log":
        if size == 0:
            return None
        kind = log_variant(path.read_bytes(), path.parent.name)
        if kind is None:
            return None
    elif size == 0 and kind not in TEXT_KINDS:
        return None
    return Seed(kind, path, label, path.parent, "partition")


@lru_cache(maxsize=1)
def all_seeds() -> dict[str, tuple[Seed, ...]]:
    """The seeds by kind: at most PER_KIND of each, distinct by content; Kafka-written and sample files
    first (their provenance is exact), then real broker files, sampled with a fixed seed."""
    by_kind: dict[str, list[Seed]] = {}
    seen: set[tuple[str, str]] = set()
    for s in _candidates():
        digest = hashlib.sha1(s.path.read_bytes()).hexdigest()
        if (s.kind, digest) in seen:
            continue
        seen.add((s.kind, digest))
        by_kind.setdefault(s.kind, []).append(s)
    out = {}
    for kind, seeds in sorted(by_kind.items()):
        preferred = [s for s in seeds if not s.label.startswith("real")]
        real = [s for s in seeds if s.label.startswith("real")]
        room = max(PER_KIND - len(preferred), PER_KIND // 2)
        if len(real) > room:
            real = sorted(random.Random(kind).sample(real, room), key=lambda s: s.label)
        out[kind] = tuple(preferred[:PER_KIND] + real)
    return out


def kinds() -> list[str]:
    return sorted(all_seeds())
