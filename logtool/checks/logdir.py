"""Log-dir checks: meta.properties, offset checkpoints, and children that are not partitions."""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from logtool.checks.catalog import Finding, finding
from logtool.format.meta import MetaError, offset_checkpoint, properties
from logtool.store.layout import (CLUSTER_METADATA, IGNORED_LOG_DIR_CHILDREN, LOG_DIR_FILES, OFFSET_CHECKPOINTS,
                                  parse_partition_dir)


@dataclass(slots=True)
class LogDirReport:
    path: str
    meta: dict[str, str] = field(default_factory=dict)
    checkpoints: dict[str, int] = field(default_factory=dict)  # checkpoint file -> entries
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
    for name in sorted(os.listdir(path)):
        child = path / name
        if child.is_dir():
            if name in IGNORED_LOG_DIR_CHILDREN:
                continue
            if parse_partition_dir(name) is not None or name == CLUSTER_METADATA:
                rep.partition_dirs.append(child)
            else:
                rep.findings.append(finding("NOT_KAFKA", f"directory {name!r} in the log dir is not a partition "
                                            f"directory; the broker refuses to start with it there", name))
        elif name == "meta.properties":
            _check_meta(child, rep)
        elif name in OFFSET_CHECKPOINTS:
            _check_checkpoint(child, rep)
        elif name == ".kafka_cleanshutdown":
            rep.clean_shutdown_marker = True
        elif name not in LOG_DIR_FILES and not name.endswith(".tmp"):
            rep.findings.append(finding("UNKNOWN_FILE", f"{name} is not a file Kafka writes in a log dir", name))
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
    version = rep.meta.get("version")
    required = {"1": ("node.id", "cluster.id"), "0": ()}.get(version or "")
    if required is None:
        rep.findings.append(finding("META_PROPERTIES_INVALID", f"unknown or missing version {version!r}", path.name))
        return
    missing = [k for k in required if k not in rep.meta]
    if missing:
        rep.findings.append(finding("META_PROPERTIES_INVALID", f"version {version} requires {', '.join(missing)}", path.name))


def _check_checkpoint(path: Path, rep: LogDirReport) -> None:
    text = _read(path, rep)
    if text is None:
        return
    try:
        rep.checkpoints[path.name] = len(offset_checkpoint(text))
    except MetaError as e:
        rep.findings.append(finding("CHECKPOINT_INVALID", str(e), path.name))
