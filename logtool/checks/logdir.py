"""Log-dir checks: meta.properties, offset checkpoints, and children that are not partitions."""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from logtool.findings import Finding, finding
from logtool.format.meta import NODE_ID_FIELD, MetaError, meta_identity, offset_checkpoint, properties
from logtool.store.layout import (CLUSTER_METADATA, IGNORED_LOG_DIR_CHILDREN, LOG_DIR_FILES, OFFSET_CHECKPOINTS,
                                  parse_partition_dir)


@dataclass(slots=True)
class LogDirReport:
    path: str
    meta: dict[str, str] = field(default_factory=dict)
    checkpoints: dict[str, int] = field(default_factory=dict)  # checkpoint file -> entries
    # checkpoint file -> {(topic, partition): offset}, for the checks against the partitions (not printed)
    offsets: dict[str, dict[tuple[str, int], int]] = field(default_factory=dict)
    clean_shutdown_marker: bool = False
    partition_dirs: list[Path] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"path": self.path, "meta": self.meta, "checkpoints": self.checkpoints,
                "clean_shutdown_marker": self.clean_shutdown_marker,
                "findings": [f.to_dict() for f in self.findings]}


def check_log_dir(path: Path) -> LogDirReport:
    """Inspect the log-dir root and list its partition dirs. Raises OSError when it cannot be listed."""
    rep = LogDirReport(str(path))
    names = sorted(os.listdir(path))
    present: set[tuple[str, int]] = set()  # the partitions that have a directory here
    for name in names:
        child = path / name
        if child.is_symlink():
            try:
                target = os.readlink(child)
            except OSError as e:
                target = f"(unreadable link: {e.strerror or e})"
            rep.findings.append(finding("SYMLINK", f"{name} is a symlink to {target}", name))
        if child.is_dir():
            if name in IGNORED_LOG_DIR_CHILDREN:
                continue
            if (parsed := parse_partition_dir(name)) is not None or name == CLUSTER_METADATA:
                rep.partition_dirs.append(child)
                if parsed is not None:
                    present.add((parsed.topic, parsed.partition))
            else:
                rep.findings.append(finding("NOT_KAFKA", f"directory {name!r} in the log dir is not a partition "
                                            f"directory; the broker refuses to start with it there", name))
        elif name == "meta.properties":
            _check_meta(child, rep)
        elif name in OFFSET_CHECKPOINTS:
            _check_checkpoint(child, rep)
        elif name == ".kafka_cleanshutdown":
            rep.clean_shutdown_marker = True  # empty before Kafka 3.7, JSON since: only its presence matters
        elif name.endswith(".tmp") and name[:-4] in LOG_DIR_FILES:
            rep.findings.append(finding("TMP_LEFTOVER", f"an interrupted rewrite of {name[:-4]}", name))
        elif name not in LOG_DIR_FILES:
            rep.findings.append(finding("UNKNOWN_FILE", f"{name} is not a file Kafka writes in a log dir", name))
    if "meta.properties" not in names:
        rep.findings.append(finding("META_PROPERTIES_MISSING", "the log dir has no meta.properties", "meta.properties"))
    for file, entries in rep.offsets.items():
        for key, offset in sorted(entries.items()):
            if key not in present:
                rep.findings.append(finding("CHECKPOINT_UNKNOWN_PARTITION", f"{key[0]}-{key[1]} (offset {offset}) has "
                                            "no directory in this log dir", file, offset=offset))
    return rep


def _read(path: Path, rep: LogDirReport) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        rep.findings.append(finding("UNREADABLE", f"cannot read {path.name}: {getattr(e, 'strerror', None) or e}", path.name))
        return None


def _check_meta(path: Path, rep: LogDirReport) -> None:
    text = _read(path, rep)
    if text is None:
        return
    rep.meta = properties(text)
    try:
        version = meta_identity(rep.meta).version
    except MetaError as e:
        rep.findings.append(finding("META_PROPERTIES_INVALID", str(e), path.name))
        return
    ignored = NODE_ID_FIELD[1 - version]
    if ignored in rep.meta:
        rep.findings.append(finding("META_PROPERTIES_INCONSISTENT", f"version {version} reads {NODE_ID_FIELD[version]}, "
                                    f"not {ignored}={rep.meta[ignored]}", path.name))


# What the broker does when it cannot read each checkpoint, besides reporting the log dir as failed.
_UNREADABLE_CHECKPOINT = {
    "recovery-point-offset-checkpoint": "recovery points reset to 0: every partition is recovered in full",
    "log-start-offset-checkpoint": "log start offsets reset to the first segments: records deleted with "
                                   "DeleteRecords become readable again",
    "replication-offset-checkpoint": "high watermarks are lost",
    "cleaner-offset-checkpoint": "the cleaner compacts every log from its start again",
}


def _check_checkpoint(path: Path, rep: LogDirReport) -> None:
    text = _read(path, rep)
    if text is None:
        return
    try:
        rep.offsets[path.name] = offset_checkpoint(text)
    except MetaError as e:
        rep.findings.append(finding("CHECKPOINT_INVALID", f"{e}; {_UNREADABLE_CHECKPOINT[path.name]}", path.name))
        return
    rep.checkpoints[path.name] = len(rep.offsets[path.name])
