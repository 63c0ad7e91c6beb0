"""Log-dir checks: meta.properties, offset checkpoints, and children that are not partitions."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from logtool.findings import (
    CHECKPOINT_INVALID, CHECKPOINT_UNKNOWN_PARTITION, META_PROPERTIES_INCONSISTENT, META_PROPERTIES_INVALID,
    META_PROPERTIES_MISSING, NOT_KAFKA, SYMLINK, TMP_LEFTOVER, UNKNOWN_FILE, Finding, finding)
from logtool.format.meta import NODE_ID_FIELD, MetaError, meta_identity, offset_checkpoint, properties
from logtool.store.logdir import LogDir
from logtool.store.sidefile import SideFile
from logtool.checks.segment import check_records_file
from logtool.store.layout import (BOOTSTRAP_CHECKPOINT, CLUSTER_METADATA, IGNORED_LOG_DIR_CHILDREN, LOG_DIR_FILES,
                                  OFFSET_CHECKPOINTS, parse_partition_dir)


@dataclass(slots=True)
class LogDirReport:
    path: str
    meta: dict[str, str] = field(default_factory=dict)
    checkpoints: dict[str, int] = field(default_factory=dict)  # checkpoint file -> entries
    # checkpoint file -> {(topic, partition): offset}, for the checks against the partitions (not printed)
    offsets: dict[str, dict[tuple[str, int], int]] = field(default_factory=dict)
    clean_shutdown_marker: bool = False
    partition_dirs: list[str] = field(default_factory=list)  # the names of the partition dirs in it
    findings: list[Finding] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"path": self.path, "meta": self.meta, "checkpoints": self.checkpoints,
                "clean_shutdown_marker": self.clean_shutdown_marker,
                "findings": [f.to_dict() for f in self.findings]}


def check_log_dir(path: Path) -> LogDirReport:
    """Inspect the log-dir root and list its partition dirs. Raises OSError when it cannot be listed."""
    rep = LogDirReport(str(path))
    log_dir = LogDir.from_path(path)
    names = log_dir.names
    present: set[tuple[str, int]] = set()  # the partitions that have a directory here
    for name in names:
        if name in log_dir.symlinks:
            rep.findings.append(finding(SYMLINK, f"{name} is a symlink to {log_dir.symlinks[name]}", name))
        if name in log_dir.dirs:
            _check_child_dir(name, rep, present)
        else:
            _check_root_file(log_dir, name, rep)
    if "meta.properties" not in names:
        rep.findings.append(finding(META_PROPERTIES_MISSING, "the log dir has no meta.properties", "meta.properties"))
    for file, entries in rep.offsets.items():
        for key in sorted(key for key in entries if key not in present):  # (sorted: only the few it finds)
            offset = entries[key]
            rep.findings.append(finding(CHECKPOINT_UNKNOWN_PARTITION, f"{key[0]}-{key[1]} (offset {offset}) has "
                                        "no directory in this log dir", file, offset=offset))
    if CLUSTER_METADATA in log_dir.dirs:  # a KRaft node's: its partitions against its own metadata log
        # (imported here: the replay's modules are a twentieth of a command's start, and most log dirs hold none)
        from logtool.checks.logdir_metadata import check_against_metadata
        check_against_metadata(path, rep)
    return rep


def _check_child_dir(name: str, rep: LogDirReport, present: set[tuple[str, int]]) -> None:
    """A directory in the log dir: a partition's (listed, and its partition added to `present`), one the
    broker ignores, or one it refuses to start with."""
    if name in IGNORED_LOG_DIR_CHILDREN:
        return
    if (parsed := parse_partition_dir(name)) is not None or name == CLUSTER_METADATA:
        rep.partition_dirs.append(name)
        if parsed is not None:
            present.add((parsed.topic, parsed.partition))
    else:
        rep.findings.append(finding(NOT_KAFKA, f"directory {name!r} in the log dir is not a partition "
                                    f"directory; the broker refuses to start with it there", name))


def _check_root_file(log_dir: LogDir, name: str, rep: LogDirReport) -> None:
    """A file of the log dir's own: its metadata, its checkpoints, the marks Kafka leaves, or a stranger."""
    if name == "meta.properties":
        _check_meta(log_dir.side(name), rep)
    elif name in OFFSET_CHECKPOINTS:
        _check_checkpoint(log_dir.side(name), rep)
    elif name == BOOTSTRAP_CHECKPOINT:
        rep.findings += check_records_file(log_dir.path / name, deep=False)  # the metadata a KRaft node formats with
    elif name == ".kafka_cleanshutdown":
        rep.clean_shutdown_marker = True  # empty before Kafka 3.7, JSON since: only its presence matters
    elif name.endswith(".tmp") and name[:-4] in LOG_DIR_FILES:
        rep.findings.append(finding(TMP_LEFTOVER, f"an interrupted rewrite of {name[:-4]}", name))
    elif name not in LOG_DIR_FILES:
        rep.findings.append(finding(UNKNOWN_FILE, f"{name} is not a file Kafka writes in a log dir", name))


def side_text(side: SideFile, findings: list[Finding]) -> str | None:
    """A side file's text, or None with an UNREADABLE finding saying why."""
    text, problem = side.text()
    if problem is not None:
        findings.append(finding(side.problem_kind, f"cannot read {side.name}: {problem}", side.name))
    return text


def _check_meta(side: SideFile, rep: LogDirReport) -> None:
    text = side_text(side, rep.findings)
    if text is None:
        return
    rep.meta = properties(text)
    try:
        version = meta_identity(rep.meta).version
    except MetaError as e:
        rep.findings.append(finding(META_PROPERTIES_INVALID, str(e), side.name))
        return
    ignored = NODE_ID_FIELD[1 - version]
    if ignored in rep.meta:
        rep.findings.append(finding(META_PROPERTIES_INCONSISTENT, f"version {version} reads "
                                    f"{NODE_ID_FIELD[version]}, not {ignored}={rep.meta[ignored]}", side.name))


# What the broker does when it cannot read each checkpoint, besides reporting the log dir as failed.
_UNREADABLE_CHECKPOINT = {
    "recovery-point-offset-checkpoint": "recovery points reset to 0: every partition is recovered in full",
    "log-start-offset-checkpoint": "log start offsets reset to the first segments: records deleted with "
                                   "DeleteRecords become readable again",
    "replication-offset-checkpoint": "high watermarks are lost",
    "cleaner-offset-checkpoint": "the cleaner compacts every log from its start again",
}


def _check_checkpoint(side: SideFile, rep: LogDirReport) -> None:
    text = side_text(side, rep.findings)
    if text is None:
        return
    try:
        rep.offsets[side.name] = offset_checkpoint(text)
    except MetaError as e:
        rep.findings.append(finding(CHECKPOINT_INVALID, f"{e}; {_UNREADABLE_CHECKPOINT[side.name]}", side.name))
        return
    rep.checkpoints[side.name] = len(rep.offsets[side.name])
