"""Pieces of a partition too large for one Spark task: each piece walks the segments whose base offsets lie
in [first, end) (end None: to the last), and the pieces' reports are joined again before the checks that
need the whole partition. A cut loses only the transaction history of the segments before it, as
retention does."""
from __future__ import annotations

import bisect

from logtool.checks.engine import Target, open_target, unreadable
from logtool.checks.partition import PartitionReport, check_segments, finish_partition
from logtool.checks.producers import DEFAULT_TRANSACTION_TIMEOUT_MS
from logtool.store.pacing import ReadPolicy
from logtool.store.partition import Partition
from logtool.store.segment import Lens

Piece = tuple[int, int | None]  # [first, end) of base offsets


def check_piece(target: Target, piece: Piece, deep: bool, reading: ReadPolicy | None = None,
                lens: Lens | None = None) -> PartitionReport:
    """Walk one piece only: `finish_pieces` runs the partition-level checks once over all of them."""
    part = open_target(target, reading)
    if isinstance(part, PartitionReport):
        return part
    try:
        bases = [s.base_offset for s in part.segments]
        first, end = piece
        which = range(bisect.bisect_left(bases, first), len(bases) if end is None else bisect.bisect_left(bases, end))
        return check_segments(part, deep, which, lens)
    finally:
        part.close()


def finish_pieces(target: Target, reports: list[PartitionReport],
                  transaction_timeout_ms: int = DEFAULT_TRANSACTION_TIMEOUT_MS) -> PartitionReport:
    """One partition's report from the reports of its pieces, in offset order: segments in order, then the
    partition-level checks. The pieces' own findings (unreadable files) are kept once each."""
    head = reports[0]
    rep = PartitionReport(head.path, head.topic, head.partition, head.dir_kind)
    for piece in reports:
        rep.segments += piece.segments
        rep.findings += [f for f in piece.findings if f not in rep.findings]
    try:
        part = Partition.from_dir(target.path)
    except OSError as e:
        if (f := unreadable(target, e)) not in rep.findings:
            rep.findings.append(f)
        return rep
    finish_partition(part, rep, transaction_timeout_ms)
    return rep
