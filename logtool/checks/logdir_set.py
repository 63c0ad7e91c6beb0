"""meta.properties across the log dirs given together, as Kafka's `MetaPropertiesEnsemble.verify` holds
them at startup: one cluster.id, one node id, and a distinct directory.id per log dir."""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from logtool.findings import META_PROPERTIES_MISMATCH, finding
from logtool.checks.logdir import LogDirReport
from logtool.format.meta import NODE_ID_FIELD, MetaError, meta_identity

META = "meta.properties"


def check_log_dir_set(log_dirs: Sequence[LogDirReport]) -> None:
    """Each log dir is held against the first one (in the order given) that names the same field."""
    cluster: tuple[str, str] | None = None  # (cluster.id, log dir)
    node: tuple[int, str] | None = None
    directories: dict[str, str] = {}  # directory.id -> log dir
    seen: set[Path] = set()
    for ld in log_dirs:
        real = Path(ld.path).resolve()
        if real in seen:
            continue  # the same log dir given twice is one log dir
        seen.add(real)
        try:
            ident = meta_identity(ld.meta)
        except MetaError:
            continue  # META_PROPERTIES_INVALID says why
        if ident.cluster_id is not None:
            if cluster is None:
                cluster = (ident.cluster_id, ld.path)
            elif ident.cluster_id != cluster[0]:
                ld.findings.append(finding(META_PROPERTIES_MISMATCH, f"cluster.id {ident.cluster_id}, but "
                                           f"{cluster[1]} has cluster.id {cluster[0]}", META))
        if ident.node_id is not None:
            if node is None:
                node = (ident.node_id, ld.path)
            elif ident.node_id != node[0]:
                ld.findings.append(finding(META_PROPERTIES_MISMATCH, f"{NODE_ID_FIELD[ident.version]} "
                                           f"{ident.node_id}, but {node[1]} has node id {node[0]}", META))
        if ident.directory_id is not None:
            other = directories.setdefault(ident.directory_id, ld.path)
            if other != ld.path:
                ld.findings.append(finding(META_PROPERTIES_MISMATCH, f"directory.id {ident.directory_id} is also "
                                           f"the directory.id of {other}", META))


def check_log_dir_sets_by_node(log_dirs: Sequence[LogDirReport]) -> None:
    """verify holds the log dirs it is given together as one broker's; a fleet (the audit) is many brokers,
    so each node's log dirs are held against each other (a log dir whose node is unknown stands alone)."""
    by_node: dict[object, list[LogDirReport]] = {}
    for ld in log_dirs:
        try:
            node = meta_identity(ld.meta).node_id
        except MetaError:
            node = None
        by_node.setdefault(ld.path if node is None else node, []).append(ld)
    for group in by_node.values():
        check_log_dir_set(group)
