"""The clean-shutdown marker against damage: with `.kafka_cleanshutdown` present, LogManager loads every
partition of the log dir without recovery, so damage recovery would have cut stays and is served."""
from __future__ import annotations

from pathlib import Path

from logtool.findings import CLEAN_SHUTDOWN_WITH_DAMAGE, finding
from logtool.checks.logdir import LogDirReport
from logtool.checks.partition import PartitionReport
from logtool.store.layout import CLUSTER_METADATA

MARKER = ".kafka_cleanshutdown"


def check_clean_shutdown(ld: LogDirReport, p: PartitionReport) -> None:
    """One partition of `ld` against the marker."""
    # A -delete dir is never recovered anyway; the Raft layer always recovers __cluster_metadata-0.
    if (not ld.clean_shutdown_marker or p.facts is None or not p.facts.recovery_cuts or p.dir_kind == "delete"
            or Path(p.path).name == CLUSTER_METADATA):
        return
    seg = next(s for s in p.segments if s.base_offset == p.facts.cut_segment)
    p.findings.append(finding(CLEAN_SHUTDOWN_WITH_DAMAGE, f"the log dir's {MARKER} makes the broker skip recovery, "
                              f"so {seg.file} keeps its {seg.size - seg.valid_bytes} damaged bytes from byte "
                              f"{seg.first_invalid_position}", MARKER, seg.first_invalid_position))
